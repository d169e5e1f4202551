#include "runtime/runtime_state.h"

#include "base/vm_region.h"

namespace sentinel {

uint64_t overhead_bytes(const RuntimeState& s) {
  auto pages = [](uint64_t b) { return (b + kPageSize - 1) & ~(kPageSize - 1); };
  return s.arena.metadata_bytes() + pages(s.log.touched_bytes()) + pages(s.marks.touched_bytes()) +
         s.threads.touched_bytes() + pages(uint64_t{s.sites.count()} * sizeof(Site)) + sizeof(RuntimeState) +
         s.site_cache.bytes();
}

}  // namespace sentinel
