#include "base/log.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace sentinel {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::warn)};
}

LineBuf& LineBuf::str(const char* s, size_t n) {
  size_t room = sizeof(buf_) - 1 - len_;
  if (n > room) n = room;
  memcpy(buf_ + len_, s, n);
  len_ += n;
  return *this;
}

LineBuf& LineBuf::str(const char* s) {
  return s ? str(s, strlen(s)) : str("(null)", 6);
}

LineBuf& LineBuf::chr(char c) {
  return str(&c, 1);
}

LineBuf& LineBuf::u64(uint64_t v) {
  char tmp[24];
  int i = 0;
  do {
    tmp[i++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v);
  while (i) chr(tmp[--i]);
  return *this;
}

LineBuf& LineBuf::i64(int64_t v) {
  if (v < 0) {
    chr('-');
    return u64(static_cast<uint64_t>(-(v + 1)) + 1);
  }
  return u64(static_cast<uint64_t>(v));
}

LineBuf& LineBuf::hex(uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  char tmp[16];
  int i = 0;
  do {
    tmp[i++] = digits[v & 15];
    v >>= 4;
  } while (v);
  str("0x", 2);
  while (i) chr(tmp[--i]);
  return *this;
}

LineBuf& LineBuf::bytes(uint64_t v) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  uint64_t whole = v, tenth = 0;
  while (whole >= 1024 && u < 4) {
    tenth = (whole % 1024) * 10 / 1024;
    whole /= 1024;
    ++u;
  }
  u64(whole);
  if (u) chr('.').u64(tenth);
  return chr(' ').str(units[u]);
}

void set_log_level(LogLevel level) {
  g_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

LogLevel log_level() {
  return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed));
}

void log_line(LogLevel level, const LineBuf& line) {
  if (!log_enabled(level)) return;
  char out[600];
  static const char prefix[] = "sentinel: ";
  size_t n = sizeof(prefix) - 1;
  memcpy(out, prefix, n);
  size_t m = line.size() < sizeof(out) - n - 1 ? line.size() : sizeof(out) - n - 1;
  memcpy(out + n, line.data(), m);
  n += m;
  out[n++] = '\n';
  int saved = errno;
  const char* p = out;
  while (n) {
    ssize_t w = ::write(STDERR_FILENO, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    p += w;
    n -= static_cast<size_t>(w);
  }
  errno = saved;
}

void log_line(LogLevel level, const char* text) {
  LineBuf b;
  b.str(text);
  log_line(level, b);
}

}  // namespace sentinel
