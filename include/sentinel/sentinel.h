/* Sentinel public C API.
 *
 * Everything here is exported by libsentinel.so. A program never needs to call it: Sentinel works on
 * unmodified processes. These entry points are for loops the automatic step detector cannot read, and
 * for tools. Look them up with dlsym(RTLD_DEFAULT, ...) (or ctypes.CDLL(None)) so that the program
 * also runs without the library.
 */
#ifndef SENTINEL_SENTINEL_H
#define SENTINEL_SENTINEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the start of a training step: from the first call on, steps are delimited by these marks (they
 * override automatic detection). Recorded in the dump (MARKS and STEPS records). Not async-signal-safe. */
void sentinel_step(void);

/* Counters of the runtime, readable at any time. */
struct sentinel_stats {
  uint64_t tracked_allocations; /* tracked objects allocated so far */
  uint64_t tracked_frees;       /* tracked objects freed so far */
  uint64_t live_bytes;          /* bytes requested by live tracked objects */
  uint64_t peak_live_bytes;     /* high-water mark of live_bytes */
  uint64_t overhead_bytes;      /* memory Sentinel committed for its own bookkeeping */
  uint64_t steps_marked;        /* sentinel_step() calls */
};

/* Fills *out; returns 0, or -1 when the runtime is in pass-through (out is then zeroed). */
int sentinel_get_stats(struct sentinel_stats* out);

/* Writes a snapshot of the dump now, while the process runs on: everything the exit's dump would hold so
 * far (objects, steps, profiles, plans, migration counts), marked as a snapshot (SENTINEL_PROCESS_SNAPSHOT).
 * `path` is created and never overwritten; NULL writes to the SENTINEL_DUMP path with ".snapN" appended, N
 * counting this process's snapshots from 1. The dump at exit is written as always. For long runs and
 * processes that never exit (a notebook's kernel). Blocks other threads' tracked allocations while it
 * writes. Not async-signal-safe (it reads the loader's module list); a Python signal handler, which runs
 * between bytecodes, may call it (`kill -USR1` for a snapshot).
 * Returns 0, or -1 with errno: ENOTSUP (pass-through, the process has written its dump, or a forked child
 * without SENTINEL_DUMP_CHILDREN=1), ENOENT (NULL and no SENTINEL_DUMP), EEXIST, EBUSY (Sentinel's
 * sequencer stayed busy for 2 s), EDEADLK (called from a handler that interrupted Sentinel's own work), or
 * what creating or writing the file failed with. */
int sentinel_dump(const char* path);

/* "off", "track", ... : the mode the runtime is in now ("off" after a configuration error). */
const char* sentinel_mode(void);

/* Version string of the library, e.g. "0.1.0". */
const char* sentinel_version(void);

#ifdef __cplusplus
}
#endif
#endif
