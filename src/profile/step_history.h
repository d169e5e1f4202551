// Step detection, the history: the stream of tracked allocations as the automatic detector reads it.
// Positions are consecutive (one per allocation fed) and map to seqs through an offset; the ring holds
// the prefix sums S(p) of the 64-bit tokens, so a token is S(p + 1) - S(p) and the bag of any window
// [a, b) hashes to S(b) - S(a) (an additive multiset hash: equal for any order of the same allocations).
// A second ring holds the tracked bytes live just before each allocation, where the caller knows them:
// the step's working set is smallest where an iteration begins, which is how a lock picks its rotation.
// See docs/step-detection.md, "History" and "Where a step starts".
#pragma once
#include <cstddef>
#include <cstdint>

#include "profile/step_detector_internal.h"

namespace sentinel::step_internal {

class StepHistory {
 public:
  static constexpr uint32_t kRingBits = 18;  // history of 2^18 tokens (4 * kMaxPeriod)
  static constexpr uint64_t kRing = uint64_t{1} << kRingBits;
  static constexpr uint64_t kRingMask = kRing - 1;
  static constexpr size_t kBytes = kRing * sizeof(uint64_t) + kRing * sizeof(int64_t);  // sums, then live bytes
  static constexpr int64_t kNoLive = INT64_MIN;  // live bytes not known (a recorded stream without them)
  static constexpr uint64_t kReorder = 64;       // a seq this far from the expected one is not a gap

  void attach(void* mem) {
    sums_ = static_cast<uint64_t*>(mem);
    lives_ = reinterpret_cast<int64_t*>(sums_ + kRing);
  }

  // The seq of the allocation about to be appended. A merge of per-thread buffers delivers seqs slightly
  // out of order: within kReorder of the expected seq the stream is continuous (positions count feeds; a
  // seq skipped here is a missing allocation). True on a gap: the stream starts over at the next position.
  bool take_seq(uint64_t seq) {
    cur_seq_ = seq;
    if (!started_) {
      started_ = true;
      restart(seq);
      return false;
    }
    const uint64_t expected = max_seq_ + 1;
    const bool gap = seq >= expected ? seq - expected > kReorder : expected - seq > kReorder + 1;
    if (gap) {
      restart(seq);
    } else if (seq > max_seq_) {
      max_seq_ = seq;
      seq_offset_ = seq - n_;
    }
    return gap;
  }
  // Appends the token (and the bytes live just before its allocation) at the next position and returns
  // that position.
  uint64_t append(uint64_t token, int64_t live) {
    const uint64_t pos = n_++;
    sum_ += token;
    sums_[(pos + 1) & kRingMask] = sum_;
    lives_[pos & kRingMask] = live;
    return pos;
  }

  uint64_t sum_at(uint64_t p) const { return sums_[p & kRingMask]; }  // S(p)
  uint64_t sum() const { return sum_; }                               // S(end())
  uint64_t tok(uint64_t pos) const { return sum_at(pos + 1) - sum_at(pos); }
  int64_t live(uint64_t pos) const { return lives_[pos & kRingMask]; }  // kNoLive: not known
  bool live_known(uint64_t pos) const { return live(pos) != kNoLive; }
  // P and the hash of the bag of the P tokens ending at pos: the same for any order of the same step (a
  // phase's identity, docs/step-detection.md "Known pattern").
  uint64_t bag_signature(uint64_t pos, uint32_t period) const {
    return mix64((sum_at(pos + 1) - sum_at(pos + 1 - period)) ^ mix64(period));
  }
  // The same for those P tokens less the one at position j (in them): the bag of a period P - 1.
  uint64_t bag_signature_without(uint64_t pos, uint32_t period, uint64_t j) const {
    return mix64((sum_at(pos + 1) - sum_at(pos + 1 - period) - tok(j)) ^ mix64(period - 1));
  }
  uint64_t seq_of(uint64_t pos) const { return pos + seq_offset_; }
  uint64_t pos_of(uint64_t seq) const { return seq - seq_offset_; }
  uint64_t end() const { return n_; }                  // positions fed
  uint64_t valid_from() const { return valid_from_; }  // first position of the current continuous stream
  uint64_t cur_seq() const { return cur_seq_; }        // seq of the allocation being fed
  uint64_t max_seq() const { return max_seq_; }        // highest seq fed in this stream
  // The oldest position whose token the ring still holds, in the current stream.
  uint64_t oldest_pos() const {
    // The ring holds S(p) for p in (n - kRing, n]; tok(j) needs S(j) and S(j + 1).
    uint64_t ring_floor = n_ + 1 > kRing ? n_ + 1 - kRing : 0;
    return max_u64(ring_floor, valid_from_);
  }

 private:
  void restart(uint64_t seq) {
    valid_from_ = n_;
    seq_offset_ = seq - n_;
    max_seq_ = seq;
  }

  uint64_t* sums_ = nullptr;  // ring of 2^kRingBits prefix sums: S(p) = sum of tokens before position p
  int64_t* lives_ = nullptr;  // ring of 2^kRingBits: tracked bytes live just before the allocation at p
  uint64_t n_ = 0;            // positions fed (internal, consecutive)
  uint64_t valid_from_ = 0;
  uint64_t seq_offset_ = 0;  // seq ~ position + seq_offset_ (for positions >= valid_from_)
  uint64_t max_seq_ = 0;
  uint64_t cur_seq_ = 0;
  uint64_t sum_ = 0;  // S(n_)
  bool started_ = false;
};

}  // namespace sentinel::step_internal
