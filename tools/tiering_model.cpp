// The 1.2 tiering records as sentinel-view shows them. See tiering_model.h.
#include "tiering_model.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "analysis.h"
#include "json.h"
#include "tier/drift_follow.h"
#include "tier/plan_input.h"
#include "tier/planner.h"

namespace sentinel::view {

namespace {

constexpr uint32_t kMaxIntervals = 4096;

uint64_t sat_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

// A MIGRATIONS entry added into the figures a phase and an interval share.
template <typename Figures>
void add_migration(Figures& f, const sentinel_migration_entry& m) {
  f.migrations = true;
  f.late = sat_add(f.late, m.late);
  f.failed_pages = sat_add(f.failed_pages, m.failed_pages);
  f.migrate_ns = sat_add(f.migrate_ns, m.migrate_ns);
  f.fast_max = std::max(f.fast_max, m.fast_bytes_max);
  f.steps = std::max(f.steps, m.steps);
}

// A PLACEMENT entry added into a phase's or an interval's figures; `fast`: its fast bytes, at most
// its touched bytes.
template <typename Figures>
void add_placement(Figures& f, const sentinel_placement_entry& pl, uint64_t fast) {
  f.touched = sat_add(f.touched, pl.touched_bytes);
  f.fast = sat_add(f.fast, fast);
  f.checked_steps = std::max(f.checked_steps, pl.steps);
  f.misplaced = sat_add(f.misplaced, pl.misplaced);
  f.verified = sat_add(f.verified, pl.verified);
}

std::string pct(double share) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", share * 100.0);
  return b;
}

std::string plural(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

std::optional<double> PhaseTiering::measured_hit() const {
  if (!checked || touched == 0) return std::nullopt;
  return static_cast<double>(fast) / static_cast<double>(touched);
}

std::optional<double> PhaseTiering::predicted_hit() const {
  if (!plan) return std::nullopt;
  return plan->header.predicted_hit_ppm / 1e6;
}

const PhaseTiering* TieringModel::find(uint32_t ph) const {
  auto it =
      std::lower_bound(phases.begin(), phases.end(), ph, [](const PhaseTiering& x, uint32_t v) { return x.phase < v; });
  return it != phases.end() && it->phase == ph ? &*it : nullptr;
}

uint64_t TieringModel::budget() const {
  if (plan) return plan->header.fast_budget_bytes;
  return tiering ? tiering->fast_budget_bytes : 0;
}

uint64_t TieringModel::fast_peak() const {
  if (tiering) return tiering->fast_peak_bytes;
  uint64_t m = 0;
  for (const auto& ph : phases) m = std::max(m, ph.fast_max);
  return m;
}

namespace {

// The plan of a PLAN record recomputed with the settings the run recorded (as sentinel-view plan does,
// with the record's costs), for its modeled step time; nullopt without costs or interval durations.
std::optional<PhaseTiering::ModeledStep> modeled_step(const fmt::Profile& p, const fmt::PlanRecord& rec) {
  if (!rec.header.slow_ns_per_kib) return std::nullopt;  // the model ranks nothing without it
  offline::PlanSource src;
  std::string why;
  if (!offline::plan_source(p, rec.header.phase, &src, &why) || !src.in.interval_ns) return std::nullopt;
  src.in.policy = static_cast<sentinel_policy>(rec.header.policy);
  src.in.budget = offline::recorded_settings(p).budget;
  PlanScratch scratch;
  Plan plan;
  if (!scratch.init(plan_scratch_bytes(src.in)) || !make_plan(src.in, scratch, &plan, nullptr) || !plan.modeled_base_ns)
    return std::nullopt;
  return PhaseTiering::ModeledStep{plan.modeled_step_ns, plan.modeled_base_ns, plan.modeled_slow_ns,
                                   plan.modeled_move_ns};
}

}  // namespace

TieringModel model_tiering(const fmt::Profile& p, uint32_t phase) {
  TieringModel t;
  t.present = p.has_tiering_records();
  if (!p.tiering.empty()) t.tiering = &p.tiering.back();
  t.phase = phase;
  t.numa_calls_denied = p.stat("numa_calls_denied").value_or(0);

  std::map<uint32_t, PhaseTiering> phases;
  auto of = [&](uint32_t ph) -> PhaseTiering& {
    PhaseTiering& x = phases[ph];
    x.phase = ph;
    return x;
  };
  for (const auto& pl : p.plans) {
    PhaseTiering& ph = of(pl.header.phase);
    ph.plan = p.plan_for(pl.header.phase);
    if (ph.plan == &pl) ph.modeled = modeled_step(p, pl);
  }
  std::map<uint32_t, IntervalTiering> iv;
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> mean;  // interval -> (sum, steps)
  uint64_t late = 0, migrated = 0, failed = 0;
  for (const auto& m : p.migrations) {
    const uint64_t moved = sat_add(m.bytes_to_fast, m.bytes_to_slow);
    migrated = sat_add(migrated, moved);
    late = sat_add(late, m.late);
    failed = sat_add(failed, m.failed_pages);
    t.migrate_ns = sat_add(t.migrate_ns, m.migrate_ns);
    PhaseTiering& ph = of(m.phase);
    add_migration(ph, m);
    ph.migrated_bytes = sat_add(ph.migrated_bytes, moved);
    if (m.phase != phase || m.interval >= kMaxIntervals) continue;
    IntervalTiering& e = iv[m.interval];
    e.interval = m.interval;
    add_migration(e, m);
    e.to_fast = sat_add(e.to_fast, m.bytes_to_fast);
    e.to_slow = sat_add(e.to_slow, m.bytes_to_slow);
    e.moves = sat_add(e.moves, m.moves);
    auto& [sum, steps] = mean[m.interval];
    sum = sat_add(sum, m.fast_bytes_sum);
    steps = sat_add(steps, m.steps);
  }
  for (auto& [k, e] : iv)
    if (auto it = mean.find(k); it != mean.end() && it->second.second)
      e.fast_mean = static_cast<double>(it->second.first) / static_cast<double>(it->second.second);
  for (const auto& pl : p.placement) {
    const uint64_t fast = std::min(pl.fast_bytes, pl.touched_bytes);
    PhaseTiering& ph = of(pl.phase);
    ph.checked = true;
    add_placement(ph, pl, fast);
    if (pl.phase != phase || pl.interval >= kMaxIntervals) continue;
    IntervalTiering& e = iv[pl.interval];
    e.interval = pl.interval;
    e.placement = true;
    add_placement(e, pl, fast);
  }
  for (const auto& [k, e] : iv) t.intervals.push_back(e);
  for (const auto& [k, ph] : phases) t.phases.push_back(ph);
  t.shown = t.find(phase);
  t.plan = t.shown ? t.shown->plan : nullptr;
  for (const auto& b : p.migration_log) {
    ++t.batches;
    t.batch_bytes = sat_add(t.batch_bytes, b.bytes);
    if (b.end_ns > b.start_ns) t.batch_ns = sat_add(t.batch_ns, b.end_ns - b.start_ns);
    if (b.flags & SENTINEL_MIGRATE_TO_FAST) t.promotions = sat_add(t.promotions, b.objects);
  }
  for (const auto& d : p.detection) t.detection.push_back(&d);
  if (t.tiering) {
    t.migrated_bytes = t.tiering->migrated_bytes;
    t.late_migrations = t.tiering->late_migrations;
    t.failed_pages = t.tiering->failed_pages;
  } else {
    t.migrated_bytes = migrated;
    t.late_migrations = late;
    t.failed_pages = failed;
  }
  return t;
}

bool TieringModel::set_up_loop(uint32_t phase) const {
  for (const sentinel_detection* d : detection)
    if (d->phase == phase && phase && (d->flags & SENTINEL_DETECT_SET_UP)) return true;
  return false;
}

std::string detection_diagnosis(const sentinel_detection& d) {
  const std::string counts = "locks " + std::to_string(d.locks) + ", unlocks " + std::to_string(d.unlocks) +
                             ", retracted " + std::to_string(d.retracted);
  if (d.flags & SENTINEL_DETECT_NO_STEP)
    return "no training step found among the tracked allocations (" + counts + "; " +
           std::to_string(d.noise_allocations) +
           " allocations fit no step pattern): nothing was profiled or placed; "
           "mark steps with sentinel_step() or set SENTINEL_STEP=N";
  if (d.flags & SENTINEL_DETECT_LOST)
    return "the step pattern was lost after " + plural(d.steps, "step", "steps") + " and never found again (" + counts +
           ")";
  if (d.flags & SENTINEL_DETECT_LOCKED)
    return "step found: " + std::to_string(d.period) + " allocations, " + std::to_string(d.distinct_tokens) +
           " distinct (site, size), " + plural(d.steps, "step", "steps") + "; " + std::to_string(d.noise_allocations) +
           " noise, " + std::to_string(d.missing_allocations) + " missing allocations (" + counts + ")" +
           (d.flags & SENTINEL_DETECT_SET_UP ? "; a set-up loop: its steps kept what they allocated, not profiled"
                                             : "");
  return "no step pattern (" + counts + ")";
}

std::string placement_text(const PhaseTiering& ph) {
  if (!ph.checked) return "";
  std::string out;
  if (auto m = ph.measured_hit()) {
    out = "measured fast-hit share " + pct(*m) + " of " + human_bytes(ph.touched) + " touched (" +
          plural(ph.checked_steps, "checked step", "checked steps") + ")";
    if (auto pr = ph.predicted_hit()) {
      char b[64];
      std::snprintf(b, sizeof b, "%+.1f", (*m - *pr) * 100.0);
      out += "; predicted " + pct(*pr) + " (" + b + " points)";
    }
  } else {
    out = "checked (" + plural(ph.checked_steps, "step", "steps") + "), nothing touched";
  }
  if (ph.verified)
    out += "; " + std::to_string(ph.misplaced) + " of " + plural(ph.verified, "object", "objects") +
           " misplaced at boundaries";
  else
    out += "; no objects verified at boundaries";
  return out;
}

namespace {

std::string detector_label(const sentinel_detection& d) {
  return d.phase == 0 ? std::string("whole run") : "phase " + std::to_string(d.phase);
}

}  // namespace

namespace {

const char* kept_name(uint32_t kept) {
  return kept == SENTINEL_TRIAL_KEPT_FIXED       ? "no-moves"
         : kept == SENTINEL_TRIAL_KEPT_REPLANNED ? "replanned"
         : kept == SENTINEL_TRIAL_KEPT_WATCHED   ? "watch-replanned"
                                                 : "moving";
}

const char* watch_name(uint32_t watch) {
  switch (watch) {
    case SENTINEL_WATCH_WITHIN:
      return "within";
    case SENTINEL_WATCH_REPLANNED:
      return "replanned";
    case SENTINEL_WATCH_SAME:
      return "same";
    case SENTINEL_WATCH_FAILED:
      return "failed";
    case SENTINEL_WATCH_DRIFT:
      return "drift";
    case SENTINEL_WATCH_FOLLOWED:
      return "followed";
    default:
      return "none";
  }
}

const char* replan_name(uint32_t replan) {
  switch (replan) {
    case SENTINEL_REPLAN_WITHIN:
      return "within";
    case SENTINEL_REPLAN_DONE:
      return "replanned";
    case SENTINEL_REPLAN_SAME:
      return "same";
    case SENTINEL_REPLAN_FAILED:
      return "failed";
    default:
      return "none";
  }
}

}  // namespace

std::string trial_text(const fmt::PlanRecord& plan) {
  const sentinel_plan_trial& t = plan.trial;
  if (t.state == SENTINEL_TRIAL_NONE) return {};
  auto timed = [](uint64_t ns, uint32_t steps) {
    return steps ? human_duration(ns) + "/step over " + plural(steps, "step", "steps") : std::string("not timed");
  };
  std::string out = t.clock == SENTINEL_TRIAL_CLOCK_EMULATED ? "in emulated time, " : "";
  out += "moving schedule " + timed(t.moving_step_ns, t.moving_steps) + " (predicted " + pct(t.moving_hit_ppm / 1e6) +
         ", " + human_bytes(t.moving_moved_bytes) + " moved per step), without moves " +
         timed(t.fixed_step_ns, t.fixed_steps) + " (predicted " + pct(t.fixed_hit_ppm / 1e6) + ")";
  if (t.achieved_bytes_per_s) {
    out += "; the migrator moved " + human_bytes(t.achieved_bytes_per_s) + "/s under the moving schedule";
    if (t.replan == SENTINEL_REPLAN_WITHIN) out += " (within 1.5x of the plan's bandwidth: not re-planned)";
    if (t.replan == SENTINEL_REPLAN_SAME) out += ": re-planned with it, to the same schedule";
    if (t.replan == SENTINEL_REPLAN_FAILED) out += ": the re-plan failed";
    if (t.replan == SENTINEL_REPLAN_DONE)
      out += ": re-planned with it " + timed(t.replanned_step_ns, t.replanned_steps) + " (predicted " +
             pct(t.replanned_hit_ppm / 1e6) + ", " + human_bytes(t.replanned_moved_bytes) + " moved per step)";
  }
  const char* kept = t.kept == SENTINEL_TRIAL_KEPT_FIXED       ? "the schedule without moves"
                     : t.kept == SENTINEL_TRIAL_KEPT_REPLANNED ? "the re-planned schedule"
                     : t.kept == SENTINEL_TRIAL_KEPT_WATCHED   ? "the moving schedule (since re-planned by the watch)"
                                                               : "the moving schedule";
  if (t.state == SENTINEL_TRIAL_DONE)
    out += std::string(": kept ") + kept;
  else
    out += std::string(": under way when the dump was written, ") + kept + " in effect";
  return out + move_fit_text(t);
}

std::string move_fit_text(const sentinel_plan_trial& t) {
  switch (t.move_fit) {
    case SENTINEL_MOVE_FIT_DONE:
      return "; a moved KiB cost the training thread " + std::to_string(t.fit_move_ns_per_kib) + " ns (fitted)";
    case SENTINEL_MOVE_FIT_FREE:
      return "; moves cost the training thread nothing measurable (fitted)";
    case SENTINEL_MOVE_FIT_LITTLE_MOVED:
      return "; no move cost fitted, under 1 MiB moved a step";
    case SENTINEL_MOVE_FIT_EMULATED:
      return "; no move cost fitted, timed in emulated time";
    case SENTINEL_MOVE_FIT_NO_SLOW_COST:
      return "; no move cost fitted, no slow cost";
    default:
      return "";
  }
}

// How many drifts were followed, where any was: a re-plan to the same schedule changes no state.
std::string follows_text(const sentinel_plan_trial& t) {
  if (!t.watch_follows) return {};
  return "; " + plural(t.watch_follows, "re-plan", "re-plans") + " for a sustained drift";
}

std::string watch_text(const fmt::PlanRecord& plan) {
  const sentinel_plan_trial& t = plan.trial;
  if (t.watch == SENTINEL_WATCH_NONE) return {};
  std::string out = "the migrator moved " + human_bytes(t.watch_bytes_per_s) + "/s over the latest of " +
                    plural(t.watch_windows, "window", "windows") + " of steps";
  switch (t.watch) {
    case SENTINEL_WATCH_WITHIN:
      return out + " (within 1.5x of the plan's " + human_bytes(plan.header.migrate_bytes_per_s) + "/s)";
    case SENTINEL_WATCH_SAME:
      return out + ": re-planned with it, to the same schedule";
    case SENTINEL_WATCH_FAILED:
      return out + ": the re-plan failed";
    case SENTINEL_WATCH_DRIFT:
      return out + ", 1.5x off the plan's " + human_bytes(plan.header.migrate_bytes_per_s) +
             "/s after the first window: recorded, not yet a sustained drift" + follows_text(t);
    case SENTINEL_WATCH_FOLLOWED:
      return out + ": re-planned for a drift sustained over " + std::to_string(DriftFollow::kWindows) +
             " windows from step " + std::to_string(t.watch_step) + " (predicted " + pct(t.watch_hit_ppm / 1e6) + ", " +
             human_bytes(t.watch_moved_bytes) + " moved per step" + follows_text(t) + ")";
    default:
      return out + ": re-planned with it from step " + std::to_string(t.watch_step) + " (predicted " +
             pct(t.watch_hit_ppm / 1e6) + ", " + human_bytes(t.watch_moved_bytes) + " moved per step)" +
             follows_text(t);
  }
}

std::string fit_text(const fmt::PlanRecord& plan) {
  const sentinel_plan_trial& t = plan.trial;
  if (t.fit == SENTINEL_FIT_NONE) return {};
  std::string out = "took " + human_duration(t.fit_step_ns) + " a step (median of " +
                    plural(t.fit_steps, "steady step", "steady steps") + ", wall time)";
  switch (t.fit) {
    case SENTINEL_FIT_DONE:
      out += ": the slow node costs " + std::to_string(t.fit_slow_ns_per_kib) + " ns per access-weighted KiB";
      if (plan.header.slow_ns_per_kib)
        out += " (the plan was given " + std::to_string(plan.header.slow_ns_per_kib) + ")";
      return out;
    case SENTINEL_FIT_LITTLE_SLOW:
      return out + ": no slow cost fitted, too little of its accesses on the slow node";
    case SENTINEL_FIT_NO_BASE:
      return out + ": no slow cost fitted, no modeled base (no interval durations)";
    case SENTINEL_FIT_UNKNOWN_MOVES:
      return out + ": no slow cost fitted, its moves' cost is unknown";
    default:
      return out + ": no slow cost fitted, no longer than the modeled base and moves";
  }
}

namespace {

const char* fit_name(uint32_t fit) {
  switch (fit) {
    case SENTINEL_FIT_DONE:
      return "fitted";
    case SENTINEL_FIT_LITTLE_SLOW:
      return "little slow";
    case SENTINEL_FIT_NO_BASE:
      return "no base";
    case SENTINEL_FIT_UNKNOWN_MOVES:
      return "unknown moves";
    case SENTINEL_FIT_AT_BASE:
      return "at base";
    default:
      return "none";
  }
}

const char* move_fit_name(uint32_t fit) {
  switch (fit) {
    case SENTINEL_MOVE_FIT_DONE:
      return "fitted";
    case SENTINEL_MOVE_FIT_FREE:
      return "free";
    case SENTINEL_MOVE_FIT_LITTLE_MOVED:
      return "little moved";
    case SENTINEL_MOVE_FIT_EMULATED:
      return "emulated";
    case SENTINEL_MOVE_FIT_NO_SLOW_COST:
      return "no slow cost";
    default:
      return "none";
  }
}

void print_fit_json(std::ostream& os, const fmt::PlanRecord* plan) {
  if (!plan || plan->trial.fit == SENTINEL_FIT_NONE) {
    os << "null";
    return;
  }
  const sentinel_plan_trial& t = plan->trial;
  os << "{\"status\":";
  json_string(os, fit_name(t.fit));
  os << ",\"slow_ns_per_kib\":" << t.fit_slow_ns_per_kib << ",\"steps\":" << t.fit_steps
     << ",\"step_ns\":" << t.fit_step_ns << "}";
}

void print_watch_json(std::ostream& os, const fmt::PlanRecord* plan) {
  if (!plan || plan->trial.watch == SENTINEL_WATCH_NONE) {
    os << "null";
    return;
  }
  const sentinel_plan_trial& t = plan->trial;
  os << "{\"status\":";
  json_string(os, watch_name(t.watch));
  os << ",\"windows\":" << t.watch_windows << ",\"bytes_per_s\":" << t.watch_bytes_per_s
     << ",\"replan_step\":" << t.watch_step << ",\"moved_bytes_per_step\":" << t.watch_moved_bytes
     << ",\"predicted_hit_share\":" << t.watch_hit_ppm / 1e6 << ",\"drift_replans\":" << t.watch_follows << "}";
}

void print_trial_json(std::ostream& os, const fmt::PlanRecord* plan) {
  if (!plan || plan->trial.state == SENTINEL_TRIAL_NONE) {
    os << "null";
    return;
  }
  const sentinel_plan_trial& t = plan->trial;
  os << "{\"state\":";
  json_string(os, t.state == SENTINEL_TRIAL_DONE ? "done" : "running");
  os << ",\"kept\":";
  json_string(os, kept_name(t.kept));
  os << ",\"clock\":";
  json_string(os, t.clock == SENTINEL_TRIAL_CLOCK_EMULATED ? "emulated" : "wall");
  os << ",\"steps_per_candidate\":" << t.steps_per_candidate << ",\"moving_step_ns\":" << t.moving_step_ns
     << ",\"moving_steps\":" << t.moving_steps << ",\"moving_moved_bytes_per_step\":" << t.moving_moved_bytes
     << ",\"moving_predicted_hit_share\":" << t.moving_hit_ppm / 1e6 << ",\"no_moves_step_ns\":" << t.fixed_step_ns
     << ",\"no_moves_steps\":" << t.fixed_steps << ",\"no_moves_predicted_hit_share\":" << t.fixed_hit_ppm / 1e6
     << ",\"achieved_bytes_per_s\":" << t.achieved_bytes_per_s << ",\"replan\":";
  json_string(os, replan_name(t.replan));
  os << ",\"replanned_step_ns\":" << t.replanned_step_ns << ",\"replanned_steps\":" << t.replanned_steps
     << ",\"replanned_moved_bytes_per_step\":" << t.replanned_moved_bytes
     << ",\"replanned_predicted_hit_share\":" << t.replanned_hit_ppm / 1e6 << ",\"move_fit\":";
  json_string(os, move_fit_name(t.move_fit));
  os << ",\"fit_move_ns_per_kib\":" << t.fit_move_ns_per_kib << "}";
}

}  // namespace

void print_tiering_text(std::ostream& os, const TieringModel& t) {
  if (!t.present) return;
  os << "\n";
  if (const sentinel_tiering* x = t.tiering) {
    os << "tiering          policy " << policy_name(x->policy) << ", fast node " << x->fast_node << ", slow node "
       << x->slow_node << " (" << (x->move_method == 1 ? "mbind" : "move_pages") << "), budget ";
    if (x->policy == SENTINEL_POLICY_INTERLEAVE) {
      char b[96];
      std::snprintf(b, sizeof b, "%g%% of the pages of tracked objects, weighted-interleaved at birth, no plan",
                    x->budget_share_ppm / 1e4);
      os << b;
    } else if (x->flags & SENTINEL_TIER_BUDGET_SHARE) {
      char b[64];
      std::snprintf(b, sizeof b, "%g%% of each phase's profiled peak", x->budget_share_ppm / 1e4);
      os << b;
      if (t.plan) os << " (phase " << t.phase << ": " << human_bytes(t.plan->header.fast_budget_bytes) << ")";
      if (x->flags & SENTINEL_TIER_DEFAULT_SHARE) {
        os << "\n                 the dry run's default: SENTINEL_FAST_BYTES=auto needs a slow node";
        if (t.plan) {
          const sentinel_plan_header& h = t.plan->header;
          char b[160];
          std::snprintf(b, sizeof b, "%.1f%% of the bytes it touches", h.predicted_hit_ppm / 1e4);
          os << "\n                 with " << human_bytes(h.fast_budget_bytes) << " of fast memory, phase " << t.phase
             << " would find " << b << " there, moving " << human_bytes(h.moved_bytes_per_step) << " a step";
        }
        os << "\n                 (sentinel-view plan --fast-bytes SIZE|N% plans this profile for another size)";
      }
    } else {
      os << human_bytes(t.budget());
    }
    os << "\n";
    std::string flags;
    if (x->flags & SENTINEL_TIER_DRY_RUN)
      flags += x->policy == SENTINEL_POLICY_INTERLEAVE ? ", dry run (nothing placed)"
                                                       : ", dry run (planned, nothing placed or moved)";
    if (x->flags & SENTINEL_TIER_BALANCING_ON) flags += ", kernel NUMA balancing was on (it fights explicit placement)";
    if (x->flags & SENTINEL_TIER_FAULT_INJECTION) flags += ", fault injection";
    if (x->flags & SENTINEL_TIER_NUMA_DENIED) {
      static const char* const kCalls[] = {"mbind", "set_mempolicy", "get_mempolicy", "move_pages", "migrate_pages"};
      std::string calls;
      for (int i = 0; i < 5; ++i)
        if (t.numa_calls_denied & (1u << i)) calls += (calls.empty() ? "" : ", ") + std::string(kCalls[i]);
      flags += ", the kernel refused " + (calls.empty() ? std::string("NUMA calls") : calls) +
               " (a container's seccomp profile without CAP_SYS_NICE?): nothing could be placed or moved";
    }
    if (!flags.empty()) os << "                 " << flags.substr(2) << "\n";
    os << "                 fast-tier peak " << human_bytes(x->fast_peak_bytes) << " over the run; migrated "
       << human_bytes(x->migrated_bytes) << " at " << human_bytes(x->migrate_bytes_per_s) << "/s measured; "
       << plural(x->late_migrations, "late migration", "late migrations") << ", "
       << plural(x->failed_pages, "failed page", "failed pages") << ", "
       << plural(x->raced_frees, "raced free", "raced frees") << "\n";
    os << "                 placed at birth " << x->placed_at_birth_fast << " fast, " << x->placed_at_birth_slow
       << " slow; fallback " << plural(x->fallback_objects, "object", "objects") << " ("
       << human_bytes(x->fallback_bytes) << "); pinned " << plural(x->pinned_objects, "object", "objects") << " ("
       << human_bytes(x->pinned_bytes) << ")\n";
  } else {
    os << "tiering          no TIERING record; migrated " << human_bytes(t.migrated_bytes) << ", "
       << plural(t.late_migrations, "late migration", "late migrations") << "\n";
  }
  if (t.batches)
    os << "                 " << plural(t.batches, "migration batch", "migration batches") << " logged ("
       << human_bytes(t.batch_bytes) << " in " << human_duration(t.batch_ns) << ": "
       << human_bytes(t.batch_bytes_per_s()) << "/s), " << human_duration(t.migrate_ns) << " in move calls\n";
  for (const PhaseTiering& ph : t.phases) {
    if (!ph.plan) continue;
    const sentinel_plan_header& h = ph.plan->header;
    os << "plan             phase " << h.phase << ", " << policy_name(h.policy) << ": budget "
       << human_bytes(h.fast_budget_bytes) << ", lead " << h.lead_intervals << " intervals, pool "
       << human_bytes(h.fast_pool_bytes) << ", planned fast peak " << human_bytes(h.fast_peak_bytes) << ", "
       << human_bytes(h.moved_bytes_per_step) << " moved per step, predicted fast-hit share "
       << pct(h.predicted_hit_ppm / 1e6) << ((h.flags & SENTINEL_TIER_NO_MOVES) ? " (no moves)" : "") << "\n";
    const std::string trial = trial_text(*ph.plan);
    if (!trial.empty()) os << "trial            phase " << h.phase << ": " << trial << "\n";
    const std::string watch = watch_text(*ph.plan);
    if (!watch.empty()) os << "watch            phase " << h.phase << ": " << watch << "\n";
    const std::string fit = fit_text(*ph.plan);
    if (!fit.empty()) os << "fitted           phase " << h.phase << ": " << fit << "\n";
  }
  for (const PhaseTiering& ph : t.phases) {
    if (!ph.migrations) continue;
    os << "migrations       phase " << ph.phase << ": " << human_bytes(ph.migrated_bytes) << " moved over "
       << plural(ph.steps, "step", "steps") << ", " << ph.late << " late, "
       << plural(ph.failed_pages, "failed page", "failed pages") << "; fast tier at most " << human_bytes(ph.fast_max);
    if (ph.plan) os << " (budget " << human_bytes(ph.plan->header.fast_budget_bytes) << ")";
    os << "\n";
  }
  for (const PhaseTiering& ph : t.phases)
    if (ph.checked) os << "placement        phase " << ph.phase << ": " << placement_text(ph) << "\n";
  for (const sentinel_detection* d : t.detection)
    os << "detector         " << detector_label(*d) << ": " << detection_diagnosis(*d) << "\n";
}

std::string step_costs_text(const PhaseTiering& ph) {
  if (!ph.plan) return "";
  const sentinel_plan_header& h = ph.plan->header;
  if (!h.slow_ns_per_kib && !h.move_ns_per_kib) return "";
  std::string s =
      "step costs " + std::to_string(h.slow_ns_per_kib) + " ns/KiB slow, " + std::to_string(h.move_ns_per_kib) +
      " ns/KiB moved" +
      ((h.flags & SENTINEL_TIER_MOVES_OFF_THREAD) ? " (for the training thread: the migrator on a CPU of its own)"
                                                  : "");
  if (!ph.modeled) return s + " (step time not modeled: it needs a slow cost and interval durations)";
  const PhaseTiering::ModeledStep& m = *ph.modeled;
  return s + ": modeled step " + human_duration(m.step_ns) + " = " + human_duration(m.base_ns) + " measured + " +
         human_duration(m.slow_ns) + " slow accesses + " + human_duration(m.move_ns) + " moves";
}

void print_phase_tiering_json(std::ostream& os, const PhaseTiering* ph) {
  const fmt::PlanRecord* plan = ph ? ph->plan : nullptr;
  os << ",\"planned\":" << (plan ? "true" : "false") << ",\"policy\":";
  if (plan)
    json_string(os, policy_name(plan->header.policy));
  else
    os << "null";
  os << ",\"fast_budget_bytes\":";
  if (plan)
    os << plan->header.fast_budget_bytes;
  else
    os << "null";
  os << ",\"footprint_peak_bytes\":";
  if (plan)
    os << plan->header.footprint_peak_bytes;
  else
    os << "null";
  os << ",\"planned_moved_bytes_per_step\":";
  if (plan)
    os << plan->header.moved_bytes_per_step;
  else
    os << "null";
  os << ",\"predicted_hit_share\":";
  json_optional(os, ph ? ph->predicted_hit() : std::nullopt);
  os << ",\"migrated_bytes\":" << (ph ? ph->migrated_bytes : 0) << ",\"migrated_steps\":" << (ph ? ph->steps : 0)
     << ",\"late_migrations\":" << (ph ? ph->late : 0) << ",\"fast_peak_bytes\":" << (ph ? ph->fast_max : 0)
     << ",\"checked\":" << (ph && ph->checked ? "true" : "false")
     << ",\"checked_steps\":" << (ph ? ph->checked_steps : 0)
     << ",\"placement_touched_bytes\":" << (ph ? ph->touched : 0) << ",\"placement_fast_bytes\":" << (ph ? ph->fast : 0)
     << ",\"fast_hit_share\":";
  json_optional(os, ph ? ph->measured_hit() : std::nullopt);
  os << ",\"misplaced_objects\":" << (ph ? ph->misplaced : 0) << ",\"verified_objects\":" << (ph ? ph->verified : 0);
  os << ",\"trial\":";
  print_trial_json(os, plan);
  os << ",\"fit\":";
  print_fit_json(os, plan);
  os << ",\"watch\":";
  print_watch_json(os, plan);
  // The step-time model (1.4): the costs the plan was made with (0: unknown), its modeled step.
  os << ",\"slow_ns_per_kib\":" << (plan ? plan->header.slow_ns_per_kib : 0)
     << ",\"move_ns_per_kib\":" << (plan ? plan->header.move_ns_per_kib : 0)
     << ",\"moves_off_thread\":" << ((plan && (plan->header.flags & SENTINEL_TIER_MOVES_OFF_THREAD)) ? "true" : "false")
     << ",\"modeled_step\":";
  if (!ph || !ph->modeled) {
    os << "null";
    return;
  }
  const PhaseTiering::ModeledStep& m = *ph->modeled;
  os << "{\"step_ns\":" << m.step_ns << ",\"base_ns\":" << m.base_ns << ",\"slow_ns\":" << m.slow_ns
     << ",\"move_ns\":" << m.move_ns << "}";
}

void print_tiering_json(std::ostream& os, const TieringModel& t) {
  const sentinel_tiering* x = t.tiering;
  os << ",\"policy\":";
  if (x)
    json_string(os, policy_name(x->policy));
  else if (t.plan)
    json_string(os, policy_name(t.plan->header.policy));
  else
    os << "null";
  os << ",\"fast_budget_bytes\":" << t.budget() << ",\"fast_peak_bytes\":" << t.fast_peak()
     << ",\"migrated_bytes\":" << t.migrated_bytes << ",\"late_migrations\":" << t.late_migrations
     << ",\"failed_pages\":" << t.failed_pages << ",\"migration_batches\":" << t.batches
     << ",\"migration_log_bytes\":" << t.batch_bytes << ",\"migration_log_ns\":" << t.batch_ns
     << ",\"migrator_bytes_per_s\":" << t.batch_bytes_per_s() << ",\"promotions_logged\":" << t.promotions
     << ",\"fast_hit_share\":";
  json_optional(os, t.measured_hit());
  os << ",\"predicted_hit_share\":";
  json_optional(os, t.predicted_hit());
  os << ",\"misplaced_objects\":" << (t.shown ? t.shown->misplaced : 0)
     << ",\"verified_objects\":" << (t.shown ? t.shown->verified : 0);
  os << ",\"tiering\":";
  if (x) {
    os << "{\"policy\":";
    json_string(os, policy_name(x->policy));
    os << ",\"fast_node\":" << x->fast_node << ",\"slow_node\":" << x->slow_node << ",\"flags\":" << x->flags
       << ",\"dry_run\":" << ((x->flags & SENTINEL_TIER_DRY_RUN) ? "true" : "false")
       << ",\"dry_run_default_share\":" << ((x->flags & SENTINEL_TIER_DEFAULT_SHARE) ? "true" : "false")
       << ",\"numa_calls_denied\":" << t.numa_calls_denied << ",\"budget_share_ppm\":" << x->budget_share_ppm
       << ",\"move_method\":";
    json_string(os, x->move_method == 1 ? "mbind" : "move_pages");
    os << ",\"migrate_bytes_per_s\":" << x->migrate_bytes_per_s << ",\"fallback_objects\":" << x->fallback_objects
       << ",\"fallback_bytes\":" << x->fallback_bytes << ",\"pinned_objects\":" << x->pinned_objects
       << ",\"pinned_bytes\":" << x->pinned_bytes << ",\"raced_frees\":" << x->raced_frees
       << ",\"placed_at_birth_fast\":" << x->placed_at_birth_fast
       << ",\"placed_at_birth_slow\":" << x->placed_at_birth_slow << "}";
  } else {
    os << "null";
  }
  os << ",\"plan\":";
  if (t.plan) {
    const sentinel_plan_header& h = t.plan->header;
    os << "{\"phase\":" << h.phase << ",\"policy\":";
    json_string(os, policy_name(h.policy));
    os << ",\"intervals\":" << h.intervals << ",\"lead_intervals\":" << h.lead_intervals
       << ",\"fast_budget_bytes\":" << h.fast_budget_bytes << ",\"footprint_peak_bytes\":" << h.footprint_peak_bytes
       << ",\"fast_peak_bytes\":" << h.fast_peak_bytes << ",\"fast_pool_bytes\":" << h.fast_pool_bytes
       << ",\"moved_bytes_per_step\":" << h.moved_bytes_per_step << ",\"predicted_hit_ppm\":" << h.predicted_hit_ppm
       << ",\"no_moves\":" << ((h.flags & SENTINEL_TIER_NO_MOVES) ? "true" : "false")
       << ",\"entries\":" << t.plan->entries.size() << ",\"trial\":";
    print_trial_json(os, t.plan);
    os << ",\"fit\":";
    print_fit_json(os, t.plan);
    os << ",\"watch\":";
    print_watch_json(os, t.plan);
    os << "}";
  } else {
    os << "null";
  }
  os << ",\"placement_intervals\":[";
  bool first = true;
  for (const auto& e : t.intervals) {
    os << (first ? "" : ",") << "{\"phase\":" << t.phase << ",\"interval\":" << e.interval
       << ",\"touched_bytes\":" << e.touched << ",\"fast_bytes\":" << e.fast << ",\"hit_share\":";
    if (e.placement && e.touched)
      os << static_cast<double>(e.fast) / static_cast<double>(e.touched);
    else
      os << "null";
    os << ",\"fast_bytes_max\":" << e.fast_max << ",\"fast_bytes_mean\":" << static_cast<uint64_t>(e.fast_mean)
       << ",\"bytes_to_fast\":" << e.to_fast << ",\"bytes_to_slow\":" << e.to_slow << ",\"late\":" << e.late
       << ",\"steps\":" << e.steps << ",\"checked_steps\":" << e.checked_steps << ",\"misplaced\":" << e.misplaced
       << ",\"verified\":" << e.verified << "}";
    first = false;
  }
  os << "],\"detection\":[";
  first = true;
  for (const sentinel_detection* d : t.detection) {
    os << (first ? "" : ",") << "{\"phase\":" << d->phase
       << ",\"locked\":" << ((d->flags & SENTINEL_DETECT_LOCKED) ? "true" : "false")
       << ",\"lost\":" << ((d->flags & SENTINEL_DETECT_LOST) ? "true" : "false")
       << ",\"no_step\":" << ((d->flags & SENTINEL_DETECT_NO_STEP) ? "true" : "false") << ",\"period\":" << d->period
       << ",\"distinct_tokens\":" << d->distinct_tokens << ",\"steps\":" << d->steps
       << ",\"noise_allocations\":" << d->noise_allocations << ",\"missing_allocations\":" << d->missing_allocations
       << ",\"locks\":" << d->locks << ",\"unlocks\":" << d->unlocks << ",\"retracted\":" << d->retracted
       << ",\"diagnosis\":";
    json_string(os, detection_diagnosis(*d));
    os << "}";
    first = false;
  }
  os << "]";
}

}  // namespace sentinel::view
