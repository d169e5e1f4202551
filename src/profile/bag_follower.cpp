// Step detection, following a locked step: the template table (distinct tokens of the reference step,
// their multiplicity and template ordinals) and the follower that gives each allocation its identity
// (site, size, k). See docs/step-detection.md, "Following the step".
#include "profile/step_detector.h"
#include "profile/step_detector_internal.h"

namespace sentinel {

using namespace step_internal;

// ------------------------------------------------------------------------------ the token table

// Open addressing on the token's high bits (tokens are already mixed); a slot of another generation is
// empty, so a new template never clears the table.
int32_t StepDetector::find_slot(uint64_t token) const {
  uint32_t i = static_cast<uint32_t>(token >> (64 - kSlotBits));
  for (uint32_t probes = 0; probes < kSlots; probes++) {
    const TokenSlot& s = slots_[i];
    if (s.gen != gen_) return -1;
    if (s.token == token) return static_cast<int32_t>(i);
    i = (i + 1) & kSlotMask;
  }
  return -1;
}

int32_t StepDetector::insert_slot(uint64_t token) {
  uint32_t i = static_cast<uint32_t>(token >> (64 - kSlotBits));
  for (uint32_t probes = 0; probes < kSlots; probes++) {
    TokenSlot& s = slots_[i];
    if (s.gen != gen_) {
      if (distinct_ >= kMaxDistinct) return -1;  // keep probes short: at most 3/4 full
      s = TokenSlot{};
      s.token = token;
      s.gen = gen_;
      distinct_++;
      return static_cast<int32_t>(i);
    }
    if (s.token == token) return static_cast<int32_t>(i);
    i = (i + 1) & kSlotMask;
  }
  return -1;
}

void StepDetector::bump(TokenSlot& s, const OpenStep& st) {
  if (s.ep[st.field] != st.epoch) {
    s.ep[st.field] = st.epoch;
    s.cnt[st.field] = 0;
  }
  if (s.cnt[st.field] < UINT16_MAX) s.cnt[st.field]++;
}

// The template: the last P tokens (W = [pos - P + 1, pos]) read from cycle index beta on, so that
// template ordinal o is W[(beta + o) mod P]. Each distinct token gets its multiplicity m and its m
// ordinals (by_token_[base .. base + m), in step order: the k-th occurrence has the k-th ordinal). False
// when the step has more distinct tokens than the table holds, or a token more than 65535 times.
bool StepDetector::build_template(uint64_t pos, uint32_t period, uint32_t beta) {
  const uint64_t w = pos - period + 1;
  gen_++;
  distinct_ = 0;
  for (uint32_t o = 0; o < period; o++) {
    int32_t si = insert_slot(tok(w + (beta + o) % period));
    if (si < 0 || slots_[si].m == UINT16_MAX) return false;
    slots_[si].m++;
    tmpl_[o] = static_cast<uint32_t>(si) << 16;
  }
  // Bases in order of first occurrence; then each ordinal takes the next place of its token.
  const OpenStep placed{++epoch_, 0, 0, 0, 0, 0};
  const OpenStep filled{++epoch_, 1, 0, 0, 0, 0};
  uint32_t next_base = 0;
  for (uint32_t o = 0; o < period; o++) {
    TokenSlot& s = slots_[tmpl_[o] >> 16];
    if (s.ep[placed.field] != placed.epoch) {
      s.ep[placed.field] = placed.epoch;
      s.base = static_cast<uint16_t>(next_base);
      next_base += s.m;
    }
    uint32_t k = count_of(s, filled);
    bump(s, filled);
    by_token_[s.base + k] = static_cast<uint16_t>(o);
    if (k == 0) s.first = o;
    tmpl_[o] |= k;
  }
  return true;
}

// The lock is made at pos: the current step began at cycle index beta, so W[beta..P) (template ordinals
// 0 .. P - beta - 1) are its allocations so far; with beta == 0 it is complete and the next allocation
// of the pattern starts a step.
void StepDetector::start_following(uint64_t pos, uint32_t beta) {
  const uint32_t P = period_;
  const uint32_t have = P - beta;
  cur_ = OpenStep{++epoch_, 0, have, 0, have - 1, 0};
  for (uint32_t o = 0; o < have; o++) bump(slots_[tmpl_[o] >> 16], cur_);
  next_open_ = false;
  cur_.start_seq = seq_of(pos + 1 - have);
  step_start_ = cur_.start_seq;
  ordinal_ = have - 1;
  clock_ = have - 1;
}

// Marks and fixed mode: k of an allocation in the step begun at the latest mark (cur_.epoch changes at
// every step start). The table grows with every new token and starts over when 3/4 full.
uint32_t StepDetector::occurrence_since_mark(uint64_t token) {
  int32_t si = find_slot(token);
  if (si < 0) {
    if (distinct_ >= kMaxDistinct && ordinal_ == 0) {  // full: start over at a step start
      gen_++;
      distinct_ = 0;
    }
    si = insert_slot(token);
    if (si < 0) return kNoOrdinal;
  }
  TokenSlot& s = slots_[si];
  uint32_t k = count_of(s, cur_);
  if (k == UINT16_MAX) return kNoOrdinal;
  bump(s, cur_);
  return k;
}

// ---------------------------------------------------------------------------------- the follower

// Up to two steps are open: the current one and, once an allocation overflowed it, the next. An
// allocation of token t is assigned, in this order of preference:
//  1. to the current step, if it has fewer than m(t) of t; once the next step is open, only if t's
//     ordinal there is at most `budget` before the current step's count (a late allocation: a racing
//     thread's tensor that the current step was still waiting for; an identity the current step missed
//     long before is not filled from the next step, which would shift that token by one step for good);
//  2. to the next step, if it is open and has fewer than m(t) of t;
//     (if it is open and full of t as well, the current step is closed and the rule applied again);
//  3. to a new next step, opened now, if the current step misses at most `open_allowance` identities;
//     this allocation is the first of that step;
//  4. otherwise it is noise (a foreign allocation, or one too many of t in the middle of a step).
// The current step closes when it is complete, or when the next one has P/2 allocations (what it still
// misses is then counted missing). Counts are by (site, size) only, so any interleaving of a step's
// allocations gives the same identities; where a step starts is where the pattern overflows.
// plausible_late: apply the ordinal test of rule 1 (the template's ordinals are final).
StepDetector::Assignment StepDetector::assign(uint64_t token, uint32_t open_allowance, bool plausible_late) {
  const uint32_t P = period_;
  const uint32_t budget = step_budget(P, false);
  Assignment a{};
  const int32_t si = find_slot(token);
  if (si < 0) return a;
  TokenSlot& s = slots_[si];
  OpenStep* st = nullptr;
  const uint32_t kc = count_of(s, cur_);
  if (kc < s.m && (!next_open_ || !plausible_late || ordinal_of(s, kc) + budget >= cur_.assigned)) {
    st = &cur_;
    a.kind = next_open_ ? kLate : kCurrent;
  } else if (next_open_) {
    if (count_of(s, next_) < s.m) {
      st = &next_;
      a.kind = kNext;
    } else {
      close_current(&a);
    }
  }
  if (!st) {
    if (P - cur_.assigned > open_allowance) {
      a.kind = kNoise;
      return a;
    }
    next_ = OpenStep{++epoch_, cur_.field ^ 1u, 0, 0, 0, 0};
    next_open_ = true;
    st = &next_;
    a.kind = kOpened;
  }
  a.k = count_of(s, *st);
  bump(s, *st);
  a.ordinal = ordinal_of(s, a.k);
  a.displaced = st->assigned > 0 && a.ordinal < st->last_ordinal;
  st->assigned++;
  st->last_ordinal = a.ordinal;
  if (next_open_ && (cur_.assigned >= P || next_.assigned > P / 2)) close_current(&a);
  return a;
}

// The current step is over: what it still misses is counted in *a, and the next step becomes current.
void StepDetector::close_current(Assignment* a) {
  const uint32_t P = period_;
  const uint32_t missing = cur_.assigned < P ? P - cur_.assigned : 0;
  a->closed_missing += missing;
  if (cur_.noise + missing > a->closed_worst) a->closed_worst = cur_.noise + missing;
  cur_ = next_;
  next_open_ = false;
}

// Locked: the assignment, then what it means for the counters, the events and the tolerance policy. A
// step's noise (foreign allocations) and missing identities together may not exceed max(2, P/8) (2 while
// tentative); 16 foreign allocations in a row (2 while tentative) end the lock as well.
FeedResult StepDetector::follow(uint64_t pos, uint64_t token) {
  const uint32_t P = period_;
  const bool tentative = state_ == kTentative;
  const uint32_t budget = step_budget(P, tentative);
  // The next step may begin while this one misses at most one identity more than the budget, and at most
  // a quarter of the step (rounded up): with a tiny step over few tokens, any stream of those tokens would
  // fit otherwise. The one over the budget is for a late allocation that comes after the next step's
  // first ones (a batch delivered late under load): it may still be filled late, and the step is judged
  // by the budget when it closes.
  const uint32_t quarter = (P + 3) / 4;
  const Assignment a = assign(token, budget + 1 < quarter ? budget + 1 : quarter, true);
  if (a.closed_missing) {
    skipped_tokens_ += a.closed_missing;
    if (cur_phase_) cur_phase_->missing += a.closed_missing;
  }
  if (a.closed_worst > budget) {
    unlock(pos, tentative);
    return {kNoOrdinal, kNoOrdinal, kNoOrdinal, 0, 0};
  }
  if (a.kind == kNoise) return noise(pos, token);
  if (a.displaced) {
    displaced_tokens_++;
    if (order_required_) {  // out of order counts against the budget (the identity stands)
      OpenStep& st = next_open_ ? next_ : cur_;
      if (++st.noise > budget) {
        unlock(pos, tentative);
        return {kNoOrdinal, kNoOrdinal, kNoOrdinal, 0, 0};
      }
    }
  }
  ordinal_ = a.ordinal;
  consecutive_noise_ = 0;
  last_match_seq_ = cur_seq_;
  uint16_t flags = kFedLocked;
  if (a.kind == kLate) {
    late_tokens_++;
    flags |= kFedLate;
  }
  if (a.kind == kOpened) {
    flags |= kFedStepStart;
    (next_open_ ? next_ : cur_).start_seq = cur_seq_;
    step_start_ = cur_seq_;
    cur_steps_++;
    if (cur_phase_) cur_phase_->steps++;
    emit(cur_seq_, cur_seq_, P, phase_id_, 0);
  }
  clock_ = (next_open_ ? next_.assigned : cur_.assigned) - 1;
  if (tentative && ++matches_since_lock_ >= (P > kConfirmTokens ? P : kConfirmTokens)) state_ = kConfirmed;
  return {a.ordinal, a.k, clock_, phase_id_, flags};
}

// An allocation that fits no identity: counted against the newest step's budget and against the run of
// noise in a row; the clock stays where it is. A burst of one token (a prefetch thread delivering two or
// three batches at once) is one irregularity: its repeats right after it count once per kNoiseBurst.
FeedResult StepDetector::noise(uint64_t pos, uint64_t token) {
  const bool tentative = state_ == kTentative;
  noise_tokens_++;
  if (cur_phase_) cur_phase_->noise++;
  if (consecutive_noise_ > 0 && token == last_noise_token_ && ++noise_burst_ % kNoiseBurst != 0)
    return {ordinal_, kNoOrdinal, clock_, phase_id_, static_cast<uint16_t>(kFedLocked | kFedNoise)};
  if (token != last_noise_token_ || consecutive_noise_ == 0) noise_burst_ = 0;
  last_noise_token_ = token;
  OpenStep& st = next_open_ ? next_ : cur_;
  st.noise++;
  if (consecutive_noise_++ == 0) first_noise_seq_ = cur_seq_;
  if (st.noise > step_budget(period_, tentative) ||
      consecutive_noise_ >= (tentative ? kTentativeBudget : kMaxConsecutiveNoise)) {
    unlock(pos, tentative);
    return {kNoOrdinal, kNoOrdinal, kNoOrdinal, 0, 0};
  }
  return {ordinal_, kNoOrdinal, clock_, phase_id_, static_cast<uint16_t>(kFedLocked | kFedNoise)};
}

// ------------------------------------------------------------------------------- template queries

bool StepDetector::template_entry(uint16_t phase, uint32_t ordinal, uint32_t* site, uint64_t* size,
                                  uint32_t* k) const {
  if (!mem_ || phase == 0 || phase != tmpl_phase_ || ordinal >= tmpl_period_) return false;
  const uint32_t e = tmpl_[ordinal];
  split_token(slots_[e >> 16].token, site, size);
  *k = e & 0xFFFFu;
  return true;
}

uint32_t StepDetector::multiplicity(uint16_t phase, uint32_t site, uint64_t size) const {
  if (!mem_ || phase == 0 || phase != tmpl_phase_) return 0;
  const int32_t si = find_slot(make_token(site, size));
  return si < 0 ? 0 : slots_[si].m;
}

uint32_t StepDetector::template_ordinal(uint16_t phase, uint32_t site, uint64_t size, uint32_t k) const {
  if (!mem_ || phase == 0 || phase != tmpl_phase_) return kNoOrdinal;
  const int32_t si = find_slot(make_token(site, size));
  if (si < 0 || k >= slots_[si].m) return kNoOrdinal;
  return by_token_[slots_[si].base + k];
}

}  // namespace sentinel
