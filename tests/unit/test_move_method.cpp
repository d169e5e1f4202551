// The move method the migrator keeps from its probe's two round trips (tier/migrator.h, probe_choice):
// mbind unless move_pages is clearly faster, since a near tie under TCG once picked move_pages and the
// migrator then trailed a loop of short intervals (docs/tiering.md, "The move method").
#include <atomic>
#include <catch2/catch.hpp>
#include <memory>

#include "tier/migrator.h"
#include "tier/promotion_order.h"

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

// The order of a boundary's promotions, which the migrator follows and the planner's lateness model
// simulates (tier/promotion_order.h): nearest next use first, the interval under way and none last.
TEST_CASE("promotions go nearest next use first, the interval under way last", "[tier]") {
  using sentinel::promotion_rank;
  // 4 intervals, boundary 1: touched in 2 is 1 away, in 3 is 2, in 0 is 3 (cyclically).
  CHECK(promotion_rank(0b0100, 1, 4) == 1);
  CHECK(promotion_rank(0b1000, 1, 4) == 2);
  CHECK(promotion_rank(0b0001, 1, 4) == 3);
  CHECK(promotion_rank(0b1001, 1, 4) == 2);    // its nearest use counts
  CHECK(promotion_rank(0b0010, 1, 4) == 4);    // interval 1 itself: late whatever happens
  CHECK(promotion_rank(0b0110, 1, 4) == 4);    // touched now, whatever comes next
  CHECK(promotion_rank(0, 1, 4) == 4);         // touched nowhere
  CHECK(promotion_rank(0b1'0000, 0, 4) == 4);  // bits past the schedule's intervals are not touches
  CHECK(promotion_rank(uint64_t{1} << 63, 0, 64) == 63);
  CHECK(promotion_rank(1, 63, 64) == 1);
  CHECK(promotion_rank(1, 0, 1) == 1);  // one interval: every use is this one
}
