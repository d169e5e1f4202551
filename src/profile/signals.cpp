#include "profile/signals.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "base/own_pid.h"
#include "profile/signal_stack.h"

namespace sentinel::sig {

namespace {

SigactionFn g_real = nullptr;
std::atomic<FaultFn> g_fault{nullptr};
std::atomic<bool> g_installed{false};
std::atomic<FatalFn> g_fatal{nullptr};

// The program's view of SIGSEGV, double-buffered: writers fill the idle copy, then flip.
struct sigaction g_app[2];
std::atomic<int> g_app_index{0};
std::atomic<int> g_app_writer{0};

void set_app(const struct sigaction& a) {
  while (g_app_writer.exchange(1, std::memory_order_acquire)) {
  }
  int next = 1 - g_app_index.load(std::memory_order_relaxed);
  g_app[next] = a;
  g_app_index.store(next, std::memory_order_release);
  g_app_writer.store(0, std::memory_order_release);
}

struct sigaction get_app() {
  return g_app[g_app_index.load(std::memory_order_acquire)];
}

void restore_default_and_maybe_raise(int signum, bool fault) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  if (g_real) g_real(signum, &dfl, nullptr);
  // A fault re-executes the instruction and dies by the default action; a sent signal must be sent
  // again (it stays pending while this handler runs and is delivered when it returns).
  if (!fault) raise(signum);
}

// A fault that ends the process: the report first (once, whichever thread comes first).
void report_fatal(const siginfo_t* si, const void* uc) {
  if (FatalFn fn = g_fatal.exchange(nullptr, std::memory_order_acq_rel)) fn(si, uc);
}

void forward(int signum, siginfo_t* si, void* uc) {
  struct sigaction app = get_app();
  bool fault = si && si->si_code > 0;
  if (!(app.sa_flags & SA_SIGINFO) && app.sa_handler == SIG_DFL) {
    report_fatal(si, uc);  // a fault, or a SIGSEGV sent by kill(): either ends the process now
    restore_default_and_maybe_raise(signum, fault);
    return;
  }
  if (!(app.sa_flags & SA_SIGINFO) && app.sa_handler == SIG_IGN) {
    if (fault) {  // the kernel does not let faults be ignored
      report_fatal(si, uc);
      restore_default_and_maybe_raise(signum, true);
    }
    return;
  }
  if (app.sa_flags & SA_RESETHAND) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    set_app(dfl);
  }
  sigset_t old;
  sigset_t mask = app.sa_mask;
  if (!(app.sa_flags & SA_NODEFER)) sigaddset(&mask, signum);
  pthread_sigmask(SIG_BLOCK, &mask, &old);
  if (app.sa_flags & SA_SIGINFO) {
    app.sa_sigaction(signum, si, uc);
  } else {
    app.sa_handler(signum);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void on_sigsegv(int signum, siginfo_t* si, void* uc) {
  FaultFn fn = g_fault.load(std::memory_order_acquire);
  if (si && si->si_code == SEGV_ACCERR && fn && fn(si->si_addr)) {
    // A thread that pthread_create did not start (one from before the library, or a raw clone) took
    // this fault on its own stack: the next ones go to a stack of Sentinel's.
    give_thread_stack();
    return;
  }
  forward(signum, si, uc);
}

}  // namespace

void set_real_sigaction(SigactionFn fn) {
  g_real = fn;
}
SigactionFn real_sigaction() {
  return g_real;
}

bool install(FaultFn fn) {
  g_fault.store(fn, std::memory_order_release);
  if (!g_real) return false;
  struct sigaction ours, previous;
  memset(&ours, 0, sizeof(ours));
  ours.sa_sigaction = on_sigsegv;
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART | SA_NODEFER;
  sigemptyset(&ours.sa_mask);
  if (g_real(SIGSEGV, nullptr, &previous) != 0) return false;
  // Already ours? Otherwise someone set the kernel's action behind the interposer (a raw syscall, or a
  // copy of sigaction we could not interpose): what is there becomes the program's handler.
  if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction == on_sigsegv) return true;
  set_app(previous);
  if (g_real(SIGSEGV, &ours, nullptr) != 0) return false;
  give_thread_stack();  // the installing thread; threads started later get theirs from pthread_create
  g_installed.store(true, std::memory_order_release);
  return true;
}

void set_fatal_report(FatalFn fn) {
  g_fatal.store(fn, std::memory_order_release);
}

bool installed() {
  return g_installed.load(std::memory_order_acquire);
}

int app_sigaction(int signum, const struct sigaction* act, struct sigaction* old) {
  if (old) *old = get_app();
  // A vfork child (it resets handlers before exec) acts on its own kernel table, never on the parent's view.
  if (act && in_borrowed_memory()) return g_real(signum, act, nullptr);
  if (act) set_app(*act);
  return 0;
}

void reset_after_fork() {
  g_app_writer.store(0, std::memory_order_relaxed);
}

}  // namespace sentinel::sig
