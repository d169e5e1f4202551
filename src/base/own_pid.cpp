#include "base/own_pid.h"

#include <unistd.h>

#include <atomic>

namespace sentinel {

namespace {
std::atomic<int> g_owner{0};
}

void note_own_pid() {
  g_owner.store(static_cast<int>(getpid()), std::memory_order_relaxed);
}

bool in_borrowed_memory() {
  int owner = g_owner.load(std::memory_order_relaxed);
  return owner != 0 && owner != static_cast<int>(getpid());
}

}  // namespace sentinel
