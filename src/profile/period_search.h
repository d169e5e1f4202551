// Step detection, the search for the period: proposals (recurring windows of tokens, recurring tokens)
// and the candidates that verify them, by exact repeat and by equal bags, until one can be locked on.
// See docs/step-detection.md, "Proposing periods", "Verifying" and "Locking".
#pragma once
#include <cstddef>
#include <cstdint>

#include "profile/phase_memory.h"
#include "profile/step_detector_internal.h"
#include "profile/step_history.h"

namespace sentinel::step_internal {

class PeriodSearch {
 public:
  static constexpr uint32_t kWindow = 4;       // tokens per hashed window (candidate proposals)
  static constexpr uint32_t kTableBits = 16;   // window hash table: 2^16 last positions
  static constexpr uint32_t kAnchorBits = 15;  // token table: 2^15 last positions (anchor proposals)
  static constexpr uint32_t kCandidates = 8;   // periods verified at the same time
  static constexpr uint32_t kSmallPeriod = 8;  // periods below this need a run of kSmallRun to lock
  static constexpr uint32_t kSmallRun = 32;
  static constexpr uint32_t kBagMinWindows = 3;       // equal-bag window pairs a bag lock needs, at least
  static constexpr uint32_t kMinAnchorGap = 8;        // shorter recurrences of one token are not proposed
  static constexpr uint32_t kFailSlots = 16;          // memory of retracted (spurious) periods
  static constexpr uint32_t kDivisorCheckMax = 4096;  // periods checked for a periodic divisor at lock
  // Equal-bag windows counted back from a cut (a candidate's back-fill, a chain at another residue): more
  // than any lock needs, and the bound on the walk, which would otherwise grow with the history.
  static constexpr uint32_t kHitsBackMost = 64;
  // The window table, the token table, the chain of window distances (one per ring position).
  static constexpr size_t kTableBytes = (uint64_t{1} << kTableBits) * sizeof(uint64_t);
  static constexpr size_t kAnchorBytes = (uint64_t{1} << kAnchorBits) * sizeof(uint64_t);
  static constexpr size_t kChainBytes = StepHistory::kRing * sizeof(uint16_t);
  static constexpr size_t kBytes = kTableBytes + kAnchorBytes + kChainBytes;

  enum Origin : uint8_t { kFromWindow, kFromAnchor };
  static constexpr uint32_t kMinPeriod = 2;  // the shortest step locked on
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

  // phases: the patterns locked on so far (a known pattern's bag locks with fewer windows; may be null).
  constexpr PeriodSearch(const StepHistory* history, const PhaseMemory* phases) : h_(history), known_(phases) {}
  void attach(void* mem);  // kBytes

  // Every position, also while locked: keeps the window table current (so that the history is ready when
  // a lock is lost) and returns the distance to the window's previous occurrence (0: none), for propose().
  uint32_t observe(uint64_t pos, uint64_t token);
  // Searching: the candidates verify the new token, and the token itself may propose its distance.
  void verify(uint64_t pos, uint64_t token);
  // Proposes the window distance d returned by observe() (and the distance before it in the chain).
  void propose(uint64_t pos, uint32_t d);
  // The candidate to lock on at pos, if any: the shortest lockable one. *exact: by exact repeat (else by
  // equal bags).
  bool choose(uint64_t pos, Candidate* chosen, bool* exact);
  void clear();  // the candidates are stale (they stopped verifying while locked)
  void reset();  // a gap in the stream: the candidates go, their evidence is kept for the diagnosis
  // A lock on `period` was retracted (or refused) at this evidence: a later one must show more.
  void remember_failure(uint32_t period, uint32_t run, uint32_t hits);
  // What the search saw: distinct tokens, the longest exact repeat, the longest chain of equal bags.
  void evidence(StepDiagnosis* out) const;

  // The shortest divisor d of `period` whose period/d windows of d before `cut` hold the same bag (0: none).
  uint32_t bag_divisor(uint32_t period, uint64_t cut) const;
  // log10 of the chance that two windows of P random allocations over D distinct tokens hold equal bags.
  static double bag_chance_log10(uint32_t period, uint32_t distinct);

 private:
  struct Failure {
    uint32_t period;
    uint32_t run;   // run at which a lock on this period was retracted
    uint32_t hits;  // bag windows at which a bag lock on it was retracted
    uint64_t stamp;
  };

  uint32_t window_distance(uint64_t pos, uint64_t token);
  uint32_t hits_back(uint64_t cut, uint32_t period, uint32_t most) const;
  void update_candidates(uint64_t pos, uint64_t token);
  void propose_anchor(uint64_t pos, uint64_t token);
  void backfill(Candidate& c, uint64_t pos) const;
  void add_candidate(uint32_t period, uint64_t pos, Origin origin);
  bool lockable_exact(const Candidate& c, uint64_t pos) const;
  uint32_t sized_run(const Candidate& c, uint64_t pos) const;
  bool lockable_bag(Candidate& c, uint64_t pos, uint32_t* divisor);
  bool divisor_lockable(uint32_t d, uint64_t pos, Candidate* out);
  Candidate candidate_from_history(uint32_t P, uint64_t pos) const;
  bool outweighed(const Candidate& exact) const;
  uint32_t distinct_in_window(uint64_t pos, uint32_t period) const;

  static uint32_t bag_windows_needed(uint32_t period, uint32_t distinct);
  void measure_bag(Candidate& c, uint64_t pos) const;
  const Failure* failure(uint32_t period) const;
  void note_evidence(const Candidate& c);

  const StepHistory* h_;
  const PhaseMemory* known_;
  uint64_t* table_ = nullptr;          // window hash -> last position + 1
  uint64_t* anchors_ = nullptr;        // token -> last position + 1 (anchor proposals, distinct count)
  uint16_t* chain_ = nullptr;          // ring: distance to the previous position with the same window hash
  uint64_t t1_ = 0, t2_ = 0, t3_ = 0;  // the three tokens before the current one
  Candidate cand_[kCandidates]{};
  Failure fail_[kFailSlots]{};
  uint64_t fail_stamp_ = 0;
  uint32_t best_run_ = 0, best_run_period_ = 0, best_hits_ = 0, best_hits_period_ = 0;
  uint32_t distinct_seen_ = 0;
  mutable uint64_t windows_walked_ = 0;  // hits_back's work (StepDiagnosis::windows_walked)
};

}  // namespace sentinel::step_internal
