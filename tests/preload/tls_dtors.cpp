// Thread-exit and process-exit destructors that allocate and free (tracked and untracked sizes):
// pthread_key_create destructors (one re-arms its key once, so that a second destructor round runs) and C++
// thread_local objects. 6 threads, joined; then the main thread's thread_local destructor at exit().
// `tls_dtors pthread_exit` ends main with pthread_exit() instead, so that the main thread's key destructors run
// too and the process exits when the last thread is gone.
#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common.h"

int t_failures;

namespace {

std::atomic<int> key_dtor_runs{0}, key_dtor_bad{0}, rearmed{0};
std::atomic<int> tl_dtor_runs{0}, tl_dtor_bad{0};
pthread_key_t key_big, key_small;

// Allocates and frees in a destructor context: tracked and untracked sizes, realloc across the threshold.
int churn_in_dtor(uint64_t seed) {
  int ok = 1;
  for (int i = 0; i < 8; i++) {
    size_t n = (i % 2) ? 4096u << (i % 5) : 24u + 100u * static_cast<unsigned>(i);
    auto* p = static_cast<unsigned char*>(malloc(n));
    if (!p) return 0;
    t_fill(p, n, seed + static_cast<uint64_t>(i));
    auto* q = static_cast<unsigned char*>(realloc(p, n * 3));
    if (!q) {
      free(p);
      return 0;
    }
    ok &= t_check(q, n, seed + static_cast<uint64_t>(i));
    free(q);
  }
  void* a = aligned_alloc(4096, 3 * 4096);
  ok &= a != nullptr && t_aligned(a, 4096);
  free(a);
  return ok;
}

struct Block {
  unsigned char* p;
  size_t n;
  uint64_t seed;
};

Block* make_block(size_t n, uint64_t seed) {
  auto* b = static_cast<Block*>(malloc(sizeof(Block)));
  b->p = static_cast<unsigned char*>(malloc(n));
  b->n = n;
  b->seed = seed;
  t_fill_sparse(b->p, n, seed);
  return b;
}

void key_dtor(void* v) {
  auto* b = static_cast<Block*>(v);
  key_dtor_runs++;
  if (!t_check_sparse(b->p, b->n, b->seed)) key_dtor_bad++;
  if (!churn_in_dtor(b->seed)) key_dtor_bad++;
  // Re-arm once with a new tracked block: pthread runs another destructor round.
  bool rearm = b->seed % 2 == 0 && b->n >= 4096;
  uint64_t seed = b->seed;
  free(b->p);
  free(b);
  if (rearm) {
    rearmed++;
    pthread_setspecific(key_big, make_block(70000, seed + 1));
  }
}

struct TlsObject {
  std::vector<unsigned char> big;  // tracked
  std::string small;               // untracked
  std::unique_ptr<int[]> mid;
  uint64_t seed = 0;
  bool armed = false;
  void arm(uint64_t s) {
    seed = s;
    big.assign(100000, static_cast<unsigned char>(s));
    small.assign(50, static_cast<char>('a' + s % 26));
    mid.reset(new int[2048]());  // 8 KiB, tracked
    mid[2047] = static_cast<int>(s);
    armed = true;
  }
  ~TlsObject() {
    if (!armed) return;
    tl_dtor_runs++;
    bool ok =
        big.size() == 100000 && big[99999] == static_cast<unsigned char>(seed) && mid[2047] == static_cast<int>(seed);
    // Allocate from a destructor: a vector of tracked size and a string.
    std::vector<double> tmp(20000, 1.5);
    std::string s(3000, 'x');
    ok = ok && tmp[19999] == 1.5 && s.size() == 3000 && churn_in_dtor(seed * 7);
    if (!ok) tl_dtor_bad++;
  }
};

thread_local TlsObject tl_obj;

void* thread_main(void* arg) {
  auto idx = static_cast<uint64_t>(reinterpret_cast<intptr_t>(arg));
  pthread_setspecific(key_big, make_block(8192 + idx * 4096, idx * 2));  // even seeds re-arm
  pthread_setspecific(key_small, make_block(64 + idx, idx * 2 + 1));
  tl_obj.arm(idx + 1);
  if (!churn_in_dtor(idx)) key_dtor_bad++;
  return nullptr;
}

struct MainTls {
  bool armed = false;
  ~MainTls() {
    if (!armed) return;
    std::vector<char> v(1u << 20, 'm');
    auto* p = static_cast<char*>(calloc(1, 5000));
    bool ok = p != nullptr && v[12345] == 'm' && churn_in_dtor(4242);
    free(p);
    std::printf("main thread_local destructor at exit: allocations ok=%d\n", ok ? 1 : 0);
  }
};
thread_local MainTls main_tls;

void at_exit_report() {
  std::printf("atexit: key destructor runs %d (bad %d, re-armed %d), thread_local destructor runs %d (bad %d)\n",
              key_dtor_runs.load(), key_dtor_bad.load(), rearmed.load(), tl_dtor_runs.load(), tl_dtor_bad.load());
}

}  // namespace

int main(int argc, char** argv) {
  bool via_pthread_exit = argc > 1 && std::strcmp(argv[1], "pthread_exit") == 0;
  pthread_key_create(&key_big, key_dtor);
  pthread_key_create(&key_small, key_dtor);
  std::atexit(at_exit_report);
  main_tls.armed = true;
  for (int round = 0; round < 3; round++) {
    pthread_t th[6];
    for (int i = 0; i < 6; i++)
      pthread_create(&th[i], nullptr, thread_main, reinterpret_cast<void*>(static_cast<intptr_t>(round * 6 + i)));
    for (auto& t : th) pthread_join(t, nullptr);
    std::printf("round %d: key destructor runs %d (bad %d, re-armed %d), thread_local destructor runs %d (bad %d)\n",
                round, key_dtor_runs.load(), key_dtor_bad.load(), rearmed.load(), tl_dtor_runs.load(),
                tl_dtor_bad.load());
  }
  if (via_pthread_exit) {
    pthread_setspecific(key_big, make_block(16384, 100));
    pthread_setspecific(key_small, make_block(32, 101));
    tl_obj.arm(77);
    std::printf("main: pthread_exit\n");
    std::fflush(stdout);
    pthread_exit(nullptr);
  }
  return 0;
}
