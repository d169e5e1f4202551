// Step detection, the search for the period: proposals (recurring windows, recurring tokens) and the
// candidates that verify them, by exact repeat and by equal bags. See docs/step-detection.md.
#include "profile/period_search.h"

#include <cmath>

namespace sentinel::step_internal {

namespace {

// Table entries (window and anchor tables): 40 bits of position + 1, 24 bits of hash as a tag, so that a
// slot taken by another key is recognised without reading the (cold) history ring.
constexpr uint64_t kPosBits = 40;
constexpr uint64_t kPosMask = (uint64_t{1} << kPosBits) - 1;
constexpr uint64_t kRingMask = StepHistory::kRingMask;

}  // namespace

void PeriodSearch::attach(void* mem) {
  auto* p = static_cast<unsigned char*>(mem);
  table_ = reinterpret_cast<uint64_t*>(p);
  anchors_ = reinterpret_cast<uint64_t*>(p + kTableBytes);
  chain_ = reinterpret_cast<uint16_t*>(p + kTableBytes + kAnchorBytes);
}

void PeriodSearch::verify(uint64_t pos, uint64_t token) {
  update_candidates(pos, token);
  propose_anchor(pos, token);
}

void PeriodSearch::clear() {
  for (Candidate& c : cand_) c = Candidate{};
}

void PeriodSearch::reset() {
  for (Candidate& c : cand_) {
    note_evidence(c);
    c = Candidate{};
  }
}

// Each candidate gathers two kinds of evidence at every position, from three reads of the prefix-sum ring:
//  - run: consecutive positions j with t[j] == t[j - P] (an exact repeat: a single-threaded loop);
//  - hits: cuts c, spaced by P, where the windows [c - 2P, c - P) and [c - P, c) hold the same bag, that
//    is S(c) - S(c - P) == S(c - P) - S(c - 2P) with S the prefix sums of the 64-bit tokens. With thread
//    pools only some cuts have equal bags (those no racing allocation crosses), but those recur every P.
// The chain of hits follows one residue of the cut modulo P; for P >= kSmallPeriod it survives a noisy
// step (a later cut within 2 of 2P or 3P continues it, shifted), and it breaks after 3P + 2 positions
// without a hit.
void PeriodSearch::update_candidates(uint64_t pos, uint64_t token) {
  const uint64_t cut = pos + 1;
  const uint64_t from = h_->valid_from(), now = h_->sum();  // read once (the loop writes candidates)
  for (Candidate& c : cand_) {
    if (c.period == 0) continue;
    const uint64_t P = c.period;
    if (pos < from + P) continue;
    const uint64_t a = h_->sum_at(cut - P), b = h_->sum_at(pos - P);
    if (a - b == token) {
      if (c.run < UINT32_MAX) c.run++;
    } else if (c.run) {
      note_evidence(c);
      c.run = 0;
    }
    if (c.hits && cut - c.cut > 3 * P + 2) {
      note_evidence(c);
      c.hits = 0;
    }
    if (cut >= from + 2 * P && now - a == a - h_->sum_at(cut - 2 * P)) {
      if (c.hits == 0) {
        c.hits = 1;
        c.cut = cut;
        c.aligned_from = cut;
        c.chain_from = cut;
        c.distinct = 0;
      } else {
        const uint64_t d = cut - c.cut;
        if (d == P) {
          c.hits++;
          c.cut = cut;
        } else if (P >= kSmallPeriod && ((d > P && d <= P + 2) || (d + 2 >= 2 * P && d <= 2 * P + 2) ||
                                         (d + 2 >= 3 * P && d <= 3 * P + 2))) {
          c.hits++;  // continued after a step whose windows were not equal (an insertion shifts the cut)
          c.cut = cut;
          c.aligned_from = cut;
        } else if (c.hits < kHitsBackMost && hits_back(cut, P, c.hits + 1) > c.hits) {
          // A chain at this cut's residue has more equal windows than the one followed (which began at
          // a coincidence before the steps settled, a residue the real boundaries never continue). A
          // chain of kHitsBackMost is kept: a stream of one repeated allocation has equal bags at every
          // cut, and walking each chain back in full made every event cost the length of the history.
          const uint32_t here = c.hits + 1;
          c.hits = here;
          c.cut = cut;
          c.aligned_from = cut - (here - 1) * P;
          c.chain_from = c.aligned_from;
          c.distinct = 0;
        }
      }
    }
    // An exact mismatch frees a candidate proposed by a window unless its bags agree; one proposed by a
    // recurring token gets one full cycle of cuts to show an equal bag.
    if (c.run == 0 && c.hits == 0 && (c.origin == kFromWindow || pos > c.born + P + 1)) c = Candidate{};
  }
}

void PeriodSearch::note_evidence(const Candidate& c) {
  if (c.period == 0) return;
  if (c.run > best_run_) {
    best_run_ = c.run;
    best_run_period_ = c.period;
  }
  if (c.hits > best_hits_) {
    best_hits_ = c.hits;
    best_hits_period_ = c.period;
  }
}

void PeriodSearch::evidence(StepDiagnosis* out) const {
  out->distinct_tokens = distinct_seen_;
  out->longest_run = best_run_;
  out->longest_run_period = best_run_period_;
  out->best_bag_windows = best_hits_;
  out->best_bag_period = best_hits_period_;
  out->windows_walked = windows_walked_;
  for (const Candidate& c : cand_) {  // evidence still being gathered
    if (c.period == 0) continue;
    if (c.run > out->longest_run) {
      out->longest_run = c.run;
      out->longest_run_period = c.period;
    }
    if (c.hits > out->best_bag_windows) {
      out->best_bag_windows = c.hits;
      out->best_bag_period = c.period;
    }
  }
}

uint32_t PeriodSearch::observe(uint64_t pos, uint64_t token) {
  const uint32_t d = window_distance(pos, token);
  t3_ = t2_;
  t2_ = t1_;
  t1_ = token;
  return d;
}

// Every position hashes the window of its last kWindow tokens; a window seen before within kMaxPeriod
// gives its distance. Only the table is written here (also while locked, so that the history is ready
// when a lock is lost); returns the distance (0: none) for propose().
uint32_t PeriodSearch::window_distance(uint64_t pos, uint64_t token) {
  chain_[pos & kRingMask] = 0;
  if (pos + 1 < h_->valid_from() + kWindow) return 0;
  uint64_t h = token * 0x9E3779B97F4A7C15ull + t1_ * 0xC2B2AE3D27D4EB4Full + t2_ * 0x165667B19E3779F9ull +
               t3_ * 0xD6E8FEB86659FD93ull;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  uint64_t idx = h >> (64 - kTableBits);
  uint64_t tag = (h << kPosBits) & ~kPosMask;  // the low 24 bits of the hash (the index uses the high ones)
  uint64_t entry = table_[idx];
  table_[idx] = tag | ((pos + 1) & kPosMask);
  if (entry == 0 || (entry & ~kPosMask) != tag) return 0;
  uint64_t back = ((pos + 1) - (entry & kPosMask)) & kPosMask;  // pos - j, modulo 2^40
  if (back == 0 || back > kMaxPeriod || back > pos || pos - back + 1 < h_->valid_from() + kWindow) return 0;
  // Distances are kept in 16 bits: 65536 itself is proposed but not chained.
  chain_[pos & kRingMask] = back < 65536 ? static_cast<uint16_t>(back) : 0;
  return static_cast<uint32_t>(back);
}

// Proposes the window distance d and the distance to the occurrence before that, found through the
// chain (an inner loop repeats windows inside the step; its ends are unique, so the step's own period is
// proposed there). A hash collision proposes nothing: the back-filled run is shorter than the window.
void PeriodSearch::propose(uint64_t pos, uint32_t d) {
  if (d == 0) return;
  add_candidate(d, pos, kFromWindow);
  const uint64_t j = pos - d;
  const uint32_t d2 = chain_[j & kRingMask];
  if (d2 == 0 || uint64_t{d} + d2 > kMaxPeriod || j < h_->valid_from() + d2 + kWindow ||
      j < h_->oldest_pos() + d2 + kWindow)
    return;
  add_candidate(d + d2, pos, kFromWindow);
}

// While searching, a token seen again proposes its distance: a token made once per step recurs at P,
// whatever the order of the rest of the step (the only proposal left when steps are permutations).
void PeriodSearch::propose_anchor(uint64_t pos, uint64_t token) {
  const uint64_t idx = token >> (64 - kAnchorBits);
  const uint64_t tag = token & 0xFFFFFFull;
  const uint64_t entry = anchors_[idx];
  anchors_[idx] = tag << kPosBits | ((pos + 1) & kPosMask);
  if (entry == 0 || entry >> kPosBits != tag) {
    distinct_seen_++;
    return;
  }
  const uint64_t j = (entry & kPosMask) - 1;
  if (j < h_->valid_from() || j >= pos) return;
  const uint64_t g = pos - j;
  if (g >= kMinAnchorGap && g <= kMaxPeriod) add_candidate(static_cast<uint32_t>(g), pos, kFromAnchor);
}

// A new candidate's evidence is back-filled from the history: its exact run ending at pos (capped), and
// the chain of equal-bag cuts at the current cut's residue. So a candidate proposed late (after a lock
// was lost, or after a slot was freed) is as far along as one that verified the whole time.
void PeriodSearch::backfill(Candidate& c, uint64_t pos) const {
  const uint64_t P = c.period;
  const uint64_t low = max_u64(h_->valid_from(), h_->oldest_pos());
  const uint64_t cap = 3 * P + 64;
  uint32_t run = 0;
  for (uint64_t j = pos; j >= low + P && run < cap; j--) {
    if (h_->tok(j) != h_->tok(j - P)) break;
    run++;
  }
  c.run = run;
  const uint64_t cut = pos + 1;
  const uint32_t hits = hits_back(cut, static_cast<uint32_t>(P), kHitsBackMost);
  c.hits = hits;
  if (hits) {
    c.cut = cut;
    c.aligned_from = cut - (hits - 1) * P;
    c.chain_from = c.aligned_from;
    c.distinct = 0;
  }
}

// The cuts cut, cut - P, cut - 2P, ... where the two windows of P before the cut hold equal bags, counted
// back from cut until one does not (at most `most`, and none before the valid history).
uint32_t PeriodSearch::hits_back(uint64_t cut, uint32_t P, uint32_t most) const {
  const uint64_t low = max_u64(h_->valid_from(), h_->oldest_pos());
  uint32_t hits = 0;
  for (uint64_t q = cut; q >= low + 2 * uint64_t{P} && hits < most; q -= P) {
    ++windows_walked_;
    if (h_->sum_at(q) - h_->sum_at(q - P) != h_->sum_at(q - P) - h_->sum_at(q - 2 * P)) break;
    hits++;
  }
  return hits;
}

// A slot with evidence (a run beyond its proposing window, or an equal-bag hit) is never evicted. A
// window proposal may evict a slot without evidence (token proposals first); a token proposal only takes
// a free slot or another token proposal's.
void PeriodSearch::add_candidate(uint32_t period, uint64_t pos, Origin origin) {
  Candidate* slot = nullptr;
  auto weak = [](const Candidate& c) { return c.hits == 0 && c.run <= kWindow; };
  auto rank = [&](const Candidate& c) -> uint64_t {  // lower: evicted first
    if (c.period == 0) return 0;
    if (!weak(c)) return UINT64_MAX;
    return (c.origin == kFromAnchor ? 1 : uint64_t{2} << 32) + c.run;
  };
  for (Candidate& c : cand_) {
    if (c.period == period) {
      if (origin == kFromWindow) c.origin = kFromWindow;
      return;
    }
    if (!slot || rank(c) < rank(*slot)) slot = &c;
  }
  const uint64_t r = rank(*slot);
  if (r == UINT64_MAX) return;
  if (origin == kFromAnchor && r > (uint64_t{1} << 32)) return;
  Candidate c{};
  c.period = period;
  c.origin = origin;
  c.born = pos;
  backfill(c, pos);
  if (origin == kFromWindow && c.run < kWindow && c.hits == 0) return;  // a hash collision
  *slot = c;
}

const PeriodSearch::Failure* PeriodSearch::failure(uint32_t period) const {
  for (const Failure& f : fail_)
    if (f.period == period) return &f;
  return nullptr;
}

void PeriodSearch::remember_failure(uint32_t period, uint32_t run, uint32_t hits) {
  Failure* slot = nullptr;
  for (Failure& f : fail_) {
    if (f.period == period) {
      slot = &f;
      break;
    }
    if (!slot || f.stamp < slot->stamp) slot = &f;
  }
  if (slot->period == period) {
    if (slot->run > run) run = slot->run;
    if (slot->hits > hits) hits = slot->hits;
  }
  *slot = Failure{period, run, hits, ++fail_stamp_};
}

// The shortest divisor d of P such that the P tokens before `cut` are P/d windows of d with the same bag;
// 0 when there is none (or P is too long to check).
uint32_t PeriodSearch::bag_divisor(uint32_t P, uint64_t cut) const {
  if (P > kDivisorCheckMax || cut < h_->valid_from() + P || cut - P < h_->oldest_pos()) return 0;
  for (uint32_t d = 1; d <= P / 2; d++) {
    if (P % d) continue;
    const uint64_t h = h_->sum_at(cut) - h_->sum_at(cut - d);
    bool periodic = true;
    for (uint64_t q = cut - d; q > cut - P && periodic; q -= d) periodic = h_->sum_at(q) - h_->sum_at(q - d) == h;
    if (periodic) return d;
  }
  return 0;
}

// Evidence for a small period from before its exact run began: warm-up steps of the same loop that
// allocated the same sizes in the same order at other sites (torch.compile under Python 3.11's adaptive
// interpreter, docs/step-detection.md "Warm-up at other sites"). Going back from the run: one step at
// most where the tokens differ but the sizes agree (the switch of sites), then an exact run again (the
// warm-up steps repeat among themselves). Counts those positions, at most kSmallRun; 0 without a switch.
uint32_t PeriodSearch::sized_run(const Candidate& c, uint64_t pos) const {
  const uint64_t P = c.period, oldest = h_->oldest_pos();
  uint64_t j = pos - c.run, n = 0;
  for (; n < P && j >= oldest + P; j--, n++) {  // the switch: same sizes, other tokens
    const uint64_t a = h_->tok(j), b = h_->tok(j - P);
    if (a == b) break;
    if (token_size(a) != token_size(b)) return 0;
  }
  if (n == 0) return 0;
  for (; n < kSmallRun && j >= oldest + P && h_->tok(j) == h_->tok(j - P); j--) n++;
  return static_cast<uint32_t>(n);
}

bool PeriodSearch::lockable_exact(const Candidate& c, uint64_t pos) const {
  if (c.run < c.period) return false;
  if (c.period < kSmallPeriod && c.run < kSmallRun && c.run + sized_run(c, pos) < kSmallRun) return false;
  const Failure* f = failure(c.period);
  if (f && f->run != 0 && uint64_t{c.run} <= uint64_t{f->run} + c.period) return false;
  // A multiple of the true period can become lockable first (its run reaches P before a small true
  // period has the longer run it needs): refuse P while its last P tokens are periodic with a divisor
  // of P; the divisor locks when its own run allows (a DataLoader loop of 5 allocations a step was
  // locked at 10, two steps at a time, before this).
  if (c.period <= kDivisorCheckMax) {
    for (uint32_t d = 1; d <= c.period / 2; d++) {
      if (c.period % d || pos < h_->valid_from() + c.period + d) continue;
      bool periodic = true;
      for (uint64_t j = pos - c.period + 1; j <= pos && periodic; j++) periodic = h_->tok(j) == h_->tok(j - d);
      if (periodic) return false;
    }
  }
  return true;
}

// Equal bags are weaker evidence than an exact repeat: two windows of a random stream over a small
// alphabet often hold the same bag. For D distinct tokens in windows of P, two random windows hold equal
// bags with probability about q = (4 pi P / D)^(-(D - 1) / 2) (the multinomial's collision probability,
// tokens taken as equally frequent); a chain that may continue shifted (P >= kSmallPeriod: 5 cuts per
// window can continue it) has s = 5 chances a window. A bag lock needs K windows with (s q)^K <= 1e-12,
// at least kBagMinWindows: K is 3 or 4 for real steps (7 distinct tokens in 11: K = 4), 19 for two
// tokens in windows of 3, and a single token never locks by bags (its period is exact).
double PeriodSearch::bag_chance_log10(uint32_t period, uint32_t distinct) {
  if (distinct <= 1) return 0;
  const double P = period, D = distinct;
  const double log_q = -(D - 1) / 2 * std::log10(4 * 3.14159265358979 * P / D);
  return log_q < 0 ? log_q : 0;
}

uint32_t PeriodSearch::bag_windows_needed(uint32_t period, uint32_t distinct) {
  if (distinct <= 1) return UINT32_MAX;
  const double log_sq = (period >= kSmallPeriod ? std::log10(5.0) : 0.0) + bag_chance_log10(period, distinct);
  if (log_sq >= -0.05) return UINT32_MAX;  // no number of windows makes it unlikely
  const double k = std::ceil(12.0 / -log_sq);
  return k < kBagMinWindows ? kBagMinWindows : (k > 256 ? 256 : static_cast<uint32_t>(k));
}

// Distinct tokens among the last P, estimated by linear counting on a 4096-bit map (exact enough for what
// it decides: the chance that bags are equal, which falls fast with D). O(P), once per chain.
uint32_t PeriodSearch::distinct_in_window(uint64_t pos, uint32_t period) const {
  constexpr uint32_t kBits = 4096;
  uint64_t map[kBits / 64] = {};
  for (uint64_t j = pos + 1 - period; j <= pos; j++) {
    const uint64_t b = h_->tok(j) >> 52;  // the token's top 12 bits (tokens are mixed)
    map[b >> 6] |= uint64_t{1} << (b & 63);
  }
  uint32_t ones = 0;
  for (uint64_t w : map) ones += static_cast<uint32_t>(__builtin_popcountll(w));
  if (ones >= kBits - 1) return 4 * kBits;
  return static_cast<uint32_t>(std::lround(-double{kBits} * std::log(1.0 - static_cast<double>(ones) / kBits)));
}

// The candidate's distinct tokens and the equal-bag windows a lock on them needs (0 left unmeasured: a
// lock without it is never confirmed as a strong bag, StepLock::confirmable()).
void PeriodSearch::measure_bag(Candidate& c, uint64_t pos) const {
  c.distinct = distinct_in_window(pos, c.period);
  if (c.distinct == 0) c.distinct = 1;
  c.needed = bag_windows_needed(c.period, c.distinct);
}

// *divisor: where P's windows are made of equal bags of a divisor d, d (the candidate is refused).
bool PeriodSearch::lockable_bag(Candidate& c, uint64_t pos, uint32_t* divisor) {
  const uint32_t P = c.period;
  if (c.hits < kBagMinWindows || c.cut != pos + 1) return false;  // lock at a cut with equal bags
  // The divisor rule, for bags: a window made of equal bags of a divisor d of P is d's, not P's.
  if (const uint32_t d = bag_divisor(P, pos + 1)) {
    *divisor = d;
    return false;
  }
  if (c.distinct == 0) measure_bag(c, pos);
  // A known pattern (a phase locked before, its bag the same: the validation pass of the next epoch) is
  // recognised with fewer windows: the chance that two windows of a random stream hold equal bags that are
  // also a remembered phase's bag is far below q.
  if (c.hits < c.needed && !(known_ && known_->knows(P, h_->bag_signature(pos, P)))) return false;
  const Failure* f = failure(P);
  return !(f && f->hits != 0 && c.hits <= f->hits + 1);
}

// A candidate of period P proposed at pos, its evidence back-filled from the history.
PeriodSearch::Candidate PeriodSearch::candidate_from_history(uint32_t P, uint64_t pos) const {
  Candidate c{};
  c.period = P;
  c.born = pos;
  backfill(c, pos);
  return c;
}

// A divisor d that a bag candidate's windows are made of, itself not a candidate (steps of few
// allocations in few orders rarely repeat a window of 4 exactly, which is what proposes a period below
// kMinAnchorGap): its chain read back from the history, locked on by its bags where it may be.
bool PeriodSearch::divisor_lockable(uint32_t d, uint64_t pos, Candidate* out) {
  if (d < kMinPeriod) return false;
  Candidate dc = candidate_from_history(d, pos);
  uint32_t again = 0;
  if (!lockable_bag(dc, pos, &again)) return false;
  *out = dc;
  return true;
}

// Searching: lock on the shortest lockable candidate (an exact repeat, or equal bags).
bool PeriodSearch::choose(uint64_t pos, Candidate* chosen, bool* exact) {
  int best = -1;
  bool best_exact = false;
  uint32_t divisor = 0;  // the shortest divisor a bag candidate was refused for
  for (uint32_t k = 0; k < kCandidates; k++) {
    Candidate& c = cand_[k];
    // A step of one tracked allocation is never locked on: a run of one repeated allocation is a bulk
    // read or copy (a file read in chunks), and such a step has nothing to plan (sentinel_step() is for
    // loops that really are one allocation a step).
    if (c.period < kMinPeriod || (best >= 0 && c.period >= cand_[best].period)) continue;
    bool e = lockable_exact(c, pos);
    uint32_t d = 0;
    if (!e && !lockable_bag(c, pos, &d)) {
      if (d && (!divisor || d < divisor)) divisor = d;
      continue;
    }
    best = static_cast<int>(k);
    best_exact = e;
  }
  if (divisor && (best < 0 || divisor < cand_[best].period) && divisor_lockable(divisor, pos, chosen)) {
    *exact = false;
    return true;
  }
  if (best < 0) return false;
  *chosen = cand_[best];
  if (best_exact) {
    if (outweighed(*chosen)) return false;
    // Two steps whose orders alternate repeat exactly at 2P before P repeats at all: an exact repeat
    // made of equal bags of a divisor is that divisor's, locked by its bags (the repeat of 2P already
    // shows four equal windows of P).
    // (The cut at pos may fall inside a step of the divisor: StepLock::lock() checks the cut where the
    // step starts.)
    if (uint32_t d = bag_divisor(chosen->period, pos + 1)) {
      if (d < kMinPeriod) return false;
      Candidate dc = candidate_from_history(d, pos);
      if (dc.hits < 2) return false;
      // Measured as a bag lock's is: a Keras validation pass of 5 allocations a step, locked this way,
      // was never confirmed and was retracted at the pass's end.
      measure_bag(dc, pos);
      *chosen = dc;
      best_exact = false;
    }
  }
  *exact = best_exact;
  return true;
}

// A single exact repeat of an unrelated period is a coincidence when another candidate already has more
// allocations verified by equal bags (a batch made by another thread fell outside two windows of the
// step's other allocations): wait for that one. Not for one refused before on the evidence it has now
// (a bag lock on a loop of training steps, StepLock::loop_of_steps()): it cannot lock, and the steps'
// own relock waited behind it for good.
bool PeriodSearch::outweighed(const Candidate& exact) const {
  for (const Candidate& o : cand_) {
    if (o.period == 0 || o.hits < 3 || o.period % exact.period == 0 || exact.period % o.period == 0) continue;
    if (const Failure* f = failure(o.period); f && f->hits != 0 && o.hits <= f->hits + 1) continue;
    if (uint64_t{o.hits} * o.period > uint64_t{exact.run} + exact.period) return true;
  }
  return false;
}

}  // namespace sentinel::step_internal
