/* Steps a program marks with sentinel_step() (SENTINEL_STEP=N alike: the harness runs both): each step
 * allocates ten tracked buffers a millisecond apart, then spends 8 ms allocating nothing, as an optimizer
 * step updating its state in place does. The marked phase's first step is its lock, so its plain intervals
 * are timed: the last one, from the tenth allocation to the next step, lasts at least the 8 ms spin
 * (check_dump.py --plan-last-interval-ms). sentinel_step is looked up with dlsym, so the plain run prints
 * the same. */
#include <dlfcn.h>
#include <time.h>

#include "common.h"

enum { kSteps = 24, kBuffers = 10 };

static void spin_us(long us) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do clock_gettime(CLOCK_MONOTONIC, &b);
  while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

int main(void) {
  void (*mark)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "sentinel_step");
  unsigned char* state = malloc(1u << 20);  // the "optimizer state", updated in the quiet stretch
  if (!state) return 1;
  memset(state, 0, 1u << 20);
  unsigned long sum = 0;
  for (int s = 0; s < kSteps; ++s) {
    if (mark) mark();
    unsigned char* b[kBuffers];
    for (int i = 0; i < kBuffers; ++i) {
      b[i] = malloc(t_opaque(65536 + (size_t)i * 4096));
      if (!b[i]) return 1;
      memset(b[i], i + s, 65536);
      spin_us(1000);
    }
    for (int i = 0; i < kBuffers; ++i) {
      sum += b[i][i];
      free(b[i]);
    }
    for (size_t k = 0; k < (1u << 20); k += 4096) state[k] = (unsigned char)(state[k] + s);
    spin_us(8000);
  }
  for (size_t k = 0; k < (1u << 20); k += 4096) sum += state[k];
  printf("%d steps, checksum %lu\n", kSteps, sum);
  free(state);
  return 0;
}
