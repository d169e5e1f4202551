// Following a sustained drift of the migrator's bandwidth (docs/tiering.md, "The bandwidth watch").
// After the watch's first decision (or a trial that measured the bandwidth), each window of steps still
// measures the migrator; a phase is re-planned again only where the bandwidth has stayed on one side
// of the one its schedule was planned with for kWindows windows in a row, each opened with the
// migrator settled on that schedule, and their median is 1.5x off it. Under TCG a single window swings
// 1.5x either way: the watch's first version followed two windows off in a row and re-planned in the
// middle of a schedule check. A drift that holds for 16 steps is the host's, not one window's.
// One per plan slot; the sequencer's side only.
#pragma once

#include <algorithm>
#include <cstdint>

namespace sentinel {

// A measured bandwidth is within 1.5x of the one a schedule was planned with, either way: else it calls
// for a re-plan (the trial's, the bandwidth watch's, a drift's).
inline bool bandwidth_within(uint64_t measured, uint64_t planned) {
  return static_cast<double>(measured) * 1.5 > static_cast<double>(planned) &&
         static_cast<double>(measured) < static_cast<double>(planned) * 1.5;
}

class DriftFollow {
 public:
  static constexpr uint32_t kWindows = 8;
  // Re-plans a phase may make for drifts: each is one planner call and a take-over, and a bandwidth
  // that keeps wandering is not one a schedule can be fitted to.
  static constexpr uint32_t kMaxFollows = 3;

  // The bandwidth the schedule in effect was planned with, or last found to be the same schedule at:
  // where later windows are judged from. The run of windows starts again.
  void set_reference(uint64_t bytes_per_s) {
    reference_ = bytes_per_s;
    run_ = 0;
  }
  uint64_t reference() const { return reference_; }
  uint32_t follows() const { return follows_; }

  // A window measured `bytes_per_s`; `settled`: the migrator had taken up the schedule in effect when
  // the window opened (its take-over moves measure another mix of objects). Returns the bandwidth to
  // re-plan with, the median of the run's windows, or 0. After a non-zero answer the caller re-plans
  // and calls followed() whatever came of it.
  uint64_t on_window(uint64_t bytes_per_s, bool settled) {
    if (follows_ >= kMaxFollows || !reference_ || !bytes_per_s || !settled) {
      run_ = 0;
      return 0;
    }
    const int side = bytes_per_s < reference_ ? -1 : bytes_per_s > reference_ ? 1 : 0;
    if (!side || (run_ && side != side_)) run_ = 0;
    if (!side) return 0;
    side_ = side;
    window_[run_ % kWindows] = bytes_per_s;
    if (++run_ < kWindows) return 0;
    const uint64_t m = median();
    return bandwidth_within(m, reference_) ? 0 : m;
  }

  // The caller re-planned with `bytes_per_s` (a new schedule, the same one, or none it could make).
  void followed(uint64_t bytes_per_s) {
    ++follows_;
    set_reference(bytes_per_s);
  }

 private:
  uint64_t median() const {
    uint64_t w[kWindows];
    std::copy(window_, window_ + kWindows, w);
    std::sort(w, w + kWindows);
    return w[kWindows / 2 - 1] / 2 + w[kWindows / 2] / 2;
  }

  uint64_t reference_ = 0;
  uint64_t window_[kWindows] = {};
  uint32_t run_ = 0;  // windows in a row on side_ of the reference
  int side_ = 0;
  uint32_t follows_ = 0;
};

}  // namespace sentinel
