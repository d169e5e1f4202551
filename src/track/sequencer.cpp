#include "track/sequencer.h"

#include <sched.h>
#include <time.h>

#include "base/clock.h"
#include "base/vm_region.h"
#include "track/arena.h"
#include "track/mark_log.h"

namespace sentinel {

bool SeqMap::init(uint64_t capacity) {
  capacity_ = capacity;
  if (!capacity) return true;
  map_ = static_cast<uint32_t*>(vm_map_lazy(capacity * sizeof(uint32_t)));
  if (!map_) capacity_ = 0;
  return map_ != nullptr;
}

bool Sequencer::init(ObjectLog* log, MarkLog* marks, SequenceListener* listener, ThreadStates* states, Arena* arena,
                     uint64_t log_capacity) {
  log_ = log;
  marks_ = marks;
  listener_ = listener;
  states_ = states;
  arena_ = arena;
  deferred_ = static_cast<TrackEvent*>(vm_map_lazy(kDeferred * sizeof(TrackEvent)));
  // Every sequenced allocation may have a log entry: the map has one slot per log entry, and a seq
  // beyond it (more allocations than the log holds) has none.
  return deferred_ && seq_map_.init(log_capacity);
}

void Sequencer::lock() {
  for (int spin = 0; lock_.exchange(true, std::memory_order_acquire); ++spin) {
    if (spin > 64) sched_yield();
  }
}

bool Sequencer::try_lock() {
  return !lock_.load(std::memory_order_relaxed) && !lock_.exchange(true, std::memory_order_acquire);
}

bool Sequencer::try_lock_within(uint64_t ns) {
  const uint64_t deadline = monotonic_ns() + ns;
  for (int spin = 0; lock_.exchange(true, std::memory_order_acquire); ++spin) {
    if (spin < 1000) {
      sched_yield();
      continue;
    }
    if (monotonic_ns() >= deadline) return false;
    struct timespec pause = {0, 200'000};
    nanosleep(&pause, nullptr);
  }
  return true;
}

void Sequencer::set_async_available(bool available) {
  async_available_ = available;
  update_sync();
}

void Sequencer::update_sync() {
  bool listener = listener_->wants_sync();
  if (listener != listener_sync_.load(std::memory_order_relaxed))
    listener_sync_.store(listener, std::memory_order_relaxed);
  bool want = !async_available_ || listener;
  if (want != sync_.load(std::memory_order_relaxed)) sync_.store(want, std::memory_order_relaxed);
}

void Sequencer::process(const TrackEvent& e, bool behind) {
  switch (e.kind) {
    case kEventAlloc: {
      uint64_t seq = stats_.allocations++;
      if (e.log_index != kNoLogIndex) {
        log_->at(e.log_index)->birth_seq = seq;
        seq_map_.set(seq, e.log_index);
      }
      const int64_t live_before = stats_.live_bytes;
      stats_.live_bytes += e.bytes;
      if (stats_.live_bytes > 0 && static_cast<uint64_t>(stats_.live_bytes) > stats_.peak_live_bytes)
        stats_.peak_live_bytes = static_cast<uint64_t>(stats_.live_bytes);
      const sentinel_object* o = e.log_index != kNoLogIndex ? log_->at(e.log_index) : nullptr;
      listener_->on_allocation(seq, e.site, static_cast<uint64_t>(e.bytes), e.ticks, e.log_index, o ? o->address : 0,
                               e.tier, o && o->kind == SENTINEL_KIND_CUDA_HOST, behind, live_before);
      break;
    }
    case kEventFree:
      if (e.log_index != kNoLogIndex) {
        sentinel_object* o = log_->at(e.log_index);
        if (o->birth_seq == UINT64_MAX && deferred_count_ < kDeferred) {
          // Its allocation sits in a ring not read yet: sequence the free after it.
          deferred_[deferred_count_++] = e;
          ++stats_.deferred_frees;
          return;
        }
        o->death_seq = stats_.allocations;
        listener_->on_free(e.log_index, e.tier);
      }
      ++stats_.frees;
      stats_.live_bytes += e.bytes;
      break;
    case kEventResize:
      stats_.live_bytes += e.bytes;
      if (stats_.live_bytes > 0 && static_cast<uint64_t>(stats_.live_bytes) > stats_.peak_live_bytes)
        stats_.peak_live_bytes = static_cast<uint64_t>(stats_.live_bytes);
      break;
    case kEventMark:
      ++stats_.marks;
      marks_->add(stats_.allocations, e.ticks);
      listener_->on_mark(stats_.allocations, e.ticks);
      break;
    default:
      break;
  }
}

void Sequencer::retry_deferred() {
  uint32_t n = deferred_count_;
  deferred_count_ = 0;
  for (uint32_t i = 0; i < n; ++i) {
    TrackEvent e = deferred_[i];
    const sentinel_object* o = log_->at(e.log_index);
    if (o->birth_seq == UINT64_MAX) {
      deferred_[deferred_count_++] = e;  // still not sequenced: keep waiting
      continue;
    }
    process(e);
  }
}

void Sequencer::process_direct(const TrackEvent& e) {
  process(e);
  update_sync();
}

namespace {
// Whether the thread published events after the one at `pos` (read now, not at the drain's start).
bool behind(const ThreadState* s, uint64_t pos) {
  return pos + 1 < s->head.load(std::memory_order_acquire);
}
}  // namespace

uint64_t Sequencer::drain() {
  struct Cursor {
    ThreadState* s;
    uint64_t pos, end;
  };
  constexpr uint32_t kBatch = 64;
  uint64_t done = 0;
  const uint32_t hw = states_->high_water();
  for (uint32_t first = 0; first < hw; first += kBatch) {
    Cursor cur[kBatch];
    uint32_t n = 0;
    for (uint32_t i = first; i < hw && i < first + kBatch; ++i) {
      ThreadState* s = states_->at(i);
      uint32_t status = s->status.load(std::memory_order_acquire);
      if (status == ThreadState::kFree) continue;
      uint64_t end = s->head.load(std::memory_order_acquire);
      uint64_t pos = s->tail.load(std::memory_order_relaxed);
      if (pos != end)
        cur[n++] = Cursor{s, pos, end};
      else if (status == ThreadState::kRetired)
        states_->recycle(s);
    }
    if (n == 1) {  // one thread allocating: no merge
      Cursor& c = cur[0];
      done += c.end - c.pos;
      for (; c.pos < c.end; ++c.pos) process(c.s->ring[c.pos & (ThreadState::kRingEvents - 1)], behind(c.s, c.pos));
    } else if (n > 1) {
      // k-way merge by time stamp; n is the number of threads with news, small in practice.
      for (;;) {
        int best = -1;
        uint64_t best_ticks = UINT64_MAX;
        for (uint32_t k = 0; k < n; ++k) {
          if (cur[k].pos == cur[k].end) continue;
          uint64_t t = cur[k].s->ring[cur[k].pos & (ThreadState::kRingEvents - 1)].ticks;
          if (best < 0 || t < best_ticks) best = static_cast<int>(k), best_ticks = t;
        }
        if (best < 0) break;
        Cursor& c = cur[best];
        process(c.s->ring[c.pos & (ThreadState::kRingEvents - 1)], behind(c.s, c.pos));
        ++c.pos;
        ++done;
      }
    }
    for (uint32_t k = 0; k < n; ++k) cur[k].s->tail.store(cur[k].end, std::memory_order_release);
  }
  if (deferred_count_) retry_deferred();
  ++stats_.drains;
  update_sync();
  return done;
}

void Sequencer::after_fork_child(ThreadState* self) {
  const uint32_t hw = states_->high_water();
  for (uint32_t i = 0; i < hw; ++i) {
    ThreadState* s = states_->at(i);
    if (s == self || s->status.load(std::memory_order_relaxed) != ThreadState::kActive) continue;
    arena_->flush(&s->cache);  // the thread does not exist here: its kept slots would be lost
    states_->retire(s);
  }
  set_async_available(false);
}

}  // namespace sentinel
