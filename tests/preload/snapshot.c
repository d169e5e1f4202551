/* sentinel_dump(): snapshots of the dump while the program runs on (include/sentinel/sentinel.h). A loop of
 * 40 identical steps while another thread allocates and frees; after step 20 a snapshot to the default path
 * (SENTINEL_DUMP with ".snap1"), one to a path in the working directory, and the same path again, which
 * must fail with EEXIST. The dump at exit is written as always (compare.sh: 2 dumps in its directory, the
 * snapshot marked as one: check_dump.py --snapshot-by-name). Looked up with dlsym, so the plain run prints
 * the same; any unexpected result is printed, which makes the two runs' output differ. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "common.h"

static atomic_int stop;

static void* churn(void* arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    void* p = malloc(3 * T_TRACKED);
    t_fill(p, 3 * T_TRACKED, 7);
    free(p);
  }
  return NULL;
}

static void step(int i) {
  void* a = malloc(8 * T_TRACKED);
  void* b = malloc(2 * T_TRACKED);
  t_fill(a, 8 * T_TRACKED, (uint64_t)i);
  t_fill(b, 2 * T_TRACKED, (uint64_t)i);
  void* c = malloc(16 * T_TRACKED);
  t_fill(c, 16 * T_TRACKED, (uint64_t)i);
  free(a);
  free(c);
  free(b);
}

static int starts_with_magic(const char* path) {
  FILE* f = fopen(path, "rb");
  char magic[8] = {0};
  int ok = f && fread(magic, 1, sizeof magic, f) == sizeof magic && memcmp(magic, "SNTLDUMP", 8) == 0;
  if (f) fclose(f);
  return ok;
}

static void take_snapshots(void) {
  int (*dump)(const char*) = (int (*)(const char*))dlsym(RTLD_DEFAULT, "sentinel_dump");
  if (!dump) return;  // the plain run
  if (dump(NULL) != 0) printf("sentinel_dump(NULL) failed: %s\n", strerror(errno));
  if (dump("snapshot-here.prof.snap") != 0) printf("sentinel_dump(path) failed: %s\n", strerror(errno));
  if (!starts_with_magic("snapshot-here.prof.snap")) printf("the snapshot at the given path is no dump\n");
  errno = 0;
  if (dump("snapshot-here.prof.snap") != -1 || errno != EEXIST)
    printf("a snapshot over an existing file: errno %s, not EEXIST\n", strerror(errno));
}

int main(void) {
  pthread_t t;
  pthread_create(&t, NULL, churn, NULL);
  for (int i = 0; i < 40; i++) {
    step(i);
    if (i == 20) take_snapshots();
  }
  atomic_store(&stop, 1);
  pthread_join(t, NULL);
  printf("done\n");
  return 0;
}
