// The synthetic "training loop" whose access pattern is known exactly, shared by the program that runs
// it and the checker that compares Sentinel's profile with it.
//
// One step = 16 tracked allocations A0..A15, one per interval (SENTINEL_INTERVALS=16). Eight persistent
// "weights" W0..W7 exist before the loop.
//   forward  interval i (0..7):  allocate A_i, read all of W_i, write all of A_i
//   backward interval i (8..15): allocate A_i, read all of W_{15-i} and A_{15-i}, write all of A_i,
//                                then free A_{15-i}
//   end of step: free A8..A15
// So A_i (i < 8) is born in interval i and dies in interval 15-i (step-scoped), A8..A14 are step-scoped
// (die at the end of the step, interval 15), A15 is short-lived (born and dead in interval 15), the W
// are persistent. Sizes are multiples of 64 KiB and all distinct, so touched bytes are exact at the
// default granularity.
#pragma once
#include <cstddef>

namespace synthetic {
constexpr int kActivations = 16;
constexpr int kWeights = 8;
constexpr int kSteps = 24;
constexpr size_t kUnit = 64 * 1024;
constexpr size_t activation_size(int i) {
  return static_cast<size_t>(i + 1) * kUnit;
}
constexpr size_t weight_size(int j) {
  return static_cast<size_t>(20 + j) * kUnit;
}
// Objects touched in interval i, as (is_weight, index) pairs; returns how many.
inline int touched_in(int i, bool* is_weight, int* index) {
  if (i < 8) {
    is_weight[0] = false, index[0] = i;
    is_weight[1] = true, index[1] = i;
    return 2;
  }
  is_weight[0] = false, index[0] = i;
  is_weight[1] = true, index[1] = 15 - i;
  is_weight[2] = false, index[2] = 15 - i;
  return 3;
}
}  // namespace synthetic
