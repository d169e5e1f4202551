#include "runtime/fatal_report.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "base/guard.h"
#include "base/log.h"
#include "base/signal_names.h"
#include "profile/signals.h"
#include "runtime/runtime_state.h"

namespace sentinel {

namespace {

RuntimeState* g_report_state = nullptr;
uintptr_t g_own_lo = 0, g_own_hi = 0;
DumpFn g_dump = nullptr;

// The kernel's code for a fault, or how a sent signal came ("SI_TKILL": raise, abort).
void describe_code(LineBuf& b, int signum, int code) {
  if (const char* name = code > 0 ? fault_code_name(signum, code) : nullptr) {
    b.str(name);
  } else if (code == SI_TKILL) {
    b.str("SI_TKILL, raised by the process");
  } else if (code == SI_USER) {
    b.str("SI_USER, sent by kill");
  } else {
    b.str("code ").i64(code);
  }
}

const char* base_name(const char* path) {
  const char* b = path;
  for (const char* p = path; *p; ++p)
    if (*p == '/') b = p + 1;
  return b;
}

bool own_code(uintptr_t pc) {
  return pc - g_own_lo < g_own_hi - g_own_lo;
}

// "0x7f...  libtorch_cpu.so+0x1234", or the bare address outside every known module.
void frame_line(const char* label, uintptr_t pc) {
  LineBuf b;
  b.str("  ").str(label).str(" ").hex(pc);
  uint32_t index;
  uint64_t offset;
  if (g_report_state->modules.locate(pc, &index, &offset)) {
    const ModuleTable& t = g_report_state->modules;
    b.str("  ").str(base_name(t.path(t.at(index)))).str("+").hex(offset);
  }
  if (own_code(pc)) b.str("  (Sentinel)");
  log_line(LogLevel::error, b);
}

// The crashing thread's stack from the instruction on: `pc`, then its callers (just `pc` where no
// unwinder may run here). How many frames.
uint32_t crash_stack(uintptr_t pc, uintptr_t* out, uint32_t cap) {
  uint32_t k = 0;
  if (pc) out[k++] = pc;
  // Both unwinders step through the signal frame. glibc's backtrace() loads libgcc_s on its first call
  // (dlopen, which takes locks): only once sites have been captured, so that the load is done.
  const UnwindMethod m = g_report_state->unwinder.method();
  if (m == UnwindMethod::none || (m == UnwindMethod::backtrace && g_report_state->sites.count() == 0)) return k;
  uintptr_t frames[32];
  const uint32_t n = g_report_state->unwinder.capture(frames, 32);
  // The unwind starts in this handler: after the signal trampoline comes the faulting frame (pc), then
  // its callers.
  uint32_t i = 0;
  while (i < n && frames[i] != pc) ++i;
  for (i = i < n ? i + 1 : 0; i < n && k < cap; ++i) out[k++] = frames[i];
  return k;
}

void report(int signum, const siginfo_t* si, const void* uc, bool in_sentinel, const uintptr_t* stack, uint32_t n) {
  const auto* ctx = static_cast<const ucontext_t*>(uc);
  const uintptr_t pc = ctx ? static_cast<uintptr_t>(ctx->uc_mcontext.gregs[REG_RIP]) : 0;
  char name[17] = {};
  prctl(PR_GET_NAME, name, 0, 0, 0);
  LineBuf b;
  if (const char* named = signal_name(signum)) {
    b.str(named);
  } else {
    b.str("signal ").i64(signum);
  }
  b.str(" (");
  describe_code(b, signum, si ? si->si_code : 0);
  b.str(")");
  if (si && si->si_code > 0) b.str(" at address ").hex(reinterpret_cast<uintptr_t>(si->si_addr));
  b.str(" in thread ").i64(static_cast<int64_t>(syscall(SYS_gettid))).str(" \"").str(name).str("\": ");
  b.str(own_code(pc)        ? "in Sentinel's own code, a bug of Sentinel's"
        : in_sentinel       ? "while the thread ran Sentinel's own work"
        : signum == SIGSEGV ? "not one of Sentinel's profiling faults; the program's own"
                            : "the program's own");
  b.str(in_sentinel ? ". No dump is written (Sentinel's state may be torn); the process ends by it; frames follow"
                    : ". The process ends by it; frames follow");
  log_line(LogLevel::error, b);
  for (uint32_t i = 0; i < n; ++i) frame_line(i == 0 && pc ? "pc" : "at", stack[i]);
}

// The CRASH record's entry: the crash, and its stack as a site of the dump's SITES.
void record_crash(int signum, const siginfo_t* si, uintptr_t pc, const uintptr_t* stack, uint32_t n) {
  sentinel_crash& c = g_report_state->crash;
  c.signal = static_cast<uint32_t>(signum);
  c.code = si->si_code;
  c.address = si->si_code > 0 ? reinterpret_cast<uintptr_t>(si->si_addr) : 0;
  c.pc = pc;
  c.thread = static_cast<uint32_t>(syscall(SYS_gettid));
  c.site = n ? g_report_state->sites.intern(stack, n) : kNoSite;  // intern() keeps SENTINEL_MAX_FRAMES
  g_report_state->crashed = true;
}

// The profiler's SIGSEGV handler found a fault that is not its own, and no handler of the program's.
void report_fault(const siginfo_t* si, const void* uc) {
  report_crash(SIGSEGV, si, uc);
}

}  // namespace

void report_crash(int signum, const siginfo_t* si, const void* uc) {
  if (!g_report_state) return;
  // A crash signal sent rather than taken (GNU timeout raises its child's fatal signal on itself to end
  // the same way; kill -SEGV) happened at no instruction of this thread: the dump, as for SIGTERM.
  const bool located = si && (si->si_code > 0 || (signum == SIGABRT && si->si_code == SI_TKILL));
  if (!located) {
    if (g_dump) g_dump(signum);
    return;
  }
  const auto* ctx = static_cast<const ucontext_t*>(uc);
  const uintptr_t pc = ctx ? static_cast<uintptr_t>(ctx->uc_mcontext.gregs[REG_RIP]) : 0;
  // Sentinel's own code, or a library it called (libunwind, libnuma, libc) while a hook, the migrator
  // or the dump writer held its state halfway through a change: writing the dump could fault again or
  // wait for good on a lock this thread holds.
  const bool in_sentinel = own_code(pc) || t_guard != 0;
  uintptr_t stack[24];  // the report prints them all; the dump's site keeps the first SENTINEL_MAX_FRAMES
  const uint32_t n = crash_stack(pc, stack, 24);
  report(signum, si, uc, in_sentinel, stack, n);
  if (in_sentinel || !g_dump) return;
  record_crash(signum, si, pc, stack, n);
  g_dump(signum);
}

void arm_fatal_report(RuntimeState* state, uintptr_t own_lo, uintptr_t own_hi, DumpFn dump) {
  g_report_state = state;
  g_own_lo = own_lo;
  g_own_hi = own_hi;
  g_dump = dump;
  sig::set_fatal_report(report_fault);
}

}  // namespace sentinel
