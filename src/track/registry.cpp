#include "track/registry.h"

#include <sys/mman.h>

#include <cerrno>

#include "base/hash.h"
#include "base/vm_region.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace sentinel {

bool ObjectLog::init(uint64_t capacity) {
  if (capacity >= kNoLogIndex) capacity = kNoLogIndex - 1;
  while (capacity) {
    entries_ = static_cast<sentinel_object*>(vm_map_lazy(capacity * sizeof(sentinel_object)));
    if (entries_) break;
    capacity /= 2;  // strict overcommit: settle for less history rather than none
  }
  capacity_ = capacity;
  vm_prefer_huge_pages(entries_, capacity * sizeof(sentinel_object));
  return capacity == 0 || entries_ != nullptr;
}

uint32_t ObjectLog::append(const sentinel_object& o) {
  uint64_t i = next_.fetch_add(1, std::memory_order_acq_rel);
  if (i >= capacity_) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return kNoLogIndex;
  }
  entries_[i] = o;
  return static_cast<uint32_t>(i);
}

uint32_t ObjectLog::reserve(uint32_t want, uint32_t* got) {
  uint64_t i = next_.fetch_add(want, std::memory_order_acq_rel);
  if (i >= capacity_) {
    *got = 0;
    return kNoLogIndex;
  }
  *got = static_cast<uint32_t>(capacity_ - i < want ? capacity_ - i : want);
  return static_cast<uint32_t>(i);
}

void ObjectLog::populate_ahead() {
  if (populate_failed_ || !entries_) return;
  constexpr uint64_t kHuge = 2u << 20;
  uint64_t limit = capacity_ * sizeof(sentinel_object);
  uint64_t want = (touched_bytes() + kPopulateAheadBytes + kHuge - 1) & ~(kHuge - 1);
  if (want > limit) want = limit & ~uint64_t{4095};
  if (want <= populated_bytes_) return;
  int saved = errno;
  char* base = reinterpret_cast<char*>(entries_);
  // ENOMEM/EFAULT: memory is short; leave the faults to the writers rather than insist.
  if (madvise(base + populated_bytes_, want - populated_bytes_, MADV_POPULATE_WRITE) != 0)
    populate_failed_ = true;
  else
    populated_bytes_ = want;
  errno = saved;
}

namespace {
inline uint32_t hash_address(uintptr_t a) {
  return static_cast<uint32_t>(mix64(a >> 12));
}
}  // namespace

bool ExternalTable::init() {
  entries_ = static_cast<Entry*>(vm_map_lazy(kCapacity * sizeof(Entry)));
  return entries_ != nullptr;
}

bool ExternalTable::insert(uintptr_t address, uint32_t log_index) {
  if (!entries_ || address < 2) return false;
  uint32_t h = hash_address(address);
  for (uint32_t probe = 0; probe < kCapacity; ++probe) {
    Entry& e = entries_[(h + probe) & (kCapacity - 1)];
    uintptr_t k = e.key.load(std::memory_order_acquire);
    if (k == 0 || k == 1) {
      if (e.key.compare_exchange_strong(k, address, std::memory_order_acq_rel)) {
        e.log_index.store(log_index, std::memory_order_release);
        return true;
      }
    }
  }
  return false;
}

uint32_t ExternalTable::erase(uintptr_t address) {
  if (!entries_ || address < 2) return kNoLogIndex;
  uint32_t h = hash_address(address);
  for (uint32_t probe = 0; probe < kCapacity; ++probe) {
    Entry& e = entries_[(h + probe) & (kCapacity - 1)];
    uintptr_t k = e.key.load(std::memory_order_acquire);
    if (k == 0) return kNoLogIndex;
    if (k == address) {
      uint32_t li = e.log_index.load(std::memory_order_acquire);
      if (e.key.compare_exchange_strong(k, 1, std::memory_order_acq_rel)) return li;
      return kNoLogIndex;
    }
  }
  return kNoLogIndex;
}

uint32_t ExternalTable::find(uintptr_t address) const {
  if (!entries_ || address < 2) return kNoLogIndex;
  uint32_t h = hash_address(address);
  for (uint32_t probe = 0; probe < kCapacity; ++probe) {
    const Entry& e = entries_[(h + probe) & (kCapacity - 1)];
    uintptr_t k = e.key.load(std::memory_order_acquire);
    if (k == 0) return kNoLogIndex;
    if (k == address) return e.log_index.load(std::memory_order_acquire);
  }
  return kNoLogIndex;
}

}  // namespace sentinel
