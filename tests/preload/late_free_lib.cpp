// Linked into late_free (DT_NEEDED). The dynamic loader initialises this library before an LD_PRELOADed one and
// finalises it after, so its global constructor allocates before the runtime's constructor has run and its
// destructors free after the runtime's teardown (its destructor, its exit handler, the dump).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common.h"

namespace {

struct Kept {
  void* p;
  size_t n;
  uint64_t seed;
};

struct LateHolder {
  unsigned char* early_big = nullptr;
  unsigned char* early_small = nullptr;
  Kept kept[16] = {};
  int nkept = 0;
  LateHolder() {
    // Before the preloaded runtime's constructor.
    early_big = static_cast<unsigned char*>(malloc(200000));
    early_small = static_cast<unsigned char*>(malloc(50));
    if (early_big) t_fill_sparse(early_big, 200000, 1);
    if (early_small) t_fill(early_small, 50, 2);
  }
  ~LateHolder() {
    int ok = early_big && early_small && t_check_sparse(early_big, 200000, 1) && t_check(early_small, 50, 2);
    free(early_big);
    free(early_small);
    for (int i = 0; i < nkept; i++) {
      ok &= t_check_sparse(kept[i].p, kept[i].n, kept[i].seed);
      free(kept[i].p);
    }
    // Allocate, realloc and free after teardown.
    auto* p = static_cast<unsigned char*>(malloc(65536));
    ok &= p != nullptr;
    if (p) {
      memset(p, 1, 65536);
      auto* q = static_cast<unsigned char*>(realloc(p, 300000));
      ok &= q != nullptr && t_all(q, 65536, 1);
      free(q ? q : p);
    }
    void* a = nullptr;
    ok &= posix_memalign(&a, 4096, 10000) == 0;
    free(a);
    std::printf("late library global destructor: freed %d kept blocks, ok=%d\n", nkept, ok);
  }
};

LateHolder holder;

unsigned char* fini_block;

__attribute__((constructor)) void late_ctor() {
  fini_block = static_cast<unsigned char*>(calloc(1, 123456));
}

__attribute__((destructor)) void late_dtor() {
  int ok = fini_block != nullptr && t_all(fini_block, 123456, 0);
  free(fini_block);
  void* p = malloc(1u << 20);
  ok &= p != nullptr;
  free(p);
  std::printf("late library ELF destructor: ok=%d\n", ok);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void late_keep(void* p, size_t n, uint64_t seed) {
  if (holder.nkept < 16) holder.kept[holder.nkept++] = Kept{p, n, seed};
}

extern "C" __attribute__((visibility("default"))) int late_early_ok() {
  return holder.early_big && t_check_sparse(holder.early_big, 200000, 1);
}
