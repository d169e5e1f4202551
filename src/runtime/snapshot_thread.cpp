#include "runtime/snapshot_thread.h"

#include <cerrno>

#include "base/clock.h"
#include "base/thread.h"

namespace sentinel::rt {

namespace {
// A bound on how long a missed wake-up could delay a request.
constexpr uint64_t kLookNs = 1'000'000'000;
}  // namespace

bool SnapshotThread::start(WriteFn write, WriteFn periodic, uint64_t period_ns) {
  bool expected = false;
  if (!started_.compare_exchange_strong(expected, true)) return true;
  write_ = write;
  periodic_ = period_ns ? periodic : nullptr;
  period_ns_ = period_ns;
  const int rc = start_quiet_thread(&thread_, &SnapshotThread::main, this, 256 * 1024, "sentinel-snap");
  if (rc != 0) {
    errno = rc;
    return false;
  }
  joinable_.store(true, std::memory_order_release);
  return true;
}

void SnapshotThread::request() {
  requests_.fetch_add(1, std::memory_order_acq_rel);
  futex_wake(&requests_);
}

void* SnapshotThread::main(void* self) {
  static_cast<SnapshotThread*>(self)->loop();
  return nullptr;
}

void SnapshotThread::loop() {
  uint32_t served = 0;
  uint64_t due = periodic_ ? monotonic_ns() + period_ns_ : UINT64_MAX;
  for (;;) {
    uint32_t now = requests_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    if (now != served) {
      served = now;  // the requests up to here are all served by this one
      write_();
      continue;
    }
    const uint64_t t = monotonic_ns();
    if (t >= due) {
      periodic_();
      // The next one a whole period after this one ended: a write slower than the period does not
      // make them back to back.
      due = monotonic_ns() + period_ns_;
      continue;
    }
    futex_wait(&requests_, now, due - t < kLookNs ? due - t : kLookNs);
  }
}

void SnapshotThread::stop_and_join() {
  if (!joinable_.exchange(false)) return;
  stop_.store(true, std::memory_order_release);
  futex_wake(&requests_);
  pthread_join(thread_, nullptr);
}

void SnapshotThread::forget() {
  joinable_.store(false, std::memory_order_relaxed);
  started_.store(true, std::memory_order_relaxed);  // none in a child
}

}  // namespace sentinel::rt
