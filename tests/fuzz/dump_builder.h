// A tiny byte-by-byte writer of Sentinel dumps for tests and fuzz seeds. It deliberately shares no
// code with the runtime's dump writer or the reader (only the numbers in format.h and the CRC), so
// that tests built on it check the reader against docs/format.md rather than against itself.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/crc32c.h"
#include "sentinel/format.h"

namespace sentinel::testing {

class Bytes {
 public:
  Bytes& u8(uint8_t v) {
    b_.push_back(v);
    return *this;
  }
  Bytes& u16(uint16_t v) {
    for (int i = 0; i < 2; ++i) b_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  Bytes& u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) b_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  Bytes& i32(int32_t v) { return u32(static_cast<uint32_t>(v)); }
  Bytes& u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) b_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  Bytes& raw(const void* p, size_t n) {
    const auto* c = static_cast<const uint8_t*>(p);
    b_.insert(b_.end(), c, c + n);
    return *this;
  }
  Bytes& str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    return raw(s.data(), s.size());
  }
  const std::vector<uint8_t>& data() const { return b_; }
  size_t size() const { return b_.size(); }

 private:
  std::vector<uint8_t> b_;
};

struct TestSite {
  uint32_t id;
  uint64_t hash;
  std::vector<uint64_t> frames;
};

struct TestSegment {
  uint64_t vaddr, memsz;
  uint32_t p_flags;
};

struct TestNode {
  int32_t id;
  uint32_t cpu_count;
  uint64_t total_bytes, free_bytes;
  uint32_t flags;
};

inline sentinel_object make_object(uint64_t address, uint64_t size, uint64_t birth_ns,
                                   uint64_t death_ns, uint64_t birth_seq, uint64_t death_seq,
                                   uint32_t site, uint32_t thread = 1000, uint32_t alignment = 64) {
  sentinel_object o{};
  o.address = address;
  o.size = size;
  o.birth_ns = birth_ns;
  o.death_ns = death_ns;
  o.birth_seq = birth_seq;
  o.death_seq = death_seq;
  o.site = site;
  o.thread = thread;
  o.alignment = alignment;
  o.kind = SENTINEL_KIND_HEAP;
  o.flags = 0;
  return o;
}

class DumpBuilder {
 public:
  explicit DumpBuilder(uint16_t major = SENTINEL_FORMAT_MAJOR, uint16_t minor = SENTINEL_FORMAT_MINOR,
                       uint8_t pointer_size = 8) {
    file_.raw(SENTINEL_DUMP_MAGIC, 8).u16(major).u16(minor).u8(pointer_size).u8(1).u16(0).u64(0);
  }

  // Appends a record; crc overrides the computed checksum (to test corruption).
  DumpBuilder& record(uint32_t type, const Bytes& payload, std::optional<uint32_t> crc = {}) {
    const auto& p = payload.data();
    file_.u32(type).u32(crc ? *crc : sentinel::crc32c(0, p.data(), p.size())).u64(p.size());
    file_.raw(p.data(), p.size());
    ++records_;
    return *this;
  }

  DumpBuilder& process(uint32_t pid, uint32_t ppid, int32_t rank, uint64_t start_mono,
                       uint64_t end_mono, const std::string& exe,
                       const std::vector<std::string>& argv, uint32_t flags = 0) {
    Bytes b;
    b.u32(pid).u32(ppid).i32(rank).u32(flags);
    b.u64(1700000000000000000ull).u64(1700000000000000000ull + (end_mono - start_mono));
    b.u64(start_mono).u64(end_mono).str(exe).u32(static_cast<uint32_t>(argv.size()));
    for (const auto& a : argv) b.str(a);
    return record(SENTINEL_REC_PROCESS, b);
  }

  DumpBuilder& config(const std::vector<std::string>& entries) {
    Bytes b;
    b.u32(static_cast<uint32_t>(entries.size()));
    for (const auto& e : entries) b.str(e);
    return record(SENTINEL_REC_CONFIG, b);
  }

  DumpBuilder& topology(int32_t numa_available, int32_t numa_balancing,
                        const std::vector<TestNode>& nodes, int32_t fast, int32_t slow) {
    Bytes b;
    b.i32(numa_available).i32(numa_balancing).u32(static_cast<uint32_t>(nodes.size()));
    for (const auto& n : nodes)
      b.i32(n.id).u32(n.cpu_count).u64(n.total_bytes).u64(n.free_bytes).u32(n.flags).u32(0);
    b.i32(fast).i32(slow);
    return record(SENTINEL_REC_TOPOLOGY, b);
  }

  DumpBuilder& module(uint64_t load_bias, const std::vector<TestSegment>& segs,
                      const std::string& build_id, const std::string& path) {
    Bytes b;
    b.u64(load_bias).u32(static_cast<uint32_t>(segs.size()));
    for (const auto& s : segs) b.u64(s.vaddr).u64(s.memsz).u32(s.p_flags).u32(0);
    b.str(build_id).str(path);
    return record(SENTINEL_REC_MODULE, b);
  }

  DumpBuilder& sites(const std::vector<TestSite>& sites) {
    Bytes b;
    b.u32(static_cast<uint32_t>(sites.size()));
    for (const auto& s : sites) {
      b.u32(s.id).u32(static_cast<uint32_t>(s.frames.size())).u64(s.hash);
      for (uint64_t f : s.frames) b.u64(f);
    }
    return record(SENTINEL_REC_SITES, b);
  }

  // entry_size > 64 pads each entry with 0xEE bytes (a "newer minor" writer).
  DumpBuilder& objects(const std::vector<sentinel_object>& objs, uint32_t entry_size = 64) {
    Bytes b;
    b.u32(static_cast<uint32_t>(objs.size())).u32(entry_size);
    for (const auto& o : objs) {
      b.u64(o.address).u64(o.size).u64(o.birth_ns).u64(o.death_ns).u64(o.birth_seq);
      b.u64(o.death_seq).u32(o.site).u32(o.thread).u32(o.alignment).u16(o.kind).u16(o.flags);
      for (uint32_t i = 64; i < entry_size; ++i) b.u8(0xEE);
    }
    return record(SENTINEL_REC_OBJECTS, b);
  }

  DumpBuilder& stats(const std::vector<std::pair<std::string, uint64_t>>& stats) {
    Bytes b;
    b.u32(static_cast<uint32_t>(stats.size()));
    for (const auto& [k, v] : stats) b.str(k).u64(v);
    return record(SENTINEL_REC_STATS, b);
  }

  DumpBuilder& marks(const std::vector<std::pair<uint64_t, uint64_t>>& marks) {
    Bytes b;
    b.u32(static_cast<uint32_t>(marks.size()));
    for (const auto& [seq, ns] : marks) b.u64(seq).u64(ns);
    return record(SENTINEL_REC_MARKS, b);
  }

  // ---- 1.1 records. entry_size larger than the 1.1 size pads each entry with 0xEE bytes. ----

  DumpBuilder& steps(const std::vector<sentinel_step_entry>& steps, uint32_t entry_size = 32) {
    Bytes b;
    b.u32(static_cast<uint32_t>(steps.size())).u32(entry_size);
    for (const auto& s : steps) {
      b.u64(s.start_seq).u64(s.start_ns).u32(s.allocations).u32(s.phase).u32(s.flags).u32(s.reserved);
      pad(b, 32, entry_size);
    }
    return record(SENTINEL_REC_STEPS, b);
  }

  DumpBuilder& intervals(uint32_t phase, uint32_t period,
                         const std::vector<std::pair<uint32_t, uint32_t>>& bounds) {
    Bytes b;
    b.u32(phase).u32(period).u32(static_cast<uint32_t>(bounds.size()));
    for (const auto& [first, end] : bounds) b.u32(first).u32(end);
    return record(SENTINEL_REC_INTERVALS, b);
  }

  DumpBuilder& profile(uint32_t granularity, uint32_t profiled_steps, uint32_t phase,
                       uint64_t first_profiled_step, uint64_t faults, uint64_t fault_handler_ns,
                       uint64_t syscall_unprotects, const std::vector<std::string>& counter_names = {}) {
    Bytes b;
    b.u32(granularity).u32(profiled_steps).u32(phase).u32(static_cast<uint32_t>(counter_names.size()));
    b.u64(first_profiled_step).u64(faults).u64(fault_handler_ns).u64(syscall_unprotects);
    for (const auto& n : counter_names) b.str(n);
    return record(SENTINEL_REC_PROFILE, b);
  }

  // entry_size 56 is the 1.1 entry; with with_12 (and entry_size >= 64) the 1.2 fields occurrence
  // and flags follow, else the bytes past 56 are 0xEE padding.
  DumpBuilder& identities(const std::vector<sentinel_identity>& ids, uint32_t entry_size = 56,
                          bool with_12 = false) {
    Bytes b;
    b.u32(static_cast<uint32_t>(ids.size())).u32(entry_size);
    for (const auto& d : ids) {
      b.u32(d.id).u32(d.site).u64(d.size).u32(d.ordinal).u32(d.phase).u32(d.group);
      b.u32(d.birth_interval).u32(d.death_interval).u8(d.lifetime).u8(0).u8(0).u8(0);
      b.u64(d.touched_bytes).u32(d.instances).u32(0);
      if (with_12 && entry_size >= 64) {
        b.u32(d.occurrence).u32(d.flags);
        pad(b, 64, entry_size);
      } else {
        pad(b, 56, entry_size);
      }
    }
    return record(SENTINEL_REC_IDENTITIES, b);
  }

  DumpBuilder& touches(const std::vector<sentinel_touch>& touches, uint32_t entry_size = 24) {
    Bytes b;
    b.u32(static_cast<uint32_t>(touches.size())).u32(entry_size);
    for (const auto& t : touches) {
      b.u32(t.identity).u32(t.interval).u64(t.bytes).u32(t.faults).u32(t.step);
      pad(b, 24, entry_size);
    }
    return record(SENTINEL_REC_TOUCHES, b);
  }

  // entry_size 32 is the 1.1 entry; with with_12 (and entry_size >= 40) the 1.2 phase follows.
  DumpBuilder& groups(const std::vector<sentinel_group>& groups, uint32_t entry_size = 32,
                      bool with_12 = false) {
    Bytes b;
    b.u32(static_cast<uint32_t>(groups.size())).u32(entry_size);
    for (const auto& g : groups) {
      b.u32(g.id).u8(g.lifetime).u8(0).u8(0).u8(0).u32(g.members).u32(0).u64(g.bytes);
      b.u64(g.interval_mask);
      if (with_12 && entry_size >= 40) {
        b.u32(g.phase).u32(0);
        pad(b, 40, entry_size);
      } else {
        pad(b, 32, entry_size);
      }
    }
    return record(SENTINEL_REC_GROUPS, b);
  }

  struct CounterEntry {
    uint32_t step, interval;
    uint64_t duration_ns;
    std::vector<uint64_t> values;  // exactly counter_count of them
  };
  DumpBuilder& counters(uint32_t counter_count, const std::vector<CounterEntry>& entries) {
    Bytes b;
    counters_payload(b, counter_count, entries);
    return record(SENTINEL_REC_COUNTERS, b);
  }

  // ---- 1.2 records (docs/format.md). entry_size larger than the known size pads with 0xEE. ----

  // PHASE_COUNTERS: u32 phase, then the COUNTERS payload.
  DumpBuilder& phase_counters(uint32_t phase, uint32_t counter_count, const std::vector<CounterEntry>& entries) {
    Bytes b;
    b.u32(phase);
    counters_payload(b, counter_count, entries);
    return record(SENTINEL_REC_PHASE_COUNTERS, b);
  }

  DumpBuilder& tiering(const sentinel_tiering& t, uint32_t entry_size = 128) {
    Bytes b;
    b.u32(entry_size);
    b.u32(t.policy).i32(t.fast_node).i32(t.slow_node).u32(t.flags).u64(t.fast_budget_bytes);
    b.u32(t.budget_share_ppm).u32(t.move_method).u64(t.migrate_bytes_per_s);
    b.u64(t.fallback_objects).u64(t.fallback_bytes).u64(t.pinned_objects).u64(t.pinned_bytes);
    b.u64(t.fast_peak_bytes).u64(t.migrated_bytes).u64(t.late_migrations).u64(t.failed_pages);
    b.u64(t.raced_frees).u64(t.placed_at_birth_fast).u64(t.placed_at_birth_slow);
    pad(b, 128, entry_size);
    return record(SENTINEL_REC_TIERING, b);
  }

  // PLAN: u32 header_size, the header, u32 count, u32 entry_size, entries.
  // `trial` (1.3) appends the interval-duration trailer (empty) and the step-time trial.
  DumpBuilder& plan(const sentinel_plan_header& h, const std::vector<sentinel_plan_entry>& entries,
                    uint32_t header_size = 72, uint32_t entry_size = 24, const sentinel_plan_trial* trial = nullptr) {
    Bytes b;
    b.u32(header_size);
    b.u32(h.phase).u32(h.policy).u32(h.intervals).u32(h.lead_intervals).u64(h.fast_budget_bytes);
    b.u64(h.footprint_peak_bytes).u64(h.fast_peak_bytes).u64(h.fast_pool_bytes);
    b.u64(h.moved_bytes_per_step).u32(h.predicted_hit_ppm).u32(h.flags).u64(h.migrate_bytes_per_s);
    pad(b, 72, header_size);
    b.u32(static_cast<uint32_t>(entries.size())).u32(entry_size);
    for (const auto& e : entries) {
      b.u32(e.identity).u32(e.flags).u64(e.fast_mask).u64(e.touch_mask);
      pad(b, 24, entry_size);
    }
    if (trial) {
      b.u32(0).u32(48);
      b.u32(trial->state).u32(trial->steps_per_candidate).u64(trial->moving_step_ns).u64(trial->fixed_step_ns);
      b.u64(trial->moving_moved_bytes).u32(trial->moving_hit_ppm).u32(trial->fixed_hit_ppm);
      b.u32(trial->moving_steps).u32(trial->fixed_steps);
    }
    return record(SENTINEL_REC_PLAN, b);
  }

  DumpBuilder& migrations(const std::vector<sentinel_migration_entry>& v, uint32_t entry_size = 64) {
    Bytes b;
    b.u32(static_cast<uint32_t>(v.size())).u32(entry_size);
    for (const auto& m : v) {
      b.u32(m.phase).u32(m.interval).u64(m.bytes_to_fast).u64(m.bytes_to_slow).u64(m.migrate_ns);
      b.u32(m.moves).u32(m.late).u32(m.failed_pages).u32(m.steps).u64(m.fast_bytes_max).u64(m.fast_bytes_sum);
      pad(b, 64, entry_size);
    }
    return record(SENTINEL_REC_MIGRATIONS, b);
  }

  DumpBuilder& migration_log(const std::vector<sentinel_migration_batch>& v, uint32_t entry_size = 48) {
    Bytes b;
    b.u32(static_cast<uint32_t>(v.size())).u32(entry_size);
    for (const auto& m : v) {
      b.u64(m.start_ns).u64(m.end_ns).u64(m.bytes).u32(m.phase).u32(m.interval).u32(m.objects);
      b.u32(m.flags).u32(m.failed_pages).u32(m.reserved);
      pad(b, 48, entry_size);
    }
    return record(SENTINEL_REC_MIGRATION_LOG, b);
  }

  // entry_size 32 writes the entry without the boundary verification (verified is then read as 0).
  DumpBuilder& placement(const std::vector<sentinel_placement_entry>& v, uint32_t entry_size = 40) {
    Bytes b;
    b.u32(static_cast<uint32_t>(v.size())).u32(entry_size);
    for (const auto& e : v) {
      b.u32(e.phase).u32(e.interval).u64(e.touched_bytes).u64(e.fast_bytes).u32(e.steps).u32(e.misplaced);
      if (entry_size >= 40) b.u32(e.verified).u32(e.reserved);
      pad(b, entry_size >= 40 ? 40 : 32, entry_size);
    }
    return record(SENTINEL_REC_PLACEMENT, b);
  }

  DumpBuilder& detection(const std::vector<sentinel_detection>& v, uint32_t entry_size = 64) {
    Bytes b;
    b.u32(static_cast<uint32_t>(v.size())).u32(entry_size);
    for (const auto& d : v) {
      b.u32(d.phase).u32(d.flags).u32(d.period).u32(d.distinct_tokens).u64(d.steps);
      b.u64(d.noise_allocations).u64(d.missing_allocations).u64(d.locks).u64(d.unlocks).u64(d.retracted);
      pad(b, 64, entry_size);
    }
    return record(SENTINEL_REC_DETECTION, b);
  }

  // The END record; `count` overrides the number of records before it.
  DumpBuilder& end(std::optional<uint64_t> count = {}) {
    Bytes b;
    b.u64(count ? *count : records_);
    return record(SENTINEL_REC_END, b);
  }

  const std::vector<uint8_t>& bytes() const { return file_.data(); }
  size_t size() const { return file_.size(); }
  uint64_t records() const { return records_; }

 private:
  static void counters_payload(Bytes& b, uint32_t counter_count, const std::vector<CounterEntry>& entries) {
    b.u32(static_cast<uint32_t>(entries.size())).u32(counter_count);
    for (const auto& e : entries) {
      b.u32(e.step).u32(e.interval).u64(e.duration_ns);
      for (uint32_t k = 0; k < counter_count; ++k) b.u64(k < e.values.size() ? e.values[k] : 0);
    }
  }
  static void pad(Bytes& b, uint32_t known, uint32_t entry_size) {
    for (uint32_t i = known; i < entry_size; ++i) b.u8(0xEE);
  }
  Bytes file_;
  uint64_t records_ = 0;
};

// A small but complete dump: every record type, two module records (one duplicate), sites split
// over two records, objects over two batches, two marks.
//   objects: 6, sizes 4096, 65536, 1048576, 8192, 131072, 4096 (sum 1261568)
//   marks at seq 1 and 4 -> allocations per marked step [3, 2]
inline std::vector<uint8_t> sample_dump() {
  DumpBuilder d(1, 0);  // a 1.0 dump: none of the profiler's records
  d.process(4242, 1, 0, 1000000000ull, 3500000000ull, "/usr/bin/python3.11",
            {"python3", "-c", "print(\"hi\")"});
  d.config({"SENTINEL_MODE=track", "SENTINEL_MIN_BYTES=4096", "SENTINEL_DUMP=sentinel-%e.%p.prof"});
  d.topology(0, 1, {{0, 2, 4ull << 30, 1ull << 30, 0}, {1, 0, 8ull << 30, 8ull << 30, 3}}, 0, 1);
  d.module(0x555555554000ull, {{0, 0x2000, 5}, {0x3000, 0x1000, 6}}, "\x01\x02\x03\x04", "");
  d.module(0x7f0000000000ull, {{0, 0x10000, 5}}, "", "/lib/x86_64-linux-gnu/libc.so.6");
  d.module(0x7f0000000000ull, {{0, 0x10000, 5}}, "", "/lib/x86_64-linux-gnu/libc.so.6");
  d.sites({{1, 0x1111, {0x555555554100ull, 0x7f0000000200ull}}});
  d.sites({{2, 0x2222, {0x7f0000000300ull}}, {3, 0x3333, {}}});
  const uint64_t alive = UINT64_MAX;
  d.objects({make_object(0x10000, 4096, 1001000000, 1001500000, 0, 2, 1),
             make_object(0x20000, 65536, 1002000000, 0, 1, alive, 2),
             make_object(0x40000, 1048576, 1003000000, 1200000000, 2, 5, 1)});
  d.objects({make_object(0x80000, 8192, 1004000000, 1004005000, 3, 4, 3),
             make_object(0x90000, 131072, 1005000000, 3400000000, 4, 6, 2),
             make_object(0xA0000, 4096, 1006000000, 0, 5, alive, UINT32_MAX)});
  d.stats({{"tracked_allocations", 6}, {"tracked_frees", 4}, {"overhead_bytes", 12288}});
  d.marks({{1, 1001800000}, {4, 1004500000}});
  d.end();
  return d.bytes();
}

}  // namespace sentinel::testing
