// sentinel-view plan: runs the planner (src/tier/planner.h, the very make_plan() the runtime calls) on
// a dump's profile and prints the schedule: per identity the node in each interval and its moves,
// and the plan's figures. When the dump holds the runtime's PLAN record for the phase and the
// settings are the same, it says whether the recomputed plan is identical.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "analysis.h"
#include "base/parse.h"
#include "cli.h"
#include "json.h"
#include "phase_select.h"
#include "plan_setup.h"
#include "profile_model.h"
#include "tier/plan_input.h"
#include "tier/planner.h"
#include "view.h"

namespace sentinel::view {

namespace {

struct Options : SharedOptions {
  bool json = false;
  PlanSettings settings;
  size_t top = 40;  // SIZE_MAX: all
};

void print_help() {
  std::cout << "Usage: sentinel-view plan [--policy P] [--fast-bytes B|N%] [--slow-ns-per-kib N]\n"
               "                         [--move-ns-per-kib M] [--whole] [--no-intensity] [--cut-by-time]\n"
               "                         [--phase N] [--top N] [--json] DUMP\n"
               "Runs the planner (the same code the runtime runs) on the profile of a dump written with\n"
               "SENTINEL_MODE=profile, and prints the schedule: per object identity its node in each\n"
               "interval of the step (F fast, S slow, - not alive) and its moves, and the plan's figures.\n"
               "\n"
               "  --policy P         sentinel, first-touch, all-slow, all-fast or hot (default: the\n"
               "                     dump's TIERING record, else SENTINEL_POLICY, else sentinel)\n"
               "  --fast-bytes B|N%  fast-tier budget: bytes (4G, 512M, 1048576) or a share of the\n"
               "                     profiled peak footprint (20%); default: the dump's TIERING record,\n"
               "                     else SENTINEL_FAST_BYTES, else 20%\n"
               "  --slow-ns-per-kib N\n"
               "                     the step-time model's cost of touching a KiB on the slow node\n"
               "                     instead of the fast one, in ns; with interval durations, the\n"
               "                     sentinel policy then keeps the schedule of least modeled step time\n"
               "                     (default: the costs the dump's PLAN record was planned with,\n"
               "                     SENTINEL_STEP_COSTS, else 0: unknown)\n"
               "  --move-ns-per-kib M\n"
               "                     what moving a KiB costs the training thread, in ns (default: as\n"
               "                     for --slow-ns-per-kib)\n"
               "  --phase N          plan phase N (default: the main phase, the profiled phase the\n"
               "                     process spent the most time in)\n"
               "  --whole            plan the objects profiled in chunks (SENTINEL_CHUNK_BYTES) as one\n"
               "                     object each, their chunks' touches added up: the plan a run with\n"
               "                     SENTINEL_CHUNK_BYTES=0 would make of the same profile\n"
               "  --no-intensity     plan a profile taken in passes (SENTINEL_PROFILE_PASSES) by touched\n"
               "                     bytes alone, without its access intensity: the plan a run with\n"
               "                     SENTINEL_PROFILE_PASSES=1 would make of the same profile\n"
               "  --cut-by-time      cut each interval lasting more than twice the median one (a\n"
               "                     stretch that allocates nothing: an optimizer's update) into pieces\n"
               "                     of about the median by when its touches were made (format 1.14,\n"
               "                     profiled in passes): the plan if the runtime cut them (it does not)\n"
               "  --top N            entries listed, largest first (default 40; 0: all)\n"
               "  --json             print one JSON object instead of text\n"
               "  -h, --help         show this help\n";
}

std::string strip_of(const sentinel_plan_entry& e, uint64_t alive, uint32_t n) {
  std::string s;
  for (uint32_t k = 0; k < n; ++k) s += !(alive >> k & 1) ? '-' : (e.fast_mask >> k & 1) ? 'F' : 'S';
  return s;
}

std::vector<uint32_t> bits_of(uint64_t m) {
  std::vector<uint32_t> v;
  for (uint32_t k = 0; k < 64; ++k)
    if (m >> k & 1) v.push_back(k);
  return v;
}

std::string list_of(const std::vector<uint32_t>& v) {
  std::string s;
  for (uint32_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

std::string percent(uint32_t ppm) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", ppm / 1e4);
  return b;
}

std::string fixed2(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", x);
  return b;
}

// The share of the access-weighted bytes (touched bytes x access intensity) the plan has fast, ppm.
uint32_t weighted_ppm(const Plan& p) {
  return p.weighted_bytes
             ? static_cast<uint32_t>(static_cast<unsigned __int128>(p.fast_hit_weighted) * 1000000u / p.weighted_bytes)
             : 0;
}

std::string budget_text(const FastBudget& b, uint64_t resolved) {
  if (!b.share_ppm) return human_bytes(resolved);
  char s[64];
  std::snprintf(s, sizeof s, "%g%% of the peak = ", b.share_ppm / 1e4);
  return s + human_bytes(resolved);
}

std::string bandwidth_text(uint64_t bps) {
  return human_bytes(bps) + "/s";
}

// Differences between the recomputed plan and the recorded one ("" when identical).
std::string compare(const Plan& plan, const fmt::PlanRecord& rec) {
  const sentinel_plan_header& a = plan.header;
  const sentinel_plan_header& b = rec.header;
  std::vector<std::string> diff;
  auto field = [&](const char* name, uint64_t x, uint64_t y) {
    if (x != y)
      diff.push_back(std::string(name) + " " + std::to_string(y) + " recorded, " + std::to_string(x) + " now");
  };
  field("intervals", a.intervals, b.intervals);
  field("lead_intervals", a.lead_intervals, b.lead_intervals);
  field("footprint_peak_bytes", a.footprint_peak_bytes, b.footprint_peak_bytes);
  field("fast_peak_bytes", a.fast_peak_bytes, b.fast_peak_bytes);
  field("fast_pool_bytes", a.fast_pool_bytes, b.fast_pool_bytes);
  field("moved_bytes_per_step", a.moved_bytes_per_step, b.moved_bytes_per_step);
  field("predicted_hit_ppm", a.predicted_hit_ppm, b.predicted_hit_ppm);
  field("migrate_bytes_per_s", a.migrate_bytes_per_s, b.migrate_bytes_per_s);
  field("flags", a.flags, b.flags);
  std::map<std::pair<uint32_t, uint32_t>, const sentinel_plan_entry*> recorded;  // by (identity, chunk)
  for (const auto& e : rec.entries) recorded.emplace(std::make_pair(e.identity, e.chunk), &e);
  uint64_t differing = 0, missing = 0;
  for (uint32_t i = 0; i < plan.entry_count; ++i) {
    const sentinel_plan_entry& e = plan.entries[i];
    auto it = recorded.find(std::make_pair(e.identity, e.chunk));
    if (it == recorded.end()) {
      ++missing;
      continue;
    }
    const sentinel_plan_entry& r = *it->second;
    if (r.flags != e.flags || r.fast_mask != e.fast_mask || r.touch_mask != e.touch_mask) ++differing;
  }
  if (rec.entries.size() != plan.entry_count)
    diff.push_back(std::to_string(rec.entries.size()) + " entries recorded, " + std::to_string(plan.entry_count) +
                   " now");
  if (missing) diff.push_back(std::to_string(missing) + " identities without a recorded entry");
  if (differing) diff.push_back(std::to_string(differing) + (differing == 1 ? " entry differs" : " entries differ"));
  std::string out;
  for (const auto& d : diff) out += (out.empty() ? "" : "; ") + d;
  return out;
}

// --json, --top N, and the planner's settings (plan_setup.h).
int own_option(SubcommandArgs& args, Options& o) {
  int rc = 0;
  size_t n = 0;
  if (args.arg() == "--json") {
    o.json = true;
  } else if (settings_option(args, kTakesPolicy | kTakesBudget | kTakesCosts | kTakesShape, o.settings, rc)) {
  } else if (args.count_option("--top", n, rc, "a value")) {
    if (!rc) o.top = n ? n : SIZE_MAX;
  } else {
    return args.unknown_option();
  }
  return rc;
}

// The plan of one phase: its input, the settings and where they came from, the recorded PLAN it is
// compared with, and the entries listed. Not copied: the plan lives in its scratch memory.
struct Planned : PhaseInput {
  PlanScratch scratch;
  Plan plan;
  const fmt::PlanRecord* recorded = nullptr;  // the dump's PLAN of the phase
  bool comparable = false;                    // ... made with the same policy and budget
  std::string differences;                    // "" when identical
  std::vector<uint32_t> order;                // entries largest first, then by id
  std::vector<uint32_t> identity_of;          // per entry: its identity's index in src.identities
  size_t shown = 0;                           // entries listed (--top)
  // The modeled step time of the baselines under the same costs (only when the model has them).
  std::vector<std::pair<std::string, uint64_t>> baselines;
  // The slow cost the runtime fitted to its schedule (the recorded PLAN's trial, 1.9; null: none), and the
  // modeled step times at it: this plan's and the baselines'.
  const sentinel_plan_trial* fit = nullptr;
  uint64_t fitted_step_ns = 0;
  std::vector<std::pair<std::string, uint64_t>> fitted_baselines;
};

// Whether the step-time model has what it needs: a slow-access cost and interval durations.
bool step_time_modeled(const Planned& pl) {
  return pl.src.in.costs.slow_ns_per_byte > 0 && pl.src.in.interval_ns && pl.plan.modeled_base_ns > 0;
}

// The modeled step time of the schedules the plan is set against: every policy's plan and the sentinel
// policy's schedule without moves (SENTINEL_TIER_NO_MOVES), each with the same input and costs.
std::vector<std::pair<std::string, uint64_t>> plan_baselines(const PlanInput& src) {
  std::vector<std::pair<std::string, uint64_t>> out;
  struct Baseline {
    const char* name;
    sentinel_policy policy;
    uint32_t flags;
  };
  const Baseline all[] = {{"all-fast", SENTINEL_POLICY_ALL_FAST, 0},
                          {"no-moves", SENTINEL_POLICY_SENTINEL, SENTINEL_TIER_NO_MOVES},
                          {"first-touch", SENTINEL_POLICY_FIRST_TOUCH, 0},
                          {"hot", SENTINEL_POLICY_HOT, 0},
                          {"all-slow", SENTINEL_POLICY_ALL_SLOW, 0}};
  for (const Baseline& b : all) {
    PlanInput in = src;
    in.policy = b.policy;
    in.flags |= b.flags;
    PlanScratch scratch;
    Plan plan;
    if (scratch.init(plan_scratch_bytes(in)) && make_plan(in, scratch, &plan, nullptr))
      out.emplace_back(b.name, plan.modeled_step_ns);
  }
  return out;
}

// The model at the slow cost the runtime fitted (docs/planner.md, "The fitted slow cost"): this plan's
// step (its slow access-weighted bytes and moves, priced again) and the baselines', planned at it.
void fitted_step_times(Planned& pl) {
  if (!pl.recorded || pl.recorded->trial.fit != SENTINEL_FIT_DONE || !pl.src.in.interval_ns || !pl.plan.modeled_base_ns)
    return;
  const sentinel_plan_trial& t = pl.recorded->trial;
  const Plan& plan = pl.plan;
  pl.fit = &t;
  pl.fitted_step_ns = static_cast<uint64_t>(priced_step_ns(plan, t.fit_slow_ns_per_kib, pl.move_ns_per_kib) + 0.5);
  PlanInput in = pl.src.in;
  in.costs = step_costs_of_kib(t.fit_slow_ns_per_kib, pl.move_ns_per_kib);
  pl.fitted_baselines = plan_baselines(in);
}

// The phase's plan with the settings of the command line, else those the dump recorded. 0, or 1 after one
// line on stderr.
int make_phase_plan(const Dump& d, const Options& o, Planned& pl) {
  if (int rc = phase_input(d, o, o.settings, pl)) return rc;
  const char* error = nullptr;
  if (!pl.scratch.init(plan_scratch_bytes(pl.src.in)) || !make_plan(pl.src.in, pl.scratch, &pl.plan, &error)) {
    std::cerr << kProg << ": " << printable(o.path) << ": cannot plan phase " << pl.src.in.phase << ": "
              << (error ? error : "no memory for the planner") << "\n";
    return 1;
  }
  if (step_time_modeled(pl)) pl.baselines = plan_baselines(pl.src.in);
  return 0;
}

// An entry's bytes: its identity's size, or its chunk's.
uint64_t entry_size(const Planned& pl, uint32_t i) {
  return chunk_size(pl.src.identities[pl.identity_of[i]], pl.plan.entries[i].chunk);
}

// An entry's name: the identity id, and ".chunk" for a chunk of one planned in chunks.
std::string entry_name(const sentinel_plan_entry& e) {
  return std::to_string(e.identity) + ((e.flags & SENTINEL_PLAN_CHUNK) ? "." + std::to_string(e.chunk) : "");
}

// The recorded PLAN of the phase, compared when its settings are the same; the entries' order.
void compare_and_order(const fmt::Profile& p, const Options& o, Planned& pl) {
  const sentinel_plan_header& h = pl.plan.header;
  pl.recorded = p.plan_for(h.phase);
  pl.comparable = pl.recorded && pl.recorded->header.policy == h.policy &&
                  pl.recorded->header.fast_budget_bytes == h.fast_budget_bytes &&
                  pl.recorded->header.slow_ns_per_kib == h.slow_ns_per_kib &&
                  pl.recorded->header.move_ns_per_kib == h.move_ns_per_kib && !pl.chunks_merged &&
                  !pl.intensity_dropped && !pl.intervals_cut;
  pl.differences = pl.comparable ? compare(pl.plan, *pl.recorded) : "";
  pl.order.resize(pl.plan.entry_count);
  for (uint32_t i = 0; i < pl.plan.entry_count; ++i) pl.order[i] = i;
  const auto& ids = pl.src.identities;
  // The plan's entries are the identities in order, one per chunk of an identity planned in chunks.
  for (uint32_t d = 0; d < ids.size(); ++d)
    for (uint32_t c = identity_chunks(ids[d]); c > 0; --c) pl.identity_of.push_back(d);
  std::sort(pl.order.begin(), pl.order.end(), [&](uint32_t a, uint32_t b) {
    const uint64_t x = entry_size(pl, a), y = entry_size(pl, b);
    if (x != y) return x > y;
    const sentinel_plan_entry &ea = pl.plan.entries[a], &eb = pl.plan.entries[b];
    return ea.identity != eb.identity ? ea.identity < eb.identity : ea.chunk < eb.chunk;
  });
  pl.shown = std::min<size_t>(o.top, pl.order.size());
}

void print_json_figures(std::ostream& os, const Planned& pl, const Options& o) {
  const sentinel_plan_header& h = pl.plan.header;
  const Plan& plan = pl.plan;
  os << "{\"file\":";
  json_string(os, o.path);
  os << ",\"phase\":" << h.phase << ",\"identities\":" << pl.src.identities.size()
     << ",\"chunks_merged\":" << pl.chunks_merged << ",\"intervals_cut\":" << pl.intervals_cut
     << ",\"profiled_intervals\":" << pl.profiled_intervals << ",\"policy\":";
  json_string(os, policy_name(h.policy));
  os << ",\"policy_source\":";
  json_string(os, pl.policy_source);
  os << ",\"fast_budget_bytes\":" << h.fast_budget_bytes << ",\"budget_share_ppm\":";
  if (pl.src.in.budget.share_ppm)
    os << pl.src.in.budget.share_ppm;
  else
    os << "null";
  os << ",\"budget_source\":";
  json_string(os, pl.budget_source);
  os << ",\"intervals\":" << h.intervals << ",\"lead_intervals\":" << h.lead_intervals
     << ",\"gap_intervals\":" << plan.gap_intervals << ",\"grouped\":" << (plan.grouped ? "true" : "false")
     << ",\"first_fit\":" << (plan.first_fit ? "true" : "false") << ",\"trials\":" << plan.trials
     << ",\"footprint_peak_bytes\":" << h.footprint_peak_bytes << ",\"fast_peak_bytes\":" << h.fast_peak_bytes
     << ",\"fast_pool_bytes\":" << h.fast_pool_bytes << ",\"moved_bytes_per_step\":" << h.moved_bytes_per_step
     << ",\"moves_per_step\":" << plan.moves_per_step << ",\"late_moves\":" << plan.late_moves
     << ",\"touched_bytes_per_step\":" << plan.touched_bytes << ",\"predicted_hit_ppm\":" << h.predicted_hit_ppm
     << ",\"predicted_hit_share\":" << h.predicted_hit_ppm / 1e6
     << ",\"intensity\":" << (plan.intensity ? "true" : "false")
     << ",\"weighted_bytes_per_step\":" << plan.weighted_bytes
     << ",\"predicted_weighted_hit_ppm\":" << weighted_ppm(plan) << ",\"migrate_bytes_per_s\":" << h.migrate_bytes_per_s
     << ",\"bandwidth_measured\":" << (pl.measured_bw ? "true" : "false")
     << ",\"interval_durations\":" << (pl.src.in.interval_ns ? "true" : "false") << ",\"flags\":" << h.flags;
}

// {"all-fast":N,...}: each baseline's modeled step ns.
void print_json_baselines(std::ostream& os, const std::vector<std::pair<std::string, uint64_t>>& baselines) {
  os << "{";
  for (size_t k = 0; k < baselines.size(); ++k) {
    os << (k ? "," : "");
    json_string(os, baselines[k].first);
    os << ":" << baselines[k].second;
  }
  os << "}";
}

// "all-fast 12.0 ms, no-moves 14.6 ms, ...": the text lines' list of the baselines.
std::string baselines_text(const std::vector<std::pair<std::string, uint64_t>>& baselines) {
  std::string line;
  for (const auto& [name, ns] : baselines) line += (line.empty() ? "" : ", ") + name + " " + human_duration(ns);
  return line;
}

// The step-time model: costs, objective, the plan's modeled time and its parts, the baselines'.
void print_json_step_time(std::ostream& os, const Planned& pl) {
  const Plan& plan = pl.plan;
  os << ",\"objective\":";
  json_string(os, plan.objective == PlanObjective::kStepTime ? "step time" : "fast-hit bytes");
  os << ",\"slow_ns_per_kib\":" << pl.slow_ns_per_kib << ",\"move_ns_per_kib\":" << pl.move_ns_per_kib
     << ",\"costs_source\":";
  json_string(os, pl.costs_source);
  os << ",\"fitted\":";
  if (pl.fit) {
    os << "{\"slow_ns_per_kib\":" << pl.fit->fit_slow_ns_per_kib << ",\"measured_step_ns\":" << pl.fit->fit_step_ns
       << ",\"steps\":" << pl.fit->fit_steps << ",\"step_ns\":" << pl.fitted_step_ns << ",\"baselines\":";
    print_json_baselines(os, pl.fitted_baselines);
    os << "}";
  } else {
    os << "null";
  }
  os << ",\"modeled_step\":";
  if (!step_time_modeled(pl)) {
    os << "null";
    return;
  }
  os << "{\"step_ns\":" << plan.modeled_step_ns << ",\"base_ns\":" << plan.modeled_base_ns
     << ",\"slow_ns\":" << plan.modeled_slow_ns << ",\"move_ns\":" << plan.modeled_move_ns << ",\"baselines\":";
  print_json_baselines(os, pl.baselines);
  os << "}";
}

void print_json_recorded(std::ostream& os, const Planned& pl) {
  os << ",\"recorded_plan\":";
  if (!pl.recorded) {
    os << "null";
    return;
  }
  os << "{\"policy\":";
  json_string(os, policy_name(pl.recorded->header.policy));
  os << ",\"fast_budget_bytes\":" << pl.recorded->header.fast_budget_bytes
     << ",\"compared\":" << (pl.comparable ? "true" : "false") << ",\"identical\":";
  if (pl.comparable)
    os << (pl.differences.empty() ? "true" : "false");
  else
    os << "null";
  os << ",\"differences\":";
  json_string(os, pl.differences);
  os << "}";
}

void print_json_entries(std::ostream& os, const Planned& pl) {
  const Plan& plan = pl.plan;
  os << ",\"entries\":[";
  for (size_t r = 0; r < pl.shown; ++r) {
    const uint32_t i = pl.order[r];
    const sentinel_plan_entry& e = plan.entries[i];
    const sentinel_identity& d = pl.src.identities[pl.identity_of[i]];
    os << (r ? "," : "") << "{\"identity\":" << e.identity;
    if (e.flags & SENTINEL_PLAN_CHUNK) os << ",\"chunk\":" << e.chunk << ",\"identity_size\":" << d.size;
    os << ",\"size\":" << entry_size(pl, i) << ",\"lifetime\":";
    json_string(os, lifetime_short(d.lifetime));
    os << ",\"group\":" << d.group << ",\"birth_fast\":" << ((e.flags & SENTINEL_PLAN_BIRTH_FAST) ? "true" : "false")
       << ",\"pool\":" << ((e.flags & SENTINEL_PLAN_POOL) ? "true" : "false") << ",\"fast_mask\":" << e.fast_mask
       << ",\"touch_mask\":" << e.touch_mask << ",\"alive_mask\":" << plan.alive_masks[i] << ",\"strip\":";
    json_string(os, strip_of(e, plan.alive_masks[i], plan.header.intervals));
    os << ",\"moves_in\":[" << list_of(bits_of(plan.move_in_masks[i])) << "],\"moves_out\":["
       << list_of(bits_of(plan.move_out_masks[i])) << "]}";
  }
  os << "],\"entry_count\":" << plan.entry_count << "}\n";
}

// The step-time model: the plan's modeled time and its parts, then the baselines'; one line saying
// what is missing when it has no costs or no time base.
void print_text_step_time(std::ostream& os, const Planned& pl) {
  const Plan& plan = pl.plan;
  if (!pl.src.in.interval_ns || plan.modeled_base_ns == 0) {
    os << "step time        not modeled: no interval durations\n";
    return;
  }
  if (!step_time_modeled(pl)) {
    os << "step time        not modeled: needs the costs (--slow-ns-per-kib N, --move-ns-per-kib M)\n";
    return;
  }
  os << "step time        modeled " << human_duration(plan.modeled_step_ns) << " = "
     << human_duration(plan.modeled_base_ns) << " measured + " << human_duration(plan.modeled_slow_ns)
     << " slow accesses (" << pl.slow_ns_per_kib << " ns/KiB) + " << human_duration(plan.modeled_move_ns) << " moves ("
     << pl.move_ns_per_kib << " ns/KiB, " << pl.costs_source << ")"
     << (plan.objective == PlanObjective::kStepTime ? "; the trial's objective" : "") << "\n";
  os << "baselines        " << baselines_text(pl.baselines) << "\n";
}

// The model at the runtime's fitted slow cost: what the recorded schedule measured, this plan and the
// baselines priced at it.
void print_text_fitted(std::ostream& os, const Planned& pl) {
  if (!pl.fit) return;
  os << "fitted           the runtime's schedule took " << human_duration(pl.fit->fit_step_ns) << " a step ("
     << pl.fit->fit_steps << " steady steps): slow accesses " << pl.fit->fit_slow_ns_per_kib
     << " ns/KiB; at it, this plan " << human_duration(pl.fitted_step_ns) << "; " << baselines_text(pl.fitted_baselines)
     << "\n";
}

void print_text_figures(std::ostream& os, const Planned& pl, const Options& o) {
  const sentinel_plan_header& h = pl.plan.header;
  const Plan& plan = pl.plan;
  os << "Plan of " << printable(o.path) << ", phase " << h.phase << ": policy " << policy_name(h.policy) << " ("
     << pl.policy_source << "), " << h.intervals << " intervals, " << pl.src.identities.size() << " identities"
     << (plan.entry_count != pl.src.identities.size()
             ? " (" + std::to_string(plan.entry_count) + " entries: large objects in chunks)"
             : "")
     << (pl.chunks_merged ? ", " + std::to_string(pl.chunks_merged) + " profiled in chunks planned whole (--whole)"
                          : "")
     << (pl.intervals_cut ? ", " + intervals_cut_text(pl) + " (--cut-by-time)" : "") << "\n";
  os << "budget           " << budget_text(pl.src.in.budget, h.fast_budget_bytes) << " (" << pl.budget_source
     << "); footprint peak " << human_bytes(h.footprint_peak_bytes) << "\n";
  os << "fast tier        planned peak " << human_bytes(h.fast_peak_bytes) << ", short-lived pool "
     << human_bytes(h.fast_pool_bytes) << "\n";
  os << "moves            " << human_bytes(h.moved_bytes_per_step) << " per step (" << plan.moves_per_step
     << (plan.moves_per_step == 1 ? " move, " : " moves, ") << plan.late_moves << " expected late)";
  if (h.policy == SENTINEL_POLICY_SENTINEL)
    os << "; lead " << h.lead_intervals << " intervals, gap " << plan.gap_intervals
       << (plan.grouped ? ", groups as units" : "") << (plan.first_fit ? ", first-touch placement won the trial" : "")
       << " (" << plan.trials << " trials)";
  os << "\n";
  os << "cost model       " << bandwidth_text(h.migrate_bytes_per_s)
     << (pl.measured_bw ? " measured" : " (default: no measured bandwidth)") << ", "
     << (pl.src.in.interval_ns ? "measured interval durations" : "no interval durations (lateness not timed)")
     << (pl.src.in.interval_ns && (h.flags & SENTINEL_TIER_BUDGET_TIMED)
             ? ", measured under a moving schedule (births and promotions held to the budget)"
             : "")
     << "\n";
  os << "predicted        fast-hit share " << percent(h.predicted_hit_ppm) << " of " << human_bytes(plan.touched_bytes)
     << " touched per step\n";
  if (plan.intensity)
    os << "access intensity " << percent(weighted_ppm(plan)) << " of " << human_bytes(plan.weighted_bytes)
       << " access-weighted per step fast (" << fixed2(static_cast<double>(plan.weighted_bytes) / plan.touched_bytes)
       << " passes a touched byte, SENTINEL_PROFILE_PASSES)\n";
  print_text_step_time(os, pl);
  print_text_fitted(os, pl);
  if (!pl.recorded)
    os << "recorded plan    none in the dump for phase " << h.phase << "\n";
  else if (!pl.comparable)
    os << "recorded plan    policy " << policy_name(pl.recorded->header.policy) << ", budget "
       << human_bytes(pl.recorded->header.fast_budget_bytes) << ", step costs " << pl.recorded->header.slow_ns_per_kib
       << "," << pl.recorded->header.move_ns_per_kib << " ns/KiB"
       << (pl.chunks_merged ? ", objects in chunks (planned whole here)" : "")
       << (pl.intensity_dropped ? ", access intensity (left out here)" : "")
       << (pl.intervals_cut ? ", intervals not cut by time" : "") << ": other settings, not compared\n";
  else if (pl.differences.empty())
    os << "recorded plan    identical to the recomputed one\n";
  else
    os << "recorded plan    DIFFERS from the recomputed one: " << pl.differences << "\n";
}

void print_text_entries(std::ostream& os, const Planned& pl) {
  const Plan& plan = pl.plan;
  const uint32_t intervals = plan.header.intervals;
  os << "\n"
     << (pl.shown < pl.order.size() ? "top " + std::to_string(pl.shown) + " of " : "") << pl.order.size()
     << (plan.entry_count != pl.src.identities.size() ? " entries (identities; ID.CHUNK: a chunk of one)"
                                                      : " identities")
     << " by size (F fast, S slow, - not alive; P pool, B born fast; moves: interval at whose start)\n";
  char line[256];
  std::snprintf(line, sizeof line, "%8s  %-10s %10s %6s  %-*s  %s\n", "id", "class", "size", "group",
                static_cast<int>(std::max<uint32_t>(intervals, 5)), "node", "moves");
  os << line;
  for (size_t r = 0; r < pl.shown; ++r) {
    const uint32_t i = pl.order[r];
    const sentinel_plan_entry& e = plan.entries[i];
    const sentinel_identity& d = pl.src.identities[pl.identity_of[i]];
    std::string moves;
    const auto in = bits_of(plan.move_in_masks[i]), out = bits_of(plan.move_out_masks[i]);
    if (!in.empty()) moves += "in " + list_of(in);
    if (!out.empty()) moves += (moves.empty() ? "" : "; ") + std::string("out ") + list_of(out);
    std::string flags;
    if (e.flags & SENTINEL_PLAN_POOL) flags += "P";
    if (e.flags & SENTINEL_PLAN_BIRTH_FAST) flags += "B";
    std::snprintf(line, sizeof line, "%8s  %-10s %10s %6u  %-*s %-2s %s\n", entry_name(e).c_str(),
                  lifetime_short(d.lifetime), human_bytes(entry_size(pl, i)).c_str(), d.group,
                  static_cast<int>(std::max<uint32_t>(intervals, 5)),
                  strip_of(e, plan.alive_masks[i], intervals).c_str(), flags.c_str(), moves.c_str());
    os << line;
  }
}

}  // namespace

int cmd_plan(int argc, char** argv) {
  Options o;
  SubcommandArgs args("plan", argc, argv);
  if (auto rc = read_options(args, o, print_help, [&] { return own_option(args, o); })) return *rc;
  Dump d;
  if (int rc = open_dump(args, o, nullptr, d)) return rc;
  Planned pl;
  if (int rc = make_phase_plan(d, o, pl)) return rc;
  compare_and_order(d.p, o, pl);
  fitted_step_times(pl);
  std::ostream& os = std::cout;
  if (o.json) {
    print_json_figures(os, pl, o);
    print_json_step_time(os, pl);
    print_json_recorded(os, pl);
    print_json_entries(os, pl);
  } else {
    print_text_figures(os, pl, o);
    print_text_entries(os, pl);
  }
  return finish_output();
}

}  // namespace sentinel::view
