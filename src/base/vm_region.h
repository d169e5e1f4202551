// Thin wrappers over mmap for the runtime's own memory. Never uses malloc.
#pragma once
#include <cstddef>
#include <cstdint>

namespace sentinel {

// Reserves address space with no access and no commit charge; returns nullptr on failure.
void* vm_reserve(size_t bytes, size_t alignment);
// Makes [p, p+bytes) readable and writable. False on failure (errno kept).
bool vm_commit(void* p, size_t bytes);
// Anonymous read-write memory, lazily backed; returns nullptr on failure.
void* vm_map_lazy(size_t bytes);
void vm_unmap(void* p, size_t bytes);
// Asks for transparent huge pages on a large, densely written bookkeeping area: one fault per 2 MiB
// instead of one per 4 KiB. Advisory; ignored where THP is off.
void vm_prefer_huge_pages(void* p, size_t bytes);

}  // namespace sentinel
