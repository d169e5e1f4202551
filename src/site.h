// Allocation sites: the first 8 return addresses past Sentinel's own frames, captured with libunwind
// (loaded with dlopen, RTLD_LOCAL: linking it would make the whole process's C++ exception unwinding
// bind to it; DESIGN §4), hashed, and interned into a lock-free table that hands out dense ids.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "config.h"
#include "sentinel/format.h"

namespace sentinel {

inline constexpr uint32_t kNoSite = UINT32_MAX;

struct Site {
  std::atomic<uint64_t> hash{0};  // 0: empty
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
  // Up to SENTINEL_MAX_FRAMES caller frames into out; returns how many.
  uint32_t capture(uintptr_t* out) const;
  UnwindMethod method() const { return method_; }

 private:
  using BacktraceFn = int (*)(void**, int);
  BacktraceFn backtrace_ = nullptr;
  UnwindMethod method_ = UnwindMethod::none;
  uintptr_t skip_lo_ = 0, skip_hi_ = 0;
};

}  // namespace sentinel
