// gemini --report: the plan and its predicted cost, per segment and layer:
// cores, partition, batch groups, predicted time, energy by component and
// the resource that binds each layer.
#pragma once

#include <string>

#include "gemini/cost.hpp"
#include "gemini/plan.hpp"

namespace cct::gemini {

std::string format_report(const CostModel& model, const Plan& plan, const PlanCost& cost);

}  // namespace cct::gemini
