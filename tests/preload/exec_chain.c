/* exec with LD_PRELOAD inherited: stage 0 allocates and execs itself (execv); stage 1 allocates, forks a child
 * that execs /bin/echo, posix_spawns /bin/echo, fails an exec of a missing file, then starts two allocating
 * threads and execs itself again from the multi-threaded process (execve, explicit environment); stage 2
 * allocates and exits normally. */
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

int t_failures;
extern char** environ;

static int churn_blocks(int rounds, uint64_t seed) {
  int ok = 1;
  for (int r = 0; r < rounds; r++) {
    size_t n = (r % 2) ? 100 + (size_t)r : 4096u << (r % 8);
    unsigned char* p = malloc(n);
    if (!p) return 0;
    t_fill_sparse(p, n, seed + (uint64_t)r);
    ok &= t_check_sparse(p, n, seed + (uint64_t)r);
    free(p);
  }
  return ok;
}

static atomic_int started;
static void* spin(void* arg) {
  (void)arg;
  atomic_fetch_add(&started, 1);
  for (uint64_t i = 0;; i++) churn_blocks(4, i);
  return NULL;
}

static void self_exec(const char* stage, int use_execve) {
  char* argv[] = {(char*)"exec_chain", (char*)stage, NULL};
  fflush(stdout);
  if (use_execve)
    execve("/proc/self/exe", argv, environ);
  else
    execv("/proc/self/exe", argv);
  printf("exec of self failed\n");
  exit(1);
}

int main(int argc, char** argv) {
  int stage = argc > 1 ? atoi(argv[1]) : 0;
  void* keep[4];
  for (int i = 0; i < 4; i++) {
    keep[i] = malloc(i % 2 ? 300 : 65536 << i);
    memset(keep[i], i, i % 2 ? 300 : 65536 << i);
  }
  printf("stage %d: allocations ok=%d\n", stage, churn_blocks(32, (uint64_t)stage * 100));
  (void)keep; /* left alive across exec on purpose */

  if (stage == 0) self_exec("1", 0);

  if (stage == 1) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      churn_blocks(8, 5);
      execl("/bin/echo", "echo", "stage 1: forked child ran /bin/echo", (char*)NULL);
      _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    printf("stage 1: forked echo status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st));

    char* eargv[] = {(char*)"echo", (char*)"stage 1: posix_spawn ran /bin/echo", NULL};
    fflush(stdout);
    int r = posix_spawn(&pid, "/bin/echo", NULL, NULL, eargv, environ);
    if (r == 0) waitpid(pid, &st, 0);
    printf("stage 1: posix_spawn %d, status %d\n", r, WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st));

    char* margv[] = {(char*)"missing", NULL};
    errno = 0;
    int er = execv("/nonexistent/definitely-missing", margv);
    printf("stage 1: exec of a missing file returned %d, errno ENOENT=%d\n", er, errno == ENOENT);

    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, spin, NULL);
    while (atomic_load(&started) < 2) churn_blocks(1, 1);
    churn_blocks(16, 77);
    self_exec("2", 1);
  }

  /* Stage 2 exits normally: the runtime loaded into this image (same pid as stage 0) writes the dump. */
  if (stage == 2) printf("stage 2: exiting\n");
  return 0;
}
