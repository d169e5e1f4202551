#include "job.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "analysis.h"
#include "json.h"
#include "report_svg.h"
#include "tiering_model.h"
#include "view.h"

namespace sentinel::view {

namespace {

using report::html;
using report::num;

bool is_directory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// One rank's figures, from its dump.
struct RankRow {
  std::string path;
  int32_t rank = -1;
  uint32_t pid = 0;
  uint64_t steps = 0;
  size_t planned_phases = 0;
  uint64_t budget = 0;     // the main phase's plan budget
  uint32_t split = 0;      // ranks the node budget was split among (0: not split)
  uint64_t fast_peak = 0;  // measured fast-tier peak of tracked objects
  uint64_t migrated = 0;
  std::optional<double> measured_hit, predicted_hit;
  bool dry_run = false;
  uint32_t ended_by_signal = 0;
};

// The dumps: each operand, or the *.prof files of a directory (sorted by name).
bool expand(const std::vector<std::string>& operands, std::vector<std::string>* paths) {
  for (const std::string& op : operands) {
    if (!is_directory(op)) {
      paths->push_back(op);
      continue;
    }
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(op, ec))
      if (e.path().extension() == ".prof" && e.is_regular_file()) found.push_back(e.path().string());
    if (ec || found.empty()) {
      std::cerr << kProg << ": " << printable(op) << ": " << (ec ? ec.message() : "no .prof dump in this directory")
                << "\n";
      return false;
    }
    std::sort(found.begin(), found.end());
    paths->insert(paths->end(), found.begin(), found.end());
  }
  return true;
}

RankRow row_of(const std::string& path, const fmt::Profile& p) {
  RankRow r;
  r.path = path;
  r.rank = p.process.rank;
  r.pid = p.process.pid;
  r.steps = p.steps.size();
  r.planned_phases = p.plans.size();
  r.ended_by_signal =
      (p.process.flags & SENTINEL_PROCESS_ENDED_BY_SIGNAL) ? SENTINEL_PROCESS_SIGNAL(p.process.flags) : 0;
  uint32_t main_phase = 0;
  uint64_t most = 0;
  for (const auto& pl : p.plans) {
    uint64_t n =
        std::count_if(p.steps.begin(), p.steps.end(), [&](const auto& s) { return s.phase == pl.header.phase; });
    if (n >= most) most = n, main_phase = pl.header.phase;
  }
  TieringModel tm = model_tiering(p, main_phase);
  r.budget = tm.budget();
  r.fast_peak = tm.fast_peak();
  r.migrated = tm.migrated_bytes;
  r.measured_hit = tm.measured_hit();
  r.predicted_hit = tm.predicted_hit();
  if (tm.tiering) {
    r.dry_run = tm.tiering->flags & SENTINEL_TIER_DRY_RUN;
    r.split = (tm.tiering->flags & SENTINEL_TIER_BUDGET_SPLIT) ? 1 : 0;
  }
  return r;
}

bool load_rows(const std::vector<std::string>& operands, std::vector<RankRow>* rows) {
  std::vector<std::string> paths;
  if (!expand(operands, &paths)) return false;
  for (const std::string& path : paths) {
    std::optional<fmt::Profile> p = load_profile(path);
    if (!p) return false;
    rows->push_back(row_of(path, *p));
  }
  std::stable_sort(rows->begin(), rows->end(), [](const RankRow& a, const RankRow& b) {
    return a.rank != b.rank ? static_cast<uint32_t>(a.rank) < static_cast<uint32_t>(b.rank) : a.pid < b.pid;
  });
  return true;
}

std::string share(const std::optional<double>& v) {
  if (!v) return "-";
  char b[16];
  std::snprintf(b, sizeof b, "%.3f", *v);
  return b;
}

std::string rank_label(const RankRow& r) {
  return r.rank >= 0 ? std::to_string(r.rank) : "-";
}

uint64_t total(const std::vector<RankRow>& rows, uint64_t RankRow::*field) {
  uint64_t t = 0;
  for (const RankRow& r : rows) t += r.*field;
  return t;
}

void print_text(std::ostream& os, const std::vector<RankRow>& rows) {
  os << "job of " << rows.size() << " dump" << (rows.size() == 1 ? "" : "s") << "\n\n";
  os << "rank        pid  steps  plans      budget   fast peak  fast-hit (predicted)    migrated  dump\n";
  for (const RankRow& r : rows) {
    char line[256];
    std::snprintf(line, sizeof line, "%4s %10u %6llu %6zu %11s %11s  %8s (%s) %11s  ", rank_label(r).c_str(), r.pid,
                  static_cast<unsigned long long>(r.steps), r.planned_phases, human_bytes(r.budget).c_str(),
                  human_bytes(r.fast_peak).c_str(), share(r.measured_hit).c_str(), share(r.predicted_hit).c_str(),
                  human_bytes(r.migrated).c_str());
    os << line << printable(r.path);
    if (r.dry_run) os << " (dry run)";
    if (r.ended_by_signal) os << " (ended by signal " << r.ended_by_signal << ")";
    os << "\n";
  }
  os << "\ntogether: budgets " << human_bytes(total(rows, &RankRow::budget)) << ", fast peaks "
     << human_bytes(total(rows, &RankRow::fast_peak)) << " (each rank's own peak, summed: an upper bound of the "
     << "node's), migrated " << human_bytes(total(rows, &RankRow::migrated)) << "\n";
  bool split = std::any_of(rows.begin(), rows.end(), [](const RankRow& r) { return r.split; });
  if (split) os << "the node budget was split among the ranks that share the fast node (SENTINEL_BUDGET_PER=node)\n";
}

void opt_number(std::ostream& os, const std::optional<double>& v) {
  if (v)
    os << *v;
  else
    os << "null";
}

void print_json(std::ostream& os, const std::vector<RankRow>& rows) {
  os << "{\"dumps\":[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const RankRow& r = rows[i];
    os << (i ? "," : "") << "{\"file\":" << json_quote(r.path) << ",\"rank\":" << r.rank << ",\"pid\":" << r.pid
       << ",\"steps\":" << r.steps << ",\"planned_phases\":" << r.planned_phases
       << ",\"fast_budget_bytes\":" << r.budget << ",\"budget_split\":" << (r.split ? "true" : "false")
       << ",\"fast_peak_bytes\":" << r.fast_peak << ",\"migrated_bytes\":" << r.migrated << ",\"fast_hit_share\":";
    opt_number(os, r.measured_hit);
    os << ",\"predicted_hit_share\":";
    opt_number(os, r.predicted_hit);
    os << ",\"dry_run\":" << (r.dry_run ? "true" : "false") << ",\"ended_by_signal\":" << r.ended_by_signal << "}";
  }
  os << "],\"fast_budget_bytes_total\":" << total(rows, &RankRow::budget)
     << ",\"fast_peak_bytes_total\":" << total(rows, &RankRow::fast_peak)
     << ",\"migrated_bytes_total\":" << total(rows, &RankRow::migrated) << "}\n";
}

// Horizontal bars of one figure per rank.
void bars(std::ostream& os, const char* title, const std::vector<RankRow>& rows, double (*value)(const RankRow&),
          std::string (*label)(const RankRow&)) {
  double top = 0;
  for (const RankRow& r : rows) top = std::max(top, value(r));
  os << "<h2>" << title << "</h2>\n<svg width=\"720\" height=\"" << 24 * rows.size() + 8 << "\">\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    double w = top > 0 ? 480.0 * value(rows[i]) / top : 0;
    os << "<text x=\"0\" y=\"" << 24 * i + 18 << "\">rank " << html(rank_label(rows[i])) << "</text><rect x=\"80\" y=\""
       << 24 * i + 4 << "\" width=\"" << num(w, 1) << "\" height=\"18\" fill=\"#4a7fb5\"/><text x=\"" << num(90 + w, 1)
       << "\" y=\"" << 24 * i + 18 << "\">" << html(label(rows[i])) << "</text>\n";
  }
  os << "</svg>\n";
}

void write_page(std::ostream& os, const std::vector<RankRow>& rows) {
  os << "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Sentinel job report</title>\n"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td.l{text-align:left}</style></head><body>\n"
        "<h1>Sentinel: a job of "
     << rows.size() << " dump" << (rows.size() == 1 ? "" : "s") << "</h1>\n<table>\n<tr><th>rank</th><th>pid</th>"
     << "<th>steps</th><th>plans</th><th>budget</th><th>fast peak</th><th>fast-hit</th><th>predicted</th>"
     << "<th>migrated</th><th>dump</th></tr>\n";
  for (const RankRow& r : rows)
    os << "<tr><td>" << html(rank_label(r)) << "</td><td>" << r.pid << "</td><td>" << r.steps << "</td><td>"
       << r.planned_phases << "</td><td>" << html(human_bytes(r.budget)) << "</td><td>"
       << html(human_bytes(r.fast_peak)) << "</td><td>" << share(r.measured_hit) << "</td><td>"
       << share(r.predicted_hit) << "</td><td>" << html(human_bytes(r.migrated)) << "</td><td class=\"l\">"
       << html(r.path) << (r.dry_run ? " (dry run)" : "") << "</td></tr>\n";
  os << "</table>\n<p>Together: budgets " << html(human_bytes(total(rows, &RankRow::budget))) << ", fast peaks "
     << html(human_bytes(total(rows, &RankRow::fast_peak))) << ", migrated "
     << html(human_bytes(total(rows, &RankRow::migrated))) << ". Each rank's own report: <code>sentinel-view report "
     << "DUMP</code>.</p>\n";
  bars(
      os, "Fast-tier peak per rank", rows, [](const RankRow& r) { return static_cast<double>(r.fast_peak); },
      [](const RankRow& r) { return human_bytes(r.fast_peak); });
  bars(
      os, "Measured fast-hit share per rank", rows, [](const RankRow& r) { return r.measured_hit.value_or(0); },
      [](const RankRow& r) { return share(r.measured_hit); });
  os << "</body></html>\n";
}

}  // namespace

bool is_job(const std::vector<std::string>& operands) {
  return operands.size() > 1 || (operands.size() == 1 && is_directory(operands[0]));
}

int job_summary(const std::vector<std::string>& operands, bool json) {
  std::vector<RankRow> rows;
  if (!load_rows(operands, &rows)) return 1;
  if (json)
    print_json(std::cout, rows);
  else
    print_text(std::cout, rows);
  return finish_output();
}

int job_report(const std::vector<std::string>& operands, const std::string& out_path) {
  std::vector<RankRow> rows;
  if (!load_rows(operands, &rows)) return 1;
  std::ostringstream page;
  write_page(page, rows);
  OutputFile out;
  if (!out.open(out_path)) return 1;
  out.stream() << page.str();
  int rc = out.close();
  if (rc == 0 && out_path != "-")
    std::cout << "wrote " << printable(out_path) << " (" << human_bytes(page.str().size()) << ")\n";
  return rc ? rc : finish_output();
}

}  // namespace sentinel::view
