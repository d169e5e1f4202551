/* slow-tier: a QEMU TCG plugin that makes one range of guest memory (the slow NUMA node) slow.
 *
 * Every guest load and store is instrumented. An access to RAM whose plugin address falls in [lo, hi) is
 * charged once per 64-byte line: each vCPU keeps a small buffer of recently touched lines (its "cache"),
 * direct-mapped by default, or set-associative with ways=N (a set's least recently used line is evicted), in
 * which lines whose pages line up do not evict one another, as in a real cache. A load that misses costs
 * read_ns, or stream_ns when it is the line right after the previous load miss (a sequential stream, which
 * real memory serves faster through prefetch and parallelism). A store to a line not yet stored to costs
 * write_ns (a line read then written pays both, like a read-for-ownership and a write-back). The charge is
 * paid by busy-waiting on the vCPU's thread, so the guest's own clock sees it: a dependent load that misses
 * waits (latency) and a stream pays per line (bandwidth). The wait is measured in the thread's CPU time
 * (clock=cpu, the default; clock=wall for wall-clock time), so that a busy host
 * stretches it as much as the rest of the emulation. Debt is paid in slices of at least quantum_ns to keep
 * clock reads off the hot path; overshoot is credited to the next slice.
 *
 * The address is what qemu_plugin_hwaddr_phys_addr() returns; in QEMU 7.2 that is the RAM block's offset in
 * QEMU's RAM space plus the block's address in its container plus the offset in the block, not the
 * guest-physical address. scripts/guest/run computes the range for each variant (docs/guest.md).
 *
 * Counting (docs/guest.md, "Counts, the marker and emulated time"). Each vCPU counts the guest instructions
 * it executes, user and kernel code apart (per translation block: a callback with the block's length; QEMU
 * 7.2's inline counters are one memory word shared by all vCPUs, which racing vCPUs would undercount), and
 * the line misses of each node by kind (read, stream, write). Node 1's are the misses charged above. Node
 * 0's range (lo0, hi0) is counted only while the guest asks for it (below; fast0=1: from the start),
 * through a line buffer of its own of the same size, so that it never changes what node 1 is charged; node
 * 0 is never charged. Counting node 0 slows its emulation (sequential reads 0.61-0.66 -> 0.46-0.50 GB/s),
 * which would lower the presets' calibrated ratios: hence off unless asked for. With counts=PATH the plugin
 * recognises a marker instruction at translation time, a 9-byte NOP that no compiler emits:
 *     66 0f 1f 84 00 TT TT 1c 5e        nopw 0x5e1cTTTT(%rax,%rax,1)        (TTTT: a 16-bit tag)
 * Each time a vCPU executes one, the plugin appends one JSON line to PATH: the tag, the vCPU, and the
 * counts of the whole machine since the previous marker of any vCPU (summed over the vCPUs, and each
 * vCPU's apart, with the host CPU time its thread took). Tags 0xff00 and 0xff01 are also commands: node 0's
 * counting off, and on, from there. The file's first line describes the run; its last ("end") holds the
 * counts from the last marker to exit.
 * tests/guest/emu_mark.c executes markers from C and Python; without this plugin the marker is an ordinary
 * NOP. mem=0 registers no memory callback: instructions and markers only, nothing charged.
 *
 * Arguments (-plugin file=slow-tier.so,K=V,...): lo, hi (node 1's plugin addresses, required); read_ns,
 * write_ns (per line miss, default 0); stream_ns (default read_ns); lines (buffer entries per vCPU and node,
 * a power of two, default 512); ways (lines per set, a power of two up to 64 and to lines; default 1,
 * direct-mapped, as the presets were calibrated); clock (cpu or wall); quantum_ns (default 4000 with
 * clock=cpu, 500 with wall); lo0, hi0 (node 0's range); fast0 (0, or 1: count node 0 from the start);
 * counts (the marker records' file, no commas); mem (1, or 0: no memory callbacks). At exit it prints one
 * line of counts to QEMU's log (-d plugin -D FILE). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
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

enum { LINE_SHIFT = 6, READ = 0, STREAM = 1, WRITE = 2, KINDS = 3, USER = 0, KERNEL = 1 };
#define DIRTY ((uint64_t)1 << 63)
#define KERNEL_BASE 0xffff800000000000ull               /* x86-64: code at or above runs in the kernel */
#define MARK_MAGIC 0x5e1cu                              /* the marker's displacement is MARK_MAGIC << 16 | tag */
enum { MARK_FAST_OFF = 0xff00, MARK_FAST_ON = 0xff01 }; /* commands: node 0's counting off, on */
static const unsigned char mark_prefix[5] = {0x66, 0x0f, 0x1f, 0x84, 0x00};

struct vcpu {
  uint64_t* tags[2]; /* per node: line + 1, | DIRTY once stored to; 0 is empty (node 0's only with lo0, hi0) */
  int64_t debt_ns;
  uint64_t next_line[2]; /* per node: the line after the last load miss; a miss there continues a stream */
  uint64_t insns[2];     /* USER, KERNEL */
  uint64_t misses[2][KINDS];
  clockid_t cpu_clock; /* the vCPU thread's CPU-time clock, once the thread has run a block */
  int have_clock;
} __attribute__((aligned(64)));

/* What a marker record counts: one vCPU's counters, or their sum. */
struct counts {
  uint64_t insns[2];
  uint64_t misses[2][KINDS];
  uint64_t cpu_ns; /* the vCPU thread's host CPU time */
};

static uint64_t lo, hi, span, read_ns, stream_ns = UINT64_MAX, write_ns, lines = 512, quantum_ns;
static uint64_t ways = 1, sets = 512; /* the buffer: sets x ways entries, each set most recently used first */
static uint64_t lo0, hi0, fast0, count_mem = 1;
static uint64_t span0; /* hi0 - lo0 while node 0 is counted, else 0 (switched by markers) */
static struct vcpu* vcpus;
static unsigned int n_vcpus;
static clockid_t spin_clock = CLOCK_THREAD_CPUTIME_ID;
static uint64_t read_cost_ns; /* one clock read, not seen by the spin that it starts and ends */

static FILE* counts_file; /* the marker records, with counts=PATH */
static pthread_mutex_t mark_lock = PTHREAD_MUTEX_INITIALIZER;
static struct counts* last; /* per vCPU: its counters at the last record */
static uint64_t marks;

static inline uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(spin_clock, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t host_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
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

/* The entry of `set` that holds `line`, made the set's most recent (moved to its front); NULL when none
 * does. */
static inline uint64_t* find_line(uint64_t* set, uint64_t line) {
  for (uint64_t k = 0; k < ways; k++) {
    uint64_t tag = set[k];
    if ((tag & ~DIRTY) != line + 1) continue;
    for (; k > 0; k--) set[k] = set[k - 1];
    set[0] = tag;
    return set;
  }
  return NULL;
}

/* Puts `tag` at the front of `set`, evicting its least recently used entry. */
static inline void insert_line(uint64_t* set, uint64_t tag) {
  for (uint64_t k = ways - 1; k > 0; k--) set[k] = set[k - 1];
  set[0] = tag;
}

/* Called for every guest load and store, so kept lean: every cycle here slows node 0 too. The line is the
 * one of the access's first byte (the rare access straddling two lines is counted for one). Node 1 is
 * charged; node 0, when counted, only counted, in its own buffer. */
static void on_access(unsigned int vcpu_index, qemu_plugin_meminfo_t info, uint64_t vaddr, void* udata) {
  (void)udata;
  struct qemu_plugin_hwaddr* hw = qemu_plugin_get_hwaddr(info, vaddr);
  if (!hw) return;
  uint64_t addr = qemu_plugin_hwaddr_phys_addr(hw);
  int node;
  if (addr - lo < span)
    node = 1;
  else if (addr - lo0 < __atomic_load_n(&span0, __ATOMIC_RELAXED))
    node = 0;
  else
    return;
  if (vcpu_index >= n_vcpus) return;
  struct vcpu* v = &vcpus[vcpu_index];
  uint64_t line = addr >> LINE_SHIFT, *set = &v->tags[node][(line & (sets - 1)) * ways];
  int store = qemu_plugin_mem_is_store(info);
  uint64_t* held = find_line(set, line);
  if (held && (!store || (*held & DIRTY))) return; /* a hit: the common case */
  if (qemu_plugin_hwaddr_is_io(hw)) return;        /* MMIO whose guest-physical address happens to fall in the range */
  int64_t cost;
  if (store) { /* a store to a line held clean pays a write, as one to a line not held */
    if (held)
      *held |= DIRTY;
    else
      insert_line(set, (line + 1) | DIRTY);
    v->misses[node][WRITE]++;
    cost = (int64_t)write_ns;
  } else {
    insert_line(set, line + 1);
    if (line == v->next_line[node]) {
      v->misses[node][STREAM]++;
      cost = (int64_t)stream_ns;
    } else {
      v->misses[node][READ]++;
      cost = (int64_t)read_ns;
    }
    v->next_line[node] = line + 1;
  }
  if (!node) return;
  v->debt_ns += cost;
  if (v->debt_ns >= (int64_t)quantum_ns) pay(v);
}

/* Once per execution of a translation block: its instructions. (An exception in the middle of a block,
 * a page fault say, counts the rest of the block too; the same happens in every run of the same code.) The
 * first call on a vCPU's thread (MTTCG: one host thread per vCPU) notes the thread's CPU-time clock, which
 * the marker records read: the host CPU time the vCPU took, emulation and busy-waits, whatever its share. */
static void on_block(unsigned int vcpu_index, void* udata) {
  uintptr_t u = (uintptr_t)udata;
  if (vcpu_index >= n_vcpus) return;
  struct vcpu* v = &vcpus[vcpu_index];
  v->insns[u & 1] += u >> 1;
  if (__builtin_expect(!v->have_clock, 0) && pthread_getcpuclockid(pthread_self(), &v->cpu_clock) == 0)
    __atomic_store_n(&v->have_clock, 1, __ATOMIC_RELEASE);
}

/* A vCPU thread's CPU time so far, in ns (0 before it has run a block). */
static uint64_t vcpu_cpu_ns(unsigned int i) {
  struct timespec t;
  if (!__atomic_load_n(&vcpus[i].have_clock, __ATOMIC_ACQUIRE) || clock_gettime(vcpus[i].cpu_clock, &t) != 0) return 0;
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* One vCPU's counters, read from any thread: each is an aligned 64-bit word that only its vCPU's thread
 * writes, so a read is never torn; it may miss that vCPU's last few events. */
static void read_counts(unsigned int i, struct counts* c) {
  c->cpu_ns = vcpu_cpu_ns(i);
  for (int k = 0; k < 2; k++) c->insns[k] = __atomic_load_n(&vcpus[i].insns[k], __ATOMIC_RELAXED);
  for (int n = 0; n < 2; n++)
    for (int k = 0; k < KINDS; k++) c->misses[n][k] = __atomic_load_n(&vcpus[i].misses[n][k], __ATOMIC_RELAXED);
}

/* One record: the counts since the previous one, summed over vCPUs ("insn": user, kernel; "n0", "n1": read,
 * stream, write line misses), and each vCPU's ("vcpus": user, kernel, then node 0's and node 1's misses;
 * "cpu_ns": its thread's host CPU time). Called with mark_lock held. */
static void write_record(const char* head) {
  struct counts sum = {{0}, {{0}}, 0};
  char per[4096] = "", cpu[1024] = "";
  size_t used = 0, cused = 0;
  for (unsigned int i = 0; i < n_vcpus; i++) {
    struct counts now, d;
    read_counts(i, &now);
    for (int k = 0; k < 2; k++) d.insns[k] = now.insns[k] - last[i].insns[k], sum.insns[k] += d.insns[k];
    for (int n = 0; n < 2; n++)
      for (int k = 0; k < KINDS; k++)
        d.misses[n][k] = now.misses[n][k] - last[i].misses[n][k], sum.misses[n][k] += d.misses[n][k];
    uint64_t dcpu = now.cpu_ns >= last[i].cpu_ns ? now.cpu_ns - last[i].cpu_ns : 0;
    last[i] = now;
    if (cused < sizeof cpu - 32)
      cused += (size_t)snprintf(cpu + cused, sizeof cpu - cused, "%s%" PRIu64, i ? "," : "", dcpu);
    if (used < sizeof per - 200)
      used += (size_t)snprintf(per + used, sizeof per - used,
                               "%s[%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                               ",%" PRIu64 "]",
                               i ? "," : "", d.insns[USER], d.insns[KERNEL], d.misses[0][READ], d.misses[0][STREAM],
                               d.misses[0][WRITE], d.misses[1][READ], d.misses[1][STREAM], d.misses[1][WRITE]);
  }
  fprintf(counts_file,
          "{%s,\"host_ns\":%" PRIu64 ",\"insn\":[%" PRIu64 ",%" PRIu64 "],\"n0\":[%" PRIu64 ",%" PRIu64 ",%" PRIu64
          "],\"n1\":[%" PRIu64 ",%" PRIu64 ",%" PRIu64 "],\"vcpus\":[%s],\"cpu_ns\":[%s]}\n",
          head, host_ns(), sum.insns[USER], sum.insns[KERNEL], sum.misses[0][READ], sum.misses[0][STREAM],
          sum.misses[0][WRITE], sum.misses[1][READ], sum.misses[1][STREAM], sum.misses[1][WRITE], per, cpu);
  fflush(counts_file);
}

static void on_mark(unsigned int vcpu_index, void* udata) {
  char head[128];
  unsigned tag = (unsigned)(uintptr_t)udata;
  pthread_mutex_lock(&mark_lock);
  if ((tag == MARK_FAST_OFF || tag == MARK_FAST_ON) && hi0 > lo0) /* other vCPUs see it within an access or so */
    __atomic_store_n(&span0, tag == MARK_FAST_ON ? hi0 - lo0 : 0, __ATOMIC_RELAXED);
  snprintf(head, sizeof head, "\"mark\":%" PRIu64 ",\"tag\":%u,\"vcpu\":%u,\"fast0\":%d", ++marks, tag, vcpu_index,
           span0 != 0);
  write_record(head);
  pthread_mutex_unlock(&mark_lock);
}

/* The marker's tag, or -1 for any other instruction. */
static int marker_tag(const struct qemu_plugin_insn* insn) {
  if (qemu_plugin_insn_size(insn) != 9) return -1;
  const unsigned char* b = qemu_plugin_insn_data(insn);
  if (memcmp(b, mark_prefix, sizeof mark_prefix) != 0) return -1;
  uint32_t disp = (uint32_t)b[5] | (uint32_t)b[6] << 8 | (uint32_t)b[7] << 16 | (uint32_t)b[8] << 24;
  return disp >> 16 == MARK_MAGIC ? (int)(disp & 0xffff) : -1;
}

/* One callback for loads and stores: QEMU 7.2 stops at the first registered memory callback whose
 * read/write filter does not match an access, so separate load and store callbacks would miss accesses. */
static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  (void)id;
  size_t n = qemu_plugin_tb_n_insns(tb);
  uintptr_t kernel = qemu_plugin_tb_vaddr(tb) >= KERNEL_BASE;
  qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, (void*)((uintptr_t)n << 1 | kernel));
  for (size_t i = 0; i < n; i++) {
    struct qemu_plugin_insn* insn = qemu_plugin_tb_get_insn(tb, i);
    if (count_mem) qemu_plugin_register_vcpu_mem_cb(insn, on_access, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
    int tag;
    if (counts_file && (tag = marker_tag(insn)) >= 0)
      qemu_plugin_register_vcpu_insn_exec_cb(insn, on_mark, QEMU_PLUGIN_CB_NO_REGS, (void*)(uintptr_t)tag);
  }
}

static void report(qemu_plugin_id_t id, void* udata) {
  (void)id;
  (void)udata;
  struct counts sum = {{0}, {{0}}, 0};
  for (unsigned int i = 0; i < n_vcpus; i++) {
    for (int k = 0; k < 2; k++) sum.insns[k] += vcpus[i].insns[k];
    for (int n = 0; n < 2; n++)
      for (int k = 0; k < KINDS; k++) sum.misses[n][k] += vcpus[i].misses[n][k];
  }
  const uint64_t* m1 = sum.misses[1];
  char line[512], node0[128] = "";
  if (hi0 > lo0)
    snprintf(node0, sizeof node0, "; node 0 line misses %" PRIu64 " read, %" PRIu64 " stream, %" PRIu64 " write",
             sum.misses[0][READ], sum.misses[0][STREAM], sum.misses[0][WRITE]);
  snprintf(line, sizeof line,
           "slow-tier: range [%#" PRIx64 ", %#" PRIx64 "), read %" PRIu64 " ns, stream %" PRIu64 " ns, write %" PRIu64
           " ns (%s clock, read in %" PRIu64 " ns): line misses %" PRIu64 " read, %" PRIu64 " stream, %" PRIu64
           " write; %.3f s charged%s; instructions %" PRIu64 " user, %" PRIu64 " kernel; %" PRIu64 " markers\n",
           lo, hi, read_ns, stream_ns, write_ns, spin_clock == CLOCK_MONOTONIC ? "wall" : "cpu", read_cost_ns, m1[READ],
           m1[STREAM], m1[WRITE], (double)(m1[READ] * read_ns + m1[STREAM] * stream_ns + m1[WRITE] * write_ns) / 1e9,
           node0, sum.insns[USER], sum.insns[KERNEL], marks);
  qemu_plugin_outs(line);
  if (counts_file) {
    pthread_mutex_lock(&mark_lock);
    write_record("\"end\":true");
    pthread_mutex_unlock(&mark_lock);
    fclose(counts_file);
    counts_file = NULL;
  }
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
  static const char* const keys[] = {"lo",         "hi",  "read_ns", "stream_ns", "write_ns", "lines",
                                     "quantum_ns", "lo0", "hi0",     "fast0",     "mem",      "ways"};
  uint64_t* const vals[] = {&lo,         &hi,  &read_ns, &stream_ns, &write_ns,  &lines,
                            &quantum_ns, &lo0, &hi0,     &fast0,     &count_mem, &ways};
  int have_lo = 0, have_hi = 0;
  const char* counts_path = NULL;
  for (int i = 0; i < argc; i++) {
    int matched = parse_clock(argv[i]);
    if (matched < 0) return -1;
    if (!matched && !strncmp(argv[i], "counts=", 7)) {
      counts_path = argv[i] + 7;
      matched = 1;
    }
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
              "slow-tier: unknown argument '%s' (lo, hi, read_ns, stream_ns, write_ns, lines, ways, quantum_ns, clock, "
              "lo0, hi0, fast0, counts, mem)\n",
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
  if (hi0 < lo0 || (hi0 > lo && lo0 < hi)) {
    fprintf(stderr, "slow-tier: lo0,hi0 must be a range apart from lo,hi\n");
    return -1;
  }
  if (lines == 0 || (lines & (lines - 1)) || lines > (1u << 20)) {
    fprintf(stderr, "slow-tier: lines must be a power of two up to 1048576\n");
    return -1;
  }
  if (ways == 0 || (ways & (ways - 1)) || ways > 64 || ways > lines) {
    fprintf(stderr, "slow-tier: ways must be a power of two up to 64 and to lines\n");
    return -1;
  }
  sets = lines / ways;
  if (count_mem > 1 || fast0 > 1) {
    fprintf(stderr, "slow-tier: mem and fast0 must be 0 or 1\n");
    return -1;
  }
  span = hi - lo;
  span0 = fast0 ? hi0 - lo0 : 0;
  if (stream_ns == UINT64_MAX) stream_ns = read_ns;
  if (!quantum_ns) quantum_ns = spin_clock == CLOCK_MONOTONIC ? 500 : 4000; /* the CPU clock is a system call */
  read_cost_ns = measure_read_cost();
  if (read_cost_ns > quantum_ns / 4) read_cost_ns = quantum_ns / 4;
  n_vcpus = info->system.max_vcpus > 0 ? (unsigned int)info->system.max_vcpus : 1;
  vcpus = aligned_alloc(64, n_vcpus * sizeof *vcpus);
  last = calloc(n_vcpus, sizeof *last);
  if (!vcpus || !last) return -1;
  memset(vcpus, 0, n_vcpus * sizeof *vcpus);
  for (unsigned int i = 0; i < n_vcpus; i++)
    for (int node = hi0 > lo0 ? 0 : 1; node < 2; node++)
      if (!(vcpus[i].tags[node] = calloc(lines, sizeof(uint64_t)))) return -1;
  if (counts_path) {
    if (!(counts_file = fopen(counts_path, "w"))) {
      fprintf(stderr, "slow-tier: cannot write %s: %s\n", counts_path, strerror(errno));
      return -1;
    }
    fprintf(counts_file,
            "{\"slow_tier\":1,\"lo\":%" PRIu64 ",\"hi\":%" PRIu64 ",\"lo0\":%" PRIu64 ",\"hi0\":%" PRIu64
            ",\"read_ns\":%" PRIu64 ",\"stream_ns\":%" PRIu64 ",\"write_ns\":%" PRIu64 ",\"lines\":%" PRIu64
            ",\"ways\":%" PRIu64 ",\"vcpus\":%u,\"mem\":%" PRIu64 ",\"fast0\":%" PRIu64 ",\"host_ns\":%" PRIu64 "}\n",
            lo, hi, lo0, hi0, read_ns, stream_ns, write_ns, lines, ways, n_vcpus, count_mem, fast0, host_ns());
    fflush(counts_file);
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, report, NULL);
  return 0;
}
