// gemini's cost model: the latency and energy of a plan on an architecture,
// predicted from what irgen, asm and zebusim do with its mapping.
//
// The plan is expanded as irgen expands a mapping: one workload per batch
// group and partition part, on the part's core, in (segment, group, layer,
// part) order; inputs produced on the same core stay in its L2, inputs from
// another core of the same segment are sent core to core, inputs from an
// earlier segment on another core go through DRAM. Weights are loaded once
// per core and layer, as early as the weight buffer (slices that fit it) or
// L2 (the others, streamed tile by tile) has room, in first-use order; a
// part whose weights do not fit the weight buffer is cut into runs of output
// channels as irgen cuts it (irgen::weight_runs), a workload each.
//
// Each core then runs its workloads in order, as asm lays them out:
//  - the DRAM transfers of a workload (its own loads, the store of the
//    previous workload's output, the weight loads issued ahead) wait for the
//    previous workload's compute and run one after another in program order;
//  - a workload computes for the time irgen's tiler predicts (lib/timing,
//    the model zebusim executes) once its inputs and weights are in and the
//    sends of the previous workload have left its output buffer;
//  - a core-to-core transfer starts when the producer has computed, the
//    receiver has finished its previous workload, and both the sender's and
//    the receiver's transfer queues are free.
// A data movement layer (concat, slice, gather) computes nothing: its
// inputs' pieces are sent, loaded or copied into its output, as irgen and
// asm move them (gemini/README.md, Data movement layers).
// A DRAM transfer takes its DRAM latency and route latency, then its bytes
// at the bandwidth of the narrowest resource on its route (a DRAM channel, a
// D2D link, a NoC link); a send moves its bytes at once and its receive ends
// the route's latency after the last byte (zebusim's so_mov / si_mov);
// transfers sharing a resource take turns on it.
// Cores are not synchronised across segments (zebusim neither): a core
// starts its next segment when it is done with the previous one.
//
// Tensors kept in L2 for later segments go through DRAM when L2 runs out,
// by irgen's rule (irgen/spill.hpp), and the stores and reloads are priced.
// A plan whose activations still do not fit a core's L2 is infeasible
// (irgen would refuse it); the cost says by how many bytes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "arch/arch.hpp"
#include "gemini/network.hpp"
#include "gemini/plan.hpp"
#include "timing/timing.hpp"

namespace cct::gemini {

enum class Objective { Latency, Energy, Edp };
std::string_view objective_name(Objective o);

// What a layer's cores spend their time on: computing, or waiting for data
// over DRAM, the NoC, die-to-die links.
enum class Binding : uint8_t { Compute, Dram, Noc, D2d };
std::string_view binding_name(Binding b);

struct LayerCost {
  int layer = 0;
  int64_t part_cycles = 0;      // compute of one part for one batch group
  int64_t start = 0, end = 0;   // first compute start, last compute end
  int64_t dram_bytes = 0;       // loaded (weights, inputs) and stored for it
  int64_t transfer_bytes = 0;   // received from other cores
  int64_t l2_peak = 0;          // largest activation footprint of one of its workloads
  // Summed over its workloads: compute, and time waiting for data by what
  // the data waited on (the largest is the binding resource).
  int64_t busy_cycles = 0;
  int64_t wait_cycles[4] = {0, 0, 0, 0};  // by Binding
  timing::Energy energy;        // dynamic energy (no static)
  Binding binding = Binding::Compute;
};

struct SegmentCost {
  int64_t start = 0, end = 0;   // earliest compute start and latest end over its workloads
  timing::Energy energy;        // dynamic energy (no static)
  std::vector<LayerCost> layers;
};

// One step of the predicted timeline (with detail): a compute, a DRAM load
// or store, or a core-to-core send (its receive ends with it).
struct TimelineStep {
  enum Kind : uint8_t { Compute, Load, Store, Send } kind = Compute;
  int core = 0;
  int layer = 0;        // the layer of the workload (weights: the layer they are for)
  int segment = 0, group = 0, part = 0;  // of the workload the step belongs to
  int64_t bytes = 0;
  int peer = -1;        // sends: the receiving core
  int64_t start = 0, end = 0;
};
std::string_view step_name(TimelineStep::Kind k);

struct PlanCost {
  int64_t cycles = 0;
  timing::Energy energy;  // static energy over `cycles` included
  int64_t overflow = 0;   // bytes beyond a core's L2 (0: fits)
  std::string problem;    // the first capacity problem, for messages
  int overflow_segment = -1;  // the segment of the largest overflow (-1: none)
  // The part of the overflow that irgen cannot relieve by sending tensors
  // kept for later segments through DRAM: bytes by which one workload's own
  // inputs and output exceed L2, and its segment (-1: none).
  int64_t own_overflow = 0;
  int own_overflow_segment = -1;
  // A PE layer irgen cannot compute as the plan places it (-1: none): a part
  // whose weights do not fit the weight buffer, not even one output channel
  // of which fits half of it (irgen::WeightRuns::TooLarge). Counted in
  // `overflow` too.
  int uncomputable = -1;
  int cores_used = 0;
  std::vector<SegmentCost> segments;
  std::vector<TimelineStep> timeline;  // with detail: every step, per core in program order
  bool feasible() const { return overflow == 0; }
  // The objective's value (lower is better). Infeasible plans are penalised
  // in proportion to the bytes that do not fit, so that a search can walk
  // out of them but never prefers one.
  double value(Objective o, const arch::Architecture& a) const;
};

// How irgen placed each weight load of a plan it built (it decides the
// paths and issue points on its own timeline, searching; make_buildable
// reads them back), keyed by (core, layer, first output channel): DRAM ->
// weight buffer or DRAM -> L2, the position on the core of the workload it
// is issued with, and whether the workloads compute from the slice whole in
// the weight buffer (at its speed) or from tiles streamed out of L2. The
// model's own rule places the loads the map does not name.
struct BuiltWeight {
  bool direct = true;
  int issue = 0;
  bool whole_in_wl0 = true;
};
// What irgen decided for a plan it built and the model decides on its own
// otherwise: the weight paths, the workloads (Scheduler IR ids, which
// number workloads in the model's order) whose output it sent through DRAM
// to a later reader on their own core because L2 ran out, and where the
// receives of each workload may start. irgen places tensors first fit and
// may spill more than the model's sums of live bytes (at batch 64 it
// spilled twice the bytes); the figures reported are those of the program
// irgen builds.
struct BuiltPlan {
  std::map<std::tuple<int, int, int64_t>, BuiltWeight> weights;
  std::vector<std::pair<int64_t, int>> spilled;  // (workload id, layer), sorted
  // (core, position of the reader) -> the last position before its received
  // inputs' buffers whose tensors share their bytes, -1 when none does: asm's
  // tokens let a receive start when what used its bytes is done (the model's
  // own rule: the compute two workloads before the reader).
  std::map<std::pair<int, int>, int> receive_after;
  // (core, position) -> the last earlier position whose output, stored to
  // DRAM, held bytes this workload's output overwrites: asm's PE waits for
  // that store (a layer storing every output alternates two buffers, so the
  // PE runs at the stores' pace when they are slower).
  std::map<std::pair<int, int>, int> store_before;
};

class CostModel {
 public:
  CostModel(const Network& net, const arch::Architecture& a);
  ~CostModel();
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  const Network& network() const { return net_; }
  const arch::Architecture& arch() const { return arch_; }

  // The cost of a plan. Layers the plan leaves out (a partial plan, as the
  // segmentation prices candidate segments) are taken to be in DRAM.
  // `detail` fills the per-segment and per-layer figures. `program_frame`
  // counts the program's control prologue and epilogue (what a whole
  // program pays once) and the configuration instructions each unit runs
  // when a new layer starts on it (timing::layer_change_config_cycles); the
  // search compares plans without them, since these near-constants of the
  // program must not tilt its choices. `built`: the weight paths irgen chose
  // for this plan (reported figures; the search prices plans irgen has not
  // built with the model's rule).
  PlanCost evaluate(const Plan& plan, bool detail, bool program_frame = true, const BuiltPlan* built = nullptr) const;

  // Compute cycles of one part of a layer for one batch group, as irgen's
  // tiler predicts for weights in the weight buffer when they fit it
  // (memoised).
  int64_t part_cycles(int layer, const mapping::Partition& p, int64_t batch_groups) const;
  // Weight bytes one part loads.
  int64_t part_weight_bytes(int layer, const mapping::Partition& p) const;
  // Bandwidth of one stream from DRAM to a core without contention: the
  // narrowest resource on the way (for first allocations).
  double dram_stream_bytes_per_cycle() const;
  // The work all evaluations so far took, in flow updates (one per active
  // transfer each time the shares are recomputed): a measure of search
  // effort that, unlike time, is the same on every machine.
  int64_t work() const;

 private:
  struct Impl;
  const Network& net_;
  const arch::Architecture& arch_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cct::gemini
