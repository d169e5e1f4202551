// The runtime's whole state, shared by runtime.cpp and the dump writer.
#pragma once
#include <atomic>
#include <cstdint>

#include "base/clock.h"
#include "base/config.h"
#include "base/launch.h"
#include "base/modules.h"
#include "profile/profiler.h"
#include "runtime/stepping.h"
#include "tier/tiering.h"
#include "tier/topology.h"
#include "track/arena.h"
#include "track/mark_log.h"
#include "track/registry.h"
#include "track/sequencer.h"
#include "track/site.h"
#include "track/thread_state.h"

namespace sentinel {

// Pure statistics are bumped with a relaxed load and store, not a locked read-modify-write: under
// contention an increment can be lost, which a statistic tolerates and the hot path appreciates.
inline void bump(std::atomic<uint64_t>& c, uint64_t by = 1) {
  c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

// Rare events only: the allocation clock, frees and live bytes are the sequencer's (sequencer.h), so
// that the tracked path writes no counter shared by all threads.
struct Counters {
  std::atomic<uint64_t> fallback_too_large{0};
  std::atomic<uint64_t> fallback_class_full{0};
  std::atomic<uint64_t> invalid_frees{0};
  std::atomic<uint64_t> realloc_in_place{0};
  std::atomic<uint64_t> realloc_moved{0};
  std::atomic<uint64_t> cuda_host_allocations{0};
  std::atomic<uint64_t> cuda_host_frees{0};
  std::atomic<uint64_t> steps_marked{0};
  std::atomic<uint64_t> threads_without_state{0};  // events taken on the direct path
  std::atomic<uint64_t> pinned_misplaced{0};       // pinned memory that did not land on the node asked for
  // Sentinel's drain thread, copied in before the dump is written (it lives outside this state).
  uint64_t drain_wakeups = 0;        // its looks at the rings
  uint64_t drain_dormant_wakes = 0;  // times the tracked path woke it from sleeping until an event
};

struct RuntimeState {
  Config config;
  Mode mode = Mode::off;
  Arena arena;
  ObjectLog log;
  ExternalTable external;
  SiteTable sites;
  SiteCache site_cache;
  Unwinder unwinder;
  TickClock clock;
  MarkLog marks;
  Topology topology;
  ModuleTable modules;
  Profiler profiler;
  Stepper stepper;
  Tiering tiering;
  ThreadStates threads;
  Sequencer sequencer;
  Counters counters;
  int owner_pid = 0;
  bool started_by_sentinel_process = false;  // its parent has this library mapped (base/lineage.h)
  int end_signal = 0;  // the signal that ended the process as the dump was written (exit_signals.h)
  // The crash that ended it, where one was taken at an instruction (fatal_report.h): the CRASH record.
  sentinel_crash crash{};
  bool crashed = false;
  Launch launch;  // the process's place in a distributed job (base/launch.h)
  uint64_t start_mono_ns = 0;
  uint64_t start_real_ns = 0;
  char exe_name[256] = {};
};

// Memory Sentinel committed for its own bookkeeping (an upper bound: pages touched).
uint64_t overhead_bytes(const RuntimeState& s);

}  // namespace sentinel
