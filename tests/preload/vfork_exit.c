/* vfork children share the parent's memory until they exec or _exit. A child that calls _exit (or _Exit, or
 * fails to exec and then _exits) runs the runtime's _exit hook in the parent's address space: it must neither
 * write the parent's dump nor change the parent's state. The parent allocates before and after, and its dump
 * (written at its own exit) must hold the objects of both phases. */
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

int t_failures;

static int churn(uint64_t seed, void** keep, int nkeep) {
  int ok = 1;
  for (int i = 0; i < 200; i++) {
    size_t n = (i % 2) ? 4096 + (size_t)i * 100 : 64 + (size_t)i;
    unsigned char* p = malloc(n);
    if (!p) return 0;
    t_fill_sparse(p, n, seed + (uint64_t)i);
    ok &= t_check_sparse(p, n, seed + (uint64_t)i);
    if (i < nkeep)
      keep[i] = p;
    else
      free(p);
  }
  return ok;
}

int main(void) {
  void* keep[40];
  int ok = churn(1, keep, 20);
  for (int round = 0; round < 6; round++) {
    fflush(stdout);
    pid_t pid = vfork();
    if (pid == 0) {
      switch (round % 3) {
        case 0:
          _exit(round);
        case 1:
          _Exit(round);
        default:
          execl("/nonexistent/missing-program", "missing", (char*)NULL);
          _exit(100 + round);
      }
    }
    int st = 0;
    waitpid(pid, &st, 0);
    printf("vfork round %d: child exit status %d\n", round, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    ok &= churn(100 + (uint64_t)round * 1000, keep + 20, round == 5 ? 20 : 0);
  }
  /* The blocks from before and after the vfork children are intact and freeable. */
  for (int i = 0; i < 20; i++) {
    size_t n = (i % 2) ? 4096 + (size_t)i * 100 : 64 + (size_t)i;
    ok &= t_check_sparse(keep[i], n, 1 + (uint64_t)i);
    free(keep[i]);
  }
  printf("parent allocations ok %d\n", ok);
  /* Tracked objects alive at exit, born after the vfork children: the dump must show them. */
  for (int i = 0; i < 3; i++) {
    unsigned char* p = malloc(777777 + (size_t)i);
    if (p) p[0] = 1; /* left alive on purpose */
  }
  return ok ? 0 : 1;
}
