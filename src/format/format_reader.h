// Reader of Sentinel profile dumps (docs/format.md). One library for every tool and test.
//
// parse_profile() takes the whole file as bytes and either returns a fully decoded Profile or throws
// FormatError, whose message names the byte offset where the problem was found. It never reads out of
// bounds, never reserves memory from an unchecked length field (every count is compared with the bytes
// that remain before anything is allocated), and runs in time linear in the input.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sentinel/format.h"

namespace sentinel::fmt {

// A malformed, truncated or unsupported dump. what() is one line: "offset N: message".
class FormatError : public std::runtime_error {
 public:
  FormatError(uint64_t offset, const std::string& message);
  uint64_t offset() const noexcept { return offset_; }
  // The message without the "offset N: " prefix.
  const std::string& message() const noexcept { return message_; }

 private:
  uint64_t offset_;
  std::string message_;
};

struct ParseOptions {
  bool verify_checksums = true;  // the fuzzer turns this off to reach the payload decoders
};

struct ProcessInfo {
  bool present = false;  // a PROCESS record was seen
  uint32_t pid = 0;
  uint32_t ppid = 0;
  int32_t rank = -1;
  uint32_t flags = 0;  // SENTINEL_PROCESS_*: a forked child wrote it, a signal ended the process
  uint64_t start_realtime_ns = 0;
  uint64_t end_realtime_ns = 0;
  uint64_t start_monotonic_ns = 0;
  uint64_t end_monotonic_ns = 0;
  std::string executable;
  std::vector<std::string> argv;

  // end - start of the monotonic clock, or nullopt when the times are missing or inconsistent.
  std::optional<uint64_t> duration_ns() const;
};

struct NumaNode {
  int32_t id = 0;
  uint32_t cpu_count = 0;
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
  uint32_t flags = 0;  // bit 0: DAX KMEM node, bit 1: CPU-less
};

struct Topology {
  bool present = false;         // a TOPOLOGY record was seen
  int32_t numa_available = -1;  // 0: yes, -1: no
  int32_t numa_balancing = -1;  // -1: unknown
  std::vector<NumaNode> nodes;
  int32_t fast_node = -1;
  int32_t slow_node = -1;
};

struct Segment {
  uint64_t vaddr = 0;  // p_vaddr, before the load bias
  uint64_t memsz = 0;
  uint32_t p_flags = 0;
};

struct Module {
  uint64_t load_bias = 0;
  std::vector<Segment> segments;
  std::string build_id;  // raw bytes
  std::string path;      // empty for the main program when the kernel gave no name

  // True when the run-time address falls inside one of the module's segments.
  bool contains(uint64_t address) const;
};

struct Site {
  uint32_t id = 0;
  uint64_t hash = 0;
  std::vector<uint64_t> frames;  // return addresses, innermost first
};

struct Stat {
  std::string name;
  uint64_t value = 0;
};

struct Mark {
  uint64_t seq = 0;  // tracked allocations made before the mark
  uint64_t monotonic_ns = 0;
};

// ---- 1.1: the profiler's records. Entries are decoded from the prefix this reader knows; bytes a
// newer minor version appends to an entry are ignored. Values are not cross-checked (an identity's
// group, a touch's interval...): the tools look them up defensively.

// One INTERVALS record: how a phase's step is cut on the in-step allocation clock.
struct IntervalTable {
  uint32_t phase = 0;
  uint32_t period = 0;  // allocations per step
  // Interval i covers in-step ordinals [bounds[i].first, bounds[i].second).
  std::vector<std::pair<uint32_t, uint32_t>> bounds;
};

// One PROFILE record: a page-protection profiling session.
struct ProfileSession {
  uint32_t granularity_bytes = 0;
  uint32_t profiled_steps = 0;
  uint32_t phase = 0;
  uint64_t first_profiled_step = 0;  // index into Profile::steps
  uint64_t faults = 0;
  uint64_t fault_handler_ns = 0;
  uint64_t syscall_unprotects = 0;
  std::vector<std::string> counter_names;  // counter_count event names
};

// One COUNTERS or PHASE_COUNTERS entry: one interval of one profiled step.
struct CounterSample {
  uint32_t phase = 0;  // PHASE_COUNTERS: as recorded; 1.1 COUNTERS: the PROFILE record's phase
  uint32_t step = 0;   // profiled step index
  uint32_t interval = 0;
  uint64_t duration_ns = 0;
  std::vector<uint64_t> values;  // the record's counter_count deltas
};

// ---- 1.2: tiering. One PLAN record: a phase's plan.
struct PlanRecord {
  sentinel_plan_header header{};
  std::vector<sentinel_plan_entry> entries;
  // The interval durations the planner was given (ns; appended to the record in 1.2, empty when a
  // writer did not append them): `sentinel-view plan` recomputes with exactly these.
  std::vector<uint64_t> interval_ns;
  // The step-time trial (appended in 1.3; state SENTINEL_TRIAL_NONE when absent).
  sentinel_plan_trial trial{};
};

struct Profile {
  uint16_t major = 0;
  uint16_t minor = 0;
  uint8_t pointer_size = 0;
  uint64_t file_size = 0;
  uint64_t record_count = 0;     // records before END, as counted by the reader
  uint64_t skipped_records = 0;  // records of unknown type (checksum verified, then skipped)

  ProcessInfo process;
  std::vector<std::pair<std::string, std::string>> config;  // NAME, value (in file order)
  Topology topology;
  std::vector<Module> modules;  // de-duplicated on (path, load_bias), first occurrence kept
  std::vector<Site> sites;      // sorted by id, ids unique
  std::vector<sentinel_object> objects;
  std::vector<Stat> stats;  // in file order
  std::vector<Mark> marks;  // in file order

  // 1.1 (empty in 1.0 dumps). Batches of one type are concatenated in file order.
  std::vector<sentinel_step_entry> steps;
  std::vector<IntervalTable> intervals;  // one per INTERVALS record
  std::vector<ProfileSession> sessions;  // one per PROFILE record
  std::vector<sentinel_identity> identities;
  std::vector<sentinel_touch> touches;
  std::vector<sentinel_group> groups;
  std::vector<CounterSample> counters;  // COUNTERS and PHASE_COUNTERS, in file order

  // 1.2 (empty in older dumps). Identities gain occurrence and flags, groups their phase (1.1 entries:
  // occurrence NO_ORDINAL, flags 0 (OUTSIDE when the ordinal says so), phase of the PROFILE record).
  std::vector<sentinel_tiering> tiering;  // one per TIERING record (the runtime writes one)
  std::vector<PlanRecord> plans;          // one per PLAN record
  std::vector<sentinel_migration_entry> migrations;
  std::vector<sentinel_migration_batch> migration_log;
  std::vector<sentinel_placement_entry> placement;
  std::vector<sentinel_detection> detection;
  // 1.11: the crash that ended the process (at most one entry; CRASH).
  std::vector<sentinel_crash> crash;

  // True when any 1.1 profiler record was seen.
  bool has_profiler_records() const;
  // True when any 1.2 tiering record (TIERING ... DETECTION) was seen.
  bool has_tiering_records() const;
  // The last PLAN record of a phase, nullptr when absent.
  const PlanRecord* plan_for(uint32_t phase) const;
  // The interval table of a phase (the last INTERVALS record for it), nullptr when absent.
  const IntervalTable* intervals_for(uint32_t phase) const;

  // Lookups (linear or binary search; nullptr / nullopt when absent).
  const Site* find_site(uint32_t id) const;
  std::optional<uint64_t> stat(std::string_view name) const;
  const std::string* config_value(std::string_view name) const;
  const Module* module_for(uint64_t address) const;
};

// Decodes a whole dump. Throws FormatError.
Profile parse_profile(std::span<const uint8_t> bytes, const ParseOptions& options = {});

// Reads PATH and decodes it. Throws std::system_error when the file cannot be read, FormatError
// when its contents are not a valid dump.
Profile read_profile(const std::string& path, const ParseOptions& options = {});

// "PROCESS", "OBJECTS", ... or "type N" for unknown types.
std::string record_type_name(uint32_t type);

// Where one record of a dump lies: its header's offset and its size with the header.
struct RecordExtent {
  uint32_t type = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

// The records of a valid dump in file order, END last. Throws FormatError as parse_profile does.
std::vector<RecordExtent> record_extents(std::span<const uint8_t> bytes);

// The whole file. Throws std::system_error when it cannot be read.
std::vector<uint8_t> read_file_bytes(const std::string& path);

}  // namespace sentinel::fmt
