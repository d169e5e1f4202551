// CRC-32C (Castagnoli), table driven. Header-only so that the runtime's dump writer and the
// reader library share one definition without sharing an object file. Async-signal-safe.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

namespace sentinel {

namespace detail {
constexpr std::array<uint32_t, 256> make_crc32c_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
inline constexpr std::array<uint32_t, 256> kCrc32cTable = make_crc32c_table();
}  // namespace detail

// Continues a CRC: pass 0 to start. crc32c(0, "123456789", 9) == 0xE3069283.
inline uint32_t crc32c(uint32_t crc, const void* data, size_t len) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < len; ++i) crc = detail::kCrc32cTable[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

}  // namespace sentinel
