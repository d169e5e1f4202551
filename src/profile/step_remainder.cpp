// Step detection, an epoch's last batch (step_remainder.h).
//
// The remainder begins where the lost lock's pattern ended and is read once every allocation it may
// hold has come, P after it, or earlier where a new lock begins or the stream ends. It is the lock's
// step resized when:
//  - its allocations, in any order, draw on the sites of the lock's step, each at most as often as the
//    step has it: the first site the step no longer has (the next step's first allocation) ends it, and
//    so does more foreign noise than the step budget;
//  - they are at least half the step: a short batch drops only the tensors that fall below the tracking
//    threshold, while an evaluation pass's forward, the same sites at the same sizes, holds fewer;
//  - at least one of them has a size the step never had at that site. The same tokens unchanged are no
//    remainder: they would have been matched by the lock itself, and what it could not match (the next
//    phase's first step) is not this phase's.
#include "profile/step_remainder.h"

namespace sentinel::step_internal {

namespace {

uint64_t site_key(uint32_t site) {
  return mix64(uint64_t{site} ^ 0x5E17E5E17E5E17E5ull);  // apart from the tokens, which mix (site, size)
}

}  // namespace

void StepRemainder::expect(const StepHistory& h, uint64_t from_pos, uint32_t period, uint16_t phase) {
  pending_ = period >= 2 && from_pos >= period && from_pos - period >= h.oldest_pos();
  from_pos_ = from_pos;
  period_ = period;
  phase_ = phase;
}

StepRemainder::Slot* StepRemainder::find(uint64_t key, bool insert) {
  for (uint32_t i = static_cast<uint32_t>(mix64(key)) & (kSlots - 1);; i = (i + 1) & (kSlots - 1)) {
    Slot& s = slots_[i];
    if (s.generation != generation_) {
      if (!insert) return nullptr;
      s = Slot{key, 0, generation_};
      keys_++;
      return &s;
    }
    if (s.key == key) return &s;
  }
}

// Takes one of `key` from what the template has left. *present: the template has the key at all.
bool StepRemainder::take(uint64_t key, bool* present) {
  Slot* s = find(key, false);
  *present = s != nullptr;
  if (!s || s->count == 0) return false;
  s->count--;
  return true;
}

bool StepRemainder::resolve(const StepHistory& h, uint64_t end_pos, bool final, Found* out) {
  if (!pending_) return false;
  pending_ = false;
  const uint32_t P = period_;
  if (from_pos_ - P < h.oldest_pos() || end_pos <= from_pos_) return false;
  if (++generation_ == 0) generation_ = 1;  // 0 is a slot never used
  keys_ = 0;
  for (uint64_t p = from_pos_ - P; p < from_pos_; p++) {
    uint32_t site;
    uint64_t size;
    const uint64_t token = h.tok(p);
    split_token(token, &site, &size);
    if (keys_ + 2 > kMaxKeys) return false;  // a step of more distinct sites than the table holds
    find(site_key(site), true)->count++;
    find(token, true)->count++;
  }
  const uint64_t stop = end_pos < from_pos_ + P ? end_pos : from_pos_ + P;
  const uint32_t budget = step_budget(P, false);
  uint32_t matched = 0, resized = 0, noise = 0;
  uint64_t last = from_pos_;
  bool ended = stop == from_pos_ + P;
  for (uint64_t p = from_pos_; p < stop; p++) {
    uint32_t site;
    uint64_t size;
    const uint64_t token = h.tok(p);
    split_token(token, &site, &size);
    bool known;
    if (!take(site_key(site), &known)) {
      if (known || ++noise > budget) {  // the step has no more of it: the next one has begun
        ended = true;
        break;
      }
      continue;
    }
    matched++;
    last = p;
    bool exact;
    if (!take(token, &exact)) resized++;
  }
  if (uint64_t{matched} * 2 < P || resized == 0) {
    pending_ = !final && !ended;
    return false;
  }
  *out = Found{h.seq_of(from_pos_), h.seq_of(last), P, phase_};
  return true;
}

}  // namespace sentinel::step_internal
