// Step detection, the lock: making one on a candidate period (the template, the phase, earlier locks that
// overlap: step_lock.cpp; which allocation of the cycle starts a step and the steps that ran before the
// lock: step_walk.cpp; first iterations that differ from the steps: step_first.cpp), then following the
// stream with it under the tolerance policy until it is lost (step_follow.cpp).
// See docs/step-detection.md, "Where a step starts", "Following the step" and "Tolerance policy".
#pragma once
#include <cstdint>

#include "profile/bag_follower.h"
#include "profile/period_search.h"
#include "profile/phase_memory.h"
#include "profile/step_detector_internal.h"
#include "profile/step_history.h"
#include "profile/step_remainder.h"

namespace sentinel::step_internal {

class StepLock {
 public:
  static constexpr uint32_t kConfirmTokens = 64;        // a lock is tentative until max(P, this) matches
  static constexpr uint32_t kSteadyConfirmTokens = 32;  // ... this, where a whole step kept no bytes
  static constexpr uint32_t kMaxConsecutiveNoise = 16;  // insertions in a row that end a confirmed lock
  static constexpr uint32_t kNoiseBurst = 4;            // repeats of one noise token that count as one event
  static constexpr uint32_t kMaxInferredEvents = 256;   // inferred step events emitted per lock (the latest)

  struct Counters {
    uint64_t noise = 0;      // allocations that fit no identity
    uint64_t skipped = 0;    // identities of a step that never came
    uint64_t displaced = 0;  // fit, but before an identity that precedes them in the template
    uint64_t late = 0;       // fit the previous step (kFedLate)
    uint64_t locks = 0, unlocks = 0, retracted = 0;
  };
  struct Lost {           // the latest lock that ended
    uint64_t at_seq = 0;  // where the pattern ended
    uint64_t steps = 0;
    uint32_t period = 0;
    uint16_t phase = 0;
  };

  // The parts it works with: the detector's.
  constexpr StepLock(StepCursor* cursor, const StepHistory* history, PeriodSearch* search, BagFollower* follower,
                     PhaseMemory* phases, StepEvents* events, StepRemainder* remainder)
      : cur_(cursor),
        h_(history),
        search_(search),
        follower_(follower),
        phases_(phases),
        events_(events),
        remainder_(remainder) {}

  // Locks on candidate `cand` at position pos. exact: its last run + P tokens repeat exactly; otherwise
  // its last hits windows of P tokens (ending at pos) hold equal bags. False (nothing changes) when the
  // step does not fit the template table.
  bool lock(uint64_t pos, const PeriodSearch::Candidate& cand, bool exact);
  // Locked: the allocation's identity, and what it means for the counters, the events and the policy.
  FeedResult follow(uint64_t token);
  void unlock(bool retract);         // the lock is lost (retract: a tentative one, voided)
  void end_for_marks(uint64_t seq);  // sentinel_step() takes over: the automatic lock ends at seq
  void end_of_stream();              // nothing more is fed: the newest step may not have been one
  // Searching: the allocations after the lock lost last were its step resized (an epoch's last batch,
  // step_remainder.h), read up to end_pos: that step is counted in its phase. Not final (a lock is about
  // to be made): a remainder that may still be arriving stays pending.
  void resolve_remainder(uint64_t end_pos, bool final);

  uint64_t steps() const { return phases_->committed() + (cur_->locked() ? cur_steps_ : 0); }
  // In-step ordinal that an allocation made before the current lock had (see StepDetector).
  uint32_t retro_ordinal(uint64_t seq) const;
  const Counters& counters() const { return counters_; }
  const Lost& lost() const { return lost_; }

 private:
  struct Alignment;
  struct Rotation;
  struct Starts;
  using Phase = PhaseMemory::Phase;

  // making a lock (step_lock.cpp, step_walk.cpp, step_first.cpp)
  Alignment align(uint64_t pos, const PeriodSearch::Candidate& cand, bool exact) const;
  bool steady_or_waited(uint64_t pos, uint32_t period);
  uint64_t bag_chain_from(uint64_t pos, uint32_t P, uint64_t from) const;
  uint64_t walk_floor(uint32_t period, uint64_t s0) const;
  Rotation rotation_of(const Alignment& a) const;
  template <typename OnAccept>
  void walk_exact(const Alignment& a, uint32_t trusted, OnAccept&& on_accept, uint64_t* earliest,
                  uint32_t* earliest_e) const;
  uint32_t live_rotation(const Alignment& a, uint32_t walked) const;
  static int64_t signed_shift(uint32_t from, uint32_t to, uint32_t P);
  static uint32_t rotation_at(const Alignment& a, uint64_t last);
  uint64_t warmup_starts(const Alignment& a, uint32_t e0, Starts* starts) const;
  static constexpr uint32_t kCompiledMaxPeriod = 256;  // steps compiling_step() reads
  uint64_t compiling_step(const Alignment& a, uint32_t e0, uint64_t p) const;
  static constexpr uint32_t kOneTimeSteps = 8;  // steps' length split_first_step() reads back
  uint64_t split_first_step(const Alignment& a, Starts* starts);
  struct Parts {
    uint64_t part;  // the earliest part's first position (the scan's end: none)
    uint32_t fit;   // allocations from it to the end that fit the copy
    uint32_t next;  // the first recent segment not taken
  };
  uint64_t first_iteration(const Alignment& a, uint64_t first, Starts* starts, uint64_t* absorb_from);
  Parts scan_parts(const Alignment& a, uint64_t end, uint32_t k);
  uint64_t settle_starts(const Alignment& a, int64_t shift, uint32_t e0, Starts* starts) const;
  uint64_t anchor(const Alignment& a, uint64_t at, uint64_t lo, uint64_t next, uint32_t e0) const;
  uint64_t walk_bags(const Alignment& a);
  bool surplus(const Alignment& a, uint64_t from, uint64_t j) const;
  uint64_t replay(const Alignment& a, uint64_t first, Starts* starts);
  bool bags_count_more(const Alignment& a, uint64_t exact_total, const Starts& bag) const;
  uint32_t step_rotation(const Alignment& a, const Phase* known, const Rotation& rot, bool ordered, Starts* starts,
                         uint64_t* first, bool* use_exact_walk);
  Phase* grown_phase(uint64_t pos, uint32_t P);
  Phase* enter_phase(Phase* known, uint64_t bag_sig, const Rotation& rot, const Alignment& a, uint32_t e0);
  void exact_starts(const Alignment& a, uint32_t e0, Starts* starts) const;
  bool loop_of_steps(const Alignment& a) const;
  void give_way(uint64_t from_seq, uint32_t period);
  bool drop_cut_step(PhaseMemory::Segment& s, uint64_t from_seq);
  void begin(const Alignment& a, const PeriodSearch::Candidate& cand, uint32_t e0, const Starts& starts);
  void emit_starts(const Alignment& a, const Starts& starts, bool relock);

  // following and losing it (step_follow.cpp)
  void open_step();
  uint64_t drop_unbegun_step();
  void note_live(uint32_t period);
  FeedResult noise(uint64_t token);
  bool noise_in_rhythm(uint64_t token);
  FeedResult lose(bool tentative);
  bool confirmable() const;
  void close_segment(bool counted);
  void forget_phase_if_unused(uint16_t id);
  void emit(uint64_t seq, uint64_t end_seq, uint32_t period, uint16_t phase, uint16_t flags);

  StepCursor* cur_;
  const StepHistory* h_;
  PeriodSearch* search_;
  BagFollower* follower_;
  PhaseMemory* phases_;
  StepEvents* events_;
  StepRemainder* remainder_;

  // the lock held
  Phase* cur_phase_ = nullptr;
  uint64_t cur_steps_ = 0;      // steps of the current lock
  uint64_t cur_start_seq_ = 0;  // first step start of the current lock (inferred)
  uint64_t last_match_seq_ = 0;
  uint32_t lock_run_ = 0, lock_hits_ = 0;           // evidence of the candidate at lock time
  bool lock_known_ = false;                         // the lock's pattern is a known phase's (a relock)
  uint32_t lock_needed_ = 0;                        // equal-bag windows a new pattern of this bag needs (0: unknown)
  static constexpr uint32_t kStrongBagWindows = 8;  // see confirmable(): short phases
  uint32_t lock_ordered_run_ = 0;                   // allocations an exact lock verified in order (0: a bag lock)
  uint64_t matches_since_lock_ = 0;
  uint64_t steady_run_ = 0;   // matched allocations in a row with the bytes live that P allocations before had
  bool steady_step_ = false;  // steady_run_ reached a whole step of kSmallPeriod or more in this lock
  // An exact lock waits (at most kSteadyWait steps) for a step that kept no bytes: see steady_or_waited().
  static constexpr uint32_t kSteadyWait = 2;
  uint64_t wait_from_ = 0, wait_last_ = 0;  // the wait began at, and was last asked at, these positions
  bool order_required_ = false;             // the template's bag alone is weak evidence: displaced tokens are noise
  uint32_t consecutive_noise_ = 0;          // noise events in a row (a burst of one token is one event)
  uint64_t first_noise_seq_ = 0;
  uint64_t last_noise_token_ = 0;
  uint32_t noise_burst_ = 0;
  // Foreign tokens that may recur at one spacing of two steps or more: the lock is on a part of the step
  // (see noise_in_rhythm()). The kRhythmTokens heard from last, each followed on its own.
  struct NoiseRhythm {
    uint64_t token = 0, last_seq = 0, spacing = 0;
    uint32_t repeats = 0;    // spacings equal to `spacing` in a row
    uint32_t off_beats = 0;  // times the token came off its beat in this lock: each asks one repeat more
  };
  static constexpr uint32_t kRhythmTokens = 8;
  NoiseRhythm rhythm_[kRhythmTokens];
  static constexpr uint32_t kRhythmRepeats = 2;
  // retro_ordinal: the lock's verified region and the aligned part before it, and the seq of an ordinal 0
  uint64_t retro_from_seq_ = 0, retro_to_seq_ = 0, retro_base_seq_ = 0;

  Counters counters_;
  Lost lost_;
  uint64_t prev_step_start_ = 0;  // where the step before the newest began (drop_unbegun_step)
};

}  // namespace sentinel::step_internal
