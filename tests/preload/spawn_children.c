/* Which processes write a dump (docs/config.md): the parent tracks objects and starts itself twice with
 * posix_spawn, LD_PRELOAD inherited. The "helper" child tracks objects but repeats no pattern (a compile
 * worker); the "trainer" child allocates the same blocks step after step (a torchrun rank). By default the
 * trainer writes a dump, the helper none, and the parent none either: it found no step and a process it
 * started wrote a dump, so it is a launcher (torchrun's). With the argument "helper-only" it starts the
 * helper alone and writes its own dump. SENTINEL_INCLUDE and SENTINEL_EXCLUDE change that. */
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

extern char** environ;

/* Blocks of sizes that never repeat in the same order: no step to find. */
static int helper(void) {
  int ok = 1;
  for (int i = 0; i < 40; i++) {
    size_t n = (size_t)T_TRACKED * (size_t)(1 + (i * 7919) % 97) + (size_t)i * 4096u;
    unsigned char* p = malloc(n);
    if (!p) return 0;
    t_fill(p, n, (uint64_t)i);
    ok &= t_check(p, n, (uint64_t)i);
    free(p);
  }
  return ok;
}

/* The same four blocks, in the same order, 40 times: a training step. */
static int trainer(void) {
  static const size_t sizes[] = {65536, 131072, 98304, 262144};
  int ok = 1;
  for (int step = 0; step < 40; step++) {
    unsigned char* keep[4];
    for (int k = 0; k < 4; k++) {
      keep[k] = malloc(sizes[k]);
      if (!keep[k]) return 0;
      t_fill(keep[k], sizes[k], (uint64_t)(step * 4 + k));
    }
    for (int k = 0; k < 4; k++) {
      ok &= t_check(keep[k], sizes[k], (uint64_t)(step * 4 + k));
      free(keep[k]);
    }
  }
  return ok;
}

static int spawn(const char* self, const char* role) {
  char* argv[] = {(char*)"spawn_children", (char*)role, NULL};
  pid_t pid;
  fflush(stdout);
  if (posix_spawn(&pid, self, NULL, NULL, argv, environ) != 0) return -1;
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "helper") == 0) return helper() ? 0 : 1;
  if (argc > 1 && strcmp(argv[1], "trainer") == 0) return trainer() ? 0 : 1;
  void* own = malloc(1u << 20);
  memset(own, 1, 1u << 20);
  printf("helper child: status %d\n", spawn("/proc/self/exe", "helper"));
  if (!(argc > 1 && strcmp(argv[1], "helper-only") == 0))
    printf("trainer child: status %d\n", spawn("/proc/self/exe", "trainer"));
  free(own);
  return 0;
}
