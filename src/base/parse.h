// One parser per syntax, shared by the runtime's configuration (base/config.cpp) and the tools
// (sentinel-view's options, a dump's recorded settings). No allocation: the runtime parses its
// environment in the library constructor.
#pragma once
#include <cstdint>

namespace sentinel {

// Decimal digits only, no sign, no spaces; false on overflow.
bool parse_count(const char* text, uint64_t* out);

// Bytes with binary units: digits, then an optional K, M, G or T (either case), an optional "i"
// after it and an optional "B": "65536", "64K", "512MiB", "2GB". False for anything else or on
// overflow.
bool parse_size(const char* text, uint64_t* out);

// A duration in whole seconds: digits, then an optional unit s, m or h (lower case): "90", "90s",
// "10m", "2h". False for anything else, on overflow, or above kMaxDurationSeconds.
inline constexpr uint64_t kMaxDurationSeconds = uint64_t{7} * 24 * 3600;  // a week: beyond any period asked
bool parse_duration(const char* text, uint64_t* seconds);

// A share of 100%: "20%", "12.5%", at most four decimals (a part per million), above 0 and at most
// 100%. In parts per million.
bool parse_share(const char* text, uint32_t* ppm);

// A fast-tier budget (SENTINEL_FAST_BYTES, sentinel-view plan --fast-bytes): "auto" where allowed,
// a share of the profiled peak, or a size above 0.
struct BudgetText {
  bool is_auto = false;
  uint64_t bytes = 0;      // a size (share_ppm == 0, !is_auto)
  uint32_t share_ppm = 0;  // a share
};
bool parse_budget(const char* text, bool allow_auto, BudgetText* out);

// The planner's step costs (SENTINEL_STEP_COSTS): "off", "auto" (measured at start), or "SLOW,MOVE",
// two whole numbers of ns per KiB, each at most kMaxStepCostNsPerKib ("200,500"; "0,0" is allowed and
// means unknown, as off).
inline constexpr uint32_t kMaxStepCostNsPerKib = 1000000000;  // a second per KiB: beyond any real cost
enum class StepCostsKind : uint8_t { off, automatic, fixed };
struct StepCostsText {
  StepCostsKind kind = StepCostsKind::off;
  uint32_t slow_ns_per_kib = 0;  // StepCostsKind::fixed
  uint32_t move_ns_per_kib = 0;
};
bool parse_step_costs(const char* text, StepCostsText* out);

// The step-time trial's clock (SENTINEL_TRIAL_CLOCK): "wall" (the default: the machine's clock), or
// "emulated:PRICES:PATH" in a slow-tier guest (docs/guest.md, "Counts, the marker and emulated time"),
// where the trial times steps by the plugin's counts instead: PRICES are kEmuPrices whole numbers of
// picoseconds per count, comma-separated, each at most kMaxPicosPerCount and not all 0 (an instruction;
// node 0's read, stream and write line misses; node 1's), PATH the plugin's counts file, absolute (it may
// hold colons). "emulated:11500,0,0,0,300000,170000,450000:/run/sentinel-guest/counts".
inline constexpr uint32_t kEmuPrices = 7;
inline constexpr uint32_t kMaxPicosPerCount = 1000000000;  // a ms per count: beyond any real cost
struct TrialClockText {
  bool emulated = false;
  uint32_t ps_per_count[kEmuPrices] = {};
  char counts_path[512] = {};
};
bool parse_trial_clock(const char* text, TrialClockText* out);

// A list of executable names: comma-separated patterns of letters, digits and . _ + -, where * matches
// any run of characters and ? one ("cc1plus,ld.*,g++-*"). Empty: no pattern.
bool valid_name_list(const char* list);
// Whether `name` matches one of the list's patterns (the list must be valid).
bool name_list_matches(const char* list, const char* name);

}  // namespace sentinel
