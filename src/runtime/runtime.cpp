#include "runtime/runtime.h"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "base/clock.h"
#include "base/config.h"
#include "base/launch.h"
#include "base/lineage.h"
#include "base/log.h"
#include "base/modules.h"
#include "base/numa_ops.h"
#include "base/own_pid.h"
#include "base/parse.h"
#include "base/signal_names.h"
#include "base/thread.h"
#include "base/vm_region.h"
#include "profile/papi_counters.h"
#include "profile/signal_stack.h"
#include "profile/signals.h"
#include "runtime/dump_writer.h"
#include "runtime/exit_signals.h"
#include "runtime/fatal_report.h"
#include "runtime/runtime_state.h"
#include "runtime/snapshot_thread.h"
#include "tier/topology.h"
#include "track/arena.h"
#include "track/drain_thread.h"
#include "track/registry.h"
#include "track/site.h"

extern "C" {
void* __libc_malloc(size_t);
void __libc_free(void*);
}

namespace sentinel::rt {

std::atomic<uint64_t> g_min_bytes{UINT64_MAX};
uintptr_t g_arena_base = 0;
uintptr_t g_arena_span = 0;

namespace {

// The profiler's touch log: 16 Mi touches of 12 bytes, backed only as used (a 330M-parameter GPT's two
// profiled steps record ~5 Mi at 8 KiB; docs/performance.md, "Realistic models").
constexpr uint64_t kTouchLogCapacity = uint64_t{1} << 24;

constinit thread_local uint32_t t_tid __attribute__((tls_model("initial-exec"))) = 0;
// The thread's ring, log chunk and slot cache (thread_state.h); null until its first tracked operation.
constinit thread_local ThreadState* t_state __attribute__((tls_model("initial-exec"))) = nullptr;
// The thread's state was retired (its pthread key destructor ran): later calls take the direct path.
constinit thread_local bool t_state_retired __attribute__((tls_model("initial-exec"))) = false;

inline uint32_t this_thread_id() {
  if (!t_tid) t_tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return t_tid;
}

// Everything lives in one zero-initialised static object: no constructors run before ours, and the
// state stays valid after the dump, so frees that arrive late (other libraries' destructors) work.
// Never destroyed: libraries finalised after this one still allocate and free (and other threads may
// run on while exit() proceeds), so nothing here may be torn down by a static destructor.
union NeverDestroyed {
  RuntimeState value;
  constexpr NeverDestroyed() : value() {}
  ~NeverDestroyed() {}
};
constinit NeverDestroyed g_state_storage;
RuntimeState& g_state = g_state_storage.value;
constinit std::atomic<int> g_init_state{0};  // 0 not started, 1 in progress, 2 done
std::atomic<int> g_dumped{0};
std::atomic<int> g_invalid_free_reported{0};
constinit DrainThread g_drain_thread;
constinit SnapshotThread g_snapshot_thread;
std::atomic<bool> g_drain_thread_tried{false};  // a failure was reported
pthread_key_t g_state_key;
bool g_state_key_ok = false;
// glibc's code: memory it allocates for itself (stdio buffers) is handed to the kernel by internal
// calls that no hook sees, so the profiler must never protect it.
uintptr_t g_libc_lo = 0, g_libc_hi = 0;
bool g_stepping = false;  // the step detector runs (every mode but off)

bool on_fault(void* address) {
  return g_state.profiler.handle_fault(address);
}

// This thread holds the sequencer's lock across fork(), with no drain under way: an exit signal taken
// inside fork() (a child that signals its parent at once) may sequence under it instead of waiting.
constinit thread_local bool t_forking __attribute__((tls_model("initial-exec"))) = false;

void fork_prepare() {
  if (!g_stepping) return;
  g_state.sequencer.lock();
  t_forking = true;
}
void fork_parent() {
  if (!g_stepping) return;
  t_forking = false;
  g_state.sequencer.unlock();
}

// The pthread key destructor of a thread's state: its kept slots go back to the arena and the
// sequencer recycles the state once its ring is drained. Frees that arrive later on this thread (other
// libraries' thread destructors) take the direct path.
void retire_thread_state(void* p) {
  auto* ts = static_cast<ThreadState*>(p);
  Guard guard;
  sig::release_thread_stack();  // a cancelled thread ends here, not through thread_ending()
  g_state.arena.flush(&ts->cache);
  t_state = nullptr;
  t_state_retired = true;
  g_state.threads.retire(ts);
}

ThreadState* this_thread_state() {
  if (__builtin_expect(t_state != nullptr, 1)) return t_state;
  if (t_state_retired || !g_state_key_ok) return nullptr;
  ThreadState* ts = g_state.threads.claim(this_thread_id());
  if (!ts) return nullptr;
  t_state = ts;
  pthread_setspecific(g_state_key, ts);
  return ts;
}

void write_signal_snapshot();
void write_periodic_snapshot();

// The snapshot signal's and the periodic snapshots' thread: with the drain thread, when the process
// first has events to sequence.
void start_snapshot_thread() {
  const Config& c = g_state.config;
  if (g_snapshot_thread.start(write_signal_snapshot, write_periodic_snapshot, c.snapshot_every_s * 1'000'000'000))
    return;
  LineBuf b;
  b.str("cannot start Sentinel's snapshot thread (").str(strerror(errno)).str("); ");
  if (c.snapshot_signal) b.str(signal_name(c.snapshot_signal)).str(" writes no snapshot");
  if (c.snapshot_signal && c.snapshot_every_s) b.str(", and ");
  if (c.snapshot_every_s) b.str("no periodic snapshot is written (SENTINEL_SNAPSHOT_EVERY)");
  log_line(LogLevel::warn, b);
}

// Sentinel's thread starts when the process that loaded the library has events to sequence.
void maybe_start_drain_thread() {
  if (getpid() != g_state.owner_pid) return;  // a vfork child shares our memory: never a thread there
  if ((g_state.config.snapshot_signal || g_state.config.snapshot_every_s) && !g_snapshot_thread.started())
    start_snapshot_thread();
  if (!g_drain_thread.start(&g_state.sequencer) && !g_drain_thread_tried.exchange(true)) {
    LineBuf b;
    b.str("cannot start Sentinel's thread (")
        .str(strerror(errno))
        .str("); allocating threads sequence their own events");
    log_line(LogLevel::warn, b);
  }
}

// Hands an event to the sequencer. The steady state is one store to the thread's own ring; the ring
// is drained here only when it is full, when the sequencer must run synchronously (no Sentinel thread,
// a profiling window), or for a thread without a ring.
void publish(ThreadState* ts, const TrackEvent& e) {
  Sequencer& q = g_state.sequencer;
  if (!ts) {
    bump(g_state.counters.threads_without_state);
    q.lock();
    q.drain();
    q.process_direct(e);
    q.unlock();
  } else {
    while (!ts->push(e)) {
      q.count_full_ring();
      if (q.try_lock()) {
        q.drain();
        q.unlock();
      } else {
        sched_yield();  // someone drains right now
      }
    }
    // Sentinel's thread may be asleep until the next event: the fence orders the push before the look
    // (drain_thread.cpp, sleep_until_published), so either it sees this event or this sees it asleep.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (__builtin_expect(g_drain_thread.dormant(), 0)) g_drain_thread.wake_if_dormant();
    // Synchronous: sequence before returning, unless another thread is doing it (it, or the next
    // allocation, picks this event up). Never wait here: the holder may need a glibc lock this thread holds.
    if (q.sync_required()) {
      if (g_drain_thread.should_start() && q.thread_would_help()) maybe_start_drain_thread();
      if (q.try_lock()) {
        q.count_sync_drain();
        q.drain();
        q.unlock();
      }
    }
  }
  if (__builtin_expect(g_state.stepper.counters_requested(), 0)) g_state.stepper.attach_counters_here();
}

// The time stamp of a tracked allocation or free: exact while the sequencer runs synchronously (a
// profiling window, where interval durations matter), else the coarse clock (clock.h).
inline uint64_t event_ticks() {
  return g_state.sequencer.sync_required() ? now_ticks() : stamp_ticks();
}

uint32_t take_log_index(ThreadState* ts, const sentinel_object& o) {
  if (!ts) return g_state.log.append(o);
  if (ts->log_next == ts->log_end) {
    uint32_t got = 0;
    uint32_t first = g_state.log.reserve(64, &got);
    if (first == kNoLogIndex) {
      g_state.log.count_dropped();
      return kNoLogIndex;
    }
    ts->log_next = first;
    ts->log_end = first + got;
  }
  uint32_t i = ts->log_next++;
  *g_state.log.at(i) = o;
  return i;
}

uint32_t capture_site(Caller caller) {
  return g_state.site_cache.site_for(caller.ra, caller.sp, g_state.unwinder, g_state.sites);
}

void report_config_error(const ConfigError& err) {
  LineBuf b;
  b.str(err.name).chr('=').str(err.value).str(": ").str(err.reason).str("; running in pass-through");
  log_line(LogLevel::error, b);
}

// The executable's base name, for %e.
void read_exe_name(char* out, size_t cap) {
  char path[1024];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  const char* base = "unknown";
  if (n > 0) {
    path[n] = '\0';
    const char* slash = strrchr(path, '/');
    base = slash ? slash + 1 : path;
  }
  size_t len = strlen(base);
  if (len >= cap) len = cap - 1;
  memcpy(out, base, len);
  out[len] = '\0';
}

// SENTINEL_EXCLUDE and SENTINEL_INCLUDE (docs/config.md, "Which processes write a dump").
bool meant_to_run(const Config& cfg, const char* exe) {
  if (cfg.include[0]) return name_list_matches(cfg.include, exe);
  return !name_list_matches(cfg.exclude, exe);
}

// Why this process writes no dump (null: it writes one). A process started by another one under Sentinel
// (a compile worker, a launcher's child) writes its dump only when it found a training step or
// SENTINEL_INCLUDE names it; any process only when it tracked an object. The one the user started writes
// one unless it found no step while processes it started wrote theirs (children_dumped): a launcher
// (torchrun's, which imports torch and tracks a few objects, but trains nothing).
const char* why_no_dump(bool children_dumped) {
  if (g_state.sequencer.allocations() == 0) return "no object was tracked";
  const bool stepped = g_state.stepper.steps().size() > 0;
  if (g_state.config.include[0] || stepped) return nullptr;
  if (g_state.started_by_sentinel_process)
    return "no training step found in a process started by another under Sentinel";
  if (children_dumped)
    return "no training step found here, and the processes it started wrote their dumps (a launcher)";
  return nullptr;
}

// The dump's directory must be writable now, and its file must not exist yet (dumps are never
// overwritten): said at start, not at exit when the run's dump would be lost.
bool dump_path_usable(const char* tmpl, const char** why) {
  *why = nullptr;
  if (!*tmpl) return true;
  char path[1024];
  if (!expand_dump_path(tmpl, getpid(), g_state.exe_name, g_state.launch.rank, path, sizeof(path))) return false;
  if (access(path, F_OK) == 0) {
    *why = "the file already exists (a dump is never overwritten)";
    return false;
  }
  char* slash = strrchr(path, '/');
  if (!slash) return access(".", W_OK | X_OK) == 0;
  if (slash == path) return access("/", W_OK | X_OK) == 0;
  *slash = '\0';
  return access(path, W_OK | X_OK) == 0;
}

// An exit signal or a crash ends the process (exit_signals.h, fatal_report.h): the dump is written
// first, marked with it.
void end_by_signal(int signum) {
  g_state.end_signal = signum;
  at_exit();
}

void setup(const char* const* envp, bool for_tests) {
  Guard guard;
  g_state.clock.start();
  ConfigError err;
  int unknown = 0;
  const char* first_unknown = nullptr;
  Config cfg;
  if (!parse_config(envp, &cfg, &err, &unknown, &first_unknown)) {
    report_config_error(err);
    g_state.mode = Mode::off;
    return;
  }
  g_state.config = cfg;
  set_log_level(cfg.log);
  if (unknown) {
    LineBuf b;
    const char* eq = strchr(first_unknown, '=');
    b.str("unknown variable ").str(first_unknown, eq ? static_cast<size_t>(eq - first_unknown) : strlen(first_unknown));
    if (unknown > 1) b.str(" (and ").i64(unknown - 1).str(" more)");
    b.str(" ignored; see docs/config.md");
    log_line(LogLevel::warn, b);
  }
  g_state.mode = cfg.mode;
  if (cfg.mode == Mode::off) return;

  read_exe_name(g_state.exe_name, sizeof(g_state.exe_name));
  if (!meant_to_run(cfg, g_state.exe_name)) {  // a compiler or a helper: pass-through, silently
    g_state.mode = Mode::off;
    return;
  }
  g_state.started_by_sentinel_process = parent_maps_object_of(reinterpret_cast<const void*>(&setup));
  const char* why = nullptr;
  if (!dump_path_usable(cfg.dump, &why)) {
    LineBuf b;
    b.str("SENTINEL_DUMP=").str(cfg.dump).str(": ");
    if (why)
      b.str(why);
    else
      b.str("directory is not writable (").str(strerror(errno)).chr(')');
    b.str("; running in pass-through");
    log_line(LogLevel::error, b);
    g_state.mode = Mode::off;
    return;
  }
  if (!g_state.arena.init(cfg.retain_bytes, true) || !g_state.log.init(cfg.max_objects) || !g_state.sites.init() ||
      !g_state.external.init() || !g_state.marks.init() || !g_state.site_cache.init() ||
      !g_state.profiler.init(&g_state.arena, static_cast<uint32_t>(cfg.profile_granularity), cfg.profile_sweep,
                             kTouchLogCapacity,
                             make_page_sample(static_cast<uint32_t>(cfg.profile_sample), cfg.profile_sample_min,
                                              cfg.chunk_bytes, static_cast<uint32_t>(cfg.profile_granularity))) ||
      !g_state.stepper.init(cfg, &g_state.profiler, &g_state.log, &g_state.tiering, &g_state.clock) ||
      !g_state.threads.init() ||
      !g_state.sequencer.init(&g_state.log, &g_state.marks, &g_state.stepper, &g_state.threads, &g_state.arena,
                              cfg.max_objects)) {
    LineBuf b;
    b.str("cannot map the arena and bookkeeping memory (").str(strerror(errno)).str("); running in pass-through");
    log_line(LogLevel::error, b);
    g_state.mode = Mode::off;
    return;
  }
  uintptr_t lo = 0, hi = 0;
  if (!for_tests) ModuleTable::text_range_of(reinterpret_cast<const void*>(&setup), &lo, &hi);
  ModuleTable::text_range_of(reinterpret_cast<const void*>(&__libc_malloc), &g_libc_lo, &g_libc_hi);
  UnwindMethod m = g_state.unwinder.init(cfg.unwind, lo, hi);
  if (m != cfg.unwind)
    log_line(LogLevel::warn, "libunwind.so.8 could not be loaded; allocation sites come from glibc backtrace()");
  detect_topology(&g_state.topology);
  g_state.modules.refresh();
  g_state.owner_pid = getpid();
  note_own_pid();
  note_start_cpus();
  g_state.start_mono_ns = monotonic_ns();
  g_state.start_real_ns = realtime_ns();
  if (g_state.topology.numa_balancing > 0 && g_state.topology.slow_node >= 0) {
    log_line(LogLevel::warn,
             "kernel.numa_balancing is on: the kernel will move pages off the slow node behind Sentinel's back");
  }
  g_state.launch = read_launch(envp);
  g_state.tiering.init(cfg, g_state.topology, g_state.launch.sharing(), &g_state.arena, &g_state.log, &g_state.clock);
  g_stepping = true;
  g_state_key_ok = pthread_key_create(&g_state_key, retire_thread_state) == 0;
  arm_fatal_report(&g_state, lo, hi, end_by_signal);
  if ((cfg.mode == Mode::profile || cfg.mode == Mode::run) && !sig::install(on_fault)) {
    log_line(LogLevel::error, "cannot install the SIGSEGV handler; profiling is off, tracking goes on");
    g_state.mode = Mode::track;
    g_state.config.mode = Mode::track;
    g_state.stepper.init(g_state.config, &g_state.profiler, &g_state.log, &g_state.tiering, &g_state.clock);
  }
  g_arena_base = g_state.arena.base();
  g_arena_span = g_state.arena.span();
  g_min_bytes.store(cfg.min_bytes, std::memory_order_release);
  LineBuf b;
  b.str("tracking objects of at least ").bytes(cfg.min_bytes).str(", ").u64(g_state.topology.node_count);
  b.str(" NUMA node(s)");
  log_line(LogLevel::info, b);
}

void fork_child_handler() {
  t_forking = false;
  if (g_stepping) g_state.sequencer.unlock();
  after_fork_child();
}

// The snapshot signal's handler (exit_signals.h), async-signal-safe: in the process that writes the dump
// the snapshot thread serves it (at once, or when it starts). A forked child (a DataLoader worker) has no
// such thread and writes nothing, but takes the signal too: the user gave it to Sentinel for the job, and
// `pkill -USR1 -f train.py` must not end the workers of the run it asks a snapshot of.
void request_snapshot(int) {
  if (getpid() == g_state.owner_pid) g_snapshot_thread.request();
}

void warn_if_no_snapshot_signal() {
  const int signum = g_state.config.snapshot_signal;
  if (!signum || exit_sig::stands_in(signum)) return;
  LineBuf b;
  b.str("SENTINEL_SNAPSHOT_SIGNAL: ").str(signal_name(signum));
  b.str(" is ignored or handled already at start (a disposition inherited over exec); it writes no snapshot");
  log_line(LogLevel::warn, b);
}

}  // namespace

void init(char** envp) {
  int expected = 0;
  if (!g_init_state.compare_exchange_strong(expected, 1)) return;
  setup(envp, false);
  if (g_state.mode != Mode::off) {
    pthread_atfork(fork_prepare, fork_parent, fork_child_handler);
    at_quick_exit(at_exit);  // glibc's quick_exit ends with an internal _exit no interposer sees
    const bool crash_handler_segv = !sig::installed();
    exit_sig::install(sig::real_sigaction(), {end_by_signal, report_crash, request_snapshot}, crash_handler_segv,
                      g_state.config.snapshot_signal);
    warn_if_no_snapshot_signal();
    // In track mode the crash handler stands in for SIGSEGV: the stack the profiler would have given
    // this thread (its callers get theirs from pthread_create), so that a stack overflow keeps the dump.
    if (crash_handler_segv) sig::give_thread_stack();
  }
  g_init_state.store(2);
}

void init_for_tests(const char* const* envp) {
  int expected = 0;
  if (!g_init_state.compare_exchange_strong(expected, 1)) return;
  setup(envp, true);
  g_init_state.store(2);
}

void* allocate(size_t size, size_t alignment, bool zero, Caller caller) {
  if (size == 0) return nullptr;
  Guard guard;
  int saved_errno = errno;
  size_t align = alignment < 16 ? 16 : alignment;
  if (align > (size_t{1} << 30)) return nullptr;
  size_t need = size + (align > kPageSize ? align - kPageSize : 0);
  if (need < size) return nullptr;
  ThreadState* ts = this_thread_state();
  uint32_t site = capture_site(caller);
  bool reserved = false;
  uint8_t tier = g_state.tiering.enabled() ? g_state.tiering.birth_tier(site, size, &reserved) : kTierFast;
  unsigned cls;
  uint32_t index;
  bool dirty;
  void* slot = g_state.arena.acquire(need, &cls, &index, &dirty, ts ? &ts->cache : nullptr, tier, &tier);
  if (!slot) {
    if (reserved) g_state.tiering.cancel(size);
    (class_of(need) < 0 ? g_state.counters.fallback_too_large : g_state.counters.fallback_class_full)
        .fetch_add(1, std::memory_order_relaxed);
    errno = saved_errno;
    return nullptr;
  }
  uintptr_t user = (reinterpret_cast<uintptr_t>(slot) + align - 1) & ~(uintptr_t{align} - 1);
  if (zero && dirty) memset(reinterpret_cast<void*>(user), 0, size);

  sentinel_object o{};
  o.address = user;
  o.size = size;
  o.birth_ns = event_ticks();  // converted to nanoseconds when the dump is written
  o.birth_seq = UINT64_MAX;    // the sequencer gives it its place in the allocation clock
  o.death_seq = UINT64_MAX;
  o.site = site;
  o.thread = this_thread_id();
  o.alignment = static_cast<uint32_t>(align);
  o.kind = SENTINEL_KIND_HEAP;
  uint32_t li = take_log_index(ts, o);

  if (g_stepping) {
    publish(ts, TrackEvent{o.birth_ns, static_cast<int64_t>(size), o.site, li, o.thread, kEventAlloc,
                           static_cast<uint16_t>(tier | (reserved ? Tiering::kReserved : 0))});
  }

  Slot* s = g_state.arena.slot(cls, index);
  s->size.store(size, std::memory_order_relaxed);
  s->log_index.store(li, std::memory_order_relaxed);
  s->user.store(user, std::memory_order_release);
  // While profiling, a new object is protected too, so that its creator's first touch is recorded.
  // calloc's zeroing above has already happened.
  bool from_libc = caller.ra - g_libc_lo < g_libc_hi - g_libc_lo;
  s->no_protect.store(from_libc ? 1 : 0, std::memory_order_relaxed);
  if (g_state.profiler.recording()) g_state.profiler.protect_new(cls, index, user, size);
  errno = saved_errno;
  return reinterpret_cast<void*>(user);
}

namespace {
// Growing a large object: move its pages to the new slot with mremap instead of copying them (glibc
// does the same for its mmapped chunks), then put fresh pages back under the old slot so that the
// arena's reservation stays whole. Only for page-aligned objects at the start of their slot; false
// (the caller copies) in every other case or when the kernel refuses (e.g. pages split by the profiler).
bool move_pages_between_slots(void* from, void* to, uint64_t old_size, size_t keep, bool* hole) {
  constexpr uint64_t kMinMove = 1u << 20;
  auto f = reinterpret_cast<uintptr_t>(from), t = reinterpret_cast<uintptr_t>(to);
  if (old_size < kMinMove || keep < old_size || (f | t) & (kPageSize - 1)) return false;
  size_t len = (old_size + kPageSize - 1) & ~(kPageSize - 1);
  int saved = errno;
  void* moved = mremap(from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to);
  if (moved == MAP_FAILED) {
    errno = saved;
    return false;
  }
  void* refill =
      mmap(from, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  errno = saved;
  *hole = refill == MAP_FAILED;
  if (*hole) log_line(LogLevel::warn, "realloc: could not refill a moved slot; it is retired");
  return true;
}

void report_invalid_free(const void* p) {
  g_state.counters.invalid_frees.fetch_add(1, std::memory_order_relaxed);
  if (g_invalid_free_reported.exchange(1)) return;
  LineBuf b;
  b.str("free() of ").hex(reinterpret_cast<uintptr_t>(p));
  b.str(", which is not a live object (double free or bad pointer); ignored (reported once)");
  log_line(LogLevel::error, b);
}

void finish_object(uint32_t li, uint64_t size) {
  uint64_t now = event_ticks();
  uint16_t flags = 0;
  if (li != kNoLogIndex) {
    sentinel_object* e = g_state.log.at(li);
    // The coarse clock may lag an exact birth stamp: a death is never before its birth.
    if (now < e->birth_ns) now = e->birth_ns;
    e->death_ns = now;  // death_seq: the sequencer's
    if (e->thread != this_thread_id()) e->flags |= SENTINEL_OBJ_FREED_BY_OTHER_THREAD;
    if (g_stepping && g_state.tiering.enabled()) flags = g_state.tiering.free_credit(li, e->address);
  }
  if (g_stepping)
    publish(this_thread_state(),
            TrackEvent{now, -static_cast<int64_t>(size), 0, li, this_thread_id(), kEventFree, flags});
}
}  // namespace

void release(void* p) {
  Guard guard;
  int saved_errno = errno;
  unsigned cls;
  uint32_t index;
  Slot* s = g_state.arena.locate(p, &cls, &index);
  uintptr_t expected = reinterpret_cast<uintptr_t>(p);
  if (!s || !s->user.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) {
    report_invalid_free(p);
    errno = saved_errno;
    return;
  }
  finish_object(s->log_index.load(std::memory_order_relaxed), s->size.load(std::memory_order_relaxed));
  g_state.profiler.unprotect_slot(cls, index);
  ThreadState* ts = this_thread_state();
  g_state.arena.release(cls, index, ts ? &ts->cache : nullptr);
  errno = saved_errno;
}

size_t usable_size(const void* p) {
  unsigned cls;
  uint32_t index;
  Slot* s = g_state.arena.locate(p, &cls, &index);
  if (!s || s->user.load(std::memory_order_acquire) != reinterpret_cast<uintptr_t>(p)) return 0;
  return g_state.arena.slot_address(cls, index) + class_size(cls) - reinterpret_cast<uintptr_t>(p);
}

void* reallocate(void* p, size_t n, Caller caller) {
  if (n == 0) {
    release(p);
    return nullptr;
  }
  size_t usable = usable_size(p);
  if (!usable) {
    report_invalid_free(p);
    errno = ENOMEM;
    return nullptr;
  }
  uint64_t min = g_min_bytes.load(std::memory_order_relaxed);
  unsigned cls;
  uint32_t index;
  Slot* s = g_state.arena.locate(p, &cls, &index);
  uint64_t old = s->size.load(std::memory_order_relaxed);
  // In place whenever it fits; a shrink below half the slot gives the tail's pages back.
  if (n >= min && n <= usable) {
    s->size.store(n, std::memory_order_relaxed);
    if (g_stepping && n != old) {
      Guard guard;
      publish(this_thread_state(),
              TrackEvent{now_ticks(), static_cast<int64_t>(n) - static_cast<int64_t>(old), 0,
                         s->log_index.load(std::memory_order_relaxed), this_thread_id(), kEventResize, 0});
    }
    uint32_t li = s->log_index.load(std::memory_order_relaxed);
    if (li != kNoLogIndex) g_state.log.at(li)->size = n > g_state.log.at(li)->size ? n : g_state.log.at(li)->size;
    if (n < usable / 2) {
      uintptr_t tail = (reinterpret_cast<uintptr_t>(p) + n + kPageSize - 1) & ~(uintptr_t{kPageSize} - 1);
      uintptr_t end = reinterpret_cast<uintptr_t>(p) + usable;
      int saved = errno;
      if (end > tail) madvise(reinterpret_cast<void*>(tail), end - tail, MADV_DONTNEED);
      errno = saved;
    }
    bump(g_state.counters.realloc_in_place);
    return p;
  }
  void* q = n >= min && !t_guard ? allocate(n, 0, false, caller) : nullptr;
  if (!q) {
    q = __libc_malloc(n);
    if (!q) {
      errno = ENOMEM;
      return nullptr;
    }
  }
  size_t keep = n < usable ? n : usable;
  bool hole = false;
  // mremap carries the pages' protection along: never while the profiler may have protected any.
  bool may_move = owns(q) && !g_state.profiler.armed() && !s->protect.load(std::memory_order_acquire);
  if (!(may_move && move_pages_between_slots(p, q, old, keep, &hole))) memcpy(q, p, keep);
  bump(g_state.counters.realloc_moved);
  if (hole) {  // the object ends, its slot is never handed out again
    uintptr_t expected = reinterpret_cast<uintptr_t>(p);
    if (s->user.compare_exchange_strong(expected, 0)) finish_object(s->log_index.load(), old);
    return q;
  }
  release(p);
  return q;
}

static_assert(sizeof(PinnedPlacement::saved) >= sizeof(numa::SavedPolicy));

void prepare_pinned(size_t size, Caller caller, PinnedPlacement* out) {
  *out = PinnedPlacement{};
  if (g_state.mode == Mode::off || g_init_state.load() != 2 || t_guard) return;
  Guard guard;
  int saved_errno = errno;
  out->site = capture_site(caller);
  out->node = g_state.tiering.pinned_node(out->site, size);
  if (out->node >= 0 && !numa::push_preference(out->node, reinterpret_cast<numa::SavedPolicy*>(out->saved)))
    out->node = -1;
  errno = saved_errno;
}

void note_cuda_host_alloc(void* p, size_t size, Caller caller, PinnedPlacement* placement) {
  if (placement && placement->node >= 0) numa::pop_preference(*reinterpret_cast<numa::SavedPolicy*>(placement->saved));
  if (g_state.mode == Mode::off || !p || g_init_state.load() != 2) return;
  Guard guard;
  int saved_errno = errno;
  sentinel_object o{};
  o.address = reinterpret_cast<uintptr_t>(p);
  o.size = size;
  o.birth_ns = now_ticks();
  o.birth_seq = UINT64_MAX;
  o.death_seq = UINT64_MAX;
  o.site = placement && placement->site != UINT32_MAX ? placement->site : capture_site(caller);
  o.thread = this_thread_id();
  o.alignment = static_cast<uint32_t>(kPageSize);
  o.kind = SENTINEL_KIND_CUDA_HOST;
  // Where its first page landed (the driver may have ignored the preference): the tier it counts in.
  uint8_t tier = kTierFast;
  if (placement && placement->node >= 0) {
    int node = numa::node_of_page(o.address & ~(uintptr_t{kPageSize} - 1));
    tier = node == g_state.tiering.slow_node() ? kTierSlow : kTierFast;
    if (node >= 0 && node != placement->node) bump(g_state.counters.pinned_misplaced);
  }
  ThreadState* ts = this_thread_state();
  uint32_t li = take_log_index(ts, o);
  g_state.counters.cuda_host_allocations.fetch_add(1, std::memory_order_relaxed);
  // Without a log entry the size is unknown at free time: such objects stay out of live_bytes.
  bool known = li != kNoLogIndex && g_state.external.insert(o.address, li);
  if (g_stepping)
    publish(ts,
            TrackEvent{o.birth_ns, known ? static_cast<int64_t>(size) : 0, o.site, li, o.thread, kEventAlloc, tier});
  errno = saved_errno;
}

void note_cuda_host_free(void* p) {
  if (g_state.mode == Mode::off || !p || g_init_state.load() != 2) return;
  Guard guard;
  int saved_errno = errno;
  uint32_t li = g_state.external.erase(reinterpret_cast<uintptr_t>(p));
  if (li != kNoLogIndex) finish_object(li, g_state.log.at(li)->size);
  g_state.counters.cuda_host_frees.fetch_add(1, std::memory_order_relaxed);
  errno = saved_errno;
}

void after_dlopen() {
  if (g_init_state.load() != 2 || g_state.mode == Mode::off) return;
  Guard guard;
  g_state.modules.refresh();
}

void after_fork_child() {
  note_own_pid();
  t_tid = 0;
  papi::forget_after_fork();
  sig::reset_after_fork();
  if (g_stepping) {
    // The child is single-threaded: Sentinel's thread and every other thread's state stay behind.
    g_drain_thread.forget();
    g_snapshot_thread.forget();
    g_state.sequencer.after_fork_child(t_state);
    if (t_state) t_state->tid = this_thread_id();
  }
  // Run mode profiles too. The child places nothing and moves nothing: the migrator thread stayed
  // behind with the parent, and the child's allocations are not the parent's step.
  if (g_state.mode == Mode::profile || g_state.mode == Mode::run) g_state.profiler.after_fork_child();
  g_state.tiering.after_fork_child();
}

bool io_protection_armed() {
  return g_state.profiler.armed();
}

uint32_t io_pin(const void* p, size_t n, IoPin* out, uint32_t cap) {
  static_assert(sizeof(IoPin) == sizeof(Profiler::Pinned));
  return g_state.profiler.pin_range(p, n, reinterpret_cast<Profiler::Pinned*>(out), cap);
}

void io_unpin(const IoPin* pins, uint32_t count) {
  g_state.profiler.unpin(reinterpret_cast<const Profiler::Pinned*>(pins), count);
}

namespace {
// What a dump reads beside the sequencer's state, brought up to now: the tick-to-ns line and the drain
// thread's counts. The exit's dump and a snapshot share it; the loader's module list is refreshed by each
// before it takes the sequencer's lock (dl_iterate_phdr waits on the loader's lock, whose holder may be
// waiting to sequence).
void settle_counts_for_dump() {
  g_state.clock.finish();
  g_state.counters.drain_wakeups = g_drain_thread.wakeups();
  g_state.counters.drain_dormant_wakes = g_drain_thread.dormant_wakes();
}
}  // namespace

void at_exit() {
  if (g_init_state.load() != 2 || g_state.mode == Mode::off) return;
  pid_t pid = getpid();
  if (pid != g_state.owner_pid && !g_state.config.dump_children) return;
  if (g_dumped.exchange(1)) return;
  // Called from inside the runtime (a signal handler's exit while this thread sequences): the lock may be
  // this thread's own, so do not wait for it. Otherwise its holder is another thread, the drain thread
  // most often, which lets go unless it was preempted; a dump without the rings' last events loses the
  // objects they hold, so wait for it a while.
  const bool nested = t_guard != 0;
  Guard guard;
  int saved_errno = errno;
  g_state.modules.refresh();
  // No page moves while the dump is written: the migrator ends after the batch it is in.
  g_state.tiering.before_main_exit();
  // Sequence what the rings still hold, close the last step and any profiling window.
  const bool held_here = t_forking;
  if (g_stepping && (held_here || g_state.sequencer.try_lock_within(nested ? 1'000'000 : 2'000'000'000))) {
    g_drain_thread.stop();
    g_state.sequencer.drain();
    g_state.stepper.finish(g_state.sequencer.allocations(), now_ticks());
    if (!held_here) g_state.sequencer.unlock();
  } else if (g_stepping) {
    log_line(LogLevel::error,
             "exit: the event sequencer's lock stayed held; the dump lacks the objects of events not sequenced yet");
  }
  if (uint64_t failed = sig::stack_stats().failures) {
    LineBuf b;
    b.str("signal stacks: ")
        .u64(failed)
        .str(
            " thread(s) ran without an alternate signal stack of Sentinel's (mmap or sigaltstack failed): their "
            "faults ran on their own stack, and a stack overflow there ends with no dump");
    log_line(LogLevel::warn, b);
  }
  settle_counts_for_dump();
  // Read (and removed) whatever this process does with it: a mark left for a parent that writes its dump
  // anyway (it trained, or SENTINEL_INCLUDE names it) would stay in /dev/shm for good.
  const bool children_dumped = children_marked_dumps();
  if (const char* why = why_no_dump(children_dumped)) {
    LineBuf b;
    b.str(why).str("; no dump written");
    log_line(LogLevel::info, b);
    remove_latest_snapshot(g_state, pid);
  } else if (write_dump(g_state, pid)) {
    // The periodic snapshot was for an end that writes no dump (SIGKILL, the OOM killer); one that
    // fails to write keeps it.
    remove_latest_snapshot(g_state, pid);
    if (g_state.started_by_sentinel_process) mark_dump_for_parent();
  }
  errno = saved_errno;
}

void before_thread_exit() {
  if (g_init_state.load() != 2 || g_state.mode == Mode::off) return;
  if (static_cast<pid_t>(this_thread_id()) != getpid()) return;  // only the main thread's exit matters
  Guard guard;
  // A process ends when its last thread does: Sentinel's threads must not outlive the main one.
  g_drain_thread.stop_and_join();
  g_snapshot_thread.stop_and_join();
  g_state.tiering.before_main_exit();
}

void thread_started() {
  if (wants_thread_start()) sig::give_thread_stack();
}

void thread_ending() {
  sig::release_thread_stack();
}

// Every mode but off installs a SIGSEGV handler of Sentinel's (the profiler's, or the crash handler's in
// track mode), which a stack overflow can run only on an alternate stack.
bool wants_thread_start() {
  return g_init_state.load(std::memory_order_acquire) == 2 && g_state.mode != Mode::off;
}

void mark_step() {
  if (g_init_state.load() != 2 || g_state.mode == Mode::off) return;
  Guard guard;
  g_state.counters.steps_marked.fetch_add(1, std::memory_order_relaxed);
  // In order with this thread's own allocations: the mark belongs before its next one.
  if (g_stepping)
    publish(this_thread_state(), TrackEvent{now_ticks(), 0, 0, kNoLogIndex, this_thread_id(), kEventMark, 0});
}

int get_stats(sentinel_stats* out) {
  memset(out, 0, sizeof(*out));
  if (g_init_state.load() != 2 || g_state.mode == Mode::off) return -1;
  Guard guard;
  Sequencer& q = g_state.sequencer;
  q.lock();
  q.drain();  // what the caller did so far is counted
  const SequencerStats& st = q.stats();
  out->tracked_allocations = st.allocations;
  out->tracked_frees = st.frees;
  out->live_bytes = st.live_bytes > 0 ? static_cast<uint64_t>(st.live_bytes) : 0;
  out->peak_live_bytes = st.peak_live_bytes;
  q.unlock();
  out->overhead_bytes = overhead_bytes(g_state);
  out->steps_marked = g_state.counters.steps_marked.load();
  return 0;
}

namespace {
// Who asked for a snapshot: the program (sentinel_dump()), the snapshot signal from outside, which
// `pkill -USR1 -f train.py` also sends to a launcher or helper that trains nothing, or the period
// (SENTINEL_SNAPSHOT_EVERY), which every process under the library has.
enum class SnapshotBy { program, signal, period };

// sentinel_dump()'s work, and the snapshot signal's. The line naming the file is at info for the
// program's call, at warn (the default level) for the signal: its sender reads it there.
int snapshot_now(const char* path, SnapshotBy by) {
  static std::atomic<uint32_t> snapshots{0};
  auto fail = [](int error) {
    errno = error;
    return -1;
  };
  if (g_init_state.load() != 2 || g_state.mode == Mode::off || g_dumped.load()) return fail(ENOTSUP);
  if (getpid() != g_state.owner_pid && !g_state.config.dump_children) return fail(ENOTSUP);
  // From a signal handler that interrupted this thread inside Sentinel's own work: its state is halfway
  // through a change, and the sequencer's lock may be this thread's own.
  if (t_guard) return fail(EDEADLK);
  Guard guard;
  const int saved_errno = errno;
  g_state.modules.refresh();
  // What the rings hold is sequenced first, so the snapshot has every object the program made so far;
  // the lock also keeps the sequencer's side (steps, phases, plans) still while it is read. The
  // migrator goes on: its counts are read as they are.
  if (g_stepping && !g_state.sequencer.try_lock_within(2'000'000'000)) return fail(EBUSY);
  if (g_stepping) g_state.sequencer.drain();
  // The signal's and the period's snapshots only where a training run has begun (or SENTINEL_INCLUDE
  // names the process).
  if (by != SnapshotBy::program && !g_state.config.include[0] && g_state.stepper.steps().size() == 0) {
    if (g_stepping) g_state.sequencer.unlock();
    return fail(ENODATA);
  }
  settle_counts_for_dump();  // up to now; the exit's dump settles them again
  const LogLevel written = by == SnapshotBy::signal ? LogLevel::warn : LogLevel::info;
  const int error = by == SnapshotBy::period
                        ? write_latest_snapshot(g_state, getpid())
                        : write_snapshot(g_state, getpid(), path, snapshots.fetch_add(1) + 1, written);
  if (g_stepping) g_state.sequencer.unlock();
  if (error) return fail(error);
  errno = saved_errno;
  return 0;
}

// On Sentinel's snapshot thread, for the snapshot signal (snapshot_thread.h).
// Why snapshot_now() wrote nothing, from its errno.
const char* why_no_snapshot(int error) {
  return error == ENOTSUP   ? "the process's dump is written already, or this process writes none"
         : error == EBUSY   ? "the event sequencer stayed busy for 2 s"
         : error == EEXIST  ? "the snapshot's file exists already"
         : error == ENOENT  ? "SENTINEL_DUMP is none"
         : error == ENODATA ? "no training step found in this process yet"
                            : strerror(error);
}

void write_signal_snapshot() {
  if (snapshot_now(nullptr, SnapshotBy::signal) == 0) return;
  LineBuf b;
  b.str(signal_name(g_state.config.snapshot_signal)).str(": no snapshot written (").str(why_no_snapshot(errno));
  b.chr(')');
  log_line(LogLevel::warn, b);
}

// On Sentinel's snapshot thread, every SENTINEL_SNAPSHOT_EVERY. Silent before the first training step
// (a compiler or launcher under the library never has one); a failure is said once.
void write_periodic_snapshot() {
  static std::atomic<bool> warned{false};
  if (snapshot_now(nullptr, SnapshotBy::period) == 0) {
    // The exit's dump may have been written (and the snapshot removed) while this one was renamed in.
    if (g_dumped.load()) remove_latest_snapshot(g_state, getpid());
    return;
  }
  const int error = errno;
  if (error == ENODATA || (error == ENOTSUP && g_dumped.load()) || warned.exchange(true)) return;
  LineBuf b;
  b.str("SENTINEL_SNAPSHOT_EVERY: no periodic snapshot written (").str(why_no_snapshot(error));
  b.str("); said once, tried again every period");
  log_line(LogLevel::warn, b);
}
}  // namespace

int dump_now(const char* path) {
  return snapshot_now(path, SnapshotBy::program);
}

const char* current_mode() {
  if (g_init_state.load() != 2) return "off";
  return mode_name(g_state.mode);
}

}  // namespace sentinel::rt
