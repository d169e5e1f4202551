// Sentinel's own threads (the drain thread, the migrator): started with every signal blocked, so that
// no signal meant for the program (or a profiling fault's SIGSEGV from another thread) is delivered to
// them, with a small stack, and named for ps/top.
#pragma once
#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace sentinel {

// The CPUs Sentinel's threads run on: the process's when the library starts (note_start_cpus(), from its
// constructor), not the creating thread's. A thread inherits its creator's affinity, and Sentinel's threads
// start from whichever thread happens to need them (the sequencer runs synchronously on an allocating thread
// at times): a training loop that pinned its own thread to one CPU later (OpenMP's binding, a benchmark's
// sched_setaffinity of that thread) would hand its pin to the migrator, whose page copies would then take
// the training thread's CPU. A process started under taskset keeps its set.
void note_start_cpus();
// How many CPUs note_start_cpus() saw (0: unknown, before it ran or where it failed).
uint32_t start_cpu_count();

// Starts fn(arg) on a new thread whose signal mask blocks everything (the calling thread's mask is
// unchanged on return), with a stack of stack_bytes, named `name` (at most 15 characters). Returns
// pthread_create's result: 0 when started, else the error (errno is not set). It runs on the CPUs
// note_start_cpus() saw (where those are no longer allowed: the creator's).
int start_quiet_thread(pthread_t* thread, void* (*fn)(void*), void* arg, size_t stack_bytes, const char* name);

// Sleeps while *word == expected, for at most timeout_ns, or until futex_wake(word) (process-private
// futex). Returns at once when *word differs; spurious returns are possible, so callers re-check.
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, uint64_t timeout_ns);
// Wakes one thread sleeping in futex_wait(word). One system call, async-signal-safe.
void futex_wake(std::atomic<uint32_t>* word);

}  // namespace sentinel
