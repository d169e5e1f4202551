#include "topology.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <memkind.h>
#include <numa.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "log.h"

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

}  // namespace

void detect_topology(Topology* t) {
  *t = Topology{};
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
    LineBuf b;
    log_line(LogLevel::debug, b.str("memkind reports DAX KMEM memory"));
  }
  // Fast: the node of the CPU we start on, else the first node with CPUs. Slow: a CPU-less node,
  // DAX KMEM first.
  int cpu = sched_getcpu();
  int home = cpu >= 0 ? numa_node_of_cpu(cpu) : -1;
  for (uint32_t i = 0; i < t->node_count; ++i) {
    const NodeInfo& n = t->nodes[i];
    if (n.cpu_count && (t->fast_node < 0 || n.id == home)) t->fast_node = n.id;
    if ((n.flags & kNodeCpuLess) && (t->slow_node < 0 || (n.flags & kNodeDaxKmem))) t->slow_node = n.id;
  }
}

}  // namespace sentinel
