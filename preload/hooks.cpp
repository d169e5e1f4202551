// libsentinel.so's interposed symbols: the malloc family, CUDA host allocation, dlopen/dlclose,
// _exit, pthread_create/pthread_exit, and the public API. Each hook only decides "tracked or not" and forwards: to the
// core for tensor-sized objects, to glibc's __libc_* entry points for everything else. Using __libc_* (not
// dlsym(RTLD_NEXT)) means no allocation can arrive "before dlsym works": glibc is always reachable.
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "base/log.h"
#include "next_symbol.h"
#include "runtime/runtime.h"
#include "sentinel/sentinel.h"
#include "sentinel_build_config.h"

namespace rt = sentinel::rt;

extern "C" {
void* __libc_malloc(size_t);
void __libc_free(void*);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void* __libc_valloc(size_t);
void* __libc_pvalloc(size_t);
extern char** environ;
}

#define SENTINEL_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr size_t kPage = 4096;

// glibc's memalign rules (2.36): small alignments mean malloc, others round up to a power of two.
inline size_t normalize_alignment(size_t alignment) {
  if (alignment <= 16) return 0;
  if (alignment & (alignment - 1)) {
    size_t a = 32;
    while (a < alignment) a <<= 1;
    return a;
  }
  return alignment;
}

using sentinel::preload::next_symbol;

using UsableSizeFn = size_t (*)(void*);
std::atomic<UsableSizeFn> g_real_usable_size{nullptr};

size_t libc_usable_size(void* p) {
  UsableSizeFn f = next_symbol(g_real_usable_size, "malloc_usable_size");
  return f ? f(p) : 0;
}

inline void* memalign_impl(size_t alignment, size_t size, rt::Caller caller) {
  if (alignment > SIZE_MAX / 2 + 1) {
    errno = EINVAL;
    return nullptr;
  }
  if (rt::should_track(size)) {
    if (void* p = rt::allocate(size, normalize_alignment(alignment), false, caller)) return p;
  }
  return __libc_memalign(alignment, size);
}

}  // namespace

// ---- the malloc family -------------------------------------------------------------------------

namespace {
__attribute__((noinline)) void* malloc_maybe_tracked(size_t size) {
  if (!sentinel::t_guard) {
    if (void* p = rt::allocate(size, 0, false, SENTINEL_CALLER())) return p;
  }
  return __libc_malloc(size);
}
}  // namespace

SENTINEL_EXPORT void* malloc(size_t size) {
  if (__builtin_expect(rt::below_threshold(size), 1)) return __libc_malloc(size);
  return malloc_maybe_tracked(size);
}

SENTINEL_EXPORT void free(void* p) {
  if (rt::owns(p)) {
    rt::release(p);
    return;
  }
  __libc_free(p);
}

SENTINEL_EXPORT void* calloc(size_t n, size_t m) {
  size_t total;
  if (__builtin_mul_overflow(n, m, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  if (rt::should_track(total)) {
    if (void* p = rt::allocate(total, 0, true, SENTINEL_CALLER())) return p;
  }
  return __libc_calloc(n, m);
}

SENTINEL_EXPORT void* realloc(void* p, size_t size) {
  if (!p) {
    if (rt::should_track(size)) {
      if (void* q = rt::allocate(size, 0, false, SENTINEL_CALLER())) return q;
    }
    return __libc_malloc(size);
  }
  if (rt::owns(p)) return rt::reallocate(p, size, SENTINEL_CALLER());
  if (rt::should_track(size)) {
    size_t old = libc_usable_size(p);
    if (old && old < size) {  // growing a libc object into a tracked one
      if (void* q = rt::allocate(size, 0, false, SENTINEL_CALLER())) {
        memcpy(q, p, old);
        __libc_free(p);
        return q;
      }
    }
  }
  return __libc_realloc(p, size);
}

SENTINEL_EXPORT void* reallocarray(void* p, size_t n, size_t m) {
  size_t total;
  if (__builtin_mul_overflow(n, m, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(p, total);
}

SENTINEL_EXPORT int posix_memalign(void** out, size_t alignment, size_t size) {
  if (alignment % sizeof(void*) != 0 || ((alignment / sizeof(void*)) & (alignment / sizeof(void*) - 1)) != 0 ||
      alignment == 0)
    return EINVAL;
  int saved = errno;
  void* p = memalign_impl(alignment, size, SENTINEL_CALLER());
  if (!p) {
    errno = saved;
    return ENOMEM;
  }
  *out = p;
  return 0;
}

SENTINEL_EXPORT void* aligned_alloc(size_t alignment, size_t size) {
  return memalign_impl(alignment, size, SENTINEL_CALLER());
}

SENTINEL_EXPORT void* memalign(size_t alignment, size_t size) {
  return memalign_impl(alignment, size, SENTINEL_CALLER());
}

SENTINEL_EXPORT void* valloc(size_t size) {
  if (rt::should_track(size)) {
    if (void* p = rt::allocate(size, kPage, false, SENTINEL_CALLER())) return p;
  }
  return __libc_valloc(size);
}

SENTINEL_EXPORT void* pvalloc(size_t size) {
  size_t rounded;
  if (__builtin_add_overflow(size, kPage - 1, &rounded)) {
    errno = ENOMEM;
    return nullptr;
  }
  rounded &= ~(kPage - 1);
  if (rt::should_track(rounded)) {
    if (void* p = rt::allocate(rounded, kPage, false, SENTINEL_CALLER())) return p;
  }
  return __libc_pvalloc(size);
}

SENTINEL_EXPORT size_t malloc_usable_size(void* p) {
  if (!p) return 0;
  if (rt::owns(p)) return rt::usable_size(p);
  return libc_usable_size(p);
}

// ---- CUDA pinned host memory (cudart is never linked: the next definition is looked up lazily) ---

namespace {
using HostAllocFn = int (*)(void**, size_t, unsigned);
using MallocHostFn = int (*)(void**, size_t);
using FreeHostFn = int (*)(void*);
std::atomic<HostAllocFn> g_cuda_host_alloc{nullptr};
std::atomic<MallocHostFn> g_cuda_malloc_host{nullptr};
std::atomic<FreeHostFn> g_cuda_free_host{nullptr};
constexpr int kCudaErrorInitialization = 3;

void report_missing_cudart(const char* name) {
  static std::atomic<int> once{0};
  if (once.exchange(1)) return;
  sentinel::LineBuf b;
  b.str(name).str(" called but no CUDA runtime is loaded after libsentinel.so; returning cudaErrorInitializationError");
  sentinel::log_line(sentinel::LogLevel::error, b);
}
}  // namespace

SENTINEL_EXPORT int cudaHostAlloc(void** p, size_t size, unsigned flags) {
  HostAllocFn f = next_symbol(g_cuda_host_alloc, "cudaHostAlloc");
  if (!f) {
    report_missing_cudart("cudaHostAlloc");
    return kCudaErrorInitialization;
  }
  rt::PinnedPlacement placement;
  rt::prepare_pinned(size, SENTINEL_CALLER(), &placement);
  int rc = f(p, size, flags);
  rt::note_cuda_host_alloc(rc == 0 && p ? *p : nullptr, size, SENTINEL_CALLER(), &placement);
  return rc;
}

SENTINEL_EXPORT int cudaMallocHost(void** p, size_t size) {
  MallocHostFn f = next_symbol(g_cuda_malloc_host, "cudaMallocHost");
  if (!f) {
    report_missing_cudart("cudaMallocHost");
    return kCudaErrorInitialization;
  }
  rt::PinnedPlacement placement;
  rt::prepare_pinned(size, SENTINEL_CALLER(), &placement);
  int rc = f(p, size);
  rt::note_cuda_host_alloc(rc == 0 && p ? *p : nullptr, size, SENTINEL_CALLER(), &placement);
  return rc;
}

SENTINEL_EXPORT int cudaFreeHost(void* p) {
  FreeHostFn f = next_symbol(g_cuda_free_host, "cudaFreeHost");
  if (!f) {
    report_missing_cudart("cudaFreeHost");
    return kCudaErrorInitialization;
  }
  int rc = f(p);
  if (rc == 0) rt::note_cuda_host_free(p);
  return rc;
}

// ---- dlopen / dlclose ----------------------------------------------------------------------------
// glibc's dlopen searches the *caller's* DT_RUNPATH, and takes the caller from its return address. A C
// wrapper would make libsentinel.so the caller and break libraries that dlopen their neighbours by
// name. So on x86-64 dlopen is an assembly trampoline that jumps (not calls) into the real dlopen,
// leaving the caller's return address in place; only RTLD_DEEPBIND takes a detour to be stripped
// (it would bind the loaded library to glibc's malloc, around our hooks).

extern "C" {
__attribute__((visibility("hidden"))) void* sentinel_real_dlopen = nullptr;
__attribute__((visibility("hidden"), used)) void sentinel_dlopen_prepare(const char* file, int flags) {
  if (!sentinel_real_dlopen) {
    sentinel::Guard guard;
    sentinel_real_dlopen = dlsym(RTLD_NEXT, "dlopen");
  }
  if (flags & RTLD_DEEPBIND) {
    sentinel::LineBuf b;
    b.str("dlopen(").str(file ? file : "NULL").str("): RTLD_DEEPBIND removed so that allocations stay visible");
    sentinel::log_line(sentinel::LogLevel::warn, b);
  }
}
}

#if defined(__x86_64__)
__asm__(
    ".text\n"
    ".globl dlopen\n"
    ".type dlopen,@function\n"
    "dlopen:\n"
    "  mov sentinel_real_dlopen(%rip), %rax\n"
    "  test %rax, %rax\n"
    "  jz 1f\n"
    "  test $8, %esi\n"  // RTLD_DEEPBIND
    "  jnz 1f\n"
    "  jmp *%rax\n"
    "1:\n"
    "  push %rdi\n"
    "  push %rsi\n"
    "  sub $8, %rsp\n"
    "  call sentinel_dlopen_prepare\n"
    "  add $8, %rsp\n"
    "  pop %rsi\n"
    "  pop %rdi\n"
    "  and $-9, %esi\n"
    "  mov sentinel_real_dlopen(%rip), %rax\n"
    "  jmp *%rax\n"
    ".size dlopen, .-dlopen\n");
#else
SENTINEL_EXPORT void* dlopen(const char* file, int flags) {
  sentinel_dlopen_prepare(file, flags);
  using DlopenFn = void* (*)(const char*, int);
  return reinterpret_cast<DlopenFn>(sentinel_real_dlopen)(file, flags & ~RTLD_DEEPBIND);
}
#endif

SENTINEL_EXPORT int dlclose(void* handle) {
  using DlcloseFn = int (*)(void*);
  static std::atomic<DlcloseFn> real{nullptr};
  DlcloseFn f = next_symbol(real, "dlclose");
  // Keep the module map of what may be unloaded now: sites in it are symbolized from the dump.
  rt::after_dlopen();
  return f ? f(handle) : -1;
}

// ---- process end ---------------------------------------------------------------------------------

SENTINEL_EXPORT void _exit(int status) {
  rt::at_exit();
  for (;;) syscall(SYS_exit_group, status);
}

SENTINEL_EXPORT void _Exit(int status) {
  rt::at_exit();
  for (;;) syscall(SYS_exit_group, status);
}

SENTINEL_EXPORT void pthread_exit(void* value) {
  using PthreadExitFn = void (*)(void*);
  static std::atomic<PthreadExitFn> real{nullptr};
  rt::thread_ending();
  rt::before_thread_exit();
  PthreadExitFn f = next_symbol(real, "pthread_exit");
  if (f) f(value);
  for (;;) syscall(SYS_exit, 0);  // unreachable unless dlsym failed
}

// ---- threads -------------------------------------------------------------------------------------

namespace {
struct ThreadStart {
  void* (*routine)(void*);
  void* arg;
};

void* start_thread_with_runtime(void* p) {
  ThreadStart start = *static_cast<ThreadStart*>(p);
  __libc_free(p);
  rt::thread_started();
  void* result = start.routine(start.arg);
  rt::thread_ending();
  return result;
}
}  // namespace

// Every new thread starts through the runtime, which gives it an alternate signal stack while profiling
// (src/profile/signal_stack.h). Otherwise, and when the small start record cannot be had, glibc's own.
SENTINEL_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*routine)(void*), void* arg) {
  using PthreadCreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static std::atomic<PthreadCreateFn> real{nullptr};
  PthreadCreateFn f = next_symbol(real, "pthread_create");
  if (!f) return EAGAIN;
  auto* start = rt::wants_thread_start() ? static_cast<ThreadStart*>(__libc_malloc(sizeof(ThreadStart))) : nullptr;
  if (!start) return f(thread, attr, routine, arg);
  *start = ThreadStart{routine, arg};
  int rc = f(thread, attr, start_thread_with_runtime, start);
  if (rc != 0) __libc_free(start);
  return rc;
}

extern "C" void sentinel_resolve_signal_functions();

__attribute__((constructor(101))) static void sentinel_constructor() {
  sentinel_dlopen_prepare(nullptr, 0);
  sentinel_resolve_signal_functions();
  rt::init(environ);
}

__attribute__((destructor(101))) static void sentinel_destructor() {
  rt::at_exit();
}

// ---- public API ----------------------------------------------------------------------------------

SENTINEL_EXPORT void sentinel_step(void) {
  rt::mark_step();
}

SENTINEL_EXPORT int sentinel_get_stats(struct sentinel_stats* out) {
  return rt::get_stats(out);
}

SENTINEL_EXPORT int sentinel_dump(const char* path) {
  return rt::dump_now(path);
}

SENTINEL_EXPORT const char* sentinel_mode(void) {
  return rt::current_mode();
}

SENTINEL_EXPORT const char* sentinel_version(void) {
  return SENTINEL_VERSION;
}
