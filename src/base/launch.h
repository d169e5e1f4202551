// Where a process sits in a distributed job, from its launcher's environment: torchrun and
// torch.distributed (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE), Open MPI (OMPI_COMM_WORLD_*),
// MPICH and Intel MPI (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS), Slurm (SLURM_PROCID,
// SLURM_LOCALID, SLURM_NTASKS, SLURM_NTASKS_PER_NODE), first found first. Read once at start, without
// allocation.
#pragma once
#include <cstdint>

namespace sentinel {

struct Launch {
  int32_t rank = -1;  // -1: not part of a job
  int32_t local_rank = -1;
  int32_t world_size = 0;        // 0: unknown
  int32_t local_world_size = 0;  // ranks on this machine; 0: unknown
  // Ranks that share this machine's fast node: local_world_size, at least 1.
  uint32_t sharing() const { return local_world_size > 1 ? static_cast<uint32_t>(local_world_size) : 1u; }
};

Launch read_launch(const char* const* envp);

}  // namespace sentinel
