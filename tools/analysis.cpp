#include "analysis.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <map>
#include <unordered_map>

namespace sentinel::view {

const std::array<const char*, kLifetimeBuckets> kLifetimeLabels = {"< 1 ms",       "1 - 10 ms", "10 - 100 ms",
                                                                   "100 ms - 1 s", ">= 1 s",    "still alive"};

namespace {

constexpr uint64_t kAlive = UINT64_MAX;

size_t lifetime_bucket(const sentinel_object& o) {
  if (o.death_ns == 0 || o.death_seq == kAlive) return 5;
  const uint64_t life = o.death_ns >= o.birth_ns ? o.death_ns - o.birth_ns : 0;
  if (life < 1'000'000ull) return 0;
  if (life < 10'000'000ull) return 1;
  if (life < 100'000'000ull) return 2;
  if (life < 1'000'000'000ull) return 3;
  return 4;
}

// Replays births and frees in allocation order. A free with death_seq k happened after k tracked
// allocations, i.e. before the allocation whose birth_seq is k: at equal seq, frees go first.
uint64_t peak_live(const std::vector<sentinel_object>& objs) {
  struct Event {
    uint64_t seq;
    uint64_t size;
    bool birth;
  };
  std::vector<Event> ev;
  ev.reserve(objs.size() * 2);
  for (const auto& o : objs) {
    ev.push_back({o.birth_seq, o.size, true});
    if (o.death_seq != kAlive) {
      // A free cannot precede its own allocation; clamp inconsistent records.
      uint64_t d = std::max(o.death_seq, o.birth_seq == kAlive ? kAlive : o.birth_seq + 1);
      ev.push_back({d, o.size, false});
    }
  }
  std::sort(ev.begin(), ev.end(), [](const Event& a, const Event& b) {
    if (a.seq != b.seq) return a.seq < b.seq;
    return a.birth < b.birth;  // frees first
  });
  // Sums wrap only for absurd sizes; saturate instead of wrapping.
  uint64_t live = 0, peak = 0;
  for (const auto& e : ev) {
    if (e.birth) {
      live = live > UINT64_MAX - e.size ? UINT64_MAX : live + e.size;
      peak = std::max(peak, live);
    } else {
      live = live >= e.size ? live - e.size : 0;
    }
  }
  return peak;
}

uint64_t sat_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

}  // namespace

Analysis analyze(const fmt::Profile& p) {
  Analysis a;
  a.objects = p.objects.size();
  std::map<unsigned, Bucket> classes;  // log2 of the lower bound
  std::unordered_map<uint32_t, SiteUsage> sites;
  std::vector<uint64_t> births;
  births.reserve(p.objects.size());
  for (const auto& o : p.objects) {
    a.tracked_bytes = sat_add(a.tracked_bytes, o.size);
    if (o.death_seq == kAlive || o.death_ns == 0) {
      ++a.alive_objects;
      a.alive_bytes = sat_add(a.alive_bytes, o.size);
    }
    Bucket& lb = a.lifetimes[lifetime_bucket(o)];
    ++lb.objects;
    lb.bytes = sat_add(lb.bytes, o.size);
    Bucket& cb = classes[o.size ? static_cast<unsigned>(std::bit_width(o.size) - 1) : 64u];
    ++cb.objects;
    cb.bytes = sat_add(cb.bytes, o.size);
    SiteUsage& su = sites[o.site];
    su.id = o.site;
    ++su.objects;
    su.bytes = sat_add(su.bytes, o.size);
    births.push_back(o.birth_seq);
  }
  a.peak_live_bytes = peak_live(p.objects);
  for (const auto& [k, b] : classes) {
    SizeClass c;
    if (k == 64) {  // size 0
      c.min = 0;
      c.max = 1;
    } else {
      c.min = uint64_t{1} << k;
      c.max = k == 63 ? 0 : uint64_t{1} << (k + 1);
    }
    c.b = b;
    a.size_classes.push_back(c);
  }
  std::sort(a.size_classes.begin(), a.size_classes.end(),
            [](const SizeClass& x, const SizeClass& y) { return x.min < y.min; });
  for (const auto& [id, su] : sites) a.sites.push_back(su);
  std::sort(a.sites.begin(), a.sites.end(), [](const SiteUsage& x, const SiteUsage& y) {
    if (x.bytes != y.bytes) return x.bytes > y.bytes;
    return x.id < y.id;
  });
  std::vector<uint64_t> marks;
  marks.reserve(p.marks.size());
  for (const auto& m : p.marks) marks.push_back(m.seq);
  std::sort(marks.begin(), marks.end());
  std::sort(births.begin(), births.end());
  for (size_t i = 0; i < marks.size(); ++i) {
    auto lo = std::lower_bound(births.begin(), births.end(), marks[i]);
    auto hi = i + 1 < marks.size() ? std::lower_bound(births.begin(), births.end(), marks[i + 1]) : births.end();
    a.allocations_per_marked_step.push_back(static_cast<uint64_t>(hi - lo));
  }
  return a;
}

std::string human_bytes(uint64_t n) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (n < 1024) return std::to_string(n) + " B";
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024.0 && u < 6) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

std::string human_duration(uint64_t ns) {
  char buf[32];
  if (ns >= 1'000'000'000ull)
    std::snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(ns) / 1e9);
  else if (ns >= 1'000'000ull)
    std::snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(ns) / 1e6);
  else if (ns >= 1'000ull)
    std::snprintf(buf, sizeof buf, "%.1f us", static_cast<double>(ns) / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%llu ns", static_cast<unsigned long long>(ns));
  return buf;
}

}  // namespace sentinel::view
