/* Buffers on one NUMA node for the guest's measuring programs (tier_calibrate.c, emu_counts.c): bound
 * before first touch, asked back where their pages are, and laid out as a pointer chase. Header-only:
 * each program is one C file. Errors end the program with status 2, naming it and the call. */
#pragma once
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <numaif.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { NODE_BUFFERS_LINE = 64 };

static inline void node_buffers_die(const char* what) {
  fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, strerror(errno));
  exit(2);
}

/* An anonymous buffer bound to `node`, written so that every page exists there. 4 KiB pages unless
 * `huge`: whether THP backs a buffer changes TCG's cost of a random access by up to 2x. */
static inline void* node_buffer(int node, size_t bytes, int huge) {
  void* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) node_buffers_die("mmap");
  if (madvise(p, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0) node_buffers_die("madvise");
  unsigned long mask = 1ul << node;
  if (mbind(p, bytes, MPOL_BIND, &mask, sizeof mask * 8, 0) != 0) node_buffers_die("mbind");
  memset(p, 1, bytes);
  return p;
}

/* Share of the buffer's pages found on `node` (move_pages with no target nodes only asks). */
static inline double node_share(void* p, size_t bytes, int node) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), n = bytes / page, hits = 0;
  void** pages = malloc(n * sizeof *pages);
  int* status = malloc(n * sizeof *status);
  if (!pages || !status) node_buffers_die("malloc");
  for (size_t i = 0; i < n; i++) pages[i] = (char*)p + i * page;
  if (move_pages(0, n, pages, NULL, status, 0) != 0) node_buffers_die("move_pages");
  for (size_t i = 0; i < n; i++) hits += status[i] == node;
  free(pages);
  free(status);
  return (double)hits / (double)n;
}

/* A random cyclic permutation of the buffer's lines (fixed seed); each line's first word holds the
 * index, in words, of the next line's. */
static inline void node_chase(uint64_t* a, size_t lines) {
  const size_t stride = NODE_BUFFERS_LINE / sizeof(uint64_t);
  size_t* order = malloc(lines * sizeof *order);
  if (!order) node_buffers_die("malloc");
  for (size_t i = 0; i < lines; i++) order[i] = i;
  uint64_t x = 88172645463325252ull;
  for (size_t i = lines - 1; i > 0; i--) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t j = (size_t)(x % (i + 1)), tmp = order[i];
    order[i] = order[j], order[j] = tmp;
  }
  for (size_t i = 0; i < lines; i++) a[order[i] * stride] = order[(i + 1) % lines] * stride;
  free(order);
}
