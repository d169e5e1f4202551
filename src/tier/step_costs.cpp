#include "tier/step_costs.h"

#include <atomic>
#include <cstddef>

#include "base/clock.h"
#include "base/numa_ops.h"
#include "base/parse.h"
#include "base/vm_region.h"

namespace sentinel {

namespace {

constexpr size_t kBufferBytes = size_t{4} << 20;
constexpr uint64_t kBufferKib = kBufferBytes / 1024;
constexpr size_t kPage = 4096;
constexpr int kPasses = 3;

// Where the sums go, so that no read pass can be optimized away.
std::atomic<uint64_t> g_sink{0};

// A buffer whose pages are on `node`: bound before the first touch, then written once (the kernel
// places a page at its first touch), then asked where its first, middle and last pages are.
uint64_t* placed_buffer(int node, const char** why) {
  void* p = vm_map_lazy(kBufferBytes);
  if (!p) {
    *why = "cannot map a 4 MiB buffer";
    return nullptr;
  }
  auto* w = static_cast<uint64_t*>(p);
  if (numa::prefer_node(p, kBufferBytes, node) != 0) {
    *why = "cannot bind a buffer to a node";
    vm_unmap(p, kBufferBytes);
    return nullptr;
  }
  for (size_t i = 0; i < kBufferBytes / sizeof(uint64_t); ++i) w[i] = i;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  for (uintptr_t page : {a, a + kBufferBytes / 2, a + kBufferBytes - kPage}) {
    if (numa::node_of_page(page) != node) {  // MPOL_PREFERRED falls back when the node is full
      *why = "a buffer's pages are not on the node asked for (is it full?)";
      vm_unmap(p, kBufferBytes);
      return nullptr;
    }
  }
  return w;
}

// Evicts the buffer from the CPU caches, so that a pass reads memory: a 4 MiB buffer fits in many a
// last-level cache, where both nodes' buffers would read alike. x86 only (elsewhere the passes may
// read from the cache, and the penalty comes out low).
void evict(const uint64_t* w) {
#if defined(__x86_64__) || defined(__i386__)
  const char* p = reinterpret_cast<const char*>(w);
  for (size_t i = 0; i < kBufferBytes; i += 64) __builtin_ia32_clflush(p + i);
  __builtin_ia32_mfence();
#else
  (void)w;
#endif
}

// The best of kPasses whole read passes over the buffer, each from memory, in ns (at least 1).
uint64_t best_read_ns(const uint64_t* w) {
  uint64_t best = UINT64_MAX;
  for (int k = 0; k < kPasses; ++k) {
    evict(w);
    const uint64_t t0 = monotonic_ns();
    uint64_t sum = 0;
    for (size_t i = 0; i < kBufferBytes / sizeof(uint64_t); ++i) sum += w[i];
    const uint64_t t = monotonic_ns() - t0;
    g_sink.fetch_add(sum, std::memory_order_relaxed);
    if (t < best) best = t;
  }
  return best ? best : 1;
}

}  // namespace

bool measure_slow_ns_per_kib(int fast_node, int slow_node, uint32_t* ns_per_kib, const char** why) {
  uint64_t* fast = placed_buffer(fast_node, why);
  if (!fast) return false;
  uint64_t* slow = placed_buffer(slow_node, why);
  if (!slow) {
    vm_unmap(fast, kBufferBytes);
    return false;
  }
  const uint64_t t_fast = best_read_ns(fast);
  const uint64_t t_slow = best_read_ns(slow);
  vm_unmap(fast, kBufferBytes);
  vm_unmap(slow, kBufferBytes);
  const uint64_t extra = t_slow > t_fast ? t_slow - t_fast : 0;  // a slow node as fast as the other: free
  const uint64_t per_kib = (extra + kBufferKib / 2) / kBufferKib;
  *ns_per_kib = static_cast<uint32_t>(per_kib < kMaxStepCostNsPerKib ? per_kib : kMaxStepCostNsPerKib);
  return true;
}

uint32_t move_ns_per_kib_of(uint64_t bytes_per_s) {
  if (!bytes_per_s) return 0;
  const uint64_t ns = (uint64_t{1024} * 1000000000ull + bytes_per_s / 2) / bytes_per_s;
  return static_cast<uint32_t>(ns < kMaxStepCostNsPerKib ? ns : kMaxStepCostNsPerKib);
}

uint32_t training_move_ns_per_kib(uint32_t migrator_ns_per_kib, uint32_t slow_ns_per_kib, uint32_t cpus) {
  if (cpus < 2 || !slow_ns_per_kib) return migrator_ns_per_kib;
  return slow_ns_per_kib < migrator_ns_per_kib ? slow_ns_per_kib : migrator_ns_per_kib;
}

}  // namespace sentinel
