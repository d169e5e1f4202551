// Step detection, making a lock: the template (the reference step), the lock's phase and earlier locks
// that overlap. Where a step starts and the steps before the lock: step_walk.cpp; the loop's first
// iterations, which differ from its steps: step_first.cpp. See docs/step-detection.md.
#include "profile/step_lock_parts.h"

namespace sentinel::step_internal {

bool StepLock::lock(uint64_t pos, const PeriodSearch::Candidate& cand, bool exact) {
  if (exact && !steady_or_waited(pos, cand.period)) return false;
  resolve_remainder(pos + 1, false);  // before this lock walks back: the remainder is the lost lock's
  Alignment a = align(pos, cand, exact);
  const uint32_t P = a.P;
  if (loop_of_steps(a)) {
    search_->remember_failure(P, cand.run, cand.hits);
    return false;
  }
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
  remainder_->cancel();  // this lock explains what comes now
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

// A period whose verified region is mostly (half or more) the steps of counted locks of shorter periods
// that gave back all they took (PhaseMemory::Segment::steady) is a loop of training steps, an epoch (its
// steps, then a short last batch and an evaluation pass), never a step: give_way() would absorb those
// steps as an inner loop's. An inner loop keeps what its iterations compute for the backward pass (a
// forward over identical layers or time steps), or frees what the forward kept, so its lock is not
// steady; one that is (an optimizer's loop over the parameters, each update's temporaries freed) is a
// part of the step, about a third of a GPT's. A recorded stream without live bytes is never steady. A
// PyTorch 2.x script of 3 epochs of 15 AdamW steps and an evaluation pass was counted as its epochs, or
// not at all, before this.
bool StepLock::loop_of_steps(const Alignment& a) const {
  const uint64_t from = h_->seq_of(a.s0), to = h_->seq_of(a.pos);
  uint64_t covered = 0;
  for (uint32_t k = 0; k < phases_->recent_count(); k++) {
    const PhaseMemory::Segment& s = phases_->recent(k);
    if (!s.counted || !s.steady || s.period >= a.P || s.steps < 2) continue;
    const uint64_t lo = max_u64(s.start_seq, from), hi = min_u64(s.end_seq, to);
    if (hi >= lo) covered += hi - lo + 1;  // the locks follow one another: their spans do not overlap
  }
  return covered * 2 >= to - from + 1;
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
  steady_step_ = false;
  consecutive_noise_ = 0;
  for (NoiseRhythm& r : rhythm_) r = NoiseRhythm{};
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
