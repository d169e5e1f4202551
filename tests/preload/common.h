/* Helpers shared by the preload test programs. Everything printed must be deterministic: no
 * addresses, no timings, no counts that depend on scheduling. */
#ifndef SENTINEL_TESTS_PRELOAD_COMMON_H
#define SENTINEL_TESTS_PRELOAD_COMMON_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The tracking threshold the harness sets (SENTINEL_MIN_BYTES=4096). */
#define T_TRACKED 4096u

/* Hides a value from the optimiser (so that huge constant sizes do not trigger -Walloc-size-larger-than
 * and calls are not folded away). */
static inline size_t t_opaque(size_t v) {
  volatile size_t x = v;
  return x;
}
static inline void* t_opaque_ptr(void* p) {
  void* volatile x = p;
  return x;
}

static inline const char* t_errname(int e) {
  switch (e) {
    case 0:
      return "0";
    case ENOMEM:
      return "ENOMEM";
    case EINVAL:
      return "EINVAL";
    case EOVERFLOW:
      return "EOVERFLOW";
    default:
      return "other";
  }
}

/* Deterministic byte pattern for (seed, index). */
static inline unsigned char t_pat(uint64_t seed, size_t i) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return (unsigned char)(x ^ (x >> 8));
}

static inline void t_fill(void* p, size_t n, uint64_t seed) {
  unsigned char* c = (unsigned char*)p;
  for (size_t i = 0; i < n; i++) c[i] = t_pat(seed, i);
}

/* 1 if p[0..n) holds the pattern of seed. */
static inline int t_check(const void* p, size_t n, uint64_t seed) {
  const unsigned char* c = (const unsigned char*)p;
  for (size_t i = 0; i < n; i++)
    if (c[i] != t_pat(seed, i)) return 0;
  return 1;
}

/* Cheaper variant for big buffers: every 61st byte plus the last 64. */
static inline void t_fill_sparse(void* p, size_t n, uint64_t seed) {
  unsigned char* c = (unsigned char*)p;
  for (size_t i = 0; i < n; i += 61) c[i] = t_pat(seed, i);
  for (size_t i = n > 64 ? n - 64 : 0; i < n; i++) c[i] = t_pat(seed, i);
}
static inline int t_check_sparse(const void* p, size_t n, uint64_t seed) {
  const unsigned char* c = (const unsigned char*)p;
  for (size_t i = 0; i < n; i += 61)
    if (c[i] != t_pat(seed, i)) return 0;
  for (size_t i = n > 64 ? n - 64 : 0; i < n; i++)
    if (c[i] != t_pat(seed, i)) return 0;
  return 1;
}

/* Checks the bytes of a t_fill_sparse(p, n, seed) block that lie below keep (after a shrinking realloc). */
static inline int t_check_sparse_prefix(const void* p, size_t n, size_t keep, uint64_t seed) {
  const unsigned char* c = (const unsigned char*)p;
  if (keep > n) keep = n;
  for (size_t i = 0; i < keep; i += 61)
    if (c[i] != t_pat(seed, i)) return 0;
  for (size_t i = n > 64 ? n - 64 : 0; i < keep; i++)
    if (c[i] != t_pat(seed, i)) return 0;
  return 1;
}

static inline int t_all(const void* p, size_t n, unsigned char v) {
  const unsigned char* c = (const unsigned char*)p;
  for (size_t i = 0; i < n; i++)
    if (c[i] != v) return 0;
  return 1;
}

static inline int t_aligned(const void* p, size_t a) {
  return a == 0 || ((uintptr_t)p % a) == 0;
}

/* splitmix64: deterministic pseudo-random numbers. */
static inline uint64_t t_rand(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Counts failures; a program exits 1 when any check failed (same in both runs, so the harness catches it
 * through the expected status). */
extern int t_failures;
#define T_EXPECT(cond, ...)                                          \
  do {                                                               \
    if (!(cond)) {                                                   \
      t_failures++;                                                  \
      printf("CHECK FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      printf(__VA_ARGS__);                                           \
      printf("\n");                                                  \
    }                                                                \
  } while (0)

#ifdef __cplusplus
}
#endif
#endif
