// CRC-32C (Castagnoli), table driven. Header-only so that the runtime's dump writer and the
// reader library share one definition without sharing an object file. Async-signal-safe.
#pragma once
#include <array>
#include <atomic>
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

inline uint32_t crc32c_bytes(uint32_t crc, const unsigned char* p, size_t len) {
  for (size_t i = 0; i < len; ++i) crc = detail::kCrc32cTable[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
// SSE4.2's crc32 instruction computes CRC-32C 8 bytes at a time: a dump of millions of objects is
// written in a fraction of the time the table takes (it checksums every byte it writes).
__attribute__((target("sse4.2"))) inline uint32_t crc32c_sse42(uint32_t crc, const unsigned char* p, size_t len) {
  uint64_t c = crc;
  while (len && (reinterpret_cast<uintptr_t>(p) & 7)) c = __builtin_ia32_crc32qi(static_cast<uint32_t>(c), *p++), --len;
  for (; len >= 8; p += 8, len -= 8) {
    uint64_t v;
    __builtin_memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
  }
  return crc32c_bytes(static_cast<uint32_t>(c), p, len);
}

inline bool have_sse42() {
  // cpuid leaf 1, ecx bit 20; no libgcc cpu-model state needed (safe before constructors have run).
  unsigned a = 1, b, c = 0, d;
  __asm__("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
  return (c >> 20) & 1;
}
#endif

// Continues a CRC: pass 0 to start. crc32c(0, "123456789", 9) == 0xE3069283.
inline uint32_t crc32c(uint32_t crc, const void* data, size_t len) {
  const auto* p = static_cast<const unsigned char*>(data);
#if defined(__x86_64__)
  // No function-local static (its guard is not async-signal-safe): a relaxed cache, 1 yes, 2 no.
  static std::atomic<int> hw{0};
  int h = hw.load(std::memory_order_relaxed);
  if (!h) hw.store(h = have_sse42() ? 1 : 2, std::memory_order_relaxed);
  if (h == 1) return ~crc32c_sse42(~crc, p, len);
#endif
  return ~crc32c_bytes(~crc, p, len);
}

}  // namespace sentinel
