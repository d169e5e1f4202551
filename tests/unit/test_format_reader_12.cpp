// The reader on format 1.2 (docs/format.md): identity occurrence and flags, group phase,
// PHASE_COUNTERS, TIERING, PLAN, MIGRATIONS, MIGRATION_LOG, PLACEMENT, DETECTION, written with the
// test dump builder (tests/fuzz/dump_builder.h), and 1.1 dumps read as before.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
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

namespace {

FormatError error_of(const std::vector<uint8_t>& bytes) {
  try {
    parse_profile(bytes);
  } catch (const FormatError& e) {
    return e;
  }
  FAIL("parse_profile accepted an invalid dump");
  return FormatError(0, "");
}

bool has(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

sentinel_tiering sample_tiering() {
  sentinel_tiering t{};
  t.policy = SENTINEL_POLICY_HOT;
  t.fast_node = 0;
  t.slow_node = -1;
  t.flags = SENTINEL_TIER_BUDGET_SHARE | SENTINEL_TIER_BALANCING_ON;
  t.fast_budget_bytes = 0x1122334455ull;
  t.budget_share_ppm = 250000;
  t.move_method = 1;
  uint64_t v = 1000;
  for (uint64_t* f : {&t.migrate_bytes_per_s, &t.fallback_objects, &t.fallback_bytes, &t.pinned_objects,
                      &t.pinned_bytes, &t.fast_peak_bytes, &t.migrated_bytes, &t.late_migrations, &t.failed_pages,
                      &t.raced_frees, &t.placed_at_birth_fast, &t.placed_at_birth_slow})
    *f = v++ * 0x10001;
  return t;
}

sentinel_plan_header sample_header() {
  sentinel_plan_header h{};
  h.phase = 2;
  h.policy = SENTINEL_POLICY_SENTINEL;
  h.intervals = 16;
  h.lead_intervals = 3;
  h.fast_budget_bytes = 4ull << 30;
  h.footprint_peak_bytes = 9ull << 30;
  h.fast_peak_bytes = (4ull << 30) - 7;
  h.fast_pool_bytes = 1ull << 28;
  h.moved_bytes_per_step = 123456789;
  h.predicted_hit_ppm = 987654;
  h.flags = SENTINEL_TIER_DRY_RUN;
  h.migrate_bytes_per_s = 3ull << 30;
  return h;
}

// A PLAN record's start: u32 size, the first `size` bytes of header h, no entries (entry size 24 or 32).
Bytes plan_head(const sentinel_plan_header& h, uint32_t size, uint32_t entry_size) {
  Bytes b;
  b.u32(size);
  const uint8_t* hp = reinterpret_cast<const uint8_t*>(&h);
  for (size_t i = 0; i < size; ++i) b.u8(hp[i]);
  b.u32(0).u32(entry_size);
  return b;
}

// A dump of one PLAN record with payload b.
std::vector<uint8_t> plan_dump(const Bytes& b) {
  DumpBuilder d;
  d.record(SENTINEL_REC_PLAN, b);
  d.end();
  return d.bytes();
}

// A 1.6 trial's 88 bytes (after its u32 size): done, both schedules timed, not re-planned, the one
// without moves kept. The 1.7 and 1.9 tests append their fields to it.
void put_trial_88(Bytes& b) {
  b.u32(SENTINEL_TRIAL_DONE).u32(2).u64(1500000).u64(1200000).u64(4096).u32(970000).u32(600000).u32(2).u32(2);
  b.u64(0).u64(0).u64(0).u32(0).u32(0).u32(SENTINEL_REPLAN_WITHIN).u32(SENTINEL_TRIAL_KEPT_FIXED);
}

// A 1.2 dump with one of each record (and the 1.2 identity and group fields).
std::vector<uint8_t> dump12(uint32_t pad = 0) {
  DumpBuilder d;
  sentinel_identity id{};
  id.id = 5;
  id.size = 65536;
  id.ordinal = 7;
  id.phase = 2;
  id.birth_interval = 1;
  id.death_interval = 3;
  id.lifetime = SENTINEL_LIFE_STEP;
  id.occurrence = 2;
  id.flags = SENTINEL_IDENTITY_PINNED;
  d.identities({id}, 64 + pad, true);
  sentinel_group g{};
  g.id = 9;
  g.phase = 2;
  g.members = 1;
  d.groups({g}, 40 + pad, true);
  d.phase_counters(2, 1, {{0, 4, 777, {42}}});
  d.tiering(sample_tiering(), 128 + pad);
  d.plan(sample_header(), {{5, SENTINEL_PLAN_POOL | SENTINEL_PLAN_BIRTH_FAST, 0xF0, 0x30, 0, 0}}, 72 + pad, 24 + pad);
  d.migrations({{2, 4, 1000, 2000, 3000, 4, 1, 9, 10, 5000, 6000}}, 64 + pad);
  d.migration_log({{11, 22, 33, 2, 4, 5, SENTINEL_MIGRATE_TO_FAST | SENTINEL_MIGRATE_LATE, 6, 0}}, 48 + pad);
  d.placement({{2, 4, 8000, 6000, 10, 3, 12, 0}}, 40 + pad);
  d.detection({{0, SENTINEL_DETECT_LOCKED | SENTINEL_DETECT_LOST, 61, 40, 100, 7, 8, 3, 1, 1}}, 64 + pad);
  d.end();
  return d.bytes();
}

void check_dump12(const Profile& p) {
  REQUIRE(p.identities.size() == 1);
  CHECK(p.identities[0].occurrence == 2);
  CHECK(p.identities[0].flags == SENTINEL_IDENTITY_PINNED);
  REQUIRE(p.groups.size() == 1);
  CHECK(p.groups[0].phase == 2);
  REQUIRE(p.counters.size() == 1);
  CHECK(p.counters[0].phase == 2);
  CHECK(p.counters[0].interval == 4);
  CHECK(p.counters[0].duration_ns == 777);
  CHECK(p.counters[0].values == std::vector<uint64_t>{42});
  REQUIRE(p.tiering.size() == 1);
  const sentinel_tiering want = sample_tiering();
  CHECK(std::memcmp(&p.tiering[0], &want, sizeof want) == 0);
  REQUIRE(p.plans.size() == 1);
  const sentinel_plan_header h = sample_header();
  CHECK(std::memcmp(&p.plans[0].header, &h, sizeof h) == 0);
  REQUIRE(p.plans[0].entries.size() == 1);
  const sentinel_plan_entry& e = p.plans[0].entries[0];
  CHECK((e.identity == 5 && e.flags == 3 && e.fast_mask == 0xF0 && e.touch_mask == 0x30));
  CHECK(p.plan_for(2) == &p.plans[0]);
  CHECK(p.plan_for(0) == nullptr);
  REQUIRE(p.migrations.size() == 1);
  const sentinel_migration_entry& m = p.migrations[0];
  CHECK((m.phase == 2 && m.interval == 4 && m.bytes_to_fast == 1000 && m.bytes_to_slow == 2000 &&
         m.migrate_ns == 3000 && m.moves == 4 && m.late == 1 && m.failed_pages == 9 && m.steps == 10 &&
         m.fast_bytes_max == 5000 && m.fast_bytes_sum == 6000));
  REQUIRE(p.migration_log.size() == 1);
  const sentinel_migration_batch& b = p.migration_log[0];
  CHECK((b.start_ns == 11 && b.end_ns == 22 && b.bytes == 33 && b.phase == 2 && b.interval == 4 && b.objects == 5 &&
         b.flags == 3 && b.failed_pages == 6));
  REQUIRE(p.placement.size() == 1);
  const sentinel_placement_entry& pl = p.placement[0];
  CHECK((pl.phase == 2 && pl.interval == 4 && pl.touched_bytes == 8000 && pl.fast_bytes == 6000 && pl.steps == 10 &&
         pl.misplaced == 3 && pl.verified == 12));
  REQUIRE(p.detection.size() == 1);
  const sentinel_detection& dt = p.detection[0];
  CHECK((dt.phase == 0 && dt.flags == 3 && dt.period == 61 && dt.distinct_tokens == 40 && dt.steps == 100 &&
         dt.noise_allocations == 7 && dt.missing_allocations == 8 && dt.locks == 3 && dt.unlocks == 1 &&
         dt.retracted == 1));
  CHECK(p.has_tiering_records());
  CHECK(p.skipped_records == 0);
}

}  // namespace

TEST_CASE("format reader 1.2: every tiering record and the appended fields decode", "[format]") {
  check_dump12(parse_profile(dump12()));
}

TEST_CASE("format reader 1.2: larger entries and headers decode from their known prefix", "[format]") {
  check_dump12(parse_profile(dump12(8)));
}

TEST_CASE("format reader 1.2: 1.1 COUNTERS and groups take the PROFILE record's phase", "[format]") {
  auto spec = sentinel::testing::small_loop_spec();
  spec.profiled_phase = 1;  // the evaluation phase is profiled
  spec.first_profiled = 0;
  spec.profiled = 2;
  spec.touches = {{-1, 0, 0, 1.0}, {0, -1, 1, 0.5}};
  const auto loop = sentinel::testing::make_loop_dump(spec);
  Profile p = parse_profile(loop.bytes);
  CHECK(p.major == 1);
  REQUIRE_FALSE(p.counters.empty());
  for (const auto& c : p.counters) CHECK(c.phase == 1);
  REQUIRE_FALSE(p.groups.empty());
  for (const auto& g : p.groups) CHECK(g.phase == 1);
  for (const auto& id : p.identities) {  // 56-byte entries: no occurrence, OUTSIDE from the ordinal
    CHECK(id.occurrence == SENTINEL_NO_ORDINAL);
    CHECK(id.flags == (id.ordinal == SENTINEL_NO_ORDINAL ? SENTINEL_IDENTITY_OUTSIDE : 0u));
  }
  CHECK_FALSE(p.has_tiering_records());

  // The same loop written as 1.2: PHASE_COUNTERS and 40-byte groups name the phase themselves.
  spec.format_12 = true;
  Profile q = parse_profile(sentinel::testing::make_loop_dump(spec).bytes);
  REQUIRE(q.counters.size() == p.counters.size());
  for (const auto& c : q.counters) CHECK(c.phase == 1);
  for (const auto& g : q.groups) CHECK(g.phase == 1);
  bool outside = false, in_step = false;
  for (const auto& id : q.identities) {
    if (id.ordinal == SENTINEL_NO_ORDINAL) {
      outside = true;
      CHECK(id.flags == SENTINEL_IDENTITY_OUTSIDE);
    } else {
      in_step = true;
      CHECK(id.occurrence != SENTINEL_NO_ORDINAL);
    }
  }
  CHECK((outside && in_step));
}

TEST_CASE("format reader 1.2: entry and header sizes below the 1.2 sizes are refused", "[format]") {
  struct Case {
    uint32_t type;
    uint32_t min;
    const char* needle;  // after "RECORD record: "
    bool count_first;    // "u32 count, u32 entry_size" (else the size comes first)
  };
  for (const Case& c :
       {Case{SENTINEL_REC_TIERING, 128, "entry size", false}, Case{SENTINEL_REC_PLAN, 72, "header size", false},
        Case{SENTINEL_REC_MIGRATIONS, 64, "entry size", true}, Case{SENTINEL_REC_MIGRATION_LOG, 48, "entry size", true},
        Case{SENTINEL_REC_PLACEMENT, 32, "entry size", true}, Case{SENTINEL_REC_DETECTION, 64, "entry size", true}}) {
    for (uint32_t size : {0u, c.min - 1}) {
      Bytes b;
      if (c.count_first) b.u32(1);
      b.u32(size);
      for (uint32_t i = 0; i < 200; ++i) b.u8(0);
      DumpBuilder d;
      d.record(c.type, b);
      d.end();
      const FormatError e = error_of(d.bytes());
      const std::string name = sentinel::fmt::record_type_name(c.type);
      INFO(e.what());
      CHECK(e.offset() == 24 + 16 + (c.count_first ? 4u : 0u));
      CHECK(has(e.what(), name + " record: " + c.needle + " " + std::to_string(size) + " is smaller than " +
                              std::to_string(c.min)));
    }
  }
  // The entries of a PLAN record: after its header, "u32 count, u32 entry_size" (24 at least).
  Bytes b;
  b.u32(72);
  for (int i = 0; i < 72; ++i) b.u8(0);
  b.u32(1).u32(23);
  for (int i = 0; i < 24; ++i) b.u8(0);
  DumpBuilder d;
  d.record(SENTINEL_REC_PLAN, b);
  d.end();
  const FormatError e = error_of(d.bytes());
  CHECK(e.offset() == 24 + 16 + 4 + 72 + 4);
  CHECK(has(e.what(), "PLAN record: entry size 23 is smaller than 24"));
}

TEST_CASE("format reader 1.2: huge counts and short payloads are refused before allocating", "[format]") {
  for (uint32_t type :
       {SENTINEL_REC_MIGRATIONS, SENTINEL_REC_MIGRATION_LOG, SENTINEL_REC_PLACEMENT, SENTINEL_REC_DETECTION}) {
    Bytes b;
    b.u32(0xFFFFFFFFu).u32(64);
    for (int i = 0; i < 64; ++i) b.u8(0);
    DumpBuilder d;
    d.record(type, b);
    d.end();
    const FormatError e = error_of(d.bytes());
    INFO(e.what());
    CHECK(e.offset() == 24 + 16);
    CHECK(has(e.what(), "count 4294967295 needs at least"));
  }
  {  // PLAN entries: the count is checked against what is left after the header
    Bytes b;
    b.u32(72);
    for (int i = 0; i < 72; ++i) b.u8(0);
    b.u32(1000).u32(24);
    DumpBuilder d;
    d.record(SENTINEL_REC_PLAN, b);
    d.end();
    const FormatError e = error_of(d.bytes());
    CHECK(e.offset() == 24 + 16 + 4 + 72);
    CHECK(has(e.what(), "PLAN record: plan entry count 1000 needs at least 24000 bytes"));
  }
  {  // TIERING shorter than its entry size
    Bytes b;
    b.u32(128).u64(1);
    DumpBuilder d;
    d.record(SENTINEL_REC_TIERING, b);
    d.end();
    CHECK(has(error_of(d.bytes()).what(), "TIERING record: tiering needs 128 bytes, only 8 left in the record"));
  }
  {  // PHASE_COUNTERS without its phase
    DumpBuilder d;
    d.record(SENTINEL_REC_PHASE_COUNTERS, Bytes().u16(1));
    d.end();
    CHECK(has(error_of(d.bytes()).what(), "PHASE_COUNTERS record: phase needs 4 bytes"));
  }
}

TEST_CASE("format reader 1.2: truncating a 1.2 dump anywhere is an error, never a crash", "[format]") {
  const auto bytes = dump12();
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

TEST_CASE("format reader 1.2: record names", "[format]") {
  for (auto [type, name] :
       {std::pair{SENTINEL_REC_PHASE_COUNTERS, "PHASE_COUNTERS"}, std::pair{SENTINEL_REC_TIERING, "TIERING"},
        std::pair{SENTINEL_REC_PLAN, "PLAN"}, std::pair{SENTINEL_REC_MIGRATIONS, "MIGRATIONS"},
        std::pair{SENTINEL_REC_MIGRATION_LOG, "MIGRATION_LOG"}, std::pair{SENTINEL_REC_PLACEMENT, "PLACEMENT"},
        std::pair{SENTINEL_REC_DETECTION, "DETECTION"}, std::pair{SENTINEL_REC_CRASH, "CRASH"}})
    CHECK(sentinel::fmt::record_type_name(type) == name);
  CHECK(sentinel::fmt::record_type_name(24) == "type 24");
}

TEST_CASE("format reader 1.3: the step-time trial appended to a PLAN record", "[format]") {
  auto plan_bytes = [](uint32_t trial_size, uint32_t state) {
    Bytes b = plan_head(sample_header(), 72, 24);  // a 1.3 header: without 1.4's step costs
    b.u32(2).u64(11).u64(22);                      // interval durations
    b.u32(trial_size);
    b.u32(state).u32(2).u64(1500000).u64(1200000).u64(4096).u32(970000).u32(600000).u32(2).u32(2);
    for (uint32_t i = 48; i < trial_size; ++i) b.u8(0);  // a newer writer's appended fields
    return plan_dump(b);
  };
  for (uint32_t size : {48u, 56u}) {
    Profile p = parse_profile(plan_bytes(size, SENTINEL_TRIAL_DONE));
    REQUIRE(p.plans.size() == 1);
    const sentinel_plan_trial& t = p.plans[0].trial;
    CHECK(p.plans[0].interval_ns == std::vector<uint64_t>{11, 22});
    CHECK((t.state == SENTINEL_TRIAL_DONE && t.steps_per_candidate == 2 && t.moving_step_ns == 1500000 &&
           t.fixed_step_ns == 1200000 && t.moving_moved_bytes == 4096 && t.moving_hit_ppm == 970000 &&
           t.fixed_hit_ppm == 600000 && t.moving_steps == 2 && t.fixed_steps == 2));
  }
  CHECK(has(error_of(plan_bytes(47, SENTINEL_TRIAL_DONE)).what(), "PLAN record: trial size 47 is smaller than 48"));
  CHECK(has(error_of(plan_bytes(48, 7)).what(), "PLAN record: unknown trial state 7"));
  // A 1.2 record (no trailer) reads as no trial.
  Profile old = parse_profile(dump12());
  CHECK(old.plans[0].trial.state == SENTINEL_TRIAL_NONE);
}

TEST_CASE("format reader 1.6: the re-plan with the measured bandwidth in the trial; older trials read as none",
          "[format]") {
  // replan and kept as given; `flags` the header's.
  auto plan_bytes = [](uint32_t replan, uint32_t kept, uint32_t flags, uint32_t trial_size) {
    sentinel_plan_header h = sample_header();
    h.flags = flags;
    Bytes b = plan_head(h, sizeof h, sizeof(sentinel_plan_entry));
    b.u32(0);  // no interval durations
    b.u32(trial_size);
    b.u32(SENTINEL_TRIAL_DONE).u32(2).u64(1500000).u64(1200000).u64(4096).u32(970000).u32(600000).u32(2).u32(2);
    if (trial_size >= 88) b.u64(31000000).u64(1100000).u64(2048).u32(950000).u32(2).u32(replan).u32(kept);
    return plan_dump(b);
  };
  Profile p = parse_profile(plan_bytes(SENTINEL_REPLAN_DONE, SENTINEL_TRIAL_KEPT_REPLANNED, 0, 88));
  REQUIRE(p.plans.size() == 1);
  const sentinel_plan_trial& t = p.plans[0].trial;
  CHECK((t.achieved_bytes_per_s == 31000000 && t.replanned_step_ns == 1100000 && t.replanned_moved_bytes == 2048 &&
         t.replanned_hit_ppm == 950000 && t.replanned_steps == 2 && t.replan == SENTINEL_REPLAN_DONE &&
         t.kept == SENTINEL_TRIAL_KEPT_REPLANNED));
  // Before 1.6: no re-plan, and the kept schedule is what the header's flags say.
  Profile fixed = parse_profile(plan_bytes(0, 0, SENTINEL_TIER_NO_MOVES, 48));
  CHECK((fixed.plans[0].trial.replan == SENTINEL_REPLAN_NONE &&
         fixed.plans[0].trial.kept == SENTINEL_TRIAL_KEPT_FIXED && fixed.plans[0].trial.achieved_bytes_per_s == 0));
  Profile moving = parse_profile(plan_bytes(0, 0, 0, 48));
  CHECK(moving.plans[0].trial.kept == SENTINEL_TRIAL_KEPT_MOVING);
  CHECK(has(error_of(plan_bytes(5, 0, 0, 88)).what(), "PLAN record: unknown re-plan state 5"));
  CHECK(has(error_of(plan_bytes(0, 4, 0, 88)).what(), "PLAN record: unknown kept schedule 4"));
}

TEST_CASE("format reader 1.7: the trial's clock; older trials read as wall time", "[format]") {
  auto plan_bytes = [](uint32_t trial_size, uint32_t clock) {
    Bytes b = plan_head(sample_header(), sizeof(sentinel_plan_header), sizeof(sentinel_plan_entry));
    b.u32(0);  // no interval durations
    b.u32(trial_size);
    put_trial_88(b);
    if (trial_size >= 96) b.u32(clock).u32(0);
    return plan_dump(b);
  };
  Profile p = parse_profile(plan_bytes(96, SENTINEL_TRIAL_CLOCK_EMULATED));
  REQUIRE(p.plans.size() == 1);
  CHECK((p.plans[0].trial.clock == SENTINEL_TRIAL_CLOCK_EMULATED && p.plans[0].trial.fixed_step_ns == 1200000 &&
         p.plans[0].trial.kept == SENTINEL_TRIAL_KEPT_FIXED));
  CHECK(parse_profile(plan_bytes(88, 0)).plans[0].trial.clock == SENTINEL_TRIAL_CLOCK_WALL);
  CHECK(has(error_of(plan_bytes(96, 2)).what(), "PLAN record: unknown trial clock 2"));
}

TEST_CASE("format reader 1.9: the fitted slow cost in the trial; older trials read as no fit", "[format]") {
  auto plan_bytes = [](uint32_t trial_size, uint32_t fit) {
    Bytes b = plan_head(sample_header(), sizeof(sentinel_plan_header), sizeof(sentinel_plan_entry));
    b.u32(0);  // no interval durations
    b.u32(trial_size);
    put_trial_88(b);
    b.u32(SENTINEL_TRIAL_CLOCK_WALL).u32(fit);  // a 1.7 or 1.8 writer's reserved 0 at 92
    if (trial_size >= 112) b.u32(6550).u32(5).u64(2124000000);
    return plan_dump(b);
  };
  Profile p = parse_profile(plan_bytes(112, SENTINEL_FIT_DONE));
  REQUIRE(p.plans.size() == 1);
  const sentinel_plan_trial& t = p.plans[0].trial;
  CHECK(
      (t.fit == SENTINEL_FIT_DONE && t.fit_slow_ns_per_kib == 6550 && t.fit_steps == 5 && t.fit_step_ns == 2124000000));
  // A 1.8 trial (96 bytes) has no fit, whatever its reserved u32 holds.
  const Profile old = parse_profile(plan_bytes(96, 7));
  CHECK((old.plans[0].trial.fit == SENTINEL_FIT_NONE && old.plans[0].trial.fit_step_ns == 0));
  CHECK(has(error_of(plan_bytes(112, SENTINEL_FIT_AT_BASE + 1)).what(), "PLAN record: unknown fit state 6"));
}

TEST_CASE("format reader 1.10: the fitted move cost in the trial; older trials read as none", "[format]") {
  auto plan_bytes = [](uint32_t trial_size, uint32_t move_fit) {
    Bytes b = plan_head(sample_header(), sizeof(sentinel_plan_header), sizeof(sentinel_plan_entry));
    b.u32(0);  // no interval durations
    b.u32(trial_size);
    put_trial_88(b);
    b.u32(SENTINEL_TRIAL_CLOCK_WALL).u32(SENTINEL_FIT_DONE).u32(6550).u32(5).u64(2124000000);
    if (trial_size >= 120) b.u32(move_fit).u32(move_fit == SENTINEL_MOVE_FIT_DONE ? 4200 : 0);
    return plan_dump(b);
  };
  Profile p = parse_profile(plan_bytes(120, SENTINEL_MOVE_FIT_DONE));
  REQUIRE(p.plans.size() == 1);
  const sentinel_plan_trial& t = p.plans[0].trial;
  CHECK((t.move_fit == SENTINEL_MOVE_FIT_DONE && t.fit_move_ns_per_kib == 4200 && t.fit_slow_ns_per_kib == 6550));
  const Profile old = parse_profile(plan_bytes(112, 0));  // 1.9: no move fit
  CHECK((old.plans[0].trial.move_fit == SENTINEL_MOVE_FIT_NONE && old.plans[0].trial.fit_move_ns_per_kib == 0));
  CHECK(has(error_of(plan_bytes(120, SENTINEL_MOVE_FIT_NO_SLOW_COST + 1)).what(),
            "PLAN record: unknown move fit state 6"));
}

TEST_CASE("format reader 1.12: the bandwidth watch in the trial; older trials read as none", "[format]") {
  auto plan_bytes = [](uint32_t trial_size, uint32_t watch, uint32_t kept) {
    Bytes b = plan_head(sample_header(), sizeof(sentinel_plan_header), sizeof(sentinel_plan_entry));
    b.u32(0);  // no interval durations
    b.u32(trial_size);
    b.u32(SENTINEL_TRIAL_NONE).u32(0).u64(0).u64(0).u64(0).u32(0).u32(0).u32(0).u32(0);  // no trial
    b.u64(0).u64(0).u64(0).u32(0).u32(0).u32(SENTINEL_REPLAN_NONE).u32(kept);
    b.u32(SENTINEL_TRIAL_CLOCK_WALL).u32(SENTINEL_FIT_NONE).u32(0).u32(0).u64(0).u32(SENTINEL_MOVE_FIT_NONE).u32(0);
    if (trial_size >= 160) b.u32(watch).u32(3).u64(21600000).u64(14).u64(9 << 20).u32(310000).u32(0);
    return plan_dump(b);
  };
  const Profile p = parse_profile(plan_bytes(160, SENTINEL_WATCH_REPLANNED, SENTINEL_TRIAL_KEPT_WATCHED));
  REQUIRE(p.plans.size() == 1);
  const sentinel_plan_trial& t = p.plans[0].trial;
  CHECK((t.watch == SENTINEL_WATCH_REPLANNED && t.watch_windows == 3 && t.watch_bytes_per_s == 21600000 &&
         t.watch_step == 14 && t.watch_moved_bytes == (9u << 20) && t.watch_hit_ppm == 310000 &&
         t.kept == SENTINEL_TRIAL_KEPT_WATCHED && t.state == SENTINEL_TRIAL_NONE));
  const Profile old = parse_profile(plan_bytes(120, 0, SENTINEL_TRIAL_KEPT_MOVING));  // 1.10 and 1.11: no watch
  CHECK((old.plans[0].trial.watch == SENTINEL_WATCH_NONE && old.plans[0].trial.watch_windows == 0 &&
         old.plans[0].trial.watch_bytes_per_s == 0));
  CHECK(parse_profile(plan_bytes(160, SENTINEL_WATCH_DRIFT, 0)).plans[0].trial.watch == SENTINEL_WATCH_DRIFT);
  // 1.13: a drift followed.
  CHECK(parse_profile(plan_bytes(160, SENTINEL_WATCH_FOLLOWED, 0)).plans[0].trial.watch == SENTINEL_WATCH_FOLLOWED);
  CHECK(has(error_of(plan_bytes(160, SENTINEL_WATCH_FOLLOWED + 1, 0)).what(), "PLAN record: unknown watch state 7"));
}

TEST_CASE("format reader 1.4: the step costs in a PLAN header; older headers read them as 0", "[format]") {
  sentinel_plan_header h = sample_header();
  h.slow_ns_per_kib = 200;
  h.move_ns_per_kib = 500;
  auto dump_with = [&](uint32_t header_size) {
    DumpBuilder d;
    d.plan(h, {{5, 0, 0xF0, 0x30, 0, 0}}, header_size);
    d.end();
    return parse_profile(d.bytes());
  };
  const Profile now = dump_with(sizeof(sentinel_plan_header));  // 80: what a 1.4 runtime writes
  REQUIRE(now.plans.size() == 1);
  CHECK(std::memcmp(&now.plans[0].header, &h, sizeof h) == 0);
  const Profile newer = dump_with(sizeof(sentinel_plan_header) + 16);  // a later minor's fields are ignored
  CHECK((newer.plans[0].header.slow_ns_per_kib == 200 && newer.plans[0].header.move_ns_per_kib == 500));
  for (uint32_t older : {72u, 76u}) {  // 1.2 and 1.3 (and half of 1.4's pair: taken as absent)
    INFO(older);
    const Profile p = dump_with(older);
    CHECK((p.plans[0].header.slow_ns_per_kib == 0 && p.plans[0].header.move_ns_per_kib == 0));
    CHECK(p.plans[0].header.migrate_bytes_per_s == h.migrate_bytes_per_s);
  }
}
