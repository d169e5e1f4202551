// Writes the seed corpus of the dump-reader fuzzer: gen-seeds DIR. The committed seeds in
// tests/fuzz/seeds/ were made with it (keep them small: a few hundred bytes each).
#include <cstdio>
#include <string>
#include <vector>

#include "dump_builder.h"
#include "training_dump.h"

using sentinel::testing::Bytes;
using sentinel::testing::DumpBuilder;
using sentinel::testing::make_object;

namespace {
bool put(const std::string& dir, const char* name, const std::vector<uint8_t>& b) {
  std::string path = dir + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    std::perror(path.c_str());
    return false;
  }
  bool ok = std::fwrite(b.data(), 1, b.size(), f) == b.size();
  return (std::fclose(f) == 0) && ok;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gen-seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = true;
  ok &= put(dir, "sample.prof", sentinel::testing::sample_dump());
  {
    DumpBuilder d;
    d.end();
    ok &= put(dir, "minimal.prof", d.bytes());
  }
  {
    DumpBuilder d(1, 4, 4);  // newer minor, 32-bit writer, wide entries, unknown record
    d.objects({make_object(0x1000, 4096, 1, 2, 0, 1, 0)}, 72);
    Bytes u;
    u.u32(3).str("xyz");
    d.record(99, u);
    d.sites({{0, 9, {0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80}}});
    d.end();
    ok &= put(dir, "newer-minor.prof", d.bytes());
  }
  {
    DumpBuilder d;
    d.process(1, 0, -1, 5, 9, "", {});
    d.config({"A=", "B=c=d"});
    d.topology(-1, -1, {}, -1, -1);
    d.module(0, {}, "", "");
    d.stats({{"", 0}});
    d.marks({{0, 0}, {UINT64_MAX, UINT64_MAX}});
    d.end();
    ok &= put(dir, "edges.prof", d.bytes());
  }
  {  // every 1.1 record type, small: a loop of 3 steps of 2 allocations, one profiled step
    sentinel::testing::LoopSpec s;
    s.executable = "py";
    s.argv = {"py"};
    s.weights = {{1, 65536}};
    sentinel::testing::LoopPhase ph;
    ph.pattern = {{2, 65536, 1}, {3, 131072, 3}};
    ph.steps = 3;
    ph.intervals = {{0, 1}, {1, 2}};
    s.phases = {ph};
    s.first_profiled = 1;
    s.profiled = 1;
    s.touches = {{0, -1, 0, 1.0}, {-1, 0, 0, 0.5}, {-1, 1, 1, 1.0}};
    s.counter_names = {"PAPI_TOT_INS"};
    ok &= put(dir, "profile.prof", sentinel::testing::make_loop_dump(s).bytes);
  }
  {  // 1.1 records with larger entries, an empty batch and trailing payload bytes
    DumpBuilder d(1, 3);
    sentinel_step_entry st{};
    st.allocations = 2;
    st.flags = SENTINEL_STEP_EXPLICIT;
    d.steps({st, st}, 36);
    d.steps({}, 32);
    d.intervals(0, 2, {{0, 1}, {1, 2}, {2, 1}});
    sentinel_identity id{};
    id.size = 4096;
    id.ordinal = id.birth_interval = id.death_interval = SENTINEL_NO_ORDINAL;
    id.lifetime = SENTINEL_LIFE_PERSISTENT;
    d.identities({id}, 60);
    d.touches({sentinel_touch{0, 1, 4096, 1, 0, 0, 0}, sentinel_touch{9, 70, 1, 1, 3, 0, 0}}, 28);
    sentinel_group g{};
    g.interval_mask = ~uint64_t{0};
    d.groups({g}, 40);
    d.counters(0, {{0, 0, 5, {}}});
    d.profile(2 << 20, 1, 0, 0, 1, 2, 3, {"", "x"});
    d.end();
    ok &= put(dir, "profile-wide.prof", d.bytes());
  }
  {  // every 1.2 record: the small loop above as 1.2, with TIERING, PLAN and the migrator's records
    sentinel::testing::LoopSpec s;
    s.executable = "py";
    s.argv = {"py"};
    s.weights = {{1, 65536}};
    sentinel::testing::LoopPhase ph;
    ph.pattern = {{2, 65536, 1}, {3, 131072, 3}};
    ph.steps = 3;
    ph.intervals = {{0, 1}, {1, 2}};
    s.phases = {ph};
    s.first_profiled = 1;
    s.profiled = 1;
    s.touches = {{0, -1, 0, 1.0}, {-1, 0, 0, 0.5}, {-1, 1, 1, 1.0}};
    s.format_12 = true;
    s.extra = [](DumpBuilder& d, const sentinel::testing::LoopDump& l) {
      sentinel_tiering t{};
      t.policy = SENTINEL_POLICY_SENTINEL;
      t.slow_node = 1;
      t.flags = SENTINEL_TIER_BUDGET_SHARE;
      t.fast_budget_bytes = 65536;
      t.budget_share_ppm = 200000;
      t.migrate_bytes_per_s = 1 << 30;
      d.tiering(t);
      sentinel_plan_header h{};
      h.intervals = 2;
      h.fast_budget_bytes = 65536;
      std::vector<sentinel_plan_entry> e;
      for (const auto& id : l.identities) e.push_back({id.id, SENTINEL_PLAN_BIRTH_FAST, 1, 3, 0, 0});
      d.plan(h, e);
      d.migrations({{0, 1, 65536, 0, 1000, 1, 0, 0, 1, 65536, 65536}});
      d.migration_log({{10, 20, 65536, 0, 1, 1, SENTINEL_MIGRATE_TO_FAST, 0, 0}});
      d.placement({{0, 0, 65536, 32768, 1, 0, 0, 0}});
      d.detection({{0, SENTINEL_DETECT_LOCKED, 2, 2, 3, 0, 0, 1, 0, 0}});
    };
    ok &= put(dir, "tiering.prof", sentinel::testing::make_loop_dump(s).bytes);
  }
  {  // 1.2 records with larger entries and headers, empty batches, a phase-less 1.1 COUNTERS
    DumpBuilder d(1, 5);
    sentinel_tiering t{};
    t.fast_node = -1;
    t.slow_node = -1;
    d.tiering(t, 136);
    sentinel_plan_header h{};
    h.phase = 3;
    h.intervals = 64;
    d.plan(h, {{7, 3, ~uint64_t{0}, 1, 0, 0}}, 80, 40);
    d.plan(h, {});
    d.migrations({}, 72);
    d.migration_log({{0, 0, 0, 0, 0, 0, 0, 0, 0}}, 56);
    d.placement({{1, 2, 3, 4, 5, 0, 0, 0}}, 48);
    d.detection({{0, SENTINEL_DETECT_NO_STEP, 0, 0, 0, 9, 0, 0, 0, 0}}, 72);
    d.phase_counters(5, 1, {{0, 0, 5, {7}}});
    d.counters(0, {{0, 1, 6, {}}});
    d.profile(8192, 1, 4, 0, 0, 0, 0);
    d.end();
    ok &= put(dir, "tiering-wide.prof", d.bytes());
  }
  return ok ? 0 : 1;
}
