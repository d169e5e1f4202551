// libFuzzer target over the planner on parsed dumps: plan_source() then make_plan() with every
// policy, as `sentinel-view plan` runs them. The planner also runs inside the preloaded process, so
// any input it accepts must give a plan that keeps its guarantees (fast only while alive, the budget
// at every interval except all-fast), and anything else must be refused with a reason, never crash.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "format/format_reader.h"
#include "tier/plan_input.h"
#include "tier/planner.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sentinel::fmt::ParseOptions opt;
  opt.verify_checksums = false;
  sentinel::fmt::Profile p;
  try {
    p = sentinel::fmt::parse_profile({data, size}, opt);
  } catch (const sentinel::fmt::FormatError&) {
    return 0;
  }
  sentinel::offline::PlanSource src;
  std::string error;
  if (!sentinel::offline::plan_source(p, -1, &src, &error)) return 0;
  if (src.in.identity_count > 4096) return 0;  // keep each run short
  uint64_t entries = 0;                        // one per identity, or per chunk of one planned in chunks
  for (const auto& d : src.identities) entries += std::max<uint32_t>(sentinel::identity_chunks(d), 1);
  if (entries > 16384) return 0;
  sentinel::PlanScratch scratch;
  if (!scratch.init(sentinel::plan_scratch_bytes(src.in))) std::abort();
  for (uint32_t pol = 0; pol <= SENTINEL_POLICY_HOT; ++pol) {
    for (uint32_t share : {50000u, 1000000u}) {
      scratch.reset();
      sentinel::PlanInput in = src.in;
      in.policy = static_cast<sentinel_policy>(pol);
      in.budget = sentinel::FastBudget{0, share};
      sentinel::Plan plan;
      const char* why = nullptr;
      if (!sentinel::make_plan(in, scratch, &plan, &why)) {
        if (!why || !*why) std::abort();  // refused: always with a reason
        continue;
      }
      uint64_t fast[64] = {};
      for (uint32_t i = 0, d = 0, c = 0; i < plan.entry_count; ++i) {
        const sentinel_plan_entry& e = plan.entries[i];
        // The entries are the identities in order, an identity in chunks with one entry a chunk.
        if (d >= in.identity_count || e.identity != in.identities[d].id || e.chunk != c) std::abort();
        if (e.fast_mask & ~plan.alive_masks[i]) std::abort();
        for (uint32_t k = 0; k < in.intervals; ++k)
          if (e.fast_mask >> k & 1) fast[k] += sentinel::chunk_size(in.identities[d], c);
        if (++c == sentinel::identity_chunks(in.identities[d])) c = 0, ++d;
      }
      if (pol != SENTINEL_POLICY_ALL_FAST)
        for (uint32_t k = 0; k < in.intervals; ++k)
          if (fast[k] > plan.header.fast_budget_bytes) std::abort();
      if (plan.header.predicted_hit_ppm > 1000000) std::abort();
    }
  }
  return 0;
}
