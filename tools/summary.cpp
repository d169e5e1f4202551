// sentinel-view summary: a readable overview of one dump, or one JSON object with --json.
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "analysis.h"
#include "base/signal_names.h"
#include "cli.h"
#include "job.h"
#include "json.h"
#include "phase_select.h"
#include "profile_model.h"
#include "sentinel_build_config.h"
#include "shell_quote.h"
#include "symbolizer.h"
#include "tier/plan_input.h"
#include "tiering_model.h"
#include "view.h"
#include "warmup.h"

namespace sentinel::view {

namespace {

// "SIGTERM"; "signal N" for one without a name here.
std::string signal_text(int sig) {
  const char* name = signal_name(sig);
  return name ? name : "signal " + std::to_string(sig);
}

struct Options : SharedOptions {
  Options() { takes = kSymbols; }
  bool json = false;
  size_t top = 10;  // sites, identities and groups listed (0: all)
};

// What the steps, profile and tiering parts are about: every phase, and the one shown in detail.
struct Views {
  const StepModel& sm;
  const AccessModel& am;  // of the phase shown
  const TieringModel& tm;
};

void print_summary_help() {
  std::cout << "Usage: sentinel-view summary [--json] [--top N] [--phase N] [--no-symbols] [--debuginfod] DUMP\n"
               "Summarizes a dump: process, topology, tracked objects, peak live bytes, lifetimes,\n"
               "size classes, the top allocation sites (symbolized offline from the recorded module\n"
               "maps), the runtime's counters and, for format 1.1 dumps, the detected steps and\n"
               "every phase (profiled, planned, checked); the profiling session, the top object\n"
               "identities and the co-allocation groups of one phase; the placement of each phase.\n"
               "\n"
               "  --json         print one JSON object instead (keys: docs/sentinel-view.md)\n"
               "  --top N        number of sites, identities and groups listed (default 10; 0: all)\n"
               "  --phase N      the phase shown in detail (default: the main phase, the profiled\n"
               "                 phase the process spent the most time in)\n"
               "  --no-symbols   print frames as module+offset without opening the module files\n"
               "  --debuginfod   let libdw fetch missing debug info from DEBUGINFOD_URLS (off by default:\n"
               "                 without it DEBUGINFOD_URLS is ignored, so nothing goes to the network)\n"
               "  -h, --help     show this help\n";
}

std::string percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}

std::string size_class_label(const SizeClass& c) {
  if (c.max == 1) return "0 B";
  std::string hi = c.max ? human_bytes(c.max) : "...";
  return human_bytes(c.min) + " - " + hi;
}

std::string pad(std::string s, size_t w) {
  if (s.size() < w) s.resize(w, ' ');
  return s;
}

std::string rpad(const std::string& s, size_t w) {
  return s.size() < w ? std::string(w - s.size(), ' ') + s : s;
}

// Stats with one value per name (a later batch overrides an earlier one), in first-seen order.
std::vector<std::pair<std::string, uint64_t>> unique_stats(const fmt::Profile& p) {
  std::vector<std::pair<std::string, uint64_t>> out;
  std::map<std::string, size_t> index;
  for (const auto& s : p.stats) {
    auto [it, fresh] = index.emplace(s.name, out.size());
    if (fresh)
      out.emplace_back(s.name, s.value);
    else
      out[it->second].second = s.value;
  }
  return out;
}

std::string topology_line(const fmt::Topology& t) {
  if (!t.present) return "not recorded";
  std::ostringstream os;
  if (t.numa_available != 0) os << "NUMA not available; ";
  os << t.nodes.size() << (t.nodes.size() == 1 ? " node" : " nodes");
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const auto& n = t.nodes[i];
    os << (i ? ", " : ": ") << "node " << n.id << " (";
    if (n.flags & 2)
      os << "CPU-less";
    else
      os << n.cpu_count << (n.cpu_count == 1 ? " CPU" : " CPUs");
    if (n.flags & 1) os << ", DAX KMEM";
    os << ", " << human_bytes(n.total_bytes) << ", " << human_bytes(n.free_bytes) << " free)";
  }
  os << "; fast node ";
  if (t.fast_node >= 0)
    os << t.fast_node;
  else
    os << "none";
  os << ", slow node ";
  if (t.slow_node >= 0)
    os << t.slow_node;
  else
    os << "none";
  os << "; NUMA balancing " << (t.numa_balancing < 0 ? "unknown" : t.numa_balancing == 0 ? "off" : "on");
  return os.str();
}

std::vector<std::string> site_frames(const fmt::Profile& p, Symbolizer& sym, uint32_t id) {
  std::vector<std::string> out;
  if (const fmt::Site* s = p.find_site(id))
    for (uint64_t f : s->frames) out.push_back(sym.frame(f));
  return out;
}

// A crash's stack: its first frame is the faulting instruction itself, the others are return addresses.
std::vector<std::string> crash_frames(const fmt::Profile& p, Symbolizer& sym, const sentinel_crash& c) {
  if (c.site == UINT32_MAX) return {};
  std::vector<std::string> out = site_frames(p, sym, c.site);
  const fmt::Site* s = p.find_site(c.site);
  if (!out.empty() && s->frames.front() == c.pc) out.front() = sym.instruction(c.pc);
  return out;
}

std::string bounds_text(const fmt::IntervalTable& t) {
  std::string out;
  for (const auto& [first, end] : t.bounds)
    out += (out.empty() ? "" : " ") + ("[" + std::to_string(first) + "," + std::to_string(end) + ")");
  return out;
}

std::string opt_interval(uint32_t v) {
  return v == SENTINEL_NO_ORDINAL ? "-" : std::to_string(v);
}

uint64_t per_step(uint64_t bytes, const AccessModel& m) {
  return bytes / m.steps_used;
}

size_t listed(size_t top, size_t n) {
  return top ? std::min(top, n) : n;
}

std::string pct1(double share) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", share * 100.0);
  return b;
}

// The second line of a phase in the phase list: profiled, planned, checked (empty when none).
std::string phase_status(const PhaseSummary& ph, const PhaseTiering* t) {
  std::string out;
  if (ph.session)
    out += "profiled " + std::to_string(ph.session->profiled_steps) + " steps from step #" +
           std::to_string(ph.session->first_profiled_step) + ", ";
  else if (ph.profiled)
    out += "profiled, ";
  if (ph.profiled || ph.identities)
    out += std::to_string(ph.identities) + " identities, " + std::to_string(ph.groups) + " groups";
  if (ph.mean_passes > 0) {
    char b[96];
    std::snprintf(b, sizeof b, ", access intensity %.2f passes a touched byte", ph.mean_passes);
    out += b;
  }
  if (t && t->plan) {
    const sentinel_plan_header& h = t->plan->header;
    out += std::string(out.empty() ? "" : "; ") + "planned " + policy_name(h.policy) + ", budget " +
           human_bytes(h.fast_budget_bytes) + ", predicted fast-hit share " + pct1(h.predicted_hit_ppm / 1e6);
  }
  if (t && t->checked) {
    out += std::string(out.empty() ? "" : "; ") + "checked";
    if (auto m = t->measured_hit()) out += ": measured " + pct1(*m);
    if (t->verified)
      out += ", " + std::to_string(t->misplaced) + " of " + std::to_string(t->verified) + " objects misplaced";
  }
  return out;
}

// Steps, phases and the profiling session: lines after the object counts.
void print_steps_text(std::ostream& os, const fmt::Profile& p, const Views& v) {
  const StepModel& sm = v.sm;
  const AccessModel& am = v.am;
  // A lock that never produced a step (a pattern lost again before its first whole step, written by
  // runtimes before 1.3's last change) is not a phase: it is counted on one line, not listed.
  size_t stepless = 0;
  for (const auto& ph : sm.phases) stepless += ph.steps ? 0 : 1;
  const size_t phases = sm.phases.size() - stepless;
  uint64_t set_up_steps = 0;  // steps of set-up loops: repetitions, but not what a user counts as steps
  for (const auto& ph : sm.phases) set_up_steps += v.tm.set_up_loop(ph.phase) ? ph.steps : 0;
  os << "steps            " << sm.steps;
  if (sm.steps) {
    os << " detected in " << phases << (phases == 1 ? " phase" : " phases") << " (" << sm.inferred_steps
       << " inferred before lock-on, " << sm.explicit_steps << " marked, " << sm.profiled_steps << " profiled";
    if (set_up_steps) os << ", " << set_up_steps << " in set-up loops";
    os << ")";
  } else {
    os << (p.has_profiler_records() ? "" : " (no step records: format 1.0 or the detector never ran)");
  }
  os << "\n";
  if (sm.main() && sm.main()->steps)
    os << "per step         " << sm.allocations_per_step << " allocations, " << sm.intervals_per_step
       << " intervals (phase " << sm.main()->phase << ", the main phase)\n";
  if (!sm.phases.empty()) {
    os << "phases\n";
    for (const auto& ph : sm.phases) {
      if (!ph.steps) continue;
      os << "  phase " << ph.phase << (&ph == sm.main() ? " (main)" : "") << ": " << ph.steps
         << (ph.steps == 1 ? " step" : " steps");
      if (ph.steps) os << " (#" << ph.first_step << "-#" << ph.last_step << ")";
      os << ", " << ph.period << " allocations per step, " << ph.intervals << " intervals";
      if (ph.median_step_ns) os << ", step time " << human_duration(ph.median_step_ns);
      if (ph.profiled_steps) os << ", " << ph.profiled_steps << " profiled";
      os << "\n";
      if (ph.table && !ph.table->bounds.empty() && ph.table->bounds.size() <= 16)
        os << "    intervals (in-step ordinals) " << bounds_text(*ph.table) << "\n";
      const std::string status = phase_status(ph, v.tm.find(ph.phase));
      if (!status.empty()) os << "    " << status << "\n";
      if (v.tm.set_up_loop(ph.phase))
        os << "    a set-up loop (a model built layer by layer, data loaded into memory): its steps kept what "
              "they allocated; not profiled or planned\n";
      // The step-time model's costs, only where the plan had some (SENTINEL_STEP_COSTS, 1.4).
      if (const PhaseTiering* t = v.tm.find(ph.phase); t && t->plan)
        if (const std::string costs = step_costs_text(*t); !costs.empty()) os << "    " << costs << "\n";
      if (const auto w = warmup_of(p, ph.phase)) os << "    warm-up: " << warmup_text(*w) << "\n";
    }
    if (stepless)
      os << "  (" << stepless << (stepless == 1 ? " lock" : " locks")
         << " lost before a whole step, not counted as phases)\n";
  }
  if (const fmt::ProfileSession* s = am.session) {
    os << "profile          " << s->profiled_steps << (s->profiled_steps == 1 ? " step" : " steps") << " from step #"
       << s->first_profiled_step << " (phase " << s->phase << "), granularity " << human_bytes(s->granularity_bytes)
       << ", " << s->faults << " faults, handler " << human_duration(s->fault_handler_ns);
    if (s->faults) os << " (" << human_duration(s->fault_handler_ns / s->faults) << " per fault)";
    os << ", " << s->syscall_unprotects << " system-call unprotects\n";
    // Sampled profiling (SENTINEL_PROFILE_SAMPLE, 2026-12-04): dumps before it have no such setting.
    if (const PageSample sample = offline::recorded_sample(p, s->granularity_bytes); sample.rate > 1)
      os << "                 objects of " << human_bytes(sample.min_bytes) << " or more profiled in a sample: 1 in "
         << sample.rate << " of their pages, each touch found counted " << sample.rate << " times\n";
    os << "                 counters: ";
    if (s->counter_names.empty()) os << "none (faults only)";
    for (size_t i = 0; i < s->counter_names.size(); ++i) os << (i ? ", " : "") << printable(s->counter_names[i]);
    os << "\n";
  } else if (!p.sessions.empty()) {
    os << "profile          none for phase " << am.phase << " (profiled phases: " << profiled_phases(sm) << ")\n";
  }
  if (am.present) {
    uint64_t by_class[5] = {0, 0, 0, 0, 0};
    for (const auto& r : am.identities) ++by_class[r.id.lifetime <= 4 ? r.id.lifetime : 0];
    os << "identities       " << am.identities.size() << " (" << by_class[3] << " persistent, ";
    if (by_class[SENTINEL_LIFE_NEXT_STEP]) os << by_class[SENTINEL_LIFE_NEXT_STEP] << " into the next step, ";
    os << by_class[2] << " step-scoped, " << by_class[1] << " short-lived";
    if (by_class[0]) os << ", " << by_class[0] << " unknown";
    os << "), " << am.groups.size() << " groups, " << human_bytes(per_step(am.total_touched, am))
       << " touched per profiled step (phase " << am.phase << ")\n";
    if (am.dropped_touches)
      os << "                 note: " << am.dropped_touches
         << " touches name an unknown identity or interval and were ignored\n";
  }
}

void identity_table(std::ostream& os, const AccessModel& am, const std::vector<size_t>& order, size_t n) {
  os << "  " << rpad("id", 6) << "  " << pad("class", 12) << rpad("size", 10) << rpad("site", 7) << rpad("ordinal", 8)
     << rpad("born", 6) << rpad("dies", 6) << rpad("inst", 6) << rpad("touched/step", 14) << rpad("intervals", 10)
     << rpad("group", 7) << "\n";
  for (size_t i = 0; i < n; ++i) {
    const IdentityRow& r = am.identities[order[i]];
    os << "  " << rpad(std::to_string(r.id.id), 6) << "  " << pad(lifetime_name(r.id.lifetime), 12)
       << rpad(human_bytes(r.id.size), 10) << rpad(r.id.site == UINT32_MAX ? "-" : std::to_string(r.id.site), 7)
       << rpad(opt_interval(r.id.ordinal), 8) << rpad(opt_interval(r.id.birth_interval), 6)
       << rpad(opt_interval(r.id.death_interval), 6) << rpad(std::to_string(r.id.instances), 6)
       << rpad(human_bytes(per_step(r.touched, am)), 14) << rpad(std::to_string(r.intervals_touched), 10)
       << rpad(std::to_string(r.id.group), 7) << "\n";
  }
}

void print_access_text(std::ostream& os, const AccessModel& am, const Options& o) {
  if (!am.present) return;
  auto by_size = identities_by_size(am);
  size_t n = listed(o.top, by_size.size());
  os << "\ntop " << n << " of " << am.identities.size() << " identities of phase " << am.phase << " by bytes"
     << " (born/dies: interval; '-': outside the step; touched/step: mean over " << am.steps_used
     << (am.steps_used == 1 ? " profiled step)\n" : " profiled steps)\n");
  identity_table(os, am, by_size, n);
  auto by_touch = identities_by_touches(am);
  n = listed(o.top, by_touch.size());
  os << "\ntop " << n << " of " << by_touch.size() << " touched identities of phase " << am.phase
     << " by bytes touched\n";
  identity_table(os, am, by_touch, n);
  std::vector<size_t> gorder(am.groups.size());
  for (size_t i = 0; i < gorder.size(); ++i) gorder[i] = i;
  std::sort(gorder.begin(), gorder.end(), [&](size_t x, size_t y) {
    if (am.groups[x].g.bytes != am.groups[y].g.bytes) return am.groups[x].g.bytes > am.groups[y].g.bytes;
    return am.groups[x].g.id < am.groups[y].g.id;
  });
  n = listed(o.top, gorder.size());
  os << "\ntop " << n << " of " << am.groups.size() << " co-allocation groups of phase " << am.phase << " by bytes\n";
  os << "  " << rpad("group", 6) << "  " << pad("class", 12) << rpad("members", 8) << rpad("bytes", 11)
     << rpad("touched/step", 14) << "  intervals touched\n";
  for (size_t i = 0; i < n; ++i) {
    const GroupRow& g = am.groups[gorder[i]];
    os << "  " << rpad(std::to_string(g.g.id), 6) << "  " << pad(lifetime_name(g.g.lifetime), 12)
       << rpad(std::to_string(g.g.members), 8) << rpad(human_bytes(g.g.bytes), 11)
       << rpad(human_bytes(per_step(g.touched, am)), 14) << "  " << (g.interval_list.empty() ? "none" : g.interval_list)
       << "\n";
  }
}

// The dump, the process, the topology and the configuration.
void print_process_text(std::ostream& os, const fmt::Profile& p, const Options& o) {
  os << "Sentinel profile " << printable(o.path) << " (format " << p.major << "." << p.minor << ", "
     << unsigned{p.pointer_size} * 8 << "-bit writer, " << p.record_count << " records, " << human_bytes(p.file_size)
     << ")\n\n";

  const auto& pr = p.process;
  if (pr.present) {
    os << "process      pid " << pr.pid << ", ppid " << pr.ppid;
    if (pr.rank >= 0) os << ", rank " << pr.rank;
    if (pr.flags & SENTINEL_PROCESS_FORKED_CHILD) os << ", forked child";
    if (pr.flags & SENTINEL_PROCESS_ENDED_BY_SIGNAL)
      os << ", ended by " << signal_text(static_cast<int>(SENTINEL_PROCESS_SIGNAL(pr.flags)))
         << " (the dump was written as it ended the process)";
    if (pr.flags & SENTINEL_PROCESS_SNAPSHOT)
      os << ", snapshot (written while the process ran on: steps, profiles and plans so far)";
    os << "\n";
    os << "executable   " << printable(pr.executable.empty() ? "(unknown)" : pr.executable) << "\n";
    std::string cmd;
    for (const auto& arg : pr.argv) cmd += (cmd.empty() ? "" : " ") + shell_quote(arg);
    os << "command      " << printable(cmd) << "\n";
    auto d = pr.duration_ns();
    os << "duration     " << (d ? human_duration(*d) : std::string("unknown")) << "\n";
  } else {
    os << "process      not recorded\n";
  }
  os << "topology     " << topology_line(p.topology) << "\n";
  if (!p.config.empty()) {
    os << "config      ";
    for (const auto& [k, v] : p.config) os << " " << printable(k) << "=" << printable(shell_quote(v));
    os << "\n";
  }
  os << "\n";
}

// "SIGSEGV (code 2) at 0x10 in thread 42": the CRASH entry's head line.
std::string crash_text(const sentinel_crash& c) {
  std::ostringstream os;
  os << signal_text(static_cast<int>(c.signal)) << " (";
  if (const char* name = c.code > 0 ? fault_code_name(static_cast<int>(c.signal), c.code) : nullptr)
    os << name;
  else
    os << (c.code == SI_TKILL ? "SI_TKILL, raised by the process" : "si_code " + std::to_string(c.code));
  os << ")";
  if (c.address) os << " at address 0x" << std::hex << c.address << std::dec;
  os << " in thread " << c.thread;
  return os.str();
}

// The crash that ended the process (1.11): where, with its stack symbolized offline.
void print_crash_text(std::ostream& os, const fmt::Profile& p, Symbolizer& sym) {
  if (p.crash.empty()) return;
  const sentinel_crash& c = p.crash.front();
  os << "crash        " << crash_text(c) << "; its stack:\n";
  auto frames = crash_frames(p, sym, c);
  if (frames.empty()) os << "      0  " << sym.instruction(c.pc) << "\n";
  for (size_t k = 0; k < frames.size(); ++k) os << "      " << k << "  " << frames[k] << "\n";
  os << "\n";
}

// Objects, bytes, sites, modules and the sentinel_step() marks.
void print_objects_text(std::ostream& os, const fmt::Profile& p, const Analysis& a) {
  os << "objects          " << a.objects << " tracked, " << a.alive_objects << " still alive at exit ("
     << human_bytes(a.alive_bytes) << ")\n";
  os << "tracked bytes    " << human_bytes(a.tracked_bytes) << " (" << a.tracked_bytes << ")\n";
  os << "peak live bytes  " << human_bytes(a.peak_live_bytes) << " (" << a.peak_live_bytes << ")\n";
  os << "sites            " << p.sites.size() << "\n";
  os << "modules          " << p.modules.size() << "\n";
  os << "marked steps     " << p.marks.size();
  if (!a.allocations_per_marked_step.empty()) {
    os << " (allocations per step:";
    size_t shown = 0;
    for (uint64_t n : a.allocations_per_marked_step) {
      if (shown++ == 20) {
        os << " ...";
        break;
      }
      os << " " << n;
    }
    os << ")";
  }
  os << "\n";
}

// The objects by lifetime and by size class.
void print_lifetimes_sizes_text(std::ostream& os, const Analysis& a) {
  os << "\nlifetimes\n";
  for (size_t i = 0; i < kLifetimeBuckets; ++i) {
    const Bucket& b = a.lifetimes[i];
    if (!b.objects) continue;
    os << "  " << pad(kLifetimeLabels[i], 16) << rpad(std::to_string(b.objects), 10)
       << (b.objects == 1 ? " object   " : " objects  ") << rpad(human_bytes(b.bytes), 10) << "  "
       << rpad(percent(b.bytes, a.tracked_bytes), 7) << " of bytes\n";
  }
  os << "\nsizes\n";
  for (const SizeClass& c : a.size_classes)
    os << "  " << pad(size_class_label(c), 22) << rpad(std::to_string(c.b.objects), 10)
       << (c.b.objects == 1 ? " object   " : " objects  ") << rpad(human_bytes(c.b.bytes), 10) << "  "
       << rpad(percent(c.b.bytes, a.tracked_bytes), 7) << " of bytes\n";
}

// The top allocation sites with their symbolized frames, and what the symbolizer noted.
void print_sites_text(std::ostream& os, const fmt::Profile& p, const Analysis& a, Symbolizer& sym, const Options& o) {
  size_t n = o.top ? std::min(o.top, a.sites.size()) : a.sites.size();
  os << "\ntop " << n << " of " << a.sites.size() << " allocation sites by bytes\n";
  for (size_t i = 0; i < n; ++i) {
    const SiteUsage& s = a.sites[i];
    os << "  #" << i + 1 << "  ";
    if (s.id == UINT32_MAX)
      os << "unknown site";
    else
      os << "site " << s.id;
    os << ": " << human_bytes(s.bytes) << " (" << percent(s.bytes, a.tracked_bytes) << ") in " << s.objects
       << (s.objects == 1 ? " object\n" : " objects\n");
    if (s.id == UINT32_MAX) continue;
    auto frames = site_frames(p, sym, s.id);
    if (!p.find_site(s.id)) os << "        (site not in the dump)\n";
    for (size_t k = 0; k < frames.size(); ++k) os << "      " << k << "  " << frames[k] << "\n";
  }
  for (const auto& msg : sym.problems()) os << "  note: " << msg << "\n";
}

// The runtime's counters (byte counts also in human units) and the tracking overhead.
void print_counters_text(std::ostream& os, const fmt::Profile& p, const Analysis& a) {
  auto stats = unique_stats(p);
  if (stats.empty()) return;
  os << "\nruntime counters\n";
  size_t w = 0;
  for (const auto& [k, v] : stats) w = std::max(w, k.size());
  for (const auto& [k, v] : stats) {
    os << "  " << pad(printable(k), w + 2) << v;
    if (k.size() > 6 && k.compare(k.size() - 6, 6, "_bytes") == 0 && v >= 1024) os << " (" << human_bytes(v) << ")";
    os << "\n";
  }
  if (auto ov = p.stat("overhead_bytes")) {
    os << "  tracking overhead " << human_bytes(*ov) << " = " << percent(*ov, a.tracked_bytes) << " of tracked bytes, "
       << percent(*ov, a.peak_live_bytes) << " of peak live bytes\n";
  }
}

void print_text(const fmt::Profile& p, const Analysis& a, Symbolizer& sym, const Options& o, const Views& v) {
  std::ostream& os = std::cout;
  print_process_text(os, p, o);
  print_crash_text(os, p, sym);
  print_objects_text(os, p, a);
  print_steps_text(os, p, v);
  if (a.objects) {
    print_lifetimes_sizes_text(os, a);
    print_sites_text(os, p, a, sym, o);
  }
  print_access_text(os, v.am, o);
  print_tiering_text(os, v.tm);
  print_counters_text(os, p, a);
  if (p.skipped_records)
    os << "\n(" << p.skipped_records << " records of types this reader does not know were skipped)\n";
}

void json_opt(std::ostream& os, uint32_t v) {
  if (v == SENTINEL_NO_ORDINAL)
    os << "null";
  else
    os << v;
}

void identity_json(std::ostream& os, const AccessModel& am, const IdentityRow& r) {
  os << "{\"id\":" << r.id.id << ",\"site\":";
  if (r.id.site == UINT32_MAX)
    os << -1;
  else
    os << r.id.site;
  os << ",\"size\":" << r.id.size << ",\"ordinal\":";
  json_opt(os, r.id.ordinal);
  os << ",\"phase\":" << r.id.phase << ",\"group\":" << r.id.group
     << ",\"lifetime\":" << json_quote(lifetime_short(r.id.lifetime)) << ",\"birth_interval\":";
  json_opt(os, r.id.birth_interval);
  os << ",\"death_interval\":";
  json_opt(os, r.id.death_interval);
  os << ",\"instances\":" << r.id.instances << ",\"touched_bytes\":" << r.touched
     << ",\"touched_bytes_per_step\":" << per_step(r.touched, am) << ",\"intervals_touched\":" << r.intervals_touched
     << ",\"faults\":" << r.faults << "}";
}

void session_json(std::ostream& os, const fmt::ProfileSession* s) {
  if (!s) {
    os << "null";
    return;
  }
  os << "{\"granularity_bytes\":" << s->granularity_bytes << ",\"profiled_steps\":" << s->profiled_steps
     << ",\"phase\":" << s->phase << ",\"first_profiled_step\":" << s->first_profiled_step
     << ",\"faults\":" << s->faults << ",\"fault_handler_ns\":" << s->fault_handler_ns
     << ",\"syscall_unprotects\":" << s->syscall_unprotects << ",\"counters\":[";
  for (size_t i = 0; i < s->counter_names.size(); ++i) os << (i ? "," : "") << json_quote(s->counter_names[i]);
  os << "]}";
}

// "warmup": the steps spent locking, profiling, trialling and checking (warmup.h); null without a live step.
void print_warmup_json(std::ostream& os, const std::optional<Warmup>& w) {
  os << ",\"warmup\":";
  if (!w) {
    os << "null";
    return;
  }
  os << "{\"lock_step\":" << w->lock_step << ",\"found_before\":" << w->found_before
     << ",\"profiled_steps\":" << w->profiled << ",\"first_profiled\":" << w->first_profiled
     << ",\"checked_steps\":" << w->checked << ",\"first_checked\":" << w->first_checked
     << ",\"trial_steps\":" << w->trial_steps << ",\"steady_from\":" << w->steady_from
     << ",\"steps_to_steady\":" << w->steps_to_steady
     << ",\"ended_in_warmup\":" << (w->ended_in_warmup ? "true" : "false")
     << ",\"steady_step_ns\":" << w->steady_step_ns << ",\"profiled_cost\":";
  auto known = [](double x) { return x > 0 ? std::optional<double>(x) : std::nullopt; };  // 0: unknown
  json_optional(os, known(w->profiled_cost));
  os << ",\"checked_cost\":";
  json_optional(os, known(w->checked_cost));
  os << "}";
}

void print_steps_json(std::ostream& os, const fmt::Profile& p, const Views& v, const Options& o) {
  const StepModel& sm = v.sm;
  const AccessModel& am = v.am;
  os << ",\"steps\":" << sm.steps << ",\"allocations_per_step\":" << sm.allocations_per_step
     << ",\"intervals_per_step\":" << sm.intervals_per_step;
  uint64_t profiled = sm.profiled_steps;
  if (!profiled)
    for (const auto& s : p.sessions) profiled += s.profiled_steps;
  os << ",\"profiled_steps\":" << profiled;
  os << ",\"step_flags\":{\"explicit\":" << sm.explicit_steps << ",\"inferred\":" << sm.inferred_steps
     << ",\"new_phase\":" << sm.new_phase_steps << ",\"profiled\":" << sm.profiled_steps << "}";
  os << ",\"phases\":[";
  for (size_t i = 0; i < sm.phases.size(); ++i) {
    const auto& ph = sm.phases[i];
    os << (i ? "," : "") << "{\"phase\":" << ph.phase << ",\"steps\":" << ph.steps
       << ",\"first_step\":" << ph.first_step << ",\"last_step\":" << ph.last_step
       << ",\"allocations_per_step\":" << ph.period << ",\"intervals_per_step\":" << ph.intervals
       << ",\"profiled_steps\":" << ph.profiled_steps << ",\"median_step_ns\":" << ph.median_step_ns
       << ",\"intervals\":[";
    if (ph.table)
      for (size_t k = 0; k < ph.table->bounds.size(); ++k)
        os << (k ? "," : "") << "[" << ph.table->bounds[k].first << "," << ph.table->bounds[k].second << "]";
    os << "],\"main\":" << (&ph == sm.main() ? "true" : "false") << ",\"profiled\":" << (ph.profiled ? "true" : "false")
       << ",\"set_up_loop\":" << (v.tm.set_up_loop(ph.phase) ? "true" : "false") << ",\"profile\":";
    session_json(os, ph.session);
    os << ",\"identities\":" << ph.identities << ",\"groups\":" << ph.groups << ",\"mean_passes\":" << ph.mean_passes;
    // The phase's wall-clock span, and where its steady state starts: the warm-up's end (warmup.h;
    // 0: unknown, it never ended, or that step has no time), or the phase's start without a live step.
    uint64_t first_ns = 0, last_ns = 0;
    for (size_t k = ph.first_step; k <= ph.last_step && k < p.steps.size(); ++k) {
      const sentinel_step_entry& st = p.steps[k];
      if (st.phase != ph.phase || !st.start_ns) continue;
      if (!first_ns) first_ns = st.start_ns;
      last_ns = st.start_ns;
    }
    const std::optional<Warmup> warmup = warmup_of(p, ph.phase);
    uint64_t steady_ns = first_ns;
    if (warmup) steady_ns = warmup->ended_in_warmup ? 0 : p.steps[warmup->steady_from].start_ns;
    os << ",\"first_step_ns\":" << first_ns << ",\"last_step_ns\":" << last_ns << ",\"steady_from_ns\":" << steady_ns;
    print_warmup_json(os, warmup);
    print_phase_tiering_json(os, v.tm.find(ph.phase));
    os << "}";
  }
  os << "],\"main_phase\":";
  if (sm.main())
    os << sm.main()->phase;
  else
    os << "null";
  os << ",\"phase\":" << am.phase;
  const fmt::ProfileSession* s = am.session;
  os << ",\"granularity_bytes\":" << (s ? s->granularity_bytes : 0) << ",\"faults\":" << (s ? s->faults : 0)
     << ",\"profile\":";
  session_json(os, s);
  os << ",\"identity_count\":" << am.identities.size() << ",\"group_count\":" << am.groups.size()
     << ",\"touched_bytes_per_step\":" << per_step(am.total_touched, am)
     << ",\"dropped_touches\":" << am.dropped_touches << ",\"interval_ns\":[";
  for (size_t i = 0; i < am.interval_ns.size(); ++i)
    os << (i ? "," : "") << static_cast<uint64_t>(am.interval_ns[i] + 0.5);
  os << "]";
  auto by_size = identities_by_size(am);
  os << ",\"top_identities\":[";
  for (size_t i = 0, n = listed(o.top, by_size.size()); i < n; ++i) {
    if (i) os << ",";
    identity_json(os, am, am.identities[by_size[i]]);
  }
  auto by_touch = identities_by_touches(am);
  os << "],\"top_identities_by_touches\":[";
  for (size_t i = 0, n = listed(o.top, by_touch.size()); i < n; ++i) {
    if (i) os << ",";
    identity_json(os, am, am.identities[by_touch[i]]);
  }
  os << "],\"groups\":[";
  std::vector<size_t> gorder(am.groups.size());
  for (size_t i = 0; i < gorder.size(); ++i) gorder[i] = i;
  std::sort(gorder.begin(), gorder.end(), [&](size_t x, size_t y) {
    if (am.groups[x].g.bytes != am.groups[y].g.bytes) return am.groups[x].g.bytes > am.groups[y].g.bytes;
    return am.groups[x].g.id < am.groups[y].g.id;
  });
  for (size_t i = 0, n = listed(o.top, gorder.size()); i < n; ++i) {
    const GroupRow& g = am.groups[gorder[i]];
    os << (i ? "," : "") << "{\"id\":" << g.g.id << ",\"lifetime\":" << json_quote(lifetime_short(g.g.lifetime))
       << ",\"members\":" << g.g.members << ",\"bytes\":" << g.g.bytes
       << ",\"intervals\":" << json_quote(g.interval_list) << ",\"intervals_touched\":" << g.intervals_touched
       << ",\"touched_bytes_per_step\":" << per_step(g.touched, am) << ",\"interval_mask\":" << g.g.interval_mask
       << "}";
  }
  os << "]";
}

// "crash": null, or {signal, code, address, pc, thread, frames}.
void print_crash_json(std::ostream& os, const fmt::Profile& p, Symbolizer& sym) {
  os << ",\"crash\":";
  if (p.crash.empty()) {
    os << "null";
    return;
  }
  const sentinel_crash& c = p.crash.front();
  os << "{\"signal\":" << c.signal << ",\"code\":" << c.code << ",\"address\":" << c.address << ",\"pc\":" << c.pc
     << ",\"thread\":" << c.thread << ",\"frames\":[";
  auto frames = crash_frames(p, sym, c);
  for (size_t k = 0; k < frames.size(); ++k) os << (k ? "," : "") << json_quote(frames[k]);
  os << "]}";
}

void print_json(const fmt::Profile& p, const Analysis& a, Symbolizer& sym, const Options& o, const Views& v) {
  std::ostream& os = std::cout;
  const auto& pr = p.process;
  os << "{\"version\":" << json_quote(std::to_string(p.major) + "." + std::to_string(p.minor));
  os << ",\"sentinel_view_version\":" << json_quote(SENTINEL_VERSION);
  os << ",\"file\":" << json_quote(o.path);
  os << ",\"file_size\":" << p.file_size;
  os << ",\"pointer_size\":" << unsigned{p.pointer_size};
  os << ",\"records\":" << p.record_count;
  os << ",\"skipped_records\":" << p.skipped_records;
  if (pr.present) {
    os << ",\"pid\":" << pr.pid << ",\"ppid\":" << pr.ppid << ",\"rank\":" << pr.rank
       << ",\"forked_child\":" << ((pr.flags & SENTINEL_PROCESS_FORKED_CHILD) ? "true" : "false")
       << ",\"ended_by_signal\":"
       << ((pr.flags & SENTINEL_PROCESS_ENDED_BY_SIGNAL) ? SENTINEL_PROCESS_SIGNAL(pr.flags) : 0)
       << ",\"snapshot\":" << ((pr.flags & SENTINEL_PROCESS_SNAPSHOT) ? "true" : "false");
    print_crash_json(os, p, sym);
    os << ",\"executable\":" << json_quote(pr.executable) << ",\"argv\":[";
    for (size_t i = 0; i < pr.argv.size(); ++i) os << (i ? "," : "") << json_quote(pr.argv[i]);
    os << "]";
    auto d = pr.duration_ns();
    os << ",\"duration_ns\":";
    if (d)
      os << *d;
    else
      os << "null";
  } else {
    os << ",\"pid\":null";
  }
  const auto& t = p.topology;
  os << ",\"topology\":";
  if (t.present) {
    os << "{\"numa_available\":" << (t.numa_available == 0 ? "true" : "false")
       << ",\"numa_balancing\":" << t.numa_balancing << ",\"fast_node\":" << t.fast_node
       << ",\"slow_node\":" << t.slow_node << ",\"nodes\":[";
    for (size_t i = 0; i < t.nodes.size(); ++i) {
      const auto& n = t.nodes[i];
      os << (i ? "," : "") << "{\"id\":" << n.id << ",\"cpus\":" << n.cpu_count << ",\"total_bytes\":" << n.total_bytes
         << ",\"free_bytes\":" << n.free_bytes << ",\"dax_kmem\":" << ((n.flags & 1) ? "true" : "false")
         << ",\"cpu_less\":" << ((n.flags & 2) ? "true" : "false") << "}";
    }
    os << "]}";
  } else {
    os << "null";
  }
  os << ",\"config\":{";
  {
    std::map<std::string, std::string> cfg;  // last value wins, keys unique
    for (const auto& [k, v] : p.config) cfg[k] = v;
    bool first = true;
    for (const auto& [k, v] : cfg) {
      os << (first ? "" : ",") << json_quote(k) << ":" << json_quote(v);
      first = false;
    }
  }
  os << "}";
  os << ",\"objects\":" << a.objects << ",\"alive_objects\":" << a.alive_objects << ",\"alive_bytes\":" << a.alive_bytes
     << ",\"tracked_bytes\":" << a.tracked_bytes << ",\"peak_live_bytes\":" << a.peak_live_bytes
     << ",\"sites\":" << p.sites.size() << ",\"modules\":" << p.modules.size()
     << ",\"steps_marked\":" << p.marks.size();
  os << ",\"allocations_per_marked_step\":[";
  for (size_t i = 0; i < a.allocations_per_marked_step.size(); ++i)
    os << (i ? "," : "") << a.allocations_per_marked_step[i];
  os << "]";
  print_steps_json(os, p, v, o);
  os << ",\"lifetimes\":[";
  for (size_t i = 0; i < kLifetimeBuckets; ++i)
    os << (i ? "," : "") << "{\"bucket\":" << json_quote(kLifetimeLabels[i])
       << ",\"objects\":" << a.lifetimes[i].objects << ",\"bytes\":" << a.lifetimes[i].bytes << "}";
  os << "]";
  os << ",\"size_classes\":[";
  for (size_t i = 0; i < a.size_classes.size(); ++i) {
    const auto& c = a.size_classes[i];
    os << (i ? "," : "") << "{\"min\":" << c.min << ",\"max\":";
    if (c.max)
      os << c.max;
    else
      os << "null";
    os << ",\"objects\":" << c.b.objects << ",\"bytes\":" << c.b.bytes << "}";
  }
  os << "]";
  size_t n = o.top ? std::min(o.top, a.sites.size()) : a.sites.size();
  os << ",\"top_sites\":[";
  for (size_t i = 0; i < n; ++i) {
    const SiteUsage& s = a.sites[i];
    os << (i ? "," : "") << "{\"id\":";
    if (s.id == UINT32_MAX)
      os << -1;
    else
      os << s.id;
    os << ",\"objects\":" << s.objects << ",\"bytes\":" << s.bytes << ",\"frames\":[";
    auto frames = s.id == UINT32_MAX ? std::vector<std::string>{} : site_frames(p, sym, s.id);
    for (size_t k = 0; k < frames.size(); ++k) os << (k ? "," : "") << json_quote(frames[k]);
    os << "]}";
  }
  os << "]";
  print_tiering_json(os, v.tm);
  os << ",\"stats\":{";
  auto stats = unique_stats(p);
  for (size_t i = 0; i < stats.size(); ++i)
    os << (i ? "," : "") << json_quote(stats[i].first) << ":" << stats[i].second;
  os << "}";
  os << ",\"symbolization_notes\":[";
  for (size_t i = 0; i < sym.problems().size(); ++i) os << (i ? "," : "") << json_quote(sym.problems()[i]);
  os << "]}\n";
}

// --json, --top N.
int own_option(SubcommandArgs& args, Options& o) {
  int rc = 0;
  if (args.arg() == "--json")
    o.json = true;
  else if (!args.count_option("--top", o.top, rc))
    return args.unknown_option();
  return rc;
}

}  // namespace

int cmd_summary(int argc, char** argv) {
  Options o;
  SubcommandArgs args("summary", argc, argv);
  if (auto rc = read_options(args, o, print_summary_help, [&] { return own_option(args, o); })) return *rc;
  if (is_job(args.operands())) return job_summary(args.operands(), o.json);
  Dump d;
  if (int rc = open_dump(args, o, nullptr, d)) return rc;
  Analysis a = analyze(d.p);
  AccessModel am = model_access(d.p, d.phase);
  TieringModel tm = model_tiering(d.p, d.phase);
  Symbolizer sym(d.p, o.symbols);
  const Views v{d.sm, am, tm};
  if (o.json)
    print_json(d.p, a, sym, o, v);
  else
    print_text(d.p, a, sym, o, v);
  return finish_output();
}

}  // namespace sentinel::view
