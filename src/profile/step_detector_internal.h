// Shared by the step detector's source files only: tokens, the memory layout of the one mapping.
#pragma once
#include <cstddef>
#include <cstdint>

#include "profile/step_detector.h"

namespace sentinel::step_internal {

inline constexpr uint64_t kRing = uint64_t{1} << StepDetector::kRingBits;
inline constexpr uint64_t kRingMask = kRing - 1;
inline constexpr uint64_t kTable = uint64_t{1} << StepDetector::kTableBits;
inline constexpr uint64_t kAnchors = uint64_t{1} << StepDetector::kAnchorBits;
inline constexpr uint32_t kSlots = 1u << StepDetector::kSlotBits;
inline constexpr uint32_t kSlotMask = kSlots - 1;
inline constexpr uint32_t kMaxInferredEvents = 256;  // inferred step events emitted per lock (the latest ones)

// Table entries (window and anchor tables): 40 bits of position + 1, 24 bits of hash as a tag, so that a
// slot taken by another key is recognised without reading the (cold) history ring.
inline constexpr uint64_t kPosBits = 40;
inline constexpr uint64_t kPosMask = (uint64_t{1} << kPosBits) - 1;

inline uint64_t mix64(uint64_t x) {  // splitmix64 finalizer
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

// The inverse of mix64 (each step is a bijection: xorshifts and odd multipliers).
inline uint64_t unmix64(uint64_t x) {
  x ^= x >> 31 ^ x >> 62;
  x *= 0x319642B2D24D8EC3ull;  // inverse of 0x94D049BB133111EB mod 2^64
  x ^= x >> 27 ^ x >> 54;
  x *= 0x96DE1B173F119089ull;  // inverse of 0xBF58476D1CE4E5B9
  x ^= x >> 30 ^ x >> 60;
  return x;
}

// A bijection of (site, size) for sizes below 2^44 and sites below 2^20 (so the template can give the
// pair back from the token alone); beyond, distinct pairs collide only by chance.
inline constexpr uint64_t kSizeBits = 44;
inline uint64_t make_token(uint32_t site, uint64_t size) {
  return mix64(size ^ (uint64_t{site} << kSizeBits) ^ (uint64_t{site} >> 20));
}
inline void split_token(uint64_t token, uint32_t* site, uint64_t* size) {
  uint64_t x = unmix64(token);
  *site = static_cast<uint32_t>(x >> kSizeBits);
  *size = x & ((uint64_t{1} << kSizeBits) - 1);
}

inline uint64_t max_u64(uint64_t a, uint64_t b) {
  return a > b ? a : b;
}
inline uint64_t min_u64(uint64_t a, uint64_t b) {
  return a < b ? a : b;
}

// The noise a step may collect (foreign allocations plus identities that never came) before the lock is
// lost, and how many identities a step may still miss when the next one begins.
inline uint32_t step_budget(uint32_t period, bool tentative) {
  if (tentative) return StepDetector::kTentativeBudget;
  return period / 8 > 2 ? period / 8 : 2;
}

}  // namespace sentinel::step_internal
