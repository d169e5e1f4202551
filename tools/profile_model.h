// What sentinel-view derives from the 1.1 profiler records (STEPS, INTERVALS, PROFILE, IDENTITIES,
// TOUCHES, GROUPS, COUNTERS), per phase. Shared by summary, heatmap, report, trace and plan.
//
// A dump may hold several phases (a data-loading loop, training, evaluation), each with its own
// INTERVALS and, when it was profiled, its own PROFILE, IDENTITIES, TOUCHES, GROUPS and
// PHASE_COUNTERS. The views show one phase at a time: the one asked for, else the main phase.
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

#include "format/format_reader.h"

namespace sentinel::view {

// "short-lived", "step-scoped", "next-step", "persistent", "unknown".
const char* lifetime_name(uint8_t lifetime);
// "short", "step", "next", "persistent", "unknown" (for narrow columns).
const char* lifetime_short(uint8_t lifetime);

struct PhaseSummary {
  uint32_t phase = 0;
  uint64_t steps = 0;       // 0 for a phase only other records name (INTERVALS, PROFILE, PLAN, IDENTITIES)
  uint64_t first_step = 0;  // index into Profile::steps of its first and last step
  uint64_t last_step = 0;
  uint32_t period = 0;     // allocations per step: the INTERVALS period, else the most common count
  uint32_t intervals = 0;  // intervals per step (0: no INTERVALS record for the phase)
  const fmt::IntervalTable* table = nullptr;
  uint64_t profiled_steps = 0;  // steps flagged SENTINEL_STEP_PROFILED
  uint64_t explicit_steps = 0;
  uint64_t inferred_steps = 0;
  uint64_t median_step_ns = 0;                   // between consecutive step starts of this phase (0: unknown)
  uint64_t time_ns = 0;                          // steps x median step time, saturating (0: unknown)
  const fmt::ProfileSession* session = nullptr;  // its first PROFILE record
  bool profiled = false;                         // a PROFILE record or steps flagged profiled
  uint64_t identities = 0;                       // distinct identity ids of the phase
  uint64_t groups = 0;                           // distinct group ids of the phase
  // Access intensity (format 1.8, SENTINEL_PROFILE_PASSES): the mean passes a touched byte of the phase was
  // touched in; 0 when its profile was not taken in passes.
  double mean_passes = 0;
};

struct StepModel {
  uint64_t steps = 0;  // STEPS entries
  uint64_t explicit_steps = 0, inferred_steps = 0, new_phase_steps = 0, profiled_steps = 0;
  // Every phase named by STEPS, INTERVALS, PROFILE, PLAN or IDENTITIES, ascending phase number.
  std::vector<PhaseSummary> phases;
  // Index into phases of the main phase: among the profiled phases (all phases when none was
  // profiled), the one the process spent the most time in (steps x median step time; when a
  // candidate's step time is unknown, the most steps); ties: more steps, then the lower number.
  // -1 without phases.
  int main_phase = -1;
  uint32_t allocations_per_step = 0;  // main phase's period, 0 without steps
  uint32_t intervals_per_step = 0;    // main phase's interval count, 0 without steps or INTERVALS

  const PhaseSummary* find(uint32_t phase) const;
  const PhaseSummary* main() const { return main_phase < 0 ? nullptr : &phases[static_cast<size_t>(main_phase)]; }
  // The main phase's number, 0 without phases.
  uint32_t main_number() const { return main_phase < 0 ? 0 : main()->phase; }
  // "1, 2" (every phase), "none" without phases.
  std::string phase_list() const;
};

StepModel model_steps(const fmt::Profile& p);

// The step of `phase` plotted as "the step": the first profiled step of its PROFILE record, else its
// first step flagged profiled, else its middle step (preferring steps that were not inferred). -1
// when the phase has no steps.
int64_t representative_step(const fmt::Profile& p, uint32_t phase);

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
  uint32_t first_interval = UINT32_MAX;            // first interval touched
  std::string interval_list;                       // "0-3,7" (from the touches; else from interval_mask)
  uint64_t identities_found = 0;                   // identities of the dump naming this group
  std::vector<std::pair<uint32_t, double>> cells;  // (interval, mean bytes per profiled step), sorted
};

struct AccessModel {
  bool present = false;  // the phase has identities or groups (or touches naming its identities)
  const fmt::ProfileSession* session = nullptr;         // the phase's first PROFILE record
  uint32_t phase = 0;                                   // the phase modeled
  const fmt::IntervalTable* table = nullptr;            // its intervals, if recorded
  uint32_t intervals = 0;                               // columns of the heatmap
  uint32_t steps_used = 1;                              // profiled steps the cells are averaged over
  int64_t only_step = -1;                               // >= 0: only that profiled step's touches
  std::vector<IdentityRow> identities;                  // of the phase, file order, first of each id
  std::vector<GroupRow> groups;                         // of the phase, file order, first of each id
  std::unordered_map<uint32_t, size_t> identity_index;  // id -> index in identities
  std::unordered_map<uint32_t, size_t> group_index;
  // Touches naming an identity no phase of the dump has, or one of this phase's identities with an
  // interval outside its table. Touches of other phases' identities are theirs, not dropped.
  uint64_t dropped_touches = 0;
  uint64_t total_touched = 0;       // sum of kept touch bytes
  std::vector<double> interval_ns;  // mean duration per interval from the phase's COUNTERS (empty: none)
};

// The access profile of `phase`: its identities (identity.phase), groups (group.phase), the touches
// of those identities and its counters. only_step >= 0 restricts the touches to that profiled step
// (cells are then that step's bytes).
AccessModel model_access(const fmt::Profile& p, uint32_t phase, int64_t only_step = -1);

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
std::pair<uint64_t, uint64_t> step_span(const fmt::Profile& p, const SeqClock& clock, size_t k, uint64_t t_end);

}  // namespace sentinel::view
