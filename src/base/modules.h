// The loaded objects (executable and shared libraries) with their load bias, PT_LOAD segments and
// build id, so that sites can be symbolized offline. Captured at start, after every dlopen and at
// dump time; entries are kept after dlclose. Fixed storage, no malloc.
#pragma once
#include <cstddef>
#include <cstdint>

namespace sentinel {

struct ModuleSegment {
  uint64_t vaddr;
  uint64_t memsz;
  uint32_t flags;
};

struct Module {
  static constexpr uint32_t kMaxSegments = 8;
  uint64_t load_bias = 0;
  uint32_t segment_count = 0;
  ModuleSegment segments[kMaxSegments] = {};
  uint8_t build_id[40] = {};
  uint32_t build_id_len = 0;
  uint32_t path_offset = 0;
  uint32_t path_len = 0;
};

class ModuleTable {
 public:
  static constexpr uint32_t kMaxModules = 1024;
  static constexpr uint32_t kPathPool = 256 * 1024;
  // Adds modules not seen before. Not reentrant: callers serialize (a spin flag inside).
  void refresh();
  uint32_t count() const { return count_; }
  const Module& at(uint32_t i) const { return modules_[i]; }
  const char* path(const Module& m) const { return pool_ + m.path_offset; }
  // The module whose loaded segments hold `addr`, and addr's offset in its file's address space (what
  // addr2line and gdb take). Reads the table only: usable in a signal handler. False if none holds it.
  bool locate(uintptr_t addr, uint32_t* index, uint64_t* offset) const;
  // The [lo, hi) range of the executable segments of the object containing `addr`.
  static bool text_range_of(const void* addr, uintptr_t* lo, uintptr_t* hi);

 private:
  friend struct ModuleCollector;
  Module modules_[kMaxModules];
  char pool_[kPathPool] = {};
  uint32_t count_ = 0;
  uint32_t pool_used_ = 0;
  uint32_t visit_index_ = 0;
  int busy_ = 0;
};

}  // namespace sentinel
