#include "tier/topology.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <memkind.h>
#include <numa.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "base/log.h"

namespace sentinel {

namespace {

// Reads a small text file into buf (NUL-terminated); false when unreadable.
bool read_small_file(const char* path, char* buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  if (n < 0) return false;
  buf[n] = '\0';
  return true;
}

int32_t read_int_file(const char* path) {
  char buf[32];
  if (!read_small_file(path, buf, sizeof(buf))) return -1;
  int32_t v = 0;
  bool any = false;
  for (const char* p = buf; *p >= '0' && *p <= '9'; ++p, any = true) v = v * 10 + (*p - '0');
  return any ? v : -1;
}

// A node is DAX KMEM when a dax device bound to the kmem driver targets it.
bool node_is_dax_kmem(int node) {
  char path[128];
  for (int region = 0; region < 8; ++region) {
    for (int dev = 0; dev < 8; ++dev) {
      snprintf(path, sizeof(path), "/sys/bus/dax/drivers/kmem/dax%d.%d/target_node", region, dev);
      if (read_int_file(path) == node) return true;
    }
  }
  return false;
}

// memkind's own verdict on whether DAX KMEM memory exists (0 == available).
int memkind_dax_kmem_available() {
  void* h = dlopen("libmemkind.so.0", RTLD_LAZY | RTLD_LOCAL);
  if (!h) return -1;
  using CheckFn = int (*)(memkind_t);
  auto check = reinterpret_cast<CheckFn>(dlsym(h, "memkind_check_available"));
  auto kind = static_cast<memkind_t*>(dlsym(h, "MEMKIND_DAX_KMEM"));
  return check && kind ? check(*kind) : -1;
}

// A number at the start of buf ("max" and anything else: UINT64_MAX, no limit).
uint64_t read_u64_file(const char* path) {
  char buf[64];
  if (!read_small_file(path, buf, sizeof(buf)) || buf[0] < '0' || buf[0] > '9') return UINT64_MAX;
  uint64_t v = 0;
  for (const char* p = buf; *p >= '0' && *p <= '9'; ++p) v = v * 10 + static_cast<uint64_t>(*p - '0');
  return v;
}

// The memory the cgroup of this process and its ancestors still allow: min over the levels of
// limit - usage. cgroup v2 (memory.max, memory.current) and v1 (memory.limit_in_bytes,
// memory.usage_in_bytes). UINT64_MAX when no level has a limit or /proc/self/cgroup is unreadable.
void detect_memory_limit(Topology* t) {
  char groups[4096];
  if (!read_small_file("/proc/self/cgroup", groups, sizeof(groups))) return;
  for (char* line = groups; *line;) {
    char* end = strchr(line, '\n');
    if (end) *end = '\0';
    // "0::/path" (v2) or "N:memory:/path" (v1)
    const char* c1 = strchr(line, ':');
    const char* c2 = c1 ? strchr(c1 + 1, ':') : nullptr;
    bool v2 = c1 && c2 == c1 + 1 && line[0] == '0';
    bool v1 = c1 && c2 && static_cast<size_t>(c2 - c1 - 1) == 6 && strncmp(c1 + 1, "memory", 6) == 0;
    if (v1 || v2) {
      char dir[1024];
      snprintf(dir, sizeof(dir), "%s%s", v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory", c2 + 1);
      for (;;) {  // this cgroup, then each parent up to the root
        char path[1100];
        snprintf(path, sizeof(path), "%s/%s", dir, v2 ? "memory.max" : "memory.limit_in_bytes");
        uint64_t limit = read_u64_file(path);
        if (limit != UINT64_MAX && (v2 || limit < (uint64_t{1} << 62))) {  // v1 writes a huge number for none
          snprintf(path, sizeof(path), "%s/%s", dir, v2 ? "memory.current" : "memory.usage_in_bytes");
          uint64_t used = read_u64_file(path);
          uint64_t room = used == UINT64_MAX ? limit : used >= limit ? 0 : limit - used;
          if (room < t->memory_limit_room) {
            t->memory_limit_room = room;
            t->memory_limit = limit;
          }
        }
        char* slash = strrchr(dir, '/');
        if (!slash || strlen(dir) <= strlen(v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory")) break;
        *slash = '\0';
      }
    }
    if (!end) break;
    line = end + 1;
  }
}

}  // namespace

void detect_topology(Topology* t) {
  *t = Topology{};
  detect_memory_limit(t);
  t->numa_balancing = read_int_file("/proc/sys/kernel/numa_balancing");
  if (numa_available() < 0) return;
  t->numa_available = true;
  int max_node = numa_max_node();
  struct bitmask* cpus = numa_allocate_cpumask();
  bool any_cpuless = false;
  for (int n = 0; n <= max_node && t->node_count < Topology::kMaxNodes; ++n) {
    if (!numa_bitmask_isbitset(numa_all_nodes_ptr, static_cast<unsigned>(n))) continue;
    NodeInfo& info = t->nodes[t->node_count++];
    info.id = n;
    long long free_bytes = 0;
    long long total = numa_node_size64(n, &free_bytes);
    info.total_bytes = total > 0 ? static_cast<uint64_t>(total) : 0;
    info.free_bytes = free_bytes > 0 ? static_cast<uint64_t>(free_bytes) : 0;
    if (cpus && numa_node_to_cpus(n, cpus) == 0) info.cpu_count = numa_bitmask_weight(cpus);
    if (info.cpu_count == 0) {
      info.flags |= kNodeCpuLess;
      any_cpuless = true;
      if (node_is_dax_kmem(n)) info.flags |= kNodeDaxKmem;
    }
  }
  if (cpus) numa_free_cpumask(cpus);
  if (any_cpuless && memkind_dax_kmem_available() == 0) {
    t->memkind_dax_kmem = true;
    LineBuf b;
    log_line(LogLevel::debug, b.str("memkind reports DAX KMEM memory"));
  }
  for (uint32_t i = 0; i < t->node_count && i < Topology::kMaxDistanceNodes; ++i)
    for (uint32_t j = 0; j < t->node_count && j < Topology::kMaxDistanceNodes; ++j) {
      int d = numa_distance(t->nodes[i].id, t->nodes[j].id);
      t->distance[i][j] = static_cast<uint8_t>(d > 0 && d < 256 ? d : 0);
    }
  int cpu = sched_getcpu();
  int home = cpu >= 0 ? numa_node_of_cpu(cpu) : -1;
  for (uint32_t i = 0; i < t->node_count; ++i) {
    const NodeInfo& n = t->nodes[i];
    if (n.cpu_count && (t->fast_node < 0 || n.id == home)) t->fast_node = n.id;
  }
  TierNodes tn = choose_tier_nodes(*t, -1, -1);
  t->slow_node = tn.slow;
}

TierNodes choose_tier_nodes(const Topology& t, int32_t fast_override, int32_t slow_override) {
  TierNodes r;
  auto index_of = [&](int32_t id) -> int {
    for (uint32_t i = 0; i < t.node_count; ++i)
      if (t.nodes[i].id == id) return static_cast<int>(i);
    return -1;
  };
  if (fast_override >= 0) {
    if (index_of(fast_override) < 0)
      r.problem = "SENTINEL_FAST_NODE names a node that does not exist";
    else
      r.fast = fast_override;
  }
  if (r.fast < 0 && !r.problem) r.fast = t.fast_node;
  if (r.fast < 0 && !r.problem) {
    for (uint32_t i = 0; i < t.node_count && r.fast < 0; ++i)
      if (t.nodes[i].cpu_count) r.fast = t.nodes[i].id;
  }
  if (slow_override >= 0) {
    if (index_of(slow_override) < 0)
      r.problem = "SENTINEL_SLOW_NODE names a node that does not exist";
    else if (slow_override == r.fast)
      r.problem = "SENTINEL_SLOW_NODE is the fast node";
    else
      r.slow = slow_override;
    return r;
  }
  int fi = index_of(r.fast);
  int best = -1;
  for (uint32_t i = 0; i < t.node_count; ++i) {
    const NodeInfo& n = t.nodes[i];
    if (!(n.flags & kNodeCpuLess) || n.id == r.fast) continue;
    if (best < 0) {
      best = static_cast<int>(i);
      continue;
    }
    const NodeInfo& b = t.nodes[best];
    bool dax = n.flags & kNodeDaxKmem, bdax = b.flags & kNodeDaxKmem;
    auto dist = [&](int j) {
      return fi >= 0 && fi < static_cast<int>(Topology::kMaxDistanceNodes) &&
                     j < static_cast<int>(Topology::kMaxDistanceNodes)
                 ? t.distance[fi][j]
                 : 0;
    };
    if (dax != bdax ? dax : dist(static_cast<int>(i)) < dist(best)) best = static_cast<int>(i);
  }
  if (best >= 0) r.slow = t.nodes[best].id;
  return r;
}

}  // namespace sentinel
