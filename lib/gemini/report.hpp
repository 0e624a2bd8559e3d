// gemini --report: the plan and its predicted cost, per segment and layer:
// cores, partition, batch groups, predicted time, energy by component and
// the resource that binds each layer.
#pragma once

#include <string>

#include "gemini/cost.hpp"
#include "gemini/plan.hpp"

namespace cct::gemini {

std::string format_report(const CostModel& model, const Plan& plan, const PlanCost& cost);

// --timeline: the cost's timeline as JSON Lines, one step per line:
// {"step": "load", "core": 3, "layer": "Conv_5", "segment": 2, "group": 0, "part": 1, "bytes": 36864, "start": 1200, "end": 2400}
std::string format_timeline(const CostModel& model, const PlanCost& cost);

}  // namespace cct::gemini
