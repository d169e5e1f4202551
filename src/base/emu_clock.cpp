#include "base/emu_clock.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

namespace sentinel {

namespace {

// The plugin's marker with a constant tag: nopw 0x5e1cTTTT(%rax,%rax,1) (docs/guest.md).
#if defined(__x86_64__)
#define SENTINEL_EMU_MARKER(tag)                                                  \
  __asm__ volatile(".byte 0x66, 0x0f, 0x1f, 0x84, 0x00\n\t.long 0x5e1c0000 + %c0" \
                   :                                                              \
                   : "i"(static_cast<int>(tag) & 0xffff)                          \
                   : "memory")
#else
#define SENTINEL_EMU_MARKER(tag) (void)(tag)
#endif

template <uint16_t First, uint16_t... Rest>
void mark_tag(uint16_t tag) {
  if (tag == First) {
    SENTINEL_EMU_MARKER(First);
    return;
  }
  if constexpr (sizeof...(Rest) > 0) mark_tag<Rest...>(tag);
}

constexpr uint16_t kB = EmuClock::kTagBase;

const char* find(const char* s, size_t len, const char* what) {
  const size_t n = strlen(what);
  for (size_t i = 0; i + n <= len; ++i)
    if (memcmp(s + i, what, n) == 0) return s + i + n;
  return nullptr;
}

// Digits at *p (before end): the number, *p past them. False without a digit or on overflow.
bool number(const char** p, const char* end, uint64_t* out) {
  uint64_t v = 0;
  const char* q = *p;
  for (; q < end && *q >= '0' && *q <= '9'; ++q) {
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + static_cast<uint64_t>(*q - '0');
  }
  if (q == *p) return false;
  *p = q;
  *out = v;
  return true;
}

}  // namespace

bool EmuClock::open(const TrialClockText& clock, int pid, const char** why) {
  close();
  int fd = ::open(clock.counts_path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    if (fd >= 0) ::close(fd);
    *why = "cannot open the counts file";
    return false;
  }
  fd_ = fd;
  offset_ = static_cast<uint64_t>(st.st_size);
  tag_ = static_cast<uint16_t>(kTagBase + (static_cast<unsigned>(pid) & 15u));
  memcpy(ps_per_count_, clock.ps_per_count, sizeof(ps_per_count_));
  memset(counts_, 0, sizeof(counts_));
  vcpus_ = 0;
  return true;
}

void EmuClock::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void EmuClock::mark() const {
  mark_tag<kB, kB + 1, kB + 2, kB + 3, kB + 4, kB + 5, kB + 6, kB + 7, kB + 8, kB + 9, kB + 10, kB + 11, kB + 12,
           kB + 13, kB + 14, kB + 15>(tag_);
}

bool EmuClock::lap(uint64_t* ns, const char** why) {
  mark();
  if (!read_to_mark(why)) return false;
  *ns = busiest_ns();
  memset(counts_, 0, sizeof(counts_));
  return true;
}

bool EmuClock::read_to_mark(const char** why) {
  if (fd_ < 0) {
    *why = "the counts file is not open";
    return false;
  }
  // The plugin writes the marker's record before the marking instruction completes; a few retries
  // cover a file system that shows a write a moment late.
  for (int attempt = 0; attempt < 20; ++attempt) {
    for (;;) {
      ssize_t n = pread(fd_, buf_, sizeof(buf_), static_cast<off_t>(offset_));
      if (n < 0) {
        *why = "cannot read the counts file";
        return false;
      }
      size_t used = 0;
      const size_t got = static_cast<size_t>(n);
      bool ours = false;
      while (used < got && !ours) {
        const char* nl = static_cast<const char*>(memchr(buf_ + used, '\n', got - used));
        if (!nl) break;
        const size_t len = static_cast<size_t>(nl - (buf_ + used));
        if (!add_line(buf_ + used, len, &ours, why)) return false;
        used += len + 1;
      }
      offset_ += used;
      if (ours) return true;
      if (used == 0) {
        if (got == sizeof(buf_)) {
          *why = "a line of the counts file is longer than 32 KiB";
          return false;
        }
        break;  // no complete line past offset_ yet
      }
    }
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, nullptr);
  }
  *why = "the marker left no record (is the slow-tier plugin loaded with counts= this file?)";
  return false;
}

bool EmuClock::add_line(const char* line, size_t len, bool* ours, const char** why) {
  if (len == 0 || find(line, len, "\"slow_tier\"")) return true;  // the header
  const char* p = find(line, len, "\"tag\":");
  const char* end = line + len;
  uint64_t tag = 0;
  if (!p || !number(&p, end, &tag)) {
    *why = "a record of the counts file has no tag";
    return false;
  }
  p = find(line, len, "\"vcpus\":[");
  if (!p) {
    *why = "a record of the counts file has no per-vCPU counts";
    return false;
  }
  for (uint32_t v = 0; p < end && *p == '['; ++v) {
    if (v >= kMaxVcpus) {
      *why = "the counts file has more than 64 vCPUs";
      return false;
    }
    ++p;
    for (uint32_t k = 0; k < kCounts; ++k) {
      uint64_t c = 0;
      if (!number(&p, end, &c) || p >= end || *p != (k + 1 < kCounts ? ',' : ']')) {
        *why = "a record's per-vCPU counts are not 8 numbers";
        return false;
      }
      ++p;
      counts_[v][k] += c;
    }
    if (v + 1 > vcpus_) vcpus_ = v + 1;
    if (p < end && *p == ',') ++p;
  }
  *ours = tag == tag_;
  return true;
}

uint64_t EmuClock::busiest_ns() const {
  unsigned __int128 best = 0;
  for (uint32_t v = 0; v < vcpus_; ++v) {
    const uint64_t* c = counts_[v];
    unsigned __int128 ps = (static_cast<unsigned __int128>(c[0]) + c[1]) * ps_per_count_[0];
    for (uint32_t k = 2; k < kCounts; ++k) ps += static_cast<unsigned __int128>(c[k]) * ps_per_count_[k - 1];
    if (ps > best) best = ps;
  }
  best /= 1000;
  return best > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(best);
}

}  // namespace sentinel
