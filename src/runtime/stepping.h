// The runtime's view of training steps: where each step begins (from the automatic detector, explicit
// marks or a fixed period), the phases the detector locked on (each with its own interval cut, steps,
// profile, plan and placement check), and the windows in which page protection is armed:
//
// - a profiling window of SENTINEL_PROFILE_STEPS steps per phase (profile and run mode), opened at the
//   second regular step of a confirmed lock; its touches are classified into the phase's identities,
//   and in run mode the phase is planned (Tiering);
// - a placement check of SENTINEL_CHECK_STEPS steps per planned phase (run mode), after
//   SENTINEL_CHECK_AFTER steps under the plan: each touched page is asked where it is.
//
// One window at a time. Called by the sequencer, under its lock, once per sequenced event.
#pragma once
#include <atomic>
#include <cstdint>

#include "base/clock.h"
#include "base/config.h"
#include "profile/classify.h"
#include "profile/profiler.h"
#include "profile/step_detector.h"
#include "sentinel/format.h"
#include "track/registry.h"
#include "track/sequencer.h"

namespace sentinel {

class Tiering;

// A step seen by the runtime: its STEPS entry.
class StepLog {
 public:
  static constexpr uint64_t kCapacity = 1u << 20;
  bool init();
  // Keeps the log sorted by start (inferred steps arrive late) and gives the step before the new one
  // its length, unless a lost lock already ended it.
  void add(const sentinel_step_entry& e);
  uint64_t size() const { return next_ < kCapacity ? next_ : kCapacity; }
  const sentinel_step_entry& at(uint64_t i) const { return entries_[i]; }
  // The latest step ends at `end_seq` (its lock was lost there, or the process ends).
  void close_last(uint64_t end_seq);
  // Removes the steps of `phase` starting in [first_seq, last_seq] (the detector voided them).
  void drop(uint16_t phase, uint64_t first_seq, uint64_t last_seq);
  // Removes the latest step of `phase`, begun at `start_seq` (it was no step), even when steps of a later
  // phase follow it: the step before it ends there. False when the phase's latest step is another.
  bool drop_last(uint16_t phase, uint64_t start_seq);
  // Internal flag, never written to the dump: the step's length is final.
  static constexpr uint32_t kClosed = 1u << 31;

 private:
  void set_length(uint64_t i);
  sentinel_step_entry* entries_ = nullptr;
  uint64_t next_ = 0;
};

// Per-interval time and counters of a profiled step.
struct IntervalSample {
  uint64_t ticks = 0;  // duration
  uint64_t counters[8] = {};
};

inline constexpr uint32_t kMaxIntervals = 64;
inline constexpr uint32_t kMaxWindowSteps = 64;

// Everything the runtime knows of one phase (a step pattern the detector locked on).
struct PhaseRecord {
  // kSetUp: its steps kept what they allocated (a set-up loop): never profiled or planned.
  enum : uint8_t { kNotYet = 0, kDone = 1, kFailed = 2, kSetUp = 3 };
  uint16_t id = 0;  // the detector's phase id (1-based); the dump's phase number
  uint32_t period = 0;
  uint32_t intervals = 0;
  uint32_t interval_ends[kMaxIntervals] = {};  // interval i covers in-step positions [end(i-1), end(i))
  uint64_t steps = 0;                          // steps begun while locked on it
  uint64_t steps_in_lock = 0;                  // ... since its latest lock
  bool voided = false;                         // its steps were all retracted (an inner loop): not written
  // What its steps kept (the set-up rule): tracked bytes live at its latest lock's first step, and the bytes
  // its placed allocations took since.
  int64_t lock_live = StepDetector::kNoLive;
  uint64_t lock_allocated = 0;
  // The profile
  uint8_t profile = kNotYet;
  uint32_t profiled_steps = 0;
  uint64_t faults = 0, fault_ticks = 0, syscall_unprotects = 0;  // during its window
  Classification classification{};
  IntervalSample* samples = nullptr;         // [kMaxWindowSteps][kMaxIntervals]
  uint64_t interval_ns[kMaxIntervals] = {};  // mean duration per interval, the planner's clock (ns)
  // Interval durations in plain steps (no window open: no profiling faults stretching them), ticks.
  uint64_t plain_ticks[kMaxIntervals] = {};
  uint32_t plain_count[kMaxIntervals] = {};
  // Interval i's mean plain duration (ticks); 0 where none was measured (or i is past the table).
  uint64_t plain_mean(uint32_t i) const {
    return i < kMaxIntervals && plain_count[i] ? plain_ticks[i] / plain_count[i] : 0;
  }
  // Tiering
  bool planned = false;
  uint64_t planned_steps = 0;
  uint8_t check = kNotYet;
  uint32_t checked_steps = 0;
  uint32_t checked_schedule = 0;  // Tiering::schedule_switches() as the check opened
  uint64_t check_touched[kMaxIntervals] = {}, check_fast[kMaxIntervals] = {};
};

class Stepper final : public SequenceListener {
 public:
  static constexpr uint32_t kMaxPhases = 64;
  // A phase of one allocation a step has nothing to schedule (one object, one interval).
  static constexpr uint32_t kMinProfiledPeriod = 2;
  // A phase's profiling window opens on this step since its lock. The lock step carries Sentinel's own
  // start-up (PAPI's probe of the counters, the tiering's set-up and probes), so the plain reference of
  // each interval (the pass period, the passes' budget, the planner's interval durations) is timed in the
  // steps after it.
  static constexpr uint32_t kProfileStepInLock = 3;
  // Passes closer than this cost more in protection calls than they tell (SENTINEL_PROFILE_PASSES).
  static constexpr uint64_t kMinPassPeriodNs = 1'000'000;

  bool init(const Config& cfg, Profiler* profiler, const ObjectLog* log, Tiering* tiering, const TickClock* clock);
  // One tracked allocation, in sequence order. now: ticks. tier: where its slot's pages are.
  void on_allocation(uint64_t seq, uint32_t site, uint64_t size, uint64_t now, uint32_t log_index = kNoLogIndex,
                     uintptr_t address = 0, uint16_t tier = 0, bool pinned = false, bool behind = false,
                     int64_t live_bytes = StepDetector::kNoLive) override;
  void on_free(uint32_t log_index, uint16_t flags) override;  // flags: the free event's (Tiering::kFreeCredited)
  // sentinel_step(): the next allocation starts a step.
  void on_mark(uint64_t seq, uint64_t now) override;
  // End of the process: closes the last step and any window in progress; says once when no step was
  // ever found.
  void finish(uint64_t seq, uint64_t now);

  // The clock must be exact in time (allocating threads sequence their own events): while a window is
  // open, and from a lock until its phase's profile is taken, so that protection changes at the
  // interval start itself.
  bool wants_sync() const override { return sync_wanted_; }
  // Counters were asked for (the step before a profiling window): the runtime calls
  // attach_counters_here() on the allocating thread, outside the sequencer's lock.
  bool counters_requested() const { return counters_requested_.load(std::memory_order_acquire); }
  void attach_counters_here();

  const StepLog& steps() const { return steps_; }
  const StepDetector& detector() const { return detector_; }
  uint32_t phase_count() const { return phase_count_; }
  const PhaseRecord& phase(uint32_t i) const { return phases_[i]; }  // in order of first lock
  const PhaseRecord* find_phase(uint16_t id) const;
  PhaseRecord* find_phase(uint16_t id);
  uint32_t counter_count() const { return counter_count_; }
  const char* counter_name(uint32_t i) const;
  uint64_t voided_windows() const { return voided_windows_; }
  // Windows not opened at a step start sequenced late (the program was already past it): opened at a
  // later step instead.
  uint64_t windows_deferred() const { return windows_deferred_; }
  // Profiles taken of phases that were later absorbed into a longer step (void_if_empty): not written.
  uint64_t absorbed_profiles() const { return absorbed_profiles_; }
  // Ticks spent classifying profiles and planning them (Tiering::on_profiled), over all phases.
  uint64_t classify_ticks() const { return classify_ticks_; }
  uint64_t plan_ticks() const { return plan_ticks_; }

 private:
  enum class Window : uint8_t { none, profile, check };
  PhaseRecord* record(uint16_t id);
  void void_if_empty(uint16_t phase);
  void void_record(PhaseRecord& p);
  void forget_phase(uint16_t id, uint64_t now);
  void leave_locked_phase();
  void set_period(PhaseRecord& p, uint32_t period);
  void begin_step(uint64_t seq, uint64_t now, uint32_t flags, uint16_t phase);
  bool mark_if_set_up_loop(PhaseRecord& p) const;
  void enter_interval(uint32_t interval, uint64_t now);
  void open_window(Window kind, PhaseRecord& p, uint64_t seq, uint64_t now);
  void start_passes(const PhaseRecord& p);  // SENTINEL_PROFILE_PASSES, in a profiling window
  enum class Outcome { complete, partial, voided };
  void close_window(uint64_t now, Outcome outcome);
  void finish_profile(PhaseRecord& p, Outcome outcome);
  void finish_check(PhaseRecord& p);
  // The phase's placement check is due once the tiering side settles: none yet, or one of an older schedule.
  bool check_wanted(const PhaseRecord& p) const;
  void sample_counters(uint64_t now);
  void prepare_counters();
  void drain_events(uint64_t now);
  void update_sync();
  void maybe_diagnose(bool at_exit);

  Config cfg_{};
  Profiler* profiler_ = nullptr;
  const ObjectLog* log_ = nullptr;
  Tiering* tiering_ = nullptr;
  const TickClock* clock_ = nullptr;
  StepDetector detector_;
  StepLog steps_;
  PhaseRecord phases_[kMaxPhases];
  uint32_t phase_count_ = 0;
  uint16_t locked_phase_ = 0;         // the phase locked now (0: none)
  int32_t tier_interval_ = -1;        // the interval the step is in (last announced to tiering)
  uint64_t tier_interval_ticks_ = 0;  // ... since when
  void end_clock_interval(uint64_t now);
  uint32_t id_base_ = 0, group_base_ = 0;
  Assignment* assignments_ = nullptr;  // per log index, written during profiling windows
  uint64_t assignment_capacity_ = 0;
  bool sync_wanted_ = false;
  bool behind_ = false;  // the allocation being fed is sequenced late (on_allocation): no window opens on it
  int64_t live_ = StepDetector::kNoLive;  // tracked bytes live before the allocation being fed
  uint64_t windows_deferred_ = 0;
  bool finished_ = false;

  // The window.
  Window window_ = Window::none;
  uint16_t window_phase_ = 0;
  uint32_t window_steps_ = 0;  // completed steps in the window
  uint32_t window_target_ = 0;
  uint32_t verify_steps_left_ = 0;  // steps of the boundary verify after a placement check
  uint64_t window_starts_[kMaxWindowSteps + 2] = {};
  int32_t current_interval_ = -1;
  uint64_t interval_start_ticks_ = 0;
  uint64_t faults_at_open_ = 0, fault_ticks_at_open_ = 0, unprotects_at_open_ = 0;
  uint64_t rearms_at_open_ = 0;
  bool window_passes_ = false;  // the open profiling window runs in passes (SENTINEL_PROFILE_PASSES)
  // For the passes' budget (SENTINEL_PROFILE_PASS_COST): the window's completed intervals that have a
  // plain mean, as profiled and as that mean.
  uint64_t window_profiled_ticks_ = 0, window_plain_ticks_ = 0;
  uint64_t last_counters_[8] = {};
  uint32_t counter_count_ = 0;
  std::atomic<bool> counters_requested_{false};
  uint64_t voided_windows_ = 0;
  uint64_t absorbed_profiles_ = 0;
  uint64_t classify_ticks_ = 0, plan_ticks_ = 0;

  // Saying once that no step is known.
  uint64_t unlocked_allocations_ = 0;
  bool diagnosed_ = false;
};

}  // namespace sentinel
