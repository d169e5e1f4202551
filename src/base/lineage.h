// Whether this process was started by one that runs Sentinel too: a compiler that torch.compile
// starts, a rank that torchrun starts, a worker that multiprocessing spawns. They inherit LD_PRELOAD
// from a process the user meant to profile; runtime/ decides by it whether such a child writes a dump
// (docs/config.md, "Which processes write a dump"). No allocation: read in the library constructor.
#pragma once

namespace sentinel {

// True when the parent process has the object that contains `own_address` (this library) mapped,
// compared by device and inode, so that it holds whatever path each process loaded it by. False
// when /proc cannot be read (then the process counts as one the user started).
bool parent_maps_object_of(const void* own_address);

// A process that another one under Sentinel started wrote its dump: it leaves a mark for its parent (an
// empty file in /dev/shm, else /tmp, named by the parent's pid and start time, so that a later process
// with the same pid never reads it). The parent reads and removes its mark at exit: a launcher (torchrun,
// a spawning script) that found no training step writes no dump of its own when its children wrote
// theirs. Both false when the mark cannot be made or is not there.
bool mark_dump_for_parent();
bool children_marked_dumps();

}  // namespace sentinel
