// The names of the signals that end processes under Sentinel, the job-ending ones and the crashes
// (runtime/exit_signals.h), and the snapshot signal's choices, and of the crashes' fault codes. One table for the crash
// report and the viewer. Async-signal-safe.
#pragma once
#include <signal.h>

namespace sentinel {

// "SIGTERM"; null for a signal not named here.
constexpr const char* signal_name(int signum) {
  switch (signum) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGABRT:
      return "SIGABRT";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGUSR2:
      return "SIGUSR2";
    default:
      return nullptr;
  }
}

// The kernel's name of a fault's code ("SEGV_MAPERR"); null for one not named here.
constexpr const char* fault_code_name(int signum, int code) {
  struct Named {
    int signum, code;
    const char* name;
  };
  constexpr Named kNames[] = {
      {SIGSEGV, SEGV_MAPERR, "SEGV_MAPERR"}, {SIGSEGV, SEGV_ACCERR, "SEGV_ACCERR"}, {SIGBUS, BUS_ADRALN, "BUS_ADRALN"},
      {SIGBUS, BUS_ADRERR, "BUS_ADRERR"},    {SIGBUS, BUS_OBJERR, "BUS_OBJERR"},    {SIGFPE, FPE_INTDIV, "FPE_INTDIV"},
      {SIGFPE, FPE_INTOVF, "FPE_INTOVF"},    {SIGFPE, FPE_FLTDIV, "FPE_FLTDIV"},    {SIGILL, ILL_ILLOPC, "ILL_ILLOPC"},
      {SIGILL, ILL_ILLOPN, "ILL_ILLOPN"},
  };
  for (const Named& n : kNames)
    if (n.signum == signum && n.code == code) return n.name;
  return nullptr;
}

}  // namespace sentinel
