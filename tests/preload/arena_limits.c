/* The edges of the runtime's arena, run against glibc for the expected output:
 *  - alignments 4 MiB .. 1 GiB (posix_memalign, aligned_alloc, memalign) for tracked and untracked sizes;
 *  - 80 live 1 GiB blocks and 300 live 256 MiB blocks (address space only; one byte written per block), more
 *    than some arena size classes hold, so that the allocator must fall back and still free correctly;
 *  - realloc of a sparse 1 GiB block (glibc: mremap, nothing becomes resident);
 *  - sizes just around every power of two from 4 KiB to 256 MiB, realloc'd from one to the next;
 *  - 100000 live tracked objects (SENTINEL_MAX_OBJECTS is set low by the test, so that the
 *    runtime's object log overflows).
 * Each block is checked at its first and last byte. */
#include <malloc.h>

#include "common.h"

int t_failures;

static void big_alignments(void) {
  static const size_t sizes[] = {100, 4096, 100000, 3u << 20, 40u << 20};
  for (size_t a = 4u << 20; a <= (1u << 30); a <<= 1) {
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      size_t n = sizes[i];
      void* p = NULL;
      int r = posix_memalign(&p, a, n);
      int ok1 = r == 0 && t_aligned(p, a);
      if (r == 0) {
        ((volatile unsigned char*)p)[0] = 1;
        ((volatile unsigned char*)p)[n - 1] = 2;
        ok1 &= malloc_usable_size(p) >= n;
        free(p);
      }
      p = aligned_alloc(a, n);
      int ok2 = p != NULL && t_aligned(p, a);
      if (p) ((volatile unsigned char*)p)[n - 1] = 3;
      free(p);
      p = memalign(a, n);
      int ok3 = p != NULL && t_aligned(p, a);
      if (p) ((volatile unsigned char*)p)[n - 1] = 3;
      free(p);
      printf("align %zu MiB size %zu: posix_memalign %d aligned_alloc %d memalign %d\n", a >> 20, n, ok1, ok2, ok3);
    }
  }
}

static void many_huge(size_t each, int count) {
  void** v = calloc((size_t)count, sizeof(void*));
  int got = 0, ok = 1;
  for (int i = 0; i < count; i++) {
    v[i] = malloc(each);
    if (!v[i]) continue;
    got++;
    unsigned char* c = v[i];
    c[0] = (unsigned char)i;
    c[each - 1] = (unsigned char)(i * 3);
  }
  for (int i = 0; i < count; i++) {
    if (!v[i]) continue;
    unsigned char* c = v[i];
    ok &= c[0] == (unsigned char)i && c[each - 1] == (unsigned char)(i * 3);
    /* Shrink one before freeing (see sparse_realloc for why only one). */
    if (i == 1) {
      v[i] = realloc(v[i], each / 2);
      ok &= v[i] != NULL && ((unsigned char*)v[i])[0] == (unsigned char)i;
    }
    free(v[i]);
  }
  free(v);
  printf("%d live blocks of %zu MiB: allocated %d, contents ok %d\n", count, each >> 20, got, ok);
}

static long rss_mib(void) {
  FILE* f = fopen("/proc/self/statm", "r");
  long size = 0, rss = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &size, &rss) != 2) rss = 0;
    fclose(f);
  }
  return rss * 4096 / (1 << 20);
}

/* glibc moves big blocks with mremap: realloc of a sparse 1 GiB block touches nothing. An allocator that
 * copies makes the whole block resident (and takes a second per GiB). */
static void sparse_realloc(void) {
  size_t n = (size_t)1 << 30;
  unsigned char* p = malloc(n);
  if (!p) {
    printf("malloc(1 GiB) failed\n");
    return;
  }
  p[0] = 1;
  p[n - 1] = 2;
  long before = rss_mib();
  unsigned char* q = realloc(p, n / 2);
  long after_shrink = rss_mib();
  int ok = q != NULL && q[0] == 1;
  unsigned char* r = q ? realloc(q, n + 4096) : NULL;
  long after_grow = rss_mib();
  ok &= r != NULL && r[0] == 1;
  free(r ? r : q);
  printf("realloc of a sparse 1 GiB block: contents %d, shrink kept RSS growth < 64 MiB %d, grow %d\n", ok,
         after_shrink - before < 64, after_grow - before < 64);
}

static void power_edges(void) {
  unsigned char* p = NULL;
  size_t have = 0;
  int ok = 1;
  for (size_t k = 12; k <= 28; k++) {
    size_t base = (size_t)1 << k;
    size_t cand[5] = {base - 1, base, base + 1, base + base / 4, base + base / 2 + 1};
    for (int j = 0; j < 5; j++) {
      size_t n = cand[j];
      unsigned char* q = realloc(p, n);
      if (!q) {
        ok = 0;
        break;
      }
      if (have) ok &= q[0] == 0x11 && q[(have < n ? have : n) - 1] == 0x22;
      q[0] = 0x11;
      q[n - 1] = 0x22;
      if (have > n) q[n - 1] = 0x22;
      p = q;
      have = n;
      /* Same size fresh, for malloc_usable_size. */
      void* f = malloc(n);
      ok &= f != NULL && malloc_usable_size(f) >= n;
      free(f);
    }
    /* Keep the invariant of the last byte written being at have-1 (realloc preserves up to min). */
  }
  free(p);
  printf("sizes around powers of two 4 KiB .. 256 MiB, realloc chain: %d\n", ok);
}

static void many_objects(void) {
  enum { N = 100000 };
  void** v = malloc(N * sizeof(void*));
  int ok = 1;
  for (int i = 0; i < N; i++) {
    v[i] = malloc(4096 + (size_t)(i % 7) * 1000);
    if (!v[i]) {
      ok = 0;
      continue;
    }
    *(int*)v[i] = i;
  }
  for (int i = 0; i < N; i++) {
    if (v[i]) ok &= *(int*)v[i] == i;
    free(v[i]);
  }
  /* And churn after the log is full. */
  for (int i = 0; i < 100000; i++) {
    void* p = malloc(8192);
    if (!p)
      ok = 0;
    else
      *(int*)p = i;
    free(p);
  }
  free(v);
  printf("100000 live tracked-size objects, then 100000 short-lived: %d\n", ok);
}

int main(int argc, char** argv) {
  /* One phase by name (for timing), or all. */
  const char* only = argc > 1 ? argv[1] : "";
  if (!*only || !strcmp(only, "align")) big_alignments();
  if (!*only || !strcmp(only, "huge")) {
    /* 144 GiB of address space: only where the kernel overcommits (not in mode 2, strict accounting). */
    int mode = -1;
    FILE* f = fopen("/proc/sys/vm/overcommit_memory", "r");
    if (f) {
      if (fscanf(f, "%d", &mode) != 1) mode = -1;
      fclose(f);
    }
    if (mode == 0 || mode == 1) {
      many_huge((size_t)1 << 30, 80);
      many_huge((size_t)256 << 20, 300);
    } else {
      printf("live huge blocks: skipped (vm.overcommit_memory is not 0 or 1)\n");
    }
  }
  if (!*only || !strcmp(only, "sparse")) sparse_realloc();
  if (!*only || !strcmp(only, "powers")) power_edges();
  if (!*only || !strcmp(only, "objects")) many_objects();
  return 0;
}
