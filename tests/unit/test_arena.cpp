#include <catch2/catch.hpp>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "track/arena.h"
#include "track/size_class.h"

using namespace sentinel;

TEST_CASE("size classes cover every size with at most 25% waste", "[arena]") {
  for (size_t n : {size_t{1}, size_t{4096}, size_t{4097}, size_t{65536}, size_t{65537}, size_t{100000}, size_t{1} << 20,
                   (size_t{1} << 30) + 1}) {
    int c = class_of(n);
    REQUIRE(c >= 0);
    CHECK(class_size(static_cast<unsigned>(c)) >= n);
    if (n > 16384) CHECK(class_size(static_cast<unsigned>(c)) <= n + n / 4 + kPageSize);
  }
  CHECK(class_of(kLargestClass + 1) == -1);
}

TEST_CASE("slots are page aligned, disjoint, and found by address", "[arena]") {
  Arena a;
  REQUIRE(a.init(1u << 20));
  std::vector<std::pair<char*, size_t>> got;
  for (size_t n : {size_t{65536}, size_t{70000}, size_t{1} << 20, size_t{65536}, size_t{3} << 20}) {
    unsigned cls;
    uint32_t idx;
    bool dirty;
    auto* p = static_cast<char*>(a.acquire(n, &cls, &idx, &dirty));
    REQUIRE(p);
    CHECK(reinterpret_cast<uintptr_t>(p) % kPageSize == 0);
    CHECK_FALSE(dirty);
    CHECK(a.owns(p));
    memset(p, 0x5a, n);
    unsigned c2;
    uint32_t i2;
    REQUIRE(a.locate(p + n - 1, &c2, &i2));
    CHECK(c2 == cls);
    CHECK(i2 == idx);
    got.emplace_back(p, n);
  }
  for (size_t i = 0; i < got.size(); ++i)
    for (size_t j = i + 1; j < got.size(); ++j)
      CHECK((got[i].first + got[i].second <= got[j].first || got[j].first + got[j].second <= got[i].first));
  int x;
  CHECK_FALSE(a.owns(&x));
}

// The runtime's rule (SENTINEL_RETAIN_BYTES, docs/config.md): freed slots are kept while live + kept stays
// within the peak of live slots plus the limit; what would exceed it goes back to the kernel.
TEST_CASE("retention up to the peak of live slots", "[arena]") {
  Arena a;
  REQUIRE(a.init(64 * 1024, true));  // room for one 64 KiB slot by the limit alone
  unsigned cls, big_cls;
  uint32_t i[3], big;
  bool dirty;
  for (auto& x : i) REQUIRE(a.acquire(65536, &cls, &x, &dirty));
  for (auto& x : i) a.release(cls, x);
  CHECK(a.retained_bytes() == 3 * 65536);  // within the peak (3 slots live at once)
  CHECK(a.madvised() == 0);
  CHECK(a.peak_slot_bytes() == 3 * 65536);
  // A larger class, while the three small ones are kept: live + kept would be 448 KiB > the 256 KiB peak
  // + 64 KiB.
  REQUIRE(a.acquire(262144, &big_cls, &big, &dirty));
  CHECK(a.peak_slot_bytes() == 262144);
  a.release(big_cls, big);
  CHECK(a.madvised() == 1);
  CHECK(a.retained_bytes() == 3 * 65536);
}

TEST_CASE("freed slots are reused LIFO and retention is bounded", "[arena]") {
  Arena a;
  REQUIRE(a.init(128 * 1024));  // room for two 64 KiB slots
  unsigned cls;
  uint32_t i1, i2, i3, again;
  bool dirty;
  auto* p1 = static_cast<char*>(a.acquire(65536, &cls, &i1, &dirty));
  auto* p2 = static_cast<char*>(a.acquire(65536, &cls, &i2, &dirty));
  auto* p3 = static_cast<char*>(a.acquire(65536, &cls, &i3, &dirty));
  memset(p1, 1, 65536);
  memset(p2, 2, 65536);
  memset(p3, 3, 65536);
  a.release(cls, i1);
  a.release(cls, i2);
  a.release(cls, i3);  // over budget: returned to the kernel
  CHECK(a.retained_bytes() == 2 * 65536);
  CHECK(a.madvised() == 1);
  auto* q = static_cast<char*>(a.acquire(65536, &cls, &again, &dirty));
  CHECK(q == p3);
  CHECK_FALSE(dirty);
  CHECK(q[0] == 0);  // MADV_DONTNEED gave zero pages back
  q = static_cast<char*>(a.acquire(65536, &cls, &again, &dirty));
  CHECK(q == p2);
  CHECK(dirty);
  CHECK(q[0] == 2);
  CHECK(a.reused() == 1);
}

TEST_CASE("concurrent acquire and release never hand out a slot twice", "[arena]") {
  Arena a;
  REQUIRE(a.init(64u << 20));
  constexpr int kThreads = 8, kRounds = 20000;
  std::vector<std::thread> ts;
  std::atomic<int> errors{0};
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      std::vector<std::tuple<uint64_t*, unsigned, uint32_t>> mine;
      for (int r = 0; r < kRounds; ++r) {
        if (mine.size() < 16 && (r % 3 != 2)) {
          unsigned cls;
          uint32_t idx;
          bool dirty;
          auto* p = static_cast<uint64_t*>(a.acquire(65536 + (r % 4) * 4096, &cls, &idx, &dirty));
          if (!p) {
            ++errors;
            continue;
          }
          *p = (uint64_t(t) << 32) | uint64_t(r);
          mine.emplace_back(p, cls, idx);
        } else if (!mine.empty()) {
          auto [p, cls, idx] = mine.back();
          mine.pop_back();
          if ((*p >> 32) != uint64_t(t)) ++errors;  // someone else got our slot
          a.release(cls, idx);
        }
      }
      for (auto& [p, cls, idx] : mine) a.release(cls, idx);
    });
  }
  for (auto& t : ts) t.join();
  CHECK(errors == 0);
}

TEST_CASE("the interleave pattern puts the share of any run of groups on the fast node, evenly", "[arena]") {
  for (uint32_t ppm : {100000u, 200000u, 250000u, 333333u, 500000u, 800000u, 1000000u}) {
    for (uintptr_t first : {uintptr_t{0}, uintptr_t{7}, uintptr_t{1} << 20, (uintptr_t{1} << 31) + 3}) {
      const uint64_t n = 1000;
      uint64_t fast = 0, gap = 0, longest_gap = 0;
      for (uintptr_t g = first; g < first + n; ++g) {
        if (Arena::interleave_fast(g, ppm)) {
          ++fast;
          gap = 0;
        } else if (++gap > longest_gap) {
          longest_gap = gap;
        }
      }
      INFO("share " << ppm << " ppm from group " << first);
      const double want = static_cast<double>(n) * ppm / 1e6;
      CHECK(static_cast<double>(fast) >= want - 1);
      CHECK(static_cast<double>(fast) <= want + 1);
      // The most even spread: never more slow groups in a row than the weights ask (1:4 -> 4).
      if (ppm < 1000000) CHECK(longest_gap <= static_cast<uint64_t>(1e6 / ppm));
    }
  }
  CHECK_FALSE(Arena::interleave_fast(12345, 0));
}

namespace {
uintptr_t g_slow_slot;  // relabel test: the slot whose pages "the kernel" put on the slow node
uint8_t where_for_test(void*, uintptr_t addr, size_t) {
  return addr == g_slow_slot ? kTierSlow : kTierFast;
}
}  // namespace

TEST_CASE("free slots whose pages are elsewhere are relabeled and served for that tier", "[arena]") {
  Arena a;
  REQUIRE(a.init(1 << 20));
  unsigned cls;
  uint32_t i1, i2, i3, i4, got;
  bool dirty;
  auto* p1 = static_cast<char*>(a.acquire(65536, &cls, &i1, &dirty));
  auto* p2 = static_cast<char*>(a.acquire(65536, &cls, &i2, &dirty));
  auto* p3 = static_cast<char*>(a.acquire(65536, &cls, &i3, &dirty));
  auto* p4 = static_cast<char*>(a.acquire(65536, &cls, &i4, &dirty));
  for (char* p : {p1, p2, p3}) memset(p, 7, 65536);
  g_slow_slot = reinterpret_cast<uintptr_t>(p2);
  a.release(cls, i1);
  a.release(cls, i2);
  a.release(cls, i3);
  // A live slot is not touched, whatever `where` says of it.
  CHECK(a.relabel_free(&where_for_test, nullptr) == 1);
  CHECK(a.slot(cls, i2)->tier.load() == kTierSlow);
  CHECK(a.relabel_free(&where_for_test, nullptr) == 0);  // already recorded there
  uint8_t tier = 0xFF;
  // The fast list is LIFO: p3, then p2 (now slow: passed over, to the slow list), then p1.
  CHECK(a.acquire(65536, &cls, &got, &dirty, nullptr, kTierFast, &tier) == p3);
  CHECK(tier == kTierFast);
  CHECK(a.acquire(65536, &cls, &got, &dirty, nullptr, kTierFast, &tier) == p1);
  CHECK(a.acquire(65536, &cls, &got, &dirty, nullptr, kTierSlow, &tier) == p2);
  CHECK(tier == kTierSlow);
  CHECK(dirty);
  CHECK(p4 != nullptr);
}
