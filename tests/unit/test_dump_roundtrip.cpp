// The runtime's dump writer and the reader library agree: write a state, read it back field by field.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "format/format_reader.h"
#include "runtime/dump_writer.h"
#include "runtime/runtime_state.h"

using namespace sentinel;

namespace {
std::string temp_path() {
  char tmpl[] = "/tmp/sentinel-roundtrip-XXXXXX";
  int fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  close(fd);
  return tmpl;
}

// The runtime's dump of `s`, written by the real writer to a temporary file and read back.
fmt::Profile written_and_read(const RuntimeState& s, DumpKind kind = DumpKind::at_end) {
  std::string path = temp_path();
  int fd = open(path.c_str(), O_WRONLY | O_TRUNC);
  REQUIRE(fd >= 0);
  REQUIRE(write_dump_to_fd(s, getpid(), fd, kind));
  close(fd);
  fmt::Profile p = fmt::read_profile(path);
  unlink(path.c_str());
  return p;
}
}  // namespace

TEST_CASE("dump write -> read round trip", "[dump]") {
  auto s = std::make_unique<RuntimeState>();
  const char* env[] = {"SENTINEL_MIN_BYTES=4K", "SENTINEL_MODE=track", nullptr};
  ConfigError err;
  REQUIRE(parse_config(env, &s->config, &err));
  s->mode = Mode::track;
  REQUIRE(s->log.init(100000));
  REQUIRE(s->sites.init());
  REQUIRE(s->marks.init());
  REQUIRE(s->stepper.init(s->config, &s->profiler, &s->log, nullptr, &s->clock));
  REQUIRE(s->threads.init());
  REQUIRE(s->sequencer.init(&s->log, &s->marks, &s->stepper, &s->threads, &s->arena, 100000));
  s->owner_pid = getpid();
  s->start_mono_ns = 1000;
  s->start_real_ns = 2000;
  s->topology.numa_available = true;
  s->topology.numa_balancing = 0;
  s->topology.node_count = 2;
  s->topology.nodes[0] = {0, 2, 1u << 30, 1u << 29, 0};
  s->topology.nodes[1] = {1, 0, 4ull << 30, 4ull << 30, 3};
  s->topology.fast_node = 0;
  s->topology.slow_node = 1;
  s->modules.refresh();
  REQUIRE(s->modules.count() > 1);

  uintptr_t frames[3] = {0x401000, 0x402000, 0x403000};
  for (int i = 0; i < 5000; ++i) {  // enough sites for several SITES records
    frames[0] = 0x401000 + uintptr_t(i);
    REQUIRE(s->sites.intern(frames, 3) == uint32_t(i));
  }
  const int kObjects = 40000;  // more than one OBJECTS record
  for (int i = 0; i < kObjects; ++i) {
    sentinel_object o{};
    o.address = 0x7f0000000000ull + uint64_t(i) * 65536;
    o.size = 65536 + uint64_t(i);
    o.birth_ns = 10 + uint64_t(i);
    o.death_ns = i % 3 ? 20 + uint64_t(i) : 0;
    o.birth_seq = UINT64_MAX;  // the sequencer's to give
    o.death_seq = i % 3 ? uint64_t(i) + 1 : UINT64_MAX;
    o.site = uint32_t(i % 5000);
    o.thread = 77;
    o.alignment = 64;
    o.flags = i % 2;
    REQUIRE(s->log.append(o) == uint32_t(i));
    s->sequencer.process_direct(TrackEvent{o.birth_ns, int64_t(o.size), o.site, uint32_t(i), 77, kEventAlloc, 0});
    if (i % 10 == 9 && i / 10 < 12)
      s->sequencer.process_direct(TrackEvent{o.birth_ns, 0, 0, kNoLogIndex, 77, kEventMark, 0});
  }
  uint64_t live = 0;
  for (int i = 0; i < kObjects; ++i) live += 65536 + uint64_t(i);

  fmt::Profile p = written_and_read(*s);
  CHECK(p.major == SENTINEL_FORMAT_MAJOR);
  CHECK(p.pointer_size == sizeof(void*));
  CHECK(p.process.pid == uint32_t(getpid()));
  CHECK(p.process.start_monotonic_ns == 1000);
  CHECK_FALSE(p.process.argv.empty());
  REQUIRE(p.config_value("SENTINEL_MIN_BYTES"));
  CHECK(*p.config_value("SENTINEL_MIN_BYTES") == "4096");
  REQUIRE(p.topology.nodes.size() == 2);
  CHECK(p.topology.nodes[1].flags == 3);
  CHECK(p.topology.slow_node == 1);
  CHECK(p.modules.size() == s->modules.count());
  REQUIRE(p.sites.size() == 5000);
  CHECK(p.sites[4999].frames == std::vector<uint64_t>{0x401000 + 4999, 0x402000, 0x403000});
  REQUIRE(p.objects.size() == size_t(kObjects));
  for (int i : {0, 1, 2, 17, kObjects - 1}) {
    INFO(i);
    CHECK(memcmp(&p.objects[size_t(i)], s->log.at(uint32_t(i)), sizeof(sentinel_object)) == 0);
  }
  REQUIRE(p.marks.size() == 12);
  CHECK(p.marks[11].seq == 120);
  CHECK(p.stat("tracked_allocations") == uint64_t(kObjects));
  CHECK(p.stat("live_bytes") == live);
  CHECK(p.stat("overhead_bytes").value_or(0) > 0);
  CHECK_FALSE(p.process.flags & SENTINEL_PROCESS_SNAPSHOT);

  // A snapshot (sentinel_dump()) holds the same and says it is one; a signal recorded for the end is
  // not claimed by it, since the process ran on.
  s->end_signal = SIGTERM;
  fmt::Profile snap = written_and_read(*s, DumpKind::snapshot);
  CHECK((snap.process.flags & SENTINEL_PROCESS_SNAPSHOT));
  CHECK_FALSE(snap.process.flags & SENTINEL_PROCESS_ENDED_BY_SIGNAL);
  CHECK(snap.objects.size() == size_t(kObjects));
  CHECK(snap.marks.size() == 12);
  fmt::Profile ended = written_and_read(*s);
  CHECK((ended.process.flags & SENTINEL_PROCESS_ENDED_BY_SIGNAL));
  CHECK_FALSE(ended.process.flags & SENTINEL_PROCESS_SNAPSHOT);
}

// SENTINEL_STEP_COSTS=200,500 on a one-node host (a dry run): the plan is made with those costs and
// the PLAN record the writer puts in the dump holds them, for sentinel-view plan to replay.
TEST_CASE("dump round trip: a plan's step costs", "[dump]") {
  auto s = std::make_unique<RuntimeState>();
  const char* env[] = {"SENTINEL_MODE=run", "SENTINEL_STEP_COSTS=200,500", "SENTINEL_MAX_OBJECTS=1024", nullptr};
  ConfigError err;
  REQUIRE(parse_config(env, &s->config, &err));
  s->mode = Mode::track;  // the writer's records of tracking only; the tiering records are Tiering's
  REQUIRE(s->log.init(1024));
  REQUIRE(s->sites.init());
  REQUIRE(s->marks.init());
  REQUIRE(s->stepper.init(s->config, &s->profiler, &s->log, nullptr, &s->clock));
  REQUIRE(s->threads.init());
  REQUIRE(s->sequencer.init(&s->log, &s->marks, &s->stepper, &s->threads, &s->arena, 1024));
  s->owner_pid = getpid();
  s->topology.numa_available = true;
  s->topology.node_count = 1;
  s->topology.nodes[0] = {0, 2, 1u << 30, 1u << 29, 0};
  s->topology.fast_node = 0;
  s->topology.slow_node = -1;
  s->tiering.init(s->config, s->topology, 1, &s->arena, &s->log, &s->clock);
  REQUIRE(s->tiering.enabled());

  // Two identities of a four-interval step: one touched early, one late.
  sentinel_identity ids[2] = {};
  sentinel_touch touches[2] = {};
  for (uint32_t i = 0; i < 2; ++i) {
    ids[i].id = i + 1;
    ids[i].site = i;
    ids[i].size = 1u << 20;
    ids[i].ordinal = i;
    ids[i].phase = 1;
    ids[i].birth_interval = 2 * i;
    ids[i].death_interval = 2 * i + 1;
    ids[i].lifetime = SENTINEL_LIFE_STEP;
    ids[i].occurrence = 0;
    touches[i] = sentinel_touch{i + 1, 2 * i, 1u << 20, 1, 0, 0, 0, 0, 0, 0};
  }
  const uint64_t interval_ns[4] = {1000000, 1000000, 1000000, 1000000};
  PhaseProfileView v;
  v.phase = 1;
  v.intervals = 4;
  v.profiled_steps = 1;
  v.identities = ids;
  v.identity_count = 2;
  v.touches = touches;
  v.touch_count = 2;
  v.interval_ns = interval_ns;
  REQUIRE(s->tiering.on_profiled(v));

  fmt::Profile p = written_and_read(*s);
  CHECK(p.minor == SENTINEL_FORMAT_MINOR);
  REQUIRE(p.plans.size() == 1);
  CHECK(p.plans[0].header.slow_ns_per_kib == 200);
  CHECK(p.plans[0].header.move_ns_per_kib == 500);
  CHECK((p.plans[0].header.flags & SENTINEL_TIER_DRY_RUN));
  REQUIRE(p.config_value("SENTINEL_STEP_COSTS"));
  CHECK(*p.config_value("SENTINEL_STEP_COSTS") == "200,500");
}
