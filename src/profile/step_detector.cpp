// Step detection: modes, the stream, events, phases, counters and the diagnosis. See step_detector.h and
// docs/step-detection.md; the search, the lock and the follower are in period_search.cpp, step_lock.cpp
// and bag_follower.cpp.
#include "profile/step_detector.h"

#include <new>

#include "base/vm_region.h"
#include "profile/step_detector_internal.h"

namespace sentinel {

using namespace step_internal;

namespace {

// Memory layout of the one mapping made by init().
constexpr size_t kSumsBytes = kRing * sizeof(uint64_t);
constexpr size_t kTableBytes = kTable * sizeof(uint64_t);
constexpr size_t kAnchorBytes = kAnchors * sizeof(uint64_t);
constexpr size_t kSlotBytes = size_t{kSlots} * 32;
constexpr size_t kTmplBytes = StepDetector::kMaxPeriod * sizeof(uint32_t);
constexpr size_t kByTokenBytes = StepDetector::kMaxPeriod * sizeof(uint16_t);
constexpr size_t kPrevBytes = kRing * sizeof(uint16_t);
constexpr size_t kEventsBytes = StepDetector::kEventSlots * sizeof(StepEvent);
constexpr size_t kMemBytes =
    kSumsBytes + kTableBytes + kAnchorBytes + kSlotBytes + kTmplBytes + kByTokenBytes + kPrevBytes + kEventsBytes;

}  // namespace

size_t StepDetector::memory_bytes() {
  return kMemBytes;
}

StepDetector::~StepDetector() {
  if (mem_) vm_unmap(mem_, kMemBytes);
}

bool StepDetector::init(const StepConfig& config) {
  static_assert(sizeof(TokenSlot) == 32, "the slot table is sized for 32-byte slots");
  if (mem_) {  // re-initialisation: start from a fresh object
    this->~StepDetector();
    new (this) StepDetector();
  }
  if (config.mode == StepMode::kFixed && (config.fixed_period == 0 || config.fixed_period > kMaxPeriod)) return false;
  void* m = vm_map_lazy(kMemBytes);
  if (!m) return false;
  mem_ = m;
  auto* p = static_cast<unsigned char*>(m);
  sums_ = reinterpret_cast<uint64_t*>(p);
  p += kSumsBytes;
  table_ = reinterpret_cast<uint64_t*>(p);
  p += kTableBytes;
  anchors_ = reinterpret_cast<uint64_t*>(p);
  p += kAnchorBytes;
  slots_ = reinterpret_cast<TokenSlot*>(p);
  p += kSlotBytes;
  tmpl_ = reinterpret_cast<uint32_t*>(p);
  p += kTmplBytes;
  by_token_ = reinterpret_cast<uint16_t*>(p);
  p += kByTokenBytes;
  prev_ = reinterpret_cast<uint16_t*>(p);
  p += kPrevBytes;
  events_ = reinterpret_cast<StepEvent*>(p);
  config_ = config;
  if (config_.intervals == 0) config_.intervals = 1;
  mode_ = config.mode;
  gen_ = 1;  // the zeroed slots have generation 0: empty
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
  // The ring holds S(p) for p in (n - kRing, n]; tok(j) needs S(j) and S(j + 1).
  uint64_t ring_floor = n_ + 1 > kRing ? n_ + 1 - kRing : 0;
  return max_u64(ring_floor, valid_from_);
}

uint32_t StepDetector::retro_ordinal(uint64_t seq) const {
  if (mode_ != StepMode::kAuto || !locked() || seq < retro_from_seq_ || seq > retro_to_seq_) return kNoOrdinal;
  int64_t d = static_cast<int64_t>(seq - retro_base_seq_) % static_cast<int64_t>(period_);
  if (d < 0) d += period_;
  return static_cast<uint32_t>(d);
}

StepDetector::Phase* StepDetector::phase_slot(uint16_t id) {
  if (id == 0) return nullptr;
  for (Phase& ph : phase_mem_)
    if (ph.id == id) return &ph;
  return nullptr;
}

const StepDetector::Phase* StepDetector::phase_slot(uint16_t id) const {
  return const_cast<StepDetector*>(this)->phase_slot(id);
}

// ------------------------------------------------------------------------------------------ feed

FeedResult StepDetector::feed(uint64_t seq, uint32_t site, uint64_t size) {
  if (!mem_) return {kNoOrdinal, kNoOrdinal, kNoOrdinal, 0, 0};
  const uint64_t token = make_token(site, size);
  switch (mode_) {
    case StepMode::kFixed:
      return feed_fixed(seq, token);
    case StepMode::kMarks:
      return feed_marks(seq, token);
    case StepMode::kAuto:
      break;
  }
  auto_fed_++;
  cur_seq_ = seq;
  if (!any_fed_) {
    any_fed_ = true;
    seq_offset_ = seq - n_;
    valid_from_ = n_;
    max_seq_ = seq;
  } else {
    // A merge of per-thread buffers delivers seqs slightly out of order: within kReorder of the expected
    // seq the stream is continuous (positions count feeds; a seq skipped here is a missing allocation).
    const uint64_t expected = max_seq_ + 1;
    const bool gap = seq >= expected ? seq - expected > kReorder : expected - seq > kReorder + 1;
    if (gap) {
      if (locked()) unlock(n_ - 1, state_ == kTentative);
      reset_auto();
      seq_offset_ = seq - n_;
      max_seq_ = seq;
    } else if (seq > max_seq_) {
      max_seq_ = seq;
      seq_offset_ = seq - n_;
    }
  }
  const uint64_t pos = n_++;
  sum_ += token;
  sums_[(pos + 1) & kRingMask] = sum_;
  FeedResult r = feed_auto(pos, token);
  t3_ = t2_;
  t2_ = t1_;
  t1_ = token;
  return r;
}

void StepDetector::reset_auto() {
  valid_from_ = n_;
  for (Candidate& c : cand_) {
    note_evidence(c);
    c = Candidate{};
  }
  state_ = kSearching;
}

FeedResult StepDetector::feed_fixed(uint64_t seq, uint64_t token) {
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
    cur_.epoch = ++epoch_;
    flags |= kFedStepStart;
    emit(seq, seq, period_, 1, kStepFixed);
  }
  clock_ = ordinal_;
  return {ordinal_, occurrence_since_mark(token), clock_, 1, flags};
}

FeedResult StepDetector::feed_marks(uint64_t seq, uint64_t token) {
  if (marks_ == 0) return {kNoOrdinal, kNoOrdinal, kNoOrdinal, 0, 0};
  uint64_t rel = seq >= last_mark_seq_ ? seq - last_mark_seq_ : 0;
  ordinal_ = rel >= kNoOrdinal ? kNoOrdinal - 1 : static_cast<uint32_t>(rel);
  clock_ = ordinal_;
  uint16_t flags = kFedLocked;
  if (seq == last_mark_seq_) flags |= kFedStepStart;
  return {ordinal_, occurrence_since_mark(token), clock_, phase_id_, flags};
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
    // The slot table now counts occurrences per marked step; the automatic template is gone.
    gen_++;
    distinct_ = 0;
    tmpl_phase_ = 0;
  }
  if (phase_id_ == 0) {  // SENTINEL_STEP=marks: the marked steps are one phase, 1-based like any other
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
  cur_.epoch = ++epoch_;
  state_ = kConfirmed;
  emit(seq, seq, period_, phase_id_, kStepMark);
}

// ------------------------------------------------------------------------------- auto detection

FeedResult StepDetector::feed_auto(uint64_t pos, uint64_t token) {
  // Locked, the search only keeps its window table current (the candidates are rebuilt from the history
  // when the lock is lost: see backfill()). This keeps the steady state cheap.
  const uint32_t d = window_distance(pos, token);
  FeedResult r{kNoOrdinal, kNoOrdinal, kNoOrdinal, 0, 0};
  if (state_ != kSearching) {
    r = follow(pos, token);
    if (state_ != kSearching) return r;
    for (Candidate& c : cand_) c = Candidate{};  // stale: they stopped verifying at the lock
  } else {
    update_candidates(pos, token);
    propose_anchor(pos, token);
  }
  propose_distance(pos, d);
  // Searching: lock on the shortest lockable candidate (an exact repeat, or equal bags).
  int best = -1;
  bool best_exact = false;
  for (uint32_t k = 0; k < kCandidates; k++) {
    Candidate& c = cand_[k];
    if (c.period == 0 || (best >= 0 && c.period >= cand_[best].period)) continue;
    bool exact = lockable_exact(c, pos);
    if (!exact && !lockable_bag(c, pos)) continue;
    best = static_cast<int>(k);
    best_exact = exact;
  }
  if (best < 0) return r;
  Candidate chosen = cand_[best];
  if (best_exact) {
    // A single exact repeat of an unrelated period is a coincidence when another candidate already has
    // more allocations verified by equal bags (a batch made by another thread fell outside two windows
    // of the step's other allocations): wait for that one.
    for (const Candidate& o : cand_) {
      if (o.period == 0 || o.hits < 3 || o.period % chosen.period == 0 || chosen.period % o.period == 0) continue;
      if (uint64_t{o.hits} * o.period > uint64_t{chosen.run} + chosen.period) return r;
    }
    // Two steps whose orders alternate repeat exactly at 2P before P repeats at all: an exact repeat
    // made of equal bags of a divisor is that divisor's, locked by its bags (the repeat of 2P already
    // shows four equal windows of P).
    if (uint32_t d = bag_divisor(chosen.period, pos)) {
      Candidate dc{};
      dc.period = d;
      dc.born = pos;
      backfill(dc, pos);
      if (dc.hits < 2) return r;
      chosen = dc;
      best_exact = false;
    }
  }
  if (!lock(pos, chosen, best_exact)) return r;
  uint16_t flags = kFedLocked | kFedLockedNow;
  if (step_start_ == cur_seq_) flags |= kFedStepStart;
  return {ordinal_, tmpl_[ordinal_] & 0xFFFFu, clock_, phase_id_, flags};
}

// ------------------------------------------------------------------------------- lock endings

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
    if (tmpl_phase_ == id) tmpl_phase_ = 0;
  }
}

void StepDetector::unlock(uint64_t pos, bool retract) {
  (void)pos;
  unlocks_++;
  const uint32_t P = period_;
  const uint16_t id = phase_id_;
  const uint64_t start = cur_start_seq_, end = last_match_seq_;
  if (Phase* ph = cur_phase_) {
    ph->unlocks++;
    ph->lost = true;
  }
  // Where the pattern ended: the first allocation after the last one that fit.
  const uint64_t at = consecutive_noise_ > 0 ? first_noise_seq_ : last_match_seq_ + 1;
  lost_at_seq_ = at;
  lost_steps_ = cur_steps_;
  lost_period_ = P;
  lost_phase_ = id;
  if (retract) {
    remember_failure(P, lock_run_ + static_cast<uint32_t>(matches_since_lock_),
                     lock_hits_ + static_cast<uint32_t>(matches_since_lock_ / (P ? P : 1)));
    retracted_++;
    if (Phase* ph = cur_phase_) {
      ph->retracted++;
      ph->steps -= cur_steps_ <= ph->steps ? cur_steps_ : ph->steps;
    }
    close_segment(false);
    state_ = kSearching;
    cur_phase_ = nullptr;
    forget_phase_if_unused(id);
    emit(start, end, P, id, kStepUnlock | kStepRetract);
  } else {
    close_segment(true);
    state_ = kSearching;
    cur_phase_ = nullptr;
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

// ----------------------------------------------------------------------------- stats, diagnosis

bool StepDetector::phase_stats(uint16_t phase, PhaseStats* out) const {
  *out = PhaseStats{};
  if (!mem_) return false;
  if (phase == 0) {
    out->period = mode_ == StepMode::kAuto ? (locked() ? period_ : lost_period_) : period_;
    out->distinct_tokens = mode_ == StepMode::kAuto ? distinct_ : 0;
    out->steps = steps();
    out->noise = noise_tokens_;
    out->missing = skipped_tokens_;
    out->locks = locks_;
    out->unlocks = unlocks_;
    out->retracted = retracted_;
    bool found = mode_ != StepMode::kAuto ? steps() > 0 : ever_locked_ && steps() > 0;
    if (found) out->flags |= kDetectLocked;
    if (mode_ == StepMode::kAuto && found && !locked()) out->flags |= kDetectLost;
    if (!found && (auto_fed_ > 0 || (mode_ != StepMode::kAuto && any_fed_))) out->flags |= kDetectNoStep;
    return true;
  }
  if (mode_ != StepMode::kAuto) {  // marks and fixed: one phase
    if (phase != (mode_ == StepMode::kFixed ? 1 : phase_id_)) return false;
    out->period = period_;
    out->steps = steps();
    out->flags = steps() ? kDetectLocked : kDetectNoStep;
    return true;
  }
  const Phase* ph = phase_slot(phase);
  if (!ph) return false;
  out->period = ph->period;
  out->distinct_tokens = ph->distinct;
  out->steps = ph->steps;
  out->noise = ph->noise;
  out->missing = ph->missing;
  out->locks = ph->locks;
  out->unlocks = ph->unlocks;
  out->retracted = ph->retracted;
  if (ph->steps) out->flags |= kDetectLocked;
  if (ph->lost && !(locked() && phase_id_ == phase)) out->flags |= kDetectLost;
  if (!ph->steps) out->flags |= kDetectNoStep;
  return true;
}

void StepDetector::diagnose(StepDiagnosis* out) const {
  *out = StepDiagnosis{};
  out->allocations = auto_fed_;
  out->distinct_tokens = distinct_seen_;
  out->longest_run = best_run_;
  out->longest_run_period = best_run_period_;
  out->best_bag_windows = best_hits_;
  out->best_bag_period = best_hits_period_;
  for (const Candidate& c : cand_) {  // evidence still being gathered
    if (c.period == 0) continue;
    if (c.run > out->longest_run) {
      out->longest_run = c.run;
      out->longest_run_period = c.period;
    }
    if (c.hits > out->best_bag_windows) {
      out->best_bag_windows = c.hits;
      out->best_bag_period = c.period;
    }
  }
  out->state = state_;
  out->locks = locks_;
  out->unlocks = unlocks_;
  out->retracted = retracted_;
  out->lost_at_seq = lost_at_seq_;
  out->lost_steps = lost_steps_;
  out->lost_period = lost_period_;
  out->lost_phase = lost_phase_;
}

namespace {

// A bounded writer of one line: no allocation, no locale, no stdio (describe() may run inside malloc).
struct Line {
  char* buf;
  size_t cap, len = 0;
  Line& s(const char* t) {
    while (*t) c(*t++);
    return *this;
  }
  Line& c(char ch) {
    if (len + 1 < cap) buf[len++] = ch;
    return *this;
  }
  Line& u(uint64_t v) {
    char d[24];
    int n = 0;
    do d[n++] = static_cast<char>('0' + v % 10);
    while ((v /= 10) != 0);
    while (n) c(d[--n]);
    return *this;
  }
  size_t end() {
    if (cap) buf[len < cap ? len : cap - 1] = 0;
    return len;
  }
};

}  // namespace

size_t StepDetector::describe(char* buf, size_t cap) const {
  Line l{buf, cap};
  if (!mem_) return l.s("step detector not initialised").end();
  StepDiagnosis d;
  diagnose(&d);
  if (mode_ != StepMode::kAuto)
    return l.s(mode_ == StepMode::kMarks ? "steps from sentinel_step() marks: " : "fixed steps: ")
        .u(steps())
        .s(" steps")
        .end();
  if (locked())
    return l.s("locked on a step of ").u(period_).s(" allocations (phase ").u(phase_id_).s("), ").u(steps()).s(" steps")
        .end();
  if (d.unlocks > 0 && steps() > 0) {
    l.s("step pattern lost at allocation ").u(d.lost_at_seq).s(" (phase ").u(d.lost_phase).s(", ").u(d.lost_period);
    l.s(" allocations a step, after ").u(d.lost_steps).s(" steps) and not found again in the ");
    l.u(max_seq_ + 1 > d.lost_at_seq ? max_seq_ + 1 - d.lost_at_seq : 0).s(" allocations since");
  } else {
    l.s("no step found in ").u(d.allocations).s(" tracked allocations");
  }
  l.s(": ").u(d.distinct_tokens).s(" distinct (site,size) tokens, ");
  if (d.longest_run)
    l.s("longest exact repeat ").u(d.longest_run).s(" allocations at distance ").u(d.longest_run_period);
  else
    l.s("no exact repeat");
  if (d.best_bag_windows)
    l.s(", longest same-bag repeat ").u(d.best_bag_windows).s(" windows of ").u(d.best_bag_period)
        .s(d.best_bag_period == 1 ? " allocation" : " allocations");
  else
    l.s(", no same-bag repeat");
  l.s(", ").u(d.locks).s(" locks (").u(d.retracted).s(" voided)");
  return l.end();
}

}  // namespace sentinel
