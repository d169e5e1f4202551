/* exit() called by a worker thread while 4 other threads keep allocating, reallocating and freeing tracked and
 * untracked blocks (and the main thread is blocked in join): the runtime's exit work (the dump) runs while
 * allocations continue. `exit_thread quick_exit` uses quick_exit(5) instead. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

int t_failures;

static atomic_long ops;

static void* churn(void* arg) {
  uint64_t s = (uint64_t)(intptr_t)arg;
  void* slot[16] = {0};
  for (;;) {
    uint64_t r = t_rand(&s);
    int k = (int)(r % 16);
    size_t n = (r >> 8) % 2 ? 4096 + (r >> 16) % 200000 : 16 + (r >> 16) % 2000;
    if (slot[k] && (r >> 40) % 3 == 0) {
      void* q = realloc(slot[k], n);
      if (q) slot[k] = q;
    } else {
      free(slot[k]);
      slot[k] = malloc(n);
    }
    if (slot[k]) memset(slot[k], 1, n < 256 ? n : 256);
    atomic_fetch_add(&ops, 1);
  }
  return NULL;
}

static int use_quick_exit;

static void* exiter(void* arg) {
  (void)arg;
  while (atomic_load(&ops) < 50000) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  printf("worker thread calls %s\n", use_quick_exit ? "quick_exit(5)" : "exit(4)");
  fflush(stdout);
  if (use_quick_exit) quick_exit(5);
  exit(4);
}

static void at_exit(void) {
  /* Allocation in an exit handler, with the other threads still running. */
  void* p = malloc(100000);
  memset(p, 2, 100000);
  free(p);
}

int main(int argc, char** argv) {
  use_quick_exit = argc > 1 && strcmp(argv[1], "quick_exit") == 0;
  atexit(at_exit);
  at_quick_exit(at_exit);
  pthread_t t[5];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, churn, (void*)(intptr_t)(i + 1));
  pthread_create(&t[4], NULL, exiter, NULL);
  pthread_join(t[4], NULL);
  printf("not reached\n");
  return 0;
}
