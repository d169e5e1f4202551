// The planner (docs/design.md §2.5): one pure function from a phase's profile, a policy and a fast-tier budget
// to a plan — for each identity, the node it sits on during each interval of the step, and so each
// move. It has no runtime state and no hidden inputs. Two callers run the very same code: the runtime,
// after profiling a phase (on Sentinel's own thread, inside the recursion guard), and
// `sentinel-view plan DUMP`, offline, on the records a dump holds.
//
// Its input is the format's own records (include/sentinel/format.h): the phase's identities, their
// touches, the interval durations and the measured migration bandwidth. Memory comes only from the
// caller's PlanScratch (mmap'd, no malloc, no exceptions: the core is built without them), so the
// runtime can call it from any thread without touching the program's heap. docs/planner.md describes
// the model, the policies and the guarantees.
#pragma once
#include <cstddef>
#include <cstdint>

#include "base/policy_names.h"
#include "format/identity_chunks.h"
#include "profile/page_sample.h"
#include "sentinel/format.h"

namespace sentinel {

// A bump allocator over one lazily backed mapping; everything it hands out lives until reset() or
// destruction. alloc() returns nullptr (never throws, never aborts) when the mapping is exhausted.
class PlanScratch {
 public:
  PlanScratch() = default;
  ~PlanScratch();
  PlanScratch(const PlanScratch&) = delete;
  PlanScratch& operator=(const PlanScratch&) = delete;
  bool init(size_t capacity_bytes);
  void* alloc(size_t bytes, size_t align = 16);
  template <typename T>
  T* array(size_t n) {
    return static_cast<T*>(alloc((n ? n : 1) * sizeof(T), alignof(T) < 16 ? 16 : alignof(T)));
  }
  void reset() { used_ = 0; }
  size_t used() const { return used_; }
  size_t capacity() const { return capacity_; }
  // Gives back everything allocated after used() returned `mark` (a trial's temporaries).
  void rewind(size_t mark) {
    if (mark <= used_) used_ = mark;
  }

 private:
  char* base_ = nullptr;
  size_t capacity_ = 0;
  size_t used_ = 0;
};

// The policies that make a plan: "sentinel", "first-touch", "all-slow", "all-fast", "hot"; false for
// anything else ("interleave" places pages at birth and has no plan). policy_name(): base/policy_names.h.
bool parse_policy(const char* text, sentinel_policy* out);

// The fast-tier budget as the user gave it: bytes, or a share of the profiled peak footprint.
struct FastBudget {
  uint64_t bytes = 0;      // used when share_ppm == 0
  uint32_t share_ppm = 0;  // e.g. 200000 for "20%"; 0: absolute; at most 1000000
};

// What the step-time model charges (docs/planner.md, "The cost model"), in ns per byte; 0: unknown.
// Given by the caller: the runtime from SENTINEL_STEP_COSTS (given, or measured at start), sentinel-view
// plan from the dump's PLAN record or --slow-ns-per-kib, --move-ns-per-kib. With slow_ns_per_byte > 0
// and interval durations known, the sentinel policy's trial keeps the schedule of least modeled step
// time instead of the one of most fast-hit bytes.
struct StepCosts {
  double slow_ns_per_byte = 0;  // extra time of a byte touched on the slow node instead of the fast one
  double move_ns_per_byte = 0;  // time a moved byte costs the training thread
};

// Costs in whole ns per KiB, as SENTINEL_STEP_COSTS and the PLAN record hold them. Callers give the
// planner costs of this form so that the recorded numbers replay the plan exactly (N / 1024 x 1024 is
// N again in a double).
inline StepCosts step_costs_of_kib(uint32_t slow_ns_per_kib, uint32_t move_ns_per_kib) {
  return StepCosts{static_cast<double>(slow_ns_per_kib) / 1024, static_cast<double>(move_ns_per_kib) / 1024};
}
// A cost per byte as whole ns per KiB, rounded; 0 for an unknown (0, negative or NaN) one, saturated.
inline uint32_t ns_per_kib_of(double ns_per_byte) {
  if (!(ns_per_byte > 0)) return 0;
  const double kib = ns_per_byte * 1024 + 0.5;
  return kib >= 4294967295.0 ? UINT32_MAX : static_cast<uint32_t>(kib);
}

// The rate of `bytes` moved in `ns`, in bytes/s, saturated to the u64 range (a corrupt log can give any
// ratio); 0 when ns is 0. The migrator's measured bandwidth, in the runtime and in the viewer.
inline uint64_t bytes_per_s(uint64_t bytes, uint64_t ns) {
  if (!ns) return 0;
  const double r = static_cast<double>(bytes) * 1e9 / static_cast<double>(ns);
  return r >= 18446744073709551615.0 ? UINT64_MAX : static_cast<uint64_t>(r);
}

struct PlanInput {
  uint32_t phase = 0;
  uint32_t intervals = 0;                         // 1..64
  const sentinel_identity* identities = nullptr;  // this phase's identities (any order, unique ids)
  uint32_t identity_count = 0;
  const sentinel_touch* touches = nullptr;  // touches of those identities; others are ignored
  uint64_t touch_count = 0;
  uint32_t profiled_steps = 1;            // touches are summed over this many steps
  const uint64_t* interval_ns = nullptr;  // mean duration of each interval (intervals entries; null: unknown)
  uint64_t migrate_bytes_per_s = 0;       // measured move_pages bandwidth (0: unknown, a default is used)
  sentinel_policy policy = SENTINEL_POLICY_SENTINEL;
  FastBudget budget;
  // SENTINEL_TIER_* carried into the plan header unchanged: the run's TIERING flags (dry run, NUMA
  // balancing, fault injection). BUDGET_SHARE is make_plan()'s own: set when budget.share_ppm is.
  uint32_t flags = 0;
  StepCosts costs;  // the step-time model's costs (0: unknown; then plans are as without the model)
  // Identities the sample covers were profiled in a sample (profile/page_sample.h): their chunks'
  // touched bytes are estimates, which the model shrinks toward each identity's mean (docs/planner.md,
  // "Sampled estimates"). granularity: the profile's, in bytes; 0 leaves every estimate as it is.
  PageSample sample;
  uint32_t granularity = 0;
};

// The bandwidth the cost model assumes when PlanInput::migrate_bytes_per_s is 0 (1 GiB/s: the order
// of move_pages on 4 KiB pages between two sockets).
inline constexpr uint64_t kDefaultMigrateBytesPerS = uint64_t{1} << 30;

// What the sentinel policy's trial ranks candidate schedules by (docs/planner.md).
enum class PlanObjective : uint32_t {
  kFastHitBytes = 0,  // most fast-hit bytes, then fewest bytes moved, then fewest moves
  kStepTime = 1,      // least modeled step time, then as kFastHitBytes
};

struct Plan {
  sentinel_plan_header header{};
  // One per input identity, in input order; an identity planned in chunks has one per chunk, in order
  // (identity_chunks()).
  sentinel_plan_entry* entries = nullptr;
  uint32_t entry_count = 0;
  // Per entry, as the planner modeled it (not part of the PLAN record): the intervals the identity
  // is alive in, and the intervals at whose start a move to the fast node (in) or the slow node
  // (out) is issued. A birth on either node and a free are not moves.
  uint64_t* alive_masks = nullptr;
  uint64_t* move_in_masks = nullptr;
  uint64_t* move_out_masks = nullptr;
  // What the cost model found for the chosen schedule (not part of the PLAN record).
  uint32_t moves_per_step = 0;  // object moves, both directions
  uint32_t late_moves = 0;      // move-ins the model expects to finish after the first touch
  uint32_t gap_intervals = 0;   // sentinel: longest untouched gap kept resident (the migration interval)
  uint32_t grouped = 0;         // sentinel: 1 when co-allocation groups were planned as units
  uint32_t trials = 0;          // sentinel: candidate schedules the test and trial evaluated
  uint32_t first_fit = 0;       // sentinel: 1 when placing at first touch won the trial
  uint64_t touched_bytes = 0;   // bytes touched per profiled step (sum over identities)
  uint64_t fast_hit_bytes = 0;  // of those, touched while fast (the model): hit share = ratio
  // Access-weighted bytes (touched bytes x access intensity, docs/planner.md) per profiled step, and of
  // those, fast: equal to the two above where the profile has no intensity (intensity 0).
  uint64_t weighted_bytes = 0;
  uint64_t fast_hit_weighted = 0;
  uint32_t intensity = 0;  // 1: the profile was taken in passes (SENTINEL_PROFILE_PASSES)
  // The step-time model (docs/planner.md), ns per step, each part rounded to the nearest ns; all 0
  // when there is no time base (no interval durations). modeled_step_ns = base + slow + move.
  uint64_t modeled_step_ns = 0;
  uint64_t modeled_base_ns = 0;  // the measured interval durations, summed
  uint64_t modeled_slow_ns = 0;  // bytes touched on the slow node x StepCosts::slow_ns_per_byte
  uint64_t modeled_move_ns = 0;  // bytes moved x StepCosts::move_ns_per_byte
  PlanObjective objective = PlanObjective::kFastHitBytes;  // sentinel: what its trial ranked by
};

// A plan's access-weighted bytes per step on the slow node: what its modeled slow time prices.
inline uint64_t slow_weighted_bytes(const Plan& plan) {
  return plan.weighted_bytes > plan.fast_hit_weighted ? plan.weighted_bytes - plan.fast_hit_weighted : 0;
}

// A plan's modeled step at other costs than it was made with (ns; the same schedule, priced again): its
// base, plus its access-weighted bytes on the slow node and its moved bytes at the costs given per KiB.
// fit_slow_cost() solves it for the slow cost; the viewer prices the plan at the fitted one.
double priced_step_ns(const Plan& plan, uint32_t slow_ns_per_kib, uint32_t move_ns_per_kib);

// The interleave policy (pages of every tracked object weighted-interleaved at birth, fast_share_ppm of
// them on the fast node, never moved) priced by the same model: it has no plan of its own, so this is the
// all-slow plan of the same input with that share of its slow accesses made fast (ns; objects smaller
// than an interleave group count by their share too).
double interleaved_step_ns(const Plan& all_slow, uint32_t fast_share_ppm);

// The step-time model on another clock than the one its plans were timed on (docs/planner.md, "The model
// on another clock"): the slow-tier guest's emulated time, where the guest's wall time, the model's own
// clock there, mostly measures the emulator. All-fast's and all-slow's steps measured on that clock are the
// base and what all-slow's access-weighted bytes on the slow node cost; a plan's schedule is priced on them
// as on its own costs. Moves keep the ratio to the slow cost of the costs the plan was made with: two
// placements without moves say nothing about what a move costs on that clock.
struct ClockModel {
  double base_ns = 0;           // all-fast's step on the clock
  double slow_ns_per_byte = 0;  // (all-slow - all-fast) / all-slow's access-weighted bytes
  double move_ns_per_byte = 0;  // slow_ns_per_byte x the planned costs' move / slow ratio (0: unknown)
};
// all_slow: the phase's all-slow plan; planned: the costs the plans were made with. False when the clock
// has all-slow no slower than all-fast, or the plan has no access-weighted bytes to spread it over.
bool calibrate_clock(const Plan& all_slow, const StepCosts& planned, double all_fast_ns, double all_slow_ns,
                     ClockModel* out);
// A plan's modeled step on the clock (ns).
double clocked_step_ns(const Plan& plan, const ClockModel& clock);
// The interleave policy on the clock: as interleaved_step_ns, all-slow's slow accesses on the clock.
double clocked_interleaved_ns(const Plan& all_slow, const ClockModel& clock, uint32_t fast_share_ppm);

// The slow-access cost fitted to a schedule's measured step (docs/planner.md, "The fitted slow cost"):
// the runtime times the schedule in effect over steady steps, in wall time, and charges what they took
// beyond the modeled base (the plain step's intervals) and moves to the schedule's access-weighted bytes on
// the slow node. The probe's cost (SENTINEL_STEP_COSTS=auto) streams one buffer; the program's kernels
// also write and miss in their own patterns, which is what this measures. `status` is a SENTINEL_FIT_*;
// slow_ns_per_kib is set with SENTINEL_FIT_DONE only, at least 1.
struct SlowCostFit {
  uint32_t status = SENTINEL_FIT_NONE;
  uint32_t slow_ns_per_kib = 0;
};
// The least share of the schedule's access-weighted bytes that must be slow to fit from (1/kMinFitShare),
// and the least bytes: below either, the step's noise outweighs what the slow node adds.
inline constexpr uint64_t kMinFitShare = 10;
inline constexpr uint64_t kMinFitSlowBytes = uint64_t{1} << 20;
// plan: as make_plan() modeled it; measured_step_ns: the steps' wall time (their median);
// move_ns_per_kib: what a moved KiB costs (0: unknown, then a schedule that moves is not fitted).
SlowCostFit fit_slow_cost(const Plan& plan, uint64_t measured_step_ns, uint32_t move_ns_per_kib);

// What a moved KiB cost the training thread, fitted to the step-time trial: the moving schedule and the
// same phase without moves, each as make_plan() modeled it (one input, so one base), and each one's
// measured mean step in wall time. The moving step's extra time over the fixed one, less the modeled
// difference of their slow accesses at slow_ns_per_kib (the accesses the moves saved), is what its moves
// cost; over the bytes it moved a step. SENTINEL_MOVE_FIT_* in status; the caller says EMULATED itself.
struct MoveCostFit {
  uint32_t status = SENTINEL_MOVE_FIT_NONE;
  uint32_t move_ns_per_kib = 0;
};
// The least bytes a step must move to fit from: below it the steps' noise outweighs the moves.
inline constexpr uint64_t kMinFitMovedBytes = uint64_t{1} << 20;
MoveCostFit fit_move_cost(const Plan& moving, uint64_t moving_step_ns, const Plan& fixed, uint64_t fixed_step_ns,
                          uint32_t slow_ns_per_kib);
// The move cost a trial's fit gives later plans, ns per KiB: the fitted one, 1 for free moves (0 is an
// unknown cost to the planner), 0 where nothing was fitted. The runtime and sentinel-view whatif --fitted.
inline uint32_t move_cost_of_fit(uint32_t move_fit, uint32_t fit_move_ns_per_kib) {
  return move_fit == SENTINEL_MOVE_FIT_DONE ? fit_move_ns_per_kib : move_fit == SENTINEL_MOVE_FIT_FREE ? 1 : 0;
}

// The steps a fit was timed over: their median, and how far apart they lie, (longest - shortest) / median in
// ppm (0 for fewer than 2 steps or a median of 0); of the first kMaxSpreadSteps where there are more. The
// runtime adopts a fitted cost for its later plans only within kMaxFitSpreadPpm: steps that differ by more
// measure the host's load (another process, a loaded guest) at least as much as the slow node.
inline constexpr uint32_t kMaxSpreadSteps = 16;
struct StepSpread {
  uint64_t median = 0;
  uint32_t spread_ppm = 0;
};
StepSpread step_spread(const uint64_t* steps, uint32_t n);
inline constexpr uint32_t kMaxFitSpreadPpm = 100000;  // 10%

// Scratch bytes make_plan() needs at most for this input (PlanScratch::init() argument). The mapping
// is lazily backed: only what a plan touches costs memory.
size_t plan_scratch_bytes(const PlanInput& in);

// Plans one phase. False (with *error set to a static one-line string) when the input is unusable
// (no intervals or more than 64, inconsistent identities or touches, a budget share above 100%) or
// scratch memory ran out. Deterministic: the same input gives the same plan, byte for byte.
bool make_plan(const PlanInput& in, PlanScratch& scratch, Plan* out, const char** error);

}  // namespace sentinel
