// What sentinel-view computes from a decoded profile. Shared by the subcommands.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "format/format_reader.h"

namespace sentinel::view {

struct Bucket {
  uint64_t objects = 0;
  uint64_t bytes = 0;
};

struct SizeClass {
  uint64_t min = 0;  // inclusive
  uint64_t max = 0;  // exclusive (0: unbounded)
  Bucket b;
};

struct SiteUsage {
  uint32_t id = 0;  // UINT32_MAX: unknown site
  uint64_t objects = 0;
  uint64_t bytes = 0;
};

// Lifetime buckets: < 1 ms, < 10 ms, < 100 ms, < 1 s, longer, still alive.
inline constexpr size_t kLifetimeBuckets = 6;
extern const std::array<const char*, kLifetimeBuckets> kLifetimeLabels;

struct Analysis {
  uint64_t objects = 0;
  uint64_t tracked_bytes = 0;    // sum of sizes of all objects
  uint64_t peak_live_bytes = 0;  // high-water mark of live bytes, replayed in allocation order
  uint64_t alive_objects = 0;    // never freed before the dump
  uint64_t alive_bytes = 0;
  std::array<Bucket, kLifetimeBuckets> lifetimes{};
  std::vector<SizeClass> size_classes;                // power-of-two classes, only non-empty ones, ascending
  std::vector<SiteUsage> sites;                       // every site with objects, by bytes descending (ties: id)
  std::vector<uint64_t> allocations_per_marked_step;  // one per mark (marks sorted by seq)
};

Analysis analyze(const fmt::Profile& p);

// "1.5 MiB", "512 B".
std::string human_bytes(uint64_t n);
// "2.500 s", "12.3 ms", "830 us".
std::string human_duration(uint64_t ns);

}  // namespace sentinel::view
