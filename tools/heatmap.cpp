// sentinel-view heatmap: which co-allocation groups (or object identities) touch how much of their
// bytes in which interval of the step, drawn in the terminal with block characters.
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "analysis.h"
#include "cli.h"
#include "json.h"
#include "phase_select.h"
#include "profile_model.h"
#include "view.h"

namespace sentinel::view {

namespace {

struct Options : SharedOptions {
  bool identities = false;
  bool ascii = false;
  bool scale_max = false;  // shade against the largest cell instead of the row's bytes
  size_t top = 0;          // rows (0: the default for the mode)
  size_t width = 0;        // 0: the terminal's, $COLUMNS, or 100
  int64_t step = -1;       // profiled step, -1: mean over all
};

void print_help() {
  std::cout << "Usage: sentinel-view heatmap [--identities] [--top N] [--step N] [--phase N]\n"
               "                             [--scale row|max] [--width N] [--ascii] DUMP\n"
               "Draws the access profile of a dump written with SENTINEL_MODE=profile: one row per\n"
               "co-allocation group (or object identity) of one phase, one column per interval of its\n"
               "step; each cell shades the bytes the row touched in that interval.\n"
               "\n"
               "  --phase N      the phase drawn (default: the main phase, the profiled phase the\n"
               "                 process spent the most time in)\n"
               "  --identities   rows are object identities (the largest N) instead of groups\n"
               "  --top N        rows drawn (default: 40 groups, 20 identities; 0: all)\n"
               "  --step N       only profiled step N (0-based) instead of the mean over all of them\n"
               "  --scale row    shade by the share of the row's own bytes touched (default)\n"
               "  --scale max    shade relative to the largest cell drawn\n"
               "  --width N      output width in columns (default: the terminal's, else 100)\n"
               "  --ascii        ASCII characters instead of Unicode blocks\n"
               "  -h, --help     show this help\n";
}

size_t terminal_width() {
  winsize ws{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return ws.ws_col;
  if (const char* c = std::getenv("COLUMNS")) {
    size_t v = 0;
    if (parse_count(c, v) && v >= 20) return v;
  }
  return 100;
}

std::string pad(std::string s, size_t w) {
  if (s.size() < w) s.resize(w, ' ');
  return s;
}
std::string rpad(const std::string& s, size_t w) {
  return s.size() < w ? std::string(w - s.size(), ' ') + s : s;
}

struct Glyphs {
  const char* outside;  // outside the row's lifetime
  const char* none;     // alive (or a group), not touched
  const char* level[4];
};
const Glyphs kUnicode = {" ", "\u00b7", {"\u2591", "\u2592", "\u2593", "\u2588"}};
const Glyphs kAscii = {" ", ".", {"-", "+", "*", "#"}};

struct Row {
  std::string label;
  std::vector<double> cells;  // per interval, mean bytes per profiled step
  double bytes = 0;           // the row's own bytes (shading base)
  uint64_t touched_per_step = 0;
  uint32_t live_first = 0, live_last = 0;  // intervals the row is alive in (identities)
};

// --identities, --ascii, --scale row|max, --top N, --step N, --width N.
int own_option(SubcommandArgs& args, Options& o) {
  const std::string& arg = args.arg();
  int rc = 0;
  size_t n = 0;
  std::string v;
  if (arg == "--identities") {
    o.identities = true;
  } else if (arg == "--ascii") {
    o.ascii = true;
  } else if (args.is("--scale")) {
    if (!args.value("--scale", v)) return args.error("--scale needs a value");
    if (v == "row")
      o.scale_max = false;
    else if (v == "max")
      o.scale_max = true;
    else
      return args.error("--scale: 'row' or 'max', not '" + v + "'");
  } else if (args.count_option("--top", n, rc, "a value")) {
    if (!rc) o.top = n ? n : SIZE_MAX;
  } else if (args.count_option("--step", n, rc, "a value")) {
    if (!rc) o.step = static_cast<int64_t>(n);
  } else if (args.count_option("--width", n, rc, "a value")) {
    if (!rc && n < 40) return args.error("--width: at least 40 columns");
    if (!rc) o.width = n;
  } else {
    return args.unknown_option();
  }
  return rc;
}

// The rows drawn, their column heads, and what was left out.
struct Rows {
  std::vector<Row> rows;
  std::string head;
  size_t total = 0;             // rows there are to draw (--top may draw fewer)
  size_t hidden_untouched = 0;  // groups touched in no interval, never drawn
};

// One row per co-allocation group touched in some interval, in heatmap_group_order.
Rows group_rows(const AccessModel& am, const Options& o) {
  const uint32_t n = am.intervals;
  Rows out;
  size_t limit = o.top ? o.top : 40;
  for (size_t gi : heatmap_group_order(am)) {
    const GroupRow& g = am.groups[gi];
    if (g.cells.empty()) {
      ++out.hidden_untouched;
      continue;
    }
    ++out.total;
    if (out.rows.size() >= limit) continue;
    Row r;
    r.label = rpad(std::to_string(g.g.id), 5) + " " + pad(lifetime_short(g.g.lifetime), 10) +
              rpad(std::to_string(g.g.members), 7) + rpad(human_bytes(g.g.bytes), 10);
    r.cells.assign(n, 0.0);
    for (const auto& [iv, b] : g.cells) r.cells[iv] = b;
    r.bytes = static_cast<double>(g.g.bytes);
    r.touched_per_step = g.touched / am.steps_used;
    r.live_first = 0;
    r.live_last = n - 1;
    out.rows.push_back(std::move(r));
  }
  out.head = rpad("group", 5) + " " + pad("class", 10) + rpad("members", 7) + rpad("bytes", 10);
  return out;
}

// One row per object identity, the largest first; blank outside the intervals it is alive in.
Rows identity_rows(const AccessModel& am, const Options& o) {
  const uint32_t n = am.intervals;
  Rows out;
  size_t limit = o.top ? o.top : 20;
  auto order = identities_by_size(am);
  out.total = order.size();
  for (size_t k = 0; k < order.size() && out.rows.size() < limit; ++k) {
    const IdentityRow& id = am.identities[order[k]];
    Row r;
    std::string span;
    if (id.id.lifetime == SENTINEL_LIFE_PERSISTENT || id.id.birth_interval == SENTINEL_NO_ORDINAL) {
      r.live_first = 0;
      r.live_last = n - 1;
      span = "all";
    } else if (id.id.lifetime == SENTINEL_LIFE_NEXT_STEP && id.id.death_interval != SENTINEL_NO_ORDINAL) {
      // Alive from its birth to the end of the step and, in the next step, up to its death (the ' marks
      // the next step's interval): the row is not cut.
      r.live_first = 0;
      r.live_last = n - 1;
      span = std::to_string(id.id.birth_interval) + "-" + std::to_string(id.id.death_interval) + "'";
    } else {
      r.live_first = std::min(id.id.birth_interval, n - 1);
      r.live_last = id.id.death_interval == SENTINEL_NO_ORDINAL ? n - 1 : std::min(id.id.death_interval, n - 1);
      if (r.live_last < r.live_first) r.live_last = r.live_first;
      span = std::to_string(r.live_first) + "-" + std::to_string(r.live_last);
    }
    r.label = rpad(std::to_string(id.id.id), 6) + " " + pad(lifetime_short(id.id.lifetime), 10) +
              rpad(human_bytes(id.id.size), 10) + rpad(std::to_string(id.id.group), 6) + " " + pad(span, 6);
    r.cells.assign(n, 0.0);
    for (const auto& [iv, b] : id.cells) r.cells[iv] = b;
    r.bytes = static_cast<double>(id.id.size);
    r.touched_per_step = id.touched / am.steps_used;
    out.rows.push_back(std::move(r));
  }
  out.head = rpad("id", 6) + " " + pad("class", 10) + rpad("size", 10) + rpad("group", 6) + " " + pad("alive", 6);
  return out;
}

// Geometry: label | cells | total. Each interval gets cw characters, or `per` intervals share one.
struct Layout {
  uint32_t intervals = 0;
  size_t label_w = 0;
  size_t total_w = 12;
  size_t cw = 1, per = 1;
  size_t columns = 0;
  double max_cell = 0;  // the largest cell drawn (--scale max)
};

Layout layout(const Rows& r, const Options& o, uint32_t n) {
  Layout l;
  l.intervals = n;
  l.label_w = r.head.size();
  const size_t width = o.width ? o.width : terminal_width();
  size_t avail = width > l.label_w + l.total_w + 4 ? width - l.label_w - l.total_w - 4 : 8;
  if (n <= avail) {
    l.cw = std::min<size_t>(3, avail / n);
  } else {
    l.per = (n + avail - 1) / avail;
  }
  l.columns = (n + l.per - 1) / l.per;
  for (const Row& row : r.rows)
    for (double c : row.cells) l.max_cell = std::max(l.max_cell, c);
  return l;
}

void write_title(std::ostream& os, const Dump& d, const AccessModel& am, const Options& o, const Layout& l) {
  os << "Access heatmap of " << printable(o.path) << ": " << (o.identities ? "identities" : "groups") << " x "
     << l.intervals << " intervals (" << phase_label(d.sm, am.phase) << ", ";
  if (o.step >= 0)
    os << "profiled step " << o.step;
  else
    os << "mean over " << am.steps_used << (am.steps_used == 1 ? " profiled step" : " profiled steps");
  if (am.session) os << ", granularity " << human_bytes(am.session->granularity_bytes);
  os << ")\n";
  os << "cell: bytes touched in the interval, as a share of "
     << (o.scale_max ? "the largest cell (" + human_bytes(static_cast<uint64_t>(l.max_cell)) + ")"
                     : std::string(o.identities ? "the identity's size" : "the group's bytes"));
  if (l.per > 1) os << "; one column = " << l.per << " intervals (the largest share shown)";
  os << "\n\n";
}

// Interval numbers above the columns: a tick every `tick` columns where the label fits.
std::string interval_axis(const Layout& l) {
  std::string axis(l.columns * l.cw, ' ');
  size_t digits = std::to_string(l.intervals - 1).size();
  size_t tick = 1;
  for (size_t t : {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}) {
    tick = t;
    if (t * l.cw >= digits + 1 || (l.cw >= digits && t == 1)) break;
  }
  for (size_t c = 0; c < l.columns; c += tick) {
    std::string lab = std::to_string(c * l.per);
    size_t at = c * l.cw;
    if (at + lab.size() > axis.size()) break;
    axis.replace(at, lab.size(), lab);
  }
  return axis;
}

// The glyph of column `col` of a row: the largest share among the intervals it covers.
const char* glyph(const Row& r, size_t col, const Layout& l, const Options& o, const Glyphs& gl) {
  double best = -1;
  bool alive = false;
  for (size_t iv = col * l.per; iv < std::min<size_t>((col + 1) * l.per, l.intervals); ++iv) {
    if (iv >= r.live_first && iv <= r.live_last) alive = true;
    double f;
    if (o.scale_max)
      f = l.max_cell > 0 ? r.cells[iv] / l.max_cell : 0;
    else
      f = r.bytes > 0 ? r.cells[iv] / r.bytes : (r.cells[iv] > 0 ? 1 : 0);
    best = std::max(best, f);
  }
  if (best <= 0) return alive ? gl.none : gl.outside;
  int level = best < 0.25 ? 0 : best < 0.5 ? 1 : best < 0.75 ? 2 : 3;
  return gl.level[level];
}

void write_rows(std::ostream& os, const Rows& r, const Layout& l, const Options& o, const Glyphs& gl) {
  os << std::string(l.label_w, ' ') << "  interval\n";
  os << r.head << " |" << interval_axis(l) << "| " << rpad("touched/step", l.total_w) << "\n";
  for (const Row& row : r.rows) {
    std::string line = row.label + " |";
    for (size_t c = 0; c < l.columns; ++c) {
      std::string g = glyph(row, c, l, o, gl);
      for (size_t k = 0; k < l.cw; ++k) line += g;
    }
    line += "| " + rpad(human_bytes(row.touched_per_step), l.total_w);
    os << line << "\n";
  }
  os << "\n";
}

// What was not drawn, and the legend.
void write_notes(std::ostream& os, const Rows& r, const AccessModel& am, const Options& o, const Glyphs& gl) {
  if (r.rows.size() < r.total)
    os << (r.total - r.rows.size()) << " more " << (o.identities ? "identities" : "groups")
       << " not drawn (--top 0 draws all)\n";
  if (r.hidden_untouched)
    os << r.hidden_untouched << (r.hidden_untouched == 1 ? " group" : " groups")
       << " touched in no interval not drawn\n";
  if (am.dropped_touches) os << "note: " << am.dropped_touches << " touches name an unknown identity or interval\n";
  os << "legend: " << gl.none << " " << (o.identities ? "alive, " : "") << "not touched   " << gl.level[0]
     << " < 25%   " << gl.level[1] << " 25-50%   " << gl.level[2] << " 50-75%   " << gl.level[3] << " >= 75%";
  if (o.identities) os << "   (blank: not alive)";
  os << "\n";
}

// A dump or phase without an access profile: one line that says so.
void write_no_profile(std::ostream& os, const Dump& d, const Options& o) {
  if (d.p.identities.empty() && d.p.groups.empty())
    os << printable(o.path) << ": no access profile in this dump (the IDENTITIES, TOUCHES and "
       << "GROUPS records are written with SENTINEL_MODE=profile)\n";
  else
    os << printable(o.path) << ": no access profile for phase " << d.phase
       << " (profiled phases: " << profiled_phases(d.sm) << ")\n";
}

}  // namespace

int cmd_heatmap(int argc, char** argv) {
  Options o;
  SubcommandArgs args("heatmap", argc, argv);
  if (auto rc = read_options(args, o, print_help, [&] { return own_option(args, o); })) return *rc;
  Dump d;
  if (int rc = open_dump(args, o, nullptr, d)) return rc;
  AccessModel am = model_access(d.p, d.phase, o.step);
  std::ostream& os = std::cout;
  if (!am.present || am.intervals == 0) {
    write_no_profile(os, d, o);
    return finish_output();
  }
  if (o.step >= 0 && am.session && static_cast<uint64_t>(o.step) >= am.session->profiled_steps)
    return args.error("--step " + std::to_string(o.step) + ": phase " + std::to_string(d.phase) + " has " +
                      std::to_string(am.session->profiled_steps) + " profiled steps");
  const Glyphs& gl = o.ascii ? kAscii : kUnicode;
  const Rows rows = o.identities ? identity_rows(am, o) : group_rows(am, o);
  const Layout l = layout(rows, o, am.intervals);
  write_title(os, d, am, o, l);
  write_rows(os, rows, l, o, gl);
  write_notes(os, rows, am, o, gl);
  return finish_output();
}

}  // namespace sentinel::view
