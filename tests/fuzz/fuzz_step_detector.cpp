// libFuzzer target over the step detector, which runs on every tracked allocation inside the preloaded
// process: whatever stream it is fed (periodic or not, with or without live bytes), it must never crash,
// read out of bounds or report what it was not fed. The input is decoded as a small program that makes
// streams like training loops: a step template, then steps repeated, mutated (a token dropped, a foreign
// one inserted, two swapped, the batch-sized ones resized as an epoch's last batch) and runs of noise,
// so that locks, unlocks, retractions, relocks, epochs and short batches are all reached.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

#include "profile/step_detector.h"

namespace {

struct Bytes {
  const uint8_t* p;
  size_t n, i = 0;
  uint8_t next() { return i < n ? p[i++] : 0; }
  bool more() const { return i < n; }
};

struct Token {
  uint32_t site;
  uint64_t size;
};

constexpr size_t kMaxTokens = 20000;  // keeps each input fast

void require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static sentinel::StepDetector* d = new sentinel::StepDetector();
  sentinel::StepConfig config{};
  require(d->init(config));
  Bytes in{data, size};
  const uint32_t L = 2 + in.next() % 40;
  std::vector<Token> step(L);
  for (Token& t : step) t = {in.next() % 24u, 65536ull * (1 + in.next() % 8)};
  const uint32_t batched = in.next() % (L + 1);  // the first ones scale with the batch
  const bool with_live = in.next() & 1;
  uint64_t seq = 0, live_base = 1ull << 30;
  auto feed = [&](Token t, int64_t live) {
    d->feed(seq, t.site, t.size, with_live ? live : sentinel::StepDetector::kNoLive);
    if (d->locked()) require(d->period() >= 1 && d->period() <= 65536);
    seq++;
    sentinel::StepEvent e;
    while (d->next_event(&e)) {
      require(e.seq < seq && e.end_seq < seq);
      require(e.seq <= e.end_seq);
      require(e.period <= 65536);
    }
    require(d->steps() <= seq);
  };
  while (in.more() && seq < kMaxTokens) {
    const uint8_t c = in.next();
    std::vector<Token> s = step;
    switch (c % 8) {
      case 4:
        s.erase(s.begin() + in.next() % s.size());
        break;
      case 5:
        s.insert(s.begin() + in.next() % (s.size() + 1), Token{100u + in.next() % 8u, 65536ull * (1 + in.next() % 4)});
        break;
      case 6: {  // an epoch's last batch: the batch-sized ones smaller, some below the threshold
        const uint64_t div = 2 + in.next() % 14;
        std::vector<Token> r;
        for (uint32_t k = 0; k < s.size(); k++) {
          Token t = s[k];
          if (k < batched) t.size /= div;
          if (t.size >= 65536) r.push_back(t);
        }
        s = std::move(r);
        break;
      }
      case 7: {
        s.clear();
        for (uint32_t k = in.next() % 16; k > 0; k--) s.push_back({in.next() % 64u, 65536ull * (1 + in.next() % 16)});
        break;
      }
      default:
        break;
    }
    if (c & 0x40 && s.size() >= 2) std::swap(s[0], s[1 + in.next() % (s.size() - 1)]);
    if (c & 0x80) live_base += 65536ull * (in.next() % 4);  // bytes kept, as an inner loop keeps them
    for (uint32_t k = 0; k < s.size() && seq < kMaxTokens; k++)
      feed(s[k], static_cast<int64_t>(live_base + 4096ull * k));
  }
  d->finish();
  sentinel::StepEvent e;
  while (d->next_event(&e)) require(e.seq <= seq && e.end_seq <= seq && e.seq <= e.end_seq);
  require(d->steps() <= seq);
  return 0;
}
