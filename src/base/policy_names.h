// The names of enum sentinel_policy (include/sentinel/format.h), in its order: one table for
// SENTINEL_POLICY, sentinel-view's --policy and every report.
#pragma once
#include <cstdint>

namespace sentinel {

inline constexpr const char* kPolicyNames[] = {"sentinel", "first-touch", "all-slow", "all-fast", "hot", "interleave"};
inline constexpr uint32_t kPolicyCount = sizeof(kPolicyNames) / sizeof(kPolicyNames[0]);

// "unknown" for a value past the table (a newer writer's).
inline const char* policy_name(uint32_t policy) {
  return policy < kPolicyCount ? kPolicyNames[policy] : "unknown";
}

}  // namespace sentinel
