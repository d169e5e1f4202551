/* Allocates tracked objects (some freed, some alive, one freed by another thread) and ends with _exit(3):
 * no atexit handler and no destructor runs, so the runtime has to write its dump from its _exit hook. */
#include <pthread.h>
#include <unistd.h>

#include "common.h"

int t_failures;

static void handler(void) {
  printf("atexit handler ran (it must not)\n");
}

static void* freer(void* p) {
  free(p);
  return NULL;
}

int main(void) {
  atexit(handler);
  void* live[8];
  for (int i = 0; i < 8; i++) {
    size_t n = (size_t)4096 << i;
    live[i] = malloc(n);
    memset(live[i], i + 1, n);
  }
  for (int i = 0; i < 8; i += 2) free(live[i]);
  void* p = NULL;
  if (posix_memalign(&p, 64, 1u << 20) == 0) memset(p, 7, 1u << 20);
  pthread_t t;
  pthread_create(&t, NULL, freer, p);
  pthread_join(t, NULL);
  void* small = malloc(100);
  memset(small, 1, 100);
  printf("allocated; calling _exit(3)\n");
  fflush(stdout);
  /* This line stays in the stdio buffer: _exit does not flush it. */
  printf("unflushed line (must not appear)\n");
  _exit(3);
}
