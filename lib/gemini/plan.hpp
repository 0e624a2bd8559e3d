// gemini's layer-centric encoding of a mapping (after Cai et al., HPCA 2024):
// the network cut into segments of consecutive layers; inside a segment,
// per layer, its own group of cores, a partition of its output over them
// (b, k, h, w) and a DRAM channel per tensor; per segment, the number of
// batch groups pipelining through it. It converts one to one into the
// mapping format (formats/Mapping_Format.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "gemini/network.hpp"
#include "mapping/mapping.hpp"

namespace cct::gemini {

struct LayerPlan {
  int layer = 0;                // index into Network::layers
  std::vector<int> cores;       // part i runs on cores[i]
  mapping::Partition part;      // product == cores.size()
  mapping::DramChannels dram;   // channel per tensor that goes through DRAM
  bool operator==(const LayerPlan&) const = default;
};

struct SegmentPlan {
  int64_t batch_groups = 1;
  std::vector<LayerPlan> layers;  // consecutive layers of the network, in order
  int64_t row_groups = 1;         // row stripes per batch group (mapping::row_stripes); partitions keep h = 1
  int first() const { return layers.front().layer; }
  int last() const { return layers.back().layer; }
  bool operator==(const SegmentPlan&) const = default;
};

struct Plan {
  std::vector<SegmentPlan> segments;
  bool operator==(const Plan&) const = default;
};

// The mapping file of a plan (arch name, FIR name, batch from the network).
mapping::Mapping to_mapping(const Plan& plan, const Network& net, const arch::Architecture& a);

// The plan of a mapping (for evaluating a given mapping). The mapping must
// have passed the checks against the architecture and the FIR.
Plan from_mapping(const mapping::Mapping& m, const Network& net);

// Output dims of one batch group of a layer: [N / groups, K, H, W].
Dims group_dims(const Layer& l, int64_t batch_groups);

// Output channels per group of a grouped convolution (1 otherwise): a part
// along k holds whole groups.
int64_t k_unit(const Layer& l);

// Every partition (b, k, h, w) of exactly `cores` parts whose factors divide
// `dims` (k parts each a multiple of `k_unit` channels), in a fixed order (b,
// then k, then h, then w ascending).
// With `layer`, only partitions whose every part's windows reach the input
// (part_reads_input).
std::vector<mapping::Partition> partitions_of(const Dims& dims, int64_t cores, int64_t k_unit = 1,
                                              const Layer* layer = nullptr);

// The core counts 1..max_cores that some partition of `dims` achieves (with
// `layer`, one whose parts all reach the input).
std::vector<int> feasible_core_counts(const Dims& dims, int max_cores, int64_t k_unit = 1, const Layer* layer = nullptr);

// Whether cutting a convolution's or pooling's output rows (axis 2) or
// columns (axis 3) into `parts` equal parts leaves each part windows that
// read some of the input. With padding as wide as the window (a folded
// Pad, a transposed convolution's) the first or last rows' windows lie in
// the padding alone: such a part reads nothing and has no producer to wait
// for, so it is not a partition (irgen refuses it). Other layers: true.
bool part_reads_input(const Layer& layer, int axis, int64_t parts);

// The divisors of n, ascending.
std::vector<int64_t> divisors(int64_t n);

}  // namespace cct::gemini
