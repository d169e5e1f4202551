// One encoder and one decoder for the fixed-size entries of a dump, driven by their table
// (format/dump_layout.h). Used by the runtime's dump writer (at exit and on fatal paths: no
// allocation, no exception, no stdio here), the reader and the tests' dump builder.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "format/dump_layout.h"

namespace sentinel::fmt {

inline uint64_t load_le(const uint8_t* p, uint32_t width) {
  uint64_t v = 0;
  for (uint32_t i = width; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

inline void store_le(uint8_t* p, uint64_t v, uint32_t width) {
  for (uint32_t i = 0; i < width; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// The value of field `f` of an entry in memory, zero-extended (an i32 keeps its bits).
inline uint64_t member_value(const void* entry, const Field& f) {
  const auto* p = static_cast<const uint8_t*>(entry) + f.offset;
  switch (type_width(f.type)) {
    case 1:
      return p[0];
    case 2: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}

inline void set_member(void* entry, const Field& f, uint64_t value) {
  auto* p = static_cast<uint8_t*>(entry) + f.offset;
  switch (type_width(f.type)) {
    case 1:
      p[0] = static_cast<uint8_t>(value);
      break;
    case 2: {
      auto v = static_cast<uint16_t>(value);
      std::memcpy(p, &v, 2);
      break;
    }
    case 4: {
      auto v = static_cast<uint32_t>(value);
      std::memcpy(p, &v, 4);
      break;
    }
    default:
      std::memcpy(p, &value, 8);
      break;
  }
}

// Writes the fields of `entry` that end within `written` bytes (sizeof(T): the whole entry; an older
// entry's size: its prefix) to `out`, little endian at their table offsets; reserved fields as 0.
template <typename T>
void encode_entry(const T& entry, uint8_t* out, uint32_t written = sizeof(T)) {
  static_assert(std::is_trivially_copyable_v<T>);
  for (const Field& f : Layout<T>::fields) {
    if (f.end() > written) break;  // fields are in offset order
    if (f.reserved)
      std::memset(out + f.offset, 0, f.width());
    else if (f.count != 1)
      std::memcpy(out + f.offset, reinterpret_cast<const uint8_t*>(&entry) + f.offset, f.count);
    else
      store_le(out + f.offset, member_value(&entry, f), f.width());
  }
}

// Reads a stored entry of `stored` bytes: the fields it holds from `in`, the others as the table says
// (Absent::zero and ::derived stay 0 here; the reader derives the derived ones). Reserved fields read
// as 0, and bytes past the last field this table knows (a newer minor's) are ignored.
template <typename T>
T decode_entry(const uint8_t* in, uint32_t stored) {
  T entry{};
  for (const Field& f : Layout<T>::fields) {
    if (f.reserved) continue;
    if (!holds<T>(stored, f)) {
      if (f.absent == Absent::no_ordinal) set_member(&entry, f, SENTINEL_NO_ORDINAL);
    } else if (f.count != 1) {
      std::memcpy(reinterpret_cast<uint8_t*>(&entry) + f.offset, in + f.offset, f.count);
    } else {
      set_member(&entry, f, load_le(in + f.offset, f.width()));
    }
  }
  return entry;
}

}  // namespace sentinel::fmt
