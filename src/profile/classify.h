// Classification after profiling a phase (docs/design.md §2.4): object identities (site, size, k — the k-th
// occurrence of (site, size) in the step, as the step detector assigned it, whatever the interleaving
// of threads), their lifetime class, the bytes they touched per interval, and co-allocation groups
// (like lifetime and like access pattern). Runs once per profiled phase, in the process, with mmap'd
// scratch memory only.
#pragma once
#include <cstdint>

#include "profile/profiler.h"
#include "sentinel/format.h"
#include "track/registry.h"

namespace sentinel {

// What the step detector said of an allocation of a profiled step, per object-log index: its
// template ordinal and occurrence k, each plus one (0: none recorded).
struct Assignment {
  uint32_t ordinal_plus_one;
  uint32_t occurrence_plus_one;
};

struct ClassifyInput {
  const ObjectLog* log = nullptr;
  const Assignment* assignments = nullptr;  // indexed by log index (null: identities by in-step position)
  uint64_t assignment_capacity = 0;
  uint32_t id_base = 0;     // identity ids start here (unique across phases)
  uint32_t group_base = 0;  // and group ids
  // Start seqs of consecutive steps of one phase; step k covers [starts[k], starts[k+1]). The last
  // entry is the end of the last step (count = steps + 1).
  const uint64_t* step_starts = nullptr;
  uint32_t step_bounds = 0;
  uint32_t first_profiled = 0;  // index of the first profiled step in step_starts
  uint32_t profiled = 0;        // profiled steps
  uint32_t phase = 0;
  uint32_t period = 0;                      // allocations per step
  const uint32_t* interval_ends = nullptr;  // interval i covers ordinals [end(i-1), interval_ends[i])
  uint32_t intervals = 0;
  const TouchRecord* touches = nullptr;
  uint64_t touch_count = 0;
  uint32_t granularity = 0;
  // Objects born outside the steps of at least kChunkedMinChunks chunks are profiled and planned in
  // chunks of this many bytes (a power of two, at least the granularity; 0: every object whole).
  uint32_t chunk_bytes = 0;
  // Objects profiled in a sample: each recorded granule stands for sample.rate granules (page_sample.h).
  PageSample sample;
  // The window was profiled in passes (Profiler::start_passes): each touch gets its passes_x256.
  bool passes = false;
  // Where the pass period doubled (SENTINEL_PROFILE_PASS_COST), in the window's order.
  const Profiler::PassShift* pass_shifts = nullptr;
  uint32_t pass_shift_count = 0;
};

inline constexpr uint64_t kChunkedMinChunks = 8;

struct Classification {
  sentinel_identity* identities = nullptr;
  uint32_t identity_count = 0;
  uint32_t* identity_objects = nullptr;  // per identity: log index of its latest instance
  sentinel_touch* touches = nullptr;
  uint64_t touch_count = 0;
  sentinel_group* groups = nullptr;
  uint32_t group_count = 0;
  uint64_t bytes = 0;  // mapped for the arrays above
};

// Fills *out; its arrays are mmap'd and kept for the life of the process. False when memory for the
// scratch tables could not be mapped.
bool classify(const ClassifyInput& in, Classification* out);

uint32_t interval_of(const uint32_t* interval_ends, uint32_t intervals, uint32_t ordinal);

}  // namespace sentinel
