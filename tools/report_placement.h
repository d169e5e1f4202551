// The report's placement section (tools/report_placement.cpp).
#pragma once

#include <ostream>

#include "tiering_model.h"

namespace sentinel::view {

// "<h2>Placement</h2>" and its plots (#placement-occupancy, #placement-hits) or a note.
void placement_section(std::ostream& s, const TieringModel& t);

}  // namespace sentinel::view
