// Dumps survive the signals that end jobs: SIGINT (an uncaught Ctrl-C: Python re-raises it under the
// default action), SIGTERM (timeout, Slurm, Kubernetes), SIGHUP and SIGQUIT. While the program leaves
// one of them at its default action, Sentinel's handler stands in for it: it writes the dump, then
// restores the default action and raises the signal again, so the process ends as it would have (same
// status, same core dump). A second such signal during the write ends the process at once, unless it is
// the same signal within a second of the first (one stop request delivered twice: GNU timeout signals the
// command and then its process group). The program's
// own handlers are installed as asked and run first; if one of them ends the process through exit() the
// dump is written there, as always. The interposed sigaction() and signal() keep the program's view:
// it reads back SIG_DFL where Sentinel's handler stands in.
//
// Crashes (SIGABRT, SIGBUS, SIGFPE, SIGILL, and SIGSEGV where the profiler's handler does not own it) left
// at their default action are stood in for the same way, but the handler hands them to a crash function
// (the report of where it happened, then the dump): a long run that crashes keeps its profile. A fault
// (the kernel's, si_code > 0) then returns with the default action back, so the faulting instruction
// runs again and ends the process with its own registers in the core; a sent one (abort()'s) is raised
// again. A fault never counts as a repeat: any signal during the write ends the process at once.
//
// The snapshot signal (SENTINEL_SNAPSHOT_SIGNAL: SIGUSR1 or SIGUSR2), left at its default action, is
// stood in for the same way, but its handler only hands a request to a thread of Sentinel's, which
// writes a snapshot of the dump while the process runs on (sentinel_dump() is not async-signal-safe: it
// reads the loader's module list). Async-signal-safe.
#pragma once
#include <signal.h>

namespace sentinel::exit_sig {

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
using EndFn = void (*)(int signum);  // writes the dump, marked as ended by signum
// A crash signal is about to end the process: `si` and `uc` are the handler's.
using CrashFn = void (*)(int signum, const siginfo_t* si, const void* uc);
// The snapshot signal came; the process goes on.
using SnapshotFn = void (*)(int signum);

struct Handlers {
  EndFn on_end;
  CrashFn on_crash;
  SnapshotFn on_snapshot;  // may be null: no snapshot signal
};

// Stands in for the default action of each exit and crash signal, and of the snapshot signal, whose
// action is the default now. `real` is libc's sigaction; `segv`: SIGSEGV too (false where the profiler's
// handler owns it); `snapshot_signum`: 0 for none.
void install(SigactionFn real, const Handlers& handlers, bool segv, int snapshot_signum);

// SIGINT, SIGTERM, SIGHUP, SIGQUIT, the crash signals and the snapshot signal this module stands in for:
// the interposed sigaction() hands these to app_sigaction().
bool is_exit_signal(int signum);
// Whether Sentinel's handler stands in for signum now (its action is the default in the program's view).
bool stands_in(int signum);
// SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGSEGV.
bool is_crash_signal(int signum);
// The interposed sigaction() for an exit signal once install() ran.
bool installed();
int app_sigaction(int signum, const struct sigaction* act, struct sigaction* old);

}  // namespace sentinel::exit_sig
