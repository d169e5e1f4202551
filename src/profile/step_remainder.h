// Step detection, an epoch's last batch: the step after a lost lock whose allocations are the lock's
// step resized (a DataLoader's remainder batch, fewer samples, so every batch-sized tensor has another
// size). Its tokens are foreign to the template, so the lock is lost at its first allocation and, before
// this, the step was never counted: 42 of a script's 45 steps (3 epochs of 14 batches of 64 and one of 4).
// See docs/step-detection.md, "The last batch of an epoch".
#pragma once
#include <cstddef>
#include <cstdint>

#include "profile/step_history.h"

namespace sentinel::step_internal {

class StepRemainder {
 public:
  static constexpr uint32_t kSlots = 8192;  // sites and tokens of one step (a larger step is not checked)
  static constexpr uint32_t kMaxKeys = kSlots * 3 / 4;
  static constexpr size_t kBytes = kSlots * 16;

  struct Found {
    uint64_t start_seq, end_seq;  // the remainder step: its first and its last allocation
    uint32_t period;
    uint16_t phase;
  };

  void attach(void* mem) { slots_ = static_cast<Slot*>(mem); }
  // A confirmed lock of `phase` was lost at from_pos: its step is the P allocations before it.
  void expect(const StepHistory& h, uint64_t from_pos, uint32_t period, uint16_t phase);
  void cancel() { pending_ = false; }
  // Every allocation a remainder may hold has come (or end_pos is where a new lock begins).
  bool due(uint64_t end_pos) const { return pending_ && end_pos >= from_pos_ + period_; }
  // Reads the allocations from from_pos up to end_pos: true when they were the lock's step resized. A
  // remainder not found stays pending when it may still be arriving and the read is not final.
  bool resolve(const StepHistory& h, uint64_t end_pos, bool final, Found* out);

 private:
  struct Slot {
    uint64_t key;
    uint32_t count;       // what the template has left of it
    uint32_t generation;  // the slot belongs to this resolve() when equal to generation_
  };
  Slot* find(uint64_t key, bool insert);
  bool take(uint64_t key, bool* present);

  Slot* slots_ = nullptr;
  uint32_t generation_ = 0;
  uint32_t keys_ = 0;
  bool pending_ = false;
  uint64_t from_pos_ = 0;
  uint32_t period_ = 0;
  uint16_t phase_ = 0;
};

}  // namespace sentinel::step_internal
