/* A training loop that pins its own thread to one CPU after the library started (OpenMP's thread binding
 * does this, and so does scripts/bench-tiers' worker): Sentinel's threads, started afterwards from that
 * thread, must still run on the CPUs the process started with, not share the pinned one
 * (base/thread.h, note_start_cpus). Under the library at least one Sentinel thread must be found. */
#include <dirent.h>
#include <sched.h>
#include <sys/types.h>
#include <time.h>

#include "common.h"

static int sentinel_thread(const char* tid) {
  char path[300], comm[32] = "";
  snprintf(path, sizeof path, "/proc/self/task/%s/comm", tid);
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  int ok = fgets(comm, sizeof comm, f) != NULL && strncmp(comm, "sentinel-", 9) == 0;
  fclose(f);
  return ok;
}

int main(void) {
  cpu_set_t start, pinned;
  if (sched_getaffinity(0, sizeof start, &start) != 0) {
    printf("sched_getaffinity failed\n");
    return 1;
  }
  int first = 0;
  while (first < CPU_SETSIZE && !CPU_ISSET(first, &start)) ++first;
  CPU_ZERO(&pinned);
  CPU_SET(first, &pinned);
  if (sched_setaffinity(0, sizeof pinned, &pinned) != 0) {
    printf("sched_setaffinity failed\n");
    return 1;
  }
  unsigned sum = 0;
  for (int i = 0; i < 64; ++i) {
    unsigned char* p = malloc(t_opaque(64 * 1024));
    if (!p) return 1;
    memset(p, i, 64 * 1024);
    sum += p[i];
    free(p);
  }
  struct timespec ms = {0, 20000000};
  nanosleep(&ms, NULL);
  int found = 0, wrong = 0;
  DIR* d = opendir("/proc/self/task");
  struct dirent* e;
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || !sentinel_thread(e->d_name)) continue;
    ++found;
    cpu_set_t cpus;
    if (sched_getaffinity((pid_t)atoi(e->d_name), sizeof cpus, &cpus) != 0 || !CPU_EQUAL(&cpus, &start)) {
      fprintf(stderr, "thread %s runs on %d CPU(s); the process started with %d\n", e->d_name, CPU_COUNT(&cpus),
              CPU_COUNT(&start));
      ++wrong;
    }
  }
  if (d) closedir(d);
  const char* preload = getenv("LD_PRELOAD");
  if (preload && strstr(preload, "sentinel") && !found) {
    fprintf(stderr, "no Sentinel thread found under the library\n");
    return 1;
  }
  printf("main thread pinned; checksum %u\n", sum);
  return wrong ? 1 : 0;
}
