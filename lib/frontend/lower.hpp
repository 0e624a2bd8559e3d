// Lowering: the simplified float graph -> the layer structure of the
// Frontend IR, before any number is quantized.
//
// Pattern matching fuses Conv+ReLU/ReLU6/Clip/LeakyReLU into one conv2d,
// Add+ReLU into one element_wise_add, x*sigmoid(x) into silu, HardSigmoid*x
// into hard_swish, the erf form of GELU into gelu, the ReduceMean..Sqrt..Div
// form of layer normalisation into layer_norm, MatMul+bias into dense, and
// absorbs Flatten into the dense that reads it. Every layer gets a device
// (npu unless the chip cannot run it) and an output element type: int8
// between accelerator layers, float16 out of cpu layers and into graph
// outputs; quantize layers are inserted where the two meet and one at each
// graph input.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fir/fir.hpp"
#include "interp/graph.hpp"

namespace cct::frontend {

// Where a layer input comes from.
struct Operand {
  enum class Kind : uint8_t { Layer, GraphInput, Constant };
  Kind kind = Kind::Layer;
  int index = -1;  // layer index, graph input number (0-based) or constant index
};

struct LConstant {
  std::string name;  // FIR name ("constant_..." or "<layer>_constant1")
  interp::Tensor tensor;
};

// A FIR layer under construction.
struct LLayer {
  std::string name;
  std::string ori_name;  // name of the source-model node the output comes from
  fir::Op op = fir::Op::Unknown;
  fir::Device device = fir::Device::Npu;
  std::vector<Operand> inputs;  // activations first, then (for conv2d/dense) nothing: weights are separate
  interp::Shape out_shape;
  std::string out_dtype = "int8";  // "int8" or "float16"
  int value = -1;       // float-graph value this output stands for (-1: none, e.g. a selection matmul)
  int qclass = -1;      // quantization class of an int8 output (see LoweredModel::qclass_values)
  int64_t batch_axis = 0;

  // Geometry and attributes (as the FIR keys).
  std::optional<std::array<int64_t, 2>> kernel, pool, stride, dilation;
  std::optional<std::array<int64_t, 4>> padding;  // top, bottom, left, right
  std::optional<int64_t> groups, axis;
  std::optional<std::vector<int64_t>> perm;
  std::optional<std::vector<int64_t>> starts, ends, steps, indices;  // slice, gather
  std::optional<bool> ceil_mode;
  bool has_activation_key = false;           // conv2d/dense always write activation_type
  std::optional<std::string> activation;     // relu, relu6, clip, leaky_relu
  Json activation_attr;                      // null or object
  std::string act_mode = "others";           // VP activation layers: sigmoid, silu, ...
  bool relu_group = false;                   // element_wise_add + ReLU
  std::string sumsub_mode = "add";           // element_wise_add/sub
  double pool_divisor = 1.0;                 // avg_pool2d: 1 / window size
  bool nhwc_consistent = false;              // reshape

  // Weights (float, FIR layout) of conv2d/dense, gamma/beta of layer_norm.
  std::optional<interp::Tensor> weight, bias;
  // Per-output-channel weight scales given by the source model (TFLite INT8);
  // empty: the quantizer chooses them.
  std::vector<double> weight_scales;
};

struct LoweredModel {
  std::vector<LLayer> layers;        // in layer_index order
  std::vector<LConstant> constants;  // constant operands of VP/cpu layers
  std::vector<int> graph_inputs;     // float-graph input values, in order (input1, input2, ...)
  std::vector<interp::Shape> graph_input_shapes;
  std::vector<int> graph_outputs;    // layer index producing each graph output (output1, ...)
  // Float-graph values whose activations decide each quantization class's range.
  std::vector<std::vector<int>> qclass_values;
  // Human-readable notes: layers placed on the cpu and why.
  std::vector<std::string> cpu_fallbacks;
};

struct LowerOptions {
  // Element type of the floating-point tensors that reach the graph outputs:
  // "float16" as in the reference, or "float32" (for outputs too small for
  // float16, such as the logits of randomly initialised MobileNets).
  std::string output_dtype = "float16";
};

// Lowers the simplified graph. Throws Error(kExitInvalidInput) naming every
// node that cannot be expressed in the FIR.
LoweredModel lower(const interp::Graph& g, const LowerOptions& options = {});

// Builds the FIR layer structure (names, operations, shapes, edges, dtypes,
// attributes); quant_info/module_list/file_list are added by the quantizer.
fir::Graph structure_of(const LoweredModel& m);

}  // namespace cct::frontend
