#include "profile_model.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_set>

namespace sentinel::view {

namespace {

// Intervals past this are dropped when the dump has no INTERVALS table to bound them.
constexpr uint32_t kMaxIntervalsWithoutTable = 4096;

uint64_t sat_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

int lifetime_rank(uint8_t life) {  // drawing order: persistent, next-step, step, short, unknown
  switch (life) {
    case SENTINEL_LIFE_PERSISTENT:
      return 0;
    case SENTINEL_LIFE_NEXT_STEP:
      return 1;
    case SENTINEL_LIFE_STEP:
      return 2;
    case SENTINEL_LIFE_SHORT:
      return 3;
    default:
      return 4;
  }
}

std::vector<std::pair<uint32_t, double>> to_cells(const std::map<uint32_t, double>& m) {
  return {m.begin(), m.end()};
}

// 0, 1, ..., n - 1.
std::vector<size_t> all_indices(size_t n) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  return order;
}

// `order` (indices into rows) sorted by `less` on the rows.
template <typename Row, typename Less>
std::vector<size_t> sorted(std::vector<size_t> order, const std::vector<Row>& rows, Less less) {
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return less(rows[x], rows[y]); });
  return order;
}

}  // namespace

const char* lifetime_name(uint8_t lifetime) {
  switch (lifetime) {
    case SENTINEL_LIFE_SHORT:
      return "short-lived";
    case SENTINEL_LIFE_STEP:
      return "step-scoped";
    case SENTINEL_LIFE_PERSISTENT:
      return "persistent";
    case SENTINEL_LIFE_NEXT_STEP:
      return "next-step";
    default:
      return "unknown";
  }
}

const char* lifetime_short(uint8_t lifetime) {
  switch (lifetime) {
    case SENTINEL_LIFE_SHORT:
      return "short";
    case SENTINEL_LIFE_STEP:
      return "step";
    case SENTINEL_LIFE_PERSISTENT:
      return "persistent";
    case SENTINEL_LIFE_NEXT_STEP:
      return "next";
    default:
      return "unknown";
  }
}

StepModel model_steps(const fmt::Profile& p) {
  StepModel m;
  m.steps = p.steps.size();
  std::map<uint32_t, PhaseSummary> phases;
  std::map<uint32_t, std::map<uint32_t, uint64_t>> counts;  // phase -> allocations -> steps
  std::map<uint32_t, std::vector<uint64_t>> gaps;           // phase -> start_ns differences
  std::map<uint32_t, uint64_t> last_start;                  // phase -> previous step's start_ns
  std::map<uint32_t, uint64_t> last_index;
  for (uint64_t i = 0; i < p.steps.size(); ++i) {
    const sentinel_step_entry& s = p.steps[i];
    if (s.flags & SENTINEL_STEP_EXPLICIT) ++m.explicit_steps;
    if (s.flags & SENTINEL_STEP_INFERRED) ++m.inferred_steps;
    if (s.flags & SENTINEL_STEP_NEW_PHASE) ++m.new_phase_steps;
    if (s.flags & SENTINEL_STEP_PROFILED) ++m.profiled_steps;
    auto [it, fresh] = phases.try_emplace(s.phase);
    PhaseSummary& ph = it->second;
    if (fresh) {
      ph.phase = s.phase;
      ph.first_step = i;
    }
    ph.last_step = i;
    ++ph.steps;
    if (s.flags & SENTINEL_STEP_PROFILED) ++ph.profiled_steps;
    if (s.flags & SENTINEL_STEP_EXPLICIT) ++ph.explicit_steps;
    if (s.flags & SENTINEL_STEP_INFERRED) ++ph.inferred_steps;
    ++counts[s.phase][s.allocations];
    // Consecutive steps of one phase only (another phase in between breaks the chain).
    auto li = last_index.find(s.phase);
    if (li != last_index.end() && li->second + 1 == i && s.start_ns > last_start[s.phase] && last_start[s.phase] != 0)
      gaps[s.phase].push_back(s.start_ns - last_start[s.phase]);
    last_index[s.phase] = i;
    last_start[s.phase] = s.start_ns;
  }
  // Phases without steps that other records name.
  auto named = [&](uint32_t phase) { phases.try_emplace(phase).first->second.phase = phase; };
  for (const auto& t : p.intervals) named(t.phase);
  for (const auto& s : p.sessions) named(s.phase);
  for (const auto& pl : p.plans) named(pl.header.phase);
  std::map<uint32_t, std::set<uint32_t>> ids, groups;  // phase -> distinct ids
  for (const auto& d : p.identities) {
    named(d.phase);
    ids[d.phase].insert(d.id);
  }
  for (const auto& g : p.groups)
    if (phases.count(g.phase)) groups[g.phase].insert(g.id);
  // Access intensity: per phase, touched bytes and their passes, over the touches that have passes.
  std::map<uint32_t, uint32_t> phase_of;  // identity id -> phase
  for (const auto& d : p.identities) phase_of[d.id] = d.phase;
  std::map<uint32_t, std::pair<double, double>> passes;  // phase -> (bytes, bytes x passes)
  for (const auto& t : p.touches) {
    auto it = phase_of.find(t.identity);
    if (t.passes_x256 == 0 || it == phase_of.end()) continue;
    auto& [bytes, weighted] = passes[it->second];
    bytes += static_cast<double>(t.bytes);
    weighted += static_cast<double>(t.bytes) * t.passes_x256 / 256.0;
  }
  for (const auto& s : p.sessions) {
    PhaseSummary& ph = phases[s.phase];
    if (!ph.session) ph.session = &s;
  }
  for (auto& [id, ph] : phases) {
    ph.table = p.intervals_for(id);
    if (ph.table) {
      ph.period = ph.table->period;
      ph.intervals = static_cast<uint32_t>(ph.table->bounds.size());
    } else {
      uint64_t best = 0;
      for (const auto& [alloc, n] : counts[id])
        if (n > best) {
          best = n;
          ph.period = alloc;
        }
    }
    auto& g = gaps[id];
    if (!g.empty()) {
      std::nth_element(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(g.size() / 2), g.end());
      ph.median_step_ns = g[g.size() / 2];
    }
    ph.time_ns =
        ph.median_step_ns && ph.steps > UINT64_MAX / ph.median_step_ns ? UINT64_MAX : ph.steps * ph.median_step_ns;
    ph.profiled = ph.session || ph.profiled_steps;
    ph.identities = ids[id].size();
    ph.groups = groups[id].size();
    if (auto it = passes.find(id); it != passes.end() && it->second.first > 0)
      ph.mean_passes = it->second.second / it->second.first;
    m.phases.push_back(ph);
  }
  // The main phase: among the profiled phases (else all), the most time in steps when every
  // candidate's step time is known, else the most steps; ties: more steps, lower number.
  bool any_profiled = false, all_timed = true;
  for (const auto& ph : m.phases) any_profiled |= ph.profiled;
  for (const auto& ph : m.phases)
    if (ph.profiled || !any_profiled) all_timed &= ph.time_ns != 0;
  for (size_t i = 0; i < m.phases.size(); ++i) {
    const PhaseSummary& c = m.phases[i];
    if (any_profiled && !c.profiled) continue;
    if (m.main_phase < 0) {
      m.main_phase = static_cast<int>(i);
      continue;
    }
    const PhaseSummary& b = m.phases[static_cast<size_t>(m.main_phase)];
    if ((all_timed && c.time_ns > b.time_ns) || ((!all_timed || c.time_ns == b.time_ns) && c.steps > b.steps))
      m.main_phase = static_cast<int>(i);
  }
  if (const PhaseSummary* ph = m.main()) {
    m.allocations_per_step = ph->period;
    m.intervals_per_step = ph->intervals;
  }
  return m;
}

const PhaseSummary* StepModel::find(uint32_t phase) const {
  auto it = std::lower_bound(phases.begin(), phases.end(), phase,
                             [](const PhaseSummary& ph, uint32_t v) { return ph.phase < v; });
  return it != phases.end() && it->phase == phase ? &*it : nullptr;
}

std::string StepModel::phase_list() const {
  if (phases.empty()) return "none";
  std::string out;
  for (const auto& ph : phases) out += (out.empty() ? "" : ", ") + std::to_string(ph.phase);
  return out;
}

int64_t representative_step(const fmt::Profile& p, uint32_t phase) {
  for (const auto& s : p.sessions)
    if (s.phase == phase && s.first_profiled_step < p.steps.size() && p.steps[s.first_profiled_step].phase == phase)
      return static_cast<int64_t>(s.first_profiled_step);
  std::vector<size_t> in_phase, locked;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    if (p.steps[i].phase != phase) continue;
    if (p.steps[i].flags & SENTINEL_STEP_PROFILED) return static_cast<int64_t>(i);
    in_phase.push_back(i);
    if (!(p.steps[i].flags & SENTINEL_STEP_INFERRED)) locked.push_back(i);
  }
  const auto& pick = locked.empty() ? in_phase : locked;
  return pick.empty() ? -1 : static_cast<int64_t>(pick[pick.size() / 2]);
}

namespace {

// The phase's identities and groups (the first of each id), and how many identities name each group.
// `known`: the identity ids of every phase.
void collect_rows(AccessModel& a, const fmt::Profile& p, std::unordered_set<uint32_t>& known) {
  for (const auto& id : p.identities) {
    known.insert(id.id);
    if (id.phase != a.phase || !a.identity_index.emplace(id.id, a.identities.size()).second) continue;
    IdentityRow r;
    r.id = id;
    a.identities.push_back(r);
  }
  for (const auto& g : p.groups) {
    if (g.phase != a.phase || !a.group_index.emplace(g.id, a.groups.size()).second) continue;
    GroupRow r;
    r.g = g;
    a.groups.push_back(r);
  }
  for (const auto& r : a.identities) {
    auto it = a.group_index.find(r.id.group);
    if (it != a.group_index.end()) ++a.groups[it->second].identities_found;
  }
}

// Columns: the table's intervals; without a table, up to the largest interval touched (bounded).
// Then the profiled steps the cells are averaged over.
void set_columns(AccessModel& a, const fmt::Profile& p) {
  if (a.table) {
    a.intervals = static_cast<uint32_t>(a.table->bounds.size());
  } else {
    for (const auto& t : p.touches)
      if (t.interval < kMaxIntervalsWithoutTable && a.identity_index.count(t.identity))
        a.intervals = std::max(a.intervals, t.interval + 1);
    for (const auto& r : a.identities) {
      if (r.id.birth_interval < kMaxIntervalsWithoutTable) a.intervals = std::max(a.intervals, r.id.birth_interval + 1);
      if (r.id.death_interval < kMaxIntervalsWithoutTable) a.intervals = std::max(a.intervals, r.id.death_interval + 1);
    }
  }
  uint32_t max_step = 0;
  bool any_touch = false;
  for (const auto& t : p.touches) {  // the steps of the touches that will be kept
    if (t.interval >= a.intervals || !a.identity_index.count(t.identity)) continue;
    any_touch = true;
    max_step = std::max(max_step, t.step);
  }
  if (a.only_step >= 0) {
    a.steps_used = 1;
  } else {
    uint64_t n = a.session ? a.session->profiled_steps : 0;
    if (any_touch) n = std::max<uint64_t>(n, uint64_t{max_step} + 1);
    a.steps_used = static_cast<uint32_t>(std::clamp<uint64_t>(n, 1, UINT32_MAX));
  }
}

// The bytes each identity and group touched per interval (mean per profiled step used).
struct Cells {
  std::vector<std::map<uint32_t, double>> identity, group;
  std::vector<uint8_t> has_touch;  // per identity
};

Cells add_touches(AccessModel& a, const fmt::Profile& p, const std::unordered_set<uint32_t>& known) {
  Cells c{std::vector<std::map<uint32_t, double>>(a.identities.size()),
          std::vector<std::map<uint32_t, double>>(a.groups.size()), std::vector<uint8_t>(a.identities.size(), 0)};
  const double div = static_cast<double>(a.steps_used);
  for (const auto& t : p.touches) {
    if (a.only_step >= 0 && t.step != static_cast<uint64_t>(a.only_step)) continue;
    auto it = a.identity_index.find(t.identity);
    if (it == a.identity_index.end()) {
      if (!known.count(t.identity)) ++a.dropped_touches;  // else another phase's touch
      continue;
    }
    if (t.interval >= a.intervals) {
      ++a.dropped_touches;
      continue;
    }
    IdentityRow& r = a.identities[it->second];
    c.has_touch[it->second] = 1;
    r.touched = sat_add(r.touched, t.bytes);
    r.faults = sat_add(r.faults, t.faults);
    a.total_touched = sat_add(a.total_touched, t.bytes);
    const double b = static_cast<double>(t.bytes) / div;
    c.identity[it->second][t.interval] += b;
    auto g = a.group_index.find(r.id.group);
    if (g != a.group_index.end()) {
      c.group[g->second][t.interval] += b;
      a.groups[g->second].touched = sat_add(a.groups[g->second].touched, t.bytes);
    }
  }
  return c;
}

// The rows' cells and intervals touched. Without any touch of the phase, an identity's touched bytes
// are its entry's; a group's intervals, its interval mask.
void finish_rows(AccessModel& a, const Cells& c, bool phase_touches) {
  for (size_t i = 0; i < a.identities.size(); ++i) {
    IdentityRow& r = a.identities[i];
    if (!c.has_touch[i] && !phase_touches) r.touched = r.id.touched_bytes;
    r.intervals_touched = static_cast<uint32_t>(c.identity[i].size());
    r.cells = to_cells(c.identity[i]);
  }
  for (size_t i = 0; i < a.groups.size(); ++i) {
    GroupRow& r = a.groups[i];
    r.cells = to_cells(c.group[i]);
    std::vector<uint32_t> list;
    if (!r.cells.empty()) {
      for (const auto& [iv, b] : r.cells) list.push_back(iv);
      r.interval_list = interval_ranges(list);
    } else if (r.g.interval_mask) {  // no touches in the dump: the mask (bit 63 folds the rest)
      for (uint32_t b = 0; b < 64; ++b)
        if (r.g.interval_mask >> b & 1) list.push_back(b);
      r.interval_list = interval_ranges(list);
      if (r.g.interval_mask >> 63 & 1) r.interval_list += "+";
    }
    r.intervals_touched = static_cast<uint32_t>(list.size());
    if (!list.empty()) r.first_interval = list.front();
  }
}

// Interval durations from COUNTERS: mean over the samples of each interval.
void set_interval_durations(AccessModel& a, const fmt::Profile& p) {
  if (p.counters.empty() || a.intervals == 0) return;
  std::vector<double> sum(a.intervals, 0.0);
  std::vector<uint64_t> n(a.intervals, 0);
  for (const auto& c : p.counters) {
    if (c.phase != a.phase || c.interval >= a.intervals) continue;
    if (a.only_step >= 0 && c.step != static_cast<uint64_t>(a.only_step)) continue;
    sum[c.interval] += static_cast<double>(c.duration_ns);
    ++n[c.interval];
  }
  bool any = false;
  for (uint32_t i = 0; i < a.intervals; ++i) {
    if (n[i]) {
      sum[i] /= static_cast<double>(n[i]);
      any = true;
    }
  }
  if (any) a.interval_ns = std::move(sum);
}

}  // namespace

AccessModel model_access(const fmt::Profile& p, uint32_t phase, int64_t only_step) {
  AccessModel a;
  a.only_step = only_step;
  a.phase = phase;
  for (const auto& s : p.sessions)
    if (s.phase == phase) {
      a.session = &s;
      break;
    }
  a.table = p.intervals_for(a.phase);
  std::unordered_set<uint32_t> known;  // identity ids of every phase
  collect_rows(a, p, known);
  bool phase_touches = false;
  for (const auto& t : p.touches) phase_touches |= a.identity_index.count(t.identity) != 0;
  a.present = !a.identities.empty() || !a.groups.empty();
  set_columns(a, p);
  const Cells cells = add_touches(a, p, known);
  finish_rows(a, cells, phase_touches);
  set_interval_durations(a, p);
  return a;
}

std::vector<size_t> heatmap_group_order(const AccessModel& a) {
  return sorted(all_indices(a.groups.size()), a.groups, [](const GroupRow& gx, const GroupRow& gy) {
    bool tx = gx.intervals_touched > 0, ty = gy.intervals_touched > 0;
    if (tx != ty) return tx;
    int lx = lifetime_rank(gx.g.lifetime), ly = lifetime_rank(gy.g.lifetime);
    if (lx != ly) return lx < ly;
    if (gx.first_interval != gy.first_interval) return gx.first_interval < gy.first_interval;
    if (gx.g.bytes != gy.g.bytes) return gx.g.bytes > gy.g.bytes;
    return gx.g.id < gy.g.id;
  });
}

std::vector<size_t> identities_by_size(const AccessModel& a) {
  return sorted(all_indices(a.identities.size()), a.identities, [](const IdentityRow& rx, const IdentityRow& ry) {
    if (rx.id.size != ry.id.size) return rx.id.size > ry.id.size;
    if (rx.touched != ry.touched) return rx.touched > ry.touched;
    return rx.id.id < ry.id.id;
  });
}

std::vector<size_t> identities_by_touches(const AccessModel& a) {
  std::vector<size_t> touched;
  for (size_t i = 0; i < a.identities.size(); ++i)
    if (a.identities[i].touched) touched.push_back(i);
  return sorted(std::move(touched), a.identities, [](const IdentityRow& rx, const IdentityRow& ry) {
    if (rx.touched != ry.touched) return rx.touched > ry.touched;
    if (rx.id.size != ry.id.size) return rx.id.size > ry.id.size;
    return rx.id.id < ry.id.id;
  });
}

int64_t step_of_seq(const fmt::Profile& p, uint64_t seq) {
  // Steps are written in order; tolerate disorder by falling back to a linear scan.
  const auto& st = p.steps;
  auto it = std::upper_bound(st.begin(), st.end(), seq,
                             [](uint64_t v, const sentinel_step_entry& s) { return v < s.start_seq; });
  if (it != st.begin()) {
    const auto& s = *(it - 1);
    if (seq - s.start_seq < s.allocations) return static_cast<int64_t>(it - 1 - st.begin());
  }
  return -1;
}

std::vector<size_t> object_identities(const fmt::Profile& p, const AccessModel& a) {
  std::vector<size_t> out(p.objects.size(), SIZE_MAX);
  if (a.identities.empty()) return out;
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, size_t> in_step;    // (ordinal, site, size)
  std::map<std::pair<uint32_t, uint64_t>, std::vector<size_t>> outside;  // (site, size) -> ids
  for (size_t i = 0; i < a.identities.size(); ++i) {
    const auto& id = a.identities[i].id;
    if (id.ordinal != SENTINEL_NO_ORDINAL) {
      if (id.phase == a.phase) in_step.emplace(std::make_tuple(id.ordinal, id.site, id.size), i);
    } else {
      outside[{id.site, id.size}].push_back(i);
    }
  }
  uint64_t window = 0;
  if (a.session && a.session->first_profiled_step < p.steps.size())
    window = p.steps[a.session->first_profiled_step].start_seq;
  const bool sorted_steps = std::is_sorted(
      p.steps.begin(), p.steps.end(),
      [](const sentinel_step_entry& x, const sentinel_step_entry& y) { return x.start_seq < y.start_seq; });
  std::vector<size_t> order(p.objects.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return p.objects[x].birth_seq < p.objects[y].birth_seq; });
  std::map<std::pair<uint32_t, uint64_t>, size_t> used;  // next unused identity per key
  for (size_t oi : order) {
    const sentinel_object& o = p.objects[oi];
    int64_t k = sorted_steps ? step_of_seq(p, o.birth_seq) : -1;
    if (k >= 0 && p.steps[static_cast<size_t>(k)].phase == a.phase) {
      uint64_t ord = o.birth_seq - p.steps[static_cast<size_t>(k)].start_seq;
      auto it = in_step.find(std::make_tuple(static_cast<uint32_t>(ord), o.site, o.size));
      if (it != in_step.end()) out[oi] = it->second;
      continue;
    }
    if (k >= 0) continue;  // born in a step of another phase
    auto it = outside.find({o.site, o.size});
    if (it == outside.end()) continue;
    if (o.death_seq != UINT64_MAX && o.death_seq <= window) continue;
    size_t& next = used[{o.site, o.size}];
    if (next < it->second.size()) out[oi] = it->second[next++];
  }
  return out;
}

std::string interval_ranges(const std::vector<uint32_t>& v) {
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(v[i]);
    if (j > i) out += "-" + std::to_string(v[j]);
    i = j + 1;
  }
  return out;
}

SeqClock::SeqClock(const fmt::Profile& p) {
  births_.reserve(p.objects.size());
  for (const auto& o : p.objects) births_.emplace_back(o.birth_seq, o.birth_ns);
  std::sort(births_.begin(), births_.end());
}

std::optional<uint64_t> SeqClock::at(uint64_t seq) const {
  auto it = std::lower_bound(births_.begin(), births_.end(), std::make_pair(seq, uint64_t{0}));
  if (it == births_.end()) return std::nullopt;
  return it->second;
}

std::pair<uint64_t, uint64_t> step_span(const fmt::Profile& p, const SeqClock& clock, size_t k, uint64_t t_end) {
  const auto& s = p.steps[k];
  uint64_t start = s.start_ns ? s.start_ns : clock.at(s.start_seq).value_or(t_end);
  uint64_t stop = clock.at(s.start_seq + s.allocations).value_or(t_end);
  if (k + 1 < p.steps.size() && p.steps[k + 1].start_ns && p.steps[k + 1].start_ns >= start)
    stop = std::min(stop, p.steps[k + 1].start_ns);
  if (stop < start) stop = start;
  return {start, stop};
}

}  // namespace sentinel::view
