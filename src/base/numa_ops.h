// The kernel's NUMA placement calls, as raw system calls: no libnuma state, no allocation, no locks, so
// they can run on the tracked path (mbind of a fresh slot), on the migrator's thread and in the SIGSEGV
// handler (the placement check asks the node of the page it just faulted on).
//
// Fault injection (SENTINEL_FAULT_INJECT, tests only) lives here too, at the one place every move goes
// through, so that a test exercises exactly the code paths a refusing kernel would.
#pragma once
#include <cstddef>
#include <cstdint>

#include "base/config.h"

namespace sentinel::numa {

inline constexpr int kMaxNode = 1023;

// Binds [addr, addr+len) (page-aligned) to `node` before first touch: new pages are taken there when
// it has memory, elsewhere when it does not (MPOL_PREFERRED: never an out-of-memory kill because the
// preferred node is full). Returns 0 or -errno.
int prefer_node(void* addr, size_t len, int node);

// The node of each page (move_pages with no target): nodes[i] >= 0, or -errno for a page not present
// (-ENOENT) or not ours (-EFAULT). Returns 0 or -errno for the call itself.
int query_nodes(uintptr_t* pages, size_t count, int* nodes);
// One page, for the signal handler: the node, or -errno.
int node_of_page(uintptr_t page);

struct MoveResult {
  uint64_t pages_moved = 0;   // now on the target node (moved, or already there)
  uint64_t pages_failed = 0;  // EBUSY, ENOMEM, EACCES...: stayed where they were
  // Never touched (ENOENT), or read but never written (EFAULT: mapped to the shared zero page, which
  // move_pages does not move and which holds no memory of the range's): nothing to move; their first
  // write follows the range's policy.
  uint64_t pages_absent = 0;
  int error = 0;  // -errno of the call itself (0: the per-page status is meaningful)
};

// Moves the pages of [addr, addr+len) to `node`, with move_pages in batches (page and status arrays on
// the caller's stack-free scratch: `scratch` has room for `scratch_pages` pages). `fast_node` tells
// the injected "fast node full" which moves to refuse.
MoveResult move_range(uintptr_t addr, size_t len, int node, uintptr_t* page_scratch, int* status_scratch,
                      int* node_scratch, size_t scratch_pages);
// The same with mbind(MPOL_PREFERRED, MPOL_MF_MOVE): one call per range; the kernel gives no per-page
// status, so pages that did not move are found by querying afterwards only when asked (verify).
MoveResult mbind_move_range(uintptr_t addr, size_t len, int node);

// The calling thread's memory policy, saved so that a placement can be undone: push_preference makes
// the thread prefer `node` for new pages (used around an allocation Sentinel does not serve itself,
// CUDA's pinned host memory), pop_preference restores what was there. False when the kernel refused.
struct SavedPolicy {
  int mode = 0;
  unsigned long mask[16] = {};
  bool saved = false;
};
bool push_preference(int node, SavedPolicy* saved);
void pop_preference(const SavedPolicy& saved);

// Which of the NUMA calls the kernel refuses to this process: a seccomp filter (Docker's and
// containerd's default profiles deny them without CAP_SYS_NICE, with EPERM) or a kernel without NUMA
// (ENOSYS). Each call is made with arguments the kernel rejects as invalid when it does run it
// (EINVAL, ESRCH), so that the probe changes nothing: EPERM or ENOSYS means denied.
enum DeniedCall : uint32_t {
  kDeniedMbind = 1u << 0,
  kDeniedSetMempolicy = 1u << 1,
  kDeniedGetMempolicy = 1u << 2,
  kDeniedMovePages = 1u << 3,
  kDeniedMigratePages = 1u << 4,
};
uint32_t probe_denied_calls();
// Writes the names of the calls in `mask` ("mbind, move_pages") into out.
void denied_call_names(uint32_t mask, char* out, size_t cap);

// Fault injection, set once at start.
void set_fault_injection(const FaultInjection& f, int fast_node);
const FaultInjection& fault_injection();

}  // namespace sentinel::numa
