// A writer of Sentinel dumps for tests and fuzz seeds, into memory. It writes through the same record
// pieces as the runtime's dump writer (format/record_pieces.h: fixed-size entries through their table,
// format/dump_layout.h), so that a field is laid out in one place. What keeps the tests honest is not a
// second hand-typed layout but the checks on that table: format.h's structs must match it (static
// asserts), docs/format.md must show it (format-doc-tables), and the reader's tests compare decoded
// values with the values the tests put in. On top, the builder writes what the runtime never does:
// older minors' shorter entries, newer minors' longer ones (0xEE padding), any version in the header,
// and wrong checksums and END counts.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/crc32c.h"
#include "format/record_pieces.h"
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
  Bytes& str(const char* s, size_t n) {
    u32(static_cast<uint32_t>(n));
    return raw(s, n);
  }
  Bytes& str(const std::string& s) { return str(s.data(), s.size()); }
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

inline sentinel_object make_object(uint64_t address, uint64_t size, uint64_t birth_ns, uint64_t death_ns,
                                   uint64_t birth_seq, uint64_t death_seq, uint32_t site, uint32_t thread = 1000,
                                   uint32_t alignment = 64) {
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
    uint8_t h[sizeof(sentinel_file_header)];
    fmt::encode_file_header(h, major, minor, pointer_size);
    file_.raw(h, sizeof h);
  }

  // Appends a record; crc overrides the computed checksum (to test corruption).
  DumpBuilder& record(uint32_t type, const Bytes& payload, std::optional<uint32_t> crc = {}) {
    const auto& p = payload.data();
    uint8_t h[sizeof(sentinel_record_header)];
    fmt::encode_record_header(h, type, crc ? *crc : sentinel::crc32c(0, p.data(), p.size()), p.size());
    file_.raw(h, sizeof h);
    file_.raw(p.data(), p.size());
    ++records_;
    return *this;
  }

  DumpBuilder& process(uint32_t pid, uint32_t ppid, int32_t rank, uint64_t start_mono, uint64_t end_mono,
                       const std::string& exe, const std::vector<std::string>& argv, uint32_t flags = 0) {
    Bytes b;
    const uint64_t start_real = 1700000000000000000ull;
    fmt::put_process_head(
        b, {pid, ppid, rank, flags, start_real, start_real + (end_mono - start_mono), start_mono, end_mono});
    b.str(exe).u32(static_cast<uint32_t>(argv.size()));
    for (const auto& a : argv) b.str(a);
    return record(SENTINEL_REC_PROCESS, b);
  }

  DumpBuilder& config(const std::vector<std::string>& entries) {
    Bytes b;
    b.u32(static_cast<uint32_t>(entries.size()));
    for (const auto& e : entries) b.str(e);
    return record(SENTINEL_REC_CONFIG, b);
  }

  DumpBuilder& topology(int32_t numa_available, int32_t numa_balancing, const std::vector<TestNode>& nodes,
                        int32_t fast, int32_t slow) {
    Bytes b;
    fmt::put_topology_head(b, numa_available, numa_balancing, static_cast<uint32_t>(nodes.size()));
    for (const auto& n : nodes) fmt::put_topology_node(b, n.id, n.cpu_count, n.total_bytes, n.free_bytes, n.flags);
    fmt::put_topology_tail(b, fast, slow);
    return record(SENTINEL_REC_TOPOLOGY, b);
  }

  DumpBuilder& module(uint64_t load_bias, const std::vector<TestSegment>& segs, const std::string& build_id,
                      const std::string& path) {
    Bytes b;
    fmt::put_module_head(b, load_bias, static_cast<uint32_t>(segs.size()));
    for (const auto& s : segs) fmt::put_module_segment(b, s.vaddr, s.memsz, s.p_flags);
    fmt::put_module_tail(b, build_id.data(), build_id.size(), path.data(), path.size());
    return record(SENTINEL_REC_MODULE, b);
  }

  DumpBuilder& sites(const std::vector<TestSite>& sites) {
    Bytes b;
    b.u32(static_cast<uint32_t>(sites.size()));
    for (const auto& s : sites) fmt::put_site(b, s.id, s.hash, s.frames.data(), static_cast<uint32_t>(s.frames.size()));
    return record(SENTINEL_REC_SITES, b);
  }

  // entry_size > 64 pads each entry with 0xEE bytes (a "newer minor" writer).
  DumpBuilder& objects(const std::vector<sentinel_object>& objs, uint32_t entry_size = 64) {
    return entries(SENTINEL_REC_OBJECTS, objs, entry_size);
  }

  DumpBuilder& stats(const std::vector<std::pair<std::string, uint64_t>>& stats) {
    Bytes b;
    b.u32(static_cast<uint32_t>(stats.size()));
    for (const auto& [k, v] : stats) fmt::put_stat(b, k.data(), k.size(), v);
    return record(SENTINEL_REC_STATS, b);
  }

  DumpBuilder& marks(const std::vector<std::pair<uint64_t, uint64_t>>& marks) {
    Bytes b;
    b.u32(static_cast<uint32_t>(marks.size()));
    for (const auto& [seq, ns] : marks) fmt::put_mark(b, seq, ns);
    return record(SENTINEL_REC_MARKS, b);
  }

  // ---- 1.1 records. entry_size larger than the 1.1 size pads each entry with 0xEE bytes. ----

  DumpBuilder& steps(const std::vector<sentinel_step_entry>& steps, uint32_t entry_size = 32) {
    return entries(SENTINEL_REC_STEPS, steps, entry_size);
  }

  DumpBuilder& intervals(uint32_t phase, uint32_t period, const std::vector<std::pair<uint32_t, uint32_t>>& bounds) {
    Bytes b;
    fmt::put_intervals_head(b, phase, period, static_cast<uint32_t>(bounds.size()));
    for (const auto& [first, end] : bounds) fmt::put_interval(b, first, end);
    return record(SENTINEL_REC_INTERVALS, b);
  }

  DumpBuilder& profile(uint32_t granularity, uint32_t profiled_steps, uint32_t phase, uint64_t first_profiled_step,
                       uint64_t faults, uint64_t fault_handler_ns, uint64_t syscall_unprotects,
                       const std::vector<std::string>& counter_names = {}) {
    Bytes b;
    fmt::put_profile_head(b, {granularity, profiled_steps, phase, static_cast<uint32_t>(counter_names.size()),
                              first_profiled_step, faults, fault_handler_ns, syscall_unprotects});
    for (const auto& n : counter_names) b.str(n);
    return record(SENTINEL_REC_PROFILE, b);
  }

  // entry_size 56 is the 1.1 entry; with with_12 (and entry_size >= 64) the 1.2 fields occurrence
  // and flags follow, else the bytes past 56 are 0xEE padding.
  DumpBuilder& identities(const std::vector<sentinel_identity>& ids, uint32_t entry_size = 56, bool with_12 = false) {
    const uint32_t written = with_12 && entry_size >= 64 ? 64 : fmt::min_size<sentinel_identity>();
    return entries(SENTINEL_REC_IDENTITIES, ids, entry_size, written);
  }

  DumpBuilder& touches(const std::vector<sentinel_touch>& touches, uint32_t entry_size = sizeof(sentinel_touch)) {
    return entries(SENTINEL_REC_TOUCHES, touches, entry_size);
  }

  // entry_size 32 is the 1.1 entry; with with_12 (and entry_size >= 40) the 1.2 phase follows.
  DumpBuilder& groups(const std::vector<sentinel_group>& groups, uint32_t entry_size = 32, bool with_12 = false) {
    const uint32_t written = with_12 && entry_size >= 40 ? 40 : fmt::min_size<sentinel_group>();
    return entries(SENTINEL_REC_GROUPS, groups, entry_size, written);
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
    padded_entry(b, t, entry_size);
    return record(SENTINEL_REC_TIERING, b);
  }

  // PLAN: u32 header_size, the header, u32 count, u32 entry_size, entries.
  // `trial` (1.3) appends the interval-duration trailer (empty) and the step-time trial.
  DumpBuilder& plan(const sentinel_plan_header& h, const std::vector<sentinel_plan_entry>& entries,
                    uint32_t header_size = sizeof(sentinel_plan_header),
                    uint32_t entry_size = sizeof(sentinel_plan_entry), const sentinel_plan_trial* trial = nullptr) {
    Bytes b;
    b.u32(header_size);
    // A header_size below sizeof(h): an older writer's header (72 bytes before 1.4's step costs).
    padded_entry(b, h, header_size, header_size < sizeof h ? header_size : uint32_t{sizeof h});
    entries_payload(b, entries, entry_size);
    if (trial) {
      fmt::put_plan_durations(b, static_cast<const uint64_t*>(nullptr), 0);
      fmt::put_sized_entry(b, *trial);
    }
    return record(SENTINEL_REC_PLAN, b);
  }

  DumpBuilder& migrations(const std::vector<sentinel_migration_entry>& v, uint32_t entry_size = 64) {
    return entries(SENTINEL_REC_MIGRATIONS, v, entry_size);
  }

  DumpBuilder& migration_log(const std::vector<sentinel_migration_batch>& v, uint32_t entry_size = 48) {
    return entries(SENTINEL_REC_MIGRATION_LOG, v, entry_size);
  }

  // entry_size 32 writes the entry without the boundary verification (verified is then read as 0).
  DumpBuilder& placement(const std::vector<sentinel_placement_entry>& v, uint32_t entry_size = 40) {
    const uint32_t written = entry_size >= 40 ? 40 : fmt::min_size<sentinel_placement_entry>();
    return entries(SENTINEL_REC_PLACEMENT, v, entry_size, written);
  }

  DumpBuilder& detection(const std::vector<sentinel_detection>& v, uint32_t entry_size = 64) {
    return entries(SENTINEL_REC_DETECTION, v, entry_size);
  }

  DumpBuilder& crash(const std::vector<sentinel_crash>& v, uint32_t entry_size = 32) {
    return entries(SENTINEL_REC_CRASH, v, entry_size);
  }

  // The END record; `count` overrides the number of records before it.
  DumpBuilder& end(std::optional<uint64_t> count = {}) {
    Bytes b;
    fmt::put_end(b, count ? *count : records_);
    return record(SENTINEL_REC_END, b);
  }

  const std::vector<uint8_t>& bytes() const { return file_.data(); }
  size_t size() const { return file_.size(); }
  uint64_t records() const { return records_; }

 private:
  static void counters_payload(Bytes& b, uint32_t counter_count, const std::vector<CounterEntry>& entries) {
    fmt::put_counters_head(b, static_cast<uint32_t>(entries.size()), counter_count);
    for (const auto& e : entries) {
      std::vector<uint64_t> values(counter_count);
      for (uint32_t k = 0; k < counter_count && k < e.values.size(); ++k) values[k] = e.values[k];
      fmt::put_counter_sample(b, e.step, e.interval, e.duration_ns, values.data(), counter_count);
    }
  }

  // An array record: count, entry_size, then each entry's first `written` bytes (the whole entry, or an
  // older minor's prefix) padded with 0xEE to entry_size (a newer minor's unknown fields). A
  // `written` larger than entry_size writes more bytes than the entry size says (a malformed file).
  template <typename T>
  // written: the bytes of each entry's struct put (0: as many as entry_size holds, at most the struct);
  // the rest of entry_size is padding.
  DumpBuilder& entries(uint32_t type, const std::vector<T>& v, uint32_t entry_size, uint32_t written = 0) {
    Bytes b;
    entries_payload(b, v, entry_size, written);
    return record(type, b);
  }
  template <typename T>
  static void entries_payload(Bytes& b, const std::vector<T>& v, uint32_t entry_size, uint32_t written = 0) {
    if (!written) written = entry_size < sizeof(T) ? entry_size : uint32_t{sizeof(T)};
    fmt::put_array_head(b, static_cast<uint32_t>(v.size()), entry_size);
    for (const T& e : v) padded_entry(b, e, entry_size, written);
  }
  template <typename T>
  static void padded_entry(Bytes& b, const T& e, uint32_t entry_size, uint32_t written = sizeof(T)) {
    fmt::put_entry(b, e, written);
    for (uint32_t i = written; i < entry_size; ++i) b.u8(0xEE);
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
  d.process(4242, 1, 0, 1000000000ull, 3500000000ull, "/usr/bin/python3.11", {"python3", "-c", "print(\"hi\")"});
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
