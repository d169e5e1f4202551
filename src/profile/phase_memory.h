// Step detection, what is remembered of the locks made: the patterns locked on (phase ids; a pattern is
// known again by its bag, and an exact one by its rotation-invariant signature too) and the latest locks
// (segments), with the steps they counted. See docs/step-detection.md, "Phases" and "Locks that overlap".
#pragma once
#include <cstdint>

namespace sentinel::step_internal {

class PhaseMemory {
 public:
  static constexpr uint32_t kPhaseSlots = 64;    // patterns remembered for phase ids
  static constexpr uint32_t kSegmentSlots = 32;  // recent locks, for absorption of inner-loop locks

  struct Phase {
    uint64_t bag_signature;  // P and the bag's hash: order-free, identifies the phase
    uint64_t signature;      // rotation-invariant hash of the exact sequence (0: locked by bag only)
    uint32_t period;
    uint32_t offset;  // step start, as a rotation from the sequence's least rotation (with signature)
    uint32_t distinct;
    uint16_t id;
    bool lost;  // its last lock ended with an unlock
    uint64_t stamp;
    uint64_t steps, noise, missing, locks, unlocks, retracted;
  };
  struct Segment {  // one lock, from its first step start to its last matched allocation
    uint64_t start_seq, end_seq, last_start_seq, steps;
    uint32_t period;
    uint16_t phase;
    bool counted;  // its steps are in committed()
    bool steady;   // a whole step of it gave back all it took (StepLock::note_live()): a training step
  };

  Phase* slot(uint16_t id);  // null for 0 and for a phase no longer remembered
  const Phase* slot(uint16_t id) const;
  Phase* find(uint32_t period, uint64_t bag_signature);  // a known pattern (null: new)
  bool knows(uint32_t period, uint64_t bag_signature) const {
    return const_cast<PhaseMemory*>(this)->find(period, bag_signature) != nullptr;
  }
  void touch(Phase* ph) { ph->stamp = ++stamp_; }  // locked on again
  // A new pattern's phase, with the next id, in an empty slot or the least recently locked one's.
  // *evicted: the id that slot held (0: none).
  Phase* add(uint64_t bag_signature, uint64_t signature, uint32_t period, uint32_t offset, uint16_t* evicted);
  uint16_t new_id();  // marks: the marked steps are one more phase
  // A pattern whose every lock was voided is not a phase: forget it (unless it is `locked`, the phase
  // locked now). True when it was forgotten.
  bool forget_if_unused(uint16_t id, uint16_t locked);
  uint32_t seen() const { return phases_seen_; }  // distinct patterns locked on so far

  void close(const Segment& s);
  uint32_t recent_count() const { return seg_count_ < kSegmentSlots ? seg_count_ : kSegmentSlots; }
  Segment& recent(uint32_t k) { return seg_[(seg_count_ - 1 - k) % kSegmentSlots]; }  // k = 0: the latest
  const Segment& recent(uint32_t k) const { return seg_[(seg_count_ - 1 - k) % kSegmentSlots]; }
  uint64_t committed() const { return committed_steps_; }  // steps of the counted segments
  void uncommit(uint64_t steps) { committed_steps_ -= steps; }
  void commit(uint64_t steps) { committed_steps_ += steps; }  // a closed segment's step found late

 private:
  Phase phase_mem_[kPhaseSlots]{};
  uint16_t next_phase_id_ = 1;
  uint32_t phases_seen_ = 0;
  uint64_t stamp_ = 0;
  Segment seg_[kSegmentSlots]{};
  uint32_t seg_count_ = 0;  // total segments ever closed (ring index = count % slots)
  uint64_t committed_steps_ = 0;
};

}  // namespace sentinel::step_internal
