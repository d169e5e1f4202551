// Step detection. See step_detector.h and docs/step-detection.md.
#include "step_detector.h"

#include <new>

#include "vm_region.h"

namespace sentinel {

namespace {

constexpr uint64_t kRing = uint64_t{1} << StepDetector::kRingBits;
constexpr uint64_t kRingMask = kRing - 1;
constexpr uint64_t kTable = uint64_t{1} << StepDetector::kTableBits;
constexpr uint32_t kMaxInferredEvents = 256;  // inferred step events emitted per lock (the latest ones)

// Memory layout of the one mapping made by init().
constexpr size_t kTokensBytes = kRing * sizeof(uint64_t);
constexpr size_t kPrevBytes = kRing * sizeof(uint32_t);
constexpr size_t kTableBytes = kTable * sizeof(uint64_t);
constexpr size_t kTemplateBytes = StepDetector::kMaxPeriod * sizeof(uint64_t);
constexpr size_t kEventsBytes = StepDetector::kEventSlots * sizeof(StepEvent);
constexpr size_t kMemBytes = kTokensBytes + kPrevBytes + kTableBytes + kTemplateBytes + kEventsBytes;

inline uint64_t mix64(uint64_t x) {  // splitmix64 finalizer
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

// A bijection of (site, size) for sizes below 2^44 and sites below 2^20; beyond, distinct pairs
// collide only by chance.
inline uint64_t make_token(uint32_t site, uint64_t size) {
  return mix64(size ^ (uint64_t{site} << 44) ^ (uint64_t{site} >> 20));
}

// Window table entries: 40 bits of position + 1, 24 bits of the window hash as a tag, so that a slot
// taken by another window is recognised without reading the (cold) history ring.
constexpr uint64_t kPosBits = 40;
constexpr uint64_t kPosMask = (uint64_t{1} << kPosBits) - 1;

inline uint64_t max_u64(uint64_t a, uint64_t b) {
  return a > b ? a : b;
}
inline uint64_t min_u64(uint64_t a, uint64_t b) {
  return a < b ? a : b;
}

}  // namespace

size_t StepDetector::memory_bytes() {
  return kMemBytes;
}

StepDetector::~StepDetector() {
  if (mem_) vm_unmap(mem_, kMemBytes);
}

bool StepDetector::init(const StepConfig& config) {
  if (mem_) {  // re-initialisation: start from a fresh object
    this->~StepDetector();
    new (this) StepDetector();
  }
  if (config.mode == StepMode::kFixed && (config.fixed_period == 0 || config.fixed_period > kMaxPeriod)) return false;
  void* m = vm_map_lazy(kMemBytes);
  if (!m) return false;
  mem_ = m;
  auto* p = static_cast<unsigned char*>(m);
  tokens_ = reinterpret_cast<uint64_t*>(p);
  prev_ = reinterpret_cast<uint32_t*>(p + kTokensBytes);
  table_ = reinterpret_cast<uint64_t*>(p + kTokensBytes + kPrevBytes);
  template_ = reinterpret_cast<uint64_t*>(p + kTokensBytes + kPrevBytes + kTableBytes);
  events_ = reinterpret_cast<StepEvent*>(p + kTokensBytes + kPrevBytes + kTableBytes + kTemplateBytes);
  config_ = config;
  if (config_.intervals == 0) config_.intervals = 1;
  mode_ = config.mode;
  if (mode_ == StepMode::kFixed) {
    period_ = config.fixed_period;
    state_ = kConfirmed;
  }
  return true;
}

uint64_t StepDetector::steps() const {
  switch (mode_) {
    case StepMode::kMarks:
      return marks_;
    case StepMode::kFixed:
      return fixed_steps_;
    case StepMode::kAuto:
      break;
  }
  return committed_steps_ + (locked() ? cur_steps_ : 0);
}

void StepDetector::emit(uint64_t seq, uint64_t end_seq, uint32_t period, uint16_t phase, uint16_t flags) {
  if (ev_count_ == kEventSlots) {
    events_dropped_++;
    return;
  }
  StepEvent& e = events_[(ev_head_ + ev_count_) % kEventSlots];
  e.seq = seq;
  e.end_seq = end_seq;
  e.steps = steps();
  e.period = period;
  e.phase = phase;
  e.flags = flags;
  ev_count_++;
}

bool StepDetector::next_event(StepEvent* out) {
  if (ev_count_ == 0) return false;
  *out = events_[ev_head_];
  ev_head_ = (ev_head_ + 1) % kEventSlots;
  ev_count_--;
  return true;
}

uint64_t StepDetector::oldest_pos() const {
  uint64_t ring_floor = n_ > kRing ? n_ - kRing : 0;
  return max_u64(ring_floor, valid_from_);
}

uint32_t StepDetector::retro_ordinal(uint64_t seq) const {
  if (mode_ != StepMode::kAuto || !locked() || seq < retro_from_seq_ || seq > retro_to_seq_) return kNoOrdinal;
  int64_t d = static_cast<int64_t>(seq - retro_base_seq_) % static_cast<int64_t>(period_);
  if (d < 0) d += period_;
  return static_cast<uint32_t>(d);
}

// ------------------------------------------------------------------------------------------ feed

FeedResult StepDetector::feed(uint64_t seq, uint32_t site, uint64_t size) {
  if (!mem_) return {kNoOrdinal, 0, 0};
  switch (mode_) {
    case StepMode::kFixed:
      return feed_fixed(seq);
    case StepMode::kMarks:
      return feed_marks(seq);
    case StepMode::kAuto:
      break;
  }
  if (!any_fed_) {
    any_fed_ = true;
    seq_offset_ = seq - n_;
    valid_from_ = n_;
  } else if (seq != seq_of(n_)) {  // a discontinuity: start over, keep the counts
    if (locked()) unlock(n_ - 1, state_ == kTentative);
    reset_auto();
    seq_offset_ = seq - n_;
  }
  uint64_t pos = n_++;
  uint64_t token = make_token(site, size);
  tokens_[pos & kRingMask] = token;
  return feed_auto(pos, token);
}

void StepDetector::reset_auto() {
  valid_from_ = n_;
  for (Candidate& c : cand_) c = Candidate{};
  state_ = kSearching;
}

FeedResult StepDetector::feed_fixed(uint64_t seq) {
  if (!any_fed_) {
    any_fed_ = true;
    fixed_base_seq_ = seq;
  }
  uint64_t rel = seq >= fixed_base_seq_ ? seq - fixed_base_seq_ : 0;
  ordinal_ = static_cast<uint32_t>(rel % period_);
  uint16_t flags = kFedLocked;
  if (ordinal_ == 0) {
    fixed_steps_++;
    step_start_ = seq;
    flags |= kFedStepStart;
    emit(seq, seq, period_, 1, kStepFixed);
  }
  return {ordinal_, 1, flags};
}

FeedResult StepDetector::feed_marks(uint64_t seq) {
  if (marks_ == 0) return {kNoOrdinal, 0, 0};
  uint64_t rel = seq >= last_mark_seq_ ? seq - last_mark_seq_ : 0;
  ordinal_ = rel >= kNoOrdinal ? kNoOrdinal - 1 : static_cast<uint32_t>(rel);
  uint16_t flags = kFedLocked;
  if (seq == last_mark_seq_) flags |= kFedStepStart;
  return {ordinal_, phase_id_, flags};
}

void StepDetector::mark(uint64_t seq) {
  if (!mem_ || mode_ == StepMode::kFixed) return;
  if (mode_ == StepMode::kAuto) {  // marks take precedence from now on
    if (locked()) {                // the automatic lock ends here; a tentative one is voided
      const bool tentative = state_ == kTentative;
      const uint64_t start = cur_start_seq_, end = last_match_seq_;
      const uint16_t id = phase_id_;
      close_segment(!tentative);
      state_ = kSearching;
      if (tentative)
        emit(start, end, period_, id, kStepUnlock | kStepRetract);
      else
        emit(seq, seq, period_, id, kStepUnlock);
    }
    mode_ = StepMode::kMarks;
    period_ = 0;
    phase_id_ = next_phase_id_++;
    phases_seen_++;
  }
  if (marks_ > 0 && seq > last_mark_seq_) {
    uint64_t len = seq - last_mark_seq_;
    period_ = len > kMaxPeriod ? kMaxPeriod : static_cast<uint32_t>(len);
  }
  marks_++;
  last_mark_seq_ = seq;
  step_start_ = seq;
  state_ = kConfirmed;
  emit(seq, seq, period_, phase_id_, kStepMark);
}

// ------------------------------------------------------------------------------- auto detection

FeedResult StepDetector::feed_auto(uint64_t pos, uint64_t token) {
  update_candidates(pos, token);
  propose(pos, token);
  FeedResult r{kNoOrdinal, 0, 0};
  if (state_ != kSearching) {
    r = follow(pos, token);
    if (state_ != kSearching) return r;
  }
  // Searching: lock on the shortest lockable candidate.
  int best = -1;
  for (uint32_t k = 0; k < kCandidates; k++) {
    if (cand_[k].period == 0 || !lockable(cand_[k], pos)) continue;
    if (best < 0 || cand_[k].period < cand_[best].period) best = static_cast<int>(k);
  }
  if (best < 0) return {kNoOrdinal, 0, 0};
  lock(pos, cand_[best].period, cand_[best].run);
  uint16_t flags = kFedLocked | kFedLockedNow;
  if (step_start_ == seq_of(pos)) flags |= kFedStepStart;
  return {ordinal_, phase_id_, flags};
}

void StepDetector::update_candidates(uint64_t pos, uint64_t token) {
  for (Candidate& c : cand_) {
    if (c.period == 0) continue;
    if (pos < valid_from_ + c.period) continue;
    if (tok(pos - c.period) == token) {
      if (c.run < UINT32_MAX) c.run++;
    } else {
      c = Candidate{};
    }
  }
}

void StepDetector::propose(uint64_t pos, uint64_t token) {
  prev_[pos & kRingMask] = 0;
  if (pos + 1 < valid_from_ + kWindow) return;
  uint64_t t1 = tok(pos - 1), t2 = tok(pos - 2), t3 = tok(pos - 3);
  uint64_t h = token * 0x9E3779B97F4A7C15ull + t1 * 0xC2B2AE3D27D4EB4Full + t2 * 0x165667B19E3779F9ull +
               t3 * 0xD6E8FEB86659FD93ull;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  uint64_t idx = h >> (64 - kTableBits);
  uint64_t tag = (h << kPosBits) & ~kPosMask;  // the low 24 bits of the hash (the index uses the high ones)
  uint64_t entry = table_[idx];
  table_[idx] = tag | ((pos + 1) & kPosMask);
  if (entry == 0 || (entry & ~kPosMask) != tag) return;
  uint64_t back = ((pos + 1) - (entry & kPosMask)) & kPosMask;  // pos - j, modulo 2^40
  if (back == 0 || back > kMaxPeriod || back > pos) return;
  uint64_t j = pos - back;
  if (j + 1 < valid_from_ + kWindow) return;
  auto same_window = [&](uint64_t a) {
    return tok(a) == token && tok(a - 1) == t1 && tok(a - 2) == t2 && tok(a - 3) == t3;
  };
  if (!same_window(j)) return;  // a hash collision
  prev_[pos & kRingMask] = static_cast<uint32_t>(pos - j);
  add_candidate(static_cast<uint32_t>(pos - j));
  // One step down the chain: the occurrence before j, so that a period whose windows also repeat inside
  // the step (an inner loop) is still proposed.
  uint32_t d = prev_[j & kRingMask];
  if (d == 0) return;
  uint64_t j2 = j - d;
  if (j2 + 1 < valid_from_ + kWindow || pos - j2 > kMaxPeriod || !same_window(j2)) return;
  add_candidate(static_cast<uint32_t>(pos - j2));
}

void StepDetector::add_candidate(uint32_t period) {
  Candidate* slot = nullptr;
  for (Candidate& c : cand_) {
    if (c.period == period) return;
    if (!slot || (slot->period != 0 && (c.period == 0 || c.run < slot->run))) slot = &c;
  }
  // The window of kWindow tokens just matched at this distance: the run is at least kWindow. A slot
  // whose run is already longer is kept (it is verifying a real repetition).
  if (slot->period != 0 && slot->run > kWindow) return;
  *slot = Candidate{period, kWindow};
}

uint32_t StepDetector::failed_run(uint32_t period) const {
  for (const Failure& f : fail_)
    if (f.period == period) return f.run;
  return 0;
}

void StepDetector::remember_failure(uint32_t period, uint32_t run) {
  Failure* slot = nullptr;
  for (Failure& f : fail_) {
    if (f.period == period) {
      slot = &f;
      break;
    }
    if (!slot || f.stamp < slot->stamp) slot = &f;
  }
  if (slot->period == period && slot->run > run) run = slot->run;
  *slot = Failure{period, run, ++stamp_};
}

bool StepDetector::lockable(const Candidate& c, uint64_t pos) const {
  if (c.run < c.period) return false;
  if (c.period < kSmallPeriod && c.run < kSmallRun) return false;
  uint32_t f = failed_run(c.period);
  if (f != 0 && uint64_t{c.run} <= uint64_t{f} + c.period) return false;
  // A multiple of the true period can become lockable first (its run reaches P before a small true
  // period has the longer run it needs): refuse P while its last P tokens are periodic with a divisor
  // of P; the divisor locks when its own run allows (a DataLoader loop of 5 allocations a step was
  // locked at 10, two steps at a time, before this).
  if (c.period <= kDivisorCheckMax) {
    for (uint32_t d = 1; d <= c.period / 2; d++) {
      if (c.period % d || pos < valid_from_ + c.period + d) continue;
      bool periodic = true;
      for (uint64_t j = pos - c.period + 1; j <= pos && periodic; j++) periodic = tok(j) == tok(j - d);
      if (periodic) return false;
    }
  }
  return true;
}

// Locks on `period` at position pos: the last run + period tokens are periodic. Chooses the rotation
// (which ordinal starts a step), builds the template, infers the steps already run, emits events.
void StepDetector::lock(uint64_t pos, uint32_t period, uint32_t run) {
  const uint32_t P = period;
  const uint64_t base = pos - P + 1;  // cycle index 0
  const uint64_t oldest = oldest_pos();
  uint64_t region = min_u64(uint64_t{run} + P, pos - oldest + 1);
  const uint64_t s0 = pos - region + 1;  // first position of the verified periodic region
  auto C = [&](uint64_t k) { return tok(base + k); };
  auto ci = [&](uint64_t x) -> uint32_t {  // cycle index of position x
    return x >= base ? static_cast<uint32_t>((x - base) % P) : static_cast<uint32_t>((P - (base - x) % P) % P);
  };

  // Rotation-invariant signature and least rotation of the pattern.
  uint64_t sig = mix64(P);
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
  const uint32_t least = static_cast<uint32_t>(li < lj ? li : lj);
  Phase* known = nullptr;
  for (Phase& ph : phase_mem_)
    if (ph.id != 0 && ph.period == P && ph.signature == sig) known = &ph;

  // Walk floor: never re-count allocations that a counted lock of this period or longer explained.
  uint64_t floor = oldest;
  for (uint32_t k = 0; k < kSegmentSlots && k < seg_count_; k++) {
    const Segment& s = seg_[(seg_count_ - 1 - k) % kSegmentSlots];
    if (!s.counted || s.period < P || s.end_seq < seq_of(oldest)) continue;
    uint64_t end_pos = s.end_seq - seq_offset_ + 1;
    if (end_pos > floor && end_pos <= s0) floor = end_pos;
  }

  // Backward alignment: before the periodic region, step 1 (and steps after a disturbance) hold the
  // pattern with insertions. Walk back matching the pattern in reverse, skipping up to smax
  // consecutive foreign allocations; a match right after skips counts only if the allocation before it
  // matches too (so that a lone coincidence in the prologue does not shift the step start).
  const uint32_t smax = P / 4 > 16 ? P / 4 : 16;
  const uint64_t cap = 2 * uint64_t{P} + 64;
  // Calls on_accept(position, cycle index) for each accepted match, latest first; returns the earliest
  // accepted position and its cycle index in *earliest / *earliest_e.
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
  uint64_t E;
  uint32_t E_e;
  walk([](uint64_t, uint32_t) {}, &E, &E_e);
  uint32_t e0;
  bool relock = known != nullptr;
  if (known) {
    e0 = (least + known->offset) % P;
    known->stamp = ++stamp_;
    phase_id_ = known->id;
  } else {
    e0 = E_e;
    Phase* slot = &phase_mem_[0];
    for (Phase& ph : phase_mem_)
      if (ph.id == 0 || ph.stamp < slot->stamp) {
        slot = &ph;
        if (ph.id == 0) break;
      }
    phase_id_ = next_phase_id_++;
    phases_seen_++;
    *slot = Phase{sig, P, (e0 + P - least) % P, phase_id_, ++stamp_};
  }
  for (uint32_t k = 0; k < P; k++) template_[k] = C((e0 + k) % P);

  // Step starts before and at pos: accepted walk positions with cycle index e0 (collected backwards),
  // then the periodic region arithmetically.
  uint64_t walk_starts[96];
  uint32_t nwalk = 0;
  uint64_t E2;
  uint32_t E2_e;
  walk(
      [&](uint64_t j, uint32_t e) {
        if (e == e0 && nwalk < 96) walk_starts[nwalk++] = j;
      },
      &E2, &E2_e);
  uint64_t first_region = s0 + (e0 + P - ci(s0)) % P;
  uint64_t nregion = first_region <= pos ? (pos - first_region) / P + 1 : 0;
  uint64_t total = nwalk + nregion;

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
    if (s.period < P && s.start_seq >= e_seq) {
      n = s.steps;
      s.counted = false;
      retracted_++;
    } else if (s.last_start_seq >= e_seq) {
      n = (s.last_start_seq - e_seq) / s.period + 1;
      if (n > s.steps) n = s.steps;
    } else {
      continue;
    }
    s.steps -= n;
    committed_steps_ -= n;
    emit(s.start_seq > e_seq ? s.start_seq : e_seq, s.end_seq, s.period, s.phase, kStepRetract);
    if (!s.counted) forget_phase_if_unused(s.phase);
  }

  state_ = kTentative;
  period_ = P;
  lock_pos_ = pos;
  lock_run_ = run;
  matches_since_lock_ = 0;
  step_noise_ = 0;
  consecutive_noise_ = 0;
  ordinal_ = (ci(pos) + P - e0) % P;
  clock_ = (ordinal_ + 1) % P;
  cur_steps_ = total;
  step_start_ = seq_of(pos) - ordinal_;
  cur_start_seq_ = nwalk ? seq_of(walk_starts[nwalk - 1]) : (nregion ? seq_of(first_region) : step_start_);
  last_match_seq_ = seq_of(pos);
  retro_from_seq_ = seq_of(s0);
  retro_to_seq_ = seq_of(pos);
  retro_base_seq_ = seq_of(base) + e0;  // (base + e0) has ordinal 0
  locks_++;

  // Events: the latest kMaxInferredEvents step starts (all are counted), oldest first.
  uint16_t first_flags = kStepLock | (relock ? kStepRelock : kStepNewPhase);
  uint64_t skip = total > kMaxInferredEvents ? total - kMaxInferredEvents : 0;
  uint64_t idx = 0;
  auto emit_start = [&](uint64_t p) {
    if (idx++ < skip) return;
    uint16_t f = p < pos ? kStepInferred : 0;
    if (idx == skip + 1) f |= first_flags;
    emit(seq_of(p), seq_of(p), P, phase_id_, f);
  };
  for (uint32_t k = nwalk; k > 0; k--) emit_start(walk_starts[k - 1]);
  for (uint64_t k = 0; k < nregion; k++) emit_start(first_region + k * P);
}

// Locked: match the allocation against the template. Tolerance policy (docs/step-detection.md):
//  - equal to the expected token: a match, the clock advances;
//  - equal to the token after it: the expected one is missing (or comes later): skip it, one noise event;
//  - otherwise: an inserted allocation, one noise event; the clock stays.
// The lock is lost when a step collects more noise events than its budget, or when too many insertions
// come in a row: budget max(2, P/8) and 16 in a row once confirmed; 2 and 2 while tentative. A tentative
// lock that is lost is retracted (its steps are void). A lock is confirmed after max(P, 64) matches.
FeedResult StepDetector::follow(uint64_t pos, uint64_t token) {
  const uint32_t P = period_;
  const bool tentative = state_ == kTentative;
  const uint32_t budget = tentative ? kTentativeBudget : (P / 8 > 2 ? P / 8 : 2);
  const uint32_t max_run = tentative ? kTentativeBudget : kMaxConsecutiveNoise;
  uint32_t o;
  bool skipped = false;
  uint32_t after = clock_ + 1 == P ? 0 : clock_ + 1;
  if (token == template_[clock_]) {
    o = clock_;
  } else if (P > 1 && token == template_[after]) {
    o = after;
    skipped = true;
    skipped_tokens_++;
  } else {
    noise_tokens_++;
    step_noise_++;
    if (consecutive_noise_++ == 0) first_noise_seq_ = seq_of(pos);
    if (step_noise_ > budget || consecutive_noise_ >= max_run) {
      unlock(pos, tentative);
      return {kNoOrdinal, 0, 0};
    }
    return {ordinal_, phase_id_, static_cast<uint16_t>(kFedLocked | kFedNoise)};
  }
  uint16_t flags = kFedLocked;
  bool new_step = o <= ordinal_;
  ordinal_ = o;
  clock_ = o + 1 == P ? 0 : o + 1;
  consecutive_noise_ = 0;
  last_match_seq_ = seq_of(pos);
  if (new_step) {
    step_start_ = seq_of(pos);
    step_noise_ = 0;
    cur_steps_++;
    flags |= kFedStepStart;
    emit(step_start_, step_start_, P, phase_id_, 0);
  }
  if (skipped) {
    flags |= kFedNoise;
    if (++step_noise_ > budget) {
      unlock(pos, tentative);
      return {kNoOrdinal, 0, 0};
    }
  }
  if (tentative && ++matches_since_lock_ >= (P > kConfirmTokens ? P : kConfirmTokens)) state_ = kConfirmed;
  return {ordinal_, phase_id_, flags};
}

// A pattern whose every lock was voided is not a phase: forget it (phases() stops counting it).
void StepDetector::forget_phase_if_unused(uint16_t id) {
  if (id == 0 || (locked() && phase_id_ == id)) return;
  for (uint32_t k = 0; k < kSegmentSlots && k < seg_count_; k++)
    if (seg_[k].counted && seg_[k].phase == id) return;
  for (Phase& ph : phase_mem_) {
    if (ph.id != id) continue;
    ph = Phase{};
    phases_seen_--;
    if (id + 1 == next_phase_id_) next_phase_id_--;
  }
}

void StepDetector::unlock(uint64_t pos, bool retract) {
  unlocks_++;
  const uint32_t P = period_;
  const uint16_t id = phase_id_;
  const uint64_t start = cur_start_seq_, end = last_match_seq_;
  if (retract) {
    remember_failure(P, lock_run_ + static_cast<uint32_t>(matches_since_lock_));
    retracted_++;
    close_segment(false);
    state_ = kSearching;
    forget_phase_if_unused(id);
    emit(start, end, P, id, kStepUnlock | kStepRetract);
  } else {
    uint64_t at = consecutive_noise_ > 0 ? first_noise_seq_ : seq_of(pos);
    close_segment(true);
    state_ = kSearching;
    emit(at, at, P, id, kStepUnlock);
  }
}

void StepDetector::close_segment(bool counted) {
  Segment& s = seg_[seg_count_ % kSegmentSlots];
  s = Segment{cur_start_seq_, last_match_seq_, step_start_, cur_steps_, period_, phase_id_, counted};
  seg_count_++;
  if (counted) committed_steps_ += cur_steps_;
  cur_steps_ = 0;
}

}  // namespace sentinel
