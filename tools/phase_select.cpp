// The phase a subcommand shows. See phase_select.h.
#include "phase_select.h"

#include <iostream>

#include "json.h"
#include "view.h"

namespace sentinel::view {

std::optional<uint32_t> select_phase(const StepModel& sm, int64_t requested, const std::string& path) {
  if (requested < 0) return sm.main_number();
  if (requested <= UINT32_MAX && sm.find(static_cast<uint32_t>(requested))) return static_cast<uint32_t>(requested);
  std::cerr << kProg << ": " << printable(path) << ": no phase " << requested << " in this dump ";
  if (sm.phases.empty())
    std::cerr << "(it has no phases: no STEPS, INTERVALS or PROFILE record)\n";
  else
    std::cerr << "(phases: " << sm.phase_list() << ")\n";
  return std::nullopt;
}

std::string profiled_phases(const StepModel& sm) {
  std::string out;
  for (const auto& ph : sm.phases)
    if (ph.profiled) out += (out.empty() ? "" : ", ") + std::to_string(ph.phase);
  return out.empty() ? "none" : out;
}

std::string phase_label(const StepModel& sm, uint32_t phase) {
  std::string s = "phase " + std::to_string(phase);
  if (sm.main() && sm.main()->phase == phase && sm.phases.size() > 1) s += ", the main phase";
  return s;
}

}  // namespace sentinel::view
