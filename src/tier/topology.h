// The NUMA topology at start: nodes, their memory and CPUs, which are CPU-less (the slow-tier
// candidates: Optane PMem or CXL memory exposed as a memory-only node) and which are DAX KMEM nodes.
#pragma once
#include <cstdint>

namespace sentinel {

inline constexpr uint32_t kNodeDaxKmem = 1u << 0;
inline constexpr uint32_t kNodeCpuLess = 1u << 1;

struct NodeInfo {
  int32_t id;
  uint32_t cpu_count;
  uint64_t total_bytes;
  uint64_t free_bytes;
  uint32_t flags;
};

struct Topology {
  static constexpr uint32_t kMaxNodes = 64;
  bool numa_available = false;
  int32_t numa_balancing = -1;  // /proc/sys/kernel/numa_balancing, -1 unknown
  uint32_t node_count = 0;
  NodeInfo nodes[kMaxNodes] = {};
  int32_t fast_node = -1;
  int32_t slow_node = -1;
};

// Fills *t. Uses libnuma; memkind (dlopen) only when a CPU-less node exists. Allocates through
// whatever malloc is current: call it inside the recursion guard.
void detect_topology(Topology* t);

}  // namespace sentinel
