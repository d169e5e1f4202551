/* The slow-tier plugin's line buffer, driven on the host (meson test plugin-line-buffer). The plugin's own
 * source is included, and this file is QEMU's side of the few plugin calls on_access() makes: the address an
 * access "has" is the one the test passes, so a test can line pages up the way physical memory happens to.
 * Checked: the direct-mapped buffer (ways=1, the default) is the one the presets were calibrated with, a miss
 * for every access that maps to a slot another line holds, against a reference model of it on a random
 * stream; with ways=8 lines that share a set stay (up to 8, least recently used evicted); a store to a line
 * held clean is a write miss once; and bad ways values are refused. No delays are set, so nothing busy-waits. */
#include "slow_tier.c"

enum { NODE1 = 1 };
static const uint64_t kLo = 1ull << 32, kHi = 2ull << 32;

struct qemu_plugin_hwaddr {
  uint64_t phys;
};
static struct qemu_plugin_hwaddr the_hwaddr;

struct qemu_plugin_hwaddr* qemu_plugin_get_hwaddr(qemu_plugin_meminfo_t info, uint64_t vaddr) {
  (void)info;
  the_hwaddr.phys = vaddr; /* the test's "virtual" address is the physical one */
  return &the_hwaddr;
}
uint64_t qemu_plugin_hwaddr_phys_addr(const struct qemu_plugin_hwaddr* h) {
  return h->phys;
}
bool qemu_plugin_hwaddr_is_io(const struct qemu_plugin_hwaddr* h) {
  (void)h;
  return false;
}
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info) {
  return info != 0;
}

/* Never called by on_access(); here so that the plugin links. */
static void unreachable(const char* what) {
  fprintf(stderr, "test-line-buffer: %s called\n", what);
  abort();
}
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb) {
  (void)id, (void)cb;
}
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void* userdata) {
  (void)id, (void)cb, (void)userdata;
}
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb* tb) {
  (void)tb;
  unreachable("qemu_plugin_tb_n_insns");
  return 0;
}
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb* tb) {
  (void)tb;
  unreachable("qemu_plugin_tb_vaddr");
  return 0;
}
struct qemu_plugin_insn* qemu_plugin_tb_get_insn(const struct qemu_plugin_tb* tb, size_t idx) {
  (void)tb, (void)idx;
  unreachable("qemu_plugin_tb_get_insn");
  return NULL;
}
const void* qemu_plugin_insn_data(const struct qemu_plugin_insn* insn) {
  (void)insn;
  unreachable("qemu_plugin_insn_data");
  return NULL;
}
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn* insn) {
  (void)insn;
  unreachable("qemu_plugin_insn_size");
  return 0;
}
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb* tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void* userdata) {
  (void)tb, (void)cb, (void)flags, (void)userdata;
  unreachable("qemu_plugin_register_vcpu_tb_exec_cb");
}
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn* insn, qemu_plugin_vcpu_udata_cb_t cb,
                                            enum qemu_plugin_cb_flags flags, void* userdata) {
  (void)insn, (void)cb, (void)flags, (void)userdata;
  unreachable("qemu_plugin_register_vcpu_insn_exec_cb");
}
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn* insn, qemu_plugin_vcpu_mem_cb_t cb,
                                      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw, void* userdata) {
  (void)insn, (void)cb, (void)flags, (void)rw, (void)userdata;
  unreachable("qemu_plugin_register_vcpu_mem_cb");
}
void qemu_plugin_outs(const char* string) {
  fputs(string, stderr);
}

static int failures;
#define CHECK(cond, ...)                           \
  do {                                             \
    if (!(cond)) {                                 \
      fprintf(stderr, "FAIL line %d: ", __LINE__); \
      fprintf(stderr, __VA_ARGS__);                \
      fputc('\n', stderr);                         \
      failures++;                                  \
    }                                              \
  } while (0)

/* A fresh plugin with `ways` (and 512 lines, no delays); the install's status. */
static int install(const char* ways_arg) {
  static char lo_arg[64], hi_arg[64], ways_buf[64];
  snprintf(lo_arg, sizeof lo_arg, "lo=%llu", (unsigned long long)kLo);
  snprintf(hi_arg, sizeof hi_arg, "hi=%llu", (unsigned long long)kHi);
  snprintf(ways_buf, sizeof ways_buf, "%s", ways_arg);
  char* argv[] = {lo_arg, hi_arg, ways_buf};
  qemu_info_t info = {.system_emulation = true, .system = {.smp_vcpus = 1, .max_vcpus = 1}};
  ways = 1; /* the defaults, as a fresh load of the plugin has them */
  lines = 512;
  return qemu_plugin_install(0, &info, 3, argv);
}

static uint64_t misses(int kind) {
  return vcpus[0].misses[NODE1][kind];
}
static uint64_t all_misses(void) {
  return misses(READ) + misses(STREAM) + misses(WRITE);
}
static void load(uint64_t addr) {
  on_access(0, 0, addr, NULL);
}
static void store(uint64_t addr) {
  on_access(0, 1, addr, NULL);
}

/* `n` lines 32 KiB apart (one slot of a 512-line direct-mapped buffer), read round robin `rounds` times. */
static void read_aliased(int n, int rounds) {
  for (int r = 0; r < rounds; r++)
    for (int i = 0; i < n; i++) load(kLo + (uint64_t)i * (512 * 64));
}

/* The direct-mapped buffer as it was before sets: one tag per slot, a load hit on the line, a store hit on
 * the line stored to. Misses of a random stream, to compare with the plugin at ways=1. */
static uint64_t reference_direct_mapped(const uint64_t* addrs, const int* stores, int n) {
  static uint64_t slot[512];
  memset(slot, 0, sizeof slot);
  uint64_t count = 0;
  for (int i = 0; i < n; i++) {
    uint64_t line = addrs[i] >> LINE_SHIFT, *s = &slot[line & 511];
    if (stores[i] ? *s == ((line + 1) | DIRTY) : (*s & ~DIRTY) == line + 1) continue;
    *s = stores[i] ? (line + 1) | DIRTY : line + 1;
    count++;
  }
  return count;
}

int main(void) {
  CHECK(install("ways=1") == 0, "ways=1 installs");
  read_aliased(8, 100);
  CHECK(all_misses() == 800, "direct-mapped: 8 aliased lines miss every time (%llu of 800)",
        (unsigned long long)all_misses());

  CHECK(install("ways=8") == 0, "ways=8 installs");
  read_aliased(8, 100);
  CHECK(all_misses() == 8, "8-way: 8 aliased lines miss once each (%llu)", (unsigned long long)all_misses());

  CHECK(install("ways=8") == 0, "ways=8 installs");
  read_aliased(9, 100);
  CHECK(all_misses() == 900, "8-way, least recently used evicted: 9 lines round robin always miss (%llu of 900)",
        (unsigned long long)all_misses());

  CHECK(install("ways=8") == 0, "ways=8 installs");
  for (int r = 0; r < 100; r++) { /* a hot line among 7 new lines a round: used again before it is the oldest */
    load(kLo);
    for (int i = 1; i <= 7; i++) load(kLo + (uint64_t)(r * 7 + i) * (512 * 64));
  }
  CHECK(all_misses() == 1 + 700, "8-way: the hot line stays (%llu of 701)", (unsigned long long)all_misses());

  CHECK(install("ways=4") == 0, "ways=4 installs");
  load(kLo);
  store(kLo);
  store(kLo);
  load(kLo);
  CHECK(misses(READ) == 1 && misses(WRITE) == 1,
        "a store to a line held clean is one write miss (%llu reads, %llu writes)", (unsigned long long)misses(READ),
        (unsigned long long)misses(WRITE));

  enum { N = 200000 };
  static uint64_t addrs[N];
  static int stores[N];
  uint64_t x = 12345;
  for (int i = 0; i < N; i++) { /* random over 8 regions of 4 KiB, 32 KiB apart: 512 lines, aliased 8 to a slot */
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    addrs[i] = kLo + ((x >> 20) & 7) * (512 * 64) + ((x >> 30) & 4095);
    stores[i] = (x >> 50) % 4 == 0;
  }
  CHECK(install("ways=1") == 0, "ways=1 installs");
  for (int i = 0; i < N; i++) on_access(0, (qemu_plugin_meminfo_t)stores[i], addrs[i], NULL);
  const uint64_t want = reference_direct_mapped(addrs, stores, N);
  CHECK(all_misses() == want, "ways=1 is the direct-mapped buffer: %llu misses, the reference %llu",
        (unsigned long long)all_misses(), (unsigned long long)want);
  CHECK(install("ways=8") == 0, "ways=8 installs");
  for (int i = 0; i < N; i++) on_access(0, (qemu_plugin_meminfo_t)stores[i], addrs[i], NULL);
  CHECK(want > 100000 && all_misses() <= 2 * 512, /* each line: one read miss and one write miss at most */
        "8-way holds the 512 lines that a direct-mapped buffer keeps evicting (%llu misses against %llu)",
        (unsigned long long)all_misses(), (unsigned long long)want);

  CHECK(install("ways=3") == -1, "ways=3 is refused");
  CHECK(install("ways=0") == -1, "ways=0 is refused");
  CHECK(install("ways=128") == -1, "ways=128 is refused");
  printf("%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
