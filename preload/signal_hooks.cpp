// sigaction() and signal() for SIGSEGV go through Sentinel while its profiling handler is installed,
// so that the program's handler is recorded, not installed over ours (src/profile/signals.h). The
// signals that end jobs and the crash signals go through it while its handler stands in for their
// default action (src/runtime/exit_signals.h). Every other signal goes straight to libc.
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>

#include <atomic>

#include "next_symbol.h"
#include "profile/signals.h"
#include "runtime/exit_signals.h"
#include "runtime/runtime.h"

namespace rt = sentinel::rt;

#define SENTINEL_EXPORT extern "C" __attribute__((visibility("default")))

namespace {
using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
using SignalFn = sighandler_t (*)(int, sighandler_t);
std::atomic<SigactionFn> g_next_sigaction{nullptr};
std::atomic<SignalFn> g_next_signal{nullptr};

SigactionFn next_sigaction() {
  return sentinel::preload::next_symbol(g_next_sigaction, "sigaction");
}
}  // namespace

// Called by the constructor: the core installs its handler through the real sigaction.
extern "C" __attribute__((visibility("hidden"))) void sentinel_resolve_signal_functions() {
  sentinel::sig::set_real_sigaction(next_sigaction());
}

SENTINEL_EXPORT int sigaction(int signum, const struct sigaction* act, struct sigaction* old) {
  if (signum == SIGSEGV && sentinel::sig::installed()) return sentinel::sig::app_sigaction(signum, act, old);
  if (sentinel::exit_sig::is_exit_signal(signum) && sentinel::exit_sig::installed())
    return sentinel::exit_sig::app_sigaction(signum, act, old);
  SigactionFn f = next_sigaction();
  if (!f) {
    errno = ENOSYS;
    return -1;
  }
  return f(signum, act, old);
}

SENTINEL_EXPORT sighandler_t signal(int signum, sighandler_t handler) {
  const bool segv = signum == SIGSEGV && sentinel::sig::installed();
  if (segv || (sentinel::exit_sig::is_exit_signal(signum) && sentinel::exit_sig::installed())) {
    // glibc's signal(): BSD semantics, SA_RESTART, the signal blocked while its handler runs.
    struct sigaction act, old;
    memset(&act, 0, sizeof(act));
    act.sa_handler = handler;
    sigemptyset(&act.sa_mask);
    sigaddset(&act.sa_mask, signum);
    act.sa_flags = SA_RESTART;
    if ((segv ? sentinel::sig::app_sigaction(signum, &act, &old)
              : sentinel::exit_sig::app_sigaction(signum, &act, &old)) != 0)
      return SIG_ERR;
    if (!(old.sa_flags & SA_SIGINFO)) return old.sa_handler;
    sighandler_t previous;
    static_assert(sizeof(previous) == sizeof(old.sa_sigaction));
    memcpy(&previous, &old.sa_sigaction, sizeof(previous));
    return previous;
  }
  SignalFn f = sentinel::preload::next_symbol(g_next_signal, "signal");
  return f ? f(signum, handler) : SIG_ERR;
}
