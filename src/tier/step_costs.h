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

// What a move costs the training thread (the planner's move cost), from what it costs the migrator and
// the slow cost, both ns per KiB, and the CPUs the process may run on. With one CPU the migrator's copies
// take the training thread's own time: all of it. With a CPU of its own, a move that is on time takes
// from the training thread only the memory traffic they share, one read of the bytes on the slow node
// (the slow cost), at most the migrator's own time; a move that is late is charged by the planner's
// lateness model, as slow accesses, not here. The step-time trial times such a plan before it is kept.
// A slow cost of 0 (a slow node no slower, or unknown) or an unknown CPU count leaves the migrator's time.
uint32_t training_move_ns_per_kib(uint32_t migrator_ns_per_kib, uint32_t slow_ns_per_kib, uint32_t cpus);

}  // namespace sentinel
