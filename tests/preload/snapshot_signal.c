/* SENTINEL_SNAPSHOT_SIGNAL=USR2 (in the preloaded run's COMPARE_ENV): the signal, left at its default action,
 * writes a snapshot of the dump while the program runs on, on Sentinel's snapshot thread. Modes:
 *   snapshots  steps of tracked allocations; after step 10 and step 20 the program sends itself SIGUSR2 and
 *              waits for the snapshot's file (SENTINEL_DUMP's path with ".snap1", then ".snap2"). A forked
 *              child (a DataLoader worker) that gets SIGUSR2 takes it, writes nothing and runs on to its
 *              own exit (`pkill -USR1 -f train.py` must not end a run's workers). The dump at exit is
 *              written as always (compare.sh: 3 dumps, the snapshots marked as ones).
 *   handler    the program installs a SIGUSR2 handler of its own first: that one runs, and no snapshot is
 *              written (only the dump at exit).
 *   early      the signal comes before any training step was found (as to a launcher that trains nothing):
 *              no snapshot, the process runs on (only the dump at exit).
 *   periodic   SENTINEL_SNAPSHOT_EVERY=1 instead: steps until the periodic snapshot (SENTINEL_DUMP's path with
 *              ".latest") has come, a few steps more, then SIGKILL, as the OOM killer ends a run: the snapshot
 *              is all that is left (compare.sh: 1 dump, ".latest", marked as a snapshot).
 *   periodic_exit  the same, ending by returning from main: the dump at exit replaces the snapshot, which is
 *              removed (1 dump).
 * Only under the library does the program signal itself in the parent (the plain run would end by the
 * signal); both runs print the same lines. */
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

// A training step's shape: six tensors of different sizes, freed in another order (a snapshot on the
// signal needs the step found first).
static void step(int i) {
  void* t[6];
  for (int k = 0; k < 6; k++) {
    t[k] = malloc((size_t)(k + 1) * T_TRACKED);
    t_fill(t[k], (size_t)(k + 1) * T_TRACKED, (uint64_t)(i + k));
  }
  for (int k = 5; k >= 0; k--) free(t[(k * 5) % 6]);
}

// SENTINEL_DUMP's template with %e and %p expanded (the only ones compare.sh uses), then `suffix`.
static int snapshot_path(char* out, size_t cap, const char* suffix) {
  const char* tmpl = getenv("SENTINEL_DUMP");
  if (!tmpl) return 0;
  size_t n = 0;
  for (const char* p = tmpl; *p && n + 32 < cap; p++) {
    if (p[0] == '%' && p[1] == 'e') {
      n += (size_t)snprintf(out + n, cap - n, "snapshot_signal");
      p++;
    } else if (p[0] == '%' && p[1] == 'p') {
      n += (size_t)snprintf(out + n, cap - n, "%d", (int)getpid());
      p++;
    } else {
      out[n++] = *p;
    }
  }
  out[n] = '\0';
  return snprintf(out + n, cap - n, "%s", suffix) < (int)(cap - n);
}

// Sends SIGUSR2 to this process and waits up to tries x 10 ms for the snapshot `suffix`; says whether it came.
static int snapshot_by_signal(const char* suffix, int tries) {
  char path[1200];
  if (!snapshot_path(path, sizeof path, suffix)) return 0;
  kill(getpid(), SIGUSR2);
  for (int i = 0; i < tries; i++) {
    if (access(path, R_OK) == 0) return 1;
    struct timespec ten_ms = {0, 10000000};
    nanosleep(&ten_ms, NULL);
  }
  return 0;
}

static volatile sig_atomic_t handled;
static void on_usr2(int sig) {
  (void)sig;
  handled = 1;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "snapshots";
  const int loaded = dlsym(RTLD_DEFAULT, "sentinel_dump") != NULL;
  if (strcmp(mode, "handler") == 0) {
    signal(SIGUSR2, on_usr2);
    for (int i = 0; i < 5; i++) step(i);
    raise(SIGUSR2);
    printf("the program's handler ran: %d\n", (int)handled);
    return 0;
  }
  if (strncmp(mode, "periodic", 8) == 0) {
    char path[1200];
    int i = 0, came = !loaded || !snapshot_path(path, sizeof path, ".latest");
    for (; i < 5000 && !came; i++) {  // 5000 x 2 ms at most: the first period is 1 s from the thread's start
      step(i);
      came = access(path, R_OK) == 0;
      struct timespec two_ms = {0, 2000000};
      nanosleep(&two_ms, NULL);
    }
    if (!came) printf("no periodic snapshot after %d steps\n", i);
    for (int k = 0; k < 10; k++) step(i + k);
    printf("ran on\n");
    fflush(stdout);
    if (strcmp(mode, "periodic") == 0) raise(SIGKILL);
    return 0;
  }
  if (strcmp(mode, "early") == 0) {
    void* one = malloc(3 * T_TRACKED);  // tracked, so that Sentinel's threads start; no step yet
    t_fill(one, 3 * T_TRACKED, 1);
    if (loaded && snapshot_by_signal(".snap1", 100)) printf("a snapshot before any step\n");
    for (int i = 0; i < 30; i++) step(i);
    free(one);
    printf("ran on\n");
    return 0;
  }
  for (int i = 0; i < 30; i++) {
    step(i);
    if (loaded && i == 10 && !snapshot_by_signal(".snap1", 2000)) printf("no snapshot after step 10\n");
    if (loaded && i == 20 && !snapshot_by_signal(".snap2", 2000)) printf("no snapshot after step 20\n");
  }
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    if (loaded) raise(SIGUSR2);
    _exit(3);
  }
  int status = 0;
  waitpid(child, &status, 0);
  printf("child: %s %d\n", WIFSIGNALED(status) ? "signal" : "exit",
         WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  return 0;
}
