// The report's formatting and plot pieces. See report_svg.h.
#include "report_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "json.h"
#include "sentinel/format.h"

namespace sentinel::view::report {

std::string html(std::string_view s) {
  std::string p = printable(s), out;
  out.reserve(p.size());
  for (char c : p) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string num(double v, int decimals) {
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
    case SENTINEL_LIFE_PERSISTENT:
      return "#4e79a7";
    case SENTINEL_LIFE_STEP:
      return "#f28e2b";
    case SENTINEL_LIFE_SHORT:
      return "#59a14f";
    case SENTINEL_LIFE_NEXT_STEP:
      return "#edc948";
    default:
      return "#9d9d9d";
  }
}

std::string heat_color(double f) {
  static const double stops[][3] = {{224, 236, 244}, {158, 188, 218}, {140, 150, 198}, {136, 86, 167}, {129, 15, 124}};
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

std::vector<double> nice_ticks(double max, int target) {
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

void y_byte_grid(std::ostream& s, const Frame& f, const ByteAxis& ax) {
  for (size_t i = 0; i < ax.ticks.size(); ++i) {
    double y = f.Y(ax.ticks[i]);
    s << "<line class=\"grid\" x1=\"" << c2(f.left) << "\" x2=\"" << c2(f.left + f.width) << "\" y1=\"" << c2(y)
      << "\" y2=\"" << c2(y) << "\"/>";
    s << "<text class=\"tick\" x=\"" << c2(f.left - 6) << "\" y=\"" << c2(y + 3.5) << "\" text-anchor=\"end\">"
      << html(ax.labels[i]) << "</text>";
  }
}

void x_ticks(std::ostream& s, const Frame& f, const std::vector<double>& ticks, double limit, double dy,
             const std::function<std::string(double)>& label) {
  for (double t : ticks) {
    if (t > limit) break;
    double x = f.X(t);
    s << "<line class=\"tickline\" x1=\"" << c2(x) << "\" x2=\"" << c2(x) << "\" y1=\"" << c2(f.top + f.height)
      << "\" y2=\"" << c2(f.top + f.height + 4) << "\"/><text class=\"tick\" x=\"" << c2(x) << "\" y=\""
      << c2(f.top + f.height + dy) << "\" text-anchor=\"middle\">" << label(t) << "</text>";
  }
}

void hover_data(std::ostream& s, const char* id, const Frame& f, const std::vector<double>& xs,
                const std::vector<std::string>& labels) {
  std::string x;
  for (size_t i = 0; i < xs.size(); ++i) x += (i ? "," : "") + c2(xs[i]);
  s << "<script type=\"application/json\" id=\"" << id << "\">"
    << script_safe("{\"top\":" + c2(f.top) + ",\"bottom\":" + c2(f.top + f.height) + ",\"x\":[" + x +
                   "],\"label\":" + json_str_array(labels) + "}")
    << "</script>\n";
}

std::string json_str_array(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + json_quote(v[i]);
  return s + "]";
}

std::string script_safe(std::string s) {
  for (size_t i = 0; (i = s.find("</", i)) != std::string::npos; i += 3) s.replace(i, 2, "<\\/");
  return s;
}

}  // namespace sentinel::view::report
