#include <pthread.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstring>
#include <thread>
#include <vector>

#include "track/arena.h"
#include "track/registry.h"

using namespace sentinel;

TEST_CASE("object log appends and reports overflow", "[registry]") {
  ObjectLog log;
  REQUIRE(log.init(4));
  sentinel_object o{};
  for (int i = 0; i < 4; ++i) {
    o.size = static_cast<uint64_t>(i) + 1;
    CHECK(log.append(o) == static_cast<uint32_t>(i));
  }
  CHECK(log.append(o) == kNoLogIndex);
  CHECK(log.size() == 4);
  CHECK(log.dropped() == 1);
  CHECK(log.at(2)->size == 3);
}

TEST_CASE("external table inserts, finds and erases", "[registry]") {
  ExternalTable t;
  REQUIRE(t.init());
  for (uintptr_t a = 0x10000; a < 0x10000 + 4096 * 100; a += 4096) REQUIRE(t.insert(a, static_cast<uint32_t>(a >> 12)));
  CHECK(t.find(0x10000 + 4096 * 7) == ((0x10000 + 4096 * 7) >> 12));
  CHECK(t.erase(0x10000 + 4096 * 7) == ((0x10000 + 4096 * 7) >> 12));
  CHECK(t.find(0x10000 + 4096 * 7) == kNoLogIndex);
  CHECK(t.erase(0x10000 + 4096 * 7) == kNoLogIndex);
  CHECK(t.find(0x10000 + 4096 * 8) == ((0x10000 + 4096 * 8) >> 12));  // still found past the tombstone
  CHECK(t.find(0x999000) == kNoLogIndex);
}

namespace {
Arena* g_arena;
std::atomic<uintptr_t> g_probe{0};
std::atomic<long> g_lookups{0}, g_bad{0};

// Runs in signal context: only the arena's lock-free lookup, no allocation.
void on_signal(int) {
  uintptr_t probe = g_probe.load(std::memory_order_acquire);
  if (!probe) return;
  unsigned cls;
  uint32_t idx;
  Slot* s = g_arena->locate(reinterpret_cast<void*>(probe + 100), &cls, &idx);
  if (!s) {
    g_bad.fetch_add(1);
    return;
  }
  uintptr_t user = s->user.load(std::memory_order_acquire);
  // Either the object is live (and contains the probe) or it has just been freed.
  if (user && !(user <= probe + 100 && probe + 100 < user + s->size.load())) g_bad.fetch_add(1);
  g_lookups.fetch_add(1);
}
}  // namespace

TEST_CASE("lookups by address work from signal handlers while other threads allocate", "[registry]") {
  Arena a;
  REQUIRE(a.init(256u << 20));
  g_arena = &a;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(SIGUSR2, &sa, nullptr) == 0);

  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([&] {
      while (!stop.load()) {
        unsigned cls;
        uint32_t idx;
        bool dirty;
        void* p = a.acquire(100000, &cls, &idx, &dirty);
        if (!p) continue;
        Slot* s = a.slot(cls, idx);
        s->size.store(100000);
        s->user.store(reinterpret_cast<uintptr_t>(p), std::memory_order_release);
        g_probe.store(reinterpret_cast<uintptr_t>(p), std::memory_order_release);
        uintptr_t expected = reinterpret_cast<uintptr_t>(p);
        s->user.compare_exchange_strong(expected, 0);
        a.release(cls, idx);
      }
    });
  }
  pthread_t self = pthread_self();
  for (int i = 0; i < 20000; ++i) pthread_kill(self, SIGUSR2);
  stop = true;
  for (auto& w : workers) w.join();
  signal(SIGUSR2, SIG_DFL);
  CHECK(g_lookups.load() > 0);
  CHECK(g_bad.load() == 0);
}
