// Step detection: finds training-step boundaries online from the stream of tracked allocations.
//
// Input: one feed() per tracked allocation, in allocation order, with the allocation's ordinal (seq,
// consecutive), site id and size; mark() for an explicit sentinel_step(). From the second step on, the
// (site, size) sequence of a training step repeats exactly; the detector finds that period P, locks on
// (at the end of step 3 at the latest when step 1 differs from the steady state, at the end of step 2
// when it does not), and from then on gives every allocation its ordinal in the step (the in-step
// clock). Object identity across steps: (phase, site, size, ordinal).
//
// The algorithm, its tolerance policy and its bounds are described in docs/step-detection.md.
//
// Constraints: single-threaded (the caller serialises feed/mark/next_event), allocation-free (all memory
// comes from one lazily backed mmap made by init()), no exceptions, no RTTI: it runs inside malloc.
// feed() costs O(1) amortized.
#pragma once
#include <cstddef>
#include <cstdint>

namespace sentinel {

// SENTINEL_STEP: how steps are found.
enum class StepMode : uint8_t {
  kAuto,   // "auto" (default): automatic detection; the first mark() switches to marks for good
  kMarks,  // "marks": only sentinel_step() marks delimit steps; no automatic detection
  kFixed,  // a number N: a step every N tracked allocations, counted from the first one fed
};

struct StepConfig {
  StepMode mode = StepMode::kAuto;
  uint32_t fixed_period = 0;  // kFixed: N >= 1
  uint32_t intervals = 16;    // SENTINEL_INTERVALS: intervals per step (the count used is min(P, this))
};

// Flags of a StepEvent.
enum : uint16_t {
  kStepMark = 1u << 0,      // step start given by mark() (sentinel_step())
  kStepInferred = 1u << 1,  // step start that happened before the lock, found when the period was known
  kStepLock = 1u << 2,      // first step event of a lock (a lock is a run of steps of one phase)
  kStepNewPhase = 1u << 3,  // with kStepLock: a pattern not seen before (a new phase id)
  kStepRelock = 1u << 4,    // with kStepLock: a pattern seen before (its phase id is reused)
  kStepUnlock = 1u << 5,    // not a step start: the lock was lost; the clock is invalid from seq on
  kStepRetract = 1u << 6,   // not a step start: step events of `phase` with seq in [seq, end_seq] are void
  kStepFixed = 1u << 7,     // step start given by SENTINEL_STEP=N
};

struct StepEvent {
  uint64_t seq;      // first allocation of the step (or where the lock was lost, or the voided range)
  uint64_t end_seq;  // kStepRetract: last seq of the voided range; else equal to seq
  uint64_t steps;    // StepDetector::steps() right after this event
  uint32_t period;   // P of the phase (0 for unlock events in marks mode)
  uint16_t phase;    // phase id, 1-based (0: none)
  uint16_t flags;    // kStep*
};

// Flags of a FeedResult.
enum : uint16_t {
  kFedLocked = 1u << 0,     // the allocation has an in-step ordinal
  kFedStepStart = 1u << 1,  // the allocation is the first of a step
  kFedNoise = 1u << 2,      // locked, but the allocation did not match the step's pattern (ordinal is the
                            // ordinal of the last allocation that did)
  kFedLockedNow = 1u << 3,  // the lock was established on this allocation
};

inline constexpr uint32_t kNoOrdinal = UINT32_MAX;

struct FeedResult {
  uint32_t ordinal;  // in-step ordinal, kNoOrdinal when not locked
  uint16_t phase;    // phase id (0 when not locked)
  uint16_t flags;    // kFed*
};

class StepDetector {
 public:
  static constexpr uint32_t kMaxPeriod = 65536;  // longest detectable period (allocations per step)
  static constexpr uint32_t kWindow = 4;         // tokens per hashed window (candidate proposals)
  static constexpr uint32_t kRingBits = 18;      // history of 2^18 tokens (4 * kMaxPeriod)
  static constexpr uint32_t kTableBits = 16;     // window hash table: 2^16 last positions
  static constexpr uint32_t kCandidates = 8;     // periods verified at the same time
  static constexpr uint32_t kSmallPeriod = 8;    // periods below this need a run of kSmallRun to lock
  static constexpr uint32_t kSmallRun = 32;
  static constexpr uint32_t kConfirmTokens = 64;        // a lock is tentative until max(P, this) matches
  static constexpr uint32_t kMaxConsecutiveNoise = 16;  // insertions in a row that end a confirmed lock
  static constexpr uint32_t kTentativeBudget = 2;       // noise per step, and in a row, of a tentative lock
  static constexpr uint32_t kFailSlots = 16;            // memory of retracted (spurious) periods
  static constexpr uint32_t kPhaseSlots = 64;           // patterns remembered for phase ids
  static constexpr uint32_t kSegmentSlots = 32;         // recent locks, for absorption of inner-loop locks
  static constexpr uint32_t kEventSlots = 1024;         // event queue; overflow is counted, never blocks
  static constexpr uint32_t kDivisorCheckMax = 4096;  // periods checked for a periodic divisor at lock

  StepDetector() = default;
  ~StepDetector();
  StepDetector(const StepDetector&) = delete;
  StepDetector& operator=(const StepDetector&) = delete;

  // Maps the detector's memory (memory_bytes(), lazily backed) and resets it. False if mmap fails
  // or the configuration is invalid (kFixed with N == 0 or N > kMaxPeriod); the object is then inert.
  bool init(const StepConfig& config);
  bool ready() const { return mem_ != nullptr; }

  // One tracked allocation. seq must grow by one per call; a gap resets the automatic detector (the
  // lock is lost, counts are kept).
  FeedResult feed(uint64_t seq, uint32_t site, uint64_t size);
  // sentinel_step(): a step begins at allocation seq (the next one to be fed). In auto mode the first
  // mark switches the detector to marks for the rest of the process. Ignored in fixed mode.
  void mark(uint64_t seq);

  // ---- state (valid between calls)
  bool locked() const { return state_ != kSearching; }  // tentative or confirmed
  bool confirmed() const { return state_ == kConfirmed; }
  StepMode mode() const { return mode_; }
  uint32_t period() const { return locked() ? period_ : 0; }             // allocations per step (expected, marks)
  uint64_t step_start() const { return step_start_; }                    // seq where the current step began
  uint32_t ordinal() const { return locked() ? ordinal_ : kNoOrdinal; }  // of the latest allocation
  uint64_t steps() const;                                                // steps counted so far (see docs)
  uint16_t phase() const { return locked() ? phase_id_ : 0; }
  uint32_t phases() const { return phases_seen_; }  // distinct patterns locked on so far
  // In-step ordinal that an allocation made before the current lock had (the lock's verified periodic
  // region and the backward-aligned part before it are covered); kNoOrdinal when unknown.
  uint32_t retro_ordinal(uint64_t seq) const;

  // ---- events: step starts and lock changes, oldest first. False when none is pending.
  bool next_event(StepEvent* out);
  uint64_t events_dropped() const { return events_dropped_; }

  // ---- intervals: contiguous ordinal ranges cutting the step into n = min(P, configured) parts;
  // interval k covers ordinals [interval_begin(k), interval_begin(k + 1)). 0 intervals when unlocked.
  uint32_t intervals() const { return intervals_for(period(), config_.intervals); }
  uint32_t interval_of(uint32_t ordinal) const { return interval_of(ordinal, period(), config_.intervals); }
  uint32_t interval_begin(uint32_t k) const { return interval_begin(k, period(), config_.intervals); }
  static uint32_t intervals_for(uint32_t period, uint32_t configured) {
    return period < configured ? period : configured;
  }
  static uint32_t interval_of(uint32_t ordinal, uint32_t period, uint32_t configured) {
    uint32_t n = intervals_for(period, configured);
    if (n == 0) return 0;
    if (ordinal >= period) return n - 1;
    return static_cast<uint32_t>(uint64_t{ordinal} * n / period);
  }
  static uint32_t interval_begin(uint32_t k, uint32_t period, uint32_t configured) {
    uint32_t n = intervals_for(period, configured);
    if (n == 0) return 0;
    if (k >= n) return period;
    return static_cast<uint32_t>((uint64_t{k} * period + n - 1) / n);
  }

  // ---- counters
  uint64_t noise_tokens() const { return noise_tokens_; }      // allocations tolerated as noise
  uint64_t skipped_tokens() const { return skipped_tokens_; }  // expected allocations that were missing
  uint64_t locks() const { return locks_; }
  uint64_t unlocks() const { return unlocks_; }
  uint64_t retracted() const { return retracted_; }  // locks voided (spurious or absorbed)
  static size_t memory_bytes();                      // mapped by init(); touched as used

 private:
  enum State : uint8_t { kSearching, kTentative, kConfirmed };
  struct Candidate {
    uint32_t period;  // 0: free slot
    uint32_t run;     // consecutive positions j <= now with t[j] == t[j - period] (at least)
  };
  struct Failure {
    uint32_t period;
    uint32_t run;  // run at which a lock on this period was retracted
    uint64_t stamp;
  };
  struct Phase {
    uint64_t signature;  // rotation-invariant hash of the pattern
    uint32_t period;
    uint32_t offset;  // step start, as a rotation from the pattern's least rotation
    uint16_t id;
    uint64_t stamp;
  };
  struct Segment {  // one lock, from its first step start to its last matched allocation
    uint64_t start_seq, end_seq, last_start_seq, steps;
    uint32_t period;
    uint16_t phase;
    bool counted;  // its steps are in committed_steps_
  };

  // memory
  uint64_t* tokens_ = nullptr;    // ring of 2^kRingBits tokens
  uint32_t* prev_ = nullptr;      // ring: distance to the previous position with the same window hash
  uint64_t* table_ = nullptr;     // window hash -> last position + 1
  uint64_t* template_ = nullptr;  // the locked pattern, ordinal order (template_[0] starts a step)
  StepEvent* events_ = nullptr;
  void* mem_ = nullptr;

  StepConfig config_{};
  StepMode mode_ = StepMode::kAuto;
  State state_ = kSearching;

  // stream
  uint64_t n_ = 0;           // positions fed (internal, consecutive)
  uint64_t valid_from_ = 0;  // first position of the current continuous stream
  uint64_t seq_offset_ = 0;  // seq = position + seq_offset_ (for positions >= valid_from_)
  bool any_fed_ = false;

  // candidates
  Candidate cand_[kCandidates]{};
  Failure fail_[kFailSlots]{};

  // the lock
  uint32_t period_ = 0;
  uint32_t clock_ = 0;    // ordinal expected next
  uint32_t ordinal_ = 0;  // ordinal of the latest matched allocation
  uint64_t step_start_ = 0;
  uint64_t lock_pos_ = 0;            // position where the lock was made
  uint64_t matches_since_lock_ = 0;  // matches since the lock (tentative -> confirmed)
  uint32_t step_noise_ = 0;          // noise events in the current step
  uint32_t consecutive_noise_ = 0;
  uint64_t first_noise_seq_ = 0;
  uint16_t phase_id_ = 0;
  uint64_t cur_steps_ = 0;      // steps of the current lock
  uint64_t cur_start_seq_ = 0;  // first step start of the current lock (inferred)
  uint64_t last_match_seq_ = 0;
  uint32_t lock_run_ = 0;  // run of the candidate at lock time
  // retro_ordinal support
  uint64_t retro_from_seq_ = 0, retro_to_seq_ = 0, retro_base_seq_ = 0;

  // phases, segments
  Phase phase_mem_[kPhaseSlots]{};
  uint16_t next_phase_id_ = 1;
  uint32_t phases_seen_ = 0;
  Segment seg_[kSegmentSlots]{};
  uint32_t seg_count_ = 0;  // total segments ever closed (ring index = count % slots)
  uint64_t committed_steps_ = 0;
  uint64_t stamp_ = 0;

  // marks / fixed
  uint64_t marks_ = 0;
  uint64_t last_mark_seq_ = 0;
  uint64_t fixed_base_seq_ = 0;
  uint64_t fixed_steps_ = 0;

  // events
  uint32_t ev_head_ = 0, ev_count_ = 0;
  uint64_t events_dropped_ = 0;

  // counters
  uint64_t noise_tokens_ = 0, skipped_tokens_ = 0, locks_ = 0, unlocks_ = 0, retracted_ = 0;

  uint64_t tok(uint64_t pos) const { return tokens_[pos & ((uint64_t{1} << kRingBits) - 1)]; }
  uint64_t seq_of(uint64_t pos) const { return pos + seq_offset_; }
  uint64_t oldest_pos() const;
  void emit(uint64_t seq, uint64_t end_seq, uint32_t period, uint16_t phase, uint16_t flags);
  void reset_auto();
  FeedResult feed_auto(uint64_t pos, uint64_t token);
  FeedResult feed_marks(uint64_t seq);
  FeedResult feed_fixed(uint64_t seq);
  void update_candidates(uint64_t pos, uint64_t token);
  void propose(uint64_t pos, uint64_t token);
  void add_candidate(uint32_t period);
  bool lockable(const Candidate& c, uint64_t pos) const;
  uint32_t failed_run(uint32_t period) const;
  void remember_failure(uint32_t period, uint32_t run);
  void lock(uint64_t pos, uint32_t period, uint32_t run);
  FeedResult follow(uint64_t pos, uint64_t token);
  void unlock(uint64_t pos, bool retract);
  void close_segment(bool counted);
  void forget_phase_if_unused(uint16_t id);
};

}  // namespace sentinel
