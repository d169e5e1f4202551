// What sentinel-view derives from the 1.2 tiering records (TIERING, PLAN, MIGRATIONS, MIGRATION_LOG,
// PLACEMENT, DETECTION): the run's placement figures, each phase's plan, migrations and placement
// check, the per-interval occupancy and hit share of the phase shown, and the step detector's
// diagnosis. Shared by summary, report and trace. Values are
// used defensively: sums saturate, intervals past 4096 are dropped, nothing is sized from a value.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "base/policy_names.h"
#include "format/format_reader.h"
#include "tier/planner.h"

namespace sentinel::view {

struct IntervalTiering {
  uint32_t interval = 0;
  bool migrations = false;  // a MIGRATIONS entry
  bool placement = false;   // a PLACEMENT entry
  uint64_t to_fast = 0, to_slow = 0, migrate_ns = 0;
  uint64_t moves = 0, late = 0, failed_pages = 0;
  uint64_t fast_max = 0;           // fast occupancy at this interval, max over steps
  double fast_mean = 0;            // ... mean over steps (fast_bytes_sum / steps)
  uint32_t steps = 0;              // steps run under the plan (MIGRATIONS)
  uint64_t touched = 0, fast = 0;  // placement check: touched bytes, of which on the fast node
  uint32_t checked_steps = 0;
  uint64_t misplaced = 0, verified = 0;  // objects found on the wrong node at the boundary / asked
};

// One phase's tiering figures: its PLAN, what the migrator did under it (MIGRATIONS) and the
// placement check (PLACEMENT).
struct PhaseTiering {
  uint32_t phase = 0;
  const fmt::PlanRecord* plan = nullptr;  // the phase's (last) PLAN record
  bool migrations = false;                // MIGRATIONS entries of the phase
  uint64_t migrated_bytes = 0, late = 0, failed_pages = 0, migrate_ns = 0;
  uint64_t fast_max = 0;                 // largest fast occupancy at any interval, over steps
  uint32_t steps = 0;                    // steps run under the plan (largest over intervals)
  bool checked = false;                  // PLACEMENT entries of the phase
  uint64_t touched = 0, fast = 0;        // placement check, all intervals
  uint32_t checked_steps = 0;            // largest over intervals
  uint64_t misplaced = 0, verified = 0;  // objects at the boundaries, all intervals
  // The step-time model of the plan (docs/planner.md), when its PLAN record holds step costs (1.4) and
  // the phase's interval durations: the plan recomputed from the dump with the recorded settings.
  struct ModeledStep {
    uint64_t step_ns = 0, base_ns = 0, slow_ns = 0, move_ns = 0;
  };
  std::optional<ModeledStep> modeled;

  // Measured fast-hit share (fast / touched), nullopt when not checked or nothing was touched.
  std::optional<double> measured_hit() const;
  // The plan's predicted share, nullopt without a PLAN record.
  std::optional<double> predicted_hit() const;
};

struct TieringModel {
  bool present = false;                       // any tiering record
  const sentinel_tiering* tiering = nullptr;  // the last TIERING record
  uint32_t phase = 0;                         // the phase shown (the per-interval figures are its)
  const PhaseTiering* shown = nullptr;        // its figures, nullptr when no record names it
  const fmt::PlanRecord* plan = nullptr;      // its PLAN record
  uint64_t migrated_bytes = 0;                // whole run: TIERING's, else the sum over MIGRATIONS
  uint64_t late_migrations = 0;               // likewise
  uint64_t failed_pages = 0;
  uint64_t migrate_ns = 0;                // sum over MIGRATIONS
  uint64_t batches = 0, batch_bytes = 0;  // MIGRATION_LOG
  uint64_t batch_ns = 0;                  // ... summed batch durations (the migrator's time per batch)
  uint64_t promotions = 0;                // ... objects in batches to the fast node
  uint64_t numa_calls_denied = 0;         // STATS numa_calls_denied: the NUMA calls the kernel refused
  // The migrator's throughput over its logged batches (bytes per second), 0 when none were timed.
  // The migration log's rate, bytes/s (saturated; 0 when no batch was timed).
  uint64_t batch_bytes_per_s() const { return bytes_per_s(batch_bytes, batch_ns); }
  std::vector<PhaseTiering> phases;                  // every phase a PLAN, MIGRATIONS or PLACEMENT entry names
  std::vector<IntervalTiering> intervals;            // of `phase`, ascending
  std::vector<const sentinel_detection*> detection;  // in file order

  const PhaseTiering* find(uint32_t phase) const;
  // True when the DETECTION record calls the phase a set-up loop (SENTINEL_DETECT_SET_UP).
  bool set_up_loop(uint32_t phase) const;
  // The shown phase's measured and predicted fast-hit share.
  std::optional<double> measured_hit() const { return shown ? shown->measured_hit() : std::nullopt; }
  std::optional<double> predicted_hit() const { return shown ? shown->predicted_hit() : std::nullopt; }
  uint64_t budget() const;     // the shown phase's plan budget, else TIERING's (the first plan's), else 0
  uint64_t fast_peak() const;  // whole run: TIERING's measured peak, else the largest fast_max, else 0
};

// The tiering records, with the per-interval figures of `phase`.
TieringModel model_tiering(const fmt::Profile& p, uint32_t phase);

// "the step detector found no step: ..." and the like; empty when there is nothing to say.
std::string detection_diagnosis(const sentinel_detection& d);

// "step costs 200 ns/KiB slow, 500 ns/KiB moved: modeled step 12.1 ms = ..."; empty without a plan or
// when the plan had no costs (SENTINEL_STEP_COSTS=off, or a dump before 1.4).
std::string step_costs_text(const PhaseTiering& ph);

// "measured fast-hit share 51.9% of 27.1 MiB touched (2 checked steps); predicted 52.8% (-0.9 points);
// 0 of 12 objects misplaced at boundaries"; empty when the phase was not checked.
std::string placement_text(const PhaseTiering& ph);
// A plan's step-time trial in one line: both schedules' step times and predictions, the one kept
// (empty when the plan had no trial).
std::string trial_text(const fmt::PlanRecord& plan);

// The bandwidth watch in one line (1.12): the migrator's latest measured bandwidth and what the watch did
// with it; empty when it measured nothing.
std::string watch_text(const fmt::PlanRecord& plan);

// The slow cost the runtime fitted to the schedule in effect, in one line: "took 2.1 s a step (median of 5
// steady steps, wall time): the slow node costs 6,550 ns per access-weighted KiB (the plan was given
// 3,276)"; empty when no fit was made (not yet, a dry run, or a dump before 1.9).
std::string fit_text(const fmt::PlanRecord& plan);
// "; a moved KiB cost the training thread N ns (fitted)", or why none was fitted (1.10); empty for none.
std::string move_fit_text(const sentinel_plan_trial& t);

// The summary's text lines and JSON keys for these records (the JSON part starts with a comma).
void print_tiering_text(std::ostream& os, const TieringModel& t);
void print_tiering_json(std::ostream& os, const TieringModel& t);
// The keys one entry of summary --json's "phases" array gets from these records (starts with a
// comma; nulls and zeros when ph is nullptr).
void print_phase_tiering_json(std::ostream& os, const PhaseTiering* ph);

}  // namespace sentinel::view
