// Allocation sites: the first 8 return addresses past Sentinel's own frames, captured with glibc's
// backtrace() by default or libunwind (SENTINEL_UNWIND; loaded with dlopen, RTLD_LOCAL: linking it would
// make the whole process's C++ exception unwinding bind to it; docs/design.md §4.1), hashed, and interned
// into a lock-free table that hands out dense ids.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "base/config.h"
#include "sentinel/format.h"

namespace sentinel {

inline constexpr uint32_t kNoSite = UINT32_MAX;

struct Site {
  std::atomic<uint64_t> hash{0};         // 0: empty
  std::atomic<uint32_t> id_plus_one{0};  // 0: being written
  uint32_t nframes = 0;
  uintptr_t frames[SENTINEL_MAX_FRAMES] = {};
};

class SiteTable {
 public:
  static constexpr uint32_t kCapacity = 1u << 14;
  bool init();
  // The id of the site with these frames, new or old; kNoSite when the table is full.
  uint32_t intern(const uintptr_t* frames, uint32_t n);
  uint32_t count() const {
    uint32_t n = next_id_.load(std::memory_order_acquire);
    return n < kCapacity ? n : kCapacity;
  }
  // Site by id; null while it is being written.
  const Site* by_id(uint32_t id) const;
  uint64_t bytes() const { return kCapacity * (sizeof(Site) + sizeof(uint32_t)); }
  uint64_t full_misses() const { return full_.load(std::memory_order_relaxed); }

 private:
  Site* slots_ = nullptr;
  std::atomic<uint32_t>* id_to_slot_ = nullptr;
  std::atomic<uint32_t> next_id_{0};
  std::atomic<uint64_t> full_{0};
};

uint64_t hash_frames(const uintptr_t* frames, uint32_t n);

class Unwinder {
 public:
  // Chooses the method; frames with return addresses in [skip_lo, skip_hi) (Sentinel's own code) are
  // dropped from the top of each stack. Returns the method actually in use (libunwind may be missing).
  UnwindMethod init(UnwindMethod wanted, uintptr_t skip_lo, uintptr_t skip_hi);
  static constexpr uint32_t kMaxCaptured = 48;
  // Up to `max` (at most kMaxCaptured) caller frames into out; returns how many.
  uint32_t capture(uintptr_t* out, uint32_t max = SENTINEL_MAX_FRAMES) const;
  UnwindMethod method() const { return method_; }

 private:
  using BacktraceFn = int (*)(void**, int);
  BacktraceFn backtrace_ = nullptr;
  UnwindMethod method_ = UnwindMethod::none;
  uintptr_t skip_lo_ = 0, skip_hi_ = 0;
};

}  // namespace sentinel

namespace sentinel {

// Skips most unwinds, exactly. A site is the chain of return addresses above the allocating call, and
// those return addresses sit in the thread's stack. The first unwind from a given (return address, stack
// address) also finds where on the stack each of the chain's return addresses lies; the next allocation
// with the same key reads those few stack words and, if they hold the same chain, has the same site
// (the chain read from the slots where the unwinder found it), with no unwind. A different path through the same key
// reads different words and is unwound and cached beside the first (several entries may share a key). Lock-free; an
// entry is published by its tag after its contents.
class SiteCache {
 public:
  static constexpr uint32_t kCapacity = 1u << 16;
  static constexpr uint32_t kProbes = 16;
  static constexpr uint32_t kScanWords = 16384;  // how far up the stack a chain is looked for (128 KiB)
  bool init();
  uint32_t site_for(uintptr_t ra, uintptr_t sp, const Unwinder& unwinder, SiteTable& sites);
  uint64_t unwinds() const { return unwinds_.load(std::memory_order_relaxed); }
  uint64_t unverifiable() const { return unverifiable_.load(std::memory_order_relaxed); }
  // Memory touched (an upper bound: entries are spread by hash, so each may sit on a page of its own).
  uint64_t bytes() const {
    uint64_t spread = used_.load(std::memory_order_relaxed) * 4096;
    return spread < kCapacity * sizeof(Entry) ? spread : kCapacity * sizeof(Entry);
  }

 private:
  struct Entry {
    std::atomic<uint64_t> tag;  // 0: empty, 1: being written
    uint32_t site;
    uint32_t nframes;
    uint16_t offset[SENTINEL_MAX_FRAMES];  // words from sp to each return address of the chain
    uintptr_t frames[SENTINEL_MAX_FRAMES];
  };
  Entry* entries_ = nullptr;
  std::atomic<uint64_t> unwinds_{0}, unverifiable_{0}, used_{0};
};

// The top (highest address) of the calling thread's stack, or 0 when unknown or when sp is not on it.
// Cached per thread; allocates the first time (pthread_getattr_np): call inside the recursion guard.
uintptr_t this_thread_stack_top(uintptr_t sp);

}  // namespace sentinel
