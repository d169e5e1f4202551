// Step detection, the bag follower: the template (the reference step of a lock: its distinct tokens, their
// multiplicity m and template ordinals) and the rules that give each allocation of a locked stream its
// identity (site, size, k) in one of the (at most two) open steps, whatever the interleaving. Also the
// per-step occurrence count of marks and fixed mode. See docs/step-detection.md, "Following the step".
#pragma once
#include <cstddef>
#include <cstdint>

#include "profile/step_detector_internal.h"
#include "profile/step_history.h"

namespace sentinel::step_internal {

class BagFollower {
 public:
  static constexpr uint32_t kSlotBits = 14;  // template table: 2^14 token slots
  static constexpr uint32_t kSlots = 1u << kSlotBits;
  static constexpr uint32_t kSlotMask = kSlots - 1;
  static constexpr uint32_t kMaxDistinct = 12288;  // distinct tokens a step may have (3/4 of the slots)
  // The token slots, the template (ordinal -> slot << 16 | k), the ordinals by token.
  static constexpr size_t kSlotBytes = size_t{kSlots} * 32;
  static constexpr size_t kTmplBytes = kMaxPeriod * sizeof(uint32_t);
  static constexpr size_t kByTokenBytes = kMaxPeriod * sizeof(uint16_t);
  static constexpr size_t kBytes = kSlotBytes + kTmplBytes + kByTokenBytes;

  // A step being counted: how many of each token it has, in the slots' count `field`, tagged with its
  // epoch, so that nothing is ever cleared.
  struct OpenStep {
    uint32_t epoch;
    uint32_t field;  // which TokenSlot count it uses
    uint32_t assigned;
    uint32_t noise;
    uint32_t last_ordinal;  // template ordinal of its latest assignment (displacement count)
    uint64_t start_seq;
  };
  enum AssignKind : uint8_t { kNoise, kCurrent, kLate, kNext, kOpened };
  struct Assignment {
    uint8_t kind = kNoise;
    bool displaced = false;
    uint32_t k = 0, ordinal = 0;
    uint32_t closed_missing = 0;  // identities missing from steps closed by this allocation
    uint32_t closed_worst = 0;    // highest noise + missing of those steps
  };

  constexpr explicit BagFollower(const StepHistory* history) : h_(history) {}
  void attach(void* mem);  // kBytes

  // ---- the template
  // The last P tokens (W = [pos - P + 1, pos]) read from cycle index beta on. False when the step has more
  // distinct tokens than the table holds, or a token more than 65535 times.
  bool build(uint64_t pos, uint32_t period, uint32_t beta);
  uint32_t distinct() const { return distinct_; }
  // The template just built is n copies of one composition (every multiplicity divisible by n >= 2).
  bool repeated_composition(uint32_t period) const;
  uint32_t k_at(uint32_t ordinal) const { return tmpl_[ordinal] & 0xFFFFu; }
  // The phase whose template the table holds (0: none); only that one can be queried.
  void hold(uint16_t phase, uint32_t period) {
    held_phase_ = phase;
    held_period_ = period;
  }
  void release() { held_phase_ = 0; }
  uint16_t held_phase() const { return held_phase_; }
  uint32_t held_period() const { return held_period_; }
  bool entry(uint16_t phase, uint32_t ordinal, uint32_t* site, uint64_t* size, uint32_t* k) const;
  uint32_t multiplicity(uint16_t phase, uint32_t site, uint64_t size) const;
  uint32_t template_ordinal(uint16_t phase, uint32_t site, uint64_t size, uint32_t k) const;

  // ---- counting a step's bag against the template (the lock's backward walk fills such copies)
  OpenStep fresh_step() { return OpenStep{++epoch_, 0, 0, 0, 0, 0}; }
  int32_t find_slot(uint64_t token) const;  // -1: not a token of the template
  bool has_room(int32_t slot, const OpenStep& st) const { return count_of(slots_[slot], st) < slots_[slot].m; }
  uint32_t multiplicity_of(int32_t slot) const { return slots_[slot].m; }
  void count(int32_t slot, const OpenStep& st) { bump(slots_[slot], st); }
  void uncount(int32_t slot, const OpenStep& st) { slots_[slot].cnt[st.field]--; }

  // ---- following
  // The follower's rules from scratch on a step of `period` (the lock replays them over the steps before it).
  void restart(uint32_t period);
  // The lock is made at pos, the current step began at cycle index beta of the template; returns how
  // many of its allocations came so far (the first one's seq is current().start_seq).
  uint32_t start(uint64_t pos, uint32_t period, uint32_t beta);
  Assignment assign(uint64_t token, uint32_t open_allowance, bool plausible_late);
  const OpenStep& current() const { return cur_; }
  OpenStep& newest() { return next_open_ ? next_ : cur_; }  // the next step if open, else the current

  // ---- marks and fixed mode: k of an allocation in the step begun at the latest step start
  void new_step() { cur_.epoch = ++epoch_; }
  uint32_t occurrence(uint64_t token, bool at_step_start);
  void drop_template();  // marks take over: the table counts occurrences per marked step from now on

 private:
  // One distinct token of the template (32 bytes). Counts are kept per open step (two may be open: the
  // current one and the next), tagged with the step's epoch so that nothing is ever cleared. (site, size)
  // is the token itself, inverted (make_token is a bijection below 2^20 sites and 2^44 bytes).
  struct TokenSlot {
    uint64_t token;
    uint32_t gen;   // template generation the slot belongs to (other values: empty)
    uint16_t base;  // first index of its ordinals in by_token_
    uint16_t m;     // occurrences per step
    uint32_t ep[2];
    uint16_t cnt[2];
    uint32_t first;  // template ordinal of k = 0 (most tokens occur once a step: no by_token_ read)
  };
  static_assert(sizeof(TokenSlot) == 32, "the slot table is sized for 32-byte slots");

  int32_t insert_slot(uint64_t token);
  uint32_t count_of(const TokenSlot& s, const OpenStep& st) const {
    return s.ep[st.field] == st.epoch ? s.cnt[st.field] : 0;
  }
  void bump(TokenSlot& s, const OpenStep& st);
  uint32_t ordinal_of(const TokenSlot& s, uint32_t k) const { return k == 0 ? s.first : by_token_[s.base + k]; }
  void close_current(Assignment* a);

  const StepHistory* h_;
  TokenSlot* slots_ = nullptr;    // the template's distinct tokens (open addressing on the token)
  uint32_t* tmpl_ = nullptr;      // template ordinal -> slot << 16 | k
  uint16_t* by_token_ = nullptr;  // slot.base + k -> template ordinal
  uint32_t gen_ = 1;              // template generation (the zeroed slots have generation 0: empty)
  uint32_t distinct_ = 0;
  uint32_t epoch_ = 0;
  uint32_t period_ = 0;
  OpenStep cur_{}, next_{};
  bool next_open_ = false;
  uint16_t held_phase_ = 0;
  uint32_t held_period_ = 0;
};

}  // namespace sentinel::step_internal
