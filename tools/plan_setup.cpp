// sentinel-view plan and whatif: the planner's settings from the command line and the dump.
#include "plan_setup.h"

#include <iostream>

#include "base/parse.h"
#include "json.h"
#include "phase_select.h"
#include "view.h"

namespace sentinel::view {

namespace {

// A cost option's value: nine digits at most (cli.h's counts), so within SENTINEL_STEP_COSTS's bound
// and the PLAN record's u32.
int cost_value(size_t n, uint32_t* out, bool* given) {
  static_assert(999999999 <= kMaxStepCostNsPerKib, "an option's count fits the recorded costs");
  *out = static_cast<uint32_t>(n);
  *given = true;
  return 0;
}

// The step costs: each given on the command line, else the phase's PLAN record's (plan_source).
void set_costs(const PlanSettings& s, PhaseInput& in) {
  const uint32_t slow = ns_per_kib_of(in.src.in.costs.slow_ns_per_byte);
  const uint32_t move = ns_per_kib_of(in.src.in.costs.move_ns_per_byte);
  in.slow_ns_per_kib = s.have_slow_cost ? s.slow_ns_per_kib : slow;
  in.move_ns_per_kib = s.have_move_cost ? s.move_ns_per_kib : move;
  const bool recorded = (slow && !s.have_slow_cost) || (move && !s.have_move_cost);
  const bool given = s.have_slow_cost || s.have_move_cost;
  in.costs_source = recorded && given ? "command line and PLAN record"
                    : recorded        ? "PLAN record"
                    : given           ? "command line"
                                      : "none";
  // auto priced the moves below the migrator's own time: say why, where the recorded move cost is used.
  if ((in.src.in.flags & SENTINEL_TIER_MOVES_OFF_THREAD) && move && !s.have_move_cost)
    in.costs_source += "; moves priced for the training thread, the migrator on a CPU of its own";
  in.src.in.costs = step_costs_of_kib(in.slow_ns_per_kib, in.move_ns_per_kib);
}

}  // namespace

bool settings_option(SubcommandArgs& args, unsigned takes, PlanSettings& s, int& rc) {
  size_t n = 0;
  std::string v;
  if ((takes & kTakesShape) && args.arg() == "--whole") {
    s.whole = true;
  } else if ((takes & kTakesShape) && args.arg() == "--no-intensity") {
    s.no_intensity = true;
  } else if ((takes & kTakesShape) && args.arg() == "--cut-by-time") {
    s.cut_by_time = true;
  } else if ((takes & kTakesPolicy) && args.is("--policy")) {
    if (!args.value("--policy", v)) {
      rc = args.error("--policy needs a value");
    } else if (!parse_policy(v.c_str(), &s.policy)) {
      std::string names;  // the policies that make a plan, from the one table of names
      for (uint32_t k = 0; k <= SENTINEL_POLICY_HOT; ++k) names += std::string(kPolicyNames[k]) + ", ";
      rc = args.error("--policy: one of " + names + "not '" + v + "'" +
                      (v == policy_name(SENTINEL_POLICY_INTERLEAVE) ? " (it places pages at birth: no plan)" : ""));
    } else {
      s.have_policy = true;
    }
  } else if ((takes & kTakesBudget) && args.is("--fast-bytes")) {
    if (!args.value("--fast-bytes", v))
      rc = args.error("--fast-bytes needs a value");
    else if (!offline::parse_fast_bytes(v, &s.budget))
      rc = args.error("--fast-bytes: bytes (4G, 512M, 1048576) or a share of the peak (20%), not '" + v + "'");
    else
      s.have_budget = true;
  } else if ((takes & kTakesCosts) && args.count_option("--slow-ns-per-kib", n, rc, "a value")) {
    if (!rc) rc = cost_value(n, &s.slow_ns_per_kib, &s.have_slow_cost);
  } else if ((takes & kTakesCosts) && args.count_option("--move-ns-per-kib", n, rc, "a value")) {
    if (!rc) rc = cost_value(n, &s.move_ns_per_kib, &s.have_move_cost);
  } else {
    return false;
  }
  return true;
}

std::string intervals_cut_text(const PhaseInput& in) {
  if (!in.intervals_cut) return "";
  return std::to_string(in.intervals_cut) + " of the profile's " + std::to_string(in.profiled_intervals) +
         " cut by time";
}

int phase_input(const Dump& d, const SharedOptions& o, const PlanSettings& s, PhaseInput& in) {
  const fmt::Profile& p = d.p;
  const PhaseSummary* ph = d.sm.find(d.phase);
  if (!p.sessions.empty() && ph && !ph->session && !ph->identities) {
    std::cerr << kProg << ": " << printable(o.path) << ": phase " << d.phase
              << " was not profiled: nothing to plan (profiled phases: " << profiled_phases(d.sm) << ")\n";
    return 1;
  }
  std::string why;
  if (!offline::plan_source(p, p.sessions.empty() && o.phase < 0 ? -1 : int64_t{d.phase}, &in.src, &why)) {
    std::cerr << kProg << ": " << printable(o.path) << ": " << why << "\n";
    return 1;
  }
  if (s.whole) in.chunks_merged = offline::plan_whole(&in.src);
  if (s.no_intensity) in.intensity_dropped = offline::plan_without_intensity(&in.src);
  in.profiled_intervals = in.src.in.intervals;
  if (s.cut_by_time) in.intervals_cut = offline::plan_cut_by_time(&in.src);
  const offline::RecordedSettings rec = offline::recorded_settings(p);
  in.src.in.policy = s.have_policy ? s.policy : rec.policy;
  in.src.in.budget = s.have_budget ? s.budget : rec.budget;
  in.policy_source = s.have_policy ? "command line" : rec.policy_source;
  in.budget_source = s.have_budget ? "command line" : rec.budget_source;
  in.measured_bw = in.src.in.migrate_bytes_per_s != 0;
  set_costs(s, in);
  return 0;
}

}  // namespace sentinel::view
