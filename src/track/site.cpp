#include "track/site.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>

#include "base/hash.h"
#include "base/vm_region.h"

namespace sentinel {

uint64_t hash_frames(const uintptr_t* frames, uint32_t n) {
  uint64_t h = 0xcbf29ce484222325ULL ^ n;
  for (uint32_t i = 0; i < n; ++i) h = (h ^ mix64(frames[i])) * 0x100000001b3ULL;
  return h | 1;  // never 0 (empty)
}

bool SiteTable::init() {
  slots_ = static_cast<Site*>(vm_map_lazy(kCapacity * sizeof(Site)));
  id_to_slot_ = static_cast<std::atomic<uint32_t>*>(vm_map_lazy(kCapacity * sizeof(uint32_t)));
  return slots_ && id_to_slot_;
}

uint32_t SiteTable::intern(const uintptr_t* frames, uint32_t n) {
  if (!slots_) return kNoSite;
  if (n > SENTINEL_MAX_FRAMES) n = SENTINEL_MAX_FRAMES;
  uint64_t h = hash_frames(frames, n);
  for (uint32_t probe = 0; probe < kCapacity; ++probe) {
    uint32_t pos = static_cast<uint32_t>((h >> 7) + probe) & (kCapacity - 1);
    Site& s = slots_[pos];
    uint64_t cur = s.hash.load(std::memory_order_acquire);
    if (cur == 0) {
      if (s.hash.compare_exchange_strong(cur, h, std::memory_order_acq_rel)) {
        s.nframes = n;
        for (uint32_t i = 0; i < n; ++i) s.frames[i] = frames[i];
        uint32_t id = next_id_.fetch_add(1, std::memory_order_acq_rel);
        id_to_slot_[id].store(pos, std::memory_order_relaxed);
        s.id_plus_one.store(id + 1, std::memory_order_release);
        return id;
      }
    }
    if (cur == h) {
      // Another thread may still be publishing it; it does so in a handful of stores.
      // A bounded wait: after fork() the writer may not exist in this process any more.
      for (int spin = 0; spin < (1 << 20); ++spin) {
        uint32_t idp = s.id_plus_one.load(std::memory_order_acquire);
        if (idp) return idp - 1;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
      return kNoSite;
    }
  }
  full_.fetch_add(1, std::memory_order_relaxed);
  return kNoSite;
}

const Site* SiteTable::by_id(uint32_t id) const {
  if (!slots_ || id >= count()) return nullptr;
  const Site& s = slots_[id_to_slot_[id].load(std::memory_order_relaxed)];
  return s.id_plus_one.load(std::memory_order_acquire) == id + 1 ? &s : nullptr;
}

UnwindMethod Unwinder::init(UnwindMethod wanted, uintptr_t skip_lo, uintptr_t skip_hi) {
  skip_lo_ = skip_lo;
  skip_hi_ = skip_hi;
  method_ = UnwindMethod::none;
  if (wanted == UnwindMethod::libunwind) {
    void* h = dlopen("libunwind.so.8", RTLD_LAZY | RTLD_LOCAL);
    if (h) backtrace_ = reinterpret_cast<BacktraceFn>(dlsym(h, "unw_backtrace"));
    if (backtrace_) return method_ = UnwindMethod::libunwind;
    wanted = UnwindMethod::backtrace;  // fall back, the caller says so
  }
  if (wanted == UnwindMethod::backtrace) {
    backtrace_ = &::backtrace;
    return method_ = UnwindMethod::backtrace;
  }
  return method_;
}

uint32_t Unwinder::capture(uintptr_t* out, uint32_t max) const {
  if (!backtrace_) return 0;
  void* raw[kMaxCaptured + 16];
  if (max > kMaxCaptured) max = kMaxCaptured;
  int n = backtrace_(raw, static_cast<int>(max + 16));
  int i = 0;
  while (i < n && reinterpret_cast<uintptr_t>(raw[i]) - skip_lo_ < skip_hi_ - skip_lo_) ++i;
  uint32_t k = 0;
  for (; i < n && k < max; ++i) out[k++] = reinterpret_cast<uintptr_t>(raw[i]);
  return k;
}

}  // namespace sentinel

namespace sentinel {

bool SiteCache::init() {
  entries_ = static_cast<Entry*>(vm_map_lazy(kCapacity * sizeof(Entry)));
  return entries_ != nullptr;
}

namespace {
constinit thread_local uintptr_t t_stack_top __attribute__((tls_model("initial-exec"))) = 0;
constinit thread_local uintptr_t t_stack_bottom __attribute__((tls_model("initial-exec"))) = 0;
constinit thread_local bool t_stack_known __attribute__((tls_model("initial-exec"))) = false;
}  // namespace

uintptr_t this_thread_stack_top(uintptr_t sp) {
  if (!t_stack_known) {
    t_stack_known = true;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* addr = nullptr;
      size_t size = 0;
      if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
        t_stack_bottom = reinterpret_cast<uintptr_t>(addr);
        t_stack_top = t_stack_bottom + size;
      }
      pthread_attr_destroy(&attr);
    }
  }
  // Not on the thread's own stack (a signal handler on an alternate stack): nothing can be read safely.
  return sp >= t_stack_bottom && sp < t_stack_top ? t_stack_top : 0;
}

uint32_t SiteCache::site_for(uintptr_t ra, uintptr_t sp, const Unwinder& unwinder, SiteTable& sites) {
  if (unwinder.method() == UnwindMethod::none) return kNoSite;
  uintptr_t top = this_thread_stack_top(sp);
  uint64_t x = ra * 0x9E3779B97F4A7C15ULL ^ (sp + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL;
  const uint64_t tag = (x ^ (x >> 29)) | 2;  // never 0 (empty) or 1 (being written)
  const uint32_t home = static_cast<uint32_t>(tag >> 20);
  if (entries_ && top > sp) {
    for (uint32_t probe = 0; probe < kProbes; ++probe) {
      Entry& e = entries_[(home + probe) & (kCapacity - 1)];
      uint64_t cur = e.tag.load(std::memory_order_acquire);
      if (cur == 0) break;
      if (cur != tag) continue;
      bool same = e.nframes > 0;
      for (uint32_t k = 0; same && k < e.nframes; ++k) {
        uintptr_t at = sp + uintptr_t{e.offset[k]} * sizeof(uintptr_t);
        same = at + sizeof(uintptr_t) <= top && *reinterpret_cast<const uintptr_t*>(at) == e.frames[k];
      }
      if (same) {
        return e.site;
      }
    }
  }
  // Unwind, then learn where the chain lies on the stack (ascending: callers sit above callees).
  unwinds_.fetch_add(1, std::memory_order_relaxed);
  uintptr_t frames[SENTINEL_MAX_FRAMES];
  uint32_t n = unwinder.capture(frames);
  if (!n) return kNoSite;
  uint32_t site = sites.intern(frames, n);
  if (!entries_ || top <= sp || site == kNoSite) return site;
  uint16_t offset[SENTINEL_MAX_FRAMES];
  const auto* words = reinterpret_cast<const uintptr_t*>(sp);
  uintptr_t limit = (top - sp) / sizeof(uintptr_t);
  if (limit > kScanWords) limit = kScanWords;
  uintptr_t w = 0;
  for (uint32_t k = 0; k < n; ++k, ++w) {
    while (w < limit && words[w] != frames[k]) ++w;
    if (w >= limit) {
      unverifiable_.fetch_add(1, std::memory_order_relaxed);
      return site;  // part of the chain is not on this stack (a signal frame, a switched stack): no entry
    }
    offset[k] = static_cast<uint16_t>(w);
  }
  for (uint32_t probe = 0; probe < kProbes; ++probe) {
    Entry& e = entries_[(home + probe) & (kCapacity - 1)];
    uint64_t empty = 0;
    if (!e.tag.compare_exchange_strong(empty, 1, std::memory_order_acq_rel)) continue;
    e.site = site;
    e.nframes = n;
    for (uint32_t k = 0; k < n; ++k) {
      e.offset[k] = offset[k];
      e.frames[k] = frames[k];
    }
    e.tag.store(tag, std::memory_order_release);
    used_.fetch_add(1, std::memory_order_relaxed);
    break;
  }
  return site;
}

}  // namespace sentinel
