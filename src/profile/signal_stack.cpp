#include "profile/signal_stack.h"

#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include <atomic>
#include <cerrno>

namespace sentinel::sig {

namespace {

#ifndef AT_MINSIGSTKSZ
#define AT_MINSIGSTKSZ 51
#endif

constexpr size_t kPage = 4096;
// The handler itself needs little (mprotect, a move_pages query); a program handler it forwards to
// (Python's faulthandler, abseil's symbolizer) may need tens of KiB. Mapped lazily: only the pages
// the frames touch are ever backed.
constexpr size_t kMinStack = 256 * 1024;

// Where this thread's stack is (0: none of Sentinel's); `released`: the thread is ending, never give
// it another one.
constinit thread_local uintptr_t t_stack __attribute__((tls_model("initial-exec"))) = 0;
constinit thread_local bool t_released __attribute__((tls_model("initial-exec"))) = false;

std::atomic<uint64_t> g_given{0}, g_kept{0}, g_failures{0};
std::atomic<size_t> g_bytes{0};

}  // namespace

size_t stack_bytes() {
  size_t b = g_bytes.load(std::memory_order_relaxed);
  if (b) return b;
  // The kernel's own figure for the frame with every state component the CPU has (AMX's is 8 KiB).
  size_t frame = static_cast<size_t>(getauxval(AT_MINSIGSTKSZ));
  b = kMinStack;
  if (4 * frame > b) b = (4 * frame + kPage - 1) & ~(kPage - 1);
  g_bytes.store(b, std::memory_order_relaxed);
  return b;
}

void give_thread_stack() {
  if (t_stack || t_released) return;
  int saved = errno;
  stack_t cur;
  if (sigaltstack(nullptr, &cur) == 0 && !(cur.ss_flags & SS_DISABLE)) {
    // The program's (or one inherited over fork): the kernel switches to it for our handler too.
    g_kept.fetch_add(1, std::memory_order_relaxed);
    t_released = true;  // not ours to replace later either
    errno = saved;
    return;
  }
  size_t bytes = stack_bytes();
  // One guard page below: a handler that overflows dies by SIGSEGV instead of writing past the stack.
  void* p = mmap(nullptr, bytes + kPage, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (p == MAP_FAILED) {
    g_failures.fetch_add(1, std::memory_order_relaxed);
    errno = saved;
    return;
  }
  mprotect(p, kPage, PROT_NONE);
  stack_t ss{};
  ss.ss_sp = static_cast<char*>(p) + kPage;
  ss.ss_size = bytes;
  ss.ss_flags = 0;
  if (sigaltstack(&ss, nullptr) != 0) {
    munmap(p, bytes + kPage);
    g_failures.fetch_add(1, std::memory_order_relaxed);
    errno = saved;
    return;
  }
  t_stack = reinterpret_cast<uintptr_t>(p);
  g_given.fetch_add(1, std::memory_order_relaxed);
  errno = saved;
}

void release_thread_stack() {
  t_released = true;
  if (!t_stack) return;
  int saved = errno;
  size_t bytes = stack_bytes();
  stack_t cur;
  if (sigaltstack(nullptr, &cur) == 0) {
    if (cur.ss_flags & SS_ONSTACK) {  // called from a handler running on it: leave it be
      errno = saved;
      return;
    }
    // Still installed (the program may have put its own in place since, and kept ours to restore).
    if (reinterpret_cast<uintptr_t>(cur.ss_sp) == t_stack + kPage) {
      stack_t off{};
      off.ss_flags = SS_DISABLE;
      sigaltstack(&off, nullptr);
    }
  }
  munmap(reinterpret_cast<void*>(t_stack), bytes + kPage);
  t_stack = 0;
  errno = saved;
}

StackStats stack_stats() {
  return StackStats{g_given.load(std::memory_order_relaxed), g_kept.load(std::memory_order_relaxed),
                    g_failures.load(std::memory_order_relaxed)};
}

}  // namespace sentinel::sig
