// Step detector interface: identities and the template, the clock, where an unlock says the pattern
// ended, per-phase statistics, the diagnosis line, seqs slightly out of order, occurrences with marks.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <set>
#include <string>

#include "step_streams.h"

using namespace sentinel;
using namespace step_streams;

namespace {

std::vector<Token> steps_of(const std::vector<Token>& p, int n) {
  std::vector<Token> v;
  for (int k = 0; k < n; k++) v.insert(v.end(), p.begin(), p.end());
  return v;
}

Stream stream_of(const std::vector<Token>& prologue, const std::vector<Token>& p, int n) {
  Stream s;
  s.tokens = prologue;
  for (int k = 0; k < n; k++) {
    s.marks.push_back(s.tokens.size());
    s.tokens.insert(s.tokens.end(), p.begin(), p.end());
  }
  return s;
}

// A step with repeated (site, size) pairs: k matters.
const std::vector<Token> kStep = {{1, 65536},  {2, 131072}, {2, 131072}, {3, 65536}, {2, 131072},
                                  {4, 262144}, {1, 65536},  {5, 65536},  {6, 98304}};
const std::vector<Token> kPrologue = {{90, 65536}, {91, 70000}, {92, 80000}, {93, 90000}, {94, 100000}};

}  // namespace

TEST_CASE("step detector: identities are (site, size, k) and the template maps them to ordinals", "[step][step-api]") {
  Stream s = load_fixture("keras_mlp.txt");
  auto d = make();
  Run r = run_detector(*d, s, s.tokens.size());
  REQUIRE(d->phases() == 1);
  const uint16_t ph = d->template_phase();
  REQUIRE(ph == 1);  // phase ids are 1-based; the template of the last lock is held after the unlock
  const uint32_t P = d->template_period();
  REQUIRE(P == 11);
  uint32_t site, k;
  uint64_t size;
  CHECK_FALSE(d->template_entry(ph, P, &site, &size, &k));
  CHECK_FALSE(d->template_entry(ph + 1, 0, &site, &size, &k));
  std::map<std::pair<uint32_t, uint64_t>, std::set<uint32_t>> ks;
  for (uint32_t o = 0; o < P; o++) {
    REQUIRE(d->template_entry(ph, o, &site, &size, &k));
    CHECK(d->template_ordinal(ph, site, size, k) == o);
    ks[{site, size}].insert(k);
  }
  uint32_t total = 0;
  for (auto& [tok, set] : ks) {
    uint32_t m = d->multiplicity(ph, tok.first, tok.second);
    CHECK(m == set.size());
    CHECK(*set.rbegin() == m - 1);  // k runs 0 .. m - 1
    total += m;
  }
  CHECK(total == P);
  CHECK(d->multiplicity(ph, 12345, 65536) == 0);
  CHECK(d->template_ordinal(ph, site, size, 99) == kNoOrdinal);
  // Every allocation that fit: its ordinal is the template ordinal of its (site, size, occurrence).
  size_t fit = 0;
  for (size_t i = 0; i < r.fed.size(); i++) {
    const FeedResult& f = r.fed[i];
    if (!(f.flags & kFedLocked) || f.occurrence == kNoOrdinal) continue;
    fit++;
    REQUIRE(f.ordinal == d->template_ordinal(f.phase, s.tokens[i].site, s.tokens[i].size, f.occurrence));
  }
  CHECK(fit > 70 * 11);
}

TEST_CASE("step detector: the clock starts at 0 with each step and only goes up", "[step][step-api]") {
  for (const char* f : {"keras_cnn.txt", "torch_threads.txt", "torch_mlp.txt"}) {
    Stream s = load_fixture(f);
    auto d = make();
    Run r = run_detector(*d, s, s.tokens.size());
    uint32_t prev = 0;
    bool exact = std::string(f) == "torch_mlp.txt";
    for (const FeedResult& x : r.fed) {
      if (!(x.flags & kFedLocked)) continue;
      if (x.flags & kFedStepStart) {
        CHECK(x.clock == 0);
      } else if (!(x.flags & kFedLockedNow)) {
        CHECK(x.clock >= prev);
        CHECK(x.clock <= prev + 1);
      }
      if (exact && x.occurrence != kNoOrdinal) CHECK(x.clock == x.ordinal);  // one thread: the clock is the ordinal
      prev = x.clock;
    }
  }
}

TEST_CASE("step detector: an unlock says where the pattern ended", "[step][step-api]") {
  SECTION("a burst of foreign allocations") {
    Stream s = stream_of(kPrologue, kStep, 12);
    const uint64_t end = s.tokens.size();
    for (int i = 0; i < 40; i++) s.tokens.push_back({700u + static_cast<uint32_t>(i), 65536ull + 512ull * i});
    auto d = make();
    Run r = run_detector(*d, s, s.tokens.size());
    auto u = std::find_if(r.events.begin(), r.events.end(), [](const StepEvent& e) { return e.flags & kStepUnlock; });
    REQUIRE(u != r.events.end());
    CHECK(u->seq == end);  // the first allocation after the last one that fit
    CHECK(d->unlocks() == 1);
  }
  SECTION("the loop ends in the second half of a step") {
    Stream s = stream_of(kPrologue, kStep, 12);
    s.tokens.insert(s.tokens.end(), kStep.begin(), kStep.begin() + 5);
    const uint64_t end = s.tokens.size();
    for (int i = 0; i < 40; i++) s.tokens.push_back({800u + static_cast<uint32_t>(i), 65536});
    auto d = make();
    Run r = run_detector(*d, s, s.tokens.size());
    auto u = std::find_if(r.events.begin(), r.events.end(), [](const StepEvent& e) { return e.flags & kStepUnlock; });
    REQUIRE(u != r.events.end());
    CHECK(u->seq == end);
    CHECK(std::none_of(r.events.begin(), r.events.end(), [](const StepEvent& e) { return e.flags & kStepDropLast; }));
    CHECK(d->steps() == 13);
  }
  SECTION("an epoch's last, smaller batch is a step") {
    // Its batch-sized allocations have other sizes (noise inside the step): 4 of 9 match, spread over 6
    // allocations, before the third noise allocation ends the lock.
    Stream s = stream_of(kPrologue, kStep, 12);
    const uint64_t last = s.tokens.size();
    const std::vector<Token> smaller = {{1, 65536},  {2, 40960}, {2, 131072}, {3, 65536}, {2, 40960},
                                        {4, 262144}, {1, 16384}, {5, 65536},  {6, 98304}};
    s.tokens.insert(s.tokens.end(), smaller.begin(), smaller.end());
    for (int i = 0; i < 40; i++) s.tokens.push_back({800u + static_cast<uint32_t>(i), 65536});
    auto d = make();
    Run r = run_detector(*d, s, s.tokens.size());
    CHECK(std::none_of(r.events.begin(), r.events.end(), [](const StepEvent& e) { return e.flags & kStepDropLast; }));
    CHECK(d->steps() == 13);
    CHECK(r.starts.back() == last);
  }
  SECTION("the loop ends in the first half of a step: that step was none") {
    // A data loader's last batch fetched before the loop's `break`: the step it opens never runs.
    Stream s = stream_of(kPrologue, kStep, 12);
    const uint64_t begun = s.tokens.size();
    s.tokens.insert(s.tokens.end(), kStep.begin(), kStep.begin() + 4);
    for (int i = 0; i < 40; i++) s.tokens.push_back({800u + static_cast<uint32_t>(i), 65536});
    auto d = make();
    Run r = run_detector(*d, s, s.tokens.size());
    auto u = std::find_if(r.events.begin(), r.events.end(), [](const StepEvent& e) { return e.flags & kStepUnlock; });
    REQUIRE(u != r.events.end());
    CHECK(u->seq == begun);  // the last real step ends where the one never run began
    auto dropped = std::find_if(r.events.begin(), u, [](const StepEvent& e) { return e.flags & kStepDropLast; });
    REQUIRE(dropped != u);
    CHECK(dropped->seq == begun);
    CHECK(d->steps() == 12);
    PhaseStats st{};
    REQUIRE(d->phase_stats(1, &st));
    CHECK(st.steps == 12);
  }
}

TEST_CASE("step detector: a step begun before `break` is dropped when the next phase takes over", "[step][step-api]") {
  // The steps found begin at the optimizer's update (O, where the bytes live are least in a loop that
  // zeroes the gradients after its forward), then the forward F and the backward (F's sizes twice more
  // and 9 of its own). The loop ends after the last update; an evaluation pass (F alone) follows. The
  // training follower fills the update's open step with the evaluation's allocations (F's sizes recur in
  // it), so when it is lost that step holds more than half of its identities; yet only O's 8 of them
  // came before the evaluation's first step. It was never run as a step, and the count is the loop's.
  std::vector<Token> fwd, step;
  for (uint32_t i = 0; i < 15; i++) fwd.push_back({20u + i, 65536ull * (i % 3 + 1)});
  std::vector<Token> update;
  for (uint32_t i = 0; i < 8; i++) update.push_back({50u + i, 4096ull * 1024 + 65536ull * i});
  step = update;
  for (int r = 0; r < 3; r++) step.insert(step.end(), fwd.begin(), fwd.end());
  for (uint32_t i = 0; i < 9; i++) step.push_back({40u + i, 65536});
  Stream s = stream_of(kPrologue, step, 12);
  const uint64_t begun = s.tokens.size();
  s.tokens.insert(s.tokens.end(), update.begin(), update.end());
  const uint64_t eval_from = s.tokens.size();
  auto tail = steps_of(fwd, 15);
  s.tokens.insert(s.tokens.end(), tail.begin(), tail.end());
  auto d = make();
  Run r = run_detector(*d, s, s.tokens.size());
  CAPTURE(begun, eval_from);
  CHECK(std::count(r.starts.begin(), r.starts.end(), begun) == 0);
  CHECK(std::count(r.starts.begin(), r.starts.end(), eval_from) == 1);
  PhaseStats train{}, ev{};
  REQUIRE(d->phase_stats(1, &train));
  REQUIRE(d->phase_stats(2, &ev));
  CHECK(train.steps == 12);
  CHECK(ev.steps == 15);
  CHECK(d->steps() == 27);
  CHECK(r.starts.size() == 27);
}

TEST_CASE("step detector: a step begun as the stream ends is counted only past its half", "[step][step-api]") {
  for (uint32_t fed : {1u, 4u, 5u, 9u}) {
    Stream s = stream_of(kPrologue, kStep, 12);
    const uint64_t begun = s.tokens.size();
    s.tokens.insert(s.tokens.end(), kStep.begin(), kStep.begin() + fed);
    auto d = make();
    Run r = run_detector(*d, s, s.tokens.size());  // ends with finish()
    const bool dropped = std::any_of(r.events.begin(), r.events.end(),
                                     [&](const StepEvent& e) { return (e.flags & kStepDropLast) && e.seq == begun; });
    INFO("allocations of the last step: " << fed);
    CHECK(dropped == (fed * 2 < kStep.size()));
    CHECK(d->steps() == (dropped ? 12u : 13u));
    CHECK(r.starts.size() == d->steps());
    CHECK(std::count(r.starts.begin(), r.starts.end(), begun) == (dropped ? 0 : 1));
  }
}

TEST_CASE("step detector: statistics per phase and overall", "[step][step-api]") {
  // Phase 1 (9 a step), then a different phase (6 a step), with one foreign allocation in phase 1.
  const std::vector<Token> other = {{11, 65536}, {12, 65536}, {13, 65536}, {12, 65536}, {14, 131072}, {15, 65536}};
  Stream s = stream_of(kPrologue, kStep, 15);
  s.tokens.insert(s.tokens.begin() + static_cast<long>(s.marks[8] + 3), Token{4444, 77777});
  auto tail = steps_of(other, 15);
  s.tokens.insert(s.tokens.end(), tail.begin(), tail.end());
  auto d = make();
  run_detector(*d, s, s.tokens.size());
  PhaseStats a, b, all;
  REQUIRE(d->phase_stats(1, &a));
  REQUIRE(d->phase_stats(2, &b));
  REQUIRE(d->phase_stats(0, &all));
  CHECK_FALSE(d->phase_stats(3, &b));
  CHECK(d->phase_stats(2, &b));
  CHECK(a.period == 9);
  CHECK(a.distinct_tokens == 6);
  CHECK(b.period == 6);
  CHECK(b.distinct_tokens == 5);
  CHECK(a.steps >= 13);
  CHECK(a.steps <= 15);
  CHECK(b.steps >= 13);
  CHECK(b.steps <= 15);
  CHECK(a.noise >= 1);
  CHECK(a.locks == 1);
  CHECK(a.unlocks == 1);
  CHECK(b.locks == 1);
  CHECK(b.unlocks == 0);
  CHECK((a.flags & kDetectLocked) != 0);
  CHECK((a.flags & kDetectLost) != 0);  // phase 1 ended and did not come back
  CHECK((b.flags & kDetectLost) == 0);
  CHECK(all.steps == d->steps());
  CHECK(all.locks == a.locks + b.locks);
  CHECK(all.noise == d->noise_tokens());
  CHECK(all.missing == d->skipped_tokens());
  CHECK(all.period == 6);
  CHECK((all.flags & kDetectLocked) != 0);
  CHECK((all.flags & (kDetectLost | kDetectNoStep)) == 0);
}

TEST_CASE("step detector: a diagnosis line when no step is known", "[step][step-api]") {
  char line[300];
  SECTION("no step at all") {
    auto d = make();
    for (uint64_t i = 0; i < 5000; i++) d->feed(i, static_cast<uint32_t>(i % 700), 65536 + (i * 7919) % 100000);
    PhaseStats all;
    REQUIRE(d->phase_stats(0, &all));
    CHECK(all.flags == kDetectNoStep);
    size_t n = d->describe(line, sizeof line);
    INFO(line);
    CHECK(n == std::strlen(line));
    CHECK(std::string(line).rfind("no step found in 5000 tracked allocations: ", 0) == 0);
    CHECK(std::string(line).find("distinct (site,size) tokens") != std::string::npos);
    StepDiagnosis g;
    d->diagnose(&g);
    CHECK(g.allocations == 5000);
    CHECK(g.distinct_tokens > 1000);
  }
  SECTION("a lock that was lost") {
    Stream s = stream_of(kPrologue, kStep, 10);
    for (int i = 0; i < 100; i++) s.tokens.push_back({600u + static_cast<uint32_t>(i), 65536});
    auto d = make();
    run_detector(*d, s, s.tokens.size());
    d->describe(line, sizeof line);
    INFO(line);
    CHECK(std::string(line).rfind("step pattern lost at allocation ", 0) == 0);
    CHECK(std::string(line).find("9 allocations a step") != std::string::npos);
    PhaseStats all;
    d->phase_stats(0, &all);
    CHECK((all.flags & kDetectLost) != 0);
  }
  SECTION("a short buffer is cut, never overrun") {
    auto d = make();
    for (uint64_t i = 0; i < 100; i++) d->feed(i, static_cast<uint32_t>(i), 65536);
    char small[16];
    std::memset(small, 'x', sizeof small);
    size_t n = d->describe(small, 10);
    CHECK(n == 9);
    CHECK(small[9] == 0);
    CHECK(small[10] == 'x');
  }
}

TEST_CASE("step detector: seqs slightly out of order are not a gap", "[step][step-api]") {
  // A sequencer merging per-thread buffers: neighbouring seqs swapped now and then.
  Stream s = stream_of(kPrologue, kStep, 30);
  auto d = make();
  std::vector<uint64_t> seqs(s.tokens.size());
  for (size_t i = 0; i < seqs.size(); i++) seqs[i] = 1000 + i;
  for (size_t i = 3; i + 1 < seqs.size(); i += 7) std::swap(seqs[i], seqs[i + 1]);
  for (size_t i = 0; i < seqs.size(); i++) d->feed(seqs[i], s.tokens[i].site, s.tokens[i].size);
  CHECK(d->locked());
  CHECK(d->unlocks() == 0);
  CHECK(d->period() == 9);
  CHECK(d->steps() >= 28);
  // A real gap still starts over.
  d->feed(seqs.back() + 10000, 1, 65536);
  CHECK_FALSE(d->locked());
  CHECK(d->unlocks() == 1);
}

TEST_CASE("step detector: occurrences with marks and with a fixed period", "[step][step-api]") {
  StepConfig c;
  c.mode = StepMode::kMarks;
  auto d = make(c);
  uint64_t seq = 0;
  for (int step = 0; step < 3; step++) {
    d->mark(seq);
    std::map<std::pair<uint32_t, uint64_t>, uint32_t> seen;
    for (const Token& t : kStep) {
      FeedResult f = d->feed(seq++, t.site, t.size);
      CHECK(f.occurrence == seen[{t.site, t.size}]++);
      CHECK(f.clock == f.ordinal);
      CHECK(f.phase == 1);  // marks mode: one phase, id 1 (the first id)
    }
  }
  StepConfig fc;
  fc.mode = StepMode::kFixed;
  fc.fixed_period = 9;
  auto fx = make(fc);
  for (int step = 0; step < 3; step++) {
    std::map<std::pair<uint32_t, uint64_t>, uint32_t> seen;
    for (const Token& t : kStep) {
      FeedResult f = fx->feed(seq++, t.site, t.size);
      CHECK(f.occurrence == seen[{t.site, t.size}]++);
      CHECK(f.phase == 1);
    }
  }
}

TEST_CASE("step detector: a first iteration locked on by the block is one step of the training phase",
          "[step][step-api]") {
  // A model of 48 identical blocks built in turn, then trained with SGD and momentum: the first iteration's
  // forward (2 allocations a block), backward (5) and momentum buffers (3, made once) each repeat at the
  // block and are locked on as phases of their own before the whole step (forward and backward, 336) is
  // seen twice. They were the first training step: it is counted, and they are no phases.
  const int blocks = 48, iterations = 12;
  const std::vector<Token> build = {{10, 262144}, {11, 262144}, {12, 65536}};
  const std::vector<Token> fwd = {{20, 131072}, {21, 131072}};
  const std::vector<Token> bwd = {{30, 262144}, {31, 262144}, {32, 65536}, {33, 131072}, {34, 131072}};
  const std::vector<Token> momentum = {{40, 262144}, {41, 262144}, {42, 65536}};
  Stream s = stream_of(kPrologue, build, blocks);
  std::vector<uint64_t> truth;
  for (int it = 0; it < iterations; it++) {
    truth.push_back(s.tokens.size());
    auto f = steps_of(fwd, blocks), b = steps_of(bwd, blocks);
    s.tokens.insert(s.tokens.end(), f.begin(), f.end());
    s.tokens.insert(s.tokens.end(), b.begin(), b.end());
    if (it == 0) {
      auto m = steps_of(momentum, blocks);
      s.tokens.insert(s.tokens.end(), m.begin(), m.end());
    }
  }
  auto d = make();
  Run r = run_detector(*d, s, s.tokens.size());
  std::map<uint16_t, int> per_phase;
  for (uint16_t ph : r.start_phase) per_phase[ph]++;
  std::string counts;
  for (auto [ph, n] : per_phase) counts += std::to_string(ph) + ":" + std::to_string(n) + " ";
  CAPTURE(counts);
  const uint16_t train = r.start_phase.back();
  CHECK(per_phase[train] == iterations);
  for (auto [ph, n] : per_phase) {
    if (ph == train) continue;
    CHECK(n == blocks);  // the construction loop alone
    CHECK(r.starts[std::find(r.start_phase.begin(), r.start_phase.end(), ph) - r.start_phase.begin()] < truth[0]);
  }
  CHECK(per_phase.size() == 2);
  CHECK(d->steps() == blocks + iterations);
  // Every start of the training phase is an iteration's, the first included.
  for (size_t i = 0; i < r.starts.size(); i++)
    if (r.start_phase[i] == train) CHECK(std::count(truth.begin(), truth.end(), r.starts[i]) == 1);
}
