#include "runtime_state.h"

#include "vm_region.h"

namespace sentinel {

bool MarkLog::init() {
  marks_ = static_cast<Mark*>(vm_map_lazy(kCapacity * sizeof(Mark)));
  return marks_ != nullptr;
}

void MarkLog::add(uint64_t seq, uint64_t ns) {
  uint64_t i = next_.fetch_add(1, std::memory_order_acq_rel);
  if (i < kCapacity) marks_[i] = Mark{seq, ns};
}

uint64_t overhead_bytes(const RuntimeState& s) {
  auto pages = [](uint64_t b) { return (b + kPageSize - 1) & ~(kPageSize - 1); };
  return s.arena.metadata_bytes() + pages(s.log.touched_bytes()) + pages(s.marks.touched_bytes()) + s.threads.touched_bytes() +
         pages(uint64_t{s.sites.count()} * sizeof(Site)) + sizeof(RuntimeState) + s.site_cache.bytes();
}

}  // namespace sentinel
