// The network as gemini's search and cost model see it: the accelerator
// layers of a Frontend IR in layer_index order, each with its output dims,
// its activation inputs resolved to producing layers (through host layers
// such as reshape), its kernel geometry and its weights.
//
// The conventions follow what irgen compiles (formats/Mapping_Format.md):
// a PE layer's first input is its activation and the second its weights; a
// layer that writes a graph output, or whose output only reaches host
// layers, stores its output to DRAM.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "fir/fir.hpp"
#include "mapping/mapping.hpp"

namespace cct::gemini {

using Dims = mapping::Dims;  // [N, K, H, W]

enum class LayerKind : uint8_t {
  Conv,     // conv2d on the PE array
  Dense,    // dense / matmul on the PE array
  Pool,     // max or average pooling on the vector processor
  Vector,   // any other vector-processor layer (quantize, element-wise, activations)
};

struct LayerInput {
  int producer = -1;    // index into Network::layers; -1: the network's input (DRAM)
  Dims dims{1, 1, 1, 1};  // the tensor as this layer reads it (whole batch)
  int bytes = 1;        // element size
  bool reshaped = false;  // a host reshape changes the shape: the whole producer output is read
  int host_step = -1;     // producer -1 for a host step's result: the step (Network::host_steps), loaded from DRAM
  size_t fir_index = 0;   // position among the FIR layer's inputs (previous_layer, input_shape)
  bool requant = false;   // data movement: the input's quantization differs from the output's (fir::move_requantizes)
};

// A host step (fir::host_plan): the accelerator layers whose stored outputs
// it reads, its work, and the bytes of its results that are graph outputs.
struct HostStepModel {
  std::vector<int> inputs;      // layer indices
  int64_t ops = 0;
  int64_t graph_io_bytes = 0;   // graph inputs read, results written whole for the graph outputs (fir::HostStep)
};

struct Layer {
  std::string name;
  const fir::Layer* fir = nullptr;
  LayerKind kind = LayerKind::Vector;
  Dims out{1, 1, 1, 1};  // output over the whole batch
  int out_bytes = 1;
  std::vector<LayerInput> inputs;  // activation inputs, in FIR order
  std::vector<int> consumers;      // layers reading this one (indices, ascending)
  bool to_dram = false;            // a graph output (or feeds only host layers): stored to DRAM

  // Geometry (defaults for layers without it).
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  std::array<int64_t, 4> pads{};  // top, bottom, left, right
  int64_t groups = 1;
  bool two_input_vp = false;      // a vector layer combining two tensors
  // A data movement layer (concat, slice, gather: fir::is_move_op): no
  // compute of its own; its inputs' pieces (fir::move_pieces) are moved into
  // its output as irgen and asm do it (see cost.cpp).
  bool move = false;
  int64_t pool_window = 1;        // pooling: kernel elements

  // Weights (PE layers): [K, C/groups, kh, kw]; bytes as stored in DRAM / L2.
  int64_t weight_c = 0, weight_taps = 0;
  int weight_elem_bytes = 1;
  int64_t weight_bytes_per_k = 0;  // one output channel, padded, with its extra bytes
  int64_t macs = 0;                // whole batch

  bool pe() const { return kind == LayerKind::Conv || kind == LayerKind::Dense; }
  int64_t weight_bytes() const { return weight_bytes_per_k * out[1]; }
};

struct Network {
  std::string name;  // the FIR's file name without extension (for the mapping's "fir")
  int64_t batch = 1;
  std::vector<Layer> layers;
  std::vector<HostStepModel> host_steps;
  int64_t total_macs() const;
};

// Builds the network of a FIR for an architecture (sizes in its L2 layout).
// Errors name `file` and the layer's JSON pointer.
Network build_network(const fir::Graph& g, const arch::Architecture& a, const std::string& file);

// The region of input `input` of `layer` that the output box [lo, hi]
// (inclusive, layer coordinates over the whole batch) reads, clipped to the
// input tensor: convolution and pooling windows with stride and padding,
// every input channel for dense and ungrouped convolutions, the matching box
// for element-wise layers (broadcast axes read their single element).
// A data movement layer reads the hull of the pieces (fir::move_pieces) the
// input gives to the box, as irgen does; an input giving none reads an empty
// region (`empty_box`).
// A host reshape that changes the shape between producer and consumer makes
// the consumer read the producer's whole output for its samples.
mapping::Box input_region(const Network& net, const Layer& layer, size_t input, const mapping::Box& out);

// Inclusive box intersection; returns false when empty. (Inline: the cost
// model intersects boxes for every input of every workload of every plan.)
inline bool intersect(const mapping::Box& a, const mapping::Box& b, mapping::Box* out) {
  for (size_t i = 0; i < 4; ++i) {
    out->lower[i] = std::max(a.lower[i], b.lower[i]);
    out->upper[i] = std::min(a.upper[i], b.upper[i]);
    if (out->upper[i] < out->lower[i]) return false;
  }
  return true;
}
// Whether an inclusive box holds no element.
inline bool empty_box(const mapping::Box& b) {
  for (size_t i = 0; i < 4; ++i)
    if (b.upper[i] < b.lower[i]) return true;
  return false;
}
// Elements along each axis of an inclusive box.
inline Dims extent(const mapping::Box& b) {
  return {b.upper[0] - b.lower[0] + 1, b.upper[1] - b.lower[1] + 1, b.upper[2] - b.lower[2] + 1,
          b.upper[3] - b.lower[3] + 1};
}

}  // namespace cct::gemini
