// sentinel-view trace: the dump as Chrome trace-event JSON (the "JSON Array/Object Format" that
// Perfetto and chrome://tracing open). Objects are complete slices ("ph":"X") on one track per
// allocating thread, spread over lanes so that no two slices of a track overlap; steps and intervals
// are slices on tracks of their own with instant markers at their starts; the live tracked bytes are a
// counter ("ph":"C"). Times are microseconds since the process started.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "analysis.h"
#include "cli.h"
#include "json.h"
#include "phase_select.h"
#include "profile_model.h"
#include "symbolizer.h"
#include "view.h"

namespace sentinel::view {

namespace {

struct Options {
  bool symbols = true;
  bool debuginfod = false;
  size_t max_intervals = 100000;  // interval slices written at most
  int64_t phase = -1;             // --phase N: only that phase's time span (-1: the whole run)
  std::string path, out;
};

void print_help() {
  std::cout
      << "Usage: sentinel-view trace [-o FILE.json] [--phase N] [--no-symbols] [--max-intervals N] DUMP\n"
         "Writes the dump as Chrome trace-event JSON, for https://ui.perfetto.dev or\n"
         "chrome://tracing: every tracked object is a slice from its birth to its death on a track\n"
         "of its allocating thread (lanes keep slices from overlapping), steps and intervals are\n"
         "slices and instant markers, and the live tracked bytes are a counter.\n"
         "\n"
         "  -o FILE        output file (default: DUMP.trace.json; '-': standard output)\n"
         "  --phase N      only phase N: its steps, intervals and migration batches, and the\n"
         "                 objects and marks of its time span (default: the whole run)\n"
         "  --no-symbols   name objects by site id instead of their symbolized allocating frame\n"
         "  --debuginfod   let libdw fetch missing debug info (see summary --help)\n"
         "  --max-intervals N  interval slices written at most (default 100000; 0: none)\n"
         "  -h, --help     show this help\n";
}

constexpr uint32_t kTidSteps = 1;
constexpr uint32_t kTidIntervals = 2;
constexpr uint32_t kTidMarks = 3;
constexpr uint32_t kTidMigrations = 4;  // first migration-batch track (lanes up to kTidObjects)
constexpr uint32_t kTidObjects = 100;  // first object track

class Writer {
 public:
  Writer(std::ostream& os, uint64_t t0, uint32_t pid) : os_(os), t0_(t0), pid_(pid) {}
  std::string ts(uint64_t ns) const {
    char buf[40];
    uint64_t d = ns > t0_ ? ns - t0_ : 0;
    std::snprintf(buf, sizeof buf, "%llu.%03llu", static_cast<unsigned long long>(d / 1000),
                  static_cast<unsigned long long>(d % 1000));
    return buf;
  }
  std::string dur(uint64_t from, uint64_t to) const {
    uint64_t d = to > from ? to - from : 0;
    char buf[40];
    std::snprintf(buf, sizeof buf, "%llu.%03llu", static_cast<unsigned long long>(d / 1000),
                  static_cast<unsigned long long>(d % 1000));
    return buf;
  }
  // Starts an event object with the common fields; the caller appends fields and calls end().
  std::ostream& begin(const char* ph, const std::string& name, uint32_t tid) {
    os_ << (first_ ? "\n" : ",\n") << "{\"ph\":\"" << ph << "\",\"pid\":" << pid_ << ",\"tid\":" << tid
        << ",\"name\":" << json_quote(name);
    first_ = false;
    ++events_;
    return os_;
  }
  void end() { os_ << "}"; }
  void meta(const char* what, uint32_t tid, const std::string& key, const std::string& value_json) {
    begin("M", what, tid) << ",\"args\":{" << json_quote(key) << ":" << value_json << "}";
    end();
  }
  uint64_t events() const { return events_; }

 private:
  std::ostream& os_;
  uint64_t t0_;
  uint32_t pid_;
  bool first_ = true;
  uint64_t events_ = 0;
};

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// A short name for a frame: the function without its argument list, at most 60 characters.
std::string short_frame(const std::string& f) {
  std::string s = f;
  auto paren = s.find(" (");
  if (paren != std::string::npos) s = s.substr(0, paren);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

// The identity of every object (nullopt: none): an object born in a step has the identity of its
// step's phase; one born outside the steps has an identity of `shown` (the phase the trace is of, or
// the main phase), the only phase whose outside identities are matched.
std::vector<std::optional<sentinel_identity>> object_identity_table(const fmt::Profile& p, const StepModel& sm,
                                                                    uint32_t shown) {
  std::vector<std::optional<sentinel_identity>> out(p.objects.size());
  std::vector<uint32_t> phases{shown};
  for (const auto& ph : sm.phases)
    if (ph.phase != shown && ph.identities) phases.push_back(ph.phase);
  for (uint32_t phase : phases) {
    const AccessModel am = model_access(p, phase);
    const auto ids = object_identities(p, am);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (out[i] || ids[i] == SIZE_MAX) continue;
      const sentinel_identity& id = am.identities[ids[i]].id;
      if (phase == shown || id.ordinal != SENTINEL_NO_ORDINAL) out[i] = id;
    }
  }
  return out;
}

}  // namespace

int cmd_trace(int argc, char** argv) {
  Options o;
  SubcommandArgs args("trace", argc, argv);
  int rc = 0;
  while (args.next_option()) {
    if (args.symbol_option(o.symbols, o.debuginfod)) continue;
    if (args.output_option(o.out, rc) || args.phase_option(o.phase, rc)) {
      if (rc) return rc;
      continue;
    }
    std::string v;
    if (args.is_help()) {
      print_help();
      return finish_output();
    } else if (args.is("--max-intervals")) {
      if (!args.value("--max-intervals", v)) return args.error("--max-intervals needs a number");
      if (!parse_count(v, o.max_intervals))
        return args.error("--max-intervals: not a number: '" + v + "'");
    } else {
      return args.unknown_option();
    }
  }
  if ((rc = args.dump(o.path)) || (rc = args.default_output(o.path, o.out, ".trace.json"))) return rc;
  if (!o.debuginfod) unsetenv("DEBUGINFOD_URLS");
  auto profile = load_profile(o.path);
  if (!profile) return 1;
  const fmt::Profile& p = *profile;
  StepModel sm = model_steps(p);
  const auto shown = select_phase(sm, o.phase, o.path);
  if (!shown) return 1;
  const bool one_phase = o.phase >= 0;
  const auto obj_id = object_identity_table(p, sm, *shown);
  SeqClock clock(p);
  Symbolizer sym(p, o.symbols);

  // The time line: from the process start (or the first birth) to its end (or the last event).
  uint64_t first = UINT64_MAX, last = 0;
  for (const auto& ob : p.objects) {
    first = std::min(first, ob.birth_ns);
    last = std::max({last, ob.birth_ns, ob.death_ns});
  }
  for (const auto& s : p.steps)
    if (s.start_ns) {
      first = std::min(first, s.start_ns);
      last = std::max(last, s.start_ns);
    }
  for (const auto& m : p.marks) {
    first = std::min(first, m.monotonic_ns);
    last = std::max(last, m.monotonic_ns);
  }
  for (const auto& b : p.migration_log) {
    first = std::min(first, b.start_ns);
    last = std::max({last, b.start_ns, b.end_ns});
  }
  if (first == UINT64_MAX) first = 0;
  uint64_t t0 = first;
  if (p.process.present && p.process.start_monotonic_ns && p.process.start_monotonic_ns <= first)
    t0 = p.process.start_monotonic_ns;
  uint64_t t_end = last;
  if (p.process.present && p.process.end_monotonic_ns >= last) t_end = p.process.end_monotonic_ns;
  const uint32_t pid = p.process.present ? p.process.pid : 1;
  // --phase N: the span of its steps, from the first one's start to the last one's end (its
  // migration batches are written wherever they fall).
  uint64_t lo = 0, hi = UINT64_MAX;
  if (one_phase) {
    lo = UINT64_MAX;
    hi = 0;
    for (size_t k = 0; k < p.steps.size(); ++k) {
      if (p.steps[k].phase != *shown) continue;
      auto [a, b] = step_span(p, clock, k, t_end);
      lo = std::min(lo, a);
      hi = std::max(hi, b);
    }
    if (lo > hi) lo = hi = 0;  // a phase without steps: nothing but its batches
  }
  auto in_window = [&](uint64_t from, uint64_t to) { return !one_phase || (from <= hi && to >= lo && hi > 0); };
  uint64_t steps_written = 0, objects_written = 0;

  OutputFile out;
  if (!out.open(o.out)) return 1;
  std::ostream& os = out.stream();
  os << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"dump\":" << json_quote(o.path)
     << ",\"format\":" << json_quote(std::to_string(p.major) + "." + std::to_string(p.minor))
     << ",\"objects\":" << p.objects.size() << ",\"steps\":" << sm.steps << ",\"phase\":";
  if (one_phase) os << *shown;
  else os << "null";
  os << "},\"traceEvents\":[";
  Writer w(os, t0, pid);

  std::string pname = p.process.executable.empty() ? "process" : p.process.executable;
  if (auto slash = pname.rfind('/'); slash != std::string::npos) pname = pname.substr(slash + 1);
  std::string cmd;
  for (const auto& a : p.process.argv) cmd += (cmd.empty() ? "" : " ") + a;
  if (cmd.size() > 80) cmd = cmd.substr(0, 77) + "...";
  w.meta("process_name", 0, "name", json_quote(cmd.empty() ? pname : cmd));
  w.meta("thread_name", kTidSteps, "name", json_quote("steps"));
  w.meta("thread_sort_index", kTidSteps, "sort_index", "-3");
  w.meta("thread_name", kTidIntervals, "name", json_quote("intervals"));
  w.meta("thread_sort_index", kTidIntervals, "sort_index", "-2");
  if (!p.marks.empty()) {
    w.meta("thread_name", kTidMarks, "name", json_quote("sentinel_step() marks"));
    w.meta("thread_sort_index", kTidMarks, "sort_index", "-1");
  }

  // Steps and intervals.
  size_t interval_slices = 0;
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const auto& s = p.steps[k];
    if (one_phase && s.phase != *shown) continue;
    ++steps_written;
    auto [start, stop] = step_span(p, clock, k, t_end);
    std::string flags;
    if (s.flags & SENTINEL_STEP_EXPLICIT) flags += " marked";
    if (s.flags & SENTINEL_STEP_NEW_PHASE) flags += " new-phase";
    if (s.flags & SENTINEL_STEP_INFERRED) flags += " inferred";
    if (s.flags & SENTINEL_STEP_PROFILED) flags += " profiled";
    std::string name = "step " + std::to_string(k) + (s.flags & SENTINEL_STEP_PROFILED ? " (profiled)" : "");
    w.begin("X", name, kTidSteps) << ",\"cat\":\"step\",\"ts\":" << w.ts(start)
                                   << ",\"dur\":" << w.dur(start, stop) << ",\"args\":{\"phase\":" << s.phase
                                   << ",\"start_seq\":" << s.start_seq << ",\"allocations\":" << s.allocations
                                   << ",\"flags\":" << json_quote(flags.empty() ? "" : flags.substr(1)) << "}";
    w.end();
    w.begin("i", "step " + std::to_string(k), kTidSteps)
        << ",\"cat\":\"step\",\"s\":\"g\",\"ts\":" << w.ts(start);
    w.end();
    const fmt::IntervalTable* t = p.intervals_for(s.phase);
    if (!t) continue;
    for (size_t i = 0; i < t->bounds.size() && interval_slices < o.max_intervals; ++i) {
      auto [f, e] = t->bounds[i];
      if (f >= s.allocations) break;
      uint64_t a = i == 0 ? start : clock.at(s.start_seq + f).value_or(stop);
      uint64_t b = (e >= s.allocations || i + 1 == t->bounds.size()) ? stop
                                                                       : clock.at(s.start_seq + e).value_or(stop);
      a = std::clamp(a, start, stop);
      b = std::clamp(b, a, stop);
      w.begin("X", "interval " + std::to_string(i), kTidIntervals)
          << ",\"cat\":\"interval\",\"ts\":" << w.ts(a) << ",\"dur\":" << w.dur(a, b)
          << ",\"args\":{\"step\":" << k << ",\"phase\":" << s.phase << ",\"first_ordinal\":" << f
          << ",\"end_ordinal\":" << e << "}";
      w.end();
      w.begin("i", "interval " + std::to_string(i) + " of step " + std::to_string(k), kTidIntervals)
          << ",\"cat\":\"interval\",\"s\":\"t\",\"ts\":" << w.ts(a);
      w.end();
      ++interval_slices;
    }
  }
  for (size_t k = 0; k < p.marks.size(); ++k) {
    if (!in_window(p.marks[k].monotonic_ns, p.marks[k].monotonic_ns)) continue;
    w.begin("i", "mark " + std::to_string(k), kTidMarks)
        << ",\"cat\":\"mark\",\"s\":\"t\",\"ts\":" << w.ts(p.marks[k].monotonic_ns)
        << ",\"args\":{\"seq\":" << p.marks[k].seq << "}";
    w.end();
  }

  // Migration batches (MIGRATION_LOG): one slice each on the migrator's track; batches that overlap
  // in time (they should not: one thread issues them) go to further lanes so no two slices overlap.
  {
    std::vector<size_t> order(p.migration_log.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (one_phase)
      order.erase(std::remove_if(order.begin(), order.end(), [&](size_t i) { return p.migration_log[i].phase != *shown; }),
                  order.end());
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return p.migration_log[x].start_ns < p.migration_log[y].start_ns;
    });
    std::vector<uint64_t> lane_end;
    const size_t max_lanes = kTidObjects - kTidMigrations;
    for (size_t i : order) {
      const sentinel_migration_batch& b = p.migration_log[i];
      const uint64_t end = std::max(b.start_ns, b.end_ns);
      size_t lane = 0;
      while (lane < lane_end.size() && lane_end[lane] > b.start_ns) ++lane;
      if (lane == max_lanes) lane = max_lanes - 1;  // absurd overlap: share the last lane
      if (lane == lane_end.size()) {
        lane_end.push_back(0);
        const uint32_t tid = kTidMigrations + static_cast<uint32_t>(lane);
        w.meta("thread_name", tid, "name", json_quote(lane ? "migrations lane " + std::to_string(lane) : "migrations"));
        w.meta("thread_sort_index", tid, "sort_index", std::to_string(-200 + static_cast<int>(lane)));
      }
      lane_end[lane] = std::max(lane_end[lane], end);
      const bool to_fast = b.flags & SENTINEL_MIGRATE_TO_FAST, late = b.flags & SENTINEL_MIGRATE_LATE;
      std::string name = std::string(to_fast ? "to fast " : "to slow ") + human_bytes(b.bytes) + (late ? " (late)" : "");
      w.begin("X", name, kTidMigrations + static_cast<uint32_t>(lane))
          << ",\"cat\":\"migration" << (late ? ",late" : "") << "\",\"ts\":" << w.ts(b.start_ns)
          << ",\"dur\":" << w.dur(b.start_ns, end) << ",\"args\":{\"bytes\":" << b.bytes << ",\"objects\":" << b.objects
          << ",\"phase\":" << b.phase << ",\"interval\":" << b.interval << ",\"direction\":"
          << json_quote(to_fast ? "to_fast" : "to_slow") << ",\"late\":" << (late ? "true" : "false")
          << ",\"failed_pages\":" << b.failed_pages << "}";
      w.end();
    }
  }

  // Objects: per thread, lanes assigned greedily in birth order (the lowest free lane).
  auto object_end = [&](const sentinel_object& ob) {
    const bool alive = ob.death_seq == UINT64_MAX || ob.death_ns == 0;
    return alive ? std::max(t_end, ob.birth_ns) : std::max(ob.death_ns, ob.birth_ns);
  };
  std::map<uint32_t, std::vector<size_t>> by_thread;
  for (size_t i = 0; i < p.objects.size(); ++i)
    if (in_window(p.objects[i].birth_ns, object_end(p.objects[i]))) by_thread[p.objects[i].thread].push_back(i);
  std::map<uint32_t, std::string> site_names;
  auto site_name = [&](uint32_t site) -> const std::string& {
    auto it = site_names.find(site);
    if (it != site_names.end()) return it->second;
    std::string n = site == UINT32_MAX ? "unknown site" : "site " + std::to_string(site);
    if (const fmt::Site* s = p.find_site(site); s && !s->frames.empty() && o.symbols)
      n = short_frame(sym.frame(s->frames.front()));
    return site_names.emplace(site, n).first->second;
  };
  uint32_t next_tid = kTidObjects;
  int sort_index = 0;
  for (auto& [thread, idx] : by_thread) {
    std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) {
      const auto& a = p.objects[x];
      const auto& b = p.objects[y];
      if (a.birth_ns != b.birth_ns) return a.birth_ns < b.birth_ns;
      return a.birth_seq < b.birth_seq;
    });
    using Busy = std::pair<uint64_t, uint32_t>;  // (end time, lane)
    std::priority_queue<Busy, std::vector<Busy>, std::greater<Busy>> busy;
    std::set<uint32_t> free_lanes;
    uint32_t lanes = 0;
    std::vector<uint32_t> lane_of(idx.size());
    for (size_t k = 0; k < idx.size(); ++k) {
      const auto& ob = p.objects[idx[k]];
      const uint64_t stop = object_end(ob);
      while (!busy.empty() && busy.top().first <= ob.birth_ns) {
        free_lanes.insert(busy.top().second);
        busy.pop();
      }
      uint32_t lane;
      if (!free_lanes.empty()) {
        lane = *free_lanes.begin();
        free_lanes.erase(free_lanes.begin());
      } else {
        lane = lanes++;
      }
      lane_of[k] = lane;
      busy.push({stop, lane});
    }
    const uint32_t base = next_tid;
    next_tid += lanes;
    for (uint32_t l = 0; l < lanes; ++l) {
      w.meta("thread_name", base + l, "name",
             json_quote("thread " + std::to_string(thread) + (lanes > 1 ? " lane " + std::to_string(l) : "")));
      w.meta("thread_sort_index", base + l, "sort_index", std::to_string(sort_index++));
    }
    for (size_t k = 0; k < idx.size(); ++k) {
      const auto& ob = p.objects[idx[k]];
      const bool alive = ob.death_seq == UINT64_MAX || ob.death_ns == 0;
      const uint64_t stop = object_end(ob);
      const auto& ident = obj_id[idx[k]];
      ++objects_written;
      std::string cat = "object";
      if (ident) cat += std::string(",") + lifetime_short(ident->lifetime);
      std::string name = human_bytes(ob.size) + " " + site_name(ob.site);
      std::ostream& e = w.begin("X", name, base + lane_of[k]);
      e << ",\"cat\":" << json_quote(cat) << ",\"ts\":" << w.ts(ob.birth_ns) << ",\"dur\":" << w.dur(ob.birth_ns, stop)
        << ",\"args\":{\"address\":\"" << hex(ob.address) << "\",\"size\":" << ob.size << ",\"site\":";
      if (ob.site == UINT32_MAX) e << -1; else e << ob.site;
      e << ",\"birth_seq\":" << ob.birth_seq << ",\"death_seq\":";
      if (alive) e << "null"; else e << ob.death_seq;
      e << ",\"alive_at_exit\":" << (alive ? "true" : "false") << ",\"thread\":" << ob.thread;
      if (ob.kind == SENTINEL_KIND_CUDA_HOST) e << ",\"kind\":\"cuda-host\"";
      if (ident) {
        const auto& id = *ident;
        e << ",\"identity\":" << id.id << ",\"lifetime\":" << json_quote(lifetime_name(id.lifetime))
          << ",\"group\":" << id.group;
      }
      e << "}";
      w.end();
    }
  }

  // The live tracked bytes, one counter value per distinct time stamp.
  {
    std::vector<std::pair<uint64_t, int64_t>> ev;  // (ns, +size / -size)
    ev.reserve(p.objects.size() * 2);
    for (const auto& ob : p.objects) {
      const int64_t sz = static_cast<int64_t>(std::min<uint64_t>(ob.size, INT64_MAX / 4));
      ev.emplace_back(ob.birth_ns, sz);
      if (!(ob.death_seq == UINT64_MAX || ob.death_ns == 0)) ev.emplace_back(std::max(ob.death_ns, ob.birth_ns), -sz);
    }
    std::sort(ev.begin(), ev.end());  // at equal times frees (negative) first
    int64_t live = 0;
    bool opened = !one_phase;  // --phase: the first value is the one at the window's start
    auto value = [&](uint64_t ns) {
      w.begin("C", "live tracked bytes", 0) << ",\"ts\":" << w.ts(ns)
                                            << ",\"args\":{\"bytes\":" << std::max<int64_t>(live, 0) << "}";
      w.end();
    };
    for (size_t i = 0; i < ev.size();) {
      size_t j = i;
      const uint64_t ns = ev[i].first;
      if (!opened && ns >= lo) {
        value(lo);
        opened = true;
      }
      while (j < ev.size() && ev[j].first == ns) live += ev[j++].second;
      if (in_window(ns, ns)) value(ns);
      i = j;
    }
    if (!ev.empty()) {
      if (!opened) value(lo);
      value(one_phase ? hi : std::max(t_end, ev.back().first));
    }
  }
  os << "\n]}\n";
  rc = out.close();
  if (rc == 0 && o.out != "-")
    std::cout << "wrote " << printable(o.out) << ": " << w.events() << " events (" << objects_written
              << " objects on " << (next_tid - kTidObjects) << " tracks, " << steps_written << " steps, "
              << interval_slices << " intervals" << (one_phase ? ", phase " + std::to_string(*shown) : std::string())
              << "); open it in https://ui.perfetto.dev or chrome://tracing\n";
  return rc ? rc : finish_output();
}

}  // namespace sentinel::view
