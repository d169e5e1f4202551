// The baseline policies in the planner's machinery (docs/planner.md): all-slow, all-fast, first-touch
// and the reactive "hot" policy. Each produces fast masks that the one evaluator then scores, so every
// policy is compared under the same cost model.
#include "tier/plan_model.h"

namespace sentinel::plan {

namespace {

// Steps simulated at most before a policy's decisions repeat (its steady state).
constexpr uint32_t kMaxSimSteps = 8;

// In-step items in birth order: by birth interval, then in-step ordinal, then id. Cyclic items (born
// outside the steps) first, by id, which is their birth order.
bool birth_before(const Model& m, uint32_t a, uint32_t b) {
  const Item& x = m.items[a];
  const Item& y = m.items[b];
  if (x.cyclic != y.cyclic) return x.cyclic;
  if (!x.cyclic && x.start != y.start) return x.start < y.start;
  if (!x.cyclic && x.ordinal != y.ordinal) return x.ordinal < y.ordinal;
  if (x.id != y.id) return x.id < y.id;
  return a < b;
}

uint32_t* birth_order(const Model& m, PlanScratch& scratch) {
  uint32_t* order = scratch.array<uint32_t>(m.count);
  if (!order) return nullptr;
  for (uint32_t i = 0; i < m.count; ++i) order[i] = i;
  sort_items(order, m.count, [&](uint32_t a, uint32_t b) { return birth_before(m, a, b); });
  return order;
}

// Last resort of the simulated policies: if the recorded masks break the budget at some interval
// (a simulation that did not settle), the latest-born items at that interval lose their fast bits.
void enforce_budget(const Model& m, const uint32_t* order, const uint64_t* cap, uint64_t* masks) {
  uint64_t occ[kMaxIntervals];
  occupancy(m, masks, occ);
  for (uint32_t k = 0; k < m.n; ++k) {
    for (uint32_t r = m.count; r-- > 0 && occ[k] > cap[k];) {
      const uint32_t i = order[r];
      if (!(masks[i] & bit(k))) continue;
      for (uint64_t b = masks[i]; b; b &= b - 1) occ[__builtin_ctzll(b)] -= m.items[i].size;
      masks[i] = 0;
    }
  }
}

// The per-instance state of a simulated run.
struct Live {
  uint64_t death = 0;       // absolute interval (step * n + interval) of its last alive interval
  uint64_t last_touch = 0;  // absolute interval + 1 of its last touch (0: never)
  bool alive = false;
  bool fast = false;
};

// What the simulated policies share: the items in birth order (order[0..first_in_step) are the cyclic
// ones, born outside the steps), each one's instance state, and the fast bytes in use.
struct Sim {
  const Model& m;
  uint32_t* order = nullptr;
  Live* live = nullptr;
  uint32_t first_in_step = 0;
  uint64_t cur = 0;

  bool init(PlanScratch& scratch) {
    order = birth_order(m, scratch);
    live = scratch.array<Live>(m.count);
    if (!order || !live) return false;
    for (uint32_t i = 0; i < m.count; ++i) live[i] = Live{};
    while (first_in_step < m.count && m.items[order[first_in_step]].cyclic) ++first_in_step;
    return true;
  }
  // Frees at the end of the last interval: instances whose last alive interval is before t.
  void free_dead(uint64_t t) {
    for (uint32_t r = 0; r < m.count; ++r) {
      Live& l = live[order[r]];
      if (l.alive && l.death < t) {
        if (l.fast) cur -= m.items[order[r]].size;
        l.alive = l.fast = false;
      }
    }
  }
  // An in-step instance born at absolute interval t: fast when it fits under cap (never demoting).
  void birth(uint32_t i, uint64_t t, uint64_t cap) {
    Live& l = live[i];  // the previous instance was freed at the end of the last interval
    l = Live{};
    l.alive = true;
    l.death = t + m.items[i].len - 1;
    l.fast = m.items[i].size && cur + m.items[i].size <= cap;
    if (l.fast) cur += m.items[i].size;
  }
  // True when step s (> 0) decided as the step before did, over order[from..count); else remembers it.
  template <typename T>
  bool settled(uint32_t from, const T* now, T* previous, uint32_t s) const {
    bool same = s > 0;
    for (uint32_t r = from; r < m.count && same; ++r) same = now[order[r]] == previous[order[r]];
    if (same) return true;
    for (uint32_t r = from; r < m.count; ++r) previous[order[r]] = now[order[r]];
    return false;
  }
};

}  // namespace

void plan_all_slow(const Model& m, uint64_t* masks) {
  for (uint32_t i = 0; i < m.count; ++i) masks[i] = 0;
}

void plan_all_fast(const Model& m, uint64_t* masks) {
  for (uint32_t i = 0; i < m.count; ++i) masks[i] = m.items[i].alive;
}

// First touch, as a plain NUMA first-touch allocator behaves: an object is placed on the fast node
// at birth if it fits, else on the slow one, and never moves; frees give room back. Objects born
// outside the steps come first; persistent objects born in a step stay alive into the next step, so
// the steps are simulated until the decisions repeat.
bool plan_first_touch(const Model& m, PlanScratch& scratch, uint64_t* masks) {
  const size_t mark = scratch.used();
  Sim sim{m};
  uint8_t* decided = scratch.array<uint8_t>(m.count);
  uint8_t* previous = scratch.array<uint8_t>(m.count);
  if (!sim.init(scratch) || !decided || !previous) return false;
  for (uint32_t i = 0; i < m.count; ++i) decided[i] = previous[i] = 0;
  for (uint32_t r = 0; r < sim.first_in_step; ++r) {
    const uint32_t i = sim.order[r];
    if (m.items[i].size && sim.cur + m.items[i].size <= m.budget) {
      sim.cur += m.items[i].size;
      decided[i] = 1;
    }
  }
  for (uint32_t s = 0; s < kMaxSimSteps; ++s) {
    uint32_t next = sim.first_in_step;
    for (uint32_t k = 0; k < m.n; ++k) {
      const uint64_t t = uint64_t{s} * m.n + k;
      sim.free_dead(t);
      for (; next < m.count && m.items[sim.order[next]].start == k; ++next) {
        const uint32_t i = sim.order[next];
        sim.birth(i, t, m.budget);
        decided[i] = sim.live[i].fast;
      }
    }
    if (sim.settled(sim.first_in_step, decided, previous, s)) break;
  }
  for (uint32_t i = 0; i < m.count; ++i) masks[i] = decided[i] ? m.items[i].alive : 0;
  uint64_t cap[kMaxIntervals];
  for (uint32_t k = 0; k < m.n; ++k) cap[k] = m.budget;
  enforce_budget(m, sim.order, cap, masks);
  scratch.rewind(mark);
  return true;
}

namespace {

// The reactive policy's simulation (plan_hot): the fast node's room at each interval is the budget less
// what the pinned objects hold there.
struct HotSim : Sim {
  uint32_t* victims = nullptr;
  uint32_t* promote = nullptr;
  uint64_t cap[kMaxIntervals] = {};

  bool init(PlanScratch& scratch) {
    victims = scratch.array<uint32_t>(m.count);
    promote = scratch.array<uint32_t>(m.count);
    return Sim::init(scratch) && victims && promote;
  }

  // Pinned objects: first fit over all their alive intervals, in birth order; fixed for good. Sets the
  // room left at each interval, and returns the least of it.
  uint64_t place_pinned(uint64_t* masks) {
    uint64_t pinned_occ[kMaxIntervals] = {};
    for (uint32_t r = 0; r < m.count; ++r) {
      const Item& it = m.items[order[r]];
      if (!it.pinned || !it.size) continue;
      bool fits = true;
      for (uint32_t k = 0; k < m.n; ++k)
        if ((it.alive & bit(k)) && pinned_occ[k] + it.size > m.budget) fits = false;
      if (!fits) continue;
      masks[order[r]] = it.alive;
      for (uint32_t k = 0; k < m.n; ++k)
        if (it.alive & bit(k)) pinned_occ[k] += it.size;
    }
    uint64_t min_cap = UINT64_MAX;
    for (uint32_t k = 0; k < m.n; ++k) {
      cap[k] = m.budget - pinned_occ[k];
      if (cap[k] < min_cap) min_cap = cap[k];
    }
    return min_cap;
  }

  // Objects born outside the steps, alive throughout: fast while they fit under the least room.
  void place_cyclic(uint64_t min_cap) {
    for (uint32_t r = 0; r < first_in_step; ++r) {
      const uint32_t i = order[r];
      live[i].alive = true;
      live[i].death = UINT64_MAX;
      if (m.items[i].pinned) continue;
      if (m.items[i].size && cur + m.items[i].size <= min_cap) {
        cur += m.items[i].size;
        live[i].fast = true;
      }
    }
  }

  void evict(uint32_t i) {
    live[i].fast = false;
    cur -= m.items[i].size;
  }

  // The boundary before interval k (absolute t): victims are the fast, movable objects, coldest first;
  // what the previous interval touched ("hot") is promoted, most touched bytes first, and only goes
  // when nothing else is left to make a pinned-in budget fit.
  void boundary(uint32_t k, uint64_t t) {
    uint32_t nv = 0, np = 0;
    for (uint32_t i = 0; i < m.count; ++i) {
      const Live& l = live[i];
      if (!l.alive || m.items[i].pinned) continue;
      const bool hot = t > 0 && l.last_touch == t;
      if (l.fast)
        victims[nv++] = i;
      else if (hot && m.items[i].size <= cap[k])
        promote[np++] = i;
    }
    sort_items(victims, nv, [&](uint32_t a, uint32_t b) {
      if (live[a].last_touch != live[b].last_touch) return live[a].last_touch < live[b].last_touch;
      return a < b;
    });
    const uint32_t prev = (k + m.n - 1) % m.n;
    sort_items(promote, np, [&](uint32_t a, uint32_t b) {
      const uint64_t ba = m.items[a].bytes[prev], bb = m.items[b].bytes[prev];
      if (ba != bb) return ba > bb;
      return a < b;
    });
    uint32_t v = 0;
    for (; cur > cap[k] && v < nv; ++v) evict(victims[v]);
    promote_hot(k, t, nv, np, v);
  }

  // Promotions at the boundary before interval k; victims[v..nv) are fast, coldest first.
  void promote_hot(uint32_t k, uint64_t t, uint32_t nv, uint32_t np, uint32_t v) {
    uint32_t cold_end = v;  // victims[v..cold_end) are not hot
    while (cold_end < nv && live[victims[cold_end]].last_touch != t) ++cold_end;
    uint64_t cold_bytes = 0;
    for (uint32_t c = v; c < cold_end; ++c) cold_bytes += m.items[victims[c]].size;
    for (uint32_t p = 0; p < np; ++p) {
      const uint32_t i = promote[p];
      const uint64_t size = m.items[i].size;
      if (!size) continue;
      if (cur + size > cap[k]) {
        const uint64_t need = cur + size - cap[k];
        if (cold_bytes < need) continue;
        while (cur + size > cap[k]) {
          const uint32_t victim = victims[v++];
          if (!live[victim].fast) continue;
          cold_bytes -= m.items[victim].size;
          evict(victim);
        }
      }
      live[i].fast = true;
      cur += size;
    }
  }

  // Births during interval k: on the fast node when there is room, without demoting. Returns the next
  // item (in birth order) not born yet.
  uint32_t births(uint32_t k, uint64_t t, uint32_t next) {
    for (; next < m.count && m.items[order[next]].start == k; ++next) {
      const uint32_t i = order[next];
      if (m.items[i].pinned) {
        live[i].alive = true;
        live[i].death = t + m.items[i].len - 1;
        continue;
      }
      birth(i, t, cap[k]);
    }
    return next;
  }

  // Interval k as it ran: the movable objects' fast bits, and what it touched.
  void record(uint32_t k, uint64_t t, uint64_t* masks) {
    for (uint32_t i = 0; i < m.count; ++i) {
      if (m.items[i].pinned) continue;
      const Live& l = live[i];
      if (k == 0) masks[i] = 0;
      if (l.alive && l.fast) masks[i] |= bit(k);
      if (l.alive && (m.items[i].touch & bit(k))) live[i].last_touch = t + 1;
    }
  }
};

}  // namespace

// Reactive tiering (Linux memory tiering, HeMem-like): objects are born on the fast node when there
// is room; at every interval boundary what the previous interval touched is promoted, making room by
// demoting the least recently touched objects. Pinned objects are placed once (first fit over their
// whole life) and never move. Simulated step after step until the schedule repeats.
bool plan_hot(const Model& m, PlanScratch& scratch, uint64_t* masks) {
  const size_t mark = scratch.used();
  HotSim sim{{m}};
  uint64_t* previous = scratch.array<uint64_t>(m.count);
  if (!sim.init(scratch) || !previous) return false;
  for (uint32_t i = 0; i < m.count; ++i) masks[i] = previous[i] = 0;
  sim.place_cyclic(sim.place_pinned(masks));
  for (uint32_t s = 0; s < kMaxSimSteps; ++s) {
    uint32_t next = sim.first_in_step;
    for (uint32_t k = 0; k < m.n; ++k) {
      const uint64_t t = uint64_t{s} * m.n + k;
      sim.free_dead(t);
      sim.boundary(k, t);
      next = sim.births(k, t, next);
      sim.record(k, t, masks);
    }
    if (sim.settled(0, masks, previous, s)) break;
  }
  for (uint32_t i = 0; i < m.count; ++i) masks[i] &= m.items[i].alive;
  uint64_t cap[kMaxIntervals];
  for (uint32_t k = 0; k < m.n; ++k) cap[k] = m.budget;
  enforce_budget(m, sim.order, cap, masks);
  scratch.rewind(mark);
  return true;
}

}  // namespace sentinel::plan
