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
#define SENTINEL_FORMAT_MINOR 0

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

#ifdef __cplusplus
}
#endif
#endif
