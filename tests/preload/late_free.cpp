// Frees after teardown. Tracked memory allocated in main is freed by
//  - a C++ global object of this program whose destructor runs at exit,
//  - an atexit handler (which also allocates and frees, and registers another atexit handler that does too),
//  - a global object and an ELF destructor of late_free_lib, a library the loader finalises after an
//    LD_PRELOADed library (see late_free_lib.cpp),
// so the runtime must keep serving free/malloc after its own exit work.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common.h"

int t_failures;

extern "C" void late_keep(void* p, size_t n, uint64_t seed);
extern "C" int late_early_ok();

namespace {

struct GlobalOwner {
  std::vector<unsigned char*> blocks;
  std::string label = std::string(5000, 'L');  // tracked-size string owned by a global
  ~GlobalOwner() {
    int ok = label.size() == 5000;
    for (size_t i = 0; i < blocks.size(); i++) {
      ok &= t_check_sparse(blocks[i], 8192 * (i + 1), 300 + i);
      free(blocks[i]);
    }
    std::vector<char> v(100000, 'v');
    ok &= v[99999] == 'v';
    std::printf("program global destructor: freed %zu blocks, ok=%d\n", blocks.size(), ok);
  }
};
GlobalOwner owner;

unsigned char* atexit_block;

void inner_atexit() {
  void* p = malloc(70000);
  memset(p, 2, 70000);
  free(p);
  std::printf("atexit handler registered during exit: ran\n");
}

void outer_atexit() {
  int ok = t_check_sparse(atexit_block, 1u << 20, 77);
  free(atexit_block);
  void* p = calloc(1, 40000);
  ok &= p != nullptr && t_all(p, 40000, 0);
  void* small = malloc(10);
  free(small);
  free(p);
  std::atexit(inner_atexit);
  std::printf("atexit handler: ok=%d\n", ok);
}

}  // namespace

int main() {
  std::printf("library constructor allocations intact in main: %d\n", late_early_ok());
  for (size_t i = 0; i < 4; i++) {
    auto* p = static_cast<unsigned char*>(malloc(8192 * (i + 1)));
    t_fill_sparse(p, 8192 * (i + 1), 300 + i);
    owner.blocks.push_back(p);
  }
  for (uint64_t i = 0; i < 6; i++) {
    size_t n = i % 2 ? 100 : 50000 * (i + 1);
    void* p = malloc(n);
    t_fill_sparse(p, n, 500 + i);
    late_keep(p, n, 500 + i);
  }
  atexit_block = static_cast<unsigned char*>(malloc(1u << 20));
  t_fill_sparse(atexit_block, 1u << 20, 77);
  std::atexit(outer_atexit);
  std::printf("main returns\n");
  return 0;
}
