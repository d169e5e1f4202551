// How the profiling test programs read an object: one byte in every 512, so that every page (and every
// granule) of it is touched, summed so that the reads are not optimized out.
#pragma once
#include <cstddef>
#include <cstdint>

inline uint64_t read_all(const unsigned char* p, size_t n) {
  uint64_t s = 0;
  for (size_t k = 0; k < n; k += 512) s += p[k];
  return s;
}
