// The sections of sentinel-view's report (tools/report_*.cpp), each writing its part of the page
// from one context. The placement section is report_placement.h.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "analysis.h"
#include "format/format_reader.h"
#include "profile_model.h"
#include "symbolizer.h"
#include "tiering_model.h"

namespace sentinel::view::report {

// What the sections draw from: the dump, its models of the phase drawn, and the page's settings.
struct Ctx {
  const fmt::Profile& p;
  const Analysis& a;
  const StepModel& sm;
  const AccessModel& am;   // of the phase drawn
  const TieringModel& tm;  // with the per-interval figures of that phase
  const std::vector<size_t>& obj_id;
  Symbolizer& sym;
  const std::string& path;     // the dump, as named on the command line
  size_t top;                  // rows of the tables (--top; 0: all)
  uint64_t t0 = 0, t_end = 0;  // the run's time line (monotonic ns), t_end > t0
};

inline bool is_alive(const sentinel_object& ob) {
  return ob.death_seq == UINT64_MAX || ob.death_ns == 0;
}

// Live tracked bytes over the run (#footprint-run), with the steps band and the marks
// (report_footprint.cpp).
void footprint_run(std::ostream& s, const Ctx& c);
// Live tracked bytes over step k on its allocation clock, stacked by lifetime class
// (#footprint-step; report_footprint.cpp).
void footprint_step(std::ostream& s, const Ctx& c, int64_t k);

// The groups/identities switch and the two access heatmaps of the phase (report_heatmap.cpp).
void heatmaps(std::ostream& s, const Ctx& c);

// The lifetimes of the phase's object identities over its step (report_lifetimes.cpp).
void lifetimes_identities(std::ostream& s, const Ctx& c);
// Without identities: the largest objects' lifetimes over the run (report_lifetimes.cpp).
void lifetimes_objects(std::ostream& s, const Ctx& c);

// The detail tables: phases, profiling sessions, groups, identities, sites, lifetimes, sizes,
// counters and configuration (report_tables.cpp).
void tables(std::ostream& s, const Ctx& c);

}  // namespace sentinel::view::report
