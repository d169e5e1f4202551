// A loop whose step has one object used throughout an interval and one used once in it, for the
// access intensity of profiling in passes (SENTINEL_PROFILE_PASSES, docs/profiling.md "Passes"). Each
// step allocates 4 activations (4 intervals at SENTINEL_INTERVALS=4); in the first interval it reads the
// cold weight (2 MiB) once and then re-reads the hot weight (3 MiB) for 30 ms. Prints a checksum of one
// read of each, which does not depend on how many times the hot weight was re-read. With the argument
// "scattered" the re-reads visit the hot weight's pages in a scattered order, so that no sweep carries on
// and every pass re-faults each of its granules, and they are a fixed count, so that the faults lengthen the
// step: passes that cost (SENTINEL_PROFILE_PASS_COST). The count is the second argument; without it, as many
// as fit in 30 ms of the first step, printed to stderr ("rereads N") so that runs to be compared can be
// given the same work whatever else loads the machine.
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "read_pages.h"

namespace {
constexpr size_t kHot = 3u << 20, kCold = 2u << 20, kActivation = 1u << 20;
constexpr int kSteps = 40, kActivations = 4;
constexpr uint64_t kHotNs = 30'000'000;

// Every page of p, in an order of strides of 97 pages (prime: each page once), one byte of each.
uint64_t read_scattered(const unsigned char* p, size_t n) {
  const size_t pages = n / 4096;
  uint64_t s = 0;
  for (size_t k = 0, page = 0; k < pages; ++k, page = (page + 97) % pages) s += p[page * 4096];
  return s;
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}
}  // namespace

int main(int argc, char** argv) {
  const bool scattered = argc > 1 && strcmp(argv[1], "scattered") == 0;
  const bool calibrate = scattered && argc < 3;
  uint64_t rereads = scattered && !calibrate ? strtoull(argv[2], nullptr, 10) : 0;
  auto* hot = static_cast<unsigned char*>(malloc(kHot));
  auto* cold = static_cast<unsigned char*>(malloc(kCold));
  memset(hot, 3, kHot);
  memset(cold, 5, kCold);
  uint64_t sum = 0;
  volatile uint64_t sink = 0;
  for (int step = 0; step < kSteps; ++step) {
    unsigned char* a[kActivations];
    for (int i = 0; i < kActivations; ++i) {
      const size_t size = kActivation + i * (64u << 10);  // sizes that tell the step's allocations apart
      a[i] = static_cast<unsigned char*>(malloc(size));
      memset(a[i], (step + i) & 0xFF, size);
      if (i == 0) {
        sum += read_all(cold, kCold) + read_all(hot, kHot);
        if (!scattered) {
          for (uint64_t t0 = now_ns(); now_ns() - t0 < kHotNs;) sink = sink + read_all(hot, kHot);
        } else if (calibrate && step == 0) {
          for (uint64_t t0 = now_ns(); now_ns() - t0 < kHotNs; ++rereads) sink = sink + read_scattered(hot, kHot);
        } else {
          for (uint64_t k = 0; k < rereads; ++k) sink = sink + read_scattered(hot, kHot);
        }
      }
    }
    for (int i = 0; i < kActivations; ++i) {
      sum += a[i][0];
      free(a[i]);
    }
  }
  free(hot);
  free(cold);
  if (calibrate) fprintf(stderr, "rereads %llu\n", static_cast<unsigned long long>(rereads));
  printf("checksum %llu\n", static_cast<unsigned long long>(sum));
  return 0;
}
