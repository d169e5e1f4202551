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
constexpr unsigned kEmptyBeforeDormant = 3;   // empty drains in a row (0.2, then 0.4 ms apart): go dormant
// Dormant, the thread still looks every so often: a bound on how long an event can wait if the wake-up
// is ever missed, and the step of the idle clock that ends the thread.
constexpr uint64_t kDormantCheckNs = 50'000'000;
constexpr uint64_t kSyncSleepNs = 1'000'000;  // while the sequencer is synchronous
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

uint64_t DrainThread::drain_once() {
  uint64_t n = 0;
  // While allocating threads sequence their own events (a profiling window), leave it to them: the
  // clock must follow them exactly, and per-thread counters are read on the thread that crosses an
  // interval.
  if (!sequencer_->sync_required() && sequencer_->try_lock()) {
    n = sequencer_->drain();
    sequencer_->unlock();
  }
  return n;
}

void DrainThread::loop() {
  uint64_t sleep_ns = kActiveSleepNs;
  uint64_t idle_ns = 0;
  unsigned empty = 0;
  while (!stop_.load(std::memory_order_acquire) && idle_ns < kIdleExitNs) {
    publish_coarse_ticks();
    const uint64_t n = drain_once();
    sequencer_->populate_log_ahead();
    wakeups_.store(wakeups_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (n >= ThreadState::kRingEvents / 8) {
      sched_yield();  // a thread allocates fast: keep up before its ring fills
      sleep_ns = kActiveSleepNs, empty = 0, idle_ns = 0;
      continue;
    }
    if (n) {
      sleep_ns = kActiveSleepNs, empty = 0, idle_ns = 0;
    } else if (sequencer_->sync_required()) {
      // The allocating threads sequence their own events (a profiling window): waking this thread for
      // each of them would buy nothing, so it polls slowly until the window ends.
      sleep_ns = kSyncSleepNs;
      idle_ns += sleep_ns;
    } else if (++empty < kEmptyBeforeDormant) {
      sleep_ns *= 2;
      idle_ns += sleep_ns;
    } else {
      // Nothing for a while: sleep until the tracked path publishes again, rather than polling. A
      // training step's tracked allocations come in bursts (a layer, the optimizer), so this turns a
      // thousand wake-ups a second into a few per burst.
      // Not woken: a whole kDormantCheckNs of idle time towards the thread's end.
      idle_ns = sleep_until_published(kDormantCheckNs) ? 0 : idle_ns + kDormantCheckNs;
      sleep_ns = kActiveSleepNs, empty = 0;
      continue;
    }
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

bool DrainThread::sleep_until_published(uint64_t timeout_ns) {
  // The handshake with wake_if_dormant(): announce (a full barrier), then look at the rings once more.
  // An event pushed before the announcement is seen here; one pushed after it sees the announcement
  // (the tracked path fences between its push and its look) and wakes this thread.
  dormant_.store(1, std::memory_order_seq_cst);
  stop_coarse_ticks();  // while nobody publishes the clock, stamps are exact (clock.h)
  if (drain_once() || stop_.load(std::memory_order_acquire)) {
    dormant_.store(0, std::memory_order_relaxed);
    return true;
  }
  const uint64_t t0 = monotonic_ns();
  uint64_t elapsed = 0;
  while (dormant_.load(std::memory_order_acquire) && elapsed < timeout_ns) {
    futex_wait(&dormant_, 1, timeout_ns - elapsed);
    elapsed = monotonic_ns() - t0;
  }
  // 0 here: the tracked path (or stop) woke us; else the time ran out.
  if (dormant_.exchange(0, std::memory_order_acq_rel) != 0) return false;
  dormant_wakes_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void DrainThread::wake_if_dormant() {
  if (dormant_.exchange(0, std::memory_order_acq_rel)) futex_wake(&dormant_);
}

void DrainThread::stop() {
  stop_.store(true, std::memory_order_release);
  wake_if_dormant();
}

void DrainThread::join_previous() {
  if (!joinable_) return;
  pthread_join(thread_, nullptr);
  joinable_ = false;
}

void DrainThread::stop_and_join() {
  pthread_mutex_lock(&control_);
  stop();
  join_previous();
  pthread_mutex_unlock(&control_);
}

void DrainThread::forget() {
  // The child of fork has one thread; the mutex may have been held by another thread of the parent.
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  control_ = fresh;
  joinable_ = false;
  running_.store(false, std::memory_order_release);
  dormant_.store(0, std::memory_order_relaxed);
}

}  // namespace sentinel
