#include "tier/tiering.h"

#include <cerrno>
#include <cstring>

#include "base/hash.h"
#include "base/log.h"
#include "base/numa_ops.h"
#include "base/thread.h"
#include "base/vm_region.h"
#include "tier/step_costs.h"
#include "track/arena.h"

namespace sentinel {

namespace {

inline uint64_t token_hash(uint32_t site, uint64_t size) {
  return mix64(size * 0x9E3779B97F4A7C15ULL ^ site);
}
inline uint64_t identity_hash(uint32_t site, uint64_t size, uint32_t k) {
  return mix64(token_hash(site, size) ^ (uint64_t{k} << 40));
}

uint32_t table_capacity(uint32_t n) {
  uint32_t c = 16;
  while (c < 2 * n) c <<= 1;
  return c;
}

constexpr uint32_t kSlotShift = 28;
constexpr uint32_t kFallbackFast = ~0u;  // log_entry_ of a fallback object counted on the fast node
constexpr uint32_t kEntryMask = (1u << kSlotShift) - 1;

}  // namespace

void Tiering::init(const Config& cfg, const Topology& topo, uint32_t ranks_sharing, Arena* arena, ObjectLog* log,
                   const TickClock* clock) {
  cfg_ = cfg;
  ranks_sharing_ = ranks_sharing ? ranks_sharing : 1;
  arena_ = arena;
  log_ = log;
  clock_ = clock;
  enabled_ = cfg.mode == Mode::run;
  if (!enabled_) return;
  TierNodes tn = choose_tier_nodes(topo, cfg.fast_node, cfg.slow_node);
  fast_node_ = tn.fast;
  slow_node_ = tn.slow;
  // A container's seccomp profile: said in one line, then a dry run (the calls it still allows are not
  // enough to place and move objects, or to know where they are).
  denied_calls_ = numa::probe_denied_calls();
  constexpr uint32_t kNeeded =
      numa::kDeniedMbind | numa::kDeniedMovePages | numa::kDeniedSetMempolicy | numa::kDeniedGetMempolicy;
  if (denied_calls_ & kNeeded) {
    char names[96];
    numa::denied_call_names(denied_calls_, names, sizeof(names));
    LineBuf b;
    b.str("the kernel refuses ").str(names).str(" to this process (a container's seccomp profile without ");
    b.str("CAP_SYS_NICE?); plans are made as a dry run, nothing is placed or moved");
    log_line(LogLevel::error, b);
    slow_node_ = -1;
  } else if (tn.problem) {
    LineBuf b;
    b.str(tn.problem).str("; plans are made as a dry run, nothing is moved");
    log_line(LogLevel::error, b);
    slow_node_ = -1;
    said_dry_run_ = true;
  }
  dry_run_ = fast_node_ < 0 || slow_node_ < 0;
  if (dry_run_ && cfg.step_costs.kind == StepCostsKind::automatic)  // measured on the migrator's thread only
    log_line(LogLevel::info, "SENTINEL_STEP_COSTS=auto: a dry run measures nothing; plans get no step costs");
  if (const NodeInfo* f = topo.node(fast_node_)) fast_free_at_start_ = f->free_bytes;
  if (topo.memory_limit_room < fast_free_at_start_) fast_free_at_start_ = topo.memory_limit_room;
  log_capacity_ = cfg.max_objects;
  log_entry_ = static_cast<uint32_t*>(vm_map_lazy((log_capacity_ ? log_capacity_ : 1) * sizeof(uint32_t)));
  if (!log_entry_) {
    log_line(LogLevel::error, "cannot map the tiering tables; run mode tracks and profiles only");
    enabled_ = false;
    return;
  }
  numa::set_fault_injection(cfg.faults, fast_node_);
  if (cfg.trial_clock.emulated && !dry_run_) open_trial_clock();
  if (cfg.policy == SENTINEL_POLICY_INTERLEAVE) start_interleave();
}

// The interleave policy: nothing is planned or moved; the arena weighs every fresh slot's pages
// between the nodes, the budget's share on the fast one.
void Tiering::start_interleave() {
  if (dry_run_) {
    if (!denied_calls_ && !said_dry_run_)  // refused calls and a bad node choice were said above
      log_line(LogLevel::warn, "interleave: no slow node, so nothing to interleave; the kernel places every page");
    return;
  }
  uint32_t share = cfg_.fast_share_ppm;
  if (!share) {
    share = kDryRunShareppm;
    log_line(LogLevel::warn,
             "SENTINEL_POLICY=interleave weighs pages by a share: SENTINEL_FAST_BYTES takes N% with it, not bytes "
             "or auto; using 20%");
  }
  arena_->set_interleave(fast_node_, slow_node_, share);
  LineBuf b;
  b.str("interleave: the pages of tracked objects go ").u64(share / 10000).chr('.').u64(share / 1000 % 10);
  b.str("% to node ").i64(fast_node_).str(" and the rest to node ").i64(slow_node_);
  b.str(" at birth, in 64 KiB groups; nothing is planned or moved");
  log_line(LogLevel::warn, b);
}

FastBudget Tiering::budget() const {
  if (dry_run_default_share()) return FastBudget{0, kDryRunShareppm};
  // 90% of the fast node's free memory (or of the memory cgroup's room), split among the ranks sharing it.
  if (cfg_.fast_auto) return FastBudget{fast_free_at_start_ / 10 * 9 / budget_split(), 0};
  if (cfg_.fast_share_ppm) return FastBudget{0, cfg_.fast_share_ppm};  // each rank's share of its own peak
  return FastBudget{cfg_.fast_bytes / budget_split(), 0};
}

// SENTINEL_STEP_COSTS for the next plan: none (off), the given ones, or the migrator's measurement
// (auto: none until it is done, and none in a dry run, where nothing is measured).
StepCosts Tiering::step_costs() const {
  const StepCostsText& c = cfg_.step_costs;
  if (c.kind == StepCostsKind::fixed) return step_costs_of_kib(c.slow_ns_per_kib, c.move_ns_per_kib);
  uint32_t slow = 0, move = 0;
  if (c.kind == StepCostsKind::automatic && auto_costs(&slow, &move)) return step_costs_of_kib(slow, move);
  return StepCosts{};
}

bool Tiering::auto_costs(uint32_t* slow_ns_per_kib, uint32_t* move_ns_per_kib) const {
  if (dry_run_ || !migrator_.measured_costs(slow_ns_per_kib, move_ns_per_kib)) return false;
  if (fitted_slow_ns_per_kib_) *slow_ns_per_kib = fitted_slow_ns_per_kib_;
  *move_ns_per_kib = fitted_move_ns_per_kib_
                         ? fitted_move_ns_per_kib_
                         : training_move_ns_per_kib(*move_ns_per_kib, *slow_ns_per_kib, start_cpu_count());
  return true;
}

uint32_t Tiering::cost_flags(const StepCosts& planned, uint32_t migrator_ns_per_kib) const {
  uint32_t slow = 0, probe = 0;
  if (cfg_.step_costs.kind != StepCostsKind::automatic || dry_run_ || !migrator_.measured_costs(&slow, &probe))
    return 0;
  // A move cost an earlier trial fitted was measured, not priced by the CPU rule: the flag would misname it.
  if (fitted_move_ns_per_kib_) return 0;
  const uint32_t migrator = migrator_ns_per_kib ? migrator_ns_per_kib : probe;
  return ns_per_kib_of(planned.move_ns_per_byte) < migrator ? SENTINEL_TIER_MOVES_OFF_THREAD : 0;
}

uint32_t Tiering::budget_flags() const {
  const bool share = cfg_.fast_share_ppm || dry_run_default_share();
  return (dry_run_ ? SENTINEL_TIER_DRY_RUN : 0) | (share ? SENTINEL_TIER_BUDGET_SHARE : 0) |
         (dry_run_default_share() ? SENTINEL_TIER_DEFAULT_SHARE : 0) |
         (budget_split() > 1 ? SENTINEL_TIER_BUDGET_SPLIT : 0) |
         (cfg_.budget_per_rank ? SENTINEL_TIER_BUDGET_PER_RANK : 0) | (denied_calls_ ? SENTINEL_TIER_NUMA_DENIED : 0) |
         (cfg_.faults.any() ? SENTINEL_TIER_FAULT_INJECTION : 0);
}

void Tiering::on_locked() {
  if (!enabled_ || dry_run_ || migrator_started_ || in_child_ || interleave()) return;
  migrator_started_ = true;
  migrator_.set_pending(&pending_fast_);
  migrator_.set_calibrate_costs(cfg_.step_costs.kind == StepCostsKind::automatic);
  if (!migrator_.start(arena_, fast_node_, slow_node_, cfg_.move_method)) {
    LineBuf b;
    b.str("cannot start the migrator thread (").str(strerror(errno)).str("); plans are made as a dry run");
    log_line(LogLevel::error, b);
    dry_run_ = true;
  }
}

int32_t Tiering::slot_of_phase(uint16_t phase) const {
  if (!phase) return -1;
  uint32_t n = plan_count();
  for (uint32_t i = 0; i < n; ++i)
    if (slots_[i].phase == phase && !slots_[i].retired) return static_cast<int32_t>(i);
  return -1;
}

void Tiering::retire(uint16_t phase) {
  int32_t slot = slot_of_phase(phase);
  if (slot < 0 || active_slot_.load(std::memory_order_acquire) == slot) return;
  PlanSlot& s = slots_[slot];
  s.retired = true;
  s.trial.step_start = 0;
  LineBuf b;
  b.str("phase ").u64(phase).str(
      " was not a step after all (an inner loop of a longer step, or a lock withdrawn): its plan is dropped");
  log_line(denied_calls_ ? LogLevel::info : LogLevel::warn, b);  // as its plan was said (on_profiled)
}

uint32_t Tiering::find_entry(const PlanSlot& s, uint32_t site, uint64_t size, uint32_t k) const {
  if (!s.keys) return UINT32_MAX;
  for (uint32_t i = static_cast<uint32_t>(identity_hash(site, size, k)) & s.key_mask;; i = (i + 1) & s.key_mask) {
    const IdentityKey& key = s.keys[i];
    if (!key.entry_plus_one) return UINT32_MAX;
    if (key.site == site && key.size == size && key.k == k) return key.entry_plus_one - 1;
  }
}

Tiering::TokenEntry* Tiering::find_token(const PlanSlot& s, uint32_t site, uint64_t size) const {
  TokenEntry* tokens = s.live_tokens.load(std::memory_order_acquire);
  if (!tokens) return nullptr;
  for (uint32_t i = static_cast<uint32_t>(token_hash(site, size)) & s.token_mask;; i = (i + 1) & s.token_mask) {
    TokenEntry& t = tokens[i];
    if (!t.m) return nullptr;
    if (t.site == site && t.size == size) return &t;
  }
}

bool Tiering::build_tables(PlanSlot& s, const PhaseProfileView& p) {
  uint32_t n = p.identity_count;
  uint32_t cap = table_capacity(n);
  const uint32_t entries = s.moving().plan.entry_count;
  s.keys = static_cast<IdentityKey*>(vm_map_lazy(cap * sizeof(IdentityKey)));
  s.states = static_cast<EntryState*>(vm_map_lazy((entries ? entries : 1) * sizeof(EntryState)));
  s.first_entry = static_cast<uint32_t*>(vm_map_lazy((size_t{n} + 1) * sizeof(uint32_t)));
  if (!s.keys || !s.states || !s.first_entry) return false;
  s.identities = p.identities;
  s.key_mask = cap - 1;
  s.token_mask = cap - 1;
  for (uint32_t j = 0; j < entries; ++j) s.states[j].state.store(EntryState::kNone, std::memory_order_relaxed);
  // The plan's entries are its input's identities in order, an identity planned in chunks with one a chunk.
  for (uint32_t e = 0, j = 0; e <= n; ++e) {
    s.first_entry[e] = j;
    if (e < n) j += identity_chunks(p.identities[e]);
  }
  if (s.first_entry[n] != entries) return false;
  for (uint32_t e = 0; e < n; ++e) {
    const sentinel_identity& id = p.identities[e];
    if ((id.flags & SENTINEL_IDENTITY_OUTSIDE) || id.occurrence == SENTINEL_NO_ORDINAL) continue;
    for (uint32_t i = static_cast<uint32_t>(identity_hash(id.site, id.size, id.occurrence)) & s.key_mask;;
         i = (i + 1) & s.key_mask) {
      IdentityKey& key = s.keys[i];
      if (key.entry_plus_one) {
        if (key.site == id.site && key.size == id.size && key.k == id.occurrence) break;  // duplicate: first wins
        continue;
      }
      key = IdentityKey{id.site, id.occurrence, id.size, e + 1, 0};
      break;
    }
  }
  Candidate& m = s.moving();
  m.tokens = build_tokens(s, p, m.plan);
  if (!m.tokens) return false;
  s.live_tokens.store(m.tokens, std::memory_order_release);
  return true;
}

// The birth tiers of one schedule: per (site, size), which occurrences in the step are born fast.
Tiering::TokenEntry* Tiering::build_tokens(const PlanSlot& s, const PhaseProfileView& p, const Plan& plan) {
  TokenEntry* tokens = static_cast<TokenEntry*>(vm_map_lazy((s.token_mask + 1) * sizeof(TokenEntry)));
  if (!tokens) return nullptr;
  for (uint32_t e = 0; e < p.identity_count; ++e) {
    const sentinel_identity& id = p.identities[e];
    if ((id.flags & SENTINEL_IDENTITY_OUTSIDE) || id.occurrence == SENTINEL_NO_ORDINAL) continue;
    bool fast = plan.entries[s.first_entry[e]].flags & SENTINEL_PLAN_BIRTH_FAST;
    for (uint32_t i = static_cast<uint32_t>(token_hash(id.site, id.size)) & s.token_mask;; i = (i + 1) & s.token_mask) {
      TokenEntry& t = tokens[i];
      if (t.m && !(t.site == id.site && t.size == id.size)) continue;
      if (!t.m) {
        t.site = id.site;
        t.size = id.size;
      }
      ++t.m;
      if (fast) t.fast_mask |= uint64_t{1} << (id.occurrence < 63 ? id.occurrence : 63);
      break;
    }
  }
  for (uint32_t i = 0; i <= s.token_mask; ++i) {
    TokenEntry& t = tokens[i];
    if (!t.m) continue;
    uint64_t all = t.m >= 64 ? ~uint64_t{0} : (uint64_t{1} << t.m) - 1;
    t.mixed = (t.fast_mask & all) != 0 && (t.fast_mask & all) != all;
  }
  return tokens;
}

// Objects alive now that the plan names (weights, optimizer state, data born outside steps; the
// current step's instances) become the plan's: the migrator moves them at the next boundary.
void Tiering::adopt_live_objects(uint32_t slot, const PhaseProfileView& p) {
  PlanSlot& s = slots_[slot];
  if (!p.identity_objects) return;
  for (uint32_t e = 0; e < p.identity_count; ++e) {
    uint32_t li = p.identity_objects[e];
    if (li == kNoLogIndex || li >= log_capacity_) continue;
    const sentinel_object* o = log_->at(li);
    if (o->death_seq != UINT64_MAX || o->kind != SENTINEL_KIND_HEAP) continue;
    unsigned cls;
    uint32_t index;
    Slot* sl = arena_->owns(reinterpret_cast<void*>(o->address))
                   ? arena_->locate(reinterpret_cast<void*>(o->address), &cls, &index)
                   : nullptr;
    if (!sl || sl->user.load(std::memory_order_acquire) != o->address) continue;
    const uint8_t label = sl->tier.load(std::memory_order_relaxed);
    // An earlier phase's plan had it (weights live through every phase): this plan takes it over, with
    // the tier each part is on now. Its fast bytes leave the count with the old entries and come back with
    // the new ones.
    uint8_t old_tiers[64];
    uint32_t old_count = 0;
    const uint32_t owner = entry_of(li);
    if (owner == kFallbackFast && !dry_run_) migrator_.add_fast_bytes(-static_cast<int64_t>(o->size));
    if (owner && owner != kFallbackFast) {
      PlanSlot& os = slots_[owner >> kSlotShift];
      const uint32_t oe = (owner & kEntryMask) - 1;
      old_count = os.first_entry[oe + 1] - os.first_entry[oe];
      const uint64_t was_fast = died(os, oe, o->address, old_count <= 64 ? old_tiers : nullptr);
      if (was_fast && !dry_run_) migrator_.add_fast_bytes(-static_cast<int64_t>(was_fast));
      if (old_count > 64) old_count = 0;
    }
    set_entry(li, (slot << kSlotShift) | (e + 1));
    const uint32_t first = s.first_entry[e], count = s.first_entry[e + 1] - first;
    uint64_t fast = 0;
    for (uint32_t c = 0; c < count; ++c) {
      // The old entries' tiers where they cover the same parts (one whole object, or the same chunks).
      const uint8_t was = old_count == 1 ? old_tiers[0] : old_count == count ? old_tiers[c] : EntryState::kNone;
      const uint8_t tier = was != EntryState::kNone ? was : label;
      const sentinel_identity& id = s.identities[e];
      const uint64_t at = id.chunk_bytes ? uint64_t{c} * id.chunk_bytes : 0;
      const uint64_t len = id.chunk_bytes ? chunk_size(id, c) : o->size;
      s.states[first + c].born(o->address + at, len, tier);
      if (tier == kTierFast) fast += len;
    }
    if (fast && !dry_run_) migrator_.add_fast_bytes(static_cast<int64_t>(fast));
  }
}

uint64_t Tiering::born(PlanSlot& s, uint32_t e, uintptr_t address, uint8_t tier) {
  const sentinel_identity& id = s.identities[e];
  uint64_t fast = 0;
  for (uint32_t j = s.first_entry[e], c = 0; j < s.first_entry[e + 1]; ++j, ++c) {
    const uint64_t at = id.chunk_bytes ? uint64_t{c} * id.chunk_bytes : 0;
    const uint64_t len = chunk_size(id, c);
    s.states[j].born(address + at, len, tier);
    if (tier == kTierFast) fast += len;
  }
  return fast;
}

uint64_t Tiering::died(PlanSlot& s, uint32_t e, uintptr_t address, uint8_t* tiers) {
  const sentinel_identity& id = s.identities[e];
  uint64_t fast = 0;
  for (uint32_t j = s.first_entry[e], c = 0; j < s.first_entry[e + 1]; ++j, ++c) {
    EntryState& st = s.states[j];
    const uint64_t at = id.chunk_bytes ? uint64_t{c} * id.chunk_bytes : 0;
    uint8_t was = EntryState::kNone;
    // A newer instance in its place (a reordered free) already took this one out.
    if (st.address.load(std::memory_order_relaxed) == address + at) {
      const uint64_t size = st.size.load(std::memory_order_relaxed);
      was = st.died();
      if (was == kTierFast) fast += size;
    }
    if (tiers) tiers[c] = was;
  }
  return fast;
}

bool Tiering::on_profiled(const PhaseProfileView& p) {
  if (!enabled_ || interleave()) return false;  // the interleave policy has no plan (said at start)
  uint32_t slot = plan_count();
  if (slot >= kMaxPlans || slot_of_phase(static_cast<uint16_t>(p.phase)) >= 0) {
    if (!reported_failure_)
      log_line(LogLevel::warn, "more phases than plans can be kept (16); later phases follow the fallback");
    reported_failure_ = true;
    return false;
  }
  PlanSlot& s = slots_[slot];
  PlanInput in;
  in.phase = p.phase;
  in.intervals = p.intervals;
  in.identities = p.identities;
  in.identity_count = p.identity_count;
  in.touches = p.touches;
  in.touch_count = p.touch_count;
  in.profiled_steps = p.profiled_steps ? p.profiled_steps : 1;
  in.interval_ns = p.interval_ns;
  in.migrate_bytes_per_s = migrator_.bandwidth();
  in.policy = static_cast<sentinel_policy>(cfg_.policy);
  in.budget = budget();
  in.flags = budget_flags();
  in.costs = step_costs();
  in.flags |= cost_flags(in.costs, 0);
  in.sample = p.sample;
  in.granularity = p.granularity;
  const char* error = nullptr;
  Candidate& m = s.moving();
  if (!m.scratch.init(plan_scratch_bytes(in)) || !make_plan(in, m.scratch, &m.plan, &error) || !build_tables(s, p)) {
    LineBuf b;
    b.str("phase ").u64(p.phase).str(" could not be planned (").str(error ? error : "out of memory");
    b.str("); its objects follow the fallback");
    log_line(LogLevel::warn, b);
    return false;
  }
  s.phase = p.phase;
  if (p.interval_ns) {
    for (uint32_t i = 0; i < p.intervals && i < 64; ++i) s.interval_ns[i] = p.interval_ns[i];
    s.has_interval_ns = true;
  }
  s.input = in;  // the identities and touches are the profiler's, kept for the life of the process
  s.input.interval_ns = s.has_interval_ns ? s.interval_ns : nullptr;
  m.exec = ExecPlan{p.phase,
                    p.intervals,
                    m.plan.entries,
                    s.states,
                    m.plan.entry_count,
                    false,
                    m.plan.header.policy == SENTINEL_POLICY_ALL_FAST ? UINT64_MAX : m.plan.header.fast_budget_bytes};
  adopt_live_objects(slot, p);
  migrator_.set_plan(slot, &m.exec);
  if (prepare_trial(s, p, in)) use_candidate(slot, kFixed);  // the no-move schedule is timed first
  if (!dry_run_ && !placing_.load(std::memory_order_relaxed)) {
    arena_->set_tier_nodes(fast_node_, slow_node_);
    placing_.store(true, std::memory_order_release);
  }
  plan_count_.store(slot + 1, std::memory_order_release);
  const sentinel_plan_header& h = m.plan.header;
  LineBuf b;
  if (dry_run_) b.str(denied_calls_ ? "dry run (NUMA calls refused): " : "dry run (no slow node): ");
  b.str("phase ").u64(p.phase).str(" planned: ").str(policy_name(h.policy)).str(", budget ").bytes(h.fast_budget_bytes);
  b.str(" of a ").bytes(h.footprint_peak_bytes).str(" peak");
  if (dry_run_default_share()) b.str(" (20%, the dry run's default: SENTINEL_FAST_BYTES=auto needs a slow node)");
  b.str(", ").u64(p.identity_count).str(" identities, predicted fast-hit share ");
  b.u64(h.predicted_hit_ppm / 10000)
      .chr('.')
      .u64(h.predicted_hit_ppm / 100 % 100 / 10)
      .u64(h.predicted_hit_ppm / 100 % 10)
      .chr('%');
  if (dry_run_) b.str("; nothing is moved");
  // Every plan is said on stderr at the default level, one line a phase: which phases were planned, at
  // what budget, is what a user looks for first (and a dry run is not what the user asked for). Refused
  // NUMA calls are the exception: that run says one line at start, which names them, and no more.
  log_line(denied_calls_ ? LogLevel::info : LogLevel::warn, b);
  return true;
}

void Tiering::on_allocation(uint16_t phase, uint32_t site, uint64_t size, uint32_t k, uint32_t log_index,
                            uintptr_t address, uint16_t tier_flags, bool pinned) {
  if (!enabled_ || !plan_count()) return;
  const uint8_t tier = static_cast<uint8_t>(tier_flags & 0xFF);
  // The reservation becomes occupancy below (a planned instance, or a fallback object on the fast node),
  // and is given back on the way out, once that is counted: given back first, it left a moment in which
  // the object counted nowhere and a promotion could take its room.
  struct Reservation {
    std::atomic<int64_t>* pending;
    int64_t bytes;
    ~Reservation() {
      if (bytes) pending->fetch_sub(bytes, std::memory_order_seq_cst);
    }
  } reservation{&pending_fast_, (tier_flags & kReserved) ? static_cast<int64_t>(size) : 0};
  if (pinned) {
    ++pinned_objects_;
    pinned_bytes_ += size;
  }
  int32_t slot = slot_of_phase(phase);
  uint32_t e = slot >= 0 && k != SENTINEL_NO_ORDINAL ? find_entry(slots_[slot], site, size, k) : UINT32_MAX;
  bool logged = !pinned && log_index != kNoLogIndex && log_index < log_capacity_;
  if (e == UINT32_MAX) {
    ++fallback_objects_;
    fallback_bytes_ += size;
    if (!dry_run_ && tier == kTierFast && logged) {
      // Not the plan's, but on the fast node: it counts until it dies.
      ++fallback_fast_;
      set_entry(log_index, kFallbackFast);
      migrator_.add_fast_bytes(static_cast<int64_t>(size));
    }
    return;
  }
  if (dry_run_) return;  // nothing is placed: no occupancy to keep
  if (tier == kTierFast)
    ++born_fast_;
  else
    ++born_slow_;
  if (!logged) return;  // never moved
  PlanSlot& s = slots_[slot];
  EntryState& st = s.states[s.first_entry[e]];
  if (EntryState::tier_of(st.state.load(std::memory_order_acquire)) != EntryState::kNone) {
    // An older instance still lives (a reordered free): it leaves the plan, this one takes its place.
    if (uint64_t fast = died(s, e, st.address.load(std::memory_order_relaxed)))
      migrator_.add_fast_bytes(-static_cast<int64_t>(fast));
  }
  set_entry(log_index, (static_cast<uint32_t>(slot) << kSlotShift) | (e + 1));
  if (uint64_t fast = born(s, e, address, tier)) migrator_.add_fast_bytes(static_cast<int64_t>(fast));
}

void Tiering::on_free(uint32_t log_index, uint16_t flags) {
  if (!enabled_ || log_index == kNoLogIndex || log_index >= log_capacity_) return;
  const sentinel_object* o = log_->at(log_index);
  // What the object held in the fast tier's count, taken off here; free_credit() may have taken the
  // object's size off already, which makes up the difference.
  int64_t counted = 0;
  const int64_t credited = (flags & kFreeCredited) ? static_cast<int64_t>(o->size) : 0;
  if (uint32_t v = entry_of(log_index)) {
    set_entry(log_index, 0);
    if (v == kFallbackFast) {
      counted = static_cast<int64_t>(o->size);
    } else {
      counted = static_cast<int64_t>(died(slots_[v >> kSlotShift], (v & kEntryMask) - 1, o->address));
    }
  }
  if (counted != credited) migrator_.add_fast_bytes(credited - counted);
}

void Tiering::on_step_start(uint16_t phase, uint64_t step, uint64_t now, bool behind, bool steady) {
  if (!enabled_) return;
  int32_t slot = slot_of_phase(phase);
  int32_t was = active_slot_.exchange(slot, std::memory_order_acq_rel);
  if (was >= 0 && was != slot) {  // that phase's step ended in another one
    slots_[was].trial.step_start = 0;
    slots_[was].fit.step_start = 0;
  }
  if (slot < 0) return;
  PlanSlot& s = slots_[slot];
  const uint64_t budget = s.moving().exec.budget;
  s.catch_up.on_step(migrator_.caught_up(static_cast<uint32_t>(slot)), migrator_.migrated_bytes(),
                     s.in_effect().plan.header.moved_bytes_per_step,
                     budget != UINT64_MAX && migrator_.fast_bytes() > budget);
  trial_step(s, now, behind);  // may switch the schedule: births of this step follow the one it leaves in effect
  watch_step(s, step);         // likewise
  fit_step(s, now, steady);
  TokenEntry* tokens = s.live_tokens.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i <= s.token_mask; ++i)
    if (tokens[i].mixed) tokens[i].next_k.store(0, std::memory_order_relaxed);
}

void Tiering::on_interval(uint16_t phase, uint64_t step, uint32_t interval) {
  if (!enabled_ || dry_run_) return;
  int32_t slot = slot_of_phase(phase);
  if (slot >= 0) migrator_.post_boundary(static_cast<uint32_t>(slot), step, interval);
}

void Tiering::on_phase_left() {
  if (!enabled_) return;
  int32_t was = active_slot_.exchange(-1, std::memory_order_acq_rel);
  if (was >= 0) {  // its step did not end in a step of its own phase
    slots_[was].trial.step_start = 0;
    slots_[was].fit.step_start = 0;
  }
  if (!dry_run_) migrator_.post_idle();
}

uint64_t Tiering::fast_in_use() const {
  int64_t used = static_cast<int64_t>(migrator_.fast_bytes()) + pending_fast_.load(std::memory_order_seq_cst);
  return used > 0 ? static_cast<uint64_t>(used) : 0;
}

// Takes off the fast tier's count now what on_free() would take off when it gets to this free (which
// makes up any difference). Relaxed reads of what the sequencer writes: when the object's birth is not
// sequenced yet, its reservation still counts it and nothing is credited; when a demotion races the
// free, the count is short by the object until the free is sequenced.
uint16_t Tiering::free_credit(uint32_t log_index, uintptr_t address) {
  if (!enabled_ || dry_run_ || log_index == kNoLogIndex || log_index >= log_capacity_ ||
      !placing_.load(std::memory_order_acquire))
    return 0;
  uint32_t v = entry_of(log_index);
  if (!v) return 0;
  uint64_t size = log_->at(log_index)->size;
  if (v != kFallbackFast) {
    uint32_t slot = v >> kSlotShift, e = (v & kEntryMask) - 1;
    if (slot >= plan_count()) return 0;
    const PlanSlot& s = slots_[slot];
    // An object planned in chunks may be partly fast: on_free() takes off what it held.
    if (s.first_entry[e + 1] - s.first_entry[e] != 1) return 0;
    const EntryState& st = s.states[s.first_entry[e]];
    if (st.address.load(std::memory_order_acquire) != address ||
        EntryState::tier_of(st.state.load(std::memory_order_acquire)) != kTierFast)
      return 0;
  }
  migrator_.add_fast_bytes(-static_cast<int64_t>(size));
  return kFreeCredited;
}

uint8_t Tiering::birth_tier(uint32_t site, uint64_t size, bool* reserved) {
  *reserved = false;
  if (!placing_.load(std::memory_order_acquire)) return kTierFast;
  int32_t slot = active_slot_.load(std::memory_order_acquire);
  if (slot < 0) return kTierSlow;  // the fallback
  TokenEntry* t = find_token(slots_[slot], site, size);
  if (!t) return kTierSlow;
  uint32_t k = t->mixed ? t->next_k.fetch_add(1, std::memory_order_relaxed) : 0;
  if (!((t->fast_mask >> (k < 63 ? k : 63)) & 1)) return kTierSlow;
  uint64_t budget = slots_[slot].moving().exec.budget;  // every candidate's
  if (budget != UINT64_MAX) {
    // Reserved first, then checked: a promotion racing for the same room does the same
    // (Migrator::reserve_fast), so both cannot pass.
    pending_fast_.fetch_add(static_cast<int64_t>(size), std::memory_order_seq_cst);
    if (fast_in_use() > budget) {  // with this birth's reservation
      pending_fast_.fetch_sub(static_cast<int64_t>(size), std::memory_order_relaxed);
      budget_guarded_.fetch_add(1, std::memory_order_relaxed);
      return kTierSlow;
    }
  } else {
    pending_fast_.fetch_add(static_cast<int64_t>(size), std::memory_order_relaxed);
  }
  *reserved = true;
  return kTierFast;
}

int Tiering::pinned_node(uint32_t site, uint64_t size) {
  if (!enabled_ || dry_run_ || !placing_.load(std::memory_order_acquire)) return -1;
  bool reserved = false;
  uint8_t tier = birth_tier(site, size, &reserved);
  // Pinned memory is not an arena object: it never reaches on_allocation() as a reservation.
  if (reserved) cancel(size);
  return tier == kTierFast ? fast_node_ : slow_node_;
}

void Tiering::after_fork_child() {
  in_child_ = true;
  migrator_.forget();
  // A child's allocations are not the parent's step: nothing is placed or moved there.
  placing_.store(false, std::memory_order_release);
  active_slot_.store(-1, std::memory_order_release);
  dry_run_ = true;
}

sentinel_tiering Tiering::record() const {
  sentinel_tiering t{};
  t.policy = cfg_.policy;
  t.fast_node = fast_node_;
  t.slow_node = slow_node_;
  t.flags = budget_flags();
  for (uint32_t i = 0; i < plan_count() && !t.fast_budget_bytes; ++i)  // the first plan that stands
    if (!slots_[i].retired) t.fast_budget_bytes = slots_[i].moving().plan.header.fast_budget_bytes;
  t.budget_share_ppm = budget().share_ppm;
  t.move_method = migrator_.method() == MoveMethod::mbind ? 1 : 0;
  t.migrate_bytes_per_s = migrator_.bandwidth();
  t.fallback_objects = fallback_objects_;
  t.fallback_bytes = fallback_bytes_;
  t.pinned_objects = pinned_objects_;
  t.pinned_bytes = pinned_bytes_;
  t.fast_peak_bytes = migrator_.steady_peak_bytes();
  t.migrated_bytes = migrator_.migrated_bytes();
  t.late_migrations = migrator_.late();
  t.failed_pages = migrator_.failed_pages();
  t.raced_frees = migrator_.raced_frees();
  t.placed_at_birth_fast = born_fast_;
  t.placed_at_birth_slow = born_slow_;
  return t;
}

}  // namespace sentinel
