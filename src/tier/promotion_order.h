// The order in which a boundary's promotions are made: one definition for the migrator that makes them
// (Migrator::run_pass) and the planner's model that predicts what they leave late (plan_lateness.cpp).
#pragma once

#include <cstdint>

namespace sentinel {

// Rank of a promotion at boundary `k` of `n` intervals, for an object touched in the intervals of
// `touch` (bit i: interval i): the intervals from k to its next touch, cyclically, nearest first (1 to
// n - 1), then n for those touched in interval k itself (late whatever happens) or in none. A migrator
// behind its schedule that served interval k's promotions first made every later promotion late too,
// step after step (docs/planner.md).
inline uint32_t promotion_rank(uint64_t touch, uint32_t k, uint32_t n) {
  const uint64_t all = n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  touch &= all;
  const uint64_t ahead = k ? ((touch >> k) | (touch << (n - k))) & all : touch;  // interval k at bit 0
  const uint32_t d = ahead ? static_cast<uint32_t>(__builtin_ctzll(ahead)) : 0;
  return d ? d : n;
}

}  // namespace sentinel
