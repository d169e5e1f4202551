// The dump format's fixed-size entries, defined once: for every struct of include/sentinel/format.h
// that a dump stores as is (the file and record headers, and the entries of OBJECTS, STEPS,
// IDENTITIES, ...), its fields in order with their name, type, offset, the minor version that added
// them, what a reader stores when an older (shorter) entry lacks them, and a one-line meaning.
//
// Everything that reads or writes such an entry derives from this table: the reader's decoder and the
// encoder of the runtime's writer and the tests' dump builder (format/entry_codec.h), `sentinel-view
// records` (which prints entries by these names), and the field tables of docs/format.md (checked by
// the test format-doc-tables). format.h stays the public C API; the static_asserts at the end of this
// file hold it to the table (every offset and width, no gap, the size), so the two cannot drift.
//
// Why constexpr descriptors and not X-macros: the C header must stay plain, readable C for C users,
// and the table needs more per field than a struct declaration has (version, default, meaning). A
// descriptor array checked against the struct at compile time keeps both readable, and C++ code can
// walk it like data (the docs generator, the JSON printer) without a macro per consumer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "sentinel/format.h"

namespace sentinel::fmt {

enum class FieldType : uint8_t { u8, u16, u32, i32, u64, ch /* char: the magic */ };

constexpr uint32_t type_width(FieldType t) {
  switch (t) {
    case FieldType::u8:
    case FieldType::ch:
      return 1;
    case FieldType::u16:
      return 2;
    case FieldType::u32:
    case FieldType::i32:
      return 4;
    case FieldType::u64:
      return 8;
  }
  return 0;
}

constexpr const char* type_name(FieldType t) {
  switch (t) {
    case FieldType::u8:
      return "u8";
    case FieldType::ch:
      return "char";
    case FieldType::u16:
      return "u16";
    case FieldType::u32:
      return "u32";
    case FieldType::i32:
      return "i32";
    case FieldType::u64:
      return "u64";
  }
  return "?";
}

// What a reader stores in a field that a stored entry does not hold (an older minor's entry). A minor
// version appends its fields to an entry together: a reader takes them only from an entry that holds
// all of them (a 60-byte identity is read as a 56-byte one, not with half of 1.2's fields).
enum class Absent : uint8_t {
  never,       // within the smallest entry a reader accepts: always stored
  zero,        // 0
  no_ordinal,  // SENTINEL_NO_ORDINAL
  derived,     // computed by the reader from other fields or records; Field::absent_doc says how
};

struct Field {
  const char* name;  // the C struct's member name
  FieldType type;
  uint8_t count;    // 1, or the length of an array (only of 1-byte types)
  uint16_t offset;  // from the entry's start; the same in the C struct
  uint8_t minor;    // the 1.x version that added the field
  Absent absent;
  const char* absent_doc;  // Absent::derived: what the reader stores instead
  const char* doc;         // one line of markdown, without '|'
  bool reserved;           // written as 0 by the runtime, ignored (read as 0) by readers: free for a later minor
  uint16_t member_offset;  // offsetof and sizeof of the C struct's member: for the static checks
  uint16_t member_size;

  constexpr uint32_t width() const { return type_width(type) * count; }
  constexpr uint32_t end() const { return offset + width(); }
};

// Specialized below for every entry struct: `name` (the C struct's), `stored` (where a dump has it) and
// `fields` (in offset order).
template <typename T>
struct Layout;

// A field whose entries all hold it.
#define SENTINEL_FIELD(S, off, type, member, minor, doc)                                                           \
  ::sentinel::fmt::Field {                                                                                         \
#member, ::sentinel::fmt::FieldType::type, 1, off, minor, ::sentinel::fmt::Absent::never, nullptr, doc, false, \
        offsetof(S, member), sizeof(S::member)                                                                     \
  }
// A field appended by a later minor: entries of older writers lack it and read as `absent`.
#define SENTINEL_APPENDED(S, off, type, member, minor, absent, absent_doc, doc)                                        \
  ::sentinel::fmt::Field {                                                                                             \
#member, ::sentinel::fmt::FieldType::type, 1, off, minor, ::sentinel::fmt::Absent::absent, absent_doc, doc, false, \
        offsetof(S, member), sizeof(S::member)                                                                         \
  }
// An array of `count` 1-byte elements.
#define SENTINEL_ARRAY(S, off, type, member, count, minor, doc)                                                        \
  ::sentinel::fmt::Field {                                                                                             \
#member, ::sentinel::fmt::FieldType::type, count, off, minor, ::sentinel::fmt::Absent::never, nullptr, doc, false, \
        offsetof(S, member), sizeof(S::member)                                                                         \
  }
// Reserved bytes (`count` elements of `type`): written as 0, ignored by readers.
#define SENTINEL_RESERVED(S, off, type, member, count, minor, absent)                                       \
  ::sentinel::fmt::Field {                                                                                  \
#member, ::sentinel::fmt::FieldType::type, count, off, minor, ::sentinel::fmt::Absent::absent, nullptr, \
        "reserved: written as 0, ignored by readers", true, offsetof(S, member), sizeof(S::member)          \
  }

template <>
struct Layout<sentinel_file_header> {
  using S = sentinel_file_header;
  static constexpr const char* name = "sentinel_file_header";
  static constexpr const char* stored = "the start of the file";
  static constexpr Field fields[] = {
      SENTINEL_ARRAY(S, 0, ch, magic, 8, 0, "`SNTLDUMP` (`SENTINEL_DUMP_MAGIC`), no terminator"),
      SENTINEL_FIELD(S, 8, u16, major, 0, "`SENTINEL_FORMAT_MAJOR` of the writer: a reader refuses a newer one, and 0"),
      SENTINEL_FIELD(S, 10, u16, minor, 0, "`SENTINEL_FORMAT_MINOR` of the writer"),
      SENTINEL_FIELD(S, 12, u8, pointer_size, 0, "`sizeof(void*)` of the writer: 4 or 8"),
      SENTINEL_FIELD(S, 13, u8, little_endian, 0, "1: every integer is little endian (the only byte order)"),
      SENTINEL_RESERVED(S, 14, u16, reserved0, 1, 0, never),
      SENTINEL_RESERVED(S, 16, u64, reserved1, 1, 0, never),
  };
};

template <>
struct Layout<sentinel_record_header> {
  using S = sentinel_record_header;
  static constexpr const char* name = "sentinel_record_header";
  static constexpr const char* stored = "before every record's payload";
  static constexpr Field fields[] = {
      SENTINEL_FIELD(S, 0, u32, type, 0, "`enum sentinel_record_type`"),
      SENTINEL_FIELD(S, 4, u32, crc32c, 0, "CRC-32C (Castagnoli polynomial) of the payload"),
      SENTINEL_FIELD(S, 8, u64, length, 0, "payload bytes that follow this header"),
  };
};

template <>
struct Layout<sentinel_object> {
  using S = sentinel_object;
  static constexpr const char* name = "sentinel_object";
  static constexpr const char* stored = "`OBJECTS` entries";
  static constexpr Field fields[] = {
      SENTINEL_FIELD(S, 0, u64, address, 0, "address returned to the program"),
      SENTINEL_FIELD(S, 8, u64, size, 0, "bytes requested"),
      SENTINEL_FIELD(S, 16, u64, birth_ns, 0, "CLOCK_MONOTONIC at allocation"),
      SENTINEL_FIELD(S, 24, u64, death_ns, 0, "CLOCK_MONOTONIC at free; 0 while alive"),
      SENTINEL_FIELD(S, 32, u64, birth_seq, 0, "ordinal of this allocation among tracked allocations (0-based)"),
      SENTINEL_FIELD(S, 40, u64, death_seq, 0, "tracked allocations made before the free; `UINT64_MAX` while alive"),
      SENTINEL_FIELD(S, 48, u32, site, 0, "site id (`SITES`), `UINT32_MAX` when unknown"),
      SENTINEL_FIELD(S, 52, u32, thread, 0, "kernel thread id of the allocating thread"),
      SENTINEL_FIELD(S, 56, u32, alignment, 0, "requested alignment"),
      SENTINEL_FIELD(S, 60, u16, kind, 0, "0 heap, 1 CUDA pinned host memory (`enum sentinel_object_kind`)"),
      SENTINEL_FIELD(S, 62, u16, flags, 0, "bit 0: freed by another thread; bit 1: born from `realloc`"),
  };
};

template <>
struct Layout<sentinel_step_entry> {
  using S = sentinel_step_entry;
  static constexpr const char* name = "sentinel_step_entry";
  static constexpr const char* stored = "`STEPS` entries";
  static constexpr Field fields[] = {
      SENTINEL_FIELD(S, 0, u64, start_seq, 1, "tracked allocations before the step's first one"),
      SENTINEL_FIELD(S, 8, u64, start_ns, 1,
                     "CLOCK_MONOTONIC of its first allocation; 0: unknown (e.g. inferred steps)"),
      SENTINEL_FIELD(S, 16, u32, allocations, 1, "tracked allocations in the step"),
      SENTINEL_FIELD(S, 20, u32, phase, 1, "the detector's phase id, 1-based (1.1 writers: 0-based)"),
      SENTINEL_FIELD(S, 24, u32, flags, 1,
                     "bit 0 started by `sentinel_step()`, bit 1 first step of a new phase (lock or re-lock), bit 2 "
                     "inferred backwards from the period before lock-on, bit 3 profiled, bit 4 (1.2) in a placement "
                     "check"),
      SENTINEL_RESERVED(S, 28, u32, reserved, 1, 1, never),
  };
};

template <>
struct Layout<sentinel_identity> {
  using S = sentinel_identity;
  static constexpr const char* name = "sentinel_identity";
  static constexpr const char* stored = "`IDENTITIES` entries";
  static constexpr Field fields[] = {
      SENTINEL_FIELD(S, 0, u32, id, 1,
                     "identity number (what touches and plan entries refer to); the runtime numbers identities "
                     "across phases"),
      SENTINEL_FIELD(S, 4, u32, site, 1, "site id (`SITES`)"),
      SENTINEL_FIELD(S, 8, u64, size, 1, "bytes requested"),
      SENTINEL_FIELD(S, 16, u32, ordinal, 1, "in-step template ordinal; `NO_ORDINAL` outside steps"),
      SENTINEL_FIELD(S, 20, u32, phase, 1, "the phase"),
      SENTINEL_FIELD(S, 24, u32, group, 1, "co-allocation group (`GROUPS`)"),
      SENTINEL_FIELD(S, 28, u32, birth_interval, 1, "`NO_ORDINAL` when born outside steps"),
      SENTINEL_FIELD(S, 32, u32, death_interval, 1, "`NO_ORDINAL` when it outlives its step"),
      SENTINEL_FIELD(S, 36, u8, lifetime, 1, "`enum sentinel_lifetime`"),
      SENTINEL_RESERVED(S, 37, u8, reserved0, 3, 1, never),
      SENTINEL_FIELD(S, 40, u64, touched_bytes, 1, "over all profiled steps"),
      SENTINEL_FIELD(S, 48, u32, instances, 1, "objects seen with this identity"),
      SENTINEL_FIELD(S, 52, u32, chunk_bytes, 1,
                     "1.5: profiled and planned in chunks of this many bytes, the last one shorter (0: as one "
                     "object; reserved, 0, before 1.5)"),
      SENTINEL_APPENDED(S, 56, u32, occurrence, 2, no_ordinal, nullptr,
                        "*k*, the k-th allocation of its (site, size) in the step (0-based); `NO_ORDINAL` outside "
                        "steps"),
      SENTINEL_APPENDED(S, 60, u32, flags, 2, derived, "`OUTSIDE` when `ordinal` is `NO_ORDINAL`, else 0",
                        "bit 0 `PINNED` (CUDA pinned host memory: placed at allocation, never moved), bit 1 "
                        "`OUTSIDE` (born outside a step)"),
  };
};

template <>
struct Layout<sentinel_touch> {
  using S = sentinel_touch;
  static constexpr const char* name = "sentinel_touch";
  static constexpr const char* stored = "`TOUCHES` entries";
  static constexpr Field fields[] = {
      SENTINEL_FIELD(S, 0, u32, identity, 1, "identity id (`IDENTITIES`)"),
      SENTINEL_FIELD(S, 4, u32, interval, 1, "interval of the step"),
      SENTINEL_FIELD(S, 8, u64, bytes, 1,
                     "distinct bytes touched: granules × granularity, clipped to the object; a sampled "
                     "object's (SENTINEL_PROFILE_SAMPLE) × the rate, clipped to its chunk"),
      SENTINEL_FIELD(S, 16, u32, faults, 1,
                     "granules recorded: the faults taken at a fixed granularity; with sweeps "
                     "(SENTINEL_PROFILE_SWEEP) one per granule of each run given back"),
      SENTINEL_FIELD(S, 20, u32, step, 1, "index among the profiled steps, 0-based"),
      SENTINEL_APPENDED(S, 24, u32, chunk, 5, zero, nullptr,
                        "the chunk of a chunked identity (`chunk_bytes`), 0-based; 0 for an identity planned whole"),
      SENTINEL_APPENDED(S, 28, u32, passes_x256, 8, zero, nullptr,
                        "access intensity: the mean number of profiling passes (SENTINEL_PROFILE_PASSES) in which a "
                        "touched byte of the entry was touched, × 256 (256: once per interval); 0: the interval was "
                        "not profiled in passes (a reserved 0 before 1.8), read as 256"),
      SENTINEL_APPENDED(S, 32, u16, time_begin, 14, zero, nullptr,
                        "when in its interval the entry's bytes were first touched: the start of the first pass "
                        "that recorded one, as a share of the interval's profiled time × 65535; the interval's "
                        "time runs to the end of its last pass that recorded a touch of any entry"),
      SENTINEL_APPENDED(S, 34, u16, time_end, 14, zero, nullptr,
                        "the end of the last pass that recorded one, on the same scale; `time_begin` and "
                        "`time_end` both 0: not known (the interval was not profiled in passes, or an older "
                        "writer)"),
      SENTINEL_RESERVED(S, 36, u32, reserved0, 1, 14, zero),
  };
};

template <>
struct Layout<sentinel_group> {
  using S = sentinel_group;
  static constexpr const char* name = "sentinel_group";
  static constexpr const char* stored = "`GROUPS` entries";
  static constexpr Field fields[] = {
      SENTINEL_FIELD(S, 0, u32, id, 1, "group number (what identities' `group` names)"),
      SENTINEL_FIELD(S, 4, u8, lifetime, 1, "`enum sentinel_lifetime`"),
      SENTINEL_RESERVED(S, 5, u8, reserved0, 3, 1, never),
      SENTINEL_FIELD(S, 8, u32, members, 1, "identities in the group"),
      SENTINEL_RESERVED(S, 12, u32, reserved1, 1, 1, never),
      SENTINEL_FIELD(S, 16, u64, bytes, 1, "sum of member sizes"),
      SENTINEL_FIELD(S, 24, u64, interval_mask, 1,
                     "bit *i*: some member touched interval *i*; intervals ≥ 64 fold into bit 63"),
      SENTINEL_APPENDED(S, 32, u32, phase, 2, derived,
                        "the phase of the first `PROFILE` record (1.1 dumps profile one phase; 0 without a "
                        "`PROFILE` record)",
                        "the phase"),
      SENTINEL_RESERVED(S, 36, u32, reserved2, 1, 2, zero),
  };
};

template <>
struct Layout<sentinel_tiering> {
  using S = sentinel_tiering;
  static constexpr const char* name = "sentinel_tiering";
  static constexpr const char* stored = "`TIERING`, after its u32 size";
  static constexpr Field fields[] = {
      SENTINEL_FIELD(S, 0, u32, policy, 2,
                     "0 sentinel, 1 first-touch, 2 all-slow, 3 all-fast, 4 hot (`docs/planner.md`), 5 interleave (1.3: "
                     "no plan, `docs/tiering.md`)"),
      SENTINEL_FIELD(S, 4, i32, fast_node, 2, "fast NUMA node, -1 none"),
      SENTINEL_FIELD(S, 8, i32, slow_node, 2, "slow NUMA node, -1 none"),
      SENTINEL_FIELD(S, 12, u32, flags, 2,
                     "bit 0 dry run (one node or no slow node: planned, nothing placed or moved), bit 1 the budget "
                     "was a share of the peak, bit 2 `kernel.numa_balancing` was on, bit 3 `SENTINEL_FAULT_INJECT` "
                     "was set; 1.3: bit 5 `DEFAULT_SHARE` (a dry run with `SENTINEL_FAST_BYTES=auto` planned at 20% "
                     "of the peak), bit 6 `BUDGET_SPLIT` (a node budget split among the ranks sharing the node), "
                     "bit 7 `BUDGET_PER_RANK` (`SENTINEL_BUDGET_PER=rank`), bit 8 `NUMA_DENIED` (the kernel refused "
                     "NUMA calls: STATS `numa_calls_denied` says which)"),
      SENTINEL_FIELD(S, 16, u64, fast_budget_bytes, 2,
                     "resolved budget of the first plan (0: no plan); with a share each phase's plan has its own "
                     "(`PLAN`)"),
      SENTINEL_FIELD(S, 24, u32, budget_share_ppm, 2, "with flag bit 1: the share, parts per million"),
      SENTINEL_FIELD(S, 28, u32, move_method, 2, "0 `move_pages`, 1 `mbind(MPOL_MF_MOVE)`"),
      SENTINEL_FIELD(S, 32, u64, migrate_bytes_per_s, 2,
                     "move bandwidth the migrator's probe measured, given to the planner (0: not measured)"),
      SENTINEL_FIELD(S, 40, u64, fallback_objects, 2, "allocations the plan did not know, placed by the fallback"),
      SENTINEL_FIELD(S, 48, u64, fallback_bytes, 2, "their bytes"),
      SENTINEL_FIELD(S, 56, u64, pinned_objects, 2, "CUDA host allocations placed at allocation time"),
      SENTINEL_FIELD(S, 64, u64, pinned_bytes, 2, "their bytes"),
      SENTINEL_FIELD(S, 72, u64, fast_peak_bytes, 2,
                     "highest fast-tier occupancy of planned objects (and fallback objects on the fast node) left "
                     "by a boundary's moves in the steady state: not counting the boundaries of a plan's first steps, "
                     "which take over objects already on the fast node, nor passes cut short by the next boundary "
                     "(`docs/tiering.md`)"),
      SENTINEL_FIELD(S, 80, u64, migrated_bytes, 2, "both directions, whole run"),
      SENTINEL_FIELD(S, 88, u64, late_migrations, 2, "move-ins that finished after the object's use began"),
      SENTINEL_FIELD(S, 96, u64, failed_pages, 2, "pages `move_pages` would not move"),
      SENTINEL_FIELD(S, 104, u64, raced_frees, 2, "objects freed while being moved"),
      SENTINEL_FIELD(S, 112, u64, placed_at_birth_fast, 2, "allocations placed at birth on the fast node by the plan"),
      SENTINEL_FIELD(S, 120, u64, placed_at_birth_slow, 2, "allocations placed at birth on the slow node by the plan"),
  };
};

template <>
struct Layout<sentinel_plan_header> {
  using S = sentinel_plan_header;
  static constexpr const char* name = "sentinel_plan_header";
  static constexpr const char* stored = "`PLAN`, after its u32 size";
  static constexpr Field fields[] = {
      SENTINEL_FIELD(S, 0, u32, phase, 2, "the planned phase"),
      SENTINEL_FIELD(S, 4, u32, policy, 2, "`enum sentinel_policy`"),
      SENTINEL_FIELD(S, 8, u32, intervals, 2, "intervals of the phase's step"),
      SENTINEL_FIELD(S, 12, u32, lead_intervals, 2, "how far ahead move-ins start (the cost model's choice)"),
      SENTINEL_FIELD(S, 16, u64, fast_budget_bytes, 2, "the resolved budget"),
      SENTINEL_FIELD(S, 24, u64, footprint_peak_bytes, 2, "the profiled peak of bytes alive in one interval"),
      SENTINEL_FIELD(S, 32, u64, fast_peak_bytes, 2, "planned peak fast occupancy (≤ budget except all-fast)"),
      SENTINEL_FIELD(S, 40, u64, fast_pool_bytes, 2, "the reserved pool for short-lived objects"),
      SENTINEL_FIELD(S, 48, u64, moved_bytes_per_step, 2, "planned, both directions"),
      SENTINEL_FIELD(S, 56, u32, predicted_hit_ppm, 2, "modeled fast-hit share, parts per million"),
      SENTINEL_FIELD(S, 60, u32, flags, 2,
                     "`TIERING` flags as planned (dry run, budget share); in a plan only, `0x10` "
                     "`SENTINEL_TIER_NO_MOVES` (1.3): the sentinel policy planned without moves, the schedule its "
                     "step-time trial kept; `0x200` `SENTINEL_TIER_MOVES_OFF_THREAD` (written since 2026-12-06): "
                     "`SENTINEL_STEP_COSTS=auto` priced a move for the training thread, at the slow cost, below "
                     "the migrator's own time (the migrator has a CPU of its own); `0x400` "
                     "`SENTINEL_TIER_BUDGET_TIMED` (1.13): a re-plan on interval durations measured under a moving "
                     "schedule, whose lateness model held births and promotions to the budget"),
      SENTINEL_FIELD(S, 64, u64, migrate_bytes_per_s, 2, "the bandwidth the cost model used"),
      SENTINEL_APPENDED(S, 72, u32, slow_ns_per_kib, 4, zero, nullptr,
                        "the step-time model's cost the planner was given: extra ns of touching a KiB on the slow "
                        "node (0: unknown; `SENTINEL_STEP_COSTS`, `docs/planner.md`)"),
      SENTINEL_APPENDED(S, 76, u32, move_ns_per_kib, 4, zero, nullptr,
                        "the same: ns a moved KiB costs the training thread (0: unknown)"),
  };
};

template <>
struct Layout<sentinel_plan_trial> {
  using S = sentinel_plan_trial;
  static constexpr const char* name = "sentinel_plan_trial";
  static constexpr const char* stored = "`PLAN`, after its u32 size, last (1.3)";
  static constexpr Field fields[] = {
      SENTINEL_FIELD(S, 0, u32, state, 3,
                     "0 no trial (one schedule: it moves nothing, the policy is not sentinel, or "
                     "`SENTINEL_TRIAL_STEPS=0`), 1 under way when the dump was written, 2 done; larger values are "
                     "refused"),
      SENTINEL_FIELD(S, 4, u32, steps_per_candidate, 3, "`SENTINEL_TRIAL_STEPS`"),
      SENTINEL_FIELD(S, 8, u64, moving_step_ns, 3,
                     "mean duration of the moving schedule's timed steps (0: none timed)"),
      SENTINEL_FIELD(S, 16, u64, fixed_step_ns, 3, "the same for the schedule without moves"),
      SENTINEL_FIELD(S, 24, u64, moving_moved_bytes, 3, "the moving schedule's planned bytes moved per step"),
      SENTINEL_FIELD(S, 32, u32, moving_hit_ppm, 3, "the moving schedule's predicted fast-hit share"),
      SENTINEL_FIELD(S, 36, u32, fixed_hit_ppm, 3, "the fixed schedule's predicted fast-hit share"),
      SENTINEL_FIELD(S, 40, u32, moving_steps, 3, "steps of the moving schedule timed"),
      SENTINEL_FIELD(S, 44, u32, fixed_steps, 3, "steps of the fixed schedule timed"),
      SENTINEL_APPENDED(S, 48, u64, achieved_bytes_per_s, 6, zero, nullptr,
                        "the migrator's measured bandwidth (bytes/s) over the moving schedule's steps (0: not "
                        "measured)"),
      SENTINEL_APPENDED(S, 56, u64, replanned_step_ns, 6, zero, nullptr,
                        "mean duration of the re-planned schedule's timed steps (0: none timed)"),
      SENTINEL_APPENDED(S, 64, u64, replanned_moved_bytes, 6, zero, nullptr,
                        "the re-planned schedule's planned bytes moved per step"),
      SENTINEL_APPENDED(S, 72, u32, replanned_hit_ppm, 6, zero, nullptr,
                        "the re-planned schedule's predicted fast-hit share"),
      SENTINEL_APPENDED(S, 76, u32, replanned_steps, 6, zero, nullptr, "steps of the re-planned schedule timed"),
      SENTINEL_APPENDED(S, 80, u32, replan, 6, zero, nullptr,
                        "0 not decided, 1 the measured bandwidth within 1.5x of the planned one, 2 re-planned and "
                        "timed, 3 re-planned to the same schedule, 4 the re-plan failed; larger values are refused"),
      SENTINEL_APPENDED(S, 84, u32, kept, 6, derived,
                        "1 (fixed) when the header's flags have `NO_MOVES`, else 0 (moving)",
                        "the schedule in effect: 0 moving, 1 without moves, 2 re-planned, 3 (1.12) the bandwidth "
                        "watch's re-plan; larger values are refused"),
      SENTINEL_APPENDED(S, 88, u32, clock, 7, zero, nullptr,
                        "what timed the steps: 0 wall time, 1 the slow-tier guest's emulated time "
                        "(`SENTINEL_TRIAL_CLOCK=emulated`: the plugin's counts, priced); larger values are refused"),
      SENTINEL_APPENDED(S, 92, u32, fit, 9, zero, nullptr,
                        "the slow-access cost fitted to the schedule in effect over steady steps: 0 not yet (or a dry "
                        "run), 1 fitted, 2 too little on the slow node, 3 no modeled base, 4 moves of unknown cost, 5 "
                        "steps no longer than the modeled base; larger values are refused"),
      SENTINEL_APPENDED(
          S, 96, u32, fit_slow_ns_per_kib, 9, zero, nullptr,
          "the fitted cost: extra ns of touching an access-weighted KiB on the slow node (0: not fitted)"),
      SENTINEL_APPENDED(S, 100, u32, fit_steps, 9, zero, nullptr, "steady steps timed for the fit (wall time)"),
      SENTINEL_APPENDED(S, 104, u64, fit_step_ns, 9, zero, nullptr,
                        "the median of their durations, wall time (0: none timed)"),
      SENTINEL_APPENDED(S, 112, u32, move_fit, 10, zero, nullptr,
                        "what a moved KiB cost the training thread, fitted to the trial's two schedules: 0 not "
                        "(no trial, or not both timed), 1 fitted, 2 free (the moving schedule no slower than the "
                        "slow accesses it saved), 3 less than 1 MiB moved a step, 4 timed in emulated time, 5 no "
                        "slow cost; larger values are refused"),
      SENTINEL_APPENDED(S, 116, u32, fit_move_ns_per_kib, 10, zero, nullptr,
                        "the fitted cost, ns per KiB moved (0: not fitted)"),
      SENTINEL_APPENDED(
          S, 120, u32, watch, 12, zero, nullptr,
          "the bandwidth watch's latest window: 0 none measured, 1 within 1.5x of the planned "
          "bandwidth, 2 re-planned with the measured one (the schedule in effect), 3 re-planned to "
          "the same schedule, 4 the re-plan failed, 5 a later window 1.5x off (recorded, not yet a sustained drift), 6 "
          "(1.13) "
          "re-planned for a drift sustained over 8 windows (the schedule in effect); larger values are refused"),
      SENTINEL_APPENDED(S, 124, u32, watch_windows, 12, zero, nullptr,
                        "windows of steps the watch measured (each moved at least 1 MiB)"),
      SENTINEL_APPENDED(S, 128, u64, watch_bytes_per_s, 12, zero, nullptr,
                        "the migrator's bandwidth (bytes/s) over the latest window (0: none measured)"),
      SENTINEL_APPENDED(S, 136, u64, watch_step, 12, zero, nullptr,
                        "the step the watch's latest re-plan took effect at, its index among the phase's steps (0: "
                        "none)"),
      SENTINEL_APPENDED(S, 144, u64, watch_moved_bytes, 12, zero, nullptr,
                        "the watch's re-planned schedule's planned bytes moved per step"),
      SENTINEL_APPENDED(S, 152, u32, watch_hit_ppm, 12, zero, nullptr,
                        "the watch's re-planned schedule's predicted fast-hit share"),
      SENTINEL_APPENDED(S, 156, u32, watch_follows, 12, zero, nullptr,
                        "re-plans for a sustained drift, made or found the same (1.13; a reserved 0 in 1.12)"),
  };
};

template <>
struct Layout<sentinel_plan_entry> {
  using S = sentinel_plan_entry;
  static constexpr const char* name = "sentinel_plan_entry";
  static constexpr const char* stored = "`PLAN` entries";
  static constexpr Field fields[] = {
      SENTINEL_FIELD(S, 0, u32, identity, 2, "identity id (`IDENTITIES`)"),
      SENTINEL_FIELD(
          S, 4, u32, flags, 2,
          "bit 0 born on the fast node, bit 1 served from the pool, bit 2 one chunk of an identity planned in chunks "
          "(1.5)"),
      SENTINEL_FIELD(S, 8, u64, fast_mask, 2,
                     "bit *i*: on the fast node during interval *i*; moves are its edges, wrapping from the last "
                     "interval to interval 0 for objects that outlive the step"),
      SENTINEL_FIELD(S, 16, u64, touch_mask, 2, "bit *i*: touched in interval *i* in the profile"),
      SENTINEL_APPENDED(S, 24, u32, chunk, 5, zero, nullptr,
                        "the chunk of a chunked identity: one entry per chunk, in order; 0 for an identity planned "
                        "whole"),
      SENTINEL_RESERVED(S, 28, u32, reserved, 1, 5, zero),
  };
};

template <>
struct Layout<sentinel_migration_entry> {
  using S = sentinel_migration_entry;
  static constexpr const char* name = "sentinel_migration_entry";
  static constexpr const char* stored = "`MIGRATIONS` entries";
  static constexpr Field fields[] = {
      SENTINEL_FIELD(S, 0, u32, phase, 2, "the plan's phase"),
      SENTINEL_FIELD(S, 4, u32, interval, 2, "the interval whose boundary the moves were for"),
      SENTINEL_FIELD(S, 8, u64, bytes_to_fast, 2, "summed over the executed steps"),
      SENTINEL_FIELD(S, 16, u64, bytes_to_slow, 2, "summed over the executed steps"),
      SENTINEL_FIELD(S, 24, u64, migrate_ns, 2, "time inside `move_pages`/`mbind`"),
      SENTINEL_FIELD(S, 32, u32, moves, 2, "objects moved"),
      SENTINEL_FIELD(S, 36, u32, late, 2, "move-ins that finished after the interval using the object began"),
      SENTINEL_FIELD(S, 40, u32, failed_pages, 2, "pages the kernel would not move"),
      SENTINEL_FIELD(S, 44, u32, steps, 2,
                     "passes the migrator ran for this interval's boundary: one per planned step, unless a newer "
                     "boundary overtook it first"),
      SENTINEL_FIELD(S, 48, u64, fast_bytes_max, 2,
                     "fast-tier occupancy of planned objects left by this boundary's moves, maximum over the passes "
                     "of steady steps (from the plan's third step, as the first two take over objects that were on "
                     "the fast node before the plan; passes cut short excluded); 0 when no steady pass ran"),
      SENTINEL_FIELD(S, 56, u64, fast_bytes_sum, 2, "the same summed over all passes; mean = sum / steps"),
  };
};

template <>
struct Layout<sentinel_migration_batch> {
  using S = sentinel_migration_batch;
  static constexpr const char* name = "sentinel_migration_batch";
  static constexpr const char* stored = "`MIGRATION_LOG` entries";
  static constexpr Field fields[] = {
      SENTINEL_FIELD(S, 0, u64, start_ns, 2, "CLOCK_MONOTONIC when the batch started"),
      SENTINEL_FIELD(S, 8, u64, end_ns, 2, "CLOCK_MONOTONIC when it ended"),
      SENTINEL_FIELD(S, 16, u64, bytes, 2, "bytes moved"),
      SENTINEL_FIELD(S, 24, u32, phase, 2, "the plan's phase"),
      SENTINEL_FIELD(S, 28, u32, interval, 2, "the interval the batch was issued for"),
      SENTINEL_FIELD(S, 32, u32, objects, 2, "objects moved"),
      SENTINEL_FIELD(S, 36, u32, flags, 2, "bit 0 to the fast node, bit 1 late"),
      SENTINEL_FIELD(S, 40, u32, failed_pages, 2, "pages the kernel would not move"),
      SENTINEL_RESERVED(S, 44, u32, reserved, 1, 2, never),
  };
};

template <>
struct Layout<sentinel_placement_entry> {
  using S = sentinel_placement_entry;
  static constexpr const char* name = "sentinel_placement_entry";
  static constexpr const char* stored = "`PLACEMENT` entries";
  static constexpr Field fields[] = {
      SENTINEL_FIELD(S, 0, u32, phase, 2, "the checked phase"),
      SENTINEL_FIELD(S, 4, u32, interval, 2, "the interval"),
      SENTINEL_FIELD(S, 8, u64, touched_bytes, 2,
                     "distinct bytes touched in the checked steps (granules, clipped to the object)"),
      SENTINEL_FIELD(S, 16, u64, fast_bytes, 2,
                     "of those, on the fast node at touch time (asked of the kernel in the fault handler)"),
      SENTINEL_FIELD(S, 24, u32, steps, 2, "checked steps"),
      SENTINEL_FIELD(S, 28, u32, misplaced, 2,
                     "objects found, right after the boundary's moves, on the other node than the plan wants for "
                     "the interval and than Sentinel's record of them (before 2026-12-05 also those the record had "
                     "there: kept back by the budget or by pages that would not move; early 1.2 entries: a "
                     "reserved field written as 0)"),
      SENTINEL_APPENDED(S, 32, u32, verified, 2, zero, nullptr,
                        "objects whose pages (up to 64 sampled) were asked where they are at that boundary (later "
                        "1.2 writers), in as many steps right after the checked ones (during them before "
                        "2026-12-05, which saw only pages the interval had touched)"),
      SENTINEL_RESERVED(S, 36, u32, reserved, 1, 2, zero),
  };
};

template <>
struct Layout<sentinel_detection> {
  using S = sentinel_detection;
  static constexpr const char* name = "sentinel_detection";
  static constexpr const char* stored = "`DETECTION` entries";
  static constexpr Field fields[] = {
      SENTINEL_FIELD(S, 0, u32, phase, 2, "the phase; 0: the whole run"),
      SENTINEL_FIELD(S, 4, u32, flags, 2,
                     "bit 0 a step pattern was found, bit 1 a lock was lost and never regained, bit 2 tracked "
                     "allocations but no step found, bit 3 (2026-12-04) the phase is a set-up loop: its steps kept "
                     "what they allocated, and it was not profiled"),
      SENTINEL_FIELD(S, 8, u32, period, 2, "allocations per step"),
      SENTINEL_FIELD(S, 12, u32, distinct_tokens, 2, "distinct (site, size) in the step"),
      SENTINEL_FIELD(S, 16, u64, steps, 2, "steps (voided steps not counted)"),
      SENTINEL_FIELD(S, 24, u64, noise_allocations, 2, "allocations, while locked, that fit no identity of the step"),
      SENTINEL_FIELD(S, 32, u64, missing_allocations, 2,
                     "identities of a step that never came (counted when the step closed)"),
      SENTINEL_FIELD(S, 40, u64, locks, 2, "locks on a step pattern"),
      SENTINEL_FIELD(S, 48, u64, unlocks, 2, "locks lost"),
      SENTINEL_FIELD(S, 56, u64, retracted, 2, "locks voided (spurious or absorbed)"),
  };
};

template <>
struct Layout<sentinel_crash> {
  using S = sentinel_crash;
  static constexpr const char* name = "sentinel_crash";
  static constexpr const char* stored = "the `CRASH` entry";
  static constexpr Field fields[] = {
      SENTINEL_FIELD(S, 0, u32, signal, 11,
                     "the signal's number (SIGSEGV 11, SIGBUS 7, SIGFPE 8, SIGILL 4, SIGABRT 6)"),
      SENTINEL_FIELD(S, 4, i32, code, 11,
                     "its `si_code`: the kernel's code for a fault (`SEGV_MAPERR` 1, `SEGV_ACCERR` 2, ...), or "
                     "`SI_TKILL` (-6) for `abort()`"),
      SENTINEL_FIELD(S, 8, u64, address, 11, "`si_addr`: the faulting address; 0 where the signal has none"),
      SENTINEL_FIELD(S, 16, u64, pc, 11, "the instruction it was taken at"),
      SENTINEL_FIELD(S, 24, u32, thread, 11, "the crashing thread's id"),
      SENTINEL_FIELD(S, 28, u32, site, 11,
                     "its stack from the instruction on (`pc` first, then the callers), as a site of `SITES`; "
                     "`UINT32_MAX`: not captured"),
  };
};

#undef SENTINEL_FIELD
#undef SENTINEL_ARRAY
#undef SENTINEL_RESERVED
#undef SENTINEL_APPENDED

// ---- What the table implies.

// The smallest entry a reader accepts: the end of the last field every entry holds.
template <typename T>
constexpr uint32_t min_size() {
  uint32_t n = 0;
  for (const Field& f : Layout<T>::fields)
    if (f.absent == Absent::never) n = f.end();
  return n;
}

// Not constexpr (and never defined): a constant evaluation that reaches it fails to compile.
void no_such_field_in_the_table();

// The field named `name` of T's table; a compile error when there is none (no `throw`: the runtime
// builds without exceptions).
template <typename T>
consteval const Field& field(std::string_view name) {
  for (const Field& f : Layout<T>::fields)
    if (name == f.name) return f;
  no_such_field_in_the_table();
  return Layout<T>::fields[0];
}

// The bytes an entry must have for a reader to take field `f` from it: the field's end, or for an
// appended field the end of all the fields its minor appended (they come together).
template <typename T>
constexpr uint32_t needed_size(const Field& f) {
  if (f.absent == Absent::never) return f.end();
  uint32_t end = f.end();
  for (const Field& g : Layout<T>::fields)
    if (g.absent != Absent::never && g.minor == f.minor && g.end() > end) end = g.end();
  return end;
}

// True when a reader takes field `f` from a stored entry of `stored` bytes.
template <typename T>
constexpr bool holds(uint32_t stored, const Field& f) {
  return needed_size<T>(f) <= stored;
}

// The table itself, without its C type: for the docs generator and the JSON printer.
struct LayoutInfo {
  const char* name;    // the C struct's
  const char* stored;  // where a dump has it
  std::span<const Field> fields;
  uint32_t size;      // sizeof the C struct: what the current writer stores
  uint32_t min_size;  // the smallest stored entry a reader accepts
};

template <typename T>
inline constexpr LayoutInfo kLayoutInfo{Layout<T>::name, Layout<T>::stored, Layout<T>::fields, sizeof(T),
                                        min_size<T>()};

// Every table, in the order docs/format.md describes them.
inline constexpr const LayoutInfo* kAllLayouts[] = {
    &kLayoutInfo<sentinel_file_header>,     &kLayoutInfo<sentinel_record_header>,
    &kLayoutInfo<sentinel_object>,          &kLayoutInfo<sentinel_step_entry>,
    &kLayoutInfo<sentinel_identity>,        &kLayoutInfo<sentinel_touch>,
    &kLayoutInfo<sentinel_group>,           &kLayoutInfo<sentinel_tiering>,
    &kLayoutInfo<sentinel_plan_header>,     &kLayoutInfo<sentinel_plan_trial>,
    &kLayoutInfo<sentinel_plan_entry>,      &kLayoutInfo<sentinel_migration_entry>,
    &kLayoutInfo<sentinel_migration_batch>, &kLayoutInfo<sentinel_placement_entry>,
    &kLayoutInfo<sentinel_detection>,       &kLayoutInfo<sentinel_crash>,
};

// ---- The record types.

struct RecordType {
  uint32_t type;              // enum sentinel_record_type
  const char* name;           // "OBJECTS": what docs, errors and `sentinel-view records` call it
  uint8_t minor;              // the 1.x version that added it
  const LayoutInfo* entries;  // an array of these entries ("u32 count, u32 entry_size", entries); nullptr:
                              // a payload of its own (docs/format.md)
};

inline constexpr RecordType kRecordTypes[] = {
    {SENTINEL_REC_PROCESS, "PROCESS", 0, nullptr},
    {SENTINEL_REC_CONFIG, "CONFIG", 0, nullptr},
    {SENTINEL_REC_TOPOLOGY, "TOPOLOGY", 0, nullptr},
    {SENTINEL_REC_MODULE, "MODULE", 0, nullptr},
    {SENTINEL_REC_SITES, "SITES", 0, nullptr},
    {SENTINEL_REC_OBJECTS, "OBJECTS", 0, &kLayoutInfo<sentinel_object>},
    {SENTINEL_REC_STATS, "STATS", 0, nullptr},
    {SENTINEL_REC_MARKS, "MARKS", 0, nullptr},
    {SENTINEL_REC_STEPS, "STEPS", 1, &kLayoutInfo<sentinel_step_entry>},
    {SENTINEL_REC_INTERVALS, "INTERVALS", 1, nullptr},
    {SENTINEL_REC_PROFILE, "PROFILE", 1, nullptr},
    {SENTINEL_REC_IDENTITIES, "IDENTITIES", 1, &kLayoutInfo<sentinel_identity>},
    {SENTINEL_REC_TOUCHES, "TOUCHES", 1, &kLayoutInfo<sentinel_touch>},
    {SENTINEL_REC_GROUPS, "GROUPS", 1, &kLayoutInfo<sentinel_group>},
    {SENTINEL_REC_COUNTERS, "COUNTERS", 1, nullptr},
    {SENTINEL_REC_PHASE_COUNTERS, "PHASE_COUNTERS", 2, nullptr},
    {SENTINEL_REC_TIERING, "TIERING", 2, nullptr},  // u32 entry_size, one sentinel_tiering
    {SENTINEL_REC_PLAN, "PLAN", 2, nullptr},        // header, entries, durations, trial
    {SENTINEL_REC_MIGRATIONS, "MIGRATIONS", 2, &kLayoutInfo<sentinel_migration_entry>},
    {SENTINEL_REC_MIGRATION_LOG, "MIGRATION_LOG", 2, &kLayoutInfo<sentinel_migration_batch>},
    {SENTINEL_REC_PLACEMENT, "PLACEMENT", 2, &kLayoutInfo<sentinel_placement_entry>},
    {SENTINEL_REC_DETECTION, "DETECTION", 2, &kLayoutInfo<sentinel_detection>},
    {SENTINEL_REC_CRASH, "CRASH", 11, &kLayoutInfo<sentinel_crash>},
    {SENTINEL_REC_END, "END", 0, nullptr},
};

// The record type of `type`, nullptr for one this version does not know.
constexpr const RecordType* find_record_type(uint32_t type) {
  for (const RecordType& r : kRecordTypes)
    if (r.type == type) return &r;
  return nullptr;
}

// ---- The C structs of format.h against the table: a mismatch fails the build, naming the struct.

// Fields in offset order without gaps or overlap, each at its member's offset with its member's size,
// arrays only of 1-byte types, ending at sizeof(T); the fields older entries may lack come last and in
// a version no older than the fields before them.
template <typename T>
constexpr bool matches_struct() {
  uint32_t at = 0;
  uint8_t minor = 0;
  bool optional_seen = false;
  for (const Field& f : Layout<T>::fields) {
    if (f.offset != at || f.offset != f.member_offset || f.width() != f.member_size) return false;
    if (f.count != 1 && type_width(f.type) != 1) return false;
    if (f.minor < minor || f.minor > SENTINEL_FORMAT_MINOR) return false;
    if (optional_seen && f.absent == Absent::never) return false;
    if ((f.absent == Absent::derived) != (f.absent_doc != nullptr)) return false;
    if (f.absent == Absent::no_ordinal && f.width() != 4) return false;
    optional_seen = optional_seen || f.absent != Absent::never;
    minor = f.minor;
    at = f.end();
  }
  return at == sizeof(T);
}

static_assert(matches_struct<sentinel_file_header>(), "format.h: sentinel_file_header differs from its table");
static_assert(matches_struct<sentinel_record_header>(), "format.h: sentinel_record_header differs from its table");
static_assert(matches_struct<sentinel_object>(), "format.h: sentinel_object differs from its table");
static_assert(matches_struct<sentinel_step_entry>(), "format.h: sentinel_step_entry differs from its table");
static_assert(matches_struct<sentinel_identity>(), "format.h: sentinel_identity differs from its table");
static_assert(matches_struct<sentinel_touch>(), "format.h: sentinel_touch differs from its table");
static_assert(matches_struct<sentinel_group>(), "format.h: sentinel_group differs from its table");
static_assert(matches_struct<sentinel_tiering>(), "format.h: sentinel_tiering differs from its table");
static_assert(matches_struct<sentinel_plan_header>(), "format.h: sentinel_plan_header differs from its table");
static_assert(matches_struct<sentinel_plan_trial>(), "format.h: sentinel_plan_trial differs from its table");
static_assert(matches_struct<sentinel_plan_entry>(), "format.h: sentinel_plan_entry differs from its table");
static_assert(matches_struct<sentinel_migration_entry>(), "format.h: sentinel_migration_entry differs from its table");
static_assert(matches_struct<sentinel_migration_batch>(), "format.h: sentinel_migration_batch differs from its table");
static_assert(matches_struct<sentinel_placement_entry>(), "format.h: sentinel_placement_entry differs from its table");
static_assert(matches_struct<sentinel_detection>(), "format.h: sentinel_detection differs from its table");
static_assert(matches_struct<sentinel_crash>(), "format.h: sentinel_crash differs from its table");

}  // namespace sentinel::fmt
