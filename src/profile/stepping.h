// The runtime's view of training steps: where each step begins (from the automatic detector, explicit
// marks or a fixed period), the in-step allocation clock and its intervals, and the profiling window
// (SENTINEL_PROFILE_STEPS steps, starting with the second step after lock-on). Called under the runtime's
// step lock, once per tracked allocation in allocation order, and at each sentinel_step().
#pragma once
#include <cstdint>

#include "classify.h"
#include "config.h"
#include "profiler.h"
#include "registry.h"
#include "sentinel/format.h"
#include "step_detector.h"

namespace sentinel {

class StepLog {
 public:
  static constexpr uint64_t kCapacity = 1u << 20;
  bool init();
  void add(const sentinel_step_entry& e);
  uint64_t size() const { return next_ < kCapacity ? next_ : kCapacity; }
  sentinel_step_entry& at(uint64_t i) { return entries_[i]; }
  const sentinel_step_entry& at(uint64_t i) const { return entries_[i]; }
  sentinel_step_entry* last() { return next_ && next_ <= kCapacity ? &entries_[next_ - 1] : nullptr; }
  // Removes the steps starting in [first_seq, last_seq] (the detector voided them).
  void drop_from(uint64_t first_seq, uint64_t last_seq);

 private:
  sentinel_step_entry* entries_ = nullptr;
  uint64_t next_ = 0;
};

// Per-interval time and counters of the profiled steps.
struct IntervalSample {
  uint64_t ticks = 0;  // duration
  uint64_t counters[8] = {};
};

class Stepper {
 public:
  static constexpr uint32_t kMaxIntervals = 64;
  static constexpr uint32_t kMaxProfiledSteps = 64;

  bool init(const Config& cfg, Profiler* profiler, const ObjectLog* log);
  // One tracked allocation (seq consecutive, in order). now: ticks.
  void on_allocation(uint64_t seq, uint32_t site, uint64_t size, uint64_t now);
  // sentinel_step(): the next allocation starts a step.
  void on_mark(uint64_t seq, uint64_t now);
  // End of the process: closes the last step and any profiling in progress.
  void finish(uint64_t seq, uint64_t now);

  const StepLog& steps() const { return steps_; }
  bool profiled() const { return have_classification_; }
  const Classification& classification() const { return classification_; }
  uint32_t intervals() const { return intervals_; }
  const uint32_t* interval_ends() const { return interval_ends_; }
  uint32_t period() const { return period_; }
  uint32_t phase() const { return phase_; }
  uint32_t profiled_steps() const { return profiled_count_; }
  uint64_t first_profiled_step() const { return first_profiled_index_; }
  const IntervalSample& sample(uint32_t step, uint32_t interval) const { return samples_[step * kMaxIntervals + interval]; }
  // Counter names for the samples (empty when none are read).
  uint32_t counter_count() const { return counter_count_; }
  const char* counter_name(uint32_t i) const;
  bool counters_enabled() const { return counter_count_ != 0; }

 private:
  void begin_step(uint64_t seq, uint64_t now, uint32_t flags);
  void set_period(uint32_t period);
  void enter_interval(uint32_t interval, uint64_t now);
  void start_profiling(uint64_t now);
  enum class Outcome { complete, partial, voided };
  void stop_profiling(uint64_t seq, uint64_t now, Outcome outcome);
  void sample_counters(uint64_t now);
  void prepare_counters();
  void drain_events(uint64_t now);

  Config cfg_{};
  Profiler* profiler_ = nullptr;
  const ObjectLog* log_ = nullptr;
  StepDetector detector_;
  StepLog steps_;

  bool in_step_ = false;
  uint64_t ended_start_ = UINT64_MAX;  // start of the step an unlock ended (its length is final)
  uint64_t step_start_ = 0;
  uint64_t steps_in_phase_ = 0;
  uint32_t period_ = 0;
  uint32_t phase_ = 0;
  uint32_t intervals_ = 0;
  uint32_t interval_ends_[kMaxIntervals] = {};
  int32_t current_interval_ = -1;

  // Profiling window.
  bool profiling_ = false;
  bool classified_ = false;  // the window is over (once per process)
  bool have_classification_ = false;
  uint32_t profiled_count_ = 0;
  uint64_t first_profiled_index_ = 0;
  uint64_t window_starts_[kMaxProfiledSteps + 2] = {};
  IntervalSample* samples_ = nullptr;
  uint64_t interval_start_ticks_ = 0;
  uint64_t last_counters_[8] = {};
  uint32_t counter_count_ = 0;
  Classification classification_{};
};

}  // namespace sentinel
