/* hook_bench: cost of an allocation + free, per size, for comparing glibc with libsentinel.so preloaded.
 *
 * Patterns (each measured with 1 thread and with 2 threads running at the same time):
 *   pair     p = malloc(n); free(p);                      the "malloc+free pair"
 *   align64  posix_memalign(&p, 64, n); free(p);           what PyTorch's CPU allocator (c10::alloc_cpu) does
 *   ring16   free(slot[i]); slot[i] = malloc(n); i = (i+1)%16  16 objects live at any time (registry with entries)
 * Result: nanoseconds per allocation+free over 21 timed batches of a fixed number of operations (default
 * 3000 per batch per thread, after 1000 warm-up operations):
 *   cpu_ns     CPU time of the measuring threads (CLOCK_THREAD_CPUTIME_ID, user + system) / operations: counts
 *              every cost, also those paid once in a while such as a page fault when a log of the runtime
 *              grows, but not the time the thread spent preempted by other load (nor blocked on a futex);
 *   mean_ns    wall time / operations (also counts preemption and blocking);
 *   median_ns, min_ns  over batches, wall time: the common path alone (a batch that neither grew anything
 *              nor was preempted is the minimum).
 * The counts are fixed, not calibrated by time, so that every run does the same work: with the defaults one
 * process makes about 2.9 million tracked allocations in all (5 tracked sizes, 3 patterns, 1 + 2 threads), below
 * Sentinel's default object-log capacity (SENTINEL_MAX_OBJECTS, 4 Mi objects), so every tracked figure is taken while
 * the runtime is still logging each object (its costlier state; once the log is full, objects are counted but no longer
 * logged).
 *
 * First-touch page faults are excluded on purpose: the memory is never written, so neither glibc nor Sentinel
 * pays for faulting pages in (which would dominate large sizes and is the same work for both). Note glibc's
 * dynamic mmap threshold: after the first free of an mmapped chunk (>= 128 KiB) glibc raises its threshold, so
 * in the steady state measured here glibc serves every size from its heap without mmap/munmap (the warm-up
 * does that first free; exception: ring16 with 2 threads at 4M/16M, whose second arena cannot hold 16 of
 * them). That is glibc's real behaviour for a program that repeats allocations, as training loops do.
 *
 * Same-process glibc figures (default; --no-libc turns them off): every batch is paired with a batch of the same
 * work through glibc's own entry points (__libc_malloc, __libc_free, __libc_memalign), which libsentinel.so
 * does not interpose; the two alternate (which goes first alternates too), so that noise from other load on
 * the machine, CPU placement and frequency falls on both alike. Under the library this gives glibc's cost in
 * the very same process and moment; without it, both paths are glibc and their ratio is a check (~1.00).
 *
 * Usage: hook_bench [--json] [--quick] [--pairs N] [--batches N] [--sizes a,b,...] [--threads a,b]
 *                   [--patterns p,q] [--no-libc]
 * Prints a table, or with --json one JSON object (used by scripts/bench-hooks).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_ITEMS 32
#define RING 16
#define WARMUP 1000

enum pattern { PAIR, ALIGN64, RING16, NPATTERNS };
static const char* const pattern_names[NPATTERNS] = {"pair", "align64", "ring16"};

static inline void escape(void* p) {
  __asm__ __volatile__("" : : "g"(p) : "memory");
}

static double clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}
static double now_ns(void) {
  return clock_ns(CLOCK_MONOTONIC);
}
static double cpu_ns(void) {
  return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* glibc's own entry points: exported by libc.so.6 and never interposed by libsentinel.so, so a process that
 * has the library preloaded can time glibc's allocator in the same process, batch for batch. */
extern void* __libc_malloc(size_t size);
extern void __libc_free(void* ptr);
extern void* __libc_memalign(size_t alignment, size_t size);

static int libc_posix_memalign(void** out, size_t alignment, size_t size) {
  *out = __libc_memalign(alignment, size);
  return *out ? 0 : ENOMEM;
}

/* Runs n allocation+free operations of size sz with the given pattern, through MALLOC/FREE/MEMALIGN. ring is
 * this thread's ring state for that allocator. */
#define DEFINE_RUN_OPS(NAME, MALLOC, FREE, MEMALIGN)                       \
  static void NAME(enum pattern pat, size_t sz, uint64_t n, void** ring) { \
    switch (pat) {                                                         \
      case PAIR:                                                           \
        for (uint64_t i = 0; i < n; i++) {                                 \
          void* p = MALLOC(sz);                                            \
          escape(p);                                                       \
          FREE(p);                                                         \
        }                                                                  \
        break;                                                             \
      case ALIGN64:                                                        \
        for (uint64_t i = 0; i < n; i++) {                                 \
          void* p = NULL;                                                  \
          if (MEMALIGN(&p, 64, sz) != 0) abort();                          \
          escape(p);                                                       \
          FREE(p);                                                         \
        }                                                                  \
        break;                                                             \
      case RING16: {                                                       \
        unsigned k = 0;                                                    \
        for (uint64_t i = 0; i < n; i++) {                                 \
          FREE(ring[k]);                                                   \
          ring[k] = MALLOC(sz);                                            \
          escape(ring[k]);                                                 \
          k = (k + 1) % RING;                                              \
        }                                                                  \
        break;                                                             \
      }                                                                    \
      default:                                                             \
        abort();                                                           \
    }                                                                      \
  }
DEFINE_RUN_OPS(run_ops, malloc, free, posix_memalign)                         /* the program's view */
DEFINE_RUN_OPS(run_ops_libc, __libc_malloc, __libc_free, libc_posix_memalign) /* glibc, never hooked */

struct job {
  enum pattern pat;
  size_t sz;
  uint64_t n;
  int batches;
  int with_libc; /* also time glibc directly, alternating with the normal path batch by batch */
  pthread_barrier_t* barrier;
  double* elapsed;      /* [batches] wall time */
  double* elapsed_libc; /* [batches] */
  double cpu, cpu_libc; /* CPU time of this thread in all batches */
};

static void* worker(void* arg) {
  struct job* j = arg;
  void *ring[RING] = {0}, *ring_libc[RING] = {0};
  run_ops(j->pat, j->sz, WARMUP, ring); /* warm-up: caches, glibc's mmap threshold, Sentinel's sites */
  if (j->with_libc) run_ops_libc(j->pat, j->sz, WARMUP, ring_libc);
  for (int b = 0; b < j->batches; b++) {
    for (int half = 0; half < (j->with_libc ? 2 : 1); half++) {
      int libc = j->with_libc && (half ^ (b & 1)); /* odd batches time glibc first */
      pthread_barrier_wait(j->barrier);
      double c0 = cpu_ns();
      double t0 = now_ns();
      if (libc)
        run_ops_libc(j->pat, j->sz, j->n, ring_libc);
      else
        run_ops(j->pat, j->sz, j->n, ring);
      (libc ? j->elapsed_libc : j->elapsed)[b] = now_ns() - t0;
      *(libc ? &j->cpu_libc : &j->cpu) += cpu_ns() - c0;
    }
  }
  for (int k = 0; k < RING; k++) {
    free(ring[k]);
    __libc_free(ring_libc[k]);
  }
  return NULL;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

struct stat3 {
  double cpu_ns;                     /* CPU time of the threads per operation: not counting preemption */
  double mean_ns, median_ns, min_ns; /* wall time per operation, over batches */
};
struct result {
  struct stat3 hooked, libc;
};

/* Per batch, the slower thread's time per operation; then mean, median and minimum over batches. */
static struct stat3 summarize(double elapsed[][64], int nthreads, int batches, uint64_t n) {
  double per_batch[64];
  double sum = 0;
  for (int b = 0; b < batches; b++) {
    double worst = 0;
    for (int t = 0; t < nthreads; t++)
      if (elapsed[t][b] > worst) worst = elapsed[t][b];
    per_batch[b] = worst / (double)n;
    sum += per_batch[b];
  }
  qsort(per_batch, (size_t)batches, sizeof per_batch[0], cmp_double);
  struct stat3 r;
  r.median_ns = batches % 2 ? per_batch[batches / 2] : (per_batch[batches / 2 - 1] + per_batch[batches / 2]) / 2;
  r.min_ns = per_batch[0];
  r.mean_ns = sum / batches;
  return r;
}

static struct result measure(enum pattern pat, size_t sz, int nthreads, uint64_t n, int batches, int with_libc) {
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);
  struct job jobs[8];
  static double elapsed[8][64], elapsed_libc[8][64];
  pthread_t tids[8];
  for (int t = 0; t < nthreads; t++) {
    jobs[t] = (struct job){pat, sz, n, batches, with_libc, &barrier, elapsed[t], elapsed_libc[t], 0, 0};
    if (t > 0 && pthread_create(&tids[t], NULL, worker, &jobs[t]) != 0) {
      perror("pthread_create");
      exit(1);
    }
  }
  worker(&jobs[0]);
  for (int t = 1; t < nthreads; t++) pthread_join(tids[t], NULL);
  pthread_barrier_destroy(&barrier);
  struct result r;
  r.hooked = summarize(elapsed, nthreads, batches, n);
  memset(&r.libc, 0, sizeof r.libc);
  if (with_libc) r.libc = summarize(elapsed_libc, nthreads, batches, n);
  double cpu = 0, cpu_libc = 0;
  for (int t = 0; t < nthreads; t++) cpu += jobs[t].cpu, cpu_libc += jobs[t].cpu_libc;
  r.hooked.cpu_ns = cpu / ((double)nthreads * (double)n * batches);
  if (with_libc) r.libc.cpu_ns = cpu_libc / ((double)nthreads * (double)n * batches);
  return r;
}

static size_t parse_size(const char* s) {
  char* end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) return 0;
  switch (*end) {
    case 'k':
    case 'K':
      v <<= 10;
      end++;
      break;
    case 'm':
    case 'M':
      v <<= 20;
      end++;
      break;
    case 'g':
    case 'G':
      v <<= 30;
      end++;
      break;
    default:
      break;
  }
  if (*end == 'i' || *end == 'B') end++; /* accept KiB / KB / K */
  if (*end == 'B') end++;
  return *end ? 0 : (size_t)v;
}

/* Splits a comma list into out[]; returns the count or -1. */
static int split(char* s, char** out, int max) {
  int n = 0;
  for (char* tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
    if (n == max) return -1;
    out[n++] = tok;
  }
  return n;
}

static void usage(void) {
  fprintf(stderr,
          "usage: hook_bench [--json] [--quick] [--pairs N] [--batches N] [--sizes a,b,...] "
          "[--threads 1,2] [--patterns pair,align64,ring16] [--no-libc]\n");
  exit(2);
}

int main(int argc, char** argv) {
  size_t sizes[MAX_ITEMS] = {16, 64, 256, 1024, 8192, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20};
  int nsizes = 10;
  int threads[MAX_ITEMS] = {1, 2};
  int nthreads = 2;
  int patterns[NPATTERNS] = {PAIR, ALIGN64, RING16};
  int npatterns = NPATTERNS;
  uint64_t pairs = 3000;
  int batches = 21;
  int json = 0;
  int with_libc = 1;

  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    char* items[MAX_ITEMS];
    if (!strcmp(a, "--json")) {
      json = 1;
    } else if (!strcmp(a, "--no-libc")) {
      with_libc = 0;
    } else if (!strcmp(a, "--quick")) {
      batches = 7;
    } else if (!strcmp(a, "--pairs") && v) {
      pairs = strtoull(v, NULL, 10), i++;
      if (pairs < 1) usage();
    } else if (!strcmp(a, "--batches") && v) {
      batches = atoi(v), i++;
      if (batches < 1 || batches > 64) usage();
    } else if (!strcmp(a, "--sizes") && v) {
      char* copy = strdup(v);
      nsizes = split(copy, items, MAX_ITEMS), i++;
      if (nsizes <= 0) usage();
      for (int k = 0; k < nsizes; k++)
        if (!(sizes[k] = parse_size(items[k]))) usage();
    } else if (!strcmp(a, "--threads") && v) {
      char* copy = strdup(v);
      nthreads = split(copy, items, MAX_ITEMS), i++;
      if (nthreads <= 0) usage();
      for (int k = 0; k < nthreads; k++)
        if ((threads[k] = atoi(items[k])) < 1 || threads[k] > 8) usage();
    } else if (!strcmp(a, "--patterns") && v) {
      char* copy = strdup(v);
      npatterns = split(copy, items, NPATTERNS), i++;
      if (npatterns <= 0) usage();
      for (int k = 0; k < npatterns; k++) {
        patterns[k] = -1;
        for (int p = 0; p < NPATTERNS; p++)
          if (!strcmp(items[k], pattern_names[p])) patterns[k] = p;
        if (patterns[k] < 0) usage();
      }
    } else {
      usage();
    }
  }

  /* Which runtime is in this process: Sentinel exports sentinel_mode() (include/sentinel/sentinel.h). */
  const char* (*mode_fn)(void) = (const char* (*)(void))dlsym(RTLD_DEFAULT, "sentinel_mode");
  const char* mode = mode_fn ? mode_fn() : "none";

  if (json)
    printf("{\"sentinel_mode\": \"%s\", \"pairs_per_batch\": %llu, \"batches\": %d, \"results\": [", mode,
           (unsigned long long)pairs, batches);
  else
    printf(
        "hook_bench: sentinel_mode=%s, %d batches of %llu operations, ns per allocation+free%s\n"
        "%-8s %7s %10s %10s %10s %10s %10s %10s %10s\n",
        mode, batches, (unsigned long long)pairs, with_libc ? " (libc_: glibc called directly, same process)" : "",
        "pattern", "threads", "size", "cpu_ns", "mean_ns", "median_ns", "min_ns", "libc_cpu", "libc_min");
  int first = 1;
  for (int p = 0; p < npatterns; p++)
    for (int t = 0; t < nthreads; t++)
      for (int s = 0; s < nsizes; s++) {
        struct result r = measure((enum pattern)patterns[p], sizes[s], threads[t], pairs, batches, with_libc);
        if (json) {
          printf(
              "%s\n  {\"pattern\": \"%s\", \"threads\": %d, \"size\": %zu, \"cpu_ns\": %.3f, \"mean_ns\": %.3f, "
              "\"median_ns\": %.3f, \"min_ns\": %.3f",
              first ? "" : ",", pattern_names[patterns[p]], threads[t], sizes[s], r.hooked.cpu_ns, r.hooked.mean_ns,
              r.hooked.median_ns, r.hooked.min_ns);
          if (with_libc)
            printf(", \"libc_cpu_ns\": %.3f, \"libc_mean_ns\": %.3f, \"libc_median_ns\": %.3f, \"libc_min_ns\": %.3f",
                   r.libc.cpu_ns, r.libc.mean_ns, r.libc.median_ns, r.libc.min_ns);
          printf("}");
          first = 0;
        } else {
          printf("%-8s %7d %10zu %10.2f %10.2f %10.2f %10.2f", pattern_names[patterns[p]], threads[t], sizes[s],
                 r.hooked.cpu_ns, r.hooked.mean_ns, r.hooked.median_ns, r.hooked.min_ns);
          if (with_libc) printf(" %10.2f %10.2f", r.libc.cpu_ns, r.libc.min_ns);
          printf("\n");
        }
        fflush(stdout);
      }
  /* Counters of the runtime at the end (tracked objects so far, memory Sentinel committed for itself). */
  struct stats {
    uint64_t tracked_allocations, tracked_frees, live_bytes, peak_live_bytes, overhead_bytes, steps;
  } st;
  int (*stats_fn)(struct stats*) = (int (*)(struct stats*))dlsym(RTLD_DEFAULT, "sentinel_get_stats");
  int have_stats = stats_fn && stats_fn(&st) == 0;
  if (json) {
    printf("\n]");
    if (have_stats)
      printf(", \"tracked_allocations\": %llu, \"overhead_bytes\": %llu", (unsigned long long)st.tracked_allocations,
             (unsigned long long)st.overhead_bytes);
    printf("}\n");
  } else if (have_stats) {
    printf("sentinel: %llu objects tracked, %llu bytes of overhead at the end\n",
           (unsigned long long)st.tracked_allocations, (unsigned long long)st.overhead_bytes);
  }
  return 0;
}
