// The step-time trial (docs/tiering.md, "The step-time trial"): the sentinel policy's moving schedule,
// the same phase planned without moves, and the phase re-planned with the migrator's measured bandwidth,
// each timed on real steps; the fastest stays. Tiering's members, on the sequencer's side.
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "base/thread.h"
#include "tier/step_costs.h"
#include "tier/tiering.h"

namespace sentinel {

bool Tiering::prepare_trial(PlanSlot& s, const PhaseProfileView& p, const PlanInput& moving) {
  s.trial = Trial{};
  s.has_replan_interval_ns = false;
  // Only the sentinel policy has two schedules to choose from, only a moving one needs timing, and
  // only real moves can be timed.
  const sentinel_plan_header& h = s.moving().plan.header;
  if (dry_run_ || !cfg_.trial_steps || h.policy != SENTINEL_POLICY_SENTINEL || !h.moved_bytes_per_step) return false;
  PlanInput in = moving;
  in.flags |= SENTINEL_TIER_NO_MOVES;
  const char* error = nullptr;
  if (!make_candidate(s, p, in, s.candidates[kFixed], &error)) {
    LineBuf b;
    b.str("phase ").u64(p.phase).str(": no step-time trial (").str(error ? error : "out of memory");
    b.str("); the moving schedule is kept");
    log_line(LogLevel::warn, b);
    return false;
  }
  s.trial.state = SENTINEL_TRIAL_RUNNING;
  s.trial.emulated = emu_clock_.is_open();
  return true;
}

void Tiering::open_trial_clock() {
  const char* why = nullptr;
  LineBuf b;
  b.str("SENTINEL_TRIAL_CLOCK: ").str(cfg_.trial_clock.counts_path).str(": ");
  if (emu_clock_.open(cfg_.trial_clock, getpid(), &why)) {
    b.str("the step-time trial is timed in emulated time");
    log_line(LogLevel::info, b);
  } else {
    b.str(why).str("; the step-time trial is timed in wall time");
    log_line(LogLevel::warn, b);
  }
}

bool Tiering::trial_clock(PlanSlot& s, uint64_t* now) {
  Trial& t = s.trial;
  if (!t.emulated) return true;
  uint64_t lap = 0;
  const char* why = nullptr;
  if (emu_clock_.lap(&lap, &why)) {
    emu_now_ns_ += lap;
    *now = emu_now_ns_;
    return true;
  }
  // Times of two clocks cannot be compared: every candidate is timed again, in wall time.
  emu_clock_.close();
  LineBuf b;
  b.str("SENTINEL_TRIAL_CLOCK: ").str(cfg_.trial_clock.counts_path).str(": ").str(why);
  b.str("; phase ").u64(s.phase).str("'s step-time trial starts again, timed in wall time");
  log_line(LogLevel::warn, b);
  t = Trial{};
  t.state = SENTINEL_TRIAL_RUNNING;  // trial_step only reads the clock while it runs
  use_candidate(static_cast<uint32_t>(&s - slots_), kFixed);
  return false;
}

bool Tiering::make_candidate(PlanSlot& s, const PhaseProfileView& p, const PlanInput& in, Candidate& c,
                             const char** error) {
  if (!c.scratch.init(plan_scratch_bytes(in)) || !make_plan(in, c.scratch, &c.plan, error) ||
      !(c.tokens = build_tokens(s, p, c.plan)))
    return false;
  c.exec = s.moving().exec;
  c.exec.entries = c.plan.entries;
  return true;
}

void Tiering::use_candidate(uint32_t slot, uint32_t c) {
  PlanSlot& s = slots_[slot];
  const Candidate& v = s.candidates[c];
  s.live_tokens.store(v.tokens, std::memory_order_release);
  s.active.store(c, std::memory_order_release);
  s.catch_up.restart();
  ++s.switches;
  migrator_.switch_plan(slot, &v.exec);
}

// A step of the phase starts: time the one that ended (when it ran whole in this phase), and move the
// trial on. A candidate's steps are timed from the first one that starts with the migrator caught up
// with it (a whole boundary pass done: every object where it wants it; its first step, which makes
// that pass and the other's leftovers, never is), or after kCatchUpSteps steps without; cfg.trial_steps
// of them each: the schedule without moves, the moving one, then the re-planned one if the moving
// one's bandwidth called for it.
void Tiering::trial_step(PlanSlot& s, uint64_t now, bool behind) {
  Trial& t = s.trial;
  if (t.state != SENTINEL_TRIAL_RUNNING) return;
  const uint32_t slot = static_cast<uint32_t>(&s - slots_);
  if (!trial_clock(s, &now)) return;  // begun again: this step is its first, not timed
  // The emulated clock is read as the step start is sequenced: late, neither the step that ends nor the
  // one that begins has its time.
  const bool exact = !(t.emulated && behind);
  const uint32_t cand = t.timing;
  if (t.step_start && now > t.step_start && exact) {
    if (++t.complete > kCatchUpSteps || t.start_caught_up) {
      if (t.timed[cand] < kMaxSpreadSteps) t.steps[cand][t.timed[cand]] = now - t.step_start;
      t.sum[cand] += now - t.step_start;
      ++t.timed[cand];
    }
  }
  t.step_start = exact ? now : 0;
  t.start_caught_up = migrator_.caught_up(slot);  // false again below when this step switches
  if (t.timed[cand] < cfg_.trial_steps) return;
  if (cand == kFixed) {  // the no-move schedule is timed: now the moving one
    t.timing = kMoving;
    t.complete = 0;
    t.start_caught_up = false;
    t.moved_at_start = migrator_.migrated_bytes();
    t.move_ns_at_start = migrator_.move_ns();
    use_candidate(slot, kMoving);
    return;
  }
  if (cand == kMoving && replan_with_measured_bandwidth(s)) {
    t.timing = kReplanned;
    t.complete = 0;
    t.start_caught_up = false;
    use_candidate(slot, kReplanned);
    return;
  }
  t.state = SENTINEL_TRIAL_DONE;
  fit_moves(s);
  uint32_t best = kMoving;  // ties: the moving schedule, then the re-planned one, then without moves
  for (uint32_t c : {kReplanned, kFixed})
    if (t.timed[c] && t.sum[c] / t.timed[c] < t.sum[best] / t.timed[best]) best = c;
  // The check waits for the migrator to catch up with the kept schedule (trial_settled): at once where it
  // is the one timed last, after its boundary pass where it takes over now.
  if (best != cand) use_candidate(slot, best);
  LineBuf b;
  auto ms_per_step = [&](uint32_t c) {  // one decimal
    const uint64_t ns = mean_step_ns(t, c);
    b.u64(ns / 1000000).chr('.').u64(ns / 100000 % 10).str(" ms/step");
  };
  b.str("phase ").u64(s.phase).str(" step-time trial").str(t.emulated ? " (emulated time)" : "");
  b.str(": moving schedule ");
  ms_per_step(kMoving);
  b.str(", without moves ");
  ms_per_step(kFixed);
  if (t.timed[kReplanned]) {
    b.str(", re-planned ");
    ms_per_step(kReplanned);
  }
  b.str(": kept ").str(best == kFixed       ? "the schedule without moves"
                       : best == kReplanned ? "the re-planned schedule"
                                            : "the moving schedule");
  log_line(LogLevel::info, b);
}

void Tiering::fit_moves(PlanSlot& s) {
  Trial& t = s.trial;
  const Plan& moving = s.candidates[kMoving].plan;
  const uint64_t moving_ns = mean_step_ns(t, kMoving), fixed_ns = mean_step_ns(t, kFixed);
  MoveCostFit f;
  if (t.emulated)  // emulated ns against a model in wall time: not one clock
    f.status = SENTINEL_MOVE_FIT_EMULATED;
  else
    f = fit_move_cost(moving, moving_ns, s.candidates[kFixed].plan, fixed_ns, moving.header.slow_ns_per_kib);
  t.move_fit = f.status;
  t.fit_move_ns_per_kib = f.move_ns_per_kib;
  if (f.status != SENTINEL_MOVE_FIT_DONE && f.status != SENTINEL_MOVE_FIT_FREE) return;
  // As for the slow-cost fit, later plans take it only from steps that lie within kMaxFitSpreadPpm.
  auto spread = [&](uint32_t c) {
    return step_spread(t.steps[c], t.timed[c] < kMaxSpreadSteps ? t.timed[c] : kMaxSpreadSteps).spread_ppm;
  };
  const uint32_t spread_ppm = std::max(spread(kMoving), spread(kFixed));
  const bool would_adopt = cfg_.step_costs.kind == StepCostsKind::automatic && !fitted_move_ns_per_kib_;
  const bool adopted = would_adopt && spread_ppm <= kMaxFitSpreadPpm;
  if (adopted) fitted_move_ns_per_kib_ = move_cost_of_fit(f.status, f.move_ns_per_kib);
  LineBuf b;
  b.str("phase ").u64(s.phase).str(": a moved KiB cost the training thread ");
  if (f.status == SENTINEL_MOVE_FIT_DONE)
    b.u64(f.move_ns_per_kib).str(" ns");
  else
    b.str("nothing measurable");
  b.str(" (the moving schedule ").u64(moving_ns / 100000 / 10).chr('.').u64(moving_ns / 100000 % 10);
  b.str(" ms/step against ").u64(fixed_ns / 100000 / 10).chr('.').u64(fixed_ns / 100000 % 10);
  b.str(" without moves, ").bytes(moving.header.moved_bytes_per_step).str(" moved a step; it was planned at ");
  b.u64(moving.header.move_ns_per_kib).str("; steps ").u64(spread_ppm / 10000).str("% apart)");
  if (adopted) b.str("; later plans use it");
  if (would_adopt && !adopted)
    b.str("; its steps lay over ").u64(kMaxFitSpreadPpm / 10000).str("% apart: later plans do not use it");
  log_line(LogLevel::info, b);
}

void Tiering::on_interval_timed(uint16_t phase, uint32_t interval, uint64_t ticks) {
  if (!enabled_) return;
  int32_t slot = slot_of_phase(phase);
  if (slot < 0 || interval >= 64) return;
  Watch& w = slots_[slot].watch;
  if (w.steps) w.intervals.add(interval, ticks);  // a window is open: its steps' intervals
  Trial& t = slots_[slot].trial;
  // The steps the trial times (trial_step's rule), of the moving schedule: the re-plan's clock.
  if (t.state != SENTINEL_TRIAL_RUNNING || t.timing != kMoving || !t.step_start ||
      !(t.start_caught_up || t.complete >= kCatchUpSteps))
    return;
  t.moving_intervals.add(interval, ticks);
}

// The re-plan's interval durations: the measured steps' (their mean per interval), where every interval
// was measured; false where not (then the plan's stay).
bool Tiering::measured_intervals(const PlanSlot& s, const IntervalTimes& times, uint64_t* ns) const {
  const uint32_t n = s.input.intervals;
  if (!s.has_interval_ns || !clock_ || !n || n > 64) return false;
  for (uint32_t i = 0; i < n; ++i)
    if (!times.count[i]) return false;
  for (uint32_t i = 0; i < n; ++i) ns[i] = clock_->ticks_to_duration_ns_now(times.ticks[i] / times.count[i]);
  return true;
}

bool Tiering::replan_with_measured_bandwidth(PlanSlot& s) {
  Trial& t = s.trial;
  const uint64_t bytes = migrator_.migrated_bytes() - t.moved_at_start;
  const uint64_t ns = migrator_.move_ns() - t.move_ns_at_start;
  if (bytes < kMinMeasuredBytes || !ns) return false;
  t.achieved_bytes_per_s = bytes_per_s(bytes, ns);
  const Plan& moving = s.moving().plan;
  if (bandwidth_within(t.achieved_bytes_per_s, moving.header.migrate_bytes_per_s)) {
    t.replan = SENTINEL_REPLAN_WITHIN;
    return false;
  }
  // The steps before the plan ran under another placement (slower where the plan pays; faster where the
  // moves make the training thread wait on pages under migration): the moves' time budget is the moving
  // schedule's intervals, as its timed steps measured them.
  s.has_replan_interval_ns = measured_intervals(s, t.moving_intervals, s.replan_interval_ns);
  const uint32_t made =
      replan(s, moving, kReplanned, t.achieved_bytes_per_s, s.has_replan_interval_ns ? s.replan_interval_ns : nullptr);
  t.replan = made == kReplanMade   ? SENTINEL_REPLAN_DONE
             : made == kReplanSame ? SENTINEL_REPLAN_SAME
                                   : SENTINEL_REPLAN_FAILED;
  return made == kReplanMade;
}

uint32_t Tiering::replan(PlanSlot& s, const Plan& base, uint32_t into, uint64_t measured_bytes_per_s,
                         const uint64_t* measured_interval_ns) {
  PlanInput in = s.input;
  in.migrate_bytes_per_s = measured_bytes_per_s;
  uint64_t planned_ns = 0, measured_ns = 0;
  if (measured_interval_ns) {
    for (uint32_t i = 0; i < in.intervals; ++i) planned_ns += s.interval_ns[i], measured_ns += measured_interval_ns[i];
    in.interval_ns = measured_interval_ns;
  }
  in.costs = step_costs();  // measured by now where SENTINEL_STEP_COSTS=auto
  // auto's move cost comes from the probe's time per byte moved (step_costs.h): the measured one replaces it.
  uint32_t slow = 0, move = 0;
  const uint32_t achieved = move_ns_per_kib_of(measured_bytes_per_s);
  if (cfg_.step_costs.kind == StepCostsKind::automatic && auto_costs(&slow, &move)) {
    // A move cost an earlier trial fitted stays; else the price follows the measured bandwidth.
    if (!fitted_move_ns_per_kib_) move = training_move_ns_per_kib(achieved, slow, start_cpu_count());
    in.costs = step_costs_of_kib(slow, move);
  }
  in.flags =
      (in.flags & ~(SENTINEL_TIER_MOVES_OFF_THREAD | SENTINEL_TIER_BUDGET_TIMED)) | cost_flags(in.costs, achieved);
  // Durations measured under the moving schedule include what its moves cost the training thread: the
  // lateness model can hold births and promotions to the budget on that time base (docs/planner.md).
  if (measured_interval_ns) in.flags |= SENTINEL_TIER_BUDGET_TIMED;
  PhaseProfileView p;
  p.phase = s.phase;
  p.identities = s.identities;
  p.identity_count = in.identity_count;
  const char* error = nullptr;
  LineBuf b;
  b.str("phase ").u64(s.phase).str(": the migrator moved ").bytes(measured_bytes_per_s).str("/s, the plan assumed ");
  b.bytes(base.header.migrate_bytes_per_s).str("/s");
  if (measured_ns) {
    b.str(", and its steps' intervals took ").u64(measured_ns / 1000000).str(" ms against ");
    b.u64(planned_ns / 1000000).str(" ms");
  }
  b.str(": ");
  if (!make_candidate(s, p, in, s.candidates[into], &error)) {
    b.str("no re-plan (").str(error ? error : "out of memory").chr(')');
    log_line(LogLevel::warn, b);
    return kReplanFailed;
  }
  const Plan& r = s.candidates[into].plan;
  const bool same = r.entry_count == base.entry_count &&
                    std::memcmp(r.entries, base.entries, r.entry_count * sizeof(sentinel_plan_entry)) == 0;
  b.str(same                 ? "re-planned, to the same schedule"
        : into == kReplanned ? "re-planned; timing it"
                             : "re-planned; the new schedule takes over");
  log_line(LogLevel::info, b);
  return same ? kReplanSame : kReplanMade;
}

uint64_t Tiering::mean_step_ns(const Trial& t, uint32_t c) const {
  if (!t.timed[c]) return 0;
  const uint64_t ticks = t.sum[c] / t.timed[c];
  if (t.emulated) return ticks;  // ns already
  return clock_ ? clock_->ticks_to_duration_ns_now(ticks) : ticks;
}

bool Tiering::trial_wants_sync(uint16_t phase) const {
  int32_t slot = slot_of_phase(phase);
  return slot >= 0 && slots_[slot].trial.state == SENTINEL_TRIAL_RUNNING && slots_[slot].trial.emulated;
}

bool Tiering::trial_settled(uint16_t phase) const {
  int32_t slot = slot_of_phase(phase);
  if (slot < 0) return true;
  const Trial& t = slots_[slot].trial;
  if (t.state == SENTINEL_TRIAL_RUNNING || watch_pending(slots_[slot])) return false;
  return dry_run_ || migrator_settled(slots_[slot], static_cast<uint32_t>(slot));
}

sentinel_plan_trial Tiering::plan_trial(uint32_t slot) const {
  const PlanSlot& s = slots_[slot];
  const Trial& t = s.trial;
  sentinel_plan_trial r{};
  r.state = t.state;
  r.steps_per_candidate = static_cast<uint32_t>(cfg_.trial_steps);
  r.fit = s.fit.status;
  r.fit_slow_ns_per_kib = s.fit.slow_ns_per_kib;
  r.fit_steps = s.fit.timed;
  r.fit_step_ns = s.fit.step_ns;
  r.move_fit = t.move_fit;
  r.fit_move_ns_per_kib = t.fit_move_ns_per_kib;
  const uint32_t active = s.active.load(std::memory_order_acquire);
  r.kept = active == kFollowed ? kWatched : active;  // the watch's two buffers are one schedule to the dump
  const Watch& w = s.watch;
  r.watch = w.state;
  r.watch_windows = w.windows;
  r.watch_bytes_per_s = w.bytes_per_s;
  r.watch_step = w.replan_step;
  r.watch_follows = w.drift.follows();
  if (w.replan_step && (active == kWatched || active == kFollowed)) {
    r.watch_moved_bytes = s.candidates[active].plan.header.moved_bytes_per_step;
    r.watch_hit_ppm = s.candidates[active].plan.header.predicted_hit_ppm;
  }
  if (t.state == SENTINEL_TRIAL_NONE) return r;
  r.moving_step_ns = mean_step_ns(t, kMoving);
  r.fixed_step_ns = mean_step_ns(t, kFixed);
  r.moving_moved_bytes = s.moving().plan.header.moved_bytes_per_step;
  r.moving_hit_ppm = s.moving().plan.header.predicted_hit_ppm;
  r.fixed_hit_ppm = s.candidates[kFixed].plan.header.predicted_hit_ppm;
  r.moving_steps = t.timed[kMoving];
  r.fixed_steps = t.timed[kFixed];
  r.achieved_bytes_per_s = t.achieved_bytes_per_s;
  r.replan = t.replan;
  r.clock = t.emulated ? SENTINEL_TRIAL_CLOCK_EMULATED : SENTINEL_TRIAL_CLOCK_WALL;
  if (t.replan == SENTINEL_REPLAN_DONE) {
    r.replanned_step_ns = mean_step_ns(t, kReplanned);
    r.replanned_steps = t.timed[kReplanned];
    r.replanned_moved_bytes = s.candidates[kReplanned].plan.header.moved_bytes_per_step;
    r.replanned_hit_ppm = s.candidates[kReplanned].plan.header.predicted_hit_ppm;
  }
  return r;
}

}  // namespace sentinel
