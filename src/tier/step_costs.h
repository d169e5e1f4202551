// SENTINEL_STEP_COSTS=auto: the step-time model's costs (planner.h's StepCosts) measured at start, on
// the migrator's thread (no allocation: the buffers are Sentinel's own mappings). docs/tiering.md, "Step
// costs", says what the numbers mean and what they leave out.
#pragma once
#include <cstdint>

namespace sentinel {

// The extra ns of reading a KiB on the slow node: a 4 MiB buffer bound to each node, written once,
// then read whole (a sum of 64-bit words, after evicting it from the caches on x86) three times; the
// best pass of each, the difference (at least
// 0) divided by 4096 KiB. False with *why (a static phrase) when a buffer cannot be mapped or its pages
// did not land on the node asked for.
bool measure_slow_ns_per_kib(int fast_node, int slow_node, uint32_t* ns_per_kib, const char** why);

// What moving a KiB costs, from the migrator probe's bandwidth (bytes/s): ns per KiB, rounded, at most
// kMaxStepCostNsPerKib; 0 when the bandwidth is unknown.
uint32_t move_ns_per_kib_of(uint64_t bytes_per_s);

}  // namespace sentinel
