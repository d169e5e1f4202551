// What sentinel-view derives from the 1.1 profiler records (STEPS, INTERVALS, PROFILE, IDENTITIES,
// TOUCHES, GROUPS, COUNTERS). Shared by summary, heatmap, report and trace.
//
// The reader checks only the framing; values may be inconsistent (a touch naming an identity that is
// not in the dump, an interval past the phase's table, duplicate ids). Everything here looks values up
// defensively, drops what does not fit, counts what it dropped, and never sizes memory from a value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "format_reader.h"

namespace sentinel::view {

// "short-lived", "step-scoped", "persistent", "unknown".
const char* lifetime_name(uint8_t lifetime);
// "short", "step", "persistent", "unknown" (for narrow columns).
const char* lifetime_short(uint8_t lifetime);

struct PhaseSummary {
  uint32_t phase = 0;
  uint64_t steps = 0;
  uint64_t first_step = 0;  // index into Profile::steps of its first and last step
  uint64_t last_step = 0;
  uint32_t period = 0;     // allocations per step: the INTERVALS period, else the most common count
  uint32_t intervals = 0;  // intervals per step (0: no INTERVALS record for the phase)
  const fmt::IntervalTable* table = nullptr;
  uint64_t profiled_steps = 0;  // steps flagged SENTINEL_STEP_PROFILED
  uint64_t explicit_steps = 0;
  uint64_t inferred_steps = 0;
  uint64_t median_step_ns = 0;  // between consecutive step starts of this phase (0: unknown)
};

struct StepModel {
  uint64_t steps = 0;  // STEPS entries
  uint64_t explicit_steps = 0, inferred_steps = 0, new_phase_steps = 0, profiled_steps = 0;
  std::vector<PhaseSummary> phases;  // ascending phase number
  int main_phase = -1;               // index into phases: the most steps (ties: lowest number)
  uint32_t allocations_per_step = 0;  // main phase's period, 0 without steps
  uint32_t intervals_per_step = 0;    // main phase's interval count, 0 without steps or INTERVALS
};

StepModel model_steps(const fmt::Profile& p);

// The step plotted as "the step": the first profiled step, else the middle step of the main phase
// (preferring steps that were not inferred). -1 when the dump has no steps.
int64_t representative_step(const fmt::Profile& p, const StepModel& m);

struct IdentityRow {
  sentinel_identity id{};
  uint64_t touched = 0;  // bytes touched over all profiled steps used (TOUCHES; else the entry's field)
  uint64_t faults = 0;
  uint32_t intervals_touched = 0;
  std::vector<std::pair<uint32_t, double>> cells;  // (interval, mean bytes per profiled step), sorted
};

struct GroupRow {
  sentinel_group g{};
  uint64_t touched = 0;  // bytes touched by its members, summed over the profiled steps used
  uint32_t intervals_touched = 0;
  uint32_t first_interval = UINT32_MAX;  // first interval touched
  std::string interval_list;             // "0-3,7" (from the touches; else from interval_mask)
  uint64_t identities_found = 0;         // identities of the dump naming this group
  std::vector<std::pair<uint32_t, double>> cells;  // (interval, mean bytes per profiled step), sorted
};

struct AccessModel {
  bool present = false;  // the dump has identities, touches or groups
  const fmt::ProfileSession* session = nullptr;  // the first PROFILE record
  uint32_t phase = 0;                            // the profiled phase
  const fmt::IntervalTable* table = nullptr;     // its intervals, if recorded
  uint32_t intervals = 0;                        // columns of the heatmap
  uint32_t steps_used = 1;                       // profiled steps the cells are averaged over
  int64_t only_step = -1;                        // >= 0: only that profiled step's touches
  std::vector<IdentityRow> identities;           // file order, first of each id
  std::vector<GroupRow> groups;                  // file order, first of each id
  std::unordered_map<uint32_t, size_t> identity_index;  // id -> index in identities
  std::unordered_map<uint32_t, size_t> group_index;
  uint64_t dropped_touches = 0;  // unknown identity, or interval outside the table
  uint64_t total_touched = 0;    // sum of kept touch bytes
  std::vector<double> interval_ns;  // mean duration per interval from COUNTERS (empty: none)
};

// only_step >= 0 restricts the touches to that profiled step (cells are then that step's bytes).
AccessModel model_access(const fmt::Profile& p, const StepModel& steps, int64_t only_step = -1);

// Groups in the order the heatmap draws them: persistent, step-scoped, short-lived, unknown; within a
// class by first interval touched, then by bytes (descending), then id. Groups never touched last.
std::vector<size_t> heatmap_group_order(const AccessModel& a);
// Identities by size (descending), then touched bytes, then id.
std::vector<size_t> identities_by_size(const AccessModel& a);
// Identities with touches, by touched bytes (descending), then size, then id.
std::vector<size_t> identities_by_touches(const AccessModel& a);

// For every object of the dump (same order), the index into a.identities of its identity, or
// SIZE_MAX. An object born at in-step ordinal k of a step of the profiled phase has the identity with
// that ordinal, site and size; objects born outside steps take the identities without an ordinal of
// their site and size in birth order, if they are alive when the profiled window starts.
std::vector<size_t> object_identities(const fmt::Profile& p, const AccessModel& a);

// The index into p.steps of the step whose allocations include seq (steps sorted by start_seq in the
// dump), or -1.
int64_t step_of_seq(const fmt::Profile& p, uint64_t seq);

// "0-3,7,9" for a sorted list of intervals.
std::string interval_ranges(const std::vector<uint32_t>& sorted);

// The monotonic time of a tracked allocation (the birth of the object with that birth_seq), from a
// table sorted by seq; for a seq with no object, the next recorded birth after it (or nullopt).
class SeqClock {
 public:
  explicit SeqClock(const fmt::Profile& p);
  std::optional<uint64_t> at(uint64_t seq) const;
  bool empty() const { return births_.empty(); }

 private:
  std::vector<std::pair<uint64_t, uint64_t>> births_;  // (seq, ns), sorted by seq
};

// Start and end (monotonic ns) of step k: from its start_ns (else its first allocation's birth) to
// the birth of the first tracked allocation after it, cut at the next step's start; t_end when
// nothing follows.
std::pair<uint64_t, uint64_t> step_span(const fmt::Profile& p, const SeqClock& clock, size_t k,
                                        uint64_t t_end);

}  // namespace sentinel::view
