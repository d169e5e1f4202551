// Step detection, the lock: which allocation of the cycle starts a step, the template (the reference
// step), the steps that ran before the lock, and earlier locks that overlap. See docs/step-detection.md.
#include "profile/step_detector.h"
#include "profile/step_detector_internal.h"

namespace sentinel {

using namespace step_internal;

// P and the hash of the bag of the last P tokens: the same for any order of the same step.
uint64_t StepDetector::bag_signature(uint64_t pos, uint32_t period) const {
  return mix64((sum_at(pos + 1) - sum_at(pos + 1 - period)) ^ mix64(period));
}

// True when the template just built (P tokens) is n copies of a multiset of P/n tokens for some n >= 2:
// every multiplicity divisible by n. With batches delivered in bursts (two or three steps' worth at a
// time), windows of four steps hold equal bags while single steps do not; such a window is four steps.
bool StepDetector::repeated_composition(uint32_t P) const {
  uint32_t g = 0;
  for (uint32_t o = 0; o < P; o++) {
    const TokenSlot& s = slots_[tmpl_[o] >> 16];
    if ((tmpl_[o] & 0xFFFFu) != 0) continue;  // each token once
    uint32_t a = s.m, b = g;
    while (b) {
      uint32_t t = a % b;
      a = b;
      b = t;
    }
    g = a;
    if (g == 1) return false;
  }
  return g >= 2;
}

// Locks on candidate `cand` at position pos. exact: its last run + P tokens repeat exactly; otherwise its
// last hits windows of P tokens (ending at pos) hold equal bags. False (nothing changes) when the step
// does not fit the template table.
bool StepDetector::lock(uint64_t pos, const Candidate& cand, bool exact) {
  const uint32_t P = cand.period;
  const uint64_t base = pos - P + 1;  // cycle index 0: the window W = [base, pos]
  const uint64_t oldest = oldest_pos();
  uint64_t s0;  // first position of the verified region; s0 == base (mod P)
  if (exact) {
    s0 = pos - min_u64(uint64_t{cand.run} + P, pos - oldest + 1) + 1;
  } else {
    // From the chain's first equal pair: the replay below follows the steps through its noisy ones.
    uint64_t from = cand.chain_from >= 2 * uint64_t{P} ? cand.chain_from - 2 * uint64_t{P} : 0;
    s0 = from >= oldest ? from : oldest;
  }
  auto C = [&](uint64_t k) { return tok(base + k); };
  auto ci = [&](uint64_t x) -> uint32_t {  // cycle index of position x
    return x >= base ? static_cast<uint32_t>((x - base) % P) : static_cast<uint32_t>((P - (base - x) % P) % P);
  };
  tmpl_phase_ = 0;                   // the table is about to hold this candidate's step
  if (!build_template(pos, P, 0)) {  // the multiset; rebuilt below in the order of the chosen rotation
    remember_failure(P, cand.run, cand.hits);
    return false;
  }
  const uint64_t bag_sig = bag_signature(pos, P);
  if (!exact && repeated_composition(P)) {  // P/d copies of d allocations: d's steps, not P's
    remember_failure(P, cand.run, cand.hits);
    return false;
  }

  // Exact locks: a rotation-invariant signature and the least rotation of the sequence, so that a known
  // pattern gets back the step start it had.
  uint64_t sig = 0;
  uint32_t least = 0;
  if (exact) {
    sig = mix64(P);
    for (uint64_t k = 0; k < P; k++) sig += mix64(C(k) ^ (C((k + 1) % P) * 0x9E3779B97F4A7C15ull));
    uint64_t li = 0, lj = 1, lk = 0;
    while (li < P && lj < P && lk < P) {
      uint64_t a = C((li + lk) % P), b = C((lj + lk) % P);
      if (a == b) {
        lk++;
        continue;
      }
      if (a > b)
        li += lk + 1;
      else
        lj += lk + 1;
      if (li == lj) lj++;
      lk = 0;
    }
    least = static_cast<uint32_t>(li < lj ? li : lj);
  }
  Phase* known = nullptr;
  for (Phase& ph : phase_mem_)
    if (ph.id != 0 && ph.period == P && ph.bag_signature == bag_sig) known = &ph;

  // Walk floor: never re-count allocations that a counted lock of this period or longer explained. One
  // that ends inside the verified region gives up its last step at most (that step was this pattern's
  // first, see "taken over" below): without this, an evaluation step, a sub-sequence of the training
  // step, walks back through training steps that merely contain it.
  uint64_t floor = oldest;
  for (uint32_t k = 0; k < kSegmentSlots && k < seg_count_; k++) {
    const Segment& s = seg_[(seg_count_ - 1 - k) % kSegmentSlots];
    if (!s.counted || s.period < P || s.end_seq < seq_of(oldest)) continue;
    uint64_t end_pos = s.end_seq - seq_offset_ + 1;
    if (end_pos > s0) end_pos = s.last_start_seq - seq_offset_;
    if (end_pos > floor && end_pos <= s0) floor = end_pos;
  }

  // Backward alignment: before the verified region, step 1 (and steps after a disturbance) hold the
  // pattern with insertions, and before step 1 the prologue holds other sites. Walk back matching the
  // pattern, skipping up to smax consecutive foreign allocations; a match right after skips counts only
  // if the allocation before it matches too (so that a lone coincidence in the prologue does not shift
  // the step start). The earliest accepted match is the first allocation of the first step.
  const uint32_t smax = P / 4 > 16 ? P / 4 : 16;
  const uint64_t cap = 2 * uint64_t{P} + 64;

  // Exact: matching means equal to the pattern's token at the expected cycle index, going backwards.
  // Calls on_accept(position, cycle index) for each accepted match, latest first.
  auto walk = [&](auto&& on_accept, uint64_t* earliest, uint32_t* earliest_e) {
    *earliest = s0;
    *earliest_e = ci(s0);
    if (s0 <= floor) return;
    uint32_t e = (ci(s0) + P - 1) % P;
    uint32_t skips = 0;
    uint64_t walked = 0;
    bool pending = false;
    uint64_t pend_pos = 0;
    uint32_t pend_e = 0, pend_skips = 0;
    for (uint64_t j = s0 - 1;; j--) {
      if (walked++ >= cap) break;
      if (tok(j) == C(e)) {
        if (pending || skips == 0) {
          if (pending) on_accept(pend_pos, pend_e);
          pending = false;
          on_accept(j, e);
          *earliest = j;
          *earliest_e = e;
        } else {
          pending = true;
          pend_pos = j;
          pend_e = e;
          pend_skips = skips;
          skips = 0;
        }
        e = (e + P - 1) % P;
      } else {
        if (pending) {  // a lone match after skips: count it as skipped, expect its token again
          pending = false;
          skips = pend_skips + 1;
          e = pend_e;
        }
        if (++skips > smax) break;
      }
      if (j == floor) break;
    }
  };

  // Bags: matching means the token still has an occurrence left in the copy of the step being filled
  // backwards (a copy is full after P matches). The lone-match rule applies after a foreign allocation
  // only: surplus allocations of the step's own kinds (batches prefetched several at once) sit next to a
  // step's first allocation, foreign ones mark the prologue. Returns the earliest accepted position:
  // the first allocation of the first step.
  auto bag_walk = [&]() -> uint64_t {
    uint64_t earliest = s0;
    if (s0 <= floor) return earliest;
    OpenStep copy{++epoch_, 0, 0, 0, 0, 0};
    uint32_t q = 0, skips = 0;
    bool foreign = false;  // a foreign allocation was skipped since the last accepted match
    uint64_t walked = 0;
    bool pending = false;
    uint64_t pend_pos = 0;
    int32_t pend_slot = -1;
    uint32_t pend_skips = 0;
    bool pend_foreign = false;
    auto accept = [&](uint64_t j) {
      earliest = j;
      if (++q == P) {
        q = 0;
        copy.epoch = ++epoch_;
      }
    };
    for (uint64_t j = s0 - 1;; j--) {
      if (walked++ >= cap) break;
      const int32_t si = find_slot(tok(j));
      if (si >= 0 && count_of(slots_[si], copy) < slots_[si].m) {
        bump(slots_[si], copy);
        if (pending || !foreign) {
          if (pending) accept(pend_pos);
          pending = false;
          accept(j);
          skips = 0;
          foreign = false;
        } else {
          pending = true;
          pend_pos = j;
          pend_slot = si;
          pend_skips = skips;
          pend_foreign = foreign;
          skips = 0;
          foreign = false;
        }
      } else {
        if (pending) {  // a lone match after a foreign allocation: count it as skipped
          slots_[pend_slot].cnt[copy.field]--;
          pending = false;
          skips = pend_skips + 1;
          foreign = pend_foreign;
        }
        if (si < 0) foreign = true;
        if (++skips > smax) break;
      }
      if (j == floor) break;
    }
    return earliest;
  };

  uint32_t e0;
  uint64_t E = s0;
  // Which walk to trust. The exact one cannot over-accept, but stops at the first displaced allocation
  // of a permuted step; the bag one passes permutations, but would also accept a previous phase whose
  // tokens are a subset of this one's (evaluation before training). So: the exact walk for a known
  // pattern that gets its stored rotation back, or when it matched a whole step (a single-threaded
  // history); otherwise the bag walk.
  const bool stored_rotation = exact && known && known->signature == sig;
  bool use_exact_walk = false;
  uint32_t E_e = 0;
  if (exact) {
    uint64_t matched = 0;
    walk([&](uint64_t, uint32_t) { matched++; }, &E, &E_e);
    use_exact_walk = stored_rotation || matched >= P;
  }
  // The steps before the lock, as positions: the latest kMaxInferredEvents of them get events, all are
  // counted.
  struct Starts {
    uint64_t ring[kMaxInferredEvents];
    uint64_t total = 0, first = 0;
    void add(uint64_t p) {
      if (total == 0) first = p;
      ring[total++ % kMaxInferredEvents] = p;
    }
  } starts;
  uint64_t b_cur = 0;
  if (!use_exact_walk) {
    // E is the first allocation of the first step. Replaying the follower's rules (with the template's
    // multiset; any step with half its allocations may be followed by the next) from E to pos puts the
    // boundaries where the follower will put them once locked, also when the first steps are irregular
    // (shorter, longer, a prefetched batch across the boundary).
    E = bag_walk();
    period_ = P;
    cur_ = OpenStep{++epoch_, 0, 0, 0, 0, 0};
    next_open_ = false;
    starts.add(E);
    b_cur = E;
    for (uint64_t j = E; j <= pos; j++) {
      if (assign(tok(j), P / 2, false).kind != kOpened) continue;
      starts.add(j);
      b_cur = j;
    }
  }
  if (stored_rotation)
    e0 = (least + known->offset) % P;
  else if (use_exact_walk)
    e0 = E_e;
  else
    e0 = b_cur >= base ? static_cast<uint32_t>(b_cur - base) : 0;
#ifdef STEP_DEBUG
  __builtin_printf("lock pos %lu P %u exact %d run %u hits %u s0 %lu floor %lu E %lu e0 %u b_cur %lu base %lu exactwalk %d\n", pos, P, exact, cand.run, cand.hits, s0, floor, E, e0, b_cur, base, use_exact_walk);
#endif
  const bool relock = known != nullptr;
  if (known) {
    known->stamp = ++stamp_;
    phase_id_ = known->id;
    if (exact && known->signature == 0) {  // first exact lock of a phase found by its bag
      known->signature = sig;
      known->offset = (e0 + P - least) % P;
    }
  } else {
    Phase* slot = &phase_mem_[0];
    for (Phase& ph : phase_mem_)
      if (ph.id == 0 || ph.stamp < slot->stamp) {
        slot = &ph;
        if (ph.id == 0) break;
      }
    if (slot->id != 0 && tmpl_phase_ == slot->id) tmpl_phase_ = 0;
    phase_id_ = next_phase_id_++;
    phases_seen_++;
    *slot = Phase{};
    slot->bag_signature = bag_sig;
    slot->signature = sig;
    slot->period = P;
    slot->offset = exact ? (e0 + P - least) % P : 0;
    slot->id = phase_id_;
    slot->stamp = ++stamp_;
    known = slot;
  }
  cur_phase_ = known;

  // Exact: step starts before and at pos are the walk positions at cycle index e0 (collected backwards),
  // then the verified region arithmetically.
  if (use_exact_walk) {
    uint64_t walk_starts[96];
    uint32_t nwalk = 0;
    uint64_t E2;
    uint32_t E2_e;
    walk(
        [&](uint64_t j, uint32_t e) {
          if (e == e0 && nwalk < 96) walk_starts[nwalk++] = j;
        },
        &E2, &E2_e);
    for (uint32_t k = nwalk; k > 0; k--) starts.add(walk_starts[k - 1]);
    const uint64_t first_region = s0 + (e0 + P - ci(s0)) % P;
    const uint64_t nregion = first_region <= pos ? (pos - first_region) / P + 1 : 0;
    const uint64_t skip = nregion > kMaxInferredEvents ? nregion - kMaxInferredEvents : 0;
    if (skip) {  // only the latest get events; count the others
      if (starts.total == 0) starts.first = first_region;
      starts.total += skip;
    }
    for (uint64_t k = skip; k < nregion; k++) starts.add(first_region + k * P);
  }
  const uint64_t total = starts.total;

  // Earlier locks that overlap the allocations this lock explains ([E, pos]) give those steps up: a
  // lock of a shorter period that lies entirely inside is absorbed (an inner loop locked on before the
  // real step was seen twice); otherwise its steps that start at or after E are taken over (the last
  // step of a phase, before the lock noticed the change, is often the first step of the next one).
  // Their step events are voided by a kStepRetract event that comes before this lock's events.
  const uint64_t e_seq = seq_of(E);
  for (uint32_t k = 0; k < kSegmentSlots && k < seg_count_; k++) {
    Segment& s = seg_[(seg_count_ - 1 - k) % kSegmentSlots];
    if (!s.counted || s.end_seq < e_seq || s.steps == 0) continue;
    uint64_t n = 0;
    Phase* sp = phase_slot(s.phase);
    if (s.period < P && s.start_seq >= e_seq) {
      n = s.steps;
      s.counted = false;
      retracted_++;
      if (sp) sp->retracted++;
    } else if (s.last_start_seq >= e_seq) {
      n = (s.last_start_seq - e_seq) / s.period + 1;
      if (n > s.steps) n = s.steps;
    } else {
      continue;
    }
    s.steps -= n;
    committed_steps_ -= n;
    if (sp) sp->steps -= n <= sp->steps ? n : sp->steps;
    emit(s.start_seq > e_seq ? s.start_seq : e_seq, s.end_seq, s.period, s.phase, kStepRetract);
    if (!s.counted) forget_phase_if_unused(s.phase);
  }

  if (!build_template(pos, P, e0)) return false;  // cannot fail: the same tokens fit a moment ago
  tmpl_phase_ = phase_id_;
  tmpl_period_ = P;
  known->distinct = distinct_;
  // Few distinct tokens: a random stream of them fits the bag step after step (two tokens in 9: about
  // one step in 7 by chance), so the follower also asks for their order.
  order_required_ = bag_chance_log10(P, distinct_) > -3;
  state_ = kTentative;
  period_ = P;
  lock_pos_ = pos;
  lock_run_ = cand.run;
  lock_hits_ = cand.hits;
  matches_since_lock_ = 0;
  consecutive_noise_ = 0;
  cur_steps_ = total;
  start_following(pos, e0);
  cur_start_seq_ = total ? seq_of(starts.first) : step_start_;
  last_match_seq_ = cur_seq_;
  retro_from_seq_ = seq_of(s0);
  retro_to_seq_ = seq_of(pos);
  retro_base_seq_ = seq_of(base) + e0;  // (base + e0) has ordinal 0
  locks_++;
  known->locks++;
  known->steps += total;
  known->lost = false;
  ever_locked_ = true;

  // Events: the latest kMaxInferredEvents step starts (all are counted), oldest first.
  const uint16_t first_flags = kStepLock | (relock ? kStepRelock : kStepNewPhase);
  const uint64_t shown = total < kMaxInferredEvents ? total : kMaxInferredEvents;
  for (uint64_t k = total - shown; k < total; k++) {
    const uint64_t p = starts.ring[k % kMaxInferredEvents];
    uint16_t f = p < pos ? kStepInferred : 0;
    if (k == total - shown) f |= first_flags;
    emit(seq_of(p), seq_of(p), P, phase_id_, f);
  }
  return true;
}

}  // namespace sentinel
