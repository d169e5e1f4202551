#include "base/thread.h"

#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

namespace sentinel {

namespace {
cpu_set_t g_start_cpus;
bool g_have_start_cpus = false;
}  // namespace

void note_start_cpus() {
  // More than CPU_SETSIZE CPUs: EINVAL, and threads keep their creator's CPUs.
  g_have_start_cpus = sched_getaffinity(0, sizeof(g_start_cpus), &g_start_cpus) == 0;
}

uint32_t start_cpu_count() {
  return g_have_start_cpus ? static_cast<uint32_t>(CPU_COUNT(&g_start_cpus)) : 0;
}

int start_quiet_thread(pthread_t* thread, void* (*fn)(void*), void* arg, size_t stack_bytes, const char* name) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the new thread inherits the mask: no signal lands on it
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, stack_bytes);
  int rc = EINVAL;
  if (g_have_start_cpus && pthread_attr_setaffinity_np(&attr, sizeof(g_start_cpus), &g_start_cpus) == 0)
    rc = pthread_create(thread, &attr, fn, arg);
  if (rc == EINVAL) {  // none of those CPUs allowed any more (a cpuset cgroup changed): the creator's
    pthread_attr_destroy(&attr);
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, stack_bytes);
    rc = pthread_create(thread, &attr, fn, arg);
  }
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc == 0) pthread_setname_np(*thread, name);
  return rc;
}

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, uint64_t timeout_ns) {
  timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, &ts, nullptr, 0);
}

void futex_wake(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

}  // namespace sentinel
