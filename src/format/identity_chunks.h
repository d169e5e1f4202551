// The chunks of an identity profiled and planned in chunks (sentinel_identity::chunk_bytes): how many, and
// how many bytes each holds. One definition for the classification that counts touches per chunk and the
// planner and migrator that place chunks.
#pragma once
#include <cstdint>

#include "sentinel/format.h"

namespace sentinel {

// Plan entries of one identity: 1, or the chunks of one planned in chunks (the last chunk is shorter). 0 when
// an identity would have more than kMaxChunks. An input whose identities have more than kMaxChunks chunks in
// all is refused (2 TiB in 2 MiB chunks).
inline constexpr uint64_t kMaxChunks = uint64_t{1} << 20;
inline uint32_t identity_chunks(const sentinel_identity& d) {
  if (!d.chunk_bytes) return 1;
  const uint64_t n = d.size / d.chunk_bytes + (d.size % d.chunk_bytes ? 1 : 0);
  return n == 0 ? 1 : n > kMaxChunks ? 0 : static_cast<uint32_t>(n);
}
// Bytes of chunk `chunk` of identity d (its size when it is planned whole).
inline uint64_t chunk_size(const sentinel_identity& d, uint32_t chunk) {
  if (!d.chunk_bytes) return d.size;
  const uint64_t at = uint64_t{chunk} * d.chunk_bytes;
  return at >= d.size ? 0 : d.size - at < d.chunk_bytes ? d.size - at : d.chunk_bytes;
}

}  // namespace sentinel
