#include "tier/migrator.h"

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/clock.h"
#include "base/guard.h"
#include "base/log.h"
#include "base/numa_ops.h"
#include "base/thread.h"
#include "base/vm_region.h"
#include "tier/promotion_order.h"
#include "tier/step_costs.h"
#include "track/arena.h"

namespace sentinel {

namespace {

constexpr uint64_t kIdleBoundary = ~uint64_t{0};
constexpr size_t kPage = 4096;
constexpr size_t kProbeBytes = size_t{4} << 20;

}  // namespace

bool Migrator::start(Arena* arena, int fast_node, int slow_node, MoveMethod method) {
  arena_ = arena;
  node_[kTierFast] = fast_node;
  node_[kTierSlow] = slow_node;
  method_ = method == MoveMethod::mbind ? MoveMethod::mbind : MoveMethod::move_pages;
  pages_ = static_cast<uintptr_t*>(vm_map_lazy(kBatchPages * sizeof(uintptr_t)));
  status_ = static_cast<int*>(vm_map_lazy(kBatchPages * sizeof(int)));
  nodes_ = static_cast<int*>(vm_map_lazy(kBatchPages * sizeof(int)));
  log_ = static_cast<sentinel_migration_batch*>(vm_map_lazy(kBatchLog * sizeof(sentinel_migration_batch)));
  if (!pages_ || !status_ || !nodes_ || !log_) return false;
  probe_method_ = method;
  running_.store(true, std::memory_order_release);
  int rc = start_quiet_thread(&thread_, &Migrator::main, this, 256 * 1024, "sentinel-mig");
  if (rc != 0) {
    running_.store(false, std::memory_order_release);
    errno = rc;
    return false;
  }
  joinable_ = true;
  return true;
}

void* Migrator::main(void* self) {
  t_guard = 1;  // nothing this thread allocates is tracked
  auto* m = static_cast<Migrator*>(self);
  m->probe(m->probe_method_);
  if (m->calibrate_costs_) m->calibrate_costs();
  m->loop();
  return nullptr;
}

// Times both ways of moving on a probe buffer, slow and back, and keeps the faster (unless the
// configuration names one). The bandwidth is what the planner's cost model is fed.
MoveMethod probe_choice(uint64_t move_pages_ns, uint64_t mbind_ns) {
  // move_pages only where it is 25% faster or mbind failed.
  if (!mbind_ns) return MoveMethod::move_pages;
  return move_pages_ns && move_pages_ns * 5 < mbind_ns * 4 ? MoveMethod::move_pages : MoveMethod::mbind;
}

void Migrator::probe(MoveMethod wanted) {
  void* buf = mmap(nullptr, kProbeBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED) {
    probed_.store(true, std::memory_order_release);
    return;
  }
  memset(buf, 1, kProbeBytes);
  auto a = reinterpret_cast<uintptr_t>(buf);
  auto timed = [&](MoveMethod m, int node) -> uint64_t {
    uint64_t t0 = monotonic_ns();
    numa::MoveResult r = m == MoveMethod::mbind
                             ? numa::mbind_move_range(a, kProbeBytes, node)
                             : numa::move_range(a, kProbeBytes, node, pages_, status_, nodes_, kBatchPages);
    uint64_t t = monotonic_ns() - t0;
    // A page or two of a freshly written buffer may be busy (still in a per-CPU LRU batch): the probe
    // measures the kernel's speed, not that.
    return r.error || r.pages_moved * 10 < (kProbeBytes / kPage) * 9 ? 0 : (t ? t : 1);
  };
  // Fault injection must not decide the method: the probe measures the kernel.
  FaultInjection saved = numa::fault_injection();
  numa::set_fault_injection(FaultInjection{}, node_[kTierFast]);
  uint64_t mp = timed(MoveMethod::move_pages, node_[kTierSlow]);
  if (mp) mp += timed(MoveMethod::move_pages, node_[kTierFast]);
  uint64_t mb = timed(MoveMethod::mbind, node_[kTierSlow]);
  if (mb) mb += timed(MoveMethod::mbind, node_[kTierFast]);
  numa::set_fault_injection(saved, node_[kTierFast]);
  munmap(buf, kProbeBytes);
  if (wanted == MoveMethod::automatic) method_ = probe_choice(mp, mb);
  uint64_t t = method_ == MoveMethod::mbind ? mb : mp;
  if (t) bandwidth_.store(2 * kProbeBytes * 1000000000ull / t, std::memory_order_release);
  probe_ns_[0] = mp;
  probe_ns_[1] = mb;
  LineBuf b;
  b.str("migrator: 4 MiB round trip ").u64(mp / 1000).str(" us with move_pages, ").u64(mb / 1000);
  b.str(" us with mbind; using ").str(move_method_name(method_));
  log_line(LogLevel::info, b);
  probed_.store(true, std::memory_order_release);
}

// SENTINEL_STEP_COSTS=auto, after the probe (whose bandwidth gives the migrator's time per byte moved).
// What a move costs the training thread cannot be measured here: training_move_ns_per_kib() prices it
// from the two (all of the migrator's time where they share one CPU), and the step-time trial times a
// plan that moves before it is kept.
void Migrator::calibrate_costs() {
  const char* why = "the migrator's probe measured no move bandwidth";
  uint32_t slow = 0;
  const uint32_t move = move_ns_per_kib_of(bandwidth());
  if (move && measure_slow_ns_per_kib(node_[kTierFast], node_[kTierSlow], &slow, &why)) {
    slow_ns_per_kib_ = slow;
    move_ns_per_kib_ = move;
    costs_measured_.store(true, std::memory_order_release);
    LineBuf b;
    b.str("SENTINEL_STEP_COSTS=auto: measured ").u64(slow).str(" ns per KiB read on node ").i64(node_[kTierSlow]);
    b.str(" over node ").i64(node_[kTierFast]).str(", ").u64(move).str(" ns per KiB moved by the migrator");
    const uint32_t cpus = start_cpu_count();
    const uint32_t priced = training_move_ns_per_kib(move, slow, cpus);
    if (priced < move)
      b.str("; a move is priced at ")
          .u64(priced)
          .str(" ns per KiB for the training thread (")
          .u64(cpus)
          .str(" CPUs: the migrator copies on another)");
    log_line(LogLevel::info, b);
    return;
  }
  LineBuf b;
  b.str("SENTINEL_STEP_COSTS=auto: cannot measure the step costs (").str(why);
  b.str("); plans keep the objective of fast-hit bytes");
  log_line(LogLevel::warn, b);
}

bool Migrator::measured_costs(uint32_t* slow_ns_per_kib, uint32_t* move_ns_per_kib) const {
  if (!costs_measured_.load(std::memory_order_acquire)) return false;
  *slow_ns_per_kib = slow_ns_per_kib_;
  *move_ns_per_kib = move_ns_per_kib_;
  return true;
}

void Migrator::set_plan(uint32_t slot, const ExecPlan* plan) {
  if (slot < kMaxPlans) {
    first_step_[slot] = UINT64_MAX;
    free_relabeled_[slot] = false;
    caught_up_[slot].store(false, std::memory_order_relaxed);
    plans_[slot].store(plan, std::memory_order_release);
  }
}

bool Migrator::caught_up(uint32_t slot) const {
  return slot < kMaxPlans && caught_up_[slot].load(std::memory_order_acquire);
}

void Migrator::post_boundary(uint32_t slot, uint64_t step, uint32_t interval) {
  if (!running_.load(std::memory_order_acquire)) return;
  position_.store((step << 8) | interval, std::memory_order_release);
  boundary_.store((uint64_t{slot} << 56) | (uint64_t{interval} << 48) | (step & ((uint64_t{1} << 48) - 1)),
                  std::memory_order_release);
  wake_.fetch_add(1, std::memory_order_acq_rel);
  futex_wake(&wake_);
}

void Migrator::post_idle() {
  if (!running_.load(std::memory_order_acquire)) return;
  boundary_.store(kIdleBoundary, std::memory_order_release);
  wake_.fetch_add(1, std::memory_order_acq_rel);
}

void Migrator::forget() {
  running_.store(false, std::memory_order_release);
  joinable_ = false;
}

void Migrator::stop_and_join() {
  stop_.store(true, std::memory_order_release);
  if (!joinable_) return;
  wake_.fetch_add(1, std::memory_order_acq_rel);
  futex_wake(&wake_);
  pthread_join(thread_, nullptr);
  joinable_ = false;
}

void Migrator::add_fast_bytes(int64_t delta) {
  note_fast_peak(fast_bytes_.fetch_add(delta, std::memory_order_seq_cst) + delta);
}

void Migrator::note_fast_peak(int64_t now) {
  uint64_t peak = fast_peak_.load(std::memory_order_relaxed);
  while (now > 0 && static_cast<uint64_t>(now) > peak &&
         !fast_peak_.compare_exchange_weak(peak, static_cast<uint64_t>(now), std::memory_order_relaxed)) {
  }
}

// Counted first, then checked against the budget with the births' reservations, which Tiering::birth_tier
// takes the same way (reservation, then check): of a promotion and a birth racing for the last room, at
// least one sees the other, so both cannot pass. Checked first and counted after, both could (the likely
// cause, not reproduced, of a CI run whose schedule-move-pages left the fast tier 1.6 MB past its budget).
bool Migrator::reserve_fast(uint64_t bytes, uint64_t budget) {
  const int64_t held =
      fast_bytes_.fetch_add(static_cast<int64_t>(bytes), std::memory_order_seq_cst) + static_cast<int64_t>(bytes);
  if (budget != UINT64_MAX) {
    const int64_t pending = pending_ ? pending_->load(std::memory_order_seq_cst) : 0;
    const uint64_t in_use =
        static_cast<uint64_t>(held > 0 ? held : 0) + static_cast<uint64_t>(pending > 0 ? pending : 0);
    if (in_use > budget) {
      fast_bytes_.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_seq_cst);
      return false;
    }
  }
  note_fast_peak(held);  // once the room is kept: a refused try is no occupancy
  return true;
}

uint64_t Migrator::fast_bytes() const {
  int64_t v = fast_bytes_.load(std::memory_order_seq_cst);  // after a reservation: see reserve_fast()
  return v > 0 ? static_cast<uint64_t>(v) : 0;
}

uint64_t Migrator::batches() const {
  return log_count_.load(std::memory_order_acquire);
}

void Migrator::log_batch(uint64_t start_ns, uint64_t end_ns, uint64_t bytes, uint32_t phase, uint32_t interval,
                         uint32_t objects, uint32_t flags, uint32_t failed) {
  uint64_t i = log_count_.load(std::memory_order_relaxed);
  sentinel_migration_batch& b = log_[i % kBatchLog];
  b = sentinel_migration_batch{start_ns, end_ns, bytes, phase, interval, objects, flags, failed, 0};
  log_count_.store(i + 1, std::memory_order_release);
}

bool Migrator::move(uintptr_t addr, uint64_t bytes, uint8_t to_tier, uint64_t* failed) {
  int node = node_[to_tier];
  auto once = [&] {
    return method_ == MoveMethod::mbind ? numa::mbind_move_range(addr, bytes, node)
                                        : numa::move_range(addr, bytes, node, pages_, status_, nodes_, kBatchPages);
  };
  numa::MoveResult r = once();
  // Pages the kernel would not move just then (busy: the training thread touching them while their
  // mapping changes) mostly move on a second call, which only moves what is not there yet; left behind,
  // a demoted object's pages would hold the fast node past the budget. Pages that never move (pinned)
  // cost one more call.
  if (r.error == 0 && r.pages_failed) r = once();
  if (method_ == MoveMethod::move_pages) settle_absent_pages(addr, bytes, node, &r);
  *failed = r.pages_failed;
  return r.error == 0 && r.pages_moved + r.pages_absent > r.pages_failed;
}

// After move_pages: pages not yet touched, and the slot's pages after a free, follow the range's policy
// from now on. Pages "absent" may also be present but protected: the profiler's PROT_NONE (a placement
// check of a moving schedule, a window's protection racing a pass) reads as ENOENT to move_pages where
// follow_page refuses PROT_NONE entries (Linux 6.2-6.4, and Debian 12's 6.1 since its stable updates took
// that change; seen in the guest), and those pages stay where they were while the move counts as done.
// mbind walks the page table and moves them too, and it sets the policy in the same call.
void Migrator::settle_absent_pages(uintptr_t addr, uint64_t bytes, int node, numa::MoveResult* r) {
  if (r->error == 0 && r->pages_absent) {
    const numa::MoveResult m = numa::mbind_move_range(addr, bytes, node);
    if (m.error == 0) {
      if (m.pages_failed > r->pages_failed) r->pages_failed = m.pages_failed;
      return;
    }
  }
  numa::prefer_node(reinterpret_cast<void*>(addr & ~(kPage - 1)),
                    ((addr + bytes + kPage - 1) & ~(kPage - 1)) - (addr & ~(kPage - 1)), node);
}

void Migrator::run_boundary(uint32_t slot, uint64_t step, uint32_t interval, uint64_t generation) {
  const ExecPlan* plan = slot < kMaxPlans ? plans_[slot].load(std::memory_order_acquire) : nullptr;
  if (!plan || interval >= plan->intervals || interval >= 64) return;
  MigrationStats& st = stats_[slot][interval];
  ++st.steps;
  if (first_step_[slot] == UINT64_MAX) first_step_[slot] = step;
  // The fast tier's occupancy during this interval: what the boundary's moves left (sampled at the end
  // of the pass, also when a newer boundary cut it short). Its maximum is the steady state's.
  struct Sample {
    Migrator* m;
    MigrationStats* st;
    ~Sample() {
      uint64_t occupancy = m->fast_bytes();
      st->fast_bytes_sum += occupancy;
      // The plan's first steps take over objects that were on the fast node before it (born while the
      // phase was profiled, placed by the fallback), and a pass cut short by the next boundary has not
      // done its demotions: the transition, not the steady state the budget bounds.
      if (steady && occupancy > st->fast_bytes_max) st->fast_bytes_max = occupancy;
      if (steady && occupancy > m->steady_peak_.load(std::memory_order_relaxed))
        m->steady_peak_.store(occupancy, std::memory_order_relaxed);
    }
    bool steady;
  } sample{this, &st, false};

  // The plan's first step: the objects it takes over are recorded where their pages are before its
  // passes, which then move those the kernel had put elsewhere.
  if (step == first_step_[slot]) {
    // Its first boundary also sets the records of the free slots kept with their pages: the plan's births
    // reuse them, and a birth the plan puts on the fast node must not get pages the kernel put elsewhere.
    if (!free_relabeled_[slot] && arena_) {
      free_relabeled_[slot] = true;
      relabeled_free_.fetch_add(arena_->relabel_free(&Migrator::resident_tier_of, this), std::memory_order_relaxed);
    }
    audit(*plan, interval);  // before this boundary's passes: they are the next
  }
  // Demotions first: they make the room the promotions need.
  for (uint8_t to : {kTierSlow, kTierFast}) {
    const uint64_t t0 = monotonic_ns();
    PassResult r;
    const bool whole = run_pass(*plan, step, interval, generation, to, &r);
    const uint64_t t1 = monotonic_ns();
    // What moved before a newer boundary cut the pass short moved all the same.
    if (r.objects || r.failed_pages) account(st, plan->phase, interval, to, t0, t1, r);
    if (!whole) return;
  }
  sample.steady = step > first_step_[slot] + 1;
  // A schedule switched meanwhile starts its own catching up.
  if (plans_[slot].load(std::memory_order_acquire) == plan) caught_up_[slot].store(true, std::memory_order_release);
  if (superseded(generation)) return;
  const uint32_t next = (interval + 1) % plan->intervals;  // after this boundary's passes: the next boundary's
  if (verify_.load(std::memory_order_acquire))
    audit(*plan, next, &verify_stats_[slot][interval], interval);
  else if (sample.steady && interval == step % plan->intervals)
    audit(*plan, next);  // one boundary a step, in turn: a record gone wrong lasts one round of the intervals at most
}

// One direction of a boundary's moves: the objects the interval wants on tier `to` and that are on the
// other one, promotions in promotion_rank's order (nearest use first). False when a newer boundary cut
// it short.
bool Migrator::run_pass(const ExecPlan& plan, uint64_t step, uint32_t interval, uint64_t generation, uint8_t to,
                        PassResult* r) {
  const uint32_t n = plan.intervals;
  for (uint32_t rank = 1; rank <= (to == kTierSlow ? 1u : n); ++rank) {
    const uint32_t d = to == kTierFast ? rank % n : 0;  // intervals to the use (0: this one, or none)
    for (uint32_t e = 0; e < plan.count; ++e) {
      const sentinel_plan_entry& pe = plan.entries[e];
      bool want_fast = (pe.fast_mask >> interval) & 1;
      if (want_fast != (to == kTierFast)) continue;
      if (to == kTierFast && promotion_rank(pe.touch_mask, interval, n) != rank) continue;
      uint64_t size = 0;
      const EntryMove m = move_entry(plan, pe, plan.states[e], to, generation, &size, &r->failed_pages);
      if (m == EntryMove::kSuperseded) return false;
      if (m == EntryMove::kNone) continue;
      r->bytes += size;
      ++r->objects;
      if (to == kTierFast) {
        uint64_t use_interval = (interval + d) % n;
        uint64_t use_pos = ((step + (interval + d >= n ? 1 : 0)) << 8) | use_interval;
        if (d == 0 || position() >= use_pos) ++r->late;
      }
    }
  }
  return true;
}

// Moves one entry's object to tier `to` when it lives on the other one: *size, the bytes moved.
Migrator::EntryMove Migrator::move_entry(const ExecPlan& plan, const sentinel_plan_entry& pe, EntryState& es,
                                         uint8_t to, uint64_t generation, uint64_t* size, uint64_t* failed_pages) {
  uint64_t word = es.state.load(std::memory_order_acquire);
  uintptr_t addr = es.address.load(std::memory_order_acquire);
  *size = es.size.load(std::memory_order_relaxed);
  uint8_t have = EntryState::tier_of(word);
  if (!addr || !*size || have == EntryState::kNone || have == to) return EntryMove::kNone;
  if (superseded(generation)) return EntryMove::kSuperseded;
  // A promotion takes its room before its pages move (a birth meanwhile must not count on it);
  // a demotion gives its room back only once its pages have left.
  if (to == kTierFast && !reserve_fast(*size, plan.budget)) {
    budget_deferred_.fetch_add(1, std::memory_order_relaxed);  // no room now: the next boundary tries again
    return EntryMove::kNone;
  }
  uint64_t failed = 0;
  bool ok = move(addr, *size, to, &failed);
  *failed_pages += failed;
  // The object may have died (and its slot been reused) while its pages moved: then its tier is
  // its successor's business.
  uint64_t moved = (word & ~uint64_t{0xFF}) | to;
  if (!ok || !es.state.compare_exchange_strong(word, moved, std::memory_order_acq_rel)) {
    if (ok) {
      raced_.fetch_add(1, std::memory_order_relaxed);
      // A chunk's slot keeps its label: it speaks for the whole object, and the other chunks did not move.
      if (!(pe.flags & SENTINEL_PLAN_CHUNK)) settle_raced_slot(addr, *size, to);
    }
    if (to == kTierFast) add_fast_bytes(-static_cast<int64_t>(*size));
    return EntryMove::kNone;
  }
  if (to == kTierSlow) add_fast_bytes(-static_cast<int64_t>(*size));
  label_slot(addr, *size, to);
  return EntryMove::kMoved;
}

void Migrator::account(MigrationStats& st, uint32_t phase, uint32_t interval, uint8_t to, uint64_t t0, uint64_t t1,
                       const PassResult& r) {
  if (to == kTierFast)
    st.bytes_to_fast += r.bytes;
  else
    st.bytes_to_slow += r.bytes;
  st.ns += t1 - t0;
  st.moves += r.objects;
  st.late += r.late;
  st.failed_pages += static_cast<uint32_t>(r.failed_pages);
  if (r.bytes) move_ns_.fetch_add(t1 - t0, std::memory_order_relaxed);  // before the bytes: a reader
  migrated_.fetch_add(r.bytes, std::memory_order_relaxed);              // between them sees less
  late_total_.fetch_add(r.late, std::memory_order_relaxed);
  failed_total_.fetch_add(r.failed_pages, std::memory_order_relaxed);
  log_batch(t0, t1, r.bytes, phase, interval, r.objects,
            (to == kTierFast ? SENTINEL_MIGRATE_TO_FAST : 0) | (r.late ? SENTINEL_MIGRATE_LATE : 0),
            static_cast<uint32_t>(r.failed_pages));
}

// Without this a free slot kept its old record while its pages sat on the other node, and the next
// birth for that tier reused it there: a born-fast activation of the guest's DLRM (2 MiB, demoted in
// the interval it dies in, dying as it moved) lived on the slow node every step after.
void Migrator::settle_raced_slot(uintptr_t addr, uint64_t bytes, uint8_t to) {
  Slot* s = locate_slot(addr);
  if (!s) return;
  if (!s->user.load(std::memory_order_acquire)) {
    s->tier.store(to, std::memory_order_relaxed);  // Arena::pop_tier passes it over to that tier's list
    return;
  }
  const uint8_t label = s->tier.load(std::memory_order_relaxed);
  if (label == to || label >= kTiers) return;
  uint64_t failed = 0;
  move(addr, bytes, label, &failed);
}

uint8_t Migrator::resident_tier(uintptr_t addr, uint64_t size, bool* split) {
  constexpr uint64_t kSample = 64;
  uintptr_t first = addr & ~(kPage - 1);
  uint64_t pages = (((addr + size + kPage - 1) & ~(kPage - 1)) - first) / kPage;
  uint64_t n = pages < kSample ? pages : kSample;
  for (uint64_t i = 0; i < n; ++i) pages_[i] = first + (n > 1 ? i * (pages - 1) / (n - 1) : 0) * kPage;
  if (numa::query_nodes(pages_, n, status_) != 0) return EntryState::kNone;
  uint64_t on_fast = 0, present = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (status_[i] < 0) continue;
    ++present;
    if (status_[i] == node_[kTierFast]) ++on_fast;
  }
  if (!present) return EntryState::kNone;
  const uint64_t minority = on_fast * 2 > present ? present - on_fast : on_fast;
  if (split) *split = present >= 2 && minority * 4 >= present;
  return on_fast * 2 > present ? kTierFast : kTierSlow;
}

bool Migrator::adopt_resident(EntryState& es, uint64_t word, uintptr_t addr, uint64_t size, uint8_t resident) {
  const uint8_t recorded = EntryState::tier_of(word);
  if (resident == EntryState::kNone || recorded == EntryState::kNone || recorded == resident || !addr) return false;
  // The same generation: an object born or dead meanwhile is the sequencer's business.
  if (!es.state.compare_exchange_strong(word, (word & ~uint64_t{0xFF}) | resident, std::memory_order_acq_rel))
    return false;
  add_fast_bytes(resident == kTierFast ? static_cast<int64_t>(size) : -static_cast<int64_t>(size));
  label_slot(addr, size, resident);
  relabeled_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// Every live object of the plan asked where it is (by where most of its present pages are; one with no
// page present yet is skipped) and recorded there (adopt_resident). With `count` (the verify), each is
// also counted for `interval`: misplaced when neither on the node the interval wants nor where Sentinel's
// record had it. One the record has there too was kept back knowingly (a promotion the budget deferred,
// pages that would not move: budget_deferred, failed_pages), not lost track of.
void Migrator::audit(const ExecPlan& plan, uint32_t next, VerifyStats* count, uint32_t interval) {
  for (uint32_t e = 0; e < plan.count; ++e) {
    EntryState& es = plan.states[e];
    const uint64_t word = es.state.load(std::memory_order_acquire);
    uintptr_t addr = es.address.load(std::memory_order_acquire);
    uint64_t size = es.size.load(std::memory_order_relaxed);
    if (!addr || !size) continue;
    bool split = false;
    const uint8_t resident = resident_tier(addr, size, &split);
    if (resident == EntryState::kNone) continue;
    const sentinel_plan_entry& pe = plan.entries[e];
    // Part of it on each node: a move done in part (one huge page of two migrated before the call
    // failed), which a later schedule wanting the old tier would never undo. By its majority (or a tie
    // read as slow) it could pass for placed: as seen from an interval, it is on the tier not wanted.
    auto seen_from = [&](uint32_t i) {
      const bool want_fast = (pe.fast_mask >> i) & 1;
      return split ? (want_fast ? kTierSlow : kTierFast) : resident;
    };
    if (count) {
      ++count->verified;
      const uint8_t seen = seen_from(interval);
      const bool want_fast = (pe.fast_mask >> interval) & 1;
      if ((seen == kTierFast) != want_fast && seen != EntryState::tier_of(word)) ++count->misplaced;
    }
    adopt_resident(es, word, addr, size, seen_from(next));
  }
}

void Migrator::label_slot(uintptr_t addr, uint64_t size, uint8_t tier) {
  Slot* s = locate_slot(addr);
  if (s && s->user.load(std::memory_order_acquire) == addr && s->size.load(std::memory_order_relaxed) == size)
    s->tier.store(tier, std::memory_order_relaxed);
}

Slot* Migrator::locate_slot(uintptr_t addr) const {
  unsigned cls;
  uint32_t index;
  return arena_ && arena_->owns(reinterpret_cast<void*>(addr))
             ? arena_->locate(reinterpret_cast<void*>(addr), &cls, &index)
             : nullptr;
}

void Migrator::loop() {
  uint32_t served = wake_.load(std::memory_order_acquire);
  while (!stop_.load(std::memory_order_acquire)) {
    uint32_t w = wake_.load(std::memory_order_acquire);
    if (w == served) {
      futex_wait(&wake_, w, 200'000'000);
      continue;
    }
    served = w;
    uint64_t b = boundary_.load(std::memory_order_acquire);
    if (b == kIdleBoundary) continue;
    run_boundary(static_cast<uint32_t>(b >> 56), b & ((uint64_t{1} << 48) - 1), static_cast<uint32_t>((b >> 48) & 0xFF),
                 w);
  }
  running_.store(false, std::memory_order_release);
}

}  // namespace sentinel
