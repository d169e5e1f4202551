/* fork with allocation in the child.
 * 1. Single-threaded parent: the child verifies and frees the parent's objects (tracked and untracked),
 *    allocates and frees its own, reallocs, forks a grandchild, and exits (exit() and _exit()).
 * 2. Multi-threaded parent: 4 threads allocate and free tracked and untracked blocks without pause while the
 *    main thread forks 40 times; each child allocates at once (the allocator's locks must be usable in the
 *    child), frees inherited blocks, and exits. A child that hangs is killed after 30 s and reported.
 * The parent waits for each child and prints its result. */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

int t_failures;

static const size_t obj_sizes[] = {24, 1000, 4096, 65536, 1u << 20, 3000, 8192 + 7, 4u << 20};
#define NOBJ (sizeof obj_sizes / sizeof obj_sizes[0])

/* Child work: returns a bit mask of failed checks (0 = fine). */
static int child_work(unsigned char** inherited, const size_t* sizes, size_t n, uint64_t seed0) {
  int fail = 0;
  for (size_t i = 0; i < n; i++) {
    if (!t_check_sparse(inherited[i], sizes[i], seed0 + i)) fail |= 1;
    /* Writing an inherited block must not show in the parent (copy on write). */
    memset(inherited[i], 0xEE, sizes[i] < 100000 ? sizes[i] : 100000);
  }
  /* Allocate and free our own, tracked and untracked. */
  void* mine[64];
  for (int i = 0; i < 64; i++) {
    size_t s = (i % 4 == 0) ? (size_t)(4096 << (i % 9)) : (size_t)(16 + i * 50);
    mine[i] = (i % 3 == 0) ? calloc(1, s) : malloc(s);
    if (!mine[i]) {
      fail |= 2;
      continue;
    }
    if ((i % 3 == 0) && !t_all(mine[i], s, 0)) fail |= 2;
    t_fill_sparse(mine[i], s, 999 + (uint64_t)i);
  }
  for (int i = 0; i < 64; i++) {
    size_t s = (i % 4 == 0) ? (size_t)(4096 << (i % 9)) : (size_t)(16 + i * 50);
    if (mine[i] && !t_check_sparse(mine[i], s, 999 + (uint64_t)i)) fail |= 4;
    if (i % 5 == 0) {
      void* r = realloc(mine[i], s * 3 + 5000);
      if (!r) {
        fail |= 8;
        free(mine[i]);
      } else {
        free(r);
      }
    } else {
      free(mine[i]);
    }
  }
  void* al = NULL;
  if (posix_memalign(&al, 1u << 16, 200000) || !t_aligned(al, 1u << 16)) fail |= 16;
  free(al);
  /* Free the parent's objects. */
  for (size_t i = 0; i < n; i++) free(inherited[i]);
  return fail;
}

static int wait_child(pid_t pid, const char* what) {
  /* Poll so that a hung child becomes a clear message, not a test timeout. */
  for (int ms = 0; ms < 30000; ms += 5) {
    int st;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(st)) return WEXITSTATUS(st);
      if (WIFSIGNALED(st)) {
        printf("%s: child killed by signal %d\n", what, WTERMSIG(st));
        return 200 + WTERMSIG(st);
      }
    }
    if (r < 0) {
      printf("%s: waitpid failed\n", what);
      return 255;
    }
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
  printf("%s: child hung for 30 s (deadlock after fork?), killing it\n", what);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return 254;
}

static void single_threaded(void) {
  printf("== single-threaded parent\n");
  for (int variant = 0; variant < 3; variant++) {
    unsigned char* objs[NOBJ];
    for (size_t i = 0; i < NOBJ; i++) {
      objs[i] = malloc(obj_sizes[i]);
      t_fill_sparse(objs[i], obj_sizes[i], 100 * (uint64_t)variant + i);
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
      printf("fork failed\n");
      t_failures++;
      return;
    }
    if (pid == 0) {
      int fail = child_work(objs, obj_sizes, NOBJ, 100 * (uint64_t)variant);
      if (variant == 2) {
        /* Grandchild. */
        unsigned char* g[NOBJ];
        for (size_t i = 0; i < NOBJ; i++) {
          g[i] = malloc(obj_sizes[i]);
          t_fill_sparse(g[i], obj_sizes[i], 5000 + i);
        }
        fflush(stdout);
        pid_t gp = fork();
        if (gp == 0) _exit(child_work(g, obj_sizes, NOBJ, 5000));
        int gs = wait_child(gp, "grandchild");
        printf("  grandchild status %d\n", gs);
        for (size_t i = 0; i < NOBJ; i++) free(g[i]);
        if (gs) fail |= 32;
      }
      printf("  child variant %d: checks %s\n", variant, fail ? "FAILED" : "ok");
      fflush(stdout);
      if (variant == 1) _exit(fail);
      exit(fail);
    }
    int st = wait_child(pid, "child");
    int intact = 1;
    for (size_t i = 0; i < NOBJ; i++) {
      intact &= t_check_sparse(objs[i], obj_sizes[i], 100 * (uint64_t)variant + i);
      free(objs[i]);
    }
    printf("variant %d: child status %d, parent objects intact %d\n", variant, st, intact);
    T_EXPECT(st == 0 && intact, "variant %d", variant);
  }
}

static atomic_int stop_flag;
static atomic_int thread_bad;

static void* churn(void* arg) {
  uint64_t s = (uint64_t)(intptr_t)arg;
  void* slot[32] = {0};
  size_t len[32] = {0};
  while (!atomic_load(&stop_flag)) {
    uint64_t r = t_rand(&s);
    int k = (int)(r % 32);
    if (slot[k]) {
      if (!t_check_sparse(slot[k], len[k], (uint64_t)k)) atomic_fetch_add(&thread_bad, 1);
      free(slot[k]);
      slot[k] = NULL;
    } else {
      len[k] = (r >> 20) % 4 == 0 ? 4096 + (r >> 24) % 300000 : 16 + (r >> 24) % 3000;
      slot[k] = (r >> 30) % 2 ? malloc(len[k]) : aligned_alloc(64, (len[k] + 63) & ~(size_t)63);
      if (!slot[k]) {
        atomic_fetch_add(&thread_bad, 1);
        continue;
      }
      t_fill_sparse(slot[k], len[k], (uint64_t)k);
    }
  }
  for (int k = 0; k < 32; k++) free(slot[k]);
  return NULL;
}

static void multi_threaded(void) {
  printf("== multi-threaded parent\n");
  pthread_t th[4];
  for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, churn, (void*)(intptr_t)(i + 1));
  int child_fail = 0, hung = 0;
  for (int round = 0; round < 40; round++) {
    unsigned char* objs[NOBJ];
    for (size_t i = 0; i < NOBJ; i++) {
      objs[i] = malloc(obj_sizes[i]);
      t_fill_sparse(objs[i], obj_sizes[i], 7000 + i);
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      /* Only this thread exists in the child. */
      int fail = child_work(objs, obj_sizes, NOBJ, 7000);
      /* A thread in the child, allocating too. */
      atomic_store(&stop_flag, 0);
      pthread_t t;
      if (pthread_create(&t, NULL, churn, (void*)(intptr_t)99) == 0) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        atomic_store(&stop_flag, 1);
        pthread_join(t, NULL);
      } else {
        fail |= 64;
      }
      if (atomic_load(&thread_bad)) fail |= 128;
      if (round % 2) _exit(fail);
      exit(fail);
    }
    int st = wait_child(pid, "mt child");
    if (st == 254) hung++;
    if (st) {
      child_fail++;
      printf("round %d: child status %d\n", round, st);
    }
    for (size_t i = 0; i < NOBJ; i++) {
      if (!t_check_sparse(objs[i], obj_sizes[i], 7000 + i)) child_fail++;
      free(objs[i]);
    }
  }
  atomic_store(&stop_flag, 1);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  printf("40 forks from a 5-thread parent: failed children %d, hung %d, thread errors %d\n", child_fail, hung,
         atomic_load(&thread_bad));
  T_EXPECT(child_fail == 0 && atomic_load(&thread_bad) == 0, "multi-threaded fork");
}

/* pthread_atfork handlers that allocate (tracked and untracked) in prepare, parent and child. */
static unsigned char* atfork_block;
static void* atfork_small;
static atomic_int atfork_bad;
static void prep(void) {
  atfork_block = malloc(100000);
  atfork_small = malloc(50);
  if (!atfork_block || !atfork_small)
    atomic_fetch_add(&atfork_bad, 1);
  else
    t_fill_sparse(atfork_block, 100000, 31);
}
static void in_parent(void) {
  if (!t_check_sparse(atfork_block, 100000, 31)) atomic_fetch_add(&atfork_bad, 1);
  free(atfork_block);
  free(atfork_small);
}
static void in_child(void) {
  if (!t_check_sparse(atfork_block, 100000, 31)) atomic_fetch_add(&atfork_bad, 1);
  unsigned char* r = realloc(atfork_block, 300000);
  if (!r) atomic_fetch_add(&atfork_bad, 1);
  free(r);
  free(atfork_small);
  void* p = calloc(1, 70000);
  free(p);
}

static void atfork_handlers(void) {
  printf("== pthread_atfork handlers that allocate\n");
  pthread_atfork(prep, in_parent, in_child);
  int fails = 0;
  for (int i = 0; i < 10; i++) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) _exit(atomic_load(&atfork_bad) ? 1 : 0);
    int st = wait_child(pid, "atfork child");
    fails += st != 0;
  }
  printf("10 forks with allocating atfork handlers: failed children %d, parent errors %d\n", fails,
         atomic_load(&atfork_bad));
  T_EXPECT(fails == 0 && atomic_load(&atfork_bad) == 0, "atfork");
}

int main(void) {
  single_threaded();
  multi_threaded();
  atfork_handlers();
  printf("failures=%d\n", t_failures);
  return t_failures ? 1 : 0;
}
