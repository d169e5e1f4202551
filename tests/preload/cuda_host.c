/* Pinned host memory through the CUDA runtime API (here the test stub libcudart_stub.so; under LD_PRELOAD the
 * runtime's hooks sit in front of it). Allocates, writes, reads and frees buffers of several sizes through
 * cudaHostAlloc (all flag combinations) and cudaMallocHost, checks the return codes of the error cases, and
 * frees pointers the CUDA runtime never gave out. Keep the sizes in step with tests/preload/meson.build, which
 * checks the dump for them. */
#include <pthread.h>

#include "common.h"

int t_failures;

int cudaHostAlloc(void** ptr, size_t size, unsigned int flags);
int cudaMallocHost(void** ptr, size_t size);
int cudaFreeHost(void* ptr);

static const size_t pinned_sizes[] = {1000, 4096, 65536, 1048576, 3145733, 16777216};
#define NP (sizeof pinned_sizes / sizeof pinned_sizes[0])

static void* thread_main(void* arg) {
  intptr_t id = (intptr_t)arg;
  int ok = 1;
  for (int i = 0; i < 20; i++) {
    void* p = NULL;
    size_t n = 8192 * (size_t)(i + 1);
    ok &= cudaMallocHost(&p, n) == 0 && p != NULL;
    if (p) {
      t_fill_sparse(p, n, (uint64_t)(id * 100 + i));
      ok &= t_check_sparse(p, n, (uint64_t)(id * 100 + i));
      ok &= cudaFreeHost(p) == 0;
    }
  }
  return (void*)(intptr_t)ok;
}

int main(void) {
  int ok_all = 1;
  void* held[NP][5];
  for (size_t i = 0; i < NP; i++) {
    size_t n = pinned_sizes[i];
    for (unsigned flags = 0; flags < 4; flags++) {
      void* p = NULL;
      int r = cudaHostAlloc(&p, n, flags);
      int ok = r == 0 && p != NULL;
      if (ok) {
        t_fill(p, n < 65536 ? n : 65536, i * 10 + flags);
        t_fill_sparse(p, n, i * 10 + flags);
        ok = t_check_sparse(p, n, i * 10 + flags) && t_aligned(p, 4096);
      }
      printf("cudaHostAlloc(%zu, flags %u) -> %d, data ok %d\n", n, flags, r, ok);
      ok_all &= ok;
      held[i][flags] = p;
    }
    void* p = NULL;
    int r = cudaMallocHost(&p, n);
    int ok = r == 0 && p != NULL;
    if (ok) {
      memset(p, 0x5A, n);
      ok = t_all(p, n, 0x5A);
    }
    printf("cudaMallocHost(%zu) -> %d, data ok %d\n", n, r, ok);
    ok_all &= ok;
    held[i][4] = p;
  }
  /* Free in another order than allocated, checking contents first. */
  for (size_t k = 0; k < NP; k++) {
    size_t i = NP - 1 - k;
    for (int j = 0; j < 5; j++) {
      int intact = j < 4 ? t_check_sparse(held[i][j], pinned_sizes[i], i * 10 + (size_t)j)
                         : t_all(held[i][j], pinned_sizes[i], 0x5A);
      int r = cudaFreeHost(held[i][j]);
      printf("cudaFreeHost(block %zu/%d) -> %d, intact %d\n", i, j, r, intact);
      ok_all &= r == 0 && intact;
    }
  }

  /* Error cases. */
  void* p = (void*)&p;
  int r = cudaHostAlloc(&p, t_opaque((size_t)1 << 62), 0);
  printf("cudaHostAlloc(2^62) -> %d (2 = cudaErrorMemoryAllocation)\n", r);
  r = cudaMallocHost(&p, t_opaque((size_t)1 << 62));
  printf("cudaMallocHost(2^62) -> %d\n", r);
  r = cudaHostAlloc(&p, 4096, 0x100);
  printf("cudaHostAlloc(bad flags) -> %d\n", r);
  p = (void*)&p;
  r = cudaMallocHost(&p, 0);
  printf("cudaMallocHost(0) -> %d, null %d\n", r, p == NULL);
  printf("cudaFreeHost(NULL) -> %d\n", cudaFreeHost(NULL));
  int on_stack = 0;
  printf("cudaFreeHost(stack address) -> %d\n", cudaFreeHost(&on_stack));
  void* heap = malloc(100000);
  printf("cudaFreeHost(malloc'd block) -> %d\n", cudaFreeHost(heap));
  free(heap);
  void* twice = NULL;
  cudaMallocHost(&twice, 8192);
  printf("cudaFreeHost(first) -> %d\n", cudaFreeHost(twice));
  printf("cudaFreeHost(double free) -> %d\n", cudaFreeHost(t_opaque_ptr(twice)));

  /* Threads. */
  pthread_t th[4];
  for (intptr_t i = 0; i < 4; i++) pthread_create(&th[i], NULL, thread_main, (void*)i);
  int threads_ok = 1;
  for (int i = 0; i < 4; i++) {
    void* res;
    pthread_join(th[i], &res);
    threads_ok &= (int)(intptr_t)res;
  }
  printf("4 threads x 20 pinned buffers: ok %d\n", threads_ok);
  /* One pinned buffer left alive at exit. */
  void* alive = NULL;
  printf("cudaMallocHost(alive at exit, 2 MiB) -> %d\n", cudaMallocHost(&alive, 2u << 20));
  memset(alive, 1, 2u << 20);
  ok_all &= threads_ok;
  printf("all ok %d\n", ok_all);
  return ok_all ? 0 : 1;
}
