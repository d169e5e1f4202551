// sentinel-view whatif: the modeled step time of every policy against the fast tier's size, from one
// dump's profile. The planner (the very make_plan() the runtime calls) plans the phase at each budget
// under each policy, and its step-time model (docs/planner.md) prices each plan; the interleave policy,
// which has no plan, is priced by planner.h's interleaved_step_ns. What a measured budget sweep
// (scripts/bench-tiers --sweep) times, modeled from a single run. --calibrate prices the same plans on
// another clock (planner.h's ClockModel), so that the model can be judged in the measure a sweep judges by.
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "analysis.h"
#include "base/parse.h"
#include "cli.h"
#include "json.h"
#include "plan_setup.h"
#include "view.h"

namespace sentinel::view {

namespace {

constexpr double kGoalRatio = 1.10;  // issue 14's "within 1.10x of all-fast", as bench-tiers judges it

struct Options : SharedOptions {
  bool json = false;
  bool fitted = false;  // --fitted: the slow cost the runtime fitted (the PLAN record's trial)
  // --calibrate: all-fast's and all-slow's steps on another clock, ns (0: the model's own clock)
  uint64_t clock_all_fast_ns = 0, clock_all_slow_ns = 0;
  PlanSettings settings;
  std::vector<uint32_t> budgets{10, 20, 30, 50, 100};  // percent of the peak, ascending
};

void print_help() {
  std::cout << "Usage: sentinel-view whatif [--budgets LIST] [--slow-ns-per-kib N] [--move-ns-per-kib M]\n"
               "                           [--fitted | --calibrate FAST_NS,SLOW_NS] [--whole] [--no-intensity]\n"
               "                           [--cut-by-time]\n"
               "                           [--phase N] [--json] DUMP\n"
               "Plans the profiled phase of a dump at each fast-tier budget under each policy (the\n"
               "planner the runtime runs) and prints each plan's modeled step time over all-fast's, and\n"
               "the least budget from which each policy stays within 1.10x of all-fast. Needs the\n"
               "step-time model's costs (a dump of SENTINEL_STEP_COSTS=auto or N,M, or the options) and\n"
               "interval durations (a run-mode dump).\n"
               "\n"
               "  --budgets LIST     budgets in percent of the profiled peak, comma-separated\n"
               "                     (default 10,20,30,50,100)\n"
               "  --slow-ns-per-kib N, --move-ns-per-kib M\n"
               "                     the model's costs, ns per KiB (default: the PLAN record's)\n"
               "  --fitted           price slow accesses at the cost the runtime fitted to its steady\n"
               "                     steps (the PLAN record's fit) instead of the one it planned with,\n"
               "                     and moves at the one its trial fitted where it fitted one\n"
               "  --calibrate FAST_NS,SLOW_NS\n"
               "                     price the plans on another clock, on which all-fast's step took\n"
               "                     FAST_NS and all-slow's SLOW_NS (e.g. a slow-tier guest's emulated\n"
               "                     time): the base is FAST_NS, the slow cost spreads SLOW_NS - FAST_NS\n"
               "                     over all-slow's access-weighted bytes, moves keep their ratio to\n"
               "                     it; the plans are the same, made with the model's own costs\n"
               "  --whole, --no-intensity, --cut-by-time\n"
               "                     as for sentinel-view plan\n"
               "  --phase N          the phase (default: the main phase)\n"
               "  --json             print one JSON object instead of text\n"
               "  -h, --help         show this help\n";
}

// "10,20,50": ascending percentages of 1 to 100.
bool parse_budgets(const std::string& text, std::vector<uint32_t>* out) {
  std::vector<uint32_t> v;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    size_t n = 0;
    if (!parse_count(text.substr(at, comma - at), n) || n < 1 || n > 100 || (!v.empty() && n <= v.back())) return false;
    v.push_back(static_cast<uint32_t>(n));
    at = comma + 1;
  }
  *out = std::move(v);
  return !out->empty();
}

// "FAST_NS,SLOW_NS": two steps in ns, 0 < FAST_NS < SLOW_NS, each in the runtime's count syntax
// (base/parse.h) of up to 15 digits (parse_count's nine would stop at a second): steps of hours.
bool parse_calibration(const std::string& text, uint64_t* fast_ns, uint64_t* slow_ns) {
  auto ns_of = [](const std::string& t, uint64_t* out) {
    return !t.empty() && t.size() <= 15 && t.find('\0') == std::string::npos && sentinel::parse_count(t.c_str(), out);
  };
  const size_t comma = text.find(',');
  return comma != std::string::npos && ns_of(text.substr(0, comma), fast_ns) &&
         ns_of(text.substr(comma + 1), slow_ns) && *fast_ns > 0 && *slow_ns > *fast_ns;
}

int own_option(SubcommandArgs& args, Options& o) {
  int rc = 0;
  std::string v;
  if (args.arg() == "--json") {
    o.json = true;
  } else if (args.arg() == "--fitted") {
    o.fitted = true;
  } else if (args.is("--calibrate")) {
    if (!args.value("--calibrate", v)) return args.error("--calibrate needs a value");
    if (!parse_calibration(v, &o.clock_all_fast_ns, &o.clock_all_slow_ns))
      return args.error(
          "--calibrate: all-fast's and all-slow's steps in ns, FAST_NS,SLOW_NS with 0 < FAST_NS < SLOW_NS, not '" + v +
          "'");
  } else if (args.is("--budgets")) {
    if (!args.value("--budgets", v)) return args.error("--budgets needs a value");
    if (!parse_budgets(v, &o.budgets))
      return args.error("--budgets: ascending percentages of 1 to 100, comma-separated (10,20,50), not '" + v + "'");
  } else if (!settings_option(args, kTakesCosts | kTakesShape, o.settings, rc)) {
    return args.unknown_option();
  }
  return rc;
}

// One policy's plan at one budget, priced.
struct Point {
  uint64_t step_ns = 0;
  uint32_t hit_ppm = 0;  // predicted fast-hit share of the touched bytes (interleave: its share)
  uint64_t moved_bytes = 0;
  uint64_t budget_bytes = 0;
};

const char* const kPolicies[] = {"sentinel", "first-touch", "hot", "interleave"};

struct Sweep {
  uint64_t all_fast_ns = 0, all_slow_ns = 0, peak_bytes = 0;
  uint32_t intervals = 0;
  bool clocked = false;  // --calibrate: priced on the clock given
  ClockModel clock;
  std::vector<std::map<std::string, Point>> at;  // per budget, per policy
  std::map<std::string, int> needs;              // the least budget within the goal; -1: none of them
};

// The phase planned under one policy (and budget), for its figures: the plan's scratch goes with it, as
// nothing here reads its entries.
bool plan_figures(const PlanInput& in, Plan* plan, const char** error) {
  PlanScratch scratch;
  return scratch.init(plan_scratch_bytes(in)) && make_plan(in, scratch, plan, error);
}

// One line on stderr about the phase; returns 1, the status to exit with.
int phase_error(const Options& o, uint32_t phase, const std::string& what) {
  std::cerr << kProg << ": " << printable(o.path) << ": phase " << phase << ": " << what << "\n";
  return 1;
}

// Every policy at every budget. 0, or 1 after one line on stderr.
int sweep(const Options& o, const PhaseInput& pi, Sweep& out) {
  PlanInput in = pi.src.in;
  const char* error = nullptr;
  auto plan_as = [&](sentinel_policy policy, Plan* plan) {
    in.policy = policy;
    return plan_figures(in, plan, &error);
  };
  auto cannot = [&](const std::string& where) {
    return phase_error(o, in.phase, "cannot plan" + where + ": " + (error ? error : "no memory for the planner"));
  };
  Plan all_slow, all_fast;
  if (!plan_as(SENTINEL_POLICY_ALL_SLOW, &all_slow) || !plan_as(SENTINEL_POLICY_ALL_FAST, &all_fast)) return cannot("");
  out.clocked = o.clock_all_fast_ns != 0;
  if (out.clocked && !calibrate_clock(all_slow, in.costs, static_cast<double>(o.clock_all_fast_ns),
                                      static_cast<double>(o.clock_all_slow_ns), &out.clock))
    return phase_error(o, in.phase, "--calibrate: its all-slow plan has no access-weighted bytes on the slow node");
  // A plan's step on the model's own clock, or on the one given.
  auto step_of = [&](const Plan& plan) {
    return out.clocked ? static_cast<uint64_t>(clocked_step_ns(plan, out.clock) + 0.5) : plan.modeled_step_ns;
  };
  out.all_fast_ns = step_of(all_fast);
  out.all_slow_ns = step_of(all_slow);
  out.peak_bytes = all_slow.header.footprint_peak_bytes;
  out.intervals = all_slow.header.intervals;
  const sentinel_policy planned[] = {SENTINEL_POLICY_SENTINEL, SENTINEL_POLICY_FIRST_TOUCH, SENTINEL_POLICY_HOT};
  for (uint32_t pct : o.budgets) {
    auto& row = out.at.emplace_back();
    in.budget = FastBudget{0, pct * 10000};
    for (size_t k = 0; k < 3; ++k) {
      Plan plan;
      if (!plan_as(planned[k], &plan)) return cannot(" at " + std::to_string(pct) + "%");
      row[kPolicies[k]] = Point{step_of(plan), plan.header.predicted_hit_ppm, plan.header.moved_bytes_per_step,
                                plan.header.fast_budget_bytes};
    }
    const double interleaved = out.clocked ? clocked_interleaved_ns(all_slow, out.clock, pct * 10000)
                                           : interleaved_step_ns(all_slow, pct * 10000);
    row["interleave"] = Point{static_cast<uint64_t>(interleaved + 0.5), pct * 10000, 0, row["sentinel"].budget_bytes};
  }
  for (const char* p : kPolicies) {
    int needs = -1;
    for (size_t b = o.budgets.size(); b-- > 0;) {
      if (out.at[b][p].step_ns > out.all_fast_ns * kGoalRatio) break;
      needs = static_cast<int>(o.budgets[b]);
    }
    out.needs[p] = needs;
  }
  return 0;
}

std::string ratio_text(uint64_t ns, uint64_t ref) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2fx", ref ? static_cast<double>(ns) / static_cast<double>(ref) : 0.0);
  return b;
}

void print_text(std::ostream& os, const Options& o, const PhaseInput& pi, const Sweep& w) {
  os << "What-if of " << printable(o.path) << ", phase " << pi.src.in.phase << ": modeled step time against the fast "
     << "tier's size\n";
  os << "model            " << w.intervals << " intervals"
     << (pi.intervals_cut ? " (" + intervals_cut_text(pi) + ")" : "") << ", footprint peak "
     << human_bytes(w.peak_bytes) << "; planned with slow accesses " << pi.slow_ns_per_kib << " ns/KiB, moves "
     << pi.move_ns_per_kib << " ns/KiB (" << pi.costs_source << ")\n";
  if (w.clocked)
    os << "clock            --calibrate: slow accesses " << ns_per_kib_of(w.clock.slow_ns_per_byte) << " ns/KiB, moves "
       << ns_per_kib_of(w.clock.move_ns_per_byte) << " ns/KiB on it\n";
  os << "reference        all-fast " << human_duration(w.all_fast_ns)
     << (w.clocked ? " (given)" : " (the measured intervals)") << "; all-slow " << human_duration(w.all_slow_ns) << " ("
     << ratio_text(w.all_slow_ns, w.all_fast_ns) << ")\n\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-7s %11s  %-15s %-15s %-15s %s\n", "budget", "fast bytes", kPolicies[0],
                kPolicies[1], kPolicies[2], kPolicies[3]);
  os << line;
  for (size_t b = 0; b < o.budgets.size(); ++b) {
    const auto& row = w.at[b];
    auto cell = [&](const char* p) {
      const Point& x = row.at(p);
      char c[48];
      std::snprintf(c, sizeof c, "%s %5.1f%%", ratio_text(x.step_ns, w.all_fast_ns).c_str(), x.hit_ppm / 1e4);
      return std::string(c);
    };
    std::snprintf(line, sizeof line, "%3u%%    %11s  %-15s %-15s %-15s %s\n", o.budgets[b],
                  human_bytes(row.at("sentinel").budget_bytes).c_str(), cell("sentinel").c_str(),
                  cell("first-touch").c_str(), cell("hot").c_str(),
                  ratio_text(row.at("interleave").step_ns, w.all_fast_ns).c_str());
    os << line;
  }
  os << "(x all-fast, and the predicted fast-hit share of touched bytes)\n\nneeds            ";
  bool first = true;
  for (const char* p : kPolicies) {
    const int n = w.needs.at(p);
    os << (first ? "" : ", ") << p << " "
       << (n < 0 ? "more than " + std::to_string(o.budgets.back()) : std::to_string(n)) << "%";
    first = false;
  }
  os << " (the least budget from which the policy stays within 1.10x of all-fast)\n";
}

void print_json(std::ostream& os, const Options& o, const PhaseInput& pi, const Sweep& w) {
  os << "{\"file\":";
  json_string(os, o.path);
  os << ",\"phase\":" << pi.src.in.phase << ",\"intervals\":" << w.intervals
     << ",\"intervals_cut\":" << pi.intervals_cut << ",\"profiled_intervals\":" << pi.profiled_intervals
     << ",\"footprint_peak_bytes\":" << w.peak_bytes << ",\"slow_ns_per_kib\":" << pi.slow_ns_per_kib
     << ",\"move_ns_per_kib\":" << pi.move_ns_per_kib << ",\"costs_source\":";
  json_string(os, pi.costs_source);
  os << ",\"clock\":";
  if (w.clocked)
    os << "{\"all_fast_ns\":" << o.clock_all_fast_ns << ",\"all_slow_ns\":" << o.clock_all_slow_ns
       << ",\"slow_ns_per_kib\":" << ns_per_kib_of(w.clock.slow_ns_per_byte)
       << ",\"move_ns_per_kib\":" << ns_per_kib_of(w.clock.move_ns_per_byte) << "}";
  else
    os << "null";
  os << ",\"goal_ratio\":" << kGoalRatio << ",\"all_fast_step_ns\":" << w.all_fast_ns
     << ",\"all_slow_step_ns\":" << w.all_slow_ns << ",\"budgets\":[";
  for (size_t b = 0; b < o.budgets.size(); ++b) {
    os << (b ? "," : "") << "{\"percent\":" << o.budgets[b]
       << ",\"fast_budget_bytes\":" << w.at[b].at("sentinel").budget_bytes << ",\"policies\":{";
    bool first = true;
    for (const char* p : kPolicies) {
      const Point& x = w.at[b].at(p);
      os << (first ? "" : ",");
      json_string(os, p);
      char ratio[32];  // six decimals: the default stream precision would round to 6 digits
      std::snprintf(ratio, sizeof ratio, "%.6f",
                    w.all_fast_ns ? static_cast<double>(x.step_ns) / static_cast<double>(w.all_fast_ns) : 0.0);
      os << ":{\"step_ns\":" << x.step_ns << ",\"ratio\":" << ratio << ",\"predicted_hit_ppm\":" << x.hit_ppm
         << ",\"moved_bytes_per_step\":" << x.moved_bytes << "}";
      first = false;
    }
    os << "}}";
  }
  os << "],\"needs_percent\":{";
  bool first = true;
  for (const char* p : kPolicies) {
    os << (first ? "" : ",");
    json_string(os, p);
    os << ":";
    if (w.needs.at(p) < 0)
      os << "null";
    else
      os << w.needs.at(p);
    first = false;
  }
  os << "}}\n";
}

// The costs the model prices with: --fitted takes the runtime's fit from the phase's PLAN record. 0, or 1
// (2 for a usage error) after one line on stderr when the model lacks a cost or a time base.
int check_model(const Dump& d, Options& o, PhaseInput& pi) {
  const uint32_t phase = pi.src.in.phase;
  auto fail = [&](const std::string& what) { return phase_error(o, phase, what); };
  if (o.fitted && o.clock_all_fast_ns) return usage_error("whatif: --fitted and --calibrate: give one of them");
  if (o.fitted) {
    if (o.settings.have_slow_cost) return usage_error("whatif: --fitted and --slow-ns-per-kib: give one of them");
    const fmt::PlanRecord* rec = d.p.plan_for(phase);
    if (!rec || rec->trial.fit != SENTINEL_FIT_DONE)
      return fail("the runtime fitted no slow cost (its PLAN record has no fit): --fitted has nothing to use");
    pi.slow_ns_per_kib = rec->trial.fit_slow_ns_per_kib;
    // Moves at the trial's fit (1.10) too, where it made one and no cost was given, as the runtime prices them.
    const uint32_t fitted_move = move_cost_of_fit(rec->trial.move_fit, rec->trial.fit_move_ns_per_kib);
    const bool fitted_moves = !o.settings.have_move_cost && fitted_move;
    if (fitted_moves) pi.move_ns_per_kib = fitted_move;
    pi.costs_source = "fitted by the runtime" + std::string(o.settings.have_move_cost ? ", moves: command line"
                                                            : fitted_moves            ? ", moves too"
                                                                                      : "");
    pi.src.in.costs = step_costs_of_kib(pi.slow_ns_per_kib, pi.move_ns_per_kib);
  }
  if (o.clock_all_fast_ns) return 0;  // the clock given is the time base and the slow cost
  bool durations = false;
  for (uint32_t k = 0; pi.src.in.interval_ns && k < pi.src.in.intervals; ++k)
    durations |= pi.src.in.interval_ns[k] != 0;
  if (!durations) return fail("no interval durations in the dump: no time base to model step time on");
  if (!pi.slow_ns_per_kib)
    return fail(
        "no slow-access cost (the PLAN record has none: SENTINEL_STEP_COSTS=off, or no plan): give "
        "--slow-ns-per-kib N");
  return 0;
}

}  // namespace

int cmd_whatif(int argc, char** argv) {
  Options o;
  SubcommandArgs args("whatif", argc, argv);
  if (auto rc = read_options(args, o, print_help, [&] { return own_option(args, o); })) return *rc;
  Dump d;
  if (int rc = open_dump(args, o, nullptr, d)) return rc;
  PhaseInput pi;
  if (int rc = phase_input(d, o, o.settings, pi)) return rc;
  if (int rc = check_model(d, o, pi)) return rc;
  Sweep w;
  if (int rc = sweep(o, pi, w)) return rc;
  if (o.json)
    print_json(std::cout, o, pi, w);
  else
    print_text(std::cout, o, pi, w);
  return finish_output();
}

}  // namespace sentinel::view
