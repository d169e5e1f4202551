#include "config.h"

#include <cstring>

namespace sentinel {

namespace {

// Default for SENTINEL_MIN_BYTES: chosen from the allocation census in docs/min-bytes.md.
const VarSpec kTable[] = {
    {"SENTINEL_MODE", VarType::mode, "track",
     "off: plain pass-through; track: serve and record tensor-sized objects; profile: also profile accesses"},
    {"SENTINEL_MIN_BYTES", VarType::size, "64K", "objects of at least this many bytes are tracked (e.g. 4096, 64K, 1M)",
     &Config::min_bytes, 1, uint64_t{1} << 40},
    {"SENTINEL_DUMP", VarType::path, "sentinel-%e.%p.prof",
     "dump path template (%p pid, %e executable name, %% a percent sign); empty or 'none': no dump"},
    {"SENTINEL_LOG", VarType::log_level, "warn", "stderr verbosity: error, warn, info or debug"},
    {"SENTINEL_RETAIN_BYTES", VarType::size, "1G",
     "freed tracked memory kept mapped for reuse; beyond it freed pages are returned with MADV_DONTNEED",
     &Config::retain_bytes},
    {"SENTINEL_MAX_OBJECTS", VarType::count, "4194304",
     "capacity of the object log kept for the dump; later objects are tracked but not logged", &Config::max_objects,
     0, uint64_t{1} << 32},
    {"SENTINEL_DUMP_CHILDREN", VarType::boolean, "0", "1: forked children write dumps of their own (with their pid)"},
    {"SENTINEL_UNWIND", VarType::unwind, "backtrace",
     "how allocation sites are found: backtrace (glibc's unwinder), libunwind, or none"},
    {"SENTINEL_PROFILE_STEPS", VarType::count, "2", "steps profiled (after the first regular step) in profile mode",
     &Config::profile_steps, 1, 64},
    {"SENTINEL_PROFILE_GRANULARITY", VarType::size, "8K",
     "bytes unprotected per profiling fault: a power of two from 4K to 2M", &Config::profile_granularity, 4096,
     uint64_t{2} << 20, true},
    {"SENTINEL_STEP", VarType::step, "auto",
     "step boundaries: auto (detected from allocations), marks (sentinel_step() only) or a fixed period N"},
    {"SENTINEL_INTERVALS", VarType::count, "16", "intervals a step is cut into on the in-step allocation clock (1-64)",
     &Config::intervals, 1, 64},
    {"SENTINEL_PAPI", VarType::papi, "auto",
     "hardware counters while profiling: auto (presets where the CPU has them), off, software (perf software events)"},
    {"SENTINEL_LIB", VarType::tool, "", "sentinel-run: path of libsentinel.so to preload (default: found next to the tool)"},
    {"SENTINEL_VIEW", VarType::tool, "", "the test suite: path of the sentinel-view under test"},
    {"SENTINEL_RUN", VarType::tool, "", "the test suite: path of the sentinel-run under test"},
};
constexpr size_t kTableSize = sizeof(kTable) / sizeof(kTable[0]);

void copy_bounded(char* dst, size_t cap, const char* src) {
  size_t n = strlen(src);
  if (n >= cap) n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

bool equals_ci(const char* a, const char* b) {
  for (; *a && *b; ++a, ++b) {
    char x = *a, y = *b;
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return *a == *b;
}

bool parse_count(const char* text, uint64_t* out) {
  if (!*text) return false;
  uint64_t v = 0;
  for (const char* p = text; *p; ++p) {
    if (*p < '0' || *p > '9') return false;
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + static_cast<uint64_t>(*p - '0');
  }
  *out = v;
  return true;
}

// Applies one value; on failure writes the reason.
bool apply(Config* c, size_t i, const char* value, char* reason, size_t cap) {
  const VarSpec& v = kTable[i];
  uint64_t n = 0;
  switch (v.type) {
    case VarType::mode:
      if (equals_ci(value, "off")) c->mode = Mode::off;
      else if (equals_ci(value, "track")) c->mode = Mode::track;
      else if (equals_ci(value, "profile")) c->mode = Mode::profile;
      else return copy_bounded(reason, cap, "unknown mode (expected off, track or profile)"), false;
      return true;
    case VarType::size:
    case VarType::count:
      if (v.type == VarType::size ? !parse_size(value, &n) : !parse_count(value, &n))
        return copy_bounded(reason, cap, v.type == VarType::size ? "not a size (expected e.g. 65536, 64K, 1M)"
                                                                  : "not a non-negative integer"),
               false;
      if (n < v.min || n > v.max) {
        LineBuf b;
        b.str("out of range (").u64(v.min).str(" to ").u64(v.max).chr(')');
        return copy_bounded(reason, cap, b.c_str()), false;
      }
      if (v.power_of_two && (n & (n - 1))) return copy_bounded(reason, cap, "must be a power of two"), false;
      c->*v.field = n;
      return true;
    case VarType::path:
      if (strlen(value) >= sizeof(c->dump)) return copy_bounded(reason, cap, "path too long"), false;
      copy_bounded(c->dump, sizeof(c->dump), equals_ci(value, "none") ? "" : value);
      return true;
    case VarType::log_level:
      if (equals_ci(value, "error")) c->log = LogLevel::error;
      else if (equals_ci(value, "warn") || equals_ci(value, "warning")) c->log = LogLevel::warn;
      else if (equals_ci(value, "info")) c->log = LogLevel::info;
      else if (equals_ci(value, "debug")) c->log = LogLevel::debug;
      else return copy_bounded(reason, cap, "unknown log level (expected error, warn, info or debug)"), false;
      return true;
    case VarType::boolean:
      if (equals_ci(value, "1") || equals_ci(value, "yes") || equals_ci(value, "true") || equals_ci(value, "on"))
        c->dump_children = true;
      else if (equals_ci(value, "0") || equals_ci(value, "no") || equals_ci(value, "false") || equals_ci(value, "off"))
        c->dump_children = false;
      else return copy_bounded(reason, cap, "not a boolean (expected 0 or 1)"), false;
      return true;
    case VarType::unwind:
      if (equals_ci(value, "libunwind")) c->unwind = UnwindMethod::libunwind;
      else if (equals_ci(value, "backtrace")) c->unwind = UnwindMethod::backtrace;
      else if (equals_ci(value, "none")) c->unwind = UnwindMethod::none;
      else return copy_bounded(reason, cap, "unknown method (expected libunwind, backtrace or none)"), false;
      return true;
    case VarType::step:
      if (equals_ci(value, "auto")) c->step_source = StepSource::automatic;
      else if (equals_ci(value, "marks")) c->step_source = StepSource::marks;
      else if (parse_count(value, &n) && n >= 1 && n <= 65536) {  // StepDetector::kMaxPeriod
        c->step_source = StepSource::fixed;
        c->step_period = n;
      } else return copy_bounded(reason, cap, "expected auto, marks or a period from 1 to 65536"), false;
      return true;
    case VarType::papi:
      if (equals_ci(value, "auto")) c->papi = PapiMode::automatic;
      else if (equals_ci(value, "off")) c->papi = PapiMode::off;
      else if (equals_ci(value, "software")) c->papi = PapiMode::software;
      else return copy_bounded(reason, cap, "expected auto, off or software"), false;
      return true;
    case VarType::tool:
      return true;
  }
  return false;
}

}  // namespace

const VarSpec* config_table(size_t* count) {
  *count = kTableSize;
  return kTable;
}

bool parse_size(const char* text, uint64_t* out) {
  const char* p = text;
  if (!*p) return false;
  uint64_t v = 0;
  bool digits = false;
  for (; *p >= '0' && *p <= '9'; ++p) {
    digits = true;
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + static_cast<uint64_t>(*p - '0');
  }
  if (!digits) return false;
  unsigned shift = 0;
  switch (*p) {
    case 'k': case 'K': shift = 10; ++p; break;
    case 'm': case 'M': shift = 20; ++p; break;
    case 'g': case 'G': shift = 30; ++p; break;
    case 't': case 'T': shift = 40; ++p; break;
    default: break;
  }
  if (shift && (*p == 'i' || *p == 'I')) ++p;
  if (*p == 'b' || *p == 'B') ++p;
  if (*p) return false;
  if (shift && v > (UINT64_MAX >> shift)) return false;
  *out = v << shift;
  return true;
}

bool parse_config(const char* const* envp, Config* out, ConfigError* err, int* unknown,
                  const char** first_unknown) {
  Config c;
  for (size_t i = 0; i < kTableSize; ++i) {
    char reason[8];
    apply(&c, i, kTable[i].default_value, reason, sizeof(reason));
  }
  if (unknown) *unknown = 0;
  if (first_unknown) *first_unknown = nullptr;
  for (const char* const* e = envp; e && *e; ++e) {
    const char* kv = *e;
    if (strncmp(kv, "SENTINEL_", 9) != 0) continue;
    const char* eq = strchr(kv, '=');
    if (!eq) continue;
    size_t name_len = static_cast<size_t>(eq - kv);
    size_t i = 0;
    for (; i < kTableSize; ++i)
      if (strlen(kTable[i].name) == name_len && strncmp(kTable[i].name, kv, name_len) == 0) break;
    if (i == kTableSize) {
      if (unknown) ++*unknown;
      if (first_unknown && !*first_unknown) *first_unknown = kv;
      continue;
    }
    if (!apply(&c, i, eq + 1, err->reason, sizeof(err->reason))) {
      copy_bounded(err->name, sizeof(err->name), kTable[i].name);
      copy_bounded(err->value, sizeof(err->value), eq + 1);
      err->is_error = true;
      return false;
    }
  }
  *out = c;
  return true;
}

const char* mode_name(Mode m) { return m == Mode::off ? "off" : m == Mode::track ? "track" : "profile"; }

const char* log_level_name(LogLevel l) {
  switch (l) {
    case LogLevel::error: return "error";
    case LogLevel::warn: return "warn";
    case LogLevel::info: return "info";
    case LogLevel::debug: return "debug";
  }
  return "warn";
}

size_t format_config_entry(const Config& c, size_t i, char* buf, size_t cap) {
  LineBuf b;
  b.str(kTable[i].name).chr('=');
  switch (kTable[i].type) {
    case VarType::mode: b.str(mode_name(c.mode)); break;
    case VarType::size:
    case VarType::count: b.u64(c.*kTable[i].field); break;
    case VarType::step:
      if (c.step_source == StepSource::fixed) b.u64(c.step_period);
      else b.str(c.step_source == StepSource::marks ? "marks" : "auto");
      break;
    case VarType::papi:
      b.str(c.papi == PapiMode::off ? "off" : c.papi == PapiMode::software ? "software" : "auto");
      break;
    case VarType::path: b.str(c.dump); break;
    case VarType::log_level: b.str(log_level_name(c.log)); break;
    case VarType::boolean: b.str(c.dump_children ? "1" : "0"); break;
    case VarType::unwind:
      b.str(c.unwind == UnwindMethod::libunwind ? "libunwind" : c.unwind == UnwindMethod::backtrace ? "backtrace" : "none");
      break;
    case VarType::tool: break;
  }
  size_t n = b.size() < cap - 1 ? b.size() : cap - 1;
  memcpy(buf, b.data(), n);
  buf[n] = '\0';
  return n;
}

bool expand_dump_path(const char* tmpl, int pid, const char* exe, char* out, size_t cap) {
  size_t n = 0;
  auto put = [&](const char* s, size_t len) {
    if (n + len >= cap) return false;
    memcpy(out + n, s, len);
    n += len;
    return true;
  };
  for (const char* p = tmpl; *p; ++p) {
    if (*p != '%') {
      if (!put(p, 1)) return false;
      continue;
    }
    char c = p[1];
    if (c == 'p') {
      LineBuf b;
      b.i64(pid);
      if (!put(b.data(), b.size())) return false;
      ++p;
    } else if (c == 'e') {
      if (!put(exe, strlen(exe))) return false;
      ++p;
    } else if (c == '%') {
      if (!put("%", 1)) return false;
      ++p;
    } else {
      if (!put(p, 1)) return false;
    }
  }
  out[n] = '\0';
  return true;
}

}  // namespace sentinel
