// The mapping search (after Cai et al., "Gemini", HPCA 2024):
//  1. segmentation by dynamic programming over the layer order: the cost of
//     a candidate segment is the cost model's for a balanced first
//     allocation (cores in proportion to each layer's work, the best
//     partition for that count, layers laid out along a snake through the
//     dies, the best number of batch groups); a segment stops growing where
//     its tensors no longer fit the cores' L2;
//  2. simulated annealing on each segment in turn, with the paper's moves:
//     swap cores between layers (near ones first, the distance shrinking
//     with the temperature), move cores from one layer to another, change a
//     layer's partition, change a tensor's DRAM channel, change the number of
//     batch groups. The temperature starts from the segment's starting cost
//     and cools geometrically.
// Deterministic for a seed (own distributions over std::mt19937_64).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fir/fir.hpp"
#include "gemini/cost.hpp"
#include "gemini/plan.hpp"

namespace cct::gemini {

struct SearchOptions {
  Objective objective = Objective::Latency;
  uint64_t seed = 1;
  int effort = 1;           // multiplies the annealing iterations (>= 1)
  double time_limit = 0;    // seconds; 0: none. When reached, the best plan so far is returned
  // Called with the fraction done (0..1) now and then; may be empty.
  std::function<void(double)> progress;
};

struct SearchStats {
  int64_t evaluations = 0;     // cost model evaluations (DP and annealing)
  int64_t dp_evaluations = 0;  // of which for the segmentation
  int64_t work = 0;            // cost model work (CostModel::work), DP included
  int64_t dp_work = 0;
  int64_t accepted = 0;      // annealing moves accepted
  int64_t improved = 0;      // annealing moves that improved the best
  double seconds = 0;
  double dp_seconds = 0;       // of which for the segmentation
  bool timed_out = false;
};

struct SearchResult {
  Plan plan;
  PlanCost cost;      // with per-layer detail
  SearchStats stats;
};

// The searched plan.
SearchResult search(const CostModel& model, const SearchOptions& options);

// Every layer in turn on all cores (the best partition of as many cores as
// the layer allows), one layer per segment, the whole batch at once.
Plan sequential_plan(const CostModel& model, Objective objective);

// Plans that keep each sample on the same cores from layer to layer: every
// layer on all cores it can use, one layer per segment, the batch split b
// ways (each divisor b of the batch up to the core count) and the cores
// left over (cores / b) split along one axis of the layer's output (h
// first, w first or k first, the largest factor some axis takes). A layer's
// input then mostly stays in its core's L2 instead of going through DRAM
// (what the per-layer partition choice of the sequential baseline misses).
std::vector<Plan> batch_split_plans(const CostModel& model);

// The segmentation's first allocation of layers first..last as one segment
// with `batch_groups` groups: cores in proportion to each layer's work, the
// best partition of each count, layers along a snake through the dies.
SegmentPlan initial_segment(const CostModel& model, int first, int last, int64_t batch_groups);

// Every layer on core 0, one layer per segment, in order (single-core chips).
Plan single_core_plan(const Network& net);

// Splits what irgen could not build by spilling (one workload's own inputs
// and output over a core's L2): more batch groups, then row stripes, for the
// segment where it happens and the segments before it that it reads. The
// search does this to its result; --baseline sequential to the baseline.
void relieve(const CostModel& model, Plan& plan);
// One more split of a segment (more batch groups, else more row stripes),
// for a segment irgen refused (irgen::CapacityError); false when none is left.
bool split_segment(const CostModel& model, Plan& plan, int segment);

// The model sums what is live in L2; irgen places it first fit and may
// spill more, or other tensors. So irgen builds the plan's mapping, and a
// segment it refuses for capacity (irgen::CapacityError) is split further
// (split_segment) until it builds: the number of splits. Throws an input
// error naming the capacity and the excess when nothing is left to split.
// The tool runs this before writing any mapping. `built`, when given,
// receives the weight paths irgen chose for the plan as built
// (built_plan).
int make_buildable(const CostModel& model, const fir::Graph& graph, Plan& plan, const std::string& fir_file,
                   BuiltPlan* built = nullptr);

// irgen builds the plan as it stands and its weight paths and issue points
// are read back, for the figures gemini reports (throws irgen's refusal).
BuiltPlan built_plan(const CostModel& model, const fir::Graph& graph, const Plan& plan,
                               const std::string& fir_file);

}  // namespace cct::gemini
