#include <catch2/catch.hpp>
#include <set>
#include <thread>
#include <vector>

#include "track/site.h"

using namespace sentinel;

TEST_CASE("frame hashes are stable and distinguish order", "[site]") {
  uintptr_t a[] = {1, 2, 3}, b[] = {3, 2, 1};
  CHECK(hash_frames(a, 3) == hash_frames(a, 3));
  CHECK(hash_frames(a, 3) != hash_frames(b, 3));
  CHECK(hash_frames(a, 2) != hash_frames(a, 3));
  CHECK(hash_frames(a, 0) != 0);
}

TEST_CASE("interning gives dense ids and deduplicates, also concurrently", "[site]") {
  SiteTable t;
  REQUIRE(t.init());
  std::vector<std::thread> ts;
  std::vector<std::vector<uint32_t>> ids(4);
  for (int k = 0; k < 4; ++k) {
    ts.emplace_back([&, k] {
      for (uintptr_t s = 0; s < 1000; ++s) {
        uintptr_t frames[3] = {0x1000 + s, 0x2000, 0x3000 + s * 7};
        ids[k].push_back(t.intern(frames, 3));
      }
    });
  }
  for (auto& th : ts) th.join();
  CHECK(t.count() == 1000);
  for (int k = 1; k < 4; ++k) CHECK(ids[k] == ids[0]);
  std::set<uint32_t> uniq(ids[0].begin(), ids[0].end());
  CHECK(uniq.size() == 1000);
  CHECK(*uniq.rbegin() == 999);
  const Site* s = t.by_id(ids[0][5]);
  REQUIRE(s);
  CHECK(s->nframes == 3);
  CHECK(s->frames[0] == 0x1005);
}

namespace {
__attribute__((noinline)) uint32_t capture_here(const Unwinder& u, uintptr_t* out) {
  uint32_t n = u.capture(out);
  asm volatile("" ::: "memory");
  return n;
}
}  // namespace

TEST_CASE("libunwind captures the caller's frames", "[site]") {
  Unwinder u;
  UnwindMethod m = u.init(UnwindMethod::libunwind, 0, 0);
  CHECK(m == UnwindMethod::libunwind);  // scripts/setup installs libunwind
  uintptr_t frames[SENTINEL_MAX_FRAMES];
  uint32_t n = capture_here(u, frames);
  CHECK(n == SENTINEL_MAX_FRAMES);  // Catch2 nests deeper than 8 frames
  Unwinder bt;
  CHECK(bt.init(UnwindMethod::backtrace, 0, 0) == UnwindMethod::backtrace);
  CHECK(capture_here(bt, frames) > 2);
  Unwinder none;
  CHECK(none.init(UnwindMethod::none, 0, 0) == UnwindMethod::none);
  CHECK(capture_here(none, frames) == 0);
}
