// A fixed-capacity open-addressing hash table in mmap'd memory, for the runtime's offline-style passes
// (classification) that run inside the host process where malloc may not be used. Single-threaded.
#pragma once
#include <cstddef>
#include <cstdint>

#include "base/hash.h"
#include "base/vm_region.h"

namespace sentinel {

template <typename Value>
class ScratchTable {
 public:
  ScratchTable() = default;
  ScratchTable(const ScratchTable&) = delete;
  ScratchTable& operator=(const ScratchTable&) = delete;
  ~ScratchTable() { vm_unmap(slots_, bytes_); }

  // Room for at least n keys at a load factor of 1/2.
  bool init(uint64_t n) {
    capacity_ = 16;
    while (capacity_ < 2 * n) capacity_ *= 2;
    bytes_ = capacity_ * sizeof(Slot);
    slots_ = static_cast<Slot*>(vm_map_lazy(bytes_));
    return slots_ != nullptr;
  }

  // The value for key (created zeroed if new); null when full. Keys must not be 0.
  Value* find_or_add(uint64_t key, bool* added = nullptr) {
    uint64_t h = mix64(key);
    for (uint64_t probe = 0; probe < capacity_; ++probe) {
      Slot& s = slots_[(h + probe) & (capacity_ - 1)];
      if (s.key == key) {
        if (added) *added = false;
        return &s.value;
      }
      if (s.key == 0) {
        s.key = key;
        ++size_;
        if (added) *added = true;
        return &s.value;
      }
    }
    return nullptr;
  }
  Value* find(uint64_t key) {
    uint64_t h = mix64(key);
    for (uint64_t probe = 0; probe < capacity_; ++probe) {
      Slot& s = slots_[(h + probe) & (capacity_ - 1)];
      if (s.key == key) return &s.value;
      if (s.key == 0) return nullptr;
    }
    return nullptr;
  }
  uint64_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key;
    Value value;
  };
  Slot* slots_ = nullptr;
  uint64_t capacity_ = 0, bytes_ = 0, size_ = 0;
};

// Combines several fields into one non-zero table key.
inline uint64_t combine_key(uint64_t a, uint64_t b) {
  return (mix64(a) * 31 + mix64(b + 0x9E3779B97F4A7C15ULL)) | 1;
}

}  // namespace sentinel
