// The pieces a dump is written from, each written once for both writers of dumps: the runtime's
// (runtime/dump_writer.cpp, into a fixed buffer at exit: no allocation, no exception, no stdio) and
// the tests' builder (tests/fuzz/dump_builder.h, into a vector). Fixed-size entries go through their
// table (format/dump_layout.h); the variable-length records keep their field order here, one piece per
// part of the payload (docs/format.md gives each record's payload).
//
// `Out` is a byte sink with u32(v), i32(v), u64(v) (little endian), raw(p, n) and str(p, n) (u32
// length, then the bytes).
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/entry_codec.h"

namespace sentinel::fmt {

// ---- Framing.

inline void encode_file_header(uint8_t out[sizeof(sentinel_file_header)], uint16_t major, uint16_t minor,
                               uint8_t pointer_size) {
  sentinel_file_header h{};
  for (size_t i = 0; i < sizeof h.magic; ++i) h.magic[i] = SENTINEL_DUMP_MAGIC[i];
  h.major = major;
  h.minor = minor;
  h.pointer_size = pointer_size;
  h.little_endian = 1;
  encode_entry(h, out);
}

inline void encode_record_header(uint8_t out[sizeof(sentinel_record_header)], uint32_t type, uint32_t crc,
                                 uint64_t length) {
  encode_entry(sentinel_record_header{type, crc, length}, out);
}

// END: the records written before it.
template <typename Out>
void put_end(Out& o, uint64_t records) {
  o.u64(records);
}

// ---- Fixed-size entries.

// An entry through its table: the fields within its first `written` bytes (sizeof(T), or an older
// minor's size).
template <typename Out, typename T>
void put_entry(Out& o, const T& entry, uint32_t written = sizeof(T)) {
  uint8_t bytes[sizeof(T)] = {};
  encode_entry(entry, bytes, written);
  o.raw(bytes, written < sizeof(T) ? written : sizeof(T));
}

// The head of every array of entries (OBJECTS, STEPS, IDENTITIES, ..., PLAN's entries).
template <typename Out>
void put_array_head(Out& o, uint32_t count, uint32_t entry_size) {
  o.u32(count);
  o.u32(entry_size);
}

// An entry after its own u32 size: TIERING, PLAN's header and its step-time trial.
template <typename Out, typename T>
void put_sized_entry(Out& o, const T& entry) {
  o.u32(sizeof(T));
  put_entry(o, entry);
}

// ---- Variable-length records.

// PROCESS, up to the executable: then str executable, u32 argc, argc strings.
struct ProcessHead {
  uint32_t pid, ppid;
  int32_t rank;    // -1: unknown
  uint32_t flags;  // bit 0: written by a forked child
  uint64_t start_realtime_ns, end_realtime_ns, start_monotonic_ns, end_monotonic_ns;
};
template <typename Out>
void put_process_head(Out& o, const ProcessHead& h) {
  o.u32(h.pid);
  o.u32(h.ppid);
  o.i32(h.rank);
  o.u32(h.flags);
  o.u64(h.start_realtime_ns);
  o.u64(h.end_realtime_ns);
  o.u64(h.start_monotonic_ns);
  o.u64(h.end_monotonic_ns);
}

// TOPOLOGY: head, node_count nodes (32 bytes each), tail.
template <typename Out>
void put_topology_head(Out& o, int32_t numa_available, int32_t numa_balancing, uint32_t node_count) {
  o.i32(numa_available);
  o.i32(numa_balancing);
  o.u32(node_count);
}
template <typename Out>
void put_topology_node(Out& o, int32_t id, uint32_t cpu_count, uint64_t total_bytes, uint64_t free_bytes,
                       uint32_t flags) {
  o.i32(id);
  o.u32(cpu_count);
  o.u64(total_bytes);
  o.u64(free_bytes);
  o.u32(flags);
  o.u32(0);  // reserved
}
template <typename Out>
void put_topology_tail(Out& o, int32_t fast_node, int32_t slow_node) {
  o.i32(fast_node);
  o.i32(slow_node);
}

// MODULE: head, segment_count segments (24 bytes each), tail.
template <typename Out>
void put_module_head(Out& o, uint64_t load_bias, uint32_t segment_count) {
  o.u64(load_bias);
  o.u32(segment_count);
}
template <typename Out>
void put_module_segment(Out& o, uint64_t vaddr, uint64_t memsz, uint32_t p_flags) {
  o.u64(vaddr);
  o.u64(memsz);
  o.u32(p_flags);
  o.u32(0);  // reserved
}
template <typename Out>
void put_module_tail(Out& o, const char* build_id, size_t build_id_len, const char* path, size_t path_len) {
  o.str(build_id, build_id_len);
  o.str(path, path_len);
}

// SITES (after u32 count): one site, 16 + 8 * nframes bytes.
inline constexpr size_t kMaxSiteBytes = 16 + 8 * SENTINEL_MAX_FRAMES;
template <typename Out, typename Frame>  // Frame: uint64_t, or the runtime's uintptr_t
void put_site(Out& o, uint32_t id, uint64_t hash, const Frame* frames, uint32_t nframes) {
  o.u32(id);
  o.u32(nframes);
  o.u64(hash);
  for (uint32_t f = 0; f < nframes; ++f) o.u64(uint64_t{frames[f]});
}

// STATS (after u32 count): one counter.
template <typename Out>
void put_stat(Out& o, const char* name, size_t name_len, uint64_t value) {
  o.str(name, name_len);
  o.u64(value);
}

// MARKS (after u32 count): one mark, 16 bytes.
inline constexpr size_t kMarkBytes = 16;
template <typename Out>
void put_mark(Out& o, uint64_t seq, uint64_t monotonic_ns) {
  o.u64(seq);
  o.u64(monotonic_ns);
}

// INTERVALS: head, then count intervals [first, end).
template <typename Out>
void put_intervals_head(Out& o, uint32_t phase, uint32_t period, uint32_t count) {
  o.u32(phase);
  o.u32(period);
  o.u32(count);
}
template <typename Out>
void put_interval(Out& o, uint32_t first_ordinal, uint32_t end_ordinal) {
  o.u32(first_ordinal);
  o.u32(end_ordinal);
}

// PROFILE, up to the counter names: then counter_count strings.
struct ProfileHead {
  uint32_t granularity_bytes, profiled_steps, phase, counter_count;
  uint64_t first_profiled_step, faults, fault_handler_ns, syscall_unprotects;
};
template <typename Out>
void put_profile_head(Out& o, const ProfileHead& h) {
  o.u32(h.granularity_bytes);
  o.u32(h.profiled_steps);
  o.u32(h.phase);
  o.u32(h.counter_count);
  o.u64(h.first_profiled_step);
  o.u64(h.faults);
  o.u64(h.fault_handler_ns);
  o.u64(h.syscall_unprotects);
}

// COUNTERS, and PHASE_COUNTERS after its u32 phase: head, then count samples of 16 + 8 * counter_count
// bytes.
template <typename Out>
void put_counters_head(Out& o, uint32_t count, uint32_t counter_count) {
  o.u32(count);
  o.u32(counter_count);
}
inline constexpr size_t sample_bytes(uint32_t counter_count) {
  return 16 + 8 * size_t{counter_count};
}
template <typename Out>
void put_counter_sample(Out& o, uint32_t step, uint32_t interval, uint64_t duration_ns, const uint64_t* values,
                        uint32_t counter_count) {
  o.u32(step);
  o.u32(interval);
  o.u64(duration_ns);
  for (uint32_t k = 0; k < counter_count; ++k) o.u64(values[k]);
}

// PLAN, after its entries: the interval durations the planner was given (n = 0: none), then the
// step-time trial (put_sized_entry).
template <typename Out>
void put_plan_durations(Out& o, const uint64_t* interval_ns, uint32_t n) {
  o.u32(n);
  for (uint32_t i = 0; i < n; ++i) o.u64(interval_ns[i]);
}

}  // namespace sentinel::fmt
