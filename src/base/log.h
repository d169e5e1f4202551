// Async-signal-safe logging: every message is one line on stderr, prefixed "sentinel: ", formatted
// into a stack buffer and written with one write(2). No malloc, no stdio, no locks.
#pragma once
#include <cstddef>
#include <cstdint>

namespace sentinel {

enum class LogLevel : int { error = 0, warn = 1, info = 2, debug = 3 };

// Bounded line builder on the caller's stack. Appends silently truncate.
class LineBuf {
 public:
  LineBuf& str(const char* s);
  LineBuf& str(const char* s, size_t n);
  LineBuf& u64(uint64_t v);
  LineBuf& i64(int64_t v);
  LineBuf& hex(uint64_t v);
  LineBuf& bytes(uint64_t v);  // human size: 1.5 MiB
  LineBuf& chr(char c);
  const char* data() const { return buf_; }
  size_t size() const { return len_; }
  const char* c_str() {
    buf_[len_ < sizeof(buf_) ? len_ : sizeof(buf_) - 1] = '\0';
    return buf_;
  }

 private:
  char buf_[512];
  size_t len_ = 0;
};

void set_log_level(LogLevel level);
LogLevel log_level();
inline bool log_enabled(LogLevel level) {
  return static_cast<int>(level) <= static_cast<int>(log_level());
}

// Writes "sentinel: <line>\n" if level is enabled.
void log_line(LogLevel level, const LineBuf& line);
void log_line(LogLevel level, const char* text);

}  // namespace sentinel
