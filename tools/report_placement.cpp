// The report's placement section (format 1.2): the fast tier's occupancy over the step against the
// budget (MIGRATIONS), and the share of touched bytes found on the fast node per interval (PLACEMENT)
// against the plan's prediction. Static SVG like the rest of the report.
#include "report_placement.h"

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <string>

#include "analysis.h"
#include "report_svg.h"

namespace sentinel::view {

namespace {

using report::html;
using report::num;

constexpr double kW = 1100, kH = 260, kLeft = 70, kRight = 20, kTop = 20, kBottom = 40;

// The x position of interval slot k of n (bars centred in equal slots).
double slot_x(size_t k, size_t n) {
  return kLeft + (kW - kLeft - kRight) * (static_cast<double>(k) + 0.5) / n;
}
double slot_w(size_t n) {
  return (kW - kLeft - kRight) / n * 0.7;
}

void frame(std::ostream& s, const std::string& ylabel, const std::string& xlabel) {
  s << "<line class=\"axis\" x1=\"" << kLeft << "\" y1=\"" << kH - kBottom << "\" x2=\"" << kW - kRight << "\" y2=\""
    << kH - kBottom << "\"/>";
  s << "<line class=\"axis\" x1=\"" << kLeft << "\" y1=\"" << kTop << "\" x2=\"" << kLeft << "\" y2=\"" << kH - kBottom
    << "\"/>";
  s << "<text class=\"axislabel\" x=\"12\" y=\"" << kTop - 6 << "\">" << html(ylabel) << "</text>";
  s << "<text class=\"axislabel\" x=\"" << kW - kRight << "\" y=\"" << kH - 6 << "\" text-anchor=\"end\">"
    << html(xlabel) << "</text>";
}

double y_of(double v, double max) {
  return kH - kBottom - (kH - kTop - kBottom) * (max > 0 ? v / max : 0);
}

void occupancy_plot(std::ostream& s, const TieringModel& t, uint64_t budget) {
  double max = static_cast<double>(budget);
  for (const auto& e : t.intervals) max = std::max(max, static_cast<double>(e.fast_max));
  max *= 1.1;
  if (max <= 0) max = 1;
  const size_t n = t.intervals.size();
  s << "<svg id=\"placement-occupancy\" class=\"plot\" viewBox=\"0 0 " << kW << " " << kH
    << "\" role=\"img\" aria-label=\"fast-tier occupancy per interval against the budget\">";
  frame(s, "fast-tier bytes (tracked objects)", "interval of the step (phase " + std::to_string(t.phase) + ")");
  for (int q = 0; q <= 4; ++q) {
    const double v = max / 1.1 * q / 4, y = y_of(v, max);
    s << "<line class=\"grid\" x1=\"" << kLeft << "\" y1=\"" << num(y) << "\" x2=\"" << kW - kRight << "\" y2=\""
      << num(y) << "\"/><text class=\"tick\" x=\"" << kLeft - 4 << "\" y=\"" << num(y + 3) << "\" text-anchor=\"end\">"
      << html(human_bytes(static_cast<uint64_t>(v))) << "</text>";
  }
  for (size_t k = 0; k < n; ++k) {
    const auto& e = t.intervals[k];
    const double x = slot_x(k, n), w = slot_w(n), y = y_of(static_cast<double>(e.fast_max), max);
    s << "<rect x=\"" << num(x - w / 2) << "\" y=\"" << num(y) << "\" width=\"" << num(w) << "\" height=\""
      << num(kH - kBottom - y) << "\" fill=\"#4e79a7\"><title>interval " << e.interval << ": max "
      << html(human_bytes(e.fast_max)) << ", mean " << html(human_bytes(static_cast<uint64_t>(e.fast_mean)))
      << " on the fast node; " << html(human_bytes(e.to_fast)) << " moved in, " << html(human_bytes(e.to_slow))
      << " out, " << e.late << " late</title></rect>";
    const double ym = y_of(e.fast_mean, max);
    s << "<line x1=\"" << num(x - w / 2) << "\" y1=\"" << num(ym) << "\" x2=\"" << num(x + w / 2) << "\" y2=\""
      << num(ym) << "\" stroke=\"#f28e2b\" stroke-width=\"2\"/>";
    s << "<text class=\"tick\" x=\"" << num(x) << "\" y=\"" << kH - kBottom + 14 << "\" text-anchor=\"middle\">"
      << e.interval << "</text>";
  }
  if (budget) {
    const double y = y_of(static_cast<double>(budget), max);
    s << "<line class=\"mark\" x1=\"" << kLeft << "\" y1=\"" << num(y) << "\" x2=\"" << kW - kRight << "\" y2=\""
      << num(y) << "\"/><text class=\"peaklabel\" x=\"" << kW - kRight - 4 << "\" y=\"" << num(y - 4)
      << "\" text-anchor=\"end\">budget " << html(human_bytes(budget)) << "</text>";
  }
  s << "<g class=\"legend\"><rect x=\"" << kLeft + 10 << "\" y=\"" << kTop
    << "\" width=\"10\" height=\"10\" fill=\"#4e79a7\"/>"
    << "<text x=\"" << kLeft + 24 << "\" y=\"" << kTop + 9 << "\">max over steps</text>"
    << "<rect x=\"" << kLeft + 130 << "\" y=\"" << kTop + 4 << "\" width=\"10\" height=\"2\" fill=\"#f28e2b\"/>"
    << "<text x=\"" << kLeft + 144 << "\" y=\"" << kTop + 9 << "\">mean</text></g>";
  s << "</svg>\n";
}

void hits_plot(std::ostream& s, const TieringModel& t) {
  const size_t n = t.intervals.size();
  s << "<svg id=\"placement-hits\" class=\"plot\" viewBox=\"0 0 " << kW << " " << kH
    << "\" role=\"img\" aria-label=\"share of touched bytes on the fast node per interval\">";
  frame(s, "touched bytes found on the fast node", "interval of the step (phase " + std::to_string(t.phase) + ")");
  for (int q = 0; q <= 4; ++q) {
    const double y = y_of(q / 4.0, 1.0);
    s << "<line class=\"grid\" x1=\"" << kLeft << "\" y1=\"" << num(y) << "\" x2=\"" << kW - kRight << "\" y2=\""
      << num(y) << "\"/><text class=\"tick\" x=\"" << kLeft - 4 << "\" y=\"" << num(y + 3) << "\" text-anchor=\"end\">"
      << q * 25 << "%</text>";
  }
  for (size_t k = 0; k < n; ++k) {
    const auto& e = t.intervals[k];
    const double x = slot_x(k, n), w = slot_w(n);
    s << "<text class=\"tick\" x=\"" << num(x) << "\" y=\"" << kH - kBottom + 14 << "\" text-anchor=\"middle\">"
      << e.interval << "</text>";
    if (!e.placement || !e.touched) continue;
    const double share = static_cast<double>(e.fast) / static_cast<double>(e.touched), y = y_of(share, 1.0);
    s << "<rect x=\"" << num(x - w / 2) << "\" y=\"" << num(y) << "\" width=\"" << num(w) << "\" height=\""
      << num(kH - kBottom - y) << "\" fill=\"#59a14f\"><title>interval " << e.interval << ": " << num(share * 100)
      << "% of " << html(human_bytes(e.touched)) << " touched on the fast node</title></rect>";
  }
  if (auto pr = t.predicted_hit()) {
    const double y = y_of(*pr, 1.0);
    s << "<line class=\"mark\" x1=\"" << kLeft << "\" y1=\"" << num(y) << "\" x2=\"" << kW - kRight << "\" y2=\""
      << num(y) << "\"/><text class=\"peaklabel\" x=\"" << kW - kRight - 4 << "\" y=\"" << num(y - 4)
      << "\" text-anchor=\"end\">predicted " << num(*pr * 100) << "% (whole step)</text>";
  }
  s << "</svg>\n";
}

// One row per interval of the phase: occupancy, moves, and the placement check with its
// boundary verification.
void interval_table(std::ostream& s, const TieringModel& t) {
  s << "<table class=\"data\" id=\"placement-intervals\"><thead><tr><th>interval</th><th>fast max</th><th>fast "
       "mean</th>"
       "<th>steps</th><th>moved in</th><th>moved out</th><th>late</th><th>touched</th><th>on fast</th><th>hit "
       "share</th>"
       "<th>checked steps</th><th>misplaced</th></tr></thead><tbody>";
  for (const auto& e : t.intervals) {
    s << "<tr><td>" << e.interval << "</td>";
    if (e.migrations)
      s << "<td>" << html(human_bytes(e.fast_max)) << "</td><td>"
        << html(human_bytes(static_cast<uint64_t>(e.fast_mean))) << "</td><td>" << e.steps << "</td><td>"
        << html(human_bytes(e.to_fast)) << "</td><td>" << html(human_bytes(e.to_slow)) << "</td><td>" << e.late
        << "</td>";
    else
      s << "<td>&ndash;</td><td>&ndash;</td><td>&ndash;</td><td>&ndash;</td><td>&ndash;</td><td>&ndash;</td>";
    if (e.placement) {
      s << "<td>" << html(human_bytes(e.touched)) << "</td><td>" << html(human_bytes(e.fast)) << "</td><td>";
      if (e.touched)
        s << num(100.0 * static_cast<double>(e.fast) / static_cast<double>(e.touched)) << "%";
      else
        s << "&ndash;";
      s << "</td><td>" << e.checked_steps << "</td><td>";
      if (e.verified)
        s << e.misplaced << " of " << e.verified;
      else
        s << "&ndash;";
      s << "</td>";
    } else {
      s << "<td>&ndash;</td><td>&ndash;</td><td>&ndash;</td><td>&ndash;</td><td>&ndash;</td>";
    }
    s << "</tr>";
  }
  s << "</tbody></table>\n";
}

}  // namespace

void placement_section(std::ostream& s, const TieringModel& t) {
  s << "<h2>Placement</h2>\n";
  if (!t.present) {
    s << "<p class=\"note\">No tiering records in this dump (format 1.2 TIERING, PLAN, MIGRATIONS, PLACEMENT): the run "
         "placed nothing.</p>\n";
    return;
  }
  const uint64_t budget = t.budget();
  const PhaseTiering* ph = t.shown;
  s << "<p class=\"note\">Phase <b>" << t.phase << "</b>: ";
  if (t.plan)
    s << "policy <b>" << policy_name(t.plan->header.policy) << "</b>, ";
  else if (t.tiering)
    s << "no plan (policy " << policy_name(t.tiering->policy) << "), ";
  s << "budget " << html(human_bytes(budget));
  if (ph && ph->migrations)
    s << ", fast tier at most " << html(human_bytes(ph->fast_max)) << ", migrated "
      << html(human_bytes(ph->migrated_bytes)) << ", " << ph->late << " late migrations, " << ph->failed_pages
      << " failed pages";
  s << ".";
  if (auto m = t.measured_hit()) s << " Measured fast-hit share <b>" << num(*m * 100) << "%</b>";
  if (auto pr = t.predicted_hit()) s << (t.measured_hit() ? ", " : " ") << "predicted " << num(*pr * 100) << "%";
  if (t.measured_hit() || t.predicted_hit()) s << ".";
  if (ph && ph->verified)
    s << " Boundary check: <b>" << ph->misplaced << " of " << ph->verified
      << "</b> objects found on the other node than the plan says right after the moves.";
  else if (ph && ph->checked)
    s << " No objects were verified at the boundaries.";
  if (t.plan) {
    const std::string trial = trial_text(*t.plan);
    if (!trial.empty()) s << " Step-time trial: " << html(trial) << ".";
  }
  s << " Whole run: fast-tier peak " << html(human_bytes(t.fast_peak())) << ", migrated "
    << html(human_bytes(t.migrated_bytes)) << ", " << t.late_migrations << " late migrations, " << t.failed_pages
    << " failed pages.</p>\n";
  bool occ = false, hits = false;
  for (const auto& e : t.intervals) {
    occ |= e.migrations;
    hits |= e.placement && e.touched;
  }
  if (occ) {
    occupancy_plot(s, t, budget);
    s << "<p class=\"note\">Fast-tier occupancy of tracked objects at each interval of the step (MIGRATIONS: maximum "
         "and mean over the steps run under the plan), against the phase's budget.</p>\n";
  }
  if (hits) {
    hits_plot(s, t);
    s << "<p class=\"note\">Share of the bytes touched in each interval that were on the fast node at touch time "
         "(PLACEMENT: pages asked of the kernel), against the plan's predicted share for the whole step.</p>\n";
  }
  if (occ || hits) interval_table(s, t);
  if (!occ && !hits)
    s << "<p class=\"note\">No per-interval migration or placement records for phase " << t.phase << ".</p>\n";
  std::string others;
  for (const PhaseTiering& o : t.phases) {
    if (o.phase == t.phase || (!o.plan && !o.checked)) continue;
    others += std::string(others.empty() ? "" : "; ") + "phase " + std::to_string(o.phase) + ": ";
    if (o.plan) others += "budget " + human_bytes(o.plan->header.fast_budget_bytes);
    if (auto m = o.measured_hit()) others += std::string(o.plan ? ", " : "") + "measured " + num(*m * 100) + "%";
    if (auto pr = o.predicted_hit()) others += ", predicted " + num(*pr * 100) + "%";
  }
  if (!others.empty())
    s << "<p class=\"note\">Other phases (sentinel-view report --phase N draws one): " << html(others) << ".</p>\n";
  for (const sentinel_detection* d : t.detection)
    s << "<p class=\"note\">Step detector, "
      << (d->phase ? "phase " + std::to_string(d->phase) : std::string("whole run")) << ": "
      << html(detection_diagnosis(*d)) << ".</p>\n";
}

}  // namespace sentinel::view
