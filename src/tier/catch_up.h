// How long the placement check and the fitted slow cost wait for the migrator to take up a schedule
// (Tiering::trial_settled). One per plan slot; the sequencer's side only.
#pragma once

#include <cstdint>

namespace sentinel {

struct CatchUp {
  // Steps a settled answer waits for at most: kSteps steady ones, kMaxSteps in all.
  static constexpr uint32_t kSteps = 4;
  static constexpr uint32_t kMaxSteps = 12;

  uint32_t steady = 0;       // steps begun behind, each after a step without a backlog
  uint32_t behind = 0;       // every step begun behind since the schedule was set
  uint64_t moved_at = 0;     // the migrator's bytes moved when the latest step began
  bool moved_known = false;  // moved_at was read at a step start

  // A new schedule takes over: it starts catching up from nothing.
  void restart() { steady = behind = 0; }

  // A step begins; `moved` is the migrator's bytes moved so far, `own` what the schedule moves a step,
  // `over_budget` whether the fast tier holds more than the budget as it begins. A step that ended with
  // more moved than the schedule's own moves (half again, plus a MiB) was one of working off its
  // take-over: at the 12 MiB/s of a loaded TCG guest, hundreds of MiB take more than kSteps steps, and a
  // check made meanwhile measured what was still moving. So is a step begun over the budget: the objects
  // live before the plan still on the fast node, whose demotion a migrator slowed to 3 MB/s works off at
  // under a MiB a step, while births the plan has fast find no room (docs/testing.md, 2026-12-08).
  void on_step(bool caught_up, uint64_t moved, uint64_t own, bool over_budget = false) {
    const bool backlog = !moved_known || over_budget || moved - moved_at > own + own / 2 + (uint64_t{1} << 20);
    moved_at = moved;
    moved_known = true;
    if (caught_up) return;
    ++behind;
    if (!backlog) ++steady;
  }

  // Caught up (a whole boundary pass done), or given up on: a migrator that never catches up (every pass
  // cut short) must not keep the check away for good.
  bool settled(bool caught_up) const { return caught_up || steady >= kSteps || behind >= kMaxSteps; }
};

}  // namespace sentinel
