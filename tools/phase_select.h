// Which phase a subcommand shows: the one --phase names, else the dump's main phase
// (StepModel::main_phase). Shared by summary, heatmap, report, trace and plan.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "profile_model.h"

namespace sentinel::view {

// `requested` < 0: the main phase (0 when the dump has no phases). Otherwise that phase when the
// dump has it; when it does not, prints one line "sentinel-view: DUMP: no phase N in this dump
// (phases: 1, 2)" to stderr and returns nullopt (the caller exits 1).
std::optional<uint32_t> select_phase(const StepModel& sm, int64_t requested, const std::string& path);

// "1, 2": the phases with a PROFILE record (or profiled steps), "none".
std::string profiled_phases(const StepModel& sm);

// "phase 2, the main phase" (when the dump has several phases), "phase 1": what a header says
// about the phase shown.
std::string phase_label(const StepModel& sm, uint32_t phase);

}  // namespace sentinel::view
