// Every thread that can take a profiling fault gets an alternate signal stack of Sentinel's.
//
// Why: the kernel builds a signal frame (some 3 KiB with AVX-512 state) just below the interrupted
// stack pointer. Code that points rsp at memory that is not a stack is then overwritten below it by
// any signal. oneDNN's AVX2 sgemm kernel does exactly that: for K > 2048 it sets rsp to the start of
// a malloc'd workspace, so a fault on a protected tensor inside it wrote the frame over glibc's chunk
// headers (docs/profiling.md, "The signal stack"). The handler is installed with SA_ONSTACK; with a
// stack of its own on every thread, the kernel never writes below the program's rsp.
#pragma once
#include <cstddef>
#include <cstdint>

namespace sentinel::sig {

// The calling thread gets a stack unless it has one already (the program's own is kept) or released
// its stack before (thread exit). Async-signal-safe: mmap and sigaltstack only.
void give_thread_stack();
// The calling thread is ending: its stack is taken off and unmapped (never while on it). Idempotent.
void release_thread_stack();

struct StackStats {
  uint64_t given;     // stacks mapped and installed
  uint64_t kept;      // threads that had the program's stack already
  uint64_t failures;  // mmap or sigaltstack refused: faults on that thread use its own stack
};
StackStats stack_stats();

// The size of each stack: room for the kernel's frame (AT_MINSIGSTKSZ), Sentinel's handler and a
// program handler it forwards to.
size_t stack_bytes();

}  // namespace sentinel::sig
