// Format 1.2 dumps for test_tools.py's "plan" and "tiering" checks: the small synthetic loop of
// training_dump.h written as 1.2, with the records a tiered run adds (TIERING, PLAN, MIGRATIONS,
// MIGRATION_LOG, PLACEMENT, DETECTION). The PLAN record is what the runtime would write: make_plan()
// on the dump's own profile with the TIERING record's settings, so `sentinel-view plan` must find it
// identical; a copy with one flipped bit must be reported as different.
#include <cstdio>
#include <string>
#include <vector>

#include "dump_builder.h"
#include "format/format_reader.h"
#include "tier/plan_input.h"
#include "tier/planner.h"
#include "training_dump.h"

using sentinel::testing::DumpBuilder;
using sentinel::testing::LoopDump;

bool write_file(const std::string& path, const std::vector<uint8_t>& b);  // make_test_dumps.cpp

namespace {

constexpr uint64_t kBandwidth = 2ull << 30;

sentinel_tiering tiering_of(const sentinel_plan_header& h) {
  sentinel_tiering t{};
  t.policy = h.policy;
  t.fast_node = 0;
  t.slow_node = 1;
  t.flags = SENTINEL_TIER_BUDGET_SHARE | SENTINEL_TIER_BALANCING_ON;
  t.fast_budget_bytes = h.fast_budget_bytes;
  t.budget_share_ppm = 250000;
  t.migrate_bytes_per_s = kBandwidth;
  t.fast_peak_bytes = h.fast_peak_bytes - 4096;
  t.migrated_bytes = h.moved_bytes_per_step * 9;
  t.late_migrations = 3;
  t.failed_pages = 17;
  t.raced_frees = 1;
  t.placed_at_birth_fast = 40;
  t.placed_at_birth_slow = 20;
  return t;
}

// The loop's measured side: 9 steps under the plan, per interval.
void measured(DumpBuilder& d, const sentinel_plan_header& h) {
  std::vector<sentinel_migration_entry> mig;
  std::vector<sentinel_placement_entry> place;
  std::vector<sentinel_migration_batch> log;
  const uint64_t t0 = 1'000'000'000 + 50'000'000 + 4 * 12'000'000;  // the 5th step of phase 0
  for (uint32_t i = 0; i < h.intervals; ++i) {
    sentinel_migration_entry m{};
    m.phase = 0;
    m.interval = i;
    m.bytes_to_fast = (i + 1) * (1ull << 20) * 9;
    m.bytes_to_slow = i * (1ull << 20) * 9;
    m.migrate_ns = (i + 1) * 300'000;
    m.moves = 2 * 9;
    m.late = i == 1 ? 3 : 0;
    m.failed_pages = i == 2 ? 17 : 0;
    m.steps = 9;
    m.fast_bytes_max = h.fast_peak_bytes - i * 65536;
    m.fast_bytes_sum = m.fast_bytes_max * 9 - 9 * 4096;
    mig.push_back(m);
    sentinel_placement_entry p{};
    p.phase = 0;
    p.interval = i;
    p.touched_bytes = (4ull << 20) * (i + 1);
    p.fast_bytes = p.touched_bytes / (i + 2);
    p.steps = 9;
    p.verified = 4 * 9;  // 4 planned objects asked at each boundary of the 9 checked steps
    p.misplaced = i == 1 ? 2 : 0;
    place.push_back(p);
    for (uint32_t k = 0; k < 2; ++k) {
      sentinel_migration_batch b{};
      b.start_ns = t0 + i * 4'000'000 + k * 1'000'000;
      b.end_ns = b.start_ns + 600'000;
      b.bytes = (1ull << 20) * (k + 1);
      b.phase = 0;
      b.interval = i;
      b.objects = k + 1;
      b.flags = (k == 0 ? SENTINEL_MIGRATE_TO_FAST : 0) | (i == 1 && k == 0 ? SENTINEL_MIGRATE_LATE : 0);
      b.failed_pages = i == 2 && k == 1 ? 17 : 0;
      log.push_back(b);
    }
  }
  d.migrations(mig);
  d.migration_log(log);
  d.placement(place);
  sentinel_detection whole{};
  whole.phase = 0;
  whole.flags = SENTINEL_DETECT_LOCKED;
  whole.period = 6;
  whole.distinct_tokens = 5;
  whole.steps = 15;
  whole.locks = 2;
  d.detection({whole});
  // It ended by a crash (1.11): a fault at the first site's frames.
  sentinel_crash crash{};
  crash.signal = 11;
  crash.code = 1;
  crash.address = 0x10;
  crash.pc = 0x7f0000000100;
  crash.thread = 4243;
  crash.site = 1;
  d.crash({crash});
}

// The plan of `in` as a PLAN record holds it; false, said on stderr with `what`, when it cannot be made.
struct RecordedPlan {
  sentinel_plan_header header{};
  std::vector<sentinel_plan_entry> entries;
};
bool plan_of(const sentinel::PlanInput& in, const char* what, RecordedPlan* out) {
  sentinel::PlanScratch scratch;
  sentinel::Plan plan;
  const char* why = nullptr;
  if (!scratch.init(sentinel::plan_scratch_bytes(in)) || !sentinel::make_plan(in, scratch, &plan, &why)) {
    std::fprintf(stderr, "make-test-dumps: make_plan%s: %s\n", what, why ? why : "no memory");
    return false;
  }
  out->header = plan.header;
  out->entries.assign(plan.entries, plan.entries + plan.entry_count);
  return true;
}

}  // namespace

bool write_tiering_dumps(const std::string& dir) {
  auto spec = sentinel::testing::small_loop_spec();
  spec.format_12 = true;
  const LoopDump base = sentinel::testing::make_loop_dump(spec);

  // The plan the runtime would have made: sentinel, 25% of the peak, the measured bandwidth.
  sentinel::fmt::Profile p = sentinel::fmt::parse_profile(base.bytes);
  sentinel::offline::PlanSource src;
  std::string error;
  if (!sentinel::offline::plan_source(p, -1, &src, &error)) {
    std::fprintf(stderr, "make-test-dumps: %s\n", error.c_str());
    return false;
  }
  src.in.policy = SENTINEL_POLICY_SENTINEL;
  src.in.budget = sentinel::FastBudget{0, 250000};
  src.in.migrate_bytes_per_s = kBandwidth;
  src.in.flags = SENTINEL_TIER_BALANCING_ON;  // the run's TIERING flags go into the plan header
  RecordedPlan moving;
  if (!plan_of(src.in, "", &moving)) return false;
  const sentinel_plan_header header = moving.header;
  const std::vector<sentinel_plan_entry>& entries = moving.entries;

  bool ok = write_file(dir + "/loop12.prof", base.bytes);  // 1.2 profile, no tiering records
  spec.extra = [&](DumpBuilder& d, const LoopDump&) {
    d.tiering(tiering_of(header));
    d.plan(header, entries);
    measured(d, header);
  };
  ok &= write_file(dir + "/tiered.prof", sentinel::testing::make_loop_dump(spec).bytes);

  auto differs = entries;  // one mask bit flipped: the recomputed plan is no longer identical
  for (auto& e : differs)
    if (e.touch_mask) {
      e.fast_mask ^= e.touch_mask & (~e.touch_mask + 1);
      break;
    }
  spec.extra = [&](DumpBuilder& d, const LoopDump&) {
    d.tiering(tiering_of(header));
    d.plan(header, differs);
  };
  ok &= write_file(dir + "/tiered-differs.prof", sentinel::testing::make_loop_dump(spec).bytes);

  // The step-time trial kept the schedule without moves (1.3): the PLAN record is that schedule, and
  // sentinel-view plan recomputes it with the header's SENTINEL_TIER_NO_MOVES.
  {
    sentinel::PlanInput in = src.in;
    in.flags |= SENTINEL_TIER_NO_MOVES;
    RecordedPlan fixed;
    if (!plan_of(in, " without moves", &fixed)) return false;
    const sentinel_plan_header& fh = fixed.header;
    const std::vector<sentinel_plan_entry>& fe = fixed.entries;
    sentinel_plan_trial trial{};
    trial.state = SENTINEL_TRIAL_DONE;
    trial.steps_per_candidate = 2;
    trial.moving_step_ns = 30'000'000;
    trial.fixed_step_ns = 20'000'000;
    trial.moving_moved_bytes = header.moved_bytes_per_step;
    trial.moving_hit_ppm = header.predicted_hit_ppm;
    trial.fixed_hit_ppm = fh.predicted_hit_ppm;
    trial.moving_steps = trial.fixed_steps = 2;
    spec.extra = [&](DumpBuilder& d, const LoopDump&) {
      d.tiering(tiering_of(header));
      d.plan(fh, fe, 72, 24, &trial);
    };
    ok &= write_file(dir + "/tiered-trial.prof", sentinel::testing::make_loop_dump(spec).bytes);
  }

  // The trial re-planned with the migrator's measured bandwidth (1.6) and kept that schedule: the PLAN
  // record is it, its header holds the measured bandwidth, and sentinel-view plan recomputes it so. Its
  // steps were timed in emulated time (1.7).
  {
    sentinel::PlanInput in = src.in;
    in.migrate_bytes_per_s = kBandwidth / 4;
    RecordedPlan replanned;
    if (!plan_of(in, " re-planned", &replanned)) return false;
    const sentinel_plan_header& rh = replanned.header;
    const std::vector<sentinel_plan_entry>& re = replanned.entries;
    sentinel_plan_trial trial{};
    trial.state = SENTINEL_TRIAL_DONE;
    trial.steps_per_candidate = 2;
    trial.moving_step_ns = 30'000'000;
    trial.fixed_step_ns = 28'000'000;
    trial.moving_moved_bytes = header.moved_bytes_per_step;
    trial.moving_hit_ppm = header.predicted_hit_ppm;
    trial.fixed_hit_ppm = 100000;
    trial.moving_steps = trial.fixed_steps = trial.replanned_steps = 2;
    trial.achieved_bytes_per_s = kBandwidth / 4;
    trial.replanned_step_ns = 25'000'000;
    trial.replanned_moved_bytes = rh.moved_bytes_per_step;
    trial.replanned_hit_ppm = rh.predicted_hit_ppm;
    trial.replan = SENTINEL_REPLAN_DONE;
    trial.kept = SENTINEL_TRIAL_KEPT_REPLANNED;
    trial.clock = SENTINEL_TRIAL_CLOCK_EMULATED;  // 1.7: timed by the slow-tier guest's counts
    spec.extra = [&](DumpBuilder& d, const LoopDump&) {
      d.tiering(tiering_of(header));
      d.plan(rh, re, sizeof(sentinel_plan_header), sizeof(sentinel_plan_entry), &trial);
    };
    ok &= write_file(dir + "/tiered-replanned.prof", sentinel::testing::make_loop_dump(spec).bytes);
  }

  // No trial (SENTINEL_TRIAL_STEPS=0): the bandwidth watch measured the migrator at a quarter of the planned
  // bandwidth and re-planned with it from step 9 (1.12): the PLAN record is the watch's schedule, its header
  // holds the measured bandwidth, and sentinel-view plan recomputes it so.
  {
    sentinel::PlanInput in = src.in;
    in.migrate_bytes_per_s = kBandwidth / 4;
    RecordedPlan watched;
    if (!plan_of(in, " re-planned by the watch", &watched)) return false;
    sentinel_plan_trial trial{};
    trial.kept = SENTINEL_TRIAL_KEPT_WATCHED;
    trial.watch = SENTINEL_WATCH_REPLANNED;
    trial.watch_windows = 1;
    trial.watch_bytes_per_s = kBandwidth / 4;
    trial.watch_step = 9;
    trial.watch_moved_bytes = watched.header.moved_bytes_per_step;
    trial.watch_hit_ppm = watched.header.predicted_hit_ppm;
    spec.extra = [&](DumpBuilder& d, const LoopDump&) {
      d.tiering(tiering_of(header));
      d.plan(watched.header, watched.entries, sizeof(sentinel_plan_header), sizeof(sentinel_plan_entry), &trial);
    };
    ok &= write_file(dir + "/tiered-watched.prof", sentinel::testing::make_loop_dump(spec).bytes);
  }

  // SENTINEL_STEP_COSTS=200,500 (1.4): the PLAN header holds the costs the plan was made with, and
  // sentinel-view plan replays them.
  {
    sentinel::PlanInput in = src.in;
    in.costs = sentinel::step_costs_of_kib(200, 500);
    RecordedPlan costed;
    if (!plan_of(in, " with costs", &costed)) return false;
    const sentinel_plan_header& ch = costed.header;
    const std::vector<sentinel_plan_entry>& ce = costed.entries;
    spec.extra = [&](DumpBuilder& d, const LoopDump&) {
      d.tiering(tiering_of(ch));
      d.plan(ch, ce);
    };
    ok &= write_file(dir + "/tiered-costs.prof", sentinel::testing::make_loop_dump(spec).bytes);
    // The runtime fitted the slow cost to its steady steps (1.9): 800 ns/KiB against the 200 planned with.
    sentinel_plan_trial fit{};
    fit.fit = SENTINEL_FIT_DONE;
    fit.fit_slow_ns_per_kib = 800;
    fit.fit_steps = 5;
    fit.fit_step_ns = 40'000'000;
    spec.extra = [&](DumpBuilder& d, const LoopDump&) {
      d.tiering(tiering_of(ch));
      d.plan(ch, ce, sizeof(sentinel_plan_header), sizeof(sentinel_plan_entry), &fit);
    };
    ok &= write_file(dir + "/tiered-fitted.prof", sentinel::testing::make_loop_dump(spec).bytes);
  }

  // SENTINEL_STEP_COSTS=auto on a host where the migrator has a CPU of its own (written since 2026-12-06):
  // moves priced at the slow cost for the training thread, below the migrator's time, and the header says so.
  {
    sentinel::PlanInput in = src.in;
    in.costs = sentinel::step_costs_of_kib(200, 200);
    in.flags |= SENTINEL_TIER_MOVES_OFF_THREAD;
    RecordedPlan priced;
    if (!plan_of(in, " with moves priced off the training thread", &priced)) return false;
    // Its trial kept the moving schedule and fitted what a moved KiB cost the training thread (1.10).
    sentinel_plan_trial trial{};
    trial.state = SENTINEL_TRIAL_DONE;
    trial.steps_per_candidate = 2;
    trial.moving_step_ns = 20'000'000;
    trial.fixed_step_ns = 22'000'000;
    trial.moving_moved_bytes = priced.header.moved_bytes_per_step;
    trial.moving_hit_ppm = priced.header.predicted_hit_ppm;
    trial.fixed_hit_ppm = 100000;
    trial.moving_steps = trial.fixed_steps = 2;
    trial.move_fit = SENTINEL_MOVE_FIT_DONE;
    trial.fit_move_ns_per_kib = 4200;
    trial.fit = SENTINEL_FIT_DONE;  // and the slow cost fitted over its steady steps after it
    trial.fit_slow_ns_per_kib = 800;
    trial.fit_steps = 5;
    trial.fit_step_ns = 40'000'000;
    spec.extra = [&](DumpBuilder& d, const LoopDump&) {
      d.tiering(tiering_of(priced.header));
      d.plan(priced.header, priced.entries, sizeof(sentinel_plan_header), sizeof(sentinel_plan_entry), &trial);
    };
    ok &= write_file(dir + "/tiered-off-thread.prof", sentinel::testing::make_loop_dump(spec).bytes);
  }

  // A run that asked for the hot policy and 3 MiB in its configuration, with no tiering records:
  // sentinel-view plan takes those settings.
  auto hot = sentinel::testing::small_loop_spec();
  hot.format_12 = true;
  hot.extra = [](DumpBuilder& d, const LoopDump&) { d.config({"SENTINEL_POLICY=hot", "SENTINEL_FAST_BYTES=3M"}); };
  ok &= write_file(dir + "/loop-hot-config.prof", sentinel::testing::make_loop_dump(hot).bytes);
  hot.extra = [](DumpBuilder& d, const LoopDump&) {
    d.config({"SENTINEL_POLICY=all-fast", "SENTINEL_FAST_BYTES=auto"});
  };
  ok &= write_file(dir + "/loop-auto-config.prof", sentinel::testing::make_loop_dump(hot).bytes);

  {  // A run whose allocations never formed a step: only the detector's diagnosis.
    DumpBuilder d;
    d.process(99, 1, -1, 10, 2'000'000'010ull, "/usr/bin/python3", {"python3", "odd_loop.py"});
    sentinel_detection none{};
    none.flags = SENTINEL_DETECT_NO_STEP;
    none.noise_allocations = 5000;
    d.detection({none});
    d.end();
    ok &= write_file(dir + "/nostep.prof", d.bytes());
  }

  // A dump whose step has more than 64 intervals: the planner cannot take it.
  auto wide = sentinel::testing::small_loop_spec();
  wide.phases[0].pattern.resize(70, {3, 1ull << 16, 1});
  for (uint32_t k = 0; k < 70; ++k) wide.phases[0].pattern[k].free_at = k + 1;
  wide.phases[0].intervals.clear();
  for (uint32_t k = 0; k < 70; ++k) wide.phases[0].intervals.push_back({k, k + 1});
  wide.touches = {{0, -1, 0, 1.0}};
  ok &= write_file(dir + "/wide.prof", sentinel::testing::make_loop_dump(wide).bytes);
  return ok;
}
