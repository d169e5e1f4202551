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

/* "off", "track", ... : the mode the runtime is in now ("off" after a configuration error). */
const char* sentinel_mode(void);

/* Version string of the library, e.g. "0.1.0". */
const char* sentinel_version(void);

#ifdef __cplusplus
}
#endif
#endif
