#include "profile/classify.h"

#include "base/scratch_table.h"
#include "base/vm_region.h"
#include "format/identity_chunks.h"

namespace sentinel {

uint32_t interval_of(const uint32_t* ends, uint32_t intervals, uint32_t ordinal) {
  uint32_t lo = 0, hi = intervals;  // first interval whose end is beyond the ordinal
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (ends[mid] <= ordinal)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < intervals ? lo : intervals - 1;
}

namespace {

struct IdentitySlot {
  uint32_t index_plus_one;
  bool determined;  // an instance's lifetime was seen whole (see ObjectIdentity::undetermined)
};
struct TouchSlot {
  uint32_t index_plus_one;
};
struct GroupSlot {
  uint32_t index_plus_one;
};

template <typename T>
T* map_array(uint64_t n, uint64_t* bytes) {
  uint64_t b = (n ? n : 1) * sizeof(T);
  *bytes += b;
  return static_cast<T*>(vm_map_lazy(b));
}

// The step of a birth/death seq, by binary search over the step bounds; -1 when outside.
int64_t step_of(const ClassifyInput& in, uint64_t seq) {
  if (in.step_bounds < 2 || seq < in.step_starts[0] || seq >= in.step_starts[in.step_bounds - 1]) return -1;
  uint32_t lo = 0, hi = in.step_bounds - 1;
  while (hi - lo > 1) {
    uint32_t mid = (lo + hi) / 2;
    if (in.step_starts[mid] <= seq)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// Alive at some time during the profiled window [start, end).
bool in_window(const sentinel_object* o, uint64_t start, uint64_t end) {
  return o->birth_seq < end && (o->death_seq == UINT64_MAX || o->death_seq > start);
}

// One object's identity: its key and what the identity records of it.
struct ObjectIdentity {
  uint64_t key;
  uint32_t ordinal = SENTINEL_NO_ORDINAL, occurrence = SENTINEL_NO_ORDINAL;
  uint32_t birth_iv = SENTINEL_NO_ORDINAL, death_iv = SENTINEL_NO_ORDINAL, flags = 0;
  uint8_t life = SENTINEL_LIFE_PERSISTENT;
  // Born in the last profiled step and still alive when it ended: whether it dies in the next step or
  // lives on is not known yet. Another instance's class decides; alone, it counts as persistent.
  bool undetermined = false;
};

// Longer-lived ranks higher: instances of one identity that disagree keep the longest-lived class.
int life_rank(uint8_t life) {
  switch (life) {
    case SENTINEL_LIFE_SHORT:
      return 1;
    case SENTINEL_LIFE_STEP:
      return 2;
    case SENTINEL_LIFE_NEXT_STEP:
      return 3;
    case SENTINEL_LIFE_PERSISTENT:
      return 4;
    default:
      return 0;
  }
}

// The interval of an in-step position from the step's start (a death: the allocations made before it).
uint32_t death_interval(const ClassifyInput& in, uint64_t step_start, uint64_t death_seq) {
  uint64_t d = death_seq - step_start;
  return interval_of(in.interval_ends, in.intervals, static_cast<uint32_t>(d ? d - 1 : 0));
}

ObjectIdentity identify(const ClassifyInput& in, uint64_t i, const sentinel_object* o) {
  ObjectIdentity r;
  int64_t k = step_of(in, o->birth_seq);
  const Assignment* a = in.assignments && i < in.assignment_capacity ? &in.assignments[i] : nullptr;
  bool assigned = a && a->ordinal_plus_one && a->occurrence_plus_one;
  if (k >= 0 && (assigned || !in.assignments)) {
    // Position in the step: what the interval of its death is measured on.
    uint32_t position = static_cast<uint32_t>(o->birth_seq - in.step_starts[k]);
    r.ordinal = assigned ? a->ordinal_plus_one - 1 : position;
    r.occurrence = assigned ? a->occurrence_plus_one - 1 : position;
    r.birth_iv = interval_of(in.interval_ends, in.intervals, r.ordinal);
    // An identity is its (site, size, k): the same tensor in every step, whatever the interleaving.
    r.key = combine_key(combine_key(o->site, o->size), r.occurrence);
    const bool dead = o->death_seq != UINT64_MAX;
    if (dead && o->death_seq <= in.step_starts[k + 1]) {
      r.death_iv = death_interval(in, in.step_starts[k], o->death_seq);
      if (r.death_iv < r.birth_iv) r.death_iv = r.birth_iv;  // a reordered stream: never dies before its birth
      r.life = r.death_iv == r.birth_iv ? SENTINEL_LIFE_SHORT : SENTINEL_LIFE_STEP;
    } else if (static_cast<uint64_t>(k) + 2 < in.step_bounds) {
      if (dead && o->death_seq <= in.step_starts[k + 2]) {  // freed in the next step: a step's output
        r.death_iv = death_interval(in, in.step_starts[k + 1], o->death_seq);
        r.life = SENTINEL_LIFE_NEXT_STEP;
      }  // else it outlived the next step too: persistent
    } else {
      r.undetermined = true;  // the window ended in the step after its birth
    }
  } else {
    // Born before the window (weights, optimizer state, data) or in a step but outside its pattern:
    // an identity of its own.
    r.key = combine_key(combine_key(o->site, o->size), o->birth_seq | (uint64_t{1} << 63));
    r.flags |= SENTINEL_IDENTITY_OUTSIDE;
  }
  if (o->kind == SENTINEL_KIND_CUDA_HOST) r.flags |= SENTINEL_IDENTITY_PINNED;
  return r;
}

// A large object born outside the steps (an embedding table, a weight, optimizer state, a framework's pool)
// has hot and cold parts: it is profiled and planned in chunks. Pinned memory is placed once, whole.
bool chunked(const ClassifyInput& in, const sentinel_object* o, const ObjectIdentity& oi) {
  return in.chunk_bytes && (oi.flags & SENTINEL_IDENTITY_OUTSIDE) && !(oi.flags & SENTINEL_IDENTITY_PINNED) &&
         o->size >= kChunkedMinChunks * in.chunk_bytes;
}

// Pass 1: identities of the objects alive during the profiled window; maps *identity_of_log, where
// entry i is object i's identity + 1 (0: none).
bool classify_objects(const ClassifyInput& in, uint32_t** identity_of_log_out, Classification* out) {
  const uint64_t window_start = in.step_starts[in.first_profiled];
  const uint64_t window_end = in.step_starts[in.first_profiled + in.profiled];
  const uint64_t objects = in.log->size();
  uint64_t candidates = 0;
  for (uint64_t i = 0; i < objects; ++i)
    if (in_window(in.log->at(static_cast<uint32_t>(i)), window_start, window_end)) ++candidates;
  ScratchTable<IdentitySlot> ids;
  if (!ids.init(candidates)) return false;
  out->identities = map_array<sentinel_identity>(candidates, &out->bytes);
  auto* identity_of_log = *identity_of_log_out = map_array<uint32_t>(objects, &out->bytes);
  if (!out->identities || !identity_of_log) return false;
  out->identity_objects = map_array<uint32_t>(candidates, &out->bytes);
  if (!out->identity_objects) return false;
  for (uint64_t i = 0; i < objects; ++i) {
    const sentinel_object* o = in.log->at(static_cast<uint32_t>(i));
    if (!in_window(o, window_start, window_end)) continue;
    const ObjectIdentity oi = identify(in, i, o);
    bool added;
    IdentitySlot* slot = ids.find_or_add(oi.key, &added);
    if (!slot) return false;
    if (added) {
      sentinel_identity& id = out->identities[out->identity_count];
      id = sentinel_identity{};
      id.id = in.id_base + out->identity_count;
      id.site = o->site;
      id.size = o->size;
      id.ordinal = oi.ordinal;
      id.occurrence = oi.occurrence;
      id.flags = oi.flags;
      id.phase = in.phase;
      id.birth_interval = oi.birth_iv;
      id.death_interval = oi.death_iv;
      id.lifetime = oi.life;
      id.chunk_bytes = chunked(in, o, oi) ? in.chunk_bytes : 0;
      slot->index_plus_one = ++out->identity_count;
      slot->determined = !oi.undetermined;
    }
    uint32_t index = slot->index_plus_one - 1;
    sentinel_identity& id = out->identities[index];
    ++id.instances;
    // Instances disagree: keep the longest-lived class among those whose lifetime was seen whole.
    if (!oi.undetermined && (!slot->determined || life_rank(oi.life) > life_rank(id.lifetime))) {
      id.lifetime = oi.life;
      id.death_interval = oi.death_iv;
      slot->determined = true;
    }
    out->identity_objects[index] = static_cast<uint32_t>(i);
    identity_of_log[i] = slot->index_plus_one;
  }
  return true;
}

// Per touch entry while classifying: its distinct granules, and what its granules' later passes stand for;
// and when in its interval it was touched: the first pass's start and the last one's end, in first periods
// from the interval's start (first_plus_one 0: none yet).
struct PassCount {
  uint32_t granules;
  uint64_t later;  // per distinct (granule, pass) pair after a granule's first: 2^shift first periods
  uint32_t first_plus_one, last_end;
};

// An entry's access intensity, x 256 (docs/profiling.md, "Passes"): a granule's first pass counts once (a
// burst is one pass at any period), each later one the first periods it stood for.
uint32_t passes_x256(const PassCount& c) {
  if (!c.granules) return 0;
  const uint64_t x = ((c.granules + c.later) * 256 + c.granules / 2) / c.granules;
  return static_cast<uint32_t>(x > UINT32_MAX ? UINT32_MAX : x);
}

// The period's shift in force in a pass: the doublings at or before it, in the window's order.
uint32_t pass_shift_at(const ClassifyInput& in, const TouchRecord& r) {
  const uint32_t pass = touch_pass(r);
  uint32_t shift = 0;
  for (uint32_t k = 0; k < in.pass_shift_count; ++k) {
    const Profiler::PassShift& d = in.pass_shifts[k];
    const bool at_or_before = d.step != r.step           ? d.step < r.step
                              : d.interval != r.interval ? d.interval < r.interval
                                                         : d.pass <= pass;
    if (at_or_before) shift = d.shift;
  }
  return shift;
}

// When a touch's pass began and ended, in first periods from its interval's start: each pass lasts the
// period in force in it (the doublings at or before it, pass_shift_at). A window has at most
// kMaxPassShifts doublings, so this walks at most that many spans.
struct PassTime {
  uint32_t start, end;
};
PassTime pass_time(const ClassifyInput& in, const TouchRecord& r) {
  const uint32_t pass = touch_pass(r);
  TouchRecord at_start = r;
  at_start.flags = 0;  // pass 0 of the same interval: the shift the interval began with
  uint32_t shift = pass_shift_at(in, at_start), from = 0, start = 0;
  for (uint32_t k = 0; k < in.pass_shift_count; ++k) {
    const Profiler::PassShift& d = in.pass_shifts[k];
    if (d.step != r.step || d.interval != r.interval || d.pass == 0 || d.pass > pass) continue;
    start += (d.pass - from) << shift;
    from = d.pass;
    shift = d.shift;
  }
  start += (pass - from) << shift;
  return PassTime{start, start + (uint32_t{1} << shift)};
}

// An entry's first and last pass as shares of its interval's profiled time x 65535 (format 1.14): the
// interval's time runs to the end of the last pass that recorded any touch in it (per profiled step and
// interval: spans[span_slot(step, interval)]).
constexpr uint32_t kSpanIntervals = 64;
constexpr uint32_t kSpanSlots = 256 * kSpanIntervals;  // TouchRecord::step is a u8
uint32_t span_slot(uint32_t step, uint32_t interval) {
  return step * kSpanIntervals + (interval < kSpanIntervals ? interval : kSpanIntervals - 1);
}
void set_touch_times(const PassCount* counts, const uint32_t* spans, Classification* out) {
  for (uint64_t t = 0; t < out->touch_count; ++t) {
    sentinel_touch& st = out->touches[t];
    const PassCount& c = counts[t];
    const uint32_t span = spans[span_slot(st.step, st.interval)];
    if (!c.first_plus_one || !span) continue;
    auto share = [span](uint64_t x) { return static_cast<uint16_t>((x > span ? span : x) * 65535 / span); };
    st.time_begin = share(c.first_plus_one - 1);
    st.time_end = share(c.last_end);
    if (st.time_end <= st.time_begin) st.time_end = static_cast<uint16_t>(st.time_begin + 1);
  }
}

// Pass 2: touches per (identity, chunk, interval, profiled step), each granule counted once (and once
// per pass, for the access intensity).
bool classify_touches(const ClassifyInput& in, const uint32_t* identity_of_log, Classification* out) {
  const uint64_t objects = in.log->size();
  ScratchTable<uint8_t> granules, visits;
  ScratchTable<TouchSlot> agg;
  if (!granules.init(in.touch_count) || !agg.init(in.touch_count)) return false;
  if (in.passes && !visits.init(in.touch_count)) return false;
  out->touches = map_array<sentinel_touch>(in.touch_count, &out->bytes);
  if (!out->touches) return false;
  uint64_t count_bytes = 0;
  auto* counts = in.passes ? map_array<PassCount>(in.touch_count, &count_bytes) : nullptr;
  if (in.passes && !counts) return false;
  uint64_t span_bytes = 0;  // per (profiled step, interval): the end of its last pass that recorded a touch
  auto* spans = in.passes ? map_array<uint32_t>(kSpanSlots, &span_bytes) : nullptr;
  if (in.passes && !spans) return false;
  for (uint64_t t = 0; t < in.touch_count; ++t) {
    const TouchRecord& r = in.touches[t];
    if (r.log_index >= objects || !identity_of_log[r.log_index]) continue;
    uint32_t identity = identity_of_log[r.log_index] - 1;
    bool fresh, fresh_visit = false;
    uint64_t gkey = combine_key(combine_key(r.log_index, r.granule), (uint64_t{r.step} << 16) | r.interval);
    if (!granules.find_or_add(gkey, &fresh)) return false;
    if (in.passes && !visits.find_or_add(combine_key(gkey, touch_pass(r)), &fresh_visit)) return false;
    const sentinel_object* o = in.log->at(r.log_index);
    const uint64_t start = uint64_t{r.granule} * in.granularity;
    const uint32_t chunk_bytes = out->identities[identity].chunk_bytes;
    const uint32_t chunk = chunk_bytes ? static_cast<uint32_t>(start / chunk_bytes) : 0;
    bool added;
    TouchSlot* ts =
        agg.find_or_add(combine_key(combine_key(identity, chunk), (uint64_t{r.step} << 16) | r.interval), &added);
    if (!ts) return false;
    if (added) {
      sentinel_touch& nt = out->touches[out->touch_count];
      nt = sentinel_touch{in.id_base + identity, r.interval, 0, 0, r.step, chunk, 0, 0, 0, 0};
      ts->index_plus_one = static_cast<uint32_t>(++out->touch_count);
    }
    sentinel_touch& st = out->touches[ts->index_plus_one - 1];
    ++st.faults;
    if (counts) {
      PassCount& c = counts[ts->index_plus_one - 1];
      c.granules += fresh;
      if (fresh_visit && !fresh) c.later += uint64_t{1} << pass_shift_at(in, r);
      const PassTime pt = pass_time(in, r);
      if (!c.first_plus_one || pt.start + 1 < c.first_plus_one) c.first_plus_one = pt.start + 1;
      if (pt.end > c.last_end) c.last_end = pt.end;
      uint32_t& span = spans[span_slot(r.step, r.interval)];
      if (pt.end > span) span = pt.end;
    }
    if (fresh && start < o->size) {
      // A sampled granule's weight can overshoot: a touch never counts more than its chunk (or object) holds.
      const uint64_t unit = chunk_size(out->identities[identity], chunk);
      uint64_t bytes = granule_bytes(o->size, r.granule, in.granularity, in.sample);
      if (bytes > unit - st.bytes) bytes = unit - st.bytes;
      st.bytes += bytes;
      out->identities[identity].touched_bytes += bytes;
    }
  }
  if (counts) {
    for (uint64_t t = 0; t < out->touch_count; ++t) out->touches[t].passes_x256 = passes_x256(counts[t]);
    set_touch_times(counts, spans, out);
    vm_unmap(counts, count_bytes);
    vm_unmap(spans, span_bytes);
  }
  return true;
}

// Pass 3: groups of like lifetime and like access pattern (masks[i]: the intervals identity i touched).
bool classify_groups(const ClassifyInput& in, const uint64_t* masks, Classification* out) {
  ScratchTable<GroupSlot> groups;
  if (!groups.init(out->identity_count)) return false;
  out->groups = map_array<sentinel_group>(out->identity_count, &out->bytes);
  if (!out->groups) return false;
  for (uint32_t i = 0; i < out->identity_count; ++i) {
    sentinel_identity& id = out->identities[i];
    bool added;
    GroupSlot* gs = groups.find_or_add(combine_key(id.lifetime, masks[i]), &added);
    if (!gs) return false;
    if (added) {
      sentinel_group& g = out->groups[out->group_count];
      g = sentinel_group{};
      g.id = in.group_base + out->group_count;
      g.lifetime = id.lifetime;
      g.interval_mask = masks[i];
      g.phase = in.phase;
      gs->index_plus_one = ++out->group_count;
    }
    sentinel_group& g = out->groups[gs->index_plus_one - 1];
    ++g.members;
    g.bytes += id.size;
    id.group = g.id;
  }
  return true;
}

}  // namespace

bool classify(const ClassifyInput& in, Classification* out) {
  *out = Classification{};
  if (!in.log || in.step_bounds < 2 || !in.intervals) return false;
  const uint64_t objects = in.log->size();
  uint32_t* identity_of_log = nullptr;  // log index -> identity + 1
  if (!classify_objects(in, &identity_of_log, out)) return false;
  if (!classify_touches(in, identity_of_log, out)) return false;
  auto* masks = map_array<uint64_t>(out->identity_count, &out->bytes);  // sized as unmapped below
  if (!masks) return false;
  for (uint64_t t = 0; t < out->touch_count; ++t) {
    const sentinel_touch& st = out->touches[t];
    masks[st.identity - in.id_base] |= uint64_t{1} << (st.interval < 63 ? st.interval : 63);
  }
  if (!classify_groups(in, masks, out)) return false;
  // The temporaries go; the results stay mapped for the rest of the process (the dump needs them).
  uint64_t mask_bytes = (out->identity_count ? out->identity_count : 1) * sizeof(uint64_t);
  uint64_t index_bytes = (objects ? objects : 1) * sizeof(uint32_t);
  vm_unmap(masks, mask_bytes);
  vm_unmap(identity_of_log, index_bytes);
  out->bytes -= mask_bytes + index_bytes;
  return true;
}

}  // namespace sentinel
