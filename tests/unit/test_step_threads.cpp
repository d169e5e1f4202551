// Step detector on streams from thread pools: recorded fixtures whose steps come in a different order
// every step (tests/steps/workloads.py), and synthetic streams whose steps are random permutations.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <tuple>

#include "step_streams.h"

using namespace sentinel;
using namespace step_streams;

namespace {

// Distance from a to the nearest value of sorted v.
uint64_t nearest(const std::vector<uint64_t>& v, uint64_t a) {
  uint64_t best = UINT64_MAX;
  for (uint64_t x : v) best = std::min(best, x > a ? x - a : a - x);
  return best;
}

// What the detector made of a fixture, measured against its marks (from the fourth true step on).
struct Measure {
  size_t true_steps = 0;      // marks from the fourth on
  size_t found = 0;           // detected starts from the fourth true one on (minus slack)
  uint64_t worst_slack = 0;   // farthest detected start from a true one, and true from detected
  double id_share = 0;        // identity bytes shared by consecutive steps of the main phase
  double id_worst = 1;        // the worst consecutive pair
  uint16_t main_phase = 0;
};

Measure measure(const Stream& s, const Run& r, uint64_t slack, size_t first = 3) {
  Measure m;
  const uint64_t from = s.marks[first] > slack ? s.marks[first] - slack : 0;
  m.true_steps = s.marks.size() - first;
  std::vector<uint64_t> truth(s.marks.begin() + static_cast<long>(first), s.marks.end());
  for (size_t i = 0; i < r.starts.size(); i++) {
    if (r.starts[i] < from) continue;
    m.found++;
    m.worst_slack = std::max(m.worst_slack, nearest(truth, r.starts[i]));
  }
  std::vector<uint64_t> det(r.starts.begin(), r.starts.end());
  for (uint64_t t : truth) m.worst_slack = std::max(m.worst_slack, nearest(det, t));
  // Identities (site, size, k) per detected step, from the feed results (a late allocation belongs to
  // the step before the newest).
  std::map<uint16_t, size_t> by_phase;
  for (size_t i = 0; i < r.starts.size(); i++) by_phase[r.start_phase[i]]++;
  for (auto [ph, n] : by_phase)
    if (!m.main_phase || n > by_phase[m.main_phase]) m.main_phase = ph;
  std::vector<std::map<std::tuple<uint32_t, uint64_t, uint32_t>, uint64_t>> steps;
  std::vector<uint16_t> step_phase;
  for (size_t i = 0; i < r.fed.size(); i++) {
    const FeedResult& f = r.fed[i];
    if (f.flags & kFedStepStart) {
      steps.emplace_back();
      step_phase.push_back(f.phase);
    }
    if (!(f.flags & kFedLocked) || f.occurrence == kNoOrdinal || steps.empty()) continue;
    size_t k = steps.size() - 1;
    if ((f.flags & kFedLate) && k > 0) k--;
    steps[k][{s.tokens[i].site, s.tokens[i].size, f.occurrence}] += s.tokens[i].size;
  }
  uint64_t shared = 0, total = 0;
  for (size_t k = 0; k + 2 < steps.size(); k++) {  // the last step may be cut short by the end
    if (step_phase[k] != m.main_phase || step_phase[k + 1] != m.main_phase) continue;
    uint64_t a = 0, b = 0;
    for (auto& [id, bytes] : steps[k]) {
      a += bytes;
      if (steps[k + 1].count(id)) b += bytes;
    }
    shared += b;
    total += a;
    if (a) m.id_worst = std::min(m.id_worst, static_cast<double>(b) / static_cast<double>(a));
  }
  m.id_share = total ? static_cast<double>(shared) / static_cast<double>(total) : 0;
  return m;
}

const char* kThreadFixtures[] = {"keras_mlp.txt", "keras_tfdata.txt", "keras_cnn.txt",   "keras_batch.txt",
                                 "torch_threads.txt", "torch_pin.txt", "torch_phases.txt"};

}  // namespace

// Not a test: what the detector makes of each threaded fixture. Run: unit-tests "[step-report]" -s
TEST_CASE("step detector on thread-pool fixtures, report", "[.][step-report]") {
  for (const char* f : kThreadFixtures) {
    Stream s = load_fixture(f);
    auto d = make();
    Run r = run_detector(*d, s, s.tokens.size());
    Measure m = measure(s, r, 2);
    std::printf("%-18s %5zu allocs %3zu marks | locks", f, s.tokens.size(), s.marks.size());
    for (auto [seq, P] : r.locks) std::printf(" %llu:P%u", static_cast<unsigned long long>(seq), P);
    std::printf(" | steps() %llu, found %zu of %zu after step 3, worst slack %llu | ids %.4f (worst %.3f) | noise %llu "
                "missing %llu late %llu displaced %llu unlocks %llu retracted %llu phases %u\n",
                static_cast<unsigned long long>(r.steps), m.found, m.true_steps,
                static_cast<unsigned long long>(m.worst_slack), m.id_share, m.id_worst,
                static_cast<unsigned long long>(d->noise_tokens()), static_cast<unsigned long long>(d->skipped_tokens()),
                static_cast<unsigned long long>(d->late_tokens()), static_cast<unsigned long long>(d->displaced_tokens()),
                static_cast<unsigned long long>(d->unlocks()), static_cast<unsigned long long>(d->retracted()),
                d->phases());
    {
      std::vector<uint64_t> det(r.starts.begin(), r.starts.end());
      std::vector<uint64_t> truth(s.marks.begin() + 3, s.marks.end());
      for (size_t k = 3; k < s.marks.size(); k++)
        if (nearest(det, s.marks[k]) > 1) std::printf("    true step %zu at %llu: nearest detected %llu away\n", k + 1, (unsigned long long)s.marks[k], (unsigned long long)nearest(det, s.marks[k]));
      for (uint64_t x : det)
        if (x + 2 >= s.marks[3] && nearest(truth, x) > 1) std::printf("    detected %llu: nearest true %llu away\n", (unsigned long long)x, (unsigned long long)nearest(truth, x));
    }
    char line[400];
    d->describe(line, sizeof line);
    std::printf("    %s\n", line);
  }
}
