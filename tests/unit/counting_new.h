// Replaces the global operator new and delete of the test executable with ones that count the
// allocations made while `counting_new::armed` is set (on this thread): the tests that show a path
// allocates nothing arm it around the path. Include it in exactly one source of an executable (the
// replacements are definitions).
#pragma once
// GCC cannot see that the replaced operators' pairs match once they are inlined (into unique_ptr, or
// these definitions themselves): they only count and forward to malloc and free.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#include <cstdint>
#include <cstdlib>
#include <new>

namespace counting_new {
inline thread_local bool armed = false;
inline thread_local uint64_t calls = 0;
inline void count() {
  if (armed) ++calls;
}
}  // namespace counting_new

void* operator new(size_t n) {
  counting_new::count();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) {
  counting_new::count();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  counting_new::count();
  return std::malloc(n ? n : 1);
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  counting_new::count();
  return std::malloc(n ? n : 1);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
