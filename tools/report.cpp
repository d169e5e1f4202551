// sentinel-view report: one self-contained HTML page (inline CSS, SVG and a little JavaScript; nothing
// is fetched) with the footprint over the run and over one step, the access heatmap, the lifetimes, and
// the summary tables. The plots are drawn here as static SVG, so the page reads without JavaScript; the
// script only adds hover read-outs and the groups/identities switch, and marks the page
// data-render="ok" (or "error", with the messages in #js-errors) for the headless-browser test.
// Here: the options, the page's frame (head, style, scripts, cards, the order of the sections) and
// cmd_report; the sections are tools/report_*.cpp (report_sections.h, report_placement.h), their
// formatting and plot pieces report_svg.h.
#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "analysis.h"
#include "base/signal_names.h"
#include "cli.h"
#include "job.h"
#include "json.h"
#include "phase_select.h"
#include "profile_model.h"
#include "report_placement.h"
#include "report_sections.h"
#include "report_svg.h"
#include "sentinel_build_config.h"
#include "symbolizer.h"
#include "view.h"

namespace sentinel::view {

using namespace report;

namespace {

struct Options : SharedOptions {
  Options() { takes = kSymbols | kOutput; }
  size_t top = 15;  // rows of the tables
};

void print_help() {
  std::cout << "Usage: sentinel-view report [-o FILE.html] [--top N] [--phase N] [--no-symbols] DUMP\n"
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
  std::string title =
      "Sentinel report" + (cmd.empty() ? std::string() : ": " + (cmd.size() > 60 ? cmd.substr(0, 57) + "..." : cmd));
  s << "<!DOCTYPE html>\n<html lang=\"en\" data-render=\"pending\">\n<head>\n<meta charset=\"utf-8\">\n"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
       "script-src 'unsafe-inline'; img-src data:\">\n"
    << "<title>" << html(title) << "</title>\n<style>" << kCss << "</style>\n<script>" << kHeadScript
    << "</script>\n</head>\n<body>\n<main>\n";
  s << "<pre id=\"js-errors\" hidden></pre>\n";
  s << "<h1>Sentinel profile</h1>\n<p class=\"sub\">";
  if (p.process.present) {
    s << "<b>" << html(cmd.empty() ? p.process.executable : cmd) << "</b>";
    if (!cmd.empty() && !p.process.executable.empty()) s << " &middot; " << html(p.process.executable);
    s << " &middot; pid " << p.process.pid;
    if (p.process.rank >= 0) s << " &middot; rank " << p.process.rank;
    if (auto d = p.process.duration_ns()) s << " &middot; ran " << html(human_duration(*d));
    if (p.process.flags & SENTINEL_PROCESS_SNAPSHOT) s << " &middot; <b>snapshot</b> (the process ran on)";
    if (p.process.flags & SENTINEL_PROCESS_ENDED_BY_SIGNAL) {
      const int sig = static_cast<int>(SENTINEL_PROCESS_SIGNAL(p.process.flags));
      const char* name = signal_name(sig);
      s << " &middot; <b>ended by " << (name ? std::string(name) : "signal " + std::to_string(sig)) << "</b>";
      if (!p.crash.empty()) s << " (a crash: <code>sentinel-view summary</code> shows its stack)";
    }
    s << " &middot; ";
  }
  s << html(c.path) << " (format " << p.major << "." << p.minor << ", " << html(human_bytes(p.file_size)) << ")</p>\n";

  s << "<div class=\"cards\">";
  card(s, with_commas(a.objects), "tracked objects");
  card(s, human_bytes(a.peak_live_bytes), "peak live tracked bytes");
  card(s, human_bytes(a.tracked_bytes), "bytes allocated (tracked)");
  card(s, std::to_string(sm.steps), sm.steps ? "training steps detected" : "steps (none detected)");
  card(s, std::to_string(sm.allocations_per_step), "allocations per step");
  card(s, std::to_string(sm.intervals_per_step), "intervals per step");
  if (sm.phases.size() > 1)
    card(s, std::to_string(sm.phases.size()), "phases (main: " + std::to_string(sm.main_number()) + ")");
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
  s << "<p class=\"note\">Live tracked bytes (objects of at least SENTINEL_MIN_BYTES) against wall time since the "
       "process "
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
    s << "<p class=\"note\">No steps in this dump (no STEPS record: the step detector did not lock on, or the dump is "
         "format 1.0).</p>\n";
  }

  s << "<h2>Access heatmap</h2>\n";
  if (am.present && am.intervals > 0)
    heatmaps(s, c);
  else if (!p.identities.empty() || !p.groups.empty())
    s << "<p class=\"note\">No access profile for phase " << am.phase
      << " (profiled phases: " << html(profiled_phases(sm)) << ").</p>\n";
  else
    s << "<p class=\"note\">No access profile in this dump: run with SENTINEL_MODE=profile to record which objects "
         "each "
         "interval of the step touches.</p>\n";

  s << "<h2>Lifetimes</h2>\n";
  if (am.present && !am.identities.empty() && am.intervals > 0)
    lifetimes_identities(s, c);
  else
    lifetimes_objects(s, c);

  placement_section(s, c.tm);

  s << "<h2>Details</h2>\n";
  tables(s, c);
  s << "<footer>Written by sentinel-view " << SENTINEL_VERSION << " from " << html(c.path)
    << ". Self-contained: no external resources.</footer>\n</main>\n<script>" << kBodyScript
    << "</script>\n</body>\n</html>\n";
}

// --top N.
int own_option(SubcommandArgs& args, Options& o) {
  int rc = 0;
  if (!args.count_option("--top", o.top, rc)) return args.unknown_option();
  return rc;
}

// The run's time line: from the process start (or the first birth or step) to its end (or the
// last birth, death or step start); never empty.
void set_time_line(Ctx& c) {
  const fmt::Profile& p = c.p;
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
}

}  // namespace

int cmd_report(int argc, char** argv) {
  Options o;
  SubcommandArgs args("report", argc, argv);
  if (auto rc = read_options(args, o, print_help, [&] { return own_option(args, o); })) return *rc;
  if (is_job(args.operands())) {  // the ranks of a job side by side: DIR.job.html, or sentinel-job.html
    std::string first = args.operands()[0];
    while (first.size() > 1 && first.back() == '/') first.pop_back();
    return job_report(args.operands(), !o.out.empty()                ? o.out
                                       : args.operands().size() == 1 ? first + ".job.html"
                                                                     : "sentinel-job.html");
  }
  Dump d;
  if (int rc = open_dump(args, o, ".html", d)) return rc;
  Analysis a = analyze(d.p);
  AccessModel am = model_access(d.p, d.phase);
  TieringModel tm = model_tiering(d.p, d.phase);
  auto obj_id = object_identities(d.p, am);
  Symbolizer sym(d.p, o.symbols);
  Ctx c{d.p, a, d.sm, am, tm, obj_id, sym, o.path, o.top};
  set_time_line(c);

  std::ostringstream page;
  write_report(page, c);
  OutputFile out;
  if (!out.open(o.out)) return 1;
  const std::string text = page.str();
  out.stream() << text;
  int rc = out.close();
  if (rc == 0 && o.out != "-") std::cout << "wrote " << printable(o.out) << " (" << human_bytes(text.size()) << ")\n";
  return rc ? rc : finish_output();
}

}  // namespace sentinel::view
