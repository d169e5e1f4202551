/* Tracked allocations in bursts with quiet gaps between them, from two threads: the shape of a training
 * step (a layer's tensors, then compute). Between bursts Sentinel's drain thread sleeps until the tracked
 * path wakes it (docs/architecture.md, drain_thread); every event must still be sequenced, so the dump
 * holds every object, with births before deaths. The check asks the dump for the wake-ups. */
#include <pthread.h>
#include <time.h>

#include "common.h"

enum { kBursts = 24, kPerBurst = 6, kGapMs = 4 };

static void sleep_ms(int ms) {
  struct timespec ts = {0, ms * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* One burst: kPerBurst objects of `size`, written, then freed in reverse. Returns a checksum of what
 * was read back, so that the compiler keeps the writes. */
static unsigned burst(size_t size, unsigned seed) {
  unsigned char* p[kPerBurst];
  unsigned sum = 0;
  for (int i = 0; i < kPerBurst; ++i) {
    p[i] = malloc(t_opaque(size));
    if (!p[i]) {
      printf("malloc(%zu) failed\n", size);
      exit(1);
    }
    memset(p[i], (int)(seed + i), size);
  }
  for (int i = kPerBurst - 1; i >= 0; --i) {
    sum += p[i][size / 2];
    free(p[i]);
  }
  return sum;
}

static void* worker(void* arg) {
  unsigned* sum = arg;
  for (int b = 0; b < kBursts; ++b) {
    *sum += burst(64 * 1024, (unsigned)b);
    sleep_ms(kGapMs + 1);
  }
  return NULL;
}

int main(void) {
  unsigned main_sum = 0, worker_sum = 0;
  pthread_t t;
  if (pthread_create(&t, NULL, worker, &worker_sum) != 0) {
    printf("pthread_create failed\n");
    return 1;
  }
  for (int b = 0; b < kBursts; ++b) {
    main_sum += burst(256 * 1024, (unsigned)b);
    sleep_ms(kGapMs);
  }
  pthread_join(t, NULL);
  printf("bursts %d x %d, checksums %u %u\n", kBursts, kPerBurst, main_sum, worker_sum);
  return 0;
}
