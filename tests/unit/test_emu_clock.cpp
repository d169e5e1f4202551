// base/emu_clock.h against counts files written as the slow-tier plugin writes them (its records' layout:
// tests/guest/plugin/slow_tier.c). On this machine the marker is a NOP, so the tests append the marker's
// record themselves, as the plugin does before the marking instruction completes.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "base/emu_clock.h"
#include "base/parse.h"

using namespace sentinel;

namespace {

struct CountsFile {
  std::string path;
  CountsFile() {
    char name[] = "/tmp/sentinel-emu-clock-XXXXXX";
    int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    close(fd);
    path = name;
    append(R"({"slow_tier":"optane","read_ns":300,"stream_ns":170,"write_ns":450,"vcpus":2,"fast0":0})");
  }
  ~CountsFile() { std::remove(path.c_str()); }
  void append(const std::string& line) const { std::ofstream(path, std::ios::app) << line << '\n'; }
  // A record as the plugin writes it: per vCPU user and kernel instructions, node 0's and node 1's
  // read, stream and write misses.
  void record(unsigned tag, const std::string& vcpus) const {
    static int mark = 0;
    append("{\"mark\":" + std::to_string(++mark) + ",\"tag\":" + std::to_string(tag) +
           R"(,"vcpu":1,"fast0":0,"host_ns":1,"insn":[0,0],"n0":[0,0,0],"n1":[0,0,0],"vcpus":[)" + vcpus +
           R"(],"cpu_ns":[1,2]})");
  }
};

TrialClockText priced(const std::string& path, const char* prices = "1000,0,0,0,300000,170000,450000") {
  TrialClockText t;
  REQUIRE(parse_trial_clock(("emulated:" + std::string(prices) + ":" + path).c_str(), &t));
  return t;
}

}  // namespace

TEST_CASE("emulated clock: a lap prices the busiest vCPU's counts since the previous one", "[emu_clock]") {
  CountsFile f;
  f.record(1, "[999,0,0,0,0,0,0,0],[0,0,0,0,0,0,0,0]");  // before open(): never counted
  EmuClock c;
  const char* why = nullptr;
  REQUIRE(c.open(priced(f.path), 4242, &why));
  CHECK(c.tag() == EmuClock::kTagBase + (4242 & 15));
  // Another program's marker, then this clock's: both records are the lap's.
  f.record(1, "[1000,500,7,7,7,2,0,0],[100,0,0,0,0,0,0,0]");
  f.record(c.tag(), "[500,0,0,0,0,0,1,0],[3000,0,0,0,0,0,0,0]");
  // A record after the clock's marker belongs to the next lap.
  f.record(2, "[0,0,0,0,0,0,0,0],[0,0,0,0,0,0,0,1000]");
  uint64_t ns = 0;
  REQUIRE(c.lap(&ns, &why));
  // vCPU 0: 2000 instructions at 1 ns, two node-1 reads at 300 and a stream at 170 (node 0 is not priced);
  // vCPU 1: 3100 instructions. The busiest is vCPU 1.
  CHECK(ns == 3100);
  f.record(c.tag(), "[0,0,0,0,0,0,0,0],[0,0,0,0,0,0,0,0]");
  REQUIRE(c.lap(&ns, &why));
  CHECK(ns == 450000);  // the 1000 writes on node 1 of the record left over
  f.record(c.tag(), "[100,100,0,0,0,1,1,1],[0,0,0,0,0,0,0,0]");
  REQUIRE(c.lap(&ns, &why));
  CHECK(ns == 200 + 300 + 170 + 450);
}

TEST_CASE("emulated clock: node 0's misses priced when asked, large counts saturate", "[emu_clock]") {
  CountsFile f;
  EmuClock c;
  const char* why = nullptr;
  REQUIRE(c.open(priced(f.path, "250,10150,8140,16280,30450,22792,73260"), 1, &why));
  f.record(c.tag(), "[4,0,1,1,1,1,1,1],[0,0,0,0,0,0,0,0]");
  uint64_t ns = 0;
  REQUIRE(c.lap(&ns, &why));
  CHECK(ns == (1000 + 10150 + 8140 + 16280 + 30450 + 22792 + 73260) / 1000);
  REQUIRE(c.open(priced(f.path, "1000000000,0,0,0,0,0,0"), 1, &why));
  f.record(c.tag(), "[10000000000000000000,10000000000000000000,0,0,0,0,0,0],[0,0,0,0,0,0,0,0]");
  REQUIRE(c.lap(&ns, &why));
  CHECK(ns == UINT64_MAX);
}

TEST_CASE("emulated clock: a missing file, no record and a malformed one are errors with a reason", "[emu_clock]") {
  EmuClock c;
  const char* why = nullptr;
  CHECK_FALSE(c.open(priced("/nonexistent/sentinel/counts"), 1, &why));
  CHECK(std::string(why).find("cannot open") != std::string::npos);
  CountsFile f;
  REQUIRE(c.open(priced(f.path), 1, &why));
  uint64_t ns = 0;
  CHECK_FALSE(c.lap(&ns, &why));  // no plugin: the marker is a NOP
  CHECK(std::string(why).find("no record") != std::string::npos);
  f.record(c.tag(), "[1,2,3],[0,0,0,0,0,0,0,0]");
  CHECK_FALSE(c.lap(&ns, &why));
  CHECK(std::string(why).find("not 8 numbers") != std::string::npos);
  REQUIRE(c.open(priced(f.path), 1, &why));
  f.append(R"({"mark":9,"vcpu":0,"vcpus":[[1,0,0,0,0,0,0,0]]})");
  CHECK_FALSE(c.lap(&ns, &why));
  CHECK(std::string(why).find("no tag") != std::string::npos);
}
