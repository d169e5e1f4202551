// The profiler's protection, fault recording, I/O pins and signal chaining, on a real arena.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csetjmp>
#include <csignal>
#include <cstring>
#include <map>
#include <set>

#include "profile/classify.h"
#include "profile/profiler.h"
#include "profile/signals.h"
#include "track/arena.h"

using namespace sentinel;

namespace {
Profiler* g_profiler;
bool fault_hook(void* addr) {
  return g_profiler->handle_fault(addr);
}

struct Obj {
  char* p;
  size_t size;
  unsigned cls;
  uint32_t idx;
};

Obj make(Arena& a, size_t size, uint32_t log_index) {
  Obj o{nullptr, size, 0, 0};
  bool dirty;
  o.p = static_cast<char*>(a.acquire(size, &o.cls, &o.idx, &dirty));
  REQUIRE(o.p);
  Slot* s = a.slot(o.cls, o.idx);
  s->size.store(size);
  s->log_index.store(log_index);
  s->user.store(reinterpret_cast<uintptr_t>(o.p));
  return o;
}

sigjmp_buf g_jump;
volatile sig_atomic_t g_app_handler_ran = 0;
void app_handler(int) {
  g_app_handler_ran = 1;
  siglongjmp(g_jump, 1);
}
}  // namespace

TEST_CASE("protected objects record one touch per granule and interval", "[profiler]") {
  Arena a;
  REQUIRE(a.init(64u << 20));
  Profiler prof;
  REQUIRE(prof.init(&a, 65536, 2u << 20, 1 << 16));  // sweeps on: these touches are scattered
  g_profiler = &prof;
  sig::set_real_sigaction(&::sigaction);
  REQUIRE(sig::install(fault_hook));

  Obj x = make(a, 1 << 20, 0), y = make(a, 200000, 1), z = make(a, 100000, 2);
  memset(x.p, 1, x.size);

  prof.begin_interval(0, 0);
  x.p[10] = 2;                    // granule 0 of x
  x.p[65536 * 3] = 3;             // granule 3
  x.p[65536 * 3 + 5] = 4;         // same granule: no new fault
  volatile char r = y.p[150000];  // granule 2 of y, a read
  (void)r;
  prof.begin_interval(0, 1);
  x.p[11] = 5;  // granule 0 again, new interval
  Obj w = make(a, 70000, 3);
  prof.protect_new(w.cls, w.idx, reinterpret_cast<uintptr_t>(w.p), w.size);
  w.p[0] = 1;  // a new object's first touch
  prof.finish();
  z.p[0] = 1;  // after finish: no fault, no record
  CHECK_FALSE(prof.armed());

  std::set<std::tuple<uint32_t, uint16_t, uint32_t>> got;
  for (uint64_t i = 0; i < prof.touch_count(); ++i) {
    const TouchRecord& t = prof.touch(i);
    got.emplace(t.log_index, t.interval, t.granule);
  }
  std::set<std::tuple<uint32_t, uint16_t, uint32_t>> want{{0, 0, 0}, {0, 0, 3}, {1, 0, 2}, {0, 1, 0}, {3, 1, 0}};
  CHECK(got == want);
  CHECK(prof.faults() == 5);
  CHECK(x.p[65536 * 3 + 5] == 4);
}

// Sweeps (docs/profiling.md): a fault on the granule right after the previous run of the same object doubles
// the run, up to the limit; every granule of a run is recorded; scattered touches keep one granule each; a
// new interval starts over. The records equal those of the fixed granularity for a whole-object sweep.
TEST_CASE("sweeps give back doubling runs and record every granule", "[profiler]") {
  Arena a;
  REQUIRE(a.init(64u << 20));
  Profiler prof;
  REQUIRE(prof.init(&a, 8192, 64u << 10, 1 << 16));  // runs of 1, 2, 4, 8 granules
  CHECK(prof.sweep_limit() == (64u << 10));
  g_profiler = &prof;
  sig::set_real_sigaction(&::sigaction);
  REQUIRE(sig::install(fault_hook));

  const size_t size = 1u << 20;  // 128 granules
  Obj x = make(a, size, 0), y = make(a, size, 1);
  memset(x.p, 1, size);
  memset(y.p, 1, size);

  prof.begin_interval(0, 0);
  for (size_t i = 0; i < size; i += 64) x.p[i] = 2;              // in order: 1+2+4 granules, then runs of 8
  for (size_t g = 0; g < 128; g += 16) y.p[g * 8192 + 100] = 3;  // every 16th granule: no run grows
  prof.begin_interval(0, 1);
  for (size_t i = 0; i < 3 * 8192; i += 4096) x.p[i] = 4;  // a new interval: 1, then 2 granules
  prof.finish();

  std::set<std::tuple<uint32_t, uint16_t, uint32_t>> got;
  for (uint64_t i = 0; i < prof.touch_count(); ++i) {
    const TouchRecord& t = prof.touch(i);
    got.emplace(t.log_index, t.interval, t.granule);
  }
  std::set<std::tuple<uint32_t, uint16_t, uint32_t>> want;
  for (uint32_t g = 0; g < 128; ++g) want.emplace(0, 0, g);
  for (uint32_t g = 0; g < 128; g += 16) want.emplace(1, 0, g);
  for (uint32_t g = 0; g < 3; ++g) want.emplace(0, 1, g);
  CHECK(got == want);
  CHECK(prof.touch_count() == got.size());  // no granule recorded twice
  // x: 3 faults to reach runs of 8 (1+2+4 granules), then 15 runs of 8 and one of the last granule (the
  // run stops at the object's end); y: 8; x again: 2.
  CHECK(prof.faults() == 3 + 16 + 8 + 2);
  CHECK(prof.sweep_faults() == 2 + 15 + 1);
  CHECK(x.p[8192 * 127] == 2);
}

// Sampled objects (docs/profiling.md): an object of at least the sample's minimum loses access only in one
// window per block; scattered touches fault only there, a sweep goes on from window to window at one fault
// each, and what the program wrote is intact.
TEST_CASE("a sampled object faults only in its windows", "[profiler][sample]") {
  Arena a;
  REQUIRE(a.init(64u << 20));
  const PageSample sample = make_page_sample(8, 4u << 20, 256u << 10, 8192);
  REQUIRE(sample.block == (256u << 10));
  REQUIRE(sample.window() == (32u << 10));  // 4 granules of 8 KiB
  Profiler prof;
  REQUIRE(prof.init(&a, 8192, 64u << 10, 1 << 16, sample));  // runs up to 8 granules
  g_profiler = &prof;
  sig::set_real_sigaction(&::sigaction);
  REQUIRE(sig::install(fault_hook));

  const size_t size = 4u << 20;  // 16 blocks, 512 granules
  Obj x = make(a, size, 0), y = make(a, size, 1), small = make(a, 1u << 20, 2);
  memset(x.p, 1, size);
  memset(y.p, 1, size);
  memset(small.p, 1, small.size);
  REQUIRE(x.p == reinterpret_cast<char*>(a.slot_address(x.cls, x.idx)));  // granules count from the slot

  auto in_window = [&](const Obj& o, uint32_t g, uint32_t round) {
    uint64_t b = g / 32, off = uint64_t{g % 32} * 8192, w = sample.window_offset(o.cls, o.idx, b, round);
    return off >= w && off < w + sample.window();
  };
  prof.begin_interval(0, 0);
  const uint32_t round = prof.sample_round();
  for (int g = 511; g >= 0; --g) x.p[size_t(g) * 8192 + 7] = static_cast<char>(g);  // scattered: no runs
  const uint64_t x_faults = prof.faults();
  for (size_t i = 0; i < size; i += 4096) y.p[i] = 5;  // in order
  const uint64_t y_faults = prof.faults() - x_faults;
  for (size_t g = 0; g < 128; g += 16) small.p[g * 8192] = 6;  // below the minimum: every page profiled
  // The next profiled step draws windows of its own; the last step's are given back.
  prof.begin_interval(1, 0);
  const uint32_t next_round = prof.sample_round();
  CHECK(next_round != round);
  for (int g = 511; g >= 0; --g) x.p[size_t(g) * 8192 + 7] = static_cast<char>(g + 1);
  prof.finish();

  std::set<uint32_t> got_x, got_y, got_small, got_x_next;
  for (uint64_t i = 0; i < prof.touch_count(); ++i) {
    const TouchRecord& t = prof.touch(i);
    if (t.step == 1)
      got_x_next.insert(t.granule);
    else
      (t.log_index == 0 ? got_x : t.log_index == 1 ? got_y : got_small).insert(t.granule);
  }
  std::set<uint32_t> windows_x, windows_y, windows_x_next;
  for (uint32_t g = 0; g < 512; ++g) {
    if (in_window(x, g, round)) windows_x.insert(g);
    if (in_window(y, g, round)) windows_y.insert(g);
    if (in_window(x, g, next_round)) windows_x_next.insert(g);
  }
  CHECK(got_x_next == windows_x_next);
  CHECK(windows_x_next != windows_x);  // 16 blocks, 8 places each: the same draw has odds of 8^-16
  CHECK(windows_x.size() == 64);
  CHECK(got_x == windows_x);
  CHECK(x_faults == 64);  // one per window granule: 1 in 8 of the 512 an unsampled object would take
  CHECK(got_y == windows_y);
  // y: window 0 takes runs of 1 and 2 granules and the 1 left (its run of 4 cut at the window's end);
  // each later window is one run of its 4 granules.
  CHECK(y_faults == 3 + 15);
  CHECK(got_small == std::set<uint32_t>{0, 16, 32, 48, 64, 80, 96, 112});
  CHECK(prof.touch_count() == 64 + 64 + 8 + 64);
  for (int g = 0; g < 512; ++g) CHECK(x.p[size_t(g) * 8192 + 7] == static_cast<char>(g + 1));
  CHECK(y.p[size - 4096] == 5);
}

TEST_CASE("a sampled granule weighs the sample's rate, clipped to its object", "[profiler][sample]") {
  const PageSample sample = make_page_sample(8, 64u << 20, 2u << 20, 8192);
  CHECK(sample.block == (2u << 20));
  CHECK(granule_bytes(64u << 20, 3, 8192, sample) == 8 * 8192);
  CHECK(granule_bytes((64u << 20) + 100, 8192, 8192, sample) == 8 * 100);  // the object's last 100 bytes
  CHECK(granule_bytes((64u << 20) - 1, 3, 8192, sample) == 8192);          // below the minimum: itself
  CHECK(granule_bytes(64u << 20, 8192, 8192, sample) == 0);                // past the end
  // A rate whose window would be under a granule grows the block.
  CHECK(make_page_sample(64, 64u << 20, 256u << 10, 65536).block == (4u << 20));
  CHECK_FALSE(make_page_sample(1, 64u << 20, 2u << 20, 8192).covers(1u << 30));
}

TEST_CASE("system calls on protected memory succeed through pins", "[profiler]") {
  Arena a;
  REQUIRE(a.init(64u << 20));
  Profiler prof;
  REQUIRE(prof.init(&a, 4096, 4096, 1 << 16));
  g_profiler = &prof;
  sig::set_real_sigaction(&::sigaction);
  REQUIRE(sig::install(fault_hook));
  Obj x = make(a, 300000, 0);
  for (size_t i = 0; i < x.size; ++i) x.p[i] = static_cast<char>(i * 13);
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  prof.begin_interval(0, 0);
  // Without the pin the kernel refuses: EFAULT, not a signal.
  CHECK(write(fds[1], x.p, 1000) == -1);
  CHECK(errno == EFAULT);
  Profiler::Pinned pins[4];
  uint32_t n = prof.pin_range(x.p, 60000, pins, 4);
  CHECK(n == 1);
  prof.begin_interval(0, 1);  // a pinned object is not re-protected
  CHECK(write(fds[1], x.p, 60000) == 60000);
  prof.unpin(pins, n);
  char back[60000];
  CHECK(read(fds[0], back, sizeof(back)) == 60000);
  CHECK(memcmp(back, x.p, sizeof(back)) == 0);
  CHECK(prof.syscall_unprotects() >= 1);
  prof.finish();
  close(fds[0]);
  close(fds[1]);
}

TEST_CASE("faults that are not Sentinel's reach the program's handler", "[profiler][signals]") {
  sig::set_real_sigaction(&::sigaction);
  REQUIRE(sig::install(fault_hook));
  struct sigaction app {
  }, old{};
  app.sa_handler = app_handler;
  sigemptyset(&app.sa_mask);
  REQUIRE(sig::app_sigaction(SIGSEGV, &app, &old) == 0);
  struct sigaction kernel {};
  ::sigaction(SIGSEGV, nullptr, &kernel);
  CHECK((kernel.sa_flags & SA_SIGINFO));  // ours stays installed
  g_app_handler_ran = 0;
  // A real fault outside the arena (an inaccessible page of our own; not a null store, which UBSan
  // would report before the fault happens).
  void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(page != MAP_FAILED);
  if (sigsetjmp(g_jump, 1) == 0) {
    *static_cast<volatile int*>(page) = 1;
  }
  munmap(page, 4096);
  CHECK(g_app_handler_ran == 1);
  struct sigaction back {};
  sig::app_sigaction(SIGSEGV, &old, &back);
  CHECK(back.sa_handler == app_handler);
}

TEST_CASE("classification: identities, lifetimes, touches and groups", "[classify]") {
  // Three steps of period 4: ordinal 0 is a weight-like object born before the steps (persistent),
  // ordinals: 0 short (dies in its interval), 1 step-scoped, 2 persistent, 3 short.
  ObjectLog log;
  REQUIRE(log.init(64));
  uint64_t starts[] = {10, 14, 18, 22};
  sentinel_object weight{};
  weight.size = 1 << 20;
  weight.site = 9;
  weight.birth_seq = 0;
  weight.death_seq = UINT64_MAX;
  REQUIRE(log.append(weight) == 0);
  for (int k = 0; k < 3; ++k) {
    uint64_t b = starts[k];
    sentinel_object o{};
    o = sentinel_object{};
    o.size = 100000;
    o.site = 1;
    o.birth_seq = b + 0;
    o.death_seq = b + 1;
    log.append(o);
    o.size = 200000;
    o.site = 2;
    o.birth_seq = b + 1;
    o.death_seq = b + 4;
    log.append(o);
    o.size = 300000;
    o.site = 3;
    o.birth_seq = b + 2;
    o.death_seq = UINT64_MAX;
    log.append(o);
    o.size = 100000;
    o.site = 1;
    o.birth_seq = b + 3;
    o.death_seq = b + 4;
    log.append(o);
  }
  uint32_t ends[] = {2, 4};  // intervals: ordinals [0,2) and [2,4)
  // Profiled steps: 1 and 2. Touches: weight in both intervals, the step-scoped object in interval 1.
  TouchRecord touches[] = {{0, 0, 0, 0, 0}, {0, 1, 0, 0, 0}, {0, 1, 0, 0, 1},
                           {0, 1, 0, 0, 1}, {6, 1, 0, 0, 0}, {0, 0, 1, 0, 0}};
  ClassifyInput in;
  in.log = &log;
  in.step_starts = starts;
  in.step_bounds = 4;
  in.first_profiled = 1;
  in.profiled = 2;
  in.period = 4;
  in.interval_ends = ends;
  in.intervals = 2;
  in.touches = touches;
  in.touch_count = 6;
  in.granularity = 65536;
  Classification c;
  REQUIRE(classify(in, &c));
  // Identities: the weight, and 4 ordinals; the persistent ordinal-2 objects of steps 0, 1 and 2 share
  // one identity (same site, size and ordinal).
  REQUIRE(c.identity_count == 5);
  auto find = [&](uint32_t site) -> const sentinel_identity& {
    for (uint32_t i = 0; i < c.identity_count; ++i)
      if (c.identities[i].site == site && (site != 1 || c.identities[i].ordinal == 0)) return c.identities[i];
    FAIL("no identity");
    return c.identities[0];
  };
  CHECK(find(9).lifetime == SENTINEL_LIFE_PERSISTENT);
  CHECK(find(9).ordinal == SENTINEL_NO_ORDINAL);
  CHECK(find(9).touched_bytes ==
        4 * 65536);  // step 0: granule 0 in interval 0, granules 0 and 1 in interval 1; step 1: granule 0
  CHECK(find(1).lifetime == SENTINEL_LIFE_SHORT);
  CHECK(find(2).lifetime == SENTINEL_LIFE_STEP);
  CHECK(find(2).birth_interval == 0);
  CHECK(find(2).death_interval == 1);
  CHECK(find(2).touched_bytes == 65536);
  CHECK(find(3).lifetime == SENTINEL_LIFE_PERSISTENT);
  CHECK(find(3).instances == 3);
  CHECK(c.touch_count == 4);  // (weight,0,s0) (weight,1,s0) (obj6,1,s0) (weight,0,s1)
  // Groups: persistent+both intervals (weight), step-scoped+interval 1, and untouched by class.
  CHECK(c.group_count == 4);
  uint64_t members = 0;
  for (uint32_t g = 0; g < c.group_count; ++g) members += c.groups[g].members;
  CHECK(members == c.identity_count);
}

namespace {
// Classification of two profiled steps of two allocations each, the whole step one interval (starts: the
// three step bounds; ends: {2}), at 64 KiB granules.
ClassifyInput two_steps_one_interval(const ObjectLog& log, const uint64_t* starts, const uint32_t* ends,
                                     const TouchRecord* touches, uint64_t touch_count) {
  ClassifyInput in;
  in.log = &log;
  in.step_starts = starts;
  in.step_bounds = 3;
  in.profiled = 2;
  in.period = 2;
  in.interval_ends = ends;
  in.intervals = 1;
  in.touches = touches;
  in.touch_count = touch_count;
  in.granularity = 65536;
  return in;
}
// A 4 MiB object of `site` born before the steps and never freed (two chunks' worth: planned whole);
// its log index.
uint64_t append_weight(ObjectLog& log, uint32_t site) {
  sentinel_object weight{};
  weight.size = 4u << 20;
  weight.site = site;
  weight.death_seq = UINT64_MAX;
  return log.append(weight);
}
// Two such objects (sites 7 and 8, log indices 0 and 1) and the steps of two_steps_one_interval.
struct TwoWeights {
  ObjectLog log;
  uint64_t starts[3] = {10, 12, 14};
  uint32_t ends[1] = {2};
  TwoWeights() {
    REQUIRE(log.init(16));
    REQUIRE(append_weight(log, 7) == 0);
    REQUIRE(append_weight(log, 8) == 1);
  }
  ClassifyInput input(const TouchRecord* touches, uint64_t count) const {
    return two_steps_one_interval(log, starts, ends, touches, count);
  }
};
uint8_t pass_flags(uint32_t p) {
  return static_cast<uint8_t>(p << kTouchPassShift);
}
}  // namespace

TEST_CASE("classification weighs a sampled object's granules, clipped to each chunk", "[classify][sample]") {
  ObjectLog log;
  REQUIRE(log.init(16));
  uint64_t starts[] = {10, 12, 14};
  sentinel_object table{};
  table.size = 32u << 20;  // 16 chunks of 2 MiB, born before the steps
  table.site = 7;
  table.death_seq = UINT64_MAX;
  REQUIRE(log.append(table) == 0);
  for (uint64_t b : {10, 12}) {
    sentinel_object o{};
    o.size = 100000;
    o.site = 1;
    o.birth_seq = b;
    o.death_seq = b + 1;
    log.append(o);
    o.birth_seq = b + 1;
    o.death_seq = b + 2;
    log.append(o);
  }
  uint32_t ends[] = {2};
  // Chunk 0: five granules of 64 KiB recorded (8 x 5 x 64 KiB would exceed it): the whole chunk. Chunk 1:
  // one granule, 8 x 64 KiB.
  TouchRecord touches[] = {{0, 0, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 0, 0, 2},
                           {0, 0, 0, 0, 3}, {0, 0, 0, 0, 5}, {0, 0, 0, 0, 32}};
  ClassifyInput in = two_steps_one_interval(log, starts, ends, touches, 6);
  in.chunk_bytes = 2u << 20;
  in.sample = make_page_sample(8, 16u << 20, in.chunk_bytes, in.granularity);
  Classification c;
  REQUIRE(classify(in, &c));
  const sentinel_identity* id = nullptr;
  for (uint32_t i = 0; i < c.identity_count; ++i)
    if (c.identities[i].site == 7) id = &c.identities[i];
  REQUIRE(id);
  CHECK(id->chunk_bytes == (2u << 20));
  CHECK(id->touched_bytes == (2u << 20) + 8 * 65536);
  uint64_t chunk0 = 0, chunk1 = 0;
  for (uint64_t t = 0; t < c.touch_count; ++t) {
    if (c.touches[t].identity != id->id) continue;
    (c.touches[t].chunk == 0 ? chunk0 : chunk1) = c.touches[t].bytes;
  }
  CHECK(chunk0 == (2u << 20));
  CHECK(chunk1 == 8 * 65536);
}

TEST_CASE("classification gives each touch its access intensity: passes per granule", "[classify]") {
  TwoWeights w;
  auto pass = pass_flags;
  // Object 0: granules 0-3 in pass 0, 0-1 again in pass 1, granule 0 twice in pass 2 (one visit): 7
  // visits of 4 granules. Object 1: granule 0 in pass 3 only (the first pass of a touch need not be 0).
  TouchRecord touches[] = {{0, 0, 0, 0, 0},       {0, 0, 0, 0, 1},       {0, 0, 0, 0, 2},
                           {0, 0, 0, 0, 3},       {0, 0, 0, pass(1), 0}, {0, 0, 0, pass(1), 1},
                           {0, 0, 0, pass(2), 0}, {0, 0, 0, pass(2), 0}, {1, 0, 0, pass(3), 0}};
  ClassifyInput in = w.input(touches, sizeof touches / sizeof touches[0]);
  for (bool passes : {false, true}) {
    in.passes = passes;
    Classification c;
    REQUIRE(classify(in, &c));
    std::map<uint64_t, const sentinel_touch*> by_site;
    for (uint64_t t = 0; t < c.touch_count; ++t)
      for (uint32_t i = 0; i < c.identity_count; ++i)
        if (c.identities[i].id == c.touches[t].identity) by_site[c.identities[i].site] = &c.touches[t];
    REQUIRE(by_site.size() == 2);
    CHECK(by_site[7]->bytes == 4 * 65536);  // distinct granules, whatever the passes
    CHECK(by_site[8]->bytes == 65536);
    CHECK(by_site[7]->passes_x256 == (passes ? 7u * 256 / 4 : 0u));
    CHECK(by_site[8]->passes_x256 == (passes ? 256u : 0u));
  }
}

TEST_CASE("classification counts a pass at a doubled period as the first periods it stands for", "[classify]") {
  ObjectLog log;
  REQUIRE(log.init(16));
  uint64_t starts[] = {10, 12, 14};
  REQUIRE(append_weight(log, 7) == 0);
  uint32_t ends[] = {2};
  auto pass = [](uint32_t p) { return static_cast<uint8_t>(p << kTouchPassShift); };
  // Step 0: granules 0-1 in passes 0, 1 and 2. Step 1: granule 0 in passes 0 and 1, granule 1 in pass 3.
  TouchRecord touches[] = {{0, 0, 0, 0, 0},       {0, 0, 0, 0, 1},       {0, 0, 0, pass(1), 0},
                           {0, 0, 0, pass(1), 1}, {0, 0, 0, pass(2), 0}, {0, 0, 0, pass(2), 1},
                           {0, 0, 1, 0, 0},       {0, 0, 1, pass(1), 0}, {0, 0, 1, pass(3), 1}};
  ClassifyInput in = two_steps_one_interval(log, starts, ends, touches, sizeof touches / sizeof touches[0]);
  in.passes = true;
  // The period doubled from step 0's pass 2 on, and again from step 1's pass 3 on (the throttle's order).
  const Profiler::PassShift shifts[] = {{0, 0, 2, 1}, {1, 0, 3, 2}};
  auto intensity = [&](uint32_t count, uint8_t step) {
    in.pass_shifts = count ? shifts : nullptr;
    in.pass_shift_count = count;
    Classification c;
    REQUIRE(classify(in, &c));
    for (uint64_t t = 0; t < c.touch_count; ++t)
      if (c.touches[t].step == step) return c.touches[t].passes_x256;
    return 0u;
  };
  // Without doublings: step 0 has 6 visits of 2 granules, step 1 3 of 2.
  CHECK(intensity(0, 0) == 3u * 256);
  CHECK(intensity(0, 1) == 3u * 128);
  // Step 0: first passes 2, pass 1 twice at shift 0, pass 2 twice at shift 1: (2 + 2 + 4) / 2 granules.
  CHECK(intensity(2, 0) == 4u * 256);
  // Step 1: granule 0's pass 1 at shift 1 (2), granule 1's pass 3 is its first (1): (2 + 2) / 2.
  CHECK(intensity(2, 1) == 2u * 256);
}

TEST_CASE("classification says when in its interval each touch was made (format 1.14)", "[classify]") {
  TwoWeights w;
  auto pass = pass_flags;
  // Step 0: object 0 in passes 0 and 1, object 1 in pass 3 only (the interval's last pass with a touch).
  TouchRecord touches[] = {{0, 0, 0, 0, 0}, {0, 0, 0, pass(1), 1}, {1, 0, 0, pass(3), 0}};
  ClassifyInput in = w.input(touches, sizeof touches / sizeof touches[0]);
  auto times = [&](uint32_t site) {
    Classification c;
    REQUIRE(classify(in, &c));
    for (uint64_t t = 0; t < c.touch_count; ++t)
      for (uint32_t i = 0; i < c.identity_count; ++i)
        if (c.identities[i].id == c.touches[t].identity && c.identities[i].site == site)
          return std::pair<uint32_t, uint32_t>{c.touches[t].time_begin, c.touches[t].time_end};
    return std::pair<uint32_t, uint32_t>{UINT32_MAX, UINT32_MAX};
  };
  SECTION("without passes: not known") {
    CHECK(times(7) == std::pair<uint32_t, uint32_t>{0, 0});
    CHECK(times(8) == std::pair<uint32_t, uint32_t>{0, 0});
  }
  SECTION("four passes of one period: the interval's time runs to the end of pass 3") {
    in.passes = true;
    CHECK(times(7) == std::pair<uint32_t, uint32_t>{0, 65535 / 2});
    CHECK(times(8) == std::pair<uint32_t, uint32_t>{65535 * 3 / 4, 65535});
  }
  SECTION("the period doubled from pass 2 on: pass 3 starts 4 first periods in and lasts 2") {
    in.passes = true;
    const Profiler::PassShift shifts[] = {{0, 0, 2, 1}};
    in.pass_shifts = shifts;
    in.pass_shift_count = 1;
    CHECK(times(7) == std::pair<uint32_t, uint32_t>{0, 65535 / 3});
    CHECK(times(8) == std::pair<uint32_t, uint32_t>{65535 * 2 / 3, 65535});
  }
}
