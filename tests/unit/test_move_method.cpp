// The move method the migrator keeps from its probe's two round trips (tier/migrator.h, probe_choice):
// mbind unless move_pages is clearly faster, since a near tie under TCG once picked move_pages and the
// migrator then trailed a loop of short intervals (docs/tiering.md, "The move method").
#include <catch2/catch.hpp>

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
