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
#define SENTINEL_FORMAT_MINOR 14

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
};                 /* 16 bytes */

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
  SENTINEL_REC_COUNTERS = 15,   /* per-interval durations and hardware counters (1.1; 1.2 writes 16) */
  /* 1.2: phases named everywhere, tiering */
  SENTINEL_REC_PHASE_COUNTERS = 16, /* COUNTERS of one named phase: u32 phase, then the COUNTERS payload */
  SENTINEL_REC_TIERING = 17,        /* the tier set-up: policy, nodes, budget (struct sentinel_tiering) */
  SENTINEL_REC_PLAN = 18,           /* a phase's plan: struct sentinel_plan_header, then plan entries */
  SENTINEL_REC_MIGRATIONS = 19,     /* what the migrator did per (phase, interval) (sentinel_migration_entry) */
  SENTINEL_REC_MIGRATION_LOG = 20,  /* individual migration batches, for the trace (sentinel_migration_batch) */
  SENTINEL_REC_PLACEMENT = 21,      /* the placement check per (phase, interval) (sentinel_placement_entry) */
  SENTINEL_REC_DETECTION = 22,      /* what the step detector saw, per phase and overall (sentinel_detection) */
  SENTINEL_REC_CRASH = 23,          /* 1.11: the crash that ended the process (sentinel_crash) */
  SENTINEL_REC_END = 0xFFFF         /* last record: count of records before it */
};

/* PROCESS record flags. */
#define SENTINEL_PROCESS_FORKED_CHILD 0x1u    /* written by a forked child (SENTINEL_DUMP_CHILDREN=1) */
#define SENTINEL_PROCESS_ENDED_BY_SIGNAL 0x2u /* 1.3: written as a signal ended the process (SIGINT, SIGTERM...) */
#define SENTINEL_PROCESS_SIGNAL(flags) (((flags) >> 8) & 0xffu) /* that signal's number */
#define SENTINEL_PROCESS_SNAPSHOT 0x4u /* 1.11: written by sentinel_dump() while the process ran on */

/* Object kinds. */
enum sentinel_object_kind {
  SENTINEL_KIND_HEAP = 0,      /* malloc family, served from Sentinel's arenas */
  SENTINEL_KIND_CUDA_HOST = 1, /* cudaHostAlloc / cudaMallocHost (pinned, never migrated) */
};

/* One tracked object, fixed size. The OBJECTS record stores entry_size so that later minor
 * versions can append fields; readers use the prefix they know. */
struct sentinel_object {
  uint64_t address;
  uint64_t size;      /* bytes requested */
  uint64_t birth_ns;  /* CLOCK_MONOTONIC */
  uint64_t death_ns;  /* 0: still alive at dump time */
  uint64_t birth_seq; /* ordinal among tracked allocations (0-based) */
  uint64_t death_seq; /* tracked allocations made before the free; UINT64_MAX: alive */
  uint32_t site;      /* site id, index into the SITES records; UINT32_MAX: unknown */
  uint32_t thread;    /* kernel thread id of the allocating thread */
  uint32_t alignment; /* requested alignment in bytes (power of two) */
  uint16_t kind;      /* enum sentinel_object_kind */
  uint16_t flags;     /* SENTINEL_OBJ_* */
};                    /* 64 bytes */

#define SENTINEL_OBJ_FREED_BY_OTHER_THREAD 0x1u
#define SENTINEL_OBJ_REALLOCATED 0x2u /* born from a realloc */

#define SENTINEL_MAX_FRAMES 8

/* ---- 1.1: profiler records ---- */

#define SENTINEL_STEP_EXPLICIT 0x1u  /* started by sentinel_step() */
#define SENTINEL_STEP_NEW_PHASE 0x2u /* first step of a new pattern (lock or re-lock) */
#define SENTINEL_STEP_INFERRED 0x4u  /* before lock-on, inferred backwards from the period */
#define SENTINEL_STEP_PROFILED 0x8u  /* this step was profiled */
#define SENTINEL_STEP_CHECKED 0x10u  /* 1.2: this step was in a placement check */

struct sentinel_step_entry {
  uint64_t start_seq;   /* tracked allocations before the step's first one */
  uint64_t start_ns;    /* CLOCK_MONOTONIC of its first allocation (0: unknown) */
  uint32_t allocations; /* tracked allocations in the step */
  uint32_t phase;       /* pattern number: 1-based in 1.2 (the detector's phase id), 0-based in 1.1 */
  uint32_t flags;       /* SENTINEL_STEP_* */
  uint32_t reserved;
}; /* 32 bytes */

enum sentinel_lifetime {
  SENTINEL_LIFE_UNKNOWN = 0,
  SENTINEL_LIFE_SHORT = 1,      /* born and freed within one interval */
  SENTINEL_LIFE_STEP = 2,       /* born and freed within one step */
  SENTINEL_LIFE_PERSISTENT = 3, /* outlives the step it was born in (weights, optimizer state) */
  SENTINEL_LIFE_NEXT_STEP = 4,  /* freed in the next step, at death_interval of that step: a step's output
                                   kept until the next step replaces it (written since 2026-12-03; older
                                   readers show it as unknown) */
};

#define SENTINEL_NO_ORDINAL 0xFFFFFFFFu

/* An object identity: the same (site, size, in-step ordinal) in every step of a phase; objects born
 * outside a locked step are identities of their own. */
struct sentinel_identity {
  uint32_t id;
  uint32_t site;
  uint64_t size;
  uint32_t ordinal; /* in-step allocation ordinal; SENTINEL_NO_ORDINAL outside steps */
  uint32_t phase;
  uint32_t group;          /* co-allocation group */
  uint32_t birth_interval; /* SENTINEL_NO_ORDINAL when born outside steps */
  uint32_t death_interval; /* SENTINEL_NO_ORDINAL when it outlives its step */
  uint8_t lifetime;        /* enum sentinel_lifetime */
  uint8_t reserved0[3];
  uint64_t touched_bytes; /* over all profiled steps */
  uint32_t instances;     /* objects seen with this identity */
  uint32_t chunk_bytes;   /* 1.5: profiled and planned in chunks of this many bytes (0: as one object) */
  /* 1.2 */
  uint32_t occurrence; /* k: the k-th allocation of (site, size) in the step (0-based); NO_ORDINAL outside steps */
  uint32_t flags;      /* SENTINEL_IDENTITY_* */
};                     /* 64 bytes (56 in 1.1) */

#define SENTINEL_IDENTITY_PINNED 0x1u  /* CUDA pinned host memory: placed at allocation, never moved */
#define SENTINEL_IDENTITY_OUTSIDE 0x2u /* born outside a step (weights, optimizer state, data) */

struct sentinel_touch {
  uint32_t identity;
  uint32_t interval;
  uint64_t bytes; /* distinct bytes touched (granules x granularity, clipped to the object; sampled
                     objects: x SENTINEL_PROFILE_SAMPLE, clipped to the chunk) */
  uint32_t faults;
  uint32_t step; /* index of the profiled step (0-based among profiled steps) */
  /* 1.5 */
  uint32_t chunk; /* the chunk of a chunked identity (its chunk_bytes), 0 otherwise */
  /* 1.8: access intensity, the mean number of profiling passes (SENTINEL_PROFILE_PASSES) in which a
     touched byte was touched, x 256; 0: not profiled in passes (read as 1) */
  uint32_t passes_x256;
  /* 1.14: when in its interval the entry's bytes were touched, as shares of the interval's profiled time
     x 65535: the start of the first pass that recorded one and the end of the last. The interval's time is
     its passes up to the last that recorded a touch of any entry. Both 0: not known (no passes) */
  uint16_t time_begin;
  uint16_t time_end;
  uint32_t reserved0;
}; /* 40 bytes (24 before 1.5, 32 before 1.14) */

struct sentinel_group {
  uint32_t id;
  uint8_t lifetime; /* enum sentinel_lifetime */
  uint8_t reserved0[3];
  uint32_t members; /* identities */
  uint32_t reserved1;
  uint64_t bytes;         /* sum of member sizes */
  uint64_t interval_mask; /* bit i: some member touched interval i (intervals >= 64 fold into bit 63) */
  /* 1.2 */
  uint32_t phase;
  uint32_t reserved2;
}; /* 40 bytes (32 in 1.1) */

/* ---- 1.2: tiering ---- */

enum sentinel_policy {
  SENTINEL_POLICY_SENTINEL = 0,    /* short-lived in a fast pool; the rest moved ahead of use (the paper's) */
  SENTINEL_POLICY_FIRST_TOUCH = 1, /* fast until the budget is full, then slow; never moves */
  SENTINEL_POLICY_ALL_SLOW = 2,
  SENTINEL_POLICY_ALL_FAST = 3, /* ignores the budget: the upper bound */
  SENTINEL_POLICY_HOT = 4,      /* reactive: promote what the last interval touched, demote LRU */
  /* 1.3: no plan; tracked objects' pages weighted-interleaved at birth, the budget's share on the fast
   * node (in 64 KiB groups), never moved: the peer of Linux's MPOL_WEIGHTED_INTERLEAVE */
  SENTINEL_POLICY_INTERLEAVE = 5,
};

#define SENTINEL_TIER_DRY_RUN 0x1u      /* one node (or no slow node): planned, nothing placed or moved */
#define SENTINEL_TIER_BUDGET_SHARE 0x2u /* the budget was given as a share of the profiled peak */
#define SENTINEL_TIER_BALANCING_ON 0x4u /* kernel.numa_balancing was on */
#define SENTINEL_TIER_FAULT_INJECTION 0x8u
/* A plan's header only: the sentinel policy planned without moves (every object on one node for its
 * whole life), the schedule the step-time trial kept when it measured faster (1.3). */
#define SENTINEL_TIER_NO_MOVES 0x10u
/* 1.3: a dry run with SENTINEL_FAST_BYTES=auto planned at the default share of the peak (20%), since
 * "90% of the fast node's free memory" would make every plan all fast on a machine with one node. */
#define SENTINEL_TIER_DEFAULT_SHARE 0x20u
/* 1.3: a budget given as a size or auto was the fast node's, split evenly among the job's ranks that share
 * it (SENTINEL_BUDGET_PER=node, LOCAL_WORLD_SIZE > 1); PER_RANK: SENTINEL_BUDGET_PER=rank, each rank's own. */
#define SENTINEL_TIER_BUDGET_SPLIT 0x40u
#define SENTINEL_TIER_BUDGET_PER_RANK 0x80u
/* 1.3: the kernel refused NUMA calls at start (EPERM from a seccomp filter, or ENOSYS); which ones: the
 * numa_calls_denied counter of STATS (bit 0 mbind, 1 set_mempolicy, 2 get_mempolicy, 3 move_pages,
 * 4 migrate_pages). Every plan is then a dry run. */
#define SENTINEL_TIER_NUMA_DENIED 0x100u
/* A plan's header only (written since 2026-12-06; older readers ignore it): SENTINEL_STEP_COSTS=auto priced
 * a move at what it takes from the training thread, the slow cost, below the migrator's own time per KiB,
 * since the migrator has a CPU of its own (docs/tiering.md, "Step costs"). move_ns_per_kib is that price. */
#define SENTINEL_TIER_MOVES_OFF_THREAD 0x200u
/* 1.13, a plan's header only: a re-plan whose interval durations were measured under a moving schedule
 * (the step-time trial's, the bandwidth watch's): its lateness model holds births and promotions to the
 * budget, with the room that demotions give back as they end (docs/planner.md, "The cost model"). */
#define SENTINEL_TIER_BUDGET_TIMED 0x400u

/* TIERING record: u32 entry_size, then one struct sentinel_tiering. */
struct sentinel_tiering {
  uint32_t policy;              /* enum sentinel_policy */
  int32_t fast_node;            /* -1: none */
  int32_t slow_node;            /* -1: none */
  uint32_t flags;               /* SENTINEL_TIER_* */
  uint64_t fast_budget_bytes;   /* resolved budget of the first plan (0: no plan) */
  uint32_t budget_share_ppm;    /* SENTINEL_TIER_BUDGET_SHARE: the share, in parts per million */
  uint32_t move_method;         /* 0 move_pages, 1 mbind(MPOL_MF_MOVE) */
  uint64_t migrate_bytes_per_s; /* measured move bandwidth the planner was given */
  uint64_t fallback_objects;    /* allocations the plan did not know, placed by the fallback */
  uint64_t fallback_bytes;
  uint64_t pinned_objects; /* CUDA host allocations placed at allocation time */
  uint64_t pinned_bytes;
  uint64_t fast_peak_bytes; /* highest fast-tier occupancy of tracked objects seen */
  uint64_t migrated_bytes;  /* both directions, whole run */
  uint64_t late_migrations;
  uint64_t failed_pages;         /* pages move_pages would not move (EBUSY, EFAULT, ENOMEM...) */
  uint64_t raced_frees;          /* objects freed while being moved */
  uint64_t placed_at_birth_fast; /* allocations placed on the fast node at birth by the plan */
  uint64_t placed_at_birth_slow;
}; /* 128 bytes */

#define SENTINEL_PLAN_BIRTH_FAST 0x1u /* born on the fast node */
#define SENTINEL_PLAN_POOL 0x2u       /* short-lived: served from the reserved fast pool */
#define SENTINEL_PLAN_CHUNK 0x4u      /* 1.5: one chunk of an identity planned in chunks (`chunk` says which) */

/* PLAN record: u32 header_size, struct sentinel_plan_header, u32 count, u32 entry_size, entries. */
struct sentinel_plan_header {
  uint32_t phase;
  uint32_t policy; /* enum sentinel_policy */
  uint32_t intervals;
  uint32_t lead_intervals; /* how far ahead move-ins start (the cost model's choice) */
  uint64_t fast_budget_bytes;
  uint64_t footprint_peak_bytes; /* profiled peak of tracked bytes alive in one interval */
  uint64_t fast_peak_bytes;      /* planned peak fast occupancy (<= budget except all-fast) */
  uint64_t fast_pool_bytes;      /* reserved pool for short-lived objects */
  uint64_t moved_bytes_per_step; /* planned, both directions */
  uint32_t predicted_hit_ppm;    /* modeled fast-hit share, parts per million */
  uint32_t flags;                /* SENTINEL_TIER_* as planned (dry run) */
  uint64_t migrate_bytes_per_s;  /* bandwidth the cost model used */
  /* 1.4: the step-time model's costs the planner was given, ns per KiB (0: unknown; older plans read
   * as 0): the extra time of touching a KiB on the slow node, and what moving a KiB costs. */
  uint32_t slow_ns_per_kib;
  uint32_t move_ns_per_kib;
}; /* 80 bytes */

/* Appended to a PLAN record after the interval durations (1.3): u32 size, then this. The runtime's
 * step-time trial: the sentinel policy's moving schedule and the one without moves
 * (SENTINEL_TIER_NO_MOVES), each run for some steps and timed; since 1.6 also the phase re-planned with
 * the bandwidth the migrator achieved under the moving schedule, when that differs from the planned
 * one by 1.5x or more; the fastest is kept. The record's header and entries are the schedule in effect
 * when the dump was written. */
#define SENTINEL_TRIAL_NONE 0u    /* no trial: one candidate (it moves nothing, or the trial is off) */
#define SENTINEL_TRIAL_RUNNING 1u /* under way when the dump was written */
#define SENTINEL_TRIAL_DONE 2u
struct sentinel_plan_trial {
  uint32_t state;               /* SENTINEL_TRIAL_* */
  uint32_t steps_per_candidate; /* timed steps asked for each (SENTINEL_TRIAL_STEPS) */
  uint64_t moving_step_ns;      /* mean of the moving schedule's timed steps (0: none timed) */
  uint64_t fixed_step_ns;       /* mean of the no-move schedule's timed steps (0: none timed) */
  uint64_t moving_moved_bytes;  /* the moving schedule's planned bytes moved per step */
  uint32_t moving_hit_ppm;      /* the candidates' predicted fast-hit shares */
  uint32_t fixed_hit_ppm;
  uint32_t moving_steps; /* steps timed */
  uint32_t fixed_steps;
  /* 1.6: the re-plan with the migrator's measured bandwidth (a third candidate). */
  uint64_t achieved_bytes_per_s; /* the migrator's bandwidth over the moving schedule's steps (0: none) */
  uint64_t replanned_step_ns;    /* mean of the re-planned schedule's timed steps (0: none timed) */
  uint64_t replanned_moved_bytes;
  uint32_t replanned_hit_ppm;
  uint32_t replanned_steps;
  uint32_t replan; /* SENTINEL_REPLAN_* */
  uint32_t kept;   /* SENTINEL_TRIAL_KEPT_*: the schedule in effect (what the record's entries are) */
  /* 1.7: what timed the steps. */
  uint32_t clock; /* SENTINEL_TRIAL_CLOCK_*: the *_step_ns are wall time, or the slow-tier guest's emulated time */
  /* 1.9: the slow-access cost fitted to the schedule in effect, timed in wall time over steady steps
   * (after the trial and the placement check): (measured - modeled base - modeled moves) / its
   * access-weighted bytes on the slow node. */
  uint32_t fit;                 /* SENTINEL_FIT_* (a reserved 0 before 1.9) */
  uint32_t fit_slow_ns_per_kib; /* the fitted cost (SENTINEL_FIT_DONE), else 0 */
  uint32_t fit_steps;           /* steady steps timed */
  uint64_t fit_step_ns;         /* their median duration, wall time (0: none timed) */
  /* 1.10: what a moved KiB cost the training thread, fitted to the trial's moving schedule and the one
   * without moves (wall time): their measured difference less the slow accesses the moves saved, as
   * modeled, over the bytes moved. */
  uint32_t move_fit;            /* SENTINEL_MOVE_FIT_* */
  uint32_t fit_move_ns_per_kib; /* the fitted cost (SENTINEL_MOVE_FIT_DONE), else 0 */
  /* 1.12: the bandwidth watch. Outside the trial (none, or after it) the migrator's bandwidth under the
   * schedule in effect is measured over windows of steps; where no trial measured it, a first window 1.5x
   * off the bandwidth that schedule was planned with re-plans the phase with the measured one, untimed. */
  uint32_t watch;             /* SENTINEL_WATCH_*: the latest window's outcome */
  uint32_t watch_windows;     /* windows measured (whole windows that moved at least 1 MiB) */
  uint64_t watch_bytes_per_s; /* the latest window's bandwidth (0: none measured) */
  uint64_t watch_step;        /* the step the re-plan took effect at, among the phase's (0: none) */
  uint64_t watch_moved_bytes; /* the re-planned schedule's planned bytes moved per step */
  uint32_t watch_hit_ppm;     /* the re-planned schedule's predicted fast-hit share */
  uint32_t watch_follows;     /* 1.13: re-plans for a sustained drift (0 in 1.12) */
}; /* 160 bytes (120 in 1.10 and 1.11, 112 in 1.9, 96 in 1.7 and 1.8, 88 in 1.6, 48 before) */
#define SENTINEL_TRIAL_CLOCK_WALL 0u
#define SENTINEL_TRIAL_CLOCK_EMULATED 1u  /* SENTINEL_TRIAL_CLOCK=emulated: the plugin's counts, priced */
#define SENTINEL_REPLAN_NONE 0u           /* not decided: the moving schedule's steps did not end, or moved nothing */
#define SENTINEL_REPLAN_WITHIN 1u         /* the measured bandwidth was within 1.5x of the planned one: no re-plan */
#define SENTINEL_REPLAN_DONE 2u           /* re-planned with the measured bandwidth, and timed as a third candidate */
#define SENTINEL_REPLAN_SAME 3u           /* re-planned, to the same schedule: not timed again */
#define SENTINEL_REPLAN_FAILED 4u         /* the re-plan could not be made (out of memory, or refused) */
#define SENTINEL_FIT_NONE 0u              /* not fitted yet (steps still to time), or no plan is placed (a dry run) */
#define SENTINEL_FIT_DONE 1u              /* fitted: fit_slow_ns_per_kib */
#define SENTINEL_FIT_LITTLE_SLOW 2u       /* too few access-weighted bytes on the slow node to fit a cost from */
#define SENTINEL_FIT_NO_BASE 3u           /* no modeled base (no interval durations) */
#define SENTINEL_FIT_UNKNOWN_MOVES 4u     /* the schedule moves bytes at an unknown cost */
#define SENTINEL_FIT_AT_BASE 5u           /* the measured steps were no longer than the modeled base and moves */
#define SENTINEL_MOVE_FIT_NONE 0u         /* no trial, or it has not timed both schedules */
#define SENTINEL_MOVE_FIT_DONE 1u         /* fitted: fit_move_ns_per_kib */
#define SENTINEL_MOVE_FIT_FREE 2u         /* the moving schedule was no slower than the slow accesses it saved say */
#define SENTINEL_MOVE_FIT_LITTLE_MOVED 3u /* the moving schedule moves less than 1 MiB a step: noise */
#define SENTINEL_MOVE_FIT_EMULATED 4u     /* the trial was timed in emulated time, the model's costs in wall time */
#define SENTINEL_MOVE_FIT_NO_SLOW_COST 5u /* no slow cost to price the saved accesses at */
#define SENTINEL_TRIAL_KEPT_MOVING 0u
#define SENTINEL_TRIAL_KEPT_FIXED 1u
#define SENTINEL_TRIAL_KEPT_REPLANNED 2u
#define SENTINEL_TRIAL_KEPT_WATCHED 3u /* 1.12: the bandwidth watch's re-plan */
#define SENTINEL_WATCH_NONE 0u         /* no window measured: nothing moves, the trial runs, or no whole window yet */
#define SENTINEL_WATCH_WITHIN 1u       /* the latest window's bandwidth was within 1.5x of the planned one */
#define SENTINEL_WATCH_REPLANNED 2u    /* re-planned with the measured bandwidth: the schedule in effect */
#define SENTINEL_WATCH_SAME 3u         /* re-planned, to the same schedule: nothing changed */
#define SENTINEL_WATCH_FAILED 4u       /* the re-plan could not be made (out of memory, or refused) */
#define SENTINEL_WATCH_DRIFT 5u        /* a later window 1.5x off: recorded, not re-planned */
#define SENTINEL_WATCH_FOLLOWED 6u     /* 1.13: re-planned for a sustained drift: the schedule in effect */

struct sentinel_plan_entry {
  uint32_t identity;
  uint32_t flags;      /* SENTINEL_PLAN_* */
  uint64_t fast_mask;  /* bit i: resident on the fast node during interval i (moves are its edges) */
  uint64_t touch_mask; /* bit i: touched in interval i in the profile */
  /* 1.5 */
  uint32_t chunk; /* the chunk of a chunked identity: one entry per chunk, in order; 0 otherwise */
  uint32_t reserved;
}; /* 32 bytes (24 before 1.5) */

/* MIGRATIONS record: u32 count, u32 entry_size, entries (one per phase and interval). */
struct sentinel_migration_entry {
  uint32_t phase;
  uint32_t interval;
  uint64_t bytes_to_fast; /* summed over the executed steps */
  uint64_t bytes_to_slow;
  uint64_t migrate_ns; /* time inside move_pages/mbind */
  uint32_t moves;      /* objects moved */
  uint32_t late;       /* move-ins that finished after the object's use began */
  uint32_t failed_pages;
  uint32_t steps;          /* steps executed under the plan */
  uint64_t fast_bytes_max; /* fast-tier occupancy of tracked objects at this interval, max over the
                              steady steps (from the plan's third: the first two take over) */
  uint64_t fast_bytes_sum; /* ... summed over steps (mean = sum / steps) */
};                         /* 64 bytes */

#define SENTINEL_MIGRATE_TO_FAST 0x1u
#define SENTINEL_MIGRATE_LATE 0x2u

/* MIGRATION_LOG record: u32 count, u32 entry_size, entries. */
struct sentinel_migration_batch {
  uint64_t start_ns; /* CLOCK_MONOTONIC */
  uint64_t end_ns;
  uint64_t bytes;
  uint32_t phase;
  uint32_t interval; /* the interval the batch was issued for */
  uint32_t objects;
  uint32_t flags; /* SENTINEL_MIGRATE_* */
  uint32_t failed_pages;
  uint32_t reserved;
}; /* 48 bytes */

/* PLACEMENT record: u32 count, u32 entry_size, entries: the placement check (pages asked of the
 * kernel at touch time) per phase and interval. */
struct sentinel_placement_entry {
  uint32_t phase;
  uint32_t interval;
  uint64_t touched_bytes;
  uint64_t fast_bytes; /* of touched_bytes, on the fast node at touch time */
  uint32_t steps;      /* checked steps */
  uint32_t misplaced;  /* objects found, right after the boundary's moves, on the other node than the plan says
                          and than Sentinel's record of them */
  uint32_t verified;   /* objects whose pages were asked where they are at the boundary (the steps after the check) */
  uint32_t reserved;
}; /* 40 bytes */

#define SENTINEL_DETECT_LOCKED 0x1u  /* a step pattern was found */
#define SENTINEL_DETECT_LOST 0x2u    /* a lock was lost and never regained */
#define SENTINEL_DETECT_NO_STEP 0x4u /* tracked allocations, but no step found */
#define SENTINEL_DETECT_SET_UP 0x8u  /* a set-up loop: its steps kept what they allocated (not profiled) */

/* DETECTION record: u32 count, u32 entry_size, entries: one per phase (phase 0: the whole run). */
struct sentinel_detection {
  uint32_t phase;
  uint32_t flags;           /* SENTINEL_DETECT_* */
  uint32_t period;          /* allocations per step */
  uint32_t distinct_tokens; /* distinct (site, size) in the step */
  uint64_t steps;
  uint64_t noise_allocations; /* allocations that fit no identity of the step */
  uint64_t missing_allocations;
  uint64_t locks, unlocks, retracted;
}; /* 64 bytes */

/* CRASH record (1.11): u32 count, u32 entry_size, entries: one, for the crash that ended the process
 * (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT taken at an instruction; docs/format.md, "Crashes"). */
struct sentinel_crash {
  uint32_t signal;  /* the signal's number */
  int32_t code;     /* its si_code: the kernel's fault code (SEGV_MAPERR...), or SI_TKILL for abort() */
  uint64_t address; /* si_addr: the faulting address (0 where the signal has none) */
  uint64_t pc;      /* the instruction */
  uint32_t thread;  /* the crashing thread's id */
  uint32_t site;    /* its stack, from the instruction on, as a site of SITES; UINT32_MAX: none */
};                  /* 32 bytes */

#ifdef __cplusplus
}
#endif
#endif
