// Explicit step marks (sentinel_step()), in sequence order: the sequencer appends, the dump writer reads.
#pragma once
#include <atomic>
#include <cstdint>

namespace sentinel {

// Explicit step marks (sentinel_step()), append-only.
class MarkLog {
 public:
  static constexpr uint64_t kCapacity = 1u << 20;
  struct Mark {
    uint64_t seq;
    uint64_t ns;
  };
  bool init();
  void add(uint64_t seq, uint64_t ns);
  uint64_t size() const {
    uint64_t n = next_.load(std::memory_order_acquire);
    return n < kCapacity ? n : kCapacity;
  }
  const Mark& at(uint64_t i) const { return marks_[i]; }
  uint64_t touched_bytes() const { return size() * sizeof(Mark); }

 private:
  Mark* marks_ = nullptr;
  std::atomic<uint64_t> next_{0};
};

}  // namespace sentinel
