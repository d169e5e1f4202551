// The runtime's allocation paths, driven directly (no LD_PRELOAD), so that they also run under ASan.
#include <sys/mman.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "base/numa_ops.h"
#include "base/parse.h"
#include "base/thread.h"
#include "runtime/runtime.h"
#include "runtime/stepping.h"
#include "tier/step_costs.h"

namespace rt = sentinel::rt;
extern "C" void __libc_free(void*);  // the runtime falls back to glibc directly, around any interposer

namespace {
void ensure_runtime() {
  static const char* env[] = {"SENTINEL_MIN_BYTES=64K", "SENTINEL_DUMP=none", "SENTINEL_RETAIN_BYTES=4M", nullptr};
  rt::init_for_tests(env);
  REQUIRE(std::string(rt::current_mode()) == "track");
}
}  // namespace

TEST_CASE("tracked objects: allocate, usable size, zeroing, free", "[runtime]") {
  ensure_runtime();
  CHECK_FALSE(rt::should_track(1000));
  CHECK(rt::should_track(65536));
  auto* p = static_cast<unsigned char*>(rt::allocate(100000, 0, false, {}));
  REQUIRE(p);
  CHECK(rt::owns(p));
  CHECK(rt::usable_size(p) >= 100000);
  memset(p, 0xAB, 100000);
  rt::release(p);
  auto* z = static_cast<unsigned char*>(rt::allocate(100000, 0, true, {}));  // likely the same, dirty slot
  REQUIRE(z);
  bool all_zero = true;
  for (size_t i = 0; i < 100000; ++i) all_zero &= z[i] == 0;
  CHECK(all_zero);
  rt::release(z);
}

TEST_CASE("large alignments are honoured inside a slot", "[runtime]") {
  ensure_runtime();
  for (size_t align : {size_t{64}, size_t{4096}, size_t{65536}, size_t{1} << 21}) {
    void* p = rt::allocate(300000, align, false, {});
    REQUIRE(p);
    CHECK(reinterpret_cast<uintptr_t>(p) % align == 0);
    CHECK(rt::usable_size(p) >= 300000);
    memset(p, 1, 300000);
    rt::release(p);
  }
}

TEST_CASE("realloc keeps contents in place, moving, and down to libc", "[runtime]") {
  ensure_runtime();
  auto* p = static_cast<unsigned char*>(rt::allocate(70000, 0, false, {}));
  REQUIRE(p);
  for (size_t i = 0; i < 70000; ++i) p[i] = static_cast<unsigned char>(i * 7);
  auto* q = static_cast<unsigned char*>(rt::reallocate(p, 72000, {}));  // fits the 80 KiB class
  CHECK(q == p);
  auto* r = static_cast<unsigned char*>(rt::reallocate(q, 5 << 20, {}));  // moves
  REQUIRE(r);
  bool same = true;
  for (size_t i = 0; i < 70000; ++i) same &= r[i] == static_cast<unsigned char>(i * 7);
  CHECK(same);
  auto* s = static_cast<unsigned char*>(rt::reallocate(r, 100, {}));  // below the threshold: libc
  REQUIRE(s);
  CHECK_FALSE(rt::owns(s));
  same = true;
  for (size_t i = 0; i < 100; ++i) same &= s[i] == static_cast<unsigned char>(i * 7);
  CHECK(same);
  __libc_free(s);
  void* t = rt::allocate(70000, 0, false, {});
  CHECK(rt::reallocate(t, 0, {}) == nullptr);  // glibc: frees, returns NULL
}

TEST_CASE("bad frees are reported and ignored", "[runtime]") {
  ensure_runtime();
  void* p = rt::allocate(70000, 0, false, {});
  rt::release(p);
  rt::release(p);                          // double free
  rt::release(static_cast<char*>(p) + 8);  // interior pointer
  int e = errno = 1234;
  rt::release(p);
  CHECK(errno == e);
}

TEST_CASE("objects beyond the largest class fall back", "[runtime]") {
  ensure_runtime();
  CHECK(rt::allocate(size_t{1} << 40, 0, false, {}) == nullptr);
  CHECK(rt::allocate(100000, size_t{1} << 31, false, {}) == nullptr);
}

TEST_CASE("stats add up across threads", "[runtime]") {
  ensure_runtime();
  sentinel_stats before{};
  REQUIRE(rt::get_stats(&before) == 0);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([] {
      for (int i = 0; i < 1000; ++i) rt::release(rt::allocate(65536 + size_t(i % 5) * 4096, 0, false, {}));
    });
  for (auto& t : ts) t.join();
  sentinel_stats after{};
  REQUIRE(rt::get_stats(&after) == 0);
  CHECK(after.tracked_allocations - before.tracked_allocations == 4000);
  CHECK(after.live_bytes == before.live_bytes);
  CHECK(after.peak_live_bytes >= 65536);
  CHECK(after.overhead_bytes > 0);
  rt::mark_step();
  REQUIRE(rt::get_stats(&after) == 0);
  CHECK(after.steps_marked == before.steps_marked + 1);
}

TEST_CASE("CUDA host objects are registered and retired", "[runtime]") {
  ensure_runtime();
  static char pinned[8192];
  sentinel_stats before{};
  rt::get_stats(&before);
  rt::note_cuda_host_alloc(pinned, sizeof(pinned), {}, nullptr);
  sentinel_stats mid{};
  rt::get_stats(&mid);
  CHECK(mid.live_bytes == before.live_bytes + sizeof(pinned));
  rt::note_cuda_host_free(pinned);
  sentinel_stats after{};
  rt::get_stats(&after);
  CHECK(after.live_bytes == before.live_bytes);
}

// SENTINEL_STEP_COSTS=auto's measurements (tier/step_costs.h), on whatever node this host has: both
// buffers on one node cost about the same, so the slow cost is small, never negative; the move cost is
// a bandwidth's ns per KiB.
TEST_CASE("step costs: the read-pass penalty and the move cost", "[runtime]") {
  using namespace sentinel;
  CHECK(move_ns_per_kib_of(0) == 0);
  CHECK(move_ns_per_kib_of(uint64_t{1} << 30) == 954);  // 1 GiB/s: 1024 B in 953.67 ns
  CHECK(move_ns_per_kib_of(1) == kMaxStepCostNsPerKib);
  if (numa::probe_denied_calls() & (numa::kDeniedMbind | numa::kDeniedMovePages)) {
    WARN("NUMA calls refused here: the read pass is not measured");
    return;
  }
  uint32_t ns = UINT32_MAX;
  const char* why = nullptr;
  REQUIRE(measure_slow_ns_per_kib(0, 0, &ns, &why));
  CHECK(ns < 1000);  // the same node twice: a difference of noise, not of memory
  CHECK_FALSE(measure_slow_ns_per_kib(0, numa::kMaxNode + 1, &ns, &why));  // no such node: refused, said
  CHECK(why != nullptr);
}

// What a move costs the training thread: all of the migrator's time where they share one CPU (or the
// CPUs are unknown); with another CPU, the slow cost, the memory traffic they share, never more than the
// migrator's own time; a slow node no slower than the fast one says nothing, and the migrator's time stays.
TEST_CASE("step costs: a move priced for the training thread", "[runtime]") {
  using namespace sentinel;
  CHECK(training_move_ns_per_kib(59000, 3000, 1) == 59000);
  CHECK(training_move_ns_per_kib(59000, 3000, 0) == 59000);
  CHECK(training_move_ns_per_kib(59000, 3000, 2) == 3000);
  CHECK(training_move_ns_per_kib(59000, 3000, 64) == 3000);
  CHECK(training_move_ns_per_kib(900, 3000, 2) == 900);  // a migrator faster than a slow read: its own time
  CHECK(training_move_ns_per_kib(59000, 0, 2) == 59000);
  CHECK(training_move_ns_per_kib(0, 3000, 2) == 0);  // no bandwidth measured: still unknown
  note_start_cpus();
  CHECK(start_cpu_count() >= 1);
}

// move_pages on pages that hold nothing of the range's own: untouched ones (ENOENT) and ones only read,
// which map the shared zero page (EFAULT). Neither can move or needs to; counted failed, they made a
// demotion "fail" at every boundary in the slow-tier guest (125,592 pages in one run) while the object
// stayed counted on the fast node, and the budget then kept the plan's fast births slow.
TEST_CASE("move_range: untouched and zero-page pages are absent, not failed", "[runtime]") {
  using namespace sentinel;
  if (numa::probe_denied_calls() & numa::kDeniedMovePages) {
    WARN("move_pages refused here: not checked");
    return;
  }
  constexpr size_t kPage = 4096;
  void* m = mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  auto* b = static_cast<volatile unsigned char*>(m);
  CHECK(b[0] + b[kPage] == 0);  // read only: the zero page
  b[2 * kPage] = 1;             // written: a page of its own; the fourth stays untouched
  uintptr_t pages[4];
  int status[4], nodes[4];
  const numa::MoveResult r = numa::move_range(reinterpret_cast<uintptr_t>(m), 4 * kPage, 0, pages, status, nodes, 4);
  INFO("statuses " << status[0] << " " << status[1] << " " << status[2] << " " << status[3]);
  CHECK(r.error == 0);
  CHECK(r.pages_moved == 1);
  CHECK(r.pages_absent == 3);
  CHECK(r.pages_failed == 0);
  munmap(m, 4 * kPage);
}

TEST_CASE("step log: a phase's newest step is dropped with a later phase's steps after it", "[runtime]") {
  sentinel::StepLog log;
  REQUIRE(log.init());
  auto add = [&](uint16_t phase, uint64_t seq) {
    sentinel_step_entry e{};
    e.phase = phase;
    e.start_seq = seq;
    log.add(e);
  };
  add(3, 100);
  add(3, 200);
  add(3, 300);  // the update after the last `break`: 20 allocations before the evaluation's first step
  add(5, 320);  // the evaluation's lock announces its steps first
  add(5, 350);
  CHECK_FALSE(log.drop_last(3, 200));  // not the phase's newest
  CHECK_FALSE(log.drop_last(5, 320));
  REQUIRE(log.drop_last(3, 300));
  REQUIRE(log.size() == 4);
  CHECK(log.at(0).start_seq == 100);
  CHECK(log.at(1).start_seq == 200);
  CHECK(log.at(1).allocations == 100);  // ends where the dropped step began, not at the evaluation
  CHECK(log.at(2).start_seq == 320);
  CHECK(log.at(2).allocations == 30);
  CHECK(log.at(3).start_seq == 350);
  log.close_last(400);
  CHECK(log.at(3).allocations == 50);
}
