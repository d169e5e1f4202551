// Runs the synthetic training loop of synthetic_pattern.h; prints a checksum so nothing is optimized out.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "read_pages.h"
#include "synthetic_pattern.h"

using namespace synthetic;

int main() {
  unsigned char* w[kWeights];
  for (int j = 0; j < kWeights; ++j) {
    w[j] = static_cast<unsigned char*>(malloc(weight_size(j)));
    memset(w[j], j + 1, weight_size(j));
  }
  uint64_t sum = 0;
  for (int step = 0; step < kSteps; ++step) {
    unsigned char* a[kActivations];
    for (int i = 0; i < kActivations; ++i) {
      a[i] = static_cast<unsigned char*>(malloc(activation_size(i)));
      if (i < 8) {
        sum += read_all(w[i], weight_size(i));
      } else {
        sum += read_all(w[15 - i], weight_size(15 - i));
        sum += read_all(a[15 - i], activation_size(15 - i));
      }
      memset(a[i], (step + i) & 0xFF, activation_size(i));
      if (i >= 8) free(a[15 - i]);
    }
    for (int i = 8; i < kActivations; ++i) free(a[i]);
  }
  for (int j = 0; j < kWeights; ++j) free(w[j]);
  printf("checksum %llu\n", static_cast<unsigned long long>(sum));
  return 0;
}
