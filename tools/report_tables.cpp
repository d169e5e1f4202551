// The report's detail tables: phases, profiling sessions, co-allocation groups, identities,
// allocation sites, lifetimes, sizes, runtime counters and configuration.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis.h"
#include "report_sections.h"
#include "report_svg.h"

namespace sentinel::view::report {

namespace {

void kv_row(std::ostream& s, const std::string& k, const std::string& v) {
  s << "<tr><th>" << html(k) << "</th><td>" << v << "</td></tr>";
}

// Rows of a table of n: --top N of them (0: all).
size_t limit(const Ctx& c, size_t n) {
  return c.top ? std::min(c.top, n) : n;
}

// Every phase: its steps and, when planned and checked, its budget and shares; the phase drawn in bold.
void phases_table(std::ostream& s, const Ctx& c) {
  const auto& sm = c.sm;
  s << "<h3>Phases</h3><table class=\"data\" id=\"phases\"><thead><tr><th>phase</th><th>steps</th><th>first &ndash; "
       "last</th>"
       "<th>allocations / step</th><th>intervals</th><th>step "
       "time</th><th>profiled</th><th>inferred</th><th>marked</th>"
       "<th>identities</th><th>budget</th><th>predicted</th><th>measured</th><th>misplaced</th></tr></thead><tbody>";
  for (const auto& ph : sm.phases) {
    const PhaseTiering* t = c.tm.find(ph.phase);
    auto share = [](std::optional<double> v) { return v ? num(*v * 100) + "%" : std::string("&ndash;"); };
    std::string name = std::to_string(ph.phase);
    if (&ph == sm.main()) name += " (main)";
    if (ph.phase == c.am.phase && sm.phases.size() > 1) name = "<b>" + name + "</b>";
    s << "<tr><td>" << name << "</td><td>" << ph.steps << "</td><td>";
    if (ph.steps)
      s << "#" << ph.first_step << " &ndash; #" << ph.last_step;
    else
      s << "&ndash;";
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
    s << "<p class=\"note\">The step, heatmap, lifetimes and placement above are of phase " << c.am.phase
      << " (in bold; sentinel-view report --phase N draws another). Budget and predicted share: the phase's PLAN; "
         "measured: PLACEMENT; misplaced: objects found on the other node than planned right after a boundary's moves, "
         "of those asked.</p>\n";
}

void session_table(std::ostream& s, const fmt::ProfileSession& ses) {
  s << "<h3>Profiling session</h3><table class=\"kv\">";
  kv_row(s, "profiled steps",
         std::to_string(ses.profiled_steps) + " from step #" + std::to_string(ses.first_profiled_step) + " (phase " +
             std::to_string(ses.phase) + ")");
  kv_row(s, "granularity", html(human_bytes(ses.granularity_bytes)));
  kv_row(s, "faults",
         with_commas(ses.faults) + ", handler " + html(human_duration(ses.fault_handler_ns)) +
             (ses.faults ? " (" + html(human_duration(ses.fault_handler_ns / ses.faults)) + " per fault)" : ""));
  kv_row(s, "system-call unprotects", with_commas(ses.syscall_unprotects));
  std::string names;
  for (const auto& n : ses.counter_names) names += (names.empty() ? "" : ", ") + html(n);
  kv_row(s, "hardware counters", names.empty() ? "none (faults only)" : names);
  s << "</table>\n";
}

// The phase's co-allocation groups, by bytes.
void groups_table(std::ostream& s, const Ctx& c) {
  const auto& am = c.am;
  std::vector<size_t> gorder(am.groups.size());
  for (size_t i = 0; i < gorder.size(); ++i) gorder[i] = i;
  std::sort(gorder.begin(), gorder.end(), [&](size_t x, size_t y) {
    if (am.groups[x].g.bytes != am.groups[y].g.bytes) return am.groups[x].g.bytes > am.groups[y].g.bytes;
    return am.groups[x].g.id < am.groups[y].g.id;
  });
  s << "<h3>Co-allocation groups of phase " << am.phase << " (" << limit(c, gorder.size()) << " of " << gorder.size()
    << ", by bytes)</h3><table class=\"data\"><thead><tr><th>group</th><th "
       "class=\"l\">class</th><th>members</th><th>bytes</th>"
       "<th>touched / step</th><th class=\"l\">intervals touched</th></tr></thead><tbody>";
  for (size_t i = 0; i < limit(c, gorder.size()); ++i) {
    const GroupRow& g = am.groups[gorder[i]];
    s << "<tr><td>" << g.g.id
      << "</td><td class=\"l\"><span class=\"sw\" style=\"background:" << life_color(g.g.lifetime) << "\"></span>"
      << lifetime_name(g.g.lifetime) << "</td><td>" << g.g.members << "</td><td>" << html(human_bytes(g.g.bytes))
      << "</td><td>" << html(human_bytes(g.touched / am.steps_used)) << "</td><td class=\"l\">"
      << (g.interval_list.empty() ? "none" : html(g.interval_list)) << "</td></tr>";
  }
  s << "</tbody></table>\n";
}

// The phase's identities in `order`.
void identities_table(std::ostream& s, const Ctx& c, const char* title, const std::vector<size_t>& order) {
  const auto& am = c.am;
  s << "<h3>" << title << " of phase " << am.phase << " (" << limit(c, order.size()) << " of " << order.size()
    << ")</h3><table class=\"data\"><thead><tr><th>id</th><th "
       "class=\"l\">class</th><th>size</th><th>site</th><th>ordinal</th>"
       "<th>born</th><th>dies</th><th>instances</th><th>touched / "
       "step</th><th>intervals</th><th>group</th></tr></thead><tbody>";
  auto opt = [](uint32_t v) { return v == SENTINEL_NO_ORDINAL ? std::string("&ndash;") : std::to_string(v); };
  for (size_t i = 0; i < limit(c, order.size()); ++i) {
    const IdentityRow& r = am.identities[order[i]];
    s << "<tr><td>" << r.id.id
      << "</td><td class=\"l\"><span class=\"sw\" style=\"background:" << life_color(r.id.lifetime) << "\"></span>"
      << lifetime_name(r.id.lifetime) << "</td><td>" << html(human_bytes(r.id.size)) << "</td><td>"
      << (r.id.site == UINT32_MAX ? std::string("&ndash;") : std::to_string(r.id.site)) << "</td><td>"
      << opt(r.id.ordinal) << "</td><td>" << opt(r.id.birth_interval) << "</td><td>" << opt(r.id.death_interval)
      << "</td><td>" << r.id.instances << "</td><td>" << html(human_bytes(r.touched / am.steps_used)) << "</td><td>"
      << r.intervals_touched << "</td><td>" << r.id.group << "</td></tr>";
  }
  s << "</tbody></table>\n";
}

// Allocation sites by bytes with their symbolized stacks, and what the symbolizer noted.
void sites_table(std::ostream& s, const Ctx& c) {
  const auto& a = c.a;
  size_t ns = limit(c, a.sites.size());
  s << "<h3>Allocation sites (" << ns << " of " << a.sites.size()
    << ", by bytes)</h3><table class=\"data sites\"><thead><tr>"
       "<th>site</th><th>objects</th><th>bytes</th><th>share</th><th class=\"l\">stack (innermost "
       "first)</th></tr></thead><tbody>";
  for (size_t i = 0; i < ns; ++i) {
    const SiteUsage& su = a.sites[i];
    s << "<tr><td>" << (su.id == UINT32_MAX ? std::string("?") : std::to_string(su.id)) << "</td><td>" << su.objects
      << "</td><td>" << html(human_bytes(su.bytes)) << "</td><td>"
      << pct(static_cast<double>(su.bytes), static_cast<double>(a.tracked_bytes)) << "</td><td class=\"frames\">";
    if (const fmt::Site* site = su.id == UINT32_MAX ? nullptr : c.p.find_site(su.id))
      for (uint64_t fr : site->frames) s << "<div>" << html(c.sym.frame(fr)) << "</div>";
    s << "</td></tr>";
  }
  s << "</tbody></table>\n";
  for (const auto& msg : c.sym.problems()) s << "<p class=\"note\">" << html(msg) << "</p>";
}

// Lifetimes and sizes, side by side.
void lifetimes_and_sizes(std::ostream& s, const Analysis& a) {
  s << "<div class=\"cols\"><div><h3>Lifetimes</h3><table class=\"data\"><thead><tr><th "
       "class=\"l\">lifetime</th><th>objects</th><th>bytes</th></tr></thead><tbody>";
  for (size_t i = 0; i < kLifetimeBuckets; ++i)
    s << "<tr><td class=\"l\">" << kLifetimeLabels[i] << "</td><td>" << a.lifetimes[i].objects << "</td><td>"
      << html(human_bytes(a.lifetimes[i].bytes)) << "</td></tr>";
  s << "</tbody></table></div><div><h3>Sizes</h3><table class=\"data\"><thead><tr><th class=\"l\">size "
       "class</th><th>objects</th><th>bytes</th></tr></thead><tbody>";
  for (const auto& sc : a.size_classes)
    s << "<tr><td class=\"l\">"
      << html(sc.max == 1 ? std::string("0 B")
                          : human_bytes(sc.min) + " \u2013 " + (sc.max ? human_bytes(sc.max) : "\u2026"))
      << "</td><td>" << sc.b.objects << "</td><td>" << html(human_bytes(sc.b.bytes)) << "</td></tr>";
  s << "</tbody></table></div></div>\n";
}

// Runtime counters (the last value of each name, in first-seen order) and configuration.
void counters_and_config(std::ostream& s, const fmt::Profile& p) {
  if (p.stats.empty() && p.config.empty()) return;
  s << "<div class=\"cols\">";
  if (!p.stats.empty()) {
    std::map<std::string, uint64_t> st;
    std::vector<std::string> order;
    for (const auto& x : p.stats)
      if (st.emplace(x.name, x.value).second)
        order.push_back(x.name);
      else
        st[x.name] = x.value;
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

}  // namespace

void tables(std::ostream& s, const Ctx& c) {
  if (!c.sm.phases.empty()) phases_table(s, c);
  for (const auto& ses : c.p.sessions) session_table(s, ses);
  if (c.am.present) {
    groups_table(s, c);
    identities_table(s, c, "Identities by bytes", identities_by_size(c.am));
    identities_table(s, c, "Identities by bytes touched", identities_by_touches(c.am));
  }
  sites_table(s, c);
  lifetimes_and_sizes(s, c.a);
  counters_and_config(s, c.p);
}

}  // namespace sentinel::view::report
