// The process id this copy of Sentinel's memory belongs to. A vfork child (Python's subprocess, posix_spawn)
// runs in its parent's memory until it execs, and pthread_atfork handlers do not run for it: whatever it
// writes into Sentinel's state it writes into the parent's. Code that records what the program asks (the
// signal hooks' view of the program's handlers) checks this first and leaves the parent's record alone.
#pragma once

namespace sentinel {

// At start and in a forked child (pthread_atfork): this process owns the memory now.
void note_own_pid();
// True in a vfork child before its exec: getpid() differs from the owner's.
bool in_borrowed_memory();

}  // namespace sentinel
