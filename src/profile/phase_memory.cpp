// Step detection, the phases and the latest locks (phase_memory.h).
#include "profile/phase_memory.h"

namespace sentinel::step_internal {

PhaseMemory::Phase* PhaseMemory::slot(uint16_t id) {
  if (id == 0) return nullptr;
  for (Phase& ph : phase_mem_)
    if (ph.id == id) return &ph;
  return nullptr;
}

const PhaseMemory::Phase* PhaseMemory::slot(uint16_t id) const {
  return const_cast<PhaseMemory*>(this)->slot(id);
}

PhaseMemory::Phase* PhaseMemory::find(uint32_t period, uint64_t bag_signature) {
  Phase* known = nullptr;
  for (Phase& ph : phase_mem_)
    if (ph.id != 0 && ph.period == period && ph.bag_signature == bag_signature) known = &ph;
  return known;
}

PhaseMemory::Phase* PhaseMemory::add(uint64_t bag_signature, uint64_t signature, uint32_t period, uint32_t offset,
                                     uint16_t* evicted) {
  Phase* s = &phase_mem_[0];
  for (Phase& ph : phase_mem_)
    if (ph.id == 0 || ph.stamp < s->stamp) {
      s = &ph;
      if (ph.id == 0) break;
    }
  *evicted = s->id;
  const uint16_t id = new_id();
  *s = Phase{};
  s->bag_signature = bag_signature;
  s->signature = signature;
  s->period = period;
  s->offset = offset;
  s->id = id;
  s->stamp = ++stamp_;
  return s;
}

uint16_t PhaseMemory::new_id() {
  phases_seen_++;
  return next_phase_id_++;
}

bool PhaseMemory::forget_if_unused(uint16_t id, uint16_t locked) {
  if (id == 0 || locked == id) return false;
  for (uint32_t k = 0; k < recent_count(); k++)
    if (recent(k).counted && recent(k).phase == id) return false;
  bool forgotten = false;
  for (Phase& ph : phase_mem_) {
    if (ph.id != id) continue;
    ph = Phase{};
    phases_seen_--;
    if (id + 1 == next_phase_id_) next_phase_id_--;
    forgotten = true;
  }
  return forgotten;
}

void PhaseMemory::close(const Segment& s) {
  seg_[seg_count_ % kSegmentSlots] = s;
  seg_count_++;
  if (s.counted) committed_steps_ += s.steps;
}

}  // namespace sentinel::step_internal
