// Per-thread state of the tracked path. A tracked allocation or free writes only memory its own thread
// owns: an event in the thread's ring, the thread's chunk of the object log, the thread's cache of free
// slots. Nothing on that path is a lock or a counter shared by all threads; the sequencer (sequencer.h)
// drains the rings, in time-stamp order, on Sentinel's own thread or, when there is none, on the
// allocating thread.
//
// States live in one lazily backed mapping and are never unmapped, so a late free on a thread whose
// state was retired still finds valid memory.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "track/size_class.h"

namespace sentinel {

enum : uint16_t {
  kEventAlloc = 1,   // a tracked object was born (bytes = its size)
  kEventFree = 2,    // a tracked object died (bytes = -size)
  kEventResize = 3,  // realloc in place (bytes = new - old size)
  kEventMark = 4,    // sentinel_step()
};

// One event, 32 bytes (two per cache line).
struct TrackEvent {
  uint64_t ticks;      // now_ticks() when it happened: the merge key
  int64_t bytes;       // live-byte delta (alloc: +size)
  uint32_t site;       // alloc: site id
  uint32_t log_index;  // the object's log entry (kNoLogIndex when not logged)
  uint32_t thread;     // kernel thread id
  uint16_t kind;       // kEvent*
  uint16_t tier;       // alloc: where the object's pages are (kTierFast/kTierSlow); free: Tiering's flags
};
static_assert(sizeof(TrackEvent) == 32);

// Free slots a thread keeps for itself, per size class: a free followed by an allocation of the same
// class (the common pattern of a training step) touches no shared cache line.
struct SlotCache {
  static constexpr uint32_t kDepth = 4;
  static constexpr uint64_t kMaxBytes = uint64_t{64} << 20;  // beyond this, slots go back to the arena
  uint32_t index[kNumClasses][kDepth];
  uint8_t count[kNumClasses];
  uint64_t bytes;
};

struct alignas(64) ThreadState {
  static constexpr uint32_t kRingEvents = 8192;  // 256 KiB per thread, touched as used

  // Written by the owner, read by the sequencer.
  std::atomic<uint64_t> head{0};  // events published
  // Written by the sequencer, read by the owner (only to see whether the ring has room).
  alignas(64) std::atomic<uint64_t> tail{0};  // events consumed
  std::atomic<uint32_t> status{0};            // kFree, kActive, kRetired
  // Owner only.
  alignas(64) uint32_t tid = 0;
  uint32_t log_next = 0, log_end = 0;  // reserved, not yet used object-log entries [next, end)
  uint64_t site_unwinds = 0;           // statistics, summed at dump time
  SlotCache cache;
  TrackEvent* ring = nullptr;

  enum : uint32_t { kFree = 0, kActive = 1, kRetired = 2 };

  // Appends an event; false when the ring is full (the caller drains and retries).
  bool push(const TrackEvent& e) {
    uint64_t h = head.load(std::memory_order_relaxed);
    if (h - tail.load(std::memory_order_acquire) >= kRingEvents) return false;
    ring[h & (kRingEvents - 1)] = e;
    head.store(h + 1, std::memory_order_release);
    return true;
  }
  uint64_t pending() const { return head.load(std::memory_order_acquire) - tail.load(std::memory_order_relaxed); }
};

class ThreadStates {
 public:
  static constexpr uint32_t kMaxThreads = 1024;
  bool init();
  // A state for the calling thread (kActive), or nullptr when all are taken (the caller then takes
  // the synchronous path). Lock-free.
  ThreadState* claim(uint32_t tid);
  // The owner is gone: its state is recycled once the sequencer has drained it.
  void retire(ThreadState* s) { s->status.store(ThreadState::kRetired, std::memory_order_release); }
  // Sequencer: makes a drained retired state claimable again.
  void recycle(ThreadState* s) { s->status.store(ThreadState::kFree, std::memory_order_release); }
  uint32_t high_water() const { return high_water_.load(std::memory_order_acquire); }
  ThreadState* at(uint32_t i) const { return &states_[i]; }
  uint64_t touched_bytes() const;

 private:
  ThreadState* states_ = nullptr;
  TrackEvent* rings_ = nullptr;
  std::atomic<uint32_t> high_water_{0};
};

}  // namespace sentinel
