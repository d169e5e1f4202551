// Step detection, where a step starts: the walks back from a new lock (exact and by bags), the replay of
// the follower's rules over the steps before the lock, and the rotation the live bytes give. See
// docs/step-detection.md, "Where a step starts".
#include "profile/step_lock_parts.h"

namespace sentinel::step_internal {

// Backward alignment: before the verified region, step 1 (and steps after a disturbance) hold the pattern
// with insertions, and before step 1 the prologue holds other sites. Walk back matching the pattern,
// skipping up to smax consecutive foreign allocations; a match right after skips counts only if the
// allocation before it matches too (so that a lone coincidence in the prologue does not shift the step
// start). The earliest accepted match is the first allocation of the first step.
//
// Exact: matching means equal to the pattern's token at the expected cycle index, going backwards.
// Calls on_accept(position, cycle index) for each accepted match, latest first.
//
// trusted: a cycle index where steps are known to start (live_rotation()); a lone match there is a step's
// first allocation after a library's one-time buffer, not a coincidence, and is accepted. a.P: none.
template <typename OnAccept>
void StepLock::walk_exact(const Alignment& a, uint32_t trusted, OnAccept&& on_accept, uint64_t* earliest,
                          uint32_t* earliest_e) const {
  const uint32_t P = a.P;
  *earliest = a.s0;
  *earliest_e = a.ci(a.s0);
  if (a.s0 <= a.floor) return;
  uint32_t e = (a.ci(a.s0) + P - 1) % P;
  uint32_t skips = 0;
  uint64_t walked = 0;
  bool pending = false;
  uint64_t pend_pos = 0;
  uint32_t pend_e = 0, pend_skips = 0;
  for (uint64_t j = a.s0 - 1;; j--) {
    if (walked++ >= a.cap) break;
    if (h_->tok(j) == a.C(e)) {
      if (pending || skips == 0 || e == trusted) {
        if (pending) on_accept(pend_pos, pend_e);
        pending = false;
        skips = 0;
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
      if (++skips > a.smax) break;
    }
    if (j == a.floor) break;
  }
}

// Bags: matching means the token still has an occurrence left in the copy of the step being filled
// backwards (a copy is full after P matches). The lone-match rule applies after a foreign allocation
// only: surplus allocations of the step's own kinds (batches prefetched several at once) sit next to a
// step's first allocation, foreign ones mark the prologue. Returns the earliest accepted position: the
// first allocation of the first step.
uint64_t StepLock::walk_bags(const Alignment& a) {
  uint64_t earliest = a.s0;
  if (a.s0 <= a.floor) return earliest;
  BagFollower::OpenStep copy = follower_->fresh_step();
  // A known pattern's walk stops at a run of foreign allocations longer than a step's budget: before it
  // lies the phase that ran in between (Keras's validation batches and its epoch end, whose tokens are a
  // subset of training's), not this pattern's first step.
  const uint32_t foreign_max = a.known ? step_budget(a.P, false) : UINT32_MAX;
  uint32_t foreign_run = 0;
  const uint32_t budget = step_budget(a.P, false);
  // A bag lock may come several steps late (batches delivered in bursts break the chain of equal bags):
  // its walk may read back through up to 16 steps.
  const uint64_t cap = a.exact ? a.cap : 16 * uint64_t{a.P} + 64;
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
    if (++q == a.P) {
      q = 0;
      copy = follower_->fresh_step();
    }
  };
  for (uint64_t j = a.s0 - 1;; j--) {
    if (walked++ >= cap) break;
    const int32_t si = follower_->find_slot(h_->tok(j));
    if (si >= 0) foreign_run = 0;
    if (!a.exact && si >= 0 && !pending && q > 0 && a.P - q <= budget && !follower_->has_room(si, copy)) {
      q = 0;  // the copy misses at most a step's budget (its batch came with another step): the next begins
      copy = follower_->fresh_step();
    }
    if (si >= 0 && follower_->has_room(si, copy)) {
      follower_->count(si, copy);
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
        follower_->uncount(pend_slot, copy);
        pending = false;
        skips = pend_skips + 1;
        foreign = pend_foreign;
      }
      if (si < 0) foreign = true;
      if (si < 0 && ++foreign_run > foreign_max) break;
      if (++skips > a.smax) break;
    }
    if (j == a.floor) break;
  }
  return earliest;
}

// A token that overflows the step being replayed and comes more than 2m times (m: its multiplicity) from
// the current step's start to P allocations past it is a surplus: batches prefetched together at the
// start of a pass (Keras's iterators fetch four), which would cut the first step in two. It opens a step
// only after a complete one. The count also takes the run of that token right before the step's start:
// the walk back may leave some of a burst of batches before the first step it accepts.
bool StepLock::surplus(const Alignment& a, uint64_t from, uint64_t j) const {
  const uint64_t t = h_->tok(j);
  const int32_t si = follower_->find_slot(t);
  if (si < 0 || follower_->has_room(si, follower_->current())) return false;
  const uint64_t oldest = h_->oldest_pos();
  for (uint32_t back = 0; back < a.P && from > oldest && h_->tok(from - 1) == t; back++) from--;
  uint32_t n = 0;
  const uint64_t end = j + a.P < a.pos + 1 ? j + a.P : a.pos + 1;
  for (uint64_t x = from; x < end; x++) n += h_->tok(x) == t;
  return n > 2 * follower_->multiplicity_of(si);
}

// `first` is the first allocation of the first step. Replaying the follower's rules (with the template's
// multiset; any step with half its allocations may be followed by the next) from there to pos puts the
// boundaries where the follower will put them once locked, also when the first steps are irregular
// (shorter, longer, a prefetched batch across the boundary). Returns the last boundary.
uint64_t StepLock::replay(const Alignment& a, uint64_t first, Starts* starts) {
  follower_->restart(a.P);
  starts->add(first);
  uint64_t last = first;
  for (uint64_t j = first; j <= a.pos; j++) {
    if (follower_->assign(h_->tok(j), surplus(a, last, j) ? 0 : a.P / 2, false).kind != BagFollower::kOpened) continue;
    starts->add(j);
    last = j;
  }
  return last;
}

// Which allocation of the cycle starts a step: returns its cycle index e0, with *first the first
// allocation of the first step and the steps before the lock in *starts. Which walk to trust: the exact
// one cannot over-accept, but takes a step start only where the locked order holds, so it passes over
// permuted steps without counting them; the bag one counts permuted steps, but would also accept a previous
// phase whose tokens are a subset of this one's (evaluation before training). So: the exact walk for a
// known pattern that gets its stored rotation back, or when it matched a whole step (a single-threaded
// history), unless the bag walk counts more whole steps over the same allocations (bags_count_more());
// otherwise the bag walk and the replay, whose boundaries are the steps before the lock.
uint32_t StepLock::step_rotation(const Alignment& a, const Phase* known, const Rotation& rot, bool ordered,
                                 Starts* starts, uint64_t* first, bool* use_exact_walk) {
  const bool stored_rotation = a.exact && known && known->signature == rot.sig;
  *first = a.s0;
  *use_exact_walk = false;
  uint32_t first_e = 0;
  if (a.exact) {
    uint64_t matched = 0;
    walk_exact(
        a, a.P, [&](uint64_t, uint32_t) { matched++; }, first, &first_e);
    *use_exact_walk = stored_rotation || matched >= a.P;
  }
  uint32_t e0 = 0;
  if (*use_exact_walk) {
    e0 = stored_rotation ? (rot.least + known->offset) % a.P : live_rotation(a, first_e);
    exact_starts(a, e0, starts);
  }
  Starts bag;
  const uint64_t bag_first = walk_bags(a);
  const uint32_t walked_e = rotation_at(a, replay(a, bag_first, &bag));
  if (*use_exact_walk) {
    if (!bags_count_more(a, starts->total, bag)) return e0;
    *use_exact_walk = false;
  }
  *first = bag_first;
  *starts = bag;
  // A known pattern keeps the rotation it had; the bag walk's steps are moved to it (a relock whose first
  // step was permuted by another thread: a DDP rank's after each evaluation pass).
  if (!stored_rotation) {
    if (!ordered) return walked_e;
    e0 = live_rotation(a, walked_e);
  }
  if (!starts->total || !h_->live_known(a.pos)) return e0;
  *first = settle_starts(a, signed_shift(walked_e, e0, a.P), e0, starts);
  return e0;
}

// An exact walk that matched a whole step may still have passed over permuted steps (a thread pool's
// first steps, Keras's with Adam's slot variables born in them; a validation pass's first step holding
// four batches), giving them no start: those steps are counted when the bag walk counts more steps than
// the exact walk's `exact_total` and every step it replays before the verified region is whole (all but a
// step's budget of the bag). A bag walk that went on into a previous phase whose tokens are a subset of
// this one's (evaluation before training) replays steps that are not whole there. One-time allocations
// in a single-threaded first step (optimizer state, made at sites of their own) are foreign to the bag,
// so they never make a second whole copy.
bool StepLock::bags_count_more(const Alignment& a, uint64_t exact_total, const Starts& bag) const {
  if (bag.total <= exact_total || bag.oldest_held() != 0) return false;
  const uint32_t budget = step_budget(a.P, false);
  for (uint64_t k = 0; k + 1 < bag.total && bag.at(k) < a.s0; k++) {
    BagFollower::OpenStep copy = follower_->fresh_step();
    uint32_t fit = 0;
    for (uint64_t j = bag.at(k); j < bag.at(k + 1); j++) {
      const int32_t si = follower_->find_slot(h_->tok(j));
      if (si >= 0 && follower_->has_room(si, copy)) {
        follower_->count(si, copy);
        fit++;
      }
    }
    if (fit + budget < a.P) return false;
  }
  return true;
}

// The replay's steps, each moved by `shift` to the cycle index e0 where the live bytes say steps begin
// (0 when they agree). Those before the verified region (step 1, and steps after a disturbance) are
// irregular (one-time buffers, a longer or shorter step), so the replay's boundaries there are only
// near the true ones: each is anchored again, at the allocation of e0's kind within half a step with the
// least bytes live before it. The step under way at pos, at e0, is the last. Returns the first step's
// first allocation.
uint64_t StepLock::settle_starts(const Alignment& a, int64_t shift, uint32_t e0, Starts* starts) const {
  Starts settled;
  const uint64_t total = starts->total, oldest = starts->oldest_held();
  auto moved = [&](uint64_t k) { return static_cast<int64_t>(starts->at(k)) + shift; };
  if (oldest) {  // older steps beyond the ring stay counted
    settled.total = oldest;
    settled.first = static_cast<uint64_t>(static_cast<int64_t>(starts->first) + shift);
  }
  const uint64_t current = a.base + e0;  // the step under way at pos
  uint64_t last = a.floor, added = 0;
  for (uint64_t k = oldest; k < total; k++) {
    if (moved(k) < static_cast<int64_t>(a.floor) || moved(k) > static_cast<int64_t>(current)) continue;
    uint64_t at = static_cast<uint64_t>(moved(k));
    if (at < a.s0) {
      const uint64_t next = k + 1 < total && moved(k + 1) > 0 ? static_cast<uint64_t>(moved(k + 1)) : current;
      at = anchor(a, at, added ? last + 1 : a.floor, next, e0);
    }
    if (added && at <= last) continue;
    settled.add(at);
    last = at;
    added++;
  }
  if (!added || last < current) settled.add(current);
  *starts = settled;
  return settled.first;
}

// `at` when it is an allocation of e0's kind; otherwise the one of that kind in [lo, next), within half a
// step of `at`, with the least bytes live before it (the nearer one on a tie), or `at` when there is none.
// (Not the least of all: the prologue before step 1 may hold allocations of the kind, with fewer bytes
// live, such as batches made before the loop.)
uint64_t StepLock::anchor(const Alignment& a, uint64_t at, uint64_t lo, uint64_t next, uint32_t e0) const {
  const uint64_t kind = a.C(e0);
  if (h_->tok(at) == kind) return at;
  const uint64_t half = a.P / 2;
  const uint64_t from = max_u64(lo, at > half ? at - half : 0), to = min_u64(next, at + half + 1);
  auto distance = [at](uint64_t j) { return j > at ? j - at : at - j; };
  uint64_t best = at;
  int64_t best_live = INT64_MAX;
  for (uint64_t j = from; j < to; j++) {
    const int64_t v = h_->live(j);
    if (h_->tok(j) != kind || v == StepHistory::kNoLive) continue;
    if (v < best_live || (v == best_live && distance(j) < distance(best))) {
      best = j;
      best_live = v;
    }
  }
  return best;
}

// The rotation that a step starting at position `last` (the replay's last boundary) gives.
uint32_t StepLock::rotation_at(const Alignment& a, uint64_t last) {
  return last >= a.base ? static_cast<uint32_t>(last - a.base) : 0;
}

// The cycle index with the least bytes live just before its allocation, over the last whole step before
// pos: where the iteration's working set is smallest, which is where a training loop's iteration begins
// (measured on every live workload of the suite, PyTorch and Keras: docs/step-detection.md). Only a step
// that kept nothing (the same live bytes one step later) is read: the first steps still grow (gradients
// and optimizer state are born in them), and an object kept at one point would move the least point there.
// Ties form plateaus (an allocation that replaces an object of its size): a plateau starts a step at its
// first index. walked: the walk's choice, kept when it is among the least, when live bytes are not known,
// and when the step is not steady yet.
uint32_t StepLock::live_rotation(const Alignment& a, uint32_t walked) const {
  const uint32_t P = a.P;
  const uint64_t from = max_u64(a.s0, h_->oldest_pos());
  if (a.pos < from + P) return walked;
  const uint64_t w0 = a.pos - P;  // the step [w0, pos); live(pos) is w0's level one step later
  const int64_t first = h_->live(w0);
  if (first == StepHistory::kNoLive || h_->live(a.pos) != first) return walked;
  auto level = [&](uint32_t e, int64_t* out) {
    const int64_t v = h_->live(w0 + (e + P - a.ci(w0)) % P);
    *out = v;
    return v != StepHistory::kNoLive;
  };
  int64_t least = 0, at_walked = 0;
  if (!level(walked, &at_walked)) return walked;
  least = at_walked;
  for (uint32_t e = 0; e < P; e++) {
    int64_t v = 0;
    if (!level(e, &v)) return walked;
    if (v < least) least = v;
  }
  if (at_walked == least) return walked;
  // The plateau start nearest the walk's choice.
  uint32_t best = walked, best_distance = UINT32_MAX;
  for (uint32_t e = 0; e < P; e++) {
    int64_t v = 0, before = 0;
    level(e, &v);
    level((e + P - 1) % P, &before);
    if (v != least || before == least) continue;
    const int64_t shift = signed_shift(walked, e, P);
    const uint32_t distance = static_cast<uint32_t>(shift < 0 ? -shift : shift);
    if (distance < best_distance) {
      best = e;
      best_distance = distance;
    }
  }
  return best;
}

// The shift in (-P/2, P/2] that takes cycle index `from` to `to`.
int64_t StepLock::signed_shift(uint32_t from, uint32_t to, uint32_t P) {
  int64_t d = (static_cast<int64_t>(to) - from) % P;
  if (d < 0) d += P;
  if (d > P / 2) d -= P;
  return d;
}

// Exact: step starts before and at pos are the walk positions at cycle index e0 (collected backwards),
// then the verified region arithmetically.
void StepLock::exact_starts(const Alignment& a, uint32_t e0, Starts* starts) const {
  const uint32_t P = a.P;
  uint64_t walk_starts[96];
  uint32_t nwalk = 0;
  uint64_t earliest;
  uint32_t earliest_e;
  walk_exact(
      a, e0,
      [&](uint64_t j, uint32_t e) {
        if (e == e0 && nwalk < 96) walk_starts[nwalk++] = j;
      },
      &earliest, &earliest_e);
  for (uint32_t k = nwalk; k > 0; k--) starts->add(walk_starts[k - 1]);
  const uint64_t first_region = a.s0 + (e0 + P - a.ci(a.s0)) % P;
  const uint64_t nregion = first_region <= a.pos ? (a.pos - first_region) / P + 1 : 0;
  const uint64_t skip = nregion > kMaxInferredEvents ? nregion - kMaxInferredEvents : 0;
  if (skip) {  // only the latest get events; count the others
    if (starts->total == 0) starts->first = first_region;
    starts->total += skip;
  }
  for (uint64_t k = skip; k < nregion; k++) starts->add(first_region + k * P);
}

}  // namespace sentinel::step_internal
