#include "base/numa_ops.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "base/clock.h"

namespace sentinel::numa {

namespace {

constexpr size_t kPage = 4096;
// <numaif.h>'s values, spelled here so that nothing of libnuma is needed on these paths.
constexpr int kMpolPreferred = 1;
constexpr unsigned kMpolMfStrict = 1u << 0;
constexpr unsigned kMpolMfMove = 1u << 1;
constexpr int kMpolMfMoveAll = 1 << 1;  // move_pages flag MPOL_MF_MOVE: only pages of this process

FaultInjection g_faults;
int g_fast_node = -1;
std::atomic<uint64_t> g_move_calls{0};

// 1 + kMaxNode bits, as mbind wants them.
struct NodeMask {
  unsigned long bits[(kMaxNode + 1) / (8 * sizeof(unsigned long))] = {};
  explicit NodeMask(int node) {
    bits[node / (8 * sizeof(unsigned long))] = 1ul << (node % (8 * sizeof(unsigned long)));
  }
  static constexpr unsigned long max_node() { return kMaxNode + 1; }
};

long sys_mbind(void* addr, size_t len, int mode, const unsigned long* mask, unsigned long maxnode, unsigned flags) {
  return syscall(SYS_mbind, addr, len, mode, mask, maxnode, flags);
}

long sys_move_pages(unsigned long count, void** pages, const int* nodes, int* status, int flags) {
  return syscall(SYS_move_pages, 0, count, pages, nodes, status, flags);
}

// Decides, per move call, whether the injection refuses it.
bool injected_failure(int node) {
  if (g_faults.fast_full && node == g_fast_node) return true;
  if (!g_faults.move_fail_percent) return false;
  uint64_t n = g_move_calls.fetch_add(1, std::memory_order_relaxed);
  uint64_t x = (n + 1) * 0x9E3779B97F4A7C15ULL;
  x ^= x >> 31;
  return x % 100 < g_faults.move_fail_percent;
}

// move_delay_from: the calls before it are not delayed (a migrator that slows down in mid-run).
std::atomic<uint64_t> g_delay_calls{0};

// Whether this move call's injected pauses apply; counts the call.
bool delays_due() {
  if (!g_faults.move_delay_ms && g_faults.move_slow_x <= 1) return false;
  return !g_faults.move_delay_from ||
         g_delay_calls.fetch_add(1, std::memory_order_relaxed) + 1 >= g_faults.move_delay_from;
}

void sleep_ns(uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1000000000u), static_cast<long>(ns % 1000000000u)};
  nanosleep(&ts, nullptr);
}

void injected_delay(bool due) {
  if (due && g_faults.move_delay_ms) sleep_ns(uint64_t{g_faults.move_delay_ms} * 1000000u);
}

// move_slow_x: the call, then (x - 1) times as long again, as on a link x times slower.
struct InjectedSlowdown {
  uint64_t t0 = 0;
  explicit InjectedSlowdown(bool due) {
    if (due && g_faults.move_slow_x > 1) t0 = monotonic_ns();
  }
  ~InjectedSlowdown() {
    if (t0) sleep_ns((monotonic_ns() - t0) * (g_faults.move_slow_x - 1));
  }
  InjectedSlowdown(const InjectedSlowdown&) = delete;
  InjectedSlowdown& operator=(const InjectedSlowdown&) = delete;
};

}  // namespace

void set_fault_injection(const FaultInjection& f, int fast_node) {
  g_faults = f;
  g_fast_node = fast_node;
}

const FaultInjection& fault_injection() {
  return g_faults;
}

int prefer_node(void* addr, size_t len, int node) {
  if (node < 0 || node > kMaxNode) return -EINVAL;
  if (g_faults.fast_full && node == g_fast_node) return -ENOMEM;
  NodeMask m(node);
  int saved = errno;
  long rc = sys_mbind(addr, len, kMpolPreferred, m.bits, NodeMask::max_node(), 0);
  int err = rc == 0 ? 0 : -errno;
  errno = saved;
  return err;
}

bool push_preference(int node, SavedPolicy* saved) {
  *saved = SavedPolicy{};
  if (node < 0 || node > kMaxNode) return false;
  if (g_faults.fast_full && node == g_fast_node) return false;
  int err = errno;
  if (syscall(SYS_get_mempolicy, &saved->mode, saved->mask, sizeof(saved->mask) * 8, nullptr, 0) != 0) {
    errno = err;
    return false;
  }
  NodeMask m(node);
  bool ok = syscall(SYS_set_mempolicy, kMpolPreferred, m.bits, NodeMask::max_node()) == 0;
  saved->saved = ok;
  errno = err;
  return ok;
}

void pop_preference(const SavedPolicy& saved) {
  if (!saved.saved) return;
  int err = errno;
  // MPOL_DEFAULT (0) takes no mask.
  syscall(SYS_set_mempolicy, saved.mode, saved.mode ? saved.mask : nullptr, saved.mode ? sizeof(saved.mask) * 8 : 0);
  errno = err;
}

int query_nodes(uintptr_t* pages, size_t count, int* nodes) {
  int saved = errno;
  long rc = sys_move_pages(count, reinterpret_cast<void**>(pages), nullptr, nodes, 0);
  int err = rc < 0 ? -errno : 0;
  errno = saved;
  return err;
}

int node_of_page(uintptr_t page) {
  int node = -1;
  int err = query_nodes(&page, 1, &node);
  return err ? err : node;
}

MoveResult move_range(uintptr_t addr, size_t len, int node, uintptr_t* pages, int* status, int* nodes, size_t cap) {
  MoveResult r;
  uintptr_t start = addr & ~(kPage - 1);
  uintptr_t end = (addr + len + kPage - 1) & ~(kPage - 1);
  const bool due = delays_due();
  injected_delay(due);
  InjectedSlowdown slowdown(due);
  int saved = errno;
  for (uintptr_t p = start; p < end;) {
    size_t n = 0;
    for (; p < end && n < cap; p += kPage, ++n) {
      pages[n] = p;
      nodes[n] = node;
      status[n] = 0;
    }
    if (injected_failure(node)) {
      r.pages_failed += n;
      continue;
    }
    long rc = sys_move_pages(n, reinterpret_cast<void**>(pages), nodes, status, kMpolMfMoveAll);
    if (rc < 0) {
      r.error = -errno;
      r.pages_failed += n;
      continue;
    }
    for (size_t i = 0; i < n; ++i) {
      if (status[i] == node)
        ++r.pages_moved;
      else if (status[i] == -ENOENT || status[i] == -EFAULT)  // untouched, or the zero page (numa_ops.h)
        ++r.pages_absent;
      else
        ++r.pages_failed;
    }
  }
  errno = saved;
  return r;
}

MoveResult mbind_move_range(uintptr_t addr, size_t len, int node) {
  MoveResult r;
  uintptr_t start = addr & ~(kPage - 1);
  uintptr_t end = (addr + len + kPage - 1) & ~(kPage - 1);
  uint64_t pages = (end - start) / kPage;
  const bool due = delays_due();
  injected_delay(due);
  InjectedSlowdown slowdown(due);
  if (injected_failure(node)) {
    r.pages_failed = pages;
    return r;
  }
  NodeMask m(node);
  int saved = errno;
  // STRICT: the call says (EIO) when some page would not move; the range keeps the policy either way,
  // so pages touched later land on `node`.
  long rc = sys_mbind(reinterpret_cast<void*>(start), end - start, kMpolPreferred, m.bits, NodeMask::max_node(),
                      kMpolMfMove | kMpolMfStrict);
  if (rc == 0) {
    r.pages_moved = pages;
  } else if (errno == EIO) {
    // Some pages stayed (a transparent huge page that could not be split, a busy page); the call does
    // not say how many, so ask where a sample of them is and scale.
    constexpr uint64_t kSample = 64;
    uintptr_t sample[kSample];
    int where[kSample];
    uint64_t n = pages < kSample ? pages : kSample;
    for (uint64_t i = 0; i < n; ++i) sample[i] = start + (n > 1 ? i * (pages - 1) / (n - 1) : 0) * kPage;
    uint64_t there = 0, absent = 0;
    if (query_nodes(sample, n, where) == 0) {
      for (uint64_t i = 0; i < n; ++i) {
        if (where[i] == node)
          ++there;
        else if (where[i] == -ENOENT)
          ++absent;
      }
    }
    r.pages_moved = there * pages / n;
    r.pages_absent = absent * pages / n;
    r.pages_failed = pages - r.pages_moved - r.pages_absent;
    if (!r.pages_failed) r.pages_failed = 1;  // the kernel said some did not move
  } else {
    r.error = -errno;
    r.pages_failed = pages;
  }
  errno = saved;
  return r;
}

namespace {

bool refused(long r) {
  return r == -1 && (errno == EPERM || errno == ENOSYS);
}

}  // namespace

uint32_t probe_denied_calls() {
  const int saved_errno = errno;
  constexpr int kNoSuchMode = 77;  // beyond every MPOL_* mode: EINVAL where the call runs
  uint32_t denied = 0;
  alignas(4096) static char page[1];
  if (refused(syscall(SYS_mbind, page, 4096, kNoSuchMode, nullptr, 0, 0))) denied |= kDeniedMbind;
  if (refused(syscall(SYS_set_mempolicy, kNoSuchMode, nullptr, 0))) denied |= kDeniedSetMempolicy;
  int mode = 0;
  if (refused(syscall(SYS_get_mempolicy, &mode, nullptr, 0, nullptr, ~0ul))) denied |= kDeniedGetMempolicy;
  void* pages[1] = {page};
  int status[1] = {0};
  if (refused(syscall(SYS_move_pages, 0, 1, pages, nullptr, status, ~0))) denied |= kDeniedMovePages;
  if (refused(syscall(SYS_migrate_pages, -1, 0, nullptr, nullptr))) denied |= kDeniedMigratePages;
  errno = saved_errno;
  return denied;
}

void denied_call_names(uint32_t mask, char* out, size_t cap) {
  static const char* const kNames[] = {"mbind", "set_mempolicy", "get_mempolicy", "move_pages", "migrate_pages"};
  size_t n = 0;
  if (cap) out[0] = '\0';
  for (uint32_t i = 0; i < 5; ++i) {
    if (!(mask & (1u << i))) continue;
    const char* name = kNames[i];
    const size_t len = strlen(name) + (n ? 2 : 0);
    if (n + len + 1 > cap) break;
    if (n) out[n++] = ',', out[n++] = ' ';
    memcpy(out + n, name, strlen(name));
    n += strlen(name);
    out[n] = '\0';
  }
}

}  // namespace sentinel::numa
