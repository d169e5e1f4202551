// The thread that writes snapshots on a signal (SENTINEL_SNAPSHOT_SIGNAL). The signal's handler
// (exit_signals.h) may do nothing that is not async-signal-safe, and a snapshot reads the loader's module
// list and takes the sequencer's lock; so the handler only counts a request and wakes this thread,
// `sentinel-snap`, which writes it. Requests that come while one is written are served by one more
// snapshot, not one each. The thread starts with the drain thread, when the process first has events to
// sequence (never in the constructor: a process that tracks nothing stays single-threaded); a request
// that comes before it is served when it starts. The same thread writes the periodic snapshots
// (SENTINEL_SNAPSHOT_EVERY), which need no signal: it wakes when one is due.
#pragma once
#include <pthread.h>

#include <atomic>
#include <cstdint>

namespace sentinel::rt {

class SnapshotThread {
 public:
  using WriteFn = void (*)();
  // Starts the thread once (later calls do nothing); false when pthread_create failed (errno set).
  // `periodic` (may be null) runs every `period_ns` from the start, after any request then pending.
  bool start(WriteFn write, WriteFn periodic, uint64_t period_ns);
  bool started() const { return started_.load(std::memory_order_acquire); }
  // Async-signal-safe: one atomic add and a futex wake.
  void request();
  // Ends the thread and waits until it is gone (the main thread's pthread_exit: the program's last thread
  // must end the process). A snapshot being written is finished first.
  void stop_and_join();
  // In a forked child: the thread does not exist there, and none is started.
  void forget();

 private:
  static void* main(void* self);
  void loop();
  WriteFn write_ = nullptr;
  WriteFn periodic_ = nullptr;
  uint64_t period_ns_ = 0;
  pthread_t thread_{};
  std::atomic<bool> started_{false};
  std::atomic<bool> joinable_{false};
  std::atomic<bool> stop_{false};
  std::atomic<uint32_t> requests_{0};  // a futex word: requests counted so far
};

}  // namespace sentinel::rt
