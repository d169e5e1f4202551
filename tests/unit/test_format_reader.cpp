// The dump reader against hand-built files (tests/fuzz/dump_builder.h, any version and size of entry).
#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <system_error>
#include <tuple>
#include <vector>

#include "../fuzz/dump_builder.h"
#include "../fuzz/training_dump.h"
#include "format/format_reader.h"

using sentinel::fmt::FormatError;
using sentinel::fmt::parse_profile;
using sentinel::fmt::ParseOptions;
using sentinel::fmt::Profile;
using sentinel::testing::Bytes;
using sentinel::testing::DumpBuilder;
using sentinel::testing::make_object;
using sentinel::testing::sample_dump;

namespace {

// Parses and returns the FormatError (fails the test when parsing succeeds or throws anything else).
FormatError parse_error(const std::vector<uint8_t>& bytes, ParseOptions opt = {}) {
  try {
    parse_profile(bytes, opt);
  } catch (const FormatError& e) {
    return e;
  }
  FAIL("parse_profile accepted an invalid dump");
  return FormatError(0, "unreachable");
}

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

// Offsets of every record header in a well-formed dump.
std::vector<size_t> record_offsets(const std::vector<uint8_t>& b) {
  std::vector<size_t> out;
  size_t off = 24;
  while (off + 16 <= b.size()) {
    out.push_back(off);
    uint64_t len = 0;
    for (int i = 7; i >= 0; --i) len = (len << 8) | b[off + 8 + i];
    off += 16 + len;
  }
  return out;
}

// Caps the address space for the lifetime of the object so that a reader that reserved memory from
// an unchecked count would get std::bad_alloc instead of silently succeeding. Sanitizer runtimes
// reserve their heap up front, so there the cap is skipped (the fuzzer's RSS limit covers them).
class AddressSpaceCap {
 public:
  explicit AddressSpaceCap(size_t headroom) {
#if defined(__SANITIZE_ADDRESS__)
    (void)headroom;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
    (void)headroom;
#else
    arm(headroom);
#endif
#else
    arm(headroom);
#endif
  }
  ~AddressSpaceCap() {
    if (armed_) setrlimit(RLIMIT_AS, &old_);
  }

 private:
  void arm(size_t headroom) {
    unsigned long pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%lu", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    if (pages == 0 || getrlimit(RLIMIT_AS, &old_) != 0) return;
    rlimit lim = old_;
    rlim_t want = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + headroom;
    if (old_.rlim_cur != RLIM_INFINITY && old_.rlim_cur < want) return;
    lim.rlim_cur = want;
    armed_ = setrlimit(RLIMIT_AS, &lim) == 0;
  }
  rlimit old_{};
  bool armed_ = false;
};

}  // namespace

TEST_CASE("format reader: a complete dump parses", "[format]") {
  auto bytes = sample_dump();
  Profile p = parse_profile(bytes);
  CHECK(p.major == 1);
  CHECK(p.minor == 0);
  CHECK(p.pointer_size == 8);
  CHECK(p.file_size == bytes.size());
  CHECK(p.record_count == 12);
  CHECK(p.skipped_records == 0);

  REQUIRE(p.process.present);
  CHECK(p.process.pid == 4242);
  CHECK(p.process.ppid == 1);
  CHECK(p.process.rank == 0);
  CHECK(p.process.executable == "/usr/bin/python3.11");
  REQUIRE(p.process.argv.size() == 3);
  CHECK(p.process.argv[2] == "print(\"hi\")");
  REQUIRE(p.process.duration_ns());
  CHECK(*p.process.duration_ns() == 2500000000ull);

  REQUIRE(p.config.size() == 3);
  CHECK(p.config[0].first == "SENTINEL_MODE");
  CHECK(p.config[0].second == "track");
  REQUIRE(p.config_value("SENTINEL_DUMP"));
  CHECK(*p.config_value("SENTINEL_DUMP") == "sentinel-%e.%p.prof");
  CHECK(p.config_value("SENTINEL_NOPE") == nullptr);

  REQUIRE(p.topology.present);
  CHECK(p.topology.numa_available == 0);
  CHECK(p.topology.numa_balancing == 1);
  REQUIRE(p.topology.nodes.size() == 2);
  CHECK(p.topology.nodes[1].id == 1);
  CHECK(p.topology.nodes[1].flags == 3);
  CHECK(p.topology.nodes[0].total_bytes == (4ull << 30));
  CHECK(p.topology.fast_node == 0);
  CHECK(p.topology.slow_node == 1);

  REQUIRE(p.modules.size() == 2);  // the repeated libc record is dropped
  CHECK(p.modules[0].path.empty());
  CHECK(p.modules[0].build_id == std::string("\x01\x02\x03\x04"));
  REQUIRE(p.modules[0].segments.size() == 2);
  CHECK(p.modules[0].segments[1].vaddr == 0x3000);
  CHECK(p.modules[1].path == "/lib/x86_64-linux-gnu/libc.so.6");
  CHECK(p.module_for(0x555555554100ull) == &p.modules[0]);
  CHECK(p.module_for(0x555555557800ull) == &p.modules[0]);
  CHECK(p.module_for(0x555555556800ull) == nullptr);  // the gap between the segments
  CHECK(p.module_for(0x7f0000000300ull) == &p.modules[1]);
  CHECK(p.module_for(0x1234) == nullptr);

  REQUIRE(p.sites.size() == 3);
  CHECK(p.sites[0].id == 1);
  CHECK(p.sites[2].id == 3);
  REQUIRE(p.find_site(2));
  CHECK(p.find_site(2)->hash == 0x2222);
  CHECK(p.find_site(2)->frames == std::vector<uint64_t>{0x7f0000000300ull});
  CHECK(p.find_site(3)->frames.empty());
  CHECK(p.find_site(4) == nullptr);

  REQUIRE(p.objects.size() == 6);
  uint64_t total = 0;
  for (const auto& o : p.objects) total += o.size;
  CHECK(total == 1261568);
  CHECK(p.objects[1].death_seq == UINT64_MAX);
  CHECK(p.objects[5].site == UINT32_MAX);
  CHECK(p.objects[2].birth_ns == 1003000000);
  CHECK(p.objects[2].alignment == 64);
  CHECK(p.objects[3].thread == 1000);

  REQUIRE(p.stats.size() == 3);
  CHECK(p.stat("overhead_bytes") == 12288u);
  CHECK_FALSE(p.stat("nope"));

  REQUIRE(p.marks.size() == 2);
  CHECK(p.marks[1].seq == 4);
  CHECK(p.marks[1].monotonic_ns == 1004500000);
}

TEST_CASE("format reader: a touch's access intensity (1.8), and the 1.5-1.7 reserved zero", "[format]") {
  const std::vector<sentinel_touch> touches = {sentinel_touch{1, 0, 8192, 1, 0, 0, 0, 0, 0, 0},
                                               sentinel_touch{1, 1, 65536, 8, 1, 2, 3 * 256 + 64, 100, 40000, 0}};
  for (uint16_t minor : {7, 8}) {
    DumpBuilder d(1, minor);
    d.touches(touches, 32);
    d.end();
    Profile p = parse_profile(d.bytes());
    REQUIRE(p.touches.size() == 2);
    CHECK(p.touches[0].passes_x256 == 0);  // not profiled in passes
    CHECK(p.touches[1].chunk == 2);
    CHECK(p.touches[1].passes_x256 == 3 * 256 + 64);
  }
  DumpBuilder old(1, 4);  // 24-byte entries: neither chunk nor intensity
  old.touches(touches, 24);
  old.end();
  Profile p = parse_profile(old.bytes());
  REQUIRE(p.touches.size() == 2);
  CHECK(p.touches[1].bytes == 65536);
  CHECK(p.touches[1].passes_x256 == 0);
}

TEST_CASE("format reader: when in its interval a touch was made (1.14); older entries read as not known", "[format]") {
  const std::vector<sentinel_touch> touches = {sentinel_touch{1, 3, 8192, 1, 0, 0, 256, 0, 0, 0},
                                               sentinel_touch{2, 3, 65536, 8, 1, 0, 512, 16384, 49151, 0}};
  DumpBuilder d(1, 14);
  d.touches(touches, 40);
  d.end();
  Profile p = parse_profile(d.bytes());
  REQUIRE(p.touches.size() == 2);
  CHECK((p.touches[0].time_begin == 0 && p.touches[0].time_end == 0));  // not known
  CHECK((p.touches[1].time_begin == 16384 && p.touches[1].time_end == 49151));
  DumpBuilder old(1, 13);  // 32-byte entries: no times
  old.touches(touches, 32);
  old.end();
  p = parse_profile(old.bytes());
  REQUIRE(p.touches.size() == 2);
  CHECK((p.touches[1].passes_x256 == 512 && p.touches[1].time_begin == 0 && p.touches[1].time_end == 0));
}

TEST_CASE("format reader: the minimal dump is a header and END", "[format]") {
  DumpBuilder d;
  d.end();
  Profile p = parse_profile(d.bytes());
  CHECK(p.record_count == 0);
  CHECK_FALSE(p.process.present);
  CHECK(p.objects.empty());
}

TEST_CASE("format reader: truncation at every byte is an error, never a crash", "[format]") {
  const auto bytes = sample_dump();
  for (bool verify : {true, false}) {
    ParseOptions opt;
    opt.verify_checksums = verify;
    for (size_t t = 0; t < bytes.size(); ++t) {
      std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(t));
      try {
        parse_profile(cut, opt);
        FAIL("truncated dump accepted at " << t);
      } catch (const FormatError& e) {
        INFO("cut at " << t << ": " << e.what());
        CHECK(e.offset() <= t);
        CHECK(std::string(e.what()).rfind("offset " + std::to_string(e.offset()) + ": ", 0) == 0);
        CHECK(std::string(e.what()).find('\n') == std::string::npos);
      }
    }
  }
}

TEST_CASE("format reader: a file cut at a record boundary reports where the data stopped", "[format]") {
  const auto bytes = sample_dump();
  auto offs = record_offsets(bytes);
  REQUIRE(offs.size() == 13);
  std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(offs.back()));
  FormatError e = parse_error(cut);
  CHECK(e.offset() == offs.back());
  CHECK(contains(e.what(), "missing END record"));
  CHECK(contains(e.what(), "12 records"));

  // A record whose length runs past the end, as in docs/format.md.
  std::vector<uint8_t> cut2(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(offs[5] + 20));
  FormatError e2 = parse_error(cut2);
  CHECK(e2.offset() == offs[5]);
  CHECK(contains(e2.what(), "runs past end of file (size " + std::to_string(cut2.size()) + ")"));
}

TEST_CASE("format reader: a corrupted payload fails its checksum", "[format]") {
  const auto bytes = sample_dump();
  const auto offs = record_offsets(bytes);
  for (size_t r = 0; r < offs.size(); ++r) {
    auto bad = bytes;
    bad[offs[r] + 16] ^= 0x40;  // first payload byte
    FormatError e = parse_error(bad);
    INFO(e.what());
    CHECK(e.offset() == offs[r]);
    CHECK(contains(e.what(), "checksum mismatch"));
  }
  // Any single bit flip anywhere: an error or a successful parse, never anything else; with checksums
  // on, every flip inside a payload, a CRC or a length is caught. (The CRC covers the payload only,
  // so a flipped type field can turn a record into an unknown one, which is skipped.)
  auto in_type_field = [&](size_t i) {
    for (size_t o : offs)
      if (i >= o && i < o + 4) return true;
    return false;
  };
  size_t caught = 0, flips = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      auto bad = bytes;
      bad[i] ^= static_cast<uint8_t>(1u << bit);
      ++flips;
      for (bool verify : {true, false}) {
        ParseOptions opt;
        opt.verify_checksums = verify;
        try {
          parse_profile(bad, opt);
          if (verify && i >= 24 && !in_type_field(i)) FAIL("flip of bit " << bit << " at " << i << " went unnoticed");
        } catch (const FormatError&) {
          if (verify) ++caught;
        }
      }
    }
  }
  CHECK(caught >= flips - 8 * (24 + 4 * offs.size()));
}

TEST_CASE("format reader: unknown record types are skipped after their checksum", "[format]") {
  DumpBuilder d;
  d.process(7, 1, -1, 10, 20, "/bin/x", {"x"});
  Bytes unknown;
  unknown.u64(0xdeadbeef).str("from the future");
  d.record(77, unknown);
  d.stats({{"a", 1}});
  d.end();
  Profile p = parse_profile(d.bytes());
  CHECK(p.skipped_records == 1);
  CHECK(p.record_count == 3);
  CHECK(p.stat("a") == 1u);

  DumpBuilder bad;
  bad.record(77, unknown, 0x12345678u);
  bad.end();
  FormatError e = parse_error(bad.bytes());
  CHECK(e.offset() == 24);
  CHECK(contains(e.what(), "checksum mismatch in type 77 record"));
  ParseOptions nocheck;
  nocheck.verify_checksums = false;
  CHECK(parse_profile(bad.bytes(), nocheck).skipped_records == 1);
}

TEST_CASE("format reader: versions", "[format]") {
  DumpBuilder newer(2, 3);
  newer.end();
  FormatError e = parse_error(newer.bytes());
  CHECK(contains(e.what(), "2.3"));
  CHECK(contains(e.what(), "(1." + std::to_string(SENTINEL_FORMAT_MINOR) + ")"));
  CHECK(contains(e.what(), "newer"));

  DumpBuilder zero(0, 9);
  zero.end();
  CHECK(contains(parse_error(zero.bytes()).what(), "unsupported format version 0.9"));

  // A newer minor version: larger object entries and extra payload bytes are ignored.
  DumpBuilder minor(1, 7);
  minor.objects({make_object(0x1000, 5000, 1, 2, 0, 1, 9), make_object(0x3000, 7000, 3, 0, 1, UINT64_MAX, 9)}, 80);
  Bytes stats;
  stats.u32(1).str("x").u64(5).u64(0xffff).str("future field");
  minor.record(SENTINEL_REC_STATS, stats);
  minor.end();
  Profile p = parse_profile(minor.bytes());
  CHECK(p.minor == 7);
  REQUIRE(p.objects.size() == 2);
  CHECK(p.objects[1].size == 7000);
  CHECK(p.objects[1].address == 0x3000);
  CHECK(p.objects[1].death_seq == UINT64_MAX);
  CHECK(p.stat("x") == 5u);

  DumpBuilder small;
  small.objects({make_object(0x1000, 5000, 1, 2, 0, 1, 9)}, 64);
  small.end();
  auto b = small.bytes();
  // Rewrite entry_size to 48 (and fix the CRC) -> refused.
  b[24 + 16 + 4] = 48;
  uint32_t crc = sentinel::crc32c(0, b.data() + 40, 8 + 64);
  for (int i = 0; i < 4; ++i) b[24 + 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
  FormatError e2 = parse_error(b);
  CHECK(e2.offset() == 24 + 16 + 4);
  CHECK(contains(e2.what(), "entry size 48"));

  DumpBuilder p32(1, 0, 4);
  p32.end();
  CHECK(parse_profile(p32.bytes()).pointer_size == 4);

  std::vector<uint8_t> junk = {'N', 'O', 'T', 'A', 'D', 'U', 'M', 'P', 0, 0};
  CHECK(parse_error(junk).offset() == 0);
  CHECK(contains(parse_error(junk).what(), "bad magic"));
}

TEST_CASE("format reader: huge counts are rejected before anything is allocated", "[format]") {
  struct Case {
    uint32_t type;
    Bytes prefix;  // fields before the count
    const char* what;
  };
  std::vector<Case> cases;
  {
    Bytes b;
    b.u32(1).u32(1).i32(0).u32(0).u64(0).u64(0).u64(0).u64(0).str("exe");
    cases.push_back({SENTINEL_REC_PROCESS, b, "argv count"});
  }
  cases.push_back({SENTINEL_REC_CONFIG, Bytes{}, "entry count"});
  {
    Bytes b;
    b.i32(0).i32(0);
    cases.push_back({SENTINEL_REC_TOPOLOGY, b, "node count"});
  }
  {
    Bytes b;
    b.u64(0);
    cases.push_back({SENTINEL_REC_MODULE, b, "segment count"});
  }
  cases.push_back({SENTINEL_REC_SITES, Bytes{}, "site count"});
  cases.push_back({SENTINEL_REC_STATS, Bytes{}, "stat count"});
  cases.push_back({SENTINEL_REC_MARKS, Bytes{}, "mark count"});

  AddressSpaceCap cap(256u << 20);
  for (uint32_t count : {0xFFFFFFFFu, 0x00FFFFFFu, 1000u}) {
    for (const auto& c : cases) {
      Bytes payload = c.prefix;
      payload.u32(count);
      for (int i = 0; i < 64; ++i) payload.u8(0);
      DumpBuilder d;
      d.record(c.type, payload);
      d.end();
      try {
        parse_profile(d.bytes());
        FAIL(c.what << " " << count << " accepted");
      } catch (const FormatError& e) {
        INFO(e.what());
        CHECK(contains(e.what(), "count " + std::to_string(count)));
        CHECK(e.offset() == 24 + 16 + c.prefix.size());
      }
    }
    Bytes objs;
    objs.u32(count).u32(64);
    for (int i = 0; i < 64; ++i) objs.u8(0);
    DumpBuilder d;
    d.record(SENTINEL_REC_OBJECTS, objs);
    d.end();
    FormatError e = parse_error(d.bytes());
    CHECK(contains(e.what(), "object count " + std::to_string(count)));
  }

  // Huge string and record lengths.
  {
    Bytes b;
    b.u32(1).u32(1).i32(0).u32(0).u64(0).u64(0).u64(0).u64(0).u32(0xFFFFFFFFu);
    DumpBuilder d;
    d.record(SENTINEL_REC_PROCESS, b);
    d.end();
    FormatError e = parse_error(d.bytes());
    CHECK(contains(e.what(), "string length 4294967295 runs past end of record"));
    CHECK(e.offset() == 24 + 16 + 48);
  }
  {
    std::vector<uint8_t> b = DumpBuilder().bytes();
    Bytes h;
    h.u32(SENTINEL_REC_OBJECTS).u32(0).u64(UINT64_MAX);
    b.insert(b.end(), h.data().begin(), h.data().end());
    b.resize(b.size() + 100, 0);
    FormatError e = parse_error(b);
    CHECK(e.offset() == 24);
    CHECK(contains(e.what(), "record length 18446744073709551615 runs past end of file (size 140)"));
  }
}

TEST_CASE("format reader: structural errors", "[format]") {
  SECTION("END count must match") {
    DumpBuilder d;
    d.stats({});
    d.end(5);
    CHECK(contains(parse_error(d.bytes()).what(), "END record counts 5 records, the file has 1"));
  }
  SECTION("nothing may follow END") {
    DumpBuilder d;
    d.end();
    auto b = d.bytes();
    b.push_back(0);
    FormatError e = parse_error(b);
    CHECK(e.offset() == b.size() - 1);
    CHECK(contains(e.what(), "trailing"));
  }
  SECTION("too many frames") {
    DumpBuilder d;
    d.sites({{1, 1, std::vector<uint64_t>(9, 0x1000)}});
    d.end();
    CHECK(contains(parse_error(d.bytes()).what(), "9 frames (at most 8)"));
  }
  SECTION("a site id with two stacks") {
    DumpBuilder d;
    d.sites({{1, 1, {0x1000}}});
    d.sites({{1, 1, {0x1000}}, {1, 1, {0x2000}}});
    d.end();
    CHECK(contains(parse_error(d.bytes()).what(), "site id 1 appears twice"));
  }
  SECTION("a second PROCESS record") {
    DumpBuilder d;
    d.process(1, 0, -1, 1, 2, "a", {});
    d.process(1, 0, -1, 1, 2, "a", {});
    d.end();
    CHECK(contains(parse_error(d.bytes()).what(), "second PROCESS record"));
  }
  SECTION("a CONFIG entry without '='") {
    DumpBuilder d;
    d.config({"SENTINEL_MODE"});
    d.end();
    CHECK(contains(parse_error(d.bytes()).what(), "NAME=value"));
  }
  SECTION("a short fixed field") {
    Bytes b;
    b.u32(1).u16(0);
    DumpBuilder d;
    d.record(SENTINEL_REC_PROCESS, b);
    d.end();
    FormatError e = parse_error(d.bytes());
    CHECK(e.offset() == 24 + 16 + 4);
    CHECK(contains(e.what(), "PROCESS record: ppid needs 4 bytes, only 2 left"));
  }
  SECTION("an empty file and a short header") {
    CHECK(contains(parse_error({}).what(), "file header truncated: 0 of 24"));
    const auto full = sample_dump();
    std::vector<uint8_t> h(full.begin(), full.begin() + 12);
    CHECK(parse_error(h).offset() == 12);
  }
}

TEST_CASE("format reader: read_profile reads files", "[format]") {
  char path[] = "/tmp/sentinel-test-dump-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  auto bytes = sample_dump();
  REQUIRE(write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  close(fd);
  Profile p = sentinel::fmt::read_profile(path);
  CHECK(p.objects.size() == 6);
  unlink(path);
  CHECK_THROWS_AS(sentinel::fmt::read_profile(path), std::system_error);
  CHECK_THROWS_AS(sentinel::fmt::read_profile("/tmp"), std::system_error);
}

// ---- 1.1: the profiler's records ----

namespace {

using sentinel::testing::LoopDump;
using sentinel::testing::make_loop_dump;
using sentinel::testing::small_loop_spec;

void check_same(const Profile& p, const LoopDump& want) {
  REQUIRE(p.steps.size() == want.steps.size());
  for (size_t i = 0; i < p.steps.size(); ++i) {
    INFO("step " << i);
    CHECK(p.steps[i].start_seq == want.steps[i].start_seq);
    CHECK(p.steps[i].start_ns == want.steps[i].start_ns);
    CHECK(p.steps[i].allocations == want.steps[i].allocations);
    CHECK(p.steps[i].phase == want.steps[i].phase);
    CHECK(p.steps[i].flags == want.steps[i].flags);
  }
  REQUIRE(p.identities.size() == want.identities.size());
  for (size_t i = 0; i < p.identities.size(); ++i) {
    INFO("identity " << i);
    const auto& a = p.identities[i];
    const auto& b = want.identities[i];
    CHECK(a.id == b.id);
    CHECK(a.site == b.site);
    CHECK(a.size == b.size);
    CHECK(a.ordinal == b.ordinal);
    CHECK(a.phase == b.phase);
    CHECK(a.group == b.group);
    CHECK(a.birth_interval == b.birth_interval);
    CHECK(a.death_interval == b.death_interval);
    CHECK(a.lifetime == b.lifetime);
    CHECK(a.touched_bytes == b.touched_bytes);
    CHECK(a.instances == b.instances);
  }
  REQUIRE(p.touches.size() == want.touches.size());
  for (size_t i = 0; i < p.touches.size(); ++i) {
    INFO("touch " << i);
    CHECK(p.touches[i].identity == want.touches[i].identity);
    CHECK(p.touches[i].interval == want.touches[i].interval);
    CHECK(p.touches[i].bytes == want.touches[i].bytes);
    CHECK(p.touches[i].faults == want.touches[i].faults);
    CHECK(p.touches[i].step == want.touches[i].step);
  }
  REQUIRE(p.groups.size() == want.groups.size());
  for (size_t i = 0; i < p.groups.size(); ++i) {
    INFO("group " << i);
    CHECK(p.groups[i].id == want.groups[i].id);
    CHECK(p.groups[i].lifetime == want.groups[i].lifetime);
    CHECK(p.groups[i].members == want.groups[i].members);
    CHECK(p.groups[i].bytes == want.groups[i].bytes);
    CHECK(p.groups[i].interval_mask == want.groups[i].interval_mask);
  }
  REQUIRE(p.counters.size() == want.counters.size());
  for (size_t i = 0; i < p.counters.size(); ++i) {
    CHECK(p.counters[i].step == want.counters[i].step);
    CHECK(p.counters[i].interval == want.counters[i].interval);
    CHECK(p.counters[i].duration_ns == want.counters[i].duration_ns);
    CHECK(p.counters[i].values == want.counters[i].values);
  }
}

}  // namespace

TEST_CASE("format reader: 1.1 records of a synthetic training loop", "[format]") {
  const LoopDump d = make_loop_dump(small_loop_spec());
  Profile p = parse_profile(d.bytes);
  CHECK(p.minor == SENTINEL_FORMAT_MINOR);
  CHECK(p.skipped_records == 0);
  CHECK(p.has_profiler_records());
  CHECK(p.objects.size() == 87);
  CHECK(p.steps.size() == 15);
  check_same(p, d);
  CHECK(d.identities.size() == 9);
  CHECK(d.groups.size() == 8);
  REQUIRE(p.intervals.size() == 2);
  CHECK(p.intervals[0].phase == 0);
  CHECK(p.intervals[0].period == 6);
  CHECK(p.intervals[0].bounds == std::vector<std::pair<uint32_t, uint32_t>>{{0, 2}, {2, 4}, {4, 6}});
  CHECK(p.intervals[1].phase == 1);
  CHECK(p.intervals[1].period == 4);
  REQUIRE(p.intervals_for(1) == &p.intervals[1]);
  CHECK(p.intervals_for(7) == nullptr);
  REQUIRE(p.sessions.size() == 1);
  const auto& s = p.sessions[0];
  CHECK(s.granularity_bytes == 65536);
  CHECK(s.profiled_steps == 2);
  CHECK(s.phase == 0);
  CHECK(s.first_profiled_step == 1);
  CHECK(s.faults == 530);
  CHECK(s.fault_handler_ns == 530 * 3500);
  CHECK(s.syscall_unprotects == 0);
  CHECK(s.counter_names == std::vector<std::string>{"PAPI_TOT_INS", "PAPI_L3_TCM"});
  REQUIRE(p.counters.size() == 6);
  CHECK(p.counters[0].values.size() == 2);
  CHECK(sentinel::fmt::record_type_name(SENTINEL_REC_TOUCHES) == "TOUCHES");
  CHECK(sentinel::fmt::record_type_name(SENTINEL_REC_COUNTERS) == "COUNTERS");

  // A 1.0 dump has none of them.
  Profile old = parse_profile(sample_dump());
  CHECK_FALSE(old.has_profiler_records());
}

TEST_CASE("format reader: larger 1.1 entries (a newer minor) decode from their known prefix", "[format]") {
  const LoopDump want = make_loop_dump(small_loop_spec());
  DumpBuilder d(1, 9);
  d.steps(want.steps, 40);
  d.steps({}, 32);  // an empty batch
  d.identities(std::vector<sentinel_identity>(want.identities.begin(), want.identities.begin() + 4), 64);
  d.identities(std::vector<sentinel_identity>(want.identities.begin() + 4, want.identities.end()), 57);
  d.touches(want.touches, 32);
  d.groups(want.groups, 48);
  d.counters(2, want.counters);
  Bytes extra;  // a PROFILE record with bytes after the known fields
  extra.u32(4096).u32(1).u32(0).u32(1).u64(3).u64(10).u64(20).u64(30).str("PAPI_TOT_INS").u64(0xabcdef);
  d.record(SENTINEL_REC_PROFILE, extra);
  Bytes iv;
  iv.u32(0).u32(6).u32(1).u32(0).u32(6).u64(0x1234);  // trailing bytes in INTERVALS
  d.record(SENTINEL_REC_INTERVALS, iv);
  d.end();
  Profile p = parse_profile(d.bytes());
  check_same(p, want);
  REQUIRE(p.sessions.size() == 1);
  CHECK(p.sessions[0].granularity_bytes == 4096);
  CHECK(p.sessions[0].first_profiled_step == 3);
  CHECK(p.sessions[0].counter_names == std::vector<std::string>{"PAPI_TOT_INS"});
  REQUIRE(p.intervals.size() == 1);
  CHECK(p.intervals[0].bounds.size() == 1);
}

TEST_CASE("format reader: 1.1 entry sizes below the 1.1 size are refused", "[format]") {
  struct Case {
    uint32_t type;
    uint32_t min;
    const char* name;
  };
  for (const Case& c : {Case{SENTINEL_REC_STEPS, 32, "STEPS"}, Case{SENTINEL_REC_IDENTITIES, 56, "IDENTITIES"},
                        Case{SENTINEL_REC_TOUCHES, 24, "TOUCHES"}, Case{SENTINEL_REC_GROUPS, 32, "GROUPS"}}) {
    for (uint32_t entry : {0u, 1u, c.min - 1}) {
      Bytes b;
      b.u32(1).u32(entry);
      for (uint32_t i = 0; i < c.min; ++i) b.u8(0);
      DumpBuilder d;
      d.record(c.type, b);
      d.end();
      FormatError e = parse_error(d.bytes());
      INFO(e.what());
      CHECK(e.offset() == 24 + 16 + 4);
      CHECK(contains(e.what(), std::string(c.name) + " record: entry size " + std::to_string(entry) +
                                   " is smaller than " + std::to_string(c.min)));
    }
  }
}

TEST_CASE("format reader: huge 1.1 counts are rejected before anything is allocated", "[format]") {
  AddressSpaceCap cap(256u << 20);
  for (uint32_t count : {0xFFFFFFFFu, 0x00FFFFFFu, 1000u}) {
    struct Case {
      uint32_t type;
      Bytes payload;
      size_t count_at;  // offset of the count within the payload
      std::string needle;
    };
    std::vector<Case> cases;
    for (auto [type, entry, what] :
         {std::tuple{SENTINEL_REC_STEPS, 32u, "step"}, std::tuple{SENTINEL_REC_IDENTITIES, 56u, "identity"},
          std::tuple{SENTINEL_REC_TOUCHES, 24u, "touch"}, std::tuple{SENTINEL_REC_GROUPS, 32u, "group"}}) {
      Bytes b;
      b.u32(count).u32(entry);
      cases.push_back({static_cast<uint32_t>(type), b, 0, std::string(what) + " count " + std::to_string(count)});
    }
    {
      Bytes b;
      b.u32(0).u32(6).u32(count);
      cases.push_back({SENTINEL_REC_INTERVALS, b, 8, "interval count " + std::to_string(count)});
    }
    {
      Bytes b;
      b.u32(65536).u32(2).u32(0).u32(count).u64(1).u64(2).u64(3).u64(4);
      cases.push_back({SENTINEL_REC_PROFILE, b, 12, "counter name count " + std::to_string(count)});
    }
    {
      Bytes b;
      b.u32(count).u32(0);
      cases.push_back({SENTINEL_REC_COUNTERS, b, 0, "sample count " + std::to_string(count)});
      Bytes w;
      w.u32(2).u32(count);  // two samples of `count` counters each
      cases.push_back({SENTINEL_REC_COUNTERS, w, 0, "sample count 2"});
    }
    for (auto& c : cases) {
      for (int i = 0; i < 64; ++i) c.payload.u8(0);
      DumpBuilder d;
      d.record(c.type, c.payload);
      d.end();
      try {
        parse_profile(d.bytes());
        FAIL(c.needle << " accepted");
      } catch (const FormatError& e) {
        INFO(e.what());
        CHECK(contains(e.what(), c.needle));
        CHECK(e.offset() == 24 + 16 + c.count_at);
      }
    }
  }
}

TEST_CASE("format reader: truncating a 1.1 dump anywhere is an error, never a crash", "[format]") {
  auto spec = small_loop_spec();
  spec.phases[0].steps = 4;  // keep it small
  spec.phases[1].steps = 1;
  const auto bytes = make_loop_dump(spec).bytes;
  REQUIRE(parse_profile(bytes).identities.size() > 0);
  for (bool verify : {true, false}) {
    ParseOptions opt;
    opt.verify_checksums = verify;
    for (size_t t = 0; t < bytes.size(); ++t) {
      std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(t));
      try {
        parse_profile(cut, opt);
        FAIL("truncated dump accepted at " << t);
      } catch (const FormatError& e) {
        CHECK(e.offset() <= t);
      }
    }
  }
}
