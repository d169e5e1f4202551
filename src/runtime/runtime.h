// The runtime's entry points, called by the hook layer (preload/hooks.cpp). Everything the hooks need
// on the fast path is inline here: one compare for "track this size?", one for "is this ours?".
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "base/guard.h"
#include "sentinel/sentinel.h"

namespace sentinel::rt {

// UINT64_MAX until tracking is enabled, then SENTINEL_MIN_BYTES.
extern std::atomic<uint64_t> g_min_bytes;
// The arena's address range; 0/0 until it exists (so owns() is false for every pointer).
extern uintptr_t g_arena_base;
extern uintptr_t g_arena_span;

inline bool should_track(size_t n) {
  return n >= g_min_bytes.load(std::memory_order_relaxed) && !t_guard;
}
// The common case, kept free of the TLS read: below the threshold nothing is ever tracked.
inline bool below_threshold(size_t n) {
  return n < g_min_bytes.load(std::memory_order_relaxed);
}
inline bool owns(const void* p) {
  return reinterpret_cast<uintptr_t>(p) - g_arena_base < g_arena_span;
}

// Who called the allocator: return address and a stack address of the hook's frame. Together they
// key the site cache (site.h) so that most allocations need no unwinding.
struct Caller {
  uintptr_t ra = 0;
  uintptr_t sp = 0;
};
#define SENTINEL_CALLER()                                                                                             \
  ::sentinel::rt::Caller {                                                                                            \
    reinterpret_cast<uintptr_t>(__builtin_return_address(0)), reinterpret_cast<uintptr_t>(__builtin_frame_address(0)) \
  }

// Called from the library constructor (and lazily): reads the configuration, sets everything up.
void init(char** envp);

// A tracked object of `size` bytes aligned to `alignment` (0: default), or nullptr when the arena
// cannot serve it (the caller then uses libc). Zeroed when `zero`. errno is preserved.
void* allocate(size_t size, size_t alignment, bool zero, Caller caller);
// Frees an object for which owns() is true. An address that is not a live object is reported once
// and ignored (never a crash).
void release(void* p);
// Usable bytes of an owned object (from p to the end of its slot).
size_t usable_size(const void* p);
// realloc of an owned object: in place when it fits, else moved (to libc when n is below the
// threshold). n == 0 frees and returns nullptr, like glibc. Returns nullptr with errno ENOMEM on
// failure, leaving p untouched.
void* reallocate(void* p, size_t n, Caller caller);

// CUDA pinned host memory seen by the hooks. Pinned pages cannot move: before the real allocation,
// prepare_pinned() makes this thread prefer the node the plan (or the fallback) picks, and the hook
// passes what it returned to note_cuda_host_alloc(), which restores the thread's policy.
struct PinnedPlacement {
  uint32_t site = UINT32_MAX;
  int node = -1;
  unsigned long saved[18] = {};  // numa::SavedPolicy, kept opaque here
};
void prepare_pinned(size_t size, Caller caller, PinnedPlacement* out);
void note_cuda_host_alloc(void* p, size_t size, Caller caller, PinnedPlacement* placement);
void note_cuda_host_free(void* p);

// I/O hooks: pin the tracked objects a system call will touch (see profiler.h).
struct IoPin {
  uint16_t cls;
  uint32_t index;
};
bool io_protection_armed();
uint32_t io_pin(const void* p, size_t n, IoPin* out, uint32_t cap);
void io_unpin(const IoPin* pins, uint32_t count);

void after_dlopen();
void after_fork_child();
// Writes the dump (once). Safe to call from a destructor, _exit or a fatal path.
void at_exit();

// pthread_exit on the main thread: Sentinel's own thread ends first, so that the program's last thread
// is the one that ends the process, as without the library.
void before_thread_exit();

// A thread made by pthread_create starts, before its start routine, and ends (its routine returned, or
// pthread_exit): it gets and gives back an alternate signal stack (profile/signal_stack.h), on which
// Sentinel's SIGSEGV handler (the profiler's, or the crash handler in track mode) runs even when the
// thread's own stack has overflowed.
void thread_started();
void thread_ending();
// pthread_create should start the thread through thread_started(): the runtime is set up (every mode but off).
bool wants_thread_start();

void mark_step();
int get_stats(sentinel_stats* out);
// sentinel_dump(): a snapshot of the dump now, while the process runs on. 0, or -1 with errno set.
int dump_now(const char* path);
const char* current_mode();

// For the unit tests: initialise from an explicit environment, unwinding with no frames skipped.
void init_for_tests(const char* const* envp);

}  // namespace sentinel::rt
