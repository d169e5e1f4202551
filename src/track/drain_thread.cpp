#include "track/drain_thread.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <cerrno>

#include "base/clock.h"
#include "base/guard.h"
#include "base/thread.h"
#include "track/sequencer.h"

namespace sentinel {

namespace {
constexpr uint64_t kActiveSleepNs = 100'000;  // while events arrive: a ring of 8192 lasts >= 0.2 ms
constexpr uint64_t kIdleSleepNs = 1'000'000;  // nothing for a while: also the coarse clock's resolution
}  // namespace

bool DrainThread::start(Sequencer* sequencer) {
  uint64_t now = monotonic_ns();
  uint64_t last = last_try_ns_.load(std::memory_order_relaxed);
  if ((last && now - last < kRetryNs) || !last_try_ns_.compare_exchange_strong(last, now)) return true;
  pthread_mutex_lock(&control_);
  if (running_.load(std::memory_order_acquire) || stop_.load(std::memory_order_acquire)) {
    pthread_mutex_unlock(&control_);
    return true;
  }
  join_previous();  // it ended after a while without work: reap it
  sequencer_ = sequencer;
  // Set before the thread runs, so that a second start() cannot slip in.
  running_.store(true, std::memory_order_release);
  int rc = start_quiet_thread(&thread_, &DrainThread::main, this, 256 * 1024, "sentinel-seq");
  if (rc != 0) {
    running_.store(false, std::memory_order_release);
    pthread_mutex_unlock(&control_);
    errno = rc;
    return false;
  }
  joinable_ = true;
  starts_.fetch_add(1, std::memory_order_relaxed);
  pthread_mutex_unlock(&control_);
  return true;
}

void* DrainThread::main(void* self) {
  t_guard = 1;  // everything this thread allocates is Sentinel's own: never tracked
  auto* t = static_cast<DrainThread*>(self);
  publish_coarse_ticks();  // before any thread stamps with it
  t->sequencer_->lock();
  t->sequencer_->set_async_available(true);
  t->sequencer_->unlock();
  t->loop();
  return nullptr;
}

void DrainThread::loop() {
  uint64_t sleep_ns = kActiveSleepNs;
  uint64_t idle_ns = 0;
  while (!stop_.load(std::memory_order_acquire) && idle_ns < kIdleExitNs) {
    uint64_t n = 0;
    // While allocating threads sequence their own events (a profiling window), leave it to them: the
    // clock must follow them exactly, and per-thread counters are read on the thread that crosses an
    // interval.
    publish_coarse_ticks();
    if (!sequencer_->sync_required() && sequencer_->try_lock()) {
      n = sequencer_->drain();
      sequencer_->unlock();
    }
    sequencer_->populate_log_ahead();
    wakeups_.store(wakeups_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (n >= ThreadState::kRingEvents / 8) {
      sched_yield();  // a thread allocates fast: keep up before its ring fills
      sleep_ns = kActiveSleepNs;
      continue;
    }
    sleep_ns = n ? kActiveSleepNs : (sleep_ns * 2 < kIdleSleepNs ? sleep_ns * 2 : kIdleSleepNs);
    idle_ns = n ? 0 : idle_ns + sleep_ns;
    timespec ts{static_cast<time_t>(sleep_ns / 1'000'000'000), static_cast<long>(sleep_ns % 1'000'000'000)};
    clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, nullptr);
  }
  // Allocating threads sequence their own events from here on, until the tracked path starts a new
  // thread.
  sequencer_->lock();
  sequencer_->set_async_available(false);
  running_.store(false, std::memory_order_release);
  sequencer_->unlock();
}

void DrainThread::join_previous() {
  if (!joinable_) return;
  pthread_join(thread_, nullptr);
  joinable_ = false;
}

void DrainThread::stop_and_join() {
  pthread_mutex_lock(&control_);
  stop_.store(true, std::memory_order_release);
  join_previous();
  pthread_mutex_unlock(&control_);
}

void DrainThread::forget() {
  // The child of fork has one thread; the mutex may have been held by another thread of the parent.
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  control_ = fresh;
  joinable_ = false;
  running_.store(false, std::memory_order_release);
}

}  // namespace sentinel
