/* A library loaded with dlopen by dlopen_main: allocates in its constructor, exports functions that allocate. */
#include <malloc.h>

#include "common.h"

static unsigned char *ctor_big, *ctor_small;
static int ctor_runs;

__attribute__((constructor)) static void lib_init(void) {
  ctor_big = malloc(65536);
  ctor_small = malloc(100);
  if (ctor_big) t_fill(ctor_big, 65536, 11);
  if (ctor_small) t_fill(ctor_small, 100, 12);
  ctor_runs++;
}

__attribute__((destructor)) static void lib_fini(void) {
  free(ctor_big);
  free(ctor_small);
  ctor_big = ctor_small = NULL;
}

__attribute__((visibility("default"))) int dl_ctor_ok(void) {
  return ctor_runs == 1 && ctor_big && ctor_small && t_check(ctor_big, 65536, 11) && t_check(ctor_small, 100, 12);
}

/* Allocates n blocks of mixed sizes, verifies and frees them; returns a checksum of the sizes and contents. */
__attribute__((visibility("default"))) unsigned long long dl_work(int n) {
  unsigned long long sum = 0;
  uint64_t s = 3;
  for (int i = 0; i < n; i++) {
    size_t len = (i % 3 == 0) ? 4096 + (size_t)(t_rand(&s) % 500000) : 1 + (size_t)(t_rand(&s) % 4000);
    unsigned char* p = (i % 4 == 1) ? calloc(1, len) : malloc(len);
    if (!p) return 0;
    t_fill_sparse(p, len, (uint64_t)i);
    if (i % 5 == 0) {
      unsigned char* q = realloc(p, len * 2);
      if (!q) return 0;
      p = q;
    }
    if (!t_check_sparse(p, len, (uint64_t)i)) return 0;
    sum = sum * 31 + len + p[len - 1];
    free(p);
  }
  return sum;
}

/* Memory handed to the caller, freed there. */
__attribute__((visibility("default"))) void* dl_alloc(size_t len, uint64_t seed) {
  void* p = malloc(len);
  if (p) t_fill_sparse(p, len, seed);
  return p;
}

/* Frees memory the caller allocated (not under RTLD_DEEPBIND, where the two sides use different mallocs). */
__attribute__((visibility("default"))) int dl_free_checked(void* p, size_t len, uint64_t seed) {
  int ok = t_check_sparse(p, len, seed);
  free(p);
  return ok;
}
