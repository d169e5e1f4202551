// Time stamps for object births and deaths. clock_gettime() costs ~30 ns here even through the vDSO,
// which would be the largest single cost of a tracked allocation; where the kernel itself trusts the
// TSC (clocksource "tsc": invariant and synchronized), Sentinel stamps raw TSC ticks and converts them
// to CLOCK_MONOTONIC nanoseconds when it writes the dump, from two (ticks, ns) pairs spanning the run.
#pragma once
#include <atomic>
#include <cstdint>
#include <ctime>

namespace sentinel {

inline uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}
inline uint64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

namespace detail {
extern bool g_use_tsc;
extern std::atomic<uint64_t> g_coarse_ticks;
}  // namespace detail

// A time stamp: TSC ticks where usable, else monotonic nanoseconds. Convert with TickClock.
inline uint64_t now_ticks() {
#if defined(__x86_64__)
  if (detail::g_use_tsc) return __builtin_ia32_rdtsc();
#endif
  return monotonic_ns();
}

// A time stamp as of Sentinel's thread's last wake-up (it publishes now_ticks() every 0.1-0.4 ms while
// allocations arrive): reading the TSC costs ~20 ns in a VM, more than glibc's whole malloc+free, so
// the tracked path stamps events with this while that thread sequences them. Never ahead of
// now_ticks(); 0 before the thread first ran and while it sleeps until the next event (nobody
// publishes then): the tracked path then reads now_ticks() itself (stamp_ticks()).
inline uint64_t coarse_ticks() {
  return detail::g_coarse_ticks.load(std::memory_order_relaxed);
}
inline void publish_coarse_ticks() {
  detail::g_coarse_ticks.store(now_ticks(), std::memory_order_relaxed);
}
inline void stop_coarse_ticks() {
  detail::g_coarse_ticks.store(0, std::memory_order_relaxed);
}
// The coarse clock where it is published, else the exact one.
inline uint64_t stamp_ticks() {
  const uint64_t t = coarse_ticks();
  return t ? t : now_ticks();
}

// Converts ticks to monotonic nanoseconds from a reference pair taken at start and one taken now.
class TickClock {
 public:
  // Decides whether ticks are TSC (reads the kernel's clocksource) and records the start pair.
  void start();
  // Records the end pair; call before converting.
  void finish();
  uint64_t to_ns(uint64_t ticks) const;
  // A duration in ticks as nanoseconds (after finish()).
  uint64_t ticks_to_duration_ns(uint64_t ticks) const;
  // The same while the process runs, from the start pair and one taken now.
  uint64_t ticks_to_duration_ns_now(uint64_t ticks) const;
  bool uses_tsc() const { return detail::g_use_tsc; }

 private:
  uint64_t t0_ = 0, ns0_ = 0, t1_ = 0, ns1_ = 0;
};

}  // namespace sentinel
