// A phase's warm-up, from its STEPS flags and its plan's trial: the steps the runtime spent locking on
// the pattern, profiling, trialling and checking, what those steps cost against a steady one, and the
// step from which the phase runs steady. Shown by `sentinel-view summary` (text and JSON).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "format/format_reader.h"

namespace sentinel::view {

struct Warmup {
  // Steps are numbered as the summary numbers them: indices into Profile::steps.
  uint64_t steps = 0;         // the phase's steps
  uint64_t lock_step = 0;     // its first live step: the detector locked on the pattern there
  uint64_t found_before = 0;  // steps inferred back from the lock (they ran before it was made)
  uint64_t profiled = 0;      // steps flagged profiled, from first_profiled to last_profiled
  uint64_t first_profiled = 0, last_profiled = 0;
  uint64_t checked = 0;  // steps flagged in a placement check
  uint64_t first_checked = 0, last_checked = 0;
  uint32_t trial_steps = 0;  // steps the plan's trial timed (both schedules)
  // The first step after the last profiled or checked one: the phase runs steady from there.
  uint64_t steady_from = 0;
  uint64_t steps_to_steady = 0;  // steady_from - lock_step, in the phase's own steps
  bool ended_in_warmup = false;  // no step of the phase came after its last profiled or checked one
  // Median duration of the steady steps (ns; 0: unknown), and the mean duration of the profiled and
  // checked steps against it (0: unknown).
  uint64_t steady_step_ns = 0;
  double profiled_cost = 0, checked_cost = 0;
};

// The warm-up of `phase`; empty when the phase has no live step.
std::optional<Warmup> warmup_of(const fmt::Profile& p, uint32_t phase);
// "locked at step #8 (8 steps found before it), profiled #11-#12 (2.9x a steady step), trial 8 steps,
// checked #20-#21 (1.1x); steady from #22, 14 steps after the lock".
std::string warmup_text(const Warmup& w);

}  // namespace sentinel::view
