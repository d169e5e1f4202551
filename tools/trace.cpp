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

// --phase N: only that phase's time span (-1: the whole run).
struct Options : SharedOptions {
  Options() { takes = kSymbols | kOutput; }
  size_t max_intervals = 100000;  // interval slices written at most
};

void print_help() {
  std::cout << "Usage: sentinel-view trace [-o FILE.json] [--phase N] [--no-symbols] [--max-intervals N] DUMP\n"
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
constexpr uint32_t kTidObjects = 100;   // first object track

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

// What the writers share: the dump, the phase, the time line and, with --phase N, its window.
struct Trace {
  Trace(const fmt::Profile& dump, const Options& options, uint32_t phase)
      : p(dump), o(options), shown(phase), one_phase(options.phase >= 0), clock(dump) {}

  const fmt::Profile& p;
  const Options& o;
  uint32_t shown;  // the phase of --phase N, else the main phase
  bool one_phase;  // --phase N: only that phase's span
  SeqClock clock;
  uint64_t t0 = 0, t_end = 0;        // the time line
  uint64_t lo = 0, hi = UINT64_MAX;  // --phase N: the span of its steps

  bool in_window(uint64_t from, uint64_t to) const { return !one_phase || (from <= hi && to >= lo && hi > 0); }
  // An object's slice ends at its death, or at the end of the time line when it was alive at exit.
  uint64_t object_end(const sentinel_object& ob) const {
    return alive_at_exit(ob) ? std::max(t_end, ob.birth_ns) : std::max(ob.death_ns, ob.birth_ns);
  }
  static bool alive_at_exit(const sentinel_object& ob) { return ob.death_seq == UINT64_MAX || ob.death_ns == 0; }
};

// What the closing line counts.
struct Written {
  uint64_t steps = 0, intervals = 0, objects = 0;
  uint32_t object_tracks = 0;
};

// The time line: from the process start (or the first birth) to its end (or the last event).
void set_time_line(Trace& t) {
  const fmt::Profile& p = t.p;
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
  t.t0 = first;
  if (p.process.present && p.process.start_monotonic_ns && p.process.start_monotonic_ns <= first)
    t.t0 = p.process.start_monotonic_ns;
  t.t_end = last;
  if (p.process.present && p.process.end_monotonic_ns >= last) t.t_end = p.process.end_monotonic_ns;
}

// --phase N: the span of its steps, from the first one's start to the last one's end (its
// migration batches are written wherever they fall).
void set_window(Trace& t) {
  if (!t.one_phase) return;
  t.lo = UINT64_MAX;
  t.hi = 0;
  for (size_t k = 0; k < t.p.steps.size(); ++k) {
    if (t.p.steps[k].phase != t.shown) continue;
    auto [a, b] = step_span(t.p, t.clock, k, t.t_end);
    t.lo = std::min(t.lo, a);
    t.hi = std::max(t.hi, b);
  }
  if (t.lo > t.hi) t.lo = t.hi = 0;  // a phase without steps: nothing but its batches
}

void write_header(std::ostream& os, const Trace& t, const StepModel& sm) {
  const fmt::Profile& p = t.p;
  os << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"dump\":" << json_quote(t.o.path)
     << ",\"format\":" << json_quote(std::to_string(p.major) + "." + std::to_string(p.minor))
     << ",\"objects\":" << p.objects.size() << ",\"steps\":" << sm.steps << ",\"phase\":";
  if (t.one_phase)
    os << t.shown;
  else
    os << "null";
  os << "},\"traceEvents\":[";
}

// The process's name (its command line, else its executable) and the names and order of the
// steps, intervals and marks tracks.
void write_track_names(Writer& w, const fmt::Profile& p) {
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
}

// Step k's slice and its instant marker at the step's start.
void write_step(Writer& w, size_t k, const sentinel_step_entry& s, uint64_t start, uint64_t stop) {
  std::string flags;
  if (s.flags & SENTINEL_STEP_EXPLICIT) flags += " marked";
  if (s.flags & SENTINEL_STEP_NEW_PHASE) flags += " new-phase";
  if (s.flags & SENTINEL_STEP_INFERRED) flags += " inferred";
  if (s.flags & SENTINEL_STEP_PROFILED) flags += " profiled";
  std::string name = "step " + std::to_string(k) + (s.flags & SENTINEL_STEP_PROFILED ? " (profiled)" : "");
  w.begin("X", name, kTidSteps) << ",\"cat\":\"step\",\"ts\":" << w.ts(start) << ",\"dur\":" << w.dur(start, stop)
                                << ",\"args\":{\"phase\":" << s.phase << ",\"start_seq\":" << s.start_seq
                                << ",\"allocations\":" << s.allocations
                                << ",\"flags\":" << json_quote(flags.empty() ? "" : flags.substr(1)) << "}";
  w.end();
  w.begin("i", "step " + std::to_string(k), kTidSteps) << ",\"cat\":\"step\",\"s\":\"g\",\"ts\":" << w.ts(start);
  w.end();
}

// The interval slices of step k (and their instant markers), while fewer than --max-intervals are
// written in all.
void write_intervals(Writer& w, const Trace& t, size_t k, uint64_t start, uint64_t stop, Written& n) {
  const auto& s = t.p.steps[k];
  const fmt::IntervalTable* table = t.p.intervals_for(s.phase);
  if (!table) return;
  for (size_t i = 0; i < table->bounds.size() && n.intervals < t.o.max_intervals; ++i) {
    auto [f, e] = table->bounds[i];
    if (f >= s.allocations) break;
    uint64_t a = i == 0 ? start : t.clock.at(s.start_seq + f).value_or(stop);
    uint64_t b =
        (e >= s.allocations || i + 1 == table->bounds.size()) ? stop : t.clock.at(s.start_seq + e).value_or(stop);
    a = std::clamp(a, start, stop);
    b = std::clamp(b, a, stop);
    w.begin("X", "interval " + std::to_string(i), kTidIntervals)
        << ",\"cat\":\"interval\",\"ts\":" << w.ts(a) << ",\"dur\":" << w.dur(a, b) << ",\"args\":{\"step\":" << k
        << ",\"phase\":" << s.phase << ",\"first_ordinal\":" << f << ",\"end_ordinal\":" << e << "}";
    w.end();
    w.begin("i", "interval " + std::to_string(i) + " of step " + std::to_string(k), kTidIntervals)
        << ",\"cat\":\"interval\",\"s\":\"t\",\"ts\":" << w.ts(a);
    w.end();
    ++n.intervals;
  }
}

// Steps and intervals (of the phase, with --phase N), then the sentinel_step() marks.
void write_steps(Writer& w, const Trace& t, Written& n) {
  const fmt::Profile& p = t.p;
  for (size_t k = 0; k < p.steps.size(); ++k) {
    if (t.one_phase && p.steps[k].phase != t.shown) continue;
    ++n.steps;
    auto [start, stop] = step_span(p, t.clock, k, t.t_end);
    write_step(w, k, p.steps[k], start, stop);
    write_intervals(w, t, k, start, stop, n);
  }
  for (size_t k = 0; k < p.marks.size(); ++k) {
    if (!t.in_window(p.marks[k].monotonic_ns, p.marks[k].monotonic_ns)) continue;
    w.begin("i", "mark " + std::to_string(k), kTidMarks)
        << ",\"cat\":\"mark\",\"s\":\"t\",\"ts\":" << w.ts(p.marks[k].monotonic_ns)
        << ",\"args\":{\"seq\":" << p.marks[k].seq << "}";
    w.end();
  }
}

void write_batch(Writer& w, const sentinel_migration_batch& b, uint32_t tid) {
  const uint64_t end = std::max(b.start_ns, b.end_ns);
  const bool to_fast = b.flags & SENTINEL_MIGRATE_TO_FAST, late = b.flags & SENTINEL_MIGRATE_LATE;
  std::string name = std::string(to_fast ? "to fast " : "to slow ") + human_bytes(b.bytes) + (late ? " (late)" : "");
  w.begin("X", name, tid) << ",\"cat\":\"migration" << (late ? ",late" : "") << "\",\"ts\":" << w.ts(b.start_ns)
                          << ",\"dur\":" << w.dur(b.start_ns, end) << ",\"args\":{\"bytes\":" << b.bytes
                          << ",\"objects\":" << b.objects << ",\"phase\":" << b.phase << ",\"interval\":" << b.interval
                          << ",\"direction\":" << json_quote(to_fast ? "to_fast" : "to_slow")
                          << ",\"late\":" << (late ? "true" : "false") << ",\"failed_pages\":" << b.failed_pages << "}";
  w.end();
}

// Migration batches (MIGRATION_LOG): one slice each on the migrator's track; batches that overlap
// in time (they should not: one thread issues them) go to further lanes so no two slices overlap.
void write_migrations(Writer& w, const Trace& t) {
  const auto& log = t.p.migration_log;
  std::vector<size_t> order(log.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (t.one_phase)
    order.erase(std::remove_if(order.begin(), order.end(), [&](size_t i) { return log[i].phase != t.shown; }),
                order.end());
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return log[x].start_ns < log[y].start_ns; });
  std::vector<uint64_t> lane_end;
  const size_t max_lanes = kTidObjects - kTidMigrations;
  for (size_t i : order) {
    const sentinel_migration_batch& b = log[i];
    size_t lane = 0;
    while (lane < lane_end.size() && lane_end[lane] > b.start_ns) ++lane;
    if (lane == max_lanes) lane = max_lanes - 1;  // absurd overlap: share the last lane
    const uint32_t tid = kTidMigrations + static_cast<uint32_t>(lane);
    if (lane == lane_end.size()) {
      lane_end.push_back(0);
      w.meta("thread_name", tid, "name", json_quote(lane ? "migrations lane " + std::to_string(lane) : "migrations"));
      w.meta("thread_sort_index", tid, "sort_index", std::to_string(-200 + static_cast<int>(lane)));
    }
    lane_end[lane] = std::max(lane_end[lane], std::max(b.start_ns, b.end_ns));
    write_batch(w, b, tid);
  }
}

// Lanes for one thread's objects (indices into p.objects, sorted here by birth), assigned greedily
// in birth order: the lowest lane free at the birth. Returns the number of lanes.
uint32_t assign_lanes(const Trace& t, std::vector<size_t>& idx, std::vector<uint32_t>& lane_of) {
  const fmt::Profile& p = t.p;
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
  lane_of.assign(idx.size(), 0);
  for (size_t k = 0; k < idx.size(); ++k) {
    const auto& ob = p.objects[idx[k]];
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
    busy.push({t.object_end(ob), lane});
  }
  return lanes;
}

void write_object(Writer& w, const Trace& t, const sentinel_object& ob, const std::optional<sentinel_identity>& ident,
                  const std::string& site_name, uint32_t tid) {
  const bool alive = Trace::alive_at_exit(ob);
  std::string cat = "object";
  if (ident) cat += std::string(",") + lifetime_short(ident->lifetime);
  std::string name = human_bytes(ob.size) + " " + site_name;
  std::ostream& e = w.begin("X", name, tid);
  e << ",\"cat\":" << json_quote(cat) << ",\"ts\":" << w.ts(ob.birth_ns)
    << ",\"dur\":" << w.dur(ob.birth_ns, t.object_end(ob)) << ",\"args\":{\"address\":\"" << hex(ob.address)
    << "\",\"size\":" << ob.size << ",\"site\":";
  if (ob.site == UINT32_MAX)
    e << -1;
  else
    e << ob.site;
  e << ",\"birth_seq\":" << ob.birth_seq << ",\"death_seq\":";
  if (alive)
    e << "null";
  else
    e << ob.death_seq;
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

// Objects (of the window, with --phase N): per allocating thread, its lanes' tracks named, then its
// objects' slices.
void write_objects(Writer& w, const Trace& t, const StepModel& sm, Symbolizer& sym, Written& n) {
  const fmt::Profile& p = t.p;
  const auto obj_id = object_identity_table(p, sm, t.shown);
  std::map<uint32_t, std::vector<size_t>> by_thread;
  for (size_t i = 0; i < p.objects.size(); ++i)
    if (t.in_window(p.objects[i].birth_ns, t.object_end(p.objects[i]))) by_thread[p.objects[i].thread].push_back(i);
  std::map<uint32_t, std::string> site_names;
  auto site_name = [&](uint32_t site) -> const std::string& {
    auto it = site_names.find(site);
    if (it != site_names.end()) return it->second;
    std::string name = site == UINT32_MAX ? "unknown site" : "site " + std::to_string(site);
    if (const fmt::Site* s = p.find_site(site); s && !s->frames.empty() && t.o.symbols)
      name = short_frame(sym.frame(s->frames.front()));
    return site_names.emplace(site, name).first->second;
  };
  uint32_t base = kTidObjects;
  int sort_index = 0;
  for (auto& [thread, idx] : by_thread) {
    std::vector<uint32_t> lane_of;
    const uint32_t lanes = assign_lanes(t, idx, lane_of);
    for (uint32_t l = 0; l < lanes; ++l) {
      w.meta("thread_name", base + l, "name",
             json_quote("thread " + std::to_string(thread) + (lanes > 1 ? " lane " + std::to_string(l) : "")));
      w.meta("thread_sort_index", base + l, "sort_index", std::to_string(sort_index++));
    }
    for (size_t k = 0; k < idx.size(); ++k) {
      const auto& ob = p.objects[idx[k]];
      write_object(w, t, ob, obj_id[idx[k]], site_name(ob.site), base + lane_of[k]);
      ++n.objects;
    }
    base += lanes;
  }
  n.object_tracks = base - kTidObjects;
}

// The live tracked bytes, one counter value per distinct time stamp.
void write_live_bytes(Writer& w, const Trace& t) {
  std::vector<std::pair<uint64_t, int64_t>> ev;  // (ns, +size / -size)
  ev.reserve(t.p.objects.size() * 2);
  for (const auto& ob : t.p.objects) {
    const int64_t sz = static_cast<int64_t>(std::min<uint64_t>(ob.size, INT64_MAX / 4));
    ev.emplace_back(ob.birth_ns, sz);
    if (!Trace::alive_at_exit(ob)) ev.emplace_back(std::max(ob.death_ns, ob.birth_ns), -sz);
  }
  std::sort(ev.begin(), ev.end());  // at equal times frees (negative) first
  int64_t live = 0;
  bool opened = !t.one_phase;  // --phase: the first value is the one at the window's start
  auto value = [&](uint64_t ns) {
    w.begin("C", "live tracked bytes", 0)
        << ",\"ts\":" << w.ts(ns) << ",\"args\":{\"bytes\":" << std::max<int64_t>(live, 0) << "}";
    w.end();
  };
  for (size_t i = 0; i < ev.size();) {
    size_t j = i;
    const uint64_t ns = ev[i].first;
    if (!opened && ns >= t.lo) {
      value(t.lo);
      opened = true;
    }
    while (j < ev.size() && ev[j].first == ns) live += ev[j++].second;
    if (t.in_window(ns, ns)) value(ns);
    i = j;
  }
  if (!ev.empty()) {
    if (!opened) value(t.lo);
    value(t.one_phase ? t.hi : std::max(t.t_end, ev.back().first));
  }
}

// --max-intervals N.
int own_option(SubcommandArgs& args, Options& o) {
  int rc = 0;
  if (!args.count_option("--max-intervals", o.max_intervals, rc)) return args.unknown_option();
  return rc;
}

}  // namespace

int cmd_trace(int argc, char** argv) {
  Options o;
  SubcommandArgs args("trace", argc, argv);
  if (auto rc = read_options(args, o, print_help, [&] { return own_option(args, o); })) return *rc;
  Dump d;
  if (int rc = open_dump(args, o, ".trace.json", d)) return rc;
  Trace t(d.p, o, d.phase);
  Symbolizer sym(d.p, o.symbols);
  set_time_line(t);
  set_window(t);

  OutputFile out;
  if (!out.open(o.out)) return 1;
  std::ostream& os = out.stream();
  write_header(os, t, d.sm);
  Writer w(os, t.t0, d.p.process.present ? d.p.process.pid : 1);
  Written n;
  write_track_names(w, d.p);
  write_steps(w, t, n);
  write_migrations(w, t);
  write_objects(w, t, d.sm, sym, n);
  write_live_bytes(w, t);
  os << "\n]}\n";
  int rc = out.close();
  if (rc == 0 && o.out != "-")
    std::cout << "wrote " << printable(o.out) << ": " << w.events() << " events (" << n.objects << " objects on "
              << n.object_tracks << " tracks, " << n.steps << " steps, " << n.intervals << " intervals"
              << (t.one_phase ? ", phase " + std::to_string(t.shown) : std::string())
              << "); open it in https://ui.perfetto.dev or chrome://tracing\n";
  return rc ? rc : finish_output();
}

}  // namespace sentinel::view
