#include "json.h"

#include <cstdio>
#include <sstream>

namespace sentinel::view {

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is not valid (overlong forms,
// surrogates and code points above U+10FFFF are invalid).
size_t utf8_length(std::string_view s, size_t i) {
  auto u = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = u(i);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (s.size() - i < n) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((u(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (u(i + k) & 0x3F);
  }
  if (n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
  if (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return n;
}

}  // namespace

void json_string(std::ostream& os, std::string_view s) {
  os << '"';
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        os << "\\\"";
        ++i;
        continue;
      case '\\':
        os << "\\\\";
        ++i;
        continue;
      case '\b':
        os << "\\b";
        ++i;
        continue;
      case '\f':
        os << "\\f";
        ++i;
        continue;
      case '\n':
        os << "\\n";
        ++i;
        continue;
      case '\r':
        os << "\\r";
        ++i;
        continue;
      case '\t':
        os << "\\t";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      os << buf;
      ++i;
      continue;
    }
    size_t n = utf8_length(s, i);
    if (n == 0) {
      os << "\\ufffd";
      ++i;
    } else {
      os.write(s.data() + i, static_cast<std::streamsize>(n));
      i += n;
    }
  }
  os << '"';
}

std::string json_quote(std::string_view s) {
  std::ostringstream os;
  json_string(os, s);
  return os.str();
}

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = (c < 0x20 || c == 0x7F) ? 0 : utf8_length(s, i);
    if (n == 0) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

void json_optional(std::ostream& os, std::optional<double> v) {
  if (v)
    os << *v;
  else
    os << "null";
}

}  // namespace sentinel::view
