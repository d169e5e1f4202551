// From a decoded dump to the planner's input (offline callers: sentinel-view plan, the unit tests).
// The runtime builds its PlanInput from classify()'s arrays directly; this does the same from the
// records a dump holds, so that a plan can be replayed from the dump alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/format_reader.h"
#include "tier/planner.h"

namespace sentinel::offline {

// A PlanInput and the arrays it points into (they move with the object).
struct PlanSource {
  PlanInput in;
  std::vector<sentinel_identity> identities;  // of the phase, first of each id, in file order
  std::vector<sentinel_touch> touches;
  std::vector<uint64_t> interval_ns;  // empty: no durations recorded
};

// The input for `phase` (-1: the phase of the first PROFILE record). The policy and budget are left
// at their defaults for the caller to set; the bandwidth, interval durations and step costs are the
// phase's PLAN record's when the dump has one (costs 0, unknown, without one or before 1.4). False with *error (one
// line) when the dump has no profile, no INTERVALS table for the phase, or more than 64 intervals.
bool plan_source(const fmt::Profile& p, int64_t phase, PlanSource* out, std::string* error);

// The sample the run profiled its very large objects in (profile/page_sample.h), from the dump's CONFIG
// (SENTINEL_PROFILE_SAMPLE, _SAMPLE_MIN, SENTINEL_CHUNK_BYTES) and the profile's granularity; none
// (rate 1) for a dump written before sampling or without those values.
PageSample recorded_sample(const fmt::Profile& p, uint32_t granularity);

// The identities profiled in chunks become whole objects: their chunks' touches add up per interval
// and step (each chunk's bytes are distinct bytes of the object). The plan of a run with
// SENTINEL_CHUNK_BYTES=0 on the same profile. Returns how many identities were in chunks.
uint32_t plan_whole(PlanSource* s);
// The profile as if taken in one pass (SENTINEL_PROFILE_PASSES=1): every touch's access intensity dropped,
// so touched bytes alone rank and price placements. Returns how many touches had one.
uint64_t plan_without_intensity(PlanSource* s);

// Intervals cut by time (format 1.14's touch times; docs/planner.md, "Intervals cut by time"): an
// interval that lasts more than twice the median interval (a stretch that allocates nothing, such as an
// optimizer's in-place update) becomes pieces of about the median's length, at most kMaxTimePieces, and 64
// intervals in all. A touch's bytes go to the pieces its time span overlaps, in proportion (the whole
// interval where its span is not known), so every identity's access weight is kept; a birth goes to its
// interval's first piece, a death to its last; each piece lasts its share of the interval. What the plan
// of such a profile would be if the runtime cut those intervals by time (it does not yet). A short-lived
// identity of a cut interval stays short-lived, whole in the piece where its earliest touch began (the
// first, where its touches have no times). Returns how many
// intervals were cut; 0 leaves the source as it was (no durations, no interval long enough, or none
// with touch times: a profile without passes, or written before 1.14).
inline constexpr uint32_t kMaxTimePieces = 8;
uint32_t plan_cut_by_time(PlanSource* s);

// A budget in SENTINEL_FAST_BYTES's syntax without "auto" (base/parse.h): a size above 0 ("4G",
// "512MiB", "1048576": binary units) or a share of the peak footprint ("20%", "12.5%").
bool parse_fast_bytes(const std::string& text, FastBudget* out);

// The policy and budget the run used: the TIERING record, else the SENTINEL_POLICY and
// SENTINEL_FAST_BYTES values of the CONFIG record, else sentinel and 20% (also for
// SENTINEL_FAST_BYTES=auto, which only the run can resolve). The sources say which ("TIERING
// record", "configuration", "default...").
struct RecordedSettings {
  sentinel_policy policy = SENTINEL_POLICY_SENTINEL;
  FastBudget budget{0, 200000};
  std::string policy_source = "default";
  std::string budget_source = "default";
};
RecordedSettings recorded_settings(const fmt::Profile& p);

}  // namespace sentinel::offline
