// The one table of accepted and rejected inputs for the syntaxes of base/parse.h. The runtime's
// configuration (test_parse.cpp) and the tools' budget option (test_planner.cpp, through
// offline::parse_fast_bytes) are checked against the same rows.
#pragma once
#include <cstdint>

namespace sentinel::test {

struct SizeCase {
  const char* text;
  bool ok;
  uint64_t bytes;
};
inline constexpr SizeCase kSizeCases[] = {
    {"65536", true, 65536},
    {"64K", true, 65536},
    {"64k", true, 65536},
    {"64KiB", true, 65536},
    {"64KB", true, 65536},
    {"64kb", true, 65536},
    {"1M", true, 1048576},
    {"512MiB", true, 512ull << 20},
    {"2G", true, 2ull << 30},
    {"2GB", true, 2ull << 30},
    {"4G", true, 4ull << 30},
    {"1T", true, 1ull << 40},
    {"0", true, 0},
    {"", false, 0},
    {"12QB", false, 0},
    {"-5", false, 0},
    {"-1", false, 0},
    {"K", false, 0},
    {"G", false, 0},
    {"1.5M", false, 0},
    {"1.5G", false, 0},
    {" 1M", false, 0},
    {"1M ", false, 0},
    {"1MiBx", false, 0},
    {"4X", false, 0},
    {"4iB", false, 0},
    {"4KiBB", false, 0},
    {"99999999999999999999", false, 0},
    {"20000000000000000T", false, 0},
    {"17179869184T", false, 0},
    {"0x10", false, 0},
};

struct BudgetCase {
  const char* text;
  bool ok;  // without "auto"
  uint64_t bytes;
  uint32_t share_ppm;
};
inline constexpr BudgetCase kBudgetCases[] = {
    {"4G", true, 4ull << 30, 0},
    {"512M", true, 512ull << 20, 0},
    {"512MiB", true, 512ull << 20, 0},
    {"1048576", true, 1048576, 0},
    {"64kb", true, 65536, 0},
    {"2GB", true, 2ull << 30, 0},
    {"20%", true, 0, 200000},
    {"12.5%", true, 0, 125000},
    {"100%", true, 0, 1000000},
    {"0.0001%", true, 0, 1},
    {"33.3333%", true, 0, 333333},
    {"0", false, 0, 0},  // a budget of no bytes
    {"0%", false, 0, 0},
    {"0.00001%", false, 0, 0},
    {"12.34567%", false, 0, 0},  // below or finer than a ppm
    {"101%", false, 0, 0},
    {"150%", false, 0, 0},
    {"100.5%", false, 0, 0},
    {"", false, 0, 0},
    {"%", false, 0, 0},
    {".5%", false, 0, 0},
    {"20.%", false, 0, 0},
    {"20 %", false, 0, 0},
    {"20%%", false, 0, 0},
    {"-1", false, 0, 0},
    {"4X", false, 0, 0},
    {"1.5G", false, 0, 0},
    {"99999999999999999999", false, 0, 0},
    {"17179869184T", false, 0, 0},
    {"4iB", false, 0, 0},
    {"4KiBB", false, 0, 0},
    {"G", false, 0, 0},
    {"auto", false, 0, 0},  // only where "auto" is allowed (SENTINEL_FAST_BYTES)
};

// SENTINEL_STEP_COSTS (base/parse.h's parse_step_costs). kind: 0 off, 1 auto, 2 two costs.
struct StepCostsCase {
  const char* text;
  bool ok;
  uint8_t kind;
  uint32_t slow_ns_per_kib;
  uint32_t move_ns_per_kib;
};
inline constexpr StepCostsCase kStepCostsCases[] = {
    {"off", true, 0, 0, 0},
    {"auto", true, 1, 0, 0},
    {"200,500", true, 2, 200, 500},
    {"0,0", true, 2, 0, 0},
    {"200,0", true, 2, 200, 0},
    {"1000000000,1", true, 2, 1000000000, 1},
    {"", false, 0, 0, 0},
    {"on", false, 0, 0, 0},
    {"Auto", false, 0, 0, 0},  // keywords are lower case
    {"OFF", false, 0, 0, 0},
    {"200", false, 0, 0, 0},  // both costs or neither
    {"200,", false, 0, 0, 0},
    {",500", false, 0, 0, 0},
    {"200,500,7", false, 0, 0, 0},
    {"200;500", false, 0, 0, 0},
    {"200, 500", false, 0, 0, 0},
    {" 200,500", false, 0, 0, 0},
    {"-1,500", false, 0, 0, 0},
    {"1.5,500", false, 0, 0, 0},
    {"2K,500", false, 0, 0, 0},  // ns per KiB: a count, not a size
    {"1000000001,0", false, 0, 0, 0},
    {"0,99999999999999999999", false, 0, 0, 0},
    {"auto,1", false, 0, 0, 0},
};

struct TrialClockCase {
  const char* text;
  bool ok;
  bool emulated;
  uint32_t ps_insn, ps_read1;  // the first price and node 1's read
  const char* path;
};
inline constexpr TrialClockCase kTrialClockCases[] = {
    {"wall", true, false, 0, 0, ""},
    {"emulated:11500,0,0,0,300000,170000,450000:/run/sentinel-guest/counts", true, true, 11500, 300000,
     "/run/sentinel-guest/counts"},
    {"emulated:250,10150,8140,16280,30450,22792,73260:/a:b/c", true, true, 250, 30450, "/a:b/c"},  // colons in a path
    {"emulated:0,0,0,0,1,0,0:/c", true, true, 0, 1, "/c"},
    {"emulated:1000000000,0,0,0,0,0,0:/c", true, true, 1000000000, 0, "/c"},
    {"", false, false, 0, 0, ""},
    {"Wall", false, false, 0, 0, ""},
    {"walls", false, false, 0, 0, ""},
    {"emulated", false, false, 0, 0, ""},
    {"emulated:", false, false, 0, 0, ""},
    {"emulated:/run/counts", false, false, 0, 0, ""},     // no prices
    {"emulated:1,2,3,4,5,6:/c", false, false, 0, 0, ""},  // six prices
    {"emulated:1,2,3,4,5,6,7,8:/c", false, false, 0, 0, ""},
    {"emulated:0,0,0,0,0,0,0:/c", false, false, 0, 0, ""},      // nothing priced: no time
    {"emulated:1,2,3,4,5,6,7:", false, false, 0, 0, ""},        // no path
    {"emulated:1,2,3,4,5,6,7:counts", false, false, 0, 0, ""},  // relative
    {"emulated:1,2,3,4,5,6,1000000001:/c", false, false, 0, 0, ""},
    {"emulated:1.5,2,3,4,5,6,7:/c", false, false, 0, 0, ""},  // whole picoseconds
    {"emulated:1,,3,4,5,6,7:/c", false, false, 0, 0, ""},
    {"emulated:-1,2,3,4,5,6,7:/c", false, false, 0, 0, ""},
    {"emulated:1,2,3,4,5,6,7/c", false, false, 0, 0, ""},
};

}  // namespace sentinel::test
