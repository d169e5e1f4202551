// Step detection, following a locked step: the template table (distinct tokens of the reference step,
// their multiplicity and template ordinals) and the follower that gives each allocation its identity
// (site, size, k). See docs/step-detection.md, "Following the step".
#include "profile/bag_follower.h"

namespace sentinel::step_internal {

void BagFollower::attach(void* mem) {
  auto* p = static_cast<unsigned char*>(mem);
  slots_ = reinterpret_cast<TokenSlot*>(p);
  tmpl_ = reinterpret_cast<uint32_t*>(p + kSlotBytes);
  by_token_ = reinterpret_cast<uint16_t*>(p + kSlotBytes + kTmplBytes);
}

// ------------------------------------------------------------------------------ the token table

// Open addressing on the token's high bits (tokens are already mixed); a slot of another generation is
// empty, so a new template never clears the table.
int32_t BagFollower::find_slot(uint64_t token) const {
  uint32_t i = static_cast<uint32_t>(token >> (64 - kSlotBits));
  for (uint32_t probes = 0; probes < kSlots; probes++) {
    const TokenSlot& s = slots_[i];
    if (s.gen != gen_) return -1;
    if (s.token == token) return static_cast<int32_t>(i);
    i = (i + 1) & kSlotMask;
  }
  return -1;
}

int32_t BagFollower::insert_slot(uint64_t token) {
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

void BagFollower::bump(TokenSlot& s, const OpenStep& st) {
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
bool BagFollower::build(uint64_t pos, uint32_t period, uint32_t beta) {
  const uint64_t w = pos - period + 1;
  gen_++;
  distinct_ = 0;
  for (uint32_t o = 0; o < period; o++) {
    int32_t si = insert_slot(h_->tok(w + (beta + o) % period));
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

// True when the template just built (P tokens) is n copies of a multiset of P/n tokens for some n >= 2:
// every multiplicity divisible by n. With batches delivered in bursts (two or three steps' worth at a
// time), windows of four steps hold equal bags while single steps do not; such a window is four steps.
bool BagFollower::repeated_composition(uint32_t P) const {
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

// The lock is made at pos: the current step began at cycle index beta, so W[beta..P) (template ordinals
// 0 .. P - beta - 1) are its allocations so far; with beta == 0 it is complete and the next allocation
// of the pattern starts a step.
uint32_t BagFollower::start(uint64_t pos, uint32_t period, uint32_t beta) {
  period_ = period;
  const uint32_t have = period - beta;
  cur_ = OpenStep{++epoch_, 0, have, 0, have - 1, 0};
  for (uint32_t o = 0; o < have; o++) bump(slots_[tmpl_[o] >> 16], cur_);
  next_open_ = false;
  cur_.start_seq = h_->seq_of(pos + 1 - have);
  return have;
}

void BagFollower::restart(uint32_t period) {
  period_ = period;
  cur_ = OpenStep{++epoch_, 0, 0, 0, 0, 0};
  next_open_ = false;
}

// Marks and fixed mode: k of an allocation in the step begun at the latest mark (cur_.epoch changes at
// every step start). The table grows with every new token and starts over when 3/4 full.
uint32_t BagFollower::occurrence(uint64_t token, bool at_step_start) {
  int32_t si = find_slot(token);
  if (si < 0) {
    if (distinct_ >= kMaxDistinct && at_step_start) {  // full: start over at a step start
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

void BagFollower::drop_template() {
  gen_++;
  distinct_ = 0;
  held_phase_ = 0;
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
BagFollower::Assignment BagFollower::assign(uint64_t token, uint32_t open_allowance, bool plausible_late) {
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
void BagFollower::close_current(Assignment* a) {
  const uint32_t P = period_;
  const uint32_t missing = cur_.assigned < P ? P - cur_.assigned : 0;
  a->closed_missing += missing;
  if (cur_.noise + missing > a->closed_worst) a->closed_worst = cur_.noise + missing;
  cur_ = next_;
  next_open_ = false;
}

// ------------------------------------------------------------------------------- template queries

bool BagFollower::entry(uint16_t phase, uint32_t ordinal, uint32_t* site, uint64_t* size, uint32_t* k) const {
  if (phase == 0 || phase != held_phase_ || ordinal >= held_period_) return false;
  const uint32_t e = tmpl_[ordinal];
  split_token(slots_[e >> 16].token, site, size);
  *k = e & 0xFFFFu;
  return true;
}

uint32_t BagFollower::multiplicity(uint16_t phase, uint32_t site, uint64_t size) const {
  if (phase == 0 || phase != held_phase_) return 0;
  const int32_t si = find_slot(make_token(site, size));
  return si < 0 ? 0 : slots_[si].m;
}

uint32_t BagFollower::template_ordinal(uint16_t phase, uint32_t site, uint64_t size, uint32_t k) const {
  if (phase == 0 || phase != held_phase_) return kNoOrdinal;
  const int32_t si = find_slot(make_token(site, size));
  if (si < 0 || k >= slots_[si].m) return kNoOrdinal;
  return by_token_[slots_[si].base + k];
}

}  // namespace sentinel::step_internal
