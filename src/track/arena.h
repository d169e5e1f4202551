// Sentinel's page-aligned arenas. One reserved span of address space, split into a region per size
// class; a region is an array of equal slots, one object per slot, so no object shares a page with
// libc data or with another object. Address -> (class, slot) is arithmetic, which makes lookup
// lock-free and async-signal-safe. Free slots sit on a lock-free LIFO stack per class, so the most
// recently freed (cache-warm, already faulted) slot is reused first. Freed slots keep their pages up to
// a retention budget; beyond it the pages go back to the kernel with MADV_DONTNEED (see
// docs/performance.md for the measurement behind this choice).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "track/size_class.h"

namespace sentinel {

struct SlotCache;

// Memory tiers of the arena's slots. Until tiering binds them (run mode with two nodes), every slot is
// kTierFast: its pages come from the kernel's default, local, node.
inline constexpr uint8_t kTierFast = 0;
inline constexpr uint8_t kTierSlow = 1;
inline constexpr uint8_t kTiers = 2;

// Per-slot record. `user` is the pointer handed to the program (0: slot free).
struct Slot {
  std::atomic<uintptr_t> user{0};
  std::atomic<uint64_t> size{0};
  std::atomic<uint32_t> log_index{0};
  std::atomic<uint32_t> next_free{0};
  std::atomic<uint8_t> dirty{0};       // pages may hold old data
  std::atomic<uint8_t> no_protect{0};  // the profiler must leave it alone (allocated by libc itself)
  std::atomic<uint8_t> protect{0};     // the profiler has taken access away from some of its pages
  std::atomic<uint8_t> tier{0};        // kTierFast or kTierSlow: where its pages are (as far as Sentinel moved them)
  std::atomic<uint16_t> pins{0};       // system calls in flight on this object: do not protect it
  std::atomic<uint16_t> busy{0};       // a protection change is in progress (the profiler's slot lock)
};
static_assert(sizeof(Slot) == 32);

class Arena {
 public:
  static constexpr unsigned kRegionShift = 36;  // 64 GiB of address space per class
  static constexpr uint32_t kMaxSlotsPerClass = 1u << 20;

  // Reserves the address space. False (with errno) when the kernel refuses.
  // up_to_peak: freed slots are kept while live + kept stays within the peak of live slots plus retain_bytes,
  // not only up to retain_bytes (the runtime's rule; retain_bytes 0 still keeps nothing).
  bool init(uint64_t retain_bytes, bool up_to_peak = false);
  bool ready() const { return base_ != 0; }

  bool owns(const void* p) const { return reinterpret_cast<uintptr_t>(p) - base_ < span_; }

  // A slot able to hold `need` bytes. Returns nullptr when the size is beyond the largest class or
  // the class is full (the caller then falls back to libc). *was_dirty tells whether the slot may
  // hold old data.
  // With a thread's slot cache, a slot of that thread's own is reused first. `tier` is where the pages
  // should be: a free slot of that tier, else a fresh slot bound to its node before first touch;
  // *got_tier says where it is (the other tier when the wanted node refused the binding).
  void* acquire(size_t need, unsigned* cls, uint32_t* index, bool* was_dirty, SlotCache* cache = nullptr,
                uint8_t tier = kTierFast, uint8_t* got_tier = nullptr);
  // Returns a slot. Its record must already be cleared. With a cache, the slot stays with the thread
  // (its pages kept) while the cache has room.
  void release(unsigned cls, uint32_t index, SlotCache* cache = nullptr);
  // Gives every slot of a thread's cache back to the arena (the thread ends, or a fork child forgets
  // the parent's other threads).
  void flush(SlotCache* cache);

  // Tiering: the nodes fresh slots of each tier are bound to (-1: leave them to the kernel). Set once,
  // when the first plan is installed with a slow node.
  void set_tier_nodes(int fast_node, int slow_node) {
    tier_node_[kTierFast] = fast_node;
    tier_node_[kTierSlow] = slow_node;
    tiered_.store(true, std::memory_order_release);
  }
  // The interleave policy (SENTINEL_POLICY_INTERLEAVE): every fresh slot's pages are weighted-interleaved
  // instead, share_ppm of them on the fast node. Set once, at start, before any slot is handed out.
  void set_interleave(int fast_node, int slow_node, uint32_t share_ppm) {
    interleave_ppm_ = share_ppm;
    set_tier_nodes(fast_node, slow_node);
  }
  // The unit of the interleave: 64 KiB of address space. Each run of groups on one node is a memory
  // policy of its own (a VMA), and the kernel bounds a process's VMAs (vm.max_map_count, 65530 by
  // default): at 20% (two runs every five groups) single pages would reach that bound at about 0.6 GiB
  // of slots, 64 KiB groups at about 10 GiB. Past it mbind fails: a binding failure, the kernel's node.
  static constexpr unsigned kInterleaveGroupShift = 16;
  // The node a group goes to: the weights' Bresenham pattern over the group's index in the address
  // space, so that any share_ppm/1e6 of a run of groups is fast, in the most even spread.
  static bool interleave_fast(uintptr_t group, uint32_t share_ppm) {
    return (uint64_t{group} + 1) * share_ppm / 1000000 != uint64_t{group} * share_ppm / 1000000;
  }
  uint64_t interleaved_bytes(uint8_t tier) const { return interleaved_[tier].load(std::memory_order_relaxed); }
  bool tiered() const { return tiered_.load(std::memory_order_acquire); }
  int tier_node(uint8_t tier) const { return tier_node_[tier]; }
  uint64_t binding_failures() const { return bind_failures_.load(std::memory_order_relaxed); }
  // Classes whose MADV_NOHUGEPAGE the kernel refused (a kernel without THP refuses none: it ignores it).
  uint32_t nohuge_failures() const { return nohuge_failures_; }

  // Free slots that kept their pages, whose record says one tier while `where(ctx, address, length)` finds
  // the pages on the other (kTierFast, kTierSlow; anything else: unknown): recorded on that tier, so
  // that acquire() hands them out for it. Pages the kernel placed itself (before tiering bound the arena,
  // or with the fast node full) can be anywhere. Returns how many were relabeled. Not async-signal-safe
  // (`where` asks the kernel); slots acquired meanwhile keep their record until their next release.
  uint64_t relabel_free(uint8_t (*where)(void* ctx, uintptr_t addr, size_t len), void* ctx);

  // Slot containing address p (p must satisfy owns()). Async-signal-safe. Null when p lies beyond
  // the slots ever handed out.
  Slot* locate(const void* p, unsigned* cls, uint32_t* index) const;
  Slot* slot(unsigned cls, uint32_t index) const { return &classes_[cls].records[index]; }
  uintptr_t slot_address(unsigned cls, uint32_t index) const {
    return classes_[cls].base + uintptr_t{index} * class_size(cls);
  }

  uint32_t high_water(unsigned cls) const {
    uint32_t h = classes_[cls].high_water.load(std::memory_order_acquire);
    return h < classes_[cls].capacity ? h : classes_[cls].capacity;
  }
  uint64_t metadata_bytes() const;  // bytes of slot records touched so far (an upper bound)
  uint64_t retained_bytes() const { return retained_.load(std::memory_order_relaxed); }
  uint64_t peak_slot_bytes() const { return peak_live_.load(std::memory_order_relaxed); }
  uint64_t madvised() const { return madvised_.load(std::memory_order_relaxed); }
  uint64_t reused() const { return reused_.load(std::memory_order_relaxed); }
  uintptr_t base() const { return base_; }
  uintptr_t span() const { return span_; }

 private:
  void keep_huge_pages_within_slots();
  uint32_t nohuge_failures_ = 0;
  struct Class {
    uintptr_t base = 0;
    Slot* records = nullptr;
    uint32_t capacity = 0;
    std::atomic<uint32_t> high_water{0};
    std::atomic<uint64_t> free_head[kTiers] = {};  // per tier: (tag << 32) | (index + 1); 0: empty
  };
  bool pop(Class& c, uint8_t tier, uint32_t* index);
  bool pop_tier(Class& c, uint8_t tier, uint32_t* index);
  void push(Class& c, uint8_t tier, uint32_t index);
  uint8_t bind_fresh(uintptr_t addr, size_t len, uint8_t tier);
  void bind_interleaved(uintptr_t addr, size_t len);

  uintptr_t base_ = 0;
  uintptr_t span_ = 0;
  uint64_t retain_limit_ = 0;
  bool retain_up_to_peak_ = false;
  std::atomic<uint64_t> retained_{0};
  // Bytes of slots handed out (class sizes) now and at most: with retain_up_to_peak_, freed slots are kept
  // while what is live and kept stays within that peak plus retain_limit_ (release()).
  std::atomic<uint64_t> live_{0}, peak_live_{0};
  std::atomic<uint64_t> madvised_{0};
  std::atomic<uint64_t> reused_{0};
  std::atomic<uint64_t> bind_failures_{0};
  uint32_t interleave_ppm_ = 0;  // 0: not the interleave policy
  std::atomic<uint64_t> interleaved_[kTiers] = {};
  std::atomic<bool> tiered_{false};
  int tier_node_[kTiers] = {-1, -1};
  Class classes_[kNumClasses];
};

}  // namespace sentinel
