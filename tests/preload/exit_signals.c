/* Signals that end a job (SIGINT, SIGTERM, SIGHUP, SIGQUIT): the process ends as it does without the library
 * (status, core), and the dump is written first (compare.sh: EXPECT_DUMP). Modes:
 *   term|int|hup|quit  allocate, then raise the signal under its default action
 *   handler            a handler of the program's own runs and calls exit(7): the usual exit path dumps
 *   view               the program reads back SIG_DFL for each of them, sets SIG_IGN for SIGTERM and raises it
 *   python             as Python ends on an uncaught KeyboardInterrupt: its own SIGINT handler first, then
 *                      SIG_DFL through signal() and kill(getpid(), SIGINT)
 *   twice              as GNU timeout stops a command: another process sends SIGTERM twice in a row (to the
 *                      command, then to its process group), the second while the dump is being written; the
 *                      child sends the first at once, often while the parent is still inside fork()
 * Crashes, which must also keep the dump and end the process as they would have (status 128 + N):
 *   segv|bus|fpe|ill   the program's own faulting instruction under the default action: a store to a
 *                      PROT_NONE page, a load past the end of a mapped file, an integer division by zero,
 *                      ud2
 *   abort              abort()
 *   chain              as Python's faulthandler: the program's SIGSEGV handler reports, puts the previous
 *                      action (SIG_DFL, as it read back) in place again and raises the signal itself
 *   overflow           unbounded recursion overflows the main thread's stack: the handler can run only on
 *                      an alternate signal stack, which Sentinel gives every thread
 *   overflow_thread    the same on a thread the program started */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
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

static void* wait_forever(void* arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

static struct sigaction chained_previous;
static void on_segv_chained(int sig) {
  static const char msg[] = "chained handler: fatal error\n";
  if (write(2, msg, sizeof msg - 1) < 0) _exit(99);
  sigaction(sig, &chained_previous, NULL);
  raise(sig);
}

// Each level keeps a frame of 1 KiB on the stack (the volatile array, and the call after it that is not a tail
// call), so the recursion reaches the guard page below the stack in some thousands of calls.
static volatile int overflow_limit = 1 << 30;  // never reached: the stack ends first (and gcc sees an end)
static int overflow(int depth) {
  if (depth >= overflow_limit) return 0;
  volatile char frame[1024];
  frame[depth % sizeof frame] = (char)depth;
  return overflow(depth + 1) + frame[(depth + 1) % sizeof frame];
}

static void* overflow_thread(void* arg) {
  (void)arg;
  overflow(0);
  return NULL;
}

// Ends the process by the program's own crash `mode`; returns only where the crash did not come.
static void crash(const char* mode) {
  long page = sysconf(_SC_PAGESIZE);
  if (strcmp(mode, "segv") == 0) {
    volatile unsigned char* m = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    m[0] = 1;
  } else if (strcmp(mode, "bus") == 0) {
    char path[] = "/tmp/sentinel-bus.XXXXXX";
    int fd = mkstemp(path);
    unlink(path);
    if (fd < 0 || ftruncate(fd, page) != 0) return;
    volatile unsigned char* m = mmap(NULL, (size_t)page * 2, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return;
    printf("read %d\n", m[page]);  // the second page lies past the end of the file
  } else if (strcmp(mode, "fpe") == 0) {
    volatile int zero = 0, seven = 7;  // both volatile: gcc turns 1 / x into a comparison
    printf("%d\n", seven / zero);
  } else if (strcmp(mode, "ill") == 0) {
    __builtin_trap();
  } else if (strcmp(mode, "abort") == 0) {
    abort();
  } else if (strcmp(mode, "chain") == 0) {
    struct sigaction a;
    memset(&a, 0, sizeof(a));
    a.sa_handler = on_segv_chained;
    a.sa_flags = SA_NODEFER;
    sigaction(SIGSEGV, &a, &chained_previous);
    crash("segv");
  } else if (strcmp(mode, "overflow") == 0) {
    overflow(0);
  } else if (strcmp(mode, "overflow_thread") == 0) {
    pthread_t t;
    if (pthread_create(&t, NULL, overflow_thread, NULL) == 0) pthread_join(t, NULL);
  }
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
  } else if (strcmp(mode, "twice") == 0) {
    // Enough objects that the write takes a while, and threads that can take the second signal while
    // the first is being handled (a process-directed signal already pending would merge with it).
    for (int i = 0; i < 20000; i++) t_fill(malloc(T_TRACKED), T_TRACKED, (uint64_t)i);
    pthread_t idle[3];
    for (int i = 0; i < 3; i++) pthread_create(&idle[i], NULL, wait_forever, NULL);
    pid_t parent = getpid();
    if (fork() == 0) {  // raw system calls: the child ends without any exit path of its own
      syscall(SYS_kill, parent, SIGTERM);
      struct timespec gap = {0, 300000};
      syscall(SYS_nanosleep, &gap, NULL);
      syscall(SYS_kill, parent, SIGTERM);
      syscall(SYS_exit_group, 0);
    }
    wait_forever(NULL);
  } else if (strcmp(mode, "segv") == 0 || strcmp(mode, "bus") == 0 || strcmp(mode, "fpe") == 0 ||
             strcmp(mode, "ill") == 0 || strcmp(mode, "abort") == 0 || strcmp(mode, "chain") == 0 ||
             strncmp(mode, "overflow", 8) == 0) {
    crash(mode);
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
