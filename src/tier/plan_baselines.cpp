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
  uint32_t* order = birth_order(m, scratch);
  Live* live = scratch.array<Live>(m.count);
  uint8_t* decided = scratch.array<uint8_t>(m.count);
  uint8_t* previous = scratch.array<uint8_t>(m.count);
  if (!order || !live || !decided || !previous) return false;
  uint64_t cur = 0;
  for (uint32_t i = 0; i < m.count; ++i) {
    live[i] = Live{};
    decided[i] = previous[i] = 0;
  }
  uint32_t first_in_step = 0;
  for (; first_in_step < m.count && m.items[order[first_in_step]].cyclic; ++first_in_step) {
    const uint32_t i = order[first_in_step];
    if (m.items[i].size && cur + m.items[i].size <= m.budget) {
      cur += m.items[i].size;
      decided[i] = 1;
    }
  }
  for (uint32_t s = 0; s < kMaxSimSteps; ++s) {
    uint32_t next = first_in_step;
    for (uint32_t k = 0; k < m.n; ++k) {
      const uint64_t t = uint64_t{s} * m.n + k;
      for (uint32_t r = first_in_step; r < m.count; ++r) {  // frees at the end of the last interval
        Live& l = live[order[r]];
        if (l.alive && l.death < t) {
          if (l.fast) cur -= m.items[order[r]].size;
          l.alive = l.fast = false;
        }
      }
      for (; next < m.count && m.items[order[next]].start == k; ++next) {
        const uint32_t i = order[next];
        Live& l = live[i];
        l.alive = true;
        l.death = t + m.items[i].len - 1;
        l.fast = m.items[i].size && cur + m.items[i].size <= m.budget;
        if (l.fast) cur += m.items[i].size;
        decided[i] = l.fast;
      }
    }
    bool same = s > 0;
    for (uint32_t r = first_in_step; r < m.count && same; ++r) same = decided[order[r]] == previous[order[r]];
    if (same) break;
    for (uint32_t r = first_in_step; r < m.count; ++r) previous[order[r]] = decided[order[r]];
  }
  for (uint32_t i = 0; i < m.count; ++i) masks[i] = decided[i] ? m.items[i].alive : 0;
  uint64_t cap[kMaxIntervals];
  for (uint32_t k = 0; k < m.n; ++k) cap[k] = m.budget;
  enforce_budget(m, order, cap, masks);
  scratch.rewind(mark);
  return true;
}

// Reactive tiering (Linux memory tiering, HeMem-like): objects are born on the fast node when there
// is room; at every interval boundary what the previous interval touched is promoted, making room by
// demoting the least recently touched objects. Pinned objects are placed once (first fit over their
// whole life) and never move. Simulated step after step until the schedule repeats.
bool plan_hot(const Model& m, PlanScratch& scratch, uint64_t* masks) {
  const size_t mark = scratch.used();
  uint32_t* order = birth_order(m, scratch);
  Live* live = scratch.array<Live>(m.count);
  uint64_t* previous = scratch.array<uint64_t>(m.count);
  uint32_t* victims = scratch.array<uint32_t>(m.count);
  uint32_t* promote = scratch.array<uint32_t>(m.count);
  if (!order || !live || !previous || !victims || !promote) return false;
  uint64_t cap[kMaxIntervals], pinned_occ[kMaxIntervals] = {};
  for (uint32_t i = 0; i < m.count; ++i) {
    masks[i] = previous[i] = 0;
    live[i] = Live{};
  }
  // Pinned objects: first fit over all their alive intervals, in birth order; fixed for good.
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
  uint64_t cur = 0;
  uint32_t first_in_step = 0;
  for (; first_in_step < m.count && m.items[order[first_in_step]].cyclic; ++first_in_step) {
    const uint32_t i = order[first_in_step];
    live[i].alive = true;
    live[i].death = UINT64_MAX;
    if (m.items[i].pinned) continue;
    if (m.items[i].size && cur + m.items[i].size <= min_cap) {
      cur += m.items[i].size;
      live[i].fast = true;
    }
  }
  auto evict = [&](uint32_t i) {
    live[i].fast = false;
    cur -= m.items[i].size;
  };
  for (uint32_t s = 0; s < kMaxSimSteps; ++s) {
    uint32_t next = first_in_step;
    for (uint32_t k = 0; k < m.n; ++k) {
      const uint64_t t = uint64_t{s} * m.n + k;
      for (uint32_t i = 0; i < m.count; ++i) {
        Live& l = live[i];
        if (l.alive && l.death < t) {
          if (l.fast) cur -= m.items[i].size;
          l.alive = l.fast = false;
        }
      }
      // The boundary: victims are the fast, movable objects, coldest first; what the previous
      // interval touched ("hot") only goes when nothing else is left to make a pinned-in budget fit.
      uint32_t nv = 0, np = 0;
      for (uint32_t i = 0; i < m.count; ++i) {
        const Live& l = live[i];
        if (!l.alive || m.items[i].pinned) continue;
        const bool hot = t > 0 && l.last_touch == t;
        if (l.fast) victims[nv++] = i;
        else if (hot && m.items[i].size <= cap[k]) promote[np++] = i;
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
      // Births during the interval: on the fast node when there is room, without demoting.
      for (; next < m.count && m.items[order[next]].start == k; ++next) {
        const uint32_t i = order[next];
        if (m.items[i].pinned) {
          live[i].alive = true;
          live[i].death = t + m.items[i].len - 1;
          continue;
        }
        Live& l = live[i];  // the previous instance was freed at the end of the last interval
        l = Live{};
        l.alive = true;
        l.death = t + m.items[i].len - 1;
        l.fast = m.items[i].size && cur + m.items[i].size <= cap[k];
        if (l.fast) cur += m.items[i].size;
      }
      for (uint32_t i = 0; i < m.count; ++i) {
        if (m.items[i].pinned) continue;
        const Live& l = live[i];
        if (k == 0) masks[i] = 0;
        if (l.alive && l.fast) masks[i] |= bit(k);
        if (l.alive && (m.items[i].touch & bit(k))) live[i].last_touch = t + 1;
      }
    }
    bool same = s > 0;
    for (uint32_t i = 0; i < m.count && same; ++i) same = masks[i] == previous[i];
    if (same) break;
    for (uint32_t i = 0; i < m.count; ++i) previous[i] = masks[i];
  }
  for (uint32_t i = 0; i < m.count; ++i) masks[i] &= m.items[i].alive;
  for (uint32_t k = 0; k < m.n; ++k) cap[k] = m.budget;
  enforce_budget(m, order, cap, masks);
  scratch.rewind(mark);
  return true;
}

}  // namespace sentinel::plan
