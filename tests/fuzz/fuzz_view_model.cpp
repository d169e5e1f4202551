// libFuzzer target over what sentinel-view computes from a parsed dump (tools/analysis.cpp,
// tools/profile_model.cpp, tools/tiering_model.cpp): the reader checks only the framing, so these
// must cope with any values (unknown identities and groups, intervals past the table, duplicate
// ids, absurd periods) without undefined behaviour or memory sized from a value. Checksums are not
// verified, so mutated payloads reach the models.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "analysis.h"
#include "format/format_reader.h"
#include "profile_model.h"
#include "tiering_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sentinel::fmt::ParseOptions opt;
  opt.verify_checksums = false;
  sentinel::fmt::Profile p;
  try {
    p = sentinel::fmt::parse_profile({data, size}, opt);
  } catch (const sentinel::fmt::FormatError&) {
    return 0;
  }
  using namespace sentinel::view;
  Analysis a = analyze(p);
  StepModel sm = model_steps(p);
  if (sm.main_phase >= static_cast<int>(sm.phases.size())) std::abort();
  if (sm.main() && sm.find(sm.main()->phase) != sm.main()) std::abort();
  for (size_t i = 1; i < sm.phases.size(); ++i)
    if (sm.phases[i - 1].phase >= sm.phases[i].phase) std::abort();
  // Every phase the views can be asked for (at most a few, the main one first), and one the dump
  // does not have.
  std::vector<uint32_t> shown{sm.main_number()};
  for (size_t i = 0; i < sm.phases.size() && shown.size() < 4; ++i) shown.push_back(sm.phases[i].phase);
  shown.push_back(sm.phases.empty() ? 7 : sm.phases.back().phase + 1);
  for (uint32_t phase : shown) {
    int64_t rep = representative_step(p, phase);
    if (rep >= static_cast<int64_t>(p.steps.size())) std::abort();
    if (rep >= 0 && p.steps[static_cast<size_t>(rep)].phase != phase) std::abort();
    for (int64_t only : {int64_t{-1}, int64_t{0}}) {
      AccessModel am = model_access(p, phase, only);
      for (const auto& r : am.identities)
        if (r.id.phase != phase) std::abort();
      for (const auto& g : am.groups)
        if (g.g.phase != phase) std::abort();
      for (const auto& g : am.groups)
        for (const auto& [iv, b] : g.cells)
          if (iv >= am.intervals || !(b >= 0)) std::abort();
      for (const auto& r : am.identities)
        for (const auto& [iv, b] : r.cells)
          if (iv >= am.intervals || !(b >= 0)) std::abort();
      if (heatmap_group_order(am).size() != am.groups.size()) std::abort();
      if (identities_by_size(am).size() != am.identities.size()) std::abort();
      (void)identities_by_touches(am);
      auto ids = object_identities(p, am);
      for (size_t i : ids)
        if (i != SIZE_MAX && i >= am.identities.size()) std::abort();
    }
    TieringModel tm = model_tiering(p, phase);
    for (const auto& e : tm.intervals)
      if (e.fast > e.touched) std::abort();
    for (const auto& ph : tm.phases)
      if (auto m = ph.measured_hit(); m && !(*m >= 0 && *m <= 1)) std::abort();
    if (auto m = tm.measured_hit(); m && !(*m >= 0 && *m <= 1)) std::abort();
    if (tm.shown && tm.shown->phase != phase) std::abort();
    std::ostringstream sink;
    print_tiering_text(sink, tm);
    print_tiering_json(sink, tm);
    for (const auto& ph : tm.phases) {
      print_phase_tiering_json(sink, &ph);
      sink << placement_text(ph);
    }
    print_phase_tiering_json(sink, nullptr);
  }
  SeqClock clock(p);
  for (size_t k = 0; k < p.steps.size() && k < 64; ++k) {
    auto [a0, a1] = step_span(p, clock, k, 1000);
    if (a1 < a0) std::abort();
    (void)step_of_seq(p, p.steps[k].start_seq);
  }
  (void)a;
  return 0;
}
