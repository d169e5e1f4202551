// Following a sustained drift of the migrator's bandwidth (tier/drift_follow.h): a re-plan only where
// kWindows settled windows in a row lie on one side of the reference and their median is 1.5x off it.
#include <catch2/catch.hpp>

#include "tier/drift_follow.h"

using sentinel::DriftFollow;

namespace {
constexpr uint64_t MB = 1000000;

// Feeds n windows of `bps`; returns the last answer and how many were non-zero.
uint64_t feed(DriftFollow& d, uint64_t bps, uint32_t n, uint32_t* answers = nullptr, bool settled = true) {
  uint64_t last = 0;
  for (uint32_t i = 0; i < n; ++i) {
    last = d.on_window(bps, settled);
    if (answers && last) ++*answers;
  }
  return last;
}
}  // namespace

TEST_CASE("a bandwidth that stays 1.5x off for kWindows windows is followed", "[tier]") {
  DriftFollow d;
  d.set_reference(60 * MB);
  uint32_t answers = 0;
  feed(d, 20 * MB, DriftFollow::kWindows - 1, &answers);
  CHECK(answers == 0);
  CHECK(d.on_window(20 * MB, true) == 20 * MB);
  d.followed(20 * MB);
  CHECK(d.follows() == 1);
  CHECK(d.reference() == 20 * MB);
  // From the new reference, the same bandwidth is no drift.
  CHECK(feed(d, 20 * MB, 3 * DriftFollow::kWindows) == 0);
}

TEST_CASE("a faster migrator is followed too, at the run's median", "[tier]") {
  DriftFollow d;
  d.set_reference(20 * MB);
  const uint64_t run[DriftFollow::kWindows] = {40 * MB, 60 * MB, 30 * MB, 50 * MB, 70 * MB, 45 * MB, 35 * MB, 55 * MB};
  uint64_t got = 0;
  for (uint64_t bps : run) got = d.on_window(bps, true);
  CHECK(got == 47500000);  // the mean of the middle two, 45 and 50 MB/s
}

TEST_CASE("TCG's window-to-window swings are not a drift", "[tier]") {
  DriftFollow d;
  d.set_reference(50 * MB);
  uint32_t answers = 0;
  // 1.5x either way, alternating: no run on one side.
  for (uint32_t i = 0; i < 10 * DriftFollow::kWindows; ++i)
    if (d.on_window(i % 2 ? 80 * MB : 30 * MB, true)) ++answers;
  // One side for kWindows - 1 windows, then the other: the run starts again.
  feed(d, 30 * MB, DriftFollow::kWindows - 1, &answers);
  feed(d, 80 * MB, 1, &answers);
  feed(d, 30 * MB, DriftFollow::kWindows - 1, &answers);
  CHECK(answers == 0);
}

TEST_CASE("a run on one side whose median is within 1.5x is not followed", "[tier]") {
  DriftFollow d;
  d.set_reference(50 * MB);
  uint32_t answers = 0;
  feed(d, 40 * MB, 4 * DriftFollow::kWindows, &answers);  // 1.25x slower for good: within
  CHECK(answers == 0);
  // A run that drifts further on the same side is judged on its last kWindows windows: 4 of 40 and 4 of
  // 25 MB/s have a median of 32.5, 1.54x off.
  feed(d, 25 * MB, DriftFollow::kWindows / 2 - 1, &answers);
  CHECK(answers == 0);
  CHECK(d.on_window(25 * MB, true) == 32500000);
}

TEST_CASE("a window opened while the migrator was taking a schedule up ends the run", "[tier]") {
  DriftFollow d;
  d.set_reference(60 * MB);
  uint32_t answers = 0;
  feed(d, 20 * MB, DriftFollow::kWindows - 1, &answers);
  feed(d, 20 * MB, 1, &answers, false);
  feed(d, 20 * MB, DriftFollow::kWindows - 1, &answers);
  CHECK(answers == 0);
  feed(d, 20 * MB, 1, &answers);
  CHECK(answers == 1);
}

TEST_CASE("a phase follows at most kMaxFollows drifts", "[tier]") {
  DriftFollow d;
  d.set_reference(100 * MB);
  uint64_t bps = 100 * MB;
  for (uint32_t i = 0; i < DriftFollow::kMaxFollows; ++i) {
    bps /= 2;
    const uint64_t got = feed(d, bps, DriftFollow::kWindows);
    REQUIRE(got == bps);
    d.followed(got);
  }
  CHECK(feed(d, bps / 2, 4 * DriftFollow::kWindows) == 0);
  CHECK(d.follows() == DriftFollow::kMaxFollows);
}

TEST_CASE("no reference, nothing to follow", "[tier]") {
  DriftFollow d;
  CHECK(feed(d, 20 * MB, 4 * DriftFollow::kWindows) == 0);
}
