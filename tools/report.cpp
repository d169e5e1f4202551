// sentinel-view report: one self-contained HTML page (inline CSS, SVG and a little JavaScript; nothing
// is fetched) with the footprint over the run and over one step, the access heatmap, the lifetimes, and
// the summary tables. The plots are drawn here as static SVG, so the page reads without JavaScript; the
// script only adds hover read-outs and the groups/identities switch, and marks the page
// data-render="ok" (or "error", with the messages in #js-errors) for the headless-browser test.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "analysis.h"
#include "cli.h"
#include "json.h"
#include "phase_select.h"
#include "profile_model.h"
#include "report_placement.h"
#include "sentinel_build_config.h"
#include "symbolizer.h"
#include "view.h"

namespace sentinel::view {

namespace {

struct Options : SharedOptions {
  Options() { takes = kSymbols | kOutput; }
  size_t top = 15;  // rows of the tables
};

void print_help() {
  std::cout
      << "Usage: sentinel-view report [-o FILE.html] [--top N] [--phase N] [--no-symbols] DUMP\n"
         "Writes one self-contained HTML page (no external files, opens offline) with the\n"
         "footprint over the run and over one step, the access heatmap (groups or identities x\n"
         "intervals), the object lifetimes, the placement and the summary tables.\n"
         "\n"
         "  -o FILE        output file (default: DUMP.html; '-': standard output)\n"
         "  --phase N      the phase whose step, heatmap, lifetimes and placement are drawn\n"
         "                 (default: the main phase, the profiled phase the process spent the\n"
         "                 most time in); the run-wide parts are the same\n"
         "  --top N        rows of the site, identity and group tables (default 15; 0: all)\n"
         "  --no-symbols   print frames as module+offset without opening the module files\n"
         "  --debuginfod   let libdw fetch missing debug info (see summary --help)\n"
         "  -h, --help     show this help\n";
}

// ---- formatting ----

std::string html(std::string_view s) {
  std::string p = printable(s), out;
  out.reserve(p.size());
  for (char c : p) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double v, int decimals = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string with_commas(uint64_t v) {
  std::string s = std::to_string(v), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

std::string pct(double part, double whole) {
  if (whole <= 0) return "n/a";
  return num(100.0 * part / whole, 1) + "%";
}

// Coordinates in SVG user units, two decimals at most.
std::string c2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string s = buf;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

const char* life_color(uint8_t life) {
  switch (life) {
    case SENTINEL_LIFE_PERSISTENT: return "#4e79a7";
    case SENTINEL_LIFE_STEP: return "#f28e2b";
    case SENTINEL_LIFE_SHORT: return "#59a14f";
    default: return "#9d9d9d";
  }
}

// A sequential blue-purple scale for the heatmap, f in (0, 1].
std::string heat_color(double f) {
  static const double stops[][3] = {{224, 236, 244}, {158, 188, 218}, {140, 150, 198},
                                    {136, 86, 167},  {129, 15, 124}};
  f = std::clamp(f, 0.0, 1.0);
  double x = f * 4.0;
  int i = std::min(3, static_cast<int>(x));
  double t = x - i;
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x",
                static_cast<int>(stops[i][0] + (stops[i + 1][0] - stops[i][0]) * t + 0.5),
                static_cast<int>(stops[i][1] + (stops[i + 1][1] - stops[i][1]) * t + 0.5),
                static_cast<int>(stops[i][2] + (stops[i + 1][2] - stops[i][2]) * t + 0.5));
  return buf;
}

// Ticks 0, step, 2*step ... up to the first one >= max (1, 2 or 5 times a power of ten).
std::vector<double> nice_ticks(double max, int target = 5) {
  if (!(max > 0)) return {0, 1};
  double raw = max / target;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double norm = raw / mag;
  double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
  std::vector<double> t;
  for (int i = 0; i < 1000; ++i) {
    t.push_back(step * i);
    if (step * i >= max * 0.9999) break;
  }
  return t;
}

struct ByteAxis {
  std::vector<double> ticks;  // in bytes
  std::vector<std::string> labels;
  double max = 1;
};

ByteAxis byte_axis(double max) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  double scale = 1;
  while (u < 5 && max / (scale * 1024) >= 1) {
    scale *= 1024;
    ++u;
  }
  ByteAxis a;
  for (double t : nice_ticks(max / scale)) {
    a.ticks.push_back(t * scale);
    double r = std::round(t);
    a.labels.push_back((std::fabs(t - r) < 1e-9 ? num(t, 0) : num(t, 1)) + " " + units[u]);
  }
  a.max = a.ticks.back() > 0 ? a.ticks.back() : 1;
  return a;
}

std::string time_label(double seconds, double span) {
  if (span < 0.002) return num(seconds * 1e6, 0) + " \u00b5s";
  if (span < 2) return num(seconds * 1e3, span < 0.02 ? 1 : 0) + " ms";
  return num(seconds, span < 20 ? 1 : 0) + " s";
}

// A plot area in an SVG: data coordinates -> pixels.
struct Frame {
  double left, top, width, height;
  double x0, x1, y0, y1;
  double X(double v) const { return left + (x1 > x0 ? (v - x0) / (x1 - x0) : 0) * width; }
  double Y(double v) const { return top + height - (y1 > y0 ? (v - y0) / (y1 - y0) : 0) * height; }
};

void y_byte_grid(std::ostream& s, const Frame& f, const ByteAxis& ax) {
  for (size_t i = 0; i < ax.ticks.size(); ++i) {
    double y = f.Y(ax.ticks[i]);
    s << "<line class=\"grid\" x1=\"" << c2(f.left) << "\" x2=\"" << c2(f.left + f.width) << "\" y1=\""
      << c2(y) << "\" y2=\"" << c2(y) << "\"/>";
    s << "<text class=\"tick\" x=\"" << c2(f.left - 6) << "\" y=\"" << c2(y + 3.5)
      << "\" text-anchor=\"end\">" << html(ax.labels[i]) << "</text>";
  }
}

// Live-byte events: births add, deaths subtract.
struct LiveEvent {
  uint64_t ns;
  int64_t delta;
};

std::string json_str_array(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + json_quote(v[i]);
  return s + "]";
}

// JSON embedded in a <script type="application/json">: no "</" may appear.
std::string script_safe(std::string s) {
  for (size_t i = 0; (i = s.find("</", i)) != std::string::npos; i += 3) s.replace(i, 2, "<\\/");
  return s;
}

struct Ctx {
  const fmt::Profile& p;
  const Analysis& a;
  const StepModel& sm;
  const AccessModel& am;  // of the phase drawn
  const TieringModel& tm;  // with the per-interval figures of that phase
  const std::vector<size_t>& obj_id;
  Symbolizer& sym;
  const Options& o;
  uint64_t t0 = 0, t_end = 0;
};

bool is_alive(const sentinel_object& ob) { return ob.death_seq == UINT64_MAX || ob.death_ns == 0; }

// ---- footprint over the run ----

void footprint_run(std::ostream& s, const Ctx& c) {
  const auto& p = c.p;
  std::vector<LiveEvent> ev;
  ev.reserve(p.objects.size() * 2);
  for (const auto& ob : p.objects) {
    int64_t sz = static_cast<int64_t>(std::min<uint64_t>(ob.size, INT64_MAX / 4));
    ev.push_back({ob.birth_ns, sz});
    if (!is_alive(ob)) ev.push_back({std::max(ob.death_ns, ob.birth_ns), -sz});
  }
  std::sort(ev.begin(), ev.end(), [](const LiveEvent& x, const LiveEvent& y) {
    return x.ns != y.ns ? x.ns < y.ns : x.delta < y.delta;
  });
  const double span = static_cast<double>(c.t_end - c.t0);
  const size_t buckets = 1000;
  std::vector<double> peak(buckets, 0);
  std::vector<uint8_t> seen(buckets, 0);
  double live = 0, max_live = 0;
  auto bucket = [&](uint64_t ns) {
    if (span <= 0) return size_t{0};
    double f = static_cast<double>(ns > c.t0 ? ns - c.t0 : 0) / span;
    return std::min(buckets - 1, static_cast<size_t>(f * static_cast<double>(buckets)));
  };
  // Each bucket holds the highest live value reached in it; empty buckets carry the level on.
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
  Frame f{78, 18, 1000, 230, 0, span > 0 ? span / 1e9 : 1, 0, 1};
  ByteAxis ax = byte_axis(max_live);
  f.y1 = ax.max;
  const double band_y = f.top + f.height + 26;
  const double H = p.steps.empty() ? f.top + f.height + 26 : band_y + 44;
  s << "<svg id=\"footprint-run\" class=\"plot\" viewBox=\"0 0 1100 " << c2(H)
    << "\" role=\"img\" aria-label=\"live tracked bytes over the run\" data-hover=\"footprint-run-data\">";
  y_byte_grid(s, f, ax);
  // x axis
  for (double t : nice_ticks(f.x1, 8)) {
    if (t > f.x1 * 1.0001) break;
    double x = f.X(t);
    s << "<line class=\"tickline\" x1=\"" << c2(x) << "\" x2=\"" << c2(x) << "\" y1=\"" << c2(f.top + f.height)
      << "\" y2=\"" << c2(f.top + f.height + 4) << "\"/><text class=\"tick\" x=\"" << c2(x) << "\" y=\""
      << c2(f.top + f.height + 16) << "\" text-anchor=\"middle\">" << html(time_label(t, f.x1)) << "</text>";
  }
  // Steps band: one rect per step (merged when there are many), profiled steps highlighted.
  if (!p.steps.empty()) {
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
        while (j < n && p.steps[j].phase == s0.phase &&
               ((p.steps[j].flags ^ s0.flags) & SENTINEL_STEP_PROFILED) == 0)
          ++j;
      uint64_t a = step_span(p, clock, k, c.t_end).first;
      uint64_t b = std::max(a, step_span(p, clock, j - 1, c.t_end).second);
      double x0 = f.X(static_cast<double>(a - std::min(a, c.t0)) / 1e9);
      double x1 = std::min(f.X(static_cast<double>(b - std::min(b, c.t0)) / 1e9), f.left + f.width);
      bool prof = s0.flags & SENTINEL_STEP_PROFILED;
      const char* fill = prof ? "#e15759" : (s0.phase % 2 ? "#b07aa1" : "#76b7b2");
      s << "<rect x=\"" << c2(x0) << "\" y=\"" << c2(band_y) << "\" width=\"" << c2(std::max(0.6, x1 - x0 - (merge ? 0 : 0.4)))
        << "\" height=\"12\" fill=\"" << fill << "\"><title>";
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
  for (const auto& m : p.marks) {
    if (p.marks.size() > 500) break;
    double x = f.X(static_cast<double>(m.monotonic_ns - std::min(m.monotonic_ns, c.t0)) / 1e9);
    s << "<line class=\"mark\" x1=\"" << c2(x) << "\" x2=\"" << c2(x) << "\" y1=\"" << c2(f.top) << "\" y2=\""
      << c2(f.top + f.height) << "\"><title>sentinel_step() mark, seq " << m.seq << "</title></line>";
  }
  // The area.
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
  s << "<line class=\"axis\" x1=\"" << c2(f.left) << "\" x2=\"" << c2(f.left + f.width) << "\" y1=\""
    << c2(f.Y(0)) << "\" y2=\"" << c2(f.Y(0)) << "\"/>";
  s << "<text class=\"axislabel\" x=\"" << c2(f.left + f.width) << "\" y=\"" << c2(f.top - 2)
    << "\" text-anchor=\"end\">time since the process started \u2192</text>";
  s << "</svg>\n";
  s << "<script type=\"application/json\" id=\"footprint-run-data\">"
    << script_safe("{\"top\":" + c2(f.top) + ",\"bottom\":" + c2(f.top + f.height) + ",\"x\":[" + [&] {
         std::string r;
         for (size_t i = 0; i < xs.size(); ++i) r += (i ? "," : "") + c2(xs[i]);
         return r;
       }() + "],\"label\":" + json_str_array(labels) + "}")
    << "</script>\n";
}

// ---- footprint over one step ----

struct StepLayer {
  const char* name;
  const char* color;
};
const StepLayer kStepLayers[] = {{"alive before the step", "#4e79a7"},
                                 {"persistent (born in the step)", "#76b7b2"},
                                 {"step-scoped", "#f28e2b"},
                                 {"short-lived", "#59a14f"},
                                 {"unclassified", "#bab0ac"}};
constexpr size_t kLayers = 5;

void footprint_step(std::ostream& s, const Ctx& c, int64_t k) {
  const auto& p = c.p;
  const auto& st = p.steps[static_cast<size_t>(k)];
  const uint64_t start = st.start_seq;
  const uint64_t P = st.allocations;
  if (P == 0 || P > 1'000'000) {
    s << "<p class=\"note\">Step " << k << " has " << P << " allocations; nothing to draw.</p>\n";
    return;
  }
  const fmt::IntervalTable* table = p.intervals_for(st.phase);
  auto interval_of = [&](uint64_t ord) -> int64_t {
    if (!table) return -1;
    for (size_t i = 0; i < table->bounds.size(); ++i)
      if (ord >= table->bounds[i].first && ord < table->bounds[i].second) return static_cast<int64_t>(i);
    return -1;
  };
  // Difference arrays per layer over the P slots (slot s: right after allocation start+s).
  std::vector<std::vector<double>> diff(kLayers, std::vector<double>(P + 1, 0.0));
  for (size_t i = 0; i < p.objects.size(); ++i) {
    const auto& ob = p.objects[i];
    const uint64_t d = ob.death_seq;
    if (ob.birth_seq >= start + P || (d != UINT64_MAX && d <= start)) continue;
    size_t layer;
    if (ob.birth_seq < start) {
      layer = 0;
    } else if (c.obj_id[i] != SIZE_MAX) {
      switch (c.am.identities[c.obj_id[i]].id.lifetime) {
        case SENTINEL_LIFE_PERSISTENT: layer = 1; break;
        case SENTINEL_LIFE_STEP: layer = 2; break;
        case SENTINEL_LIFE_SHORT: layer = 3; break;
        default: layer = 4;
      }
    } else if (d == UINT64_MAX || d > start + P) {
      layer = 1;
    } else {
      int64_t bi = interval_of(ob.birth_seq - start), di = interval_of(d - start - 1);
      layer = (bi >= 0 && bi == di) ? 3 : 2;
    }
    uint64_t from = ob.birth_seq > start ? ob.birth_seq - start : 0;
    uint64_t to = (d == UINT64_MAX || d - start > P) ? P : d - start;
    if (to <= from) continue;
    diff[layer][from] += static_cast<double>(ob.size);
    diff[layer][to] -= static_cast<double>(ob.size);
  }
  std::vector<std::vector<double>> val(kLayers, std::vector<double>(P, 0.0));
  std::vector<double> total(P, 0.0);
  for (size_t l = 0; l < kLayers; ++l) {
    double run = 0;
    for (uint64_t x = 0; x < P; ++x) {
      run += diff[l][x];
      val[l][x] = std::max(0.0, run);
      total[x] += val[l][x];
    }
  }
  // Columns: every slot, or the slot with the largest total per bucket when there are many.
  const size_t cols = static_cast<size_t>(std::min<uint64_t>(P, 1200));
  std::vector<uint64_t> pick(cols);
  for (size_t b = 0; b < cols; ++b) {
    uint64_t lo = P * b / cols, hi = std::max(lo + 1, P * (b + 1) / cols);
    uint64_t best = lo;
    for (uint64_t x = lo; x < hi; ++x)
      if (total[x] > total[best]) best = x;
    pick[b] = best;
  }
  double max_total = 0;
  uint64_t peak_slot = 0;
  for (uint64_t x = 0; x < P; ++x)
    if (total[x] > max_total) {
      max_total = total[x];
      peak_slot = x;
    }
  Frame f{78, 22, 1000, 230, 0, static_cast<double>(P), 0, 1};
  ByteAxis ax = byte_axis(max_total);
  f.y1 = ax.max;
  const double H = f.top + f.height + 64;
  s << "<svg id=\"footprint-step\" class=\"plot\" viewBox=\"0 0 1100 " << c2(H)
    << "\" role=\"img\" aria-label=\"live tracked bytes over one step\" data-hover=\"footprint-step-data\">";
  y_byte_grid(s, f, ax);
  // Stacked layers, bottom up.
  std::vector<double> base(cols, 0.0);
  std::vector<std::string> labels;
  std::vector<double> xs;
  for (size_t l = 0; l < kLayers; ++l) {
    bool any = false;
    for (size_t b = 0; b < cols; ++b) any |= val[l][pick[b]] > 0;
    if (!any) continue;
    std::ostringstream path;
    for (size_t b = 0; b < cols; ++b) {
      double xa = f.left + f.width * static_cast<double>(b) / cols;
      double xb = f.left + f.width * static_cast<double>(b + 1) / cols;
      double y = f.Y(base[b] + val[l][pick[b]]);
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
    for (size_t b = 0; b < cols; ++b) base[b] += val[l][pick[b]];
  }
  for (size_t b = 0; b < cols; ++b) {
    uint64_t x = pick[b];
    xs.push_back(f.left + f.width * (static_cast<double>(b) + 0.5) / cols);
    std::string lab = "ordinal " + std::to_string(x);
    int64_t iv = interval_of(x);
    if (iv >= 0) lab += " (interval " + std::to_string(iv) + ")";
    lab += ": " + human_bytes(static_cast<uint64_t>(total[x]));
    for (size_t l = 0; l < kLayers; ++l)
      if (val[l][x] > 0) lab += std::string(" \u00b7 ") + kStepLayers[l].name + " " + human_bytes(static_cast<uint64_t>(val[l][x]));
    labels.push_back(lab);
  }
  // Interval boundaries.
  if (table) {
    size_t n = table->bounds.size();
    size_t every = n > 40 ? (n + 39) / 40 : 1;
    for (size_t i = 0; i < n; ++i) {
      double x = f.X(static_cast<double>(table->bounds[i].first));
      s << "<line class=\"ivline\" x1=\"" << c2(x) << "\" x2=\"" << c2(x) << "\" y1=\"" << c2(f.top - 4)
        << "\" y2=\"" << c2(f.top + f.height) << "\"/>";
      if (i % every == 0) {
        double xe = f.X(static_cast<double>(std::min<uint64_t>(table->bounds[i].second, P)));
        s << "<text class=\"ivlabel\" x=\"" << c2((x + xe) / 2) << "\" y=\"" << c2(f.top - 8)
          << "\" text-anchor=\"middle\">" << i << "</text>";
      }
    }
  }
  for (double t : nice_ticks(static_cast<double>(P), 10)) {
    if (t > static_cast<double>(P)) break;
    double x = f.X(t);
    s << "<line class=\"tickline\" x1=\"" << c2(x) << "\" x2=\"" << c2(x) << "\" y1=\"" << c2(f.top + f.height)
      << "\" y2=\"" << c2(f.top + f.height + 4) << "\"/><text class=\"tick\" x=\"" << c2(x) << "\" y=\""
      << c2(f.top + f.height + 16) << "\" text-anchor=\"middle\">" << num(t, 0) << "</text>";
  }
  s << "<line class=\"axis\" x1=\"" << c2(f.left) << "\" x2=\"" << c2(f.left + f.width) << "\" y1=\""
    << c2(f.Y(0)) << "\" y2=\"" << c2(f.Y(0)) << "\"/>";
  s << "<text class=\"axislabel\" x=\"" << c2(f.left + f.width) << "\" y=\"" << c2(f.top + f.height + 30)
    << "\" text-anchor=\"end\">in-step allocation ordinal (the step's clock)"
    << (table ? "; numbers on top: intervals" : "") << "</text>";
  // Peak marker.
  double px = f.X(static_cast<double>(peak_slot) + 0.5), py = f.Y(max_total);
  const bool label_left = px > f.left + f.width * 0.75;
  s << "<circle cx=\"" << c2(px) << "\" cy=\"" << c2(py) << "\" r=\"3.5\" class=\"peak\"/><text class=\"peaklabel\" x=\""
    << c2(label_left ? px - 6 : px + 6) << "\" y=\"" << c2(py + 12) << "\"" << (label_left ? " text-anchor=\"end\"" : "") << ">peak " << html(human_bytes(static_cast<uint64_t>(max_total)))
    << "</text>";
  s << "<g class=\"legend\" transform=\"translate(" << c2(f.left) << "," << c2(f.top + f.height + 40) << ")\">";
  double lx = 0;
  for (size_t l = 0; l < kLayers; ++l) {
    s << "<rect x=\"" << c2(lx) << "\" width=\"10\" height=\"10\" fill=\"" << kStepLayers[l].color
      << "\"/><text x=\"" << c2(lx + 14) << "\" y=\"9\">" << kStepLayers[l].name << "</text>";
    lx += 30 + 6.2 * static_cast<double>(std::string(kStepLayers[l].name).size());
  }
  s << "</g></svg>\n";
  std::string xsj;
  for (size_t i = 0; i < xs.size(); ++i) xsj += (i ? "," : "") + c2(xs[i]);
  s << "<script type=\"application/json\" id=\"footprint-step-data\">"
    << script_safe("{\"top\":" + c2(f.top) + ",\"bottom\":" + c2(f.top + f.height) + ",\"x\":[" + xsj +
                   "],\"label\":" + json_str_array(labels) + "}")
    << "</script>\n";
}

// ---- the access heatmap ----

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
    s << "<g class=\"hrow\"><rect x=\"4\" y=\"" << c2(y + 2) << "\" width=\"6\" height=\"" << c2(rh - 4)
      << "\" fill=\"" << life_color(row.lifetime) << "\"/><text class=\"rowlabel\" x=\"14\" y=\"" << c2(y + rh * 0.72)
      << "\">" << html(row.label) << "<title>" << html(row.tip) << "</title></text>";
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
    << life_color(SENTINEL_LIFE_STEP) << "\"/><text x=\"532\" y=\"9\">step-scoped</text><rect x=\"620\" width=\"8\" height=\"10\" fill=\""
    << life_color(SENTINEL_LIFE_SHORT) << "\"/><text x=\"632\" y=\"9\">short-lived</text></g>";
  s << "</svg>\n";
}

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
            std::to_string(g.g.members) + " identities, " + human_bytes(g.g.bytes) + ", intervals " +
            g.interval_list;
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
  std::vector<size_t> pick(by_size.begin(), by_size.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(60, by_size.size())));
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
              human_bytes(id.size) + " \u00b7 site " + (id.site == UINT32_MAX ? std::string("?") : std::to_string(id.site));
    r.tip = "identity " + std::to_string(id.id) + ": " + lifetime_name(id.lifetime) + ", " + human_bytes(id.size) +
            ", ordinal " + (id.ordinal == SENTINEL_NO_ORDINAL ? std::string("- (born outside the steps)") : std::to_string(id.ordinal)) +
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
      r.live_last = id.death_interval == SENTINEL_NO_ORDINAL ? (n ? n - 1 : 0) : std::min(id.death_interval, n ? n - 1 : 0);
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
  s << "<p class=\"note\">Rows: co-allocation groups (like lifetime, like access pattern), persistent first, then by the "
       "first interval touched; or the 60 largest object identities by birth interval. Columns: the "
    << n << " intervals of the step (phase " << am.phase << "). Cells: bytes touched in the interval, "
    << (am.only_step >= 0 ? std::string("in one profiled step") : "mean over " + std::to_string(am.steps_used) + " profiled steps")
    << ", shaded by the share of the row's own bytes; light grey: alive but not touched.";
  if (untouched) s << " " << untouched << " groups touched in no interval are not drawn.";
  if (more) s << " " << more << " more groups are not drawn.";
  if (am.dropped_touches) s << " " << am.dropped_touches << " touches named an unknown identity or interval.";
  s << "</p>\n";
}

// ---- lifetimes ----

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

// ---- tables ----

void kv_row(std::ostream& s, const std::string& k, const std::string& v) {
  s << "<tr><th>" << html(k) << "</th><td>" << v << "</td></tr>";
}

void tables(std::ostream& s, const Ctx& c) {
  const auto& p = c.p;
  const auto& a = c.a;
  const auto& sm = c.sm;
  const auto& am = c.am;
  auto limit = [&](size_t n) { return c.o.top ? std::min(c.o.top, n) : n; };

  if (!sm.phases.empty()) {
    s << "<h3>Phases</h3><table class=\"data\" id=\"phases\"><thead><tr><th>phase</th><th>steps</th><th>first &ndash; last</th>"
         "<th>allocations / step</th><th>intervals</th><th>step time</th><th>profiled</th><th>inferred</th><th>marked</th>"
         "<th>identities</th><th>budget</th><th>predicted</th><th>measured</th><th>misplaced</th></tr></thead><tbody>";
    for (const auto& ph : sm.phases) {
      const PhaseTiering* t = c.tm.find(ph.phase);
      auto share = [](std::optional<double> v) { return v ? num(*v * 100) + "%" : std::string("&ndash;"); };
      std::string name = std::to_string(ph.phase);
      if (&ph == sm.main()) name += " (main)";
      if (ph.phase == am.phase && sm.phases.size() > 1) name = "<b>" + name + "</b>";
      s << "<tr><td>" << name << "</td><td>" << ph.steps << "</td><td>";
      if (ph.steps) s << "#" << ph.first_step << " &ndash; #" << ph.last_step;
      else s << "&ndash;";
      s << "</td><td>" << ph.period << "</td><td>" << ph.intervals << "</td><td>"
        << (ph.median_step_ns ? html(human_duration(ph.median_step_ns)) : "&ndash;") << "</td><td>" << ph.profiled_steps
        << "</td><td>" << ph.inferred_steps << "</td><td>" << ph.explicit_steps << "</td><td>"
        << (ph.profiled || ph.identities ? std::to_string(ph.identities) : "&ndash;") << "</td><td>"
        << (t && t->plan ? html(human_bytes(t->plan->header.fast_budget_bytes)) : "&ndash;") << "</td><td>"
        << share(t ? t->predicted_hit() : std::nullopt) << "</td><td>" << share(t ? t->measured_hit() : std::nullopt)
        << "</td><td>"
        << (t && t->verified ? std::to_string(t->misplaced) + " of " + std::to_string(t->verified) : "&ndash;")
        << "</td></tr>";
    }
    s << "</tbody></table>\n";
    if (sm.phases.size() > 1)
      s << "<p class=\"note\">The step, heatmap, lifetimes and placement above are of phase " << am.phase
        << " (in bold; sentinel-view report --phase N draws another). Budget and predicted share: the phase's PLAN; "
           "measured: PLACEMENT; misplaced: objects found on the other node than planned right after a boundary's moves, "
           "of those asked.</p>\n";
  }
  for (const auto& ses : p.sessions) {
    s << "<h3>Profiling session</h3><table class=\"kv\">";
    kv_row(s, "profiled steps", std::to_string(ses.profiled_steps) + " from step #" + std::to_string(ses.first_profiled_step) +
                                    " (phase " + std::to_string(ses.phase) + ")");
    kv_row(s, "granularity", html(human_bytes(ses.granularity_bytes)));
    kv_row(s, "faults", with_commas(ses.faults) + ", handler " + html(human_duration(ses.fault_handler_ns)) +
                            (ses.faults ? " (" + html(human_duration(ses.fault_handler_ns / ses.faults)) + " per fault)" : ""));
    kv_row(s, "system-call unprotects", with_commas(ses.syscall_unprotects));
    std::string names;
    for (const auto& n : ses.counter_names) names += (names.empty() ? "" : ", ") + html(n);
    kv_row(s, "hardware counters", names.empty() ? "none (faults only)" : names);
    s << "</table>\n";
  }
  if (am.present) {
    std::vector<size_t> gorder(am.groups.size());
    for (size_t i = 0; i < gorder.size(); ++i) gorder[i] = i;
    std::sort(gorder.begin(), gorder.end(), [&](size_t x, size_t y) {
      if (am.groups[x].g.bytes != am.groups[y].g.bytes) return am.groups[x].g.bytes > am.groups[y].g.bytes;
      return am.groups[x].g.id < am.groups[y].g.id;
    });
    s << "<h3>Co-allocation groups of phase " << am.phase << " (" << limit(gorder.size()) << " of " << gorder.size()
      << ", by bytes)</h3><table class=\"data\"><thead><tr><th>group</th><th class=\"l\">class</th><th>members</th><th>bytes</th>"
         "<th>touched / step</th><th class=\"l\">intervals touched</th></tr></thead><tbody>";
    for (size_t i = 0; i < limit(gorder.size()); ++i) {
      const GroupRow& g = am.groups[gorder[i]];
      s << "<tr><td>" << g.g.id << "</td><td class=\"l\"><span class=\"sw\" style=\"background:" << life_color(g.g.lifetime) << "\"></span>"
        << lifetime_name(g.g.lifetime) << "</td><td>" << g.g.members << "</td><td>" << html(human_bytes(g.g.bytes))
        << "</td><td>" << html(human_bytes(g.touched / am.steps_used)) << "</td><td class=\"l\">"
        << (g.interval_list.empty() ? "none" : html(g.interval_list)) << "</td></tr>";
    }
    s << "</tbody></table>\n";
    auto ident_table = [&](const char* title, const std::vector<size_t>& order) {
      s << "<h3>" << title << " of phase " << am.phase << " (" << limit(order.size()) << " of " << order.size()
        << ")</h3><table class=\"data\"><thead><tr><th>id</th><th class=\"l\">class</th><th>size</th><th>site</th><th>ordinal</th>"
           "<th>born</th><th>dies</th><th>instances</th><th>touched / step</th><th>intervals</th><th>group</th></tr></thead><tbody>";
      auto opt = [](uint32_t v) { return v == SENTINEL_NO_ORDINAL ? std::string("&ndash;") : std::to_string(v); };
      for (size_t i = 0; i < limit(order.size()); ++i) {
        const IdentityRow& r = am.identities[order[i]];
        s << "<tr><td>" << r.id.id << "</td><td class=\"l\"><span class=\"sw\" style=\"background:" << life_color(r.id.lifetime)
          << "\"></span>" << lifetime_name(r.id.lifetime) << "</td><td>" << html(human_bytes(r.id.size)) << "</td><td>"
          << (r.id.site == UINT32_MAX ? std::string("&ndash;") : std::to_string(r.id.site)) << "</td><td>" << opt(r.id.ordinal)
          << "</td><td>" << opt(r.id.birth_interval) << "</td><td>" << opt(r.id.death_interval) << "</td><td>"
          << r.id.instances << "</td><td>" << html(human_bytes(r.touched / am.steps_used)) << "</td><td>"
          << r.intervals_touched << "</td><td>" << r.id.group << "</td></tr>";
      }
      s << "</tbody></table>\n";
    };
    ident_table("Identities by bytes", identities_by_size(am));
    ident_table("Identities by bytes touched", identities_by_touches(am));
  }
  // Sites.
  size_t ns = limit(a.sites.size());
  s << "<h3>Allocation sites (" << ns << " of " << a.sites.size() << ", by bytes)</h3><table class=\"data sites\"><thead><tr>"
       "<th>site</th><th>objects</th><th>bytes</th><th>share</th><th class=\"l\">stack (innermost first)</th></tr></thead><tbody>";
  for (size_t i = 0; i < ns; ++i) {
    const SiteUsage& su = a.sites[i];
    s << "<tr><td>" << (su.id == UINT32_MAX ? std::string("?") : std::to_string(su.id)) << "</td><td>" << su.objects
      << "</td><td>" << html(human_bytes(su.bytes)) << "</td><td>" << pct(static_cast<double>(su.bytes), static_cast<double>(a.tracked_bytes))
      << "</td><td class=\"frames\">";
    if (const fmt::Site* site = su.id == UINT32_MAX ? nullptr : p.find_site(su.id))
      for (uint64_t fr : site->frames) s << "<div>" << html(c.sym.frame(fr)) << "</div>";
    s << "</td></tr>";
  }
  s << "</tbody></table>\n";
  for (const auto& msg : c.sym.problems()) s << "<p class=\"note\">" << html(msg) << "</p>";
  // Lifetimes and sizes.
  s << "<div class=\"cols\"><div><h3>Lifetimes</h3><table class=\"data\"><thead><tr><th class=\"l\">lifetime</th><th>objects</th><th>bytes</th></tr></thead><tbody>";
  for (size_t i = 0; i < kLifetimeBuckets; ++i)
    s << "<tr><td class=\"l\">" << kLifetimeLabels[i] << "</td><td>" << a.lifetimes[i].objects << "</td><td>"
      << html(human_bytes(a.lifetimes[i].bytes)) << "</td></tr>";
  s << "</tbody></table></div><div><h3>Sizes</h3><table class=\"data\"><thead><tr><th class=\"l\">size class</th><th>objects</th><th>bytes</th></tr></thead><tbody>";
  for (const auto& sc : a.size_classes)
    s << "<tr><td class=\"l\">" << html(sc.max == 1 ? std::string("0 B") : human_bytes(sc.min) + " \u2013 " + (sc.max ? human_bytes(sc.max) : "\u2026"))
      << "</td><td>" << sc.b.objects << "</td><td>" << html(human_bytes(sc.b.bytes)) << "</td></tr>";
  s << "</tbody></table></div></div>\n";
  // Runtime counters and configuration.
  if (!p.stats.empty() || !p.config.empty()) {
    s << "<div class=\"cols\">";
    if (!p.stats.empty()) {
      std::map<std::string, uint64_t> st;
      std::vector<std::string> order;
      for (const auto& x : p.stats)
        if (st.emplace(x.name, x.value).second) order.push_back(x.name); else st[x.name] = x.value;
      s << "<div><h3>Runtime counters</h3><table class=\"kv\">";
      for (const auto& k : order) kv_row(s, k, with_commas(st[k]));
      s << "</table></div>";
    }
    if (!p.config.empty()) {
      s << "<div><h3>Configuration</h3><table class=\"kv\">";
      for (const auto& [k, v] : p.config) kv_row(s, k, html(v));
      s << "</table></div>";
    }
    s << "</div>\n";
  }
}

const char* kCss = R"CSS(
:root{--fg:#1f2328;--muted:#656d76;--line:#d0d7de;--bg:#ffffff;--panel:#f6f8fa;--accent:#4e79a7}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:1180px;margin:0 auto;padding:20px 24px 48px}
h1{font-size:22px;margin:0 0 2px}
h2{font-size:17px;margin:30px 0 6px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:14px;margin:18px 0 6px}
.sub{color:var(--muted);margin:0 0 14px;overflow-wrap:anywhere}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:8px;margin:12px 0}
.card{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:8px 10px}
.card .v{font-size:18px;font-weight:600}
.card .k{color:var(--muted);font-size:12px}
svg.plot{width:100%;height:auto;display:block;font:11px system-ui,sans-serif;background:#fff}
svg .grid{stroke:#eaeef2;stroke-width:1}
svg .axis{stroke:#57606a;stroke-width:1}
svg .tickline{stroke:#57606a}
svg .tick{fill:#57606a;font-size:10.5px}
svg .axislabel{fill:#57606a;font-size:11px}
svg .area{fill:#a0cbe8;stroke:#4e79a7;stroke-width:1.2}
svg .layer{stroke:#fff;stroke-width:.4}
svg .ivline{stroke:#8c959f;stroke-dasharray:3 3}
svg .ivlabel{fill:#57606a;font-size:10px}
svg .mark{stroke:#e15759;stroke-dasharray:2 2}
svg .peak{fill:#e15759}
svg .peaklabel{fill:#e15759;font-size:11px;font-weight:600}
svg .legend text{fill:#57606a;font-size:11px}
svg .rowlabel{fill:#24292f;font-size:11px}
svg .rowlabel.small{font-size:10px}
svg .durbar{fill:#bab0ac}
svg .arrow{fill:#57606a}
svg .hover line{stroke:#24292f;stroke-width:1;pointer-events:none}
svg .hover text{fill:#24292f;font-size:11.5px;font-weight:600;paint-order:stroke;stroke:#fff;stroke-width:3px;pointer-events:none}
svg .hrow:hover text.rowlabel{font-weight:600}
.scroll{overflow-x:auto}
.switch{margin:6px 0 8px}
.switch button{font:inherit;font-size:12px;padding:3px 10px;border:1px solid var(--line);background:#fff;cursor:pointer}
.switch button:first-child{border-radius:4px 0 0 4px}
.switch button:last-child{border-radius:0 4px 4px 0;border-left:0}
.switch button.on{background:var(--accent);color:#fff;border-color:var(--accent)}
.note{color:var(--muted);font-size:12.5px;margin:4px 0 0}
table{border-collapse:collapse;font-size:12.5px}
table.data{width:100%}
table.data th,table.data td{border-bottom:1px solid #eaeef2;padding:3px 8px;text-align:right;white-space:nowrap}
table.data th{background:var(--panel);font-weight:600}
table.data .l{text-align:left}
table.sites td.frames{text-align:left;white-space:normal;font:11.5px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;word-break:break-all}
table.kv th{text-align:left;font-weight:500;color:var(--muted);padding:2px 14px 2px 0;white-space:nowrap;vertical-align:top}
table.kv td{padding:2px 0;word-break:break-all}
.sw{display:inline-block;width:9px;height:9px;border-radius:2px;margin-right:5px;vertical-align:baseline}
.cols{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:24px}
#js-errors{color:#cf222e;background:#fff0f0;border:1px solid #cf222e;padding:8px;white-space:pre-wrap}
footer{margin-top:36px;color:var(--muted);font-size:12px}
)CSS";

// Collects script errors into the page (#js-errors) and marks it data-render="error"; runs first.
const char* kHeadScript = R"JS(
(function(){
  var root=document.documentElement, errs=[];
  function report(msg){
    errs.push(String(msg)); root.setAttribute('data-render','error');
    var el=document.getElementById('js-errors');
    if(el){el.hidden=false;el.textContent=errs.join('\n');}
  }
  window.addEventListener('error',function(e){report('error: '+e.message+' ('+(e.filename||'')+':'+(e.lineno||0)+')');});
  window.addEventListener('unhandledrejection',function(e){report('unhandled rejection: '+e.reason);});
  window.sentinelReportError=report;
})();
)JS";

// Hover read-outs on the footprint plots, the groups/identities switch, and the render check.
const char* kBodyScript = R"JS(
(function(){
  var root=document.documentElement, NS='http://www.w3.org/2000/svg';
  try{
    document.querySelectorAll('svg[data-hover]').forEach(function(svg){
      var holder=document.getElementById(svg.getAttribute('data-hover'));
      if(!holder) throw new Error('missing data for '+svg.id);
      var d=JSON.parse(holder.textContent);
      if(!d.x.length) return;
      var g=document.createElementNS(NS,'g'); g.setAttribute('class','hover'); g.style.display='none';
      var ln=document.createElementNS(NS,'line'); ln.setAttribute('y1',d.top); ln.setAttribute('y2',d.bottom);
      var tx=document.createElementNS(NS,'text'); tx.setAttribute('y',d.top+12);
      g.appendChild(ln); g.appendChild(tx); svg.appendChild(g);
      var vb=svg.viewBox.baseVal;
      svg.addEventListener('mousemove',function(ev){
        var r=svg.getBoundingClientRect(); if(!r.width) return;
        var x=vb.x+(ev.clientX-r.left)*vb.width/r.width;
        var lo=0,hi=d.x.length-1;
        while(lo<hi){var m=(lo+hi)>>1; if(d.x[m]<x) lo=m+1; else hi=m;}
        if(lo>0 && Math.abs(d.x[lo-1]-x)<Math.abs(d.x[lo]-x)) lo--;
        var px=d.x[lo]; ln.setAttribute('x1',px); ln.setAttribute('x2',px);
        tx.textContent=d.label[lo];
        var right=px>vb.width*0.6; tx.setAttribute('x',right?px-6:px+6); tx.setAttribute('text-anchor',right?'end':'start');
        g.style.display='';
      });
      svg.addEventListener('mouseleave',function(){g.style.display='none';});
    });
    var buttons=document.querySelectorAll('.switch button[data-show]');
    function show(id){
      buttons.forEach(function(b){
        var on=b.getAttribute('data-show')===id; b.classList.toggle('on',on);
        var el=document.getElementById(b.getAttribute('data-show')); if(el) el.style.display=on?'':'none';
      });
    }
    buttons.forEach(function(b){b.addEventListener('click',function(){show(b.getAttribute('data-show'));});});
    if(buttons.length) show(buttons[0].getAttribute('data-show'));
    var plots=document.querySelectorAll('svg.plot'), drawn=0;
    plots.forEach(function(s){ if(s.childElementCount>0) drawn++; });
    root.setAttribute('data-plots',String(drawn));
    if(drawn!==plots.length) throw new Error('empty plot');
    if(root.getAttribute('data-render')!=='error') root.setAttribute('data-render','ok');
  }catch(e){ window.sentinelReportError('exception: '+(e&&e.stack?e.stack:e)); }
})();
)JS";

void card(std::ostream& s, const std::string& v, const std::string& k) {
  s << "<div class=\"card\"><div class=\"v\">" << html(v) << "</div><div class=\"k\">" << html(k) << "</div></div>";
}

void write_report(std::ostream& s, const Ctx& c) {
  const auto& p = c.p;
  const auto& a = c.a;
  const auto& sm = c.sm;
  const auto& am = c.am;
  std::string cmd;
  for (const auto& arg : p.process.argv) cmd += (cmd.empty() ? "" : " ") + arg;
  std::string title = "Sentinel report" + (cmd.empty() ? std::string() : ": " + (cmd.size() > 60 ? cmd.substr(0, 57) + "..." : cmd));
  s << "<!DOCTYPE html>\n<html lang=\"en\" data-render=\"pending\">\n<head>\n<meta charset=\"utf-8\">\n"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
    << "<title>" << html(title) << "</title>\n<style>" << kCss << "</style>\n<script>" << kHeadScript << "</script>\n</head>\n<body>\n<main>\n";
  s << "<pre id=\"js-errors\" hidden></pre>\n";
  s << "<h1>Sentinel profile</h1>\n<p class=\"sub\">";
  if (p.process.present) {
    s << "<b>" << html(cmd.empty() ? p.process.executable : cmd) << "</b>";
    if (!cmd.empty() && !p.process.executable.empty()) s << " &middot; " << html(p.process.executable);
    s << " &middot; pid " << p.process.pid;
    if (p.process.rank >= 0) s << " &middot; rank " << p.process.rank;
    if (auto d = p.process.duration_ns()) s << " &middot; ran " << html(human_duration(*d));
    s << " &middot; ";
  }
  s << html(c.o.path) << " (format " << p.major << "." << p.minor << ", " << html(human_bytes(p.file_size)) << ")</p>\n";

  s << "<div class=\"cards\">";
  card(s, with_commas(a.objects), "tracked objects");
  card(s, human_bytes(a.peak_live_bytes), "peak live tracked bytes");
  card(s, human_bytes(a.tracked_bytes), "bytes allocated (tracked)");
  card(s, std::to_string(sm.steps), sm.steps ? "training steps detected" : "steps (none detected)");
  card(s, std::to_string(sm.allocations_per_step), "allocations per step");
  card(s, std::to_string(sm.intervals_per_step), "intervals per step");
  if (sm.phases.size() > 1) card(s, std::to_string(sm.phases.size()), "phases (main: " + std::to_string(sm.main_number()) + ")");
  if (const fmt::ProfileSession* ses = am.session) {
    card(s, std::to_string(ses->profiled_steps) + " \u00d7 " + human_bytes(ses->granularity_bytes),
         "profiled steps \u00d7 granularity (phase " + std::to_string(ses->phase) + ")");
    card(s, with_commas(ses->faults), "protection faults");
  }
  if (am.present) {
    card(s, std::to_string(am.identities.size()), "object identities");
    card(s, std::to_string(am.groups.size()), "co-allocation groups");
    card(s, human_bytes(am.total_touched / am.steps_used), "touched per profiled step");
  }
  s << "</div>\n";

  s << "<h2>Footprint over the run</h2>\n";
  footprint_run(s, c);
  s << "<p class=\"note\">Live tracked bytes (objects of at least SENTINEL_MIN_BYTES) against wall time since the process "
       "started"
    << (p.steps.empty() ? "" : "; the band below marks the detected steps")
    << (p.marks.empty() ? "" : "; red dashed lines: sentinel_step() marks") << ". Hover for values.</p>\n";

  int64_t k = representative_step(p, am.phase);
  s << "<h2>Footprint over the step</h2>\n";
  if (k >= 0) {
    const auto& st = p.steps[static_cast<size_t>(k)];
    footprint_step(s, c, k);
    s << "<p class=\"note\">Step #" << k << " (phase " << st.phase << ", " << st.allocations << " allocations"
      << (st.flags & SENTINEL_STEP_PROFILED ? ", profiled" : "")
      << "): live tracked bytes after each of the step's allocations, stacked by the objects' lifetime class"
      << (am.present ? " (from the profile's identities)" : " (from the objects' own lifetimes)") << ".</p>\n";
  } else if (!p.steps.empty()) {
    s << "<p class=\"note\">Phase " << am.phase << " has no steps in the STEPS record.</p>\n";
  } else {
    s << "<p class=\"note\">No steps in this dump (no STEPS record: the step detector did not lock on, or the dump is format 1.0).</p>\n";
  }

  s << "<h2>Access heatmap</h2>\n";
  if (am.present && am.intervals > 0)
    heatmaps(s, c);
  else if (!p.identities.empty() || !p.groups.empty())
    s << "<p class=\"note\">No access profile for phase " << am.phase << " (profiled phases: " << html(profiled_phases(sm))
      << ").</p>\n";
  else
    s << "<p class=\"note\">No access profile in this dump: run with SENTINEL_MODE=profile to record which objects each "
         "interval of the step touches.</p>\n";

  s << "<h2>Lifetimes</h2>\n";
  if (am.present && !am.identities.empty() && am.intervals > 0)
    lifetimes_identities(s, c);
  else
    lifetimes_objects(s, c);

  placement_section(s, c.tm);

  s << "<h2>Details</h2>\n";
  tables(s, c);
  s << "<footer>Written by sentinel-view " << SENTINEL_VERSION << " from " << html(c.o.path)
    << ". Self-contained: no external resources.</footer>\n</main>\n<script>" << kBodyScript << "</script>\n</body>\n</html>\n";
}

// --top N.
int own_option(SubcommandArgs& args, Options& o) {
  int rc = 0;
  if (!args.count_option("--top", o.top, rc)) return args.unknown_option();
  return rc;
}

}  // namespace

int cmd_report(int argc, char** argv) {
  Options o;
  SubcommandArgs args("report", argc, argv);
  if (auto rc = read_options(args, o, print_help, [&] { return own_option(args, o); })) return *rc;
  Dump d;
  if (int rc = open_dump(args, o, ".html", d)) return rc;
  const fmt::Profile& p = d.p;
  const StepModel& sm = d.sm;
  const auto phase = std::optional<uint32_t>(d.phase);
  int rc = 0;
  Analysis a = analyze(p);
  AccessModel am = model_access(p, *phase);
  TieringModel tm = model_tiering(p, *phase);
  auto obj_id = object_identities(p, am);
  Symbolizer sym(p, o.symbols);
  Ctx c{p, a, sm, am, tm, obj_id, sym, o};
  uint64_t first = UINT64_MAX, last = 0;
  for (const auto& ob : p.objects) {
    first = std::min(first, ob.birth_ns);
    last = std::max({last, ob.birth_ns, is_alive(ob) ? 0 : ob.death_ns});
  }
  for (const auto& st : p.steps)
    if (st.start_ns) {
      first = std::min(first, st.start_ns);
      last = std::max(last, st.start_ns);
    }
  if (first == UINT64_MAX) first = last = 0;
  c.t0 = first;
  c.t_end = last;
  if (p.process.present && p.process.start_monotonic_ns && p.process.start_monotonic_ns <= first)
    c.t0 = p.process.start_monotonic_ns;
  if (p.process.present && p.process.end_monotonic_ns >= c.t_end) c.t_end = p.process.end_monotonic_ns;
  if (c.t_end <= c.t0) c.t_end = c.t0 + 1;

  std::ostringstream page;
  write_report(page, c);
  OutputFile out;
  if (!out.open(o.out)) return 1;
  const std::string text = page.str();
  out.stream() << text;
  rc = out.close();
  if (rc == 0 && o.out != "-")
    std::cout << "wrote " << printable(o.out) << " (" << human_bytes(text.size()) << ")\n";
  return rc ? rc : finish_output();
}

}  // namespace sentinel::view
