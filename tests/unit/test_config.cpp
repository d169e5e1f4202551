#include <signal.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "base/config.h"
#include "base/launch.h"
#include "base/policy_names.h"
#include "parse_cases.h"
#include "sentinel/format.h"

using namespace sentinel;

namespace {
bool parse(std::initializer_list<const char*> env, Config* c, ConfigError* e) {
  std::vector<const char*> v(env);
  v.push_back(nullptr);
  return parse_config(v.data(), c, e);
}
}  // namespace

TEST_CASE("defaults come from the table", "[config]") {
  Config c;
  ConfigError e;
  REQUIRE(parse({"PATH=/bin"}, &c, &e));
  CHECK(c.mode == Mode::run);
  CHECK(c.min_bytes == 65536);
  CHECK(std::string(c.dump) == "sentinel-%e.%p.prof");
  CHECK(c.log == LogLevel::warn);
  CHECK(c.retain_bytes == (uint64_t{1} << 30));
  CHECK(c.max_objects == 4194304);
  CHECK_FALSE(c.dump_children);
  CHECK(c.unwind == UnwindMethod::backtrace);
  CHECK(c.profile_sample == 8);
  CHECK(c.profile_sample_min == (uint64_t{256} << 20));
}

TEST_CASE("values override defaults", "[config]") {
  Config c;
  ConfigError e;
  REQUIRE(parse({"SENTINEL_MODE=off", "SENTINEL_MIN_BYTES=1M", "SENTINEL_DUMP=/tmp/x.%p", "SENTINEL_LOG=debug",
                 "SENTINEL_DUMP_CHILDREN=yes", "SENTINEL_UNWIND=libunwind", "SENTINEL_MAX_OBJECTS=10"},
                &c, &e));
  CHECK(c.mode == Mode::off);
  CHECK(c.min_bytes == 1048576);
  CHECK(std::string(c.dump) == "/tmp/x.%p");
  CHECK(c.log == LogLevel::debug);
  CHECK(c.dump_children);
  CHECK(c.unwind == UnwindMethod::libunwind);
  CHECK(c.max_objects == 10);
  REQUIRE(parse({"SENTINEL_DUMP=none"}, &c, &e));
  CHECK(std::string(c.dump).empty());
}

TEST_CASE("the snapshot signal: off, or USR1 or USR2 in either case, with or without SIG", "[config]") {
  Config c;
  ConfigError e;
  REQUIRE(parse({}, &c, &e));
  CHECK(c.snapshot_signal == 0);
  for (const char* kv : {"SENTINEL_SNAPSHOT_SIGNAL=USR1", "SENTINEL_SNAPSHOT_SIGNAL=SIGUSR1",
                         "SENTINEL_SNAPSHOT_SIGNAL=usr1", "SENTINEL_SNAPSHOT_SIGNAL=sigusr1"}) {
    REQUIRE(parse({kv}, &c, &e));
    CHECK(c.snapshot_signal == SIGUSR1);
  }
  REQUIRE(parse({"SENTINEL_SNAPSHOT_SIGNAL=USR2"}, &c, &e));
  CHECK(c.snapshot_signal == SIGUSR2);
  // The dump's CONFIG string names it as the table's words do.
  size_t n = 0;
  const VarSpec* t = config_table(&n);
  for (size_t i = 0; i < n; ++i) {
    char buf[256];
    format_config_entry(c, i, buf, sizeof(buf));
    if (std::string(t[i].name) == "SENTINEL_SNAPSHOT_SIGNAL")
      CHECK(std::string(buf) == "SENTINEL_SNAPSHOT_SIGNAL=USR2");
  }
  REQUIRE(parse({"SENTINEL_SNAPSHOT_SIGNAL=off"}, &c, &e));
  CHECK(c.snapshot_signal == 0);
}

TEST_CASE("the snapshot period: off, or a duration from 1 s to a week", "[config]") {
  Config c;
  ConfigError e;
  REQUIRE(parse({}, &c, &e));
  CHECK(c.snapshot_every_s == 0);
  struct Case {
    const char* kv;
    uint64_t seconds;
    const char* recorded;  // as the dump's CONFIG string gives it
  } cases[] = {{"SENTINEL_SNAPSHOT_EVERY=90", 90, "90s"},   {"SENTINEL_SNAPSHOT_EVERY=10m", 600, "10m"},
               {"SENTINEL_SNAPSHOT_EVERY=120s", 120, "2m"}, {"SENTINEL_SNAPSHOT_EVERY=2h", 7200, "2h"},
               {"SENTINEL_SNAPSHOT_EVERY=off", 0, "off"},   {"SENTINEL_SNAPSHOT_EVERY=0", 0, "off"}};
  size_t n = 0;
  const VarSpec* t = config_table(&n);
  for (const Case& k : cases) {
    CAPTURE(k.kv);
    REQUIRE(parse({k.kv}, &c, &e));
    CHECK(c.snapshot_every_s == k.seconds);
    for (size_t i = 0; i < n; ++i) {
      char buf[256];
      format_config_entry(c, i, buf, sizeof(buf));
      if (std::string(t[i].name) == "SENTINEL_SNAPSHOT_EVERY")
        CHECK(std::string(buf) == std::string("SENTINEL_SNAPSHOT_EVERY=") + k.recorded);
    }
  }
}

TEST_CASE("malformed values name the variable and the value", "[config]") {
  struct Case {
    const char* kv;
    const char* name;
    const char* value;
  } cases[] = {
      {"SENTINEL_MIN_BYTES=12QB", "SENTINEL_MIN_BYTES", "12QB"},
      {"SENTINEL_MIN_BYTES=-5", "SENTINEL_MIN_BYTES", "-5"},
      {"SENTINEL_MIN_BYTES=0", "SENTINEL_MIN_BYTES", "0"},
      {"SENTINEL_MODE=bogus", "SENTINEL_MODE", "bogus"},
      {"SENTINEL_LOG=loud", "SENTINEL_LOG", "loud"},
      {"SENTINEL_DUMP_CHILDREN=maybe", "SENTINEL_DUMP_CHILDREN", "maybe"},
      {"SENTINEL_SNAPSHOT_SIGNAL=HUP", "SENTINEL_SNAPSHOT_SIGNAL", "HUP"},
      {"SENTINEL_SNAPSHOT_SIGNAL=SIG", "SENTINEL_SNAPSHOT_SIGNAL", "SIG"},
      {"SENTINEL_SNAPSHOT_SIGNAL=10", "SENTINEL_SNAPSHOT_SIGNAL", "10"},
      {"SENTINEL_SNAPSHOT_SIGNAL=OFF", "SENTINEL_SNAPSHOT_SIGNAL", "OFF"},
      {"SENTINEL_SNAPSHOT_EVERY=10ms", "SENTINEL_SNAPSHOT_EVERY", "10ms"},
      {"SENTINEL_SNAPSHOT_EVERY=1d", "SENTINEL_SNAPSHOT_EVERY", "1d"},
      {"SENTINEL_SNAPSHOT_EVERY=200h", "SENTINEL_SNAPSHOT_EVERY", "200h"},
      {"SENTINEL_SNAPSHOT_EVERY=-5", "SENTINEL_SNAPSHOT_EVERY", "-5"},
      {"SENTINEL_MAX_OBJECTS=1e6", "SENTINEL_MAX_OBJECTS", "1e6"},
      {"SENTINEL_RETAIN_BYTES=lots", "SENTINEL_RETAIN_BYTES", "lots"},
      {"SENTINEL_STEP=65537", "SENTINEL_STEP", "65537"},
      {"SENTINEL_STEP=sometimes", "SENTINEL_STEP", "sometimes"},
      {"SENTINEL_PROFILE_GRANULARITY=12K", "SENTINEL_PROFILE_GRANULARITY", "12K"},
      {"SENTINEL_PROFILE_GRANULARITY=4M", "SENTINEL_PROFILE_GRANULARITY", "4M"},
      {"SENTINEL_INTERVALS=65", "SENTINEL_INTERVALS", "65"},
      {"SENTINEL_PROFILE_SAMPLE=3", "SENTINEL_PROFILE_SAMPLE", "3"},
      {"SENTINEL_PROFILE_SAMPLE=0", "SENTINEL_PROFILE_SAMPLE", "0"},
      {"SENTINEL_PROFILE_SAMPLE=128", "SENTINEL_PROFILE_SAMPLE", "128"},
      {"SENTINEL_PROFILE_SAMPLE_MIN=huge", "SENTINEL_PROFILE_SAMPLE_MIN", "huge"},
      {"SENTINEL_PAPI=maybe", "SENTINEL_PAPI", "maybe"},
      {"SENTINEL_MODE=PROFILE", "SENTINEL_MODE", "PROFILE"},
      {"SENTINEL_LOG=Debug", "SENTINEL_LOG", "Debug"},
      {"SENTINEL_POLICY=lru", "SENTINEL_POLICY", "lru"},
      {"SENTINEL_POLICY=Sentinel", "SENTINEL_POLICY", "Sentinel"},
      {"SENTINEL_FAST_BYTES=0", "SENTINEL_FAST_BYTES", "0"},
      {"SENTINEL_FAST_BYTES=0%", "SENTINEL_FAST_BYTES", "0%"},
      {"SENTINEL_FAST_BYTES=120%", "SENTINEL_FAST_BYTES", "120%"},
      {"SENTINEL_FAST_BYTES=20 %", "SENTINEL_FAST_BYTES", "20 %"},
      {"SENTINEL_FAST_BYTES=lots", "SENTINEL_FAST_BYTES", "lots"},
      {"SENTINEL_FAST_NODE=-1", "SENTINEL_FAST_NODE", "-1"},
      {"SENTINEL_SLOW_NODE=one", "SENTINEL_SLOW_NODE", "one"},
      {"SENTINEL_MIGRATE=copy", "SENTINEL_MIGRATE", "copy"},
      {"SENTINEL_CHECK_STEPS=65", "SENTINEL_CHECK_STEPS", "65"},
      {"SENTINEL_FAULT_INJECT=move_fail", "SENTINEL_FAULT_INJECT", "move_fail"},
      {"SENTINEL_FAULT_INJECT=move_fail:101", "SENTINEL_FAULT_INJECT", "move_fail:101"},
      {"SENTINEL_FAULT_INJECT=explode", "SENTINEL_FAULT_INJECT", "explode"},
  };
  for (const Case& k : cases) {
    Config c;
    ConfigError e;
    INFO(k.kv);
    REQUIRE_FALSE(parse({"SENTINEL_LOG=info", k.kv}, &c, &e));
    CHECK(std::string(e.name) == k.name);
    CHECK(std::string(e.value) == k.value);
    CHECK(std::strlen(e.reason) > 0);
  }
}

TEST_CASE("SENTINEL_STEP_COSTS takes the rows of the shared table", "[config]") {
  Config c;
  ConfigError e;
  REQUIRE(parse({"PATH=/bin"}, &c, &e));
  CHECK(c.step_costs.kind == StepCostsKind::automatic);  // the default: measured, then fitted (a dry run: none)
  for (const auto& k : test::kStepCostsCases) {
    const std::string kv = std::string("SENTINEL_STEP_COSTS=") + k.text;
    INFO(kv);
    Config d;
    ConfigError err;
    REQUIRE(parse({kv.c_str()}, &d, &err) == k.ok);
    if (!k.ok) {
      CHECK(std::string(err.name) == "SENTINEL_STEP_COSTS");
      CHECK(std::string(err.value) == k.text);
      CHECK(std::strlen(err.reason) > 0);
      continue;
    }
    CHECK(static_cast<uint8_t>(d.step_costs.kind) == k.kind);
    CHECK(d.step_costs.slow_ns_per_kib == k.slow_ns_per_kib);
    CHECK(d.step_costs.move_ns_per_kib == k.move_ns_per_kib);
    // It renders back as it was written (the CONFIG record of a dump).
    size_t n;
    const VarSpec* t = config_table(&n);
    for (size_t i = 0; i < n; ++i) {
      if (std::string(t[i].name) != "SENTINEL_STEP_COSTS") continue;
      char buf[128];
      format_config_entry(d, i, buf, sizeof buf);
      CHECK(std::string(buf) == kv);
    }
  }
  REQUIRE_FALSE(parse({"SENTINEL_STEP_COSTS=Auto"}, &c, &e));
  CHECK(std::string(e.reason).find("lower case") != std::string::npos);
}

TEST_CASE("keyword values are lower case; a wrong case gets a hint", "[config]") {
  Config c;
  ConfigError e;
  REQUIRE_FALSE(parse({"SENTINEL_MODE=PROFILE"}, &c, &e));
  CHECK(std::string(e.reason).find("lower case") != std::string::npos);
  REQUIRE_FALSE(parse({"SENTINEL_MODE=bogus"}, &c, &e));
  CHECK(std::string(e.reason) == "unknown mode (expected off, track, profile or run)");
}

TEST_CASE("tiering variables", "[config]") {
  Config c;
  ConfigError e;
  REQUIRE(parse({"PATH=/bin"}, &c, &e));
  CHECK(c.policy == 0);
  CHECK(c.fast_auto);
  CHECK(c.fast_node == -1);
  CHECK(c.slow_node == -1);
  CHECK(c.move_method == MoveMethod::automatic);
  CHECK(c.check_steps == 2);
  CHECK(c.check_after == 3);
  CHECK_FALSE(c.faults.any());
  REQUIRE(parse({"SENTINEL_MODE=run", "SENTINEL_POLICY=first-touch", "SENTINEL_FAST_BYTES=20%", "SENTINEL_FAST_NODE=0",
                 "SENTINEL_SLOW_NODE=3", "SENTINEL_MIGRATE=mbind",
                 "SENTINEL_FAULT_INJECT=move_fail:30,fast_full,move_delay_ms:5,move_slow_x:3,move_delay_from:400"},
                &c, &e));
  CHECK(c.mode == Mode::run);
  CHECK(c.policy == 1);
  CHECK_FALSE(c.fast_auto);
  CHECK(c.fast_share_ppm == 200000);
  CHECK(c.fast_bytes == 0);
  CHECK(c.fast_node == 0);
  CHECK(c.slow_node == 3);
  CHECK(c.move_method == MoveMethod::mbind);
  CHECK(c.faults.move_fail_percent == 30);
  CHECK(c.faults.fast_full);
  CHECK(c.faults.move_delay_ms == 5);
  CHECK(c.faults.move_slow_x == 3);
  CHECK(c.faults.move_delay_from == 400);
  REQUIRE(parse({"SENTINEL_FAST_BYTES=12.5%"}, &c, &e));
  CHECK(c.fast_share_ppm == 125000);
  REQUIRE(parse({"SENTINEL_FAST_BYTES=512M"}, &c, &e));
  CHECK(c.fast_bytes == (uint64_t{512} << 20));
  CHECK(c.fast_share_ppm == 0);
  // The effective values round-trip through the dump's CONFIG strings.
  size_t n = 0;
  const VarSpec* t = config_table(&n);
  REQUIRE(parse({"SENTINEL_FAST_BYTES=12.5%", "SENTINEL_FAULT_INJECT=fast_full,move_fail:7"}, &c, &e));
  for (size_t i = 0; i < n; ++i) {
    char buf[256];
    format_config_entry(c, i, buf, sizeof(buf));
    std::string kv(buf);
    if (std::string(t[i].name) == "SENTINEL_FAST_BYTES") CHECK(kv == "SENTINEL_FAST_BYTES=12.5%");
    if (std::string(t[i].name) == "SENTINEL_FAULT_INJECT") CHECK(kv == "SENTINEL_FAULT_INJECT=move_fail:7,fast_full");
    if (std::string(t[i].name) == "SENTINEL_FAST_NODE") CHECK(kv == "SENTINEL_FAST_NODE=auto");
  }
  // Every policy by its name, in enum sentinel_policy's order, and back.
  for (uint32_t k = 0; k < kPolicyCount; ++k) {
    REQUIRE(parse({(std::string("SENTINEL_POLICY=") + kPolicyNames[k]).c_str()}, &c, &e));
    CHECK(c.policy == k);
    for (size_t i = 0; i < n; ++i) {
      char buf[256];
      format_config_entry(c, i, buf, sizeof(buf));
      if (std::string(t[i].name) == "SENTINEL_POLICY")
        CHECK(std::string(buf) == std::string("SENTINEL_POLICY=") + kPolicyNames[k]);
    }
  }
  CHECK(c.policy == SENTINEL_POLICY_INTERLEAVE);
  REQUIRE_FALSE(parse({"SENTINEL_POLICY=weighted"}, &c, &e));
  CHECK(std::string(e.reason) ==
        "unknown policy (expected sentinel, first-touch, all-slow, all-fast, hot or interleave)");
}

TEST_CASE("unknown SENTINEL_ variables are counted, not fatal", "[config]") {
  Config c;
  ConfigError e;
  int unknown = 0;
  const char* first = nullptr;
  const char* env[] = {"SENTINEL_MIN_BYTE=4K", "SENTINEL_FOO=1", "SENTINELX=1", nullptr};
  REQUIRE(parse_config(env, &c, &e, &unknown, &first));
  CHECK(unknown == 2);
  CHECK(std::string(first) == "SENTINEL_MIN_BYTE=4K");
}

TEST_CASE("dump path templates expand", "[config]") {
  char out[64];
  REQUIRE(expand_dump_path("sentinel-%e.%p.prof", 1234, "python3", -1, out, sizeof(out)));
  CHECK(std::string(out) == "sentinel-python3.1234.prof");
  REQUIRE(expand_dump_path("a%%b%q%", 1, "x", -1, out, sizeof(out)));
  CHECK(std::string(out) == "a%b%q%");
  CHECK_FALSE(expand_dump_path("%e%e%e%e%e%e%e%e", 1, "abcdefghij", -1, out, sizeof(out)));
  REQUIRE(expand_dump_path("job-%r.%p.prof", 7, "python3", 3, out, sizeof(out)));
  CHECK(std::string(out) == "job-3.7.prof");
  REQUIRE(expand_dump_path("job-%r.prof", 7, "python3", -1, out, sizeof(out)));
  CHECK(std::string(out) == "job-norank.prof");
}

TEST_CASE("a job's ranks from the launcher's environment", "[config]") {
  const char* none[] = {"PATH=/bin", nullptr};
  Launch l = read_launch(none);
  CHECK((l.rank == -1 && l.local_rank == -1 && l.world_size == 0 && l.sharing() == 1));
  const char* torchrun[] = {"RANK=5", "LOCAL_RANK=1", "WORLD_SIZE=8", "LOCAL_WORLD_SIZE=4", "SLURM_PROCID=0", nullptr};
  l = read_launch(torchrun);
  CHECK((l.rank == 5 && l.local_rank == 1 && l.world_size == 8 && l.local_world_size == 4 && l.sharing() == 4));
  const char* mpi[] = {"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_LOCAL_SIZE=2", nullptr};
  l = read_launch(mpi);
  CHECK((l.rank == 2 && l.sharing() == 2));
  const char* slurm[] = {"SLURM_PROCID=3", "SLURM_NTASKS_PER_NODE=2(x3)", "RANK=x", nullptr};
  l = read_launch(slurm);
  CHECK((l.rank == 3 && l.sharing() == 1));  // "2(x3)" is not a count: nothing is split
}

TEST_CASE("every table entry is documented in docs/config.md with its default", "[config]") {
  std::ifstream f(SENTINEL_SOURCE_DIR "/docs/config.md");
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  std::string doc = ss.str();
  size_t n;
  const VarSpec* t = config_table(&n);
  for (size_t i = 0; i < n; ++i) {
    INFO(t[i].name);
    std::string row = std::string("| `") + t[i].name + "` |";
    auto at = doc.find(row);
    REQUIRE(at != std::string::npos);
    std::string line = doc.substr(at, doc.find('\n', at) - at);
    CHECK(line.find(std::string("`") + t[i].default_value + "`") != std::string::npos);
  }
}

TEST_CASE("effective config renders back", "[config]") {
  Config c;
  ConfigError e;
  REQUIRE(parse({"SENTINEL_MIN_BYTES=4K"}, &c, &e));
  size_t n;
  const VarSpec* t = config_table(&n);
  char buf[256];
  bool saw = false;
  for (size_t i = 0; i < n; ++i) {
    format_config_entry(c, i, buf, sizeof(buf));
    if (std::strcmp(t[i].name, "SENTINEL_MIN_BYTES") == 0) {
      CHECK(std::string(buf) == "SENTINEL_MIN_BYTES=4096");
      saw = true;
    }
  }
  CHECK(saw);
}
