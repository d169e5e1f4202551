// The report's footprint plots: live tracked bytes over the run, with the steps band and the
// sentinel_step() marks, and over one step on its allocation clock, stacked by lifetime class.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "analysis.h"
#include "json.h"
#include "report_sections.h"
#include "report_svg.h"

namespace sentinel::view::report {

namespace {

// The line of a plot's x axis, at y = 0.
void x_axis_line(std::ostream& s, const Frame& f) {
  s << "<line class=\"axis\" x1=\"" << c2(f.left) << "\" x2=\"" << c2(f.left + f.width) << "\" y1=\"" << c2(f.Y(0))
    << "\" y2=\"" << c2(f.Y(0)) << "\"/>";
}

// ---- over the run ----

// Live-byte events: births add, deaths subtract.
struct LiveEvent {
  uint64_t ns;
  int64_t delta;
};

constexpr size_t kRunBuckets = 1000;

// The live tracked bytes over the run in kRunBuckets equal slices of the time line: each bucket holds
// the highest live value reached in it; empty buckets carry the level on. `max_live`: the highest.
std::vector<double> live_peaks(const Ctx& c, double& max_live) {
  const auto& p = c.p;
  std::vector<LiveEvent> ev;
  ev.reserve(p.objects.size() * 2);
  for (const auto& ob : p.objects) {
    int64_t sz = static_cast<int64_t>(std::min<uint64_t>(ob.size, INT64_MAX / 4));
    ev.push_back({ob.birth_ns, sz});
    if (!is_alive(ob)) ev.push_back({std::max(ob.death_ns, ob.birth_ns), -sz});
  }
  std::sort(ev.begin(), ev.end(),
            [](const LiveEvent& x, const LiveEvent& y) { return x.ns != y.ns ? x.ns < y.ns : x.delta < y.delta; });
  const double span = static_cast<double>(c.t_end - c.t0);
  const size_t buckets = kRunBuckets;
  std::vector<double> peak(buckets, 0);
  std::vector<uint8_t> seen(buckets, 0);
  double live = 0;
  max_live = 0;
  auto bucket = [&](uint64_t ns) {
    if (span <= 0) return size_t{0};
    double f = static_cast<double>(ns > c.t0 ? ns - c.t0 : 0) / span;
    return std::min(buckets - 1, static_cast<size_t>(f * static_cast<double>(buckets)));
  };
  std::vector<double> level_after(buckets, -1);
  for (const auto& e : ev) {
    live += static_cast<double>(e.delta);
    if (live < 0) live = 0;
    size_t b = bucket(e.ns);
    peak[b] = std::max(peak[b], live);
    seen[b] = 1;
    level_after[b] = live;
    max_live = std::max(max_live, live);
  }
  double carry = 0;
  for (size_t b = 0; b < buckets; ++b) {
    if (seen[b]) {
      peak[b] = std::max(peak[b], carry);
      carry = level_after[b];
    } else {
      peak[b] = carry;
    }
  }
  return peak;
}

// Steps band: one rect per step (merged when there are many), profiled steps highlighted.
void steps_band(std::ostream& s, const Ctx& c, const Frame& f, double band_y) {
  const auto& p = c.p;
  s << "<text class=\"axislabel\" x=\"" << c2(f.left - 6) << "\" y=\"" << c2(band_y + 9)
    << "\" text-anchor=\"end\">steps</text>";
  size_t k = 0;
  const size_t n = p.steps.size();
  const bool merge = n > 1500;
  SeqClock clock(p);
  while (k < n) {
    size_t j = k + 1;
    const auto& s0 = p.steps[k];
    if (merge)
      while (j < n && p.steps[j].phase == s0.phase && ((p.steps[j].flags ^ s0.flags) & SENTINEL_STEP_PROFILED) == 0)
        ++j;
    uint64_t a = step_span(p, clock, k, c.t_end).first;
    uint64_t b = std::max(a, step_span(p, clock, j - 1, c.t_end).second);
    double x0 = f.X(static_cast<double>(a - std::min(a, c.t0)) / 1e9);
    double x1 = std::min(f.X(static_cast<double>(b - std::min(b, c.t0)) / 1e9), f.left + f.width);
    bool prof = s0.flags & SENTINEL_STEP_PROFILED;
    const char* fill = prof ? "#e15759" : (s0.phase % 2 ? "#b07aa1" : "#76b7b2");
    s << "<rect x=\"" << c2(x0) << "\" y=\"" << c2(band_y) << "\" width=\""
      << c2(std::max(0.6, x1 - x0 - (merge ? 0 : 0.4))) << "\" height=\"12\" fill=\"" << fill << "\"><title>";
    if (merge)
      s << "steps " << k << "-" << j - 1;
    else
      s << "step " << k;
    s << " (phase " << s0.phase << (prof ? ", profiled" : "") << ")</title></rect>";
    k = j;
  }
  s << "<g class=\"legend\" transform=\"translate(" << c2(f.left) << "," << c2(band_y + 30) << ")\">"
    << "<rect width=\"10\" height=\"10\" fill=\"#76b7b2\"/><text x=\"14\" y=\"9\">phase 0, 2, ...</text>"
    << "<rect x=\"120\" width=\"10\" height=\"10\" fill=\"#b07aa1\"/><text x=\"134\" y=\"9\">phase 1, 3, ...</text>"
    << "<rect x=\"240\" width=\"10\" height=\"10\" fill=\"#e15759\"/><text x=\"254\" y=\"9\">profiled step</text></g>";
}

// The sentinel_step() marks (up to 500) as dashed lines across the plot.
void marks(std::ostream& s, const Ctx& c, const Frame& f) {
  for (const auto& m : c.p.marks) {
    if (c.p.marks.size() > 500) break;
    double x = f.X(static_cast<double>(m.monotonic_ns - std::min(m.monotonic_ns, c.t0)) / 1e9);
    s << "<line class=\"mark\" x1=\"" << c2(x) << "\" x2=\"" << c2(x) << "\" y1=\"" << c2(f.top) << "\" y2=\""
      << c2(f.top + f.height) << "\"><title>sentinel_step() mark, seq " << m.seq << "</title></line>";
  }
}

// The area of the bucket peaks, and the hover data of its columns.
void live_area(std::ostream& s, const Frame& f, const std::vector<double>& peak, double span) {
  const size_t buckets = peak.size();
  std::ostringstream path;
  path << "M" << c2(f.X(0)) << "," << c2(f.Y(0));
  std::vector<std::string> labels;
  std::vector<double> xs;
  for (size_t b = 0; b < buckets; ++b) {
    double xa = f.left + f.width * static_cast<double>(b) / buckets;
    double xb = f.left + f.width * static_cast<double>(b + 1) / buckets;
    double y = f.Y(peak[b]);
    path << "L" << c2(xa) << "," << c2(y) << "L" << c2(xb) << "," << c2(y);
    xs.push_back((xa + xb) / 2);
    double t = span / 1e9 * (static_cast<double>(b) + 0.5) / buckets;
    labels.push_back(time_label(t, f.x1) + ": " + human_bytes(static_cast<uint64_t>(peak[b])) + " live");
  }
  path << "L" << c2(f.left + f.width) << "," << c2(f.Y(0)) << "Z";
  s << "<path class=\"area\" d=\"" << path.str() << "\"/>";
  x_axis_line(s, f);
  s << "<text class=\"axislabel\" x=\"" << c2(f.left + f.width) << "\" y=\"" << c2(f.top - 2)
    << "\" text-anchor=\"end\">time since the process started \u2192</text>";
  s << "</svg>\n";
  hover_data(s, "footprint-run-data", f, xs, labels);
}

// ---- over one step ----

struct StepLayer {
  const char* name;
  const char* color;
};
const StepLayer kStepLayers[] = {{"alive before the step", "#4e79a7"}, {"persistent (born in the step)", "#76b7b2"},
                                 {"step-scoped", "#f28e2b"},           {"short-lived", "#59a14f"},
                                 {"unclassified", "#bab0ac"},          {"into the next step", "#edc948"}};
constexpr size_t kLayers = 6;

// The interval of in-step ordinal `ord` in the table, -1 when none (or no table).
int64_t interval_of(const fmt::IntervalTable* table, uint64_t ord) {
  if (!table) return -1;
  for (size_t i = 0; i < table->bounds.size(); ++i)
    if (ord >= table->bounds[i].first && ord < table->bounds[i].second) return static_cast<int64_t>(i);
  return -1;
}

// The step drawn: its first allocation, its P allocations, its intervals.
struct StepClock {
  uint64_t start, P;
  const fmt::IntervalTable* table;
};

// The layer of object i alive in the step: alive before it, else its identity's lifetime class,
// else the object's own lifetime (outliving the step, within one interval, or longer).
size_t layer_of(const Ctx& c, size_t i, const StepClock& st) {
  const auto& ob = c.p.objects[i];
  const uint64_t d = ob.death_seq;
  if (ob.birth_seq < st.start) return 0;
  if (c.obj_id[i] != SIZE_MAX) {
    switch (c.am.identities[c.obj_id[i]].id.lifetime) {
      case SENTINEL_LIFE_PERSISTENT:
        return 1;
      case SENTINEL_LIFE_STEP:
        return 2;
      case SENTINEL_LIFE_SHORT:
        return 3;
      case SENTINEL_LIFE_NEXT_STEP:
        return 5;
      default:
        return 4;
    }
  }
  if (d == UINT64_MAX || d > st.start + st.P) return 1;
  int64_t bi = interval_of(st.table, ob.birth_seq - st.start), di = interval_of(st.table, d - st.start - 1);
  return (bi >= 0 && bi == di) ? 3 : 2;
}

// The live bytes of each layer after each of the step's allocations, and their total.
struct StepStack {
  std::vector<std::vector<double>> val;  // [layer][slot]
  std::vector<double> total;             // [slot]
};

StepStack stack_layers(const Ctx& c, const StepClock& st) {
  const auto& p = c.p;
  const uint64_t start = st.start, P = st.P;
  // Difference arrays per layer over the P slots (slot s: right after allocation start+s).
  std::vector<std::vector<double>> diff(kLayers, std::vector<double>(P + 1, 0.0));
  for (size_t i = 0; i < p.objects.size(); ++i) {
    const auto& ob = p.objects[i];
    const uint64_t d = ob.death_seq;
    if (ob.birth_seq >= start + P || (d != UINT64_MAX && d <= start)) continue;
    const size_t layer = layer_of(c, i, st);
    uint64_t from = ob.birth_seq > start ? ob.birth_seq - start : 0;
    uint64_t to = (d == UINT64_MAX || d - start > P) ? P : d - start;
    if (to <= from) continue;
    diff[layer][from] += static_cast<double>(ob.size);
    diff[layer][to] -= static_cast<double>(ob.size);
  }
  StepStack out{std::vector<std::vector<double>>(kLayers, std::vector<double>(P, 0.0)), std::vector<double>(P, 0.0)};
  for (size_t l = 0; l < kLayers; ++l) {
    double run = 0;
    for (uint64_t x = 0; x < P; ++x) {
      run += diff[l][x];
      out.val[l][x] = std::max(0.0, run);
      out.total[x] += out.val[l][x];
    }
  }
  return out;
}

// Columns: every slot, or the slot with the largest total per bucket when there are many.
std::vector<uint64_t> pick_columns(const std::vector<double>& total, uint64_t P) {
  const size_t cols = static_cast<size_t>(std::min<uint64_t>(P, 1200));
  std::vector<uint64_t> pick(cols);
  for (size_t b = 0; b < cols; ++b) {
    uint64_t lo = P * b / cols, hi = std::max(lo + 1, P * (b + 1) / cols);
    uint64_t best = lo;
    for (uint64_t x = lo; x < hi; ++x)
      if (total[x] > total[best]) best = x;
    pick[b] = best;
  }
  return pick;
}

// Stacked layers, bottom up (a layer empty in every column is left out).
void layer_paths(std::ostream& s, const Frame& f, const StepStack& st, const std::vector<uint64_t>& pick) {
  const size_t cols = pick.size();
  std::vector<double> base(cols, 0.0);
  for (size_t l = 0; l < kLayers; ++l) {
    bool any = false;
    for (size_t b = 0; b < cols; ++b) any |= st.val[l][pick[b]] > 0;
    if (!any) continue;
    std::ostringstream path;
    for (size_t b = 0; b < cols; ++b) {
      double xa = f.left + f.width * static_cast<double>(b) / cols;
      double xb = f.left + f.width * static_cast<double>(b + 1) / cols;
      double y = f.Y(base[b] + st.val[l][pick[b]]);
      path << (b ? "L" : "M") << c2(xa) << "," << c2(y) << "L" << c2(xb) << "," << c2(y);
    }
    for (size_t b = cols; b-- > 0;) {
      double xa = f.left + f.width * static_cast<double>(b) / cols;
      double xb = f.left + f.width * static_cast<double>(b + 1) / cols;
      double y = f.Y(base[b]);
      path << "L" << c2(xb) << "," << c2(y) << "L" << c2(xa) << "," << c2(y);
    }
    path << "Z";
    s << "<path class=\"layer\" fill=\"" << kStepLayers[l].color << "\" d=\"" << path.str() << "\"><title>"
      << kStepLayers[l].name << "</title></path>";
    for (size_t b = 0; b < cols; ++b) base[b] += st.val[l][pick[b]];
  }
}

// The hover read-out of each column: its ordinal, interval, total and layers.
void step_hover_data(std::ostream& s, const Frame& f, const StepStack& st, const std::vector<uint64_t>& pick,
                     const fmt::IntervalTable* table) {
  const size_t cols = pick.size();
  std::vector<std::string> labels;
  std::vector<double> xs;
  for (size_t b = 0; b < cols; ++b) {
    uint64_t x = pick[b];
    xs.push_back(f.left + f.width * (static_cast<double>(b) + 0.5) / cols);
    std::string lab = "ordinal " + std::to_string(x);
    int64_t iv = interval_of(table, x);
    if (iv >= 0) lab += " (interval " + std::to_string(iv) + ")";
    lab += ": " + human_bytes(static_cast<uint64_t>(st.total[x]));
    for (size_t l = 0; l < kLayers; ++l)
      if (st.val[l][x] > 0)
        lab += std::string(" \u00b7 ") + kStepLayers[l].name + " " + human_bytes(static_cast<uint64_t>(st.val[l][x]));
    labels.push_back(lab);
  }
  hover_data(s, "footprint-step-data", f, xs, labels);
}

// Interval boundaries, numbered on top (at most about 40 numbers).
void interval_lines(std::ostream& s, const Frame& f, const StepClock& st) {
  if (!st.table) return;
  size_t n = st.table->bounds.size();
  size_t every = n > 40 ? (n + 39) / 40 : 1;
  for (size_t i = 0; i < n; ++i) {
    double x = f.X(static_cast<double>(st.table->bounds[i].first));
    s << "<line class=\"ivline\" x1=\"" << c2(x) << "\" x2=\"" << c2(x) << "\" y1=\"" << c2(f.top - 4) << "\" y2=\""
      << c2(f.top + f.height) << "\"/>";
    if (i % every == 0) {
      double xe = f.X(static_cast<double>(std::min<uint64_t>(st.table->bounds[i].second, st.P)));
      s << "<text class=\"ivlabel\" x=\"" << c2((x + xe) / 2) << "\" y=\"" << c2(f.top - 8)
        << "\" text-anchor=\"middle\">" << i << "</text>";
    }
  }
}

// The peak marker and the layers' legend.
void peak_and_legend(std::ostream& s, const Frame& f, const StepStack& st) {
  double max_total = 0;
  uint64_t peak_slot = 0;
  for (uint64_t x = 0; x < st.total.size(); ++x)
    if (st.total[x] > max_total) {
      max_total = st.total[x];
      peak_slot = x;
    }
  double px = f.X(static_cast<double>(peak_slot) + 0.5), py = f.Y(max_total);
  const bool label_left = px > f.left + f.width * 0.75;
  s << "<circle cx=\"" << c2(px) << "\" cy=\"" << c2(py)
    << "\" r=\"3.5\" class=\"peak\"/><text class=\"peaklabel\" x=\"" << c2(label_left ? px - 6 : px + 6) << "\" y=\""
    << c2(py + 12) << "\"" << (label_left ? " text-anchor=\"end\"" : "") << ">peak "
    << html(human_bytes(static_cast<uint64_t>(max_total))) << "</text>";
  s << "<g class=\"legend\" transform=\"translate(" << c2(f.left) << "," << c2(f.top + f.height + 40) << ")\">";
  double lx = 0;
  for (size_t l = 0; l < kLayers; ++l) {
    s << "<rect x=\"" << c2(lx) << "\" width=\"10\" height=\"10\" fill=\"" << kStepLayers[l].color << "\"/><text x=\""
      << c2(lx + 14) << "\" y=\"9\">" << kStepLayers[l].name << "</text>";
    lx += 30 + 6.2 * static_cast<double>(std::string(kStepLayers[l].name).size());
  }
  s << "</g></svg>\n";
}

}  // namespace

void footprint_run(std::ostream& s, const Ctx& c) {
  double max_live = 0;
  const std::vector<double> peak = live_peaks(c, max_live);
  const double span = static_cast<double>(c.t_end - c.t0);
  Frame f{78, 18, 1000, 230, 0, span > 0 ? span / 1e9 : 1, 0, 1};
  ByteAxis ax = byte_axis(max_live);
  f.y1 = ax.max;
  const double band_y = f.top + f.height + 26;
  const double H = c.p.steps.empty() ? f.top + f.height + 26 : band_y + 44;
  s << "<svg id=\"footprint-run\" class=\"plot\" viewBox=\"0 0 1100 " << c2(H)
    << "\" role=\"img\" aria-label=\"live tracked bytes over the run\" data-hover=\"footprint-run-data\">";
  y_byte_grid(s, f, ax);
  x_ticks(s, f, nice_ticks(f.x1, 8), f.x1 * 1.0001, 16, [&](double t) { return html(time_label(t, f.x1)); });
  if (!c.p.steps.empty()) steps_band(s, c, f, band_y);
  marks(s, c, f);
  live_area(s, f, peak, span);
}

void footprint_step(std::ostream& s, const Ctx& c, int64_t k) {
  const auto& step = c.p.steps[static_cast<size_t>(k)];
  const StepClock st{step.start_seq, step.allocations, c.p.intervals_for(step.phase)};
  const uint64_t P = st.P;
  if (P == 0 || P > 1'000'000) {
    s << "<p class=\"note\">Step " << k << " has " << P << " allocations; nothing to draw.</p>\n";
    return;
  }
  const StepStack stack = stack_layers(c, st);
  const std::vector<uint64_t> pick = pick_columns(stack.total, P);
  Frame f{78, 22, 1000, 230, 0, static_cast<double>(P), 0, 1};
  ByteAxis ax = byte_axis(*std::max_element(stack.total.begin(), stack.total.end()));
  f.y1 = ax.max;
  const double H = f.top + f.height + 64;
  s << "<svg id=\"footprint-step\" class=\"plot\" viewBox=\"0 0 1100 " << c2(H)
    << "\" role=\"img\" aria-label=\"live tracked bytes over one step\" data-hover=\"footprint-step-data\">";
  y_byte_grid(s, f, ax);
  layer_paths(s, f, stack, pick);
  interval_lines(s, f, st);
  x_ticks(s, f, nice_ticks(static_cast<double>(P), 10), static_cast<double>(P), 16, [](double t) { return num(t, 0); });
  x_axis_line(s, f);
  s << "<text class=\"axislabel\" x=\"" << c2(f.left + f.width) << "\" y=\"" << c2(f.top + f.height + 30)
    << "\" text-anchor=\"end\">in-step allocation ordinal (the step's clock)"
    << (st.table ? "; numbers on top: intervals" : "") << "</text>";
  peak_and_legend(s, f, stack);
  step_hover_data(s, f, stack, pick, st.table);
}

}  // namespace sentinel::view::report
