// The recursion guard: non-zero while this thread runs Sentinel's own code. Allocations made then (by
// libunwind, libnuma, the dynamic loader, Sentinel's own threads...) go straight to libc. Thread-local
// with the initial-exec model (no allocation on first use) and nesting (Guard saves and restores).
#pragma once

namespace sentinel {

extern constinit thread_local int t_guard __attribute__((tls_model("initial-exec")));

class Guard {
 public:
  Guard() : saved_(t_guard) { t_guard = 1; }
  ~Guard() { t_guard = saved_; }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

 private:
  int saved_;
};

}  // namespace sentinel
