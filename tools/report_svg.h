// The report's formatting and plot pieces (tools/report_svg.cpp): HTML escaping, numbers, colors,
// axes and the hover data of its static SVG plots. Shared by report.cpp and its sections.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace sentinel::view::report {

// Escaped for HTML text and attribute values (after printable(): control bytes as \xNN).
std::string html(std::string_view s);
// "%.*f".
std::string num(double v, int decimals = 1);
// 1234567 -> "1,234,567".
std::string with_commas(uint64_t v);
// part / whole as "12.3%", "n/a" when whole is 0.
std::string pct(double part, double whole);
// Coordinates in SVG user units, two decimals at most.
std::string c2(double v);

// The color of a lifetime class (persistent, step-scoped, short-lived, other).
const char* life_color(uint8_t life);
// A sequential blue-purple scale for the heatmap, f in (0, 1].
std::string heat_color(double f);

// Ticks 0, step, 2*step ... up to the first one >= max (1, 2 or 5 times a power of ten).
std::vector<double> nice_ticks(double max, int target = 5);

struct ByteAxis {
  std::vector<double> ticks;  // in bytes
  std::vector<std::string> labels;
  double max = 1;
};
// Ticks in the binary unit that suits `max`, labeled "1.5 MiB".
ByteAxis byte_axis(double max);

// "350 µs", "12 ms", "1.5 s": a time on an axis spanning `span` seconds.
std::string time_label(double seconds, double span);

// A plot area in an SVG: data coordinates -> pixels.
struct Frame {
  double left, top, width, height;
  double x0, x1, y0, y1;
  double X(double v) const { return left + (x1 > x0 ? (v - x0) / (x1 - x0) : 0) * width; }
  double Y(double v) const { return top + height - (y1 > y0 ? (v - y0) / (y1 - y0) : 0) * height; }
};

// The horizontal grid lines and labels of a byte axis.
void y_byte_grid(std::ostream& s, const Frame& f, const ByteAxis& ax);

// Tick marks under the x axis of `f` at the ticks up to `limit` (data units), each with its label
// (HTML, from `label`) `dy` below the axis.
void x_ticks(std::ostream& s, const Frame& f, const std::vector<double>& ticks, double limit, double dy,
             const std::function<std::string(double)>& label);

// The data of a plot's hover read-out (the page's script): a <script type="application/json"
// id=ID> with the plot area's top and bottom, and the x position and label of each column.
void hover_data(std::ostream& s, const char* id, const Frame& f, const std::vector<double>& xs,
                const std::vector<std::string>& labels);

// ["a","b"], JSON-quoted.
std::string json_str_array(const std::vector<std::string>& v);
// JSON embedded in a <script type="application/json">: no "</" may appear.
std::string script_safe(std::string s);

}  // namespace sentinel::view::report
