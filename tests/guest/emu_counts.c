/* emu_counts: a known pattern of instructions and line accesses between slow-tier markers, for
 * check_counts.py (docs/guest.md, "Counts, the marker and emulated time"). Pinned to CPU 0, with 4 KiB
 * pages bound to their node before first touch (checked with move_pages), it turns the plugin's counting
 * of node 0 on (marker 0xff01) and runs one phase between each two markers (tags 0xc0 to 0xc6; the record
 * of the marker after a phase holds that phase's counts), then turns node 0's counting off (0xff00):
 *   loop     a loop of 2 x --loop user instructions (dec; jnz), no memory access
 *   read1    8-byte loads over every line of A (node 1) in address order: one read or stream miss a line
 *   chase1   a random cyclic pointer chase through C (node 1), one pointer a line: one read miss a line
 *   write0   one 8-byte store per line of B (node 0): one write miss a line
 *   write1   the same on A (node 1)
 *   read0    8-byte loads over every line of B (node 0) in address order
 * and prints one JSON line: what it did (lines per buffer, loop instructions, tags, share of each
 * buffer's pages on its node). Without the plugin the markers are NOPs and it runs all the same; without a
 * node 1 it exits 77.
 * Options: --mib N (each buffer, default 4), --loop N (default 10000000). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <numaif.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emu_mark.h"

enum { LINE = 64, STRIDE = LINE / sizeof(uint64_t) };

static void die(const char* what) {
  fprintf(stderr, "emu_counts: %s: %s\n", what, strerror(errno));
  exit(2);
}

static uint64_t* alloc_on(int node, size_t bytes) {
  void* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) die("mmap");
  if (madvise(p, bytes, MADV_NOHUGEPAGE) != 0) die("madvise");
  unsigned long mask = 1ul << node;
  if (mbind(p, bytes, MPOL_BIND, &mask, sizeof mask * 8, 0) != 0) die("mbind");
  memset(p, 1, bytes);
  return p;
}

static double share_on(void* p, size_t bytes, int node) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), n = bytes / page, hits = 0;
  void** pages = malloc(n * sizeof *pages);
  int* status = malloc(n * sizeof *status);
  if (!pages || !status) die("malloc");
  for (size_t i = 0; i < n; i++) pages[i] = (char*)p + i * page;
  if (move_pages(0, n, pages, NULL, status, 0) != 0) die("move_pages");
  for (size_t i = 0; i < n; i++) hits += status[i] == node;
  free(pages);
  free(status);
  return (double)hits / (double)n;
}

static void build_chase(uint64_t* a, size_t lines) {
  size_t* order = malloc(lines * sizeof *order);
  if (!order) die("malloc");
  for (size_t i = 0; i < lines; i++) order[i] = i;
  uint64_t x = 88172645463325252ull;
  for (size_t i = lines - 1; i > 0; i--) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t j = (size_t)(x % (i + 1)), tmp = order[i];
    order[i] = order[j], order[j] = tmp;
  }
  for (size_t i = 0; i < lines; i++) a[order[i] * STRIDE] = order[(i + 1) % lines] * STRIDE;
  free(order);
}

static volatile uint64_t sink;

static void __attribute__((noinline)) read_lines(const uint64_t* a, size_t lines) {
  uint64_t s = 0;
  for (size_t i = 0; i < lines * STRIDE; i++) s += a[i];
  sink = s;
}

static void __attribute__((noinline)) write_lines(uint64_t* a, size_t lines) {
  for (size_t i = 0; i < lines; i++) ((volatile uint64_t*)a)[i * STRIDE] = i;
}

static void __attribute__((noinline)) chase(const uint64_t* a, size_t steps) {
  uint64_t i = 0;
  for (size_t k = 0; k < steps; k++) i = ((volatile const uint64_t*)a)[i];
  sink = i;
}

int main(int argc, char** argv) {
  size_t mib = 4;
  uint64_t loop = 10000000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--mib") && i + 1 < argc)
      mib = strtoul(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--loop") && i + 1 < argc)
      loop = strtoull(argv[++i], NULL, 0);
    else {
      fprintf(stderr, "usage: emu_counts [--mib N] [--loop N]\n");
      return 2;
    }
  }
  if (!mib || !loop) {
    fprintf(stderr, "emu_counts: --mib and --loop must be positive\n");
    return 2;
  }
  if (access("/sys/devices/system/node/node1", F_OK) != 0) {
    printf("emu_counts: SKIP: needs NUMA node 1 (run it in the guest)\n");
    return 77;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) die("sched_setaffinity");
  size_t bytes = mib << 20, lines = bytes / LINE;
  uint64_t* a = alloc_on(1, bytes);
  uint64_t* b = alloc_on(0, bytes);
  uint64_t* c = alloc_on(1, bytes);
  build_chase(c, lines);

  uint64_t k = loop;
  SENTINEL_EMU_MARK(SENTINEL_EMU_FAST_ON);
  SENTINEL_EMU_MARK(0xc0);
  __asm__ volatile("1: dec %0\n\tjnz 1b" : "+r"(k));
  SENTINEL_EMU_MARK(0xc1);
  read_lines(a, lines);
  SENTINEL_EMU_MARK(0xc2);
  chase(c, lines);
  SENTINEL_EMU_MARK(0xc3);
  write_lines(b, lines);
  SENTINEL_EMU_MARK(0xc4);
  write_lines(a, lines);
  SENTINEL_EMU_MARK(0xc5);
  read_lines(b, lines);
  SENTINEL_EMU_MARK(0xc6);
  SENTINEL_EMU_MARK(SENTINEL_EMU_FAST_OFF);

  printf(
      "{\"lines\":%zu,\"loop_insns\":%llu,\"phases\":[\"loop\",\"read1\",\"chase1\",\"write0\",\"write1\",\"read0\"],"
      "\"tags\":[192,193,194,195,196,197,198],\"on_node\":{\"A\":%.4f,\"B\":%.4f,\"C\":%.4f}}\n",
      lines, (unsigned long long)(2 * loop), share_on(a, bytes, 1), share_on(b, bytes, 0), share_on(c, bytes, 1));
  return 0;
}
