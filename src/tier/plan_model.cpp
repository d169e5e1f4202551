// The planner's model of a step and its one evaluator (plan_model.h, docs/planner.md).
#include "tier/plan_model.h"

#include <cmath>

namespace sentinel::plan {

namespace {

struct IdIndex {
  uint32_t id;
  uint32_t index;   // its first item
  uint32_t chunks;  // its items
};

// Position of interval v on an item's timeline (0 = its birth interval).
uint32_t pos_of(const Model& m, const Item& it, uint32_t v) {
  return (v + m.n - it.start) % m.n;
}

uint64_t timeline_mask(const Model& m, const Item& it) {
  uint64_t mask = 0;
  for (uint32_t p = 0; p < it.len; ++p) mask |= bit(m.at(it, p));
  return mask;
}

// The input's own checks, before anything is built; null when it is usable.
const char* input_problem(const PlanInput& in) {
  if (in.intervals == 0) return "no intervals in the step";
  if (in.intervals > kMaxIntervals) return "more than 64 intervals in the step";
  if (in.identity_count && !in.identities) return "identities missing (null with a count)";
  if (in.touch_count && !in.touches) return "touches missing (null with a count)";
  if (in.profiled_steps == 0) return "profiled steps is 0";
  if (in.policy == SENTINEL_POLICY_INTERLEAVE) return "the interleave policy places pages at birth: it has no plan";
  if (in.policy > SENTINEL_POLICY_HOT) return "unknown policy";
  if (in.budget.share_ppm > 1000000) return "budget share above 100%";
  return nullptr;
}

// Item i from identity d: its size and ids, and its timeline (start, len). Null, or what is wrong with d.
const char* make_item(const Model& m, const sentinel_identity& d, Item* it) {
  const uint32_t n = m.n;
  it->size = d.size;
  it->id = d.id;
  it->group = d.group;
  it->ordinal = d.ordinal;
  it->lifetime = d.lifetime;
  it->pinned = (d.flags & SENTINEL_IDENTITY_PINNED) != 0;
  const bool outside = (d.flags & SENTINEL_IDENTITY_OUTSIDE) || d.ordinal == SENTINEL_NO_ORDINAL ||
                       d.birth_interval == SENTINEL_NO_ORDINAL;
  if (outside) {
    it->cyclic = true;
    it->start = 0;
    it->len = n;
    return nullptr;
  }
  if (d.birth_interval >= n) return "identity birth interval out of range";
  it->start = d.birth_interval;
  if (d.death_interval == SENTINEL_NO_ORDINAL) {
    it->len = n;  // outlives its step: alive until the identity is born again
  } else if (d.lifetime == SENTINEL_LIFE_NEXT_STEP) {
    if (d.death_interval >= n) return "identity death interval out of range";
    // Alive to the end of its step and into the next one up to its death there (at most a whole cycle).
    const uint32_t len = n - d.birth_interval + d.death_interval + 1;
    it->len = len < n ? len : n;
  } else {
    if (d.death_interval >= n) return "identity death interval out of range";
    if (d.death_interval < d.birth_interval) return "identity death interval before its birth interval";
    it->len = d.death_interval - d.birth_interval + 1;
  }
  if (d.lifetime == SENTINEL_LIFE_SHORT && it->len != 1) return "short-lived identity spans several intervals";
  return nullptr;
}

// Items of the input: one per identity, or one per chunk of an identity planned in chunks; 0 when an
// identity has too many chunks (the input is refused).
uint64_t item_count(const PlanInput& in) {
  uint64_t c = 0;
  for (uint32_t i = 0; i < in.identity_count; ++i) {
    const uint32_t k = identity_chunks(in.identities[i]);
    if (!k) return 0;
    c += k;
  }
  return c - in.identity_count > kMaxChunks ? 0 : c;  // the chunks of all identities together
}

// The items (and their zeroed touched and weighted bytes, n per item), with `index` sorted by id for the
// touches.
const char* make_items(const PlanInput& in, Model* m, uint64_t* bytes, uint64_t* weight, IdIndex* index) {
  const uint32_t n = m->n;
  uint32_t i = 0;
  for (uint32_t d_i = 0; d_i < in.identity_count; ++d_i) {
    const sentinel_identity& d = in.identities[d_i];
    if (d.phase != in.phase) return "identity of another phase in the input";
    if (d.chunk_bytes && (d.flags & SENTINEL_IDENTITY_PINNED)) return "pinned identity planned in chunks";
    const uint32_t chunks = identity_chunks(d);
    index[d_i] = IdIndex{d.id, i, chunks};
    for (uint32_t c = 0; c < chunks; ++c, ++i) {
      Item& it = m->items[i];
      it = Item{};
      it.bytes = bytes + size_t{i} * n;
      it.weight = weight + size_t{i} * n;
      for (uint32_t k = 0; k < n; ++k) bytes[size_t{i} * n + k] = weight[size_t{i} * n + k] = 0;
      if (const char* why = make_item(*m, d, &it)) return why;
      it.size = chunk_size(d, c);
      it.chunk = c;
      it.chunked = d.chunk_bytes != 0;
    }
  }
  sort_items(index, in.identity_count, [](const IdIndex& a, const IdIndex& b) { return a.id < b.id; });
  for (uint32_t k = 1; k < in.identity_count; ++k)
    if (index[k].id == index[k - 1].id) return "duplicate identity id in the input";
  return nullptr;
}

// A touch's access-weighted bytes: its bytes times its intensity (1 where it has none).
uint64_t weighted_bytes(const sentinel_touch& x) {
  if (x.passes_x256 <= 256) return x.bytes;
  const unsigned __int128 w = static_cast<unsigned __int128>(x.bytes) * x.passes_x256 / 256;
  return w > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(w);
}

// The touches, summed per item and interval; touches of identities not in the input are ignored.
const char* add_touches(const PlanInput& in, Model* m, uint64_t* bytes, uint64_t* weight, const IdIndex* index) {
  const uint32_t n = m->n;
  for (uint64_t t = 0; t < in.touch_count; ++t) {
    const sentinel_touch& x = in.touches[t];
    const uint32_t ids = in.identity_count;
    uint32_t lo = 0, hi = ids;  // first index entry with id >= x.identity
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (index[mid].id < x.identity)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo == ids || index[lo].id != x.identity) continue;  // not of this phase: ignored
    if (x.interval >= n) return "touch interval out of range";
    if (x.chunk >= index[lo].chunks) return "touch chunk out of range";
    const uint32_t item = index[lo].index + x.chunk;
    Item& it = m->items[item];
    uint64_t* b = bytes + size_t{item} * n;
    if (x.bytes == 0) continue;
    b[x.interval] = sat_add(b[x.interval], x.bytes);
    uint64_t* w = weight + size_t{item} * n;
    w[x.interval] = sat_add(w[x.interval], weighted_bytes(x));
    if (x.passes_x256) m->intensity = true;
    it.touch |= bit(x.interval);
    // A touch past the classified death (or before the birth: into the next step) is real: the
    // object was alive then, so its timeline grows to cover it.
    uint32_t p = pos_of(*m, it, x.interval);
    if (!it.cyclic && p >= it.len) it.len = p + 1;
  }
  return nullptr;
}

// The chunks of an identity profiled in a sample (PlanInput::sample) have estimated touched bytes: a
// window of 1/rate of each block, its granules counted rate times. A chunk's estimate is its true
// density plus the sample's noise, so the chunks that look hottest are, on average, less hot than
// they look (regression to the mean), and a plan that picks them predicts more than it gets. Per
// interval, each chunk's density is shrunk toward the identity's mean by the share of the spread
// between chunks that the noise does not explain (an empirical Bayes, James-Stein estimate): the
// noise of a density d read from W granules over S steps is d(1 - d) / (W S), at the identity's mean
// density. The identity's touched bytes stay what they were (the mean is weighted by chunk size).
// Identities of fewer than 4 chunks are left as they are (too few to tell the spread).
//
// At least kMinKeep of each difference is kept. Hashed rows make a table's chunks nearly equally hot, so
// the spread is about the noise and the estimate of the part beyond it is itself noise: at 0 every chunk
// of the table ties and the ranking the sample does give is lost (dlrm l at 20%: 0.521 of the exact
// profile's touched bytes fast, against 0.531 keeping a fifth or all of it), while a fifth of the
// optimism is small (predicted 0.538 for 0.531; unshrunk, 0.613).
constexpr double kMinKeep = 0.2;

void shrink_sampled(const PlanInput& in, Model* m, uint64_t* bytes, uint64_t* weights) {
  const uint32_t n = m->n;
  const double steps = in.profiled_steps;
  uint32_t first = 0;
  for (uint32_t d_i = 0; d_i < in.identity_count; first += identity_chunks(in.identities[d_i]), ++d_i) {
    const sentinel_identity& d = in.identities[d_i];
    const uint32_t chunks = identity_chunks(d);
    if (chunks < 4 || !in.granularity || !in.sample.covers(d.size)) continue;
    // What does not depend on the interval: the chunks' bytes over the profiled steps (the weights of the
    // mean) and a window's granules, on average over the chunks.
    double weight = 0, granules = 0;
    for (uint32_t c = 0; c < chunks; ++c) {
      const double size = static_cast<double>(m->items[first + c].size);
      weight += size * steps;
      granules += size / in.sample.rate / in.granularity;
    }
    granules /= chunks;
    for (uint32_t k = 0; k < n; ++k) {
      double mean = 0;
      for (uint32_t c = 0; c < chunks; ++c) mean += static_cast<double>(bytes[size_t{first + c} * n + k]);
      mean /= weight;
      if (!(mean > 0)) continue;
      double spread = 0;
      for (uint32_t c = 0; c < chunks; ++c) {
        const double size = static_cast<double>(m->items[first + c].size);
        const double density = static_cast<double>(bytes[size_t{first + c} * n + k]) / (size * steps);
        spread += size * steps * (density - mean) * (density - mean);
      }
      spread /= weight;
      const double noise = mean * (1 - (mean < 1 ? mean : 1)) / ((granules > 1 ? granules : 1) * steps);
      const double between = spread > noise ? spread - noise : 0;
      const double keep = spread > 0 ? std::max(between / (between + noise), kMinKeep) : 1;
      for (uint32_t c = 0; c < chunks; ++c) {
        Item& it = m->items[first + c];
        uint64_t& b = bytes[size_t{first + c} * n + k];
        uint64_t& w = weights[size_t{first + c} * n + k];
        const double size = static_cast<double>(it.size) * steps;
        const double density = mean + keep * (static_cast<double>(b) / size - mean);
        const uint64_t shrunk = static_cast<uint64_t>(std::llround(density * size));
        // The chunk's intensity stays what it was measured (none measured: the touched bytes).
        w = b ? static_cast<uint64_t>(
                    std::llround(static_cast<double>(w) * static_cast<double>(shrunk) / static_cast<double>(b)))
              : shrunk;
        b = shrunk;
        if (!b) continue;
        it.touch |= bit(k);
        const uint32_t p = pos_of(*m, it, k);
        if (!it.cyclic && p >= it.len) it.len = p + 1;
      }
    }
  }
}

// What follows from the items: alive masks, touched bytes, the peak footprint and the budget it gives,
// the bandwidth and the interval start offsets of the cost model.
void derive(const PlanInput& in, Model* m) {
  const uint32_t n = m->n;
  uint64_t alive_at[kMaxIntervals] = {};
  for (uint32_t i = 0; i < m->count; ++i) {
    Item& it = m->items[i];
    it.alive = timeline_mask(*m, it);
    for (uint32_t k = 0; k < n; ++k) it.touched = sat_add(it.touched, it.bytes[k]);
    for (uint32_t k = 0; k < n; ++k) it.weighted = sat_add(it.weighted, it.weight[k]);
    m->total_touched = sat_add(m->total_touched, it.touched);
    m->total_weighted = sat_add(m->total_weighted, it.weighted);
    for (uint32_t k = 0; k < n; ++k)
      if (it.alive & bit(k)) alive_at[k] = sat_add(alive_at[k], it.size);
  }
  for (uint32_t k = 0; k < n; ++k)
    m->footprint_peak = alive_at[k] > m->footprint_peak ? alive_at[k] : m->footprint_peak;

  if (in.budget.share_ppm) {
    unsigned __int128 b = static_cast<unsigned __int128>(m->footprint_peak) * in.budget.share_ppm;
    m->budget = static_cast<uint64_t>(b / 1000000u);
  } else {
    m->budget = in.budget.bytes;
  }

  m->bandwidth = in.migrate_bytes_per_s ? in.migrate_bytes_per_s : kDefaultMigrateBytesPerS;
  m->timed = false;
  m->interval_start[0] = 0;
  for (uint32_t k = 0; k < n; ++k) {
    uint64_t d = in.interval_ns ? in.interval_ns[k] : 0;
    m->interval_start[k + 1] = sat_add(m->interval_start[k], d);
  }
  m->timed = m->interval_start[n] > 0 && m->interval_start[n] < UINT64_MAX / 4;
  m->budget_timed = m->timed && (in.flags & SENTINEL_TIER_BUDGET_TIMED);
  m->costs = in.costs;
  m->by_step_time = m->timed && in.costs.slow_ns_per_byte > 0;  // NaN and negative costs: unknown
}

// A cost in ns, rounded to the nearest ns; 0 for an unknown (0, negative or NaN) cost, UINT64_MAX
// past the range.
uint64_t cost_ns(double bytes, double ns_per_byte) {
  if (!(ns_per_byte > 0)) return 0;
  const double ns = bytes * ns_per_byte + 0.5;
  return ns >= 18446744073709551615.0 ? UINT64_MAX : static_cast<uint64_t>(ns);
}

}  // namespace

bool build_model(const PlanInput& in, PlanScratch& scratch, Model* m, const char** error) {
  auto fail = [&](const char* why) {
    *error = why;
    return false;
  };
  if (const char* why = input_problem(in)) return fail(why);
  const uint32_t n = in.intervals;
  m->n = n;
  m->all = n == 64 ? ~uint64_t{0} : bit(n) - 1;
  const uint64_t items = item_count(in);
  if (in.identity_count && (items == 0 || items > UINT32_MAX / 2)) return fail("too many chunks in the input");
  m->count = static_cast<uint32_t>(items);
  m->profiled_steps = in.profiled_steps;
  m->no_moves = in.policy == SENTINEL_POLICY_SENTINEL && (in.flags & SENTINEL_TIER_NO_MOVES);
  m->items = scratch.array<Item>(m->count);
  uint64_t* bytes = scratch.array<uint64_t>(size_t{m->count} * n);
  uint64_t* weight = scratch.array<uint64_t>(size_t{m->count} * n);
  IdIndex* index = scratch.array<IdIndex>(in.identity_count);
  if (!m->items || !bytes || !weight || !index) return fail("planner scratch memory exhausted");
  if (const char* why = make_items(in, m, bytes, weight, index)) return fail(why);
  if (const char* why = add_touches(in, m, bytes, weight, index)) return fail(why);
  shrink_sampled(in, m, bytes, weight);
  derive(in, m);
  return true;
}

StepTime step_time(const Model& m, uint64_t slow_weight, uint64_t moved_bytes) {
  StepTime t;
  if (!m.timed) return t;  // no interval durations: no time base, the model says 0 (unknown)
  // The durations were measured with the step's touched bytes where the fallback placement put
  // them; the model takes them as the step with every touched byte fast and charges the rest.
  t.base = m.interval_start[m.n];
  t.slow = cost_ns(static_cast<double>(slow_weight) / m.profiled_steps, m.costs.slow_ns_per_byte);
  t.move = cost_ns(static_cast<double>(moved_bytes), m.costs.move_ns_per_byte);
  t.total = sat_add(sat_add(t.base, t.slow), t.move);
  return t;
}

void move_edges(const Model& m, const Item& it, uint64_t mask, uint64_t* in, uint64_t* out) {
  *in = *out = 0;
  if (it.cyclic) {
    if (mask == 0 || mask == m.all) return;
    for (uint32_t k = 0; k < m.n; ++k) {
      const bool now = mask & bit(k), before = mask & bit((k + m.n - 1) % m.n);
      if (now && !before) *in |= bit(k);
      if (!now && before) *out |= bit(k);
    }
    return;
  }
  for (uint32_t p = 1; p < it.len; ++p) {  // position 0 is the birth, the end is the free
    const uint32_t k = m.at(it, p);
    const bool now = mask & bit(k), before = mask & bit(m.at(it, p - 1));
    if (now && !before) *in |= bit(k);
    if (!now && before) *out |= bit(k);
  }
}

void occupancy(const Model& m, const uint64_t* masks, uint64_t* occ, const uint8_t* pool) {
  for (uint32_t k = 0; k < m.n; ++k) occ[k] = 0;
  for (uint32_t i = 0; i < m.count; ++i)
    if (!pool || !pool[i])
      for (uint64_t b = masks[i]; b; b &= b - 1) {
        const uint32_t k = static_cast<uint32_t>(__builtin_ctzll(b));
        occ[k] = sat_add(occ[k], m.items[i].size);
      }
}

namespace {

// Move-ins of an item's mask (`in`: its move-in edges) whose residency (the intervals from the move on while the mask
// holds, within its timeline) has a late touched interval. Without durations, lateness is only a residency whose first
// interval is touched: a move issued for the interval that uses it; those bits are added to *late.
uint32_t late_move_ins(const Model& m, const Item& it, uint64_t mask, uint64_t in, uint64_t* late) {
  uint32_t count = 0;
  for (uint64_t b = in; b; b &= b - 1) {
    const uint32_t k = static_cast<uint32_t>(__builtin_ctzll(b));
    if (!m.timed && (it.touch & bit(k))) *late |= bit(k);
    const uint32_t limit = it.cyclic ? m.n : it.len - pos_of(m, it, k);
    uint64_t run = 0;
    for (uint32_t s = 0; s < limit && (mask & bit((k + s) % m.n)); ++s) run |= bit((k + s) % m.n);
    if (run & it.touch & *late) ++count;
  }
  return count;
}

}  // namespace

bool evaluate(const Model& m, const uint64_t* masks, const uint8_t* pool, uint64_t reserved, PlanScratch& scratch,
              Outcome* out, uint64_t* late_out) {
  *out = Outcome{};
  const size_t mark = scratch.used();
  uint64_t* late = scratch.array<uint64_t>(m.count);
  if (!late) return false;
  uint64_t occ[kMaxIntervals];
  occupancy(m, masks, occ, pool);
  for (uint32_t k = 0; k < m.n; ++k) {
    const uint64_t f = sat_add(occ[k], reserved);
    if (f > out->fast_peak) out->fast_peak = f;
  }
  for (uint32_t i = 0; i < m.count; ++i) late[i] = 0;
  if (m.timed && !late_touches(m, masks, scratch, late)) return false;
  for (uint32_t i = 0; i < m.count; ++i) {
    uint64_t in, ou;
    move_edges(m, m.items[i], masks[i], &in, &ou);
    const uint32_t moves = popcount(in) + popcount(ou);
    out->moves += moves;
    out->moved_bytes = sat_add(out->moved_bytes, m.items[i].size * moves);
    out->late += late_move_ins(m, m.items[i], masks[i], in, &late[i]);
  }
  // The complement of the hits: touched while slow or waiting for a move, in access-weighted bytes.
  uint64_t slow_weight = 0;
  for (uint32_t i = 0; i < m.count; ++i) {
    const Item& it = m.items[i];
    const uint64_t hit = it.touch & masks[i] & ~late[i];
    for (uint64_t b = hit; b; b &= b - 1) {
      const uint32_t k = static_cast<uint32_t>(__builtin_ctzll(b));
      out->hit_bytes = sat_add(out->hit_bytes, it.bytes[k]);
      out->hit_weight = sat_add(out->hit_weight, it.weight[k]);
    }
    for (uint64_t b = it.touch & ~hit; b; b &= b - 1) slow_weight = sat_add(slow_weight, it.weight[__builtin_ctzll(b)]);
    if (late_out) late_out[i] = late[i];
  }
  out->step = step_time(m, slow_weight, out->moved_bytes);
  scratch.rewind(mark);
  return true;
}

}  // namespace sentinel::plan
