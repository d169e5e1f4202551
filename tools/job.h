// The dumps of one job side by side: every rank's dump that torchrun (or mpirun, srun) left, given as
// several DUMP operands or a directory of them. `sentinel-view summary` prints one row per rank and
// `report` one HTML page; each rank keeps its own full view (summary DUMP).
#pragma once

#include <string>
#include <vector>

namespace sentinel::view {

// Whether the operands name a job: more than one dump, or a directory.
bool is_job(const std::vector<std::string>& operands);

// The job's summary (text or JSON) and its HTML report (to `out`, "-" for stdout). 0; 1 after one
// line on stderr (no dump in a directory, a dump unreadable).
int job_summary(const std::vector<std::string>& operands, bool json);
int job_report(const std::vector<std::string>& operands, const std::string& out);

}  // namespace sentinel::view
