// Page-protection profiling (docs/design.md §2.4). At each interval start of a profiled step every live tracked
// object loses access to its pages; the first touch of each granule faults, the SIGSEGV handler records
// (object, interval, granule) and gives that granule back. Sweeps: a fault on the granule right after the
// run the previous fault of that object gave back (in this interval) gives back twice as much, up to the
// sweep limit, and records every granule of it; so an object read or written in order costs a few faults
// plus one per sweep limit, while scattered touches keep the granularity (docs/profiling.md, "Sweeps"). System calls
// cannot fault, so the I/O hooks pin the objects they touch (which keeps them unprotected) for the duration of the
// call.
//
// Concurrency: begin_interval/finish run under the runtime's step lock; the fault handler and the I/O
// pins run anywhere, lock-free. Protect-all versus pin: protect, then re-check the pin count and undo
// if a pin arrived in between, so a pinned object is never left protected.
#pragma once
#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "profile/page_sample.h"
#include "track/arena.h"

namespace sentinel {

struct TouchRecord {
  uint32_t log_index;
  uint16_t interval;
  uint8_t step;      // profiled (or checked) step index
  uint8_t flags;     // kTouch*: the placement check's answer
  uint32_t granule;  // granule index from the start of the object
};
enum : uint8_t {
  kTouchChecked = 1u << 0,  // the placement check asked where the page was
  kTouchOnFast = 1u << 1,   // ...and it was on the fast node
  // Bits 2-7: the pass of the interval the touch was recorded in (rearm()); 0 without passes.
  kTouchPassShift = 2,
  kTouchMaxPass = 63,
};
inline uint32_t touch_pass(const TouchRecord& r) {
  return r.flags >> kTouchPassShift;
}

class Profiler {
 public:
  // granularity: power of two, 4 KiB .. 2 MiB. sweep: the largest run one fault gives back (a power of two;
  // at most the granularity: no sweeps). max_touches: capacity of the touch log. sample: which objects
  // are profiled in a sample (page_sample.h; its block at least rate x granularity).
  bool init(Arena* arena, uint32_t granularity, uint64_t sweep, uint64_t max_touches, const PageSample& sample = {});
  uint32_t granularity() const { return granularity_; }
  const PageSample& sample() const { return sample_; }
  // The sample's round: one per profiled or checked step (page_sample.h's window_offset).
  uint32_t sample_round() const { return round_.load(std::memory_order_acquire); }
  uint64_t sweep_limit() const { return granularity_ << max_shift_; }

  // Step lock held. Protects every live object (and, until finish(), every object born from now on).
  void begin_interval(uint32_t step, uint32_t interval);
  // The placement check: while set (fast_node >= 0), each recorded touch also says whether its page was
  // on the fast node at touch time (a page not yet present counts where its slot's tier puts it).
  void set_node_check(int fast_node) { check_fast_node_.store(fast_node, std::memory_order_release); }
  // Access intensity (docs/profiling.md, "Passes"): while a profiling window records, a thread of
  // Sentinel's takes access away again every period_ns within the interval, so a granule used
  // throughout an interval is recorded once per pass, one used in a burst once. Step lock held; false
  // (nothing started) when the thread cannot be created. finish() stops it.
  // cost_percent and window_plain_ticks: the budget (set_pass_budget).
  bool start_passes(uint64_t period_ns, uint64_t cost_percent, uint64_t window_plain_ticks);
  // Starts the current interval's next pass (the pass thread): re-protects the live objects that faulted
  // in the pass that ends.
  void rearm();
  uint64_t rearms() const { return rearms_.load(std::memory_order_relaxed); }
  // Faults in a pass after the first of their interval.
  uint64_t pass_faults() const { return pass_faults_.load(std::memory_order_relaxed); }
  // What the passes may cost (SENTINEL_PROFILE_PASS_COST, docs/profiling.md "What passes cost"): before
  // each pass the pass thread estimates the passes' cost so far, the time the window's intervals took
  // beyond their plain means in the share of the window's faults taken in passes, and past cost_percent
  // of the plain means it doubles the period from that pass on. The step-lock holder gives, at each
  // interval start, the window's completed intervals as profiled and as their plain means, and the plain
  // mean of the interval that starts (0: unknown). The budget is a share of the window's whole plain time
  // (start_passes) from the window's start, so that passes that cost early (the first intervals' faults)
  // are not throttled for the rest of the window while it stays within.
  struct PassBudget {
    uint64_t profiled_ticks = 0, plain_ticks = 0, interval_plain_ticks = 0;
  };
  void set_pass_budget(const PassBudget& b);
  // Where the period doubled: from (step, interval, pass) on, visits stand for 2^shift first periods.
  struct PassShift {
    uint32_t step, interval, pass, shift;
  };
  static constexpr uint32_t kMaxPassShifts = 8;  // 256 first periods: past any interval, the passes stopped
  const PassShift* pass_shifts() const { return pass_shifts_; }
  uint32_t pass_shift_count() const { return pass_shift_count_; }  // in the current (or last) window
  uint64_t pass_slowdowns() const { return pass_slowdowns_.load(std::memory_order_relaxed); }  // over the run
  uint64_t rearm_ticks() const { return rearm_ticks_.load(std::memory_order_relaxed); }        // spent in rearm()
  // Step lock held. Stops the passes, gives all access back and stops recording.
  void finish();
  bool recording() const { return recording_.load(std::memory_order_acquire); }
  // True from the first protection until finish(): the I/O hooks check this first.
  bool armed() const { return armed_.load(std::memory_order_acquire); }

  // A new object while recording: protect it (after its creator's own initialisation).
  void protect_new(unsigned cls, uint32_t index, uintptr_t user, size_t size);
  // A slot is being freed: give its pages back first, so that reuse never inherits protection.
  void unprotect_slot(unsigned cls, uint32_t index);

  // The SIGSEGV path, for access faults (SEGV_ACCERR). True when the fault was one of ours (the access
  // can be retried): in a slot the profiler protected, or, once profiling has begun, in any committed
  // slot (a fault that raced with the pages being given back).
  bool handle_fault(void* addr);

  // The I/O path: pins (and unprotects) every object overlapping [p, p+n). Returns how many slots were
  // pinned into out[] (at most cap); unpin() afterwards.
  struct Pinned {
    uint16_t cls;
    uint32_t index;
  };
  uint32_t pin_range(const void* p, size_t n, Pinned* out, uint32_t cap);
  void unpin(const Pinned* pins, uint32_t count);

  // In a forked child: slot locks held by threads of the parent would never be released.
  void after_fork_child();  // also forgets the pass thread, which the child does not have
  // Forgets the touches recorded so far (the window they belong to was voided, or has been classified), and
  // gives the log's pages back: a large model's window records millions (12 bytes each).
  void discard_touches();
  uint64_t touch_count() const {
    uint64_t n = next_.load(std::memory_order_acquire);
    return n < capacity_ ? n : capacity_;
  }
  const TouchRecord& touch(uint64_t i) const { return touches_[i]; }
  uint64_t faults() const { return faults_.load(std::memory_order_relaxed); }
  uint64_t fault_ns() const { return fault_ns_.load(std::memory_order_relaxed); }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint64_t syscall_unprotects() const { return syscall_unprotects_.load(std::memory_order_relaxed); }
  uint64_t protect_calls() const { return protect_calls_.load(std::memory_order_relaxed); }
  uint64_t mprotect_failures() const { return mprotect_failures_.load(std::memory_order_relaxed); }
  // Faults that gave back more than one granule (a sweep continued).
  uint64_t sweep_faults() const { return sweep_faults_.load(std::memory_order_relaxed); }
  // Ticks spent taking access away at interval starts (begin_interval) and giving it back (finish).
  uint64_t protect_ticks() const { return protect_ticks_; }
  uint64_t release_ticks() const { return release_ticks_; }

 private:
  // moved: the windows moved since the slot was last protected (a new round): give the old ones back.
  void protect_slot(unsigned cls, uint32_t index, uintptr_t user, size_t size, bool moved = false);
  // A sampled slot: only each block's window loses access.
  bool protect_windows(unsigned cls, uint32_t index, uintptr_t lo, uintptr_t hi, bool moved);
  // For a granule of a sampled slot: its position counted over the windows only, and how many granules of
  // its window follow it (itself included); 0 when the granule is outside every window.
  uint32_t window_position(unsigned cls, uint32_t index, uint32_t granule, uint32_t* position) const;
  void record(uint32_t log_index, uint32_t granule, uint8_t flags);
  uint32_t sweep_granules(unsigned cls, uint32_t index, uint32_t position, uint32_t** cursor_out);
  uint8_t node_flags(const Slot* s, uintptr_t page) const;
  bool relieve(unsigned cls);
  // Every live slot, as at an interval start; with faulted_epoch >= 0 only those that faulted in that
  // epoch (a pass: the others are still protected).
  void protect_live(bool moved, int64_t faulted_epoch = -1);
  bool faulted_in(unsigned cls, uint32_t index, uint32_t epoch) const;
  void stop_passes();
  static void* pass_main(void* self);
  bool passes_over_budget(uint64_t now) const;  // pass_lock_ held

  Arena* arena_ = nullptr;
  uint32_t granularity_ = 0;
  uint32_t max_shift_ = 0;  // sweep limit = granularity << max_shift_
  PageSample sample_;
  std::atomic<uint32_t> round_{0};
  int64_t last_step_ = -1;  // the step of the last begin_interval (-1: none since finish); step lock held
  uint32_t last_interval_ = 0;
  // Per slot, kCursors sweep cursors: (epoch << 40) | (shift << 32) | the granule after the run. Lazily
  // backed, one mapping; sweep_[cls] is that class's part (null: no sweeps).
  static constexpr unsigned kCursors = 4;
  std::atomic<uint64_t>* sweep_[kNumClasses] = {};
  std::atomic<uint32_t> epoch_{0};  // one per begin_interval and rearm: cursors of older passes are stale
  // Passes: the current one (reset at each interval start), and the thread that starts the next ones.
  std::atomic<uint32_t> pass_{0};
  pthread_mutex_t pass_lock_ = PTHREAD_MUTEX_INITIALIZER;  // begin_interval against rearm: never in a handler
  pthread_t pass_thread_{};
  bool pass_running_ = false;           // step lock held
  std::atomic<uint32_t> pass_stop_{0};  // a futex word: 1 asks the pass thread to end
  uint64_t pass_period_ns_ = 0;
  std::atomic<uint32_t> pass_shift_{0};  // the period is pass_period_ns_ << pass_shift_
  // The budget (pass_lock_): SENTINEL_PROFILE_PASS_COST, the step-lock holder's figures, when the current
  // interval began, and the window's fault counts at its start.
  uint64_t pass_cost_percent_ = 0, pass_window_plain_ticks_ = 0;
  PassBudget pass_budget_;
  uint64_t interval_start_ticks_ = 0, faults_at_passes_ = 0, pass_faults_at_passes_ = 0;
  PassShift pass_shifts_[kMaxPassShifts] = {};
  uint32_t pass_shift_count_ = 0;
  std::atomic<uint64_t> pass_slowdowns_{0};
  std::atomic<uint64_t> rearms_{0}, rearm_ticks_{0};
  TouchRecord* touches_ = nullptr;
  uint64_t capacity_ = 0;
  std::atomic<uint64_t> next_{0};
  std::atomic<bool> recording_{false};
  std::atomic<bool> armed_{false};
  std::atomic<bool> armed_ever_{false};
  std::atomic<uint32_t> step_{0};
  std::atomic<uint32_t> interval_{0};
  std::atomic<int> check_fast_node_{-1};
  std::atomic<uint64_t> faults_{0}, fault_ns_{0}, dropped_{0}, syscall_unprotects_{0}, protect_calls_{0};
  std::atomic<uint64_t> mprotect_failures_{0}, sweep_faults_{0}, pass_faults_{0};
  std::atomic<bool> warned_{false};
  uint64_t protect_ticks_ = 0, release_ticks_ = 0;  // step lock held
};

}  // namespace sentinel
