/* A stand-in for the CUDA runtime's pinned host allocation, for tests only (never linked into the runtime):
 * cudaHostAlloc / cudaMallocHost / cudaFreeHost implemented with mmap/munmap. Return codes as the CUDA runtime's:
 * 0 cudaSuccess, 1 cudaErrorInvalidValue (bad flags, null out-pointer, unknown pointer to free),
 * 2 cudaErrorMemoryAllocation. */
#include <pthread.h>
#include <stddef.h>
#include <sys/mman.h>

#define STUB_SUCCESS 0
#define STUB_INVALID_VALUE 1
#define STUB_MEMORY_ALLOCATION 2
#define STUB_MAX_BLOCKS 4096

static struct {
  void* p;
  size_t n;
} blocks[STUB_MAX_BLOCKS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static int stub_alloc(void** out, size_t n) {
  if (out == NULL) return STUB_INVALID_VALUE;
  if (n == 0) {
    *out = NULL;
    return STUB_SUCCESS;
  }
  void* p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return STUB_MEMORY_ALLOCATION;
  pthread_mutex_lock(&mu);
  for (int i = 0; i < STUB_MAX_BLOCKS; i++) {
    if (blocks[i].p == NULL) {
      blocks[i].p = p;
      blocks[i].n = n;
      pthread_mutex_unlock(&mu);
      *out = p;
      return STUB_SUCCESS;
    }
  }
  pthread_mutex_unlock(&mu);
  munmap(p, n);
  return STUB_MEMORY_ALLOCATION;
}

__attribute__((visibility("default"))) int cudaHostAlloc(void** ptr, size_t size, unsigned int flags) {
  if (flags > 0xFu) return STUB_INVALID_VALUE; /* Default|Portable|Mapped|WriteCombined */
  return stub_alloc(ptr, size);
}

__attribute__((visibility("default"))) int cudaMallocHost(void** ptr, size_t size) {
  return stub_alloc(ptr, size);
}

__attribute__((visibility("default"))) int cudaFreeHost(void* ptr) {
  if (ptr == NULL) return STUB_SUCCESS;
  pthread_mutex_lock(&mu);
  for (int i = 0; i < STUB_MAX_BLOCKS; i++) {
    if (blocks[i].p == ptr) {
      size_t n = blocks[i].n;
      blocks[i].p = NULL;
      blocks[i].n = 0;
      pthread_mutex_unlock(&mu);
      munmap(ptr, n);
      return STUB_SUCCESS;
    }
  }
  pthread_mutex_unlock(&mu);
  return STUB_INVALID_VALUE;
}
