// make_plan(): validates and models the input (plan_model.cpp), runs the policy (plan_baselines.cpp,
// plan_sentinel.cpp), scores the schedule with the one evaluator and writes the plan. No malloc, no
// exceptions: it runs inside the preloaded process as well as in sentinel-view.
#include "tier/planner.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

#include "tier/plan_model.h"

namespace sentinel {

PlanScratch::~PlanScratch() {
  if (base_) munmap(base_, capacity_);
}

bool PlanScratch::init(size_t capacity_bytes) {
  if (base_) munmap(base_, capacity_);
  base_ = nullptr;
  capacity_ = used_ = 0;
  if (capacity_bytes == 0) return false;
  void* p = mmap(nullptr, capacity_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  base_ = static_cast<char*>(p);
  capacity_ = capacity_bytes;
  return true;
}

void* PlanScratch::alloc(size_t bytes, size_t align) {
  if (!base_ || align == 0 || (align & (align - 1))) return nullptr;
  const size_t at = (used_ + align - 1) & ~(align - 1);
  if (at < used_ || at > capacity_ || bytes > capacity_ - at) return nullptr;
  used_ = at + bytes;
  return base_ + at;
}

bool parse_policy(const char* text, sentinel_policy* out) {
  if (!text) return false;
  for (uint32_t p = 0; p <= SENTINEL_POLICY_HOT; ++p)  // the policies that make a plan
    if (std::strcmp(text, kPolicyNames[p]) == 0) {
      *out = static_cast<sentinel_policy>(p);
      return true;
    }
  return false;
}

size_t plan_scratch_bytes(const PlanInput& in) {
  size_t c = 0;  // items: identities, or their chunks
  for (uint32_t i = 0; i < in.identity_count && in.identities; ++i) {
    const uint32_t k = identity_chunks(in.identities[i]);
    c += k ? k : 1;
  }
  const size_t n = in.intervals > plan::kMaxIntervals ? plan::kMaxIntervals : in.intervals;
  // Per identity: the model's item and its touched and access-weighted bytes, the sentinel policy's units,
  // unit bytes and two residency lists, the lateness model's object, lists and events (one per birth and
  // mask edge), and a dozen small arrays; plus alignment slack.
  const size_t per = 656 + 80 + n * (8 + 8 + 8 + 2 * 48 + 4) + 2 * 48;
  return c * per + (size_t{1} << 20);
}

bool make_plan(const PlanInput& in, PlanScratch& scratch, Plan* out, const char** error) {
  static const char* unused;
  if (!error) error = &unused;
  *error = nullptr;
  *out = Plan{};
  plan::Model m;
  if (!plan::build_model(in, scratch, &m, error)) return false;
  const char* oom = "planner scratch memory exhausted";
  uint64_t* masks = scratch.array<uint64_t>(m.count);
  uint8_t* pool = scratch.array<uint8_t>(m.count);
  sentinel_plan_entry* entries = scratch.array<sentinel_plan_entry>(m.count);
  uint64_t* alive = scratch.array<uint64_t>(m.count);
  uint64_t* move_in = scratch.array<uint64_t>(m.count);
  uint64_t* move_out = scratch.array<uint64_t>(m.count);
  if (!masks || !pool || !entries || !alive || !move_in || !move_out) return (*error = oom), false;
  for (uint32_t i = 0; i < m.count; ++i) pool[i] = 0;

  plan::SentinelChoice choice;
  bool ok = true;
  switch (in.policy) {
    case SENTINEL_POLICY_ALL_SLOW:
      plan::plan_all_slow(m, masks);
      break;
    case SENTINEL_POLICY_ALL_FAST:
      plan::plan_all_fast(m, masks);
      break;
    case SENTINEL_POLICY_FIRST_TOUCH:
      ok = plan::plan_first_touch(m, scratch, masks);
      break;
    case SENTINEL_POLICY_HOT:
      ok = plan::plan_hot(m, scratch, masks);
      break;
    case SENTINEL_POLICY_SENTINEL:
      ok = plan::plan_sentinel(m, scratch, masks, pool, &choice);
      break;
    case SENTINEL_POLICY_INTERLEAVE:  // build_model() refused it: no plan
      return false;
  }
  plan::Outcome o;
  if (!ok || !plan::evaluate(m, masks, pool, choice.pool_bytes, scratch, &o, nullptr)) return (*error = oom), false;

  for (uint32_t i = 0; i < m.count; ++i) {
    const plan::Item& it = m.items[i];
    sentinel_plan_entry& e = entries[i];
    e.identity = it.id;
    e.flags = 0;
    if (!it.cyclic && (masks[i] & plan::bit(it.start))) e.flags |= SENTINEL_PLAN_BIRTH_FAST;
    if (pool[i]) e.flags |= SENTINEL_PLAN_POOL;
    if (it.chunked) e.flags |= SENTINEL_PLAN_CHUNK;
    e.fast_mask = masks[i];
    e.touch_mask = it.touch;
    e.chunk = it.chunk;
    e.reserved = 0;
    alive[i] = it.alive;
    plan::move_edges(m, it, masks[i], &move_in[i], &move_out[i]);
  }
  sentinel_plan_header& h = out->header;
  h.phase = in.phase;
  h.policy = in.policy;
  h.intervals = m.n;
  h.lead_intervals = choice.lead;
  h.fast_budget_bytes = m.budget;
  h.footprint_peak_bytes = m.footprint_peak;
  h.fast_peak_bytes = o.fast_peak;
  h.fast_pool_bytes = choice.pool_bytes;
  h.moved_bytes_per_step = o.moved_bytes;
  h.predicted_hit_ppm =
      m.total_touched ? static_cast<uint32_t>(static_cast<unsigned __int128>(o.hit_bytes) * 1000000u / m.total_touched)
                      : 0;
  h.flags = (in.flags & ~SENTINEL_TIER_BUDGET_SHARE) | (in.budget.share_ppm ? SENTINEL_TIER_BUDGET_SHARE : 0u);
  h.migrate_bytes_per_s = m.bandwidth;
  h.slow_ns_per_kib = ns_per_kib_of(in.costs.slow_ns_per_byte);  // what replays the plan (the PLAN record)
  h.move_ns_per_kib = ns_per_kib_of(in.costs.move_ns_per_byte);
  out->entries = entries;
  out->entry_count = m.count;
  out->alive_masks = alive;
  out->move_in_masks = move_in;
  out->move_out_masks = move_out;
  out->moves_per_step = o.moves;
  out->late_moves = o.late;
  out->gap_intervals = choice.gap;
  out->grouped = choice.grouped ? 1 : 0;
  out->trials = choice.trials;
  out->first_fit = choice.first_fit ? 1 : 0;
  out->touched_bytes = m.total_touched / m.profiled_steps;
  out->fast_hit_bytes = o.hit_bytes / m.profiled_steps;
  out->weighted_bytes = m.total_weighted / m.profiled_steps;
  out->fast_hit_weighted = o.hit_weight / m.profiled_steps;
  out->intensity = m.intensity ? 1 : 0;
  out->modeled_step_ns = o.step.total;
  out->modeled_base_ns = o.step.base;
  out->modeled_slow_ns = o.step.slow;
  out->modeled_move_ns = o.step.move;
  out->objective = choice.by_step_time ? PlanObjective::kStepTime : PlanObjective::kFastHitBytes;
  return true;
}

namespace {

// A schedule priced again, the one formula of priced_step_ns and clocked_step_ns: a base, plus the plan's
// access-weighted bytes on the slow node and its moved bytes at the costs per byte. (A cost per KiB over 1024
// is exact, so this gives what pricing per KiB gave, to the last bit.)
double schedule_ns(double base_ns, const Plan& plan, double slow_ns_per_byte, double move_ns_per_byte) {
  return base_ns + static_cast<double>(slow_weighted_bytes(plan)) * slow_ns_per_byte +
         static_cast<double>(plan.header.moved_bytes_per_step) * move_ns_per_byte;
}

// The share of all-slow's slow accesses that interleave leaves slow at a fast share (at most all of them fast).
double interleaved_slow_share(uint32_t fast_share_ppm) {
  return 1.0 - std::min<uint32_t>(fast_share_ppm, 1000000) / 1e6;
}

}  // namespace

double priced_step_ns(const Plan& plan, uint32_t slow_ns_per_kib, uint32_t move_ns_per_kib) {
  return schedule_ns(static_cast<double>(plan.modeled_base_ns), plan, slow_ns_per_kib / 1024.0,
                     move_ns_per_kib / 1024.0);
}

double interleaved_step_ns(const Plan& all_slow, uint32_t fast_share_ppm) {
  return static_cast<double>(all_slow.modeled_base_ns) +
         static_cast<double>(all_slow.modeled_slow_ns) * interleaved_slow_share(fast_share_ppm);
}

bool calibrate_clock(const Plan& all_slow, const StepCosts& planned, double all_fast_ns, double all_slow_ns,
                     ClockModel* out) {
  const uint64_t slow = slow_weighted_bytes(all_slow);
  if (!(all_slow_ns > all_fast_ns) || !(all_fast_ns >= 0) || !slow) return false;
  out->base_ns = all_fast_ns;
  out->slow_ns_per_byte = (all_slow_ns - all_fast_ns) / static_cast<double>(slow);
  const bool ratio = planned.slow_ns_per_byte > 0 && planned.move_ns_per_byte > 0;
  out->move_ns_per_byte = ratio ? out->slow_ns_per_byte * planned.move_ns_per_byte / planned.slow_ns_per_byte : 0;
  return true;
}

double clocked_step_ns(const Plan& plan, const ClockModel& clock) {
  return schedule_ns(clock.base_ns, plan, clock.slow_ns_per_byte, clock.move_ns_per_byte);
}

double clocked_interleaved_ns(const Plan& all_slow, const ClockModel& clock, uint32_t fast_share_ppm) {
  return clock.base_ns + static_cast<double>(slow_weighted_bytes(all_slow)) * clock.slow_ns_per_byte *
                             interleaved_slow_share(fast_share_ppm);
}

StepSpread step_spread(const uint64_t* steps, uint32_t n) {
  const uint32_t m = std::min<uint32_t>(n, kMaxSpreadSteps);
  StepSpread out;
  if (m == 0) return out;
  uint64_t sorted[kMaxSpreadSteps];
  for (uint32_t i = 0; i < m; ++i) {  // insertion sort: the median of a handful
    uint32_t j = i;
    for (; j > 0 && sorted[j - 1] > steps[i]; --j) sorted[j] = sorted[j - 1];
    sorted[j] = steps[i];
  }
  out.median = sorted[m / 2];
  if (m < 2 || !out.median) return out;
  const double ppm = static_cast<double>(sorted[m - 1] - sorted[0]) / static_cast<double>(out.median) * 1e6;
  out.spread_ppm = ppm >= 4e9 ? 4000000000u : static_cast<uint32_t>(ppm + 0.5);
  return out;
}

SlowCostFit fit_slow_cost(const Plan& plan, uint64_t measured_step_ns, uint32_t move_ns_per_kib) {
  SlowCostFit f;
  if (!plan.modeled_base_ns) {
    f.status = SENTINEL_FIT_NO_BASE;
    return f;
  }
  const uint64_t moved = plan.header.moved_bytes_per_step;
  if (moved && !move_ns_per_kib) {
    f.status = SENTINEL_FIT_UNKNOWN_MOVES;
    return f;
  }
  const uint64_t slow = slow_weighted_bytes(plan);
  if (slow < kMinFitSlowBytes || slow < plan.weighted_bytes / kMinFitShare) {
    f.status = SENTINEL_FIT_LITTLE_SLOW;
    return f;
  }
  // What the step took beyond the plan priced with no slow cost: the base and the moves.
  const double extra = static_cast<double>(measured_step_ns) - priced_step_ns(plan, 0, move_ns_per_kib);
  if (!(extra > 0)) {
    f.status = SENTINEL_FIT_AT_BASE;
    return f;
  }
  const uint32_t kib = ns_per_kib_of(extra / static_cast<double>(slow));
  f.status = SENTINEL_FIT_DONE;
  f.slow_ns_per_kib = kib ? kib : 1;
  return f;
}

MoveCostFit fit_move_cost(const Plan& moving, uint64_t moving_step_ns, const Plan& fixed, uint64_t fixed_step_ns,
                          uint32_t slow_ns_per_kib) {
  MoveCostFit f;
  if (!moving_step_ns || !fixed_step_ns) return f;
  const uint64_t moved = moving.header.moved_bytes_per_step;
  if (moved < kMinFitMovedBytes) {
    f.status = SENTINEL_MOVE_FIT_LITTLE_MOVED;
    return f;
  }
  if (!slow_ns_per_kib) {
    f.status = SENTINEL_MOVE_FIT_NO_SLOW_COST;
    return f;
  }
  // Priced without moves, the two differ only in their slow accesses (same input, same base).
  const double modeled = priced_step_ns(moving, slow_ns_per_kib, 0) - priced_step_ns(fixed, slow_ns_per_kib, 0);
  const double extra = static_cast<double>(moving_step_ns) - static_cast<double>(fixed_step_ns) - modeled;
  const uint32_t kib = ns_per_kib_of(extra / static_cast<double>(moved));
  f.status = kib ? SENTINEL_MOVE_FIT_DONE : SENTINEL_MOVE_FIT_FREE;
  f.move_ns_per_kib = kib;
  return f;
}

}  // namespace sentinel
