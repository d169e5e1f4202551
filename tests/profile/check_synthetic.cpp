// Compares the profile in a dump of synthetic_loop with the pattern it is known to have, identity by
// identity and interval by interval. Prints every difference; exit 0 only when there is none.
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "format/format_reader.h"
#include "synthetic_pattern.h"

using namespace synthetic;

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: check-synthetic DUMP\n");
    return 2;
  }
  sentinel::fmt::Profile p;
  try {
    p = sentinel::fmt::read_profile(argv[1]);
  } catch (const std::exception& e) {
    fprintf(stderr, "check-synthetic: %s\n", e.what());
    return 1;
  }
  int errors = 0;
  auto fail = [&](const std::string& what) {
    fprintf(stderr, "MISMATCH: %s\n", what.c_str());
    ++errors;
  };
  if (p.sessions.size() != 1 || p.intervals.size() != 1) {
    fprintf(stderr, "check-synthetic: expected one PROFILE and one INTERVALS record, found %zu and %zu\n",
            p.sessions.size(), p.intervals.size());
    return 1;
  }
  const sentinel::fmt::IntervalTable& table = p.intervals[0];
  if (table.period != kActivations) fail("period " + std::to_string(table.period) + ", expected 16");
  if (table.bounds.size() != kActivations) fail("intervals " + std::to_string(table.bounds.size()));
  // Identity of each object of the pattern: activations by in-step ordinal, weights by size.
  std::map<uint32_t, std::pair<bool, int>> who;  // identity id -> (is_weight, index)
  for (const sentinel_identity& id : p.identities) {
    for (int i = 0; i < kActivations; ++i)
      if (id.ordinal == uint32_t(i) && id.size == activation_size(i)) who[id.id] = {false, i};
    for (int j = 0; j < kWeights; ++j)
      if (id.ordinal == SENTINEL_NO_ORDINAL && id.size == weight_size(j)) who[id.id] = {true, j};
  }
  if (who.size() != kActivations + kWeights)
    fail("found " + std::to_string(who.size()) + " of the 24 pattern identities");
  // Lifetimes.
  for (const sentinel_identity& id : p.identities) {
    auto it = who.find(id.id);
    if (it == who.end()) continue;
    auto [is_w, k] = it->second;
    uint8_t want = is_w ? SENTINEL_LIFE_PERSISTENT : (k == 15 ? SENTINEL_LIFE_SHORT : SENTINEL_LIFE_STEP);
    if (id.lifetime != want)
      fail(std::string(is_w ? "W" : "A") + std::to_string(k) + " lifetime " + std::to_string(id.lifetime) +
           ", expected " + std::to_string(want));
    if (!is_w) {
      uint32_t death = k < 8 ? uint32_t(15 - k) : 15u;
      if (id.birth_interval != uint32_t(k) || id.death_interval != death)
        fail("A" + std::to_string(k) + " interval " + std::to_string(id.birth_interval) + ".." +
             std::to_string(id.death_interval));
    }
  }
  // Touches, per profiled step and interval: exactly the expected objects, each with all its bytes.
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint64_t> got;  // (step, interval, identity) -> bytes
  for (const sentinel_touch& t : p.touches) got[{t.step, t.interval, t.identity}] += t.bytes;
  uint32_t steps = p.sessions[0].profiled_steps;
  if (steps < 1) fail("no profiled step");
  size_t expected_pairs = 0;
  for (uint32_t s = 0; s < steps; ++s) {
    for (int i = 0; i < kActivations; ++i) {
      bool is_w[3];
      int idx[3];
      int n = touched_in(i, is_w, idx);
      for (int k = 0; k < n; ++k) {
        ++expected_pairs;
        uint32_t id = UINT32_MAX;
        for (auto& [iid, v] : who)
          if (v.first == is_w[k] && v.second == idx[k]) id = iid;
        size_t size = is_w[k] ? weight_size(idx[k]) : activation_size(idx[k]);
        auto g = got.find({s, uint32_t(i), id});
        std::string name = std::string(is_w[k] ? "W" : "A") + std::to_string(idx[k]);
        if (g == got.end()) {
          fail("step " + std::to_string(s) + " interval " + std::to_string(i) + ": " + name + " not touched");
        } else if (g->second != size) {
          fail("step " + std::to_string(s) + " interval " + std::to_string(i) + ": " + name + " touched " +
               std::to_string(g->second) + " bytes, expected " + std::to_string(size));
        }
      }
    }
  }
  if (got.size() != expected_pairs)
    fail(std::to_string(got.size()) + " touched (step, interval, identity) pairs, expected " +
         std::to_string(expected_pairs));
  printf("check-synthetic: %u profiled step(s), %zu identities, %zu touch pairs, %d mismatch(es)\n", steps,
         p.identities.size(), got.size(), errors);
  return errors ? 1 : 0;
}
