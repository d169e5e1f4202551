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
#include "node_buffers.h"

enum { LINE = NODE_BUFFERS_LINE, STRIDE = LINE / sizeof(uint64_t) };

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
  if (sched_setaffinity(0, sizeof set, &set) != 0) node_buffers_die("sched_setaffinity");
  size_t bytes = mib << 20, lines = bytes / LINE;
  uint64_t* a = node_buffer(1, bytes, 0);
  uint64_t* b = node_buffer(0, bytes, 0);
  uint64_t* c = node_buffer(1, bytes, 0);
  node_chase(c, lines);

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
      lines, (unsigned long long)(2 * loop), node_share(a, bytes, 1), node_share(b, bytes, 0), node_share(c, bytes, 1));
  return 0;
}
