#include "tier/placement_check.h"

#include "base/scratch_table.h"

namespace sentinel {

bool summarize_placement(const TouchRecord* touches, uint64_t count, const ObjectLog& log, uint32_t granularity,
                         const PageSample& sample, uint32_t intervals, PlacementTotals* out) {
  *out = PlacementTotals{};
  ScratchTable<uint8_t> seen;
  if (!seen.init(count)) return false;
  const uint64_t objects = log.size();
  for (uint64_t t = 0; t < count; ++t) {
    const TouchRecord& r = touches[t];
    if (!(r.flags & kTouchChecked) || r.log_index >= objects || r.interval >= intervals || r.interval >= 64) continue;
    bool fresh = false;
    uint64_t key = combine_key(combine_key(r.log_index, r.granule), (uint64_t{r.step} << 16) | r.interval);
    if (!seen.find_or_add(key, &fresh)) return false;
    if (!fresh) continue;
    const sentinel_object* o = log.at(r.log_index);
    const uint64_t bytes = granule_bytes(o->size, r.granule, granularity, sample);
    out->touched[r.interval] += bytes;
    if (r.flags & kTouchOnFast) out->fast[r.interval] += bytes;
  }
  return true;
}

}  // namespace sentinel
