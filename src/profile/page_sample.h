// Sampled profiling of very large objects (docs/profiling.md, "Sampled objects"). An embedding table read
// through hashed lookups is touched scattered: at one fault per distinct row, a profiled step of a
// recommendation model costs several plain steps. An object of at least `min_bytes` is therefore
// profiled in a sample: each block of `block` bytes of its slot has one window of block / rate bytes
// that loses access at interval starts, the rest stays accessible, and each granule recorded in a
// window stands for `rate` granules. One definition for the profiler (which windows to protect), the
// classification and the placement check (what a recorded granule weighs).
#pragma once
#include <cstdint>

#include "base/hash.h"

namespace sentinel {

struct PageSample {
  uint32_t rate = 1;       // a power of two; 1: every page is profiled
  uint64_t min_bytes = 0;  // objects at least this large are sampled (0: none)
  uint64_t block = 0;      // a power of two, at least rate x the granularity

  bool covers(uint64_t object_bytes) const { return rate > 1 && min_bytes && object_bytes >= min_bytes; }
  // How many granules one recorded granule of such an object stands for.
  uint32_t weight(uint64_t object_bytes) const { return covers(object_bytes) ? rate : 1; }
  uint64_t window() const { return block / rate; }
  // Where block b of slot (cls, index) has its window in sampled step `round`, in bytes from the block's
  // start. The position varies from block to block, so that a stride in the program's accesses cannot
  // line up with it, and from step to step, so that each profiled step draws a sample of its own (the
  // plan averages them) and the placement check measures in windows the plan was not chosen by.
  uint64_t window_offset(unsigned cls, uint32_t index, uint64_t b, uint32_t round) const {
    return (mix64((uint64_t{cls} << 32 | index) ^ (b * 0x9E3779B97F4A7C15ull) ^ (uint64_t{round} << 48)) % rate) *
           window();
  }
};

// The sample of the configuration: blocks of the chunk size (2 MiB without chunks), grown to hold a window
// of at least one granule.
inline PageSample make_page_sample(uint32_t rate, uint64_t min_bytes, uint64_t chunk_bytes, uint32_t granularity) {
  PageSample s;
  if (rate <= 1 || !min_bytes) return s;
  s.rate = rate;
  s.min_bytes = min_bytes;
  s.block = chunk_bytes ? chunk_bytes : uint64_t{2} << 20;
  while (s.block < uint64_t{rate} * granularity) s.block <<= 1;
  return s;
}

// The distinct bytes a recorded granule of an object stands for: the granule clipped to the object,
// times the sample's weight.
inline uint64_t granule_bytes(uint64_t object_bytes, uint32_t granule, uint32_t granularity, const PageSample& sample) {
  uint64_t start = uint64_t{granule} * granularity;
  if (start >= object_bytes) return 0;
  uint64_t bytes = object_bytes - start < granularity ? object_bytes - start : granularity;
  return bytes * sample.weight(object_bytes);
}

}  // namespace sentinel
