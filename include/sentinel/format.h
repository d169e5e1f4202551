/* Sentinel profile dump format, version 1.
 *
 * A dump is a file header followed by length-framed records. Every integer is little endian; the
 * header records the writer's pointer size. Each record carries a CRC-32C of its payload, so a
 * reader can tell a corrupt record from an unknown one. Readers skip record types they do not
 * know and refuse a file whose major version is newer than theirs. The full description, with the
 * payload layout of each record type, is docs/format.md; this header is the single source of the
 * numbers.
 */
#ifndef SENTINEL_FORMAT_H
#define SENTINEL_FORMAT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SENTINEL_DUMP_MAGIC "SNTLDUMP" /* 8 bytes, no terminator in the file */
#define SENTINEL_FORMAT_MAJOR 1
#define SENTINEL_FORMAT_MINOR 1

struct sentinel_file_header {
  char magic[8];
  uint16_t major;
  uint16_t minor;
  uint8_t pointer_size;  /* sizeof(void*) of the writer */
  uint8_t little_endian; /* always 1 for now */
  uint16_t reserved0;
  uint64_t reserved1;
}; /* 24 bytes */

struct sentinel_record_header {
  uint32_t type;   /* enum sentinel_record_type */
  uint32_t crc32c; /* CRC-32C (Castagnoli) of the payload */
  uint64_t length; /* payload bytes that follow this header */
}; /* 16 bytes */

enum sentinel_record_type {
  SENTINEL_REC_PROCESS = 1,  /* who ran: pid, times, executable, command line */
  SENTINEL_REC_CONFIG = 2,   /* effective SENTINEL_* settings as NAME=value strings */
  SENTINEL_REC_TOPOLOGY = 3, /* NUMA nodes seen at start */
  SENTINEL_REC_MODULE = 4,   /* one loaded object: load bias, segments, build id, path */
  SENTINEL_REC_SITES = 5,    /* allocation sites: id, hash, return addresses */
  SENTINEL_REC_OBJECTS = 6,  /* a batch of tracked objects (struct sentinel_object) */
  SENTINEL_REC_STATS = 7,    /* named 64-bit counters */
  SENTINEL_REC_MARKS = 8,    /* explicit step marks (sentinel_step()) */
  /* 1.1: the profiler */
  SENTINEL_REC_STEPS = 9,       /* detected training steps (struct sentinel_step_entry) */
  SENTINEL_REC_INTERVALS = 10,  /* interval boundaries of a phase's step, on the in-step allocation clock */
  SENTINEL_REC_PROFILE = 11,    /* the profiling session: granularity, steps profiled, faults, counter names */
  SENTINEL_REC_IDENTITIES = 12, /* object identities and their classification (struct sentinel_identity) */
  SENTINEL_REC_TOUCHES = 13,    /* bytes each identity touched in each interval (struct sentinel_touch) */
  SENTINEL_REC_GROUPS = 14,     /* co-allocation groups (struct sentinel_group) */
  SENTINEL_REC_COUNTERS = 15,   /* per-interval durations and hardware counters */
  SENTINEL_REC_END = 0xFFFF  /* last record: count of records before it */
};

/* Object kinds. */
enum sentinel_object_kind {
  SENTINEL_KIND_HEAP = 0,      /* malloc family, served from Sentinel's arenas */
  SENTINEL_KIND_CUDA_HOST = 1, /* cudaHostAlloc / cudaMallocHost (pinned, never migrated) */
};

/* One tracked object, fixed size. The OBJECTS record stores entry_size so that later minor
 * versions can append fields; readers use the prefix they know. */
struct sentinel_object {
  uint64_t address;
  uint64_t size;       /* bytes requested */
  uint64_t birth_ns;   /* CLOCK_MONOTONIC */
  uint64_t death_ns;   /* 0: still alive at dump time */
  uint64_t birth_seq;  /* ordinal among tracked allocations (0-based) */
  uint64_t death_seq;  /* tracked allocations made before the free; UINT64_MAX: alive */
  uint32_t site;       /* site id, index into the SITES records; UINT32_MAX: unknown */
  uint32_t thread;     /* kernel thread id of the allocating thread */
  uint32_t alignment;  /* requested alignment in bytes (power of two) */
  uint16_t kind;       /* enum sentinel_object_kind */
  uint16_t flags;      /* SENTINEL_OBJ_* */
}; /* 64 bytes */

#define SENTINEL_OBJ_FREED_BY_OTHER_THREAD 0x1u
#define SENTINEL_OBJ_REALLOCATED 0x2u /* born from a realloc */

#define SENTINEL_MAX_FRAMES 8

/* ---- 1.1: profiler records ---- */

#define SENTINEL_STEP_EXPLICIT 0x1u  /* started by sentinel_step() */
#define SENTINEL_STEP_NEW_PHASE 0x2u /* first step of a new pattern (lock or re-lock) */
#define SENTINEL_STEP_INFERRED 0x4u  /* before lock-on, inferred backwards from the period */
#define SENTINEL_STEP_PROFILED 0x8u  /* this step was profiled */

struct sentinel_step_entry {
  uint64_t start_seq;    /* tracked allocations before the step's first one */
  uint64_t start_ns;     /* CLOCK_MONOTONIC of its first allocation (0: unknown) */
  uint32_t allocations;  /* tracked allocations in the step */
  uint32_t phase;        /* pattern number, 0-based */
  uint32_t flags;        /* SENTINEL_STEP_* */
  uint32_t reserved;
}; /* 32 bytes */

enum sentinel_lifetime {
  SENTINEL_LIFE_UNKNOWN = 0,
  SENTINEL_LIFE_SHORT = 1,      /* born and freed within one interval */
  SENTINEL_LIFE_STEP = 2,       /* born and freed within one step */
  SENTINEL_LIFE_PERSISTENT = 3, /* outlives the step it was born in (weights, optimizer state) */
};

#define SENTINEL_NO_ORDINAL 0xFFFFFFFFu

/* An object identity: the same (site, size, in-step ordinal) in every step of a phase; objects born
 * outside a locked step are identities of their own. */
struct sentinel_identity {
  uint32_t id;
  uint32_t site;
  uint64_t size;
  uint32_t ordinal;        /* in-step allocation ordinal; SENTINEL_NO_ORDINAL outside steps */
  uint32_t phase;
  uint32_t group;          /* co-allocation group */
  uint32_t birth_interval; /* SENTINEL_NO_ORDINAL when born outside steps */
  uint32_t death_interval; /* SENTINEL_NO_ORDINAL when it outlives its step */
  uint8_t lifetime;        /* enum sentinel_lifetime */
  uint8_t reserved0[3];
  uint64_t touched_bytes;  /* over all profiled steps */
  uint32_t instances;      /* objects seen with this identity */
  uint32_t reserved1;
}; /* 56 bytes */

struct sentinel_touch {
  uint32_t identity;
  uint32_t interval;
  uint64_t bytes;   /* distinct bytes touched (granules x granularity, clipped to the object) */
  uint32_t faults;
  uint32_t step;    /* index of the profiled step (0-based among profiled steps) */
}; /* 24 bytes */

struct sentinel_group {
  uint32_t id;
  uint8_t lifetime;  /* enum sentinel_lifetime */
  uint8_t reserved0[3];
  uint32_t members;  /* identities */
  uint32_t reserved1;
  uint64_t bytes;    /* sum of member sizes */
  uint64_t interval_mask; /* bit i: some member touched interval i (intervals >= 64 fold into bit 63) */
}; /* 32 bytes */

#ifdef __cplusplus
}
#endif
#endif
