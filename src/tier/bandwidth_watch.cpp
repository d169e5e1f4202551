// The bandwidth watch (docs/tiering.md, "The bandwidth watch"): outside the step-time trial, the
// migrator's bandwidth under the schedule in effect, measured over windows of steps; a phase planned at
// a bandwidth the migrator does not reach is re-planned with the one it does. Tiering's members, on the
// sequencer's side.
#include "tier/tiering.h"

namespace sentinel {

bool Tiering::watch_pending(const PlanSlot& s) const {
  const Watch& w = s.watch;
  // Only where no trial measured the bandwidth: a trial's re-plan already used it.
  if (dry_run_ || s.trial.state != SENTINEL_TRIAL_NONE || w.state != SENTINEL_WATCH_NONE || w.windows) return false;
  if (!watchable(s.in_effect().plan)) return false;
  // A window that moved less than planned decides nothing: the check waits for two at most.
  return w.steps_seen < 2 * kWatchSteps + 1;
}

void Tiering::watch_step(PlanSlot& s, uint64_t step) {
  Watch& w = s.watch;
  ++w.steps_seen;
  if (dry_run_ || s.trial.state == SENTINEL_TRIAL_RUNNING || w.replan_step || w.state == SENTINEL_WATCH_FAILED ||
      w.state == SENTINEL_WATCH_SAME) {
    w.steps = 0;
    return;
  }
  const Plan& in_effect = s.in_effect().plan;
  if (!watchable(in_effect)) {
    w.steps = 0;
    return;
  }
  if (!w.steps) {  // a window opens: the schedule's take-over moves measure the bandwidth as well as later ones
    w.steps = 1;
    w.moved_at_start = migrator_.migrated_bytes();
    w.move_ns_at_start = migrator_.move_ns();
    w.intervals = IntervalTimes{};
    return;
  }
  if (++w.steps <= kWatchSteps) return;
  w.steps = 0;  // kWatchSteps whole steps ended: measure them
  const uint64_t bytes = migrator_.migrated_bytes() - w.moved_at_start;
  const uint64_t ns = migrator_.move_ns() - w.move_ns_at_start;
  if (bytes < kMinMeasuredBytes || !ns) return;
  ++w.windows;
  w.bytes_per_s = bytes_per_s(bytes, ns);
  const bool within = bandwidth_within(w.bytes_per_s, in_effect.header.migrate_bytes_per_s);
  // The first window decides where no trial measured the bandwidth. Later windows are recorded, not
  // followed: under TCG the bandwidth swings 1.5x between windows of one run, and a re-plan for two such
  // windows in a row came at step 15 of 24 (the KMEM-DAX guest's schedule-sentinel, 2026-12-07).
  const bool measured_before = s.trial.state == SENTINEL_TRIAL_DONE && s.trial.replan != SENTINEL_REPLAN_NONE;
  if (within || measured_before || w.windows > 1) {
    w.state = within ? SENTINEL_WATCH_WITHIN : SENTINEL_WATCH_DRIFT;
    return;
  }
  w.has_interval_ns = measured_intervals(s, w.intervals, w.interval_ns);
  const uint32_t made = replan(s, in_effect, kWatched, w.bytes_per_s, w.has_interval_ns ? w.interval_ns : nullptr);
  w.state = made == kReplanMade   ? SENTINEL_WATCH_REPLANNED
            : made == kReplanSame ? SENTINEL_WATCH_SAME
                                  : SENTINEL_WATCH_FAILED;
  if (made != kReplanMade) return;
  w.replan_step = step ? step : 1;  // 0 is "none"
  use_candidate(static_cast<uint32_t>(&s - slots_), kWatched);
}

}  // namespace sentinel
