#include "base/modules.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <cstring>

namespace sentinel {

struct ModuleCollector {
  static int visit(struct dl_phdr_info* info, size_t, void* data) {
    auto* t = static_cast<ModuleTable*>(data);
    const char* name = info->dlpi_name ? info->dlpi_name : "";
    char exe[1024];
    if (!*name) {
      // The main program: dl_iterate_phdr gives no name. The vDSO also has none but no PT_LOAD path.
      ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
      if (n > 0 && t->visit_index_ == 0) {
        exe[n] = '\0';
        name = exe;
      }
    }
    ++t->visit_index_;
    size_t name_len = strlen(name);
    for (uint32_t i = 0; i < t->count_; ++i) {
      const Module& m = t->modules_[i];
      if (m.load_bias == info->dlpi_addr && m.path_len == name_len &&
          memcmp(t->pool_ + m.path_offset, name, name_len) == 0)
        return 0;
    }
    if (t->count_ >= ModuleTable::kMaxModules || t->pool_used_ + name_len + 1 > ModuleTable::kPathPool) return 0;
    Module& m = t->modules_[t->count_];
    m = Module{};
    m.load_bias = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
      const ElfW(Phdr)& ph = info->dlpi_phdr[i];
      if (ph.p_type == PT_LOAD && m.segment_count < Module::kMaxSegments) {
        m.segments[m.segment_count++] = {ph.p_vaddr, ph.p_memsz, ph.p_flags};
      } else if (ph.p_type == PT_NOTE) {
        auto p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
        const char* end = p + ph.p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
          auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
          const char* nname = p + sizeof(ElfW(Nhdr));
          const char* desc = nname + ((nh->n_namesz + 3) & ~3u);
          if (desc + nh->n_descsz > end) break;
          if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(nname, "GNU", 4) == 0 &&
              nh->n_descsz <= sizeof(m.build_id)) {
            memcpy(m.build_id, desc, nh->n_descsz);
            m.build_id_len = nh->n_descsz;
          }
          p = desc + ((nh->n_descsz + 3) & ~3u);
        }
      }
    }
    m.path_offset = t->pool_used_;
    m.path_len = static_cast<uint32_t>(name_len);
    memcpy(t->pool_ + t->pool_used_, name, name_len);
    t->pool_[t->pool_used_ + name_len] = '\0';
    t->pool_used_ += static_cast<uint32_t>(name_len + 1);
    ++t->count_;
    return 0;
  }
};

void ModuleTable::refresh() {
  if (__atomic_exchange_n(&busy_, 1, __ATOMIC_ACQUIRE)) return;  // someone else is refreshing
  visit_index_ = 0;
  dl_iterate_phdr(&ModuleCollector::visit, this);
  __atomic_store_n(&busy_, 0, __ATOMIC_RELEASE);
}

bool ModuleTable::locate(uintptr_t addr, uint32_t* index, uint64_t* offset) const {
  const uint32_t n = __atomic_load_n(&count_, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < n; ++i) {
    const Module& m = modules_[i];
    for (uint32_t k = 0; k < m.segment_count; ++k) {
      const uint64_t lo = m.load_bias + m.segments[k].vaddr;
      if (addr >= lo && addr - lo < m.segments[k].memsz) {
        *index = i;
        *offset = addr - m.load_bias;
        return true;
      }
    }
  }
  return false;
}

namespace {
struct RangeQuery {
  uintptr_t addr, lo, hi;
  bool found;
};
int find_range(struct dl_phdr_info* info, size_t, void* data) {
  auto* q = static_cast<RangeQuery*>(data);
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  bool contains = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uintptr_t s = info->dlpi_addr + ph.p_vaddr, e = s + ph.p_memsz;
    if (q->addr >= s && q->addr < e) contains = true;
    if (ph.p_flags & PF_X) {
      if (s < lo) lo = s;
      if (e > hi) hi = e;
    }
  }
  if (!contains) return 0;
  q->lo = lo;
  q->hi = hi;
  q->found = true;
  return 1;
}
}  // namespace

bool ModuleTable::text_range_of(const void* addr, uintptr_t* lo, uintptr_t* hi) {
  RangeQuery q{reinterpret_cast<uintptr_t>(addr), 0, 0, false};
  dl_iterate_phdr(find_range, &q);
  *lo = q.lo;
  *hi = q.hi;
  return q.found;
}

}  // namespace sentinel
