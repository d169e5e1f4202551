#include "base/config.h"

#include <signal.h>

#include <cstring>
#include <initializer_list>

#include "base/parse.h"
#include "base/policy_names.h"

namespace sentinel {

namespace {

// Default for SENTINEL_MIN_BYTES: chosen from the allocation census in docs/min-bytes.md.
const VarSpec kTable[] = {
    {"SENTINEL_MODE", VarType::mode, "run",
     "off: plain pass-through; track: serve and record tensor-sized objects; profile: also profile accesses; "
     "run: profile, then place and migrate between the fast and the slow node"},
    {"SENTINEL_MIN_BYTES", VarType::size, "64K", "objects of at least this many bytes are tracked (e.g. 4096, 64K, 1M)",
     &Config::min_bytes, 1, uint64_t{1} << 40},
    {"SENTINEL_DUMP", VarType::path, "sentinel-%e.%p.prof",
     "dump path template (%p pid, %e executable name, %r rank in a job, %% a percent sign); empty or 'none': no dump"},
    {"SENTINEL_LOG", VarType::log_level, "warn", "stderr verbosity: error, warn, info or debug"},
    {"SENTINEL_RETAIN_BYTES", VarType::size, "1G",
     "freed tracked memory kept mapped for reuse; beyond it freed pages are returned with MADV_DONTNEED",
     &Config::retain_bytes},
    {"SENTINEL_MAX_OBJECTS", VarType::count, "4194304",
     "capacity of the object log kept for the dump; later objects are tracked but not logged", &Config::max_objects, 0,
     uint64_t{1} << 32},
    {"SENTINEL_DUMP_CHILDREN", VarType::boolean, "0", "1: forked children write dumps of their own (with their pid)"},
    {"SENTINEL_SNAPSHOT_SIGNAL", VarType::snapshot_signal, "off",
     "USR1 or USR2: that signal, left at its default action by the program, writes a snapshot of the dump while "
     "the process runs on (as sentinel_dump(NULL) does); off: none"},
    {"SENTINEL_SNAPSHOT_EVERY", VarType::duration, "off",
     "a period (90s, 10m, 2h; seconds without a unit): a snapshot of the dump replaces the dump's path with "
     "\".latest\" appended that often once a training step is found, so that a run ended by SIGKILL or the "
     "OOM killer leaves its profile up to then; removed when the dump at exit is written; off: none",
     &Config::snapshot_every_s, 1, kMaxDurationSeconds},
    {"SENTINEL_EXCLUDE", VarType::names, kDefaultExclude,
     "executables (comma-separated, * and ? wildcards) that run in pass-through: no tracking, no dump; "
     "default: compilers, assemblers, linkers and build tools"},
    {"SENTINEL_INCLUDE", VarType::names, "",
     "when set, only these executables are tracked, and each writes its dump even when another process "
     "under Sentinel started it"},
    {"SENTINEL_UNWIND", VarType::unwind, "backtrace",
     "how allocation sites are found: backtrace (glibc's unwinder), libunwind, or none"},
    {"SENTINEL_PROFILE_STEPS", VarType::count, "2",
     "steps profiled per phase (after the first regular step) in profile and run mode", &Config::profile_steps, 1, 64},
    {"SENTINEL_PROFILE_GRANULARITY", VarType::size, "8K",
     "bytes unprotected per profiling fault: a power of two from 4K to 2M", &Config::profile_granularity, 4096,
     uint64_t{2} << 20, true},
    {"SENTINEL_PROFILE_SWEEP", VarType::size, "2M",
     "largest run one profiling fault gives back while an object is read or written in order: each fault at the end "
     "of the run the previous one gave back doubles it, from SENTINEL_PROFILE_GRANULARITY up to this (a power of two "
     "from 4K to 1G; at or below the granularity: every fault gives back one granule)",
     &Config::profile_sweep, 4096, uint64_t{1} << 30, true},
    {"SENTINEL_CHUNK_BYTES", VarType::size, "2M",
     "objects born outside the steps of at least 8 chunks (weights, embedding tables, optimizer state) are profiled, "
     "planned and moved in chunks of this size (a power of two up to 1G; below the profiling granularity: the "
     "granularity; 0: every object whole)",
     &Config::chunk_bytes, 0, uint64_t{1} << 30, true},
    {"SENTINEL_PROFILE_SAMPLE", VarType::count, "8",
     "objects of at least SENTINEL_PROFILE_SAMPLE_MIN are profiled in a sample: 1 in N of each chunk's pages loses "
     "access, and each touch found counts N times (a power of two from 1 to 64; 1: every page)",
     &Config::profile_sample, 1, 64, true},
    {"SENTINEL_PROFILE_SAMPLE_MIN", VarType::size, "256M",
     "objects at least this large are profiled in a sample (SENTINEL_PROFILE_SAMPLE)", &Config::profile_sample_min, 1,
     uint64_t{1} << 40},
    {"SENTINEL_PROFILE_PASSES", VarType::count, "4",
     "access intensity: profiled steps take access away again this many times per mean interval, so a page used "
     "throughout an interval is counted once per pass and one used in a burst once (1 to 32; 1: once per interval)",
     &Config::profile_passes, 1, 32},
    {"SENTINEL_PROFILE_PASS_COST", VarType::count, "100",
     "the passes (SENTINEL_PROFILE_PASSES) may add at most this percentage of a plain step to a profiled one; "
     "past it their period doubles (1 to 100000)",
     &Config::profile_pass_cost, 1, 100000},
    {"SENTINEL_STEP", VarType::step, "auto",
     "step boundaries: auto (detected from allocations), marks (sentinel_step() only) or a fixed period N"},
    {"SENTINEL_INTERVALS", VarType::count, "16", "intervals a step is cut into on the in-step allocation clock (1-64)",
     &Config::intervals, 1, 64},
    {"SENTINEL_PAPI", VarType::papi, "auto",
     "hardware counters while profiling: auto (presets where the CPU has them), off, software (perf software events)"},
    {"SENTINEL_POLICY", VarType::policy, "sentinel",
     "placement policy in run mode: sentinel, first-touch, all-slow, all-fast, hot or interleave"},
    {"SENTINEL_FAST_BYTES", VarType::budget, "auto",
     "fast-tier budget for tracked objects: bytes (4G, 512M), a share of the profiled peak (20%), or auto"},
    {"SENTINEL_BUDGET_PER", VarType::budget_per, "node",
     "node: a size or auto in SENTINEL_FAST_BYTES is the fast node's, split evenly among the ranks of a job "
     "that share it (LOCAL_WORLD_SIZE); rank: it is each rank's own"},
    {"SENTINEL_FAST_NODE", VarType::node, "auto",
     "the fast NUMA node: auto (the node of the CPUs we run on) or a number"},
    {"SENTINEL_SLOW_NODE", VarType::node, "auto", "the slow NUMA node: auto (the nearest CPU-less node) or a number"},
    {"SENTINEL_MIGRATE", VarType::move, "auto",
     "how pages move: auto (the faster, measured at start), move_pages or mbind"},
    {"SENTINEL_CHECK_STEPS", VarType::count, "2",
     "steps of the placement check (pages asked where they are at touch time); 0: no check", &Config::check_steps, 0,
     64},
    {"SENTINEL_CHECK_AFTER", VarType::count, "3", "steps run under a plan before the placement check",
     &Config::check_after, 1, 1000000},
    {"SENTINEL_TRIAL_STEPS", VarType::count, "2",
     "sentinel policy: steps timed for each of its two schedules (moving, and without moves) before the faster "
     "is kept; 0: no trial, the moving schedule",
     &Config::trial_steps, 0, 64},
    {"SENTINEL_STEP_COSTS", VarType::step_costs, "auto",
     "the planner's step-time costs: auto (measured at start, the slow one then fitted to the program's steps), off "
     "(objective: fast-hit bytes), or SLOW,MOVE in ns per KiB (e.g. 200,500)"},
    {"SENTINEL_TRIAL_CLOCK", VarType::trial_clock, "wall",
     "what times the step-time trial's steps: wall, or emulated:PRICES:PATH in a slow-tier guest (the plugin's "
     "counts priced in ps: instruction, node-0 read/stream/write miss, node-1's; docs/tiering.md)"},
    {"SENTINEL_FAULT_INJECT", VarType::faults, "",
     "tests only: move_fail:PERCENT, fast_full, move_delay_ms:N, move_slow_x:N, move_delay_from:CALL "
     "(comma-separated)"},
    {"SENTINEL_LIB", VarType::tool, "",
     "sentinel-run: path of libsentinel.so to preload (default: found next to the tool)"},
    {"SENTINEL_VIEW", VarType::tool, "", "the test suite: path of the sentinel-view under test"},
    {"SENTINEL_RUN", VarType::tool, "", "the test suite: path of the sentinel-run under test"},
    {"SENTINEL_TF_VENV", VarType::tool, "", "scripts/setup and the tests: the TensorFlow virtual environment"},
    {"SENTINEL_TORCH_VENV", VarType::tool, "", "scripts/setup and the tests: the PyTorch 2.x virtual environment"},
};
constexpr size_t kTableSize = sizeof(kTable) / sizeof(kTable[0]);

void copy_bounded(char* dst, size_t cap, const char* src) {
  size_t n = strlen(src);
  if (n >= cap) n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

bool equals_ci(const char* a, const char* b);

// Keyword values are lower case, exactly: SENTINEL_MODE=PROFILE is refused (with a hint), so that a
// value is spelled one way everywhere it is written (scripts, dumps, docs).
enum class Kw : uint8_t { no, yes, wrong_case };
Kw keyword(const char* value, const char* word) {
  if (strcmp(value, word) == 0) return Kw::yes;
  return equals_ci(value, word) ? Kw::wrong_case : Kw::no;
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

// Finds `value` among `words` (exactly); else writes why into reason: the expected words, or that
// values are lower case when only the case differs.
int pick(const char* value, const char* const* words, size_t n, const char* what, char* reason, size_t cap) {
  bool wrong_case = false;
  for (size_t i = 0; i < n; ++i) {
    Kw k = keyword(value, words[i]);
    if (k == Kw::yes) return static_cast<int>(i);
    wrong_case |= k == Kw::wrong_case;
  }
  LineBuf b;
  if (wrong_case) {
    b.str("values are lower case (").str(what).str(")");
  } else {
    b.str("unknown ").str(what).str(" (expected ");
    for (size_t k = 0; k < n; ++k) {
      if (k) b.str(k == n - 1 ? " or " : ", ");
      b.str(words[k]);
    }
    b.chr(')');
  }
  copy_bounded(reason, cap, b.c_str());
  return -1;
}

int pick(const char* value, std::initializer_list<const char*> words, const char* what, char* reason, size_t cap) {
  return pick(value, words.begin(), words.size(), what, reason, cap);
}

bool fail(char* reason, size_t cap, const char* why) {
  copy_bounded(reason, cap, why);
  return false;
}

// "move_fail:30,fast_full,move_delay_ms:5"
bool parse_faults(const char* text, FaultInjection* f, char* reason, size_t cap) {
  *f = FaultInjection{};
  const char* p = text;
  while (*p) {
    const char* end = strchr(p, ',');
    size_t len = end ? static_cast<size_t>(end - p) : strlen(p);
    char item[64];
    if (len == 0 || len >= sizeof(item))
      return fail(reason, cap,
                  "expected move_fail:PERCENT, fast_full, move_delay_ms:N, move_slow_x:N or move_delay_from:CALL");
    memcpy(item, p, len);
    item[len] = '\0';
    char* colon = strchr(item, ':');
    uint64_t n = 0;
    if (colon) {
      *colon = '\0';
      if (!parse_count(colon + 1, &n)) return fail(reason, cap, "a fault's value is not a number");
    }
    if (strcmp(item, "fast_full") == 0 && !colon)
      f->fast_full = true;
    else if (strcmp(item, "move_fail") == 0 && colon && n <= 100)
      f->move_fail_percent = static_cast<uint32_t>(n);
    else if (strcmp(item, "move_delay_ms") == 0 && colon && n <= 10000)
      f->move_delay_ms = static_cast<uint32_t>(n);
    else if (strcmp(item, "move_slow_x") == 0 && colon && n >= 1 && n <= 100)
      f->move_slow_x = static_cast<uint32_t>(n);
    else if (strcmp(item, "move_delay_from") == 0 && colon)
      f->move_delay_from = n;
    else
      return fail(reason, cap,
                  "expected move_fail:PERCENT (0-100), fast_full, move_delay_ms:N (0-10000), move_slow_x:N (1-100) "
                  "or move_delay_from:CALL");
    p += len;
    if (*p == ',') ++p;
  }
  return true;
}

// Applies one value; on failure writes the reason.
bool apply(Config* c, size_t i, const char* value, char* reason, size_t cap) {
  const VarSpec& v = kTable[i];
  uint64_t n = 0;
  int k = 0;
  switch (v.type) {
    case VarType::mode:
      if ((k = pick(value, {"off", "track", "profile", "run"}, "mode", reason, cap)) < 0) return false;
      c->mode = static_cast<Mode>(k);
      return true;
    case VarType::size:
    case VarType::count:
      if (v.type == VarType::size ? !parse_size(value, &n) : !parse_count(value, &n))
        return fail(
            reason, cap,
            v.type == VarType::size ? "not a size (expected e.g. 65536, 64K, 1M)" : "not a non-negative integer");
      if (n < v.min || n > v.max) {
        LineBuf b;
        b.str("out of range (").u64(v.min).str(" to ").u64(v.max).chr(')');
        return fail(reason, cap, b.c_str());
      }
      if (v.power_of_two && (n & (n - 1))) return fail(reason, cap, "must be a power of two");
      c->*v.field = n;
      return true;
    case VarType::path:
      if (strlen(value) >= sizeof(c->dump)) return fail(reason, cap, "path too long");
      copy_bounded(c->dump, sizeof(c->dump), strcmp(value, "none") == 0 ? "" : value);
      return true;
    case VarType::names: {
      char* out = strcmp(v.name, "SENTINEL_EXCLUDE") == 0 ? c->exclude : c->include;
      if (strlen(value) >= sizeof(c->exclude)) return fail(reason, cap, "list too long");
      if (!valid_name_list(value))
        return fail(reason, cap, "expected executable names separated by commas (letters, digits, . _ + -, * and ?)");
      copy_bounded(out, sizeof(c->exclude), value);
      return true;
    }
    case VarType::log_level:
      if ((k = pick(value, {"error", "warn", "warning", "info", "debug"}, "log level", reason, cap)) < 0) return false;
      c->log = k == 0 ? LogLevel::error : k <= 2 ? LogLevel::warn : k == 3 ? LogLevel::info : LogLevel::debug;
      return true;
    case VarType::boolean:
      if ((k = pick(value, {"1", "yes", "true", "on", "0", "no", "false", "off"}, "boolean", reason, cap)) < 0)
        return false;
      c->dump_children = k < 4;
      return true;
    case VarType::snapshot_signal: {
      // Signal names are upper case by habit (kill -USR1, timeout -s USR1): either case, SIG or not.
      char head[4] = {};
      copy_bounded(head, sizeof(head), value);
      const char* name = strlen(value) > 3 && equals_ci(head, "SIG") ? value + 3 : value;
      if (strcmp(value, "off") == 0)
        c->snapshot_signal = 0;
      else if (equals_ci(name, "USR1"))
        c->snapshot_signal = SIGUSR1;
      else if (equals_ci(name, "USR2"))
        c->snapshot_signal = SIGUSR2;
      else
        return fail(reason, cap,
                    "expected off, USR1 or USR2 (signals whose default action would end the process, which "
                    "Sentinel uses for nothing else)");
      return true;
    }
    case VarType::duration:
      if (strcmp(value, "off") == 0 || strcmp(value, "0") == 0) {
        c->*v.field = 0;
        return true;
      }
      if (!parse_duration(value, &n) || n < v.min || n > v.max)
        return fail(reason, cap, "expected off, or a period from 1s to 168h (90s, 10m, 2h; seconds without a unit)");
      c->*v.field = n;
      return true;
    case VarType::unwind:
      if ((k = pick(value, {"libunwind", "backtrace", "none"}, "method", reason, cap)) < 0) return false;
      c->unwind = static_cast<UnwindMethod>(k);
      return true;
    case VarType::step:
      if (strcmp(value, "auto") == 0)
        c->step_source = StepSource::automatic;
      else if (strcmp(value, "marks") == 0)
        c->step_source = StepSource::marks;
      else if (parse_count(value, &n) && n >= 1 && n <= 65536) {  // StepDetector::kMaxPeriod
        c->step_source = StepSource::fixed;
        c->step_period = n;
      } else if (equals_ci(value, "auto") || equals_ci(value, "marks")) {
        return fail(reason, cap, "values are lower case (auto, marks or a period)");
      } else {
        return fail(reason, cap, "expected auto, marks or a period from 1 to 65536");
      }
      return true;
    case VarType::papi:
      if ((k = pick(value, {"auto", "off", "software"}, "counter source", reason, cap)) < 0) return false;
      c->papi = k == 0 ? PapiMode::automatic : k == 1 ? PapiMode::off : PapiMode::software;
      return true;
    case VarType::policy:
      // The order of enum sentinel_policy.
      if ((k = pick(value, kPolicyNames, kPolicyCount, "policy", reason, cap)) < 0) return false;
      c->policy = static_cast<uint32_t>(k);
      return true;
    case VarType::budget:
      c->fast_auto = false;
      c->fast_bytes = 0;
      c->fast_share_ppm = 0;
      if (strcmp(value, "auto") == 0) {
        c->fast_auto = true;
        return true;
      }
      {
        BudgetText b;
        if (!parse_budget(value, false, &b)) {
          return fail(reason, cap,
                      strchr(value, '%') ? "not a share (expected more than 0% and at most 100%, e.g. 20% or 12.5%)"
                                         : "expected auto, a size (4G, 512M) or a share of the peak (20%)");
        }
        c->fast_bytes = b.bytes;
        c->fast_share_ppm = b.share_ppm;
      }
      return true;
    case VarType::budget_per:
      if ((k = pick(value, {"node", "rank"}, "scope", reason, cap)) < 0) return false;
      c->budget_per_rank = k == 1;
      return true;
    case VarType::node: {
      int32_t* out = strcmp(v.name, "SENTINEL_FAST_NODE") == 0 ? &c->fast_node : &c->slow_node;
      if (strcmp(value, "auto") == 0) {
        *out = -1;
        return true;
      }
      if (!parse_count(value, &n) || n > 1023) return fail(reason, cap, "expected auto or a NUMA node number (0-1023)");
      *out = static_cast<int32_t>(n);
      return true;
    }
    case VarType::move:
      if ((k = pick(value, {"auto", "move_pages", "mbind"}, "method", reason, cap)) < 0) return false;
      c->move_method = static_cast<MoveMethod>(k);
      return true;
    case VarType::step_costs:
      if (!parse_step_costs(value, &c->step_costs))
        return fail(reason, cap,
                    equals_ci(value, "off") || equals_ci(value, "auto")
                        ? "values are lower case (off, auto or SLOW,MOVE)"
                        : "expected off, auto or SLOW,MOVE: two whole numbers of ns per KiB up to 1000000000 "
                          "(e.g. 200,500)");
      return true;
    case VarType::trial_clock:
      if (!parse_trial_clock(value, &c->trial_clock))
        return fail(reason, cap,
                    "expected wall or emulated:PRICES:PATH (7 comma-separated ps per count, 0-1000000000, not all 0; "
                    "an absolute path)");
      return true;
    case VarType::faults:
      return parse_faults(value, &c->faults, reason, cap);
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

bool parse_config(const char* const* envp, Config* out, ConfigError* err, int* unknown, const char** first_unknown) {
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

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::off:
      return "off";
    case Mode::track:
      return "track";
    case Mode::profile:
      return "profile";
    case Mode::run:
      return "run";
  }
  return "off";
}

const char* move_method_name(MoveMethod m) {
  return m == MoveMethod::move_pages ? "move_pages" : m == MoveMethod::mbind ? "mbind" : "auto";
}

const char* log_level_name(LogLevel l) {
  switch (l) {
    case LogLevel::error:
      return "error";
    case LogLevel::warn:
      return "warn";
    case LogLevel::info:
      return "info";
    case LogLevel::debug:
      return "debug";
  }
  return "warn";
}

size_t format_config_entry(const Config& c, size_t i, char* buf, size_t cap) {
  LineBuf b;
  b.str(kTable[i].name).chr('=');
  switch (kTable[i].type) {
    case VarType::mode:
      b.str(mode_name(c.mode));
      break;
    case VarType::size:
    case VarType::count:
      b.u64(c.*kTable[i].field);
      break;
    case VarType::step:
      if (c.step_source == StepSource::fixed)
        b.u64(c.step_period);
      else
        b.str(c.step_source == StepSource::marks ? "marks" : "auto");
      break;
    case VarType::papi:
      b.str(c.papi == PapiMode::off ? "off" : c.papi == PapiMode::software ? "software" : "auto");
      break;
    case VarType::path:
      b.str(c.dump);
      break;
    case VarType::names:
      b.str(strcmp(kTable[i].name, "SENTINEL_EXCLUDE") == 0 ? c.exclude : c.include);
      break;
    case VarType::log_level:
      b.str(log_level_name(c.log));
      break;
    case VarType::boolean:
      b.str(c.dump_children ? "1" : "0");
      break;
    case VarType::snapshot_signal:
      b.str(c.snapshot_signal == SIGUSR1 ? "USR1" : c.snapshot_signal == SIGUSR2 ? "USR2" : "off");
      break;
    case VarType::duration:
      if (const uint64_t sec = c.*kTable[i].field) {
        const uint64_t unit = sec % 3600 == 0 ? 3600 : sec % 60 == 0 ? 60 : 1;  // the largest that divides it
        b.u64(sec / unit).chr(unit == 3600 ? 'h' : unit == 60 ? 'm' : 's');
      } else {
        b.str("off");
      }
      break;
    case VarType::unwind:
      b.str(c.unwind == UnwindMethod::libunwind   ? "libunwind"
            : c.unwind == UnwindMethod::backtrace ? "backtrace"
                                                  : "none");
      break;
    case VarType::policy: {
      b.str(c.policy < kPolicyCount ? kPolicyNames[c.policy] : "sentinel");
      break;
    }
    case VarType::budget:
      if (c.fast_auto)
        b.str("auto");
      else if (c.fast_share_ppm)
        b.u64(c.fast_share_ppm / 10000).chr('.').u64(c.fast_share_ppm / 1000 % 10).chr('%');
      else
        b.u64(c.fast_bytes);
      break;
    case VarType::budget_per:
      b.str(c.budget_per_rank ? "rank" : "node");
      break;
    case VarType::node: {
      int32_t node = strcmp(kTable[i].name, "SENTINEL_FAST_NODE") == 0 ? c.fast_node : c.slow_node;
      if (node < 0)
        b.str("auto");
      else
        b.u64(static_cast<uint64_t>(node));
      break;
    }
    case VarType::move:
      b.str(move_method_name(c.move_method));
      break;
    case VarType::step_costs:
      if (c.step_costs.kind == StepCostsKind::fixed)
        b.u64(c.step_costs.slow_ns_per_kib).chr(',').u64(c.step_costs.move_ns_per_kib);
      else
        b.str(c.step_costs.kind == StepCostsKind::automatic ? "auto" : "off");
      break;
    case VarType::trial_clock:
      if (c.trial_clock.emulated) {
        b.str("emulated");
        for (uint32_t k = 0; k < kEmuPrices; ++k) b.chr(k ? ',' : ':').u64(c.trial_clock.ps_per_count[k]);
        b.chr(':').str(c.trial_clock.counts_path);
      } else {
        b.str("wall");
      }
      break;
    case VarType::faults: {
      const FaultInjection& f = c.faults;
      bool first = true;
      auto sep = [&] {
        if (!first) b.chr(',');
        first = false;
      };
      if (f.move_fail_percent) sep(), b.str("move_fail:").u64(f.move_fail_percent);
      if (f.fast_full) sep(), b.str("fast_full");
      if (f.move_delay_ms) sep(), b.str("move_delay_ms:").u64(f.move_delay_ms);
      if (f.move_slow_x) sep(), b.str("move_slow_x:").u64(f.move_slow_x);
      if (f.move_delay_from) sep(), b.str("move_delay_from:").u64(f.move_delay_from);
      break;
    }
    case VarType::tool:
      break;
  }
  size_t n = b.size() < cap - 1 ? b.size() : cap - 1;
  memcpy(buf, b.data(), n);
  buf[n] = '\0';
  return n;
}

bool expand_dump_path(const char* tmpl, int pid, const char* exe, int32_t rank, char* out, size_t cap) {
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
    } else if (c == 'r') {  // the rank in a distributed job; "norank" outside one
      LineBuf b;
      if (rank >= 0)
        b.i64(rank);
      else
        b.str("norank");
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
