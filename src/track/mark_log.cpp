#include "track/mark_log.h"

#include "base/vm_region.h"

namespace sentinel {

bool MarkLog::init() {
  marks_ = static_cast<Mark*>(vm_map_lazy(kCapacity * sizeof(Mark)));
  return marks_ != nullptr;
}

void MarkLog::add(uint64_t seq, uint64_t ns) {
  uint64_t i = next_.fetch_add(1, std::memory_order_acq_rel);
  if (i < kCapacity) marks_[i] = Mark{seq, ns};
}

}  // namespace sentinel
