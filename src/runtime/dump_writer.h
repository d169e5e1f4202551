// Writes the profile dump (docs/format.md) with plain write(2) from a fixed buffer: usable at exit,
// at _exit and from fatal paths, and never calls malloc.
#pragma once
#include "runtime/runtime_state.h"

namespace sentinel {

// What a dump stands for: the process's end, or a snapshot taken while it runs on (sentinel_dump(),
// marked SENTINEL_PROCESS_SNAPSHOT).
enum class DumpKind { at_end, snapshot };

// Writes the dump of `s` for process `pid` to the path from SENTINEL_DUMP. Reports problems on stderr.
// Returns true when a complete file was written.
bool write_dump(const RuntimeState& s, int pid);

// Writes a snapshot to `path`, or where null to the SENTINEL_DUMP path with ".snapN" appended (N:
// `number`). The file is created, never overwritten, and removed again when the write fails. Returns 0,
// or the errno value of what failed. `written`: the level of the line that names the file.
int write_snapshot(const RuntimeState& s, int pid, const char* path, uint32_t number, LogLevel written);

// The periodic snapshot (SENTINEL_SNAPSHOT_EVERY): the SENTINEL_DUMP path with ".latest" appended,
// written beside it as ".latest.tmp" and renamed over it, so that the file is always a whole snapshot.
// Returns 0, or the errno value of what failed (the older snapshot then stays).
int write_latest_snapshot(const RuntimeState& s, int pid);
// Removes the periodic snapshot (the dump at exit supersedes it). Not an error where there is none.
void remove_latest_snapshot(const RuntimeState& s, int pid);

// Writes to an already open descriptor (tests). Returns true on success.
bool write_dump_to_fd(const RuntimeState& s, int pid, int fd, DumpKind kind = DumpKind::at_end);

}  // namespace sentinel
