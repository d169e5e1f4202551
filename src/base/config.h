// The runtime's configuration: every SENTINEL_* variable lives in one table (name, type, default,
// one-line doc), parsed from the environment without allocation. docs/config.md documents the same
// table; a unit test keeps the two in step.
#pragma once
#include <cstddef>
#include <cstdint>

#include "base/log.h"
#include "base/parse.h"

namespace sentinel {

// run: profile, then place and migrate (the default); profile and track do less, off nothing.
enum class Mode : uint8_t { off, track, profile, run };
enum class StepSource : uint8_t { automatic, marks, fixed };
enum class PapiMode : uint8_t { automatic, off, software };
enum class UnwindMethod : uint8_t { libunwind, backtrace, none };
enum class MoveMethod : uint8_t { automatic, move_pages, mbind };

// SENTINEL_FAULT_INJECT (tests only): failures the tier code must survive and count.
struct FaultInjection {
  uint32_t move_fail_percent = 0;  // share of move calls that fail as if the kernel refused (EBUSY)
  bool fast_full = false;          // the fast node behaves as full: placement and move-ins get ENOMEM
  uint32_t move_delay_ms = 0;      // pause inside each migration batch (widens races with frees/fork)
  uint32_t move_slow_x = 0;        // each move call takes this many times as long (a pause after it): a slower link
  uint64_t move_delay_from = 0;    // the pauses begin at this move call (0 and 1: the first): a drift
  bool any() const { return move_fail_percent || fast_full || move_delay_ms || move_slow_x > 1; }
};

struct Config {
  Mode mode = Mode::track;
  uint64_t min_bytes = 0;
  char dump[1024] = {};
  LogLevel log = LogLevel::warn;
  uint64_t retain_bytes = 0;
  uint64_t max_objects = 0;
  bool dump_children = false;
  int32_t snapshot_signal = 0;    // SENTINEL_SNAPSHOT_SIGNAL: SIGUSR1, SIGUSR2, or 0 (none)
  uint64_t snapshot_every_s = 0;  // SENTINEL_SNAPSHOT_EVERY: seconds between periodic snapshots (0: none)
  char exclude[384] = {};         // executables that run in pass-through (base/parse.h's name list)
  char include[384] = {};         // when not empty, only these are tracked, and they always write their dump
  UnwindMethod unwind = UnwindMethod::libunwind;
  uint64_t profile_steps = 0;
  uint64_t profile_granularity = 0;
  uint64_t profile_sweep = 0;
  uint64_t chunk_bytes = 0;         // SENTINEL_CHUNK_BYTES (0: objects are profiled and planned whole)
  uint64_t profile_sample = 0;      // SENTINEL_PROFILE_SAMPLE: 1 in N of a large object's pages profiled
  uint64_t profile_sample_min = 0;  // SENTINEL_PROFILE_SAMPLE_MIN: objects at least this large are sampled
  uint64_t profile_passes = 0;      // SENTINEL_PROFILE_PASSES: profiling passes per mean interval (1: none)
  uint64_t profile_pass_cost = 0;   // SENTINEL_PROFILE_PASS_COST: % of a plain step the passes may add
  StepSource step_source = StepSource::automatic;
  uint64_t step_period = 0;  // StepSource::fixed
  uint64_t intervals = 0;
  PapiMode papi = PapiMode::automatic;
  // Tiering
  uint32_t policy = 0;           // enum sentinel_policy
  uint64_t fast_bytes = 0;       // SENTINEL_FAST_BYTES as bytes (0 with a share, or auto)
  uint32_t fast_share_ppm = 0;   // SENTINEL_FAST_BYTES as a share of the profiled peak
  bool fast_auto = true;         // SENTINEL_FAST_BYTES=auto: the fast node's free memory at start
  bool budget_per_rank = false;  // SENTINEL_BUDGET_PER=rank: a size or auto is each rank's, not the node's
  int32_t fast_node = -1;        // -1: chosen from the topology
  int32_t slow_node = -1;
  MoveMethod move_method = MoveMethod::automatic;
  uint64_t check_steps = 0;    // steps of the placement check (0: none)
  uint64_t check_after = 0;    // planned steps before the check
  uint64_t trial_steps = 0;    // timed steps per candidate of the step-time trial (0: no trial)
  StepCostsText step_costs;    // SENTINEL_STEP_COSTS: the planner's step costs (off, auto or given)
  TrialClockText trial_clock;  // SENTINEL_TRIAL_CLOCK: what times the step-time trial (wall, or emulated)
  FaultInjection faults;
};

enum class VarType : uint8_t {
  mode,
  size,
  count,
  path,
  names,
  log_level,
  boolean,
  snapshot_signal,
  duration,
  unwind,
  step,
  papi,
  tool,
  policy,
  budget,
  budget_per,
  node,
  move,
  step_costs,
  trial_clock,
  faults
};

struct VarSpec {
  const char* name;
  VarType type;
  const char* default_value;
  const char* doc;
  // Numeric entries (size, count): where the value goes and its accepted range.
  uint64_t Config::*field = nullptr;
  uint64_t min = 0;
  uint64_t max = UINT64_MAX;
  bool power_of_two = false;
};

// The table. Entries of type `tool` belong to the launcher and tools; the runtime ignores them.
const VarSpec* config_table(size_t* count);

// A parse problem: the variable, its value and why it was refused. Fixed-size, no allocation.
struct ConfigError {
  char name[64] = {};
  char value[256] = {};
  char reason[160] = {};
  bool is_error = false;
};

// Parses envp (NULL-terminated NAME=value array) into *out, starting from the table's defaults.
// Returns false on the first malformed value, with *err filled. Unknown SENTINEL_* names are not
// errors: the count of them is returned in *unknown and the first in *first_unknown (may be null).
bool parse_config(const char* const* envp, Config* out, ConfigError* err, int* unknown = nullptr,
                  const char** first_unknown = nullptr);

// The toolchain that torch.compile (Inductor) and JIT builds start: SENTINEL_EXCLUDE's default.
inline constexpr const char* kDefaultExclude =
    "cc,c++,cpp,gcc,g++,gcc-*,g++-*,cpp-*,*-linux-gnu-gcc*,*-linux-gnu-g++*,*-linux-gnu-cpp*,clang,clang-*,clang++*,"
    "cc1,cc1plus,cc1obj,lto1,lto-wrapper,collect2,as,*-linux-gnu-as,ld,ld.*,*-linux-gnu-ld*,nvcc,ptxas,cicc,nvlink,"
    "fatbinary,cudafe++,ninja,make,cmake";

// Writes "NAME=value" for table entry i of the effective config into buf; returns the length.
size_t format_config_entry(const Config& c, size_t i, char* buf, size_t cap);

const char* mode_name(Mode m);
const char* move_method_name(MoveMethod m);
const char* log_level_name(LogLevel l);

// Expands %p (pid), %e (executable basename) and %% in a dump path template. Returns false when the
// result does not fit.
bool expand_dump_path(const char* tmpl, int pid, const char* exe_basename, int32_t rank, char* out, size_t cap);

}  // namespace sentinel
