// The move method the migrator keeps from its probe's two round trips (tier/migrator.h, probe_choice):
// mbind unless move_pages is clearly faster, since a near tie under TCG once picked move_pages and the
// migrator then trailed a loop of short intervals (docs/tiering.md, "The move method").
#include <atomic>
#include <catch2/catch.hpp>
#include <memory>

#include "tier/migrator.h"

using sentinel::MoveMethod;
using sentinel::probe_choice;

TEST_CASE("the probe keeps mbind unless move_pages is 25% faster", "[tier]") {
  CHECK(probe_choice(1000, 1000) == MoveMethod::mbind);
  CHECK(probe_choice(950, 1000) == MoveMethod::mbind);   // a near tie: mbind
  CHECK(probe_choice(1200, 1000) == MoveMethod::mbind);  // mbind faster
  CHECK(probe_choice(790, 1000) == MoveMethod::move_pages);
  CHECK(probe_choice(0, 1000) == MoveMethod::mbind);       // move_pages failed
  CHECK(probe_choice(1000, 0) == MoveMethod::move_pages);  // mbind failed
}

// A promotion's room: counted, then checked against the budget with the births' reservations, and given
// back when it does not fit (Migrator::reserve_fast; Tiering::birth_tier takes a birth's room the same
// way, so of the two racing for the last room both cannot pass).
TEST_CASE("a promotion keeps room only within the budget, with the births reserved", "[tier]") {
  auto m = std::make_unique<sentinel::Migrator>();
  std::atomic<int64_t> pending{0};
  m->set_pending(&pending);
  CHECK(m->reserve_fast(600, 1000));
  CHECK(m->fast_bytes() == 600);
  CHECK_FALSE(m->reserve_fast(500, 1000));  // 1100 > 1000: nothing kept
  CHECK(m->fast_bytes() == 600);
  CHECK(m->fast_peak_bytes() == 600);  // the refused try left no peak
  pending = 300;                       // a birth reserved: 600 + 300 + 200 > 1000
  CHECK_FALSE(m->reserve_fast(200, 1000));
  CHECK(m->reserve_fast(100, 1000));  // exactly full
  CHECK(m->fast_bytes() == 700);
  CHECK(m->reserve_fast(uint64_t{1} << 40, UINT64_MAX));  // no budget: always room
}
