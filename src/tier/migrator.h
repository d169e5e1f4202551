// The migrator (docs/design.md §2.6): a thread of Sentinel's own that executes a phase's plan as the in-step
// clock crosses interval boundaries. At the start of interval i of a planned step, every identity of
// the plan whose live object is not where the plan wants it during interval i is moved: demotions
// first (they make room), then promotions, nearest next use first (those for interval i itself last). Each object moves
// in one move_pages call (or mbind(MPOL_MF_MOVE), whichever measured faster at start); the training thread never waits
// for them.
//
// What can go wrong is counted, never fatal: pages the kernel will not move (EBUSY, EFAULT, ENOMEM),
// an object freed while its pages move (its generation changed), a fast node that is full, and
// promotions that finish after the interval that uses the object began (late). A newer boundary
// abandons what is left of the older one: the next pass recomputes what interval i+1 needs.
//
// All signals are blocked on the thread; it never exists in forked children.
#pragma once
#include <pthread.h>

#include <atomic>
#include <cstdint>

#include "base/config.h"
#include "base/numa_ops.h"
#include "sentinel/format.h"

namespace sentinel {

class Arena;
struct Slot;

// One plan entry's live object (an identity's, or one chunk of an identity planned in chunks: its range of
// the object), shared by the sequencer (births and deaths) and the migrator (moves).
// `state` packs a generation (bumped at each birth and death) with the tier the pages are on, so that
// a move can only land on the instance it started with: the migrator compare-exchanges the word it
// read before moving.
struct EntryState {
  static constexpr uint8_t kNone = 0xFF;  // tier of an identity with no live object
  std::atomic<uintptr_t> address{0};
  std::atomic<uint64_t> size{0};
  std::atomic<uint64_t> state{kNone};  // (generation << 8) | tier

  static uint8_t tier_of(uint64_t w) { return static_cast<uint8_t>(w & 0xFF); }
  // Sequencer: a new instance on `tier`.
  void born(uintptr_t a, uint64_t n, uint8_t tier) {
    address.store(a, std::memory_order_relaxed);
    size.store(n, std::memory_order_relaxed);
    uint64_t w = state.load(std::memory_order_relaxed);
    state.store((((w >> 8) + 1) << 8) | tier, std::memory_order_release);
  }
  // Sequencer: the instance died; returns the tier it was on (kNone if none was live).
  uint8_t died() {
    uint64_t w = state.load(std::memory_order_relaxed);
    while (!state.compare_exchange_weak(w, (((w >> 8) + 1) << 8) | kNone, std::memory_order_acq_rel)) {
    }
    address.store(0, std::memory_order_relaxed);
    return tier_of(w);
  }
};

// A plan as the migrator executes it (owned by Tiering; never freed while the process runs).
struct ExecPlan {
  uint32_t phase = 0;
  uint32_t intervals = 0;
  const sentinel_plan_entry* entries = nullptr;
  EntryState* states = nullptr;
  uint32_t count = 0;
  bool pinned_only = false;
  uint64_t budget = UINT64_MAX;  // promotions never take the fast tier past it (all-fast: no bound)
};

struct MigrationStats {  // per (phase slot, interval); summed over steps
  uint64_t bytes_to_fast = 0, bytes_to_slow = 0, ns = 0;
  uint32_t moves = 0, late = 0, failed_pages = 0, steps = 0;
  uint64_t fast_bytes_max = 0, fast_bytes_sum = 0;
};

// The method the probe keeps from its two round trips (ns; 0: the method failed). mbind unless
// move_pages was clearly faster: the probe's one 4 MiB range cannot see what favours mbind in a running
// step. move_pages builds page arrays per object and trailed a loop of short intervals where mbind kept
// up; it also reports pages protected by profiling as absent and splits huge pages (docs/tiering.md,
// "The move method"). Under TCG the two round trips tie within noise.
MoveMethod probe_choice(uint64_t move_pages_ns, uint64_t mbind_ns);

class Migrator {
 public:
  static constexpr uint32_t kMaxPlans = 16;
  static constexpr uint32_t kBatchLog = 16384;  // migration batches kept for the trace

  // Measures both move methods on a probe buffer (when `method` is automatic) and starts the thread.
  // False when the thread cannot be created (tiering then runs as a dry run).
  bool start(Arena* arena, int fast_node, int slow_node, MoveMethod method);
  bool running() const { return running_.load(std::memory_order_acquire); }
  // The method in use and the bandwidth the probe measured (bytes/s; 0 until measured).
  MoveMethod method() const { return method_; }
  uint64_t bandwidth() const { return bandwidth_.load(std::memory_order_acquire); }
  bool probe_done() const { return probed_.load(std::memory_order_acquire); }
  // SENTINEL_STEP_COSTS=auto: set before start(); after its probe the thread also measures the step
  // costs (tier/step_costs.h). measured_costs() is true once both were measured, with them in ns per
  // KiB; false while under way, when not asked, or when the measurement failed (said on stderr).
  void set_calibrate_costs(bool on) { calibrate_costs_ = on; }
  bool measured_costs(uint32_t* slow_ns_per_kib, uint32_t* move_ns_per_kib) const;

  // A plan the migrator may execute; its slot (0..kMaxPlans-1) is the caller's.
  void set_plan(uint32_t slot, const ExecPlan* plan);
  // Another schedule for the same phase (the step-time trial's candidates): the next boundary pass
  // moves every object to where this one wants it. Any thread; the slot keeps its statistics.
  void switch_plan(uint32_t slot, const ExecPlan* plan) {
    if (slot < kMaxPlans) {
      caught_up_[slot].store(false, std::memory_order_relaxed);
      plans_[slot].store(plan, std::memory_order_release);
    }
  }
  // True once a boundary pass has run to its end since the slot's schedule was set: its demotions took
  // everything the interval does not want off the fast node, including what was there before (objects
  // born while the phase was profiled, the other candidate's placement). On a starved host a pass is
  // often cut short by the next boundary, and that can take more than the plan's first two steps.
  bool caught_up(uint32_t slot) const;
  // The sequencer crossed into `interval` of step `step` of the plan in `slot`. Never blocks: the
  // newest boundary wins; the thread is woken with a futex.
  void post_boundary(uint32_t slot, uint64_t step, uint32_t interval);
  // The step left the planned phase (unlock, phase change): nothing more to do for it.
  void post_idle();
  // While set (the steps right after a placement check), each boundary pass ends by asking the kernel
  // where every live object of the plan is and counting those off their planned node (audit()).
  void set_verify(bool on) { verify_.store(on, std::memory_order_release); }
  struct VerifyStats {
    uint32_t verified = 0, misplaced = 0;
  };
  const VerifyStats& verify_stats(uint32_t slot, uint32_t interval) const { return verify_stats_[slot][interval]; }

  // In a forked child: the thread is not there.
  void forget();
  // At exit: stop moving (the dump is being written).
  void stop() { stop_.store(true, std::memory_order_release); }
  // The main thread is about to pthread_exit: end the thread and wait for it (see DrainThread).
  void stop_and_join();
  // The probe's round-trip times (ns; 0: failed or not run): [0] move_pages, [1] mbind.
  uint64_t probe_ns(int i) const { return probe_ns_[i]; }

  // Statistics, read at dump time.
  const MigrationStats& stats(uint32_t slot, uint32_t interval) const { return stats_[slot][interval]; }
  uint64_t batches() const;  // batches logged (<= kBatchLog kept)
  const sentinel_migration_batch& batch(uint64_t i) const { return log_[i % kBatchLog]; }
  uint64_t migrated_bytes() const { return migrated_.load(std::memory_order_relaxed); }
  // The time its move calls took, over every pass that moved bytes: with migrated_bytes(), the bandwidth
  // it achieves beside the running program (the step-time trial's re-plan reads both around a stretch).
  uint64_t move_ns() const { return move_ns_.load(std::memory_order_relaxed); }
  uint64_t late() const { return late_total_.load(std::memory_order_relaxed); }
  uint64_t failed_pages() const { return failed_total_.load(std::memory_order_relaxed); }
  uint64_t raced_frees() const { return raced_.load(std::memory_order_relaxed); }
  // The highest occupancy at any moment (births and moves included, also the transient when a plan
  // takes over objects that were on the fast node before it), and the highest left by a boundary's moves
  // (what the budget bounds).
  uint64_t fast_peak_bytes() const { return fast_peak_.load(std::memory_order_relaxed); }
  uint64_t steady_peak_bytes() const { return steady_peak_.load(std::memory_order_relaxed); }
  // Fast-tier occupancy of planned objects, kept by both sides (births on the fast tier, moves, deaths).
  void add_fast_bytes(int64_t delta);
  // Fast births reserved but not yet counted (Tiering's): promotions leave room for them.
  void set_pending(const std::atomic<int64_t>* pending) { pending_ = pending; }
  uint64_t budget_deferred() const { return budget_deferred_.load(std::memory_order_relaxed); }
  // Objects whose pages the kernel had put on the other node than Sentinel's record of them (the fast
  // node full when they were first touched: the default policy takes pages from the next node), found
  // by a plan's first step, the verify after the placement check or the steady steps' audit, and recorded
  // where they are (audit()).
  uint64_t relabeled() const { return relabeled_.load(std::memory_order_relaxed); }
  // Free slots kept with their pages found on the other node than recorded, by a plan's first boundary
  // (Arena::relabel_free).
  uint64_t relabeled_free() const { return relabeled_free_.load(std::memory_order_relaxed); }
  uint64_t fast_bytes() const;
  // Counts `bytes` in the fast tier's occupancy when they fit the budget with the births reserved.
  bool reserve_fast(uint64_t bytes, uint64_t budget);

 private:
  static void* main(void* self);
  void note_fast_peak(int64_t now);
  void loop();
  void probe(MoveMethod method);
  void calibrate_costs();
  void run_boundary(uint32_t slot, uint64_t step, uint32_t interval, uint64_t generation);
  struct PassResult {  // one direction of a boundary's moves
    uint64_t bytes = 0, failed_pages = 0;
    uint32_t objects = 0, late = 0;
  };
  bool run_pass(const ExecPlan& plan, uint64_t step, uint32_t interval, uint64_t generation, uint8_t to, PassResult* r);
  enum class EntryMove : uint8_t { kNone, kMoved, kSuperseded };
  EntryMove move_entry(const ExecPlan& plan, const sentinel_plan_entry& pe, EntryState& es, uint8_t to,
                       uint64_t generation, uint64_t* size, uint64_t* failed_pages);
  void account(MigrationStats& st, uint32_t phase, uint32_t interval, uint8_t to, uint64_t t0, uint64_t t1,
               const PassResult& r);
  // A newer boundary was posted (or the exit began): the pass for `generation` stops.
  bool superseded(uint64_t generation) const {
    return wake_.load(std::memory_order_acquire) != generation || stop_.load(std::memory_order_acquire);
  }
  bool move(uintptr_t addr, uint64_t bytes, uint8_t to_tier, uint64_t* failed);
  void settle_absent_pages(uintptr_t addr, uint64_t bytes, int node, numa::MoveResult* r);
  // The object at addr died while its pages moved to `to`: the slot's record follows them when the slot
  // is free, and a successor born meanwhile (placed by the old record) gets its pages back.
  void settle_raced_slot(uintptr_t addr, uint64_t bytes, uint8_t to);
  // Where most of an object's present pages are, from up to 64 of them (first, last and evenly between):
  // kTierFast, kTierSlow, or EntryState::kNone when none is present or the query failed. *split (where
  // given): at least a quarter of them on each node, as after a move done in part.
  uint8_t resident_tier(uintptr_t addr, uint64_t size, bool* split = nullptr);
  // Records `resident` as the entry's tier when it differs from the one in `word`, the entry's state read
  // before its pages were asked about (an object born or dead since is left alone), so that the next pass
  // moves the object where the plan wants it. False when nothing changed.
  bool adopt_resident(EntryState& es, uint64_t word, uintptr_t addr, uint64_t size, uint8_t resident);
  // Every live object's record made true: before a plan's first step's passes (the objects it takes over
  // were placed before it, some by the kernel's fallback), and after the passes of one boundary of each
  // steady step, in turn (whatever put an object's pages elsewhere than its record, the next pass then
  // moves it where the plan wants it; tier_relabeled counts them). An object split between the nodes is
  // recorded on the tier the next pass's interval (`next`) does not want, so that the pass moves all of
  // it. With `count`: the verify after a placement check, which also counts the objects for `interval`
  // (VerifyStats).
  void audit(const ExecPlan& plan, uint32_t next, VerifyStats* count = nullptr, uint32_t interval = 0);
  static uint8_t resident_tier_of(void* self, uintptr_t addr, size_t len) {
    return static_cast<Migrator*>(self)->resident_tier(addr, len);
  }
  Slot* locate_slot(uintptr_t addr) const;
  // The slot's record of its pages' tier follows a move or a finding of the range [addr, addr+size) only
  // when that range is the whole object: one chunk of an object planned in chunks leaves it as it is.
  void label_slot(uintptr_t addr, uint64_t size, uint8_t tier);
  void log_batch(uint64_t start_ns, uint64_t end_ns, uint64_t bytes, uint32_t phase, uint32_t interval,
                 uint32_t objects, uint32_t flags, uint32_t failed);
  // Where the sequencer is now, as (step << 8 | interval) of the slot's plan (for lateness).
  uint64_t position() const { return position_.load(std::memory_order_acquire); }

  Arena* arena_ = nullptr;
  int node_[2] = {-1, -1};  // by tier
  MoveMethod method_ = MoveMethod::move_pages;
  MoveMethod probe_method_ = MoveMethod::automatic;
  uint64_t probe_ns_[2] = {};
  pthread_t thread_{};
  bool joinable_ = false;
  std::atomic<bool> running_{false}, stop_{false}, probed_{false};
  std::atomic<uint64_t> bandwidth_{0};
  bool calibrate_costs_ = false;
  std::atomic<bool> costs_measured_{false};  // release: the two costs below are set
  uint32_t slow_ns_per_kib_ = 0, move_ns_per_kib_ = 0;
  std::atomic<const ExecPlan*> plans_[kMaxPlans] = {};
  uint64_t first_step_[kMaxPlans] = {};          // the step of a plan's first boundary
  bool free_relabeled_[kMaxPlans] = {};          // its first boundary ran Arena::relabel_free
  std::atomic<bool> caught_up_[kMaxPlans] = {};  // a whole pass since the schedule was set
  // The boundary to serve: generation (futex word, low 32 bits), slot, step, interval.
  std::atomic<uint32_t> wake_{0};
  std::atomic<uint64_t> boundary_{0};  // (slot << 56) | (interval << 48) | step (48 bits)
  std::atomic<uint64_t> position_{0};
  MigrationStats stats_[kMaxPlans][64] = {};
  VerifyStats verify_stats_[kMaxPlans][64] = {};
  std::atomic<bool> verify_{false};
  sentinel_migration_batch* log_ = nullptr;
  std::atomic<uint64_t> log_count_{0};
  std::atomic<uint64_t> move_ns_{0};
  std::atomic<uint64_t> migrated_{0}, late_total_{0}, failed_total_{0}, raced_{0}, fast_peak_{0}, steady_peak_{0};
  std::atomic<int64_t> fast_bytes_{0};
  const std::atomic<int64_t>* pending_ = nullptr;
  std::atomic<uint64_t> budget_deferred_{0};
  std::atomic<uint64_t> relabeled_{0}, relabeled_free_{0};
  // Scratch for move_pages: page, status and node arrays.
  static constexpr size_t kBatchPages = 1024;
  uintptr_t* pages_ = nullptr;
  int* status_ = nullptr;
  int* nodes_ = nullptr;
};

}  // namespace sentinel
