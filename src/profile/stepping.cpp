#include "stepping.h"

#include "log.h"
#include "papi_counters.h"
#include "vm_region.h"

namespace sentinel {

bool StepLog::init() {
  entries_ = static_cast<sentinel_step_entry*>(vm_map_lazy(kCapacity * sizeof(sentinel_step_entry)));
  return entries_ != nullptr;
}

void StepLog::add(const sentinel_step_entry& e) {
  if (next_ >= kCapacity) return;
  // Inferred steps arrive late (when the period becomes known): keep the log sorted by start.
  uint64_t i = next_++;
  while (i > 0 && entries_[i - 1].start_seq > e.start_seq) {
    entries_[i] = entries_[i - 1];
    --i;
  }
  entries_[i] = e;
}

void StepLog::drop_from(uint64_t first_seq, uint64_t last_seq) {
  uint64_t w = 0;
  for (uint64_t r = 0; r < size(); ++r) {
    const sentinel_step_entry& e = entries_[r];
    if (e.start_seq >= first_seq && e.start_seq <= last_seq) continue;
    entries_[w++] = e;
  }
  next_ = w;
}

bool Stepper::init(const Config& cfg, Profiler* profiler, const ObjectLog* log) {
  cfg_ = cfg;
  profiler_ = profiler;
  log_ = log;
  StepConfig sc;
  sc.mode = cfg.step_source == StepSource::marks   ? StepMode::kMarks
            : cfg.step_source == StepSource::fixed ? StepMode::kFixed
                                                   : StepMode::kAuto;
  sc.fixed_period = static_cast<uint32_t>(cfg.step_period);
  sc.intervals = static_cast<uint32_t>(cfg.intervals ? cfg.intervals : 16);
  if (!detector_.init(sc) || !steps_.init()) return false;
  if (cfg.mode == Mode::profile) {
    samples_ = static_cast<IntervalSample*>(
        vm_map_lazy(sizeof(IntervalSample) * kMaxIntervals * kMaxProfiledSteps));
    if (!samples_) return false;
  }
  return true;
}

const char* Stepper::counter_name(uint32_t i) const { return i < counter_count_ ? papi::event_name(i) : ""; }

void Stepper::set_period(uint32_t period) {
  period_ = period;
  intervals_ = StepDetector::intervals_for(period, static_cast<uint32_t>(cfg_.intervals ? cfg_.intervals : 16));
  for (uint32_t k = 0; k < intervals_; ++k)
    interval_ends_[k] = StepDetector::interval_begin(k + 1, period, static_cast<uint32_t>(cfg_.intervals ? cfg_.intervals : 16));
}

void Stepper::begin_step(uint64_t seq, uint64_t now, uint32_t flags) {
  bool previous_regular = false;  // the step that just ended had the expected length
  if (sentinel_step_entry* last = steps_.last(); last && last->start_seq < seq && last->start_seq != ended_start_) {
    last->allocations = static_cast<uint32_t>(seq - last->start_seq);
    previous_regular = last->allocations == period_;
  }
  sentinel_step_entry e{};
  e.start_seq = seq;
  e.start_ns = now;  // ticks; converted when written
  e.phase = phase_;
  e.flags = flags;
  if (profiling_) {
    // A step of the window ended: the next one is profiled too, or the window closes.
    window_starts_[profiled_count_ + 1] = seq;
    ++profiled_count_;
    if (profiled_count_ >= cfg_.profile_steps || profiled_count_ >= kMaxProfiledSteps) {
      stop_profiling(seq, now, Outcome::complete);
    } else {
      current_interval_ = -1;
    }
  }
  ++steps_in_phase_;
  // PAPI's start-up (10-20 ms where it probes for absent hardware counters) belongs in the plain step
  // before the window, not in the first profiled one.
  if (cfg_.mode == Mode::profile && !classified_ && steps_in_phase_ == 1) prepare_counters();
  // The first step after lock-on runs plain; the next step once the lock is confirmed (not a tentative
  // lock on an inner loop) opens the profiling window.
  if (cfg_.mode == Mode::profile && !classified_ && !profiling_ && steps_in_phase_ >= 2 && period_ &&
      previous_regular &&
      (detector_.confirmed() || detector_.mode() != StepMode::kAuto)) {
    first_profiled_index_ = steps_.size();
    window_starts_[0] = seq;
    start_profiling(now);
  }
  if (profiling_) e.flags |= SENTINEL_STEP_PROFILED;
  step_start_ = seq;
  in_step_ = true;
  steps_.add(e);
}

void Stepper::prepare_counters() {
  if (cfg_.papi != PapiMode::off && papi::status() == papi::Status::uninitialized) {
    papi::Options o;
    o.source = cfg_.papi == PapiMode::software ? papi::Source::software : papi::Source::hardware;
    papi::init(o);
  }
  if (papi::status() == papi::Status::ready && !papi::attached_this_thread()) papi::attach_this_thread();
}

void Stepper::start_profiling(uint64_t now) {
  profiling_ = true;
  profiled_count_ = 0;
  current_interval_ = -1;
  interval_start_ticks_ = now;
  prepare_counters();
  if (papi::status() == papi::Status::ready && papi::attached_this_thread()) {
    counter_count_ = static_cast<uint32_t>(papi::num_events());
    papi::read_this_thread(last_counters_);
  }
}

void Stepper::sample_counters(uint64_t now) {
  if (current_interval_ < 0 || profiled_count_ >= kMaxProfiledSteps) return;
  IntervalSample& s = samples_[profiled_count_ * kMaxIntervals + static_cast<uint32_t>(current_interval_)];
  s.ticks += now - interval_start_ticks_;
  interval_start_ticks_ = now;
  if (counter_count_) {
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
  profiler_->begin_interval(profiled_count_, interval);
}

void Stepper::stop_profiling(uint64_t seq, uint64_t now, Outcome outcome) {
  (void)seq;
  sample_counters(now);
  profiling_ = false;
  profiler_->finish();
  if (papi::attached_this_thread()) papi::detach_this_thread();
  if (outcome == Outcome::voided) {
    log_line(LogLevel::debug, "the profiled steps belonged to a lock found spurious; profiling again later");
    profiler_->discard_touches();
    return;
  }
  if (outcome == Outcome::partial && profiled_count_ == 0) {
    log_line(LogLevel::info, "profiling stopped before a profiled step completed (the pattern changed)");
    classified_ = true;
    return;
  }
  ClassifyInput in;
  in.log = log_;
  in.step_starts = window_starts_;
  in.step_bounds = profiled_count_ + 1;
  in.first_profiled = 0;
  in.profiled = profiled_count_;
  in.phase = phase_;
  in.period = period_;
  in.interval_ends = interval_ends_;
  in.intervals = intervals_;
  in.touches = &profiler_->touch(0);
  in.touch_count = profiler_->touch_count();
  in.granularity = profiler_->granularity();
  classified_ = classify(in, &classification_);
  LineBuf b;
  if (classified_) {
    b.str("profiled ").u64(profiled_count_).str(" step(s) of ").u64(period_).str(" allocations: ");
    b.u64(classification_.identity_count).str(" identities, ").u64(classification_.group_count).str(" groups, ");
    b.u64(profiler_->faults()).str(" faults");
    log_line(LogLevel::info, b);
  } else {
    log_line(LogLevel::warn, "profiling done but classification could not map its scratch memory");
  }
  classified_ = true;  // never profile again, even when classification failed
  have_classification_ = classification_.identities != nullptr;
}

void Stepper::drain_events(uint64_t now) {
  StepEvent ev;
  while (detector_.next_event(&ev)) {
    if (ev.flags & (kStepRetract | kStepUnlock)) {
      if (ev.flags & kStepRetract) {
        steps_.drop_from(ev.seq, ev.end_seq);
        // A lock found spurious (an inner loop) took the profiling window with it: profile again later.
        bool window_voided = (profiling_ || have_classification_) && window_starts_[0] >= ev.seq &&
                             window_starts_[0] <= ev.end_seq;
        if (window_voided) {
          if (profiling_) stop_profiling(ev.seq, now, Outcome::voided);
          classified_ = false;
          have_classification_ = false;
        }
      }
      if ((ev.flags & kStepUnlock) && profiling_) stop_profiling(ev.seq, now, Outcome::partial);
      if (ev.flags & kStepUnlock) {  // the last step ends where the pattern ended, not at the next lock
        if (sentinel_step_entry* last = steps_.last(); last && in_step_ && last->start_seq < ev.seq) {
          last->allocations = static_cast<uint32_t>(ev.seq - last->start_seq);
          ended_start_ = last->start_seq;
        }
        in_step_ = false;
      }
      continue;
    }
    if (ev.flags & kStepLock) {
      phase_ = ev.phase ? ev.phase - 1u : 0u;
      steps_in_phase_ = 0;
      set_period(ev.period);
    } else if (ev.period && ev.period != period_ && !profiling_) {
      // Marks: the period is what the last step measured. The interval geometry stays frozen during a
      // profiling window, so that every touch of the window falls in the table that is written.
      set_period(ev.period);
    }
    uint32_t flags = 0;
    if (ev.flags & kStepMark) flags |= SENTINEL_STEP_EXPLICIT;
    if (ev.flags & kStepNewPhase) flags |= SENTINEL_STEP_NEW_PHASE;
    if (ev.flags & kStepInferred) {
      sentinel_step_entry e{};
      e.start_seq = ev.seq;
      e.phase = phase_;
      e.flags = flags | SENTINEL_STEP_INFERRED;
      steps_.add(e);
      continue;
    }
    begin_step(ev.seq, now, flags);
  }
}

void Stepper::on_allocation(uint64_t seq, uint32_t site, uint64_t size, uint64_t now) {
  FeedResult r = detector_.feed(seq, site, size);
  drain_events(now);
  // Where the step is now: the in-step clock (the ordinal is the identity's place in the template, which
  // goes back and forth when threads interleave).
  if (profiling_ && (r.flags & kFedLocked) && r.clock != kNoOrdinal && intervals_) {
    uint32_t interval = StepDetector::interval_of(r.clock, period_, static_cast<uint32_t>(cfg_.intervals ? cfg_.intervals : 16));
    if (static_cast<int32_t>(interval) != current_interval_) enter_interval(interval, now);
  }
}

void Stepper::on_mark(uint64_t seq, uint64_t now) {
  detector_.mark(seq);
  drain_events(now);
}

void Stepper::finish(uint64_t seq, uint64_t now) {
  drain_events(now);
  if (profiling_) stop_profiling(seq, now, Outcome::partial);
  if (sentinel_step_entry* last = steps_.last(); last && last->start_seq < seq && last->start_seq != ended_start_)
    last->allocations = static_cast<uint32_t>(seq - last->start_seq);
}

}  // namespace sentinel
