#include "profile/profiler.h"

#include <sys/mman.h>

#include <cerrno>

#include "base/clock.h"
#include "base/log.h"
#include "base/numa_ops.h"
#include "base/thread.h"
#include "base/vm_region.h"

namespace sentinel {

namespace {
// Protection changes of one slot are serialised, so that "pages protected" always implies "flag set":
// the flag is raised before access is taken away and lowered only after it is given back. The fault
// handler never takes this lock (it only reads the flag).
class SlotLock {
 public:
  explicit SlotLock(Slot* s) : s_(s) {
    while (s_->busy.exchange(1, std::memory_order_acquire)) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  }
  ~SlotLock() {
    s_->busy.store(0, std::memory_order_release);
  }

 private:
  Slot* s_;
};

inline uintptr_t page_down(uintptr_t a) {
  return a & ~(uintptr_t{kPageSize} - 1);
}
inline uintptr_t page_up(uintptr_t a) {
  return (a + kPageSize - 1) & ~(uintptr_t{kPageSize} - 1);
}
}  // namespace

bool Profiler::init(Arena* arena, uint32_t granularity, uint64_t sweep, uint64_t max_touches,
                    const PageSample& sample) {
  arena_ = arena;
  granularity_ = granularity;
  sample_ = sample;
  if (sample_.covers(sample_.min_bytes) && sample_.window() < granularity) sample_ = PageSample{};
  capacity_ = max_touches;
  max_shift_ = 0;
  while ((uint64_t{granularity} << (max_shift_ + 1)) <= sweep && max_shift_ < 20) ++max_shift_;
  touches_ = static_cast<TouchRecord*>(vm_map_lazy(max_touches * sizeof(TouchRecord)));
  if (!touches_) return false;
  if (max_shift_) {
    // Sized like the arena's slot records: one set of cursors per slot a class can ever hand out.
    const size_t region = size_t{1} << Arena::kRegionShift;
    size_t slots[kNumClasses], total = 0;
    for (unsigned c = 0; c < kNumClasses; ++c) {
      slots[c] = region / class_size(c) < Arena::kMaxSlotsPerClass ? region / class_size(c) : Arena::kMaxSlotsPerClass;
      total += slots[c] * kCursors;
    }
    auto* cursors = static_cast<std::atomic<uint64_t>*>(vm_map_lazy(total * sizeof(std::atomic<uint64_t>)));
    if (!cursors) {
      max_shift_ = 0;  // no sweeps: every fault gives back one granule
    } else {
      for (unsigned c = 0; c < kNumClasses; ++c) {
        sweep_[c] = cursors;
        cursors += slots[c] * kCursors;
      }
    }
  }
  return true;
}

void Profiler::protect_slot(unsigned cls, uint32_t index, uintptr_t user, size_t size, bool moved) {
  Slot* s = arena_->slot(cls, index);
  if (s->pins.load(std::memory_order_seq_cst) || s->no_protect.load(std::memory_order_relaxed)) return;
  SlotLock lock(s);
  // The object may have been freed since the caller looked: then there is nothing to protect.
  if (s->user.load(std::memory_order_acquire) != user) return;
  uintptr_t lo = page_down(user), hi = page_up(user + size);
  s->protect.store(1, std::memory_order_seq_cst);
  if (sample_.covers(size)) {
    if (!protect_windows(cls, index, lo, hi, moved)) mprotect_failures_.fetch_add(1, std::memory_order_relaxed);
  } else if (mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_NONE) != 0) {
    mprotect_failures_.fetch_add(1, std::memory_order_relaxed);
  }
  protect_calls_.fetch_add(1, std::memory_order_relaxed);
  if (s->pins.load(std::memory_order_seq_cst)) {
    // An I/O call pinned it meanwhile and may already have unprotected it: make sure it stays usable.
    mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_READ | PROT_WRITE);
  }
}

bool Profiler::protect_windows(unsigned cls, uint32_t index, uintptr_t lo, uintptr_t hi, bool moved) {
  const uintptr_t slot = arena_->slot_address(cls, index);
  const uint32_t round = round_.load(std::memory_order_relaxed);
  // The last round's windows first: a fault in one of them from now on is outside every window, resolved
  // as a race and not recorded.
  bool ok = !moved || mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_READ | PROT_WRITE) == 0;
  for (uint64_t b = (lo - slot) / sample_.block; slot + b * sample_.block < hi; ++b) {
    uintptr_t from = slot + b * sample_.block + sample_.window_offset(cls, index, b, round);
    uintptr_t to = from + sample_.window();
    if (from < lo) from = lo;
    if (to > hi) to = hi;
    if (from < to && mprotect(reinterpret_cast<void*>(from), to - from, PROT_NONE) != 0) ok = false;
  }
  return ok;
}

uint32_t Profiler::window_position(unsigned cls, uint32_t index, uint32_t granule, uint32_t* position) const {
  const uint64_t per_block = sample_.block / granularity_, per_window = sample_.window() / granularity_;
  const uint64_t b = granule / per_block;
  const uint64_t first =
      b * per_block + sample_.window_offset(cls, index, b, round_.load(std::memory_order_acquire)) / granularity_;
  if (granule < first || granule >= first + per_window) return 0;
  *position = static_cast<uint32_t>(b * per_window + (granule - first));
  return static_cast<uint32_t>(first + per_window - granule);
}

void Profiler::begin_interval(uint32_t step, uint32_t interval) {
  uint64_t t0 = now_ticks();
  int saved = errno;
  // A new step (another step index, or the intervals starting over) draws new windows.
  const bool new_round = sample_.rate > 1 && (last_step_ != int64_t{step} || interval <= last_interval_);
  if (new_round) round_.fetch_add(1, std::memory_order_acq_rel);
  last_step_ = step;
  last_interval_ = interval;
  pthread_mutex_lock(&pass_lock_);  // a pass in progress finishes in the interval it began in
  step_.store(step, std::memory_order_relaxed);
  interval_.store(interval, std::memory_order_relaxed);
  pass_.store(0, std::memory_order_relaxed);
  interval_start_ticks_ = t0;
  epoch_.fetch_add(1, std::memory_order_relaxed);  // every sweep cursor is stale from here
  armed_ever_.store(true, std::memory_order_relaxed);
  armed_.store(true, std::memory_order_seq_cst);
  recording_.store(true, std::memory_order_release);
  protect_live(new_round);
  pthread_mutex_unlock(&pass_lock_);
  errno = saved;
  protect_ticks_ += now_ticks() - t0;
}

void Profiler::protect_live(bool moved, int64_t faulted_epoch) {
  for (unsigned c = 0; c < kNumClasses; ++c) {
    uint32_t hw = arena_->high_water(c);
    for (uint32_t i = 0; i < hw; ++i) {
      Slot* s = arena_->slot(c, i);
      uintptr_t user = s->user.load(std::memory_order_acquire);
      if (!user || (faulted_epoch >= 0 && !faulted_in(c, i, static_cast<uint32_t>(faulted_epoch)))) continue;
      protect_slot(c, i, user, s->size.load(std::memory_order_relaxed), moved);
    }
  }
}

// Whether a fault of the given epoch gave back pages of the slot: one of its sweep cursors carries the
// epoch. Without sweeps (no cursors) every slot counts as touched.
bool Profiler::faulted_in(unsigned cls, uint32_t index, uint32_t epoch) const {
  if (!sweep_[cls]) return true;
  const std::atomic<uint64_t>* cur = sweep_[cls] + size_t{index} * kCursors;
  for (unsigned k = 0; k < kCursors; ++k)
    if ((cur[k].load(std::memory_order_relaxed) >> 40) == (epoch & 0xFFFFFFu)) return true;
  return false;
}

void Profiler::rearm() {
  int saved = errno;
  const uint64_t t0 = now_ticks();
  pthread_mutex_lock(&pass_lock_);
  // finish() stops this thread before it gives access back, so recording cannot end during the sweep.
  const uint32_t pass = pass_.load(std::memory_order_relaxed);
  if (!recording() || pass >= kTouchMaxPass) {
    // nothing to do: no window, or the interval's last pass
  } else if (passes_over_budget(t0)) {
    // Over budget: no pass now (the current one goes on), and the next ones at twice the period. Past the
    // last doubling the passes have in effect stopped.
    if (pass_shift_count_ < kMaxPassShifts) {
      const uint32_t shift = pass_shift_.fetch_add(1, std::memory_order_relaxed) + 1;
      pass_shifts_[pass_shift_count_++] = {step_.load(std::memory_order_relaxed),
                                           interval_.load(std::memory_order_relaxed), pass + 1, shift};
      pass_slowdowns_.fetch_add(1, std::memory_order_relaxed);
    }
  } else {
    pass_.store(pass + 1, std::memory_order_relaxed);
    // A sweep starts over in the new pass. Only the slots that faulted in the pass that ends have pages
    // to take back: the others are still protected since the interval start or their last pass.
    protect_live(false, epoch_.fetch_add(1, std::memory_order_relaxed));
    rearms_.fetch_add(1, std::memory_order_relaxed);
  }
  pthread_mutex_unlock(&pass_lock_);
  rearm_ticks_.fetch_add(now_ticks() - t0, std::memory_order_relaxed);
  errno = saved;
}

void Profiler::set_pass_budget(const PassBudget& b) {
  pthread_mutex_lock(&pass_lock_);
  pass_budget_ = b;
  pthread_mutex_unlock(&pass_lock_);
}

// The window's intervals so far, as profiled and as plain: the completed ones as the step-lock holder gave
// them, the current one as long as it has run and as its plain mean (as long as it has run while within
// that mean, or when the mean is unknown). The budget is a share of the window's whole plain time.
bool Profiler::passes_over_budget(uint64_t now) const {
  const uint64_t faults = faults_.load(std::memory_order_relaxed) - faults_at_passes_;
  const uint64_t pass_faults = pass_faults_.load(std::memory_order_relaxed) - pass_faults_at_passes_;
  if (!faults || !pass_faults) return false;
  const uint64_t ran = now > interval_start_ticks_ ? now - interval_start_ticks_ : 0;
  const uint64_t mean = pass_budget_.interval_plain_ticks;
  const uint64_t plain = pass_budget_.plain_ticks + (mean && mean < ran ? mean : ran);
  const uint64_t profiled = pass_budget_.profiled_ticks + ran;
  if (!plain || profiled <= plain) return false;
  const unsigned __int128 pass_cost = static_cast<unsigned __int128>(profiled - plain) * pass_faults / faults;
  const uint64_t allowed = plain > pass_window_plain_ticks_ ? plain : pass_window_plain_ticks_;
  return pass_cost * 100 > static_cast<unsigned __int128>(allowed) * pass_cost_percent_;
}

void* Profiler::pass_main(void* self) {
  auto* p = static_cast<Profiler*>(self);
  while (!p->pass_stop_.load(std::memory_order_acquire)) {
    futex_wait(&p->pass_stop_, 0, p->pass_period_ns_ << p->pass_shift_.load(std::memory_order_relaxed));
    if (p->pass_stop_.load(std::memory_order_acquire)) break;
    p->rearm();
  }
  return nullptr;
}

bool Profiler::start_passes(uint64_t period_ns, uint64_t cost_percent, uint64_t window_plain_ticks) {
  if (pass_running_ || !period_ns) return pass_running_;
  pass_period_ns_ = period_ns;
  pass_shift_.store(0, std::memory_order_relaxed);
  pass_cost_percent_ = cost_percent;
  pass_window_plain_ticks_ = window_plain_ticks;
  pass_budget_ = PassBudget{};
  faults_at_passes_ = faults_.load(std::memory_order_relaxed);
  pass_faults_at_passes_ = pass_faults_.load(std::memory_order_relaxed);
  pass_shift_count_ = 0;
  pass_stop_.store(0, std::memory_order_release);
  pass_running_ = start_quiet_thread(&pass_thread_, &Profiler::pass_main, this, 64 * 1024, "sentinel-pass") == 0;
  return pass_running_;
}

void Profiler::stop_passes() {
  if (!pass_running_) return;
  pass_stop_.store(1, std::memory_order_release);
  futex_wake(&pass_stop_);
  pthread_join(pass_thread_, nullptr);
  pass_running_ = false;
}

void Profiler::protect_new(unsigned cls, uint32_t index, uintptr_t user, size_t size) {
  if (!recording()) return;
  int saved = errno;
  protect_slot(cls, index, user, size);
  errno = saved;
}

void Profiler::unprotect_slot(unsigned cls, uint32_t index) {
  Slot* s = arena_->slot(cls, index);
  if (!s->protect.load(std::memory_order_acquire)) return;
  SlotLock lock(s);
  if (!s->protect.load(std::memory_order_acquire)) return;
  int saved = errno;
  // Access first, flag second: a fault in between must still find the flag and be recognised.
  // If the kernel refuses (out of mappings: vm.max_map_count), the flag stays up so that faults on the
  // still-protected pages are recognised and resolved one by one.
  if (mprotect(reinterpret_cast<void*>(arena_->slot_address(cls, index)), class_size(cls), PROT_READ | PROT_WRITE) == 0)
    s->protect.store(0, std::memory_order_seq_cst);
  else
    mprotect_failures_.fetch_add(1, std::memory_order_relaxed);
  errno = saved;
}

void Profiler::discard_touches() {
  uint64_t used = touch_count() * sizeof(TouchRecord);
  next_.store(0, std::memory_order_release);
  // A fault still recording into the old part only writes a fresh zero page that the next window reuses.
  constexpr uint64_t kKeep = uint64_t{1} << 20;
  if (used > kKeep) {
    int saved = errno;
    uintptr_t from = page_up(reinterpret_cast<uintptr_t>(touches_) + kKeep);
    uintptr_t to = page_up(reinterpret_cast<uintptr_t>(touches_) + used);
    if (to > from) madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
    errno = saved;
  }
}

void Profiler::after_fork_child() {
  pass_running_ = false;  // the pass thread stayed in the parent
  pass_lock_ = PTHREAD_MUTEX_INITIALIZER;
  if (!arena_) return;
  for (unsigned c = 0; c < kNumClasses; ++c) {
    uint32_t hw = arena_->high_water(c);
    for (uint32_t i = 0; i < hw; ++i) arena_->slot(c, i)->busy.store(0, std::memory_order_relaxed);
  }
}

void Profiler::finish() {
  uint64_t t0 = now_ticks();
  int saved = errno;
  stop_passes();
  recording_.store(false, std::memory_order_release);
  last_step_ = -1;
  for (unsigned c = 0; c < kNumClasses; ++c) {
    uint32_t hw = arena_->high_water(c);
    for (uint32_t i = 0; i < hw; ++i) unprotect_slot(c, i);
  }
  armed_.store(false, std::memory_order_seq_cst);
  errno = saved;
  release_ticks_ += now_ticks() - t0;
}

// Async-signal-safe: one move_pages query of the faulting page.
uint8_t Profiler::node_flags(const Slot* s, uintptr_t page) const {
  int fast = check_fast_node_.load(std::memory_order_acquire);
  if (fast < 0) return 0;
  int node = numa::node_of_page(page);
  bool on_fast = node >= 0 ? node == fast : s->tier.load(std::memory_order_relaxed) == kTierFast;
  return static_cast<uint8_t>(kTouchChecked | (on_fast ? kTouchOnFast : 0));
}

void Profiler::record(uint32_t log_index, uint32_t granule, uint8_t flags) {
  uint64_t i = next_.fetch_add(1, std::memory_order_relaxed);
  if (i >= capacity_) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint32_t pass = pass_.load(std::memory_order_relaxed);
  flags = static_cast<uint8_t>(flags | (pass << kTouchPassShift));
  touches_[i] = TouchRecord{log_index, static_cast<uint16_t>(interval_.load(std::memory_order_relaxed)),
                            static_cast<uint8_t>(step_.load(std::memory_order_relaxed)), flags, granule};
}

// Splitting a mapping once more would exceed vm.max_map_count (the kernel answers ENOMEM): give the
// whole size class's committed range back in one call. That needs no new split (the range's ends are
// already mapping boundaries) and merges its mappings, so it succeeds; the objects in it go unrecorded
// until the next interval protects them again. Async-signal-safe.
bool Profiler::relieve(unsigned cls) {
  mprotect_failures_.fetch_add(1, std::memory_order_relaxed);
  uintptr_t base = arena_->slot_address(cls, 0);
  size_t len = size_t{arena_->high_water(cls)} * class_size(cls);
  if (mprotect(reinterpret_cast<void*>(base), len, PROT_READ | PROT_WRITE) != 0) return false;
  if (!warned_.exchange(true, std::memory_order_relaxed)) {
    log_line(LogLevel::warn,
             "profiling reached vm.max_map_count; some touches go unrecorded (a coarser "
             "SENTINEL_PROFILE_GRANULARITY or a larger vm.max_map_count avoids it)");
  }
  return true;
}

// How many granules a fault on `granule` (counted from the slot's start) gives back: 1, or twice the run
// the previous fault of this slot gave back in this interval when the fault is on the granule right
// after that run (the object is being swept in order), up to the sweep limit. *cursor_out: the cursor to
// update with the new run's end. Async-signal-safe, lock-free; cursors are hints, so a race between two
// threads costs at most a smaller run or a lost doubling, never a wrong record.
uint32_t Profiler::sweep_granules(unsigned cls, uint32_t index, uint32_t position, uint32_t** cursor_out) {
  *cursor_out = nullptr;
  if (!sweep_[cls]) return 1;
  std::atomic<uint64_t>* cur = sweep_[cls] + size_t{index} * kCursors;
  const uint64_t epoch = epoch_.load(std::memory_order_relaxed) & 0xFFFFFFu;
  unsigned victim = kCursors, shift = 0;
  for (unsigned k = 0; k < kCursors; ++k) {
    uint64_t w = cur[k].load(std::memory_order_relaxed);
    if ((w >> 40) != epoch) {
      if (victim == kCursors) victim = k;
      continue;
    }
    if (static_cast<uint32_t>(w) == position) {
      victim = k;
      shift = static_cast<unsigned>((w >> 32) & 0xFF) + 1;
      break;
    }
  }
  if (victim == kCursors) victim = position % kCursors;  // all in use: replace one
  if (shift > max_shift_) shift = max_shift_;
  *cursor_out = reinterpret_cast<uint32_t*>(cur + victim);
  return uint32_t{1} << shift;
}

bool Profiler::handle_fault(void* addr) {
  if (!arena_ || !arena_->owns(addr)) return false;
  unsigned cls;
  uint32_t index;
  Slot* s = arena_->locate(addr, &cls, &index);
  if (!s) return false;
  // With the flag down the fault is still ours when it raced with a thread that gave the pages back
  // (flag lowered after access was restored, but after this fault): an access fault inside a committed
  // slot can only come from the profiler, since the program never sees the arena's own protections.
  // Making the granule accessible again is then a no-op and the access is retried.
  if (!s->protect.load(std::memory_order_acquire) && !armed_ever_.load(std::memory_order_relaxed)) return false;
  uint64_t t0 = now_ticks();
  int saved = errno;
  const uintptr_t slot = arena_->slot_address(cls, index);
  const uintptr_t end = slot + class_size(cls);
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t g = granularity_;
  // Granules are counted from the slot's start (slots of tracked classes are multiples of 16 KiB, so this is
  // the address-aligned granule for the usual granularities).
  const uint32_t granule = static_cast<uint32_t>((a - slot) / g);
  // Sweeps count positions over what is protected: in a sampled slot, over its windows only, so that a
  // sweep goes on from one window to the next and a run never leaves its window.
  const bool sampled = sample_.covers(s->size.load(std::memory_order_relaxed));
  uint32_t position = granule, room = UINT32_MAX;
  if (sampled) room = window_position(cls, index, granule, &position);
  uint32_t* cursor = nullptr;
  const uint32_t run = recording() && room ? sweep_granules(cls, index, position, &cursor) : 1;
  const uint32_t want = room && run > room ? room : run;
  uintptr_t lo = slot + uintptr_t{granule} * g;
  uintptr_t hi = lo + uintptr_t{want} * g;
  if (hi > end || hi < lo) hi = end;
  if (mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_READ | PROT_WRITE) != 0) {
    // Out of mappings (or a run over a range the kernel refuses): one granule, else the whole class.
    hi = lo + g < end ? lo + g : end;
    cursor = nullptr;
    if (mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_READ | PROT_WRITE) != 0 && !relieve(cls)) {
      errno = saved;
      return false;
    }
  }
  const uint32_t n = static_cast<uint32_t>((hi - lo + g - 1) / g);
  if (cursor) {
    // A run cut short by its window's end keeps its size for the next window: a dense sweep of a sampled
    // object costs one fault per window, as one per sweep limit unsampled.
    const uint32_t kept_run = n == want ? run : n;
    uint64_t shift = 0;
    while ((uint32_t{1} << shift) < kept_run) ++shift;
    uint64_t w = (uint64_t{epoch_.load(std::memory_order_relaxed) & 0xFFFFFFu} << 40) | (shift << 32) | (position + n);
    reinterpret_cast<std::atomic<uint64_t>*>(cursor)->store(w, std::memory_order_relaxed);
  }
  faults_.fetch_add(1, std::memory_order_relaxed);
  if (n > 1) sweep_faults_.fetch_add(1, std::memory_order_relaxed);
  if (pass_.load(std::memory_order_relaxed)) pass_faults_.fetch_add(1, std::memory_order_relaxed);
  uintptr_t user = s->user.load(std::memory_order_acquire);
  // A fault outside a sampled slot's windows raced with the pages being given back: not a sample.
  if (recording() && user && room) {
    const uint32_t li = s->log_index.load(std::memory_order_relaxed);
    const uint64_t size = s->size.load(std::memory_order_relaxed);
    // Every granule of the run that holds bytes of the object, numbered from the object's start. The
    // placement check asks where each granule's first page is (the faulting page for the first).
    for (uintptr_t p = lo; p < hi; p += g) {
      if (p + g <= user || p >= user + size) continue;
      record(li, static_cast<uint32_t>(p > user ? (p - user) / g : 0), node_flags(s, p == lo ? page_down(a) : p));
    }
  }
  errno = saved;
  fault_ns_.fetch_add(now_ticks() - t0, std::memory_order_relaxed);  // ticks; converted when written
  return true;
}

uint32_t Profiler::pin_range(const void* p, size_t n, Pinned* out, uint32_t cap) {
  if (!armed() || !n || !arena_) return 0;
  uintptr_t a = reinterpret_cast<uintptr_t>(p), end = a + n;
  if (end < a) end = UINTPTR_MAX;
  // Only the part inside the arena matters.
  if (a < arena_->base()) a = arena_->base();
  if (end > arena_->base() + arena_->span()) end = arena_->base() + arena_->span();
  uint32_t count = 0;
  int saved = errno;
  while (a < end && count < cap) {
    unsigned cls;
    uint32_t index;
    Slot* s =
        arena_->owns(reinterpret_cast<void*>(a)) ? arena_->locate(reinterpret_cast<void*>(a), &cls, &index) : nullptr;
    if (!s) {
      // Not an arena slot: step to the next page (ranges rarely straddle the arena's edge).
      a = page_down(a) + kPageSize;
      continue;
    }
    uintptr_t slot = arena_->slot_address(cls, index);
    s->pins.fetch_add(1, std::memory_order_seq_cst);
    out[count++] = Pinned{static_cast<uint16_t>(cls), index};
    if (s->protect.load(std::memory_order_seq_cst)) {
      uintptr_t lo = page_down(a), hi = page_up(end < slot + class_size(cls) ? end : slot + class_size(cls));
      if (mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_READ | PROT_WRITE) != 0) relieve(cls);
      syscall_unprotects_.fetch_add(1, std::memory_order_relaxed);
      uintptr_t user = s->user.load(std::memory_order_acquire);
      if (recording() && user) {
        uint32_t li = s->log_index.load(std::memory_order_relaxed);
        uintptr_t from = lo > user ? lo : user;
        uint8_t flags = node_flags(s, page_down(from));
        const bool sampled = sample_.covers(s->size.load(std::memory_order_relaxed));
        uint32_t position;
        for (uintptr_t g = (from - user) / granularity_; user + g * granularity_ < hi; ++g) {
          // A sampled slot's granules count only inside its windows (counted from the slot's start there).
          uint32_t in_slot = static_cast<uint32_t>((user + g * granularity_ - slot) / granularity_);
          if (!sampled || window_position(cls, index, in_slot, &position)) record(li, static_cast<uint32_t>(g), flags);
        }
      }
    }
    a = slot + class_size(cls);
  }
  errno = saved;
  return count;
}

void Profiler::unpin(const Pinned* pins, uint32_t count) {
  for (uint32_t i = 0; i < count; ++i)
    arena_->slot(pins[i].cls, pins[i].index)->pins.fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace sentinel
