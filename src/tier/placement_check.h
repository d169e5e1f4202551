// The placement check's arithmetic: from the touches of a check window (each recorded with whether
// its page was on the fast node at touch time), the distinct bytes touched per interval and how many
// of them were on the fast node. Each granule of an object counts once per (step, interval), clipped
// to the object and weighed by the sample (page_sample.h), as in classification. Runs in the process
// with mmap'd scratch only.
#pragma once
#include <cstdint>

#include "profile/profiler.h"
#include "track/registry.h"

namespace sentinel {

struct PlacementTotals {
  uint64_t touched[64] = {};  // per interval, summed over the checked steps
  uint64_t fast[64] = {};
};

// False when scratch memory cannot be mapped. Touches without the checked flag are ignored.
bool summarize_placement(const TouchRecord* touches, uint64_t count, const ObjectLog& log, uint32_t granularity,
                         const PageSample& sample, uint32_t intervals, PlacementTotals* out);

}  // namespace sentinel
