/* numa_placement: the page-placement mechanics the runtime relies on, checked in the two-node guest.
 *   1. mbind() of an untouched range to node 1, then first touch: every page lands on node 1.
 *   2. move_pages() moves a range's pages 0 -> 1 -> 0 (checked page by page with a status-only query:
 *      move_pages() with a null node list).
 *   3. mbind(MPOL_MF_MOVE) of a populated range also moves its pages, both ways.
 *   4. Bandwidth of both ways of moving, 4 KiB pages (THP off for the range), each direction, best of
 *      --reps: the runtime uses whichever is faster.
 * Prints "PASS name: detail" or "FAIL name: detail" per check and
 *   bandwidth method=move_pages|mbind from=A to=B mib=N gibps=X
 * per measurement; exits 1 if any check failed, 77 if there is no node 1.
 * Options: --mib N (size of each range, default 64), --reps N (default 3), --slow NODE (default 1). */
#include <errno.h>
#include <numaif.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static size_t page_size;
static int failures;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void check(int ok, const char* name, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static void check(int ok, const char* name, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("%s %s: ", ok ? "PASS" : "FAIL", name);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
  failures += !ok;
}

static void* map_range(size_t bytes) {
  void* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    fprintf(stderr, "numa_placement: mmap of %zu bytes: %s\n", bytes, strerror(errno));
    exit(2);
  }
  madvise(p, bytes, MADV_NOHUGEPAGE); /* 4 KiB pages: what move_pages() sees per entry */
  return p;
}

static void touch(void* p, size_t bytes) {
  for (size_t off = 0; off < bytes; off += page_size) ((volatile char*)p)[off] = (char)off;
}

struct pagelist {
  size_t n;
  void** pages;
  int *nodes, *status;
};

static struct pagelist pages_of(void* p, size_t bytes) {
  struct pagelist l = {bytes / page_size, NULL, NULL, NULL};
  l.pages = malloc(l.n * sizeof *l.pages);
  l.nodes = malloc(l.n * sizeof *l.nodes);
  l.status = malloc(l.n * sizeof *l.status);
  if (!l.pages || !l.nodes || !l.status) {
    fprintf(stderr, "numa_placement: out of memory\n");
    exit(2);
  }
  for (size_t i = 0; i < l.n; i++) l.pages[i] = (char*)p + i * page_size;
  return l;
}

static void free_pages(struct pagelist* l) {
  free(l->pages);
  free(l->nodes);
  free(l->status);
}

/* How many pages of the list sit on the node, by move_pages() with a null node list (query only). */
static size_t count_on(struct pagelist* l, int node) {
  if (move_pages(0, l->n, l->pages, NULL, l->status, 0) != 0) {
    fprintf(stderr, "numa_placement: move_pages query: %s\n", strerror(errno));
    return 0;
  }
  size_t k = 0;
  for (size_t i = 0; i < l->n; i++) k += l->status[i] == node;
  return k;
}

static int bind(void* p, size_t bytes, int node, unsigned flags) {
  unsigned long mask = 1ul << node;
  return mbind(p, bytes, MPOL_BIND, &mask, sizeof mask * 8, flags);
}

/* Moves with move_pages(); returns seconds, or -1 on error. */
static double move_with_move_pages(struct pagelist* l, int node) {
  for (size_t i = 0; i < l->n; i++) l->nodes[i] = node;
  double t = now();
  long r = move_pages(0, l->n, l->pages, l->nodes, l->status, MPOL_MF_MOVE);
  t = now() - t;
  return r < 0 ? -1 : t;
}

static double move_with_mbind(void* p, size_t bytes, int node) {
  double t = now();
  int r = bind(p, bytes, node, MPOL_MF_MOVE | MPOL_MF_STRICT);
  t = now() - t;
  return r != 0 ? -1 : t;
}

int main(int argc, char** argv) {
  size_t mib = 64;
  int reps = 3, slow = 1, fast = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--mib") && i + 1 < argc)
      mib = (size_t)strtoul(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--slow") && i + 1 < argc)
      slow = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: numa_placement [--mib N] [--reps N] [--slow NODE]\n");
      return 2;
    }
  }
  if (mib < 1 || reps < 1 || slow < 1 || slow > 63) {
    fprintf(stderr, "numa_placement: --mib and --reps must be positive, --slow 1-63\n");
    return 2;
  }
  char path[96];
  snprintf(path, sizeof path, "/sys/devices/system/node/node%d/meminfo", slow);
  if (access(path, R_OK) != 0) {
    printf("SKIP: no NUMA node %d here (run it in the two-node guest)\n", slow);
    return 77;
  }
  page_size = (size_t)sysconf(_SC_PAGESIZE);
  size_t bytes = mib << 20;

  /* 1. mbind an untouched range, then first touch. */
  void* a = map_range(bytes);
  struct pagelist la = pages_of(a, bytes);
  int r = bind(a, bytes, slow, 0);
  check(r == 0, "mbind-untouched", "mbind(MPOL_BIND, node %d) of %zu MiB: %s", slow, mib, r ? strerror(errno) : "ok");
  size_t before = count_on(&la, slow);
  check(before == 0, "untouched-has-no-pages", "%zu of %zu pages present before first touch", before, la.n);
  touch(a, bytes);
  size_t k = count_on(&la, slow);
  check(k == la.n, "first-touch-on-bound-node", "%zu of %zu pages on node %d", k, la.n, slow);

  /* 2. move_pages 0 -> 1 -> 0 on a range first touched on node 0. */
  void* b = map_range(bytes);
  struct pagelist lb = pages_of(b, bytes);
  bind(b, bytes, fast, 0);
  touch(b, bytes);
  k = count_on(&lb, fast);
  check(k == lb.n, "first-touch-on-node-0", "%zu of %zu pages on node %d", k, lb.n, fast);
  double t = move_with_move_pages(&lb, slow);
  k = count_on(&lb, slow);
  check(t >= 0 && k == lb.n, "move_pages-0-to-1", "%zu of %zu pages on node %d", k, lb.n, slow);
  t = move_with_move_pages(&lb, fast);
  k = count_on(&lb, fast);
  check(t >= 0 && k == lb.n, "move_pages-1-to-0", "%zu of %zu pages on node %d", k, lb.n, fast);

  /* 3. mbind(MPOL_MF_MOVE) both ways. */
  t = move_with_mbind(b, bytes, slow);
  k = count_on(&lb, slow);
  check(t >= 0 && k == lb.n, "mbind-move-0-to-1", "%zu of %zu pages on node %d", k, lb.n, slow);
  t = move_with_mbind(b, bytes, fast);
  k = count_on(&lb, fast);
  check(t >= 0 && k == lb.n, "mbind-move-1-to-0", "%zu of %zu pages on node %d", k, lb.n, fast);

  /* 4. Bandwidth, best of reps for each method and direction; the data is touched between runs. */
  const char* method[2] = {"move_pages", "mbind"};
  double best[2][2] = {{1e30, 1e30}, {1e30, 1e30}};
  for (int rep = 0; rep < reps; rep++) {
    for (int m = 0; m < 2; m++) {
      for (int dir = 0; dir < 2; dir++) {
        int to = dir == 0 ? slow : fast;
        t = m == 0 ? move_with_move_pages(&lb, to) : move_with_mbind(b, bytes, to);
        if (t < 0 || count_on(&lb, to) != lb.n) {
          check(0, "bandwidth-run", "%s to node %d did not move every page", method[m], to);
          continue;
        }
        if (t < best[m][dir]) best[m][dir] = t;
      }
    }
  }
  for (int m = 0; m < 2; m++)
    for (int dir = 0; dir < 2; dir++)
      if (best[m][dir] < 1e30)
        printf("bandwidth method=%s from=%d to=%d mib=%zu gibps=%.3f\n", method[m], dir ? slow : fast,
               dir ? fast : slow, mib, (double)bytes / best[m][dir] / (double)(1u << 30));
  free_pages(&la);
  free_pages(&lb);
  munmap(a, bytes);
  munmap(b, bytes);
  printf("%s: %d check(s) failed\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
