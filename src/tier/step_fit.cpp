// The slow cost fitted to the schedule in effect (docs/tiering.md, "The fitted slow cost"): steady steps
// timed in wall time, then planner.h's fit_slow_cost. Tiering's members, on the sequencer's side.
#include "base/log.h"
#include "tier/step_costs.h"
#include "tier/tiering.h"

namespace sentinel {

void Tiering::fit_step(PlanSlot& s, uint64_t now, bool steady) {
  Fit& f = s.fit;
  if (f.status != SENTINEL_FIT_NONE || dry_run_ || !clock_ || f.timed >= kFitSteps) return;
  if (f.step_start && now > f.step_start) f.ticks[f.timed++] = now - f.step_start;
  f.step_start = 0;
  if (f.timed == kFitSteps) {
    finish_fit(s);
    return;
  }
  // The step beginning now runs the schedule that stays, in its steady state (trial_settled's rule): timed.
  const uint32_t slot = static_cast<uint32_t>(&s - slots_);
  if (steady && s.trial.state != SENTINEL_TRIAL_RUNNING && migrator_settled(s, slot)) f.step_start = now;
}

void Tiering::finish_fit(PlanSlot& s) {
  Fit& f = s.fit;
  static_assert(kFitSteps <= kMaxSpreadSteps, "every timed step counts");
  const StepSpread steps = step_spread(f.ticks, kFitSteps);
  f.step_ns = clock_->ticks_to_duration_ns_now(steps.median);
  const uint32_t spread_ppm = steps.spread_ppm;
  const Plan& plan = s.in_effect().plan;
  // What a moved KiB costs: fitted to the trial's two schedules (free ones at 1 ns), else the plan's, else
  // the migrator's bandwidth (measured in the trial, else the probe's).
  uint32_t move = move_cost_of_fit(s.trial.move_fit, s.trial.fit_move_ns_per_kib);
  if (!move) move = plan.header.move_ns_per_kib;
  if (!move)
    move = move_ns_per_kib_of(s.trial.achieved_bytes_per_s ? s.trial.achieved_bytes_per_s : migrator_.bandwidth());
  const SlowCostFit r = fit_slow_cost(plan, f.step_ns, move);
  f.status = r.status;
  f.slow_ns_per_kib = r.slow_ns_per_kib;
  const bool would_adopt =
      r.status == SENTINEL_FIT_DONE && cfg_.step_costs.kind == StepCostsKind::automatic && !fitted_slow_ns_per_kib_;
  const bool adopted = would_adopt && spread_ppm <= kMaxFitSpreadPpm;
  if (adopted) fitted_slow_ns_per_kib_ = r.slow_ns_per_kib;

  LineBuf b;
  b.str("phase ").u64(s.phase).str(": its schedule took ").u64(f.step_ns / 1000000).chr('.');
  b.u64(f.step_ns / 100000 % 10).str(" ms a step (median of ").u64(kFitSteps).str(" steady steps, ");
  b.u64(spread_ppm / 10000).str("% apart) against a modeled ");
  b.u64(plan.modeled_base_ns / 1000000).chr('.').u64(plan.modeled_base_ns / 100000 % 10).str(" ms base");
  const uint64_t slow = slow_weighted_bytes(plan);
  switch (r.status) {
    case SENTINEL_FIT_DONE:
      b.str(": the slow node costs ").u64(r.slow_ns_per_kib).str(" ns per access-weighted KiB (");
      b.bytes(slow).str(" a step there");
      if (plan.header.slow_ns_per_kib) b.str("; the plan was given ").u64(plan.header.slow_ns_per_kib);
      b.chr(')');
      if (adopted) b.str("; later plans use it");
      if (would_adopt && !adopted)
        b.str("; its steps lay over ").u64(kMaxFitSpreadPpm / 10000).str("% apart: later plans do not use it");
      break;
    case SENTINEL_FIT_LITTLE_SLOW:
      b.str(": no slow cost fitted, too little on the slow node (").bytes(slow).str(" of ");
      b.bytes(plan.weighted_bytes).str(" access-weighted a step)");
      break;
    case SENTINEL_FIT_UNKNOWN_MOVES:
      b.str(": no slow cost fitted, its moves' cost is unknown");
      break;
    case SENTINEL_FIT_AT_BASE:
      b.str(" and moves: no slow cost fitted, the slow node added nothing measurable");
      break;
    default:
      b.str(": no slow cost fitted, no modeled base");
      break;
  }
  log_line(LogLevel::info, b);
}

}  // namespace sentinel
