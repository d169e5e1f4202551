// The sentinel policy (the paper's; docs/planner.md): short-lived objects in a reserved fast pool
// sized to their peak; everything else lives on the slow node and is moved to the fast node `lead`
// intervals ahead of the intervals that touch it and back after, staying resident across untouched
// gaps of at most `gap` intervals (the migration interval). Which lead, gap, pool size and whether
// co-allocation groups move as units is the "test and trial": every candidate schedule is built and
// scored by the one evaluator (plan_model.cpp) with the measured bandwidth and interval durations,
// and the best is kept.
#include "tier/plan_model.h"

namespace sentinel::plan {

namespace {

constexpr uint32_t kLeads[] = {0, 1, 2, 3, 5, 8};
constexpr uint32_t kToBirth = UINT32_MAX;  // a lead that reaches back to the birth (born fast)
constexpr uint32_t kAnyGap = UINT32_MAX;   // resident from the first touch to the last (and around)
constexpr uint32_t kGaps[] = {kAnyGap, 4, 2, 1, 0};

// A planning unit: one identity, or the identities of one co-allocation group that share a timeline
// and the intervals they touch (they then move together, and none is moved for another's touch).
struct Unit {
  uint64_t size = 0;
  uint64_t alive = 0;
  uint64_t touch = 0;
  uint32_t first = 0;  // into the member list
  uint32_t members = 0;
  uint32_t origin = 0;  // interval of timeline position 0
  uint32_t len = 0;
  bool cyclic = false;
  bool pinned = false;
};

// A requested fast residency of a unit: timeline positions [a - lead, b] around touched positions
// a..b. level 0 spans several touched runs, 1 one run, 2 one touched interval (or a pinned unit).
struct Segment {
  uint64_t mask = 0;
  uint64_t benefit = 0;  // access-weighted bytes touched in it (Item::weight)
  uint64_t cost = 0;     // size x intervals
  uint32_t unit = 0;
  uint32_t a = 0, b = 0;
  uint32_t level = 0;
};

struct Planner {
  const Model& m;
  uint32_t* members = nullptr;  // item indices grouped by unit
  Unit* units = nullptr;
  uint64_t* ubytes = nullptr;  // units x n access-weighted bytes (Item::weight)
  uint32_t unit_count = 0;
  Segment* segs = nullptr;  // two lists of capacity seg_cap each
  Segment* next = nullptr;
  size_t seg_cap = 0;
  uint64_t* umask = nullptr;  // per unit: fast bits
  uint64_t occ[kMaxIntervals] = {};
  // Every unit fast for its whole life or never (SENTINEL_TIER_NO_MOVES, or the no-moves candidates
  // of the step-time objective).
  bool no_moves = false;

  uint32_t abs(const Unit& u, uint32_t pos) const { return (u.origin + pos) % m.n; }
  bool touched(const Unit& u, uint32_t pos) const { return u.touch & bit(abs(u, pos)); }

  // Builds the units of the items that are not served by the pool.
  bool build_units(const uint8_t* eligible, bool grouped) {
    uint32_t nm = 0;
    for (uint32_t i = 0; i < m.count; ++i)
      if (!eligible[i] && m.items[i].size && m.items[i].touch) members[nm++] = i;
    auto key_less = [&](uint32_t a, uint32_t b) {
      const Item& x = m.items[a];
      const Item& y = m.items[b];
      if (grouped) {
        if (x.group != y.group) return x.group < y.group;
        if (x.cyclic != y.cyclic) return x.cyclic;
        if (x.start != y.start) return x.start < y.start;
        if (x.len != y.len) return x.len < y.len;
        if (x.pinned != y.pinned) return x.pinned;
        if (x.touch != y.touch) return x.touch < y.touch;
      }
      return a < b;
    };
    sort_items(members, nm, key_less);
    unit_count = 0;
    for (uint32_t r = 0; r < nm;) {
      uint32_t e = r + 1;
      if (grouped) {
        const Item& x = m.items[members[r]];
        while (e < nm) {
          const Item& y = m.items[members[e]];
          if (y.group != x.group || y.cyclic != x.cyclic || y.start != x.start || y.len != x.len ||
              y.pinned != x.pinned || y.touch != x.touch)
            break;
          ++e;
        }
      }
      Unit& u = units[unit_count];
      u = Unit{};
      u.first = r;
      u.members = e - r;
      const Item& head = m.items[members[r]];
      u.alive = head.alive;
      u.cyclic = head.cyclic;
      u.pinned = head.pinned || no_moves;  // without moves, a unit has one node for its whole life
      u.len = head.len;
      u.origin = head.start;
      uint64_t* b = ubytes + size_t{unit_count} * m.n;
      for (uint32_t k = 0; k < m.n; ++k) b[k] = 0;
      for (uint32_t q = r; q < e; ++q) {
        const Item& it = m.items[members[q]];
        u.size += it.size;
        u.touch |= it.touch;
        for (uint32_t k = 0; k < m.n; ++k) b[k] += it.weight[k];  // what a fast residency saves
      }
      if (u.cyclic) u.origin = rotation(u.touch);
      ++unit_count;
      r = e;
    }
    return true;
  }

  // For an object alive in every interval, the timeline starts at the first touched interval after
  // the longest untouched stretch, so that stretch is the one a schedule can leave out.
  uint32_t rotation(uint64_t touch) const {
    if (touch == 0 || touch == m.all) return 0;
    uint32_t best_len = 0, best_end = 0;
    for (uint32_t k = 0; k < m.n; ++k) {
      if (touch & bit(k)) continue;
      if (touch & bit((k + m.n - 1) % m.n)) {  // a stretch of untouched intervals starts at k
        uint32_t len = 0;
        while (!(touch & bit((k + len) % m.n))) ++len;
        if (len > best_len) {
          best_len = len;
          best_end = (k + len) % m.n;
        }
      }
    }
    return best_end;
  }

  void add_segment(Segment* list, size_t* n, uint32_t ui, uint32_t a, uint32_t b, uint32_t lead, uint32_t level) {
    const Unit& u = units[ui];
    Segment s;
    s.unit = ui;
    s.a = a;
    s.b = b;
    s.level = level;
    const uint64_t* bytes = ubytes + size_t{ui} * m.n;
    for (uint32_t p = a; p <= b; ++p)
      if (touched(u, p)) s.benefit += bytes[abs(u, p)];
    if (u.pinned) {
      s.mask = u.alive;  // one node for its whole life
      s.level = 2;
    } else {
      // The lead: move-ins start `lead` intervals ahead, but never before the birth of an object
      // born in the step (it is then born fast), and never more than the whole timeline.
      uint32_t ahead = u.cyclic ? (lead == kToBirth ? 0 : lead) : (lead < a ? lead : a);
      if (ahead + (b - a) + 1 > u.len) ahead = u.len - (b - a) - 1;
      for (uint32_t p = 0; p <= (b - a) + ahead; ++p) s.mask |= bit(abs(u, (a + u.len - ahead + p) % u.len));
    }
    s.cost = u.size * popcount(s.mask);
    list[(*n)++] = s;
  }

  // Residencies of every unit: touched runs merged across gaps of at most `gap` intervals. With
  // `from_birth`, the first residency of an object born in the step starts at its birth: it is born
  // fast instead of being moved in later (no move, no lateness, more fast-memory time).
  size_t initial_segments(uint32_t lead, uint32_t gap, bool from_birth) {
    size_t n = 0;
    for (uint32_t ui = 0; ui < unit_count; ++ui) {
      const Unit& u = units[ui];
      if (u.pinned) {
        add_segment(segs, &n, ui, 0, u.len - 1, 0, 2);
        continue;
      }
      uint32_t p = 0;
      while (p < u.len) {
        while (p < u.len && !touched(u, p)) ++p;
        if (p == u.len) break;
        const uint32_t a = p;
        uint32_t b = p, runs = 1;
        for (;;) {
          while (b + 1 < u.len && touched(u, b + 1)) ++b;
          uint32_t q = b + 1, untouched = 0;
          while (q < u.len && !touched(u, q)) ++q, ++untouched;
          if (q == u.len || untouched > gap) break;
          b = q;
          ++runs;
        }
        // An object of every interval whose every gap, the one around the step's end included (the
        // longest, see rotation()), is short enough stays resident: no moves at all.
        if (u.cyclic && a == 0 && u.len - 1 - b <= gap) {
          add_segment(segs, &n, ui, 0, u.len - 1, 0, runs > 1 ? 0 : 1);
          break;
        }
        const bool first = !u.cyclic && from_birth && no_residency_yet(n, ui);
        add_segment(segs, &n, ui, a, b, first ? kToBirth : lead, runs > 1 ? 0 : (b > a ? 1 : 2));
        p = b + 1;
      }
    }
    return n;
  }

  // True when the unit has no residency in segs[0..n) yet.
  bool no_residency_yet(size_t n, uint32_t ui) const { return n == 0 || segs[n - 1].unit != ui; }

  // A rejected residency split one level finer: into its touched runs, or a run into its intervals.
  void split(const Segment& s, uint32_t lead, size_t* n) {
    const Unit& u = units[s.unit];
    uint32_t p = s.a;
    while (p <= s.b) {
      while (p <= s.b && !touched(u, p)) ++p;
      if (p > s.b) break;
      uint32_t e = p;
      if (s.level == 0)
        while (e + 1 <= s.b && touched(u, e + 1)) ++e;
      add_segment(next, n, s.unit, p, e, lead, e > p ? 1 : 2);
      p = e + 1;
    }
  }

  bool better(const Segment& x, const Segment& y) const {
    const unsigned __int128 l = static_cast<unsigned __int128>(x.benefit) * y.cost;
    const unsigned __int128 r = static_cast<unsigned __int128>(y.benefit) * x.cost;
    if (l != r) return l > r;
    if (x.unit != y.unit) return x.unit < y.unit;
    return x.a < y.a;
  }

  // Greedy fill: residencies by access-weighted bytes per byte-interval of fast memory, each taken when it
  // fits under the capacity at every interval it adds; a rejected one is split and tried again.
  void fill(size_t n, uint32_t lead, const uint64_t* cap) {
    for (uint32_t u = 0; u < unit_count; ++u) umask[u] = 0;
    for (uint32_t k = 0; k < m.n; ++k) occ[k] = 0;
    for (uint32_t round = 0; round < 3 && n; ++round) {
      sort_items(segs, n, [&](const Segment& x, const Segment& y) { return better(x, y); });
      size_t nn = 0;
      for (size_t j = 0; j < n; ++j) {
        const Segment& s = segs[j];
        const Unit& u = units[s.unit];
        const uint64_t fresh = s.mask & ~umask[s.unit];
        if (!fresh || !(fresh & u.touch & s.mask & ~umask[s.unit])) continue;
        if (fits(fresh, u.size, cap)) {
          occupy(s.unit, fresh);
        } else if (s.level < 2) {
          split(s, lead, &nn);
        }
      }
      Segment* t = segs;
      segs = next;
      next = t;
      n = nn;
    }
    keep_to_death(cap);
  }

  // A residency that ends at a unit's last touch while the object lives on means demoting an object
  // that nothing touches again before it dies: a move for nothing (one that races the free, too)
  // unless the room is wanted. Where the room is there at every interval left, the unit stays fast.
  void keep_to_death(const uint64_t* cap) {
    for (uint32_t ui = 0; ui < unit_count; ++ui) {
      const Unit& u = units[ui];
      if (u.cyclic || u.pinned || !umask[ui]) continue;
      uint32_t last = u.len;  // the last timeline position that is fast
      for (uint32_t p = u.len; p-- > 0;)
        if (umask[ui] & bit(abs(u, p))) {
          last = p;
          break;
        }
      if (last == u.len) continue;
      uint64_t rest = 0;
      bool touched_after = false;
      for (uint32_t p = last + 1; p < u.len; ++p) {
        rest |= bit(abs(u, p));
        touched_after |= touched(u, p);
      }
      if (rest && !touched_after && fits(rest, u.size, cap)) occupy(ui, rest);
    }
  }

  // Whether `size` more bytes fit under the capacity at every interval of `mask`.
  bool fits(uint64_t mask, uint64_t size, const uint64_t* cap) const {
    for (uint64_t b = mask; b; b &= b - 1) {
      const uint32_t k = static_cast<uint32_t>(__builtin_ctzll(b));
      if (occ[k] + size > cap[k]) return false;
    }
    return true;
  }

  // The unit becomes fast at the intervals of `mask` (none of them fast yet).
  void occupy(uint32_t ui, uint64_t mask) {
    umask[ui] |= mask;
    for (uint64_t b = mask; b; b &= b - 1) occ[__builtin_ctzll(b)] += units[ui].size;
  }
};

// The ordering of candidate schedules: by step time, the least modeled step time first; then (the
// only order without the step-time model) more access-weighted bytes while fast (touched bytes where
// the profile has no intensity), then more touched bytes, then fewer bytes moved, then fewer moves; on
// a tie the earlier candidate stays.
bool wins(const Outcome& o, const Outcome& best, bool by_step_time) {
  if (by_step_time && o.step.total != best.step.total) return o.step.total < best.step.total;
  if (o.hit_weight != best.hit_weight) return o.hit_weight > best.hit_weight;
  if (o.hit_bytes != best.hit_bytes) return o.hit_bytes > best.hit_bytes;
  if (o.moved_bytes != best.moved_bytes) return o.moved_bytes < best.moved_bytes;
  return o.moves < best.moves;
}

// The pool's candidates: touched short-lived objects (eligible[i]), in shorts[0..*ns) per interval by
// access-weighted bytes per byte. Returns their peak: the most bytes of them born in one interval.
uint64_t pool_candidates(const Model& m, uint8_t* eligible, uint32_t* shorts, uint32_t* ns) {
  *ns = 0;
  uint64_t per_interval[kMaxIntervals] = {};
  for (uint32_t i = 0; i < m.count; ++i) {
    const Item& it = m.items[i];
    eligible[i] = it.lifetime == SENTINEL_LIFE_SHORT && it.len == 1 && !it.cyclic && !it.pinned && it.size && it.touch;
    if (!eligible[i]) continue;
    shorts[(*ns)++] = i;
    per_interval[it.start] += it.size;
  }
  sort_items(shorts, *ns, [&](uint32_t a, uint32_t b) {
    const Item& x = m.items[a];
    const Item& y = m.items[b];
    if (x.start != y.start) return x.start < y.start;
    const unsigned __int128 l = static_cast<unsigned __int128>(x.weighted) * y.size;
    const unsigned __int128 r = static_cast<unsigned __int128>(y.weighted) * x.size;
    if (l != r) return l > r;
    return a < b;
  });
  uint64_t short_peak = 0;
  for (uint32_t k = 0; k < m.n; ++k) short_peak = per_interval[k] > short_peak ? per_interval[k] : short_peak;
  return short_peak;
}

// Pool sizes tried: the short-lived peak (capped by the budget), then smaller shares of the budget
// when that peak would crowd out everything else. Returns how many (at most 5).
uint32_t pool_sizes(const Model& m, uint64_t short_peak, uint64_t* pools) {
  uint32_t npools = 0;
  pools[npools++] = short_peak < m.budget ? short_peak : m.budget;
  for (uint32_t q = 3; q-- > 0;) {
    const uint64_t p = m.budget / 4 * (q + 1);
    if (p < pools[0]) pools[npools++] = p;
  }
  if (pools[0] > 0) pools[npools++] = 0;
  return npools;
}

// Fills a pool of pool_bytes interval by interval, best touched bytes per byte first (in_pool[i]: item i
// is served from it). Returns the bytes it reserves: its fullest interval.
uint64_t fill_pool(const Model& m, const uint32_t* shorts, uint32_t ns, uint64_t pool_bytes, uint8_t* in_pool) {
  uint64_t reserved = 0, used[kMaxIntervals] = {};
  for (uint32_t i = 0; i < m.count; ++i) in_pool[i] = 0;
  for (uint32_t r = 0; r < ns; ++r) {
    const Item& it = m.items[shorts[r]];
    if (used[it.start] + it.size > pool_bytes) continue;
    used[it.start] += it.size;
    in_pool[shorts[r]] = 1;
    if (used[it.start] > reserved) reserved = used[it.start];
  }
  return reserved;
}

// The test and trial: every candidate schedule is scored by the one evaluator, and the best so far is
// kept in masks and pool, with how it was made in *choice.
struct Trials {
  const Model& m;
  PlanScratch& scratch;
  uint64_t* masks;
  uint8_t* pool;
  SentinelChoice* choice;
  uint64_t* trial = nullptr;      // the candidate's masks
  uint8_t* trial_pool = nullptr;  // the candidate's pool
  Outcome best{};
  bool have = false;

  // A schedule that has every touched byte fast and moves nothing cannot be beaten: stop there.
  bool perfect() const { return have && best.hit_bytes == m.total_touched && best.moved_bytes == 0 && best.moves == 0; }

  // Scores the candidate (trial, trial_pool, `reserved` bytes of pool); *won when it is the best so far
  // (then it is kept). False only when scratch ran out.
  bool score(uint64_t reserved, bool* won) {
    Outcome o;
    if (!evaluate(m, trial, trial_pool, reserved, scratch, &o, nullptr)) return false;
    ++choice->trials;
    *won = !have || wins(o, best, m.by_step_time);
    if (!*won) return true;
    have = true;
    best = o;
    for (uint32_t i = 0; i < m.count; ++i) {
      masks[i] = trial[i];
      pool[i] = trial_pool[i];
    }
    return true;
  }

  // Every lead and gap on the units pl has built, under the capacity cap left by a pool of `reserved`.
  bool leads_and_gaps(Planner& pl, const uint64_t* cap, uint64_t reserved, bool grouped) {
    for (uint32_t lead : kLeads) {
      if ((lead && lead >= m.n) || perfect() || (pl.no_moves && lead)) continue;
      // Without moves every unit has one residency over its whole life: lead and gap change nothing.
      const uint32_t gap_trials = pl.no_moves ? 1 : 2 * (sizeof kGaps / sizeof kGaps[0]);
      for (uint32_t trial_no = 0; trial_no < gap_trials && !perfect(); ++trial_no) {
        const uint32_t gap = kGaps[trial_no / 2];
        const bool from_birth = trial_no % 2 == 1;
        if (gap != kAnyGap && gap >= m.n) continue;
        pl.fill(pl.initial_segments(lead, gap, from_birth), lead, cap);
        for (uint32_t i = 0; i < m.count; ++i) trial[i] = trial_pool[i] ? m.items[i].alive : 0;
        for (uint32_t u = 0; u < pl.unit_count; ++u)
          for (uint32_t q = 0; q < pl.units[u].members; ++q) {
            const uint32_t i = pl.members[pl.units[u].first + q];
            trial[i] = pl.umask[u] & m.items[i].alive;
          }
        bool won;
        if (!score(reserved, &won)) return false;
        if (won) {
          choice->lead = lead;
          choice->gap = gap == kAnyGap ? m.n : gap;
          choice->grouped = grouped;
          choice->pool_bytes = reserved;
        }
      }
    }
    return true;
  }

  // The last candidate: no pool and no moves, every object placed at birth while it fits (what a
  // first-touch allocator does). It wins only where no schedule above is better under the model.
  bool first_touch() {
    for (uint32_t i = 0; i < m.count; ++i) trial_pool[i] = 0;
    if (!plan_first_touch(m, scratch, trial)) return false;
    bool won;
    if (!score(0, &won)) return false;
    if (won) *choice = SentinelChoice{0, m.n, false, 0, choice->trials, true};
    return true;
  }
};

}  // namespace

bool plan_sentinel(const Model& m, PlanScratch& scratch, uint64_t* masks, uint8_t* pool, SentinelChoice* choice) {
  const size_t mark = scratch.used();
  *choice = SentinelChoice{};
  Planner pl{m};
  Trials tr{m, scratch, masks, pool, choice};
  pl.members = scratch.array<uint32_t>(m.count);
  pl.units = scratch.array<Unit>(m.count);
  pl.ubytes = scratch.array<uint64_t>(size_t{m.count} * m.n);
  pl.umask = scratch.array<uint64_t>(m.count);
  pl.seg_cap = size_t{m.count} * m.n + 1;  // a unit never has more residencies than touched intervals
  pl.segs = scratch.array<Segment>(pl.seg_cap);
  pl.next = scratch.array<Segment>(pl.seg_cap);
  uint8_t* eligible = scratch.array<uint8_t>(m.count);
  uint32_t* shorts = scratch.array<uint32_t>(m.count);
  tr.trial = scratch.array<uint64_t>(m.count);
  tr.trial_pool = scratch.array<uint8_t>(m.count);
  if (!pl.members || !pl.units || !pl.ubytes || !pl.umask || !pl.segs || !pl.next || !eligible || !shorts ||
      !tr.trial || !tr.trial_pool)
    return false;

  uint32_t ns;
  uint64_t pools[5];
  const uint32_t npools = pool_sizes(m, pool_candidates(m, eligible, shorts, &ns), pools);
  bool any_group = false;  // is there a group with two members of one timeline?
  pl.build_units(eligible, true);
  for (uint32_t u = 0; u < pl.unit_count && !any_group; ++u) any_group = pl.units[u].members > 1;

  // Every pool size, with groups as units or not, on the schedules pl makes (with or without moves).
  auto pools_and_groups = [&]() {
    for (uint32_t pi = 0; pi < npools && !tr.perfect(); ++pi) {
      const uint64_t reserved = fill_pool(m, shorts, ns, pools[pi], tr.trial_pool);
      uint64_t cap[kMaxIntervals];
      for (uint32_t k = 0; k < m.n; ++k) cap[k] = m.budget - reserved;
      for (uint32_t g = 0; g < (any_group ? 2u : 1u) && !tr.perfect(); ++g) {
        pl.build_units(eligible, g == 1);
        if (!tr.leads_and_gaps(pl, cap, reserved, g == 1)) return false;
      }
    }
    return true;
  };
  pl.no_moves = m.no_moves;
  if (!pools_and_groups()) return false;
  // By step time, a move can cost more than the slow accesses it saves: the schedules without moves
  // (those SENTINEL_TIER_NO_MOVES plans) are candidates too, so the plan is never modeled slower.
  // Only by step time: without the costs the trial, and so the plan, stays what it was.
  if (m.by_step_time && !m.no_moves) {
    pl.no_moves = true;
    if (!pools_and_groups()) return false;
  }
  if (!tr.perfect() && !tr.first_touch()) return false;
  choice->by_step_time = m.by_step_time;
  scratch.rewind(mark);
  return true;
}

}  // namespace sentinel::plan
