#include "base/vm_region.h"

#include <sys/mman.h>

namespace sentinel {

void* vm_reserve(size_t bytes, size_t alignment) {
  size_t span = bytes + alignment;
  void* p = mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  auto start = reinterpret_cast<uintptr_t>(p);
  uintptr_t aligned = (start + alignment - 1) & ~(uintptr_t{alignment} - 1);
  if (aligned > start) munmap(p, aligned - start);
  uintptr_t end = start + span, aligned_end = aligned + bytes;
  if (end > aligned_end) munmap(reinterpret_cast<void*>(aligned_end), end - aligned_end);
  return reinterpret_cast<void*>(aligned);
}

bool vm_commit(void* p, size_t bytes) {
  return mprotect(p, bytes, PROT_READ | PROT_WRITE) == 0;
}

void* vm_map_lazy(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void vm_prefer_huge_pages(void* p, size_t bytes) {
  if (p) madvise(p, bytes, MADV_HUGEPAGE);
}

void vm_unmap(void* p, size_t bytes) {
  if (p) munmap(p, bytes);
}

}  // namespace sentinel
