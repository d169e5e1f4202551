/* Code that points rsp at memory that is not a stack, as oneDNN's AVX2 sgemm kernel does (for K > 2048 it
 * sets rsp to the start of a malloc'd workspace). A signal delivered there puts its frame below rsp, into
 * whatever lies below: with Sentinel profiling, a fault on a protected tensor read by that code did exactly
 * that and corrupted glibc's heap. The runtime gives every thread an alternate signal stack, so the frame
 * never lands there.
 *
 * Each of 3 threads (the main one and two made by pthread_create) reads a long-lived tracked block of its
 * own, page by page, with rsp in the middle of a canary-filled mapping, once per loop of 19 tracked
 * allocations; under profile mode (fixed steps of 20,
 * 64 profiled, 16 intervals each) the block is protected again before nearly every read, so the reads
 * fault. The canary below rsp must stay intact. */
#include <pthread.h>
#include <sys/mman.h>

#include "common.h"

int t_failures;

enum { kBlockPages = 16, kSteps = 48, kCanaryBytes = 32768 };

/* Sums the first word of each page of p with rsp = top; no push, call or red-zone use in between. */
static uint64_t sum_pages_with_stack(const uint64_t* p, uint64_t pages, void* top) {
  uint64_t sum;
  __asm__ volatile(
      "mov %%rsp, %%r12\n\t"
      "mov %[top], %%rsp\n\t"
      "xor %[sum], %[sum]\n\t"
      "1:\n\t"
      "add (%[p]), %[sum]\n\t"
      "add $4096, %[p]\n\t"
      "dec %[pages]\n\t"
      "jnz 1b\n\t"
      "mov %%r12, %%rsp\n\t"
      : [sum] "=&r"(sum), [p] "+r"(p), [pages] "+r"(pages)
      : [top] "r"(top)
      : "r12", "memory", "cc");
  return sum;
}

static pthread_barrier_t step_start, step_end;

struct reader {
  unsigned char* area; /* canary below, the "stack" at its middle */
  uint64_t* block;     /* tracked: protected by every profiled interval */
  int ok;
};

static int read_once(struct reader* r) {
  uint64_t expect = 0;
  for (int i = 0; i < kBlockPages; i++) expect += (uint64_t)i * 3 + 1;
  uint64_t sum = sum_pages_with_stack(r->block, kBlockPages, r->area + kCanaryBytes);
  return sum == expect && t_all(r->area, kCanaryBytes, 0xA5);
}

static void* reader_thread(void* arg) {
  struct reader* r = arg;
  for (int s = 0; s < kSteps; s++) {
    pthread_barrier_wait(&step_start);
    r->ok &= read_once(r);
    pthread_barrier_wait(&step_end);
  }
  return NULL;
}

static int new_reader(struct reader* r) {
  r->area = mmap(NULL, 2 * kCanaryBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (r->area == MAP_FAILED) return 0;
  memset(r->area, 0xA5, 2 * kCanaryBytes);
  r->block = malloc((size_t)kBlockPages * 4096);
  if (!r->block) return 0;
  for (int i = 0; i < kBlockPages; i++) r->block[(size_t)i * 512] = (uint64_t)i * 3 + 1;
  r->ok = 1;
  return 1;
}

int main(void) {
  struct reader readers[3];
  pthread_t threads[2];
  pthread_barrier_init(&step_start, NULL, 3);
  pthread_barrier_init(&step_end, NULL, 3);
  if (!new_reader(&readers[0]) || pthread_create(&threads[0], NULL, reader_thread, &readers[0]) != 0) return 2;
  if (!new_reader(&readers[1]) || !new_reader(&readers[2])) return 2;
  if (pthread_create(&threads[1], NULL, reader_thread, &readers[1]) != 0) return 2;
  for (int s = 0; s < kSteps; s++) {
    /* 19 short-lived tracked blocks, then the reads. */
    void* tmp[19];
    for (int i = 0; i < 19; i++) {
      tmp[i] = malloc(T_TRACKED + (size_t)i * 64);
      if (tmp[i]) memset(tmp[i], i, 64);
    }
    pthread_barrier_wait(&step_start);
    readers[2].ok &= read_once(&readers[2]);
    pthread_barrier_wait(&step_end);
    for (int i = 0; i < 19; i++) free(tmp[i]);
  }
  for (int i = 0; i < 2; i++) pthread_join(threads[i], NULL);
  for (int i = 0; i < 3; i++) {
    T_EXPECT(readers[i].ok, "reader %d: the memory below its rsp changed, or the sum is wrong", i);
    printf("reader %d: canary intact %d\n", i, readers[i].ok);
  }
  for (int i = 0; i < 3; i++) free(readers[i].block);
  return t_failures ? 1 : 0;
}
