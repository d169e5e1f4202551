// What sentinel-view plan and whatif plan from: a phase's profile as the planner's input, with the
// settings of the command line, else those the dump recorded. One option parser for the settings both
// take, one place that resolves them.
#pragma once

#include <cstdint>
#include <string>

#include "cli.h"
#include "tier/plan_input.h"
#include "tier/planner.h"

namespace sentinel::view {

// The planner's settings a command line may give; each unset one comes from the dump.
struct PlanSettings {
  bool have_policy = false, have_budget = false;
  bool whole = false;         // --whole: objects the profile has in chunks planned whole
  bool no_intensity = false;  // --no-intensity: touched bytes alone, as a profile without passes
  bool cut_by_time = false;   // --cut-by-time: long intervals cut into pieces by the touches' times
  sentinel_policy policy = SENTINEL_POLICY_SENTINEL;
  FastBudget budget;
  // The step-time model's costs, ns per KiB (0: unknown; PlanInput::costs takes them per byte); each
  // given overrides the dump's PLAN record.
  bool have_slow_cost = false, have_move_cost = false;
  uint32_t slow_ns_per_kib = 0, move_ns_per_kib = 0;
};

// Which of the settings' options a command takes (the others are unknown to it).
enum : unsigned { kTakesPolicy = 1, kTakesBudget = 2, kTakesCosts = 4, kTakesShape = 8 };

// --policy P, --fast-bytes B|N%, --slow-ns-per-kib N, --move-ns-per-kib M, --whole, --no-intensity,
// --cut-by-time (those
// `takes` names): true when the current option was one of them (rc: 0, or 2 after a usage error).
bool settings_option(SubcommandArgs& args, unsigned takes, PlanSettings& s, int& rc);

// A phase's planner input and where its settings came from. Not copied: the input points into src.
struct PhaseInput {
  PhaseInput() = default;
  PhaseInput(const PhaseInput&) = delete;
  PhaseInput& operator=(const PhaseInput&) = delete;

  offline::PlanSource src;
  std::string policy_source, budget_source, costs_source;
  uint32_t slow_ns_per_kib = 0, move_ns_per_kib = 0;  // the costs planned with (0: unknown)
  bool measured_bw = false;
  uint32_t chunks_merged = 0;       // --whole: identities the profile had in chunks, planned whole
  uint64_t intensity_dropped = 0;   // --no-intensity: touches whose access intensity was left out
  uint32_t intervals_cut = 0;       // --cut-by-time: intervals cut into pieces (0: none long enough)
  uint32_t profiled_intervals = 0;  // the profile's own count, before any cut
};

// "N of the profile's M cut by time" (--cut-by-time), or "" where nothing was cut.
std::string intervals_cut_text(const PhaseInput& in);

// The phase's input with the settings given, else those the dump recorded. 0, or 1 after one line on
// stderr: a phase that was not profiled has nothing to plan; without any profile, plan_source says so.
int phase_input(const Dump& d, const SharedOptions& o, const PlanSettings& s, PhaseInput& in);

}  // namespace sentinel::view
