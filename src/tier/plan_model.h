// The planner's internal model of one phase's step (docs/planner.md): every identity as an item with
// a timeline of alive intervals and its touched bytes per interval, and the one evaluator that scores
// any schedule (fast mask per item) with the same cost model, whichever policy produced it. Internal
// to src/tier/plan_*.cpp.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "tier/planner.h"

namespace sentinel::plan {

inline constexpr uint32_t kMaxIntervals = 64;

inline uint64_t bit(uint32_t i) {
  return uint64_t{1} << i;
}
inline uint32_t popcount(uint64_t m) {
  return static_cast<uint32_t>(__builtin_popcountll(m));
}
inline uint64_t sat_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

// One identity. Its timeline starts at `start` (its birth interval) and covers `len` intervals,
// wrapping past the step's end (a persistent object born in the step lives until the same identity
// is born again in the next step). Items born outside the steps are `cyclic`: the same object in
// every step, alive in every interval, so every edge of its mask is a move, also the one from the
// last interval to interval 0.
struct Item {
  uint64_t size = 0;
  uint64_t alive = 0;               // interval bits
  uint64_t touch = 0;               // interval bits touched in the profile
  uint64_t touched = 0;             // bytes touched over all intervals (and profiled steps)
  const uint64_t* bytes = nullptr;  // touched bytes per interval (n entries)
  // Access-weighted bytes per interval (n entries): touched bytes x their access intensity, the mean
  // passes a touched byte was touched in (sentinel_touch.passes_x256); the touched bytes where the
  // profile has no passes. What a slow placement costs and what ranks placements; the fast-hit share
  // stays a share of touched bytes, which is what the placement check measures.
  const uint64_t* weight = nullptr;
  uint64_t weighted = 0;  // over all intervals (and profiled steps)
  uint32_t start = 0;
  uint32_t len = 0;
  uint32_t id = 0;
  uint32_t group = 0;
  uint32_t ordinal = 0;  // in-step ordinal (SENTINEL_NO_ORDINAL outside)
  uint32_t chunk = 0;    // of an identity planned in chunks (one item per chunk), else 0
  uint8_t lifetime = 0;
  bool cyclic = false;
  bool pinned = false;
  bool chunked = false;  // one chunk of an identity planned in chunks
};

struct Model {
  uint32_t n = 0;      // intervals
  uint64_t all = 0;    // mask of the n intervals
  uint32_t count = 0;  // items: one per identity, or per chunk of an identity planned in chunks
  Item* items = nullptr;
  uint64_t footprint_peak = 0;  // max over intervals of the bytes alive
  uint64_t total_touched = 0;
  uint64_t total_weighted = 0;  // access-weighted bytes (Item::weight) of every item
  bool intensity = false;       // some touch has an access intensity (the profile was taken in passes)
  uint64_t budget = 0;
  // Cost model: interval start offsets (ns from the step start) and the step length; timed is
  // false when no durations are known (then a move is late only when it has no lead at all).
  bool timed = false;
  // SENTINEL_TIER_BUDGET_TIMED, with a time base: the lateness model holds births and promotions to the
  // budget (the durations were measured under a moving schedule, so they include what moves cost).
  bool budget_timed = false;
  uint64_t interval_start[kMaxIntervals + 1] = {};
  uint64_t bandwidth = kDefaultMigrateBytesPerS;
  uint32_t profiled_steps = 1;
  // SENTINEL_TIER_NO_MOVES (sentinel policy): every object keeps one node for its whole life.
  bool no_moves = false;
  // The step-time model's costs (0: unknown), and whether the sentinel trial ranks by modeled step
  // time: only with a slow-access cost and a time base (timed), else it ranks by fast-hit bytes.
  StepCosts costs;
  bool by_step_time = false;

  uint32_t at(const Item& it, uint32_t pos) const { return (it.start + pos) % n; }
  // ns from the start of interval a to the start of interval b (b at or after a, within a step).
  uint64_t span_ns(uint32_t a, uint32_t b) const {
    if (b >= a) return interval_start[b] - interval_start[a];
    return interval_start[n] - interval_start[a] + interval_start[b];
  }
};

// Builds the model from the input: validates it, resolves the budget, derives timelines and the
// peak footprint. False with *error on bad input or exhausted scratch.
bool build_model(const PlanInput& in, PlanScratch& scratch, Model* m, const char** error);

// The step-time model of one schedule, ns per step (docs/planner.md): the measured durations (base),
// plus the bytes touched on the slow node times the slow-access cost, plus the bytes moved times the
// move cost. Each part is rounded to the nearest ns (saturating); total is their sum. All 0 without a
// time base (no interval durations).
struct StepTime {
  uint64_t base = 0;
  uint64_t slow = 0;
  uint64_t move = 0;
  uint64_t total = 0;
};

// slow_weight: access-weighted bytes counted slow (touched bytes where the profile has no intensity),
// summed over the profiled steps; moved_bytes: per step.
StepTime step_time(const Model& m, uint64_t slow_weight, uint64_t moved_bytes);

// What one schedule achieves under the cost model.
struct Outcome {
  uint64_t hit_bytes = 0;    // touched bytes while fast and not waiting for a late move-in
  uint64_t hit_weight = 0;   // their access-weighted bytes (Item::weight)
  uint64_t moved_bytes = 0;  // per step, both directions
  uint32_t moves = 0;
  uint32_t late = 0;
  uint64_t fast_peak = 0;  // max over intervals of the fast bytes (plus `reserved`)
  StepTime step;           // the modeled step time
};

// Scores masks[i] (fast-interval bits of item i, within its alive bits). `reserved` is fast memory
// held at every interval (the short-lived pool): the peak counts it instead of the items that
// pool[i] (optional) marks as served from it. late_out (optional) gets,
// per item, the touched intervals the model counts slow because a move-in had not finished.
// False only when scratch ran out.
bool evaluate(const Model& m, const uint64_t* masks, const uint8_t* pool, uint64_t reserved, PlanScratch& scratch,
              Outcome* out, uint64_t* late_out);

// The lateness model of a timed schedule: the migrator as it executes it (migrator.h), simulated from the
// schedule's own placement until a step starts as the one before it did (at most a few steps), and that
// steady step judged. Each boundary's pass starts when the boundary does (or when the call under way
// ends) and gives way at the next boundary, where the next pass recomputes what is left: demotions, then
// promotions nearest next use first and those for the interval itself last, one object per call at the
// model's bandwidth. Births land where the
// schedule wants them, and the budget holds no move back (docs/planner.md says why). late[i] gets the
// touched intervals item i has fast in masks[i] whose pages were not all there when the interval began.
// False only when scratch ran out.
bool late_touches(const Model& m, const uint64_t* masks, PlanScratch& scratch, uint64_t* late);

// Move edges of one item's mask: bits of the intervals at whose start a move to the fast node
// (in) or to the slow node (out) is issued. A birth on either node and a free are not moves.
void move_edges(const Model& m, const Item& it, uint64_t mask, uint64_t* in, uint64_t* out);

// Fast bytes at each interval (occ[0..n)), leaving out the items pool[i] marks (optional).
void occupancy(const Model& m, const uint64_t* masks, uint64_t* occ, const uint8_t* pool = nullptr);

// Policies: fill masks[0..count) (and pool flags for sentinel). False only when scratch ran out.
void plan_all_slow(const Model& m, uint64_t* masks);
void plan_all_fast(const Model& m, uint64_t* masks);
bool plan_first_touch(const Model& m, PlanScratch& scratch, uint64_t* masks);
bool plan_hot(const Model& m, PlanScratch& scratch, uint64_t* masks);

struct SentinelChoice {
  uint32_t lead = 0;
  uint32_t gap = 0;
  bool grouped = false;
  uint64_t pool_bytes = 0;
  uint32_t trials = 0;
  bool first_fit = false;     // the first-touch placement was the best candidate
  bool by_step_time = false;  // the trial ranked by modeled step time (Model::by_step_time)
};
bool plan_sentinel(const Model& m, PlanScratch& scratch, uint64_t* masks, uint8_t* pool, SentinelChoice* choice);

// In-place sort through std::sort (introsort: no allocation, unlike std::stable_sort). Every
// comparator the planner passes is a strict total order, so the result is the same on every run.
template <typename T, typename Less>
void sort_items(T* first, size_t n, Less less) {
  std::sort(first, first + n, less);
}

}  // namespace sentinel::plan
