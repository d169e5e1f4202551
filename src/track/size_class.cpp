#include "track/size_class.h"

namespace sentinel {
// Compile-time checks of the class geometry.
static_assert(class_size(0) == 4096 && class_size(3) == 16384 && class_size(4) == 20480);
static_assert(class_size(7) == 32768 && class_size(kNumClasses - 1) == (size_t{7} << 31));
static_assert(class_of(1) == 0 && class_of(4096) == 0 && class_of(4097) == 1 && class_of(16384) == 3);
static_assert(class_of(16385) == 4 && class_of(32768) == 7 && class_of(32769) == 8);
static_assert(class_of(kLargestClass) == kNumClasses - 1 && class_of(kLargestClass + 1) == -1);
static_assert([] {
  for (unsigned c = 0; c < kNumClasses; ++c) {
    if (class_size(c) % kPageSize) return false;
    if (class_of(class_size(c)) != static_cast<int>(c)) return false;
    if (c && class_of(class_size(c - 1) + 1) != static_cast<int>(c)) return false;
  }
  return true;
}());
}  // namespace sentinel
