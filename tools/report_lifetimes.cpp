// The report's lifetimes plot: the phase's object identities over its step's allocation clock, or,
// in a dump without identities, the largest objects over the run.
#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "analysis.h"
#include "report_sections.h"
#include "report_svg.h"

namespace sentinel::view::report {

void lifetimes_identities(std::ostream& s, const Ctx& c) {
  const auto& p = c.p;
  const AccessModel& am = c.am;
  const fmt::IntervalTable* table = am.table;
  // The allocation clock of the step: the period of the profiled phase.
  uint64_t P = table ? table->period : 0;
  if (!P)
    for (const auto& ph : c.sm.phases)
      if (ph.phase == am.phase) P = ph.period;
  if (!P && table && !table->bounds.empty()) P = table->bounds.back().second;
  // Death ordinals from the objects: the instance born in the representative (first profiled) step,
  // else the first instance born in a step of the phase.
  std::vector<uint64_t> death_ord(am.identities.size(), UINT64_MAX);
  std::vector<uint8_t> from_rep(am.identities.size(), 0);
  const int64_t rep = representative_step(p, am.phase);
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
  std::vector<size_t> inside;
  uint64_t outside_n = 0, outside_bytes = 0;
  for (size_t i = 0; i < am.identities.size(); ++i) {
    if (am.identities[i].id.ordinal == SENTINEL_NO_ORDINAL) {
      ++outside_n;
      outside_bytes += am.identities[i].id.size;
    } else {
      inside.push_back(i);
    }
  }
  for (size_t i : inside) P = std::max<uint64_t>(P, uint64_t{am.identities[i].id.ordinal} + 1);
  if (P == 0) P = 1;
  const size_t cap = 120;
  std::stable_sort(inside.begin(), inside.end(), [&](size_t x, size_t y) {
    return am.identities[x].id.size > am.identities[y].id.size;
  });
  const size_t total_inside = inside.size();
  if (inside.size() > cap) inside.resize(cap);
  std::stable_sort(inside.begin(), inside.end(), [&](size_t x, size_t y) {
    return am.identities[x].id.ordinal < am.identities[y].id.ordinal;
  });
  auto span = [&](size_t i) {
    const auto& id = am.identities[i].id;
    double a = static_cast<double>(id.ordinal);
    double b;
    bool after = false;
    if (death_ord[i] < UINT64_MAX - 1 && death_ord[i] <= P) {
      b = static_cast<double>(death_ord[i]);
    } else if (id.lifetime == SENTINEL_LIFE_PERSISTENT || id.death_interval == SENTINEL_NO_ORDINAL ||
               death_ord[i] != UINT64_MAX) {
      b = static_cast<double>(P);
      after = true;
    } else if (table && id.death_interval < table->bounds.size()) {
      b = static_cast<double>(table->bounds[id.death_interval].second);
    } else {
      b = a + 1;
    }
    return std::make_tuple(a, std::max(b, a + 0.5), after);
  };
  const double rh = 10, left = 250, top = 26;
  const size_t rows = inside.size() + (outside_n ? 1 : 0);
  Frame f{left, top, 800, rh * static_cast<double>(rows), 0, static_cast<double>(P), 0, 1};
  const double H = top + f.height + 52;
  s << "<svg id=\"lifetimes\" class=\"plot\" viewBox=\"0 0 1100 " << c2(H)
    << "\" role=\"img\" aria-label=\"object identity lifetimes over the step\">";
  if (table) {
    const size_t n = table->bounds.size();
    const size_t every = n > 32 ? (n + 31) / 32 : 1;
    for (size_t i = 0; i < n; ++i) {
      double x = f.X(std::min<double>(table->bounds[i].first, static_cast<double>(P)));
      double xe = f.X(std::min<double>(table->bounds[i].second, static_cast<double>(P)));
      if (i % 2) s << "<rect x=\"" << c2(x) << "\" y=\"" << c2(top) << "\" width=\"" << c2(xe - x) << "\" height=\"" << c2(f.height) << "\" fill=\"#f6f8fa\"/>";
      s << "<line class=\"ivline\" x1=\"" << c2(x) << "\" x2=\"" << c2(x) << "\" y1=\"" << c2(top - 4) << "\" y2=\"" << c2(top + f.height) << "\"/>";
      if (i % every == 0)
        s << "<text class=\"ivlabel\" x=\"" << c2((x + xe) / 2) << "\" y=\"" << c2(top - 8) << "\" text-anchor=\"middle\">" << i << "</text>";
    }
  }
  size_t r = 0;
  if (outside_n) {
    double y = top;
    std::string label = std::to_string(outside_n) + " born outside the steps \u00b7 " + human_bytes(outside_bytes);
    s << "<g><text class=\"rowlabel small\" x=\"" << c2(left - 8) << "\" y=\"" << c2(y + rh * 0.8) << "\" text-anchor=\"end\">"
      << html(label) << "</text><rect class=\"lbar\" x=\"" << c2(f.X(0)) << "\" y=\"" << c2(y + 1.5) << "\" width=\"" << c2(f.width)
      << "\" height=\"" << c2(rh - 3) << "\" fill=\"" << life_color(SENTINEL_LIFE_PERSISTENT) << "\" opacity=\"0.55\"><title>"
      << html(label) << " (weights, optimizer state...): alive through the step</title></rect>"
      << "<path class=\"arrow\" d=\"M" << c2(f.X(0) - 1) << "," << c2(y + rh / 2) << "l6,-4v8z\"/>"
      << "<path class=\"arrow\" d=\"M" << c2(f.X(static_cast<double>(P)) + 1) << "," << c2(y + rh / 2) << "l-6,-4v8z\"/></g>";
    ++r;
  }
  for (size_t i : inside) {
    const auto& id = am.identities[i].id;
    auto [a, b, after] = span(i);
    double y = top + rh * static_cast<double>(r++);
    std::string label = "id " + std::to_string(id.id) + " \u00b7 " + human_bytes(id.size) + " \u00b7 site " +
                        (id.site == UINT32_MAX ? std::string("?") : std::to_string(id.site));
    s << "<g><text class=\"rowlabel small\" x=\"" << c2(left - 8) << "\" y=\"" << c2(y + rh * 0.8)
      << "\" text-anchor=\"end\">" << html(label) << "</text><rect class=\"lbar\" x=\"" << c2(f.X(a)) << "\" y=\""
      << c2(y + 1.5) << "\" width=\"" << c2(std::max(1.5, f.X(b) - f.X(a))) << "\" height=\"" << c2(rh - 3) << "\" fill=\""
      << life_color(id.lifetime) << "\"><title>" << html(label) << ": " << lifetime_name(id.lifetime) << ", born at ordinal "
      << id.ordinal;
    if (id.birth_interval != SENTINEL_NO_ORDINAL) s << " (interval " << id.birth_interval << ")";
    if (after)
      s << ", outlives the step";
    else
      s << ", freed after ordinal " << num(b - 1, 0)
        << (id.death_interval != SENTINEL_NO_ORDINAL ? " (interval " + std::to_string(id.death_interval) + ")" : std::string());
    s << "; " << id.instances << " instances, group " << id.group << "</title></rect>";
    if (after) s << "<path class=\"arrow\" d=\"M" << c2(f.X(static_cast<double>(P)) + 1) << "," << c2(y + rh / 2) << "l-6,-4v8z\"/>";
    s << "</g>";
  }
  for (double t : nice_ticks(static_cast<double>(P), 10)) {
    if (t > static_cast<double>(P)) break;
    double x = f.X(t);
    s << "<line class=\"tickline\" x1=\"" << c2(x) << "\" x2=\"" << c2(x) << "\" y1=\"" << c2(top + f.height) << "\" y2=\""
      << c2(top + f.height + 4) << "\"/><text class=\"tick\" x=\"" << c2(x) << "\" y=\"" << c2(top + f.height + 15)
      << "\" text-anchor=\"middle\">" << num(t, 0) << "</text>";
  }
  double ly = top + f.height + 36;
  s << "<g class=\"legend\" transform=\"translate(" << c2(left) << "," << c2(ly) << ")\">";
  double lx = 0;
  for (uint8_t l : {uint8_t{SENTINEL_LIFE_PERSISTENT}, uint8_t{SENTINEL_LIFE_STEP}, uint8_t{SENTINEL_LIFE_SHORT}}) {
    s << "<rect x=\"" << c2(lx) << "\" width=\"10\" height=\"10\" fill=\"" << life_color(l) << "\"/><text x=\"" << c2(lx + 14)
      << "\" y=\"9\">" << lifetime_name(l) << "</text>";
    lx += 110;
  }
  s << "<text x=\"800\" y=\"9\" text-anchor=\"end\">in-step allocation ordinal; numbers on top: intervals</text></g></svg>\n";
  s << "<p class=\"note\">Object identities of the profiled phase (" << total_inside << " born inside the step"
    << (total_inside > inside.size() ? ", the " + std::to_string(inside.size()) + " largest drawn" : std::string())
    << "), in allocation order: each bar runs from the allocation that creates the object to its free, on the step's "
       "allocation clock; an arrow: alive past the step's end. Identities born outside the steps share the first row.</p>\n";
}

void lifetimes_objects(std::ostream& s, const Ctx& c) {
  const auto& p = c.p;
  std::vector<size_t> idx(p.objects.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  const size_t cap = 100;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return p.objects[x].size > p.objects[y].size; });
  if (idx.size() > cap) idx.resize(cap);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return p.objects[x].birth_ns < p.objects[y].birth_ns; });
  const double span = static_cast<double>(c.t_end - c.t0) / 1e9;
  const double rh = 11, top = 14, left = 250;
  Frame f{left, top, 800, rh * static_cast<double>(idx.size()), 0, span > 0 ? span : 1, 0, 1};
  const double H = top + f.height + 60;
  s << "<svg id=\"lifetimes\" class=\"plot\" viewBox=\"0 0 1100 " << c2(H)
    << "\" role=\"img\" aria-label=\"object lifetimes over the run\">";
  for (double t : nice_ticks(f.x1, 8)) {
    if (t > f.x1 * 1.0001) break;
    double x = f.X(t);
    s << "<line class=\"grid\" x1=\"" << c2(x) << "\" x2=\"" << c2(x) << "\" y1=\"" << c2(top) << "\" y2=\"" << c2(top + f.height)
      << "\"/><text class=\"tick\" x=\"" << c2(x) << "\" y=\"" << c2(top + f.height + 14) << "\" text-anchor=\"middle\">"
      << html(time_label(t, f.x1)) << "</text>";
  }
  static const char* bucket_color[] = {"#59a14f", "#8cd17d", "#f28e2b", "#e15759", "#4e79a7", "#2f4b7c"};
  for (size_t r = 0; r < idx.size(); ++r) {
    const auto& ob = p.objects[idx[r]];
    const bool alive = is_alive(ob);
    double a = static_cast<double>(ob.birth_ns - std::min(ob.birth_ns, c.t0)) / 1e9;
    double b = alive ? f.x1 : static_cast<double>(std::max(ob.death_ns, ob.birth_ns) - std::min(ob.birth_ns, c.t0)) / 1e9;
    uint64_t life = alive ? UINT64_MAX : ob.death_ns - std::min(ob.death_ns, ob.birth_ns);
    int bucket = alive ? 5 : life < 1'000'000 ? 0 : life < 10'000'000 ? 1 : life < 100'000'000 ? 2 : life < 1'000'000'000 ? 3 : 4;
    double y = top + rh * static_cast<double>(r);
    std::string label = human_bytes(ob.size) + " \u00b7 site " + (ob.site == UINT32_MAX ? std::string("?") : std::to_string(ob.site));
    s << "<g><text class=\"rowlabel small\" x=\"" << c2(left - 8) << "\" y=\"" << c2(y + rh * 0.78) << "\" text-anchor=\"end\">"
      << html(label) << "</text><rect class=\"lbar\" x=\"" << c2(f.X(a)) << "\" y=\"" << c2(y + 1.5) << "\" width=\""
      << c2(std::max(1.0, f.X(b) - f.X(a))) << "\" height=\"" << c2(rh - 3) << "\" fill=\"" << bucket_color[bucket]
      << "\"><title>" << html(label) << ", seq " << ob.birth_seq << ": "
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
