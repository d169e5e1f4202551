// The bandwidth watch (docs/tiering.md, "The bandwidth watch"): outside the step-time trial, the
// migrator's bandwidth under the schedule in effect, measured over windows of steps; a phase planned at
// a bandwidth the migrator does not reach is re-planned with the one it does, and again where the
// bandwidth drifts for good (DriftFollow). Tiering's members, on the sequencer's side.
#include "base/log.h"
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
  const uint32_t slot = static_cast<uint32_t>(&s - slots_);
  ++w.steps_seen;
  const Plan& in_effect = s.in_effect().plan;
  if (dry_run_ || s.trial.state == SENTINEL_TRIAL_RUNNING || w.state == SENTINEL_WATCH_FAILED ||
      !watchable(in_effect)) {
    w.steps = 0;
    return;
  }
  if (!w.steps) {  // a window opens: the schedule's take-over moves measure the bandwidth as well as later ones
    w.steps = 1;
    w.moved_at_start = migrator_.migrated_bytes();
    w.move_ns_at_start = migrator_.move_ns();
    w.opened_settled = migrator_settled(s, slot);
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
  if (w.windows == 1) {
    watch_decide(s, step, in_effect);
    return;
  }
  follow_drift(s, step, in_effect);
}

// The first window measured. Where no trial measured the bandwidth, it decides: 1.5x off the planned one,
// the phase is re-planned with it. Either way it sets where later windows are judged from.
void Tiering::watch_decide(PlanSlot& s, uint64_t step, const Plan& in_effect) {
  Watch& w = s.watch;
  const Trial& t = s.trial;
  if (t.state == SENTINEL_TRIAL_DONE && t.replan != SENTINEL_REPLAN_NONE) {
    // The trial measured the migrator, and kept its schedule knowing that bandwidth: a drift is judged
    // from what it measured.
    w.drift.set_reference(t.achieved_bytes_per_s);
    w.state = bandwidth_within(w.bytes_per_s, t.achieved_bytes_per_s) ? SENTINEL_WATCH_WITHIN : SENTINEL_WATCH_DRIFT;
    return;
  }
  if (bandwidth_within(w.bytes_per_s, in_effect.header.migrate_bytes_per_s)) {
    w.drift.set_reference(in_effect.header.migrate_bytes_per_s);
    w.state = SENTINEL_WATCH_WITHIN;
    return;
  }
  const uint32_t made = watch_replan(s, step, in_effect, w.bytes_per_s);
  w.state = made == kReplanMade   ? SENTINEL_WATCH_REPLANNED
            : made == kReplanSame ? SENTINEL_WATCH_SAME
                                  : SENTINEL_WATCH_FAILED;
  w.drift.set_reference(made == kReplanFailed ? 0 : w.bytes_per_s);
}

// A later window: recorded, and followed where the bandwidth has drifted for good (DriftFollow). Under TCG
// the bandwidth swings 1.5x between windows of one run: a version that re-planned after two such windows
// in a row did so at step 15 of 24 in the KMEM-DAX guest's schedule-sentinel (2026-12-07).
void Tiering::follow_drift(PlanSlot& s, uint64_t step, const Plan& in_effect) {
  Watch& w = s.watch;
  const bool within = bandwidth_within(w.bytes_per_s, w.drift.reference());
  if (w.state == SENTINEL_WATCH_WITHIN || w.state == SENTINEL_WATCH_DRIFT)
    w.state = within ? SENTINEL_WATCH_WITHIN : SENTINEL_WATCH_DRIFT;
  const uint64_t follow = w.drift.on_window(w.bytes_per_s, w.opened_settled);
  // The candidate the re-plan overwrites was in effect before: the migrator must have left it (a whole
  // boundary pass on the schedule in effect).
  if (!follow || !migrator_.caught_up(static_cast<uint32_t>(&s - slots_))) return;
  LineBuf b;
  b.str("phase ").u64(s.phase).str(": the migrator's bandwidth stayed ");
  b.str(follow < w.drift.reference() ? "below " : "above ").bytes(w.drift.reference()).str("/s for ");
  b.u64(DriftFollow::kWindows).str(" windows of steps (their median ").bytes(follow).str("/s): following it");
  log_line(LogLevel::info, b);
  const uint32_t made = watch_replan(s, step, in_effect, follow);
  w.drift.followed(follow);
  if (made == kReplanMade) w.state = SENTINEL_WATCH_FOLLOWED;
}

// Re-plans the phase with `bytes_per_s` into the watch's candidate that is not in effect, which takes over
// at once, untimed: the same model at the bandwidth the migrator reaches.
uint32_t Tiering::watch_replan(PlanSlot& s, uint64_t step, const Plan& in_effect, uint64_t bytes_per_s) {
  Watch& w = s.watch;
  const uint32_t slot = static_cast<uint32_t>(&s - slots_);
  const uint32_t into = s.active.load(std::memory_order_acquire) == kWatched ? kFollowed : kWatched;
  const uint32_t clock = into == kFollowed;
  w.has_interval_ns[clock] = measured_intervals(s, w.intervals, w.interval_ns[clock]);
  const uint32_t made =
      replan(s, in_effect, into, bytes_per_s, w.has_interval_ns[clock] ? w.interval_ns[clock] : nullptr);
  if (made != kReplanMade) return made;
  w.replan_step = step ? step : 1;  // 0 is "none"
  use_candidate(slot, into);
  return made;
}

}  // namespace sentinel
