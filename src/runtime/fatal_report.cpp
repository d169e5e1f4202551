#include "runtime/fatal_report.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "base/log.h"
#include "profile/signals.h"
#include "runtime/runtime_state.h"

namespace sentinel {

namespace {

const RuntimeState* g_report_state = nullptr;
uintptr_t g_own_lo = 0, g_own_hi = 0;

const char* segv_code_name(int code) {
  switch (code) {
    case SEGV_MAPERR:
      return "SEGV_MAPERR";
    case SEGV_ACCERR:
      return "SEGV_ACCERR";
    default:
      return "code";
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

void report(const siginfo_t* si, const void* uc) {
  const auto* ctx = static_cast<const ucontext_t*>(uc);
  const uintptr_t pc = ctx ? static_cast<uintptr_t>(ctx->uc_mcontext.gregs[REG_RIP]) : 0;
  char name[17] = {};
  prctl(PR_GET_NAME, name, 0, 0, 0);
  LineBuf b;
  b.str("SIGSEGV (").str(segv_code_name(si->si_code));
  if (si->si_code != SEGV_MAPERR && si->si_code != SEGV_ACCERR) b.str(" ").i64(si->si_code);
  b.str(") at address ").hex(reinterpret_cast<uintptr_t>(si->si_addr)).str(" in thread ");
  b.i64(static_cast<int64_t>(syscall(SYS_gettid))).str(" \"").str(name).str("\": ");
  b.str(own_code(pc) ? "in Sentinel's own code, a bug of Sentinel's"
                     : "not one of Sentinel's profiling faults; the program's own");
  b.str(". The process ends by it; frames follow");
  log_line(LogLevel::error, b);
  if (pc) frame_line("pc", pc);
  // Both unwinders step through the signal frame. glibc's backtrace() loads libgcc_s on its first call
  // (dlopen, which takes locks): only once sites have been captured, so that the load is done.
  const UnwindMethod m = g_report_state->unwinder.method();
  if (m == UnwindMethod::none || (m == UnwindMethod::backtrace && g_report_state->sites.count() == 0)) return;
  uintptr_t frames[24];
  const uint32_t n = g_report_state->unwinder.capture(frames, 24);
  // The unwind starts in this handler: after the signal trampoline comes the faulting frame (pc), then
  // its callers.
  uint32_t i = 0;
  while (i < n && frames[i] != pc) ++i;
  for (i = i < n ? i + 1 : 0; i < n; ++i) frame_line("at", frames[i]);
}

}  // namespace

void arm_fatal_report(const RuntimeState* state, uintptr_t own_lo, uintptr_t own_hi) {
  g_report_state = state;
  g_own_lo = own_lo;
  g_own_hi = own_hi;
  sig::set_fatal_report(report);
}

}  // namespace sentinel
