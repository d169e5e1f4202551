// From a decoded dump to the planner's input. See plan_input.h.
#include "tier/plan_input.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "base/parse.h"

namespace sentinel::offline {

namespace {

// A CONFIG value in SENTINEL_*'s size syntax (the runtime writes resolved values, in bytes); 0 when the
// dump has none or it does not parse.
uint64_t config_size(const fmt::Profile& p, const char* name) {
  const std::string* v = p.config_value(name);
  uint64_t out = 0;
  return v && v->find('\0') == std::string::npos && parse_size(v->c_str(), &out) ? out : 0;
}

}  // namespace

bool plan_source(const fmt::Profile& p, int64_t phase, PlanSource* out, std::string* error) {
  *out = PlanSource{};
  const fmt::ProfileSession* session = nullptr;
  if (phase < 0) {
    if (p.sessions.empty()) {
      *error = "the dump has no profile (no PROFILE record; was it written with SENTINEL_MODE=profile?)";
      return false;
    }
    session = &p.sessions.front();
    phase = session->phase;
  } else {
    for (const auto& s : p.sessions)
      if (s.phase == phase) {
        session = &s;
        break;
      }
  }
  if (phase > UINT32_MAX) {
    *error = "phase " + std::to_string(phase) + " is out of range";
    return false;
  }
  const uint32_t ph = static_cast<uint32_t>(phase);
  const fmt::IntervalTable* table = p.intervals_for(ph);
  if (!table) {
    *error = "the dump has no INTERVALS record for phase " + std::to_string(ph);
    return false;
  }
  if (table->bounds.empty() || table->bounds.size() > 64) {
    *error = "phase " + std::to_string(ph) + " has " + std::to_string(table->bounds.size()) +
             " intervals (the planner takes 1 to 64)";
    return false;
  }
  const uint32_t n = static_cast<uint32_t>(table->bounds.size());
  std::unordered_set<uint32_t> ids;
  for (const auto& d : p.identities)
    if (d.phase == ph && ids.insert(d.id).second) out->identities.push_back(d);
  uint32_t steps = session ? session->profiled_steps : 0;
  for (const auto& t : p.touches) {
    if (!ids.count(t.identity)) continue;
    out->touches.push_back(t);
    if (t.step != UINT32_MAX) steps = std::max(steps, t.step + 1);
  }
  std::vector<double> sum(n, 0.0);
  std::vector<uint64_t> samples(n, 0);
  bool any = false;
  for (const auto& c : p.counters) {
    if (c.phase != ph || c.interval >= n) continue;
    sum[c.interval] += static_cast<double>(c.duration_ns);
    ++samples[c.interval];
    any = true;
  }
  // The clock the runtime gave the planner, when its PLAN record carries it; else the profiled steps'.
  const fmt::PlanRecord* recorded = p.plan_for(ph);
  if (recorded && recorded->interval_ns.size() == n) {
    out->interval_ns = recorded->interval_ns;
  } else if (any) {
    out->interval_ns.resize(n, 0);
    for (uint32_t i = 0; i < n; ++i)
      if (samples[i])
        out->interval_ns[i] = static_cast<uint64_t>(std::llround(sum[i] / static_cast<double>(samples[i])));
  }
  PlanInput& in = out->in;
  in.phase = ph;
  in.intervals = n;
  in.identities = out->identities.data();
  in.identity_count = static_cast<uint32_t>(out->identities.size());
  in.touches = out->touches.data();
  in.touch_count = out->touches.size();
  in.profiled_steps = std::max<uint32_t>(steps, 1);
  in.interval_ns = out->interval_ns.empty() ? nullptr : out->interval_ns.data();
  // The bandwidth as the plan recorded it (the probe may have finished after an early plan).
  in.migrate_bytes_per_s = recorded            ? recorded->header.migrate_bytes_per_s
                           : p.tiering.empty() ? 0
                                               : p.tiering.back().migrate_bytes_per_s;
  if (!p.tiering.empty()) in.flags = p.tiering.back().flags & ~SENTINEL_TIER_BUDGET_SHARE;
  // The step-time trial kept the schedule without moves: the plan is recomputed as that one.
  if (recorded) in.flags |= recorded->header.flags & SENTINEL_TIER_NO_MOVES;
  // The step-time model's costs the runtime gave the planner (1.4; older plans: 0, unknown), and whether
  // auto priced its moves for a training thread the migrator does not share a CPU with.
  if (recorded) in.flags |= recorded->header.flags & SENTINEL_TIER_MOVES_OFF_THREAD;
  // A re-plan's durations measured under a moving schedule: its lateness model held moves to the budget (1.13).
  if (recorded) in.flags |= recorded->header.flags & SENTINEL_TIER_BUDGET_TIMED;
  if (recorded) in.costs = step_costs_of_kib(recorded->header.slow_ns_per_kib, recorded->header.move_ns_per_kib);
  // The profile's sample (SENTINEL_PROFILE_SAMPLE, 2026-12-04; dumps before it have none), so that its
  // estimates are shrunk as the run's planner shrank them.
  if (session) {
    in.granularity = session->granularity_bytes;
    in.sample = recorded_sample(p, in.granularity);
  }
  return true;
}

PageSample recorded_sample(const fmt::Profile& p, uint32_t granularity) {
  const uint64_t rate = config_size(p, "SENTINEL_PROFILE_SAMPLE");
  return make_page_sample(rate <= 64 ? static_cast<uint32_t>(rate) : 0, config_size(p, "SENTINEL_PROFILE_SAMPLE_MIN"),
                          config_size(p, "SENTINEL_CHUNK_BYTES"), granularity);
}

uint32_t plan_whole(PlanSource* s) {
  uint32_t merged = 0;
  for (auto& d : s->identities)
    if (d.chunk_bytes) {
      d.chunk_bytes = 0;
      ++merged;
    }
  for (auto& t : s->touches) t.chunk = 0;
  return merged;
}

uint64_t plan_without_intensity(PlanSource* s) {
  uint64_t dropped = 0;
  for (auto& t : s->touches)
    if (t.passes_x256) {
      t.passes_x256 = 0;
      ++dropped;
    }
  return dropped;
}

bool parse_fast_bytes(const std::string& text, FastBudget* out) {
  BudgetText b;
  if (text.find('\0') != std::string::npos || !parse_budget(text.c_str(), false, &b)) return false;
  *out = FastBudget{b.bytes, b.share_ppm};
  return true;
}

RecordedSettings recorded_settings(const fmt::Profile& p) {
  RecordedSettings r;
  if (const std::string* v = p.config_value("SENTINEL_POLICY")) {
    sentinel_policy pol;
    if (parse_policy(v->c_str(), &pol)) {
      r.policy = pol;
      r.policy_source = "configuration";
    }
  }
  if (const std::string* v = p.config_value("SENTINEL_FAST_BYTES")) {
    FastBudget b;
    if (parse_fast_bytes(*v, &b)) {
      r.budget = b;
      r.budget_source = "configuration";
    } else if (*v == "auto") {
      // The run resolves "auto" from the fast node's free memory at start; offline that would
      // usually hold the whole footprint, so the study default stays (TIERING, when present, has
      // the budget the run used).
      r.budget_source = "default; the run's SENTINEL_FAST_BYTES=auto is resolved at run time";
    }
  }
  if (!p.tiering.empty()) {
    const sentinel_tiering& t = p.tiering.back();
    if (t.policy <= SENTINEL_POLICY_HOT) {
      r.policy = static_cast<sentinel_policy>(t.policy);
      r.policy_source = "TIERING record";
    }
    if ((t.flags & SENTINEL_TIER_BUDGET_SHARE) && t.budget_share_ppm && t.budget_share_ppm <= 1000000) {
      r.budget = FastBudget{0, t.budget_share_ppm};
      r.budget_source = "TIERING record";
    } else if (!(t.flags & SENTINEL_TIER_BUDGET_SHARE) && t.fast_budget_bytes) {
      r.budget = FastBudget{t.fast_budget_bytes, 0};
      r.budget_source = "TIERING record";
    }
  }
  return r;
}

}  // namespace sentinel::offline
