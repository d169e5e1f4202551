// The step detector's interface types (StepDetector in step_detector.h): its configuration, what
// feed() returns, its events, statistics and diagnosis.
#pragma once
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
  kStepInferred = 1u << 1,  // step start that happened before the lock, found when the period was known, or
                            // after it, an epoch's short last batch (docs/step-detection.md)
  kStepLock = 1u << 2,      // first step event of a lock (a lock is a run of steps of one phase)
  kStepNewPhase = 1u << 3,  // with kStepLock: a pattern not seen before (a new phase id)
  kStepRelock = 1u << 4,    // with kStepLock: a pattern seen before (its phase id is reused)
  kStepUnlock = 1u << 5,    // not a step start: the lock was lost; seq is where the pattern ended (the
                            // first allocation after the last one that fit): the last step ends there
  kStepRetract = 1u << 6,   // not a step start: step events of `phase` with seq in [seq, end_seq] are void
  kStepFixed = 1u << 7,     // step start given by SENTINEL_STEP=N
  kStepDropLast = 1u << 8,  // not a step start: the newest step of `phase`, begun at seq, was not one (an
                            // iteration begun but not run, docs/step-detection.md "The last step")
};

struct StepEvent {
  uint64_t seq;      // first allocation of the step (or where the lock was lost, or the voided range)
  uint64_t end_seq;  // kStepRetract: last seq of the voided range; a step found after its lock was lost
                     // (kStepInferred): its last allocation; else equal to seq
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
  uint64_t windows_walked;      // window pairs compared walking chains of equal bags back (the search's work)
  uint32_t state;               // 0 searching, 1 tentative, 2 confirmed
  uint64_t locks, unlocks, retracted;
  uint64_t lost_at_seq;  // where the latest lock ended (valid when unlocks > 0)
  uint64_t lost_steps;   // steps of that lock
  uint32_t lost_period;
  uint16_t lost_phase;
};

}  // namespace sentinel
