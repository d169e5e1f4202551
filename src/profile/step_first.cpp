// Step detection, the loop's first iterations, which differ from its steps: warm-up steps at other sites,
// torch.compile's compiling iteration, a first iteration among one-time allocations, and one in pieces
// over identical blocks. See docs/step-detection.md, "Where a step starts" and "A first iteration in
// pieces".
#include "profile/step_lock_parts.h"

namespace sentinel::step_internal {

// Steps before the first one found whose allocations have the step's sizes in the step's order, but
// other sites: warm-up iterations of the same loop. Python 3.11's adaptive interpreter specializes a call
// after it ran a few times, which changes the native stack, hence the site, of every allocation the call
// makes (torch.compile's generated code: steps 2-7 at one site, from step 8 on at another). They are
// steps, counted and inferred, but have no identities. Returns the first step's first allocation.
uint64_t StepLock::warmup_starts(const Alignment& a, uint32_t e0, Starts* starts) const {
  const uint32_t P = a.P;
  const uint64_t first = starts->total ? starts->first : a.base + e0;  // else the step under way at pos
  const uint64_t bottom = max_u64(a.floor, h_->oldest_pos());
  uint64_t p = first, found = 0;
  while (found < kMaxInferredEvents && p >= bottom + P) {
    bool same = true;
    for (uint32_t i = 0; i < P && same; i++) same = token_size(h_->tok(p - P + i)) == token_size(a.C((e0 + i) % P));
    if (!same) break;
    p -= P;
    found++;
  }
  if (!found) return first;
  Starts all;
  const uint64_t compiling = compiling_step(a, e0, p);
  if (compiling != p) all.add(compiling);
  for (uint64_t k = found; k > 0; k--) all.add(first - k * P);
  all.append(*starts);
  *starts = all;
  return all.first;
}

// The iteration before the warm-up steps, under torch.compile, is the compilation: hundreds of the
// compiler's allocations, then the compiled code's first run, whose allocations have the step's sizes in
// the step's order with a few more between them and some missing (a 6-allocation step's sizes showed 5 of
// 6 among its last 9 allocations). It was a step, the loop's first: counted when the 2P allocations
// before the earliest warm-up step at p hold the step's sizes, in order, all but a step's budget of
// them (their longest common subsequence, at most kCompiledMaxPeriod allocations a step). It begins at
// the first allocation of the shortest such stretch (where the compilation began is not in the
// allocations). Returns that position, or p when there is none.
uint64_t StepLock::compiling_step(const Alignment& a, uint32_t e0, uint64_t p) const {
  const uint32_t P = a.P;
  const uint64_t bottom = max_u64(a.floor, h_->oldest_pos());
  if (P > kCompiledMaxPeriod || p < bottom + P) return p;
  const uint64_t from = p >= bottom + 2 * uint64_t{P} ? p - 2 * uint64_t{P} : bottom;
  const uint32_t need = P - step_budget(P, false);
  // row[j]: the longest common subsequence of the allocations [i, p) and the step's sizes from j on.
  uint16_t row[kCompiledMaxPeriod + 1] = {}, next[kCompiledMaxPeriod + 1];
  for (uint64_t i = p; i-- > from;) {
    const uint64_t size = token_size(h_->tok(i));
    next[P] = 0;
    for (uint32_t j = P; j-- > 0;) {
      uint16_t best = row[j] > next[j + 1] ? row[j] : next[j + 1];
      if (size == token_size(a.C((e0 + j) % P)) && row[j + 1] + 1 > best) best = static_cast<uint16_t>(row[j + 1] + 1);
      next[j] = best;
    }
    for (uint32_t j = 0; j <= P; j++) row[j] = next[j];
    if (row[0] >= need) return i;
  }
  return p;
}

// A first iteration that made many one-time objects between the step's own allocations (under bf16
// autocast, each layer's weights cast on first use: 58 of its 73 allocations, in runs of 7 to 21) stops
// both walks inside it (the lone-match rule, runs beyond smax), and the replay then runs the first step
// found on to the end of the second (24 allocations for a step of 15). Where the first step found is
// longer than a step and its budget, the allocations before the second start are read back (at most
// kOneTimeSteps steps' length, not below the floor) as copies of the bag, foreign ones skipped, a copy
// ending where it is whole; more of a kind than a copy has room for, beyond the step's budget, ends the
// reading. Two whole copies or more replace the first step. Returns the first step's position.
uint64_t StepLock::split_first_step(const Alignment& a, Starts* starts) {
  const uint32_t P = a.P, budget = step_budget(P, false);
  if (starts->total < 2 || starts->oldest_held() != 0) return starts->first;
  const uint64_t second = starts->at(1);
  if (second - starts->at(0) <= uint64_t{P} + budget) return starts->first;
  const uint64_t bottom = max_u64(max_u64(a.floor, h_->oldest_pos()), h_->valid_from());
  const uint64_t span = uint64_t{kOneTimeSteps} * P;
  const uint64_t low = second > bottom + span ? second - span : bottom;
  uint64_t copies[kOneTimeSteps];
  uint32_t n = 0, fit = 0, surplus = 0;
  BagFollower::OpenStep copy = follower_->fresh_step();
  for (uint64_t j = second; j > low && n < kOneTimeSteps;) {
    const int32_t si = follower_->find_slot(h_->tok(--j));
    if (si < 0) continue;
    if (!follower_->has_room(si, copy)) {
      if (++surplus > budget) break;
      continue;
    }
    follower_->count(si, copy);
    if (++fit < P) continue;
    copies[n++] = j;
    copy = follower_->fresh_step();
    fit = surplus = 0;
  }
  if (n < 2) return starts->first;
  Starts all;
  for (uint32_t k = n; k > 0; k--) all.add(copies[k - 1]);
  for (uint64_t k = 1; k < starts->total; k++) all.add(starts->at(k));
  *starts = all;
  return all.first;
}

// A first iteration in pieces: the iteration before the first step found differs from the rest (gradients
// and optimizer state allocated the first time), so the walk stops at it; over identical blocks its forward
// and backward repeat at the block, and were locked on as phases of their own (inner loops, a quarter of
// this step or shorter). Going back over such segments, latest first, within 3 steps of `first`, their
// allocations are counted against a copy of this step's bag (scan_parts()). When the parts from the
// earliest one to `first` hold three quarters of the bag, with at most a step's budget beyond it (an
// evaluation pass, a subset of the step repeated, holds far more), that was the first iteration: one step
// more, begun at that part. Parts before it that fill a second copy are the start of that iteration where
// the steps found begin mid-iteration (at the backward, where a loop that zeroes its gradients after the
// forward has its least bytes live): a step too if they hold half of one, else only absorbed. give_way()
// absorbs the segments from *absorb_from on. Returns the first step's position.
uint64_t StepLock::first_iteration(const Alignment& a, uint64_t first, Starts* starts, uint64_t* absorb_from) {
  const uint32_t P = a.P;
  *absorb_from = first;
  if (!starts->total) return first;
  const Parts whole = scan_parts(a, first, 0);
  if (whole.part == first || uint64_t{whole.fit} * 4 < 3 * uint64_t{P}) return first;
  const Parts lead = scan_parts(a, whole.part, whole.next);
  const bool lead_is_step = lead.part != whole.part && uint64_t{lead.fit} * 2 >= P;
  *absorb_from = lead.part;
  Starts all;
  if (lead_is_step) all.add(lead.part);
  all.add(whole.part);
  all.append(*starts);
  *starts = all;
  return all.first;
}

// One copy of the step's bag filled going back from position `end` over the recent segments from the k-th
// (latest first) that ended before `end`: inner loops (period at most P/4) within 3 steps of it. Each
// segment is read with the allocations after it up to the next one's start; it is a part when what fits
// there is at least half its own length. The earliest part and the fit up to it are returned, and the
// first segment not taken (next). The scan ends where the surplus passes the step's budget.
StepLock::Parts StepLock::scan_parts(const Alignment& a, uint64_t end, uint32_t k) {
  const uint32_t P = a.P;
  const uint64_t bottom = max_u64(h_->oldest_pos(), end > 3 * uint64_t{P} ? end - 3 * uint64_t{P} : 0);
  const uint64_t end_seq = h_->seq_of(end);
  const uint32_t budget = step_budget(P, false);
  BagFollower::OpenStep copy = follower_->fresh_step();
  Parts r{end, 0, k};
  uint32_t fit = 0, surplus = 0;
  uint64_t scanned = end;  // positions [scanned, end) are counted in copy
  for (; k < phases_->recent_count(); k++) {
    r.next = k;
    const PhaseMemory::Segment& s = phases_->recent(k);
    if (!s.counted || s.steps == 0 || s.end_seq >= end_seq) continue;  // give_way's to judge
    if (uint64_t{s.period} * 4 > P || s.start_seq < h_->seq_of(bottom)) break;
    const uint64_t from = h_->pos_of(s.start_seq);
    uint32_t fit_here = 0;
    for (uint64_t j = scanned; j > from; j--) {
      const int32_t si = follower_->find_slot(h_->tok(j - 1));
      if (si < 0) continue;
      if (follower_->has_room(si, copy)) {
        follower_->count(si, copy);
        fit_here++;
      } else if (++surplus > budget) {
        return r;
      }
    }
    fit += fit_here;
    scanned = from;
    if (uint64_t{fit_here} * 2 >= s.end_seq + 1 - s.start_seq) {
      r.part = from;
      r.fit = fit;
    }
  }
  r.next = k;
  return r;
}

}  // namespace sentinel::step_internal
