// Step detection: the composition of its parts, the modes (auto, marks, fixed), the events, the statistics
// and the diagnosis. See step_detector.h and docs/step-detection.md; the parts are in step_history.h,
// period_search.cpp, bag_follower.cpp, phase_memory.cpp, step_lock.cpp (with step_walk.cpp and
// step_first.cpp) and step_follow.cpp.
#include "profile/step_detector.h"

#include <new>

#include "base/vm_region.h"

namespace sentinel {

using namespace step_internal;

namespace {

// The one mapping made by init(), part by part.
constexpr size_t kMemBytes =
    StepHistory::kBytes + PeriodSearch::kBytes + BagFollower::kBytes + StepEvents::kBytes + StepRemainder::kBytes;

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
  history_.attach(p);
  p += StepHistory::kBytes;
  search_.attach(p);
  p += PeriodSearch::kBytes;
  follower_.attach(p);
  p += BagFollower::kBytes;
  events_.attach(p);
  p += StepEvents::kBytes;
  remainder_.attach(p);
  config_ = config;
  if (config_.intervals == 0) config_.intervals = 1;
  mode_ = config.mode;
  if (mode_ == StepMode::kFixed) {
    cursor_.period = config.fixed_period;
    cursor_.state = StepCursor::kConfirmed;
  }
  return true;
}

void StepDetector::finish() {
  if (mem_ && mode_ == StepMode::kAuto) lock_.end_of_stream();
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
  return lock_.steps();
}

void StepDetector::emit(uint64_t seq, uint32_t period, uint16_t phase, uint16_t flags) {
  events_.push(StepEvent{seq, seq, steps(), period, phase, flags});
}

bool StepDetector::next_event(StepEvent* out) {
  return events_.pop(out);
}

uint32_t StepDetector::retro_ordinal(uint64_t seq) const {
  return mode_ == StepMode::kAuto ? lock_.retro_ordinal(seq) : kNoOrdinal;
}

bool StepDetector::template_entry(uint16_t phase, uint32_t ordinal, uint32_t* site, uint64_t* size, uint32_t* k) const {
  return mem_ && follower_.entry(phase, ordinal, site, size, k);
}

uint32_t StepDetector::multiplicity(uint16_t phase, uint32_t site, uint64_t size) const {
  return mem_ ? follower_.multiplicity(phase, site, size) : 0;
}

uint32_t StepDetector::template_ordinal(uint16_t phase, uint32_t site, uint64_t size, uint32_t k) const {
  return mem_ ? follower_.template_ordinal(phase, site, size, k) : kNoOrdinal;
}

// ------------------------------------------------------------------------------------------ feed

FeedResult StepDetector::feed(uint64_t seq, uint32_t site, uint64_t size, int64_t live_bytes) {
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
  return feed_auto(seq, token, live_bytes);
}

// Locked, the search only keeps its window table current (the candidates are rebuilt from the history when
// the lock is lost: see PeriodSearch::backfill()). This keeps the steady state cheap.
FeedResult StepDetector::feed_auto(uint64_t seq, uint64_t token, int64_t live_bytes) {
  auto_fed_++;
  any_fed_ = true;
  if (history_.take_seq(seq)) {  // a gap: the lock is lost and the search starts over
    if (locked()) lock_.unlock(cursor_.state == StepCursor::kTentative);
    remainder_.cancel();
    search_.reset();
    cursor_.state = StepCursor::kSearching;
  }
  const uint64_t pos = history_.append(token, live_bytes);
  const uint32_t d = search_.observe(pos, token);
  FeedResult r{kNoOrdinal, kNoOrdinal, kNoOrdinal, 0, 0};
  if (locked()) {
    r = lock_.follow(token);
    if (locked()) return r;
    search_.clear();  // stale: they stopped verifying at the lock
  } else {
    search_.verify(pos, token);
    if (remainder_.due(pos + 1)) lock_.resolve_remainder(pos + 1, true);
  }
  search_.propose(pos, d);
  PeriodSearch::Candidate chosen;
  bool exact;
  if (!search_.choose(pos, &chosen, &exact) || !lock_.lock(pos, chosen, exact)) return r;
  uint16_t flags = kFedLocked | kFedLockedNow;
  if (cursor_.step_start == seq) flags |= kFedStepStart;
  return {cursor_.ordinal, follower_.k_at(cursor_.ordinal), cursor_.clock, cursor_.phase, flags};
}

FeedResult StepDetector::feed_fixed(uint64_t seq, uint64_t token) {
  if (!any_fed_) {
    any_fed_ = true;
    fixed_base_seq_ = seq;
  }
  uint64_t rel = seq >= fixed_base_seq_ ? seq - fixed_base_seq_ : 0;
  cursor_.ordinal = static_cast<uint32_t>(rel % cursor_.period);
  uint16_t flags = kFedLocked;
  if (cursor_.ordinal == 0) {
    fixed_steps_++;
    cursor_.step_start = seq;
    follower_.new_step();
    flags |= kFedStepStart;
    emit(seq, cursor_.period, 1, kStepFixed);
  }
  cursor_.clock = cursor_.ordinal;
  return {cursor_.ordinal, follower_.occurrence(token, cursor_.ordinal == 0), cursor_.clock, 1, flags};
}

FeedResult StepDetector::feed_marks(uint64_t seq, uint64_t token) {
  if (marks_ == 0) return {kNoOrdinal, kNoOrdinal, kNoOrdinal, 0, 0};
  uint64_t rel = seq >= last_mark_seq_ ? seq - last_mark_seq_ : 0;
  cursor_.ordinal = rel >= kNoOrdinal ? kNoOrdinal - 1 : static_cast<uint32_t>(rel);
  cursor_.clock = cursor_.ordinal;
  uint16_t flags = kFedLocked;
  if (seq == last_mark_seq_) flags |= kFedStepStart;
  return {cursor_.ordinal, follower_.occurrence(token, cursor_.ordinal == 0), cursor_.clock, cursor_.phase, flags};
}

void StepDetector::mark(uint64_t seq) {
  if (!mem_ || mode_ == StepMode::kFixed) return;
  if (mode_ == StepMode::kAuto) {  // marks take precedence from now on
    if (locked()) lock_.end_for_marks(seq);
    mode_ = StepMode::kMarks;
    cursor_.period = 0;
    cursor_.phase = phases_.new_id();
    // The slot table now counts occurrences per marked step; the automatic template is gone.
    follower_.drop_template();
  }
  // SENTINEL_STEP=marks: the marked steps are one phase, 1-based like any other.
  if (cursor_.phase == 0) cursor_.phase = phases_.new_id();
  if (marks_ > 0 && seq > last_mark_seq_) {
    uint64_t len = seq - last_mark_seq_;
    cursor_.period = len > kMaxPeriod ? kMaxPeriod : static_cast<uint32_t>(len);
  }
  marks_++;
  last_mark_seq_ = seq;
  cursor_.step_start = seq;
  follower_.new_step();
  cursor_.state = StepCursor::kConfirmed;
  emit(seq, cursor_.period, cursor_.phase, kStepMark);
}

// ----------------------------------------------------------------------------- stats, diagnosis

bool StepDetector::phase_stats(uint16_t phase, PhaseStats* out) const {
  *out = PhaseStats{};
  if (!mem_) return false;
  if (phase == 0) {
    const StepLock::Counters& c = lock_.counters();
    out->period = mode_ == StepMode::kAuto ? (locked() ? cursor_.period : lock_.lost().period) : cursor_.period;
    out->distinct_tokens = mode_ == StepMode::kAuto ? follower_.distinct() : 0;
    out->steps = steps();
    out->noise = c.noise;
    out->missing = c.skipped;
    out->locks = c.locks;
    out->unlocks = c.unlocks;
    out->retracted = c.retracted;
    bool found = mode_ != StepMode::kAuto ? steps() > 0 : c.locks > 0 && steps() > 0;
    if (found) out->flags |= kDetectLocked;
    if (mode_ == StepMode::kAuto && found && !locked()) out->flags |= kDetectLost;
    if (!found && (auto_fed_ > 0 || (mode_ != StepMode::kAuto && any_fed_))) out->flags |= kDetectNoStep;
    return true;
  }
  if (mode_ != StepMode::kAuto) {  // marks and fixed: one phase
    if (phase != (mode_ == StepMode::kFixed ? 1 : cursor_.phase)) return false;
    out->period = cursor_.period;
    out->steps = steps();
    out->flags = steps() ? kDetectLocked : kDetectNoStep;
    return true;
  }
  const PhaseMemory::Phase* ph = phases_.slot(phase);
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
  if (ph->lost && !(locked() && cursor_.phase == phase)) out->flags |= kDetectLost;
  if (!ph->steps) out->flags |= kDetectNoStep;
  return true;
}

void StepDetector::diagnose(StepDiagnosis* out) const {
  *out = StepDiagnosis{};
  out->allocations = auto_fed_;
  search_.evidence(out);
  out->state = cursor_.state;
  const StepLock::Counters& c = lock_.counters();
  out->locks = c.locks;
  out->unlocks = c.unlocks;
  out->retracted = c.retracted;
  const StepLock::Lost& lost = lock_.lost();
  out->lost_at_seq = lost.at_seq;
  out->lost_steps = lost.steps;
  out->lost_period = lost.period;
  out->lost_phase = lost.phase;
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
    return l.s("locked on a step of ")
        .u(cursor_.period)
        .s(" allocations (phase ")
        .u(cursor_.phase)
        .s("), ")
        .u(steps())
        .s(" steps")
        .end();
  if (d.unlocks > 0 && steps() > 0) {
    const uint64_t max_seq = history_.max_seq();
    l.s("step pattern lost at allocation ").u(d.lost_at_seq).s(" (phase ").u(d.lost_phase).s(", ").u(d.lost_period);
    l.s(" allocations a step, after ").u(d.lost_steps).s(" steps) and not found again in the ");
    l.u(max_seq + 1 > d.lost_at_seq ? max_seq + 1 - d.lost_at_seq : 0).s(" allocations since");
  } else {
    l.s("no step found in ").u(d.allocations).s(" tracked allocations");
  }
  l.s(": ").u(d.distinct_tokens).s(" distinct (site,size) tokens, ");
  if (d.longest_run)
    l.s("longest exact repeat ").u(d.longest_run).s(" allocations at distance ").u(d.longest_run_period);
  else
    l.s("no exact repeat");
  if (d.best_bag_windows)
    l.s(", longest same-bag repeat ")
        .u(d.best_bag_windows)
        .s(" windows of ")
        .u(d.best_bag_period)
        .s(d.best_bag_period == 1 ? " allocation" : " allocations");
  else
    l.s(", no same-bag repeat");
  l.s(", ").u(d.locks).s(" locks (").u(d.retracted).s(" voided)");
  return l.end();
}

}  // namespace sentinel
