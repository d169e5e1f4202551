/* malloc-family conformance: run plainly and under libsentinel.so, the output must be identical.
 * Sizes straddle the tracking threshold the harness sets (4096 bytes). Prints only booleans, error names and
 * sizes we chose. */
#include <malloc.h>
#include <stdint.h>
#include <unistd.h>

#include "common.h"

int t_failures;

static const size_t sizes[] = {1, 100, 4000, 4095, 4096, 4097, 100000, 3u << 20};
#define NSIZES (sizeof sizes / sizeof sizes[0])

/* Writes the whole block, reads it back, checks alignment and usable size. */
static void report(const char* what, size_t align, size_t size, void* p, int err) {
  if (p == NULL) {
    printf("%s align=%zu size=%zu -> NULL errno=%s\n", what, align, size, t_errname(err));
    return;
  }
  int aligned = t_aligned(p, align);
  memset(p, 0x5A, size);
  int writable = t_all(p, size, 0x5A);
  int usable = malloc_usable_size(p) >= size;
  printf("%s align=%zu size=%zu -> ok aligned=%d writable=%d usable=%d\n", what, align, size, aligned, writable,
         usable);
  T_EXPECT(aligned && writable && usable, "%s(%zu, %zu)", what, align, size);
  free(p);
}

static void aligned_family(void) {
  printf("== aligned allocation, alignments 16 B .. 2 MiB\n");
  for (size_t a = 16; a <= (2u << 20); a <<= 1) {
    for (size_t i = 0; i < NSIZES; i++) {
      size_t s = sizes[i];
      void* p = NULL;
      int r = posix_memalign(&p, a, s);
      if (r != 0) {
        printf("posix_memalign align=%zu size=%zu -> %s\n", a, s, t_errname(r));
        T_EXPECT(0, "posix_memalign failed");
      } else {
        report("posix_memalign", a, s, p, 0);
      }
      errno = 0;
      p = aligned_alloc(a, s);
      report("aligned_alloc", a, s, p, errno);
      errno = 0;
      p = memalign(a, s);
      report("memalign", a, s, p, errno);
    }
  }
  /* Small alignments that glibc accepts. */
  for (size_t a = 1; a <= 8; a <<= 1) {
    size_t s = (a & 1) ? 5000 : 40;
    void* p = NULL;
    int r = posix_memalign(&p, a, s);
    printf("posix_memalign align=%zu size=%zu -> %s\n", a, s, r == 0 ? "0" : t_errname(r));
    if (r == 0) free(p);
    errno = 0;
    p = aligned_alloc(a, s);
    report("aligned_alloc", a, s, p, errno);
    errno = 0;
    p = memalign(a, s);
    report("memalign", a, s, p, errno);
  }
}

static void einval_cases(void) {
  printf("== EINVAL\n");
  static const size_t bad[] = {0, 1, 2, 3, 4, 12, 24, 48, 96, 4097, 65536 + 8, 3u << 20};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    for (size_t k = 0; k < 2; k++) {
      size_t s = k ? 8192 : 64;
      void* sentinel_value = (void*)&bad[i];
      void* p = sentinel_value;
      int r = posix_memalign(&p, t_opaque(bad[i]), s);
      printf("posix_memalign align=%zu size=%zu -> %s memptr_unchanged=%d\n", bad[i], s, r == 0 ? "0" : t_errname(r),
             p == sentinel_value);
      if (r == 0) free(p);
    }
  }
  /* glibc 2.36: aligned_alloc is memalign; a non-power-of-two alignment is rounded up to a power of two,
   * alignments <= 16 fall back to malloc, and alignments above SIZE_MAX/2+1 give EINVAL. */
  static const size_t odd[] = {0, 3, 24, 48, 96, 100, 4097, 65536 + 8, 3u << 20};
  for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
    for (size_t k = 0; k < 2; k++) {
      size_t s = k ? 8192 : 64;
      size_t want = 1;
      while (want < odd[i]) want <<= 1;
      errno = 0;
      void* p = aligned_alloc(t_opaque(odd[i]), s);
      int e = errno;
      if (p) {
        printf("aligned_alloc align=%zu size=%zu -> ok aligned_to_pow2=%d usable=%d\n", odd[i], s, t_aligned(p, want),
               malloc_usable_size(p) >= s);
        memset(p, 1, s);
        free(p);
      } else {
        printf("aligned_alloc align=%zu size=%zu -> NULL errno=%s\n", odd[i], s, t_errname(e));
      }
      errno = 0;
      p = memalign(t_opaque(odd[i]), s);
      e = errno;
      if (p) {
        printf("memalign align=%zu size=%zu -> ok aligned_to_pow2=%d usable=%d\n", odd[i], s, t_aligned(p, want),
               malloc_usable_size(p) >= s);
        memset(p, 1, s);
        free(p);
      } else {
        printf("memalign align=%zu size=%zu -> NULL errno=%s\n", odd[i], s, t_errname(e));
      }
    }
  }
  static const size_t huge_align[] = {SIZE_MAX / 2 + 2, SIZE_MAX, SIZE_MAX / 2 + 1};
  static const char* const huge_name[] = {"SIZE_MAX/2+2", "SIZE_MAX", "2^63"};
  for (size_t i = 0; i < 3; i++) {
    errno = 0;
    void* p = aligned_alloc(t_opaque(huge_align[i]), 64);
    printf("aligned_alloc align=%s size=64 -> %s errno=%s\n", huge_name[i], p ? "ok" : "NULL",
           p ? "-" : t_errname(errno));
    free(p);
    errno = 0;
    p = memalign(t_opaque(huge_align[i]), 8192);
    printf("memalign align=%s size=8192 -> %s errno=%s\n", huge_name[i], p ? "ok" : "NULL", p ? "-" : t_errname(errno));
    free(p);
    p = NULL;
    int r = posix_memalign(&p, t_opaque(huge_align[i]), 64);
    printf("posix_memalign align=%s size=64 -> %s\n", huge_name[i], r == 0 ? "0" : t_errname(r));
    if (r == 0) free(p);
  }
}

static void enomem_cases(void) {
  printf("== ENOMEM\n");
  static const size_t huge[] = {SIZE_MAX, SIZE_MAX - 4096, SIZE_MAX / 2, (size_t)1 << 62, (size_t)1 << 50};
  for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
    size_t n = t_opaque(huge[i]);
    errno = 0;
    void* p = malloc(n);
    printf("malloc(huge#%zu) -> %s errno=%s\n", i, p ? "ok" : "NULL", p ? "-" : t_errname(errno));
    free(p);
    p = NULL;
    int r = posix_memalign(&p, 64, n);
    printf("posix_memalign(64, huge#%zu) -> %s\n", i, r == 0 ? "0" : t_errname(r));
    if (r == 0) free(p);
    p = NULL;
    r = posix_memalign(&p, 2u << 20, n);
    printf("posix_memalign(2M, huge#%zu) -> %s\n", i, r == 0 ? "0" : t_errname(r));
    if (r == 0) free(p);
    errno = 0;
    p = aligned_alloc(4096, n);
    printf("aligned_alloc(4096, huge#%zu) -> %s errno=%s\n", i, p ? "ok" : "NULL", p ? "-" : t_errname(errno));
    free(p);
    errno = 0;
    p = valloc(n);
    printf("valloc(huge#%zu) -> %s errno=%s\n", i, p ? "ok" : "NULL", p ? "-" : t_errname(errno));
    free(p);
    errno = 0;
    p = pvalloc(n);
    printf("pvalloc(huge#%zu) -> %s errno=%s\n", i, p ? "ok" : "NULL", p ? "-" : t_errname(errno));
    free(p);
  }
  /* calloc overflow. */
  static const size_t cn[][2] = {{SIZE_MAX, 2},
                                 {SIZE_MAX / 2 + 1, 2},
                                 {2, SIZE_MAX / 2 + 1},
                                 {(size_t)1 << 32, (size_t)1 << 32},
                                 {(size_t)1 << 31, (size_t)1 << 31},
                                 {SIZE_MAX / 4096 + 1, 4096},
                                 {(size_t)1 << 40, 1024}};
  for (size_t i = 0; i < sizeof cn / sizeof cn[0]; i++) {
    errno = 0;
    void* p = calloc(t_opaque(cn[i][0]), t_opaque(cn[i][1]));
    printf("calloc(case %zu) -> %s errno=%s\n", i, p ? "ok" : "NULL", p ? "-" : t_errname(errno));
    free(p);
  }
}

static void calloc_zeroing(void) {
  printf("== calloc zeroing\n");
  static const size_t cs[] = {1, 64, 4000, 4096, 8192, 65536, 100000, 1u << 20, 5u << 20};
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    size_t n = cs[i];
    int zero_all = 1;
    for (int round = 0; round < 8; round++) {
      unsigned char* p = malloc(n);
      T_EXPECT(p != NULL, "malloc(%zu)", n);
      memset(p, 0xAB, n);
      free(p);
      unsigned char* q = calloc(1, n);
      T_EXPECT(q != NULL, "calloc(1, %zu)", n);
      int z = t_all(q, n, 0);
      zero_all &= z;
      memset(q, 0xCD, n);
      free(q);
      /* Same total through count * size. */
      q = calloc(n, 1);
      zero_all &= t_all(q, n, 0);
      memset(q, 0xEF, n);
      free(q);
    }
    printf("calloc size=%zu after dirty free: zeroed=%d\n", n, zero_all);
    T_EXPECT(zero_all, "calloc(%zu) not zero", n);
  }
  /* Several dirty blocks freed, then several callocs (any block may be reused). */
  void* blocks[16];
  for (int i = 0; i < 16; i++) {
    blocks[i] = malloc(16384 + (size_t)i * 4096);
    memset(blocks[i], 0xAB, 16384 + (size_t)i * 4096);
  }
  for (int i = 0; i < 16; i++) free(blocks[i]);
  int ok = 1;
  for (int i = 15; i >= 0; i--) {
    blocks[i] = calloc(16384 + (size_t)i * 4096, 1);
    ok &= t_all(blocks[i], 16384 + (size_t)i * 4096, 0);
  }
  for (int i = 0; i < 16; i++) free(blocks[i]);
  printf("calloc after 16 dirty frees: zeroed=%d\n", ok);
  T_EXPECT(ok, "calloc reuse");
  /* calloc with count*size crossing the threshold. */
  unsigned* v = calloc(2048, sizeof(unsigned));
  printf("calloc(2048, 4) zeroed=%d usable=%d\n", t_all(v, 8192, 0), malloc_usable_size(v) >= 8192);
  free(v);
}

static void malloc_zero(void) {
  printf("== malloc(0)\n");
  void *a = malloc(0), *b = malloc(0);
  printf("malloc(0) non-null=%d distinct=%d\n", a != NULL, a != b);
  free(a);
  free(b);
  free(NULL);
  void *c = calloc(0, 0), *d = calloc(0, 4096), *e = calloc(4096, 0);
  printf("calloc(0,0) non-null=%d calloc(0,4096) non-null=%d calloc(4096,0) non-null=%d\n", c != NULL, d != NULL,
         e != NULL);
  free(c);
  free(d);
  free(e);
  void* p = NULL;
  int r = posix_memalign(&p, 64, 0);
  printf("posix_memalign(64, 0) -> %d non-null=%d\n", r, p != NULL);
  free(p);
  p = aligned_alloc(4096, 0);
  printf("aligned_alloc(4096, 0) non-null=%d aligned=%d\n", p != NULL, p ? t_aligned(p, 4096) : 0);
  free(p);
  p = memalign(1u << 20, 0);
  printf("memalign(1M, 0) non-null=%d aligned=%d\n", p != NULL, p ? t_aligned(p, 1u << 20) : 0);
  free(p);
  p = valloc(0);
  printf("valloc(0) non-null=%d\n", p != NULL);
  free(p);
  p = pvalloc(0);
  printf("pvalloc(0) non-null=%d\n", p != NULL);
  free(p);
  printf("malloc_usable_size(NULL)=%zu\n", malloc_usable_size(NULL));
}

/* realloc from size a to size b, with contents preserved over min(a, b). */
static void realloc_case(size_t a, size_t b, uint64_t seed) {
  unsigned char* p = malloc(a);
  T_EXPECT(p != NULL, "malloc(%zu)", a);
  t_fill(p, a, seed);
  unsigned char* q = realloc(p, b);
  if (q == NULL) {
    printf("realloc %zu -> %zu: NULL errno=%s\n", a, b, t_errname(errno));
    T_EXPECT(0, "realloc failed");
    free(p);
    return;
  }
  size_t keep = a < b ? a : b;
  int preserved = t_check(q, keep, seed);
  memset(q, 0x11, b);
  int writable = t_all(q, b, 0x11);
  int usable = malloc_usable_size(q) >= b;
  printf("realloc %zu -> %zu: preserved=%d writable=%d usable=%d\n", a, b, preserved, writable, usable);
  T_EXPECT(preserved && writable && usable, "realloc %zu -> %zu", a, b);
  /* Realloc back (and once more in the same class). */
  unsigned char* r = realloc(q, a);
  T_EXPECT(r != NULL && t_all(r, keep, 0x11), "realloc back %zu -> %zu", b, a);
  free(r);
}

static void realloc_cases(void) {
  printf("== realloc\n");
  static const size_t rs[][2] = {{10, 100},         {100, 10},        {100, 4000},          /* untracked -> untracked */
                                 {100, 4096},       {100, 100000},    {4000, 5u << 20},     /* untracked -> tracked */
                                 {4096, 8192},      {8192, 1u << 20}, {1u << 20, 4u << 20}, /* tracked grow */
                                 {1u << 20, 16384}, {65536, 4096},    {8192, 8191},         /* tracked shrink */
                                 {65536, 64},       {4096, 4095},     {5u << 20, 100},      /* tracked -> untracked */
                                 {4096, 4096},      {100000, 100000}, {1, 1}};
  for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++) realloc_case(rs[i][0], rs[i][1], 1000 + i);

  /* A chain of reallocs through every class, one pointer. */
  size_t chain[] = {8, 3000, 5000, 70000, 2000, 1u << 21, 4096, 17, 9000, 0};
  unsigned char* p = NULL;
  size_t have = 0;
  int ok = 1;
  for (size_t i = 0; chain[i]; i++) {
    unsigned char* q = realloc(p, chain[i]);
    if (!q) {
      ok = 0;
      break;
    }
    size_t keep = have < chain[i] ? have : chain[i];
    for (size_t k = 0; k < keep; k++) ok &= q[k] == (unsigned char)(k * 7 + 3);
    for (size_t k = 0; k < chain[i]; k++) q[k] = (unsigned char)(k * 7 + 3);
    p = q;
    have = chain[i];
  }
  free(p);
  printf("realloc chain: preserved=%d\n", ok);
  T_EXPECT(ok, "realloc chain");

  /* realloc(NULL, n) behaves as malloc. */
  static const size_t rn[] = {0, 1, 100, 4096, 100000};
  for (size_t i = 0; i < sizeof rn / sizeof rn[0]; i++) {
    void* q = realloc(NULL, rn[i]);
    int w = 1;
    if (q) {
      memset(q, 3, rn[i]);
      w = t_all(q, rn[i], 3) && malloc_usable_size(q) >= rn[i];
    }
    printf("realloc(NULL, %zu): non-null=%d writable=%d\n", rn[i], q != NULL, w);
    free(q);
  }

  /* realloc(p, 0): glibc frees p and returns NULL. */
  static const size_t rz[] = {1, 100, 4096, 100000};
  for (size_t i = 0; i < sizeof rz / sizeof rz[0]; i++) {
    void* q = malloc(rz[i]);
    memset(q, 1, rz[i]);
    void* r = realloc(t_opaque_ptr(q), t_opaque(0));
    printf("realloc(p[%zu], 0): returned %s\n", rz[i], r ? "non-null" : "NULL");
    free(r);
  }

  /* A failing realloc leaves the block alone. */
  static const size_t rf[] = {100, 4096, 100000};
  for (size_t i = 0; i < sizeof rf / sizeof rf[0]; i++) {
    unsigned char* q = malloc(rf[i]);
    t_fill(q, rf[i], 77 + i);
    errno = 0;
    void* r = realloc(t_opaque_ptr(q), t_opaque(SIZE_MAX - 64));
    int e = errno;
    if (r) q = r;
    errno = 0;
    void* r2 = realloc(t_opaque_ptr(q), t_opaque((size_t)1 << 62));
    int e2 = errno;
    if (r2) q = r2;
    printf("realloc(p[%zu], huge): %s errno=%s, 2^62: %s errno=%s, block intact=%d\n", rf[i], r ? "ok" : "NULL",
           t_errname(e), r2 ? "ok" : "NULL", t_errname(e2), t_check(q, rf[i], 77 + i));
    free(q);
  }

  /* reallocarray. */
  errno = 0;
  void* q = reallocarray(NULL, t_opaque(SIZE_MAX / 2), 3);
  printf("reallocarray(NULL, SIZE_MAX/2, 3): %s errno=%s\n", q ? "ok" : "NULL", t_errname(errno));
  free(q);
  unsigned char* base = reallocarray(NULL, 16, 1024);
  printf("reallocarray(NULL, 16, 1024): non-null=%d usable=%d\n", base != NULL, malloc_usable_size(base) >= 16384);
  t_fill(base, 16384, 5);
  errno = 0;
  q = reallocarray(t_opaque_ptr(base), t_opaque((size_t)1 << 33), t_opaque((size_t)1 << 33));
  printf("reallocarray(p, 2^33, 2^33): %s errno=%s intact=%d\n", q ? "ok" : "NULL", t_errname(errno),
         t_check(base, 16384, 5));
  if (q) base = q;
  q = reallocarray(base, 100, 1000);
  printf("reallocarray(p, 100, 1000): preserved=%d usable=%d\n", q ? t_check(q, 16384, 5) : 0,
         q ? malloc_usable_size(q) >= 100000 : 0);
  free(q);
}

static void usable_size(void) {
  printf("== malloc_usable_size\n");
  int ok = 1;
  for (size_t n = 1; n < (1u << 23); n = n * 3 + 1) {
    void* p = malloc(n);
    ok &= malloc_usable_size(p) >= n;
    /* The whole usable size may be written. */
    size_t u = malloc_usable_size(p);
    memset(p, 0x42, u);
    free(p);
  }
  printf("usable >= requested for sizes 1 .. 8 MiB: %d\n", ok);
  T_EXPECT(ok, "usable size");
}

static void page_allocs(void) {
  printf("== valloc / pvalloc\n");
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  static const size_t vs[] = {1, 100, 4095, 4096, 4097, 10000, 65536, 1u << 20, 3000000};
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
    size_t n = vs[i];
    void* p = valloc(n);
    int al = t_aligned(p, page);
    memset(p, 9, n);
    int us = malloc_usable_size(p) >= n;
    free(p);
    p = pvalloc(n);
    size_t rounded = (n + page - 1) / page * page;
    int pal = t_aligned(p, page);
    memset(p, 9, rounded);
    int pus = malloc_usable_size(p) >= rounded;
    free(p);
    printf("valloc(%zu): page_aligned=%d usable=%d; pvalloc(%zu): page_aligned=%d usable>=rounded=%d\n", n, al, us, n,
           pal, pus);
    T_EXPECT(al && us && pal && pus, "valloc/pvalloc %zu", n);
  }
}

/* Many live blocks of mixed sizes, freed in a scrambled order. */
static void mixed_live(void) {
  printf("== mixed live set\n");
  enum { N = 2000 };
  static void* ptr[N];
  static size_t len[N];
  uint64_t s = 42;
  for (int i = 0; i < N; i++) {
    uint64_t r = t_rand(&s);
    len[i] = (r & 3) == 0 ? 4096 + (r >> 8) % 200000 : 1 + (r >> 8) % 4200;
    switch ((r >> 40) % 5) {
      case 0:
        ptr[i] = malloc(len[i]);
        break;
      case 1:
        ptr[i] = calloc(1, len[i]);
        break;
      case 2:
        ptr[i] = memalign((size_t)64 << ((r >> 50) % 7), len[i]);
        break;
      case 3:
        ptr[i] = aligned_alloc(4096, len[i]);
        break;
      default:
        if (posix_memalign(&ptr[i], 256, len[i])) ptr[i] = NULL;
        break;
    }
    t_fill_sparse(ptr[i], len[i], (uint64_t)i);
  }
  int ok = 1;
  for (int k = 0; k < N; k++) {
    int i = (int)(((uint64_t)k * 7919) % N);
    ok &= ptr[i] != NULL && t_check_sparse(ptr[i], len[i], (uint64_t)i);
    free(ptr[i]);
  }
  printf("2000 mixed blocks intact=%d\n", ok);
  T_EXPECT(ok, "mixed live set");
}

int main(void) {
  aligned_family();
  einval_cases();
  enomem_cases();
  calloc_zeroing();
  malloc_zero();
  realloc_cases();
  usable_size();
  page_allocs();
  mixed_live();
  printf("failures=%d\n", t_failures);
  return t_failures ? 1 : 0;
}
