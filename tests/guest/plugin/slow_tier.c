/* slow-tier: a QEMU TCG plugin that makes one range of guest memory (the slow NUMA node) slow.
 *
 * Every guest load and store is instrumented. An access to RAM whose plugin address falls in [lo, hi) is
 * charged once per 64-byte line: each vCPU keeps a small direct-mapped buffer of recently touched lines (its
 * "cache"). A load that misses costs read_ns, or stream_ns when it is the line right after the previous load
 * miss (a sequential stream, which real memory serves faster through prefetch and parallelism). A store to a
 * line not yet stored to costs write_ns (a line read then written pays both, like a read-for-ownership and a
 * write-back). The charge is paid by busy-waiting on the vCPU's thread, so the guest's own clock sees it: a
 * dependent load that misses waits (latency) and a stream pays per line (bandwidth). The wait is measured in
 * the thread's CPU time (clock=cpu, the default; clock=wall for wall-clock time), so that a busy host
 * stretches it as much as the rest of the emulation. Debt is paid in slices of at least quantum_ns to keep
 * clock reads off the hot path; overshoot is credited to the next slice.
 *
 * The address is what qemu_plugin_hwaddr_phys_addr() returns; in QEMU 7.2 that is the RAM block's offset in
 * QEMU's RAM space plus the block's address in its container plus the offset in the block, not the
 * guest-physical address. scripts/guest/run computes the range for each variant (docs/guest.md).
 *
 * Arguments (-plugin file=slow-tier.so,K=V,...): lo, hi (plugin addresses, required); read_ns, write_ns (per
 * line miss, default 0); stream_ns (default read_ns); lines (buffer entries per vCPU, a power of two, default
 * 512); clock (cpu or wall); quantum_ns (default 4000 with clock=cpu, 500 with wall). At exit it prints one
 * line of counts to QEMU's log (-d plugin -D FILE). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef SENTINEL_HAVE_QEMU_PLUGIN_H
#include <qemu-plugin.h>
#else
#include "qemu_plugin_api.h"
#endif

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

enum { LINE_SHIFT = 6 };
#define DIRTY ((uint64_t)1 << 63)

struct vcpu {
  uint64_t* tags; /* line + 1, | DIRTY once stored to; 0 is empty */
  int64_t debt_ns;
  uint64_t next_line; /* the line after the last load miss: a miss there continues a stream */
  uint64_t read_misses, stream_misses, write_misses;
} __attribute__((aligned(64)));

static uint64_t lo, hi, span, read_ns, stream_ns = UINT64_MAX, write_ns, lines = 512, quantum_ns;
static struct vcpu* vcpus;
static unsigned int n_vcpus;
static clockid_t spin_clock = CLOCK_THREAD_CPUTIME_ID;
static uint64_t read_cost_ns; /* one clock read, not seen by the spin that it starts and ends */

static inline uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(spin_clock, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Spins until the debt is paid in the spin clock. With the default clock, the vCPU thread's CPU time, a
 * host that runs the thread only part of the time stretches the wait exactly as it stretches the emulation
 * of every other access, so node 1's slowdown relative to node 0 does not depend on host load. */
static void __attribute__((noinline)) pay(struct vcpu* v) {
  uint64_t end = now_ns() + (uint64_t)v->debt_ns - read_cost_ns, t;
  do {
    t = now_ns();
  } while (t < end);
  v->debt_ns = -(int64_t)(t - end);
}

/* The median cost of one read of the spin clock. */
static uint64_t measure_read_cost(void) {
  enum { N = 201 };
  uint64_t d[N], prev = now_ns();
  for (int i = 0; i < N; i++) {
    uint64_t t = now_ns();
    d[i] = t - prev;
    prev = t;
  }
  for (int i = 1; i < N; i++)
    for (int j = i; j > 0 && d[j - 1] > d[j]; j--) {
      uint64_t x = d[j];
      d[j] = d[j - 1], d[j - 1] = x;
    }
  return d[N / 2];
}

/* Called for every guest load and store, so kept lean: every cycle here slows node 0 too. The line is the
 * one of the access's first byte (the rare access straddling two lines is charged for one). */
static void on_access(unsigned int vcpu_index, qemu_plugin_meminfo_t info, uint64_t vaddr, void* udata) {
  (void)udata;
  struct qemu_plugin_hwaddr* hw = qemu_plugin_get_hwaddr(info, vaddr);
  if (!hw) return;
  uint64_t addr = qemu_plugin_hwaddr_phys_addr(hw);
  if (addr - lo >= span || vcpu_index >= n_vcpus) return;
  struct vcpu* v = &vcpus[vcpu_index];
  uint64_t line = addr >> LINE_SHIFT, *slot = &v->tags[line & (lines - 1)];
  int store = qemu_plugin_mem_is_store(info);
  if (store ? *slot == ((line + 1) | DIRTY) : (*slot & ~DIRTY) == line + 1) return; /* a hit: the common case */
  if (qemu_plugin_hwaddr_is_io(hw)) return; /* MMIO whose guest-physical address happens to fall in the range */
  if (store) {
    *slot = (line + 1) | DIRTY;
    v->write_misses++;
    v->debt_ns += (int64_t)write_ns;
  } else {
    *slot = line + 1;
    if (line == v->next_line) {
      v->stream_misses++;
      v->debt_ns += (int64_t)stream_ns;
    } else {
      v->read_misses++;
      v->debt_ns += (int64_t)read_ns;
    }
    v->next_line = line + 1;
  }
  if (v->debt_ns >= (int64_t)quantum_ns) pay(v);
}

/* One callback for loads and stores: QEMU 7.2 stops at the first registered memory callback whose
 * read/write filter does not match an access, so separate load and store callbacks would miss accesses. */
static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  (void)id;
  size_t n = qemu_plugin_tb_n_insns(tb);
  for (size_t i = 0; i < n; i++)
    qemu_plugin_register_vcpu_mem_cb(qemu_plugin_tb_get_insn(tb, i), on_access, QEMU_PLUGIN_CB_NO_REGS,
                                     QEMU_PLUGIN_MEM_RW, NULL);
}

static void report(qemu_plugin_id_t id, void* udata) {
  (void)id;
  (void)udata;
  uint64_t rm = 0, sm = 0, wm = 0;
  for (unsigned int i = 0; i < n_vcpus; i++) {
    rm += vcpus[i].read_misses;
    sm += vcpus[i].stream_misses;
    wm += vcpus[i].write_misses;
  }
  char line[320];
  snprintf(line, sizeof line,
           "slow-tier: range [%#" PRIx64 ", %#" PRIx64 "), read %" PRIu64 " ns, stream %" PRIu64 " ns, write %" PRIu64
           " ns (%s clock, read in %" PRIu64 " ns): line misses %" PRIu64 " read, %" PRIu64 " stream, %" PRIu64
           " write; %.3f s charged\n",
           lo, hi, read_ns, stream_ns, write_ns, spin_clock == CLOCK_MONOTONIC ? "wall" : "cpu", read_cost_ns, rm, sm,
           wm, (double)(rm * read_ns + sm * stream_ns + wm * write_ns) / 1e9);
  qemu_plugin_outs(line);
}

static int parse_clock(const char* arg) {
  if (strncmp(arg, "clock=", 6) != 0) return 0;
  if (!strcmp(arg + 6, "cpu"))
    spin_clock = CLOCK_THREAD_CPUTIME_ID;
  else if (!strcmp(arg + 6, "wall"))
    spin_clock = CLOCK_MONOTONIC;
  else {
    fprintf(stderr, "slow-tier: clock must be cpu or wall, not '%s'\n", arg + 6);
    return -1;
  }
  return 1;
}

static int parse_u64(const char* arg, const char* key, uint64_t* out) {
  size_t k = strlen(key);
  if (strncmp(arg, key, k) != 0 || arg[k] != '=') return 0;
  char* end;
  errno = 0;
  unsigned long long v = strtoull(arg + k + 1, &end, 0);
  if (errno || end == arg + k + 1 || *end) {
    fprintf(stderr, "slow-tier: bad number in '%s'\n", arg);
    return -1;
  }
  *out = v;
  return 1;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t* info, int argc, char** argv) {
  static const char* const keys[] = {"lo", "hi", "read_ns", "stream_ns", "write_ns", "lines", "quantum_ns"};
  uint64_t* const vals[] = {&lo, &hi, &read_ns, &stream_ns, &write_ns, &lines, &quantum_ns};
  int have_lo = 0, have_hi = 0;
  for (int i = 0; i < argc; i++) {
    int matched = parse_clock(argv[i]);
    if (matched < 0) return -1;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0] && !matched; k++) {
      int r = parse_u64(argv[i], keys[k], vals[k]);
      if (r < 0) return -1;
      if (r > 0) {
        matched = 1;
        have_lo |= k == 0;
        have_hi |= k == 1;
      }
    }
    if (!matched) {
      fprintf(stderr,
              "slow-tier: unknown argument '%s' (lo, hi, read_ns, stream_ns, write_ns, lines, quantum_ns, clock)\n",
              argv[i]);
      return -1;
    }
  }
  if (!info->system_emulation) {
    fprintf(stderr, "slow-tier: needs system emulation (physical addresses)\n");
    return -1;
  }
  if (!have_lo || !have_hi || hi <= lo) {
    fprintf(stderr, "slow-tier: needs lo=ADDR,hi=ADDR with lo < hi\n");
    return -1;
  }
  if (lines == 0 || (lines & (lines - 1)) || lines > (1u << 20)) {
    fprintf(stderr, "slow-tier: lines must be a power of two up to 1048576\n");
    return -1;
  }
  span = hi - lo;
  if (stream_ns == UINT64_MAX) stream_ns = read_ns;
  if (!quantum_ns) quantum_ns = spin_clock == CLOCK_MONOTONIC ? 500 : 4000; /* the CPU clock is a system call */
  read_cost_ns = measure_read_cost();
  if (read_cost_ns > quantum_ns / 4) read_cost_ns = quantum_ns / 4;
  n_vcpus = info->system.max_vcpus > 0 ? (unsigned int)info->system.max_vcpus : 1;
  vcpus = aligned_alloc(64, n_vcpus * sizeof *vcpus);
  if (!vcpus) return -1;
  memset(vcpus, 0, n_vcpus * sizeof *vcpus);
  for (unsigned int i = 0; i < n_vcpus; i++) {
    vcpus[i].tags = calloc(lines, sizeof(uint64_t));
    if (!vcpus[i].tags) return -1;
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, report, NULL);
  return 0;
}
