// libFuzzer target over what sentinel-view computes from a parsed dump (tools/analysis.cpp,
// tools/profile_model.cpp, tools/tiering_model.cpp): the reader checks only the framing, so these
// must cope with any values (unknown identities and groups, intervals past the table, duplicate
// ids, absurd periods) without undefined behaviour or memory sized from a value. Checksums are not
// verified, so mutated payloads reach the models.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "analysis.h"
#include "format_reader.h"
#include "profile_model.h"
#include "tiering_model.h"
#include <sstream>

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
  int64_t rep = representative_step(p, sm);
  if (rep >= static_cast<int64_t>(p.steps.size())) std::abort();
  for (int64_t only : {int64_t{-1}, int64_t{0}}) {
    AccessModel am = model_access(p, sm, only);
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
  SeqClock clock(p);
  for (size_t k = 0; k < p.steps.size() && k < 64; ++k) {
    auto [a0, a1] = step_span(p, clock, k, 1000);
    if (a1 < a0) std::abort();
    (void)step_of_seq(p, p.steps[k].start_seq);
  }
  TieringModel tm = model_tiering(p);
  for (const auto& e : tm.intervals)
    if (e.fast > e.touched) std::abort();
  if (auto m = tm.measured_hit(); m && !(*m >= 0 && *m <= 1)) std::abort();
  std::ostringstream sink;
  print_tiering_text(sink, tm);
  print_tiering_json(sink, tm);
  (void)a;
  return 0;
}
