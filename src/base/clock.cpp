#include "base/clock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

namespace sentinel {

namespace detail {
bool g_use_tsc = false;
constinit std::atomic<uint64_t> g_coarse_ticks{0};
}  // namespace detail

namespace {
bool kernel_clocksource_is_tsc() {
  int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[32] = {};
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  return n >= 3 && strncmp(buf, "tsc", 3) == 0 && (buf[3] == '\n' || buf[3] == '\0');
}
}  // namespace

void TickClock::start() {
#if defined(__x86_64__)
  detail::g_use_tsc = kernel_clocksource_is_tsc();
#endif
  t0_ = now_ticks();
  ns0_ = monotonic_ns();
}

void TickClock::finish() {
  t1_ = now_ticks();
  ns1_ = monotonic_ns();
}

uint64_t TickClock::to_ns(uint64_t ticks) const {
  if (!detail::g_use_tsc || ticks == 0) return ticks;
  if (t1_ <= t0_ || ns1_ <= ns0_) return ns0_;
  // Ticks may precede t0 slightly (objects born during start-up): extrapolate both ways.
  __int128 dt = static_cast<__int128>(ticks) - static_cast<__int128>(t0_);
  __int128 ns =
      static_cast<__int128>(ns0_) + dt * static_cast<__int128>(ns1_ - ns0_) / static_cast<__int128>(t1_ - t0_);
  return ns < 0 ? 0 : static_cast<uint64_t>(ns);
}

}  // namespace sentinel

namespace sentinel {
uint64_t TickClock::ticks_to_duration_ns_now(uint64_t ticks) const {
  if (!detail::g_use_tsc) return ticks;
  uint64_t t = now_ticks(), ns = monotonic_ns();
  if (t <= t0_ || ns <= ns0_) return 0;
  return static_cast<uint64_t>(static_cast<__int128>(ticks) * (ns - ns0_) / (t - t0_));
}

uint64_t TickClock::ticks_to_duration_ns(uint64_t ticks) const {
  if (!detail::g_use_tsc) return ticks;
  if (t1_ <= t0_ || ns1_ <= ns0_) return 0;
  return static_cast<uint64_t>(static_cast<__int128>(ticks) * (ns1_ - ns0_) / (t1_ - t0_));
}
}  // namespace sentinel
