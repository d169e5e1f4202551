// Writes the seed corpus of the dump-reader fuzzer: gen-seeds DIR. The committed seeds in
// tests/fuzz/seeds/ were made with it (keep them small: a few hundred bytes each).
#include <cstdio>
#include <string>
#include <vector>

#include "dump_builder.h"

using sentinel::testing::Bytes;
using sentinel::testing::DumpBuilder;
using sentinel::testing::make_object;

namespace {
bool put(const std::string& dir, const char* name, const std::vector<uint8_t>& b) {
  std::string path = dir + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    std::perror(path.c_str());
    return false;
  }
  bool ok = std::fwrite(b.data(), 1, b.size(), f) == b.size();
  return (std::fclose(f) == 0) && ok;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gen-seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = true;
  ok &= put(dir, "sample.prof", sentinel::testing::sample_dump());
  {
    DumpBuilder d;
    d.end();
    ok &= put(dir, "minimal.prof", d.bytes());
  }
  {
    DumpBuilder d(1, 4, 4);  // newer minor, 32-bit writer, wide entries, unknown record
    d.objects({make_object(0x1000, 4096, 1, 2, 0, 1, 0)}, 72);
    Bytes u;
    u.u32(3).str("xyz");
    d.record(99, u);
    d.sites({{0, 9, {0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80}}});
    d.end();
    ok &= put(dir, "newer-minor.prof", d.bytes());
  }
  {
    DumpBuilder d;
    d.process(1, 0, -1, 5, 9, "", {});
    d.config({"A=", "B=c=d"});
    d.topology(-1, -1, {}, -1, -1);
    d.module(0, {}, "", "");
    d.stats({{"", 0}});
    d.marks({{0, 0}, {UINT64_MAX, UINT64_MAX}});
    d.end();
    ok &= put(dir, "edges.prof", d.bytes());
  }
  return ok ? 0 : 1;
}
