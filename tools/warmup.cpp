#include "warmup.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace sentinel::view {
namespace {

// The duration of each of the phase's steps (ns): to the next step of the same phase when it follows
// directly and both starts are known; 0 otherwise.
std::vector<uint64_t> step_durations(const fmt::Profile& p, const std::vector<uint64_t>& mine) {
  std::vector<uint64_t> d(mine.size(), 0);
  for (size_t k = 0; k + 1 < mine.size(); ++k) {
    const auto& a = p.steps[mine[k]];
    const auto& b = p.steps[mine[k + 1]];
    if (mine[k + 1] == mine[k] + 1 && a.start_ns && b.start_ns > a.start_ns) d[k] = b.start_ns - a.start_ns;
  }
  return d;
}

double mean_over(const std::vector<uint64_t>& d, const std::vector<size_t>& which, uint64_t unit) {
  uint64_t sum = 0, n = 0;
  for (size_t k : which)
    if (d[k]) sum += d[k], ++n;
  return n && unit ? static_cast<double>(sum) / static_cast<double>(n) / static_cast<double>(unit) : 0;
}

uint32_t trial_steps_of(const fmt::Profile& p, uint32_t phase) {
  for (const auto& plan : p.plans)
    if (plan.header.phase == phase && plan.trial.state != SENTINEL_TRIAL_NONE)
      return plan.trial.moving_steps + plan.trial.fixed_steps + plan.trial.replanned_steps;
  return 0;
}

std::string cost(double x) {
  if (x <= 0) return "";
  char b[32];
  std::snprintf(b, sizeof b, " (%.2fx a steady step)", x);
  return b;
}

std::string range(uint64_t a, uint64_t b) {
  return a == b ? "#" + std::to_string(a) : "#" + std::to_string(a) + "-#" + std::to_string(b);
}

}  // namespace

std::optional<Warmup> warmup_of(const fmt::Profile& p, uint32_t phase) {
  std::vector<uint64_t> mine;
  for (uint64_t i = 0; i < p.steps.size(); ++i)
    if (p.steps[i].phase == phase) mine.push_back(i);
  Warmup w;
  w.steps = mine.size();
  size_t lock = mine.size(), steady = 0;
  std::vector<size_t> profiled, checked;
  for (size_t k = 0; k < mine.size(); ++k) {
    const uint32_t f = p.steps[mine[k]].flags;
    if (f & SENTINEL_STEP_INFERRED) {
      if (lock == mine.size()) ++w.found_before;
      continue;
    }
    if (lock == mine.size()) lock = k;
    if (f & SENTINEL_STEP_PROFILED) profiled.push_back(k);
    if (f & SENTINEL_STEP_CHECKED) checked.push_back(k);
    if (f & (SENTINEL_STEP_PROFILED | SENTINEL_STEP_CHECKED)) steady = k + 1;
  }
  if (lock == mine.size()) return std::nullopt;
  if (steady < lock) steady = lock;
  w.lock_step = mine[lock];
  w.profiled = profiled.size();
  if (!profiled.empty()) w.first_profiled = mine[profiled.front()], w.last_profiled = mine[profiled.back()];
  w.checked = checked.size();
  if (!checked.empty()) w.first_checked = mine[checked.front()], w.last_checked = mine[checked.back()];
  w.trial_steps = trial_steps_of(p, phase);
  w.ended_in_warmup = steady >= mine.size();
  w.steady_from = w.ended_in_warmup ? mine.back() + 1 : mine[steady];
  w.steps_to_steady = steady - lock;
  const std::vector<uint64_t> d = step_durations(p, mine);
  std::vector<uint64_t> plain;
  for (size_t k = steady; k < mine.size(); ++k)
    if (d[k]) plain.push_back(d[k]);
  if (!plain.empty()) {
    std::nth_element(plain.begin(), plain.begin() + static_cast<std::ptrdiff_t>(plain.size() / 2), plain.end());
    w.steady_step_ns = plain[plain.size() / 2];
  }
  w.profiled_cost = mean_over(d, profiled, w.steady_step_ns);
  w.checked_cost = mean_over(d, checked, w.steady_step_ns);
  return w;
}

std::string warmup_text(const Warmup& w) {
  std::string s = "locked at step #" + std::to_string(w.lock_step);
  if (w.found_before)
    s += " (" + std::to_string(w.found_before) + (w.found_before == 1 ? " step" : " steps") + " found before it)";
  if (w.profiled) s += ", profiled " + range(w.first_profiled, w.last_profiled) + cost(w.profiled_cost);
  if (w.trial_steps) s += ", trial " + std::to_string(w.trial_steps) + " steps";
  if (w.checked) {
    std::string c = cost(w.checked_cost);
    s += ", checked " + range(w.first_checked, w.last_checked) + c;
  }
  if (w.ended_in_warmup && (w.profiled || w.checked)) {
    s += "; the run ended before a steady step";
  } else if (w.profiled || w.checked) {
    s += "; steady from #" + std::to_string(w.steady_from) + ", " + std::to_string(w.steps_to_steady) +
         (w.steps_to_steady == 1 ? " step" : " steps") + " after the lock";
  } else {
    s += "; never profiled";
  }
  return s;
}

}  // namespace sentinel::view
