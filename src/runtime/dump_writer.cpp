#include "runtime/dump_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>  // rename
#include <cstring>

#include "base/clock.h"
#include "base/crc32c.h"
#include "base/log.h"
#include "base/signal_names.h"
#include "base/vm_region.h"
#include "format/record_pieces.h"
#include "profile/signal_stack.h"
#include "runtime/exit_signals.h"

namespace sentinel {

namespace {

constexpr size_t kBufferBytes = 1u << 20;
constexpr size_t kScratchBytes = 256u << 10;

bool write_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Builds one record at a time in a fixed buffer, then writes header and payload. The sink of the
// format's record pieces (format/record_pieces.h).
class RecordWriter {
 public:
  RecordWriter(int fd, uint8_t* buf, size_t cap) : fd_(fd), buf_(buf), cap_(cap) {}
  void begin(uint32_t type) {
    type_ = type;
    len_ = 0;
  }
  size_t room() const { return cap_ - len_; }
  void raw(const void* p, size_t n) {
    if (n > room()) {
      overflow_ = true;
      return;
    }
    memcpy(buf_ + len_, p, n);
    len_ += n;
  }
  void u32(uint32_t v) { le(v, 4); }
  void i32(int32_t v) { le(static_cast<uint32_t>(v), 4); }
  void u64(uint64_t v) { le(v, 8); }
  void str(const char* s, size_t n) {
    u32(static_cast<uint32_t>(n));
    raw(s, n);
  }
  void str(const char* s) { str(s, strlen(s)); }
  // Overwrites a u32 written earlier (counts known only at the end).
  void patch_u32(size_t at, uint32_t v) { fmt::store_le(buf_ + at, v, 4); }
  size_t length() const { return len_; }
  bool end() {
    if (overflow_ || !ok_) return ok_ = false;
    uint8_t h[sizeof(sentinel_record_header)];
    fmt::encode_record_header(h, type_, crc32c(0, buf_, len_), len_);
    ok_ = write_all(fd_, h, sizeof(h)) && write_all(fd_, buf_, len_);
    ++records_;
    return ok_;
  }
  bool ok() const { return ok_ && !overflow_; }
  uint64_t records() const { return records_; }

 private:
  void le(uint64_t v, uint32_t width) {
    uint8_t b[8];
    fmt::store_le(b, v, width);
    raw(b, width);
  }
  int fd_;
  uint8_t* buf_;
  size_t cap_;
  size_t len_ = 0;
  uint32_t type_ = 0;
  bool overflow_ = false;
  bool ok_ = true;
  uint64_t records_ = 0;
};

size_t read_file(const char* path, char* buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t n = 0;
  while (n < cap) {
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += static_cast<size_t>(r);
  }
  close(fd);
  return n;
}

void write_process(RecordWriter& w, const RuntimeState& s, int pid, DumpKind kind, char* scratch) {
  w.begin(SENTINEL_REC_PROCESS);
  uint32_t flags = pid != s.owner_pid ? SENTINEL_PROCESS_FORKED_CHILD : 0;
  if (kind == DumpKind::snapshot) {
    flags |= SENTINEL_PROCESS_SNAPSHOT;
  } else if (s.end_signal) {
    flags |= SENTINEL_PROCESS_ENDED_BY_SIGNAL | (static_cast<uint32_t>(s.end_signal & 0xff) << 8);
  }
  fmt::put_process_head(w, {static_cast<uint32_t>(pid), static_cast<uint32_t>(getppid()), s.launch.rank, flags,
                            s.start_real_ns, realtime_ns(), s.start_mono_ns, monotonic_ns()});
  ssize_t n = readlink("/proc/self/exe", scratch, kScratchBytes - 1);
  w.str(scratch, n > 0 ? static_cast<size_t>(n) : 0);
  size_t len = read_file("/proc/self/cmdline", scratch, kScratchBytes);
  size_t argc_at = w.length();
  w.u32(0);
  uint32_t argc = 0;
  for (size_t i = 0; i < len;) {
    size_t e = i;
    while (e < len && scratch[e]) ++e;
    w.str(scratch + i, e - i);
    ++argc;
    i = e + 1;
  }
  w.patch_u32(argc_at, argc);
  w.end();
}

void write_config(RecordWriter& w, const RuntimeState& s) {
  size_t count;
  config_table(&count);
  w.begin(SENTINEL_REC_CONFIG);
  w.u32(static_cast<uint32_t>(count));
  char entry[1200];
  for (size_t i = 0; i < count; ++i) w.str(entry, format_config_entry(s.config, i, entry, sizeof(entry)));
  w.end();
}

void write_topology(RecordWriter& w, const Topology& t) {
  w.begin(SENTINEL_REC_TOPOLOGY);
  fmt::put_topology_head(w, t.numa_available ? 0 : -1, t.numa_balancing, t.node_count);
  for (uint32_t i = 0; i < t.node_count; ++i) {
    const NodeInfo& n = t.nodes[i];
    fmt::put_topology_node(w, n.id, n.cpu_count, n.total_bytes, n.free_bytes, n.flags);
  }
  fmt::put_topology_tail(w, t.fast_node, t.slow_node);
  w.end();
}

void write_modules(RecordWriter& w, const ModuleTable& mods) {
  for (uint32_t i = 0; i < mods.count(); ++i) {
    const Module& m = mods.at(i);
    w.begin(SENTINEL_REC_MODULE);
    fmt::put_module_head(w, m.load_bias, m.segment_count);
    for (uint32_t k = 0; k < m.segment_count; ++k)
      fmt::put_module_segment(w, m.segments[k].vaddr, m.segments[k].memsz, m.segments[k].flags);
    fmt::put_module_tail(w, reinterpret_cast<const char*>(m.build_id), m.build_id_len, mods.path(m), m.path_len);
    w.end();
  }
}

void write_sites(RecordWriter& w, const SiteTable& sites) {
  uint32_t total = sites.count();
  for (uint32_t id = 0; id < total;) {
    w.begin(SENTINEL_REC_SITES);
    w.u32(0);
    uint32_t n = 0;
    for (; id < total && w.room() >= fmt::kMaxSiteBytes; ++id) {
      const Site* s = sites.by_id(id);
      if (!s) continue;
      fmt::put_site(w, id, s->hash.load(std::memory_order_relaxed), s->frames, s->nframes);
      ++n;
    }
    w.patch_u32(0, n);
    w.end();
  }
}

// Entry arrays (OBJECTS and the 1.1 records): count, entry size, entries; split across records as needed.
template <typename T, typename Convert>
void write_entries(RecordWriter& w, uint32_t type, const T* items, uint64_t n, Convert convert) {
  for (uint64_t i = 0; i < n || i == 0;) {
    w.begin(type);
    fmt::put_array_head(w, 0, sizeof(T));
    uint32_t count = 0;
    for (; i < n && w.room() >= sizeof(T); ++i, ++count) {
      T item = items[i];
      convert(item);
      fmt::put_entry(w, item);
    }
    w.patch_u32(0, count);
    w.end();
    if (n == 0) break;
  }
}

// In allocation-clock order: threads fill the log in chunks of their own, so log order is not birth
// order; the sequencer's map gives each seq its entry.
void write_objects(RecordWriter& w, const RuntimeState& s) {
  const SeqMap& map = s.sequencer.seq_map();
  uint64_t n = s.sequencer.allocations();
  if (n > map.capacity()) n = map.capacity();
  uint64_t seq = 0;
  auto next_logged = [&]() -> const sentinel_object* {
    for (; seq < n; ++seq) {
      uint32_t li = map.at(seq);
      if (li != kNoLogIndex) return s.log.at(li);
    }
    return nullptr;
  };
  while (seq < n) {
    w.begin(SENTINEL_REC_OBJECTS);
    fmt::put_array_head(w, 0, sizeof(sentinel_object));
    uint32_t count = 0;
    for (const sentinel_object* p; w.room() >= sizeof(sentinel_object) && (p = next_logged()); ++seq, ++count) {
      sentinel_object o = *p;
      o.birth_ns = s.clock.to_ns(o.birth_ns);
      o.death_ns = s.clock.to_ns(o.death_ns);
      fmt::put_entry(w, o);
    }
    w.patch_u32(0, count);
    w.end();
  }
}

void write_marks(RecordWriter& w, const MarkLog& marks, const TickClock& clock) {
  uint64_t total = marks.size();
  for (uint64_t i = 0; i < total;) {
    w.begin(SENTINEL_REC_MARKS);
    w.u32(0);
    uint32_t n = 0;
    for (; i < total && w.room() >= fmt::kMarkBytes; ++i, ++n)
      fmt::put_mark(w, marks.at(i).seq, clock.to_ns(marks.at(i).ns));
    w.patch_u32(0, n);
    w.end();
  }
}

void write_steps(RecordWriter& w, const RuntimeState& s) {
  const StepLog& steps = s.stepper.steps();
  if (!steps.size()) return;
  write_entries(w, SENTINEL_REC_STEPS, &steps.at(0), steps.size(), [&](sentinel_step_entry& e) {
    e.start_ns = e.start_ns ? s.clock.to_ns(e.start_ns) : 0;
    e.flags &= ~StepLog::kClosed;
  });
}

// Index into STEPS of the first profiled step of a phase (what PROFILE's first_profiled_step names).
uint64_t first_profiled_step(const StepLog& steps, uint16_t phase) {
  for (uint64_t i = 0; i < steps.size(); ++i)
    if (steps.at(i).phase == phase && (steps.at(i).flags & SENTINEL_STEP_PROFILED)) return i;
  return 0;
}

void write_intervals(RecordWriter& w, const PhaseRecord& p) {
  w.begin(SENTINEL_REC_INTERVALS);
  fmt::put_intervals_head(w, p.id, p.period, p.intervals);
  for (uint32_t k = 0; k < p.intervals; ++k) fmt::put_interval(w, k ? p.interval_ends[k - 1] : 0, p.interval_ends[k]);
  w.end();
}

void write_phase_profile(RecordWriter& w, const RuntimeState& s, const PhaseRecord& p) {
  const Stepper& st = s.stepper;
  w.begin(SENTINEL_REC_PROFILE);
  fmt::put_profile_head(
      w, {s.profiler.granularity(), p.profiled_steps, p.id, st.counter_count(), first_profiled_step(st.steps(), p.id),
          p.faults, s.clock.ticks_to_duration_ns(p.fault_ticks), p.syscall_unprotects});
  for (uint32_t k = 0; k < st.counter_count(); ++k) w.str(st.counter_name(k));
  w.end();

  const Classification& c = p.classification;
  auto same = [](auto&) {};
  write_entries(w, SENTINEL_REC_IDENTITIES, c.identities, c.identity_count, same);
  write_entries(w, SENTINEL_REC_TOUCHES, c.touches, c.touch_count, same);
  write_entries(w, SENTINEL_REC_GROUPS, c.groups, c.group_count, same);

  uint32_t n = st.counter_count();
  uint64_t total = uint64_t{p.profiled_steps} * p.intervals;
  for (uint64_t i = 0; i < total || i == 0;) {
    w.begin(SENTINEL_REC_PHASE_COUNTERS);
    w.u32(p.id);
    size_t count_at = w.length();
    fmt::put_counters_head(w, 0, n);
    uint32_t count = 0;
    for (; i < total && w.room() >= fmt::sample_bytes(n); ++i, ++count) {
      uint32_t step = static_cast<uint32_t>(i / p.intervals), interval = static_cast<uint32_t>(i % p.intervals);
      const IntervalSample& smp = p.samples[step * kMaxIntervals + interval];
      fmt::put_counter_sample(w, step, interval, s.clock.ticks_to_duration_ns(smp.ticks), smp.counters, n);
    }
    w.patch_u32(count_at, count);
    w.end();
    if (total == 0) break;
  }
}

// The crash that ended the process (fatal_report.h), where one was taken at an instruction.
void write_crash(RecordWriter& w, const RuntimeState& s) {
  if (s.crashed) write_entries(w, SENTINEL_REC_CRASH, &s.crash, 1, [](auto&) {});
}

void write_detection(RecordWriter& w, const RuntimeState& s) {
  const StepDetector& d = s.stepper.detector();
  sentinel_detection rows[Stepper::kMaxPhases + 1];
  uint32_t n = 0;
  auto add = [&](uint16_t phase) {
    PhaseStats ps{};
    if (!d.phase_stats(phase, &ps)) return;
    const PhaseRecord* rec = phase ? s.stepper.find_phase(phase) : nullptr;
    if (rec && rec->profile == PhaseRecord::kSetUp) ps.flags |= SENTINEL_DETECT_SET_UP;
    sentinel_detection& r = rows[n++];
    r = sentinel_detection{phase,    ps.flags,   ps.period, ps.distinct_tokens, ps.steps,
                           ps.noise, ps.missing, ps.locks,  ps.unlocks,         ps.retracted};
  };
  add(0);
  for (uint32_t i = 0; i < s.stepper.phase_count(); ++i)
    if (!s.stepper.phase(i).voided) add(s.stepper.phase(i).id);
  write_entries(w, SENTINEL_REC_DETECTION, rows, n, [](auto&) {});
}

void write_phases(RecordWriter& w, const RuntimeState& s) {
  const Stepper& st = s.stepper;
  for (uint32_t i = 0; i < st.phase_count(); ++i) {
    const PhaseRecord& p = st.phase(i);
    if (p.voided || !p.period) continue;
    write_intervals(w, p);
    if (p.profile == PhaseRecord::kDone && p.classification.identities) write_phase_profile(w, s, p);
  }
  write_detection(w, s);
}

void write_tiering(RecordWriter& w, const RuntimeState& s) {
  const Tiering& t = s.tiering;
  if (!t.enabled()) return;
  sentinel_tiering rec = t.record();
  if (s.topology.numa_balancing > 0) rec.flags |= SENTINEL_TIER_BALANCING_ON;
  w.begin(SENTINEL_REC_TIERING);
  fmt::put_sized_entry(w, rec);
  w.end();
  for (uint32_t slot = 0; slot < t.plan_count(); ++slot) {
    if (t.retired(slot)) continue;  // an absorbed phase's (Tiering::retire)
    const Plan& plan = t.plan(slot);
    w.begin(SENTINEL_REC_PLAN);
    fmt::put_sized_entry(w, plan.header);
    size_t count_at = w.length();
    fmt::put_array_head(w, 0, sizeof(sentinel_plan_entry));
    uint32_t count = 0;
    for (; count < plan.entry_count && w.room() >= sizeof(sentinel_plan_entry); ++count)
      fmt::put_entry(w, plan.entries[count]);
    if (count < plan.entry_count)
      log_line(LogLevel::warn, "a plan has more entries than one dump record holds; it is cut");
    w.patch_u32(count_at, count);
    // The planner's clock, so that the offline recomputation gets exactly the runtime's inputs.
    const uint64_t* ns = t.plan_interval_ns(slot);
    fmt::put_plan_durations(w, ns, ns ? plan.header.intervals : 0);
    fmt::put_sized_entry(w, t.plan_trial(slot));
    w.end();
  }
  // What the migrator did, per (phase, interval) with steps under a plan.
  const Migrator& m = t.migrator();
  sentinel_migration_entry rows[64];
  for (uint32_t slot = 0; slot < t.plan_count(); ++slot) {
    if (t.retired(slot)) continue;
    uint32_t n = 0;
    for (uint32_t i = 0; i < t.plan(slot).header.intervals && i < 64; ++i) {
      const MigrationStats& ms = m.stats(slot, i);
      if (!ms.steps) continue;
      rows[n++] = sentinel_migration_entry{
          t.plan_phase(slot), i,        ms.bytes_to_fast,  ms.bytes_to_slow, ms.ns, ms.moves, ms.late,
          ms.failed_pages,    ms.steps, ms.fast_bytes_max, ms.fast_bytes_sum};
    }
    if (n) write_entries(w, SENTINEL_REC_MIGRATIONS, rows, n, [](auto&) {});
  }
  uint64_t batches = m.batches();
  uint64_t first = batches > Migrator::kBatchLog ? batches - Migrator::kBatchLog : 0;
  for (uint64_t i = first; i < batches;) {
    w.begin(SENTINEL_REC_MIGRATION_LOG);
    fmt::put_array_head(w, 0, sizeof(sentinel_migration_batch));
    uint32_t count = 0;
    for (; i < batches && w.room() >= sizeof(sentinel_migration_batch); ++i, ++count)
      fmt::put_entry(w, m.batch(i));  // monotonic already
    w.patch_u32(0, count);
    w.end();
  }
  // The placement check.
  sentinel_placement_entry prow[64];
  for (uint32_t i = 0; i < s.stepper.phase_count(); ++i) {
    const PhaseRecord& p = s.stepper.phase(i);
    if (p.check != PhaseRecord::kDone) continue;
    int32_t slot = t.slot_for_phase(p.id);
    uint32_t n = 0;
    for (uint32_t k = 0; k < p.intervals; ++k) {
      Migrator::VerifyStats v =
          slot >= 0 && k < 64 ? m.verify_stats(static_cast<uint32_t>(slot), k) : Migrator::VerifyStats{};
      prow[n++] = sentinel_placement_entry{
          p.id, k, p.check_touched[k], p.check_fast[k], p.checked_steps, v.misplaced, v.verified, 0};
    }
    write_entries(w, SENTINEL_REC_PLACEMENT, prow, n, [](auto&) {});
  }
}

// write_ticks: the time spent writing this dump's records before STATS (all but STATS and END).
void write_stats(RecordWriter& w, const RuntimeState& s, uint64_t write_ticks) {
  const Counters& c = s.counters;
  const SequencerStats& q = s.sequencer.stats();
  uint64_t unwinds = s.site_cache.unwinds();
  struct Named {
    const char* name;
    uint64_t value;
  } stats[] = {
      {"tracked_allocations", q.allocations},
      {"tracked_frees", q.frees},
      {"live_bytes", q.live_bytes > 0 ? static_cast<uint64_t>(q.live_bytes) : 0},
      {"peak_live_bytes", q.peak_live_bytes},
      {"overhead_bytes", overhead_bytes(s)},
      {"fallback_too_large", c.fallback_too_large.load()},
      {"fallback_class_full", c.fallback_class_full.load()},
      {"invalid_frees", c.invalid_frees.load()},
      {"realloc_in_place", c.realloc_in_place.load()},
      {"realloc_moved", c.realloc_moved.load()},
      {"cuda_host_allocations", c.cuda_host_allocations.load()},
      {"cuda_host_frees", c.cuda_host_frees.load()},
      {"steps_marked", c.steps_marked.load()},
      {"retained_bytes", s.arena.retained_bytes()},
      {"madvise_dontneed", s.arena.madvised()},
      {"slot_reuses", s.arena.reused()},
      {"objects_not_logged", s.log.dropped()},
      {"sites_table_full", s.sites.full_misses()},
      {"min_bytes", s.config.min_bytes},
      {"unwind_method", static_cast<uint64_t>(s.unwinder.method())},
      {"site_cache_hits", q.allocations > unwinds ? q.allocations - unwinds : 0},
      {"site_unwinds", s.site_cache.unwinds()},
      {"site_cache_unverifiable", s.site_cache.unverifiable()},
      {"clock_tsc", s.clock.uses_tsc() ? 1u : 0u},
      {"profile_faults", s.profiler.faults()},
      {"profile_touches_dropped", s.profiler.dropped()},
      {"profile_protect_calls", s.profiler.protect_calls()},
      {"profile_syscall_unprotects", s.profiler.syscall_unprotects()},
      {"profile_mprotect_failures", s.profiler.mprotect_failures()},
      {"signal_stacks_given", sig::stack_stats().given},
      {"signal_stacks_kept", sig::stack_stats().kept},
      {"signal_stack_failures", sig::stack_stats().failures},
      {"sequencer_drains", q.drains},
      {"sequencer_sync_drains", q.sync_drains},
      {"sequencer_full_rings", q.full_rings},
      {"sequencer_deferred_frees", q.deferred_frees},
      {"drain_thread_wakeups", c.drain_wakeups},
      {"drain_thread_dormant_wakes", c.drain_dormant_wakes},
      {"threads_without_state", c.threads_without_state.load()},
      {"threads_seen", s.threads.high_water()},
      {"pinned_misplaced", c.pinned_misplaced.load()},
      {"arena_binding_failures", s.arena.binding_failures()},
      {"interleaved_fast_bytes", s.arena.interleaved_bytes(kTierFast)},
      {"interleaved_slow_bytes", s.arena.interleaved_bytes(kTierSlow)},
      {"profile_windows_voided", s.stepper.voided_windows()},
      {"profile_windows_deferred", s.stepper.windows_deferred()},
      {"migrator_probe_move_pages_ns", s.tiering.migrator().probe_ns(0)},
      {"tier_births_guarded", s.tiering.budget_guarded()},
      {"tier_promotions_deferred", s.tiering.migrator().budget_deferred()},
      {"tier_relabeled", s.tiering.migrator().relabeled()},
      {"tier_relabeled_free_slots", s.tiering.migrator().relabeled_free()},
      {"migrator_probe_mbind_ns", s.tiering.migrator().probe_ns(1)},
      {"numa_calls_denied", s.tiering.denied_calls()},  // numa::DeniedCall bits
      {"profile_sweep_faults", s.profiler.sweep_faults()},
      {"profile_passes", s.profiler.rearms()},
      {"profile_pass_ns", s.clock.ticks_to_duration_ns(s.profiler.rearm_ticks())},
      {"profile_pass_faults", s.profiler.pass_faults()},
      {"profile_pass_slowdowns", s.profiler.pass_slowdowns()},
      {"profile_protect_ns", s.clock.ticks_to_duration_ns(s.profiler.protect_ticks())},
      {"profile_release_ns", s.clock.ticks_to_duration_ns(s.profiler.release_ticks())},
      {"classify_ns", s.clock.ticks_to_duration_ns(s.stepper.classify_ticks())},
      {"plan_ns", s.clock.ticks_to_duration_ns(s.stepper.plan_ticks())},
      {"dump_write_ns", s.clock.ticks_to_duration_ns(write_ticks)},
      {"profiles_absorbed", s.stepper.absorbed_profiles()},
  };
  w.begin(SENTINEL_REC_STATS);
  w.u32(sizeof(stats) / sizeof(stats[0]));
  for (const Named& n : stats) fmt::put_stat(w, n.name, strlen(n.name), n.value);
  w.end();
}

}  // namespace

bool write_dump_to_fd(const RuntimeState& s, int pid, int fd, DumpKind kind) {
  uint64_t t0 = now_ticks();
  auto* mem = static_cast<uint8_t*>(vm_map_lazy(kBufferBytes + kScratchBytes));
  if (!mem) return false;
  uint8_t fh[sizeof(sentinel_file_header)];
  fmt::encode_file_header(fh, SENTINEL_FORMAT_MAJOR, SENTINEL_FORMAT_MINOR, sizeof(void*));
  bool ok = write_all(fd, fh, sizeof(fh));
  RecordWriter w(fd, mem, kBufferBytes);
  if (ok) {
    write_process(w, s, pid, kind, reinterpret_cast<char*>(mem + kBufferBytes));
    write_config(w, s);
    write_topology(w, s.topology);
    write_modules(w, s.modules);
    write_sites(w, s.sites);
    write_objects(w, s);
    write_marks(w, s.marks, s.clock);
    write_steps(w, s);
    write_phases(w, s);
    write_tiering(w, s);
    write_crash(w, s);
    write_stats(w, s, now_ticks() - t0);
    uint64_t before = w.records();
    w.begin(SENTINEL_REC_END);
    fmt::put_end(w, before);
    w.end();
    ok = w.ok();
  }
  vm_unmap(mem, kBufferBytes + kScratchBytes);
  return ok;
}

namespace {
// The dump's path with `suffix` appended; false where SENTINEL_DUMP is none (ENOENT) or too long.
bool suffixed_dump_path(const RuntimeState& s, int pid, const char* suffix, char* out, size_t cap, int* error) {
  if (!*s.config.dump) return *error = ENOENT, false;
  if (!expand_dump_path(s.config.dump, pid, s.exe_name, s.launch.rank, out, cap - 16))
    return *error = ENAMETOOLONG, false;
  strncat(out, suffix, cap - strlen(out) - 1);
  return true;
}

// A snapshot into a file created for it (never one that exists: *created false), removed again where
// the write fails. 0, or the errno value of what failed.
int write_snapshot_file(const RuntimeState& s, int pid, const char* path, bool* created) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  *created = fd >= 0;
  if (fd < 0) return errno;
  const bool ok = write_dump_to_fd(s, pid, fd, DumpKind::snapshot);
  int error = ok ? 0 : (errno ? errno : EIO);
  if (close(fd) != 0 && !error) error = errno;
  if (error) unlink(path);
  return error;
}

constexpr const char kLatestSuffix[] = ".latest";
constexpr const char kLatestTmpSuffix[] = ".latest.tmp";
}  // namespace

int write_snapshot(const RuntimeState& s, int pid, const char* path, uint32_t number, LogLevel written) {
  char own[1100];
  if (!path || !*path) {
    LineBuf suffix;
    suffix.str(".snap").u64(number);
    int error = 0;
    if (!suffixed_dump_path(s, pid, suffix.c_str(), own, sizeof(own), &error)) return error;
    path = own;
  }
  bool created = false;
  const int error = write_snapshot_file(s, pid, path, &created);
  if (error && !created) return error;  // the caller says why (sentinel_dump()'s errno, the signal's line)
  LineBuf b;
  if (error) {
    b.str("writing the snapshot ").str(path).str(" failed: ").str(strerror(error)).str("; removed");
    log_line(LogLevel::error, b);
    return error;
  }
  b.str("snapshot written to ").str(path);
  log_line(written, b);
  return 0;
}

int write_latest_snapshot(const RuntimeState& s, int pid) {
  char path[1100], tmp[1100];
  int error = 0;
  if (!suffixed_dump_path(s, pid, kLatestSuffix, path, sizeof(path), &error) ||
      !suffixed_dump_path(s, pid, kLatestTmpSuffix, tmp, sizeof(tmp), &error))
    return error;
  unlink(tmp);  // one a write of this process left when it failed
  bool created = false;
  if ((error = write_snapshot_file(s, pid, tmp, &created))) return error;
  if (rename(tmp, path) != 0) {
    error = errno;
    unlink(tmp);
    return error;
  }
  LineBuf b;
  b.str("snapshot written to ").str(path);
  log_line(LogLevel::info, b);
  return 0;
}

void remove_latest_snapshot(const RuntimeState& s, int pid) {
  char path[1100];
  int error = 0;
  if (suffixed_dump_path(s, pid, kLatestSuffix, path, sizeof(path), &error)) unlink(path);
}

bool write_dump(const RuntimeState& s, int pid) {
  if (!*s.config.dump) return false;
  char path[1100];
  if (!expand_dump_path(s.config.dump, pid, s.exe_name, s.launch.rank, path, sizeof(path))) {
    log_line(LogLevel::error, "SENTINEL_DUMP: expanded path too long; no dump written");
    return false;
  }
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    LineBuf b;
    b.str("cannot create dump ").str(path).str(": ").str(strerror(errno));
    log_line(LogLevel::error, b);
    return false;
  }
  bool ok = write_dump_to_fd(s, pid, fd);
  ok = (close(fd) == 0) && ok;
  LineBuf b;
  if (!ok) {
    unlink(path);
    b.str("writing dump ").str(path).str(" failed: ").str(strerror(errno)).str("; removed");
    log_line(LogLevel::error, b);
    return false;
  }
  b.str("dump written to ").str(path);
  // After a crash's report (fatal_report.h), where the profile went is worth a line at the default level.
  if (exit_sig::is_crash_signal(s.end_signal)) {
    b.str(" before ").str(signal_name(s.end_signal)).str(" ends the process");
    log_line(LogLevel::warn, b);
  } else {
    log_line(LogLevel::info, b);
  }
  return true;
}

}  // namespace sentinel
