#include "track/thread_state.h"

#include "base/vm_region.h"

namespace sentinel {

bool ThreadStates::init() {
  states_ = static_cast<ThreadState*>(vm_map_lazy(sizeof(ThreadState) * kMaxThreads));
  rings_ = static_cast<TrackEvent*>(vm_map_lazy(sizeof(TrackEvent) * ThreadState::kRingEvents * kMaxThreads));
  // Zero-filled memory is a valid state (kFree, empty ring); pages are touched only as threads come.
  return states_ && rings_;
}

ThreadState* ThreadStates::claim(uint32_t tid) {
  auto take = [this, tid](ThreadState* s) {
    s->ring = rings_ + uint64_t(s - states_) * ThreadState::kRingEvents;
    s->tid = tid;
    s->site_unwinds = 0;
    s->log_next = s->log_end = 0;
    return s;
  };
  uint32_t hw = high_water();
  for (uint32_t i = 0; i < hw; ++i) {
    uint32_t expected = ThreadState::kFree;
    if (states_[i].status.compare_exchange_strong(expected, ThreadState::kActive, std::memory_order_acq_rel))
      return take(&states_[i]);
  }
  for (;;) {
    uint32_t i = high_water_.load(std::memory_order_relaxed);
    if (i >= kMaxThreads) return nullptr;
    uint32_t expected = ThreadState::kFree;
    if (!states_[i].status.compare_exchange_strong(expected, ThreadState::kActive, std::memory_order_acq_rel)) {
      // Another thread claimed slot i between our reads; move the mark on and try the next one.
      high_water_.compare_exchange_strong(i, i + 1, std::memory_order_acq_rel);
      continue;
    }
    high_water_.compare_exchange_strong(i, i + 1, std::memory_order_acq_rel);
    return take(&states_[i]);
  }
}

uint64_t ThreadStates::touched_bytes() const {
  uint64_t per_thread = sizeof(ThreadState) + sizeof(TrackEvent) * ThreadState::kRingEvents;
  return uint64_t{high_water()} * per_thread;
}

}  // namespace sentinel
