// C++ exceptions under the library: throw through 24 frames, each holding vectors of tracked sizes and strings,
// caught at the top; std::bad_alloc from huge `new` and from a huge vector; exceptions that carry tracked
// buffers; rethrow and nested exceptions; the same in 4 threads at once.
#include <pthread.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.h"

int t_failures;

namespace {

struct Payload : std::runtime_error {
  std::vector<unsigned char> data;  // tracked size, allocated by the thrower
  int depth;
  Payload(int d, size_t n) : std::runtime_error("payload at depth " + std::to_string(d)), data(n, 0x3C), depth(d) {}
};

struct Guard {
  static thread_local long destroyed;
  std::vector<char> big;
  std::string name;
  explicit Guard(int depth) : big(4096 + static_cast<size_t>(depth) * 1000, 'g'), name(40, 'n') {}
  ~Guard() {
    // Allocate and free during unwinding.
    std::vector<int> tmp(2000, 1);
    if (big.back() == 'g' && tmp[1999] == 1) destroyed++;
  }
};
thread_local long Guard::destroyed = 0;

long recurse(int depth, int throw_at, size_t payload, int kind) {
  Guard g(depth);
  std::vector<double> local(600 + static_cast<size_t>(depth), 2.0);  // 4.8 KiB+: tracked
  if (depth == throw_at) {
    switch (kind % 4) {
      case 0:
        throw Payload(depth, payload);
      case 1:
        throw std::out_of_range(std::string(5000, 'x'));  // message of tracked size
      case 2:
        throw depth;
      default: {
        auto* p = new char[payload];  // leaked if the unwinder is wrong: it is freed in the catch below
        try {
          throw std::logic_error("inner");
        } catch (...) {
          delete[] p;
          throw;  // rethrow
        }
      }
    }
  }
  return recurse(depth + 1, throw_at, payload, kind) + static_cast<long>(local[0]);
}

struct Totals {
  long caught = 0, payload_ok = 0, bad_alloc = 0, nested = 0, guards = 0;
};

Totals run(int iterations, uint64_t seed) {
  Totals t;
  uint64_t s = seed;
  for (int i = 0; i < iterations; i++) {
    int throw_at = 1 + static_cast<int>(t_rand(&s) % 24);
    size_t payload = 4096 + t_rand(&s) % 200000;
    try {
      recurse(0, throw_at, payload, i);
    } catch (const Payload& p) {
      t.caught++;
      if (p.depth == throw_at && p.data.size() == payload && p.data[payload - 1] == 0x3C) t.payload_ok++;
    } catch (const std::out_of_range& e) {
      t.caught++;
      if (std::strlen(e.what()) == 5000) t.payload_ok++;
    } catch (int d) {
      t.caught++;
      if (d == throw_at) t.payload_ok++;
    } catch (const std::logic_error& e) {
      t.caught++;
      if (std::string(e.what()) == "inner") t.payload_ok++;
    }
    // std::bad_alloc from operator new and from a container.
    if (i % 10 == 0) {
      try {
        size_t huge = t_opaque(static_cast<size_t>(1) << 62);
        auto* p = new char[huge];
        p[0] = 1;
        delete[] p;
      } catch (const std::bad_alloc&) {
        t.bad_alloc++;
      }
      try {
        std::vector<char> v(t_opaque(static_cast<size_t>(1) << 61));
        v[0] = 1;
      } catch (const std::bad_alloc&) {
        t.bad_alloc++;
      }
      try {
        auto* p = ::operator new (t_opaque(SIZE_MAX - 10), std::align_val_t{64});
        ::operator delete (p, std::align_val_t{64});
      } catch (const std::bad_alloc&) {
        t.bad_alloc++;
      }
      // nothrow new returns nullptr.
      auto* q = new (std::nothrow) char[t_opaque(static_cast<size_t>(1) << 62)];
      if (q == nullptr) t.bad_alloc++;
      delete[] q;
    }
    // Nested exceptions.
    if (i % 25 == 0) {
      try {
        try {
          throw Payload(0, 8192);
        } catch (...) {
          std::throw_with_nested(std::runtime_error("outer"));
        }
      } catch (const std::exception& e) {
        try {
          std::rethrow_if_nested(e);
        } catch (const Payload& p) {
          if (p.data.size() == 8192) t.nested++;
        }
      }
    }
  }
  t.guards = Guard::destroyed;
  return t;
}

void print(const char* who, const Totals& t) {
  std::printf("%s: caught %ld, payload ok %ld, bad_alloc %ld, nested %ld, guards destroyed %ld\n", who, t.caught,
              t.payload_ok, t.bad_alloc, t.nested, t.guards);
}

Totals thread_totals[4];
void* thread_main(void* arg) {
  auto i = reinterpret_cast<intptr_t>(arg);
  thread_totals[i] = run(400, 1000 + static_cast<uint64_t>(i));
  return nullptr;
}

}  // namespace

int main() {
  Totals t = run(1500, 1);
  print("main", t);
  pthread_t th[4];
  for (intptr_t i = 0; i < 4; i++) pthread_create(&th[i], nullptr, thread_main, reinterpret_cast<void*>(i));
  for (auto& x : th) pthread_join(x, nullptr);
  for (int i = 0; i < 4; i++) {
    char name[16];
    std::snprintf(name, sizeof name, "thread %d", i);
    print(name, thread_totals[i]);
  }
  bool ok = t.caught == t.payload_ok && t.caught == 1500;
  for (auto& x : thread_totals) ok = ok && x.caught == x.payload_ok && x.caught == 400;
  std::printf("all exceptions caught with intact payloads: %d\n", ok ? 1 : 0);
  return ok ? 0 : 1;
}
