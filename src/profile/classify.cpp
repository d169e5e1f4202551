#include "profile/classify.h"

#include "base/scratch_table.h"
#include "base/vm_region.h"

namespace sentinel {

uint32_t interval_of(const uint32_t* ends, uint32_t intervals, uint32_t ordinal) {
  uint32_t lo = 0, hi = intervals;  // first interval whose end is beyond the ordinal
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (ends[mid] <= ordinal) lo = mid + 1;
    else hi = mid;
  }
  return lo < intervals ? lo : intervals - 1;
}

namespace {

struct IdentitySlot {
  uint32_t index_plus_one;
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
    if (in.step_starts[mid] <= seq) lo = mid;
    else hi = mid;
  }
  return lo;
}

}  // namespace

bool classify(const ClassifyInput& in, Classification* out) {
  *out = Classification{};
  if (!in.log || in.step_bounds < 2 || !in.intervals) return false;
  const uint64_t window_start = in.step_starts[in.first_profiled];
  const uint64_t window_end = in.step_starts[in.first_profiled + in.profiled];
  const uint64_t objects = in.log->size();

  // Pass 1: identities of the objects alive during the profiled window.
  uint64_t candidates = 0;
  for (uint64_t i = 0; i < objects; ++i) {
    const sentinel_object* o = in.log->at(static_cast<uint32_t>(i));
    if (o->birth_seq < window_end && (o->death_seq == UINT64_MAX || o->death_seq > window_start)) ++candidates;
  }
  ScratchTable<IdentitySlot> ids;
  if (!ids.init(candidates)) return false;
  out->identities = map_array<sentinel_identity>(candidates, &out->bytes);
  auto* identity_of_log = map_array<uint32_t>(objects, &out->bytes);  // log index -> identity + 1
  if (!out->identities || !identity_of_log) return false;

  out->identity_objects = map_array<uint32_t>(candidates, &out->bytes);
  if (!out->identity_objects) return false;
  for (uint64_t i = 0; i < objects; ++i) {
    const sentinel_object* o = in.log->at(static_cast<uint32_t>(i));
    if (!(o->birth_seq < window_end && (o->death_seq == UINT64_MAX || o->death_seq > window_start))) continue;
    int64_t k = step_of(in, o->birth_seq);
    uint32_t ordinal = SENTINEL_NO_ORDINAL, occurrence = SENTINEL_NO_ORDINAL;
    uint32_t birth_iv = SENTINEL_NO_ORDINAL, death_iv = SENTINEL_NO_ORDINAL, flags = 0;
    uint8_t life = SENTINEL_LIFE_PERSISTENT;
    uint64_t key;
    const Assignment* a = in.assignments && i < in.assignment_capacity ? &in.assignments[i] : nullptr;
    bool assigned = a && a->ordinal_plus_one && a->occurrence_plus_one;
    if (k >= 0 && (assigned || !in.assignments)) {
      // Position in the step: what the interval of its death is measured on.
      uint32_t position = static_cast<uint32_t>(o->birth_seq - in.step_starts[k]);
      ordinal = assigned ? a->ordinal_plus_one - 1 : position;
      occurrence = assigned ? a->occurrence_plus_one - 1 : position;
      birth_iv = interval_of(in.interval_ends, in.intervals, ordinal);
      // An identity is its (site, size, k): the same tensor in every step, whatever the interleaving.
      key = combine_key(combine_key(o->site, o->size), occurrence);
      if (o->death_seq != UINT64_MAX && o->death_seq <= in.step_starts[k + 1]) {
        uint64_t d = o->death_seq - in.step_starts[k];
        death_iv = interval_of(in.interval_ends, in.intervals, static_cast<uint32_t>(d ? d - 1 : 0));
        if (death_iv < birth_iv) death_iv = birth_iv;  // a reordered stream: never dies before its birth
        life = death_iv == birth_iv ? SENTINEL_LIFE_SHORT : SENTINEL_LIFE_STEP;
      }
    } else {
      // Born before the window (weights, optimizer state, data) or in a step but outside its pattern:
      // an identity of its own.
      key = combine_key(combine_key(o->site, o->size), o->birth_seq | (uint64_t{1} << 63));
      flags |= SENTINEL_IDENTITY_OUTSIDE;
    }
    if (o->kind == SENTINEL_KIND_CUDA_HOST) flags |= SENTINEL_IDENTITY_PINNED;
    bool added;
    IdentitySlot* slot = ids.find_or_add(key, &added);
    if (!slot) return false;
    if (added) {
      sentinel_identity& id = out->identities[out->identity_count];
      id = sentinel_identity{};
      id.id = in.id_base + out->identity_count;
      id.site = o->site;
      id.size = o->size;
      id.ordinal = ordinal;
      id.occurrence = occurrence;
      id.flags = flags;
      id.phase = in.phase;
      id.birth_interval = birth_iv;
      id.death_interval = death_iv;
      id.lifetime = life;
      slot->index_plus_one = ++out->identity_count;
    }
    uint32_t index = slot->index_plus_one - 1;
    sentinel_identity& id = out->identities[index];
    ++id.instances;
    if (life > id.lifetime) {  // instances disagree: keep the longest-lived class
      id.lifetime = life;
      id.death_interval = death_iv;
    }
    out->identity_objects[index] = static_cast<uint32_t>(i);
    identity_of_log[i] = slot->index_plus_one;
  }

  // Pass 2: touches per (identity, interval, profiled step), each granule counted once.
  ScratchTable<uint8_t> granules;
  ScratchTable<TouchSlot> agg;
  if (!granules.init(in.touch_count) || !agg.init(in.touch_count)) return false;
  out->touches = map_array<sentinel_touch>(in.touch_count, &out->bytes);
  if (!out->touches) return false;
  for (uint64_t t = 0; t < in.touch_count; ++t) {
    const TouchRecord& r = in.touches[t];
    if (r.log_index >= objects || !identity_of_log[r.log_index]) continue;
    uint32_t identity = identity_of_log[r.log_index] - 1;
    bool fresh;
    uint64_t gkey = combine_key(combine_key(r.log_index, r.granule), (uint64_t{r.step} << 16) | r.interval);
    if (!granules.find_or_add(gkey, &fresh)) return false;
    const sentinel_object* o = in.log->at(r.log_index);
    uint64_t start = uint64_t{r.granule} * in.granularity;
    uint64_t bytes = start >= o->size ? 0 : (o->size - start < in.granularity ? o->size - start : in.granularity);
    bool added;
    TouchSlot* ts = agg.find_or_add(combine_key(identity, (uint64_t{r.step} << 16) | r.interval), &added);
    if (!ts) return false;
    if (added) {
      sentinel_touch& nt = out->touches[out->touch_count];
      nt = sentinel_touch{in.id_base + identity, r.interval, 0, 0, r.step};
      ts->index_plus_one = static_cast<uint32_t>(++out->touch_count);
    }
    sentinel_touch& st = out->touches[ts->index_plus_one - 1];
    ++st.faults;
    if (fresh) {
      st.bytes += bytes;
      out->identities[identity].touched_bytes += bytes;
    }
  }

  // Pass 3: groups of like lifetime and like access pattern (the set of intervals touched).
  auto* masks = map_array<uint64_t>(out->identity_count, &out->bytes);  // sized as unmapped below
  if (!masks) return false;
  for (uint64_t t = 0; t < out->touch_count; ++t) {
    const sentinel_touch& st = out->touches[t];
    masks[st.identity - in.id_base] |= uint64_t{1} << (st.interval < 63 ? st.interval : 63);
  }
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
  // The temporaries go; the results stay mapped for the rest of the process (the dump needs them).
  uint64_t mask_bytes = (out->identity_count ? out->identity_count : 1) * sizeof(uint64_t);
  uint64_t index_bytes = (objects ? objects : 1) * sizeof(uint32_t);
  vm_unmap(masks, mask_bytes);
  vm_unmap(identity_of_log, index_bytes);
  out->bytes -= mask_bytes + index_bytes;
  return true;
}

}  // namespace sentinel
