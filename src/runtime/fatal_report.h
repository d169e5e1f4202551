// A crash under the library says where it happened. When a fault that is not one of Sentinel's
// profiling faults is about to end the process (signals.h), stderr gets one line naming the signal, the
// faulting address, the thread and whether the instruction was in Sentinel's own code, then one line per
// frame as module+offset (what addr2line and gdb take), so that a crash in a CI guest, whose core stays
// there, can still be placed. The process then ends by the signal as it would have.
#pragma once
#include <cstdint>

namespace sentinel {

struct RuntimeState;

// Arms the report for this process: `own_lo`/`own_hi` bound Sentinel's text.
void arm_fatal_report(const RuntimeState* state, uintptr_t own_lo, uintptr_t own_hi);

}  // namespace sentinel
