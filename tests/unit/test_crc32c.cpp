// CRC-32C: the SSE4.2 path (when the CPU has it) and the table agree on every length and alignment.
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <vector>

#include "base/crc32c.h"

TEST_CASE("crc32c: the check value of the Castagnoli polynomial") {
  REQUIRE(sentinel::crc32c(0, "123456789", 9) == 0xE3069283u);
  REQUIRE(sentinel::crc32c(0, "", 0) == 0u);
}

TEST_CASE("crc32c: every path equals the byte table, whatever the length, alignment and split") {
  std::mt19937 rng(7);
  std::vector<unsigned char> buf(4096 + 16);
  for (auto& b : buf) b = static_cast<unsigned char>(rng());
  for (size_t off = 0; off < 9; ++off) {
    for (size_t len : {0u, 1u, 7u, 8u, 9u, 15u, 64u, 100u, 1023u, 4096u}) {
      const unsigned char* p = buf.data() + off;
      uint32_t want = ~sentinel::crc32c_bytes(~0u, p, len);
      REQUIRE(sentinel::crc32c(0, p, len) == want);
      size_t cut = len / 3;  // a CRC continued over two pieces equals the CRC of the whole
      REQUIRE(sentinel::crc32c(sentinel::crc32c(0, p, cut), p + cut, len - cut) == want);
#if defined(__x86_64__)
      if (sentinel::have_sse42()) REQUIRE(~sentinel::crc32c_sse42(~0u, p, len) == want);
#endif
    }
  }
}
