// Writes the hand-built dumps that tools/tests/test_tools.py runs sentinel-view on:
//   make-test-dumps DIR
// Besides the sample dump of dump_builder.h it writes variants (odd strings, corruption, truncation,
// a newer major version, many sites) and dumps whose sites point into this very program, so that
// offline symbolization is checked without the runtime.
#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "dump_builder.h"
#include "training_dump.h"

using sentinel::testing::DumpBuilder;
using sentinel::testing::make_object;
using sentinel::testing::TestSegment;

bool write_tiering_dumps(const std::string& dir);  // tiering_dumps.cpp: format 1.2

// Writes one dump; says why on stderr when it cannot (also used by tiering_dumps.cpp).
bool write_file(const std::string& path, const std::vector<uint8_t>& b) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    std::perror(path.c_str());
    return false;
  }
  bool ok = std::fwrite(b.data(), 1, b.size(), f) == b.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) std::perror(path.c_str());
  return ok;
}

namespace {

struct SelfModule {
  uint64_t bias = 0;
  std::vector<TestSegment> segs;
  std::string build_id;
  bool found = false;
};

// The main program's map, as the runtime records it (dl_iterate_phdr, first entry).
int phdr_callback(dl_phdr_info* info, size_t, void* data) {
  auto* m = static_cast<SelfModule*>(data);
  if (m->found) return 1;
  m->found = true;
  m->bias = info->dlpi_addr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD) m->segs.push_back({ph.p_vaddr, ph.p_memsz, ph.p_flags});
    if (ph.p_type == PT_NOTE) {
      const auto* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
      size_t off = 0;
      while (off + sizeof(ElfW(Nhdr)) <= ph.p_memsz) {
        const auto* n = reinterpret_cast<const ElfW(Nhdr)*>(p + off);
        size_t name_at = off + sizeof(ElfW(Nhdr));
        size_t desc_at = name_at + ((n->n_namesz + 3) & ~size_t{3});
        if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && std::memcmp(p + name_at, "GNU", 4) == 0)
          m->build_id.assign(reinterpret_cast<const char*>(p + desc_at), n->n_descsz);
        off = desc_at + ((n->n_descsz + 3) & ~size_t{3});
      }
    }
  }
  return 1;
}

__attribute__((noinline)) uint64_t capture_return_address() {
  return reinterpret_cast<uint64_t>(__builtin_return_address(0));
}

}  // namespace

namespace sentinel_test {
// The recorded "allocation site": the return address of the call below lies in this function.
__attribute__((noinline)) uint64_t allocating_function(int depth) {
  uint64_t r = capture_return_address();
  asm volatile("" ::: "memory");  // no tail call: the return address must stay in this function
  return r + static_cast<uint64_t>(depth) * 0;
}
}  // namespace sentinel_test

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make-test-dumps DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = true;
  const auto sample = sentinel::testing::sample_dump();
  ok &= write_file(dir + "/sample.prof", sample);

  {  // strings that need escaping in JSON and on a terminal
    DumpBuilder d;
    d.process(77, 1, 3, 10, 2000000010ull, "/opt/we\"ird\\dir/\x01pro\xffg\xc3\xa9",
              {"prog", "tab\there", "quote'\"", "new\nline"});
    d.config({"SENTINEL_DUMP=a\"b"});
    d.objects({make_object(0x1000, 70000, 100, 200, 0, 1, 0)});
    d.sites({{0, 5, {0x1234}}});
    d.stats({{"we\"ird\\name", 1}});
    d.end();
    ok &= write_file(dir + "/weird.prof", d.bytes());
  }
  {  // no objects at all
    DumpBuilder d;
    d.process(5, 1, -1, 10, 20, "/bin/true", {"true"});
    d.end();
    ok &= write_file(dir + "/noobjects.prof", d.bytes());
  }
  {  // 15 sites: --top limits the list; sizes make the order unambiguous
    DumpBuilder d;
    std::vector<sentinel::testing::TestSite> sites;
    std::vector<sentinel_object> objs;
    for (uint32_t i = 0; i < 15; ++i) {
      sites.push_back({i, 0x100u + i, {0x1000u + i}});
      objs.push_back(make_object(0x100000ull * (i + 1), 4096ull * (i + 1), 1000 + i, 0, i, UINT64_MAX, i));
    }
    d.sites(sites);
    d.objects(objs);
    d.end();
    ok &= write_file(dir + "/manysites.prof", d.bytes());
  }
  {  // sites in this program, symbolizable offline
    SelfModule self;
    dl_iterate_phdr(phdr_callback, &self);
    const uint64_t ret = sentinel_test::allocating_function(1);
    for (bool wrong_build_id : {false, true}) {
      DumpBuilder d;
      char exe[4096];
      ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
      exe[n > 0 ? n : 0] = '\0';
      d.process(static_cast<uint32_t>(getpid()), static_cast<uint32_t>(getppid()), -1, 10, 20, exe,
                {"make-test-dumps"});
      std::string bid = self.build_id;
      if (wrong_build_id) bid = std::string(20, '\x42');
      d.module(self.bias, self.segs, bid, "");  // main program: empty path, as the kernel gives it
      d.sites({{7, 0x77, {ret, 0x10}}});
      d.objects({make_object(0x5000, 1 << 20, 100, 0, 0, UINT64_MAX, 7)});
      d.end();
      ok &= write_file(dir + (wrong_build_id ? "/selfsym-badid.prof" : "/selfsym.prof"), d.bytes());
    }
    // The expected text of the frame, for the test script.
    FILE* f = std::fopen((dir + "/selfsym.expect").c_str(), "w");
    if (f) {
      std::fprintf(f, "sentinel_test::allocating_function(int)\n0x%llx\n",
                   static_cast<unsigned long long>(ret - self.bias));
      std::fclose(f);
    }
  }
  {  // synthetic 1.1 training loops (tests/fuzz/training_dump.h)
    auto spec = sentinel::testing::small_loop_spec();
    ok &= write_file(dir + "/loop.prof", sentinel::testing::make_loop_dump(spec).bytes);
    auto track = spec;  // track mode: steps and intervals, no profile
    track.profile = false;
    ok &= write_file(dir + "/loop-track.prof", sentinel::testing::make_loop_dump(track).bytes);
    // Markup in every string the report prints: it must come out as text.
    auto xss = spec;
    xss.executable = "/opt/</script><img src=x onerror=alert(1)>/python";
    xss.argv = {"python3", "</title><script>alert(2)</script>", "a&b \"q\" 'q'",
                "\x01"
                "ctl\xff"};
    ok &= write_file(dir + "/xss.prof", sentinel::testing::make_loop_dump(xss).bytes);
    ok &= write_file(dir + "/demo.prof", sentinel::testing::make_loop_dump(sentinel::testing::demo_loop_spec()).bytes);
  }
  {  // broken files
    auto trunc = sample;
    trunc.resize(trunc.size() - 30);  // the END record and part of MARKS
    ok &= write_file(dir + "/truncated.prof", trunc);
    auto corrupt = sample;
    corrupt[24 + 16 + 2] ^= 0x01;  // inside the PROCESS payload
    ok &= write_file(dir + "/corrupt.prof", corrupt);
    DumpBuilder newer(2, 1);
    newer.end();
    ok &= write_file(dir + "/newer.prof", newer.bytes());
    ok &= write_file(dir + "/empty.prof", {});
  }
  ok &= write_tiering_dumps(dir);
  return ok ? 0 : 1;
}
