// Tiering in run mode: turns each profiled phase into a plan (the planner, planner.h) and carries it
// out — at allocation (the tier an object is born on), in the sequencer (which instance is which
// identity, where the step is) and on the migrator's thread (moves at interval boundaries).
//
// Who calls what:
// - the tracked path: birth_tier() (lock-free table lookups; no plan: the kernel's default node);
// - the sequencer, under its lock: on_profiled(), on_allocation(), on_free(), on_interval(),
//   on_step_start(), on_phase_left();
// - the runtime: init() at start, after_fork_child(), before_main_exit() at exit and before the main
//   thread pthread_exits.
//
// Objects the plan does not know — a new identity, an allocation outside a step, a phase without a
// plan yet — follow the fallback: the slow node (they can never push the fast tier past its budget),
// and are counted. Before the first plan nothing is placed (the kernel's first touch, the fast node).
// With one NUMA node, or no slow node, every phase is still planned and the plan is written to the
// dump and announced on stderr as a dry run; nothing is placed or moved.
#pragma once
#include <atomic>
#include <cstdint>

#include "base/clock.h"
#include "base/config.h"
#include "base/emu_clock.h"
#include "sentinel/format.h"
#include "tier/catch_up.h"
#include "tier/drift_follow.h"
#include "tier/migrator.h"
#include "tier/planner.h"
#include "tier/topology.h"
#include "track/registry.h"

namespace sentinel {

class Arena;

// What the profiler hands over for one phase (arrays stay valid for the life of the process).
struct PhaseProfileView {
  uint32_t phase = 0;
  uint32_t intervals = 0;
  uint32_t profiled_steps = 0;
  const sentinel_identity* identities = nullptr;
  uint32_t identity_count = 0;
  const sentinel_touch* touches = nullptr;
  uint64_t touch_count = 0;
  const uint64_t* interval_ns = nullptr;       // mean duration per interval
  const uint32_t* identity_objects = nullptr;  // per identity: the log index of its latest instance
  PageSample sample;                           // the profile's sample and granularity (PlanInput's)
  uint32_t granularity = 0;
};

class Tiering {
 public:
  static constexpr uint32_t kMaxPlans = Migrator::kMaxPlans;
  // The step-time trial's candidates are timed from the first step begun caught up, or after this many.
  static constexpr uint32_t kCatchUpSteps = CatchUp::kSteps;

  // Resolves the nodes and the budget; run mode only (otherwise inert). Reports a bad node override
  // or a missing slow node in one line. `log` gives objects' addresses.
  // The NUMA calls the kernel refused at start (numa::DeniedCall bits): then every plan is a dry run.
  uint32_t denied_calls() const { return denied_calls_; }
  // ranks_sharing: the ranks of a job on this machine (base/launch.h), among which a node budget is split.
  void init(const Config& cfg, const Topology& topo, uint32_t ranks_sharing, Arena* arena, ObjectLog* log,
            const TickClock* clock);
  bool enabled() const { return enabled_; }
  bool dry_run() const { return dry_run_; }
  int fast_node() const { return fast_node_; }
  int slow_node() const { return slow_node_; }

  // A phase was locked on: start the migrator now, so its bandwidth probe is done when the plan is made.
  void on_locked();
  // A phase's profile is ready: plan it, install the plan. False when planning failed (said once).
  bool on_profiled(const PhaseProfileView& p);
  // A planned phase turned out not to be one (the detector absorbed all its steps into a longer step:
  // an inner loop). Its plan stops applying and is not written; the phase must not be the one the step
  // is in. Sequencer side.
  void retire(uint16_t phase);

  // Sequencer side. `tier` is where the slot's pages are, with kReserved when birth_tier() counted the
  // object against the budget.
  static constexpr uint16_t kReserved = 1u << 8;
  // On a free event: free_credit() counted the object's bytes as leaving the fast tier already.
  static constexpr uint16_t kFreeCredited = 1u << 9;
  void on_allocation(uint16_t phase, uint32_t site, uint64_t size, uint32_t k, uint32_t log_index, uintptr_t address,
                     uint16_t tier, bool pinned);
  void on_free(uint32_t log_index, uint16_t flags);
  // `step`: the starting step's index among the phase's steps; `now`: its start (ticks), which times the step-time
  // trial's steps; `behind`: it is sequenced after its thread went on (the emulated clock, read as it is sequenced, is
  // not at the step's start); `steady`: the phase's placement check is over (or off) and no profiling or check window
  // is open, so the step beginning may be timed for the fitted slow cost.
  void on_step_start(uint16_t phase, uint64_t step, uint64_t now, bool behind, bool steady);
  void on_interval(uint16_t phase, uint64_t step, uint32_t interval);
  // A plain step's interval ended after `ticks`: under the moving schedule's timed trial steps, what the
  // re-plan takes for the interval's duration (the steps before the plan ran slower or faster).
  void on_interval_timed(uint16_t phase, uint32_t interval, uint64_t ticks);
  void on_phase_left();
  // The placement check runs: the migrator also verifies where objects are at each boundary.
  void set_verify(bool on) {
    if (enabled_ && !dry_run_) migrator_.set_verify(on);
  }
  int32_t slot_for_phase(uint16_t phase) const { return slot_of_phase(phase); }
  // False while the phase's step-time trial is under way, or the schedule in effect is still taking
  // over (the migrator has not caught up: up to CatchUp::kSteps steps, more while it works off a backlog,
  // tier/catch_up.h): the placement check waits for it, so that it checks the schedule that stays, in its
  // steady state.
  bool trial_settled(uint16_t phase) const;
  // The phase's trial runs on the emulated clock, which reads its counts when a step start is sequenced:
  // sequencing must be synchronous then, on the allocating thread, so that its laps begin at step starts.
  bool trial_wants_sync(uint16_t phase) const;
  // How often the phase's schedule in effect changed (the trial's candidates, the bandwidth watch): a
  // placement check made before the latest change is out of date.
  uint32_t schedule_switches(uint16_t phase) const {
    int32_t slot = slot_of_phase(phase);
    return slot >= 0 ? slots_[slot].switches : 0;
  }

  // The tracked path: the tier a new object of (site, size) is born on. A birth on the fast tier is
  // counted against the budget at once (*reserved), so that the fast node never holds more than the
  // plan's budget even while the migrator's demotions for the interval are still under way: when there
  // is no room, the object is born slow (and the migrator promotes it when there is). cancel() when the
  // arena could not serve it after all.
  uint8_t birth_tier(uint32_t site, uint64_t size, bool* reserved);
  void cancel(uint64_t size) { pending_fast_.fetch_sub(static_cast<int64_t>(size), std::memory_order_relaxed); }
  // The tracked path, as an object is freed: when it is counted on the fast tier, its bytes leave the
  // fast tier's count at once (returns kFreeCredited for the free event, 0 otherwise), so that a birth
  // right after the free sees the room, however late the sequencer gets to the event.
  uint16_t free_credit(uint32_t log_index, uintptr_t address);
  // A node to place pinned memory on before it is allocated (-1: leave it to the kernel).
  int pinned_node(uint32_t site, uint64_t size);

  void after_fork_child();
  void before_main_exit() { migrator_.stop_and_join(); }

  // ---- for the dump
  uint32_t plan_count() const { return plan_count_.load(std::memory_order_acquire); }
  bool retired(uint32_t slot) const { return slots_[slot].retired; }
  // The schedule in effect (the one the trial kept, or the candidate it was timing).
  const Plan& plan(uint32_t slot) const { return slots_[slot].in_effect().plan; }
  sentinel_plan_trial plan_trial(uint32_t slot) const;
  uint32_t plan_phase(uint32_t slot) const { return slots_[slot].phase; }
  const uint64_t* plan_interval_ns(uint32_t slot) const {
    const PlanSlot& s = slots_[slot];
    const uint32_t active = s.active.load(std::memory_order_acquire);
    if (s.has_replan_interval_ns && active == kReplanned) return s.replan_interval_ns;
    if (active == kWatched || active == kFollowed) {
      const uint32_t w = active == kFollowed;
      return s.watch.has_interval_ns[w] ? s.watch.interval_ns[w] : nullptr;
    }
    return s.has_interval_ns ? s.interval_ns : nullptr;
  }
  const Migrator& migrator() const { return migrator_; }
  uint64_t budget_guarded() const { return budget_guarded_.load(std::memory_order_relaxed); }
  sentinel_tiering record() const;

 private:
  struct TokenEntry {
    uint32_t site;
    uint32_t m;  // identities of (site, size) in the step; 0: empty slot
    uint64_t size;
    uint64_t fast_mask;            // bit k: the k-th occurrence is born on the fast node (k >= 64: bit 63)
    std::atomic<uint32_t> next_k;  // for mixed masks: occurrences seen in this step
    uint32_t mixed;
  };
  struct IdentityKey {
    uint32_t site;
    uint32_t k;
    uint64_t size;
    uint32_t entry_plus_one;
    uint32_t pad;
  };
  // The step-time trial (docs/tiering.md): the sentinel policy's moving schedule against the same phase
  // planned without moves, each timed over cfg.trial_steps steps once the migrator has caught up with
  // it; then, when the migrator's bandwidth over the moving schedule's steps is 1.5x off the planned
  // one, the phase re-planned with it, timed the same way. The fastest stays. Sequencer side only.
  // Candidates, indices into Trial::sum/timed and PlanSlot::candidates: SENTINEL_TRIAL_KEPT_*.
  // kWatched is not the trial's: the bandwidth watch's re-plan (Watch). kFollowed is its other buffer:
  // a re-plan for a drift goes into whichever of the two is not in effect (the dump says
  // SENTINEL_TRIAL_KEPT_WATCHED for both).
  static constexpr uint32_t kMoving = SENTINEL_TRIAL_KEPT_MOVING, kFixed = SENTINEL_TRIAL_KEPT_FIXED,
                            kReplanned = SENTINEL_TRIAL_KEPT_REPLANNED, kWatched = SENTINEL_TRIAL_KEPT_WATCHED,
                            kFollowed = 4, kCandidates = 5;
  // Too little moved to measure a bandwidth from (a few pages are all call overhead).
  static constexpr uint64_t kMinMeasuredBytes = uint64_t{1} << 20;
  // A measured bandwidth calls for a re-plan when it is 1.5x or more off the planned one:
  // bandwidth_within() (tier/drift_follow.h).
  // Wall ticks of each interval over some steps, for a re-plan's interval durations (measured_intervals).
  struct IntervalTimes {
    uint64_t ticks[64] = {};
    uint32_t count[64] = {};
    void add(uint32_t interval, uint64_t t) { ticks[interval] += t, ++count[interval]; }
  };
  struct Trial {
    uint32_t state = SENTINEL_TRIAL_NONE;
    uint32_t timing = kFixed;        // the candidate being timed: kFixed, then kMoving, then maybe kReplanned
    uint32_t complete = 0;           // complete steps under the current candidate
    bool start_caught_up = false;    // the migrator had caught up with it when the running step started
    uint64_t step_start = 0;         // ticks of the running step's start; 0: not timeable
    uint64_t sum[kCandidates] = {};  // ticks of timed steps
    uint32_t timed[kCandidates] = {};
    uint64_t steps[kCandidates][kMaxSpreadSteps] = {};  // the first timed steps' ticks: how far apart they lie
    uint64_t moved_at_start = 0, move_ns_at_start = 0;  // the migrator's totals as the moving one began
    uint64_t achieved_bytes_per_s = 0;
    uint32_t replan = SENTINEL_REPLAN_NONE;
    bool emulated = false;  // timed by the emulated clock: step_start and sum are its ns, not ticks
    uint32_t move_fit = SENTINEL_MOVE_FIT_NONE;  // what a moved KiB cost the training thread (fit_moves)
    uint32_t fit_move_ns_per_kib = 0;
    IntervalTimes moving_intervals;  // over the moving schedule's timed steps (on_interval_timed)
  };
  // The bandwidth watch (docs/tiering.md, "The bandwidth watch"): outside the trial, the migrator's
  // bandwidth under the schedule in effect, measured over back-to-back windows of kWatchSteps steps.
  // Where no trial measured the bandwidth (SENTINEL_TRIAL_STEPS=0), the first window 1.5x off the
  // bandwidth the schedule was planned with re-plans the phase with the measured one into kWatched,
  // which takes over untimed. Later windows re-plan only for a sustained drift (DriftFollow), into
  // kWatched or kFollowed, whichever is not in effect. Sequencer side only.
  static constexpr uint32_t kWatchSteps = 2;
  struct Watch {
    uint32_t state = SENTINEL_WATCH_NONE;
    uint32_t windows = 0;      // windows measured
    uint32_t steps = 0;        // step starts in the open window (the first opens it); 0: none open
    uint64_t steps_seen = 0;   // the phase's steps begun since its plan was installed
    uint64_t replan_step = 0;  // the phase's step (its index) the latest re-plan took effect at (0: none)
    uint64_t moved_at_start = 0, move_ns_at_start = 0;  // the migrator's totals as the window opened
    uint64_t bytes_per_s = 0;                           // the latest window's
    bool opened_settled = false;                        // the migrator had taken up the schedule then
    IntervalTimes intervals;                            // over the open window's steps
    // The re-plans' clocks, [0] kWatched's, [1] kFollowed's: the intervals as their window measured them.
    uint64_t interval_ns[2][64] = {};
    bool has_interval_ns[2] = {};
    DriftFollow drift;  // after the first decision: re-plans for a sustained drift
  };
  // The slow cost fitted to the schedule in effect (fit_slow_cost, docs/tiering.md "The fitted slow
  // cost"): kFitSteps steady steps (the trial done, the migrator caught up, the placement check over, no
  // window open) timed in wall time, the plan's clock; their median is what the schedule costs. Sequencer
  // side only.
  static constexpr uint32_t kFitSteps = 5;
  struct Fit {
    uint32_t status = SENTINEL_FIT_NONE;
    uint32_t slow_ns_per_kib = 0;
    uint64_t step_start = 0;  // ticks of the running step's start; 0: not timed
    uint64_t ticks[kFitSteps] = {};
    uint32_t timed = 0;
    uint64_t step_ns = 0;  // the median, once timed
  };
  // One schedule of a phase: the plan, the migrator's view of it, its birth tiers.
  struct Candidate {
    PlanScratch scratch;
    Plan plan;
    ExecPlan exec;
    TokenEntry* tokens = nullptr;
  };
  struct PlanSlot {
    uint32_t phase = 0;
    PlanInput input;  // what the moving schedule was planned from (its interval_ns: this slot's copy)
    // The phase's schedules: the plan (moving), and the trial's others, the phase planned with
    // SENTINEL_TIER_NO_MOVES and re-planned with the migrator's measured bandwidth.
    Candidate candidates[kCandidates];
    Candidate& moving() { return candidates[kMoving]; }
    const Candidate& moving() const { return candidates[kMoving]; }
    const Candidate& in_effect() const { return candidates[active.load(std::memory_order_acquire)]; }
    // Per plan entry (an identity's, or each chunk's of an identity planned in chunks): its live object.
    EntryState* states = nullptr;
    // The phase's identities (the profiler's, kept for the life of the process); the entries of identity e
    // are [first_entry[e], first_entry[e + 1]). What the sequencer's tables and log_entry_ hold is e.
    const sentinel_identity* identities = nullptr;
    uint32_t* first_entry = nullptr;
    IdentityKey* keys = nullptr;  // (site, size, k) -> entry
    uint32_t key_mask = 0;
    uint32_t token_mask = 0;        // of each candidate's (site, size) -> birth tiers
    uint64_t interval_ns[64] = {};  // the planner's clock, as given
    bool has_interval_ns = false;
    // The re-plan's clock: the intervals as the moving schedule's steps measured them.
    uint64_t replan_interval_ns[64] = {};
    bool has_replan_interval_ns = false;
    std::atomic<TokenEntry*> live_tokens{nullptr};  // birth tiers of the schedule in effect
    std::atomic<uint32_t> active{kMoving};          // the candidate in effect
    Trial trial;
    Watch watch;
    Fit fit;
    bool retired = false;   // retire(): kept (its objects still hold entries), never looked up or written
    CatchUp catch_up;       // the migrator taking up the schedule in effect
    uint32_t switches = 0;  // use_candidate() calls
  };

  int32_t slot_of_phase(uint16_t phase) const;
  // A new instance of identity e at `address`, on `tier`: each of its entries takes its range of it.
  // Returns the bytes it adds to the fast tier.
  uint64_t born(PlanSlot& s, uint32_t e, uintptr_t address, uint8_t tier);
  // The instance of identity e at `address` died: each entry still holding its range of it dies. Returns
  // the bytes of those that were on the fast tier; tiers[j] (optional, one per entry) gets each one's tier.
  uint64_t died(PlanSlot& s, uint32_t e, uintptr_t address, uint8_t* tiers = nullptr);
  uint32_t find_entry(const PlanSlot& s, uint32_t site, uint64_t size, uint32_t k) const;
  TokenEntry* find_token(const PlanSlot& s, uint32_t site, uint64_t size) const;
  bool build_tables(PlanSlot& s, const PhaseProfileView& p);
  TokenEntry* build_tokens(const PlanSlot& s, const PhaseProfileView& p, const Plan& plan);
  bool prepare_trial(PlanSlot& s, const PhaseProfileView& p, const PlanInput& in);
  // Plans `in` into `c` (its tokens, its exec from the slot's); false with *error on failure.
  bool make_candidate(PlanSlot& s, const PhaseProfileView& p, const PlanInput& in, Candidate& c, const char** error);
  void trial_step(PlanSlot& s, uint64_t now, bool behind);
  // The trial's clock at a step start: `now` (ticks), or with SENTINEL_TRIAL_CLOCK=emulated the emulated
  // ns so far. False when the emulated clock failed: said once, and the trial starts again in wall time.
  bool trial_clock(PlanSlot& s, uint64_t* now);
  void open_trial_clock();
  // The moving candidate's timed steps are done: measure the migrator's bandwidth over them and re-plan
  // when it is 1.5x off. True when there is a re-planned candidate to time.
  bool replan_with_measured_bandwidth(PlanSlot& s);
  // Plans the phase again into candidate `into` with the migrator's measured bandwidth (and the
  // intervals as measured, where given); `from` is the schedule it replaces; says what it found in one line.
  static constexpr uint32_t kReplanMade = 0, kReplanSame = 1, kReplanFailed = 2;
  uint32_t replan(PlanSlot& s, const Plan& from, uint32_t into, uint64_t measured_bytes_per_s,
                  const uint64_t* measured_interval_ns);
  // ns[i]: the mean of the measured ticks of interval i; false unless every interval was measured (and
  // the plan had durations to replace).
  bool measured_intervals(const PlanSlot& s, const IntervalTimes& times, uint64_t* ns) const;
  // The schedule can measure a bandwidth in a window: the sentinel policy's, planned to move at least
  // kMinMeasuredBytes in kWatchSteps steps.
  static bool watchable(const Plan& p) {
    return p.header.policy == SENTINEL_POLICY_SENTINEL &&
           p.header.moved_bytes_per_step * kWatchSteps >= kMinMeasuredBytes;
  }
  // A step of the phase starts: the bandwidth watch's window moves on, and may re-plan (Watch).
  void watch_step(PlanSlot& s, uint64_t step);
  void watch_decide(PlanSlot& s, uint64_t step, const Plan& in_effect);
  void follow_drift(PlanSlot& s, uint64_t step, const Plan& in_effect);
  uint32_t watch_replan(PlanSlot& s, uint64_t step, const Plan& in_effect, uint64_t bytes_per_s);
  // The watch has not yet measured the first window it must decide on (the placement check waits).
  bool watch_pending(const PlanSlot& s) const;
  void use_candidate(uint32_t slot, uint32_t c);
  // A step of the phase starts: time the one that ended for the fit, and fit once kFitSteps are timed.
  void fit_step(PlanSlot& s, uint64_t now, bool steady);
  bool migrator_settled(const PlanSlot& s, uint32_t slot) const {
    return s.catch_up.settled(migrator_.caught_up(slot));
  }
  // The trial has timed both schedules: fit what a moved KiB cost the training thread (fit_move_cost).
  void fit_moves(PlanSlot& s);
  void finish_fit(PlanSlot& s);
  // SENTINEL_STEP_COSTS=auto's costs so far: the probe's, the slow one replaced by a fitted one. False
  // until the probe has run.
  bool auto_costs(uint32_t* slow_ns_per_kib, uint32_t* move_ns_per_kib) const;
  // SENTINEL_TIER_MOVES_OFF_THREAD where auto priced a plan's moves below the migrator's own time per KiB
  // (migrator_ns_per_kib; 0: the probe's) by training_move_ns_per_kib(), else 0 (also where the move cost
  // is an earlier trial's fit).
  uint32_t cost_flags(const StepCosts& planned, uint32_t migrator_ns_per_kib) const;
  uint64_t mean_step_ns(const Trial& t, uint32_t c) const;  // 0: none timed
  void adopt_live_objects(uint32_t slot, const PhaseProfileView& p);
  void start_interleave();
  bool said_dry_run_ = false;  // init() said why nothing will be placed
  bool interleave() const { return cfg_.policy == SENTINEL_POLICY_INTERLEAVE; }
  // The budget a plan gets: SENTINEL_FAST_BYTES, resolved. `auto` is 90% of the fast node's free
  // memory, which on a machine with one node makes every plan "100% fast" and tells a user trying
  // Sentinel nothing: a dry run with `auto` plans at kDryRunShareppm of the peak instead.
  static constexpr uint32_t kDryRunShareppm = 200000;
  bool dry_run_default_share() const { return dry_run_ && cfg_.fast_auto; }
  FastBudget budget() const;
  // The ranks a node budget is split among (1: not split).
  uint32_t budget_split() const { return cfg_.budget_per_rank || cfg_.fast_share_ppm ? 1 : ranks_sharing_; }
  uint32_t budget_flags() const;  // SENTINEL_TIER_* of the plans and the TIERING record
  StepCosts step_costs() const;   // SENTINEL_STEP_COSTS: what the next plan is given

  bool enabled_ = false;
  bool dry_run_ = true;
  int fast_node_ = -1, slow_node_ = -1;
  uint64_t fast_free_at_start_ = 0;  // the fast node's free memory, or the memory cgroup's room if less
  uint32_t ranks_sharing_ = 1;
  uint32_t denied_calls_ = 0;
  Config cfg_{};
  Arena* arena_ = nullptr;
  ObjectLog* log_ = nullptr;
  const TickClock* clock_ = nullptr;
  EmuClock emu_clock_;       // SENTINEL_TRIAL_CLOCK=emulated, while it works (sequencer side)
  uint64_t emu_now_ns_ = 1;  // the emulated clock: the sum of its laps (never 0, a step start's "none")
  Migrator migrator_;
  bool migrator_started_ = false;
  PlanSlot slots_[kMaxPlans];
  std::atomic<uint32_t> plan_count_{0};
  std::atomic<int32_t> active_slot_{-1};  // the plan of the phase the step is in (-1: none)
  std::atomic<bool> placing_{false};      // a plan was installed with two nodes: births are placed
  std::atomic<int64_t> pending_fast_{0};  // fast births reserved by the tracked path, not yet sequenced
  // The fast tier's bytes as the budget sees them: counted (less credited frees), plus reserved births.
  uint64_t fast_in_use() const;
  std::atomic<uint64_t> budget_guarded_{0};  // births sent to the slow node for want of room
  // log index -> (slot << 28) | (entry + 1); 0: not planned. Written by the sequencer, read by
  // free_credit() on the tracked path: accessed through entry_of() / set_entry().
  uint32_t* log_entry_ = nullptr;
  uint32_t entry_of(uint32_t li) const {
    return std::atomic_ref<uint32_t>(log_entry_[li]).load(std::memory_order_acquire);
  }
  void set_entry(uint32_t li, uint32_t v) {
    std::atomic_ref<uint32_t>(log_entry_[li]).store(v, std::memory_order_release);
  }
  uint64_t log_capacity_ = 0;
  bool reported_failure_ = false;
  bool in_child_ = false;
  // Counters (sequencer side unless noted).
  uint64_t fallback_objects_ = 0, fallback_bytes_ = 0, pinned_objects_ = 0, pinned_bytes_ = 0;
  uint64_t born_fast_ = 0, born_slow_ = 0;
  uint64_t fallback_fast_ = 0;           // fallback objects that are on the fast node (counted in the occupancy)
  uint32_t fitted_move_ns_per_kib_ = 0;  // the first trial's move fit: what later auto plans are given (0: none)
  uint32_t fitted_slow_ns_per_kib_ = 0;  // the first phase's fit: what later auto plans are given (0: none)
};

}  // namespace sentinel
