// A crash under the library says where it happened, and keeps the run's profile. When a crash is about
// to end the process (a fault that is not one of Sentinel's profiling faults, signals.h; or SIGABRT,
// SIGBUS, SIGFPE, SIGILL, SIGSEGV at their default action, exit_signals.h), stderr gets one line naming
// the signal, the address, the thread and whether the instruction was in Sentinel's own code, then one
// line per frame as module+offset (what addr2line and gdb take), so that a crash in a CI guest, whose
// core stays there, can still be placed. Then the dump is written, marked with the signal, unless the
// crashing thread was running Sentinel's own code (its state may be torn halfway through a change); the
// dump's CRASH record then holds the signal, the address and the stack (as a site), for the viewer to
// symbolize. The process then ends by the signal as it would have.
#pragma once
#include <signal.h>

#include <cstdint>

namespace sentinel {

struct RuntimeState;

// Writes the dump, marked as ended by `signum`.
using DumpFn = void (*)(int signum);

// Arms the report for this process: `own_lo`/`own_hi` bound Sentinel's text.
void arm_fatal_report(RuntimeState* state, uintptr_t own_lo, uintptr_t own_hi, DumpFn dump);

// The crash is about to end the process: the report, then the dump. Async-signal-safe; `uc` is the
// handler's ucontext_t.
void report_crash(int signum, const siginfo_t* si, const void* uc);

}  // namespace sentinel
