#include "track/arena.h"

#include <sys/mman.h>

#include <cerrno>

#include "base/numa_ops.h"
#include "base/vm_region.h"
#include "track/thread_state.h"

namespace sentinel {

bool Arena::init(uint64_t retain_bytes, bool up_to_peak) {
  retain_limit_ = retain_bytes;
  retain_up_to_peak_ = up_to_peak;
  const size_t region = size_t{1} << kRegionShift;
  void* span = vm_reserve(region * kNumClasses, region);
  if (!span) return false;
  size_t records_bytes[kNumClasses];
  size_t total_records = 0;
  for (unsigned c = 0; c < kNumClasses; ++c) {
    size_t slots = region / class_size(c);
    if (slots > kMaxSlotsPerClass) slots = kMaxSlotsPerClass;
    classes_[c].capacity = static_cast<uint32_t>(slots);
    records_bytes[c] = (slots * sizeof(Slot) + kPageSize - 1) & ~(kPageSize - 1);
    total_records += records_bytes[c];
  }
  // One lazily backed mapping for all slot records: pages are touched only as slots are used.
  auto* records = static_cast<char*>(vm_map_lazy(total_records));
  if (!records) {
    int saved = errno;
    vm_unmap(span, region * kNumClasses);
    errno = saved;
    return false;
  }
  for (unsigned c = 0; c < kNumClasses; ++c) {
    classes_[c].base = reinterpret_cast<uintptr_t>(span) + c * region;
    classes_[c].records = reinterpret_cast<Slot*>(records);
    records += records_bytes[c];
  }
  span_ = region * kNumClasses;
  base_ = reinterpret_cast<uintptr_t>(span);
  keep_huge_pages_within_slots();
  return true;
}

// Transparent huge pages (docs/tiering.md, "Huge pages"): a 2 MiB page must never hold two objects, or
// moving one object's pages would move its neighbour's too (move_pages migrates a whole huge page), and
// the profile of one would be the other's. Regions are 64 GiB-aligned, so the slots of a class whose size
// is a multiple of 2 MiB start on 2 MiB boundaries and may keep huge pages (under THP `always`, or
// where the program asks); every other class is marked MADV_NOHUGEPAGE. One call per class, at start.
void Arena::keep_huge_pages_within_slots() {
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t region = size_t{1} << kRegionShift;
  for (unsigned c = 0; c < kNumClasses; ++c) {
    if (class_size(c) % kHugePage == 0) continue;
    if (madvise(reinterpret_cast<void*>(classes_[c].base), region, MADV_NOHUGEPAGE) != 0) nohuge_failures_ += 1;
  }
}

bool Arena::pop(Class& c, uint8_t tier, uint32_t* index) {
  std::atomic<uint64_t>& free_head = c.free_head[tier];
  uint64_t head = free_head.load(std::memory_order_acquire);
  while (head & 0xFFFFFFFFu) {
    uint32_t idx = static_cast<uint32_t>(head & 0xFFFFFFFFu) - 1;
    uint32_t next = c.records[idx].next_free.load(std::memory_order_relaxed);
    uint64_t desired = ((head >> 32) + 1) << 32 | next;
    if (free_head.compare_exchange_weak(head, desired, std::memory_order_acq_rel, std::memory_order_acquire)) {
      *index = idx;
      return true;
    }
  }
  return false;
}

// A free slot from `tier`'s list that is recorded on `tier`: one relabeled while on the list
// (relabel_free) goes over to its tier's list instead.
bool Arena::pop_tier(Class& c, uint8_t tier, uint32_t* index) {
  for (int tries = 0; tries < 8 && pop(c, tier, index); ++tries) {
    const uint8_t label = c.records[*index].tier.load(std::memory_order_relaxed);
    if (label == tier || label >= kTiers) return true;
    push(c, label, *index);
  }
  return false;
}

uint64_t Arena::relabel_free(uint8_t (*where)(void* ctx, uintptr_t addr, size_t len), void* ctx) {
  uint64_t relabeled = 0;
  for (unsigned cls = 0; cls < kNumClasses; ++cls) {
    const uint32_t slots = high_water(cls);
    for (uint32_t i = 0; i < slots; ++i) {
      Slot& s = classes_[cls].records[i];
      if (s.user.load(std::memory_order_acquire) || !s.dirty.load(std::memory_order_relaxed)) continue;
      const uint8_t at = where(ctx, slot_address(cls, i), class_size(cls));
      if (at >= kTiers || at == s.tier.load(std::memory_order_relaxed)) continue;
      s.tier.store(at, std::memory_order_relaxed);
      ++relabeled;
    }
  }
  return relabeled;
}

void Arena::push(Class& c, uint8_t tier, uint32_t index) {
  std::atomic<uint64_t>& free_head = c.free_head[tier];
  uint64_t head = free_head.load(std::memory_order_relaxed);
  for (;;) {
    c.records[index].next_free.store(static_cast<uint32_t>(head & 0xFFFFFFFFu), std::memory_order_relaxed);
    uint64_t desired = ((head >> 32) + 1) << 32 | (uint64_t{index} + 1);
    if (free_head.compare_exchange_weak(head, desired, std::memory_order_release, std::memory_order_relaxed)) return;
  }
}

// A fresh slot's pages are bound to its tier's node before anything touches them, so placing an
// object costs no migration. When the node refuses (ENOMEM: full), the other tier takes it.
uint8_t Arena::bind_fresh(uintptr_t addr, size_t len, uint8_t tier) {
  if (!tiered()) return kTierFast;
  if (interleave_ppm_) {
    bind_interleaved(addr, len);
    return tier;  // one label for every slot: nothing is ever moved by tier
  }
  int node = tier_node_[tier];
  if (node < 0 || numa::prefer_node(reinterpret_cast<void*>(addr), len, node) == 0) return tier;
  bind_failures_.fetch_add(1, std::memory_order_relaxed);
  uint8_t other = tier == kTierFast ? kTierSlow : kTierFast;
  if (tier_node_[other] >= 0) numa::prefer_node(reinterpret_cast<void*>(addr), len, tier_node_[other]);
  return other;
}

// Runs of 64 KiB groups with the same node get one mbind each. A refused binding (the node full) leaves
// the run to the kernel, counted as a binding failure.
void Arena::bind_interleaved(uintptr_t addr, size_t len) {
  const uintptr_t end = addr + len;
  const uintptr_t group_bytes = uintptr_t{1} << kInterleaveGroupShift;
  uintptr_t run = addr;
  while (run < end) {
    const bool fast = interleave_fast(run >> kInterleaveGroupShift, interleave_ppm_);
    uintptr_t next = (run | (group_bytes - 1)) + 1;  // the next group's start
    while (next < end && interleave_fast(next >> kInterleaveGroupShift, interleave_ppm_) == fast) next += group_bytes;
    if (next > end) next = end;
    const uint8_t tier = fast ? kTierFast : kTierSlow;
    if (numa::prefer_node(reinterpret_cast<void*>(run), next - run, tier_node_[tier]) == 0)
      interleaved_[tier].fetch_add(next - run, std::memory_order_relaxed);
    else
      bind_failures_.fetch_add(1, std::memory_order_relaxed);
    run = next;
  }
}

void* Arena::acquire(size_t need, unsigned* cls_out, uint32_t* index_out, bool* was_dirty, SlotCache* cache,
                     uint8_t tier, uint8_t* got_tier) {
  int ci = class_of(need);
  if (ci < 0 || !base_) return nullptr;
  auto cls = static_cast<unsigned>(ci);
  Class& c = classes_[cls];
  const size_t csize = class_size(cls);
  uint32_t index;
  uint8_t placed = tier;
  if (cache && cache->count[cls] &&
      c.records[cache->index[cls][cache->count[cls] - 1]].tier.load(std::memory_order_relaxed) == tier) {
    // The thread's own slot: its pages were kept, nothing shared is touched.
    index = cache->index[cls][--cache->count[cls]];
    cache->bytes -= csize;
    *was_dirty = true;
  } else if (pop_tier(c, tier, &index)) {
    Slot& s = c.records[index];
    *was_dirty = s.dirty.load(std::memory_order_relaxed) != 0;
    if (*was_dirty) {
      retained_.fetch_sub(csize, std::memory_order_relaxed);
      reused_.store(reused_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // a statistic
    }
  } else {
    index = c.high_water.fetch_add(1, std::memory_order_relaxed);
    if (index >= c.capacity) {
      c.high_water.fetch_sub(1, std::memory_order_relaxed);
      return nullptr;
    }
    // Fresh slot: make its pages accessible (adjacent slots merge into one mapping).
    if (!vm_commit(reinterpret_cast<void*>(c.base + uintptr_t{index} * csize), csize)) {
      return nullptr;  // the index stays unused: it has no accessible pages
    }
    *was_dirty = false;
    placed = bind_fresh(c.base + uintptr_t{index} * csize, csize, tier);
    c.records[index].tier.store(placed, std::memory_order_relaxed);
  }
  if (got_tier) *got_tier = placed;
  uint64_t live = live_.fetch_add(csize, std::memory_order_relaxed) + csize;
  uint64_t peak = peak_live_.load(std::memory_order_relaxed);
  while (live > peak && !peak_live_.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
  *cls_out = cls;
  *index_out = index;
  return reinterpret_cast<void*>(c.base + uintptr_t{index} * csize);
}

void Arena::release(unsigned cls, uint32_t index, SlotCache* cache) {
  Class& c = classes_[cls];
  Slot& s = c.records[index];
  const size_t csize = class_size(cls);
  const uint64_t live = live_.fetch_sub(csize, std::memory_order_relaxed) - csize;
  if (cache && cache->count[cls] < SlotCache::kDepth && cache->bytes + csize <= SlotCache::kMaxBytes) {
    cache->index[cls][cache->count[cls]++] = index;
    cache->bytes += csize;
    return;
  }
  // Kept: up to SENTINEL_RETAIN_BYTES, and with up_to_peak that much beyond what the peak of live slots
  // would hold now (live + kept <= peak + limit): a large model frees and allocates more than 1 GiB a step,
  // as much as its peak, and glibc's heap keeps that much too. 0 keeps nothing.
  uint64_t limit = retain_limit_;
  const uint64_t peak = peak_live_.load(std::memory_order_relaxed);
  if (retain_up_to_peak_ && limit && peak > live) limit += peak - live;
  uint64_t retained = retained_.fetch_add(csize, std::memory_order_relaxed) + csize;
  if (retained <= limit) {
    s.dirty.store(1, std::memory_order_relaxed);
  } else {
    retained_.fetch_sub(csize, std::memory_order_relaxed);
    int saved = errno;
    madvise(reinterpret_cast<void*>(c.base + uintptr_t{index} * csize), csize, MADV_DONTNEED);
    errno = saved;
    madvised_.fetch_add(1, std::memory_order_relaxed);
    s.dirty.store(0, std::memory_order_relaxed);
  }
  push(c, s.tier.load(std::memory_order_relaxed), index);
}

void Arena::flush(SlotCache* cache) {
  for (unsigned cls = 0; cls < kNumClasses; ++cls) {
    while (cache->count[cls]) release(cls, cache->index[cls][--cache->count[cls]]);
  }
  cache->bytes = 0;
}

Slot* Arena::locate(const void* p, unsigned* cls_out, uint32_t* index_out) const {
  uintptr_t off = reinterpret_cast<uintptr_t>(p) - base_;
  if (off >= span_) return nullptr;
  auto cls = static_cast<unsigned>(off >> kRegionShift);
  const Class& c = classes_[cls];
  uintptr_t in = off & ((uintptr_t{1} << kRegionShift) - 1);
  auto index = static_cast<uint32_t>(in / class_size(cls));
  if (index >= c.capacity || index >= c.high_water.load(std::memory_order_acquire)) return nullptr;
  *cls_out = cls;
  *index_out = index;
  return &c.records[index];
}

uint64_t Arena::metadata_bytes() const {
  uint64_t total = 0;
  for (const Class& c : classes_) {
    uint64_t used = uint64_t{c.high_water.load(std::memory_order_relaxed)} * sizeof(Slot);
    total += (used + kPageSize - 1) & ~(kPageSize - 1);
  }
  return total;
}

}  // namespace sentinel
