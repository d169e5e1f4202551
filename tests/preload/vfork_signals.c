/* A vfork child that resets signal handlers before it execs (Python's subprocess does, so does posix_spawn
 * with POSIX_SPAWN_SETSIGDEF) runs in its parent's memory: the library must not take its resets as the
 * parent's. The parent installs handlers for SIGSEGV and SIGTERM, a vfork child resets both and execs
 * /bin/true, then the parent reads its handlers back, raises SIGTERM and faults: its own handlers run. */
#include <setjmp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static sigjmp_buf g_jump;
static volatile sig_atomic_t g_terms;

static void on_segv(int sig) {
  (void)sig;
  siglongjmp(g_jump, 1);
}
static void on_term(int sig) {
  (void)sig;
  g_terms++;
}

static int handler_is(int sig, void (*fn)(int)) {
  struct sigaction a;
  return sigaction(sig, NULL, &a) == 0 && !(a.sa_flags & SA_SIGINFO) && a.sa_handler == fn;
}

int main(void) {
  void* keep = malloc(1u << 20);
  memset(keep, 1, 1u << 20);
  signal(SIGSEGV, on_segv);
  signal(SIGTERM, on_term);
  pid_t pid = vfork();
  if (pid == 0) {
    signal(SIGSEGV, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    execl("/bin/true", "true", (char*)NULL);
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  printf("child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  printf("handlers kept: SEGV %d TERM %d\n", handler_is(SIGSEGV, on_segv), handler_is(SIGTERM, on_term));
  raise(SIGTERM);
  printf("SIGTERM handled %d time(s)\n", (int)g_terms);
  if (sigsetjmp(g_jump, 1) == 0) {
    volatile int* p = (volatile int*)t_opaque_ptr(NULL);
    *p = 1;
    printf("no fault\n");
  } else {
    printf("SIGSEGV handled by the program\n");
  }
  free(keep);
  return 0;
}
