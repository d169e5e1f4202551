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

namespace sentinel {

// Skips most unwinds. The key is the allocating call's return address and stack pointer: in a training
// loop the same call path reaches malloc with the same (return address, stack depth) every step, so the
// site found by unwinding once can be reused. Two paths can share a key (same caller, same depth,
// different callers further up), so every key is verified by a full unwind on its first kVerifyFirst
// uses and then on every kVerifyEvery-th; a key seen to give two sites is marked ambiguous and always
// unwound from then on. Lock-free; racing updates lose at most a hit count.
class SiteCache {
 public:
  static constexpr uint32_t kCapacity = 1u << 16;
  static constexpr uint32_t kVerifyFirst = 8;
  static constexpr uint32_t kVerifyEvery = 64;
  bool init();
  uint32_t site_for(uintptr_t ra, uintptr_t sp, const Unwinder& unwinder, SiteTable& sites);
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  uint64_t unwinds() const { return unwinds_.load(std::memory_order_relaxed); }
  uint64_t ambiguous() const { return ambiguous_.load(std::memory_order_relaxed); }
  uint64_t bytes() const { return kCapacity * sizeof(Entry); }

 private:
  static constexpr uint32_t kAmbiguous = UINT32_MAX - 1;
  struct Entry {
    std::atomic<uint64_t> tag;  // 0: empty
    std::atomic<uint32_t> site;
    std::atomic<uint32_t> uses;
  };
  uint32_t unwind(const Unwinder& unwinder, SiteTable& sites);
  Entry* entries_ = nullptr;
  std::atomic<uint64_t> hits_{0}, unwinds_{0}, ambiguous_{0};
};

}  // namespace sentinel
