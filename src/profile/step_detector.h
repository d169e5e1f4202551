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
// split by purpose, one class each (namespace step_internal), composed here: StepHistory (the stream and
// its ring of prefix sums), PeriodSearch (proposals and candidates), BagFollower (the template table and
// the follower's rules), StepLock (making a lock: where a step starts, the template, inferred steps,
// overlapping locks; then following under the tolerance policy, and losing it), PhaseMemory (phase ids and
// the latest locks). StepDetector itself holds the modes (auto, marks, fixed), the events, the counters
// and the diagnosis.
//
// Constraints: single-threaded (the caller serialises feed/mark/next_event), allocation-free (all memory
// comes from one lazily backed mmap made by init()), no exceptions, no RTTI: it runs inside malloc.
// feed() costs O(1) amortized.
#pragma once
#include <cstddef>
#include <cstdint>

#include "profile/bag_follower.h"
#include "profile/period_search.h"
#include "profile/phase_memory.h"
#include "profile/step_detector_internal.h"
#include "profile/step_history.h"
#include "profile/step_lock.h"
#include "profile/step_types.h"

namespace sentinel {

class StepDetector {
 public:
  static constexpr uint32_t kMaxPeriod = step_internal::kMaxPeriod;           // longest detectable period
  static constexpr uint64_t kReorder = step_internal::StepHistory::kReorder;  // a seq this far off is no gap
  static constexpr uint32_t kEventSlots = step_internal::StepEvents::kSlots;  // overflow is counted

  // constexpr: the runtime's state, which holds one, is constant-initialised.
  constexpr StepDetector()
      : search_(&history_, &phases_),
        follower_(&history_),
        lock_(&cursor_, &history_, &search_, &follower_, &phases_, &events_, &remainder_) {}
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
  // live_bytes: the tracked bytes live just before this allocation, where the caller knows them; a lock
  // starts its steps where that working set is smallest (docs/step-detection.md, "Where a step starts").
  static constexpr int64_t kNoLive = step_internal::StepHistory::kNoLive;
  FeedResult feed(uint64_t seq, uint32_t site, uint64_t size, int64_t live_bytes = kNoLive);
  // sentinel_step(): a step begins at allocation seq (the next one to be fed). In auto mode the first
  // mark switches the detector to marks for the rest of the process. Ignored in fixed mode.
  void mark(uint64_t seq);
  // Nothing more will be fed (the process ends, or its dump is written now): a newest step that holds
  // fewer than half of its allocations is dropped (a kStepDropLast event).
  void finish();

  // ---- state (valid between calls)
  bool locked() const { return cursor_.locked(); }  // tentative or confirmed
  bool confirmed() const { return cursor_.state == step_internal::StepCursor::kConfirmed; }
  StepMode mode() const { return mode_; }
  uint32_t period() const { return locked() ? cursor_.period : 0; }  // allocations per step (expected, marks)
  uint64_t step_start() const { return cursor_.step_start; }         // seq where the newest step began
  // The template ordinal of the latest allocation that fit, and the in-step clock (see FeedResult).
  uint32_t ordinal() const { return locked() ? cursor_.ordinal : kNoOrdinal; }
  uint32_t clock() const { return locked() ? cursor_.clock : kNoOrdinal; }
  uint64_t steps() const;  // steps counted so far (see docs)
  uint16_t phase() const { return locked() ? cursor_.phase : 0; }
  uint32_t phases() const { return phases_.seen(); }  // distinct patterns locked on so far
  // In-step ordinal that an allocation made before the current lock had (the lock's verified periodic
  // region and the backward-aligned part before it are covered; exact locks only); kNoOrdinal when unknown.
  uint32_t retro_ordinal(uint64_t seq) const;

  // ---- the template: the reference step of a locked phase, template ordinal -> (site, size, k). It is
  // held for the phase locked now, or the last one locked (template_phase(), 0: none); a consumer that
  // needs an earlier phase's template copies it at that phase's kStepLock event. The template of a
  // phase is rebuilt at every (re)lock: identities (site, size, k) are stable, ordinals are the positions
  // in the step that relocked (the same for a step repeated in exact order).
  uint16_t template_phase() const { return follower_.held_phase(); }
  uint32_t template_period() const { return follower_.held_phase() ? follower_.held_period() : 0; }
  bool template_entry(uint16_t phase, uint32_t ordinal, uint32_t* site, uint64_t* size, uint32_t* k) const;
  // m(site, size): occurrences per step in the held template of `phase` (0: none).
  uint32_t multiplicity(uint16_t phase, uint32_t site, uint64_t size) const;
  // Template ordinal of identity (site, size, k) in the held template of `phase`; kNoOrdinal if none.
  uint32_t template_ordinal(uint16_t phase, uint32_t site, uint64_t size, uint32_t k) const;

  // ---- events: step starts and lock changes, oldest first. False when none is pending.
  bool next_event(StepEvent* out);
  uint64_t events_dropped() const { return events_.dropped(); }

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
  // Allocations that fit no identity; identities of a step that never came; allocations that fit, but
  // before an identity that precedes them in the template; allocations that fit the previous step (kFedLate).
  uint64_t noise_tokens() const { return lock_.counters().noise; }
  uint64_t skipped_tokens() const { return lock_.counters().skipped; }
  uint64_t displaced_tokens() const { return lock_.counters().displaced; }
  uint64_t late_tokens() const { return lock_.counters().late; }
  uint64_t locks() const { return lock_.counters().locks; }
  uint64_t unlocks() const { return lock_.counters().unlocks; }
  uint64_t retracted() const { return lock_.counters().retracted; }  // locks voided (spurious or absorbed)
  // Per phase (1-based ids) or overall (0). False for a phase never seen or no longer remembered.
  bool phase_stats(uint16_t phase, PhaseStats* out) const;
  // What the search saw; describe() writes it as one line (no allocation, no locale) and returns its
  // length (at most cap - 1; buf is always terminated when cap > 0).
  void diagnose(StepDiagnosis* out) const;
  size_t describe(char* buf, size_t cap) const;
  static size_t memory_bytes();  // mapped by init(); touched as used

 private:
  FeedResult feed_auto(uint64_t seq, uint64_t token, int64_t live_bytes);
  FeedResult feed_marks(uint64_t seq, uint64_t token);
  FeedResult feed_fixed(uint64_t seq, uint64_t token);
  void emit(uint64_t seq, uint32_t period, uint16_t phase, uint16_t flags);  // marks and fixed mode

  void* mem_ = nullptr;  // the one mapping: the history's ring, the search's tables, the template, events
  StepConfig config_{};
  StepMode mode_ = StepMode::kAuto;
  step_internal::StepCursor cursor_;
  step_internal::StepHistory history_;
  step_internal::PeriodSearch search_;
  step_internal::BagFollower follower_;
  step_internal::PhaseMemory phases_;
  step_internal::StepEvents events_;
  step_internal::StepRemainder remainder_;
  step_internal::StepLock lock_;
  bool any_fed_ = false;  // fed in auto or fixed mode
  uint64_t auto_fed_ = 0;
  // marks / fixed
  uint64_t marks_ = 0;
  uint64_t last_mark_seq_ = 0;
  uint64_t fixed_base_seq_ = 0;
  uint64_t fixed_steps_ = 0;
};

}  // namespace sentinel
