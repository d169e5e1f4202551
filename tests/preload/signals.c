/* Signals while the main thread allocates: an interval timer (SIGALRM, every 200 us) and 300 SIGUSR1 sent by
 * another thread (each waited for), handled while the main thread is inside malloc/free/realloc of tracked and
 * untracked sizes. Handlers never allocate. Then a program-installed SIGSEGV handler catches faults on a
 * PROT_NONE page (and sigaction reports it back); with the argument `crash` the program ends in a real SIGSEGV
 * under SIG_DFL, which must still kill it. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

int t_failures;

static atomic_int alarms, usr1s, usr1_bad;
static unsigned char scratch[4096];

static void on_alarm(int sig) {
  (void)sig;
  int saved = errno;
  atomic_fetch_add(&alarms, 1);
  memset(scratch, (unsigned char)atomic_load(&alarms), sizeof scratch);
  errno = saved;
}

static void on_usr1(int sig, siginfo_t* si, void* uc) {
  (void)uc;
  if (sig != SIGUSR1 || si->si_signo != SIGUSR1) atomic_fetch_add(&usr1_bad, 1);
  atomic_fetch_add(&usr1s, 1);
}

static pthread_t main_thread;
static void* sender(void* arg) {
  (void)arg;
  for (int i = 0; i < 300; i++) {
    int before = atomic_load(&usr1s);
    pthread_kill(main_thread, SIGUSR1);
    for (int spin = 0; atomic_load(&usr1s) == before && spin < 2000000; spin++) {
      struct timespec ts = {0, 1000};
      nanosleep(&ts, NULL);
    }
  }
  return NULL;
}

static sigjmp_buf jump;
static void* volatile fault_page;
static atomic_int segv_ok;
static void on_segv(int sig, siginfo_t* si, void* uc) {
  (void)uc;
  if (sig == SIGSEGV && si->si_addr == fault_page) atomic_fetch_add(&segv_ok, 1);
  siglongjmp(jump, 1);
}

static void alloc_under_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_usr1;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);

  struct itimerval it = {{0, 200}, {0, 200}};
  setitimer(ITIMER_REAL, &it, NULL);
  main_thread = pthread_self();
  pthread_t t;
  pthread_create(&t, NULL, sender, NULL);

  uint64_t s = 9;
  void* slot[64] = {0};
  size_t len[64] = {0};
  int bad = 0;
  long iterations = 0;
  /* At least 60000 operations, and on until all 300 SIGUSR1 were handled. */
  while (iterations < 60000 || atomic_load(&usr1s) < 300) {
    uint64_t r = t_rand(&s);
    int k = (int)(r % 64);
    if (slot[k]) {
      if (!t_check_sparse(slot[k], len[k], (uint64_t)k)) bad++;
      if (r & 0x100) {
        size_t n = len[k] > 300000 ? len[k] / 5 : len[k] * 2 + 1;
        unsigned char* q = realloc(slot[k], n);
        if (!q) {
          bad++;
        } else {
          if (!t_check_sparse_prefix(q, len[k], n, (uint64_t)k)) bad++;
          slot[k] = q;
          len[k] = n;
          t_fill_sparse(q, n, (uint64_t)k);
        }
      } else {
        free(slot[k]);
        slot[k] = NULL;
      }
    } else {
      len[k] = (r >> 16) % 3 == 0 ? 4096 + (r >> 24) % 100000 : 1 + (r >> 24) % 4000;
      slot[k] = (r >> 20) % 2 ? malloc(len[k]) : calloc(1, len[k]);
      if (!slot[k]) {
        bad++;
        continue;
      }
      t_fill_sparse(slot[k], len[k], (uint64_t)k);
    }
    iterations++;
    if (iterations > 50000000) break;
  }
  pthread_join(t, NULL);
  /* The timer must have fired at least once; wait for it if the loop was very fast. */
  for (int i = 0; i < 2000 && atomic_load(&alarms) == 0; i++) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  for (int k = 0; k < 64; k++) free(slot[k]);
  printf("allocation loop under signals: content errors %d\n", bad);
  printf("SIGUSR1 handled %d (bad %d), SIGALRM handled at least once: %d\n", atomic_load(&usr1s),
         atomic_load(&usr1_bad), atomic_load(&alarms) > 0);
  T_EXPECT(bad == 0 && atomic_load(&usr1s) == 300, "signals");
}

static void program_segv_handler(void) {
  struct sigaction sa, back;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, NULL);
  memset(&back, 0, sizeof back);
  sigaction(SIGSEGV, NULL, &back);
  printf("sigaction(SIGSEGV) reports our handler: %d, SA_SIGINFO kept: %d\n", back.sa_sigaction == on_segv,
         (back.sa_flags & SA_SIGINFO) != 0);
  long page = sysconf(_SC_PAGESIZE);
  unsigned char* m = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  fault_page = m;
  int caught = 0;
  for (int i = 0; i < 5; i++) {
    if (sigsetjmp(jump, 1) == 0) {
      /* Allocation between faults. */
      void* p = malloc(8192);
      memset(p, 1, 8192);
      free(p);
      ((volatile unsigned char*)m)[0] = 1;
    } else {
      caught++;
    }
  }
  printf("faults on a PROT_NONE page caught by the program's handler: %d of 5, address right: %d\n", caught,
         atomic_load(&segv_ok));
  /* signal() API as well. */
  void (*prev)(int) = signal(SIGSEGV, SIG_DFL);
  printf("signal(SIGSEGV, SIG_DFL) returned the previous handler: %d\n", (void*)prev == (void*)on_segv);
  munmap(m, (size_t)page);
  T_EXPECT(caught == 5, "segv handler");
}

static void crash(void) {
  void* p = malloc(100000);
  memset(p, 1, 100000);
  printf("about to fault under SIG_DFL\n");
  fflush(stdout);
  signal(SIGSEGV, SIG_DFL);
  long page = sysconf(_SC_PAGESIZE);
  unsigned char* m = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ((volatile unsigned char*)m)[0] = 1;
  printf("still alive after the fault\n");
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "crash") == 0) {
    crash();
    return 0;
  }
  alloc_under_signals();
  program_segv_handler();
  printf("failures=%d\n", t_failures);
  return t_failures ? 1 : 0;
}
