// sentinel-view records: every record of a dump as the reader decodes it, in one JSON object keyed by
// record type. It is how scripts read dumps (tests/lib/sentinel_dump.py), so that none of them parses
// the format itself. Fixed-size entries are printed from the format's table (src/format/dump_layout.h)
// by its field names, so a field added there appears here with no change to this file.
#include <algorithm>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "format/entry_codec.h"
#include "json.h"
#include "view.h"

namespace sentinel::view {

namespace {

using fmt::Field;
using fmt::LayoutInfo;

void print_help() {
  std::cout << "Usage: sentinel-view records [--json] [--only NAME[,NAME...]] DUMP\n"
               "Prints every record of a dump, decoded by the reader, as one JSON object: \"file\" (the\n"
               "header's version and the record counts), then one key per record type (PROCESS, CONFIG,\n"
               "TOPOLOGY, MODULE, SITES, OBJECTS, STATS, MARKS, STEPS, INTERVALS, PROFILE, IDENTITIES,\n"
               "TOUCHES, GROUPS, COUNTERS, TIERING, PLAN, MIGRATIONS, MIGRATION_LOG, PLACEMENT, DETECTION,\n"
               "CRASH).\n"
               "Records of one type are concatenated in file order; PHASE_COUNTERS samples are under\n"
               "COUNTERS. Entries of fixed size carry the field names of docs/format.md's tables, with the\n"
               "values the reader gives (an older entry's missing fields get their documented default).\n"
               "\n"
               "  --json         the output format (the only one; accepted for symmetry)\n"
               "  --only NAMES   only these record types (comma-separated)\n"
               "  -h, --help     show this help\n";
}

// The keys, in the format's order: every record type but END, PHASE_COUNTERS folded into COUNTERS.
std::vector<std::string> record_keys() {
  std::vector<std::string> keys;
  for (const fmt::RecordType& r : fmt::kRecordTypes)
    if (r.type != SENTINEL_REC_END && r.type != SENTINEL_REC_PHASE_COUNTERS) keys.push_back(r.name);
  return keys;
}

// `"name": value` for each field of a fixed-size entry; reserved fields, which readers ignore, are left out.
void entry_fields(std::ostream& os, const LayoutInfo& layout, const void* entry) {
  const char* sep = "";
  for (const Field& f : layout.fields) {
    if (f.reserved) continue;
    os << sep << '"' << f.name << "\": ";
    sep = ", ";
    if (f.type == fmt::FieldType::ch) {
      json_string(os, std::string_view(static_cast<const char*>(entry) + f.offset, f.count));
    } else if (f.type == fmt::FieldType::i32) {
      os << static_cast<int32_t>(fmt::member_value(entry, f));
    } else {
      os << fmt::member_value(entry, f);
    }
  }
}

template <typename T>
void entry_object(std::ostream& os, const T& entry) {
  os << '{';
  entry_fields(os, fmt::kLayoutInfo<T>, &entry);
  os << '}';
}

// A JSON array with one element per line, each printed by `one`.
template <typename Items, typename One>
void array(std::ostream& os, const Items& items, One one) {
  os << '[';
  const char* sep = "\n";
  for (const auto& item : items) {
    os << sep;
    sep = ",\n";
    one(os, item);
  }
  os << (items.empty() ? "]" : "\n]");
}

template <typename T>
void entries(std::ostream& os, const std::vector<T>& v) {
  array(os, v, [](std::ostream& o, const T& e) { entry_object(o, e); });
}

template <typename Numbers>
void numbers(std::ostream& os, const Numbers& v) {
  os << '[';
  const char* sep = "";
  for (const auto& x : v) {
    os << sep << x;
    sep = ", ";
  }
  os << ']';
}

std::string hex_bytes(const std::string& s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

void process(std::ostream& os, const fmt::ProcessInfo& p) {
  if (!p.present) {
    os << "null";
    return;
  }
  os << "{\"pid\": " << p.pid << ", \"ppid\": " << p.ppid << ", \"rank\": " << p.rank << ", \"flags\": " << p.flags
     << ", \"start_realtime_ns\": " << p.start_realtime_ns << ", \"end_realtime_ns\": " << p.end_realtime_ns
     << ", \"start_monotonic_ns\": " << p.start_monotonic_ns << ", \"end_monotonic_ns\": " << p.end_monotonic_ns
     << ", \"executable\": ";
  json_string(os, p.executable);
  os << ", \"argv\": ";
  array(os, p.argv, [](std::ostream& o, const std::string& a) { json_string(o, a); });
  os << '}';
}

void topology(std::ostream& os, const fmt::Topology& t) {
  if (!t.present) {
    os << "null";
    return;
  }
  os << "{\"numa_available\": " << t.numa_available << ", \"numa_balancing\": " << t.numa_balancing << ", \"nodes\": ";
  array(os, t.nodes, [](std::ostream& o, const fmt::NumaNode& n) {
    o << "{\"id\": " << n.id << ", \"cpu_count\": " << n.cpu_count << ", \"total_bytes\": " << n.total_bytes
      << ", \"free_bytes\": " << n.free_bytes << ", \"flags\": " << n.flags << '}';
  });
  os << ", \"fast_node\": " << t.fast_node << ", \"slow_node\": " << t.slow_node << '}';
}

void module(std::ostream& os, const fmt::Module& m) {
  os << "{\"load_bias\": " << m.load_bias << ", \"segments\": ";
  array(os, m.segments, [](std::ostream& o, const fmt::Segment& s) {
    o << "{\"vaddr\": " << s.vaddr << ", \"memsz\": " << s.memsz << ", \"p_flags\": " << s.p_flags << '}';
  });
  os << ", \"build_id\": \"" << hex_bytes(m.build_id) << "\", \"path\": ";
  json_string(os, m.path);
  os << '}';
}

void session(std::ostream& os, const fmt::ProfileSession& s) {
  os << "{\"granularity_bytes\": " << s.granularity_bytes << ", \"profiled_steps\": " << s.profiled_steps
     << ", \"phase\": " << s.phase << ", \"first_profiled_step\": " << s.first_profiled_step
     << ", \"faults\": " << s.faults << ", \"fault_handler_ns\": " << s.fault_handler_ns
     << ", \"syscall_unprotects\": " << s.syscall_unprotects << ", \"counter_names\": ";
  array(os, s.counter_names, [](std::ostream& o, const std::string& n) { json_string(o, n); });
  os << '}';
}

void plan(std::ostream& os, const fmt::PlanRecord& r) {
  os << "{\"header\": ";
  entry_object(os, r.header);
  os << ",\n\"entries\": ";
  entries(os, r.entries);
  os << ",\n\"interval_ns\": ";
  numbers(os, r.interval_ns);
  os << ",\n\"trial\": ";
  entry_object(os, r.trial);
  os << '}';
}

// The value of record type `key`.
void record_value(std::ostream& os, const fmt::Profile& p, const std::string& key) {
  if (key == "PROCESS") return process(os, p.process);
  if (key == "CONFIG")
    return array(os, p.config, [](std::ostream& o, const std::pair<std::string, std::string>& c) {
      o << "{\"name\": ";
      json_string(o, c.first);
      o << ", \"value\": ";
      json_string(o, c.second);
      o << '}';
    });
  if (key == "TOPOLOGY") return topology(os, p.topology);
  if (key == "MODULE") return array(os, p.modules, module);
  if (key == "SITES")
    return array(os, p.sites, [](std::ostream& o, const fmt::Site& s) {
      o << "{\"id\": " << s.id << ", \"hash\": " << s.hash << ", \"frames\": ";
      numbers(o, s.frames);
      o << '}';
    });
  if (key == "OBJECTS") return entries(os, p.objects);
  if (key == "STATS")
    return array(os, p.stats, [](std::ostream& o, const fmt::Stat& s) {
      o << "{\"name\": ";
      json_string(o, s.name);
      o << ", \"value\": " << s.value << '}';
    });
  if (key == "MARKS")
    return array(os, p.marks, [](std::ostream& o, const fmt::Mark& m) {
      o << "{\"seq\": " << m.seq << ", \"monotonic_ns\": " << m.monotonic_ns << '}';
    });
  if (key == "STEPS") return entries(os, p.steps);
  if (key == "INTERVALS")
    return array(os, p.intervals, [](std::ostream& o, const fmt::IntervalTable& t) {
      o << "{\"phase\": " << t.phase << ", \"period\": " << t.period << ", \"bounds\": [";
      const char* sep = "";
      for (const auto& [first, end] : t.bounds) {
        o << sep << '[' << first << ", " << end << ']';
        sep = ", ";
      }
      o << "]}";
    });
  if (key == "PROFILE") return array(os, p.sessions, session);
  if (key == "IDENTITIES") return entries(os, p.identities);
  if (key == "TOUCHES") return entries(os, p.touches);
  if (key == "GROUPS") return entries(os, p.groups);
  if (key == "COUNTERS")
    return array(os, p.counters, [](std::ostream& o, const fmt::CounterSample& s) {
      o << "{\"phase\": " << s.phase << ", \"step\": " << s.step << ", \"interval\": " << s.interval
        << ", \"duration_ns\": " << s.duration_ns << ", \"values\": ";
      numbers(o, s.values);
      o << '}';
    });
  if (key == "TIERING") return entries(os, p.tiering);
  if (key == "PLAN") return array(os, p.plans, plan);
  if (key == "MIGRATIONS") return entries(os, p.migrations);
  if (key == "MIGRATION_LOG") return entries(os, p.migration_log);
  if (key == "PLACEMENT") return entries(os, p.placement);
  if (key == "DETECTION") return entries(os, p.detection);
  if (key == "CRASH") return entries(os, p.crash);
  os << "null";  // a record type this printer does not know yet
}

void print_records(std::ostream& os, const fmt::Profile& p, const std::set<std::string>& only) {
  os << "{\"file\": {\"major\": " << p.major << ", \"minor\": " << p.minor
     << ", \"pointer_size\": " << unsigned{p.pointer_size} << ", \"size\": " << p.file_size
     << ", \"records\": " << p.record_count << ", \"skipped_records\": " << p.skipped_records << '}';
  for (const std::string& key : record_keys()) {
    if (!only.empty() && !only.count(key)) continue;
    os << ",\n\"" << key << "\": ";
    record_value(os, p, key);
  }
  os << "}\n";
}

}  // namespace

int cmd_records(int argc, char** argv) {
  SubcommandArgs args("records", argc, argv);
  std::set<std::string> only;
  const std::vector<std::string> keys = record_keys();
  while (args.next_option()) {
    std::string v;
    if (args.is_help()) {
      print_help();
      return finish_output();
    } else if (args.arg() == "--json") {
      // the only output format
    } else if (args.is("--only")) {
      if (!args.value("--only", v)) return args.error("--only needs a list of record types");
      std::stringstream list(v);
      for (std::string name; std::getline(list, name, ',');) {
        if (std::find(keys.begin(), keys.end(), name) == keys.end())
          return args.error("--only: unknown record type '" + name + "'");
        only.insert(name);
      }
    } else {
      return args.unknown_option();
    }
  }
  std::string path;
  if (int rc = args.dump(path)) return rc;
  auto profile = load_profile(path);
  if (!profile) return 1;
  print_records(std::cout, *profile, only);
  return finish_output();
}

}  // namespace sentinel::view
