#include "base/thread.h"

#include <signal.h>

namespace sentinel {

int start_quiet_thread(pthread_t* thread, void* (*fn)(void*), void* arg, size_t stack_bytes, const char* name) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the new thread inherits the mask: no signal lands on it
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, stack_bytes);
  const int rc = pthread_create(thread, &attr, fn, arg);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc == 0) pthread_setname_np(*thread, name);
  return rc;
}

}  // namespace sentinel
