// The table of fixed-size entries (src/format/dump_layout.h) and its codec (entry_codec.h): every field
// lands little endian at its table offset and nowhere else, decodes back, and older or newer entry sizes
// read as docs/format.md says.
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "format/entry_codec.h"

using sentinel::fmt::decode_entry;
using sentinel::fmt::encode_entry;
using sentinel::fmt::Field;
using sentinel::fmt::Layout;
using sentinel::fmt::min_size;

namespace {

// A value of the field's width whose every byte differs: its LE bytes are 0x11, 0x12, ...
uint64_t pattern(const Field& f) {
  uint64_t v = 0;
  for (uint32_t i = f.width(); i-- > 0;) v = (v << 8) | (0x11 + i);
  return v;
}

}  // namespace

TEMPLATE_TEST_CASE("entry codec: each field is little endian at its table offset, and only there", "[format]",
                   sentinel_file_header, sentinel_record_header, sentinel_object, sentinel_step_entry,
                   sentinel_identity, sentinel_touch, sentinel_group, sentinel_tiering, sentinel_plan_header,
                   sentinel_plan_trial, sentinel_plan_entry, sentinel_migration_entry, sentinel_migration_batch,
                   sentinel_placement_entry, sentinel_detection) {
  for (const Field& f : Layout<TestType>::fields) {
    CAPTURE(Layout<TestType>::name, f.name);
    TestType entry{};
    auto* raw = reinterpret_cast<uint8_t*>(&entry);
    for (uint32_t i = 0; i < f.width(); ++i) raw[f.offset + i] = static_cast<uint8_t>(0x11 + i);
    uint8_t out[sizeof(TestType)];
    std::memset(out, 0xAA, sizeof out);
    encode_entry(entry, out);
    for (uint32_t i = 0; i < sizeof(TestType); ++i) {
      const bool inside = i >= f.offset && i < f.end();
      CHECK(out[i] == (inside && !f.reserved ? 0x11 + (i - f.offset) : 0));
    }
    TestType back = decode_entry<TestType>(out, sizeof out);
    if (!f.reserved && f.count == 1) CHECK(sentinel::fmt::member_value(&back, f) == pattern(f));
    if (f.count != 1 && !f.reserved) CHECK(std::memcmp(&back, &entry, sizeof entry) == 0);
  }
}

TEST_CASE("entry codec: reserved fields are written as 0 and read as 0", "[format]") {
  sentinel_step_entry s{};
  s.reserved = 0xDEADBEEF;
  s.allocations = 7;
  uint8_t out[32];
  encode_entry(s, out);
  CHECK(out[28] == 0);
  CHECK(out[31] == 0);
  out[28] = 9;
  sentinel_step_entry back = decode_entry<sentinel_step_entry>(out, 32);
  CHECK(back.reserved == 0);
  CHECK(back.allocations == 7);
}

TEST_CASE("entry codec: older entries read with the table's defaults, newer ones from their prefix", "[format]") {
  STATIC_REQUIRE(min_size<sentinel_identity>() == 56);
  STATIC_REQUIRE(min_size<sentinel_group>() == 32);
  STATIC_REQUIRE(min_size<sentinel_placement_entry>() == 32);
  STATIC_REQUIRE(min_size<sentinel_object>() == sizeof(sentinel_object));

  sentinel_identity id{};
  id.id = 3;
  id.occurrence = 5;
  id.flags = SENTINEL_IDENTITY_PINNED;
  std::vector<uint8_t> bytes(72, 0xEE);  // a newer minor's 72-byte entry
  encode_entry(id, bytes.data());
  for (uint32_t stored : {56u, 60u, 63u}) {  // 1.1, or part of 1.2's appended pair: not taken
    CAPTURE(stored);
    sentinel_identity old = decode_entry<sentinel_identity>(bytes.data(), stored);
    CHECK(old.id == 3);
    CHECK(old.occurrence == SENTINEL_NO_ORDINAL);
    CHECK(old.flags == 0);  // derived by the reader, not the codec
  }
  for (uint32_t stored : {64u, 72u}) {
    sentinel_identity now = decode_entry<sentinel_identity>(bytes.data(), stored);
    CHECK(now.occurrence == 5);
    CHECK(now.flags == SENTINEL_IDENTITY_PINNED);
  }

  sentinel_placement_entry p{};
  p.misplaced = 2;
  p.verified = 4;
  uint8_t pb[40];
  encode_entry(p, pb);
  CHECK(decode_entry<sentinel_placement_entry>(pb, 32).verified == 0);
  CHECK(decode_entry<sentinel_placement_entry>(pb, 32).misplaced == 2);
  CHECK(decode_entry<sentinel_placement_entry>(pb, 40).verified == 4);
}

TEST_CASE("entry codec: an older size writes only that prefix", "[format]") {
  sentinel_group g{};
  g.id = 1;
  g.phase = 9;
  std::vector<uint8_t> out(40, 0xAA);
  encode_entry(g, out.data(), 32);
  CHECK(out[0] == 1);
  for (size_t i = 32; i < 40; ++i) CHECK(out[i] == 0xAA);
}
