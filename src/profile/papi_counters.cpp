// Per-interval counters through PAPI 7 (docs/papi.md). See papi_counters.h for the rules.
#include "profile/papi_counters.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/log.h"
#include "sentinel_build_config.h"

#if SENTINEL_HAVE_PAPI
#include <papi.h>
#include <unistd.h>
#endif

namespace sentinel::papi {

namespace {

// ---- Small string helpers (no allocation) ----------------------------------------------------------

void copy_str(char* dst, size_t cap, const char* src) {
  if (!cap) return;
  size_t n = src ? strnlen(src, cap - 1) : 0;
  if (n) memcpy(dst, src, n);
  dst[n] = '\0';
}

void copy_str(char* dst, size_t cap, const char* src, size_t n) {
  if (!cap) return;
  if (n > cap - 1) n = cap - 1;
  if (n) memcpy(dst, src, n);
  dst[n] = '\0';
}

// ---- The chosen events and the process-wide status --------------------------------------------------

struct Chosen {
  size_t n = 0;
  int codes[kMaxEvents] = {};
  char names[kMaxEvents][kMaxNameLen] = {};
  Role roles[kMaxEvents] = {};
};

Chosen g_chosen;
char g_message[400] = {};
std::atomic<uint8_t> g_status{static_cast<uint8_t>(Status::uninitialized)};
// Bumped by every successful init, shutdown and forget_after_fork: a thread's slot from an older
// generation is not attached any more (its event set went away with PAPI_shutdown or the fork).
std::atomic<uint32_t> g_generation{1};
std::atomic<size_t> g_attached{0};
bool g_papi_live = false;  // PAPI_library_init succeeded and PAPI_shutdown has not run

struct ThreadSlot {
  int event_set;
  uint32_t generation;  // 0: not attached
};
constinit thread_local ThreadSlot t_slot __attribute__((tls_model("initial-exec"))) = {-1, 0};

Status load_status() {
  return static_cast<Status>(g_status.load(std::memory_order_acquire));
}
void store_status(Status s) {
  g_status.store(static_cast<uint8_t>(s), std::memory_order_release);
}

bool slot_valid() {
  return t_slot.generation != 0 && t_slot.generation == g_generation.load(std::memory_order_acquire) &&
         load_status() == Status::ready;
}

void set_message(const LineBuf& line) {
  copy_str(g_message, sizeof(g_message), line.data(), line.size());
}

void finish_init(Status s, const LineBuf& line, bool log, LogLevel level) {
  set_message(line);
  if (s == Status::ready) g_generation.fetch_add(1, std::memory_order_acq_rel);
  store_status(s);
  if (log) log_line(level, line);
}

#if SENTINEL_HAVE_PAPI

// The preference lists: one group per slot, alternatives in order; the first alternative of a group
// that can be counted with the events already kept fills the slot.
struct Group {
  const char* alternatives[3];
};
constexpr Group kHardware[] = {
    {{"PAPI_TOT_INS", nullptr, nullptr}},
    {{"PAPI_L3_TCM", "PAPI_L2_TCM", nullptr}},
    {{"PAPI_LD_INS", nullptr, nullptr}},
    {{"PAPI_SR_INS", nullptr, nullptr}},
};
constexpr Group kSoftware[] = {
    {{"perf::PERF_COUNT_SW_TASK_CLOCK", nullptr, nullptr}},
    {{"perf::PERF_COUNT_SW_PAGE_FAULTS", nullptr, nullptr}},
    // Context switches happen in the kernel: under PAPI's default user domain the plain event reads 0,
    // so ask for kernel counting (":k=1"). Unprivileged processes with perf_event_paranoid >= 2 are
    // refused (EPERM at add) and keep the first two.
    {{"perf::PERF_COUNT_SW_CONTEXT_SWITCHES:k=1", nullptr, nullptr}},
};

// Candidate names for this init: the source's list or the explicit one, as groups.
struct Candidates {
  size_t groups = 0;
  char names[kMaxEvents * 2][kMaxNameLen] = {};
  size_t group_of[kMaxEvents * 2] = {};
  size_t count = 0;
};

void build_candidates(const Options& opts, Candidates* c) {
  if (opts.events && *opts.events) {
    const char* p = opts.events;
    while (*p && c->count < kMaxEvents) {
      while (*p == ',' || *p == ' ' || *p == '\t') ++p;
      const char* start = p;
      while (*p && *p != ',' && *p != ' ' && *p != '\t') ++p;
      if (p == start) break;
      copy_str(c->names[c->count], kMaxNameLen, start, static_cast<size_t>(p - start));
      c->group_of[c->count] = c->groups++;
      ++c->count;
    }
    return;
  }
  const Group* list = opts.source == Source::software ? kSoftware : kHardware;
  size_t n = opts.source == Source::software ? sizeof(kSoftware) / sizeof(kSoftware[0])
                                             : sizeof(kHardware) / sizeof(kHardware[0]);
  for (size_t g = 0; g < n; ++g) {
    for (const char* alt : list[g].alternatives) {
      if (!alt || c->count >= sizeof(c->names) / sizeof(c->names[0])) break;
      copy_str(c->names[c->count], kMaxNameLen, alt);
      c->group_of[c->count] = g;
      ++c->count;
    }
    c->groups = g + 1;
  }
}

unsigned long thread_id() {
  return static_cast<unsigned long>(::gettid());
}

const char* papi_error(int rc) {
  const char* s = PAPI_strerror(rc);
  return s ? s : "unknown PAPI error";
}

#endif

}  // namespace

// ---- Status and names -------------------------------------------------------------------------------

Status status() {
  return load_status();
}

const char* status_name(Status s) {
  switch (s) {
    case Status::uninitialized:
      return "uninitialized";
    case Status::ready:
      return "ready";
    case Status::unavailable:
      return "unavailable";
    case Status::failed:
      return "failed";
    case Status::forked:
      return "forked";
  }
  return "?";
}

const char* message() {
  return g_message;
}

size_t num_events() {
  return load_status() == Status::ready ? g_chosen.n : 0;
}

const char* event_name(size_t i) {
  return i < num_events() ? g_chosen.names[i] : "";
}

Role event_role(size_t i) {
  return i < num_events() ? g_chosen.roles[i] : Role::other;
}

const char* role_name(Role r) {
  switch (r) {
    case Role::instructions:
      return "instructions";
    case Role::llc_misses:
      return "llc_misses";
    case Role::loads:
      return "loads";
    case Role::stores:
      return "stores";
    case Role::task_clock:
      return "task_clock";
    case Role::page_faults:
      return "page_faults";
    case Role::context_switches:
      return "context_switches";
    case Role::other:
      return "other";
  }
  return "?";
}

Role role_for_name(const char* name) {
  if (!name) return Role::other;
  struct Entry {
    const char* name;
    Role role;
  };
  static constexpr Entry kExact[] = {
      {"PAPI_TOT_INS", Role::instructions},
      {"PAPI_L3_TCM", Role::llc_misses},
      {"PAPI_L2_TCM", Role::llc_misses},
      {"PAPI_LD_INS", Role::loads},
      {"PAPI_SR_INS", Role::stores},
      {"perf::INSTRUCTIONS", Role::instructions},
      {"perf::PERF_COUNT_HW_INSTRUCTIONS", Role::instructions},
      {"perf::CACHE-MISSES", Role::llc_misses},
      {"perf::PERF_COUNT_HW_CACHE_MISSES", Role::llc_misses},
      {"perf::LLC-LOAD-MISSES", Role::llc_misses},
  };
  for (const Entry& e : kExact)
    if (strcmp(name, e.name) == 0) return e.role;
  // perf software events have several spellings (perf::TASK-CLOCK, perf::PERF_COUNT_SW_TASK_CLOCK, with
  // or without a ":u" style qualifier): match on the part after "perf::".
  if (strncmp(name, "perf::", 6) != 0) return Role::other;
  char base[kMaxNameLen];
  copy_str(base, sizeof(base), name + 6);
  if (char* colon = strchr(base, ':')) *colon = '\0';
  static constexpr Entry kPerf[] = {
      {"PERF_COUNT_SW_TASK_CLOCK", Role::task_clock},
      {"TASK-CLOCK", Role::task_clock},
      {"PERF_COUNT_SW_PAGE_FAULTS", Role::page_faults},
      {"PAGE-FAULTS", Role::page_faults},
      {"FAULTS", Role::page_faults},
      {"PERF_COUNT_SW_PAGE_FAULTS_MIN", Role::page_faults},
      {"MINOR-FAULTS", Role::page_faults},
      {"PERF_COUNT_SW_PAGE_FAULTS_MAJ", Role::page_faults},
      {"MAJOR-FAULTS", Role::page_faults},
      {"PERF_COUNT_SW_CONTEXT_SWITCHES", Role::context_switches},
      {"CONTEXT-SWITCHES", Role::context_switches},
      {"CS", Role::context_switches},
  };
  for (const Entry& e : kPerf)
    if (strcmp(base, e.name) == 0) return e.role;
  return Role::other;
}

size_t attached_threads() {
  return g_attached.load(std::memory_order_relaxed);
}

bool attached_this_thread() {
  return slot_valid();
}

#if SENTINEL_HAVE_PAPI

Status init(const Options& opts) {
  Status current = load_status();
  if (current != Status::uninitialized) return current;
  g_chosen = Chosen{};

  LineBuf line;
  int version = opts.library_version ? opts.library_version : PAPI_VER_CURRENT;
  int rc = PAPI_library_init(version);
  if (rc != PAPI_VER_CURRENT) {
    line.str("papi: PAPI_library_init failed (");
    if (rc > 0) {
      line.str("library version ").hex(static_cast<uint64_t>(rc)).str(", expected ").hex(PAPI_VER_CURRENT);
    } else {
      line.str(papi_error(rc));
    }
    line.str("); profiling with page faults alone");
    finish_init(Status::failed, line, opts.log, LogLevel::warn);
    return Status::failed;
  }
  g_papi_live = true;
  rc = PAPI_thread_init(thread_id);
  if (rc != PAPI_OK) {
    line.str("papi: PAPI_thread_init failed (").str(papi_error(rc)).str("); profiling with page faults alone");
    PAPI_shutdown();
    g_papi_live = false;
    finish_init(Status::failed, line, opts.log, LogLevel::warn);
    return Status::failed;
  }

  Candidates cand;
  build_candidates(opts, &cand);

  // Test-add the candidates one by one to an event set on this thread; an event is kept only if the set
  // still starts with it (perf_event schedules the whole group on the PMU at start).
  int es = PAPI_NULL;
  int first_error = PAPI_OK;
  rc = PAPI_create_eventset(&es);
  if (rc != PAPI_OK) first_error = rc;
  size_t filled_group = static_cast<size_t>(-1);
  long long scratch[kMaxEvents];
  for (size_t i = 0; rc == PAPI_OK && i < cand.count && g_chosen.n < kMaxEvents; ++i) {
    if (cand.group_of[i] == filled_group) continue;
    int code = 0;
    int r = PAPI_event_name_to_code(cand.names[i], &code);
    if (r == PAPI_OK) r = PAPI_query_event(code);
    if (r == PAPI_OK) r = PAPI_add_event(es, code);
    if (r == PAPI_OK) {
      r = PAPI_start(es);
      if (r == PAPI_OK) {
        PAPI_stop(es, scratch);
      } else {
        PAPI_remove_event(es, code);
      }
    }
    if (r != PAPI_OK) {
      if (first_error == PAPI_OK) first_error = r;
      continue;
    }
    g_chosen.codes[g_chosen.n] = code;
    copy_str(g_chosen.names[g_chosen.n], kMaxNameLen, cand.names[i]);
    g_chosen.roles[g_chosen.n] = role_for_name(cand.names[i]);
    ++g_chosen.n;
    filled_group = cand.group_of[i];
  }
  if (es != PAPI_NULL) {
    PAPI_cleanup_eventset(es);
    PAPI_destroy_eventset(&es);
  }
  PAPI_unregister_thread();

  bool explicit_list = opts.events && *opts.events;
  if (g_chosen.n == 0) {
    if (explicit_list)
      line.str("papi: none of the requested events can be counted here (");
    else if (opts.source == Source::software)
      line.str("papi: no software events here (");
    else
      line.str("papi: no hardware counters here (");
    for (size_t i = 0; i < cand.count; ++i) line.str(i ? " " : "").str(cand.names[i]);
    if (cand.count == 0) line.str("no event named");
    line.str(": ").str(first_error == PAPI_OK ? "not tried" : papi_error(first_error));
    line.str("); profiling with page faults alone");
    PAPI_shutdown();
    g_papi_live = false;
    finish_init(Status::unavailable, line, opts.log, LogLevel::info);
    return Status::unavailable;
  }
  line.str("papi: counting");
  for (size_t i = 0; i < g_chosen.n; ++i) line.str(" ").str(g_chosen.names[i]);
  line.str(explicit_list                     ? " (requested events)"
           : opts.source == Source::software ? " (software events)"
                                             : " (hardware presets)");
  line.str(" per interval on the attached threads");
  finish_init(Status::ready, line, opts.log, LogLevel::info);
  return Status::ready;
}

bool attach_this_thread() {
  if (load_status() != Status::ready || slot_valid()) return false;
  PAPI_register_thread();
  int es = PAPI_NULL;
  int rc = PAPI_create_eventset(&es);
  if (rc == PAPI_OK) rc = PAPI_add_events(es, g_chosen.codes, static_cast<int>(g_chosen.n));
  if (rc == PAPI_OK) rc = PAPI_start(es);
  if (rc != PAPI_OK) {
    if (es != PAPI_NULL) {
      PAPI_cleanup_eventset(es);
      PAPI_destroy_eventset(&es);
    }
    PAPI_unregister_thread();
    if (log_enabled(LogLevel::debug)) {
      LineBuf line;
      line.str("papi: attaching thread ").u64(static_cast<uint64_t>(::gettid())).str(" failed: ").str(papi_error(rc));
      log_line(LogLevel::debug, line);
    }
    return false;
  }
  t_slot.event_set = es;
  t_slot.generation = g_generation.load(std::memory_order_acquire);
  g_attached.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool read_this_thread(uint64_t* values) {
  if (!slot_valid()) return false;
  long long v[kMaxEvents];
  if (PAPI_read(t_slot.event_set, v) != PAPI_OK) return false;
  for (size_t i = 0; i < g_chosen.n; ++i) values[i] = v[i] < 0 ? 0 : static_cast<uint64_t>(v[i]);
  return true;
}

bool detach_this_thread(uint64_t* final_values) {
  if (!slot_valid()) return false;
  long long v[kMaxEvents] = {};
  int es = t_slot.event_set;
  int rc = PAPI_stop(es, v);
  if (final_values && rc == PAPI_OK)
    for (size_t i = 0; i < g_chosen.n; ++i) final_values[i] = v[i] < 0 ? 0 : static_cast<uint64_t>(v[i]);
  PAPI_cleanup_eventset(es);
  PAPI_destroy_eventset(&es);
  PAPI_unregister_thread();
  t_slot = {-1, 0};
  g_attached.fetch_sub(1, std::memory_order_relaxed);
  return rc == PAPI_OK;
}

void shutdown() {
  if (load_status() == Status::forked) return;
  detach_this_thread(nullptr);
  if (g_papi_live) PAPI_shutdown();
  g_papi_live = false;
  g_generation.fetch_add(1, std::memory_order_acq_rel);
  g_attached.store(0, std::memory_order_relaxed);
  g_chosen = Chosen{};
  g_message[0] = '\0';
  store_status(Status::uninitialized);
}

#else  // !SENTINEL_HAVE_PAPI

Status init(const Options& opts) {
  Status current = load_status();
  if (current != Status::uninitialized) return current;
  LineBuf line;
  line.str("papi: built without PAPI; profiling with page faults alone");
  finish_init(Status::unavailable, line, opts.log, LogLevel::info);
  return Status::unavailable;
}

bool attach_this_thread() {
  return false;
}
bool read_this_thread(uint64_t*) {
  return false;
}
bool detach_this_thread(uint64_t*) {
  return false;
}

void shutdown() {
  if (load_status() == Status::forked) return;
  g_message[0] = '\0';
  store_status(Status::uninitialized);
}

#endif  // SENTINEL_HAVE_PAPI

void forget_after_fork() {
  // Only plain stores: PAPI's own state in this child is a copy taken mid-use and is never touched again.
  store_status(Status::forked);
  g_generation.fetch_add(1, std::memory_order_acq_rel);
  g_attached.store(0, std::memory_order_relaxed);
  t_slot = {-1, 0};
  g_papi_live = false;
  g_chosen.n = 0;
}

// ---- Weights ------------------------------------------------------------------------------------------

void delta(const uint64_t* prev, const uint64_t* cur, size_t n, uint64_t* out) {
  for (size_t k = 0; k < n; ++k) out[k] = cur[k] >= prev[k] ? cur[k] - prev[k] : 0;
}

double role_weight(Role r) {
  switch (r) {
    case Role::llc_misses:
      return 0.5;
    case Role::instructions:
      return 0.2;
    case Role::loads:
      return 0.15;
    case Role::stores:
      return 0.15;
    case Role::task_clock:
      return 0.5;
    case Role::page_faults:
      return 0.5;
    case Role::context_switches:
      return 0.0;
    case Role::other:
      return 0.0;
  }
  return 0.0;
}

size_t interval_weights(const uint64_t* deltas, size_t n_intervals, size_t n_events, const Role* roles, double* out) {
  for (size_t i = 0; i < n_intervals; ++i) out[i] = 1.0;
  if (n_intervals == 0 || n_events == 0) return 0;
  double totals[kMaxEvents] = {};
  double alpha[kMaxEvents] = {};
  double alpha_sum = 0;
  size_t used = 0;
  size_t events = n_events < kMaxEvents ? n_events : kMaxEvents;
  for (size_t k = 0; k < events; ++k) {
    for (size_t i = 0; i < n_intervals; ++i) totals[k] += static_cast<double>(deltas[i * n_events + k]);
    alpha[k] = totals[k] > 0 ? role_weight(roles[k]) : 0.0;
    if (alpha[k] > 0) {
      alpha_sum += alpha[k];
      ++used;
    }
  }
  if (used == 0) return 0;
  double n = static_cast<double>(n_intervals);
  for (size_t i = 0; i < n_intervals; ++i) {
    double mix = 0;
    for (size_t k = 0; k < events; ++k)
      if (alpha[k] > 0) mix += alpha[k] * static_cast<double>(deltas[i * n_events + k]) / totals[k];
    out[i] = (1.0 - kMix) + kMix * n * mix / alpha_sum;
  }
  return used;
}

// ---- Fixtures -----------------------------------------------------------------------------------------

namespace {

struct Tokens {
  const char* tok[kMaxEvents + 4];
  size_t n = 0;
  bool overflow = false;
};

void tokenize(char* line, Tokens* t) {
  char* p = line;
  while (*p) {
    while (*p == ' ' || *p == '\t' || *p == '\r') *p++ = '\0';
    if (!*p) break;
    if (t->n == sizeof(t->tok) / sizeof(t->tok[0])) {
      t->overflow = true;
      return;
    }
    t->tok[t->n++] = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\r') ++p;
  }
}

bool parse_u64(const char* s, uint64_t* out) {
  if (!s || *s < '0' || *s > '9') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || !end || *end) return false;
  *out = v;
  return true;
}

bool fail(char* err, size_t cap, size_t line_no, const char* what) {
  if (err && cap) {
    LineBuf b;
    b.str("line ").u64(line_no).str(": ").str(what);
    copy_str(err, cap, b.data(), b.size());
  }
  return false;
}

}  // namespace

bool parse_fixture(const char* text, size_t len, Fixture* out, uint64_t* deltas, size_t cap, char* err,
                   size_t err_cap) {
  *out = Fixture{};
  if (err && err_cap) err[0] = '\0';
  bool magic = false, have_events = false, have_base = false;
  bool have_intervals = false, have_steps = false;
  uint64_t prev[kMaxEvents] = {};
  uint32_t next_step = 0, next_interval = 0;
  size_t line_no = 0;
  size_t pos = 0;
  auto need = [&](size_t n_cells) { return deltas != nullptr && n_cells <= cap; };
  while (pos < len) {
    size_t end = pos;
    while (end < len && text[end] != '\n') ++end;
    ++line_no;
    char line[1024];
    if (end - pos >= sizeof(line)) return fail(err, err_cap, line_no, "line too long");
    memcpy(line, text + pos, end - pos);
    line[end - pos] = '\0';
    pos = end + 1;
    if (char* hash = strchr(line, '#')) *hash = '\0';
    Tokens t;
    tokenize(line, &t);
    if (t.overflow) return fail(err, err_cap, line_no, "too many fields");
    if (t.n == 0) continue;
    const char* key = t.tok[0];
    if (!magic) {
      if (strcmp(key, "sentinel-papi-fixture") != 0 || t.n != 2 || strcmp(t.tok[1], "1") != 0)
        return fail(err, err_cap, line_no, "expected 'sentinel-papi-fixture 1'");
      magic = true;
    } else if (strcmp(key, "source") == 0) {
      LineBuf b;
      for (size_t i = 1; i < t.n; ++i) b.str(i > 1 ? " " : "").str(t.tok[i]);
      copy_str(out->source, sizeof(out->source), b.data(), b.size());
    } else if (strcmp(key, "events") == 0) {
      uint64_t n = 0;
      if (have_events || t.n < 2 || !parse_u64(t.tok[1], &n) || n == 0 || n > kMaxEvents || t.n != n + 2)
        return fail(err, err_cap, line_no, "bad 'events' line");
      out->num_events = n;
      for (size_t i = 0; i < n; ++i) {
        copy_str(out->names[i], kMaxNameLen, t.tok[i + 2]);
        out->roles[i] = role_for_name(out->names[i]);
      }
      have_events = true;
    } else if (strcmp(key, "intervals") == 0 || strcmp(key, "steps") == 0) {
      uint64_t n = 0;
      if (t.n != 2 || !parse_u64(t.tok[1], &n) || n == 0 || n > 1000000)
        return fail(err, err_cap, line_no, "bad count");
      if (key[0] == 'i') {
        out->intervals = static_cast<uint32_t>(n);
        have_intervals = true;
      } else {
        out->steps = static_cast<uint32_t>(n);
        have_steps = true;
      }
    } else if (strcmp(key, "base") == 0 || strcmp(key, "read") == 0) {
      if (!have_events || !have_intervals || !have_steps)
        return fail(err, err_cap, line_no, "'events', 'intervals' and 'steps' must come first");
      if (!deltas) return true;  // header only
      size_t cells = static_cast<size_t>(out->intervals) * out->num_events;
      if (!need(cells)) return fail(err, err_cap, line_no, "delta buffer too small");
      if (!have_base && !(key[0] == 'b')) return fail(err, err_cap, line_no, "'read' before 'base'");
      if (key[0] == 'b') {
        if (have_base || t.n != out->num_events + 1) return fail(err, err_cap, line_no, "bad 'base' line");
        for (size_t k = 0; k < out->num_events; ++k)
          if (!parse_u64(t.tok[k + 1], &prev[k])) return fail(err, err_cap, line_no, "bad number");
        for (size_t c = 0; c < cells; ++c) deltas[c] = 0;
        have_base = true;
        continue;
      }
      uint64_t step = 0, interval = 0;
      if (t.n != out->num_events + 3 || !parse_u64(t.tok[1], &step) || !parse_u64(t.tok[2], &interval))
        return fail(err, err_cap, line_no, "bad 'read' line");
      if (step != next_step || interval != next_interval)
        return fail(err, err_cap, line_no, "'read' lines must go step by step, interval by interval");
      uint64_t cur[kMaxEvents] = {};
      for (size_t k = 0; k < out->num_events; ++k)
        if (!parse_u64(t.tok[k + 3], &cur[k])) return fail(err, err_cap, line_no, "bad number");
      uint64_t d[kMaxEvents];
      delta(prev, cur, out->num_events, d);
      for (size_t k = 0; k < out->num_events; ++k) {
        deltas[interval * out->num_events + k] += d[k];
        prev[k] = cur[k];
      }
      ++out->reads;
      if (++next_interval == out->intervals) {
        next_interval = 0;
        ++next_step;
      }
    } else {
      return fail(err, err_cap, line_no, "unknown keyword");
    }
  }
  if (!magic) return fail(err, err_cap, line_no, "empty fixture");
  if (!have_events || !have_intervals || !have_steps) return fail(err, err_cap, line_no, "incomplete header");
  if (!deltas) return true;
  if (out->reads != static_cast<uint64_t>(out->intervals) * out->steps)
    return fail(err, err_cap, line_no, "fixture ends before the last step's last interval");
  return true;
}

}  // namespace sentinel::papi
