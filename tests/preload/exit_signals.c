/* Signals that end a job (SIGINT, SIGTERM, SIGHUP, SIGQUIT): the process ends as it does without the library
 * (status, core), and the dump is written first (compare.sh: EXPECT_DUMP). Modes:
 *   term|int|hup|quit  allocate, then raise the signal under its default action
 *   handler            a handler of the program's own runs and calls exit(7): the usual exit path dumps
 *   view               the program reads back SIG_DFL for each of them, sets SIG_IGN for SIGTERM and raises it
 *   python             as Python ends on an uncaught KeyboardInterrupt: its own SIGINT handler first, then
 *                      SIG_DFL through signal() and kill(getpid(), SIGINT) */
#include <signal.h>
#include <unistd.h>

#include "common.h"

static void* keep[8];

static void allocate(void) {
  for (int i = 0; i < 8; i++) {
    keep[i] = malloc((size_t)T_TRACKED << (i % 4));
    t_fill(keep[i], (size_t)T_TRACKED << (i % 4), (uint64_t)i);
  }
  for (int i = 0; i < 8; i += 2) free(keep[i]);
}

static void on_term(int sig) {
  (void)sig;
  printf("handler ran\n");
  exit(7);
}

static volatile sig_atomic_t interrupted;
static void on_int(int sig) {
  (void)sig;
  interrupted = 1;
}

static int is_default(int sig) {
  struct sigaction a;
  return sigaction(sig, NULL, &a) == 0 && !(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_DFL;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "term";
  allocate();
  fflush(stdout);
  if (strcmp(mode, "handler") == 0) {
    signal(SIGTERM, on_term);
    raise(SIGTERM);
  } else if (strcmp(mode, "view") == 0) {
    printf("default: INT %d TERM %d HUP %d QUIT %d\n", is_default(SIGINT), is_default(SIGTERM), is_default(SIGHUP),
           is_default(SIGQUIT));
    void (*prev)(int) = signal(SIGTERM, SIG_IGN);
    printf("signal() returned SIG_DFL: %d\n", prev == SIG_DFL);
    raise(SIGTERM);
    printf("ignored SIGTERM, default again: %d\n", signal(SIGTERM, SIG_DFL) == SIG_IGN && is_default(SIGTERM));
  } else if (strcmp(mode, "python") == 0) {
    struct sigaction a;
    memset(&a, 0, sizeof(a));
    a.sa_handler = on_int;
    sigaction(SIGINT, &a, NULL);
    raise(SIGINT);
    printf("interrupted: %d\n", (int)interrupted);
    fflush(stdout);
    signal(SIGINT, SIG_DFL);
    kill(getpid(), SIGINT);
  } else {
    int sig = strcmp(mode, "int") == 0    ? SIGINT
              : strcmp(mode, "hup") == 0  ? SIGHUP
              : strcmp(mode, "quit") == 0 ? SIGQUIT
                                          : SIGTERM;
    raise(sig);
  }
  printf("still running\n");
  return 0;
}
