// The sequencer: turns the per-thread event rings (thread_state.h) into one stream in time-stamp order
// and does, once per event, everything that needs a single order: the allocation clock (birth_seq,
// death_seq), live and peak bytes, the step detector and the profiling window (Stepper), explicit
// marks. It runs under its own lock, which the tracked path never takes in the steady state:
//
// - asynchronously on Sentinel's own thread (started at the first tracked allocation of the process
//   that loaded the library; all signals blocked), which drains every ring a few thousand times a
//   second and sleeps longer when there is nothing to do;
// - synchronously on the allocating thread (sync()): before that thread's first Sentinel thread exists,
//   in forked children (which have none), when a ring is full, and while the Stepper needs the clock
//   exactly in time (around a profiling window: page protection must change at the interval start,
//   not a millisecond later).
//
// Events of different threads whose time stamps are close may be sequenced in either order; the step
// detector does not depend on the interleaving of threads (docs/step-detection.md).
#pragma once
#include <atomic>
#include <cstdint>

#include "track/registry.h"
#include "track/thread_state.h"

namespace sentinel {

class MarkLog;
class Arena;

// What consumes the sequenced stream: the step detector and its windows (runtime/stepping.h). Called
// under the sequencer's lock, once per event, in sequence order.
class SequenceListener {
 public:
  // One tracked allocation. now: ticks. tier: where its slot's pages are. behind: its thread has
  // published later events already, so the program has moved past it (it is sequenced late: the
  // Sentinel thread was draining a backlog when the listener asked for sync); nothing that must
  // happen at this point of the program in time (arming a profiling window) can happen on it.
  // live_bytes: the tracked bytes live just before it, in sequence order.
  virtual void on_allocation(uint64_t seq, uint32_t site, uint64_t size, uint64_t now, uint32_t log_index,
                             uintptr_t address, uint16_t tier, bool pinned, bool behind, int64_t live_bytes) = 0;
  virtual void on_free(uint32_t log_index, uint16_t flags) = 0;  // flags: the free event's
  virtual void on_mark(uint64_t seq, uint64_t now) = 0;          // sentinel_step()
  // The listener needs its events in time: allocating threads sequence their own.
  virtual bool wants_sync() const = 0;

 protected:
  ~SequenceListener() = default;
};

// seq -> object-log index, for every sequenced allocation that has a log entry (kNoLogIndex otherwise).
class SeqMap {
 public:
  bool init(uint64_t capacity);
  void set(uint64_t seq, uint32_t log_index) {
    if (seq < capacity_) map_[seq] = log_index;
  }
  uint32_t at(uint64_t seq) const { return seq < capacity_ ? map_[seq] : kNoLogIndex; }
  uint64_t capacity() const { return capacity_; }

 private:
  uint32_t* map_ = nullptr;
  uint64_t capacity_ = 0;
};

struct SequencerStats {
  uint64_t allocations = 0;  // sequenced: the allocation clock
  uint64_t frees = 0;
  int64_t live_bytes = 0;
  uint64_t peak_live_bytes = 0;
  uint64_t marks = 0;
  uint64_t drains = 0;
  uint64_t sync_drains = 0;  // drains run on an allocating thread
  uint64_t full_rings = 0;   // times a thread found its ring full
  uint64_t deferred_frees = 0;
};

class Sequencer {
 public:
  bool init(ObjectLog* log, MarkLog* marks, SequenceListener* listener, ThreadStates* states, Arena* arena,
            uint64_t log_capacity);

  // The lock. Never taken in a signal handler; held across fork() (pthread_atfork).
  void lock();
  bool try_lock();
  // Yields, then sleeps, for at most `ns`: a holder preempted on a busy machine gets to let go.
  bool try_lock_within(uint64_t ns);
  void unlock() { lock_.store(false, std::memory_order_release); }

  // Lock held: sequences every published event of every ring; returns how many.
  uint64_t drain();
  // Lock held: one event of a thread without a ring (all taken, or the thread is exiting).
  void process_direct(const TrackEvent& e);

  // Whether allocating threads must drain before returning (no Sentinel thread, or the Stepper asks).
  bool sync_required() const { return sync_.load(std::memory_order_relaxed); }
  // Whether the sync is only for want of a Sentinel thread (so starting one helps).
  bool thread_would_help() const { return !listener_sync_.load(std::memory_order_relaxed); }
  void set_async_available(bool available);  // the Sentinel thread runs (or is gone, in a child)
  void count_full_ring() { ++stats_.full_rings; }
  void count_sync_drain() { ++stats_.sync_drains; }
  // Sentinel's thread, between drains: keep the object log backed ahead of the allocating threads.
  void populate_log_ahead() {
    if (log_) log_->populate_ahead();
  }

  const SequencerStats& stats() const { return stats_; }
  const SeqMap& seq_map() const { return seq_map_; }
  uint64_t allocations() const { return stats_.allocations; }

  // In a forked child (single-threaded): the other threads' caches go back to the arena, their
  // states are retired, and the Sentinel thread is gone.
  void after_fork_child(ThreadState* self);

 private:
  // behind: the event's thread has published later ones (SequenceListener::on_allocation).
  void process(const TrackEvent& e, bool behind = false);
  void retry_deferred();
  void update_sync();

  ObjectLog* log_ = nullptr;
  MarkLog* marks_ = nullptr;
  SequenceListener* listener_ = nullptr;
  ThreadStates* states_ = nullptr;
  Arena* arena_ = nullptr;
  SeqMap seq_map_;
  std::atomic<bool> lock_{false};
  std::atomic<bool> sync_{true};
  std::atomic<bool> listener_sync_{false};
  bool async_available_ = false;
  SequencerStats stats_;
  // Frees sequenced before their allocation (its thread had not published it yet): retried.
  static constexpr uint32_t kDeferred = 4096;
  TrackEvent* deferred_ = nullptr;
  uint32_t deferred_count_ = 0;
};

}  // namespace sentinel
