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
  // distance[i][j] between nodes[i] and nodes[j] (libnuma; 10 local), 0 when unknown.
  static constexpr uint32_t kMaxDistanceNodes = 8;
  static constexpr uint32_t kMaxNodes = 64;
  bool numa_available = false;
  int32_t numa_balancing = -1;  // /proc/sys/kernel/numa_balancing, -1 unknown
  uint32_t node_count = 0;
  NodeInfo nodes[kMaxNodes] = {};
  uint8_t distance[kMaxDistanceNodes][kMaxDistanceNodes] = {};
  int32_t fast_node = -1;
  int32_t slow_node = -1;
  bool memkind_dax_kmem = false;  // memkind reports MEMKIND_DAX_KMEM memory
  // The memory cgroup's limit on this process (the tightest of its cgroup and their ancestors, v2 or
  // v1) and what it still allows at start; UINT64_MAX: none. Nodes a cpuset does not allow are not in
  // `nodes` at all (libnuma's numa_all_nodes_ptr is the process's allowed memory nodes).
  uint64_t memory_limit = UINT64_MAX;
  uint64_t memory_limit_room = UINT64_MAX;

  const NodeInfo* node(int32_t id) const {
    for (uint32_t i = 0; i < node_count; ++i)
      if (nodes[i].id == id) return &nodes[i];
    return nullptr;
  }
};

// The fast and the slow node for tiering, from the topology and SENTINEL_FAST_NODE/SENTINEL_SLOW_NODE
// (-1: choose). Fast: the node of the CPUs the process starts on (else the first node with CPUs).
// Slow: the nearest CPU-less node by distance from the fast one, DAX KMEM nodes first. Either may be
// -1 (no such node): tiering then plans as a dry run. *problem names a bad override (or is null).
struct TierNodes {
  int32_t fast = -1;
  int32_t slow = -1;
  const char* problem = nullptr;
};
TierNodes choose_tier_nodes(const Topology& t, int32_t fast_override, int32_t slow_override);

// Fills *t. Uses libnuma; memkind (dlopen) only when a CPU-less node exists. Allocates through
// whatever malloc is current: call it inside the recursion guard.
void detect_topology(Topology* t);

}  // namespace sentinel
