// What sentinel-view derives from the 1.2 tiering records (TIERING, PLAN, MIGRATIONS, MIGRATION_LOG,
// PLACEMENT, DETECTION): the run's placement figures, per-interval occupancy and hit share of the
// planned phase, and the step detector's diagnosis. Shared by summary, report and trace. Values are
// used defensively: sums saturate, intervals past 4096 are dropped, nothing is sized from a value.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "format_reader.h"

namespace sentinel::view {

struct IntervalTiering {
  uint32_t interval = 0;
  bool migrations = false;  // a MIGRATIONS entry
  bool placement = false;   // a PLACEMENT entry
  uint64_t to_fast = 0, to_slow = 0, migrate_ns = 0;
  uint64_t moves = 0, late = 0, failed_pages = 0;
  uint64_t fast_max = 0;    // fast occupancy at this interval, max over steps
  double fast_mean = 0;     // ... mean over steps
  uint64_t touched = 0, fast = 0;  // placement check: touched bytes, of which on the fast node
};

struct TieringModel {
  bool present = false;                      // any tiering record
  const sentinel_tiering* tiering = nullptr;  // the last TIERING record
  const fmt::PlanRecord* plan = nullptr;      // the PLAN of `phase`
  uint32_t phase = 0;  // the phase the per-interval figures are of: the plan's, else the profile's
  uint64_t migrated_bytes = 0;   // TIERING's, else the sum over MIGRATIONS
  uint64_t late_migrations = 0;  // likewise
  uint64_t failed_pages = 0;
  uint64_t migrate_ns = 0;       // sum over MIGRATIONS
  uint64_t batches = 0, batch_bytes = 0;  // MIGRATION_LOG
  bool has_placement = false;
  uint64_t placement_touched = 0, placement_fast = 0;  // all phases
  uint32_t placement_steps = 0;
  std::vector<IntervalTiering> intervals;  // of `phase`, ascending
  std::vector<const sentinel_detection*> detection;  // in file order

  // Measured fast-hit share (PLACEMENT), nullopt without a PLACEMENT record or touched bytes.
  std::optional<double> measured_hit() const;
  // The plan's predicted share, nullopt without a PLAN record.
  std::optional<double> predicted_hit() const;
  uint64_t budget() const;      // TIERING's budget, else the plan's, else 0
  uint64_t fast_peak() const;   // TIERING's measured peak, else the largest fast_max, else 0
};

TieringModel model_tiering(const fmt::Profile& p);

// "the step detector found no step: ..." and the like; empty when there is nothing to say.
std::string detection_diagnosis(const sentinel_detection& d);
const char* policy_label(uint32_t policy);  // "sentinel", ..., "unknown"

// The summary's text lines and JSON keys for these records (the JSON part starts with a comma).
void print_tiering_text(std::ostream& os, const TieringModel& t);
void print_tiering_json(std::ostream& os, const TieringModel& t);

}  // namespace sentinel::view
