// irgen: Frontend IR + mapping + architecture -> Scheduler IR, and the
// semantic checker of any Scheduler IR (formats/Scheduler_IR_Format.md).
//
// generate() expands every mapped layer into workloads (one per batch group
// and partition part, on the part's core), links producers and consumers by
// transfer ids (core to core, through DRAM across segments unless the
// tensor stays in the core's L2, DRAM for weights and the network's inputs
// and outputs), allocates L2 and the weight buffer (WL0) over the workloads'
// lifetimes, schedules weight loads as early as the buffers allow
// (prefetch), records the L2 / WL0 snapshot before each workload, and tiles
// each workload with the intra-core compiler (tiling.hpp).
//
// check() validates a Scheduler IR across workloads: every consumed transfer
// has exactly one producer and matching coordinates, no two live tensors
// overlap in L2 or WL0, capacities and ring-buffer regions hold, coordinates
// lie within the layers (with a FIR) and each layer's output is covered
// exactly once; every piece an L2 tensor holds names a transfer made on its
// core or sent to it, from the core its source names (asm pairs receives
// with sends by these ids). With a FIR, a windowed layer's tile spans with
// its input and padding exactly its windows, and weights agree with their layers: DRAM weight
// transfers carry whole records of the layer's shape, PE tiles read the
// input channels (whole groups) their output channels need, and the WL0
// entries hold records of that shape for every tile.
#pragma once

#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "fir/fir.hpp"
#include "footprint/layout.hpp"
#include "mapping/mapping.hpp"
#include "sir/sir.hpp"
#include "support/error.hpp"

namespace cct::irgen {

// Where a PE layer's weights go from DRAM: straight into the weight buffer
// (WL0, read by the array at full speed, but the buffer is small) or into L2,
// from where the array streams them tile by tile (slower to read, but L2
// holds weights many layers ahead). Auto decides per layer with the model.
enum class WeightPath { Auto, Wl0, L2 };

struct Options {
  std::string fir_file = "<fir>";          // names the inputs in errors
  std::string mapping_file = "<mapping>";
  bool prefetch = true;                    // load weights ahead of their workload when buffers allow
  bool in_place_add = true;                // element-wise adds may write over an input that dies with them
  bool send_across_segments = true;        // a later segment's read of another core's output is sent core to core (else through DRAM)
  bool early_receives = true;              // a buffer other cores send into (no DRAM reloads) is received during the workload before its reader
  bool store_overlap = true;               // a stored output stays live through the workloads that compute while it is stored
  bool load_overlap = true;                // an activation loaded from DRAM is live from workloads before its reader, so the load overlaps their compute
  WeightPath weight_path = WeightPath::Auto;
  double stream_tolerance = 0.05;          // Auto: stream from L2 unless that is this much slower
  // A part whose weights do not fit the weight buffer is computed in runs of
  // output channels that do (each a workload with its own DRAM -> WL0 load,
  // one output tensor); otherwise its weights stream from L2.
  bool split_for_wl0 = true;
};

// generate()'s refusal of a mapping one of whose workloads does not fit L2
// with everything kept for later segments spilled (irgen/spill.hpp): the
// segment of that workload, so that a mapper can split it there.
class CapacityError : public Error {
 public:
  CapacityError(const std::string& message, int segment) : Error(kExitInvalidInput, message), segment_(segment) {}
  int segment() const { return segment_; }

 private:
  int segment_;
};

// `estimated_cycles`, when given, receives the end of the program on the
// timeline the weight paths were chosen with (compute and DRAM, no contention
// between cores).
sir::Schedule generate(const fir::Graph& graph, const mapping::Mapping& mapping, const arch::Architecture& arch,
                       const Options& options = {}, int64_t* estimated_cycles = nullptr);

// Statistics of a generated schedule (for --stats and the benchmark).
struct Summary {
  size_t workloads = 0, tiles = 0;
  int64_t predicted_cycles = 0;   // sum of workload times (no overlap)
  int64_t weight_bytes = 0;       // weights loaded from DRAM
  int64_t wl0_direct_layers = 0;  // layers whose weights go DRAM -> WL0
  int64_t l2_stream_layers = 0;   // layers whose weights stream from L2
};
Summary summarize(const sir::Schedule& s);

// The weight record of one output channel of a PE layer in the chip's layout
// (footprint/layout.hpp): [C / groups, kh, kw] for convolutions (C the
// input's channels), for dense layers the [C, H, W] of the input sample they
// take whole (fir::pe_conv); c = 0 when the layer has no such weights.
footprint::WeightRecord layer_weight_record(const arch::Architecture& arch, const fir::Layer& layer);

// Semantic checks; every problem as "file: /json/pointer: what". `graph`
// is optional: without it, layer shapes are taken from the schedule (the
// union of each layer's workloads) and coverage is checked against that.
std::vector<std::string> check(const sir::Schedule& s, const arch::Architecture& arch, const fir::Graph* graph,
                               const std::string& file, size_t max_problems = 100);

}  // namespace cct::irgen
