// Reader of Sentinel profile dumps. See format_reader.h and docs/format.md.
#include "format/format_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>
#include <system_error>
#include <unordered_map>

#include "base/crc32c.h"
#include "format/entry_codec.h"

namespace sentinel::fmt {

namespace {

template <typename... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

constexpr size_t kFileHeaderSize = sizeof(sentinel_file_header);
constexpr size_t kRecordHeaderSize = sizeof(sentinel_record_header);

uint32_t load32(const uint8_t* p) {
  return static_cast<uint32_t>(load_le(p, 4));
}
uint64_t load64(const uint8_t* p) {
  return load_le(p, 8);
}

// Grows a vector's capacity for `extra` more elements without the quadratic cost of reserving the
// exact size once per batch. `extra` has always been checked against the bytes of the record.
template <typename T>
void reserve_more(std::vector<T>& v, size_t extra) {
  size_t want = v.size() + extra;
  if (want > v.capacity()) v.reserve(std::max(want, v.capacity() * 2));
}

// Bounds-checked little-endian reads over one record's payload. Offsets in errors are absolute.
class Cursor {
 public:
  Cursor(std::span<const uint8_t> payload, uint64_t base, const char* record)
      : p_(payload), base_(base), record_(record) {}

  uint64_t offset() const { return base_ + pos_; }
  const char* record() const { return record_; }
  size_t remaining() const { return p_.size() - pos_; }

  void need(size_t n, const char* what) const {
    if (remaining() < n)
      throw FormatError(
          offset(), cat(record_, " record: ", what, " needs ", n, " bytes, only ", remaining(), " left in the record"));
  }
  uint32_t u32(const char* what) {
    need(4, what);
    uint32_t v = load32(p_.data() + pos_);
    pos_ += 4;
    return v;
  }
  int32_t i32(const char* what) { return static_cast<int32_t>(u32(what)); }
  uint64_t u64(const char* what) {
    need(8, what);
    uint64_t v = load64(p_.data() + pos_);
    pos_ += 8;
    return v;
  }
  std::string str(const char* what) {
    uint64_t at = offset();
    uint32_t len = u32(what);
    if (len > remaining())
      throw FormatError(at, cat(record_, " record: ", what, " string length ", len, " runs past end of record (",
                                remaining(), " bytes left)"));
    std::string s(reinterpret_cast<const char*>(p_.data() + pos_), len);
    pos_ += len;
    return s;
  }
  std::span<const uint8_t> bytes(size_t n, const char* what) {
    need(n, what);
    auto s = p_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  // A count read at `at` promising `count` entries of at least `min_entry` bytes each.
  void check_count(uint64_t at, uint64_t count, size_t min_entry, const char* what) const {
    if (count > remaining() / min_entry)
      throw FormatError(at, cat(record_, " record: ", what, " count ", count, " needs at least ", count * min_entry,
                                " bytes, only ", remaining(), " left in the record"));
  }
  // Reads the u32 `field` as such a count and checks it.
  uint32_t count(const char* field, size_t min_entry, const char* what) {
    uint64_t at = offset();
    uint32_t n = u32(field);
    check_count(at, n, min_entry, what);
    return n;
  }

 private:
  std::span<const uint8_t> p_;
  size_t pos_ = 0;
  uint64_t base_;
  const char* record_;
};

class Parser {
 public:
  Parser(std::span<const uint8_t> bytes, const ParseOptions& options) : b_(bytes), opt_(options) {}

  Profile run() {
    prof_.file_size = b_.size();
    header();
    records();
    phases_of_old_entries();
    std::sort(prof_.sites.begin(), prof_.sites.end(), [](const Site& a, const Site& b) { return a.id < b.id; });
    return std::move(prof_);
  }

 private:
  void header() {
    const size_t n = b_.size();
    const size_t magic_len = 8;
    if (n > 0 && std::memcmp(b_.data(), SENTINEL_DUMP_MAGIC, std::min(n, magic_len)) != 0)
      throw FormatError(0, "not a Sentinel dump (bad magic)");
    if (n < kFileHeaderSize) throw FormatError(n, cat("file header truncated: ", n, " of ", kFileHeaderSize, " bytes"));
    const auto h = decode_entry<sentinel_file_header>(b_.data(), kFileHeaderSize);
    prof_.major = h.major;
    prof_.minor = h.minor;
    prof_.pointer_size = h.pointer_size;
    constexpr uint64_t kMajorAt = field<sentinel_file_header>("major").offset;
    constexpr uint64_t kPointerSizeAt = field<sentinel_file_header>("pointer_size").offset;
    constexpr uint64_t kLittleEndianAt = field<sentinel_file_header>("little_endian").offset;
    if (prof_.major > SENTINEL_FORMAT_MAJOR)
      throw FormatError(kMajorAt,
                        cat("format version ", prof_.major, ".", prof_.minor, " is newer than this reader supports (",
                            SENTINEL_FORMAT_MAJOR, ".", SENTINEL_FORMAT_MINOR, ")"));
    if (prof_.major < 1)
      throw FormatError(
          kMajorAt, cat("unsupported format version ", prof_.major, ".", prof_.minor, " (this reader supports 1.0 to ",
                        SENTINEL_FORMAT_MAJOR, ".", SENTINEL_FORMAT_MINOR, ")"));
    if (prof_.pointer_size != 4 && prof_.pointer_size != 8)
      throw FormatError(kPointerSizeAt, cat("bad pointer size ", unsigned{prof_.pointer_size}));
    if (h.little_endian != 1)
      throw FormatError(kLittleEndianAt, cat("unsupported byte order flag ", unsigned{h.little_endian},
                                             " (only little endian dumps exist)"));
  }

  void records() {
    const size_t size = b_.size();
    size_t off = kFileHeaderSize;
    uint64_t count = 0;
    for (;;) {
      if (off == size)
        throw FormatError(
            off, cat("missing END record: data stops after ", count, " records (file truncated, or the writer died)"));
      if (size - off < kRecordHeaderSize)
        throw FormatError(off, cat("record header truncated: ", size - off, " of ", kRecordHeaderSize,
                                   " bytes at end of file (size ", size, ")"));
      const auto h = decode_entry<sentinel_record_header>(b_.data() + off, kRecordHeaderSize);
      const uint32_t type = h.type;
      const uint32_t crc = h.crc32c;
      const uint64_t length = h.length;
      if (length > size - off - kRecordHeaderSize)
        throw FormatError(off, cat("record length ", length, " runs past end of file (size ", size, ")"));
      auto payload = b_.subspan(off + kRecordHeaderSize, static_cast<size_t>(length));
      if (opt_.verify_checksums) {
        uint32_t got = crc32c(0, payload.data(), payload.size());
        if (got != crc)
          throw FormatError(off, cat("checksum mismatch in ", record_type_name(type), " record (stored ", hex32(crc),
                                     ", computed ", hex32(got), ")"));
      }
      const uint64_t poff = off + kRecordHeaderSize;
      const size_t next = off + kRecordHeaderSize + static_cast<size_t>(length);
      if (type == SENTINEL_REC_END) {
        Cursor c(payload, poff, "END");
        uint64_t written = c.u64("record count");
        if (written != count)
          throw FormatError(poff, cat("END record counts ", written, " records, the file has ", count));
        if (next != size) throw FormatError(next, cat(size - next, " bytes of trailing data after the END record"));
        prof_.record_count = count;
        return;
      }
      decode(type, payload, poff);
      ++count;
      off = next;
    }
  }

  void decode(uint32_t type, std::span<const uint8_t> payload, uint64_t poff) {
    const RecordType* known = find_record_type(type);
    if (!known) {
      ++prof_.skipped_records;
      return;
    }
    Cursor c(payload, poff, known->name);
    switch (type) {
      case SENTINEL_REC_PROCESS:
        return process(c);
      case SENTINEL_REC_CONFIG:
        return config(c);
      case SENTINEL_REC_TOPOLOGY:
        return topology(c);
      case SENTINEL_REC_MODULE:
        return module(c);
      case SENTINEL_REC_SITES:
        return sites(c);
      case SENTINEL_REC_OBJECTS:
        return objects(c);
      case SENTINEL_REC_STATS:
        return stats(c);
      case SENTINEL_REC_MARKS:
        return marks(c);
      case SENTINEL_REC_STEPS:
        return steps(c);
      case SENTINEL_REC_INTERVALS:
        return intervals(c);
      case SENTINEL_REC_PROFILE:
        return session(c);
      case SENTINEL_REC_IDENTITIES:
        return identities(c);
      case SENTINEL_REC_TOUCHES:
        return touches(c);
      case SENTINEL_REC_GROUPS:
        return groups(c);
      case SENTINEL_REC_COUNTERS:
        return counters(c, nullptr);
      case SENTINEL_REC_PHASE_COUNTERS: {
        uint32_t phase = c.u32("phase");
        return counters(c, &phase);
      }
      case SENTINEL_REC_TIERING:
        return tiering(c);
      case SENTINEL_REC_PLAN:
        return plan(c);
      case SENTINEL_REC_MIGRATIONS:
        return migrations(c);
      case SENTINEL_REC_MIGRATION_LOG:
        return migration_log(c);
      case SENTINEL_REC_PLACEMENT:
        return placement(c);
      case SENTINEL_REC_DETECTION:
        return detection(c);
      case SENTINEL_REC_CRASH:
        return crash(c);
      default:
        ++prof_.skipped_records;
        return;
    }
  }

  void process(Cursor c) {
    if (prof_.process.present) throw FormatError(c.offset(), "second PROCESS record");
    ProcessInfo& p = prof_.process;
    p.present = true;
    p.pid = c.u32("pid");
    p.ppid = c.u32("ppid");
    p.rank = c.i32("rank");
    p.flags = c.u32("flags");
    p.start_realtime_ns = c.u64("start_realtime_ns");
    p.end_realtime_ns = c.u64("end_realtime_ns");
    p.start_monotonic_ns = c.u64("start_monotonic_ns");
    p.end_monotonic_ns = c.u64("end_monotonic_ns");
    p.executable = c.str("executable");
    counted(c, "argc", 4, "argv", p.argv, [](Cursor& cur) { return cur.str("argv"); });
  }

  void config(Cursor c) {
    counted(c, "count", 4, "entry", prof_.config, [](Cursor& cur) {
      uint64_t eat = cur.offset();
      std::string s = cur.str("entry");
      size_t eq = s.find('=');
      if (eq == std::string::npos || eq == 0)
        throw FormatError(eat, "CONFIG record: entry is not of the form NAME=value");
      return std::pair(s.substr(0, eq), s.substr(eq + 1));
    });
  }

  void topology(Cursor c) {
    if (prof_.topology.present) throw FormatError(c.offset(), "second TOPOLOGY record");
    Topology& t = prof_.topology;
    t.present = true;
    t.numa_available = c.i32("numa_available");
    t.numa_balancing = c.i32("numa_balancing");
    counted(c, "node_count", 32, "node", t.nodes, [](Cursor& cur) {
      NumaNode node;
      node.id = cur.i32("node id");
      node.cpu_count = cur.u32("cpu_count");
      node.total_bytes = cur.u64("total_bytes");
      node.free_bytes = cur.u64("free_bytes");
      node.flags = cur.u32("node flags");
      cur.u32("node reserved");
      return node;
    });
    t.fast_node = c.i32("fast_node");
    t.slow_node = c.i32("slow_node");
  }

  void module(Cursor c) {
    Module m;
    m.load_bias = c.u64("load_bias");
    counted(c, "segment_count", 24, "segment", m.segments, [](Cursor& cur) {
      Segment s;
      s.vaddr = cur.u64("segment vaddr");
      s.memsz = cur.u64("segment memsz");
      s.p_flags = cur.u32("segment p_flags");
      cur.u32("segment reserved");
      return s;
    });
    m.build_id = c.str("build_id");
    m.path = c.str("path");
    if (seen_modules_.emplace(m.path, m.load_bias).second) prof_.modules.push_back(std::move(m));
  }

  void sites(Cursor c) {
    uint32_t n = c.count("count", 16, "site");
    reserve_more(prof_.sites, n);
    for (uint32_t i = 0; i < n; ++i) {
      uint64_t eat = c.offset();
      Site s;
      s.id = c.u32("site id");
      uint64_t fat = c.offset();
      uint32_t nframes = c.u32("nframes");
      if (nframes > SENTINEL_MAX_FRAMES)
        throw FormatError(
            fat, cat("SITES record: site ", s.id, " has ", nframes, " frames (at most ", SENTINEL_MAX_FRAMES, ")"));
      s.hash = c.u64("site hash");
      auto raw = c.bytes(size_t{nframes} * 8, "frames");
      s.frames.reserve(nframes);
      for (uint32_t k = 0; k < nframes; ++k) s.frames.push_back(load64(raw.data() + 8 * k));
      auto [it, fresh] = site_index_.emplace(s.id, prof_.sites.size());
      if (fresh) {
        prof_.sites.push_back(std::move(s));
      } else {
        const Site& old = prof_.sites[it->second];
        if (old.hash != s.hash || old.frames != s.frames)
          throw FormatError(eat, cat("SITES record: site id ", s.id, " appears twice with different stacks"));
      }
    }
  }

  void objects(Cursor c) { fixed_entries(c, "object", prof_.objects); }

  void stats(Cursor c) {
    counted(c, "count", 12, "stat", prof_.stats, [](Cursor& cur) {
      Stat s;
      s.name = cur.str("stat name");
      s.value = cur.u64("stat value");
      return s;
    });
  }

  void marks(Cursor c) {
    counted(c, "count", 16, "mark", prof_.marks, [](Cursor& cur) {
      Mark m;
      m.seq = cur.u64("mark seq");
      m.monotonic_ns = cur.u64("mark monotonic_ns");
      return m;
    });
  }

  // A u32 count (the field `count_field`) then that many entries of at least `min_entry` bytes
  // each, each read from the cursor by `decode` and appended to `out`.
  template <typename T, typename Decode>
  static void counted(Cursor& c, const char* count_field, size_t min_entry, const char* what, std::vector<T>& out,
                      Decode decode) {
    uint32_t n = c.count(count_field, min_entry, what);
    reserve_more(out, n);
    for (uint32_t i = 0; i < n; ++i) out.push_back(decode(c));
  }

  // "u32 count, u32 entry_size" then count entries of entry_size bytes, entry_size at least the
  // smallest the table of T accepts (older minors' entries lack its appended fields, newer minors' may
  // append more), each decoded through the table and appended to `out`. Returns the entry size.
  template <typename T>
  static uint32_t fixed_entries(Cursor& c, const char* what, std::vector<T>& out) {
    constexpr uint32_t kMinSize = min_size<T>();
    uint64_t at = c.offset();
    uint32_t n = c.u32("count");
    uint64_t eat = c.offset();
    uint32_t entry = c.u32("entry_size");
    if (entry < kMinSize)
      throw FormatError(eat, cat(c.record(), " record: entry size ", entry, " is smaller than ", kMinSize));
    c.check_count(at, n, entry, what);
    auto raw = c.bytes(size_t{n} * entry, what);
    reserve_more(out, n);
    for (uint32_t i = 0; i < n; ++i) out.push_back(decode_entry<T>(raw.data() + size_t{i} * entry, entry));
    return entry;
  }

  void steps(Cursor c) { fixed_entries(c, "step", prof_.steps); }

  void intervals(Cursor c) {
    IntervalTable t;
    t.phase = c.u32("phase");
    t.period = c.u32("period");
    counted(c, "count", 8, "interval", t.bounds, [](Cursor& cur) {
      uint32_t first = cur.u32("first_ordinal");
      uint32_t end = cur.u32("end_ordinal");
      return std::pair(first, end);
    });
    prof_.intervals.push_back(std::move(t));
  }

  void session(Cursor c) {
    ProfileSession s;
    s.granularity_bytes = c.u32("granularity_bytes");
    s.profiled_steps = c.u32("profiled_steps");
    s.phase = c.u32("phase");
    uint64_t at = c.offset();
    uint32_t names = c.u32("counter_count");
    s.first_profiled_step = c.u64("first_profiled_step");
    s.faults = c.u64("faults");
    s.fault_handler_ns = c.u64("fault_handler_ns");
    s.syscall_unprotects = c.u64("syscall_unprotects");
    c.check_count(at, names, 4, "counter name");
    s.counter_names.reserve(names);
    for (uint32_t i = 0; i < names; ++i) s.counter_names.push_back(c.str("counter name"));
    prof_.sessions.push_back(std::move(s));
  }

  void identities(Cursor c) {
    const size_t before = prof_.identities.size();
    const uint32_t entry = fixed_entries(c, "identity", prof_.identities);
    // 1.1 entries have no flags; "born outside a step" is what a missing ordinal says.
    if (!holds<sentinel_identity>(entry, field<sentinel_identity>("flags")))
      for (size_t i = before; i < prof_.identities.size(); ++i) {
        sentinel_identity& d = prof_.identities[i];
        d.flags = d.ordinal == SENTINEL_NO_ORDINAL ? SENTINEL_IDENTITY_OUTSIDE : 0;
      }
  }

  void touches(Cursor c) { fixed_entries(c, "touch", prof_.touches); }

  void groups(Cursor c) {
    const size_t before = prof_.groups.size();
    const uint32_t entry = fixed_entries(c, "group", prof_.groups);
    if (!holds<sentinel_group>(entry, field<sentinel_group>("phase")))
      for (size_t i = before; i < prof_.groups.size(); ++i) old_groups_.push_back(i);
  }

  // 1.1 COUNTERS and groups name no phase: they belong to the profiling session, which 1.1 dumps
  // have one of. Assigned once the whole file is read (PROFILE may come after them).
  void phases_of_old_entries() {
    const uint32_t phase = prof_.sessions.empty() ? 0 : prof_.sessions.front().phase;
    for (size_t i : old_groups_) prof_.groups[i].phase = phase;
    for (size_t i : old_counters_) prof_.counters[i].phase = phase;
  }

  void counters(Cursor& c, const uint32_t* phase) {
    uint64_t at = c.offset();
    uint32_t n = c.u32("count");
    uint32_t values = c.u32("counter_count");
    // Each entry: u32 step, u32 interval, u64 duration_ns, counter_count x u64.
    c.check_count(at, n, 16 + size_t{values} * 8, "sample");
    reserve_more(prof_.counters, n);
    for (uint32_t i = 0; i < n; ++i) {
      CounterSample s;
      s.step = c.u32("sample step");
      s.interval = c.u32("sample interval");
      s.duration_ns = c.u64("sample duration_ns");
      auto raw = c.bytes(size_t{values} * 8, "counter values");
      s.values.reserve(values);
      for (uint32_t k = 0; k < values; ++k) s.values.push_back(load64(raw.data() + 8 * k));
      if (phase)
        s.phase = *phase;
      else
        old_counters_.push_back(prof_.counters.size());
      prof_.counters.push_back(std::move(s));
    }
  }

  // ---- 1.2: tiering records.

  void tiering(Cursor c) {
    prof_.tiering.push_back(sized_entry<sentinel_tiering>(c, "entry_size", "entry size", "tiering"));
  }

  void plan(Cursor c) {
    PlanRecord r;
    r.header = sized_entry<sentinel_plan_header>(c, "header_size", "header size", "plan header");
    fixed_entries(c, "plan entry", r.entries);
    if (c.remaining() >= 4) {  // appended: the planner's interval durations
      uint64_t at = c.offset();
      uint32_t n = c.u32("interval count");
      c.check_count(at, n, 8, "interval duration");
      r.interval_ns.reserve(n);
      for (uint32_t i = 0; i < n; ++i) r.interval_ns.push_back(c.u64("interval duration"));
    }
    if (c.remaining() >= 4) {  // appended in 1.3: the step-time trial
      uint64_t at = c.offset();
      r.trial = sized_entry<sentinel_plan_trial>(c, "trial size", "trial size", "plan trial");
      if (r.trial.state > SENTINEL_TRIAL_DONE)
        throw FormatError(at, cat("PLAN record: unknown trial state ", r.trial.state));
      if (r.trial.replan > SENTINEL_REPLAN_FAILED)
        throw FormatError(at, cat("PLAN record: unknown re-plan state ", r.trial.replan));
      if (r.trial.kept > SENTINEL_TRIAL_KEPT_WATCHED)
        throw FormatError(at, cat("PLAN record: unknown kept schedule ", r.trial.kept));
      if (r.trial.clock > SENTINEL_TRIAL_CLOCK_EMULATED)
        throw FormatError(at, cat("PLAN record: unknown trial clock ", r.trial.clock));
      if (r.trial.fit > SENTINEL_FIT_AT_BASE)
        throw FormatError(at, cat("PLAN record: unknown fit state ", r.trial.fit));
      if (r.trial.move_fit > SENTINEL_MOVE_FIT_NO_SLOW_COST)
        throw FormatError(at, cat("PLAN record: unknown move fit state ", r.trial.move_fit));
      if (r.trial.watch > SENTINEL_WATCH_FOLLOWED)
        throw FormatError(at, cat("PLAN record: unknown watch state ", r.trial.watch));
    }
    // Before 1.6 the kept schedule is what the header's flags say (a 1.6 writer sets both alike).
    if (r.trial.kept == SENTINEL_TRIAL_KEPT_MOVING && (r.header.flags & SENTINEL_TIER_NO_MOVES))
      r.trial.kept = SENTINEL_TRIAL_KEPT_FIXED;
    prof_.plans.push_back(std::move(r));
  }

  // A T stored after its own u32 size (`field`, `label` in the error), at least the smallest size T's
  // table accepts.
  template <typename T>
  static T sized_entry(Cursor& c, const char* field, const char* label, const char* what) {
    uint64_t at = c.offset();
    uint32_t size = c.u32(field);
    if (size < min_size<T>())
      throw FormatError(at, cat(c.record(), " record: ", label, " ", size, " is smaller than ", min_size<T>()));
    return decode_entry<T>(c.bytes(size, what).data(), size);
  }

  void migrations(Cursor c) { fixed_entries(c, "migration", prof_.migrations); }
  void migration_log(Cursor c) { fixed_entries(c, "batch", prof_.migration_log); }
  void placement(Cursor c) { fixed_entries(c, "placement", prof_.placement); }
  void detection(Cursor c) { fixed_entries(c, "detection", prof_.detection); }
  void crash(Cursor c) { fixed_entries(c, "crash", prof_.crash); }

  std::span<const uint8_t> b_;
  const ParseOptions& opt_;
  Profile prof_;
  std::set<std::pair<std::string, uint64_t>> seen_modules_;
  std::unordered_map<uint32_t, size_t> site_index_;
  std::vector<size_t> old_groups_;    // groups decoded from 1.1 entries (no phase)
  std::vector<size_t> old_counters_;  // samples of 1.1 COUNTERS records (no phase)
};

}  // namespace

FormatError::FormatError(uint64_t offset, const std::string& message)
    : std::runtime_error(cat("offset ", offset, ": ", message)), offset_(offset), message_(message) {}

std::optional<uint64_t> ProcessInfo::duration_ns() const {
  if (start_monotonic_ns == 0 || end_monotonic_ns < start_monotonic_ns) return std::nullopt;
  return end_monotonic_ns - start_monotonic_ns;
}

bool Module::contains(uint64_t address) const {
  const uint64_t rel = address - load_bias;  // wraps like the loader's arithmetic
  for (const Segment& s : segments)
    if (rel >= s.vaddr && rel - s.vaddr < s.memsz) return true;
  return false;
}

const Site* Profile::find_site(uint32_t id) const {
  auto it = std::lower_bound(sites.begin(), sites.end(), id, [](const Site& s, uint32_t v) { return s.id < v; });
  return it != sites.end() && it->id == id ? &*it : nullptr;
}

std::optional<uint64_t> Profile::stat(std::string_view name) const {
  for (const Stat& s : stats)
    if (s.name == name) return s.value;
  return std::nullopt;
}

const std::string* Profile::config_value(std::string_view name) const {
  for (const auto& [k, v] : config)
    if (k == name) return &v;
  return nullptr;
}

bool Profile::has_profiler_records() const {
  return !steps.empty() || !intervals.empty() || !sessions.empty() || !identities.empty() || !touches.empty() ||
         !groups.empty() || !counters.empty();
}

bool Profile::has_tiering_records() const {
  return !tiering.empty() || !plans.empty() || !migrations.empty() || !migration_log.empty() || !placement.empty() ||
         !detection.empty();
}

const PlanRecord* Profile::plan_for(uint32_t phase) const {
  for (auto it = plans.rbegin(); it != plans.rend(); ++it)
    if (it->header.phase == phase) return &*it;
  return nullptr;
}

const IntervalTable* Profile::intervals_for(uint32_t phase) const {
  for (auto it = intervals.rbegin(); it != intervals.rend(); ++it)
    if (it->phase == phase) return &*it;
  return nullptr;
}

const Module* Profile::module_for(uint64_t address) const {
  for (const Module& m : modules)
    if (m.contains(address)) return &m;
  return nullptr;
}

std::string record_type_name(uint32_t type) {
  const RecordType* r = find_record_type(type);
  return r ? r->name : cat("type ", type);
}

Profile parse_profile(std::span<const uint8_t> bytes, const ParseOptions& options) {
  return Parser(bytes, options).run();
}

std::vector<RecordExtent> record_extents(std::span<const uint8_t> bytes) {
  parse_profile(bytes);  // every check; below, the framing is known to be sound
  std::vector<RecordExtent> out;
  for (uint64_t off = sizeof(sentinel_file_header); off < bytes.size();) {
    const auto h = decode_entry<sentinel_record_header>(bytes.data() + off, sizeof(sentinel_record_header));
    out.push_back({h.type, off, sizeof(sentinel_record_header) + h.length});
    off += out.back().size;
  }
  return out;
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), path);
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw std::system_error(errno, std::generic_category(), path);
  if (S_ISDIR(st.st_mode)) throw std::system_error(EISDIR, std::generic_category(), path);
  std::vector<uint8_t> data;
  if (S_ISREG(st.st_mode) && st.st_size > 0) data.reserve(static_cast<size_t>(st.st_size));
  uint8_t buf[1 << 16];
  for (;;) {
    ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), path);
    }
    if (r == 0) break;
    data.insert(data.end(), buf, buf + r);
  }
  return data;
}

Profile read_profile(const std::string& path, const ParseOptions& options) {
  return parse_profile(read_file_bytes(path), options);
}

}  // namespace sentinel::fmt
