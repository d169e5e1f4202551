#include "runtime/stepping.h"

#include <cstring>
#include <utility>

#include "base/log.h"
#include "base/vm_region.h"
#include "profile/papi_counters.h"
#include "tier/placement_check.h"
#include "tier/tiering.h"

namespace sentinel {

// ---- StepLog

bool StepLog::init() {
  entries_ = static_cast<sentinel_step_entry*>(vm_map_lazy(kCapacity * sizeof(sentinel_step_entry)));
  return entries_ != nullptr;
}

void StepLog::set_length(uint64_t i) {
  if (i + 1 >= size() || (entries_[i].flags & kClosed)) return;
  entries_[i].allocations = static_cast<uint32_t>(entries_[i + 1].start_seq - entries_[i].start_seq);
}

void StepLog::add(const sentinel_step_entry& e) {
  if (next_ >= kCapacity) return;
  uint64_t i = next_++;
  while (i > 0 && entries_[i - 1].start_seq > e.start_seq) {
    entries_[i] = entries_[i - 1];
    --i;
  }
  entries_[i] = e;
  if (i > 0) set_length(i - 1);
  set_length(i);
}

void StepLog::close_last(uint64_t end_seq) {
  if (!next_) return;
  sentinel_step_entry& e = entries_[size() - 1];
  if (e.flags & kClosed) return;
  e.allocations = end_seq > e.start_seq ? static_cast<uint32_t>(end_seq - e.start_seq) : 0;
  e.flags |= kClosed;
}

void StepLog::drop(uint16_t phase, uint64_t first_seq, uint64_t last_seq) {
  uint64_t w = 0;
  for (uint64_t r = 0; r < size(); ++r) {
    const sentinel_step_entry& e = entries_[r];
    if (e.phase == phase && e.start_seq >= first_seq && e.start_seq <= last_seq) continue;
    entries_[w++] = e;
  }
  next_ = w;
  for (uint64_t i = 0; i < next_; ++i) set_length(i);
}

// The phase's newest step, which may have steps of another phase after it (a lock that took over has
// announced its own before the step it cut short is dropped). The step before it ends where it began.
bool StepLog::drop_last(uint16_t phase, uint64_t start_seq) {
  uint64_t at = size();
  while (at > 0 && entries_[at - 1].phase != phase) --at;
  if (at == 0 || entries_[at - 1].start_seq != start_seq) return false;
  --at;
  for (uint64_t i = at; i + 1 < size(); ++i) entries_[i] = entries_[i + 1];
  --next_;
  // The log is sorted by start: the step before the dropped one is just below where it was (past any
  // that began at the same allocation).
  while (at > 0 && entries_[at - 1].start_seq >= start_seq) --at;
  if (at > 0) {
    sentinel_step_entry& e = entries_[at - 1];
    if (!(e.flags & kClosed) || e.start_seq + e.allocations > start_seq) {
      e.allocations = static_cast<uint32_t>(start_seq - e.start_seq);
      e.flags |= kClosed;
    }
  }
  return true;
}

// ---- Stepper

bool Stepper::init(const Config& cfg, Profiler* profiler, const ObjectLog* log, Tiering* tiering,
                   const TickClock* clock) {
  cfg_ = cfg;
  clock_ = clock;
  profiler_ = profiler;
  log_ = log;
  tiering_ = tiering;
  StepConfig sc;
  sc.mode = cfg.step_source == StepSource::marks   ? StepMode::kMarks
            : cfg.step_source == StepSource::fixed ? StepMode::kFixed
                                                   : StepMode::kAuto;
  sc.fixed_period = static_cast<uint32_t>(cfg.step_period);
  sc.intervals = static_cast<uint32_t>(cfg.intervals ? cfg.intervals : 16);
  if (!detector_.init(sc) || !steps_.init()) return false;
  if (cfg.mode == Mode::profile || cfg.mode == Mode::run) {
    assignment_capacity_ = cfg.max_objects;
    assignments_ =
        static_cast<Assignment*>(vm_map_lazy((assignment_capacity_ ? assignment_capacity_ : 1) * sizeof(Assignment)));
    if (!assignments_) return false;
  }
  return true;
}

const char* Stepper::counter_name(uint32_t i) const {
  return i < counter_count_ ? papi::event_name(i) : "";
}

PhaseRecord* Stepper::record(uint16_t id) {
  if (!id) return nullptr;
  for (uint32_t i = 0; i < phase_count_; ++i)
    if (phases_[i].id == id && !phases_[i].voided) return &phases_[i];
  for (uint32_t i = 0; i < phase_count_; ++i)
    if (phases_[i].id == id) {                       // voided: the pattern is back, as a phase of its own this time
      IntervalSample* samples = phases_[i].samples;  // mapped once, kept (the window clears it)
      phases_[i] = PhaseRecord{};
      phases_[i].id = id;
      phases_[i].samples = samples;
      return &phases_[i];
    }
  if (phase_count_ >= kMaxPhases) return nullptr;
  PhaseRecord& p = phases_[phase_count_++];
  p.id = id;
  return &p;
}

const PhaseRecord* Stepper::find_phase(uint16_t id) const {
  for (uint32_t i = 0; i < phase_count_; ++i)
    if (phases_[i].id == id && !phases_[i].voided) return &phases_[i];
  return nullptr;
}

PhaseRecord* Stepper::find_phase(uint16_t id) {
  return const_cast<PhaseRecord*>(std::as_const(*this).find_phase(id));
}

void Stepper::set_period(PhaseRecord& p, uint32_t period) {
  uint32_t configured = static_cast<uint32_t>(cfg_.intervals ? cfg_.intervals : 16);
  p.period = period;
  p.intervals = StepDetector::intervals_for(period, configured);
  for (uint32_t k = 0; k < p.intervals; ++k)
    p.interval_ends[k] = StepDetector::interval_begin(k + 1, period, configured);
}

bool Stepper::check_wanted(const PhaseRecord& p) const {
  if (p.check == PhaseRecord::kNotYet) return true;
  // A schedule that took over after the check (the bandwidth watch's re-plan) is checked again; until
  // that check is done, the dump keeps the one before.
  return p.check == PhaseRecord::kDone && tiering_ && tiering_->schedule_switches(p.id) != p.checked_schedule;
}

void Stepper::update_sync() {
  bool profiling_mode = cfg_.mode == Mode::profile || cfg_.mode == Mode::run;
  bool want = window_ != Window::none;
  if (!want && profiling_mode && locked_phase_) {
    const PhaseRecord* p = find_phase(locked_phase_);
    // From the lock to the profile; and the step before a placement check.
    want = p && ((p->profile == PhaseRecord::kNotYet && p->period >= kMinProfiledPeriod) ||
                 (p->planned && check_wanted(*p) && cfg_.check_steps && p->planned_steps + 1 >= cfg_.check_after &&
                  tiering_ && !tiering_->dry_run() && tiering_->trial_settled(p->id)) ||
                 (tiering_ && tiering_->trial_wants_sync(p->id)));
  }
  sync_wanted_ = want;
}

void Stepper::begin_step(uint64_t seq, uint64_t now, uint32_t flags, uint16_t phase) {
  PhaseRecord* p = record(phase);
  // The step that just ended was regular (about the phase's period): bags of a thread pool may carry
  // a racing allocation or two across a boundary, so "regular" allows a little noise.
  bool previous_regular = false;
  if (steps_.size()) {
    const sentinel_step_entry& last = steps_.at(steps_.size() - 1);
    if (last.start_seq < seq && p && p->period) {
      uint64_t n = seq - last.start_seq, P = p->period, slack = P / 8 > 2 ? P / 8 : 2;
      previous_regular = n + slack >= P && n <= P + slack;
    }
  }
  // The boundary verify runs in the steps after a placement check (close_window): this step start ends one.
  if (verify_steps_left_ && --verify_steps_left_ == 0 && tiering_) tiering_->set_verify(false);
  if (window_ != Window::none) {
    // A step of the window ended: the next one is in it too, or the window closes.
    window_starts_[window_steps_ + 1] = seq;
    ++window_steps_;
    if (window_steps_ >= window_target_)
      close_window(now, Outcome::complete);
    else
      current_interval_ = -1;
  }
  sentinel_step_entry e{};
  e.start_seq = seq;
  e.start_ns = now;  // ticks; converted when written
  e.phase = phase;
  e.flags = flags;
  end_clock_interval(now);
  tier_interval_ = -1;
  if (p) {
    ++p->steps;
    ++p->steps_in_lock;
    if (p->planned) ++p->planned_steps;
    bool profiling_mode = cfg_.mode == Mode::profile || cfg_.mode == Mode::run;
    // PAPI's start-up (10-20 ms where it probes for absent hardware counters) belongs in the plain step
    // before the window, not in the first profiled one.
    if (profiling_mode && p->profile == PhaseRecord::kNotYet && p->steps_in_lock == 1) prepare_counters();
    if (p->steps_in_lock == 1) {
      p->lock_live = live_;
      p->lock_allocated = 0;
    }
    if (p->steps_in_lock == 2 && p->profile == PhaseRecord::kNotYet) {
      // The lock step ended: its intervals are not the plain reference (kProfileStepInLock).
      memset(p->plain_ticks, 0, sizeof p->plain_ticks);
      memset(p->plain_count, 0, sizeof p->plain_count);
    }
    // The trial first: the step that ends its last candidate also settles it (trial_settled), and where
    // the schedule timed last is kept, the check may open on this very step.
    // Steady: the plan's placement checked (or no check), and no window's faults in the step beginning.
    const bool steady = p->planned && window_ == Window::none &&
                        (p->check == PhaseRecord::kDone || p->check == PhaseRecord::kFailed || !cfg_.check_steps);
    if (tiering_) tiering_->on_step_start(phase, p->steps - 1, now, behind_, steady);
    // Every period of two allocations or more is profiled and planned once its lock is confirmed: two
    // or three large tensors a step (an embedding table's dense gradient) are what placement is about;
    // a loop that repeats one allocation (reading a file in chunks) has one object and one interval, and
    // nothing to schedule. (Profiling a tentative lock after 4 steps was tried: in the guest's
    // torch-policies it made first-touch's MLP placement differ from its plan in 2 runs of 3.)
    bool lock_ok = detector_.confirmed() || detector_.mode() != StepMode::kAuto;
    Window due = Window::none;
    if (window_ == Window::none && profiling_mode && lock_ok && p->period >= kMinProfiledPeriod) {
      if (p->profile == PhaseRecord::kNotYet && p->steps_in_lock >= kProfileStepInLock && previous_regular) {
        due = mark_if_set_up_loop(*p) ? Window::none : Window::profile;
      } else if (p->planned && check_wanted(*p) && cfg_.check_steps && tiering_ && !tiering_->dry_run() &&
                 p->planned_steps > cfg_.check_after && tiering_->trial_settled(p->id)) {
        due = Window::check;
      }
    }
    // A window opens only on a step start sequenced in time: one sequenced after its thread went on
    // would arm the protection part-way through the step (the first intervals' touches lost). The next
    // step start opens it.
    if (due != Window::none && behind_) {
      ++windows_deferred_;
      due = Window::none;
    }
    if (due != Window::none) open_window(due, *p, seq, now);
    if (window_ == Window::profile && window_phase_ == phase) e.flags |= SENTINEL_STEP_PROFILED;
    if (window_ == Window::check && window_phase_ == phase) e.flags |= SENTINEL_STEP_CHECKED;
  }
  steps_.add(e);
  update_sync();
}

// A loop that builds what comes later (a model's layers initialised in turn, a dataset loaded into a list)
// repeats like a step but keeps every byte it allocates; a training or evaluation step gives back nearly all
// of its own (activations, gradients), however its first steps grew. Such a phase has no working set to
// place: it is marked, said once, and never profiled (docs/step-detection.md, "Set-up loops"). Only found
// steps are judged: a lock comes after several repetitions, past the first iteration's optimizer state and
// gradients, while marked or fixed steps begin with that first iteration.
bool Stepper::mark_if_set_up_loop(PhaseRecord& p) const {
  if (detector_.mode() != StepMode::kAuto) return false;
  if (p.lock_live == StepDetector::kNoLive || live_ == StepDetector::kNoLive || !p.lock_allocated) return false;
  const int64_t kept = live_ - p.lock_live;
  if (kept <= 0 || static_cast<uint64_t>(kept) * 4 < p.lock_allocated * 3) return false;
  p.profile = PhaseRecord::kSetUp;
  LineBuf b;
  b.str("phase ").u64(p.id).str(": a set-up loop, not profiled (its ").u64(p.steps_in_lock - 1);
  b.str(" step(s) since the lock kept ").u64(static_cast<uint64_t>(kept) >> 10).str(" of the ");
  b.u64(p.lock_allocated >> 10).str(" KiB they allocated)");
  log_line(LogLevel::info, b);
  return true;
}

// The step's clock leaves an interval: in a plain step its duration is what the planner will be told
// the interval lasts (a profiled step's intervals are stretched by the faults).
void Stepper::end_clock_interval(uint64_t now) {
  if (tier_interval_ < 0 || window_ != Window::none || !locked_phase_) return;
  PhaseRecord* p = record(locked_phase_);
  if (!p || static_cast<uint32_t>(tier_interval_) >= kMaxIntervals || now < tier_interval_ticks_) return;
  p->plain_ticks[tier_interval_] += now - tier_interval_ticks_;
  ++p->plain_count[tier_interval_];
  if (tiering_)
    tiering_->on_interval_timed(locked_phase_, static_cast<uint32_t>(tier_interval_), now - tier_interval_ticks_);
}

void Stepper::prepare_counters() {
  if (cfg_.papi != PapiMode::off) counters_requested_.store(true, std::memory_order_release);
}

void Stepper::attach_counters_here() {
  // PAPI's start-up loads components and formats messages under glibc's locale lock: never under the
  // sequencer's lock, which a thread holding that lock may be waiting for inside malloc. One thread
  // answers a request (PAPI_library_init must not run twice at once).
  bool expected = true;
  if (!counters_requested_.compare_exchange_strong(expected, false, std::memory_order_acq_rel)) return;
  if (papi::status() == papi::Status::uninitialized) {
    papi::Options o;
    o.source = cfg_.papi == PapiMode::software ? papi::Source::software : papi::Source::hardware;
    papi::init(o);
  }
  if (papi::status() == papi::Status::ready && !papi::attached_this_thread()) papi::attach_this_thread();
}

void Stepper::open_window(Window kind, PhaseRecord& p, uint64_t seq, uint64_t now) {
  window_ = kind;
  window_phase_ = p.id;
  window_steps_ = 0;
  window_target_ = static_cast<uint32_t>(kind == Window::profile ? cfg_.profile_steps : cfg_.check_steps);
  if (kind == Window::check && tiering_) p.checked_schedule = tiering_->schedule_switches(p.id);
  if (window_target_ > kMaxWindowSteps) window_target_ = kMaxWindowSteps;
  window_starts_[0] = seq;
  current_interval_ = -1;
  interval_start_ticks_ = now;
  faults_at_open_ = profiler_->faults();
  fault_ticks_at_open_ = profiler_->fault_ns();
  unprotects_at_open_ = profiler_->syscall_unprotects();
  rearms_at_open_ = profiler_->rearms();
  window_passes_ = false;
  window_profiled_ticks_ = window_plain_ticks_ = 0;
  profiler_->discard_touches();
  profiler_->set_node_check(kind == Window::check && tiering_ ? tiering_->fast_node() : -1);
  if (kind == Window::profile) {
    if (!p.samples)
      p.samples = static_cast<IntervalSample*>(vm_map_lazy(sizeof(IntervalSample) * kMaxIntervals * kMaxWindowSteps));
    else  // a voided window's samples: this window starts from zero
      memset(static_cast<void*>(p.samples), 0, sizeof(IntervalSample) * kMaxIntervals * kMaxWindowSteps);
    if (papi::status() == papi::Status::ready && papi::attached_this_thread()) {
      counter_count_ = static_cast<uint32_t>(papi::num_events());
      papi::read_this_thread(last_counters_);
    }
    start_passes(p);
  }
}

// SENTINEL_PROFILE_PASSES: the pass period is the mean plain interval over the passes asked for. Without a
// plain interval measured (a phase profiled at its first chance) there is no period: one pass.
void Stepper::start_passes(const PhaseRecord& p) {
  if (cfg_.profile_passes <= 1 || !clock_ || !p.intervals) return;
  uint64_t sum = 0;
  uint32_t measured = 0;
  for (uint32_t i = 0; i < p.intervals; ++i)
    if (const uint64_t mean = p.plain_mean(i)) {
      sum += mean;
      ++measured;
    }
  if (!measured) return;
  uint64_t period = clock_->ticks_to_duration_ns_now(sum / measured) / cfg_.profile_passes;
  if (period < kMinPassPeriodNs) period = kMinPassPeriodNs;
  // The budget's base: the window's whole plain time, its steps x a plain step.
  window_passes_ = profiler_->start_passes(period, cfg_.profile_pass_cost, sum * window_target_);
  if (!window_passes_) log_line(LogLevel::warn, "profiling: no pass thread; one pass per interval");
}

void Stepper::sample_counters(uint64_t now) {
  if (window_ != Window::profile || current_interval_ < 0 || window_steps_ >= kMaxWindowSteps) return;
  PhaseRecord* p = record(window_phase_);
  if (!p || !p->samples) return;
  const uint32_t i = static_cast<uint32_t>(current_interval_);
  IntervalSample& s = p->samples[window_steps_ * kMaxIntervals + i];
  s.ticks += now - interval_start_ticks_;
  const uint64_t mean = window_passes_ && i < p->intervals ? p->plain_mean(i) : 0;
  if (mean) {  // the passes' budget counts the intervals that have a plain mean
    window_profiled_ticks_ += now - interval_start_ticks_;
    window_plain_ticks_ += mean;
  }
  interval_start_ticks_ = now;
  if (counter_count_ && papi::attached_this_thread()) {
    uint64_t cur[8] = {}, d[8] = {};
    if (papi::read_this_thread(cur)) {
      papi::delta(last_counters_, cur, counter_count_, d);
      for (uint32_t k = 0; k < counter_count_; ++k) {
        s.counters[k] += d[k];
        last_counters_[k] = cur[k];
      }
    }
  }
}

void Stepper::enter_interval(uint32_t interval, uint64_t now) {
  sample_counters(now);
  if (current_interval_ < 0) interval_start_ticks_ = now;
  current_interval_ = static_cast<int32_t>(interval);
  if (window_ == Window::profile && window_passes_) {
    const PhaseRecord* p = record(window_phase_);
    const uint64_t mean = p && interval < p->intervals ? p->plain_mean(interval) : 0;
    profiler_->set_pass_budget(Profiler::PassBudget{window_profiled_ticks_, window_plain_ticks_, mean});
  }
  profiler_->begin_interval(window_steps_, interval);
}

void Stepper::close_window(uint64_t now, Outcome outcome) {
  if (window_ == Window::none) return;
  sample_counters(now);
  Window kind = window_;
  window_ = Window::none;
  profiler_->finish();
  profiler_->set_node_check(-1);
  // The migrator's boundary verify asks the kernel where pages are (move_pages with no target), which
  // reports a page under the window's PROT_NONE as absent where follow_page refuses such entries (Linux
  // 6.2-6.4, Debian 12's 6.1): during the window it saw only the objects already touched in the interval.
  // It runs in as many steps after the window instead, with every page accessible.
  if (kind == Window::check && tiering_ && outcome != Outcome::voided && window_steps_) {
    verify_steps_left_ = window_steps_;
    tiering_->set_verify(true);
  }
  if (papi::attached_this_thread()) papi::detach_this_thread();
  PhaseRecord* p = record(window_phase_);
  if (p) {
    p->faults += profiler_->faults() - faults_at_open_;
    p->fault_ticks += profiler_->fault_ns() - fault_ticks_at_open_;
    p->syscall_unprotects += profiler_->syscall_unprotects() - unprotects_at_open_;
  }
  if (!p || outcome == Outcome::voided) {
    log_line(LogLevel::debug, "a window belonged to a lock found spurious; the phase is profiled again later");
    ++voided_windows_;
  } else if (kind == Window::profile) {
    finish_profile(*p, outcome);
  } else {
    finish_check(*p);
  }
  profiler_->discard_touches();
  update_sync();
}

void Stepper::finish_profile(PhaseRecord& p, Outcome outcome) {
  if (outcome == Outcome::partial && window_steps_ == 0) {
    LineBuf b;
    b.str("phase ").u64(p.id).str(": profiling stopped before a profiled step completed (the pattern changed)");
    log_line(LogLevel::info, b);
    p.profile = PhaseRecord::kFailed;
    return;
  }
  ClassifyInput in;
  in.log = log_;
  in.assignments = assignments_;
  in.assignment_capacity = assignment_capacity_;
  in.id_base = id_base_;
  in.group_base = group_base_;
  in.step_starts = window_starts_;
  in.step_bounds = window_steps_ + 1;
  in.first_profiled = 0;
  in.profiled = window_steps_;
  in.phase = p.id;
  in.period = p.period;
  in.interval_ends = p.interval_ends;
  in.intervals = p.intervals;
  in.touches = &profiler_->touch(0);
  in.touch_count = profiler_->touch_count();
  in.granularity = profiler_->granularity();
  in.chunk_bytes = cfg_.chunk_bytes
                       ? static_cast<uint32_t>(cfg_.chunk_bytes > in.granularity ? cfg_.chunk_bytes : in.granularity)
                       : 0;
  in.sample = profiler_->sample();
  in.passes = window_passes_;
  in.pass_shifts = window_passes_ ? profiler_->pass_shifts() : nullptr;
  in.pass_shift_count = window_passes_ ? profiler_->pass_shift_count() : 0;
  uint64_t t0 = now_ticks();
  bool ok = classify(in, &p.classification);
  classify_ticks_ += now_ticks() - t0;
  p.profiled_steps = window_steps_;
  p.profile = ok ? PhaseRecord::kDone : PhaseRecord::kFailed;
  if (!ok) {
    log_line(LogLevel::warn, "profiling done but classification could not map its scratch memory");
    return;
  }
  id_base_ += p.classification.identity_count;
  group_base_ += p.classification.group_count;
  // Mean duration of each interval, the planner's clock: from the plain steps before the window where
  // there were some (the profiled steps run slower, by their faults), else from the profiled ones.
  for (uint32_t i = 0; i < p.intervals && p.samples; ++i) {
    uint64_t sum = 0;
    for (uint32_t k = 0; k < window_steps_; ++k) sum += p.samples[k * kMaxIntervals + i].ticks;
    uint64_t ticks = p.plain_count[i] ? p.plain_mean(i) : window_steps_ ? sum / window_steps_ : 0;
    p.interval_ns[i] = clock_ ? clock_->ticks_to_duration_ns_now(ticks) : 0;
  }
  LineBuf b;
  b.str("phase ").u64(p.id).str(": profiled ").u64(window_steps_).str(" step(s) of ").u64(p.period);
  b.str(" allocations: ").u64(p.classification.identity_count).str(" identities, ");
  b.u64(p.classification.group_count).str(" groups, ").u64(p.faults).str(" faults");
  if (window_passes_) b.str(", ").u64(profiler_->rearms() - rearms_at_open_).str(" passes after interval starts");
  if (window_passes_ && profiler_->pass_shift_count())
    b.str(" (their period doubled ")
        .u64(profiler_->pass_shift_count())
        .str(" time(s) to keep them within ")
        .u64(cfg_.profile_pass_cost)
        .str("% of the plain time, SENTINEL_PROFILE_PASS_COST)");
  log_line(LogLevel::info, b);
  if (tiering_ && tiering_->enabled()) {
    PhaseProfileView v;
    v.phase = p.id;
    v.intervals = p.intervals;
    v.profiled_steps = p.profiled_steps;
    v.identities = p.classification.identities;
    v.identity_count = p.classification.identity_count;
    v.touches = p.classification.touches;
    v.touch_count = p.classification.touch_count;
    v.interval_ns = p.interval_ns;
    v.identity_objects = p.classification.identity_objects;
    v.sample = profiler_->sample();
    v.granularity = profiler_->granularity();
    uint64_t t1 = now_ticks();
    p.planned = tiering_->on_profiled(v);
    plan_ticks_ += now_ticks() - t1;
  }
}

void Stepper::finish_check(PhaseRecord& p) {
  PlacementTotals t;
  if (!summarize_placement(&profiler_->touch(0), profiler_->touch_count(), *log_, profiler_->granularity(),
                           profiler_->sample(), p.intervals, &t)) {
    log_line(LogLevel::warn, "the placement check could not map its scratch memory");
    p.check = PhaseRecord::kFailed;
    return;
  }
  uint64_t touched = 0, fast = 0;
  for (uint32_t i = 0; i < p.intervals; ++i) {
    p.check_touched[i] = t.touched[i];
    p.check_fast[i] = t.fast[i];
    touched += t.touched[i];
    fast += t.fast[i];
  }
  p.check = PhaseRecord::kDone;
  p.checked_steps = window_steps_;
  LineBuf b;
  b.str("phase ").u64(p.id).str(": placement check over ").u64(window_steps_).str(" step(s): fast-hit share ");
  uint64_t ppm = touched ? fast * 1000000 / touched : 0;
  b.u64(ppm / 10000).chr('.').u64(ppm / 1000 % 10).u64(ppm / 100 % 10).str("% of ").bytes(touched).str(" touched");
  log_line(LogLevel::info, b);
}

// A phase all of whose steps were retracted never was one: it is not written, and a later lock on the
// same pattern starts a fresh record. That holds even when it was profiled, and planned: an inner loop
// (an LSTM's time steps, LBFGS's closure) can lock, be confirmed and profiled before the step around it
// has repeated twice; once the step's own period absorbs it, its profile describes no step and its
// plan is dropped.
void Stepper::void_if_empty(uint16_t phase) {
  PhaseRecord* p = nullptr;
  for (uint32_t i = 0; i < phase_count_ && !p; ++i)
    if (phases_[i].id == phase && !phases_[i].voided) p = &phases_[i];
  if (!p || locked_phase_ == phase) return;
  if (window_ != Window::none && window_phase_ == phase) return;
  for (uint64_t i = 0; i < steps_.size(); ++i)
    if (steps_.at(i).phase == phase) return;
  void_record(*p);
}

void Stepper::void_record(PhaseRecord& p) {
  if (p.planned && tiering_) tiering_->retire(p.id);
  if (p.profile != PhaseRecord::kNotYet) ++absorbed_profiles_;
  p.planned = false;
  p.voided = true;
}

// The detector gives a new pattern the id of a pattern it forgot: a tentative lock retracted while it
// held, whose steps are all void. Whatever this runtime kept under that id (its window, profile, plan)
// belonged to the forgotten pattern, even though no unlock ever said the lock had ended.
void Stepper::forget_phase(uint16_t id, uint64_t now) {
  PhaseRecord* p = nullptr;
  for (uint32_t i = 0; i < phase_count_ && !p; ++i)
    if (phases_[i].id == id && !phases_[i].voided) p = &phases_[i];
  if (!p) return;
  if (window_ != Window::none && window_phase_ == id) close_window(now, Outcome::voided);
  if (locked_phase_ == id) leave_locked_phase();
  void_record(*p);
}

// The step is in no phase any more: tiering stops applying the phase's plan, the clock's interval ends.
void Stepper::leave_locked_phase() {
  if (tiering_) tiering_->on_phase_left();
  tier_interval_ = -1;
  locked_phase_ = 0;
  update_sync();
}

void Stepper::drain_events(uint64_t now) {
  StepEvent ev;
  while (detector_.next_event(&ev)) {
    if (ev.flags & kStepRetract) {
      steps_.drop(ev.phase, ev.seq, ev.end_seq);
      // A lock found spurious (an inner loop) took its window with it: profile again later.
      if (window_ != Window::none && window_phase_ == ev.phase && window_starts_[0] >= ev.seq &&
          window_starts_[0] <= ev.end_seq)
        close_window(now, Outcome::voided);
      // A tentative lock retracted as it is lost ends without an unlock: it is left here.
      if (locked_phase_ == ev.phase && (!detector_.locked() || detector_.phase() != ev.phase)) {
        if (window_ != Window::none && window_phase_ == ev.phase) close_window(now, Outcome::voided);
        leave_locked_phase();
      }
      void_if_empty(ev.phase);
      continue;
    }
    if (ev.flags & kStepDropLast) {
      if (steps_.drop_last(ev.phase, ev.seq)) {
        if (PhaseRecord* p = record(ev.phase); p && p->steps) {
          --p->steps;
          if (p->steps_in_lock) --p->steps_in_lock;
          if (p->planned && p->planned_steps) --p->planned_steps;
        }
      }
      continue;
    }
    if (ev.flags & kStepUnlock) {
      // The last step ends where the pattern ended, not where the next lock begins.
      steps_.close_last(ev.seq);
      if (window_ != Window::none && window_phase_ == ev.phase) close_window(now, Outcome::partial);
      leave_locked_phase();
      void_if_empty(ev.phase);  // a lock whose steps were all retracted while it held (a failed tentative one)
      continue;
    }
    if ((ev.flags & kStepLock) && (ev.flags & kStepNewPhase)) forget_phase(ev.phase, now);
    PhaseRecord* p = record(ev.phase);
    // A phase's interval cut is frozen once its window opens: its identities, touches and plan are
    // all on that cut.
    bool frozen = p && (p->profile != PhaseRecord::kNotYet || (window_ != Window::none && window_phase_ == p->id));
    // A marked or fixed phase has no lock event: its first step is its lock. Without it the phase was
    // never the one the steps are in, so no plain interval was timed (plans ran on the profiled steps'
    // stretched durations, the last interval 0), no window was synced, and the migrator never started.
    const bool given_first = (ev.flags & (kStepMark | kStepFixed)) && locked_phase_ != ev.phase;
    if ((ev.flags & kStepLock) || given_first) {
      if (p) {
        p->steps_in_lock = 0;
        if (!frozen && ev.period) set_period(*p, ev.period);
      }
      locked_phase_ = ev.phase;
      if (tiering_) tiering_->on_locked();
    } else if (p && ev.period && ev.period != p->period && !frozen) {
      // Marks: the period is what the last step measured. The interval geometry stays frozen during a
      // window, so that every touch of the window falls in the table that is written.
      set_period(*p, ev.period);
    }
    uint32_t flags = 0;
    if (ev.flags & kStepMark) flags |= SENTINEL_STEP_EXPLICIT;
    if (ev.flags & kStepNewPhase) flags |= SENTINEL_STEP_NEW_PHASE;
    if (ev.flags & kStepInferred) {
      sentinel_step_entry e{};
      e.start_seq = ev.seq;
      e.phase = ev.phase;
      e.flags = flags | SENTINEL_STEP_INFERRED;
      // A step found after its lock was lost (an epoch's short last batch) knows where it ended.
      if (ev.end_seq > ev.seq) {
        e.allocations = static_cast<uint32_t>(ev.end_seq - ev.seq + 1);
        e.flags |= StepLog::kClosed;
      }
      steps_.add(e);
      continue;
    }
    begin_step(ev.seq, now, flags, ev.phase);
  }
}

void Stepper::on_allocation(uint64_t seq, uint32_t site, uint64_t size, uint64_t now, uint32_t log_index,
                            uintptr_t address, uint16_t tier, bool pinned, bool behind, int64_t live_bytes) {
  if (finished_) return;
  behind_ = behind;
  live_ = live_bytes;
  FeedResult r = detector_.feed(seq, site, size, live_bytes);
  drain_events(now);
  bool placed = (r.flags & kFedLocked) && r.clock != kNoOrdinal && !(r.flags & kFedNoise);
  if (placed) {
    unlocked_allocations_ = 0;
    PhaseRecord* p = find_phase(r.phase);
    if (p) p->lock_allocated += size;
    uint32_t configured = static_cast<uint32_t>(cfg_.intervals ? cfg_.intervals : 16);
    if (p && p->period) {
      uint32_t interval = StepDetector::interval_of(r.clock, p->period, configured);
      if (window_ != Window::none && window_phase_ == r.phase && static_cast<int32_t>(interval) != current_interval_)
        enter_interval(interval, now);
      if (window_ == Window::profile && window_phase_ == r.phase && log_index < assignment_capacity_ &&
          r.occurrence != kNoOrdinal)
        assignments_[log_index] = Assignment{r.ordinal + 1, r.occurrence + 1};
      if (static_cast<int32_t>(interval) != tier_interval_) {
        end_clock_interval(now);
        tier_interval_ = static_cast<int32_t>(interval);
        tier_interval_ticks_ = now;
        if (tiering_) tiering_->on_interval(r.phase, p->steps, interval);
      }
    }
  } else if (!detector_.locked()) {
    ++unlocked_allocations_;
    maybe_diagnose(false);
  }
  if (tiering_)
    tiering_->on_allocation(placed ? r.phase : 0, site, size, placed ? r.occurrence : kNoOrdinal, log_index, address,
                            tier, pinned);
}

void Stepper::on_free(uint32_t log_index, uint16_t flags) {
  if (tiering_ && !finished_) tiering_->on_free(log_index, flags);
}

void Stepper::on_mark(uint64_t seq, uint64_t now) {
  if (finished_) return;
  behind_ = false;
  detector_.mark(seq);
  drain_events(now);
}

// One line when the detector cannot find (or keep) a step: what it saw.
void Stepper::maybe_diagnose(bool at_exit) {
  constexpr uint64_t kQuietAllocations = 20000;
  if (diagnosed_ || detector_.mode() != StepMode::kAuto) return;
  if (!at_exit && unlocked_allocations_ < kQuietAllocations) return;
  if (at_exit && (unlocked_allocations_ < 256 || detector_.locked())) return;
  diagnosed_ = true;
  char buf[320];
  detector_.describe(buf, sizeof(buf));
  // Where steps are what the user asked for (profile, run) it is a warning; in track mode steps are
  // extra information, and the dump's DETECTION record says the same.
  log_line(cfg_.mode == Mode::track ? LogLevel::info : LogLevel::warn, buf);
}

void Stepper::finish(uint64_t seq, uint64_t now) {
  if (finished_) return;
  detector_.finish();
  drain_events(now);
  if (window_ != Window::none) close_window(now, Outcome::partial);
  steps_.close_last(seq);
  maybe_diagnose(true);
  finished_ = true;
  update_sync();
}

}  // namespace sentinel
