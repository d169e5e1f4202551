// I/O calls that take user buffers. While the profiler has pages protected, a system call touching one
// would fail with EFAULT instead of faulting (docs/design.md §4.2), so each call first pins the tracked objects
// its buffers overlap: pinning unprotects them and keeps them unprotected until the call returns.
// When nothing is protected (always, outside profiling) a hook costs one load and a jump.
// pread and pread64 (pwrite, pwrite64) are distinct glibc symbols and both are interposed: without
// _FILE_OFFSET_BITS=64 the headers do not alias one to the other (off_t is 64-bit on LP64 anyway).
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>

#include "next_symbol.h"
#include "runtime/runtime.h"

namespace rt = sentinel::rt;

#define SENTINEL_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using sentinel::preload::next_symbol;

// Pins the buffers for the lifetime of the object.
class PinScope {
 public:
  PinScope() = default;
  void add(const void* p, size_t n) {
    if (n && count_ < kCap) count_ += rt::io_pin(p, n, pins_ + count_, kCap - count_);
  }
  void add(const struct iovec* iov, int n) {
    for (int i = 0; iov && i < n; ++i) add(iov[i].iov_base, iov[i].iov_len);
  }
  ~PinScope() { rt::io_unpin(pins_, count_); }

 private:
  static constexpr uint32_t kCap = 16;
  rt::IoPin pins_[kCap];
  uint32_t count_ = 0;
};

}  // namespace

#define SENTINEL_NEXT(name) next_symbol(name##_next, #name)

#define SENTINEL_IO_HOOK(ret, name, params, args, pin)                     \
  namespace {                                                              \
  std::atomic<ret(*) params> name##_next{nullptr};                         \
  }                                                                        \
  SENTINEL_EXPORT ret name params {                                        \
    auto next = SENTINEL_NEXT(name);                                       \
    if (__builtin_expect(!rt::io_protection_armed(), 1)) return next args; \
    PinScope scope;                                                        \
    pin;                                                                   \
    return next args;                                                      \
  }

SENTINEL_IO_HOOK(ssize_t, read, (int fd, void* buf, size_t n), (fd, buf, n), scope.add(buf, n))
SENTINEL_IO_HOOK(ssize_t, write, (int fd, const void* buf, size_t n), (fd, buf, n), scope.add(buf, n))
SENTINEL_IO_HOOK(ssize_t, pread, (int fd, void* buf, size_t n, off_t off), (fd, buf, n, off), scope.add(buf, n))
SENTINEL_IO_HOOK(ssize_t, pwrite, (int fd, const void* buf, size_t n, off_t off), (fd, buf, n, off), scope.add(buf, n))
SENTINEL_IO_HOOK(ssize_t, pread64, (int fd, void* buf, size_t n, off_t off), (fd, buf, n, off), scope.add(buf, n))
SENTINEL_IO_HOOK(ssize_t, pwrite64, (int fd, const void* buf, size_t n, off_t off), (fd, buf, n, off),
                 scope.add(buf, n))
SENTINEL_IO_HOOK(ssize_t, readv, (int fd, const struct iovec* iov, int n), (fd, iov, n), scope.add(iov, n))
SENTINEL_IO_HOOK(ssize_t, writev, (int fd, const struct iovec* iov, int n), (fd, iov, n), scope.add(iov, n))
SENTINEL_IO_HOOK(ssize_t, preadv, (int fd, const struct iovec* iov, int n, off_t off), (fd, iov, n, off),
                 scope.add(iov, n))
SENTINEL_IO_HOOK(ssize_t, pwritev, (int fd, const struct iovec* iov, int n, off_t off), (fd, iov, n, off),
                 scope.add(iov, n))
SENTINEL_IO_HOOK(ssize_t, preadv2, (int fd, const struct iovec* iov, int n, off_t off, int flags),
                 (fd, iov, n, off, flags), scope.add(iov, n))
SENTINEL_IO_HOOK(ssize_t, pwritev2, (int fd, const struct iovec* iov, int n, off_t off, int flags),
                 (fd, iov, n, off, flags), scope.add(iov, n))
SENTINEL_IO_HOOK(ssize_t, recv, (int fd, void* buf, size_t n, int flags), (fd, buf, n, flags), scope.add(buf, n))
SENTINEL_IO_HOOK(ssize_t, send, (int fd, const void* buf, size_t n, int flags), (fd, buf, n, flags), scope.add(buf, n))
SENTINEL_IO_HOOK(ssize_t, recvfrom, (int fd, void* buf, size_t n, int flags, struct sockaddr* addr, socklen_t* len),
                 (fd, buf, n, flags, addr, len), scope.add(buf, n))
SENTINEL_IO_HOOK(ssize_t, sendto,
                 (int fd, const void* buf, size_t n, int flags, const struct sockaddr* addr, socklen_t len),
                 (fd, buf, n, flags, addr, len), scope.add(buf, n))
SENTINEL_IO_HOOK(ssize_t, recvmsg, (int fd, struct msghdr* msg, int flags), (fd, msg, flags),
                 if (msg) scope.add(msg->msg_iov, static_cast<int>(msg->msg_iovlen)))
SENTINEL_IO_HOOK(ssize_t, sendmsg, (int fd, const struct msghdr* msg, int flags), (fd, msg, flags),
                 if (msg) scope.add(msg->msg_iov, static_cast<int>(msg->msg_iovlen)))
// stdio: glibc's large fread/fwrite go to the kernel with the caller's buffer through internal calls
// that no interposer sees.
SENTINEL_IO_HOOK(size_t, fread, (void* buf, size_t size, size_t n, FILE* f), (buf, size, n, f), scope.add(buf, size* n))
SENTINEL_IO_HOOK(size_t, fwrite, (const void* buf, size_t size, size_t n, FILE* f), (buf, size, n, f),
                 scope.add(buf, size* n))
SENTINEL_IO_HOOK(size_t, fread_unlocked, (void* buf, size_t size, size_t n, FILE* f), (buf, size, n, f),
                 scope.add(buf, size* n))
SENTINEL_IO_HOOK(size_t, fwrite_unlocked, (const void* buf, size_t size, size_t n, FILE* f), (buf, size, n, f),
                 scope.add(buf, size* n))
