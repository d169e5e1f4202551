// Step detection: finds training-step boundaries online from the stream of tracked allocations.
//
// Input: one feed() per tracked allocation, in (approximately) allocation order, with the allocation's
// seq, site id and size; mark() for an explicit sentinel_step(). From the second step on, a training
// step makes the same *bag* (multiset) of (site, size) tokens; with thread pools the order changes from
// step to step, and a prefetching thread's allocation may land inside a step or just across a boundary.
// The detector finds the period P (an exact repeat of the sequence, or an equal bag in consecutive
// windows of P allocations), locks on, and assigns every allocation an identity (site, size, k): the k-th
// occurrence of (site, size) in its step. The identity's *template ordinal* (its position in the phase's
// reference step) is the same in every step whatever the interleaving; the in-step *clock* (allocations
// assigned to the step so far) says where the step is now. Object identity across steps:
// (phase, site, size, k).
//
// The algorithm, its tolerance policy and its bounds are described in docs/step-detection.md. The work is
// split by purpose: period_search.cpp (proposals and candidates), step_lock.cpp (choosing where a step
// starts, the template, inferred steps, overlapping locks), bag_follower.cpp (the template table and the
// follower), step_detector.cpp (modes, events, phases, counters, diagnosis).
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
  kStepUnlock = 1u << 5,    // not a step start: the lock was lost; seq is where the pattern ended (the
                            // first allocation after the last one that fit): the last step ends there
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
  kFedLocked = 1u << 0,     // the allocation has an in-step position (a step is being followed)
  kFedStepStart = 1u << 1,  // the allocation is the first of a step
  kFedNoise = 1u << 2,      // locked, but the allocation fit no identity of the step (occurrence is
                            // kNoOrdinal; ordinal and clock are those of the last allocation that fit)
  kFedLockedNow = 1u << 3,  // the lock was established on this allocation
  kFedLate = 1u << 4,       // the identity belongs to the previous step, which was still missing it when
                            // this step began (a prefetch or a racing thread); the clock is this step's
};

inline constexpr uint32_t kNoOrdinal = UINT32_MAX;

struct FeedResult {
  uint32_t ordinal;     // template ordinal of the identity (position of (site, size, k) in the phase's
                        // reference step); kNoOrdinal when not locked
  uint32_t occurrence;  // k: the allocation is the k-th (0-based) of its (site, size) in its step;
                        // kNoOrdinal when not locked or noise
  uint32_t clock;       // in-step clock of the newest step after this allocation: allocations assigned
                        // to it so far, minus one (0 at a step start, monotone within a step; equal to
                        // ordinal when a step repeats in exact order); kNoOrdinal when not locked
  uint16_t phase;       // phase id (0 when not locked)
  uint16_t flags;       // kFed*
};

// Flags of PhaseStats (the values of SENTINEL_DETECT_* in include/sentinel/format.h).
enum : uint32_t {
  kDetectLocked = 1u << 0,  // a step pattern was found
  kDetectLost = 1u << 1,    // a lock was lost and not regained
  kDetectNoStep = 1u << 2,  // tracked allocations, but no step found
};

// What the detector saw, per phase (phase 0: the whole run). Counts exclude voided (retracted) steps.
struct PhaseStats {
  uint32_t period;           // allocations per step (phase 0: of the current or last lock)
  uint32_t distinct_tokens;  // distinct (site, size) in the step
  uint64_t steps;
  uint64_t noise;    // allocations, while locked, that fit no identity of the step
  uint64_t missing;  // identities of a step that never came (counted when the step closed)
  uint64_t locks, unlocks, retracted;
  uint32_t flags;  // kDetect*
};

// Why no step is known, for one line on stderr (StepDetector::describe()).
struct StepDiagnosis {
  uint64_t allocations;         // fed in auto mode
  uint32_t distinct_tokens;     // distinct (site, size) seen (approximate beyond 2^15)
  uint32_t longest_run;         // longest exact repeat: consecutive allocations equal to the one P before
  uint32_t longest_run_period;  // its P
  uint32_t best_bag_windows;    // most consecutive windows of P allocations with the same bag
  uint32_t best_bag_period;     // their P
  uint32_t state;               // 0 searching, 1 tentative, 2 confirmed
  uint64_t locks, unlocks, retracted;
  uint64_t lost_at_seq;  // where the latest lock ended (valid when unlocks > 0)
  uint64_t lost_steps;   // steps of that lock
  uint32_t lost_period;
  uint16_t lost_phase;
};

class StepDetector {
 public:
  static constexpr uint32_t kMaxPeriod = 65536;  // longest detectable period (allocations per step)
  static constexpr uint32_t kWindow = 4;         // tokens per hashed window (candidate proposals)
  static constexpr uint32_t kRingBits = 18;      // history of 2^18 tokens (4 * kMaxPeriod)
  static constexpr uint32_t kTableBits = 16;     // window hash table: 2^16 last positions
  static constexpr uint32_t kAnchorBits = 15;    // token table: 2^15 last positions (anchor proposals)
  static constexpr uint32_t kSlotBits = 14;      // template table: 2^14 token slots
  static constexpr uint32_t kMaxDistinct = 12288;  // distinct tokens a step may have (3/4 of the slots)
  static constexpr uint32_t kCandidates = 8;       // periods verified at the same time
  static constexpr uint32_t kSmallPeriod = 8;      // periods below this need a run of kSmallRun to lock
  static constexpr uint32_t kSmallRun = 32;
  static constexpr uint32_t kBagMinWindows = 3;     // equal-bag window pairs a bag lock needs, at least
  static constexpr uint32_t kMinAnchorGap = 8;      // shorter recurrences of one token are not proposed
  static constexpr uint32_t kConfirmTokens = 64;        // a lock is tentative until max(P, this) matches
  static constexpr uint32_t kMaxConsecutiveNoise = 16;  // insertions in a row that end a confirmed lock
  static constexpr uint32_t kTentativeBudget = 2;       // noise per step, and in a row, of a tentative lock
  static constexpr uint32_t kNoiseBurst = 4;            // repeats of one noise token that count as one event
  static constexpr uint32_t kFailSlots = 16;            // memory of retracted (spurious) periods
  static constexpr uint32_t kPhaseSlots = 64;           // patterns remembered for phase ids
  static constexpr uint32_t kSegmentSlots = 32;         // recent locks, for absorption of inner-loop locks
  static constexpr uint32_t kEventSlots = 1024;         // event queue; overflow is counted, never blocks
  static constexpr uint32_t kDivisorCheckMax = 4096;  // periods checked for a periodic divisor at lock
  static constexpr uint64_t kReorder = 64;            // a seq this far from the expected one is not a gap

  StepDetector() = default;
  ~StepDetector();
  StepDetector(const StepDetector&) = delete;
  StepDetector& operator=(const StepDetector&) = delete;

  // Maps the detector's memory (memory_bytes(), lazily backed) and resets it. False if mmap fails
  // or the configuration is invalid (kFixed with N == 0 or N > kMaxPeriod); the object is then inert.
  bool init(const StepConfig& config);
  bool ready() const { return mem_ != nullptr; }

  // One tracked allocation. seq should grow by one per call; a seq within kReorder of the expected one
  // (a sequencer merging per-thread buffers slightly out of order) is taken as it comes, a larger jump is
  // a gap and resets the automatic detector (the lock is lost, counts are kept).
  FeedResult feed(uint64_t seq, uint32_t site, uint64_t size);
  // sentinel_step(): a step begins at allocation seq (the next one to be fed). In auto mode the first
  // mark switches the detector to marks for the rest of the process. Ignored in fixed mode.
  void mark(uint64_t seq);

  // ---- state (valid between calls)
  bool locked() const { return state_ != kSearching; }  // tentative or confirmed
  bool confirmed() const { return state_ == kConfirmed; }
  StepMode mode() const { return mode_; }
  uint32_t period() const { return locked() ? period_ : 0; }             // allocations per step (expected, marks)
  uint64_t step_start() const { return step_start_; }                    // seq where the newest step began
  uint32_t ordinal() const { return locked() ? ordinal_ : kNoOrdinal; }  // of the latest allocation that fit
  uint32_t clock() const { return locked() ? clock_ : kNoOrdinal; }      // in-step clock (see FeedResult)
  uint64_t steps() const;                                                // steps counted so far (see docs)
  uint16_t phase() const { return locked() ? phase_id_ : 0; }
  uint32_t phases() const { return phases_seen_; }  // distinct patterns locked on so far
  // In-step ordinal that an allocation made before the current lock had (the lock's verified periodic
  // region and the backward-aligned part before it are covered; exact locks only); kNoOrdinal when unknown.
  uint32_t retro_ordinal(uint64_t seq) const;

  // ---- the template: the reference step of a locked phase, template ordinal -> (site, size, k). It is
  // held for the phase locked now, or the last one locked (template_phase(), 0: none); a consumer that
  // needs an earlier phase's template copies it at that phase's kStepLock event. The template of a
  // phase is rebuilt at every (re)lock: identities (site, size, k) are stable, ordinals are the positions
  // in the step that relocked (the same for a step repeated in exact order).
  uint16_t template_phase() const { return tmpl_phase_; }
  uint32_t template_period() const { return tmpl_phase_ ? tmpl_period_ : 0; }
  bool template_entry(uint16_t phase, uint32_t ordinal, uint32_t* site, uint64_t* size, uint32_t* k) const;
  // m(site, size): occurrences per step in the held template of `phase` (0: none).
  uint32_t multiplicity(uint16_t phase, uint32_t site, uint64_t size) const;
  // Template ordinal of identity (site, size, k) in the held template of `phase`; kNoOrdinal if none.
  uint32_t template_ordinal(uint16_t phase, uint32_t site, uint64_t size, uint32_t k) const;

  // ---- events: step starts and lock changes, oldest first. False when none is pending.
  bool next_event(StepEvent* out);
  uint64_t events_dropped() const { return events_dropped_; }

  // ---- intervals: contiguous ordinal ranges cutting the step into n = min(P, configured) parts;
  // interval k covers ordinals [interval_begin(k), interval_begin(k + 1)). 0 intervals when unlocked.
  // Apply interval_of() to a template ordinal for an identity's interval, to the clock for the
  // interval the step is in now.
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
  uint64_t noise_tokens() const { return noise_tokens_; }          // allocations that fit no identity
  uint64_t skipped_tokens() const { return skipped_tokens_; }      // identities of a step that never came
  uint64_t displaced_tokens() const { return displaced_tokens_; }  // fit, but before an identity that
                                                                   // precedes them in the template
  uint64_t late_tokens() const { return late_tokens_; }            // fit the previous step (kFedLate)
  uint64_t locks() const { return locks_; }
  uint64_t unlocks() const { return unlocks_; }
  uint64_t retracted() const { return retracted_; }  // locks voided (spurious or absorbed)
  // Per phase (1-based ids) or overall (0). False for a phase never seen or no longer remembered.
  bool phase_stats(uint16_t phase, PhaseStats* out) const;
  // What the search saw; describe() writes it as one line (no allocation, no locale) and returns its
  // length (at most cap - 1; buf is always terminated when cap > 0).
  void diagnose(StepDiagnosis* out) const;
  size_t describe(char* buf, size_t cap) const;
  static size_t memory_bytes();  // mapped by init(); touched as used

 private:
  enum State : uint8_t { kSearching, kTentative, kConfirmed };
  enum Origin : uint8_t { kFromWindow, kFromAnchor };
  struct Candidate {
    uint32_t period;  // 0: free slot
    uint32_t run;     // consecutive positions j <= now with t[j] == t[j - period] (at least)
    uint32_t hits;    // chain of cuts, spaced by period, where the two windows before the cut had equal bags
    uint8_t origin;
    uint64_t cut;           // the chain's latest cut (position after the second window)
    uint64_t aligned_from;  // first cut of the chain's part spaced exactly by period
    uint64_t chain_from;    // first cut of the chain
    uint32_t distinct;      // distinct tokens of the chain's bag (estimated once; 0: not yet)
    uint32_t needed;        // equal-bag windows a lock needs, from P and distinct (see bag_windows_needed)
    uint64_t born;          // position when proposed
  };
  struct Failure {
    uint32_t period;
    uint32_t run;   // run at which a lock on this period was retracted
    uint32_t hits;  // bag windows at which a bag lock on it was retracted
    uint64_t stamp;
  };
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
    bool counted;  // its steps are in committed_steps_
  };
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
  struct OpenStep {
    uint32_t epoch;
    uint32_t field;  // which TokenSlot count it uses
    uint32_t assigned;
    uint32_t noise;
    uint32_t last_ordinal;  // template ordinal of its latest assignment (displacement count)
    uint64_t start_seq;
  };

  // memory
  uint64_t* sums_ = nullptr;     // ring of 2^kRingBits prefix sums: S(p) = sum of tokens before position p
  uint16_t* prev_ = nullptr;     // ring: distance to the previous position with the same window hash
  uint64_t* table_ = nullptr;    // window hash -> last position + 1
  uint64_t* anchors_ = nullptr;  // token -> last position + 1 (anchor proposals, distinct count)
  TokenSlot* slots_ = nullptr;   // the template's distinct tokens (open addressing on the token)
  uint32_t* tmpl_ = nullptr;     // template ordinal -> slot << 16 | k
  uint16_t* by_token_ = nullptr; // slot.base + k -> template ordinal
  StepEvent* events_ = nullptr;
  void* mem_ = nullptr;

  StepConfig config_{};
  StepMode mode_ = StepMode::kAuto;
  State state_ = kSearching;

  // stream
  uint64_t n_ = 0;           // positions fed (internal, consecutive)
  uint64_t valid_from_ = 0;  // first position of the current continuous stream
  uint64_t seq_offset_ = 0;  // seq ~ position + seq_offset_ (for positions >= valid_from_)
  uint64_t max_seq_ = 0;     // highest seq fed in this stream
  uint64_t cur_seq_ = 0;     // seq of the allocation being fed
  uint64_t sum_ = 0;         // S(n_)
  uint64_t t1_ = 0, t2_ = 0, t3_ = 0;  // the three tokens before the current one
  bool any_fed_ = false;

  // candidates
  Candidate cand_[kCandidates]{};
  Failure fail_[kFailSlots]{};
  uint32_t best_run_ = 0, best_run_period_ = 0, best_hits_ = 0, best_hits_period_ = 0;
  uint32_t distinct_seen_ = 0;

  // the lock and the follower
  uint32_t period_ = 0;
  uint32_t ordinal_ = 0;  // template ordinal of the latest allocation that fit
  uint32_t clock_ = 0;
  uint64_t step_start_ = 0;
  uint64_t lock_pos_ = 0;
  uint64_t matches_since_lock_ = 0;
  uint32_t consecutive_noise_ = 0;  // noise events in a row (a burst of one token is one event)
  uint64_t first_noise_seq_ = 0;
  uint64_t last_noise_token_ = 0;
  uint32_t noise_burst_ = 0;
  uint16_t phase_id_ = 0;
  Phase* cur_phase_ = nullptr;
  uint64_t cur_steps_ = 0;      // steps of the current lock
  uint64_t cur_start_seq_ = 0;  // first step start of the current lock (inferred)
  uint64_t last_match_seq_ = 0;
  uint32_t lock_run_ = 0, lock_hits_ = 0;  // evidence of the candidate at lock time
  OpenStep cur_{}, next_{};
  bool next_open_ = false;
  bool order_required_ = false;  // the template's bag alone is weak evidence: displaced tokens are noise
  uint32_t epoch_ = 0;
  uint32_t gen_ = 0;  // template generation
  uint32_t distinct_ = 0;
  uint16_t tmpl_phase_ = 0;
  uint32_t tmpl_period_ = 0;
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
  uint64_t lost_at_seq_ = 0, lost_steps_ = 0;
  uint32_t lost_period_ = 0;
  uint16_t lost_phase_ = 0;
  bool ever_locked_ = false;

  // marks / fixed
  uint64_t marks_ = 0;
  uint64_t last_mark_seq_ = 0;
  uint64_t fixed_base_seq_ = 0;
  uint64_t fixed_steps_ = 0;
  uint64_t auto_fed_ = 0;

  // events
  uint32_t ev_head_ = 0, ev_count_ = 0;
  uint64_t events_dropped_ = 0;

  // counters
  uint64_t noise_tokens_ = 0, skipped_tokens_ = 0, displaced_tokens_ = 0, late_tokens_ = 0;
  uint64_t locks_ = 0, unlocks_ = 0, retracted_ = 0;

  // ring access
  uint64_t sum_at(uint64_t p) const { return sums_[p & ((uint64_t{1} << kRingBits) - 1)]; }
  uint64_t tok(uint64_t pos) const { return sum_at(pos + 1) - sum_at(pos); }
  uint64_t seq_of(uint64_t pos) const { return pos + seq_offset_; }
  uint64_t oldest_pos() const;
  void emit(uint64_t seq, uint64_t end_seq, uint32_t period, uint16_t phase, uint16_t flags);
  void reset_auto();
  FeedResult feed_auto(uint64_t pos, uint64_t token);
  FeedResult feed_marks(uint64_t seq, uint64_t token);
  FeedResult feed_fixed(uint64_t seq, uint64_t token);
  Phase* phase_slot(uint16_t id);
  const Phase* phase_slot(uint16_t id) const;

  // period_search.cpp
  void update_candidates(uint64_t pos, uint64_t token);
  uint32_t window_distance(uint64_t pos, uint64_t token);
  void propose_distance(uint64_t pos, uint32_t d);
  void propose_anchor(uint64_t pos, uint64_t token);
  void backfill(Candidate& c, uint64_t pos) const;
  void add_candidate(uint32_t period, uint64_t pos, Origin origin);
  bool lockable_exact(const Candidate& c, uint64_t pos) const;
  bool lockable_bag(Candidate& c, uint64_t pos);
  uint32_t distinct_in_window(uint64_t pos, uint32_t period) const;
  uint32_t bag_divisor(uint32_t period, uint64_t pos) const;
  static uint32_t bag_windows_needed(uint32_t period, uint32_t distinct);
  static double bag_chance_log10(uint32_t period, uint32_t distinct);
  const Failure* failure(uint32_t period) const;
  void remember_failure(uint32_t period, uint32_t run, uint32_t hits);
  void note_evidence(const Candidate& c);

  // step_lock.cpp
  bool lock(uint64_t pos, const Candidate& c, bool exact);
  uint64_t bag_signature(uint64_t pos, uint32_t period) const;
  bool repeated_composition(uint32_t period) const;

  // bag_follower.cpp
  int32_t find_slot(uint64_t token) const;
  int32_t insert_slot(uint64_t token);
  uint32_t count_of(const TokenSlot& s, const OpenStep& st) const { return s.ep[st.field] == st.epoch ? s.cnt[st.field] : 0; }
  void bump(TokenSlot& s, const OpenStep& st);
  uint32_t ordinal_of(const TokenSlot& s, uint32_t k) const { return k == 0 ? s.first : by_token_[s.base + k]; }
  bool build_template(uint64_t pos, uint32_t period, uint32_t beta);
  void start_following(uint64_t pos, uint32_t beta);
  uint32_t occurrence_since_mark(uint64_t token);
  enum AssignKind : uint8_t { kNoise, kCurrent, kLate, kNext, kOpened };
  struct Assignment {
    uint8_t kind = kNoise;
    bool displaced = false;
    uint32_t k = 0, ordinal = 0;
    uint32_t closed_missing = 0;  // identities missing from steps closed by this allocation
    uint32_t closed_worst = 0;    // highest noise + missing of those steps
  };
  Assignment assign(uint64_t token, uint32_t open_allowance, bool plausible_late);
  void close_current(Assignment* a);
  FeedResult follow(uint64_t pos, uint64_t token);
  FeedResult noise(uint64_t pos, uint64_t token);

  // step_detector.cpp
  void unlock(uint64_t pos, bool retract);
  void close_segment(bool counted);
  void forget_phase_if_unused(uint16_t id);
};

}  // namespace sentinel
