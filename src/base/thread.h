// Sentinel's own threads (the drain thread, the migrator): started with every signal blocked, so that
// no signal meant for the program (or a profiling fault's SIGSEGV from another thread) is delivered to
// them, with a small stack, and named for ps/top.
#pragma once
#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace sentinel {

// Starts fn(arg) on a new thread whose signal mask blocks everything (the calling thread's mask is
// unchanged on return), with a stack of stack_bytes, named `name` (at most 15 characters). Returns
// pthread_create's result: 0 when started, else the error (errno is not set).
int start_quiet_thread(pthread_t* thread, void* (*fn)(void*), void* arg, size_t stack_bytes, const char* name);

// Sleeps while *word == expected, for at most timeout_ns, or until futex_wake(word) (process-private
// futex). Returns at once when *word differs; spurious returns are possible, so callers re-check.
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, uint64_t timeout_ns);
// Wakes one thread sleeping in futex_wait(word). One system call, async-signal-safe.
void futex_wake(std::atomic<uint32_t>* word);

}  // namespace sentinel
