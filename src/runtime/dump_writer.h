// Writes the profile dump (docs/format.md) with plain write(2) from a fixed buffer: usable at exit,
// at _exit and from fatal paths, and never calls malloc.
#pragma once
#include "runtime/runtime_state.h"

namespace sentinel {

// Writes the dump of `s` for process `pid` to the path from SENTINEL_DUMP. Reports problems on stderr.
// Returns true when a complete file was written.
bool write_dump(const RuntimeState& s, int pid);

// Writes to an already open descriptor (tests). Returns true on success.
bool write_dump_to_fd(const RuntimeState& s, int pid, int fd);

}  // namespace sentinel
