// The dump reader against hand-built files (tests/fuzz/dump_builder.h writes them byte by byte).
#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "../fuzz/dump_builder.h"
#include "format_reader.h"

using sentinel::fmt::FormatError;
using sentinel::fmt::ParseOptions;
using sentinel::fmt::parse_profile;
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

TEST_CASE("format reader: a file cut at a record boundary reports where the data stopped",
          "[format]") {
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
  CHECK(contains(e.what(), "1.0"));
  CHECK(contains(e.what(), "newer"));

  DumpBuilder zero(0, 9);
  zero.end();
  CHECK(contains(parse_error(zero.bytes()).what(), "unsupported format version 0.9"));

  // A newer minor version: larger object entries and extra payload bytes are ignored.
  DumpBuilder minor(1, 7);
  minor.objects({make_object(0x1000, 5000, 1, 2, 0, 1, 9), make_object(0x3000, 7000, 3, 0, 1,
                                                                        UINT64_MAX, 9)},
                80);
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
