// The report's lifetimes plot: the phase's object identities over its step's allocation clock, or,
// in a dump without identities, the largest objects over the run.
#include <algorithm>
#include <string>
#include <vector>

#include "analysis.h"
#include "report_sections.h"
#include "report_svg.h"

namespace sentinel::view::report {

namespace {

constexpr double kRowH = 10, kLeft = 250, kTop = 26;  // the identities plot

// The identities drawn on the step's allocation clock.
struct Lives {
  uint64_t P = 0;                             // the clock: allocations per step
  std::vector<uint64_t> death_ord;            // per identity (UINT64_MAX: none found; UINT64_MAX - 1: never freed)
  std::vector<size_t> inside;                 // identities born in the step drawn, in allocation order
  size_t total_inside = 0;                    // ... of how many born in the step
  uint64_t outside_n = 0, outside_bytes = 0;  // identities born outside the steps
};

// The allocation clock of the step: the period of the profiled phase.
uint64_t step_period(const Ctx& c) {
  const fmt::IntervalTable* table = c.am.table;
  uint64_t P = table ? table->period : 0;
  if (!P)
    for (const auto& ph : c.sm.phases)
      if (ph.phase == c.am.phase) P = ph.period;
  if (!P && table && !table->bounds.empty()) P = table->bounds.back().second;
  return P;
}

// Death ordinals from the objects: the instance born in the representative (first profiled) step,
// else the first instance born in a step of the phase.
std::vector<uint64_t> death_ordinals(const Ctx& c) {
  const auto& p = c.p;
  std::vector<uint64_t> death_ord(c.am.identities.size(), UINT64_MAX);
  std::vector<uint8_t> from_rep(c.am.identities.size(), 0);
  const int64_t rep = representative_step(p, c.am.phase);
  for (size_t i = 0; i < p.objects.size(); ++i) {
    size_t id = c.obj_id[i];
    if (id == SIZE_MAX || from_rep[id]) continue;
    const auto& ob = p.objects[i];
    int64_t k = step_of_seq(p, ob.birth_seq);
    if (k < 0) continue;
    if (death_ord[id] != UINT64_MAX && k != rep) continue;
    uint64_t start = p.steps[static_cast<size_t>(k)].start_seq;
    death_ord[id] = ob.death_seq == UINT64_MAX ? UINT64_MAX - 1 : ob.death_seq - std::min(ob.death_seq, start);
    if (k == rep) from_rep[id] = 1;
  }
  return death_ord;
}

// The identities born in the step (the 120 largest, in allocation order) and those born outside.
Lives identity_lives(const Ctx& c) {
  const AccessModel& am = c.am;
  Lives l;
  l.P = step_period(c);
  l.death_ord = death_ordinals(c);
  for (size_t i = 0; i < am.identities.size(); ++i) {
    if (am.identities[i].id.ordinal == SENTINEL_NO_ORDINAL) {
      ++l.outside_n;
      l.outside_bytes += am.identities[i].id.size;
    } else {
      l.inside.push_back(i);
    }
  }
  for (size_t i : l.inside) l.P = std::max<uint64_t>(l.P, uint64_t{am.identities[i].id.ordinal} + 1);
  if (l.P == 0) l.P = 1;
  const size_t cap = 120;
  std::stable_sort(l.inside.begin(), l.inside.end(),
                   [&](size_t x, size_t y) { return am.identities[x].id.size > am.identities[y].id.size; });
  l.total_inside = l.inside.size();
  if (l.inside.size() > cap) l.inside.resize(cap);
  std::stable_sort(l.inside.begin(), l.inside.end(),
                   [&](size_t x, size_t y) { return am.identities[x].id.ordinal < am.identities[y].id.ordinal; });
  return l;
}

// The bar of identity i: from its birth ordinal to its free (b), or to the step's end when it
// outlives the step (after).
struct Span {
  double a, b;
  bool after;
};

Span span_of(const Ctx& c, const Lives& l, size_t i) {
  const auto& id = c.am.identities[i].id;
  const fmt::IntervalTable* table = c.am.table;
  double a = static_cast<double>(id.ordinal);
  double b;
  bool after = false;
  if (l.death_ord[i] < UINT64_MAX - 1 && l.death_ord[i] <= l.P) {
    b = static_cast<double>(l.death_ord[i]);
  } else if (id.lifetime == SENTINEL_LIFE_PERSISTENT || id.lifetime == SENTINEL_LIFE_NEXT_STEP ||
             id.death_interval == SENTINEL_NO_ORDINAL || l.death_ord[i] != UINT64_MAX) {
    b = static_cast<double>(l.P);
    after = true;
  } else if (table && id.death_interval < table->bounds.size()) {
    b = static_cast<double>(table->bounds[id.death_interval].second);
  } else {
    b = a + 1;
  }
  return {a, std::max(b, a + 0.5), after};
}

// The intervals as alternate bands with their boundaries, numbered on top (at most about 32).
void interval_bands(std::ostream& s, const Frame& f, const fmt::IntervalTable* table, uint64_t P) {
  if (!table) return;
  const size_t n = table->bounds.size();
  const size_t every = n > 32 ? (n + 31) / 32 : 1;
  for (size_t i = 0; i < n; ++i) {
    double x = f.X(std::min<double>(table->bounds[i].first, static_cast<double>(P)));
    double xe = f.X(std::min<double>(table->bounds[i].second, static_cast<double>(P)));
    if (i % 2)
      s << "<rect x=\"" << c2(x) << "\" y=\"" << c2(kTop) << "\" width=\"" << c2(xe - x) << "\" height=\""
        << c2(f.height) << "\" fill=\"#f6f8fa\"/>";
    s << "<line class=\"ivline\" x1=\"" << c2(x) << "\" x2=\"" << c2(x) << "\" y1=\"" << c2(kTop - 4) << "\" y2=\""
      << c2(kTop + f.height) << "\"/>";
    if (i % every == 0)
      s << "<text class=\"ivlabel\" x=\"" << c2((x + xe) / 2) << "\" y=\"" << c2(kTop - 8)
        << "\" text-anchor=\"middle\">" << i << "</text>";
  }
}

// The first row: the identities born outside the steps, alive through the step.
void outside_row(std::ostream& s, const Frame& f, const Lives& l) {
  const double rh = kRowH, y = kTop;
  std::string label = std::to_string(l.outside_n) + " born outside the steps \u00b7 " + human_bytes(l.outside_bytes);
  s << "<g><text class=\"rowlabel small\" x=\"" << c2(kLeft - 8) << "\" y=\"" << c2(y + rh * 0.8)
    << "\" text-anchor=\"end\">" << html(label) << "</text><rect class=\"lbar\" x=\"" << c2(f.X(0)) << "\" y=\""
    << c2(y + 1.5) << "\" width=\"" << c2(f.width) << "\" height=\"" << c2(rh - 3) << "\" fill=\""
    << life_color(SENTINEL_LIFE_PERSISTENT) << "\" opacity=\"0.55\"><title>" << html(label)
    << " (weights, optimizer state...): alive through the step</title></rect>"
    << "<path class=\"arrow\" d=\"M" << c2(f.X(0) - 1) << "," << c2(y + rh / 2) << "l6,-4v8z\"/>"
    << "<path class=\"arrow\" d=\"M" << c2(f.X(static_cast<double>(l.P)) + 1) << "," << c2(y + rh / 2)
    << "l-6,-4v8z\"/></g>";
}

// One identity's bar at height y, with its title; an arrow when it outlives the step.
void identity_row(std::ostream& s, const Frame& f, const sentinel_identity& id, const Span& sp, double y, uint64_t P) {
  const double rh = kRowH;
  const auto [a, b, after] = sp;
  std::string label = "id " + std::to_string(id.id) + " \u00b7 " + human_bytes(id.size) + " \u00b7 site " +
                      (id.site == UINT32_MAX ? std::string("?") : std::to_string(id.site));
  s << "<g><text class=\"rowlabel small\" x=\"" << c2(kLeft - 8) << "\" y=\"" << c2(y + rh * 0.8)
    << "\" text-anchor=\"end\">" << html(label) << "</text><rect class=\"lbar\" x=\"" << c2(f.X(a)) << "\" y=\""
    << c2(y + 1.5) << "\" width=\"" << c2(std::max(1.5, f.X(b) - f.X(a))) << "\" height=\"" << c2(rh - 3)
    << "\" fill=\"" << life_color(id.lifetime) << "\"><title>" << html(label) << ": " << lifetime_name(id.lifetime)
    << ", born at ordinal " << id.ordinal;
  if (id.birth_interval != SENTINEL_NO_ORDINAL) s << " (interval " << id.birth_interval << ")";
  if (after)
    s << ", outlives the step";
  else
    s << ", freed after ordinal " << num(b - 1, 0)
      << (id.death_interval != SENTINEL_NO_ORDINAL ? " (interval " + std::to_string(id.death_interval) + ")"
                                                   : std::string());
  s << "; " << id.instances << " instances, group " << id.group << "</title></rect>";
  if (after)
    s << "<path class=\"arrow\" d=\"M" << c2(f.X(static_cast<double>(P)) + 1) << "," << c2(y + rh / 2)
      << "l-6,-4v8z\"/>";
  s << "</g>";
}

void lifetime_legend(std::ostream& s, double ly) {
  s << "<g class=\"legend\" transform=\"translate(" << c2(kLeft) << "," << c2(ly) << ")\">";
  double lx = 0;
  for (uint8_t l : {uint8_t{SENTINEL_LIFE_PERSISTENT}, uint8_t{SENTINEL_LIFE_NEXT_STEP}, uint8_t{SENTINEL_LIFE_STEP},
                    uint8_t{SENTINEL_LIFE_SHORT}}) {
    s << "<rect x=\"" << c2(lx) << "\" width=\"10\" height=\"10\" fill=\"" << life_color(l) << "\"/><text x=\""
      << c2(lx + 14) << "\" y=\"9\">" << lifetime_name(l) << "</text>";
    lx += 110;
  }
  s << "<text x=\"800\" y=\"9\" text-anchor=\"end\">in-step allocation ordinal; numbers on top: "
       "intervals</text></g></svg>\n";
}

}  // namespace

void lifetimes_identities(std::ostream& s, const Ctx& c) {
  const Lives l = identity_lives(c);
  const uint64_t P = l.P;
  const size_t rows = l.inside.size() + (l.outside_n ? 1 : 0);
  Frame f{kLeft, kTop, 800, kRowH * static_cast<double>(rows), 0, static_cast<double>(P), 0, 1};
  const double H = kTop + f.height + 52;
  s << "<svg id=\"lifetimes\" class=\"plot\" viewBox=\"0 0 1100 " << c2(H)
    << "\" role=\"img\" aria-label=\"object identity lifetimes over the step\">";
  interval_bands(s, f, c.am.table, P);
  size_t r = 0;
  if (l.outside_n) {
    outside_row(s, f, l);
    ++r;
  }
  for (size_t i : l.inside)
    identity_row(s, f, c.am.identities[i].id, span_of(c, l, i), kTop + kRowH * static_cast<double>(r++), P);
  x_ticks(s, f, nice_ticks(static_cast<double>(P), 10), static_cast<double>(P), 15, [](double t) { return num(t, 0); });
  lifetime_legend(s, kTop + f.height + 36);
  s << "<p class=\"note\">Object identities of the profiled phase (" << l.total_inside << " born inside the step"
    << (l.total_inside > l.inside.size() ? ", the " + std::to_string(l.inside.size()) + " largest drawn"
                                         : std::string())
    << "), in allocation order: each bar runs from the allocation that creates the object to its free, on the step's "
       "allocation clock; an arrow: alive past the step's end. Identities born outside the steps share the first "
       "row.</p>\n";
}

void lifetimes_objects(std::ostream& s, const Ctx& c) {
  const auto& p = c.p;
  std::vector<size_t> idx(p.objects.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  const size_t cap = 100;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return p.objects[x].size > p.objects[y].size; });
  if (idx.size() > cap) idx.resize(cap);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](size_t x, size_t y) { return p.objects[x].birth_ns < p.objects[y].birth_ns; });
  const double span = static_cast<double>(c.t_end - c.t0) / 1e9;
  const double rh = 11, top = 14, left = 250;
  Frame f{left, top, 800, rh * static_cast<double>(idx.size()), 0, span > 0 ? span : 1, 0, 1};
  const double H = top + f.height + 60;
  s << "<svg id=\"lifetimes\" class=\"plot\" viewBox=\"0 0 1100 " << c2(H)
    << "\" role=\"img\" aria-label=\"object lifetimes over the run\">";
  for (double t : nice_ticks(f.x1, 8)) {
    if (t > f.x1 * 1.0001) break;
    double x = f.X(t);
    s << "<line class=\"grid\" x1=\"" << c2(x) << "\" x2=\"" << c2(x) << "\" y1=\"" << c2(top) << "\" y2=\""
      << c2(top + f.height) << "\"/><text class=\"tick\" x=\"" << c2(x) << "\" y=\"" << c2(top + f.height + 14)
      << "\" text-anchor=\"middle\">" << html(time_label(t, f.x1)) << "</text>";
  }
  static const char* bucket_color[] = {"#59a14f", "#8cd17d", "#f28e2b", "#e15759", "#4e79a7", "#2f4b7c"};
  for (size_t r = 0; r < idx.size(); ++r) {
    const auto& ob = p.objects[idx[r]];
    const bool alive = is_alive(ob);
    double a = static_cast<double>(ob.birth_ns - std::min(ob.birth_ns, c.t0)) / 1e9;
    double b =
        alive ? f.x1 : static_cast<double>(std::max(ob.death_ns, ob.birth_ns) - std::min(ob.birth_ns, c.t0)) / 1e9;
    uint64_t life = alive ? UINT64_MAX : ob.death_ns - std::min(ob.death_ns, ob.birth_ns);
    int bucket = alive                  ? 5
                 : life < 1'000'000     ? 0
                 : life < 10'000'000    ? 1
                 : life < 100'000'000   ? 2
                 : life < 1'000'000'000 ? 3
                                        : 4;
    double y = top + rh * static_cast<double>(r);
    std::string label =
        human_bytes(ob.size) + " \u00b7 site " + (ob.site == UINT32_MAX ? std::string("?") : std::to_string(ob.site));
    s << "<g><text class=\"rowlabel small\" x=\"" << c2(left - 8) << "\" y=\"" << c2(y + rh * 0.78)
      << "\" text-anchor=\"end\">" << html(label) << "</text><rect class=\"lbar\" x=\"" << c2(f.X(a)) << "\" y=\""
      << c2(y + 1.5) << "\" width=\"" << c2(std::max(1.0, f.X(b) - f.X(a))) << "\" height=\"" << c2(rh - 3)
      << "\" fill=\"" << bucket_color[bucket] << "\"><title>" << html(label) << ", seq " << ob.birth_seq << ": "
      << (alive ? std::string("alive at exit") : "lived " + human_duration(life)) << "</title></rect>";
    if (alive) s << "<path class=\"arrow\" d=\"M" << c2(f.X(f.x1) + 1) << "," << c2(y + rh / 2) << "l-6,-4v8z\"/>";
    s << "</g>";
  }
  double ly = top + f.height + 34;
  s << "<g class=\"legend\" transform=\"translate(" << c2(left) << "," << c2(ly) << ")\">";
  for (int i = 0; i < 6; ++i)
    s << "<rect x=\"" << i * 120 << "\" width=\"10\" height=\"10\" fill=\"" << bucket_color[i] << "\"/><text x=\""
      << i * 120 + 14 << "\" y=\"9\">" << kLifetimeLabels[static_cast<size_t>(i)] << "</text>";
  s << "</g></svg>\n";
  s << "<p class=\"note\">The " << idx.size() << " largest of " << p.objects.size()
    << " tracked objects, ordered by birth, from allocation to free over the run (no object identities in "
       "this dump: profile with SENTINEL_MODE=profile to see them per interval).</p>\n";
}

}  // namespace sentinel::view::report
