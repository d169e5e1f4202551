/* dlopen a library that allocates in its constructor and in exported functions; call it, pass memory both
 * ways, dlclose; three rounds. `dlopen_main LIB deepbind` opens it with RTLD_DEEPBIND: the library's own malloc
 * references then bind to libc, not to an interposer, so only memory the library allocates is freed by the
 * caller (an interposer must recognise foreign pointers); the runtime is expected to warn about it. */
#include <dlfcn.h>
#include <malloc.h>

#include "common.h"

int t_failures;

typedef int (*ctor_ok_fn)(void);
typedef unsigned long long (*work_fn)(int);
typedef void* (*alloc_fn)(size_t, uint64_t);
typedef int (*free_fn)(void*, size_t, uint64_t);

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s LIB [deepbind]\n", argv[0]);
    return 2;
  }
  int deep = argc > 2 && strcmp(argv[2], "deepbind") == 0;
  int flags = RTLD_NOW | RTLD_LOCAL | (deep ? RTLD_DEEPBIND : 0);
  printf("mode %s\n", deep ? "RTLD_DEEPBIND" : "plain");
  for (int round = 0; round < 3; round++) {
    void* h = dlopen(argv[1], flags);
    if (!h) {
      printf("dlopen failed: %s\n", dlerror());
      return 1;
    }
    ctor_ok_fn ctor_ok = (ctor_ok_fn)dlsym(h, "dl_ctor_ok");
    work_fn work = (work_fn)dlsym(h, "dl_work");
    alloc_fn lalloc = (alloc_fn)dlsym(h, "dl_alloc");
    free_fn lfree = (free_fn)dlsym(h, "dl_free_checked");
    if (!ctor_ok || !work || !lalloc || !lfree) {
      printf("dlsym failed\n");
      return 1;
    }
    printf("round %d: constructor allocations ok=%d\n", round, ctor_ok());
    printf("round %d: dl_work checksum %llx\n", round, work(300));

    /* Library-allocated blocks, used and freed (and realloced) here. */
    static const size_t lens[] = {10, 4000, 4096, 70000, 1u << 20, 3u << 20};
    int ok = 1;
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
      unsigned char* p = lalloc(lens[i], 40 + i);
      ok &= p != NULL && t_check_sparse(p, lens[i], 40 + i) && malloc_usable_size(p) >= lens[i];
      if (i % 2) {
        unsigned char* q = realloc(p, lens[i] + 9000);
        ok &= q != NULL && t_check_sparse(q, lens[i], 40 + i);
        p = q;
      }
      free(p);
    }
    printf("round %d: library blocks freed here ok=%d\n", round, ok);

    if (!deep) {
      ok = 1;
      for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        unsigned char* p = malloc(lens[i]);
        t_fill_sparse(p, lens[i], 60 + i);
        ok &= lfree(p, lens[i], 60 + i);
      }
      printf("round %d: our blocks freed by the library ok=%d\n", round, ok);
    }
    int rc = dlclose(h);
    printf("round %d: dlclose %d\n", round, rc);
  }
  /* Still allocating normally after the library is gone. */
  void* p = malloc(1u << 20);
  memset(p, 1, 1u << 20);
  free(p);
  printf("done\n");
  return 0;
}
