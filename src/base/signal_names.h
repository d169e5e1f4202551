// The names of the signals that end processes under Sentinel: the job-ending ones and the crashes
// (runtime/exit_signals.h). One table for the crash report and the viewer. Async-signal-safe.
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
    default:
      return nullptr;
  }
}

}  // namespace sentinel
