// libFuzzer target over the dump reader: every input is parsed with and without checksum
// verification. Beyond "no crash, no sanitizer report, no unbounded allocation" it checks the
// reader's contract: errors are FormatError with a one-line "offset N: ..." message and an offset
// inside the input, and an input accepted with checksums is accepted identically without them.
//
// The custom mutator re-seals record checksums after mutating (half of the time), so that the
// verifying parse also gets past the CRC check and into the payload decoders.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/crc32c.h"
#include "format/format_reader.h"

namespace {

void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz-format-reader: contract violated: %s: %s\n", what, detail.c_str());
  std::abort();
}

struct Outcome {
  bool ok = false;
  size_t objects = 0, sites = 0, modules = 0, stats = 0, marks = 0;
  size_t steps = 0, intervals = 0, sessions = 0, identities = 0, touches = 0, groups = 0, counters = 0;
  size_t tiering = 0;  // 1.2 tiering records and plan entries
  uint64_t records = 0;
};

Outcome parse(const uint8_t* data, size_t size, bool verify) {
  Outcome out;
  sentinel::fmt::ParseOptions opt;
  opt.verify_checksums = verify;
  try {
    auto p = sentinel::fmt::parse_profile({data, size}, opt);
    out.ok = true;
    out.objects = p.objects.size();
    out.sites = p.sites.size();
    out.modules = p.modules.size();
    out.stats = p.stats.size();
    out.marks = p.marks.size();
    out.records = p.record_count;
    out.steps = p.steps.size();
    out.intervals = p.intervals.size();
    out.sessions = p.sessions.size();
    out.identities = p.identities.size();
    out.touches = p.touches.size();
    out.groups = p.groups.size();
    out.counters = p.counters.size();
    out.tiering = p.tiering.size() + p.plans.size() + p.migrations.size() + p.migration_log.size() +
                  p.placement.size() + p.detection.size();
    for (const auto& r : p.plans) out.tiering += r.entries.size();
    (void)p.has_profiler_records();
    (void)p.has_tiering_records();
    for (const auto& r : p.plans) (void)p.plan_for(r.header.phase);
    for (const auto& s : p.steps) (void)p.intervals_for(s.phase);
    // Exercise the lookups on parsed data.
    for (const auto& o : p.objects) {
      (void)p.find_site(o.site);
      (void)p.module_for(o.address);
      break;
    }
    (void)p.stat("overhead_bytes");
    (void)p.config_value("SENTINEL_MODE");
    (void)p.process.duration_ns();
  } catch (const sentinel::fmt::FormatError& e) {
    const std::string what = e.what();
    const std::string prefix = "offset " + std::to_string(e.offset()) + ": ";
    if (what.compare(0, prefix.size(), prefix) != 0) fail("message prefix", what);
    if (what.find('\n') != std::string::npos) fail("multi-line message", what);
    if (e.offset() > size) fail("offset beyond the input", what);
    if (e.message().empty()) fail("empty message", what);
  }
  return out;
}

uint32_t load32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
uint64_t load64(const uint8_t* p) {
  return load32(p) | uint64_t(load32(p + 4)) << 32;
}

// Recomputes the CRC of every record that is framed within the buffer.
void reseal(uint8_t* data, size_t size) {
  size_t off = 24;
  while (off <= size && size - off >= 16) {
    uint64_t len = load64(data + off + 8);
    if (len > size - off - 16) break;
    uint32_t crc = sentinel::crc32c(0, data + off + 16, static_cast<size_t>(len));
    for (int i = 0; i < 4; ++i) data[off + 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
    off += 16 + static_cast<size_t>(len);
  }
}

}  // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  size_t n = LLVMFuzzerMutate(data, size, max_size);
  if (seed & 1) reseal(data, n);
  return n;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Outcome checked = parse(data, size, true);
  Outcome unchecked = parse(data, size, false);
  if (checked.ok) {
    if (!unchecked.ok) fail("accepted with checksums, refused without", std::to_string(size));
    if (checked.objects != unchecked.objects || checked.sites != unchecked.sites ||
        checked.modules != unchecked.modules || checked.stats != unchecked.stats || checked.marks != unchecked.marks ||
        checked.records != unchecked.records || checked.steps != unchecked.steps ||
        checked.intervals != unchecked.intervals || checked.sessions != unchecked.sessions ||
        checked.identities != unchecked.identities || checked.touches != unchecked.touches ||
        checked.groups != unchecked.groups || checked.counters != unchecked.counters ||
        checked.tiering != unchecked.tiering)
      fail("checksum verification changed the result", std::to_string(size));
  }
  return 0;
}
