// Step detection, what making a lock works with, shared by step_lock.cpp, step_walk.cpp and
// step_first.cpp: the alignment of a candidate period, the cycle's rotation and the steps found before
// the lock.
#pragma once
#include "profile/step_lock.h"

namespace sentinel::step_internal {

// What a lock is made from: a candidate period P verified up to pos, and how far back the walks may go.
struct StepLock::Alignment {
  const StepHistory* h;
  uint64_t pos;
  uint32_t P;
  bool exact;
  uint64_t base;   // cycle index 0: the window W = [base, pos]
  uint64_t s0;     // first position of the verified region; s0 == base (mod P)
  uint64_t floor;  // the walks never go below it (see walk_floor)
  uint32_t smax;   // foreign allocations a walk skips in a row, at most
  uint64_t cap;    // allocations a walk reads, at most
  bool known;      // the pattern is a known phase's (its walk by bags stops at a run of foreign allocations)

  uint64_t C(uint64_t k) const { return h->tok(base + k); }  // the pattern's token at cycle index k
  uint32_t ci(uint64_t x) const {                            // cycle index of position x
    return x >= base ? static_cast<uint32_t>((x - base) % P) : static_cast<uint32_t>((P - (base - x) % P) % P);
  }
};

// Exact locks: the cycle's rotation-invariant signature and its least rotation (0 for bag locks).
struct StepLock::Rotation {
  uint64_t sig = 0;
  uint32_t least = 0;
};

// The steps before the lock, as positions: the latest kMaxInferredEvents of them get events, all are
// counted.
struct StepLock::Starts {
  uint64_t ring[kMaxInferredEvents];
  uint64_t total = 0, first = 0;
  void add(uint64_t p) {
    if (total == 0) first = p;
    ring[total++ % kMaxInferredEvents] = p;
  }
  // The ring holds the starts k in [oldest_held(), total), at(k); the older ones are only counted.
  uint64_t oldest_held() const { return total > kMaxInferredEvents ? total - kMaxInferredEvents : 0; }
  uint64_t at(uint64_t k) const { return ring[k % kMaxInferredEvents]; }
  // Adds the starts of `later` (all after these), counting those its ring no longer holds.
  void append(const Starts& later) {
    for (uint64_t k = later.oldest_held(); k < later.total; k++) add(later.at(k));
    total += later.oldest_held();
  }
};

}  // namespace sentinel::step_internal
