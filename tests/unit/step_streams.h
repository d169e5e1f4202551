// Allocation streams for the step detector's tests: recorded fixtures (tests/fixtures/streams/) and the
// helpers that run the detector over them.
#pragma once
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "profile/step_detector.h"

namespace step_streams {

using sentinel::FeedResult;
using sentinel::StepConfig;
using sentinel::StepDetector;
using sentinel::StepEvent;

struct Token {
  uint32_t site;
  uint64_t size;
  int64_t live = StepDetector::kNoLive;  // the tracked bytes live before it, where the fixture has them
};

struct Stream {
  std::vector<Token> tokens;
  std::vector<uint64_t> marks;          // seq of the first allocation of each true step
  std::vector<std::string> mark_phase;  // "train", "eval" (fixtures with phases), else ""
};

inline Stream load_fixture(const std::string& name) {
  Stream s;
  std::ifstream f(std::string(SENTINEL_SOURCE_DIR) + "/tests/fixtures/streams/" + name);
  REQUIRE(f.good());
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("##", 0) == 0 || line.empty()) continue;
    if (line.rfind("# step", 0) == 0) {
      s.marks.push_back(s.tokens.size());
      s.mark_phase.push_back(line.size() > 7 ? line.substr(7) : "");
      continue;
    }
    std::istringstream in(line);
    Token t{};
    in >> t.site >> t.size;  // a third column (the thread) is for people, not for the detector
    if (in.fail()) FAIL(name << ": malformed line: " << line);
    uint32_t thread;
    int64_t live;
    if (in >> thread >> live) t.live = live;  // a fourth: the live bytes (record_stream.py --live)
    s.tokens.push_back(t);
  }
  return s;
}

// The detector's view of a run: step starts (retracted ones removed), all events, every feed's result.
struct Run {
  std::vector<uint64_t> starts;
  std::vector<uint16_t> start_phase;                 // phase of each start
  std::vector<StepEvent> events;                     // all events, as pulled
  std::vector<std::pair<uint64_t, uint32_t>> locks;  // (seq, period) of each allocation that made a lock
  std::vector<FeedResult> fed;
  uint64_t steps = 0;
};

inline void pull(StepDetector& d, Run& r, std::vector<StepEvent>& live) {
  StepEvent e;
  while (d.next_event(&e)) {
    r.events.push_back(e);
    if (e.flags & sentinel::kStepRetract) {
      live.erase(std::remove_if(
                     live.begin(), live.end(),
                     [&](const StepEvent& x) { return x.phase == e.phase && x.seq >= e.seq && x.seq <= e.end_seq; }),
                 live.end());
    } else if (e.flags & sentinel::kStepDropLast) {
      live.erase(std::remove_if(live.begin(), live.end(),
                                [&](const StepEvent& x) { return x.phase == e.phase && x.seq == e.seq; }),
                 live.end());
    } else if (!(e.flags & sentinel::kStepUnlock)) {
      live.push_back(e);
    }
  }
}

inline void finish(StepDetector& d, Run& r, std::vector<StepEvent>& live) {
  std::sort(live.begin(), live.end(), [](const StepEvent& a, const StepEvent& b) { return a.seq < b.seq; });
  for (const StepEvent& e : live) {
    r.starts.push_back(e.seq);
    r.start_phase.push_back(e.phase);
  }
  r.steps = d.steps();
}

// Runs the detector over tokens [0, n) with the marks not fed (or fed, if feed_marks).
inline Run run_detector(StepDetector& d, const Stream& s, size_t n, bool feed_marks = false) {
  Run r;
  std::vector<StepEvent> live;
  size_t mi = 0;
  for (size_t i = 0; i < n; i++) {
    while (feed_marks && mi < s.marks.size() && s.marks[mi] == i) d.mark(s.marks[mi++]);
    FeedResult f = d.feed(i, s.tokens[i].site, s.tokens[i].size, s.tokens[i].live);
    r.fed.push_back(f);
    if (f.flags & sentinel::kFedLockedNow) r.locks.push_back({i, d.period()});
    pull(d, r, live);
  }
  d.finish();  // the stream ends here, as the runtime's does at exit
  pull(d, r, live);
  finish(d, r, live);
  return r;
}

// n allocations of random sites and sizes (a program's set-up before its loop).
inline void append_noise(Stream& s, int n, uint32_t seed) {
  uint64_t x = seed;
  for (int i = 0; i < n; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    s.tokens.push_back({static_cast<uint32_t>(1000 + (x >> 40) % 5000), 65536 + (x >> 20) % 1000000});
  }
}

inline std::unique_ptr<StepDetector> make(StepConfig c = StepConfig{}) {
  auto d = std::make_unique<StepDetector>();
  REQUIRE(d->init(c));
  return d;
}

}  // namespace step_streams
