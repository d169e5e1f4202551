// C++ allocation paths under the library: every operator new/delete form (plain, array, nothrow, sized,
// aligned up to 2 MiB, aligned nothrow), over-aligned types, standard containers growing through the tracking
// threshold, shared_ptr/make_shared, and std::pmr resources over the global heap. Prints only results.
#include <malloc.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <memory_resource>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "common.h"

int t_failures;

namespace {

struct alignas(4096) PageAligned {
  unsigned char bytes[5000];
};
struct alignas(64) Line {
  double v[8];
};

bool aligned(const void* p, size_t a) {
  return reinterpret_cast<uintptr_t>(p) % a == 0;
}

void operator_forms() {
  static const size_t sizes[] = {1, 100, 4095, 4096, 70000, 3u << 20};
  for (size_t n : sizes) {
    auto* a = static_cast<unsigned char*>(::operator new(n));
    memset(a, 1, n);
#if defined(__cpp_sized_deallocation)
    ::operator delete(a, n);  // sized
#else
    ::operator delete(a);
#endif
    auto* b = new unsigned char[n];
    memset(b, 2, n);
    delete[] b;
    auto* c = static_cast<unsigned char*>(::operator new(n, std::nothrow));
    bool c_ok = c != nullptr;
    if (c) memset(c, 3, n);
    ::operator delete(c, std::nothrow);
    bool al_ok = true;
    for (size_t al = 16; al <= (2u << 20); al <<= 1) {
      auto* d = static_cast<unsigned char*>(::operator new (n, std::align_val_t{al}));
      al_ok = al_ok && aligned(d, al);
      memset(d, 4, n);
#if defined(__cpp_sized_deallocation)
      if ((al >> 4) % 2 == 0)
        ::operator delete (d, n, std::align_val_t{al});
      else
#endif
        ::operator delete (d, std::align_val_t{al});
      auto* e = static_cast<unsigned char*>(::operator new[](n, std::align_val_t{al}, std::nothrow));
      al_ok = al_ok && e != nullptr && aligned(e, al);
      if (e) memset(e, 5, n);
      ::operator delete[](e, std::align_val_t{al}, std::nothrow);
    }
    std::printf("operator new forms, size %zu: nothrow ok %d, aligned 16 B .. 2 MiB ok %d\n", n, c_ok, al_ok);
  }
  auto* pa = new PageAligned[3];
  auto* pl = new Line[1000];
  std::printf("over-aligned: alignas(4096)[3] %d, alignas(64)[1000] %d\n", aligned(pa, 4096), aligned(pl, 64));
  delete[] pa;
  delete[] pl;
  auto up = std::make_unique<PageAligned>();
  std::printf("make_unique<alignas(4096)>: %d\n", aligned(up.get(), 4096));
}

void containers() {
  std::vector<int> v;
  for (int i = 0; i < 1000000; i++) v.push_back(i);  // grows through every size class
  long long s = 0;
  for (int x : v) s += x;
  v.shrink_to_fit();
  std::vector<Line> lines(5000);
  std::printf("vector: sum %lld, capacity == size after shrink %d, Line[] aligned %d\n", s, v.capacity() == v.size(),
              aligned(lines.data(), 64));

  std::string str;
  for (int i = 0; i < 100000; i++) str += static_cast<char>('a' + i % 26);
  std::string copy = str;
  copy.resize(20);
  copy.shrink_to_fit();
  std::printf("string: %zu, copy %s\n", str.size(), copy.c_str());

  std::unordered_map<int, std::string> um;
  for (int i = 0; i < 50000; i++) um.emplace(i, std::to_string(i));  // bucket array beyond the threshold
  std::map<std::string, std::vector<char>> m;
  for (int i = 0; i < 200; i++) m[std::to_string(i)] = std::vector<char>(static_cast<size_t>(i) * 100, 'm');
  size_t total = 0;
  for (auto& kv : m) total += kv.second.size();
  um.clear();
  um.rehash(0);
  std::printf("unordered_map: %zu after clear; map: %zu entries, %zu bytes\n", um.size(), m.size(), total);

  auto sp = std::make_shared<std::vector<double>>(100000, 0.5);
  auto sp2 = sp;
  std::shared_ptr<unsigned char[]> arr(new unsigned char[70000]());
  std::printf("shared_ptr: use count %ld, value %.1f, array zero %d\n", sp.use_count(), (*sp2)[99999], arr[69999] == 0);
}

void pmr() {
  std::pmr::monotonic_buffer_resource mono(8192, std::pmr::new_delete_resource());
  std::pmr::vector<std::pmr::string> words(&mono);
  for (int i = 0; i < 20000; i++) words.emplace_back(std::string(40, static_cast<char>('a' + i % 26)));
  std::pmr::unsynchronized_pool_resource pool(std::pmr::new_delete_resource());
  std::pmr::vector<int> iv(&pool);
  for (int i = 0; i < 300000; i++) iv.push_back(i);
  long long s = 0;
  for (int x : iv) s += x;
  std::printf("pmr: %zu words, pool vector sum %lld\n", words.size(), s);
}

}  // namespace

int main() {
  operator_forms();
  containers();
  pmr();
  // bad_alloc from aligned new.
  bool threw = false;
  try {
    void* p = ::operator new (t_opaque(static_cast<size_t>(1) << 62), std::align_val_t{4096});
    ::operator delete (p, std::align_val_t{4096});
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  std::printf("aligned new 2^62 throws bad_alloc: %d\n", threw);
  return 0;
}
