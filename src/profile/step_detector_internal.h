// Shared by the step detector's parts only (step_history.h, period_search, bag_follower, phase_memory,
// step_lock, step_detector): tokens, limits, the cursor the detector publishes, the event queue.
#pragma once
#include <cstddef>
#include <cstdint>

#include "base/hash.h"
#include "profile/step_types.h"

namespace sentinel::step_internal {

inline constexpr uint32_t kMaxPeriod = 65536;    // longest detectable period (allocations per step)
inline constexpr uint32_t kTentativeBudget = 2;  // noise per step, and in a row, of a tentative lock

// A bijection of (site, size) for sizes below 2^44 and sites below 2^20 (so the template can give the
// pair back from the token alone); beyond, distinct pairs collide only by chance.
inline constexpr uint64_t kSizeBits = 44;
inline uint64_t make_token(uint32_t site, uint64_t size) {
  return mix64(size ^ (uint64_t{site} << kSizeBits) ^ (uint64_t{site} >> 20));
}
inline void split_token(uint64_t token, uint32_t* site, uint64_t* size) {
  uint64_t x = unmix64(token);
  *site = static_cast<uint32_t>(x >> kSizeBits);
  *size = x & ((uint64_t{1} << kSizeBits) - 1);
}
inline uint64_t token_size(uint64_t token) {
  uint32_t site;
  uint64_t size;
  split_token(token, &site, &size);
  return size;
}

inline uint64_t max_u64(uint64_t a, uint64_t b) {
  return a > b ? a : b;
}
inline uint64_t min_u64(uint64_t a, uint64_t b) {
  return a < b ? a : b;
}

// The noise a step may collect (foreign allocations plus identities that never came) before the lock is
// lost, and how many identities a step may still miss when the next one begins.
inline uint32_t step_budget(uint32_t period, bool tentative) {
  if (tentative) return kTentativeBudget;
  return period / 8 > 2 ? period / 8 : 2;
}

// Where the stream stands, whichever way steps are found: the lock writes it in auto mode, marks and the
// fixed period in theirs; the detector's accessors read it.
struct StepCursor {
  enum State : uint8_t { kSearching, kTentative, kConfirmed };
  State state = kSearching;
  uint32_t period = 0;
  uint32_t ordinal = 0;  // template ordinal of the latest allocation that fit
  uint32_t clock = 0;
  uint64_t step_start = 0;  // seq where the newest step began
  uint16_t phase = 0;
  bool locked() const { return state != kSearching; }
};

// The event queue: oldest first; an overflow is counted, never blocks.
class StepEvents {
 public:
  static constexpr uint32_t kSlots = 1024;
  static constexpr size_t kBytes = kSlots * sizeof(StepEvent);

  void attach(void* mem) { ring_ = static_cast<StepEvent*>(mem); }
  void push(const StepEvent& e) {
    if (count_ == kSlots) {
      dropped_++;
      return;
    }
    ring_[(head_ + count_) % kSlots] = e;
    count_++;
  }
  bool pop(StepEvent* out) {
    if (count_ == 0) return false;
    *out = ring_[head_];
    head_ = (head_ + 1) % kSlots;
    count_--;
    return true;
  }
  uint64_t dropped() const { return dropped_; }

 private:
  StepEvent* ring_ = nullptr;
  uint32_t head_ = 0, count_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace sentinel::step_internal
