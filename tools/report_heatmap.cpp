// The report's access heatmaps: bytes touched per co-allocation group (or object identity) and
// interval of the phase's step, with the interval durations above the columns.
#include <algorithm>
#include <string>
#include <vector>

#include "analysis.h"
#include "report_sections.h"
#include "report_svg.h"

namespace sentinel::view::report {

namespace {

struct HeatRow {
  std::string label, tip;
  uint8_t lifetime;
  double bytes;
  std::vector<double> cells;
  uint32_t live_first, live_last;
  uint64_t touched_per_step;
};

void heatmap_svg(std::ostream& s, const Ctx& c, const char* id, const std::vector<HeatRow>& rows,
                 const std::string& what, bool hidden) {
  const uint32_t n = c.am.intervals;
  const double label_w = 300, right_w = 90;
  const double cw = std::clamp(680.0 / std::max<uint32_t>(n, 1), 4.0, 44.0);
  const double rh = rows.size() > 40 ? 12 : 16;
  const bool bars = !c.am.interval_ns.empty();
  const double bar_h = bars ? 36 : 0;
  const double top = 22 + bar_h;
  const double W = std::max(label_w + cw * n + right_w + 10, label_w + 720);
  const double H = top + rh * static_cast<double>(rows.size()) + 50;
  s << "<svg id=\"" << id << "\" class=\"plot heatmap\" viewBox=\"0 0 " << c2(std::max(W, 700.0)) << " " << c2(H)
    << "\" style=\"max-width:" << c2(std::max(W, 700.0)) << "px\"" << (hidden ? " data-initially-hidden=\"1\"" : "")
    << " role=\"img\" aria-label=\"bytes touched per " << what << " and interval\">";
  // Interval durations (COUNTERS) as bars above the columns.
  if (bars) {
    double mx = *std::max_element(c.am.interval_ns.begin(), c.am.interval_ns.end());
    for (uint32_t i = 0; i < n && i < c.am.interval_ns.size(); ++i) {
      double h = mx > 0 ? (bar_h - 8) * c.am.interval_ns[i] / mx : 0;
      s << "<rect class=\"durbar\" x=\"" << c2(label_w + cw * i + 1) << "\" y=\"" << c2(top - 18 - h) << "\" width=\""
        << c2(std::max(1.0, cw - 2)) << "\" height=\"" << c2(h) << "\"><title>interval " << i << ": "
        << html(human_duration(static_cast<uint64_t>(c.am.interval_ns[i]))) << " (mean)</title></rect>";
    }
    s << "<text class=\"tick\" x=\"" << c2(label_w - 6) << "\" y=\"" << c2(top - 20)
      << "\" text-anchor=\"end\">interval time</text>";
  }
  // Column numbers.
  size_t every = cw >= 16 ? 1 : cw >= 8 ? 2 : cw >= 5 ? 5 : 10;
  for (uint32_t i = 0; i < n; i += static_cast<uint32_t>(every))
    s << "<text class=\"tick\" x=\"" << c2(label_w + cw * (i + 0.5)) << "\" y=\"" << c2(top - 5)
      << "\" text-anchor=\"middle\">" << i << "</text>";
  s << "<text class=\"tick\" x=\"" << c2(label_w + cw * n + 8) << "\" y=\"" << c2(top - 5) << "\">touched/step</text>";
  for (size_t r = 0; r < rows.size(); ++r) {
    const HeatRow& row = rows[r];
    double y = top + rh * static_cast<double>(r);
    s << "<g class=\"hrow\"><rect x=\"4\" y=\"" << c2(y + 2) << "\" width=\"6\" height=\"" << c2(rh - 4) << "\" fill=\""
      << life_color(row.lifetime) << "\"/><text class=\"rowlabel\" x=\"14\" y=\"" << c2(y + rh * 0.72) << "\">"
      << html(row.label) << "<title>" << html(row.tip) << "</title></text>";
    for (uint32_t i = 0; i < n; ++i) {
      double v = row.cells[i];
      double frac = row.bytes > 0 ? v / row.bytes : (v > 0 ? 1 : 0);
      bool alive = i >= row.live_first && i <= row.live_last;
      std::string fill = v > 0 ? heat_color(std::max(0.04, frac)) : alive ? "#f1f1f1" : "#ffffff";
      s << "<rect x=\"" << c2(label_w + cw * i) << "\" y=\"" << c2(y) << "\" width=\"" << c2(cw - (cw > 6 ? 1 : 0))
        << "\" height=\"" << c2(rh - 1) << "\" fill=\"" << fill << "\">";
      if (v > 0 || alive)
        s << "<title>" << html(row.label) << ", interval " << i << ": "
          << (v > 0 ? html(human_bytes(static_cast<uint64_t>(v))) + " touched (" + pct(v, row.bytes) + ")"
                    : std::string("alive, not touched"))
          << "</title>";
      s << "</rect>";
    }
    s << "<text class=\"tick\" x=\"" << c2(label_w + cw * n + 8) << "\" y=\"" << c2(y + rh * 0.72) << "\">"
      << html(human_bytes(row.touched_per_step)) << "</text></g>";
  }
  // Legend.
  double ly = top + rh * static_cast<double>(rows.size()) + 18;
  s << "<g class=\"legend\" transform=\"translate(" << c2(label_w) << "," << c2(ly) << ")\">"
    << "<text x=\"0\" y=\"9\">share of the " << what << "'s bytes touched:</text>";
  for (int i = 0; i <= 10; ++i)
    s << "<rect x=\"" << 230 + i * 16 << "\" width=\"16\" height=\"10\" fill=\""
      << (i == 0 ? std::string("#f1f1f1") : heat_color(i / 10.0)) << "\"/>";
  s << "<text x=\"230\" y=\"24\">0</text><text x=\"406\" y=\"24\" text-anchor=\"end\">100%</text>"
    << "<rect x=\"430\" width=\"8\" height=\"10\" fill=\"" << life_color(SENTINEL_LIFE_PERSISTENT)
    << "\"/><text x=\"442\" y=\"9\">persistent</text><rect x=\"520\" width=\"8\" height=\"10\" fill=\""
    << life_color(SENTINEL_LIFE_STEP)
    << "\"/><text x=\"532\" y=\"9\">step-scoped</text><rect x=\"620\" width=\"8\" height=\"10\" fill=\""
    << life_color(SENTINEL_LIFE_SHORT) << "\"/><text x=\"632\" y=\"9\">short-lived</text></g>";
  s << "</svg>\n";
}

}  // namespace

void heatmaps(std::ostream& s, const Ctx& c) {
  const AccessModel& am = c.am;
  const uint32_t n = am.intervals;
  // Groups.
  std::vector<HeatRow> grows;
  size_t untouched = 0, more = 0;
  for (size_t gi : heatmap_group_order(am)) {
    const GroupRow& g = am.groups[gi];
    if (g.cells.empty()) {
      ++untouched;
      continue;
    }
    if (grows.size() >= 80) {
      ++more;
      continue;
    }
    HeatRow r;
    r.label = "group " + std::to_string(g.g.id) + " \u00b7 " + lifetime_short(g.g.lifetime) + " \u00b7 " +
              std::to_string(g.g.members) + (g.g.members == 1 ? " member" : " members") + " \u00b7 " +
              human_bytes(g.g.bytes);
    r.tip = "group " + std::to_string(g.g.id) + ": " + lifetime_name(g.g.lifetime) + ", " +
            std::to_string(g.g.members) + " identities, " + human_bytes(g.g.bytes) + ", intervals " + g.interval_list;
    r.lifetime = g.g.lifetime;
    r.bytes = static_cast<double>(g.g.bytes);
    r.cells.assign(n, 0.0);
    for (const auto& [iv, b] : g.cells) r.cells[iv] = b;
    r.live_first = 0;
    r.live_last = n ? n - 1 : 0;
    r.touched_per_step = g.touched / am.steps_used;
    grows.push_back(std::move(r));
  }
  // Identities: the largest 60, drawn in the order of their birth interval.
  auto by_size = identities_by_size(am);
  std::vector<size_t> pick(by_size.begin(),
                           by_size.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(60, by_size.size())));
  auto birth_key = [&](size_t i) -> int64_t {
    const auto& id = am.identities[i].id;
    if (id.lifetime == SENTINEL_LIFE_PERSISTENT || id.birth_interval == SENTINEL_NO_ORDINAL) return -1;
    return id.birth_interval;
  };
  std::stable_sort(pick.begin(), pick.end(), [&](size_t x, size_t y) { return birth_key(x) < birth_key(y); });
  std::vector<HeatRow> irows;
  for (size_t i : pick) {
    const IdentityRow& ir = am.identities[i];
    const auto& id = ir.id;
    HeatRow r;
    r.label = "id " + std::to_string(id.id) + " \u00b7 " + lifetime_short(id.lifetime) + " \u00b7 " +
              human_bytes(id.size) + " \u00b7 site " +
              (id.site == UINT32_MAX ? std::string("?") : std::to_string(id.site));
    r.tip =
        "identity " + std::to_string(id.id) + ": " + lifetime_name(id.lifetime) + ", " + human_bytes(id.size) +
        ", ordinal " +
        (id.ordinal == SENTINEL_NO_ORDINAL ? std::string("- (born outside the steps)") : std::to_string(id.ordinal)) +
        ", group " + std::to_string(id.group) + ", " + std::to_string(id.instances) + " instances";
    r.lifetime = id.lifetime;
    r.bytes = static_cast<double>(id.size);
    r.cells.assign(n, 0.0);
    for (const auto& [iv, b] : ir.cells) r.cells[iv] = b;
    if (birth_key(i) < 0) {
      r.live_first = 0;
      r.live_last = n ? n - 1 : 0;
    } else {
      r.live_first = std::min(id.birth_interval, n ? n - 1 : 0);
      r.live_last =
          id.death_interval == SENTINEL_NO_ORDINAL ? (n ? n - 1 : 0) : std::min(id.death_interval, n ? n - 1 : 0);
    }
    r.touched_per_step = ir.touched / am.steps_used;
    irows.push_back(std::move(r));
  }
  s << "<div class=\"switch\" role=\"group\"><button type=\"button\" data-show=\"heatmap-groups\" class=\"on\">groups ("
    << grows.size() << ")</button><button type=\"button\" data-show=\"heatmap-identities\">largest identities ("
    << irows.size() << ")</button></div>\n";
  s << "<div class=\"scroll\">";
  heatmap_svg(s, c, "heatmap-groups", grows, "group", false);
  heatmap_svg(s, c, "heatmap-identities", irows, "identity", true);
  s << "</div>";
  s << "<p class=\"note\">Rows: co-allocation groups (like lifetime, like access pattern), persistent first, then by "
       "the "
       "first interval touched; or the 60 largest object identities by birth interval. Columns: the "
    << n << " intervals of the step (phase " << am.phase << "). Cells: bytes touched in the interval, "
    << (am.only_step >= 0 ? std::string("in one profiled step")
                          : "mean over " + std::to_string(am.steps_used) + " profiled steps")
    << ", shaded by the share of the row's own bytes; light grey: alive but not touched.";
  if (untouched) s << " " << untouched << " groups touched in no interval are not drawn.";
  if (more) s << " " << more << " more groups are not drawn.";
  if (am.dropped_touches) s << " " << am.dropped_touches << " touches named an unknown identity or interval.";
  s << "</p>\n";
}

}  // namespace sentinel::view::report
