/* 8 threads hand blocks to each other: thread i allocates (malloc, calloc, posix_memalign, aligned_alloc,
 * realloc), fills with a pattern and passes the block to thread (i+1)%8 and, every third block, to (i+3)%8; the
 * receiver verifies the content, sometimes reallocs it, and frees it. Sizes 16 B .. 4 MiB, mostly small.
 * Output: per-thread totals that do not depend on scheduling. */
#include <malloc.h>
#include <pthread.h>
#include <time.h>

#include "common.h"

int t_failures;

enum { NTHREADS = 8, PER_THREAD = 3000, QCAP = 16 };

struct item {
  unsigned char* p;
  size_t n;
  uint64_t seed;
  int from;
};

struct queue {
  pthread_mutex_t mu;
  pthread_cond_t not_empty, not_full;
  struct item buf[QCAP];
  int head, count, producers_done;
};

static struct queue queues[NTHREADS];
static int expected_in[NTHREADS];

struct result {
  uint64_t produced_bytes, consumed_bytes, checksum_in;
  int produced, consumed, bad;
};
static struct result results[NTHREADS];

static int try_pop(struct queue* q, struct item* out);
static void consume(int self, struct item* it);

/* Pushes to q; while q is full, keeps draining our own queue so that a cycle of full queues cannot
 * deadlock. Returns the number of items this thread consumed meanwhile. */
static int push(int self, struct queue* q, struct item it) {
  int drained = 0;
  pthread_mutex_lock(&q->mu);
  while (q->count == QCAP) {
    pthread_mutex_unlock(&q->mu);
    struct item in;
    int got = 0;
    while (try_pop(&queues[self], &in)) {
      consume(self, &in);
      drained++;
      got++;
    }
    pthread_mutex_lock(&q->mu);
    if (q->count == QCAP && !got) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 1000000;
      if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
      }
      pthread_cond_timedwait(&q->not_full, &q->mu, &ts);
    }
  }
  q->buf[(q->head + q->count) % QCAP] = it;
  q->count++;
  pthread_cond_signal(&q->not_empty);
  pthread_mutex_unlock(&q->mu);
  return drained;
}

/* Non-blocking pop: 1 when an item was taken. */
static int try_pop(struct queue* q, struct item* out) {
  int got = 0;
  pthread_mutex_lock(&q->mu);
  if (q->count > 0) {
    *out = q->buf[q->head];
    q->head = (q->head + 1) % QCAP;
    q->count--;
    got = 1;
    pthread_cond_signal(&q->not_full);
  }
  pthread_mutex_unlock(&q->mu);
  return got;
}

static size_t pick_size(uint64_t* s) {
  uint64_t r = t_rand(s);
  switch (r % 16) {
    case 0:
      return (size_t)(4096 + (r >> 8) % ((4u << 20) - 4096 + 1)); /* up to 4 MiB */
    case 1:
    case 2:
      return (size_t)(4096 + (r >> 8) % 65536);
    case 3:
      return 4096;
    case 4:
      return 4095;
    default:
      return (size_t)(16 + (r >> 8) % 4000);
  }
}

static uint64_t block_sum(const unsigned char* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  /* Only bytes that t_fill_sparse wrote (the rest is uninitialised). */
  for (size_t i = 0; i < n; i += 61 * 3) h = (h ^ p[i]) * 1099511628211ull;
  for (size_t i = n > 64 ? n - 64 : 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h ^ n;
}

static void consume(int self, struct item* it) {
  struct result* r = &results[self];
  if (!t_check_sparse(it->p, it->n, it->seed)) r->bad++;
  r->checksum_in += block_sum(it->p, it->n) ^ ((uint64_t)it->from << 56);
  r->consumed_bytes += it->n;
  r->consumed++;
  /* Every 5th block is realloced by the receiver (cross-thread realloc) before being freed. */
  if ((it->seed % 5) == 0) {
    size_t m = (it->seed % 2) ? it->n * 2 + 1 : it->n / 2 + 1;
    unsigned char* q = realloc(it->p, m);
    if (!q) {
      r->bad++;
      free(it->p);
      return;
    }
    size_t keep = m < it->n ? m : it->n;
    for (size_t i = 0; i < keep; i += 61)
      if (q[i] != t_pat(it->seed, i)) {
        r->bad++;
        break;
      }
    memset(q, 0x77, m);
    free(q);
  } else {
    free(it->p);
  }
}

static void* worker(void* arg) {
  int self = (int)(intptr_t)arg;
  uint64_t s = 0x1234 + (uint64_t)self * 7777;
  struct result* r = &results[self];
  int produced = 0;
  int received = 0;
  while (produced < PER_THREAD || received < expected_in[self]) {
    if (produced < PER_THREAD) {
      size_t n = pick_size(&s);
      uint64_t seed = ((uint64_t)self << 32) | (uint64_t)produced;
      unsigned char* p = NULL;
      switch (produced % 5) {
        case 0:
          p = malloc(n);
          break;
        case 1:
          p = calloc(1, n);
          break;
        case 2:
          if (posix_memalign((void**)&p, 64, n)) p = NULL;
          break;
        case 3:
          p = aligned_alloc(4096, n);
          break;
        default: {
          /* Grown by realloc from a smaller block of this thread. */
          p = malloc(n / 3 + 1);
          if (p) p[0] = 1;
          unsigned char* q = realloc(p, n);
          if (!q) free(p);
          p = q;
        }
      }
      if (!p) {
        r->bad++;
        produced++;
        continue;
      }
      t_fill_sparse(p, n, seed);
      r->produced_bytes += n;
      r->produced++;
      int to = (produced % 3 == 0) ? (self + 3) % NTHREADS : (self + 1) % NTHREADS;
      struct item it = {p, n, seed, self};
      produced++;
      /* Never block on a full queue while our own queue is full too: drain first. */
      struct item in;
      while (try_pop(&queues[self], &in)) {
        consume(self, &in);
        received++;
      }
      received += push(self, &queues[to], it);
    } else {
      struct item in;
      pthread_mutex_lock(&queues[self].mu);
      while (queues[self].count == 0) pthread_cond_wait(&queues[self].not_empty, &queues[self].mu);
      pthread_mutex_unlock(&queues[self].mu);
      while (try_pop(&queues[self], &in)) {
        consume(self, &in);
        received++;
      }
    }
  }
  return NULL;
}

struct leftovers {
  void* p[4];
  size_t n[4];
};

static void* short_lived(void* arg) {
  int id = (int)(intptr_t)arg;
  struct leftovers* l = malloc(sizeof *l);
  if (!l) return NULL;
  static const size_t sz[4] = {5000, 100, 300000, 4096};
  for (int k = 0; k < 4; k++) {
    l->n[k] = sz[k] + (size_t)id;
    l->p[k] = malloc(l->n[k]);
    if (!l->p[k]) return NULL;
    t_fill_sparse(l->p[k], l->n[k], (uint64_t)id * 4 + (uint64_t)k);
  }
  /* Some allocation that dies with the thread. */
  void* tmp = calloc(1, 20000);
  free(tmp);
  return l;
}

int main(void) {
  for (int i = 0; i < NTHREADS; i++) {
    pthread_mutex_init(&queues[i].mu, NULL);
    pthread_cond_init(&queues[i].not_empty, NULL);
    pthread_cond_init(&queues[i].not_full, NULL);
  }
  /* Thread i receives from i-1 the blocks with produced % 3 != 0 and from i-3 those with produced % 3 == 0:
   * PER_THREAD blocks in all. */
  for (int i = 0; i < NTHREADS; i++) expected_in[i] = PER_THREAD;
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    if (pthread_create(&th[i], NULL, worker, (void*)(intptr_t)i)) {
      printf("pthread_create failed\n");
      return 1;
    }
  }
  for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);

  /* Thread churn: 256 short-lived threads, 16 at a time, each leaving blocks (tracked and untracked) that
   * outlive it and are freed by the main thread. */
  int churn_bad = 0;
  for (int batch = 0; batch < 16; batch++) {
    pthread_t ct[16];
    for (int i = 0; i < 16; i++) pthread_create(&ct[i], NULL, short_lived, (void*)(intptr_t)(batch * 16 + i));
    for (int i = 0; i < 16; i++) {
      void* res = NULL;
      pthread_join(ct[i], &res);
      struct leftovers* l = res;
      if (!l) {
        churn_bad++;
        continue;
      }
      for (int k = 0; k < 4; k++) {
        if (!t_check_sparse(l->p[k], l->n[k], (uint64_t)(batch * 16 + i) * 4 + (uint64_t)k)) churn_bad++;
        free(l->p[k]);
      }
      free(l);
    }
  }
  printf("256 short-lived threads: blocks freed after thread exit, bad %d\n", churn_bad);

  uint64_t total_bytes = 0, total_sum = 0;
  int bad = 0;
  for (int i = 0; i < NTHREADS; i++) {
    printf("thread %d: produced %d blocks (%llu bytes), consumed %d blocks (%llu bytes), bad %d\n", i,
           results[i].produced, (unsigned long long)results[i].produced_bytes, results[i].consumed,
           (unsigned long long)results[i].consumed_bytes, results[i].bad);
    total_bytes += results[i].consumed_bytes;
    total_sum += results[i].checksum_in;
    bad += results[i].bad;
  }
  printf("total consumed bytes %llu, content checksum %016llx, bad %d\n", (unsigned long long)total_bytes,
         (unsigned long long)total_sum, bad);
  return (bad || churn_bad) ? 1 : 0;
}
