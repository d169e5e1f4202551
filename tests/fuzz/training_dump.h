// Synthetic 1.1 dumps of a "training loop" whose every number is known: persistent weights allocated
// before the first step, then phases of identical steps (a fixed pattern of allocations with known
// frees), a profiled window, and a declared access pattern (which object touches how much of itself in
// which interval). From that spec it derives, following docs/format.md (not the runtime's code), the
// objects, STEPS, INTERVALS, PROFILE, IDENTITIES, TOUCHES, GROUPS and COUNTERS, and writes them with
// DumpBuilder. Tests compare sentinel-view's output with what the spec implies.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "dump_builder.h"

namespace sentinel::testing {

inline constexpr uint32_t kNeverFreed = UINT32_MAX;

struct LoopAlloc {
  uint32_t site;
  uint64_t size;
  // The object is freed after `free_at` allocations of its own step have been made (death_seq =
  // step start + free_at); free_at > the period means it is freed in a later step; kNeverFreed: alive
  // at exit.
  uint32_t free_at;
};

struct LoopPhase {
  std::vector<LoopAlloc> pattern;  // one step's tracked allocations, in order (period = size)
  uint32_t steps = 0;
  std::vector<std::pair<uint32_t, uint32_t>> intervals;  // [first, end) ordinals; empty: no record
  uint64_t step_ns = 10'000'000;                         // wall time of one step
};

// Share of an object touched in an interval, in every profiled step.
struct LoopTouch {
  int32_t weight;   // index into LoopSpec::weights, or -1
  int32_t ordinal;  // in-step ordinal in the profiled phase's pattern, or -1
  uint32_t interval;
  double fraction;  // 0..1 of the object's size (rounded up to whole granules)
};

struct LoopDump;

struct LoopSpec {
  uint32_t pid = 4343;
  std::string executable = "/usr/bin/python3.11";
  std::vector<std::string> argv = {"python3", "train.py"};
  std::vector<std::pair<uint32_t, uint64_t>> weights;  // (site, size), allocated before the steps
  std::vector<LoopPhase> phases;
  std::vector<TestSite> sites;
  // The profiled window: `profiled` steps from step `first_profiled` of phase `profiled_phase`.
  bool profile = true;
  uint32_t profiled_phase = 0;
  uint32_t first_profiled = 1;
  uint32_t profiled = 2;
  uint32_t granularity = 65536;
  std::vector<LoopTouch> touches;
  std::vector<std::string> counter_names;
  uint32_t inferred_steps = 2;  // the first steps of the run carry SENTINEL_STEP_INFERRED
  uint64_t start_ns = 1'000'000'000;
  uint64_t startup_ns = 50'000'000;  // process start to the first step
  uint64_t tail_ns = 20'000'000;     // last step to exit
  uint32_t object_batch = 0;         // objects per OBJECTS record (0: one record)
  // Format 1.2: identities with occurrence and flags, groups with their phase, PHASE_COUNTERS
  // instead of COUNTERS. `extra` appends records (TIERING, PLAN, ...) before END.
  bool format_12 = false;
  std::function<void(DumpBuilder&, const LoopDump&)> extra;
};

struct LoopDump {
  std::vector<uint8_t> bytes;
  std::vector<sentinel_object> objects;
  std::vector<sentinel_step_entry> steps;
  std::vector<sentinel_identity> identities;
  std::vector<sentinel_touch> touches;
  std::vector<sentinel_group> groups;
  std::vector<DumpBuilder::CounterEntry> counters;
  uint64_t faults = 0;
  uint64_t first_profiled_step = 0;  // global step index
};

inline uint32_t loop_interval_of(const std::vector<std::pair<uint32_t, uint32_t>>& iv, uint32_t ord) {
  for (uint32_t i = 0; i < iv.size(); ++i)
    if (ord >= iv[i].first && ord < iv[i].second) return i;
  return iv.empty() ? 0 : static_cast<uint32_t>(iv.size() - 1);
}

inline LoopDump make_loop_dump(const LoopSpec& spec) {
  LoopDump out;
  const uint64_t alive = UINT64_MAX;
  struct Pending {
    size_t object;
    uint64_t death_seq;
  };
  std::vector<Pending> frees;
  std::vector<uint64_t> time_of_seq;  // birth_ns of every tracked allocation
  uint64_t seq = 0;
  uint64_t t = spec.start_ns + spec.startup_ns / 5;
  for (size_t w = 0; w < spec.weights.size(); ++w) {  // weights: spread over the start-up
    uint64_t bt = t + w * (spec.startup_ns / 2) / std::max<size_t>(1, spec.weights.size());
    out.objects.push_back(
        make_object(0x7f1000000000ull + (seq << 24), spec.weights[w].second, bt, 0, seq, alive, spec.weights[w].first));
    time_of_seq.push_back(bt);
    ++seq;
  }
  t = spec.start_ns + spec.startup_ns;
  std::vector<std::vector<size_t>> step_first_object;  // per phase, per step: index of ordinal 0
  uint64_t global_step = 0;
  for (size_t ph = 0; ph < spec.phases.size(); ++ph) {
    const LoopPhase& P = spec.phases[ph];
    const uint32_t period = static_cast<uint32_t>(P.pattern.size());
    step_first_object.emplace_back();
    for (uint32_t k = 0; k < P.steps; ++k, ++global_step) {
      sentinel_step_entry s{};
      s.start_seq = seq;
      s.start_ns = t;
      s.allocations = period;
      s.phase = static_cast<uint32_t>(ph);
      if (k == 0) s.flags |= SENTINEL_STEP_NEW_PHASE;
      if (global_step < spec.inferred_steps) s.flags |= SENTINEL_STEP_INFERRED;
      if (spec.profile && ph == spec.profiled_phase && k >= spec.first_profiled &&
          k < spec.first_profiled + spec.profiled)
        s.flags |= SENTINEL_STEP_PROFILED;
      if (spec.profile && ph == spec.profiled_phase && k == spec.first_profiled) out.first_profiled_step = global_step;
      out.steps.push_back(s);
      step_first_object.back().push_back(out.objects.size());
      for (uint32_t j = 0; j < period; ++j) {
        const LoopAlloc& a = P.pattern[j];
        uint64_t bt = t + (P.step_ns * j) / std::max<uint32_t>(1, period);
        size_t idx = out.objects.size();
        out.objects.push_back(make_object(0x7f2000000000ull + (seq << 24), a.size, bt, 0, seq, alive, a.site,
                                          1000 + (j % 3 == 2 ? 1 : 0)));
        time_of_seq.push_back(bt);
        if (a.free_at != kNeverFreed) frees.push_back({idx, s.start_seq + a.free_at});
        ++seq;
      }
      t += P.step_ns;
    }
  }
  const uint64_t total = seq;
  const uint64_t end_ns = t + spec.tail_ns;
  for (const Pending& f : frees) {
    if (f.death_seq > total) continue;  // freed "after the end": alive at exit
    sentinel_object& o = out.objects[f.object];
    o.death_seq = f.death_seq;
    uint64_t before = time_of_seq[f.death_seq - 1];
    uint64_t after = f.death_seq < total ? time_of_seq[f.death_seq] : t;
    o.death_ns = before + (after - before) / 2;
    if (o.death_ns <= o.birth_ns) o.death_ns = o.birth_ns + 1;
  }

  DumpBuilder d;
  d.process(spec.pid, 1, -1, spec.start_ns, end_ns, spec.executable, spec.argv);
  d.config(
      {"SENTINEL_MODE=profile", "SENTINEL_MIN_BYTES=65536", "SENTINEL_PROFILE_STEPS=" + std::to_string(spec.profiled)});
  if (!spec.sites.empty()) d.sites(spec.sites);
  if (spec.object_batch == 0) {
    d.objects(out.objects);
  } else {
    for (size_t i = 0; i < out.objects.size(); i += spec.object_batch)
      d.objects(std::vector<sentinel_object>(
          out.objects.begin() + static_cast<std::ptrdiff_t>(i),
          out.objects.begin() + static_cast<std::ptrdiff_t>(std::min(out.objects.size(), i + spec.object_batch))));
  }
  d.stats({{"tracked_allocations", out.objects.size()}});
  d.steps(out.steps);
  for (size_t ph = 0; ph < spec.phases.size(); ++ph)
    if (!spec.phases[ph].intervals.empty())
      d.intervals(static_cast<uint32_t>(ph), static_cast<uint32_t>(spec.phases[ph].pattern.size()),
                  spec.phases[ph].intervals);

  if (spec.profile && spec.profiled_phase < spec.phases.size()) {
    const LoopPhase& P = spec.phases[spec.profiled_phase];
    const auto& firsts = step_first_object[spec.profiled_phase];
    // Step bounds of the profiled phase (start seqs, plus the end of its last step).
    std::vector<uint64_t> bounds;
    for (size_t k = 0; k < firsts.size(); ++k) bounds.push_back(out.objects[firsts[k]].birth_seq);
    if (!bounds.empty()) bounds.push_back(bounds.back() + P.pattern.size());
    const uint64_t wstart = bounds[spec.first_profiled];
    const uint64_t wend = bounds[spec.first_profiled + spec.profiled];
    std::map<std::tuple<uint32_t, uint64_t, uint32_t>, uint32_t> by_key;
    std::vector<uint32_t> identity_of(out.objects.size(), UINT32_MAX);
    for (size_t i = 0; i < out.objects.size(); ++i) {
      const sentinel_object& o = out.objects[i];
      if (!(o.birth_seq < wend && (o.death_seq == alive || o.death_seq > wstart))) continue;
      int64_t k = -1;
      for (size_t b = 0; b + 1 < bounds.size(); ++b)
        if (o.birth_seq >= bounds[b] && o.birth_seq < bounds[b + 1]) k = static_cast<int64_t>(b);
      sentinel_identity id{};
      id.site = o.site;
      id.size = o.size;
      id.phase = spec.profiled_phase;
      id.ordinal = id.birth_interval = id.death_interval = SENTINEL_NO_ORDINAL;
      id.lifetime = SENTINEL_LIFE_PERSISTENT;
      uint32_t* slot = nullptr;
      if (k >= 0) {
        id.ordinal = static_cast<uint32_t>(o.birth_seq - bounds[k]);
        id.birth_interval = loop_interval_of(P.intervals, id.ordinal);
        if (o.death_seq != alive && o.death_seq <= bounds[k + 1]) {
          uint64_t dd = o.death_seq - bounds[k];
          id.death_interval = loop_interval_of(P.intervals, static_cast<uint32_t>(dd ? dd - 1 : 0));
          id.lifetime = id.death_interval == id.birth_interval ? SENTINEL_LIFE_SHORT : SENTINEL_LIFE_STEP;
        }
        auto [it, fresh] =
            by_key.emplace(std::make_tuple(o.site, o.size, id.ordinal), static_cast<uint32_t>(out.identities.size()));
        slot = &it->second;
        if (!fresh) {
          identity_of[i] = *slot;
          ++out.identities[*slot].instances;
          continue;
        }
      }
      id.id = static_cast<uint32_t>(out.identities.size());
      id.instances = 1;
      identity_of[i] = id.id;
      out.identities.push_back(id);
    }
    // Touches, per profiled step.
    std::map<std::tuple<uint32_t, uint32_t, uint32_t>, size_t> touch_at;  // (identity, step, iv)
    for (uint32_t s = 0; s < spec.profiled; ++s) {
      for (const LoopTouch& lt : spec.touches) {
        size_t obj;
        if (lt.weight >= 0)
          obj = static_cast<size_t>(lt.weight);
        else
          obj = firsts[spec.first_profiled + s] + static_cast<size_t>(lt.ordinal);
        uint32_t ident = identity_of[obj];
        if (ident == UINT32_MAX) continue;
        const uint64_t size = out.objects[obj].size;
        const uint64_t g = spec.granularity;
        uint64_t want = static_cast<uint64_t>(std::ceil(lt.fraction * static_cast<double>(size)));
        uint64_t granules = (want + g - 1) / g;
        uint64_t bytes = std::min(size, granules * g);
        auto [it, fresh] = touch_at.emplace(std::make_tuple(ident, s, lt.interval), out.touches.size());
        if (fresh) out.touches.push_back(sentinel_touch{ident, lt.interval, 0, 0, s, 0, 0, 0, 0, 0});
        sentinel_touch& st = out.touches[it->second];
        st.bytes += bytes;
        st.faults += static_cast<uint32_t>(granules);
        out.identities[ident].touched_bytes += bytes;
        out.faults += granules;
      }
    }
    // Groups: like lifetime and like set of intervals touched, numbered in identity order.
    std::vector<uint64_t> mask(out.identities.size(), 0);
    for (const auto& st : out.touches) mask[st.identity] |= uint64_t{1} << std::min<uint32_t>(st.interval, 63);
    std::map<std::pair<uint8_t, uint64_t>, uint32_t> gkey;
    for (auto& id : out.identities) {
      auto [it, fresh] =
          gkey.emplace(std::make_pair(id.lifetime, mask[id.id]), static_cast<uint32_t>(out.groups.size()));
      if (fresh) {
        sentinel_group g{};
        g.id = it->second;
        g.lifetime = id.lifetime;
        g.interval_mask = mask[id.id];
        out.groups.push_back(g);
      }
      sentinel_group& g = out.groups[it->second];
      ++g.members;
      g.bytes += id.size;
      id.group = g.id;
    }
    // Counters: one entry per profiled step and interval.
    const uint32_t period = static_cast<uint32_t>(P.pattern.size());
    for (uint32_t s = 0; s < spec.profiled; ++s) {
      for (uint32_t i = 0; i < P.intervals.size(); ++i) {
        uint64_t len = P.intervals[i].second - P.intervals[i].first;
        DumpBuilder::CounterEntry e{s, i, P.step_ns * len / std::max<uint32_t>(1, period), {}};
        for (size_t c = 0; c < spec.counter_names.size(); ++c) e.values.push_back(e.duration_ns * (c + 2));
        out.counters.push_back(e);
      }
    }
    if (spec.format_12) {  // the 1.2 fields: occurrence of (site, size) in the step, flags, phase
      std::map<std::pair<uint32_t, uint64_t>, uint32_t> seen;
      std::vector<size_t> order(out.identities.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::sort(order.begin(), order.end(),
                [&](size_t a, size_t b) { return out.identities[a].ordinal < out.identities[b].ordinal; });
      for (size_t i : order) {
        sentinel_identity& id = out.identities[i];
        if (id.ordinal == SENTINEL_NO_ORDINAL) {
          id.occurrence = SENTINEL_NO_ORDINAL;
          id.flags = SENTINEL_IDENTITY_OUTSIDE;
        } else {
          id.occurrence = seen[{id.site, id.size}]++;
        }
      }
      for (auto& g : out.groups) g.phase = spec.profiled_phase;
    }
    d.profile(spec.granularity, spec.profiled, spec.profiled_phase, out.first_profiled_step, out.faults,
              out.faults * 3500, 0, spec.counter_names);
    d.identities(out.identities, spec.format_12 ? 64 : 56, spec.format_12);
    d.touches(out.touches);
    d.groups(out.groups, spec.format_12 ? 40 : 32, spec.format_12);
    if (!out.counters.empty()) {
      if (spec.format_12)
        d.phase_counters(spec.profiled_phase, static_cast<uint32_t>(spec.counter_names.size()), out.counters);
      else
        d.counters(static_cast<uint32_t>(spec.counter_names.size()), out.counters);
    }
  }
  if (spec.extra) spec.extra(d, out);
  d.end();
  out.bytes = d.bytes();
  return out;
}

// The small loop the tests check number by number (docs in tools/tests/test_tools.py):
//   3 weights (4 MiB, 1 MiB, 2 MiB), then phase 0: 12 steps of 6 allocations cut into 3 intervals
//   [0,2) [2,4) [4,6); phase 1: 3 steps of 4 allocations, 2 intervals. Steps 1 and 2 of phase 0 are
//   profiled at 64 KiB.
inline LoopSpec small_loop_spec() {
  LoopSpec s;
  s.weights = {{1, 4ull << 20}, {1, 1ull << 20}, {2, 2ull << 20}};
  LoopPhase train;
  train.pattern = {
      {3, 1ull << 20, 5},    // 0 activation: intervals 0..2, step-scoped
      {4, 256ull << 10, 2},  // 1 temporary: born and freed in interval 0, short-lived
      {3, 2ull << 20, 6},    // 2 activation: intervals 1..2, step-scoped
      {5, 512ull << 10, 6},  // 3 gradient: intervals 1..2, step-scoped
      {4, 256ull << 10, 5},  // 4 temporary: interval 2, short-lived
      {6, 64ull << 10, 8},   // 5 state: freed in the next step, persistent
  };
  train.steps = 12;
  train.intervals = {{0, 2}, {2, 4}, {4, 6}};
  train.step_ns = 12'000'000;
  LoopPhase eval;
  eval.pattern = {{7, 1ull << 20, 2}, {7, 1ull << 20, 3}, {8, 128ull << 10, 4}, {8, 128ull << 10, 4}};
  eval.steps = 3;
  eval.intervals = {{0, 2}, {2, 4}};
  eval.step_ns = 5'000'000;
  s.phases = {train, eval};
  s.sites = {{1, 0x11, {0x1001}}, {2, 0x22, {0x1002}}, {3, 0x33, {0x1003}}, {4, 0x44, {0x1004}},
             {5, 0x55, {0x1005}}, {6, 0x66, {0x1006}}, {7, 0x77, {0x1007}}, {8, 0x88, {0x1008}}};
  s.first_profiled = 1;
  s.profiled = 2;
  s.granularity = 65536;
  s.touches = {
      {0, -1, 0, 1.0},  {0, -1, 2, 1.0},                     // weight 0: intervals 0 and 2, fully
      {1, -1, 1, 0.5},                                       // weight 1: half of it in interval 1
      {2, -1, 0, 0.25}, {2, -1, 1, 0.25}, {2, -1, 2, 0.25},  // weight 2: a quarter in each
      {-1, 0, 0, 1.0},  {-1, 0, 2, 1.0},                     // activation 0
      {-1, 1, 0, 1.0},                                       // temporary 1
      {-1, 2, 1, 1.0},  {-1, 2, 2, 0.5},                     // activation 2
      {-1, 3, 1, 1.0},  {-1, 3, 2, 1.0},                     // gradient 3
      {-1, 4, 2, 1.0},                                       // temporary 4
      {-1, 5, 2, 1.0},                                       // state 5
  };
  s.counter_names = {"PAPI_TOT_INS", "PAPI_L3_TCM"};
  return s;
}

// A transformer-like loop for looking at the viewer's output (report, heatmap, trace): 6 layers with
// four weight matrices each, embedding and head, Adam state, 24 training steps of 61 allocations cut
// into 13 intervals (6 forward layers, the loss, 6 backward layers; the optimizer step falls in the
// last one), then 4 evaluation steps of 18 allocations.
inline LoopSpec demo_loop_spec() {
  LoopSpec s;
  s.pid = 31337;
  s.argv = {"python3", "train_transformer.py", "--layers", "6", "--steps", "24"};
  const uint32_t L = 6;
  const uint64_t MiB = 1ull << 20, KiB = 1ull << 10;
  const uint64_t layer_w[4] = {2304 * KiB, 768 * KiB, 3 * MiB, 3 * MiB};  // qkv, proj, ff1, ff2
  // weights: 0 embedding, 1 head, then 4 per layer; then two Adam moments for each.
  std::vector<std::pair<uint32_t, uint64_t>> w = {{10, 24 * MiB}, {15, 24 * MiB}};
  for (uint32_t l = 0; l < L; ++l)
    for (uint32_t k = 0; k < 4; ++k) w.push_back({11 + k, layer_w[k]});
  const size_t nw = w.size();
  for (int m = 0; m < 2; ++m)
    for (size_t i = 0; i < nw; ++i) w.push_back({static_cast<uint32_t>(20 + m), w[i].second});
  s.weights = w;

  LoopPhase train;
  const uint32_t fwd = 5 * L, loss = fwd, bwd0 = fwd + 1, P = bwd0 + 5 * L;  // P = 61
  auto bwd_of = [&](uint32_t l) { return bwd0 + 5 * (L - 1 - l); };          // first ordinal
  for (uint32_t l = 0; l < L; ++l) {
    uint32_t b = bwd_of(l);
    train.pattern.push_back({30, 1536 * KiB, b + 3});   // qkv activation, freed in its backward
    train.pattern.push_back({31, 4 * MiB, 5 * l + 2});  // attention scores, short-lived
    train.pattern.push_back({32, 512 * KiB, b + 3});    // attention output
    train.pattern.push_back({33, 2 * MiB, b + 2});      // feed-forward hidden
    train.pattern.push_back({34, 512 * KiB, b + 4});    // layer output
  }
  train.pattern.push_back({35, 64 * KiB, P});  // loss
  for (uint32_t i = 0; i < L; ++i) {
    uint32_t l = L - 1 - i;
    train.pattern.push_back({40, 2 * MiB, bwd_of(l) + 2});  // gradient of the hidden activation
    for (uint32_t k = 0; k < 4; ++k)
      train.pattern.push_back({41, layer_w[k], P + 2});  // weight gradients, freed by zero_grad
  }
  (void)loss;
  train.steps = 24;
  for (uint32_t l = 0; l < L; ++l) train.intervals.push_back({5 * l, 5 * l + 5});
  train.intervals.push_back({fwd, fwd + 1});
  for (uint32_t i = 0; i < L; ++i) train.intervals.push_back({bwd0 + 5 * i, bwd0 + 5 * i + 5});
  train.step_ns = 80'000'000;

  LoopPhase eval;
  for (uint32_t l = 0; l < L; ++l) {
    eval.pattern.push_back({50, 1536 * KiB, 3 * l + 2});
    eval.pattern.push_back({51, 4 * MiB, 3 * l + 2});
    eval.pattern.push_back({52, 512 * KiB, 3 * l + 4 < 18 ? 3 * l + 4 : 18});
  }
  eval.steps = 4;
  for (uint32_t l = 0; l < L; ++l) eval.intervals.push_back({3 * l, 3 * l + 3});
  eval.step_ns = 30'000'000;
  s.phases = {train, eval};

  for (uint32_t id : {10u, 11u, 12u, 13u, 14u, 15u, 20u, 21u, 30u, 31u, 32u, 33u, 34u, 35u, 40u, 41u, 50u, 51u, 52u})
    s.sites.push_back({id, 0x1000u + id, {0x7f5500001000ull + id * 0x40, 0x7f5500100000ull + id}});
  s.first_profiled = 1;
  s.profiled = 2;
  s.granularity = 65536;
  auto weight = [&](uint32_t l, uint32_t k) { return static_cast<int32_t>(2 + 4 * l + k); };
  const uint32_t opt_iv = 2 * L;  // the last interval: the last backward layer and the optimizer
  for (uint32_t l = 0; l < L; ++l) {
    const uint32_t fi = l, bi = L + 1 + (L - 1 - l);
    for (uint32_t k = 0; k < 4; ++k) {
      s.touches.push_back({weight(l, k), -1, fi, 1.0});
      s.touches.push_back({weight(l, k), -1, bi, 1.0});
    }
    for (uint32_t k = 0; k < 5; ++k) {
      int32_t ord = static_cast<int32_t>(5 * l + k);
      s.touches.push_back({-1, ord, fi, 1.0});
      if (k != 1) s.touches.push_back({-1, ord, bi, k == 4 ? 0.5 : 1.0});
    }
    int32_t b = static_cast<int32_t>(bwd_of(l));
    s.touches.push_back({-1, b, bi, 1.0});
    for (int32_t k = 1; k <= 4; ++k) {
      s.touches.push_back({-1, b + k, bi, 1.0});
      s.touches.push_back({-1, b + k, opt_iv, 1.0});
    }
  }
  s.touches.push_back({0, -1, 0, 0.12});     // embedding rows of the batch
  s.touches.push_back({1, -1, L - 1, 1.0});  // head (the optimizer's touches follow)
  s.touches.push_back({1, -1, L, 1.0});
  s.touches.push_back({-1, static_cast<int32_t>(fwd), L, 1.0});  // the loss
  for (size_t i = 0; i < nw; ++i) {                              // the optimizer: every weight and both moments
    s.touches.push_back({static_cast<int32_t>(i), -1, opt_iv, i == 0 ? 0.12 : 1.0});
    s.touches.push_back({static_cast<int32_t>(nw + i), -1, opt_iv, i == 0 ? 0.12 : 1.0});
    s.touches.push_back({static_cast<int32_t>(2 * nw + i), -1, opt_iv, i == 0 ? 0.12 : 1.0});
  }
  s.object_batch = 500;
  s.startup_ns = 1'500'000'000;
  s.tail_ns = 200'000'000;
  return s;
}

}  // namespace sentinel::testing
