// From a decoded dump to the planner's input. See plan_input.h.
#include "tier/plan_input.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
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

namespace {

// A touch that says when in its interval it was made (format 1.14; both 0 before, or without passes).
bool has_time(const sentinel_touch& t) {
  return t.time_end > t.time_begin;
}

// How many pieces each interval becomes (1: not cut): the intervals longer than twice the median of the
// timed ones, in pieces of about the median, within the 64 intervals the planner takes. Only an interval
// with touch times (a profile taken in passes, format 1.14) is cut: without them a cut would only guess.
std::vector<uint32_t> time_pieces(const std::vector<uint64_t>& ns, const std::vector<sentinel_touch>& touches) {
  std::vector<uint32_t> pieces(ns.size(), 1);
  std::vector<bool> has_times(ns.size(), false);
  for (const sentinel_touch& t : touches)
    if (t.interval < ns.size() && has_time(t)) has_times[t.interval] = true;
  std::vector<uint64_t> timed;
  for (uint64_t d : ns)
    if (d) timed.push_back(d);
  if (timed.empty()) return pieces;
  std::nth_element(timed.begin(), timed.begin() + timed.size() / 2, timed.end());
  const uint64_t median = timed[timed.size() / 2];
  uint32_t total = static_cast<uint32_t>(ns.size());
  for (size_t i = 0; i < ns.size(); ++i) {
    if (!median || ns[i] <= 2 * median || !has_times[i]) continue;
    const uint64_t want = std::min<uint64_t>(ns[i] / median, kMaxTimePieces);
    const uint32_t room = 64 - total;  // the longest first would be fairer; in order is what the cap allows
    const uint32_t extra = static_cast<uint32_t>(std::min<uint64_t>(want - 1, room));
    pieces[i] += extra;
    total += extra;
  }
  return pieces;
}

// The bytes of a touch of span [begin, end] (x 65535) that fall in piece j of m: in proportion to the
// overlap; the pieces of one touch add up to its bytes exactly (the last takes the rounding).
uint64_t piece_bytes(uint64_t bytes, uint32_t begin, uint32_t end, uint32_t j, uint32_t m, uint64_t* given) {
  const uint64_t lo = std::max<uint64_t>(begin * uint64_t{m}, j * uint64_t{65535});
  const uint64_t hi = std::min<uint64_t>(end * uint64_t{m}, (j + 1) * uint64_t{65535});
  if (hi <= lo) return 0;
  const uint64_t part =
      (hi == end * uint64_t{m})
          ? bytes - *given
          : static_cast<uint64_t>(static_cast<unsigned __int128>(bytes) * (hi - lo) / ((end - begin) * uint64_t{m}));
  *given += part;
  return part;
}

// A short-lived identity of a cut interval stays short-lived, in the one piece where its earliest touch
// began (the first piece where its touches have no times): born, used and freed there. Identity id ->
// piece within its interval.
std::unordered_map<uint32_t, uint32_t> short_lived_pieces(const PlanSource& s, const std::vector<uint32_t>& pieces) {
  const uint32_t n = static_cast<uint32_t>(pieces.size());
  std::unordered_map<uint32_t, uint32_t> piece;
  for (const auto& d : s.identities)
    if (d.lifetime == SENTINEL_LIFE_SHORT && d.birth_interval < n && pieces[d.birth_interval] > 1)
      piece[d.id] = UINT32_MAX;
  for (const sentinel_touch& t : s.touches) {
    auto it = piece.find(t.identity);
    if (it == piece.end() || t.interval >= n) continue;
    // On piece_bytes' scale: piece j covers [j, j + 1) x 65535 / m; a known begin is below 65535.
    const uint32_t j = has_time(t) ? t.time_begin * pieces[t.interval] / 65535 : 0;
    it->second = std::min(it->second, j);
  }
  for (auto& [id, j] : piece)
    if (j == UINT32_MAX) j = 0;
  return piece;
}

}  // namespace

uint32_t plan_cut_by_time(PlanSource* s) {
  const uint32_t n = s->in.intervals;
  if (s->interval_ns.size() != n) return 0;
  const std::vector<uint32_t> pieces = time_pieces(s->interval_ns, s->touches);
  std::vector<uint32_t> base(n + 1, 0);
  for (uint32_t i = 0; i < n; ++i) base[i + 1] = base[i] + pieces[i];
  if (base[n] == n) return 0;
  std::vector<uint64_t> ns(base[n], 0);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t j = 0; j < pieces[i]; ++j)
      ns[base[i] + j] = s->interval_ns[i] / pieces[i] + (j + 1 == pieces[i] ? s->interval_ns[i] % pieces[i] : 0);
  const std::unordered_map<uint32_t, uint32_t> short_piece = short_lived_pieces(*s, pieces);
  for (auto& d : s->identities) {
    if (auto it = short_piece.find(d.id); it != short_piece.end()) {
      d.birth_interval = d.death_interval = base[d.birth_interval] + it->second;
      continue;
    }
    if (d.birth_interval < n) d.birth_interval = base[d.birth_interval];
    if (d.death_interval < n) d.death_interval = base[d.death_interval] + pieces[d.death_interval] - 1;
  }
  std::vector<sentinel_touch> touches;
  touches.reserve(s->touches.size());
  for (const sentinel_touch& t : s->touches) {
    if (t.interval >= n) continue;
    const uint32_t m = pieces[t.interval];
    sentinel_touch out = t;
    out.time_begin = out.time_end = 0;  // the pieces are the intervals now
    if (m == 1) {
      out.interval = base[t.interval];
      touches.push_back(out);
      continue;
    }
    if (auto it = short_piece.find(t.identity); it != short_piece.end()) {
      out.interval = base[t.interval] + it->second;
      touches.push_back(out);
      continue;
    }
    const bool known = has_time(t);
    const uint32_t begin = known ? t.time_begin : 0, end = known ? t.time_end : 65535;
    uint64_t given = 0;
    for (uint32_t j = 0; j < m; ++j) {
      const uint64_t part = piece_bytes(t.bytes, begin, end, j, m, &given);
      if (!part) continue;
      out.interval = base[t.interval] + j;
      out.bytes = part;
      touches.push_back(out);
    }
  }
  s->touches = std::move(touches);
  s->interval_ns = std::move(ns);
  s->in.intervals = base[n];
  s->in.touches = s->touches.data();
  s->in.touch_count = s->touches.size();
  s->in.identities = s->identities.data();
  s->in.interval_ns = s->interval_ns.data();
  uint32_t cut = 0;
  for (uint32_t m : pieces) cut += m > 1;
  return cut;
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
