#include "base/lineage.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>

#include "base/log.h"

namespace sentinel {

namespace {

struct MapsLine {
  uintptr_t start = 0, end = 0;
  uint64_t major = 0, minor = 0, inode = 0;
};

// Hex or decimal digits at *p, advancing it.
uint64_t number(const char*& p, unsigned base) {
  uint64_t v = 0;
  for (;; ++p) {
    unsigned d;
    if (*p >= '0' && *p <= '9')
      d = static_cast<unsigned>(*p - '0');
    else if (base == 16 && *p >= 'a' && *p <= 'f')
      d = static_cast<unsigned>(*p - 'a' + 10);
    else
      return v;
    v = v * base + d;
  }
}

void skip_field(const char*& p) {
  while (*p && *p != ' ') ++p;
  while (*p == ' ') ++p;
}

// "start-end perms offset major:minor inode path"
MapsLine parse_line(const char* p) {
  MapsLine m;
  m.start = static_cast<uintptr_t>(number(p, 16));
  if (*p == '-') ++p;
  m.end = static_cast<uintptr_t>(number(p, 16));
  while (*p == ' ') ++p;
  skip_field(p);  // perms
  skip_field(p);  // offset
  m.major = number(p, 16);
  if (*p == ':') ++p;
  m.minor = number(p, 16);
  while (*p == ' ') ++p;
  m.inode = number(p, 10);
  return m;
}

// Calls visit(line) for each line of the file until it returns true; true if one did. Lines longer
// than the buffer are cut (the fields read here come first).
template <typename Visit>
bool each_line(const char* path, Visit visit) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[8192];
  size_t have = 0;
  bool found = false;
  for (bool eof = false; !found && !(eof && have == 0);) {
    if (!eof) {
      ssize_t r = read(fd, buf + have, sizeof(buf) - 1 - have);
      if (r <= 0)
        eof = true;
      else
        have += static_cast<size_t>(r);
    }
    size_t start = 0;
    for (size_t i = 0; i < have && !found; ++i) {
      if (buf[i] != '\n') continue;
      buf[i] = '\0';
      found = visit(parse_line(buf + start));
      start = i + 1;
    }
    if (start == 0 && have == sizeof(buf) - 1) {  // one line fills the buffer: take its start, drop the rest
      buf[have] = '\0';
      found = visit(parse_line(buf));
      have = 0;
    } else if (eof && start == 0 && have) {  // a last line without a newline
      buf[have] = '\0';
      found = visit(parse_line(buf));
      have = 0;
    } else {
      for (size_t i = start; i < have; ++i) buf[i - start] = buf[i];
      have -= start;
    }
  }
  close(fd);
  return found;
}

// The start time of process `pid` (field 22 of /proc/PID/stat, in clock ticks since boot); 0 when unknown.
uint64_t start_time_of(uint64_t pid) {
  LineBuf path;
  path.str("/proc/").u64(pid).str("/stat");
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* p = nullptr;
  for (const char* q = buf; *q; ++q)
    if (*q == ')') p = q;  // the command may hold spaces and parentheses: fields follow the last ')'
  if (!p) return 0;
  ++p;
  while (*p == ' ') ++p;
  for (int field = 3; field < 22 && *p; ++field) skip_field(p);
  return number(p, 10);
}

// The mark's path for process `pid`, in the first of /dev/shm and /tmp that is a directory.
bool mark_path(uint64_t pid, LineBuf* out) {
  const uint64_t started = start_time_of(pid);
  if (!started) return false;
  const char* dir = access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
  out->str(dir).str("/sentinel-children-dumped.").u64(pid).chr('.').u64(started);
  return true;
}

}  // namespace

bool mark_dump_for_parent() {
  LineBuf path;
  if (!mark_path(static_cast<uint64_t>(getppid()), &path)) return false;
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return false;
  close(fd);
  return true;
}

bool children_marked_dumps() {
  LineBuf path;
  if (!mark_path(static_cast<uint64_t>(getpid()), &path)) return false;
  return unlink(path.c_str()) == 0;
}

bool parent_maps_object_of(const void* own_address) {
  const auto addr = reinterpret_cast<uintptr_t>(own_address);
  MapsLine own;
  bool have_own = each_line("/proc/self/maps", [&](const MapsLine& m) {
    if (addr < m.start || addr >= m.end) return false;
    own = m;
    return true;
  });
  if (!have_own || own.inode == 0) return false;
  LineBuf path;
  path.str("/proc/").u64(static_cast<uint64_t>(getppid())).str("/maps");
  return each_line(path.c_str(), [&](const MapsLine& m) {
    return m.inode == own.inode && m.major == own.major && m.minor == own.minor;
  });
}

}  // namespace sentinel
