// Step detection, making a lock: which allocation of the cycle starts a step, the template (the reference
// step), the steps that ran before the lock, and earlier locks that overlap. See docs/step-detection.md.
#include "profile/step_lock.h"

namespace sentinel::step_internal {

// What a lock is made from: a candidate period P verified up to pos, and how far back the walks may go.
struct StepLock::Alignment {
  const StepHistory* h;
  uint64_t pos;
  uint32_t P;
  bool exact;
  uint64_t base;   // cycle index 0: the window W = [base, pos]
  uint64_t s0;     // first position of the verified region; s0 == base (mod P)
  uint64_t floor;  // the walks never go below it (see walk_floor)
  uint32_t smax;   // foreign allocations a walk skips in a row, at most
  uint64_t cap;    // allocations a walk reads, at most
  bool known;      // the pattern is a known phase's (its walk by bags stops at a run of foreign allocations)

  uint64_t C(uint64_t k) const { return h->tok(base + k); }  // the pattern's token at cycle index k
  uint32_t ci(uint64_t x) const {                            // cycle index of position x
    return x >= base ? static_cast<uint32_t>((x - base) % P) : static_cast<uint32_t>((P - (base - x) % P) % P);
  }
};

// Exact locks: the cycle's rotation-invariant signature and its least rotation (0 for bag locks).
struct StepLock::Rotation {
  uint64_t sig = 0;
  uint32_t least = 0;
};

// The steps before the lock, as positions: the latest kMaxInferredEvents of them get events, all are
// counted.
struct StepLock::Starts {
  uint64_t ring[kMaxInferredEvents];
  uint64_t total = 0, first = 0;
  void add(uint64_t p) {
    if (total == 0) first = p;
    ring[total++ % kMaxInferredEvents] = p;
  }
  // The ring holds the starts k in [oldest_held(), total), at(k); the older ones are only counted.
  uint64_t oldest_held() const { return total > kMaxInferredEvents ? total - kMaxInferredEvents : 0; }
  uint64_t at(uint64_t k) const { return ring[k % kMaxInferredEvents]; }
  // Adds the starts of `later` (all after these), counting those its ring no longer holds.
  void append(const Starts& later) {
    for (uint64_t k = later.oldest_held(); k < later.total; k++) add(later.at(k));
    total += later.oldest_held();
  }
};

bool StepLock::lock(uint64_t pos, const PeriodSearch::Candidate& cand, bool exact) {
  if (exact && !steady_or_waited(pos, cand.period)) return false;
  Alignment a = align(pos, cand, exact);
  const uint32_t P = a.P;
  follower_->release();                // the table is about to hold this candidate's step
  if (!follower_->build(pos, P, 0)) {  // the multiset; rebuilt below in the order of the chosen rotation
    search_->remember_failure(P, cand.run, cand.hits);
    return false;
  }
  const uint64_t bag_sig = h_->bag_signature(pos, P);
  if (!exact && follower_->repeated_composition(P)) {  // P/d copies of d allocations: d's steps, not P's
    search_->remember_failure(P, cand.run, cand.hits);
    return false;
  }
  const Rotation rot = exact ? rotation_of(a) : Rotation{};
  Phase* known = phases_->find(P, bag_sig);
  if (!known) known = grown_phase(pos, P);
  a.known = known != nullptr;
  Starts starts;
  uint64_t first;  // the first allocation of the first step
  bool use_exact_walk;
  // The live bytes say where a step starts in one thread's order (the last step repeated the one before
  // it exactly); with thread pools a batch that another thread allocates may be where they are least.
  const bool ordered = exact || cand.run >= cand.period;
  const uint32_t e0 = step_rotation(a, known, rot, ordered, &starts, &first, &use_exact_walk);
  // Two steps whose orders alternate repeat exactly at 2P: cut where a step starts, the repeat is equal
  // bags of a divisor, which locks by its bags at that cut (PeriodSearch::choose()). Refused until then:
  // a Keras validation pass of 5 allocations a step was locked on at 10, two steps at a time, from a cut
  // inside a step.
  if (exact && search_->bag_divisor(P, a.base + e0) != 0) return false;
  if (starts.total) first = split_first_step(a, &starts);
#ifdef STEP_DEBUG
  __builtin_printf("lock pos %lu P %u exact %d run %u hits %u s0 %lu floor %lu E %lu e0 %u base %lu exactwalk %d\n",
                   pos, P, exact, cand.run, cand.hits, a.s0, a.floor, first, e0, a.base, use_exact_walk);
#endif
  const bool relock = known != nullptr;
  cur_phase_ = enter_phase(known, bag_sig, rot, a, e0);
  first = warmup_starts(a, e0, &starts);
  uint64_t absorb_from;
  first = first_iteration(a, first, &starts, &absorb_from);
  give_way(h_->seq_of(absorb_from), P);
  if (!follower_->build(pos, P, e0)) return false;  // cannot fail: the same tokens fit a moment ago
  begin(a, cand, e0, starts);
  emit_starts(a, starts, relock);
  return true;
}

// Where the step starts is read from the live bytes of a step that kept none (live_rotation()). The first
// repeats of a single-threaded loop often still keep some (state born in step 2), so an exact lock waits
// for a step that kept nothing, up to kSteadyWait steps; then it locks anyway, on the walk's rotation.
// Without live bytes (a recorded stream) it never waits.
bool StepLock::steady_or_waited(uint64_t pos, uint32_t period) {
  const int64_t now = h_->live(pos);
  if (now == StepHistory::kNoLive || pos < period || pos - period < h_->oldest_pos()) return true;
  if (h_->live(pos - period) == now) return true;
  // One wait while candidates stay lockable, whichever of them is chosen at each allocation.
  if (pos != wait_last_ + 1) wait_from_ = pos;
  wait_last_ = pos;
  return pos - wait_from_ >= uint64_t{kSteadyWait} * period;
}

StepLock::Alignment StepLock::align(uint64_t pos, const PeriodSearch::Candidate& cand, bool exact) const {
  Alignment a{};
  a.h = h_;
  a.pos = pos;
  a.P = cand.period;
  a.exact = exact;
  a.base = pos - a.P + 1;
  const uint64_t oldest = h_->oldest_pos();
  if (exact) {
    a.s0 = pos - min_u64(uint64_t{cand.run} + a.P, pos - oldest + 1) + 1;
  } else {
    // From the chain's first equal pair: the replay follows the steps through its noisy ones.
    uint64_t from = cand.chain_from >= 2 * uint64_t{a.P} ? cand.chain_from - 2 * uint64_t{a.P} : 0;
    a.s0 = max_u64(max_u64(from, oldest), bag_chain_from(pos, a.P, from));
  }
  a.floor = walk_floor(a.P, a.s0);
  a.smax = a.P / 4 > 16 ? a.P / 4 : 16;
  a.cap = 2 * uint64_t{a.P} + 64;
  return a;
}

// A chain of equal bags continues past a step whose windows were not equal (PeriodSearch), so it may
// have begun in a phase before this one whose windows of P happen to be equal too: a Keras validation
// pass of 5 allocations a step holds equal windows of 15, and training's chain of 15 ran on into it, whose
// steps were then counted as training's. So the verified region begins at the earliest window that
// holds the bag of the window ending at pos, going back as the chain does (a window P before, or one of
// 2P or 3P before within 2 allocations, or P + 1 or P + 2 before, for P of kSmallPeriod or more), not
// below `from`.
uint64_t StepLock::bag_chain_from(uint64_t pos, uint32_t P, uint64_t from) const {
  const uint64_t bag = h_->bag_signature(pos, P);
  const uint64_t low = max_u64(from, max_u64(h_->oldest_pos(), h_->valid_from()));
  uint64_t cut = pos + 1;
  auto holds = [&](uint64_t c) { return c >= low + P && h_->bag_signature(c - 1, P) == bag; };
  for (;;) {
    uint64_t next = 0;
    if (holds(cut - P)) {
      next = cut - P;
    } else if (P >= PeriodSearch::kSmallPeriod) {
      for (uint64_t k = 1; k <= 3 && !next; k++)
        for (uint64_t back = k * P + 2; back + 2 >= k * P && back > (k == 1 ? uint64_t{P} : 0) && !next; back--)
          if (cut > back && holds(cut - back)) next = cut - back;
    }
    if (!next) return cut - P;
    cut = next;
  }
}

// Walk floor: never re-count allocations that a counted lock of this period or longer explained. One that
// ends inside the verified region gives up its last step at most (that step was this pattern's first, see
// "taken over" in give_way()): without this, an evaluation step, a sub-sequence of the training step,
// walks back through training steps that merely contain it.
uint64_t StepLock::walk_floor(uint32_t P, uint64_t s0) const {
  const uint64_t oldest = h_->oldest_pos();
  uint64_t floor = oldest;
  for (uint32_t k = 0; k < phases_->recent_count(); k++) {
    const PhaseMemory::Segment& s = phases_->recent(k);
    if (!s.counted || s.period < P || s.end_seq < h_->seq_of(oldest)) continue;
    uint64_t end_pos = h_->pos_of(s.end_seq) + 1;
    if (end_pos > s0) end_pos = h_->pos_of(s.last_start_seq);
    if (end_pos > floor && end_pos <= s0) floor = end_pos;
  }
  return floor;
}

// Exact locks: a rotation-invariant signature (the sum of hashes of the cyclic token pairs) and the least
// rotation of the sequence (O(P) time, O(1) memory), so that a known pattern gets back the step start it
// had.
StepLock::Rotation StepLock::rotation_of(const Alignment& a) const {
  const uint64_t P = a.P;
  Rotation r;
  r.sig = mix64(P);
  for (uint64_t k = 0; k < P; k++) r.sig += mix64(a.C(k) ^ (a.C((k + 1) % P) * 0x9E3779B97F4A7C15ull));
  uint64_t li = 0, lj = 1, lk = 0;
  while (li < P && lj < P && lk < P) {
    uint64_t x = a.C((li + lk) % P), y = a.C((lj + lk) % P);
    if (x == y) {
      lk++;
      continue;
    }
    if (x > y)
      li += lk + 1;
    else
      lj += lk + 1;
    if (li == lj) lj++;
    lk = 0;
  }
  r.least = static_cast<uint32_t>(li < lj ? li : lj);
  return r;
}

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
  if (*use_exact_walk) {
    const uint32_t e0 = stored_rotation ? (rot.least + known->offset) % a.P : live_rotation(a, first_e);
    exact_starts(a, e0, starts);
    if (stored_rotation || !bags_count_more(a, starts->total)) return e0;
    *use_exact_walk = false;
    *starts = Starts{};
  }
  *first = walk_bags(a);
  const uint32_t walked_e = rotation_at(a, replay(a, *first, starts));
  if (!ordered) return walked_e;
  const uint32_t e0 = live_rotation(a, walked_e);
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
bool StepLock::bags_count_more(const Alignment& a, uint64_t exact_total) {
  const uint64_t bag_first = walk_bags(a);
  Starts bag;
  replay(a, bag_first, &bag);
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

// Steps before the first one found whose allocations have the step's sizes in the step's order, but
// other sites: warm-up iterations of the same loop. Python 3.11's adaptive interpreter specializes a call
// after it ran a few times, which changes the native stack, hence the site, of every allocation the call
// makes (torch.compile's generated code: steps 2-7 at one site, from step 8 on at another). They are
// steps, counted and inferred, but have no identities. Returns the first step's first allocation.
uint64_t StepLock::warmup_starts(const Alignment& a, uint32_t e0, Starts* starts) const {
  const uint32_t P = a.P;
  const uint64_t first = starts->total ? starts->first : a.base + e0;  // else the step under way at pos
  const uint64_t bottom = max_u64(a.floor, h_->oldest_pos());
  uint64_t p = first, found = 0;
  while (found < kMaxInferredEvents && p >= bottom + P) {
    bool same = true;
    for (uint32_t i = 0; i < P && same; i++) same = token_size(h_->tok(p - P + i)) == token_size(a.C((e0 + i) % P));
    if (!same) break;
    p -= P;
    found++;
  }
  if (!found) return first;
  Starts all;
  const uint64_t compiling = compiling_step(a, e0, p);
  if (compiling != p) all.add(compiling);
  for (uint64_t k = found; k > 0; k--) all.add(first - k * P);
  all.append(*starts);
  *starts = all;
  return all.first;
}

// The iteration before the warm-up steps, under torch.compile, is the compilation: hundreds of the
// compiler's allocations, then the compiled code's first run, whose allocations have the step's sizes in
// the step's order with a few more between them and some missing (a 6-allocation step's sizes showed 5 of
// 6 among its last 9 allocations). It was a step, the loop's first: counted when the 2P allocations
// before the earliest warm-up step at p hold the step's sizes, in order, all but a step's budget of
// them (their longest common subsequence, at most kCompiledMaxPeriod allocations a step). It begins at
// the first allocation of the shortest such stretch (where the compilation began is not in the
// allocations). Returns that position, or p when there is none.
uint64_t StepLock::compiling_step(const Alignment& a, uint32_t e0, uint64_t p) const {
  const uint32_t P = a.P;
  const uint64_t bottom = max_u64(a.floor, h_->oldest_pos());
  if (P > kCompiledMaxPeriod || p < bottom + P) return p;
  const uint64_t from = p >= bottom + 2 * uint64_t{P} ? p - 2 * uint64_t{P} : bottom;
  const uint32_t need = P - step_budget(P, false);
  // row[j]: the longest common subsequence of the allocations [i, p) and the step's sizes from j on.
  uint16_t row[kCompiledMaxPeriod + 1] = {}, next[kCompiledMaxPeriod + 1];
  for (uint64_t i = p; i-- > from;) {
    const uint64_t size = token_size(h_->tok(i));
    next[P] = 0;
    for (uint32_t j = P; j-- > 0;) {
      uint16_t best = row[j] > next[j + 1] ? row[j] : next[j + 1];
      if (size == token_size(a.C((e0 + j) % P)) && row[j + 1] + 1 > best) best = static_cast<uint16_t>(row[j + 1] + 1);
      next[j] = best;
    }
    for (uint32_t j = 0; j <= P; j++) row[j] = next[j];
    if (row[0] >= need) return i;
  }
  return p;
}

// A first iteration that made many one-time objects between the step's own allocations (under bf16
// autocast, each layer's weights cast on first use: 58 of its 73 allocations, in runs of 7 to 21) stops
// both walks inside it (the lone-match rule, runs beyond smax), and the replay then runs the first step
// found on to the end of the second (24 allocations for a step of 15). Where the first step found is
// longer than a step and its budget, the allocations before the second start are read back (at most
// kOneTimeSteps steps' length, not below the floor) as copies of the bag, foreign ones skipped, a copy
// ending where it is whole; more of a kind than a copy has room for, beyond the step's budget, ends the
// reading. Two whole copies or more replace the first step. Returns the first step's position.
uint64_t StepLock::split_first_step(const Alignment& a, Starts* starts) {
  const uint32_t P = a.P, budget = step_budget(P, false);
  if (starts->total < 2 || starts->oldest_held() != 0) return starts->first;
  const uint64_t second = starts->at(1);
  if (second - starts->at(0) <= uint64_t{P} + budget) return starts->first;
  const uint64_t bottom = max_u64(max_u64(a.floor, h_->oldest_pos()), h_->valid_from());
  const uint64_t span = uint64_t{kOneTimeSteps} * P;
  const uint64_t low = second > bottom + span ? second - span : bottom;
  uint64_t copies[kOneTimeSteps];
  uint32_t n = 0, fit = 0, surplus = 0;
  BagFollower::OpenStep copy = follower_->fresh_step();
  for (uint64_t j = second; j > low && n < kOneTimeSteps;) {
    const int32_t si = follower_->find_slot(h_->tok(--j));
    if (si < 0) continue;
    if (!follower_->has_room(si, copy)) {
      if (++surplus > budget) break;
      continue;
    }
    follower_->count(si, copy);
    if (++fit < P) continue;
    copies[n++] = j;
    copy = follower_->fresh_step();
    fit = surplus = 0;
  }
  if (n < 2) return starts->first;
  Starts all;
  for (uint32_t k = n; k > 0; k--) all.add(copies[k - 1]);
  for (uint64_t k = 1; k < starts->total; k++) all.add(starts->at(k));
  *starts = all;
  return all.first;
}

// A first iteration in pieces: the iteration before the first step found differs from the rest (gradients
// and optimizer state allocated the first time), so the walk stops at it; over identical blocks its forward
// and backward repeat at the block, and were locked on as phases of their own (inner loops, a quarter of
// this step or shorter). Going back over such segments, latest first, within 3 steps of `first`, their
// allocations are counted against a copy of this step's bag (scan_parts()). When the parts from the
// earliest one to `first` hold three quarters of the bag, with at most a step's budget beyond it (an
// evaluation pass, a subset of the step repeated, holds far more), that was the first iteration: one step
// more, begun at that part. Parts before it that fill a second copy are the start of that iteration where
// the steps found begin mid-iteration (at the backward, where a loop that zeroes its gradients after the
// forward has its least bytes live): a step too if they hold half of one, else only absorbed. give_way()
// absorbs the segments from *absorb_from on. Returns the first step's position.
uint64_t StepLock::first_iteration(const Alignment& a, uint64_t first, Starts* starts, uint64_t* absorb_from) {
  const uint32_t P = a.P;
  *absorb_from = first;
  if (!starts->total) return first;
  const Parts whole = scan_parts(a, first, 0);
  if (whole.part == first || uint64_t{whole.fit} * 4 < 3 * uint64_t{P}) return first;
  const Parts lead = scan_parts(a, whole.part, whole.next);
  const bool lead_is_step = lead.part != whole.part && uint64_t{lead.fit} * 2 >= P;
  *absorb_from = lead.part;
  Starts all;
  if (lead_is_step) all.add(lead.part);
  all.add(whole.part);
  all.append(*starts);
  *starts = all;
  return all.first;
}

// One copy of the step's bag filled going back from position `end` over the recent segments from the k-th
// (latest first) that ended before `end`: inner loops (period at most P/4) within 3 steps of it. Each
// segment is read with the allocations after it up to the next one's start; it is a part when what fits
// there is at least half its own length. The earliest part and the fit up to it are returned, and the
// first segment not taken (next). The scan ends where the surplus passes the step's budget.
StepLock::Parts StepLock::scan_parts(const Alignment& a, uint64_t end, uint32_t k) {
  const uint32_t P = a.P;
  const uint64_t bottom = max_u64(h_->oldest_pos(), end > 3 * uint64_t{P} ? end - 3 * uint64_t{P} : 0);
  const uint64_t end_seq = h_->seq_of(end);
  const uint32_t budget = step_budget(P, false);
  BagFollower::OpenStep copy = follower_->fresh_step();
  Parts r{end, 0, k};
  uint32_t fit = 0, surplus = 0;
  uint64_t scanned = end;  // positions [scanned, end) are counted in copy
  for (; k < phases_->recent_count(); k++) {
    r.next = k;
    const PhaseMemory::Segment& s = phases_->recent(k);
    if (!s.counted || s.steps == 0 || s.end_seq >= end_seq) continue;  // give_way's to judge
    if (uint64_t{s.period} * 4 > P || s.start_seq < h_->seq_of(bottom)) break;
    const uint64_t from = h_->pos_of(s.start_seq);
    uint32_t fit_here = 0;
    for (uint64_t j = scanned; j > from; j--) {
      const int32_t si = follower_->find_slot(h_->tok(j - 1));
      if (si < 0) continue;
      if (follower_->has_room(si, copy)) {
        follower_->count(si, copy);
        fit_here++;
      } else if (++surplus > budget) {
        return r;
      }
    }
    fit += fit_here;
    scanned = from;
    if (uint64_t{fit_here} * 2 >= s.end_seq + 1 - s.start_seq) {
      r.part = from;
      r.fit = fit;
    }
  }
  r.next = k;
  return r;
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

// A pattern whose bag is a known phase's of one allocation less is that phase, locked before without one
// of its allocations: a batch that another thread made late in the first steps is noise to a lock of
// P - 1 (docs/step-detection.md, "Known pattern"). Without this, a pass that runs in between (Keras's
// validation) made the relock with the batch a new phase, whose walk back, not bounded as a known
// pattern's is, went on into that pass. enter_phase() gives the phase the new period and bag. Null when
// there is none.
StepLock::Phase* StepLock::grown_phase(uint64_t pos, uint32_t P) {
  if (P < 2 || pos + 1 < P) return nullptr;
  for (uint64_t j = pos + 1 - P; j <= pos; j++)
    if (Phase* ph = phases_->find(P - 1, h_->bag_signature_without(pos, P, j))) return ph;
  return nullptr;
}

// The lock's phase: a known pattern keeps its id (and the first exact lock of a pattern found by its bag
// stores its rotation), a new one gets the next id.
StepLock::Phase* StepLock::enter_phase(Phase* known, uint64_t bag_sig, const Rotation& rot, const Alignment& a,
                                       uint32_t e0) {
  const uint32_t offset = (e0 + a.P - rot.least) % a.P;
  if (known) {
    phases_->touch(known);
    cur_->phase = known->id;
    if (known->period != a.P) {  // grown by one allocation (grown_phase()): its exact signature was P - 1's
      known->period = a.P;
      known->bag_signature = bag_sig;
      known->signature = 0;
      known->offset = 0;
    }
    if (a.exact && known->signature == 0) {  // first exact lock of a phase found by its bag
      known->signature = rot.sig;
      known->offset = offset;
    }
    return known;
  }
  uint16_t evicted;
  Phase* ph = phases_->add(bag_sig, rot.sig, a.P, a.exact ? offset : 0, &evicted);
  if (evicted != 0 && follower_->held_phase() == evicted) follower_->release();
  cur_->phase = ph->id;
  return ph;
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

// Earlier locks that overlap the allocations this lock explains (from its first step on) give those steps
// up: a lock of a shorter period that lies entirely inside is absorbed (an inner loop locked on before the
// real step was seen twice); otherwise its steps that start at or after from_seq are taken over (the last
// step of a phase, before the lock noticed the change, is often the first step of the next one). Their
// step events are voided by a kStepRetract event that comes before this lock's events. A step begun
// before from_seq with fewer than half of its allocations before it was begun but not run, and is
// dropped (drop_cut_step()).
void StepLock::give_way(uint64_t from_seq, uint32_t P) {
  for (uint32_t k = 0; k < phases_->recent_count(); k++) {
    PhaseMemory::Segment& s = phases_->recent(k);
    if (!s.counted || s.end_seq < from_seq || s.steps == 0 || drop_cut_step(s, from_seq)) continue;
    uint64_t n = 0;
    Phase* sp = phases_->slot(s.phase);
    if (s.period < P && s.start_seq >= from_seq) {
      n = s.steps;
      s.counted = false;
      counters_.retracted++;
      if (sp) sp->retracted++;
    } else if (s.last_start_seq >= from_seq) {
      n = (s.last_start_seq - from_seq) / s.period + 1;
      if (n > s.steps) n = s.steps;
    } else {
      continue;
    }
    s.steps -= n;
    phases_->uncommit(n);
    if (sp) sp->steps -= n <= sp->steps ? n : sp->steps;
    emit(s.start_seq > from_seq ? s.start_seq : from_seq, s.end_seq, s.period, s.phase, kStepRetract);
    if (!s.counted) forget_phase_if_unused(s.phase);
  }
}

// The drop-last rule (drop_unbegun_step()) where a phase ends by a later lock taking over rather than by
// its own unlock. The old lock's follower filled its newest step with the new phase's allocations (an
// evaluation's forward is made of the training step's kinds), so when it was lost that step looked more
// than half run; what it ran is what came before the new phase's first step. A loop left by `break`
// after its last optimizer update, where the steps found begin at the update, ends so.
bool StepLock::drop_cut_step(PhaseMemory::Segment& s, uint64_t from_seq) {
  if (s.steps < 2 || s.period < 2 || s.last_start_seq >= from_seq || s.last_start_seq <= s.start_seq) return false;
  if ((from_seq - s.last_start_seq) * 2 >= s.period) return false;
  s.steps--;
  phases_->uncommit(1);
  if (Phase* sp = phases_->slot(s.phase); sp && sp->steps) sp->steps--;
  const uint64_t dropped = s.last_start_seq;
  s.end_seq = dropped - 1;
  // The segment keeps no earlier starts: the step before is taken to be one period long.
  s.last_start_seq = dropped - s.period > s.start_seq ? dropped - s.period : s.start_seq;
  emit(dropped, dropped, s.period, s.phase, kStepDropLast);
  return true;
}

// The lock holds: the template (built in the chosen rotation) is held for its phase, the lock is tentative,
// and the follower takes over with the step under way at pos.
void StepLock::begin(const Alignment& a, const PeriodSearch::Candidate& cand, uint32_t e0, const Starts& starts) {
  const uint32_t P = a.P;
  follower_->hold(cur_->phase, P);
  cur_phase_->distinct = follower_->distinct();
  // Few distinct tokens: a random stream of them fits the bag step after step (two tokens in 9: about
  // one step in 7 by chance), so the follower also asks for their order.
  order_required_ = PeriodSearch::bag_chance_log10(P, follower_->distinct()) > -3;
  cur_->state = StepCursor::kTentative;
  cur_->period = P;
  lock_run_ = cand.run;
  lock_hits_ = cand.hits;
  lock_known_ = cur_phase_->locks > 0;  // a pattern locked before, whose lock held
  lock_needed_ = cand.needed;
  // An exact lock of a small period was made on at least kSmallRun allocations in order (its exact run,
  // or that run and the warm-up steps' sizes before it: PeriodSearch::sized_run()).
  lock_ordered_run_ =
      a.exact
          ? (P < PeriodSearch::kSmallPeriod && cand.run < PeriodSearch::kSmallRun ? PeriodSearch::kSmallRun : cand.run)
          : 0;
  matches_since_lock_ = 0;
  steady_run_ = 0;
  consecutive_noise_ = 0;
  rhythm_ = NoiseRhythm{};
  cur_steps_ = starts.total;
  const uint32_t have = follower_->start(a.pos, P, e0);
  cur_->step_start = follower_->current().start_seq;
  cur_->ordinal = have - 1;
  cur_->clock = have - 1;
  cur_start_seq_ = starts.total ? h_->seq_of(starts.first) : cur_->step_start;
  last_match_seq_ = h_->cur_seq();
  retro_from_seq_ = h_->seq_of(a.s0);
  retro_to_seq_ = h_->seq_of(a.pos);
  retro_base_seq_ = h_->seq_of(a.base) + e0;  // (base + e0) has ordinal 0
  counters_.locks++;
  cur_phase_->locks++;
  cur_phase_->steps += starts.total;
  cur_phase_->lost = false;
}

// Events: the latest kMaxInferredEvents step starts (all are counted), oldest first.
void StepLock::emit_starts(const Alignment& a, const Starts& starts, bool relock) {
  const uint16_t first_flags = kStepLock | (relock ? kStepRelock : kStepNewPhase);
  for (uint64_t k = starts.oldest_held(); k < starts.total; k++) {
    const uint64_t p = starts.at(k);
    uint16_t f = p < a.pos ? kStepInferred : 0;
    if (k == starts.oldest_held()) f |= first_flags;
    emit(h_->seq_of(p), h_->seq_of(p), a.P, cur_->phase, f);
  }
}

}  // namespace sentinel::step_internal
