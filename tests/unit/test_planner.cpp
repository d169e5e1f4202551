// The planner (src/tier/planner.h, docs/planner.md) on recorded profiles (tests/fixtures/profiles/,
// re-recorded by tests/fixtures/record_profile.py) and on synthetic ones. Every check here recomputes
// what it checks from the input (alive intervals, moves, occupancy) instead of trusting the planner's
// own model. Built as its own executable (planner-tests) because it counts every allocation of the
// process while make_plan() runs: operator new is replaced and malloc, calloc, realloc are wrapped
// at link time (-Wl,--wrap).
#include <malloc.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "counting_new.h"
#include "format/format_reader.h"
#include "parse_cases.h"
#include "tier/plan_input.h"
#include "tier/plan_model.h"
#include "tier/planner.h"

using namespace sentinel;

// ---- allocation counting: armed only around make_plan(), on this thread (operator new: counting_new.h).
extern "C" {
void* __real_malloc(size_t);
void* __real_calloc(size_t, size_t);
void* __real_realloc(void*, size_t);
void* __wrap_malloc(size_t n) {
  counting_new::count();
  return __real_malloc(n);
}
void* __wrap_calloc(size_t a, size_t b) {
  counting_new::count();
  return __real_calloc(a, b);
}
void* __wrap_realloc(void* p, size_t n) {
  counting_new::count();
  return __real_realloc(p, n);
}
}

namespace {

constexpr sentinel_policy kPolicies[] = {SENTINEL_POLICY_SENTINEL, SENTINEL_POLICY_FIRST_TOUCH,
                                         SENTINEL_POLICY_ALL_SLOW, SENTINEL_POLICY_ALL_FAST, SENTINEL_POLICY_HOT};
constexpr uint32_t kSharesPct[] = {5, 10, 20, 30, 50, 75, 100};
const char* const kFixtures[] = {"mlp", "cnn", "lstm", "transformer", "dlrm-chunks"};

uint64_t bit(uint32_t i) {
  return uint64_t{1} << i;
}

// A plan with its own scratch (kept alive with the plan's entries).
struct Planned {
  std::unique_ptr<PlanScratch> scratch = std::make_unique<PlanScratch>();
  Plan plan;
  bool ok = false;
  const char* error = nullptr;
  uint64_t allocations = 0;
  double seconds = 0;      // wall clock
  double cpu_seconds = 0;  // this thread's CPU time: what the figures report (the VM is shared)
};

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

Planned run_plan(const PlanInput& in) {
  Planned r;
  REQUIRE(r.scratch->init(plan_scratch_bytes(in)));
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = thread_cpu_seconds();
  counting_new::calls = 0;
  counting_new::armed = true;
  r.ok = make_plan(in, *r.scratch, &r.plan, &r.error);
  counting_new::armed = false;
  r.allocations = counting_new::calls;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.cpu_seconds = thread_cpu_seconds() - c0;
  return r;
}

// The evaluator's outcome for one schedule (a mask per item) of `in`, whose model must have `items` items.
plan::Outcome evaluate_masks(const PlanInput& in, const uint64_t* masks, uint32_t items, plan::Model* model = nullptr) {
  PlanScratch scratch;
  REQUIRE(scratch.init(plan_scratch_bytes(in)));
  plan::Model local;
  plan::Model& m = model ? *model : local;
  const char* why = nullptr;
  REQUIRE(plan::build_model(in, scratch, &m, &why));
  REQUIRE(m.count == items);
  plan::Outcome o;
  REQUIRE(plan::evaluate(m, masks, nullptr, 0, scratch, &o, nullptr));
  return o;
}

offline::PlanSource load_fixture(const std::string& name) {
  const std::string path = std::string(SENTINEL_SOURCE_DIR) + "/tests/fixtures/profiles/" + name + ".prof";
  fmt::Profile p = fmt::read_profile(path);
  offline::PlanSource src;
  std::string error;
  INFO(path);
  REQUIRE(offline::plan_source(p, -1, &src, &error));
  return src;
}

// ---- what the checks recompute from the input alone (docs/planner.md, "the model").

struct Life {
  uint64_t alive = 0;
  uint32_t start = 0, len = 0;
  bool cyclic = false;
};

Life life_of(const PlanInput& in, const sentinel_identity& d) {
  const uint32_t n = in.intervals;
  Life l;
  if ((d.flags & SENTINEL_IDENTITY_OUTSIDE) || d.ordinal == SENTINEL_NO_ORDINAL ||
      d.birth_interval == SENTINEL_NO_ORDINAL) {
    l.cyclic = true;
    l.len = n;
  } else {
    l.start = d.birth_interval;
    if (d.death_interval == SENTINEL_NO_ORDINAL)
      l.len = n;
    else if (d.lifetime == SENTINEL_LIFE_NEXT_STEP)  // to its step's end, and into the next up to its death
      l.len = std::min(n, n - d.birth_interval + d.death_interval + 1);
    else
      l.len = d.death_interval - d.birth_interval + 1;
  }
  for (uint64_t t = 0; t < in.touch_count; ++t)
    if (in.touches[t].identity == d.id && in.touches[t].bytes && !l.cyclic) {
      const uint32_t p = (in.touches[t].interval + n - l.start) % n;
      if (p >= l.len) l.len = p + 1;
    }
  for (uint32_t p = 0; p < l.len; ++p) l.alive |= bit((l.start + p) % n);
  return l;
}

// Move-ins and move-outs of a mask: the edges inside the timeline (a birth and a free are not moves;
// an object born outside the steps wraps around the step).
void edges(const PlanInput& in, const Life& l, uint64_t mask, uint64_t* into, uint64_t* out) {
  const uint32_t n = in.intervals;
  *into = *out = 0;
  const uint64_t all = n == 64 ? ~uint64_t{0} : bit(n) - 1;
  if (l.cyclic && (mask == 0 || mask == all)) return;
  for (uint32_t p = l.cyclic ? 0 : 1; p < l.len; ++p) {
    const uint32_t k = (l.start + p) % n, prev = (l.start + p + n - 1) % n;
    const bool now = mask & bit(k), before = mask & bit(prev);
    if (now && !before) *into |= bit(k);
    if (!now && before) *out |= bit(k);
  }
}

uint64_t budget_of(const PlanInput& in, uint64_t peak) {
  return in.budget.share_ppm ? peak * in.budget.share_ppm / 1000000 : in.budget.bytes;
}

struct Checked {
  uint64_t peak = 0;
  uint64_t touched = 0, hit_upper = 0;  // bytes touched; touched while fast (no lateness)
};

// Every guarantee of docs/planner.md that can be checked from the plan and its input.
Checked check_plan(const PlanInput& in, const Plan& plan) {
  const uint32_t n = in.intervals;
  Checked c;
  // One entry per identity, in order; one per chunk, in order, of an identity planned in chunks (the
  // last chunk shorter).
  uint64_t entries = 0;
  for (uint32_t i = 0; i < in.identity_count; ++i) {
    const sentinel_identity& d = in.identities[i];
    entries += d.chunk_bytes ? (d.size + d.chunk_bytes - 1) / d.chunk_bytes : 1;
  }
  REQUIRE(plan.entry_count == entries);
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint64_t>> bytes;  // (id, chunk) -> bytes per interval
  for (uint64_t t = 0; t < in.touch_count; ++t) {
    auto& v = bytes[{in.touches[t].identity, in.touches[t].chunk}];
    v.resize(n, 0);
    if (in.touches[t].interval < n) v[in.touches[t].interval] += in.touches[t].bytes;
  }
  std::vector<uint64_t> alive_at(n, 0), fast_at(n, 0);
  uint64_t moved = 0;
  uint32_t i = 0;  // the entry
  for (uint32_t di = 0; di < in.identity_count; ++di) {
    const sentinel_identity& d = in.identities[di];
    const uint64_t chunks = d.chunk_bytes ? (d.size + d.chunk_bytes - 1) / d.chunk_bytes : 1;
    for (uint32_t chunk = 0; chunk < chunks; ++chunk, ++i) {
      const uint64_t size =
          d.chunk_bytes ? std::min<uint64_t>(d.chunk_bytes, d.size - uint64_t{chunk} * d.chunk_bytes) : d.size;
      const sentinel_plan_entry& e = plan.entries[i];
      INFO("identity " << d.id << " chunk " << chunk << " lifetime " << unsigned{d.lifetime} << " policy "
                       << policy_name(in.policy));
      REQUIRE(e.identity == d.id);
      REQUIRE(e.chunk == chunk);
      CHECK(((e.flags & SENTINEL_PLAN_CHUNK) != 0) == (d.chunk_bytes != 0));
      const Life l = life_of(in, d);
      CHECK((e.fast_mask & ~l.alive) == 0);  // fast only while alive
      uint64_t touch_mask = 0;
      auto it = bytes.find({d.id, chunk});
      for (uint32_t k = 0; it != bytes.end() && k < n; ++k)
        if (it->second[k]) {
          touch_mask |= bit(k);
          c.touched += it->second[k];
          if (e.fast_mask & bit(k)) c.hit_upper += it->second[k];
        }
      CHECK(e.touch_mask == touch_mask);
      for (uint32_t k = 0; k < n; ++k) {
        if (l.alive & bit(k)) alive_at[k] += size;
        if (e.fast_mask & bit(k)) fast_at[k] += size;
      }
      uint64_t into, out;
      edges(in, l, e.fast_mask, &into, &out);
      CHECK(plan.alive_masks[i] == l.alive);
      CHECK(plan.move_in_masks[i] == into);
      CHECK(plan.move_out_masks[i] == out);
      moved += size * static_cast<uint64_t>(__builtin_popcountll(into) + __builtin_popcountll(out));
      if (d.lifetime == SENTINEL_LIFE_SHORT) CHECK((into | out) == 0);  // never moved
      if (d.flags & SENTINEL_IDENTITY_PINNED) CHECK((e.fast_mask == 0 || e.fast_mask == l.alive));
      if (in.policy != SENTINEL_POLICY_SENTINEL && in.policy != SENTINEL_POLICY_HOT) CHECK((into | out) == 0);
      if (in.policy == SENTINEL_POLICY_ALL_FAST) CHECK(e.fast_mask == l.alive);
      if (in.policy == SENTINEL_POLICY_ALL_SLOW) CHECK(e.fast_mask == 0);
      if (!l.cyclic) CHECK(((e.flags & SENTINEL_PLAN_BIRTH_FAST) != 0) == ((e.fast_mask & bit(l.start)) != 0));
      if (e.flags & SENTINEL_PLAN_POOL) {
        CHECK(in.policy == SENTINEL_POLICY_SENTINEL);
        CHECK(d.lifetime == SENTINEL_LIFE_SHORT);
        CHECK(e.fast_mask == l.alive);
      }
      if (in.policy == SENTINEL_POLICY_SENTINEL) {
        // Every residency that starts with a move-in touches the object before it ends.
        for (uint64_t b = into; b; b &= b - 1) {
          const uint32_t k = static_cast<uint32_t>(__builtin_ctzll(b));
          bool touched = false;
          for (uint32_t s = 0; s < n && (e.fast_mask & bit((k + s) % n)); ++s) {
            const uint32_t p = ((k + s) % n + n - l.start) % n;
            if (!l.cyclic && p >= l.len) break;
            if (touch_mask & bit((k + s) % n)) touched = true;
          }
          INFO("move-in at interval " << k << " mask " << e.fast_mask << " touches " << touch_mask);
          CHECK(touched);
        }
      }
    }
  }
  for (uint32_t k = 0; k < n; ++k) c.peak = std::max(c.peak, alive_at[k]);
  const uint64_t budget = budget_of(in, c.peak);
  CHECK(plan.header.footprint_peak_bytes == c.peak);
  CHECK(plan.header.moved_bytes_per_step == moved);
  CHECK(plan.header.fast_budget_bytes == budget);
  CHECK(plan.header.intervals == n);
  CHECK(plan.header.policy == static_cast<uint32_t>(in.policy));
  if (in.policy != SENTINEL_POLICY_ALL_FAST) {
    for (uint32_t k = 0; k < n; ++k) {
      INFO("interval " << k << " policy " << policy_name(in.policy));
      CHECK(fast_at[k] <= budget);  // the budget at every interval
    }
    CHECK(plan.header.fast_peak_bytes <= budget);
    CHECK(plan.header.fast_pool_bytes <= budget);
  }
  // The modeled hit share never exceeds the share touched while fast.
  const uint64_t upper = c.touched ? c.hit_upper * 1000000 / c.touched : 0;
  CHECK(plan.header.predicted_hit_ppm <= upper);
  if (in.policy == SENTINEL_POLICY_ALL_FAST && c.touched) CHECK(plan.header.predicted_hit_ppm == 1000000);
  if (in.policy == SENTINEL_POLICY_ALL_SLOW) CHECK(plan.header.predicted_hit_ppm == 0);
  if (in.policy == SENTINEL_POLICY_ALL_SLOW) CHECK(plan.header.moved_bytes_per_step == 0);
  return c;
}

// The same schedule: header and entries, but for the step costs the header records as given.
bool same_plan(const Plan& a, const Plan& b) {
  sentinel_plan_header ha = a.header, hb = b.header;
  ha.slow_ns_per_kib = hb.slow_ns_per_kib = 0;
  ha.move_ns_per_kib = hb.move_ns_per_kib = 0;
  return std::memcmp(&ha, &hb, sizeof ha) == 0 && a.entry_count == b.entry_count &&
         std::memcmp(a.entries, b.entries, sizeof(sentinel_plan_entry) * a.entry_count) == 0;
}

// ---- synthetic profiles

struct Synth {
  uint32_t intervals = 8;
  std::vector<sentinel_identity> ids;
  std::vector<sentinel_touch> touches;
  std::vector<uint64_t> interval_ns;
  uint64_t bandwidth = 0;

  uint32_t add(uint64_t size, uint8_t life, uint32_t birth, uint32_t death, uint32_t flags = 0, uint32_t group = 0) {
    sentinel_identity d{};
    d.id = static_cast<uint32_t>(ids.size()) + 100;
    d.size = size;
    d.lifetime = life;
    d.birth_interval = birth;
    d.death_interval = death;
    d.ordinal = birth == SENTINEL_NO_ORDINAL ? SENTINEL_NO_ORDINAL : static_cast<uint32_t>(ids.size());
    d.flags = flags | (birth == SENTINEL_NO_ORDINAL ? SENTINEL_IDENTITY_OUTSIDE : 0);
    d.group = group ? group : d.id;
    d.instances = 1;
    ids.push_back(d);
    return d.id;
  }
  uint32_t weight(uint64_t size, uint32_t flags = 0) {
    return add(size, SENTINEL_LIFE_PERSISTENT, SENTINEL_NO_ORDINAL, SENTINEL_NO_ORDINAL, flags);
  }
  void touch(uint32_t id, uint32_t interval, uint64_t bytes, uint32_t step = 0, uint32_t chunk = 0,
             uint32_t passes_x256 = 0, uint16_t time_begin = 0, uint16_t time_end = 0) {
    touches.push_back(sentinel_touch{id, interval, bytes, 1, step, chunk, passes_x256, time_begin, time_end, 0});
  }
  PlanInput input(sentinel_policy policy, FastBudget budget) const {
    PlanInput in;
    in.intervals = intervals;
    in.identities = ids.data();
    in.identity_count = static_cast<uint32_t>(ids.size());
    in.touches = touches.data();
    in.touch_count = touches.size();
    in.interval_ns = interval_ns.empty() ? nullptr : interval_ns.data();
    in.migrate_bytes_per_s = bandwidth;
    in.policy = policy;
    in.budget = budget;
    return in;
  }
};

constexpr uint64_t MiB = 1ull << 20;

// Four 1 MiB weights, weight k touched (fully) in interval k only, 8 intervals of 10 ms each.
Synth layered() {
  Synth s;
  for (uint32_t k = 0; k < 4; ++k) s.touch(s.weight(MiB), k, MiB);
  s.interval_ns.assign(8, 10'000'000);
  s.bandwidth = 10ull << 30;
  return s;
}

const sentinel_plan_entry& entry_of(const Plan& p, uint32_t id) {
  for (uint32_t i = 0; i < p.entry_count; ++i)
    if (p.entries[i].identity == id) return p.entries[i];
  FAIL("no plan entry for identity " << id);
  return p.entries[0];
}

double share(const Plan& p) {
  return p.header.predicted_hit_ppm / 1e6;
}

}  // namespace

TEST_CASE("planner: every policy on the recorded profiles, budgets 5% to 100%", "[planner]") {
  for (const char* name : kFixtures) {
    offline::PlanSource src = load_fixture(name);
    REQUIRE(src.in.identity_count > 0);
    REQUIRE(src.in.touch_count > 0);
    for (uint32_t pct : kSharesPct) {
      std::map<sentinel_policy, uint32_t> ppm;
      for (sentinel_policy pol : kPolicies) {
        INFO(name << " " << pct << "% " << policy_name(pol));
        PlanInput in = src.in;
        in.policy = pol;
        in.budget = FastBudget{0, pct * 10000};
        Planned a = run_plan(in);
        INFO((a.error ? a.error : ""));
        REQUIRE(a.ok);
        CHECK(a.allocations == 0);  // no malloc, no operator new inside make_plan
        check_plan(in, a.plan);
        Planned b = run_plan(in);
        REQUIRE(b.ok);
        CHECK(same_plan(a.plan, b.plan));  // deterministic, byte for byte
        ppm[pol] = a.plan.header.predicted_hit_ppm;
      }
      INFO(name << " " << pct << "%: sentinel " << ppm[SENTINEL_POLICY_SENTINEL] << " first-touch "
                << ppm[SENTINEL_POLICY_FIRST_TOUCH] << " hot " << ppm[SENTINEL_POLICY_HOT]);
      CHECK(ppm[SENTINEL_POLICY_SENTINEL] >= ppm[SENTINEL_POLICY_FIRST_TOUCH]);
      CHECK(ppm[SENTINEL_POLICY_SENTINEL] <= ppm[SENTINEL_POLICY_ALL_FAST]);
      if (pct == 100) CHECK(ppm[SENTINEL_POLICY_FIRST_TOUCH] == 1000000);  // everything fits
    }
  }
}

TEST_CASE("planner: sentinel beats first-touch on the recorded profiles at small budgets", "[planner]") {
  // What the migration buys: at 20% of the peak the schedule must do strictly better than placing at
  // first touch, on every recorded model.
  for (const char* name : kFixtures) {
    offline::PlanSource src = load_fixture(name);
    PlanInput in = src.in;
    in.budget = FastBudget{0, 200000};
    in.policy = SENTINEL_POLICY_FIRST_TOUCH;
    Planned ft = run_plan(in);
    in.policy = SENTINEL_POLICY_SENTINEL;
    Planned st = run_plan(in);
    REQUIRE((ft.ok && st.ok));
    INFO(name << ": sentinel " << share(st.plan) << " first-touch " << share(ft.plan));
    CHECK(st.plan.header.predicted_hit_ppm > ft.plan.header.predicted_hit_ppm);
  }
}

// Not a test: the figures of docs/planner.md. Run: planner-tests "[planner-figures]" -s
TEST_CASE("planner figures on the recorded profiles", "[.][planner-figures]") {
  std::printf("%-12s %5s %9s %9s %9s %9s %9s  %s\n", "fixture", "budget", "sentinel", "first-t", "all-slow", "all-fast",
              "hot", "sentinel: lead gap pool moved/step trials, CPU ms");
  for (const char* name : kFixtures) {
    offline::PlanSource src = load_fixture(name);
    for (uint32_t pct : kSharesPct) {
      std::printf("%-12s %4u%%", name, pct);
      Planned keep;
      for (sentinel_policy pol : kPolicies) {
        PlanInput in = src.in;
        in.policy = pol;
        in.budget = FastBudget{0, pct * 10000};
        Planned r = run_plan(in);
        REQUIRE(r.ok);
        std::printf(" %9.4f", share(r.plan));
        if (pol == SENTINEL_POLICY_SENTINEL) keep = std::move(r);
      }
      const Plan& p = keep.plan;
      std::printf("  L%u G%u%s%s pool %.2f MiB moved %.2f MiB late %u, %u trials %.1f ms\n", p.header.lead_intervals,
                  p.gap_intervals, p.grouped ? " grouped" : "", p.first_fit ? " first-fit" : "",
                  p.header.fast_pool_bytes / 1048576.0, p.header.moved_bytes_per_step / 1048576.0, p.late_moves,
                  p.trials, keep.cpu_seconds * 1e3);
    }
  }
}

TEST_CASE("planner: moving ahead of use beats first touch and reactive promotion", "[planner]") {
  Synth s = layered();  // 4 MiB peak; budget 2 MiB holds the weight in use and the next one
  PlanInput in = s.input(SENTINEL_POLICY_SENTINEL, FastBudget{2 * MiB, 0});
  Planned st = run_plan(in);
  REQUIRE(st.ok);
  check_plan(in, st.plan);
  CHECK(st.plan.header.predicted_hit_ppm == 1000000);
  CHECK(st.plan.header.lead_intervals >= 1);
  for (uint32_t k = 0; k < 4; ++k) {  // weight k is fast for interval k, moved in ahead of it
    const sentinel_plan_entry& e = entry_of(st.plan, 100 + k);
    CHECK((e.fast_mask & bit(k)));
    CHECK(e.fast_mask != 0xFF);
  }
  CHECK(st.plan.header.moved_bytes_per_step > 0);
  CHECK(st.plan.late_moves == 0);

  in.policy = SENTINEL_POLICY_FIRST_TOUCH;
  Planned ft = run_plan(in);
  REQUIRE(ft.ok);
  check_plan(in, ft.plan);
  CHECK(ft.plan.header.predicted_hit_ppm == 500000);  // weights 0 and 1 fit, then the budget is full
  CHECK(entry_of(ft.plan, 100).fast_mask == 0xFF);
  CHECK(entry_of(ft.plan, 102).fast_mask == 0);

  in.policy = SENTINEL_POLICY_HOT;
  Planned hot = run_plan(in);
  REQUIRE(hot.ok);
  check_plan(in, hot.plan);
  // Each weight is touched once a step: promoting it after that touch never pays off in the step.
  CHECK(hot.plan.header.predicted_hit_ppm < st.plan.header.predicted_hit_ppm);
}

TEST_CASE("planner: the cost model falls back to resident placement when moves cannot keep up", "[planner]") {
  Synth s = layered();
  s.bandwidth = 1 << 20;               // 1 MiB/s: a 1 MiB move takes a second
  s.interval_ns.assign(8, 1'000'000);  // 1 ms intervals
  PlanInput in = s.input(SENTINEL_POLICY_SENTINEL, FastBudget{2 * MiB, 0});
  Planned st = run_plan(in);
  REQUIRE(st.ok);
  check_plan(in, st.plan);
  CHECK(st.plan.header.predicted_hit_ppm == 500000);  // two weights resident, none moved
  CHECK(st.plan.header.moved_bytes_per_step == 0);
  CHECK(st.plan.header.migrate_bytes_per_s == (1u << 20));

  // The same profile without durations: lateness is not modeled beyond "no lead at all".
  s.interval_ns.clear();
  in = s.input(SENTINEL_POLICY_SENTINEL, FastBudget{2 * MiB, 0});
  Planned untimed = run_plan(in);
  REQUIRE(untimed.ok);
  CHECK(untimed.plan.header.predicted_hit_ppm == 1000000);
}

TEST_CASE("planner: without moves every object keeps one node for its whole life", "[planner]") {
  // SENTINEL_TIER_NO_MOVES is the schedule the runtime's step-time trial sets against the moving one.
  Synth s = layered();
  PlanInput in = s.input(SENTINEL_POLICY_SENTINEL, FastBudget{2 * MiB, 0});
  Planned moving = run_plan(in);
  in.flags = SENTINEL_TIER_NO_MOVES;
  Planned fixed = run_plan(in);
  REQUIRE((moving.ok && fixed.ok));
  check_plan(in, fixed.plan);
  CHECK(fixed.allocations == 0);
  CHECK(moving.plan.header.moved_bytes_per_step > 0);
  CHECK(fixed.plan.header.moved_bytes_per_step == 0);
  CHECK(fixed.plan.moves_per_step == 0);
  CHECK(fixed.plan.header.predicted_hit_ppm == 500000);  // two of the four weights, resident
  CHECK((fixed.plan.header.flags & SENTINEL_TIER_NO_MOVES));
  for (uint32_t i = 0; i < fixed.plan.entry_count; ++i)
    CHECK((fixed.plan.entries[i].fast_mask == 0 || fixed.plan.entries[i].fast_mask == fixed.plan.alive_masks[i]));
  // On the recorded profiles too: never a move, never better than the moving schedule under the model.
  for (const char* name : kFixtures) {
    offline::PlanSource src = load_fixture(name);
    PlanInput r = src.in;
    r.policy = SENTINEL_POLICY_SENTINEL;
    r.budget = FastBudget{0, 200000};
    Planned a = run_plan(r);
    r.flags |= SENTINEL_TIER_NO_MOVES;
    Planned b = run_plan(r);
    REQUIRE((a.ok && b.ok));
    INFO(name << ": moving " << share(a.plan) << " fixed " << share(b.plan));
    check_plan(r, b.plan);
    CHECK(b.plan.header.moved_bytes_per_step == 0);
    CHECK(b.plan.header.predicted_hit_ppm <= a.plan.header.predicted_hit_ppm);
    Planned c = run_plan(r);
    CHECK(same_plan(b.plan, c.plan));
  }
}

// ---- the step-time model (docs/planner.md, "The cost model")

namespace {

uint64_t sum_ns(const PlanInput& in) {
  uint64_t t = 0;
  for (uint32_t k = 0; k < in.intervals; ++k) t += in.interval_ns[k];
  return t;
}

// The model's parts as the plan reports them: base + slow + move, and the slow part is the bytes not
// touched fast (per step) times the cost, to within the rounding of the per-step figures.
void check_step_time(const PlanInput& in, const Plan& p) {
  CHECK(p.modeled_base_ns == sum_ns(in));
  CHECK(p.modeled_step_ns == p.modeled_base_ns + p.modeled_slow_ns + p.modeled_move_ns);
  // Slow accesses are priced in access-weighted bytes (the touched bytes where the profile has no intensity).
  const double slow = static_cast<double>(p.weighted_bytes - p.fast_hit_weighted) * in.costs.slow_ns_per_byte;
  CHECK(std::abs(static_cast<double>(p.modeled_slow_ns) - slow) <= 2 * in.costs.slow_ns_per_byte + 1);
  const double move = static_cast<double>(p.header.moved_bytes_per_step) * in.costs.move_ns_per_byte;
  CHECK(std::abs(static_cast<double>(p.modeled_move_ns) - move) <= 1);
}

}  // namespace

TEST_CASE("planner: by modeled step time, never slower than no moves or first touch", "[planner]") {
  const StepCosts kCosts[] = {{0.05, 0}, {0.2, 0.5}, {1, 2}, {0.05, 2}};
  for (const char* name : kFixtures) {
    offline::PlanSource src = load_fixture(name);
    REQUIRE(src.in.interval_ns);
    for (uint32_t pct : {10u, 20u, 30u, 50u})
      for (const StepCosts& c : kCosts) {
        INFO(name << " " << pct << "% slow " << c.slow_ns_per_byte << " move " << c.move_ns_per_byte << " ns/B");
        PlanInput in = src.in;
        in.budget = FastBudget{0, pct * 10000};
        in.costs = c;
        in.policy = SENTINEL_POLICY_SENTINEL;
        Planned st = run_plan(in);
        in.flags = SENTINEL_TIER_NO_MOVES;
        Planned nm = run_plan(in);
        in.flags = 0;
        in.policy = SENTINEL_POLICY_FIRST_TOUCH;
        Planned ft = run_plan(in);
        in.policy = SENTINEL_POLICY_ALL_FAST;
        Planned af = run_plan(in);
        REQUIRE((st.ok && nm.ok && ft.ok && af.ok));
        CHECK(st.allocations == 0);
        in.policy = SENTINEL_POLICY_SENTINEL;
        check_plan(in, st.plan);
        check_step_time(in, st.plan);
        CHECK(st.plan.objective == PlanObjective::kStepTime);
        CHECK(nm.plan.objective == PlanObjective::kStepTime);
        INFO("sentinel " << st.plan.modeled_step_ns << " no-moves " << nm.plan.modeled_step_ns << " first-touch "
                         << ft.plan.modeled_step_ns << " all-fast " << af.plan.modeled_step_ns);
        CHECK(st.plan.modeled_step_ns <= nm.plan.modeled_step_ns);
        CHECK(st.plan.modeled_step_ns <= ft.plan.modeled_step_ns);
        CHECK(af.plan.modeled_step_ns == sum_ns(in));  // every touched byte fast, nothing moved
        CHECK(st.plan.modeled_step_ns >= af.plan.modeled_step_ns);
        Planned again = run_plan(in);
        CHECK(same_plan(st.plan, again.plan));
        CHECK(again.plan.modeled_step_ns == st.plan.modeled_step_ns);
      }
  }
}

// The input planned under `policy`, which must succeed: the schedules the fit tests measure, and the two
// ends of the step-time model, all-slow and all-fast, that the interleave and clock tests price everything
// between.
Planned run_plan_as(PlanInput in, sentinel_policy policy) {
  in.policy = policy;
  Planned p = run_plan(in);
  REQUIRE(p.ok);
  return p;
}

// The runtime's fit (docs/planner.md, "The fitted slow cost"): a step measured at a true slow cost the
// probe missed gives that cost back, and at it the model prices every baseline as that machine would.
TEST_CASE("planner: the slow cost fitted to a measured step", "[planner]") {
  const uint32_t kProbe = 3000, kTrue = 6000, kMove = 30000;  // ns per KiB
  for (const char* name : kFixtures) {
    offline::PlanSource src = load_fixture(name);
    REQUIRE(src.in.interval_ns);
    INFO(name);
    PlanInput in = src.in;
    in.budget = FastBudget{0, 200000};
    in.costs = step_costs_of_kib(kProbe, kMove);
    const Planned st = run_plan_as(in, SENTINEL_POLICY_SENTINEL);
    const Plan& p = st.plan;
    const uint64_t slow = slow_weighted_bytes(p);
    const double moves = static_cast<double>(p.header.moved_bytes_per_step) / 1024 * kMove;
    const uint64_t measured =
        p.modeled_base_ns + static_cast<uint64_t>(static_cast<double>(slow) / 1024 * kTrue + moves + 0.5);
    const SlowCostFit f = fit_slow_cost(p, measured, kMove);
    if (slow < kMinFitSlowBytes || slow < p.weighted_bytes / kMinFitShare) {
      CHECK(f.status == SENTINEL_FIT_LITTLE_SLOW);
      continue;
    }
    REQUIRE(f.status == SENTINEL_FIT_DONE);
    CHECK(f.slow_ns_per_kib >= kTrue - 1);
    CHECK(f.slow_ns_per_kib <= kTrue + 1);
    // All-slow at the fitted cost: the base plus every access-weighted byte at the true cost.
    in.costs = step_costs_of_kib(f.slow_ns_per_kib, kMove);
    const Planned as = run_plan_as(in, SENTINEL_POLICY_ALL_SLOW);
    const double want =
        static_cast<double>(as.plan.modeled_base_ns) + static_cast<double>(as.plan.weighted_bytes) / 1024 * kTrue;
    CHECK(std::abs(static_cast<double>(as.plan.modeled_step_ns) - want) <= want * 0.001);
    // Moves of an unknown cost cannot be told from slow accesses; a step no longer than the base fits nothing.
    if (p.header.moved_bytes_per_step) CHECK(fit_slow_cost(p, measured, 0).status == SENTINEL_FIT_UNKNOWN_MOVES);
    CHECK(fit_slow_cost(p, p.modeled_base_ns, kMove).status == SENTINEL_FIT_AT_BASE);
    CHECK(fit_slow_cost(as.plan, as.plan.modeled_base_ns + 1, kMove).status == SENTINEL_FIT_DONE);
    // All-fast has nothing on the slow node to fit from.
    const Planned af = run_plan_as(in, SENTINEL_POLICY_ALL_FAST);
    CHECK(fit_slow_cost(af.plan, measured, kMove).status == SENTINEL_FIT_LITTLE_SLOW);
    // Without interval durations there is no base.
    in.interval_ns = nullptr;
    const Planned untimed = run_plan_as(in, SENTINEL_POLICY_SENTINEL);
    CHECK(fit_slow_cost(untimed.plan, measured, kMove).status == SENTINEL_FIT_NO_BASE);
  }
}

// The runtime's move fit (docs/tiering.md, "The fitted move cost"): the trial's two schedules measured on a
// machine where a moved KiB costs the training thread kTrue give kTrue back, whatever the move cost they
// were planned with; a schedule that moved little, or no slow cost, fits nothing.
TEST_CASE("planner: the move cost fitted to the trial's two schedules", "[planner]") {
  const uint32_t kSlow = 3000, kPlanned = 3000, kTrue = 12000;  // ns per KiB
  int fitted = 0;
  for (const char* name : kFixtures) {
    offline::PlanSource src = load_fixture(name);
    REQUIRE(src.in.interval_ns);
    INFO(name);
    PlanInput in = src.in;
    in.budget = FastBudget{0, 200000};
    in.costs = step_costs_of_kib(kSlow, kPlanned);
    const Planned moving = run_plan_as(in, SENTINEL_POLICY_SENTINEL);
    in.flags |= SENTINEL_TIER_NO_MOVES;
    const Planned fixed = run_plan_as(in, SENTINEL_POLICY_SENTINEL);
    REQUIRE(fixed.plan.header.moved_bytes_per_step == 0);
    auto measured = [&](const Plan& p) { return static_cast<uint64_t>(priced_step_ns(p, kSlow, kTrue) + 0.5); };
    const MoveCostFit f = fit_move_cost(moving.plan, measured(moving.plan), fixed.plan, measured(fixed.plan), kSlow);
    if (moving.plan.header.moved_bytes_per_step < kMinFitMovedBytes) {
      CHECK(f.status == SENTINEL_MOVE_FIT_LITTLE_MOVED);
      continue;
    }
    ++fitted;
    REQUIRE(f.status == SENTINEL_MOVE_FIT_DONE);
    CHECK(f.move_ns_per_kib >= kTrue - 1);
    CHECK(f.move_ns_per_kib <= kTrue + 1);
    // Moves that cost nothing: the moving schedule as fast as its saved accesses say.
    const MoveCostFit free = fit_move_cost(moving.plan, static_cast<uint64_t>(priced_step_ns(moving.plan, kSlow, 0)),
                                           fixed.plan, measured(fixed.plan), kSlow);
    CHECK(free.status == SENTINEL_MOVE_FIT_FREE);
    CHECK(free.move_ns_per_kib == 0);
    // What later plans are given: the fit, free moves at 1 ns per KiB (0 is unknown), nothing otherwise.
    CHECK(move_cost_of_fit(f.status, f.move_ns_per_kib) == f.move_ns_per_kib);
    CHECK(move_cost_of_fit(free.status, free.move_ns_per_kib) == 1);
    CHECK(move_cost_of_fit(SENTINEL_MOVE_FIT_EMULATED, 0) == 0);
    CHECK(fit_move_cost(moving.plan, measured(moving.plan), fixed.plan, measured(fixed.plan), 0).status ==
          SENTINEL_MOVE_FIT_NO_SLOW_COST);
    CHECK(fit_move_cost(moving.plan, 0, fixed.plan, measured(fixed.plan), kSlow).status == SENTINEL_MOVE_FIT_NONE);
  }
  CHECK(fitted > 0);  // some fixture's plan moves enough to fit from
}

// How far apart a fit's steps lie: (longest - shortest) / median, whatever their order.
TEST_CASE("planner: the spread of a fit's steps", "[planner]") {
  const uint64_t steady[] = {1000, 1030, 990, 1010, 1005};
  CHECK(step_spread(steady, 5).spread_ppm == 39801);  // (1030 - 990) / 1005, the median of the five
  CHECK(step_spread(steady, 5).median == 1005);
  const uint64_t noisy[] = {1000, 1500, 1010, 990, 1005};
  CHECK(step_spread(noisy, 5).spread_ppm > kMaxFitSpreadPpm);
  CHECK(step_spread(steady, 1).spread_ppm == 0);
  CHECK(step_spread(steady, 1).median == 1000);
  CHECK(step_spread(steady, 0).spread_ppm == 0);
  const uint64_t zero[] = {0, 0, 5};
  CHECK(step_spread(zero, 3).spread_ppm == 0);  // a median of 0
  uint64_t many[40];
  for (uint64_t& v : many) v = 100;
  many[39] = 1000000;  // past the first kMaxSpreadSteps: not looked at
  CHECK(step_spread(many, 40).spread_ppm == 0);
}

// The interleave policy has no plan: the model prices it as the all-slow plan with the budget's share of its
// slow accesses fast, from all-slow's step at 0% to all-fast's at 100%.
TEST_CASE("planner: interleave priced by the one model", "[planner]") {
  for (const char* name : kFixtures) {
    offline::PlanSource src = load_fixture(name);
    REQUIRE(src.in.interval_ns);
    INFO(name);
    PlanInput in = src.in;
    in.costs = step_costs_of_kib(3000, 30000);
    const Planned as = run_plan_as(in, SENTINEL_POLICY_ALL_SLOW);
    const Planned af = run_plan_as(in, SENTINEL_POLICY_ALL_FAST);
    CHECK(interleaved_step_ns(as.plan, 0) == Approx(static_cast<double>(as.plan.modeled_step_ns)));
    CHECK(interleaved_step_ns(as.plan, 1000000) == Approx(static_cast<double>(af.plan.modeled_step_ns)));
    CHECK(interleaved_step_ns(as.plan, 2000000) == Approx(static_cast<double>(af.plan.modeled_step_ns)));
    const double quarter = interleaved_step_ns(as.plan, 250000);
    CHECK(quarter == Approx(as.plan.modeled_base_ns + 0.75 * as.plan.modeled_slow_ns));
    CHECK(quarter < static_cast<double>(as.plan.modeled_step_ns));
  }
}

// On another clock (the guest's emulated time) the model is calibrated by all-fast's and all-slow's steps
// measured there: both come out exactly, the plans in between scale with their access-weighted slow bytes,
// and moves keep the planned costs' ratio to the slow cost.
TEST_CASE("planner: the model calibrated to another clock", "[planner]") {
  for (const char* name : kFixtures) {
    offline::PlanSource src = load_fixture(name);
    REQUIRE(src.in.interval_ns);
    INFO(name);
    PlanInput in = src.in;
    in.costs = step_costs_of_kib(3000, 30000);
    const Planned as = run_plan_as(in, SENTINEL_POLICY_ALL_SLOW);
    const Planned af = run_plan_as(in, SENTINEL_POLICY_ALL_FAST);
    in.budget = FastBudget{0, 200000};
    const Planned se = run_plan_as(in, SENTINEL_POLICY_SENTINEL);
    ClockModel clock;
    REQUIRE(calibrate_clock(as.plan, in.costs, 50e6, 90e6, &clock));
    CHECK(clocked_step_ns(af.plan, clock) == Approx(50e6));
    CHECK(clocked_step_ns(as.plan, clock) == Approx(90e6));
    CHECK(clock.move_ns_per_byte == Approx(clock.slow_ns_per_byte * 10));
    const double slow_share = static_cast<double>(slow_weighted_bytes(se.plan)) / slow_weighted_bytes(as.plan);
    CHECK(clocked_step_ns(se.plan, clock) ==
          Approx(50e6 + 40e6 * slow_share + se.plan.header.moved_bytes_per_step * clock.move_ns_per_byte));
    CHECK(clocked_interleaved_ns(as.plan, clock, 0) == Approx(90e6));
    CHECK(clocked_interleaved_ns(as.plan, clock, 250000) == Approx(80e6));
    CHECK(clocked_interleaved_ns(as.plan, clock, 1000000) == Approx(50e6));
    // Nothing to calibrate: all-slow no slower than all-fast, or a plan without slow bytes.
    ClockModel none;
    CHECK_FALSE(calibrate_clock(as.plan, in.costs, 90e6, 90e6, &none));
    CHECK_FALSE(calibrate_clock(as.plan, in.costs, 90e6, 50e6, &none));
    CHECK_FALSE(calibrate_clock(af.plan, in.costs, 50e6, 90e6, &none));
    // Without a planned move cost, moves are unknown on the clock too.
    REQUIRE(calibrate_clock(as.plan, StepCosts{3000.0 / 1024, 0}, 50e6, 90e6, &none));
    CHECK(none.move_ns_per_byte == 0);
  }
}

TEST_CASE("planner: without the costs the plans are those of fast-hit bytes", "[planner]") {
  for (const char* name : kFixtures) {
    offline::PlanSource src = load_fixture(name);
    for (uint32_t pct : {10u, 20u, 50u})
      for (uint32_t flags : {0u, uint32_t{SENTINEL_TIER_NO_MOVES}}) {
        INFO(name << " " << pct << "% flags " << flags);
        PlanInput in = src.in;
        in.budget = FastBudget{0, pct * 10000};
        in.flags = flags;
        Planned plain = run_plan(in);  // no costs given
        // A move cost alone, or costs without interval durations: the objective stays fast-hit bytes.
        PlanInput moves_only = in;
        moves_only.costs = StepCosts{0, 2};
        Planned mo = run_plan(moves_only);
        PlanInput untimed = in;
        untimed.costs = StepCosts{1, 2};
        untimed.interval_ns = nullptr;
        Planned un = run_plan(untimed);
        PlanInput untimed_plain = in;
        untimed_plain.interval_ns = nullptr;
        Planned unp = run_plan(untimed_plain);
        REQUIRE((plain.ok && mo.ok && un.ok && unp.ok));
        CHECK(plain.plan.objective == PlanObjective::kFastHitBytes);
        CHECK(same_plan(plain.plan, mo.plan));
        CHECK(plain.plan.trials == mo.plan.trials);
        CHECK(mo.plan.objective == PlanObjective::kFastHitBytes);
        CHECK(same_plan(un.plan, unp.plan));
        CHECK(un.plan.objective == PlanObjective::kFastHitBytes);
        // The model still reports: the measured time alone without costs, nothing without a time base.
        CHECK(plain.plan.modeled_step_ns == sum_ns(in));
        CHECK((mo.plan.modeled_move_ns > 0) == (mo.plan.header.moved_bytes_per_step > 0));
        CHECK(un.plan.modeled_step_ns == 0);
        CHECK(un.plan.modeled_base_ns + un.plan.modeled_slow_ns + un.plan.modeled_move_ns == 0);
      }
  }
}

TEST_CASE("planner: the step-time objective moves only where a move pays", "[planner]") {
  // Four 1 MiB weights, each touched in one interval of eight (10 ms each), 2 MiB fast: moving each
  // weight in ahead of its interval makes every touch fast for 8 MiB moved a step; without moves two
  // weights stay resident and 2 MiB of touches are slow.
  Synth s = layered();
  PlanInput in = s.input(SENTINEL_POLICY_SENTINEL, FastBudget{2 * MiB, 0});
  const uint64_t base = 80'000'000;

  SECTION("moves are cheap: the moving schedule") {
    in.costs = StepCosts{1, 0.1};  // 2 MiB slow: 2.1 ms; 8 MiB moved: 0.84 ms
    Planned st = run_plan(in);
    REQUIRE(st.ok);
    check_plan(in, st.plan);
    check_step_time(in, st.plan);
    CHECK(st.plan.objective == PlanObjective::kStepTime);
    CHECK(st.plan.header.predicted_hit_ppm == 1000000);
    CHECK(st.plan.header.moved_bytes_per_step > 0);
    CHECK(st.plan.modeled_slow_ns == 0);
    CHECK(st.plan.modeled_step_ns < base + 2 * MiB);  // better than two weights resident
  }
  SECTION("moves are dear: no moves") {
    in.costs = StepCosts{1, 1};  // 2 MiB slow: 2.1 ms; 8 MiB moved: 8.4 ms
    Planned st = run_plan(in);
    REQUIRE(st.ok);
    check_plan(in, st.plan);
    check_step_time(in, st.plan);
    CHECK(st.plan.objective == PlanObjective::kStepTime);
    CHECK(st.plan.header.moved_bytes_per_step == 0);
    CHECK(st.plan.header.predicted_hit_ppm == 500000);  // two weights resident
    CHECK(st.plan.modeled_step_ns == base + 2 * MiB);
    CHECK(st.plan.modeled_move_ns == 0);
    // By fast-hit bytes the same input moves every weight in ahead of its use.
    in.costs = StepCosts{};
    Planned hits = run_plan(in);
    REQUIRE(hits.ok);
    CHECK(hits.plan.objective == PlanObjective::kFastHitBytes);
    CHECK(hits.plan.header.predicted_hit_ppm == 1000000);
    CHECK(hits.plan.header.moved_bytes_per_step > 0);
  }
}

TEST_CASE("planner: access intensity ranks placements and prices slow accesses", "[planner]") {
  // Two 1 MiB weights touched whole in interval 0 of 8 (10 ms each), room for one, no moves: by touched
  // bytes they tie (the first stays fast); the one touched in 4 passes is worth 4 times as much.
  auto profile = [](uint32_t a_passes, uint32_t b_passes) {
    Synth s;
    const uint32_t a = s.weight(MiB), b = s.weight(MiB);
    s.touch(a, 0, MiB, 0, 0, a_passes);
    s.touch(b, 0, MiB, 0, 0, b_passes);
    s.interval_ns.assign(8, 10'000'000);
    return s;
  };
  const uint32_t a = 100, b = 101;  // Synth's ids
  auto plan_of = [](const Synth& s, StepCosts costs) {
    PlanInput in = s.input(SENTINEL_POLICY_SENTINEL, FastBudget{MiB, 0});
    in.flags = SENTINEL_TIER_NO_MOVES;
    in.costs = costs;
    Planned p = run_plan(in);
    REQUIRE(p.ok);
    check_plan(in, p.plan);
    check_step_time(in, p.plan);
    return p;
  };
  SECTION("no intensity, or one pass everywhere: the plan of touched bytes") {
    Planned none = plan_of(profile(0, 0), {});
    Planned once = plan_of(profile(256, 256), {});
    CHECK(same_plan(none.plan, once.plan));
    CHECK(none.plan.intensity == 0);
    CHECK(once.plan.intensity == 1);
    CHECK(entry_of(none.plan, a).fast_mask != 0);
    CHECK(entry_of(none.plan, b).fast_mask == 0);
    CHECK(none.plan.weighted_bytes == none.plan.touched_bytes);
  }
  for (StepCosts costs : {StepCosts{}, StepCosts{1, 0}}) {
    SECTION(std::string("the intense weight is the fast one, ") +
            (costs.slow_ns_per_byte ? "by step time" : "by hits")) {
      Planned p = plan_of(profile(256, 4 * 256), costs);
      CHECK(entry_of(p.plan, a).fast_mask == 0);
      CHECK(entry_of(p.plan, b).fast_mask != 0);
      CHECK(share(p.plan) == 0.5);  // the hit share stays a share of touched bytes
      CHECK(p.plan.weighted_bytes == 5 * MiB);
      CHECK(p.plan.fast_hit_weighted == 4 * MiB);
      if (costs.slow_ns_per_byte) CHECK(p.plan.modeled_slow_ns == MiB);  // a's one pass, slow
    }
  }
  SECTION("slow accesses are priced by intensity") {
    Synth s = profile(3 * 256, 3 * 256);
    Planned p = plan_of(s, StepCosts{1, 0});
    CHECK(p.plan.modeled_slow_ns == 3 * MiB);  // one weight slow, touched in 3 passes
    CHECK(share(p.plan) == 0.5);
  }
}

TEST_CASE("planner: on a CNN profiled in passes, intensity puts more accesses fast at the same touched share",
          "[planner]") {
  // bench-tiers' cnn-act@0.5 in the Optane-preset guest, SENTINEL_PROFILE_PASSES=4 (docs/performance.md,
  // "Access intensity"): the same budget buys more access-weighted bytes when the plan is made with them.
  offline::PlanSource src = load_fixture("cnn-act-passes");
  offline::PlanSource flat = load_fixture("cnn-act-passes");  // (a copy's input would point at src's touches)
  REQUIRE(offline::plan_without_intensity(&flat) > 0);
  // The access-weighted bytes a schedule has fast (no moves: nothing is late), from the touches alone.
  auto fast_weighted = [&](const Plan& plan) {
    std::map<uint32_t, uint64_t> mask;
    for (uint32_t i = 0; i < plan.entry_count; ++i) mask[plan.entries[i].identity] |= plan.entries[i].fast_mask;
    double fast = 0, all = 0;
    for (const sentinel_touch& t : src.touches) {
      const double w = static_cast<double>(t.bytes) * (t.passes_x256 ? t.passes_x256 / 256.0 : 1.0);
      all += w;
      if (mask.count(t.identity) && (mask[t.identity] >> t.interval & 1)) fast += w;
    }
    return fast / all;
  };
  for (uint32_t pct : {10u, 20u, 30u, 50u}) {
    INFO(pct << "%");
    PlanInput in = src.in, in_flat = flat.in;
    in.budget = in_flat.budget = FastBudget{0, pct * 10000};
    in.policy = in_flat.policy = SENTINEL_POLICY_SENTINEL;
    in.flags = in_flat.flags = SENTINEL_TIER_NO_MOVES;
    Planned with = run_plan(in), without = run_plan(in_flat);
    REQUIRE((with.ok && without.ok));
    check_plan(in, with.plan);
    CHECK(with.plan.intensity == 1);
    CHECK(without.plan.intensity == 0);
    const double w = fast_weighted(with.plan), wo = fast_weighted(without.plan);
    INFO("access-weighted fast: " << w << " with intensity, " << wo << " without; touched: " << share(with.plan)
                                  << " and " << share(without.plan));
    CHECK(std::abs(w - with.plan.fast_hit_weighted / static_cast<double>(with.plan.weighted_bytes)) < 1e-3);
    CHECK(w >= wo);
    if (pct == 20) CHECK(w >= wo + 0.1);  // 0.533 against 0.389 when recorded
  }
}

TEST_CASE("planner: a late move counts its first touched interval as slow", "[planner]") {
  // Two 8 MiB weights, budget 8 MiB: w touched in intervals 8 and 9, the other in interval 0; 16
  // intervals of 1 ms, 4 GiB/s: a move takes ~2 ms, so a lead of one interval makes the first touch
  // late and the trial picks two or more.
  Synth s;
  s.intervals = 16;
  const uint32_t w = s.weight(8 * MiB);
  const uint32_t other = s.weight(8 * MiB);
  s.touch(w, 8, 8 * MiB);
  s.touch(w, 9, 8 * MiB);
  s.touch(other, 0, 8 * MiB);
  s.interval_ns.assign(16, 1'000'000);
  s.bandwidth = 4ull << 30;
  PlanInput in = s.input(SENTINEL_POLICY_SENTINEL, FastBudget{8 * MiB, 0});
  Planned st = run_plan(in);
  REQUIRE(st.ok);
  check_plan(in, st.plan);
  CHECK(st.plan.header.lead_intervals >= 2);
  CHECK(st.plan.late_moves == 0);
  CHECK(st.plan.header.predicted_hit_ppm == 1000000);
  CHECK((entry_of(st.plan, w).fast_mask & 0x300) == 0x300);
  CHECK((entry_of(st.plan, w).fast_mask & 0x1) == 0);
  CHECK((entry_of(st.plan, other).fast_mask & 0x1));
  CHECK(st.plan.header.moved_bytes_per_step == 32 * MiB);  // each weight in and out once

  // The reactive policy moves w in at the boundary of interval 9, after its touch in 8, and the
  // other weight at the boundary of 1: no lead, so those touched intervals count slow although the
  // objects are (becoming) fast there.
  s.touch(other, 1, 8 * MiB);
  PlanInput react = s.input(SENTINEL_POLICY_HOT, FastBudget{8 * MiB, 0});
  Planned hot = run_plan(react);
  REQUIRE(hot.ok);
  const Checked c = check_plan(react, hot.plan);
  REQUIRE(c.touched > 0);
  CHECK((entry_of(hot.plan, w).fast_mask & 0x200));
  CHECK(c.hit_upper > 0);
  CHECK(hot.plan.late_moves >= 2);
  CHECK(hot.plan.header.predicted_hit_ppm < c.hit_upper * 1000000 / c.touched);
}

TEST_CASE("planner: moves the migrator cannot finish in a step are late in its steady state", "[planner]") {
  // Eight 1 MiB weights, weight k touched in interval k of eight 1 ms intervals, each moved in two intervals
  // ahead of its use and out after it: 16 MiB of moves a step. Each pass gives way at the next boundary,
  // so a migrator that cannot move 16 MiB in 8 ms leaves touches waiting in every step, however long the
  // lead; one that can is never late. Recorded wrong before: a two-step queue rated 440 ms of moves in a
  // 289 ms step "0 late".
  Synth s;
  s.intervals = 8;
  for (uint32_t k = 0; k < 8; ++k) s.touch(s.weight(MiB), k, MiB);
  s.interval_ns.assign(8, 1'000'000);
  uint64_t masks[8];
  for (uint32_t k = 0; k < 8; ++k) masks[k] = bit(k) | bit((k + 7) % 8) | bit((k + 6) % 8);
  auto outcome = [&](uint64_t bytes_per_s) {
    s.bandwidth = bytes_per_s;
    const plan::Outcome o = evaluate_masks(s.input(SENTINEL_POLICY_SENTINEL, FastBudget{3 * MiB, 0}), masks, 8);
    CHECK(o.moved_bytes == 16 * MiB);
    CHECK(o.fast_peak == 3 * MiB);
    return o;
  };
  const plan::Outcome fits = outcome(4ull << 30);  // 4 ms of moves a step
  CHECK(fits.late == 0);
  CHECK(fits.hit_bytes == 8 * MiB);
  for (uint64_t mib_per_s : {1600u, 1000u, 500u, 100u}) {  // 10, 16, 32 and 160 ms of moves in an 8 ms step
    const plan::Outcome o = outcome(mib_per_s * MiB);
    INFO(mib_per_s << " MiB/s: " << o.late << " late, " << o.hit_bytes / MiB << " MiB hit");
    CHECK(o.late > 0);
    CHECK(o.hit_bytes < 8 * MiB);
    // The promotion for the interval under way goes last: behind its schedule, the migrator still gets
    // some weights in on time. Served first, it made every later one late too: no hits at 1600 MiB/s.
    if (mib_per_s >= 1000) CHECK(o.hit_bytes >= 3 * MiB);
  }

  // The planner, given the slow migrator, keeps what it can do in time instead.
  s.bandwidth = 100 * MiB;
  const PlanInput in = s.input(SENTINEL_POLICY_SENTINEL, FastBudget{3 * MiB, 0});
  Planned st = run_plan(in);
  REQUIRE(st.ok);
  check_plan(in, st.plan);
  CHECK(st.plan.header.moved_bytes_per_step * 1000 / (100 * MiB) <= 8);  // ms of moves within the 8 ms step
  CHECK(st.plan.header.predicted_hit_ppm >= 375000);                     // the three resident weights at least
}

TEST_CASE("planner: on durations measured under a schedule, births wait for the demotions' room", "[planner]") {
  // Four 1 MiB step objects, object k born in interval k of four 1 ms intervals and touched there only,
  // alive to the step's end: born fast and demoted at the next boundary, in a budget of 1 MiB. Birth k + 1
  // has room only once demotion k has ended. Without SENTINEL_TIER_BUDGET_TIMED births land as planned
  // whatever the migrator's speed; with it, a migrator that needs 10 ms a demotion leaves them slow. That
  // is what the plain guest measured with its migrator slowed (0.15-0.20 against 0.47-0.49 predicted).
  Synth s;
  s.intervals = 4;
  for (uint32_t k = 0; k < 4; ++k) s.touch(s.add(MiB, SENTINEL_LIFE_STEP, k, 3), k, MiB);
  s.interval_ns.assign(4, 1'000'000);
  uint64_t masks[4];
  for (uint32_t k = 0; k < 4; ++k) masks[k] = bit(k);
  auto outcome = [&](uint64_t bytes_per_s, bool budget_timed) {
    s.bandwidth = bytes_per_s;
    PlanInput in = s.input(SENTINEL_POLICY_SENTINEL, FastBudget{MiB, 0});
    if (budget_timed) in.flags |= SENTINEL_TIER_BUDGET_TIMED;
    plan::Model m;
    const plan::Outcome o = evaluate_masks(in, masks, 4, &m);
    CHECK(m.budget_timed == budget_timed);
    return o;
  };
  CHECK(outcome(100 * MiB, false).hit_bytes == 4 * MiB);
  CHECK(outcome(4ull << 30, true).hit_bytes == 4 * MiB);  // 0.25 ms a demotion: room by the interval's end
  const plan::Outcome slow = outcome(100 * MiB, true);
  INFO(slow.hit_bytes / MiB << " MiB hit");
  CHECK(slow.hit_bytes < MiB);  // each demotion outlasts the step: in the steady state no birth has room

  // The planner, on that time base, plans what the migrator leaves room for.
  s.bandwidth = 100 * MiB;
  PlanInput in = s.input(SENTINEL_POLICY_SENTINEL, FastBudget{MiB, 0});
  in.flags |= SENTINEL_TIER_BUDGET_TIMED;
  Planned st = run_plan(in);
  REQUIRE(st.ok);
  check_plan(in, st.plan);
  CHECK(st.plan.header.flags & SENTINEL_TIER_BUDGET_TIMED);
  CHECK(st.plan.header.moved_bytes_per_step * 1000 / (100 * MiB) <= 4);  // ms of moves within the 4 ms step
  CHECK(st.plan.header.predicted_hit_ppm >= 250000);                     // one object fast for good at least
}

TEST_CASE("planner: short-lived objects go to a pool sized to their peak", "[planner]") {
  Synth s;
  s.intervals = 4;
  const uint32_t a = s.add(2 * MiB, SENTINEL_LIFE_SHORT, 0, 0);
  const uint32_t b = s.add(1 * MiB, SENTINEL_LIFE_SHORT, 1, 1);
  const uint32_t c = s.add(1 * MiB, SENTINEL_LIFE_SHORT, 1, 1);
  const uint32_t w = s.weight(4 * MiB);
  s.touch(a, 0, 2 * MiB);
  s.touch(b, 1, MiB);
  s.touch(c, 1, MiB);
  s.touch(w, 3, 4 * MiB);
  PlanInput in = s.input(SENTINEL_POLICY_SENTINEL, FastBudget{6 * MiB, 0});
  Planned st = run_plan(in);
  REQUIRE(st.ok);
  check_plan(in, st.plan);
  CHECK(st.plan.header.fast_pool_bytes == 2 * MiB);
  for (uint32_t id : {a, b, c}) {
    CHECK((entry_of(st.plan, id).flags & SENTINEL_PLAN_POOL));
    CHECK((entry_of(st.plan, id).flags & SENTINEL_PLAN_BIRTH_FAST));
  }
  CHECK(st.plan.header.predicted_hit_ppm == 1000000);  // the weight fits beside the pool
  CHECK(st.plan.header.fast_peak_bytes <= 6 * MiB);
}

TEST_CASE("planner: first-touch gives freed room back", "[planner]") {
  Synth s;
  s.intervals = 4;
  const uint32_t a = s.add(MiB, SENTINEL_LIFE_STEP, 0, 1);
  const uint32_t b = s.add(MiB, SENTINEL_LIFE_STEP, 2, 3);
  const uint32_t c = s.add(MiB, SENTINEL_LIFE_STEP, 3, 3);  // b still holds the room
  s.touch(a, 0, MiB);
  s.touch(b, 2, MiB);
  s.touch(c, 3, MiB);
  PlanInput in = s.input(SENTINEL_POLICY_FIRST_TOUCH, FastBudget{MiB, 0});
  Planned ft = run_plan(in);
  REQUIRE(ft.ok);
  check_plan(in, ft.plan);
  CHECK(entry_of(ft.plan, a).fast_mask == 0x3);
  CHECK(entry_of(ft.plan, b).fast_mask == 0xC);
  CHECK(entry_of(ft.plan, c).fast_mask == 0);
}

TEST_CASE("planner: objects above the budget stay slow; pinned objects never move", "[planner]") {
  Synth s;
  const uint32_t big = s.weight(3 * MiB);
  const uint32_t pinned = s.weight(MiB, SENTINEL_IDENTITY_PINNED);
  const uint32_t small = s.weight(MiB);
  s.touch(big, 0, 3 * MiB);
  s.touch(pinned, 2, MiB);
  s.touch(small, 5, MiB);
  for (sentinel_policy pol : kPolicies) {
    PlanInput in = s.input(pol, FastBudget{2 * MiB, 0});
    Planned r = run_plan(in);
    REQUIRE(r.ok);
    check_plan(in, r.plan);
    if (pol != SENTINEL_POLICY_ALL_FAST) CHECK(entry_of(r.plan, big).fast_mask == 0);
    const uint64_t m = entry_of(r.plan, pinned).fast_mask;
    CHECK((m == 0 || m == 0xFF));
  }
}

TEST_CASE("planner: co-allocation groups can move as units", "[planner]") {
  // Eight 256 KiB members of one group, all touched in interval 5: the schedule gives them one mask.
  Synth s;
  std::vector<uint32_t> members;
  for (int i = 0; i < 8; ++i) {
    members.push_back(s.add(256 << 10, SENTINEL_LIFE_PERSISTENT, SENTINEL_NO_ORDINAL, SENTINEL_NO_ORDINAL, 0, 7));
    s.touch(members.back(), 5, 256 << 10);
  }
  PlanInput in = s.input(SENTINEL_POLICY_SENTINEL, FastBudget{2 * MiB, 0});
  Planned r = run_plan(in);
  REQUIRE(r.ok);
  check_plan(in, r.plan);
  CHECK(r.plan.header.predicted_hit_ppm == 1000000);
  for (uint32_t id : members) CHECK(entry_of(r.plan, id).fast_mask == entry_of(r.plan, members[0]).fast_mask);
}

TEST_CASE("planner: randomized profiles keep every guarantee", "[planner]") {
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 300; ++round) {
    Synth s;
    s.intervals = 1 + static_cast<uint32_t>(rng() % 64);
    const uint32_t n = s.intervals;
    const int objects = 1 + static_cast<int>(rng() % 40);
    for (int o = 0; o < objects; ++o) {
      const uint64_t size = (1 + rng() % 64) << 16;
      const uint32_t kind = static_cast<uint32_t>(rng() % 4);
      const uint32_t flags = rng() % 10 == 0 ? SENTINEL_IDENTITY_PINNED : 0;
      uint32_t id;
      if (kind == 0) {
        id = s.weight(size, flags);
      } else {
        const uint32_t b = static_cast<uint32_t>(rng() % n);
        if (kind == 1)
          id = s.add(size, SENTINEL_LIFE_SHORT, b, b, flags);
        else if (kind == 2)
          id = s.add(size, SENTINEL_LIFE_STEP, b, b + static_cast<uint32_t>(rng() % (n - b)), flags);
        else
          id = s.add(size, SENTINEL_LIFE_PERSISTENT, b, SENTINEL_NO_ORDINAL, flags);
      }
      const sentinel_identity& d = s.ids.back();
      for (uint32_t k = 0; k < n; ++k) {
        const bool in_life = d.birth_interval == SENTINEL_NO_ORDINAL || d.death_interval == SENTINEL_NO_ORDINAL ||
                             (k >= d.birth_interval && k <= d.death_interval);
        if (in_life && rng() % 3 == 0)
          s.touch(id, k, (1 + rng() % (size >> 13)) << 13, static_cast<uint32_t>(rng() % 2));
      }
    }
    if (rng() % 2) {
      for (uint32_t k = 0; k < n; ++k) s.interval_ns.push_back(rng() % 5'000'000);
      s.bandwidth = (1 + rng() % 8) << 28;
    }
    const uint32_t pct = 1 + static_cast<uint32_t>(rng() % 100);
    std::map<sentinel_policy, uint32_t> ppm;
    for (sentinel_policy pol : kPolicies) {
      PlanInput in = s.input(pol, FastBudget{0, pct * 10000});
      in.profiled_steps = 2;
      INFO("round " << round << " intervals " << n << " objects " << objects << " " << pct << "% " << policy_name(pol));
      Planned r = run_plan(in);
      REQUIRE(r.ok);
      CHECK(r.allocations == 0);
      check_plan(in, r.plan);
      ppm[pol] = r.plan.header.predicted_hit_ppm;
    }
    INFO("round " << round);
    CHECK(ppm[SENTINEL_POLICY_SENTINEL] >= ppm[SENTINEL_POLICY_FIRST_TOUCH]);
  }
}

TEST_CASE("planner: bad inputs are refused with a reason", "[planner]") {
  Synth s = layered();
  auto refused = [](PlanInput in, const char* why) {
    Planned r = run_plan(in);
    INFO(why);
    CHECK_FALSE(r.ok);
    REQUIRE(r.error != nullptr);
    CHECK(std::string(r.error) == why);
  };
  PlanInput in = s.input(SENTINEL_POLICY_SENTINEL, FastBudget{MiB, 0});
  PlanInput bad = in;
  bad.intervals = 0;
  refused(bad, "no intervals in the step");
  bad = in;
  bad.intervals = 65;
  refused(bad, "more than 64 intervals in the step");
  bad = in;
  bad.identities = nullptr;
  refused(bad, "identities missing (null with a count)");
  bad = in;
  bad.touches = nullptr;
  refused(bad, "touches missing (null with a count)");
  bad = in;
  bad.profiled_steps = 0;
  refused(bad, "profiled steps is 0");
  bad = in;
  bad.policy = static_cast<sentinel_policy>(7);  // within the enum's range (no UB), not a policy
  refused(bad, "unknown policy");
  bad = in;
  bad.budget = FastBudget{0, 1000001};
  refused(bad, "budget share above 100%");

  Synth t = s;
  t.touch(100, 8, 4096);
  refused(t.input(SENTINEL_POLICY_SENTINEL, FastBudget{MiB, 0}), "touch interval out of range");
  t = s;
  t.ids[1].id = t.ids[0].id;
  refused(t.input(SENTINEL_POLICY_SENTINEL, FastBudget{MiB, 0}), "duplicate identity id in the input");
  t = s;
  t.ids[0].phase = 3;
  refused(t.input(SENTINEL_POLICY_SENTINEL, FastBudget{MiB, 0}), "identity of another phase in the input");
  t = s;
  t.add(MiB, SENTINEL_LIFE_STEP, 9, 9);
  refused(t.input(SENTINEL_POLICY_SENTINEL, FastBudget{MiB, 0}), "identity birth interval out of range");
  t = s;
  t.add(MiB, SENTINEL_LIFE_STEP, 2, 8);
  refused(t.input(SENTINEL_POLICY_SENTINEL, FastBudget{MiB, 0}), "identity death interval out of range");
  t = s;
  t.add(MiB, SENTINEL_LIFE_STEP, 3, 2);
  refused(t.input(SENTINEL_POLICY_SENTINEL, FastBudget{MiB, 0}), "identity death interval before its birth interval");
  t = s;
  t.add(MiB, SENTINEL_LIFE_SHORT, 1, 2);
  refused(t.input(SENTINEL_POLICY_SENTINEL, FastBudget{MiB, 0}), "short-lived identity spans several intervals");

  t = s;
  t.ids[0].chunk_bytes = 256 * 1024;  // a 1 MiB weight in 4 chunks
  t.touch(100, 1, 4096, 0, 4);
  refused(t.input(SENTINEL_POLICY_SENTINEL, FastBudget{MiB, 0}), "touch chunk out of range");
  t = s;
  t.ids[0].chunk_bytes = 1;  // 1M chunks of one byte: more than the planner takes
  t.ids[0].size = (uint64_t{1} << 20) + 1;
  refused(t.input(SENTINEL_POLICY_SENTINEL, FastBudget{MiB, 0}), "too many chunks in the input");
  t = s;
  t.ids[0].chunk_bytes = 256 * 1024;
  t.ids[0].flags |= SENTINEL_IDENTITY_PINNED;
  refused(t.input(SENTINEL_POLICY_SENTINEL, FastBudget{MiB, 0}), "pinned identity planned in chunks");

  // Scratch too small: refused, not a crash.
  PlanScratch tiny;
  REQUIRE(tiny.init(256));
  Plan p;
  const char* err = nullptr;
  CHECK_FALSE(make_plan(in, tiny, &p, &err));
  REQUIRE(err != nullptr);
  CHECK(std::string(err) == "planner scratch memory exhausted");
}

// A 64 MiB table in 2 MiB chunks whose first 4 chunks take nearly every lookup, read in interval 1 and
// written in interval 5, beside four 1 MiB weights; budget 12 MiB.
Synth table_profile(uint32_t chunk_bytes) {
  Synth s = layered();
  const uint32_t table = s.weight(64 * MiB);
  s.ids.back().chunk_bytes = chunk_bytes;
  for (uint32_t c = 0; c < 32; ++c) {
    const uint64_t hot = c < 4 ? MiB : 8192;  // distinct bytes touched in the chunk
    for (uint32_t k : {1u, 5u}) s.touch(table, k, hot, 0, chunk_bytes ? c : 0);
  }
  return s;
}

TEST_CASE("planner: a large object planned in chunks gets its hot chunks fast", "[planner]") {
  for (sentinel_policy pol : kPolicies) {
    INFO(policy_name(pol));
    Synth chunked = table_profile(2 * MiB);
    PlanInput in = chunked.input(pol, FastBudget{12 * MiB, 0});
    Planned c = run_plan(in);
    REQUIRE(c.ok);
    check_plan(in, c.plan);  // 36 entries: the weights, then the table's 32 chunks in order
    CHECK(c.plan.entry_count == 36);
    Synth whole = table_profile(0);
    PlanInput win = whole.input(pol, FastBudget{12 * MiB, 0});
    Planned w = run_plan(win);
    REQUIRE(w.ok);
    check_plan(win, w.plan);
    CHECK(c.plan.header.footprint_peak_bytes == w.plan.header.footprint_peak_bytes);
    if (pol == SENTINEL_POLICY_SENTINEL || pol == SENTINEL_POLICY_FIRST_TOUCH) {
      // Whole, the table is above the budget and stays slow: only the weights' 4 of the 12.4 MiB touched
      // are fast.
      INFO("chunked " << share(c.plan) << " whole " << share(w.plan));
      CHECK(share(w.plan) < 0.33);
      CHECK(c.plan.header.predicted_hit_ppm > w.plan.header.predicted_hit_ppm);
    }
    if (pol == SENTINEL_POLICY_SENTINEL) {
      CHECK(share(c.plan) > 0.9);
      for (uint32_t i = 4; i < 8; ++i) {  // the hot chunks: fast in the intervals that touch them
        INFO("chunk " << c.plan.entries[i].chunk);
        CHECK((c.plan.entries[i].fast_mask & (bit(1) | bit(5))) == (bit(1) | bit(5)));
      }
    }
  }
}

// A 256 MiB table in 2 MiB chunks profiled in a sample (1 in 8 of each chunk, 8 KiB granules: a window
// of 32 granules), read in interval 1 over 2 profiled steps. Each chunk's touched bytes are what the
// sample would record: per step, the granules found touched in its window (binomial at the chunk's true
// density) counted 8 times. `hot` chunks have density hot_density, the others cold_density.
struct SampledTable {
  Synth s;
  uint32_t table = 0;
  std::vector<double> truth;  // true touched bytes per chunk over the steps
};

SampledTable sampled_table(uint32_t hot, double hot_density, double cold_density, uint32_t seed) {
  SampledTable t;
  t.s.intervals = 4;
  t.table = t.s.weight(256 * MiB);
  t.s.ids.back().chunk_bytes = 2 * MiB;
  std::mt19937 rng(seed);
  for (uint32_t c = 0; c < 128; ++c) {
    const double p = c < hot ? hot_density : cold_density;
    t.truth.push_back(p * 2 * 2 * MiB);
    std::binomial_distribution<uint32_t> granules(32, p);
    for (uint32_t step = 0; step < 2; ++step) t.s.touch(t.table, 1, uint64_t{granules(rng)} * 8 * 8192, step, c);
  }
  return t;
}

PlanInput sampled_input(const SampledTable& t, uint64_t budget, bool sampled) {
  PlanInput in = t.s.input(SENTINEL_POLICY_SENTINEL, FastBudget{budget, 0});
  in.profiled_steps = 2;
  if (sampled) {
    in.sample = make_page_sample(8, 256 * MiB, 2 * MiB, 8192);
    in.granularity = 8192;
  }
  return in;
}

// The hit share the plan gets on the true densities.
double true_share(const SampledTable& t, const Plan& p) {
  double fast = 0, all = 0;
  for (uint32_t i = 0; i < p.entry_count; ++i) {
    const sentinel_plan_entry& e = p.entries[i];
    all += t.truth[e.chunk];
    if (e.fast_mask & bit(1)) fast += t.truth[e.chunk];
  }
  return fast / all;
}

TEST_CASE("planner: a sampled table's estimates are shrunk, so the plan predicts what it gets", "[planner]") {
  // Every chunk equally hot: whichever 32 of the 128 are fast get a quarter of the lookups. Read as they
  // were sampled, the 32 that looked hottest predict far more; shrunk, the prediction is the truth.
  for (uint32_t seed : {1u, 2u, 3u}) {
    INFO("seed " << seed);
    const SampledTable t = sampled_table(0, 0.25, 0.25, seed);
    Planned raw = run_plan(sampled_input(t, 64 * MiB, false));
    Planned shrunk = run_plan(sampled_input(t, 64 * MiB, true));
    REQUIRE(raw.ok);
    REQUIRE(shrunk.ok);  // (check_plan's bounds are on the raw touches: not for a shrunk plan)
    INFO("raw " << share(raw.plan) << " (true " << true_share(t, raw.plan) << "), shrunk " << share(shrunk.plan)
                << " (true " << true_share(t, shrunk.plan) << ")");
    CHECK(share(raw.plan) > true_share(t, raw.plan) + 0.05);
    CHECK(std::abs(share(shrunk.plan) - true_share(t, shrunk.plan)) < 0.02);  // a fifth of the difference kept
    // The table's touched bytes are the same before and after.
    CHECK(std::abs(static_cast<double>(shrunk.plan.touched_bytes) - static_cast<double>(raw.plan.touched_bytes)) <
          128.0);
  }
  // 16 hot chunks among cold ones: the spread is real, the shrinkage keeps most of it (toward one mean,
  // so the hot chunks' prediction errs low), and the hot chunks are the fast ones.
  for (uint32_t seed : {4u, 5u}) {
    INFO("seed " << seed);
    const SampledTable t = sampled_table(16, 0.6, 0.03, seed);
    Planned shrunk = run_plan(sampled_input(t, 32 * MiB, true));
    REQUIRE(shrunk.ok);
    uint32_t hot_fast = 0;
    for (uint32_t i = 0; i < shrunk.plan.entry_count; ++i)
      if (shrunk.plan.entries[i].chunk < 16 && (shrunk.plan.entries[i].fast_mask & bit(1))) ++hot_fast;
    CHECK(hot_fast == 16);
    INFO("shrunk " << share(shrunk.plan) << " true " << true_share(t, shrunk.plan));
    CHECK(std::abs(share(shrunk.plan) - true_share(t, shrunk.plan)) < 0.05);
  }
}

TEST_CASE("planner: plan_whole gives the plan of the same profile without chunks", "[planner]") {
  Synth chunked = table_profile(2 * MiB);
  offline::PlanSource src;
  src.identities = chunked.ids;
  src.touches = chunked.touches;
  CHECK(offline::plan_whole(&src) == 1);
  Synth merged = chunked;
  merged.ids = src.identities;
  merged.touches = src.touches;
  Synth whole = table_profile(0);
  Planned a = run_plan(merged.input(SENTINEL_POLICY_SENTINEL, FastBudget{12 * MiB, 0}));
  Planned b = run_plan(whole.input(SENTINEL_POLICY_SENTINEL, FastBudget{12 * MiB, 0}));
  REQUIRE((a.ok && b.ok));
  CHECK(same_plan(a.plan, b.plan));
}

// An SGD-like step: four 1 MiB weights, weight k read in interval k (the forward), then an update of 8 ms
// that allocates nothing and touches weight k in its k-th quarter (format 1.14's touch times), with a
// 1 MiB temporary born and freed in it (no times).
Synth in_place_update() {
  Synth s;
  s.intervals = 4;
  s.interval_ns = {1'000'000, 1'000'000, 1'000'000, 8'000'000};
  s.bandwidth = 10ull << 30;
  for (uint32_t k = 0; k < 4; ++k) {
    const uint32_t w = s.weight(MiB);
    if (k < 3) s.touch(w, k, MiB);
    s.touch(w, 3, MiB, 0, 0, 0, static_cast<uint16_t>(k * 65535 / 4), static_cast<uint16_t>((k + 1) * 65535 / 4));
  }
  s.touch(s.add(MiB, SENTINEL_LIFE_SHORT, 3, 3), 3, MiB);  // no times
  return s;
}

TEST_CASE("planner: plan_cut_by_time cuts a long interval by its touches' times", "[planner]") {
  const Synth s = in_place_update();
  offline::PlanSource src;
  src.identities = s.ids;
  src.touches = s.touches;
  src.interval_ns = s.interval_ns;
  src.in = s.input(SENTINEL_POLICY_SENTINEL, FastBudget{MiB + MiB / 2, 0});
  src.in.costs = StepCosts{1, 0.01};
  const PlanInput before = src.in;
  REQUIRE(offline::plan_cut_by_time(&src) == 1);
  const PlanInput& in = src.in;
  SECTION("pieces of about the median, their durations adding up to the interval's") {
    REQUIRE(in.intervals == 3 + offline::kMaxTimePieces);
    CHECK(sum_ns(in) == sum_ns(before));
    for (uint32_t j = 3; j < in.intervals; ++j) CHECK(in.interval_ns[j] == 1'000'000);
  }
  SECTION("each touch in the pieces its time overlaps; every identity's bytes kept") {
    std::map<uint32_t, uint64_t> bytes_of;
    for (const sentinel_touch& t : src.touches) bytes_of[t.identity] += t.bytes;
    for (const sentinel_touch& t : s.touches) bytes_of[t.identity] -= t.bytes;
    for (const auto& [id, left] : bytes_of) CHECK(left == 0);
    for (const sentinel_touch& t : src.touches) {
      const uint32_t k = t.identity - 100;
      if (k < 4 && t.interval >= 3) {  // weight k's update: pieces 3 + 2k and 3 + 2k + 1 (its quarter of 8)
        const bool own = t.interval == 3 + 2 * k || t.interval == 4 + 2 * k;
        INFO("weight " << k << " in interval " << t.interval << ": " << t.bytes << " bytes");
        // Half in each; the shares x 65535 round the quarters' bounds, leaving slivers next door.
        CHECK((own ? t.bytes + 128 >= MiB / 2 && t.bytes <= MiB / 2 + 128 : t.bytes < 128));
      }
      if (k == 4) CHECK((t.bytes == MiB && t.interval == 3));  // the temporary, whole in the first piece
    }
  }
  SECTION("the temporary stays short-lived, in one piece") {
    const sentinel_identity& tmp = src.identities[4];
    CHECK(tmp.lifetime == SENTINEL_LIFE_SHORT);
    CHECK((tmp.birth_interval == 3 && tmp.death_interval == 3));
  }
  SECTION("the plan stages the update through the fast tier, and models a shorter step") {
    Planned cut = run_plan(in), whole = run_plan(before);
    REQUIRE((cut.ok && whole.ok));
    check_plan(in, cut.plan);
    check_step_time(in, cut.plan);
    INFO("modeled step " << cut.plan.modeled_step_ns << " ns cut, " << whole.plan.modeled_step_ns << " ns whole");
    CHECK(cut.plan.modeled_step_ns < whole.plan.modeled_step_ns);
    CHECK(share(cut.plan) > share(whole.plan));
  }
  SECTION("nothing to cut: no durations, no interval over twice the median, or no touch times") {
    offline::PlanSource flat;
    flat.in = s.input(SENTINEL_POLICY_SENTINEL, FastBudget{MiB, 0});
    flat.touches = s.touches;
    flat.identities = s.ids;
    CHECK(offline::plan_cut_by_time(&flat) == 0);  // no interval_ns
    flat.interval_ns = {1'000'000, 1'000'000, 1'500'000, 2'000'000};
    CHECK(offline::plan_cut_by_time(&flat) == 0);
    CHECK(flat.in.intervals == 4);
    flat.interval_ns = s.interval_ns;  // long enough, but no touch times (no passes, or before 1.14)
    for (sentinel_touch& t : flat.touches) t.time_begin = t.time_end = 0;
    CHECK(offline::plan_cut_by_time(&flat) == 0);
    CHECK(flat.in.intervals == 4);
  }
}

TEST_CASE("planner: the recorded DLRM's tables in chunks: their hot rows fast at 20%", "[planner]") {
  // scripts/scale_models.py's DLRM (8 tables of 128 MiB, ids ranked by frequency) recorded with the default
  // 2 MiB chunks (tests/fixtures/record_profile.py).
  offline::PlanSource src = load_fixture("dlrm-chunks");
  uint32_t chunked = 0;
  for (const auto& d : src.identities) chunked += d.chunk_bytes == 2 * MiB && d.size == 128 * MiB;
  CHECK(chunked == 8);
  bool chunk_touches = false;
  for (const auto& t : src.touches) chunk_touches = chunk_touches || t.chunk > 0;
  CHECK(chunk_touches);
  PlanInput in = src.in;
  in.budget = FastBudget{0, 200000};
  Planned c = run_plan(in);
  REQUIRE(c.ok);
  check_plan(in, c.plan);
  offline::PlanSource whole = load_fixture("dlrm-chunks");
  CHECK(offline::plan_whole(&whole) == chunked);
  PlanInput win = whole.in;
  win.identities = whole.identities.data();
  win.touches = whole.touches.data();
  win.budget = in.budget;
  Planned w = run_plan(win);
  REQUIRE(w.ok);
  check_plan(win, w.plan);
  INFO("chunked " << share(c.plan) << ", whole " << share(w.plan));
  CHECK(share(c.plan) > share(w.plan) + 0.15);  // recorded: 0.912 against 0.679
}

TEST_CASE("planner: an empty phase and one interval are planned", "[planner]") {
  Synth s;
  s.intervals = 1;
  for (sentinel_policy pol : kPolicies) {
    PlanInput in = s.input(pol, FastBudget{0, 200000});
    Planned r = run_plan(in);
    REQUIRE(r.ok);
    CHECK(r.plan.entry_count == 0);
    CHECK(r.plan.header.predicted_hit_ppm == 0);
  }
  const uint32_t w = s.weight(MiB);
  s.touch(w, 0, MiB);
  PlanInput in = s.input(SENTINEL_POLICY_SENTINEL, FastBudget{0, 1000000});
  Planned r = run_plan(in);
  REQUIRE(r.ok);
  check_plan(in, r.plan);
  CHECK(r.plan.header.predicted_hit_ppm == 1000000);
}

TEST_CASE("planner: policy names", "[planner]") {
  for (sentinel_policy pol : kPolicies) {
    sentinel_policy back;
    REQUIRE(parse_policy(policy_name(pol), &back));
    CHECK(back == pol);
  }
  sentinel_policy p;
  CHECK_FALSE(parse_policy("Sentinel", &p));
  CHECK_FALSE(parse_policy("", &p));
  CHECK_FALSE(parse_policy(nullptr, &p));
  CHECK(std::string(policy_name(77)) == "unknown");
}

TEST_CASE("planner: fast-tier sizes as the tools take them", "[planner]") {
  // The runtime's syntax (base/parse.h), without "auto": the one table of inputs.
  for (const auto& c : test::kBudgetCases) {
    CAPTURE(c.text);
    FastBudget b;
    REQUIRE(offline::parse_fast_bytes(c.text, &b) == c.ok);
    if (c.ok) CHECK((b.bytes == c.bytes && b.share_ppm == c.share_ppm));
  }
  FastBudget b;
  CHECK_FALSE(offline::parse_fast_bytes(std::string("20%\0", 4), &b));
}

// Not a test: make_plan() time on large synthetic profiles. Run: planner-tests "[planner-bench]"
TEST_CASE("planner: the step costs it was given are in the plan header, and plan_source reads them back", "[planner]") {
  const std::string path = std::string(SENTINEL_SOURCE_DIR) + "/tests/fixtures/profiles/mlp.prof";
  fmt::Profile p = fmt::read_profile(path);
  offline::PlanSource src;
  std::string error;
  REQUIRE(offline::plan_source(p, -1, &src, &error));
  CHECK((src.in.costs.slow_ns_per_byte == 0 && src.in.costs.move_ns_per_byte == 0));  // no PLAN: unknown
  src.in.budget = FastBudget{0, 200000};
  for (auto [slow, move] : {std::pair<uint32_t, uint32_t>{200, 500}, {0, 0}, {1, 1000000000}}) {
    INFO(slow << "," << move);
    PlanInput in = src.in;
    in.costs = step_costs_of_kib(slow, move);
    PlanScratch scratch;
    Plan plan;
    REQUIRE(scratch.init(plan_scratch_bytes(in)));
    REQUIRE(make_plan(in, scratch, &plan, nullptr));
    CHECK((plan.header.slow_ns_per_kib == slow && plan.header.move_ns_per_kib == move));
    // The dump's PLAN record gives them back to the replay exactly.
    fmt::Profile q = p;
    fmt::PlanRecord rec;
    rec.header = plan.header;
    q.plans.push_back(rec);
    offline::PlanSource again;
    REQUIRE(offline::plan_source(q, src.in.phase, &again, &error));
    CHECK((again.in.costs.slow_ns_per_byte == in.costs.slow_ns_per_byte &&
           again.in.costs.move_ns_per_byte == in.costs.move_ns_per_byte));
  }
  CHECK(ns_per_kib_of(-1.0) == 0);
  CHECK(ns_per_kib_of(0.5) == 512);
}

TEST_CASE("planner time on large profiles", "[.][planner-bench]") {
  for (uint32_t objects : {500u, 2000u, 8000u}) {
    for (uint32_t n : {16u, 64u}) {
      std::mt19937_64 rng(objects * 131 + n);
      Synth s;
      s.intervals = n;
      for (uint32_t o = 0; o < objects; ++o) {
        const uint64_t size = (1 + rng() % 64) << 16;
        uint32_t id;
        if (o % 4 == 0) {
          id = s.weight(size);
          s.touch(id, static_cast<uint32_t>(rng() % n), size);
          s.touch(id, static_cast<uint32_t>(rng() % n), size);
        } else {
          const uint32_t b = static_cast<uint32_t>(rng() % n), d = b + static_cast<uint32_t>(rng() % (n - b));
          id = s.add(size, b == d ? SENTINEL_LIFE_SHORT : SENTINEL_LIFE_STEP, b, d);
          for (uint32_t k = b; k <= d; ++k)
            if (rng() % 2) s.touch(id, k, size / 2);
        }
      }
      s.interval_ns.assign(n, 2'000'000);
      for (sentinel_policy pol : kPolicies) {
        Planned r = run_plan(s.input(pol, FastBudget{0, 200000}));
        REQUIRE(r.ok);
        std::printf("%5u identities %2u intervals %-12s %8.1f ms CPU (%u trials)\n", objects, n, policy_name(pol),
                    r.cpu_seconds * 1e3, r.plan.trials);
      }
    }
  }
}
