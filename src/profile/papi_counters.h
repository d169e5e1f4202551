// Per-interval hardware counters through PAPI 7, for the profiler (docs/papi.md).
//
// The profiler reads a few counters (instructions, LLC misses, loads, stores: whichever PAPI presets exist
// and can be counted together) on each training thread at every interval boundary, and turns the
// per-interval deltas into weights (interval_weights). On a machine without a PMU (VMs such as the
// development one) init() says so in one line and returns PapiStatus::unavailable: the profiler then
// weights every interval 1.0 and goes on with page faults alone.
//
// Rules for callers (the library runs inside an LD_PRELOADed malloc interposer):
// - Every function that enters PAPI (init, attach_this_thread, read_this_thread, detach_this_thread,
//   shutdown) must be called inside the runtime's recursion guard: PAPI and libpfm call malloc/free.
// - Nothing here throws, uses RTTI or std containers; only init() and attach/detach allocate (inside PAPI).
//   read_this_thread() does not allocate (PAPI_read on the perf_event component is one read(2) per event
//   group) and is safe to call at every interval boundary. None of it is async-signal-safe.
// - Fork: a child must call forget_after_fork() first thing (e.g. from the runtime's atfork child hook);
//   it drops all state without calling PAPI, and every later call in the child is a cheap no-op that
//   reports "not counting". The child never counts.
// - Built without PAPI (meson -Dpapi=disabled or no libpapi-dev), the same API exists: init() returns
//   unavailable with the line "papi: built without PAPI; profiling with page faults alone".
#pragma once
#include <cstddef>
#include <cstdint>

namespace sentinel::papi {

// At most this many events in one event set (presets want 4; software events 3).
constexpr size_t kMaxEvents = 8;
constexpr size_t kMaxNameLen = 64;

// Which events init() chooses.
enum class Source : uint8_t {
  hardware,  // presets, in preference order: PAPI_TOT_INS; PAPI_L3_TCM else PAPI_L2_TCM; PAPI_LD_INS; PAPI_SR_INS
  software,  // perf software events through PAPI's perf_event component (tests; machines without a PMU):
             // perf::PERF_COUNT_SW_TASK_CLOCK, perf::PERF_COUNT_SW_PAGE_FAULTS and, where the process may
             // count in the kernel (root, or perf_event_paranoid <= 1), perf::PERF_COUNT_SW_CONTEXT_SWITCHES:k=1
};

enum class Status : uint8_t {
  uninitialized,  // init() not called yet (or shutdown() since)
  ready,          // events chosen; threads may attach
  unavailable,    // PAPI works but none of the wanted events can be counted here (no PMU); profile without
  failed,         // PAPI itself failed to initialise (library/version mismatch, thread init failure)
  forked,         // forget_after_fork() ran in this process: never counts again
};

// What an event measures: interval_weights() weights it by role (docs/papi.md).
enum class Role : uint8_t {
  instructions,      // PAPI_TOT_INS
  llc_misses,        // PAPI_L3_TCM, PAPI_L2_TCM (the last-level cache the CPU exposes)
  loads,             // PAPI_LD_INS
  stores,            // PAPI_SR_INS
  task_clock,        // perf::PERF_COUNT_SW_TASK_CLOCK (ns on CPU)
  page_faults,       // perf::PERF_COUNT_SW_PAGE_FAULTS (and _MIN / _MAJ)
  context_switches,  // perf::PERF_COUNT_SW_CONTEXT_SWITCHES
  other,             // anything else given explicitly: recorded, weight 0
};

struct Options {
  Source source = Source::hardware;
  // Explicit event names separated by commas or spaces (e.g. "PAPI_TOT_INS,perf::CACHE-MISSES"); when set,
  // replaces the source's preference list. Each one that exists and adds is kept, in the given order.
  const char* events = nullptr;
  // Passed to PAPI_library_init; 0 means PAPI_VER_CURRENT. Anything else makes init fail (tests).
  int library_version = 0;
  // Write the one-line outcome through the runtime's log (info level; failures at warn).
  bool log = true;
};

// Chooses the events and initialises PAPI (PAPI_library_init, PAPI_thread_init with a gettid id function),
// test-adding the candidates to one event set on the calling thread and starting it once, so that the
// kept events are known to be countable together, without multiplexing. Call once, before any thread
// attaches; a second call returns the current status without doing anything (call shutdown() first to
// re-initialise, as the tests do). Sets message() to one line that says what happened.
Status init(const Options& opts = Options{});

Status status();
const char* status_name(Status s);
// The line init() produced, without the "sentinel: " prefix ("" before init).
const char* message();
// The chosen events (valid while status() == ready).
size_t num_events();
const char* event_name(size_t i);
Role event_role(size_t i);
const char* role_name(Role r);
// Role of an event by its PAPI name (the table in docs/papi.md); Role::other when not known.
Role role_for_name(const char* name);

// Creates and starts an event set with the chosen events for the calling thread (perf_event attaches
// to this thread only). False when not ready, already attached, or PAPI refuses (logged at debug).
bool attach_this_thread();
bool attached_this_thread();
// Cumulative counts since this thread's attach_this_thread(), one per chosen event, into values[0..n).
// The event set keeps running and is never reset: the caller keeps the previous reading and takes
// the difference at each interval boundary (delta()). False (values untouched) when not attached.
bool read_this_thread(uint64_t* values);
// Stops and destroys this thread's event set and unregisters the thread from PAPI. When final_values
// is not null it receives the last cumulative counts. Call before the thread exits: an event set
// left behind keeps its perf file descriptors open until shutdown().
bool detach_this_thread(uint64_t* final_values = nullptr);
// Number of threads currently attached.
size_t attached_threads();

// For the child of fork(): forgets everything without calling PAPI (its locks and per-thread tables
// were copied mid-use from the parent) and moves to Status::forked. The perf file descriptors
// inherited from the parent stay open in the child (they count the parent's threads; never read).
void forget_after_fork();

// Detaches the calling thread and shuts PAPI down; status() is uninitialized afterwards and init()
// may run again. Other threads must have detached first. Not needed at process exit.
void shutdown();

// ---- Turning counts into interval weights (pure functions; no PAPI) -------------------------------

// out[k] = cur[k] - prev[k], or 0 where a counter went backwards.
void delta(const uint64_t* prev, const uint64_t* cur, size_t n, uint64_t* out);

// The role's coefficient in interval_weights (alpha in docs/papi.md).
double role_weight(Role r);

// Weights of n_intervals intervals from their counter deltas: deltas[i * n_events + k] is event k's
// count in interval i (summed over the profiled steps and threads). With s_ik = d_ik / sum_j d_jk
// (events whose total is 0 or whose role weight is 0 are left out) and A = sum of alpha_k over the
// events kept:
//     w_i = (1 - kMix) + kMix * n_intervals * (sum_k alpha_k * s_ik) / A
// so the mean weight is exactly 1 and no interval falls below 1 - kMix. When no event is kept every
// w_i = 1 (faults alone). Returns the number of events that contributed.
constexpr double kMix = 0.75;
size_t interval_weights(const uint64_t* deltas, size_t n_intervals, size_t n_events, const Role* roles, double* out);

// ---- Recorded fixtures (tests/fixtures/papi/*.txt) -------------------------------------------------
//
//   # comments and blank lines are ignored
//   sentinel-papi-fixture 1
//   source software                        (free text up to the end of the line)
//   events 3 NAME0 NAME1 NAME2
//   intervals 6
//   steps 3
//   base V0 V1 V2                          cumulative reading when the step loop started (after attach)
//   read STEP INTERVAL V0 V1 V2            cumulative reading at the end of (step, interval), in order
//
// Each interval's delta is its reading minus the reading before it (the previous `read`, or `base`
// for the first); deltas of the same interval are summed over the steps, exactly as the profiler does.
struct Fixture {
  char source[kMaxNameLen] = {};
  size_t num_events = 0;
  char names[kMaxEvents][kMaxNameLen] = {};
  Role roles[kMaxEvents] = {};
  uint32_t intervals = 0;
  uint32_t steps = 0;
  uint32_t reads = 0;  // `read` lines seen (intervals * steps in a complete fixture)
};

// Parses text[0..len). With deltas == nullptr only the header is parsed (to size the buffer); otherwise
// deltas[intervals * num_events] receives the per-interval sums (cap = its element count). Returns false
// with a one-line reason in err (may be null) on malformed input, a non-consecutive (step, interval)
// sequence, too small a buffer, or an incomplete fixture.
bool parse_fixture(const char* text, size_t len, Fixture* out, uint64_t* deltas, size_t cap, char* err, size_t err_cap);

}  // namespace sentinel::papi
