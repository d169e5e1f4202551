// Size classes of the arena: 4, 8, 12, 16 KiB, then four classes per doubling (2^k x 1, 1.25, 1.5,
// 1.75), all page multiples, up to 14 GiB. Waste is at most 25% of virtual space and none of it is
// touched unless the program touches it.
#pragma once
#include <cstddef>
#include <cstdint>

namespace sentinel {

inline constexpr size_t kPageSize = 4096;
inline constexpr unsigned kNumClasses = 83;

constexpr size_t class_size(unsigned c) {
  if (c < 4) return (c + 1) * kPageSize;
  unsigned k = 14 + (c - 3) / 4;  // c == 3 is 2^14
  unsigned q = (c - 3) % 4;
  return (size_t{1} << k) + q * (size_t{1} << (k - 2));
}

// Smallest class that holds n bytes (n >= 1), or -1 when n is larger than the largest class.
constexpr int class_of(size_t n) {
  if (n <= 4 * kPageSize) return static_cast<int>((n + kPageSize - 1) / kPageSize) - 1 + (n == 0);
  unsigned k = 63u - static_cast<unsigned>(__builtin_clzll(n - 1));  // 2^k < n <= 2^(k+1)
  size_t step = size_t{1} << (k - 2);
  size_t q = (n - (size_t{1} << k) + step - 1) / step;  // 1..4
  size_t c = 3 + (k - 14) * 4 + q;
  return c < kNumClasses ? static_cast<int>(c) : -1;
}

inline constexpr size_t kLargestClass = class_size(kNumClasses - 1);

}  // namespace sentinel
