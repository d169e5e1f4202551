// Step detection, holding a lock: each allocation's identity from the bag follower, what it means for the
// counters, the events and the tolerance policy, and the lock's end. See docs/step-detection.md,
// "Tolerance policy".
#include "profile/step_lock.h"

namespace sentinel::step_internal {

// A step's noise (foreign allocations) and missing identities together may not exceed max(2, P/8) (2 while
// tentative); 16 foreign allocations in a row (2 while tentative) end the lock as well.
FeedResult StepLock::follow(uint64_t token) {
  const uint32_t P = cur_->period;
  const bool tentative = cur_->state == StepCursor::kTentative;
  const uint32_t budget = step_budget(P, tentative);
  // The next step may begin while this one misses at most one identity more than the budget, and at most
  // a quarter of the step (rounded up): with a tiny step over few tokens, any stream of those tokens would
  // fit otherwise. The one over the budget is for a late allocation that comes after the next step's
  // first ones (a batch delivered late under load): it may still be filled late, and the step is judged
  // by the budget when it closes.
  const uint32_t quarter = (P + 3) / 4;
  const BagFollower::Assignment a = follower_->assign(token, budget + 1 < quarter ? budget + 1 : quarter, true);
  if (a.closed_missing) {
    counters_.skipped += a.closed_missing;
    if (cur_phase_) cur_phase_->missing += a.closed_missing;
  }
  if (a.closed_worst > budget) return lose(tentative);
  if (a.kind == BagFollower::kNoise) return noise(token);
  if (a.displaced) {
    counters_.displaced++;
    // Out of order counts against the budget when the bag alone is weak evidence (the identity stands).
    if (order_required_ && ++follower_->newest().noise > budget) return lose(tentative);
  }
  cur_->ordinal = a.ordinal;
  consecutive_noise_ = 0;
  last_match_seq_ = h_->cur_seq();
  uint16_t flags = kFedLocked;
  if (a.kind == BagFollower::kLate) {
    counters_.late++;
    flags |= kFedLate;
  }
  if (a.kind == BagFollower::kOpened) {
    flags |= kFedStepStart;
    open_step();
  }
  cur_->clock = follower_->newest().assigned - 1;
  if (tentative || !steady_step_) note_live(P);
  if (tentative && ++matches_since_lock_ >= P && confirmable()) cur_->state = StepCursor::kConfirmed;
  return {a.ordinal, a.k, cur_->clock, cur_->phase, flags};
}

// Confirmed once max(P, 64) allocations are verified: those the lock verified (its exact run, or its
// windows of equal bags) count, but one whole step must fit after the lock (the caller's part). Where
// the last whole step kept no bytes (steady_run_, note_live()) and P is not small, max(P, 32) do: a
// training step gives back all it takes, where an inner loop (identical layers, an RNN's time steps)
// mostly keeps what each iteration computes for the backward pass, or frees what the forward kept. A
// period below 8 is confirmed on 64 as before: an LSTM cell's 3 temporaries a time step keep no bytes.
// Short phases (a validation pass of 13 steps of 8 allocations) may end before that:
//  - a known pattern's relock (the phase's bag, locked and held before) is confirmed by that one step;
//  - so is a lock whose windows of equal bags and steps followed since are more than a new bag lock
//    needs (PeriodSearch::bag_windows_needed), where that bag is strong evidence: it needs at most
//    kStrongBagWindows. A random stream of a bag of few distinct tokens is followed step after step, and
//    its steps followed prove nothing.
bool StepLock::confirmable() const {
  const uint32_t P = cur_->period;
  if (lock_known_) return true;
  if (lock_needed_ && lock_needed_ <= kStrongBagWindows && lock_hits_ + matches_since_lock_ / P > lock_needed_)
    return true;
  // Over few distinct tokens equal bags are weak evidence and only an exact lock's run in order counts.
  const uint64_t verified = order_required_ ? lock_ordered_run_ : max_u64(lock_run_, uint64_t{lock_hits_} * P);
  const uint32_t need = steady_run_ >= P && P >= PeriodSearch::kSmallPeriod ? kSteadyConfirmTokens : kConfirmTokens;
  return matches_since_lock_ + verified >= (P > need ? P : need);
}

// The allocation just matched: were the tracked bytes live before it those live one period before? (Not
// known in a recorded stream without live bytes: never steady there.) A whole step of them in a row
// latches steady_step_ for the lock's segment (a lock of a period of kSmallPeriod or more that did so is a
// training step: see loop_of_steps()); after that the lock stops asking, unless it is still tentative.
void StepLock::note_live(uint32_t period) {
  const uint64_t pos = h_->end() - 1;
  const int64_t now = h_->live(pos);
  const bool same =
      pos >= period && pos - period >= h_->oldest_pos() && now != StepHistory::kNoLive && h_->live(pos - period) == now;
  steady_run_ = same ? steady_run_ + 1 : 0;
  if (steady_run_ >= period && period >= PeriodSearch::kSmallPeriod) steady_step_ = true;
}

// The allocation just assigned opened a step: it starts at this allocation.
void StepLock::open_step() {
  const uint64_t seq = h_->cur_seq();
  follower_->newest().start_seq = seq;
  prev_step_start_ = cur_->step_start;
  cur_->step_start = seq;
  cur_steps_++;
  if (cur_phase_) cur_phase_->steps++;
  emit(seq, seq, cur_->period, cur_->phase, 0);
}

// An allocation that fits no identity: counted against the newest step's budget and against the run of
// noise in a row; the clock stays where it is. A burst of one token (a prefetch thread delivering two or
// three batches at once) is one irregularity: its repeats right after it count once per kNoiseBurst.
FeedResult StepLock::noise(uint64_t token) {
  const bool tentative = cur_->state == StepCursor::kTentative;
  counters_.noise++;
  if (cur_phase_) cur_phase_->noise++;
  const FeedResult unfit{cur_->ordinal, kNoOrdinal, cur_->clock, cur_->phase,
                         static_cast<uint16_t>(kFedLocked | kFedNoise)};
  if (consecutive_noise_ > 0 && token == last_noise_token_ && ++noise_burst_ % kNoiseBurst != 0) return unfit;
  if (token != last_noise_token_ || consecutive_noise_ == 0) noise_burst_ = 0;
  last_noise_token_ = token;
  // A step that is two or more copies of the lock's pattern plus a token of its own (an evaluation pass
  // of identical layers, with its batch): the lock is on the part, the foreign token keeps its rhythm.
  // Not where the lock's steps give back all they take (steady_step_): those are training steps, and
  // the token in rhythm is an optimizer step every k of them (gradient accumulation), within the budget.
  if (!steady_step_ && noise_in_rhythm(token)) {
    counters_.noise--;  // the token belongs to the whole step, which the search finds next
    if (cur_phase_) cur_phase_->noise--;
    return lose(true);
  }
  BagFollower::OpenStep& st = follower_->newest();
  st.noise++;
  if (consecutive_noise_++ == 0) first_noise_seq_ = h_->cur_seq();
  if (st.noise > step_budget(cur_->period, tentative) ||
      consecutive_noise_ >= (tentative ? kTentativeBudget : kMaxConsecutiveNoise))
    return lose(tentative);
  return unfit;
}

// The same foreign token, kRhythmRepeats + 1 times at one spacing of at least two steps that is not a
// whole number of steps: the real step is that spacing, made of copies of this lock's pattern and the
// token (a batch before two identical encoder layers under no_grad: 1 + 9 + 9 allocations, the lock on
// 9 takes the batch as noise every other step, within the budget, and counts every step twice). Noise
// from racing threads or a prefetch does not come at one exact spacing. The lock is voided (its steps
// were parts) and the search finds the whole step; the failure remembered keeps it from relocking on
// the part.
// Each token's beats are followed on their own, and every time a token came off its beat in this lock
// (at another spacing, within two steps, or a whole number of steps after the last time) it needs one
// repeat more: an allocation that a step makes or not (TensorFlow's thread-local packing blocks on CPUs
// without AVX-512, in 4 steps of 10) comes at 2P + 1 three times in a row by chance, after a lock that
// held 37 steps with it off the beat (`keras_mlp_avx2_nolock.txt`); voided, the lock's period was
// remembered as a failure with its 37 steps of evidence, and never locked again.
bool StepLock::noise_in_rhythm(uint64_t token) {
  const uint64_t seq = h_->cur_seq();
  const uint32_t P = cur_->period;
  NoiseRhythm* r = nullptr;
  for (NoiseRhythm& t : rhythm_) {
    if (t.token == token) {
      r = &t;
      break;
    }
    if (!r || t.last_seq < r->last_seq) r = &t;  // else the one heard from longest ago makes room
  }
  if (r->token != token) {
    *r = NoiseRhythm{token, seq, 0, 0, 0};
    return false;
  }
  if (seq <= r->last_seq) return false;
  const uint64_t spacing = seq - r->last_seq;
  r->last_seq = seq;
  if (spacing < 2 * uint64_t{P} || spacing % P == 0 || spacing > kMaxPeriod) {
    r->off_beats++;
    r->spacing = 0;
    r->repeats = 0;
    return false;
  }
  if (r->spacing && spacing != r->spacing) r->off_beats++;
  r->repeats = spacing == r->spacing ? r->repeats + 1 : 1;
  r->spacing = spacing;
  return r->repeats >= kRhythmRepeats + r->off_beats;
}

FeedResult StepLock::lose(bool tentative) {
  unlock(tentative);
  return {kNoOrdinal, kNoOrdinal, kNoOrdinal, 0, 0};
}

void StepLock::unlock(bool retract) {
  counters_.unlocks++;
  const uint32_t P = cur_->period;
  const uint16_t id = cur_->phase;
  const uint64_t start = cur_start_seq_, end = last_match_seq_;
  if (Phase* ph = cur_phase_) {
    ph->unlocks++;
    ph->lost = true;
  }
  // Where the pattern ended: the first allocation after the last one that fit, or where the step that
  // never ran began.
  uint64_t at = consecutive_noise_ > 0 ? first_noise_seq_ : last_match_seq_ + 1;
  if (const uint64_t begun = retract ? 0 : drop_unbegun_step()) at = begun;
  lost_ = Lost{at, cur_steps_, P, id};
#ifdef STEP_DEBUG
  __builtin_printf("unlock pos %lu P %u at %lu retract %d steps %lu\n", h_->cur_seq(), P, at, retract, cur_steps_);
#endif
  if (retract) {
    search_->remember_failure(P, lock_run_ + static_cast<uint32_t>(matches_since_lock_),
                              lock_hits_ + static_cast<uint32_t>(matches_since_lock_ / (P ? P : 1)));
    counters_.retracted++;
    if (Phase* ph = cur_phase_) {
      ph->retracted++;
      ph->steps -= cur_steps_ <= ph->steps ? cur_steps_ : ph->steps;
    }
    close_segment(false);
    cur_->state = StepCursor::kSearching;
    cur_phase_ = nullptr;
    forget_phase_if_unused(id);
    emit(start, end, P, id, kStepUnlock | kStepRetract);
  } else {
    close_segment(true);
    cur_->state = StepCursor::kSearching;
    cur_phase_ = nullptr;
    emit(at, at, P, id, kStepUnlock);
    // An epoch's last batch, smaller, may follow: it is read once it has come (resolve_remainder()).
    if (lost_.steps >= 2) remainder_->expect(*h_, h_->pos_of(at), P, id);
  }
}

// The lock ends (lost, or the stream ends) while its newest step has fewer than half of its allocations:
// that was an iteration begun but not run, not a step. A loop's last `next(loader)` before its `break`,
// a batch prefetched for an epoch that never comes, a job killed early in a step: each opens a step with
// the batch's allocation and nothing follows. Counting it would give every phase one step more than the
// loop ran. The lock's first step is kept whatever its length (a phase has at least one), and so is a
// step whose matched allocations span half a step's length with a quarter of its identities among them:
// an epoch's last batch, smaller, whose batch-sized allocations are noise inside the step (a Keras `fit`
// whose 12-sample remainder matched 6 of 15 over 8 allocations before its third noise allocation ended
// the lock). Noise after the last match is the next phase's. Returns where the dropped step began, 0
// when none was (a step after the lock's first never begins at seq 0).
uint64_t StepLock::drop_unbegun_step() {
  const uint32_t P = cur_->period;
  const BagFollower::OpenStep& st = follower_->newest();
  if (!cur_->locked() || cur_steps_ < 2 || P < 2 || uint64_t{st.assigned} * 2 >= P) return 0;
  const uint64_t ran = last_match_seq_ >= st.start_seq ? last_match_seq_ - st.start_seq + 1 : 0;
  if (uint64_t{st.assigned} * 4 >= P && ran * 2 >= P) return 0;
  cur_steps_--;
  if (cur_phase_ && cur_phase_->steps) cur_phase_->steps--;
  // The lock's segment ends with the step before: a later lock may walk back over this one's allocations.
  cur_->step_start = prev_step_start_;
  last_match_seq_ = st.start_seq - 1;
  emit(st.start_seq, st.start_seq, P, cur_->phase, kStepDropLast);
  return st.start_seq;
}

void StepLock::end_of_stream() {
  if (!cur_->locked()) resolve_remainder(h_->end(), true);
  drop_unbegun_step();
}

void StepLock::resolve_remainder(uint64_t end_pos, bool final) {
  StepRemainder::Found f;
  if (!remainder_->resolve(*h_, end_pos, final, &f)) return;
  for (uint32_t k = 0; k < phases_->recent_count(); k++) {
    PhaseMemory::Segment& s = phases_->recent(k);
    if (s.phase != f.phase || !s.counted || s.end_seq >= f.start_seq) continue;
    s.steps++;
    s.last_start_seq = f.start_seq;
    s.end_seq = f.end_seq;
    phases_->commit(1);
    if (Phase* ph = phases_->slot(f.phase)) ph->steps++;
    emit(f.start_seq, f.end_seq, f.period, f.phase, kStepInferred);
    return;
  }
}

// The automatic lock ends where marks take over; a tentative one is voided.
void StepLock::end_for_marks(uint64_t seq) {
  const bool tentative = cur_->state == StepCursor::kTentative;
  const uint64_t start = cur_start_seq_, end = last_match_seq_;
  const uint16_t id = cur_->phase;
  close_segment(!tentative);
  cur_->state = StepCursor::kSearching;
  if (tentative)
    emit(start, end, cur_->period, id, kStepUnlock | kStepRetract);
  else
    emit(seq, seq, cur_->period, id, kStepUnlock);
}

void StepLock::close_segment(bool counted) {
  phases_->close(PhaseMemory::Segment{cur_start_seq_, last_match_seq_, cur_->step_start, cur_steps_, cur_->period,
                                      cur_->phase, counted, steady_step_});
  cur_steps_ = 0;
}

// A pattern whose every lock was voided is not a phase: forget it (phases() stops counting it).
void StepLock::forget_phase_if_unused(uint16_t id) {
  if (phases_->forget_if_unused(id, cur_->locked() ? cur_->phase : 0) && follower_->held_phase() == id)
    follower_->release();
}

void StepLock::emit(uint64_t seq, uint64_t end_seq, uint32_t period, uint16_t phase, uint16_t flags) {
  events_->push(StepEvent{seq, end_seq, steps(), period, phase, flags});
}

uint32_t StepLock::retro_ordinal(uint64_t seq) const {
  if (!cur_->locked() || seq < retro_from_seq_ || seq > retro_to_seq_) return kNoOrdinal;
  int64_t d = static_cast<int64_t>(seq - retro_base_seq_) % static_cast<int64_t>(cur_->period);
  if (d < 0) d += cur_->period;
  return static_cast<uint32_t>(d);
}

}  // namespace sentinel::step_internal
