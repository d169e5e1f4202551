// SIGSEGV chaining (docs/design.md §4.2). While profiling, Sentinel's handler must stay first: the interposed
// sigaction()/signal() record what the program asks for SIGSEGV as the program's view and leave the
// kernel's action alone. Faults that are not Sentinel's go to the program's handler; with none, the
// default action runs, so a real segfault still ends the process by SIGSEGV. Async-signal-safe.
#pragma once
#include <signal.h>

namespace sentinel::sig {

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
using FaultFn = bool (*)(void* address);  // true: the fault was Sentinel's and is resolved

// The real sigaction (libc's, looked up by the hook layer). Must be set before install().
void set_real_sigaction(SigactionFn fn);
SigactionFn real_sigaction();

// Installs Sentinel's SIGSEGV handler in front of whatever is there. Idempotent. False on failure.
bool install(FaultFn fn);
bool installed();

// Called once, just before a SIGSEGV that is not Sentinel's ends the process by the default action (the
// program has no handler of its own): says where it happened, so that a crash under the library can be
// told apart from one in it. Async-signal-safe; `uc` is the handler's ucontext_t.
using FatalFn = void (*)(const siginfo_t* si, const void* uc);
void set_fatal_report(FatalFn fn);

// The interposed sigaction for SIGSEGV while installed: updates the program's view only.
int app_sigaction(int signum, const struct sigaction* act, struct sigaction* old);

// For forked children and tests: forget everything (the kernel action stays as it is).
void reset_after_fork();

}  // namespace sentinel::sig
