#include "runtime/exit_signals.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "base/clock.h"
#include "base/log.h"
#include "base/own_pid.h"

namespace sentinel::exit_sig {

namespace {

constexpr int kEndSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGSEGV};
constexpr int kEndCount = sizeof(kEndSignals) / sizeof(kEndSignals[0]);
// The snapshot signal's slot comes after them.
constexpr int kCount = kEndCount + 1;

SigactionFn g_real = nullptr;
EndFn g_on_end = nullptr;
CrashFn g_on_crash = nullptr;
SnapshotFn g_on_snapshot = nullptr;
int g_snapshot_signum = 0;  // 0: none
std::atomic<bool> g_installed{false};
bool g_segv = false;  // SIGSEGV is this module's (the profiler's handler is not installed)
// The first exit signal taken: (monotonic ns << 6) | signum; 0 before any.
std::atomic<uint64_t> g_first{0};
// The same signal again within this time of the first is the same stop request delivered twice: GNU
// timeout sends its signal to the command and then to the command's whole process group, and Slurm
// and shells signal a job's process group too. Only a later one (a user's second Ctrl-C) cuts the
// write short.
constexpr uint64_t kRepeatNs = 1'000'000'000;
// Per signal: whether Sentinel's handler stands in for the default action now. The program's view is
// then SIG_DFL with the flags and mask it last asked for.
std::atomic<bool> g_standing_in[kCount];
struct sigaction g_view[kCount];

int signal_of(int i) {
  return i < kEndCount ? kEndSignals[i] : g_snapshot_signum;
}

int slot_of(int signum) {
  if (signum <= 0 || (signum == SIGSEGV && !g_segv)) return -1;
  for (int i = 0; i < kCount; ++i)
    if (signal_of(i) == signum) return i;
  return -1;
}

// The kernel's own report of a faulting instruction, which runs again when the handler returns.
bool is_fault(int signum, const siginfo_t* si) {
  return si && si->si_code > 0 && signum != SIGABRT && is_crash_signal(signum);
}

void restore_default(int signum) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  g_real(signum, &dfl, nullptr);
}

bool is_default(const struct sigaction& a) {
  return !(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_DFL;
}

// The default action, now: the process ends by the signal as it would have without Sentinel.
[[noreturn]] void end_by(int signum) {
  restore_default(signum);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signum);
  pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
  syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), signum);
  _exit(128 + signum);  // not reached: the default action of every exit signal ends the process
}

void on_exit_signal(int signum, siginfo_t* si, void* uc) {
  int saved_errno = errno;
  // A snapshot request is handed over, and the process goes on.
  if (signum == g_snapshot_signum) {
    g_on_snapshot(signum);
    errno = saved_errno;
    return;
  }
  const uint64_t now = monotonic_ns();
  const bool fault = is_fault(signum, si);
  uint64_t first = 0;
  if (g_first.compare_exchange_strong(first, (now << 6) | static_cast<uint64_t>(signum))) {
    if (is_crash_signal(signum)) {
      g_on_crash(signum, si, uc);
    } else {
      g_on_end(signum);
    }
  } else if (!fault && static_cast<int>(first & 63) == signum && now - (first >> 6) < kRepeatNs) {
    // A signal during the write (SA_NODEFER; or on another thread): the same stop request again lets
    // the write go on, any other ends the process at once. A fault would only fault again.
    errno = saved_errno;
    return;
  }
  if (!fault) end_by(signum);
  restore_default(signum);  // the instruction runs again, and faults under the default action
  errno = saved_errno;
}

bool stand_in(int i) {
  struct sigaction ours;
  memset(&ours, 0, sizeof(ours));
  ours.sa_sigaction = on_exit_signal;
  sigemptyset(&ours.sa_mask);
  // SA_NODEFER: the same signal again during the write is taken at once and ends the process.
  ours.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK | SA_RESTART;
  if (g_real(signal_of(i), &ours, nullptr) != 0) return false;
  g_standing_in[i].store(true, std::memory_order_release);
  return true;
}

}  // namespace

bool is_exit_signal(int signum) {
  return slot_of(signum) >= 0;
}
bool stands_in(int signum) {
  const int i = slot_of(signum);
  return i >= 0 && g_standing_in[i].load(std::memory_order_acquire);
}
bool is_crash_signal(int signum) {
  return signum == SIGABRT || signum == SIGBUS || signum == SIGFPE || signum == SIGILL || signum == SIGSEGV;
}
bool installed() {
  return g_installed.load(std::memory_order_acquire);
}

void install(SigactionFn real, const Handlers& handlers, bool segv, int snapshot_signum) {
  if (!real || g_installed.load()) return;
  g_real = real;
  g_on_end = handlers.on_end;
  g_on_crash = handlers.on_crash;
  g_on_snapshot = handlers.on_snapshot;
  g_segv = segv;
  // Only a signal no other slot has (SIGUSR1, SIGUSR2: the configuration's choice).
  if (handlers.on_snapshot && snapshot_signum > 0 && slot_of(snapshot_signum) < 0) g_snapshot_signum = snapshot_signum;
  for (int i = 0; i < kCount; ++i) {
    const int signum = signal_of(i);
    if (!signum || (signum == SIGSEGV && !segv)) continue;
    struct sigaction now;
    if (real(signum, nullptr, &now) != 0) continue;
    g_view[i] = now;
    // Ignored (nohup's SIGHUP) or handled by whoever loaded first: left as it is.
    if (is_default(now)) stand_in(i);
  }
  g_installed.store(true, std::memory_order_release);
}

int app_sigaction(int signum, const struct sigaction* act, struct sigaction* old) {
  const int i = slot_of(signum);
  if (i < 0 || !g_real) {
    errno = EINVAL;
    return -1;
  }
  // A vfork child (it resets handlers before exec) acts on its own kernel table, never on the parent's view.
  if (in_borrowed_memory()) return g_real(signum, act, old);
  struct sigaction before;
  if (g_standing_in[i].load(std::memory_order_acquire)) {
    before = g_view[i];
  } else if (g_real(signum, nullptr, &before) != 0) {
    return -1;
  }
  if (act) {
    if (is_default(*act)) {
      if (!g_standing_in[i].load(std::memory_order_acquire) && !stand_in(i)) return -1;
    } else {
      if (g_real(signum, act, nullptr) != 0) return -1;
      if (signum == g_snapshot_signum && g_standing_in[i].load(std::memory_order_acquire))
        log_line(LogLevel::warn,
                 "SENTINEL_SNAPSHOT_SIGNAL: the program set its own action for the signal (a handler, or ignore), "
                 "which now applies instead of the snapshot");
      g_standing_in[i].store(false, std::memory_order_release);
    }
    g_view[i] = *act;
  }
  if (old) *old = before;
  return 0;
}

}  // namespace sentinel::exit_sig
