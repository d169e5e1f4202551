#include "base/launch.h"

#include <cstring>
#include <initializer_list>

#include "base/parse.h"

namespace sentinel {

namespace {

// The value of NAME in envp, or nullptr.
const char* lookup(const char* const* envp, const char* name) {
  const size_t n = strlen(name);
  for (const char* const* e = envp; e && *e; ++e)
    if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  return nullptr;
}

// The first of `names` set to a count below 2^31; -1 when none is.
int32_t first_count(const char* const* envp, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    uint64_t v = 0;
    const char* text = lookup(envp, name);
    if (text && parse_count(text, &v) && v < (uint64_t{1} << 31)) return static_cast<int32_t>(v);
  }
  return -1;
}

}  // namespace

Launch read_launch(const char* const* envp) {
  Launch l;
  l.rank = first_count(envp, {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"});
  l.local_rank = first_count(envp, {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"});
  int32_t world = first_count(envp, {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"});
  int32_t local =
      first_count(envp, {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"});
  l.world_size = world > 0 ? world : 0;
  l.local_world_size = local > 0 ? local : 0;
  return l;
}

}  // namespace sentinel
