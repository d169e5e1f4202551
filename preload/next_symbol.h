// The next definition of a symbol after libsentinel.so (libc's, or cudart's), looked up once and cached.
// dlsym may allocate: the lookup runs inside the recursion guard, so that goes to glibc.
#pragma once
#include <dlfcn.h>

#include <atomic>

#include "runtime/runtime.h"

namespace sentinel::preload {

template <typename Fn>
Fn next_symbol(std::atomic<Fn>& slot, const char* name) {
  Fn f = slot.load(std::memory_order_acquire);
  if (!f) {
    sentinel::Guard guard;
    f = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
    slot.store(f, std::memory_order_release);
  }
  return f;
}

}  // namespace sentinel::preload
