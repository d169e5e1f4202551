// The one 64-bit hash finalizer (splitmix64's; Stafford's variant 13): every hash table and token of
// the core mixes its keys with it. It is a bijection (xorshifts and odd multipliers), so a mixed key
// can be given back: unmix64 is its inverse (the step detector's tokens give back (site, size)).
#pragma once
#include <cstdint>

namespace sentinel {

inline constexpr uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

inline constexpr uint64_t unmix64(uint64_t x) {
  x ^= x >> 31 ^ x >> 62;
  x *= 0x319642B2D24D8EC3ull;  // inverse of 0x94D049BB133111EB mod 2^64
  x ^= x >> 27 ^ x >> 54;
  x *= 0x96DE1B173F119089ull;  // inverse of 0xBF58476D1CE4E5B9
  x ^= x >> 30 ^ x >> 60;
  return x;
}

static_assert(unmix64(mix64(0x123456789ABCDEF0ull)) == 0x123456789ABCDEF0ull);

}  // namespace sentinel
