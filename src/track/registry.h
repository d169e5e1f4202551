// The registry of tracked objects: the object log (one sentinel_object per tracked allocation, kept
// for the dump) and a table of objects that live outside the arena (CUDA pinned host memory). Arena
// objects are found through their slot; lookups never lock and are async-signal-safe.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "sentinel/format.h"

namespace sentinel {

inline constexpr uint32_t kNoLogIndex = UINT32_MAX;

class ObjectLog {
 public:
  // Maps room for `capacity` entries (lazily backed). False when the kernel refuses.
  bool init(uint64_t capacity);
  // Appends an entry; returns its index, or kNoLogIndex when the log is full (counted in dropped()).
  uint32_t append(const sentinel_object& o);
  // Reserves up to `want` consecutive entries for one thread's own use (fewer at the end of the log);
  // returns the first index and sets *got, or returns kNoLogIndex when the log is full. Entries a
  // thread reserved but never used stay zero and are never sequenced (the dump skips them).
  uint32_t reserve(uint32_t want, uint32_t* got);
  void count_dropped() { dropped_.fetch_add(1, std::memory_order_relaxed); }
  sentinel_object* at(uint32_t i) { return &entries_[i]; }
  const sentinel_object* at(uint32_t i) const { return &entries_[i]; }
  // Entries reserved so far (used or not); sequenced objects are found through the SeqMap.
  uint64_t size() const {
    uint64_t n = next_.load(std::memory_order_acquire);
    return n < capacity_ ? n : capacity_;
  }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint64_t touched_bytes() const { return size() * sizeof(sentinel_object); }
  // Called by Sentinel's own thread: backs the log a few MiB ahead of the entries reserved so far
  // (MADV_POPULATE_WRITE, which leaves contents alone), so that the allocating threads do not take
  // the page faults — zeroing one 2 MiB huge page of log costs the thread that touches it first
  // ~100 µs. Does nothing where the kernel lacks it (before 5.14).
  void populate_ahead();

 private:
  static constexpr uint64_t kPopulateAheadBytes = 4u << 20;
  sentinel_object* entries_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t populated_bytes_ = 0;  // Sentinel's thread only
  bool populate_failed_ = false;
  std::atomic<uint64_t> next_{0};
  std::atomic<uint64_t> dropped_{0};
};

// Objects outside the arena, keyed by address: open addressing, lock-free insert and erase.
class ExternalTable {
 public:
  static constexpr uint32_t kCapacity = 1u << 14;
  bool init();
  bool insert(uintptr_t address, uint32_t log_index);
  // Removes the entry; returns its log index, or kNoLogIndex when the address is unknown.
  uint32_t erase(uintptr_t address);
  uint32_t find(uintptr_t address) const;
  uint64_t bytes() const { return kCapacity * sizeof(Entry); }

 private:
  struct Entry {
    std::atomic<uintptr_t> key;  // 0 empty, 1 tombstone
    std::atomic<uint32_t> log_index;
    uint32_t pad;
  };
  Entry* entries_ = nullptr;
};

}  // namespace sentinel
