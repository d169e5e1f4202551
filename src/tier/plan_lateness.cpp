// The lateness model (plan_model.h, docs/planner.md): the migrator as it runs, step after step, until its
// steady state shows which touched intervals wait for pages still on their way.
#include "tier/plan_model.h"
#include "tier/promotion_order.h"

namespace sentinel::plan {

namespace {

// Steps simulated at most. A schedule the migrator keeps up with repeats after its first step; one it
// cannot keep up with never settles exactly (what is left differs by a few objects and microseconds
// from step to step), but it carries no backlog either, since each pass gives way at the next boundary:
// after a few steps the one judged is like every later one.
constexpr uint32_t kMaxSimulatedSteps = 4;

// One item's live object as the simulated migrator sees it, with what the simulation needs of the item.
struct Object {
  uint64_t ready_ns = 0;  // when its pages were all on the fast node (while fast)
  uint64_t size = 0;
  uint64_t touch = 0;
  uint64_t want = 0;   // the schedule's fast intervals
  uint64_t alive = 0;  // the item's timeline
  uint32_t start = 0;
  bool cyclic = false;
  bool fast = false;
};

uint64_t transfer_ns(const Model& m, uint64_t bytes) {
  unsigned __int128 ns = static_cast<unsigned __int128>(bytes) * 1000000000u + (m.bandwidth - 1);
  ns /= m.bandwidth;
  return ns > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(ns);
}

// The object at the start of the simulation: where the schedule wants it in interval 0, as if every
// earlier move had been on time. Items born in interval 0 are born at the first boundary.
Object initial(const Item& it, uint64_t mask) {
  Object o;
  o.size = it.size;
  o.touch = it.touch;
  o.want = mask;
  o.alive = it.alive;
  o.start = it.start;
  o.cyclic = it.cyclic;
  o.fast = (it.cyclic || it.start != 0) && (it.alive & mask & 1);
  return o;
}

// The boundaries at which an object where the schedule wants it needs the migrator: its births and the
// edges of its mask; with the budget modeled, its deaths too (its fast bytes leave the count).
uint64_t events(const Model& m, const Item& it, uint64_t mask) {
  uint64_t in, out;
  move_edges(m, it, mask, &in, &out);
  const uint64_t e = in | out | (it.cyclic ? 0 : bit(it.start));
  if (!m.budget_timed || it.cyclic || it.len >= m.n) return e;
  return e | bit((it.start + it.len) % m.n);
}

// The fast tier's bytes as the runtime counts them against the budget (Model::budget_timed; otherwise the
// budget is never short): an object's from its birth on the fast node or the start of its promotion, until
// its free or the end of its demotion. The runtime sends a birth the plan has fast to the slow node when
// there is no room, and defers a promotion; the room comes back as demotions end.
struct FastCount {
  uint64_t used = 0;
  uint64_t budget = UINT64_MAX;
  // Demotions under way, in the order they end (the migrator runs one call at a time).
  uint64_t* credit_at = nullptr;
  uint64_t* credit_bytes = nullptr;
  uint32_t credits = 0;

  bool room(uint64_t size) const { return used <= budget && size <= budget - used; }
  void leave_at(uint64_t t, uint64_t size) {
    credit_at[credits] = t;
    credit_bytes[credits++] = size;
  }
  void settle_until(uint64_t t) {
    uint32_t ended = 0;
    while (ended < credits && credit_at[ended] <= t) used -= credit_bytes[ended++];
    if (!ended) return;
    for (uint32_t r = ended; r < credits; ++r) {  // the few still under way, to the front
      credit_at[r - ended] = credit_at[r];
      credit_bytes[r - ended] = credit_bytes[r];
    }
    credits -= ended;
  }
};

struct Simulation {
  const Model& m;
  Object* objects;           // of each item
  const uint32_t* event_at;  // objects with an event at interval v: [event_start[v], event_start[v + 1])
  const uint32_t* event_start;
  uint32_t* unsettled;  // objects the last boundary left unsettled
  uint32_t* visit;      // this boundary's objects
  uint32_t* promote;    // this boundary's promotions
  uint32_t* distance;   // per object, of a promotion
  uint64_t* late;       // per item
  FastCount fast;
  uint32_t unsettled_count = 0;
  uint64_t busy = 0;  // when the move under way ends

  // The objects the boundary at interval v needs: its events and what the last one left unsettled, in
  // the plan's order (the migrator's). Both lists are in that order already: merged, without repeats.
  uint32_t gather(uint32_t v) {
    const uint32_t* e = event_at + event_start[v];
    const uint32_t* e_end = event_at + event_start[v + 1];
    const uint32_t* u = unsettled;
    const uint32_t* u_end = unsettled + unsettled_count;
    uint32_t k = 0;
    while (e != e_end || u != u_end) {
      const bool from_events = u == u_end || (e != e_end && *e <= *u);
      const uint32_t j = from_events ? *e++ : *u++;
      if (k == 0 || visit[k - 1] != j) visit[k++] = j;
    }
    return k;
  }

  // The boundary at the start of interval v (ns `now`; the next one at `until`), over its objects:
  // deaths and births (a birth fast where the schedule wants it and the budget has room by the interval's
  // end); the pass, demotions in plan order then promotions nearest next use first, each object in one
  // call and each promotion where the budget has room as it starts, until the next boundary cuts it short.
  void boundary(uint32_t v, uint64_t now, uint64_t until) {
    const uint32_t k = gather(v);
    uint64_t t = busy > now ? busy : now;
    uint32_t promotions = 0;
    bool cut = false;
    for (uint32_t q = 0; q < k; ++q) {  // deaths, births leave what the last life had; demotions
      Object& o = objects[visit[q]];
      const bool born = !o.cyclic && v == o.start;
      if ((born || !(o.alive & bit(v))) && o.fast) {
        fast.used -= o.size;
        o.fast = false;
      }
      if (born || !(o.alive & bit(v)) || (o.want & bit(v)) || !o.fast || cut) continue;
      if (t >= until) {
        cut = true;
        continue;
      }
      t = sat_add(t, transfer_ns(m, o.size));
      o.fast = false;
      fast.leave_at(t, o.size);
    }
    fast.settle_until(until);
    for (uint32_t q = 0; q < k; ++q) {  // births, and what wants promoting
      Object& o = objects[visit[q]];
      if (!(o.alive & bit(v))) continue;  // dead: nothing to do until its next birth
      const bool want = o.want & bit(v);
      if (!o.cyclic && v == o.start && want && fast.room(o.size)) {
        fast.used += o.size;
        o.fast = true;
        o.ready_ns = now;
      }
      if (want && !o.fast) promote[promotions++] = visit[q];
    }
    if (cut || t >= until) promotions = 0;
    for (uint32_t p = 0; p < promotions; ++p) distance[promote[p]] = promotion_rank(objects[promote[p]].touch, v, m.n);
    sort_items(promote, promotions, [this](uint32_t a, uint32_t b) {
      return distance[a] != distance[b] ? distance[a] < distance[b] : a < b;
    });
    for (uint32_t p = 0; p < promotions && t < until; ++p) {
      Object& o = objects[promote[p]];
      fast.settle_until(t);
      if (!fast.room(o.size)) continue;  // no room now: the next boundary tries again
      fast.used += o.size;
      t = sat_add(t, transfer_ns(m, o.size));
      o.fast = true;
      o.ready_ns = t;
    }
    busy = t;
    judge(v, k, now);
    // What the next boundary must see again: objects alive but not where interval v wants them, or whose
    // pages are still on their way when it begins. Any other waits for its own next event.
    unsettled_count = 0;
    for (uint32_t q = 0; q < k; ++q) {
      const Object& o = objects[visit[q]];
      if (!(o.alive & bit(v))) continue;
      if (o.fast != static_cast<bool>(o.want & bit(v)) || (o.fast && o.ready_ns > until))
        unsettled[unsettled_count++] = visit[q];
    }
  }

  // Interval v's touches of objects the schedule has fast there but whose pages were not all there at its
  // start: late. The objects not visited are where the schedule wants them, pages there.
  void judge(uint32_t v, uint32_t k, uint64_t now) {
    for (uint32_t q = 0; q < k; ++q) {
      const Object& o = objects[visit[q]];
      if ((o.alive & o.want & o.touch & bit(v)) && !(o.fast && o.ready_ns <= now)) late[visit[q]] |= bit(v);
    }
  }

  void step(uint64_t start) {
    for (uint32_t v = 0; v < m.n; ++v) boundary(v, start + m.interval_start[v], start + m.interval_start[v + 1]);
  }
};

}  // namespace

bool late_touches(const Model& m, const uint64_t* masks, PlanScratch& scratch, uint64_t* late) {
  const uint32_t n = m.n;
  Object* objects = scratch.array<Object>(m.count);
  uint32_t* lists = scratch.array<uint32_t>(size_t{m.count} * 4);  // unsettled, visit, promote, distance
  uint32_t* event_start = scratch.array<uint32_t>(n + 1);
  uint8_t* fast_at_start = scratch.array<uint8_t>(m.count);
  uint64_t* event_bits = scratch.array<uint64_t>(m.count);
  uint64_t* credits = scratch.array<uint64_t>(size_t{m.count} * 2);  // demotions under way: when, how much
  if (!objects || !lists || !event_start || !fast_at_start || !event_bits || !credits) return false;
  // The objects, and the events of each interval in the plan's order.
  uint32_t fill[kMaxIntervals] = {};
  FastCount fast{0, m.budget_timed ? m.budget : UINT64_MAX, credits, credits + m.count};
  for (uint32_t i = 0; i < m.count; ++i) {
    objects[i] = initial(m.items[i], masks[i]);
    if (objects[i].fast) fast.used += objects[i].size;
    event_bits[i] = events(m, m.items[i], masks[i]);
    for (uint64_t b = event_bits[i]; b; b &= b - 1) ++fill[__builtin_ctzll(b)];
  }
  event_start[0] = 0;
  for (uint32_t v = 0; v < n; ++v) event_start[v + 1] = event_start[v] + fill[v];
  uint32_t* event_at = scratch.array<uint32_t>(event_start[n]);
  if (!event_at) return false;
  for (uint32_t v = 0; v < n; ++v) fill[v] = event_start[v];
  for (uint32_t i = 0; i < m.count; ++i)
    for (uint64_t b = event_bits[i]; b; b &= b - 1) event_at[fill[__builtin_ctzll(b)]++] = i;

  const size_t c = m.count;
  Simulation sim{m, objects, event_at, event_start, lists, lists + c, lists + 2 * c, lists + 3 * c, late, fast};
  const uint64_t step = m.interval_start[n];
  const uint32_t steps = step > UINT64_MAX / (kMaxSimulatedSteps + 2) ? 1 : kMaxSimulatedSteps;  // no overflow
  uint64_t carried = 0;  // of the move under way at a step's start
  for (uint32_t s = 0; s < steps; ++s) {
    for (uint32_t i = 0; i < m.count; ++i) {
      fast_at_start[i] = objects[i].fast;
      late[i] = 0;  // the step judged is the last one simulated
    }
    sim.step(s * step);
    // Settled when the next step starts as this one did: it would repeat this one.
    const uint64_t next = (s + 1) * step;
    const uint64_t carry = sim.busy > next ? sim.busy - next : 0;
    bool same = carry == carried && sim.unsettled_count == 0;
    for (uint32_t i = 0; same && i < m.count; ++i) same = fast_at_start[i] == objects[i].fast;
    if (same) break;
    carried = carry;
  }
  return true;
}

}  // namespace sentinel::plan
