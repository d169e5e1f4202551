/* A training-like loop with a known access schedule, run under libsentinel.so (run mode) in the
 * two-node guest. Every step makes 16 tracked allocations in a fixed order, so the in-step clock is the
 * allocation ordinal and interval i (of 16) runs from allocation i to allocation i+1:
 *
 *   interval 0       X   (input)          born, written
 *   intervals 1-4    A1..A4 (activations) born; A(k) = f(W(k-1), A(k-1))
 *   intervals 5-7    T5..T7 (temporaries) born, used, freed in the interval (short-lived)
 *   intervals 8-11   G8..G11 (gradients)  born; read A(12-i), W(11-i); A(12-i) freed
 *   intervals 12-15  U12..U15 (updates)   born, short-lived; W(i-12) updated; G(i+... ) freed at the end
 *
 * plus four weights W0..W3 made before the loop (persistent, outside steps). Every object has a size of
 * its own, so the checker can tell them apart by size. At the end of each interval (after its work,
 * before the next allocation) the program asks the kernel where each live object's pages are
 * (move_pages with no target, 8 pages sampled) and writes one line per object:
 *
 *   STEP INTERVAL NAME SIZE NODE ON0/PRESENT   (NODE: the node most sampled pages are on; -1: none
 *                                               present; ON0/PRESENT: of the sampled pages present, how
 *                                               many are on node 0, so that a split object shows)
 *
 * and prints a checksum of all data at the end, which must not depend on the library or the policy.
 * Options: --steps N (default 24), --reps R (passes over the buffers per interval, default 2),
 * --out FILE (observations; default none), --fork-at S (fork a child at step S that computes its own
 * checksum, allocates and frees buffers of the parent's sizes and exits, while migrations run),
 * --free-early (free each gradient as soon as it is read, to race the migrator), --pthread-exit (end
 * main with pthread_exit() while migrations may be under way: the process must still end), --huge (sizes
 * just under multiples of 2 MiB, so that transparent huge pages back the objects: docs/tiering.md), --marks
 * (call sentinel_step() at the start of every step, looked up with dlsym: steps given by the program).
 */
#include <dlfcn.h>
#include <numaif.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1024u * 1024u)
#define PAGE 4096u

struct buf {
  const char* name;
  unsigned char* p;
  size_t n;
};

static FILE* g_out;
static unsigned g_reps = 2;
static uint64_t g_sum;

static int g_huge;

static size_t size_of(const char* kind, int k) {
  /* Distinct sizes: W 4 MiB + k pages, X 2 MiB + 1 page, A 2 MiB + (2+k) pages, T 1 MiB + (10+k)
   * pages, G 2 MiB + (20+k) pages, U 1 MiB + (30+k) pages. With --huge each is as many pages short of
   * 2 MiB (W: 4 MiB): every object's slot is then of a size class that may hold huge pages. */
  if (g_huge) {
    switch (kind[0]) {
      case 'W':
        return 4 * MIB - (size_t)(1 + k) * PAGE;
      case 'X':
        return 2 * MIB - PAGE;
      case 'A':
        return 2 * MIB - (size_t)(2 + k) * PAGE;
      case 'T':
        return 2 * MIB - (size_t)(10 + k) * PAGE;
      case 'G':
        return 2 * MIB - (size_t)(20 + k) * PAGE;
      default:
        return 2 * MIB - (size_t)(30 + k) * PAGE;
    }
  }
  switch (kind[0]) {
    case 'W':
      return 4 * MIB + (size_t)k * PAGE;
    case 'X':
      return 2 * MIB + PAGE;
    case 'A':
      return 2 * MIB + (size_t)(2 + k) * PAGE;
    case 'T':
      return 1 * MIB + (size_t)(10 + k) * PAGE;
    case 'G':
      return 2 * MIB + (size_t)(20 + k) * PAGE;
    default:
      return 1 * MIB + (size_t)(30 + k) * PAGE;
  }
}

static void make(struct buf* b, const char* name, const char* kind, int k) {
  b->name = name;
  b->n = size_of(kind, k);
  b->p = malloc(b->n);
  if (!b->p) {
    fprintf(stderr, "schedule_loop: out of memory\n");
    exit(2);
  }
  memset(b->p, 0, b->n); /* the creator writes it (first touch), and nothing depends on old contents */
}

static void drop(struct buf* b) {
  free(b->p);
  b->p = NULL;
}

/* dst = f(src): every page read and written, `reps` times (the interval's compute time). */
static void work(struct buf* dst, const struct buf* src, uint64_t salt) {
  for (unsigned r = 0; r < g_reps; ++r) {
    for (size_t i = 0; i < dst->n; i += 64) {
      unsigned char s = src ? src->p[i % src->n] : (unsigned char)(i * 31 + salt);
      dst->p[i] = (unsigned char)(dst->p[i] * 7 + s + salt + r);
    }
  }
}

static void read_all(const struct buf* b) {
  uint64_t s = 0;
  for (unsigned r = 0; r < g_reps; ++r)
    for (size_t i = 0; i < b->n; i += 64) s += b->p[i];
  g_sum += s;
}

static void observe(int step, int interval, struct buf** live, int n) {
  if (!g_out) return;
  for (int k = 0; k < n; ++k) {
    struct buf* b = live[k];
    if (!b->p) continue;
    uintptr_t first = ((uintptr_t)b->p + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
    size_t pages = (b->n - (first - (uintptr_t)b->p)) / PAGE;
    void* pv[8];
    int st[8];
    int m = pages < 8 ? (int)pages : 8;
    for (int i = 0; i < m; ++i) pv[i] = (void*)(first + (m > 1 ? (size_t)i * (pages - 1) / (size_t)(m - 1) : 0) * PAGE);
    int node = -1, present = 0;
    int count[8] = {0};
    if (m > 0 && move_pages(0, (unsigned long)m, pv, NULL, st, 0) == 0) {
      for (int i = 0; i < m; ++i)
        if (st[i] >= 0 && st[i] < 8) count[st[i]]++, present++;
      int best = 0;
      for (int i = 1; i < 8; ++i)
        if (count[i] > count[best]) best = i;
      node = count[best] ? best : -1;
    }
    fprintf(g_out, "%d %d %s %zu %d %d/%d\n", step, interval, b->name, b->n, node, count[0], present);
  }
}

static uint64_t checksum(struct buf* w) {
  uint64_t s = g_sum;
  for (int k = 0; k < 4; ++k)
    for (size_t i = 0; i < w[k].n; i += 64) s = s * 1099511628211ull + w[k].p[i];
  return s;
}

int main(int argc, char** argv) {
  int steps = 24, fork_at = -1, free_early = 0, end_with_pthread_exit = 0;
  void (*mark)(void) = NULL;
  const char* out = NULL;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--steps") && i + 1 < argc)
      steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      g_reps = (unsigned)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--out") && i + 1 < argc)
      out = argv[++i];
    else if (!strcmp(argv[i], "--fork-at") && i + 1 < argc)
      fork_at = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--free-early"))
      free_early = 1;
    else if (!strcmp(argv[i], "--pthread-exit"))
      end_with_pthread_exit = 1;
    else if (!strcmp(argv[i], "--huge"))
      g_huge = 1;
    else if (!strcmp(argv[i], "--marks"))
      mark = (void (*)(void))dlsym(RTLD_DEFAULT, "sentinel_step");
    else {
      fprintf(stderr,
              "usage: schedule_loop [--steps N] [--reps R] [--out FILE] [--fork-at S] [--free-early] [--pthread-exit] "
              "[--huge] [--marks]\n");
      return 2;
    }
  }
  if (out && !(g_out = fopen(out, "w"))) {
    perror(out);
    return 2;
  }
  static const char* wn[4] = {"W0", "W1", "W2", "W3"};
  static const char* an[5] = {"X", "A1", "A2", "A3", "A4"};
  static const char* tn[3] = {"T5", "T6", "T7"};
  static const char* gn[4] = {"G8", "G9", "G10", "G11"};
  static const char* un[4] = {"U12", "U13", "U14", "U15"};
  struct buf w[4], a[5], t, g[4], u;
  for (int k = 0; k < 4; ++k) {
    make(&w[k], wn[k], "W", k);
    work(&w[k], NULL, (uint64_t)k + 1);
  }
  memset(a, 0, sizeof(a));
  memset(g, 0, sizeof(g));
  for (int s = 0; s < steps; ++s) {
    if (s == fork_at) {
      pid_t pid = fork();
      if (pid == 0) { /* the child computes on what it inherited, while the parent's pages move */
        uint64_t c = checksum(w);
        for (int k = 0; k < 3; ++k) { /* the child's own allocations: placed by no plan, moved by nobody */
          struct buf x;
          make(&x, "child", "C", k);
          work(&x, &w[k], (uint64_t)k);
          c ^= x.p[0];
          drop(&x);
        }
        _exit(c == 0 ? 3 : 0);
      }
      int status = 0;
      if (pid > 0) waitpid(pid, &status, 0);
      if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "schedule_loop: forked child failed (status %d)\n", status);
        return 1;
      }
    }
    if (mark) mark();
    struct buf* live[16];
    int nl;
    for (int i = 0; i < 16; ++i) {
      nl = 0;
      for (int k = 0; k < 4; ++k) live[nl++] = &w[k];
      if (i == 0) {
        make(&a[0], an[0], "X", 0);
        work(&a[0], NULL, (uint64_t)s);
      } else if (i <= 4) {
        make(&a[i], an[i], "A", i);
        work(&a[i], &w[i - 1], (uint64_t)i);
        read_all(&a[i - 1]);
      } else if (i <= 7) {
        make(&t, tn[i - 5], "T", i - 5);
        work(&t, &a[4], (uint64_t)i);
        read_all(&t);
        drop(&t);
      } else if (i <= 11) {
        int j = i - 8; /* layer 3, 2, 1, 0 */
        make(&g[j], gn[j], "G", j);
        work(&g[j], &a[4 - j], (uint64_t)i);
        read_all(&w[3 - j]);
        drop(&a[4 - j]);
        if (free_early) drop(&g[j]);
      } else {
        int j = i - 12;
        make(&u, un[j], "U", j);
        if (g[3 - j].p)
          work(&u, &g[3 - j], (uint64_t)i);
        else
          work(&u, NULL, (uint64_t)i);
        work(&w[j], &u, (uint64_t)i);
        drop(&u);
        if (g[3 - j].p) drop(&g[3 - j]);
      }
      for (int k = 0; k < 5; ++k) live[nl++] = &a[k];
      for (int k = 0; k < 4; ++k) live[nl++] = &g[k];
      observe(s, i, live, nl > 16 ? 16 : nl);
    }
    if (a[0].p) drop(&a[0]);
  }
  if (g_out) fclose(g_out);
  printf("schedule_loop: %d steps, checksum %016llx\n", steps, (unsigned long long)checksum(w));
  if (g_huge) { /* how much of the process huge pages back now (the weights are alive) */
    FILE* f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    while (f && fgets(line, sizeof(line), f))
      if (!strncmp(line, "AnonHugePages:", 14)) fprintf(stderr, "schedule_loop: %s", line);
    if (f) fclose(f);
  }
  if (end_with_pthread_exit) {
    fflush(stdout);
    pthread_exit(NULL);
  }
  return 0;
}
