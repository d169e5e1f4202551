// Sentinel's own thread for the sequencer: drains the per-thread event rings every 0.1 ms while
// allocations arrive, and after three empty looks (0.7 ms) sleeps until the tracked path publishes
// again (wake_if_dormant()), so that a steady training step costs a few wake-ups per burst of
// allocations, not thousands a second. It ends after a while without any events, so that
// it never keeps a process alive (a program whose main thread calls pthread_exit ends when its last
// thread does; glibc then runs exit(0) on that thread — ours, if we were last). Started by the tracked
// path when there is work (not in the constructor: a process that never allocates a tensor-sized object
// stays single-threaded, which programs such as `unshare -U` require), never in forked children. All
// signals are blocked on it. While it does not run, allocating threads sequence their own events.
#pragma once
#include <pthread.h>

#include <atomic>
#include <cstdint>

namespace sentinel {

class Sequencer;

class DrainThread {
 public:
  // Creates the thread unless one runs; false (with errno) when pthread_create fails — the sequencer
  // then stays synchronous. Tries at most once per kRetryNs.
  bool start(Sequencer* sequencer);
  // Whether the tracked path should call start() now (none runs, not stopped, not tried recently).
  bool should_start() const {
    return !running_.load(std::memory_order_relaxed) && !stop_.load(std::memory_order_relaxed);
  }
  // Asks the thread to end, waking it (exit: it must not drain after the dump).
  void stop();
  // The tracked path, after publishing an event and a full fence: wakes the thread if it sleeps until
  // the next event. One relaxed load when it does not; one system call per burst when it does.
  bool dormant() const { return dormant_.load(std::memory_order_relaxed) != 0; }
  void wake_if_dormant();
  // Ends the thread and waits until it is gone, for good: the main thread is about to call
  // pthread_exit, and if the program's own threads are done it must be the last thread, as it is
  // without Sentinel (glibc then runs exit(0) on it, with its thread_local destructors).
  void stop_and_join();
  bool running() const { return running_.load(std::memory_order_acquire); }
  // In a forked child: the thread does not exist there.
  void forget();
  uint64_t wakeups() const { return wakeups_.load(std::memory_order_relaxed); }
  uint64_t dormant_wakes() const { return dormant_wakes_.load(std::memory_order_relaxed); }

 private:
  static void* main(void* self);
  void loop();
  uint64_t drain_once();  // one drain unless the sequencer is synchronous or busy; how many events
  // Sleeps until wake_if_dormant() or for timeout_ns: true when woken (or events were found first),
  // false when the time ran out.
  bool sleep_until_published(uint64_t timeout_ns);
  void join_previous();  // control_ held
  Sequencer* sequencer_ = nullptr;
  pthread_mutex_t control_ = PTHREAD_MUTEX_INITIALIZER;  // start, join, forget: never on the tracked path
  pthread_t thread_{};
  bool joinable_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<bool> running_{false};
  std::atomic<uint64_t> wakeups_{0};
  std::atomic<uint32_t> dormant_{0};  // 1 while the thread sleeps until the next event (a futex word)
  std::atomic<uint64_t> dormant_wakes_{0};
  std::atomic<uint64_t> starts_{0};
  std::atomic<uint64_t> last_try_ns_{0};

 public:
  static constexpr uint64_t kRetryNs = 50'000'000;
  static constexpr uint64_t kIdleExitNs = 250'000'000;
  uint64_t starts() const { return starts_.load(std::memory_order_relaxed); }
};

}  // namespace sentinel
