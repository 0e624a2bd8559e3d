// The Frontend IR (FIR): the quantized, fused layer graph that onnx2fir
// writes and gemini, irgen, asm and the interpreter read.
//
// On disk it is one JSON object whose members are the layers, keyed by
// name (formats/Frontend_IR_Format.md). In memory it is a Graph of Layers
// with typed fields for everything the tools use; keys this library does not
// know are kept in Layer::extra, so reading and writing loses nothing.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/json.hpp"
#include "support/json_cursor.hpp"

namespace cct::fir {

// NCHW for 4-D activations, [K, C/groups, kh, kw] for convolution weights.
using Shape = std::vector<int64_t>;

// The operations of the format. The first seven occur in the reference
// files; the others are the extensions onnx2fir uses (documented as such).
enum class Op : uint8_t {
  Quantize,        // requantize or (de)quantize one tensor on the vector processor
  Conv2d,          // convolution (grouped and depthwise via `groups`), on the PE array
  Dense,           // fully connected, on the PE array
  MaxPool2d,       // vector processor
  AvgPool2d,       // vector processor (global average pooling too)
  ElementWiseAdd,  // vector processor, numpy broadcasting
  Reshape,         // usually on the cpu
  // Extensions beyond the reference data.
  ElementWiseSub,
  ElementWiseMul,
  Concat,
  MatMul,
  Transpose,
  Relu,
  Sigmoid,
  HardSigmoid,
  HardSwish,
  Silu,
  Gelu,
  Tanh,
  Clip,       // clamp to activation_attr [min, max] (relu6: [0, 6])
  LeakyRelu,  // activation_attr alpha
  Elu,        // activation_attr alpha
  PRelu,      // leaky ReLU whose slope is a constant second input, per channel
  Softmax,
  LayerNorm,
  Slice,      // a strided box of the input (starts, ends, steps): data movement (extension)
  Gather,     // fixed indices along one axis (axis, indices), e.g. a channel shuffle: data movement (extension)
  Resize,  // nearest or bilinear resampling of H and W (activation_attr: mode, scales, ...), vector processor
  // Reductions over one axis (kept as size 1; formats/Frontend_IR_Format.md).
  ReduceMax,  // maximum over `axis`
  ReduceSum,  // sum over `axis` of x * mul_group_k_scalar (a mean with 1/n)
  Unknown,  // an operation name this library does not know (kept as written)
};

// The name used in files ("conv2d"), or "unknown".
std::string_view op_name(Op op);
// Op::Unknown for names not in the table.
Op parse_op(std::string_view name);
// All known operation names, in table order.
std::vector<std::string_view> known_op_names();

// Which unit the layer runs on: the accelerator ("npu") or the host ("cpu").
enum class Device : uint8_t { Npu, Cpu };
std::string_view device_name(Device d);

// Element types used in input_dtype/output_dtype.
bool is_known_dtype(std::string_view dtype);
// Bytes per element of a known dtype, 0 otherwise.
int dtype_bytes(std::string_view dtype);

// quant_info: how the integer tensors map to real values.
//   real input  = input_scale_i * (q + input_zero_point_i)
//   q output    = round(real * output_scale + output_zero_point)
// (output_scale is the reciprocal of the usual scale; see the format doc).
struct InputQuant {
  double scale = 1.0;
  double zero_point = 0.0;
  bool operator==(const InputQuant&) const = default;
};
struct QuantInfo {
  std::vector<InputQuant> inputs;  // input_scale1/input_zero_point1, input_scale2/..., in order
  std::optional<double> output_scale;
  std::optional<double> output_zero_point;
  std::optional<std::string> round_type;  // "round" in the reference
  Json::Object extra;                     // keys not known to this library, in file order
  bool operator==(const QuantInfo&) const = default;
};

// The activation fused into a conv2d/dense layer (activation_type / activation_attr).
struct Activation {
  std::optional<std::string> type;  // "relu", "relu6", "clip", "leaky_relu"; nullopt is written as null
  Json attr;                        // null, or an object such as {"min": 0.0, "max": 6.0}
  bool operator==(const Activation&) const = default;
};

// Vector-processor configuration groups (module_list). Each group is kept as
// the ordered JSON object it was read as (key order varies between layers in
// the reference and integers stay integers); the structs below are typed
// views decoded by the accessors further down.
struct Module {
  std::string name;  // "pre_cal", "post_cal", "compare_group", ...
  Json params;       // the group's object
  bool operator==(const Module&) const = default;
};

// Shapes every group carries.
struct ModuleShapes {
  std::vector<Shape> input_shape, output_shape;
  bool operator==(const ModuleShapes&) const = default;
};
// pre_cal: dequantizes the inputs, real = q * requan_scale + requan_zp.
struct PreCal : ModuleShapes {
  double requan_scale_a = 1.0, requan_zp_a = 0.0;
  std::optional<double> requan_scale_b, requan_zp_b;  // second input
};
// post_cal: requantizes the result, q = carry(real * mul_k + sum_b).
struct PostCal : ModuleShapes {
  double mul_k = 1.0, sum_b = 0.0;
  std::string sumsub_mode = "add";
  std::optional<std::string> carry_sel;  // "round"; absent when the output stays floating point
};
// compare_group: max/min over a window or across inputs.
struct CompareGroup : ModuleShapes {
  std::string cmp_mode = "cumulative", cmp_max_en = "max", cmp_dim = "kernel";
};
// fp32_mul_group: multiply by a scalar or a second tensor, then an optional function.
struct Fp32MulGroup : ModuleShapes {
  std::string mul_group_k_mux = "scalar";  // "scalar" or "vector"
  std::string act_mode = "others";         // "others" = identity; extensions: "sigmoid", "hard_swish", ...
  std::optional<double> mul_group_k_scalar;
};
// acc_tree_group: sum over the kernel window (average pooling).
struct AccTreeGroup : ModuleShapes {
  std::string acc_tree_mode = "acc", acc_dim = "kernel";
};
// fp32_sum_sub_group0: add or subtract a second tensor (or a scalar).
struct Fp32SumSubGroup : ModuleShapes {
  std::string sumsub_group_mode = "add", sumsub_group_b_mux = "vector";
};
// relu_group: max(x, 0) in floating point.
struct ReluGroup : ModuleShapes {};

// Builders with the canonical key order (the majority order of the reference).
Module make_module(const PreCal& g);
Module make_module(const PostCal& g);
Module make_module(const CompareGroup& g);
Module make_module(const Fp32MulGroup& g);
Module make_module(const AccTreeGroup& g);
Module make_module(const Fp32SumSubGroup& g);
Module make_module(const ReluGroup& g);

// Typed decoding of one group; errors name the cursor's file and JSON pointer.
PreCal decode_pre_cal(const JsonCursor& group);
PostCal decode_post_cal(const JsonCursor& group);
CompareGroup decode_compare_group(const JsonCursor& group);
Fp32MulGroup decode_fp32_mul_group(const JsonCursor& group);
AccTreeGroup decode_acc_tree_group(const JsonCursor& group);
Fp32SumSubGroup decode_fp32_sum_sub_group(const JsonCursor& group);
ReluGroup decode_relu_group(const JsonCursor& group);
// Decodes a group by its name (unknown names only get their shapes checked).
void check_module(const std::string& name, const JsonCursor& group);

struct Layer {
  int64_t layer_index = 0;
  std::string name;
  std::string operation;  // as written; `op` is its parsed form
  Op op = Op::Unknown;
  Device device = Device::Npu;
  std::vector<std::string> input_dtype, output_dtype;  // one per input / output
  std::vector<Shape> input_shape, output_shape;        // one per input (weights included) / output
  std::optional<QuantInfo> quant_info;
  std::vector<std::string> previous_layer, next_layer;
  std::vector<std::pair<std::string, std::string>> file_list;  // role ("k", "input_activation1") -> .npy name
  std::vector<int64_t> input_batchdim, output_batchdim;        // batch axis per tensor, -1 for none (weights)
  std::optional<Activation> activation;                        // conv2d, dense
  std::optional<std::array<int64_t, 2>> kernel_size;           // [kh, kw] (conv2d)
  std::optional<std::array<int64_t, 2>> pool_size;             // [kh, kw] (pools)
  std::optional<std::array<int64_t, 4>> padding;               // [top, bottom, left, right]
  std::optional<std::array<int64_t, 2>> stride;                // [sh, sw]
  std::optional<std::array<int64_t, 2>> dilation;              // [dh, dw] (extension; absent = [1, 1])
  std::optional<int64_t> groups;                               // conv2d (extension; absent = 1)
  std::optional<bool> ceil_mode;                               // pools
  bool ceil_mode_numeric = false;                              // written as 0/1 (some reference files do)
  std::optional<int64_t> axis;                                 // concat, softmax, layer_norm (extension)
  std::optional<std::vector<int64_t>> perm;                    // transpose (extension)
  std::optional<std::vector<int64_t>> starts, ends, steps;     // slice, one per axis (extension)
  std::optional<std::vector<int64_t>> indices;                 // gather (extension)
  std::vector<std::vector<int64_t>> tensor_lut;                // tensor0_lut, tensor1_lut, ...
  std::optional<int64_t> tensor_mode;
  std::optional<std::vector<Module>> module_list;
  std::optional<std::string> ori_name;          // the source-model node this layer came from
  std::optional<bool> nhwc_consistant;          // (sic) reshape: data order unchanged in NHWC
  Json::Object extra;                           // unknown keys, in file order, written after the known ones

  bool operator==(const Layer&) const = default;

  // module_list access: nullptr when the group is absent.
  const Module* module(std::string_view group) const;
  std::optional<PreCal> pre_cal() const;
  std::optional<PostCal> post_cal() const;
  std::optional<CompareGroup> compare_group() const;
  std::optional<Fp32MulGroup> fp32_mul_group() const;
  std::optional<AccTreeGroup> acc_tree_group() const;
  std::optional<Fp32SumSubGroup> fp32_sum_sub_group() const;
  bool has_relu_group() const { return module("relu_group") != nullptr; }
  // activation_attr: in `activation` when read from a file, in `extra` when
  // onnx2fir built it for a layer without activation_type (as the
  // interpreter reads it); nullptr when absent.
  const Json* activation_attr() const;
  // The .npy file for a role ("k", "b", "output_activation1"), nullptr if absent.
  const std::string* file(std::string_view role) const;

  // Effective geometry with defaults (padding 0, stride 1, dilation 1, groups 1).
  std::array<int64_t, 2> window() const;  // kernel_size or pool_size, {1, 1} if neither
  std::array<int64_t, 4> pads() const;
  std::array<int64_t, 2> strides() const;
  std::array<int64_t, 2> dilations() const;
  int64_t group_count() const { return groups.value_or(1); }
  // The vector processor's table code of operand i (vp_cfg_tp's T0F, T1F):
  // the three flags of tensor<i>_lut, first flag highest; 0 when the operand
  // has none (no such operand, or fewer than three flags).
  int64_t lut_code(size_t i) const;
};

// Names in previous_layer / next_layer that are not layers.
bool is_graph_input_name(std::string_view name);   // "input1", "input2", ...
bool is_graph_output_name(std::string_view name);  // "output1", ...
bool is_constant_name(std::string_view name);      // "constant_497", "GlobalAveragePool_119_1_constant1"

struct HostGraph;

class Graph {
 public:
  Graph() = default;
  explicit Graph(std::vector<Layer> layers);

  const std::vector<Layer>& layers() const { return layers_; }
  size_t size() const { return layers_.size(); }
  // Appends a layer (file order is insertion order).
  void add(Layer layer);
  // Direct access; call reindex() after renaming, adding or removing layers.
  std::vector<Layer>& mutable_layers() { return layers_; }
  void reindex();

  const Layer* find(std::string_view name) const;
  Layer* find(std::string_view name);
  // Layers sorted by layer_index (a topological order in valid files).
  std::vector<const Layer*> in_index_order() const;
  // previous_layer / next_layer entries that are layers of this graph.
  std::vector<const Layer*> producers(const Layer& l) const;
  std::vector<const Layer*> consumers(const Layer& l) const;
  // Layers reading a graph input ("input1", ...) / writing a graph output.
  std::vector<const Layer*> input_layers() const;
  std::vector<const Layer*> output_layers() const;

  // The host graph (member "$host_graph", fir/host_graph.hpp): a
  // post-processing of data-dependent shapes the host runs after the FIR
  // outputs it reads are stored; nullptr when the network has none.
  const HostGraph* host_graph() const { return host_graph_.get(); }
  void set_host_graph(std::shared_ptr<const HostGraph> hg) { host_graph_ = std::move(hg); }

  bool operator==(const Graph& o) const;

 private:
  std::vector<Layer> layers_;
  std::shared_ptr<const HostGraph> host_graph_;
  std::map<std::string, size_t, std::less<>> by_name_;  // first layer of each name
};

// The weight tensor shape of conv2d/dense/matmul with a constant operand
// (input_shape[1]), nullopt for layers without weights.
std::optional<Shape> weight_shape(const Layer& l);
// The PE array's view of a layer: every conv2d and dense layer runs as a
// convolution. A dense layer whose weights take each sample whole (input
// [N, C], [N, C, H, W] or any shape whose sample has as many elements as a
// weight row) is, with its input viewed as [N, C, H, W] (dims padded with 1s
// at the end, as every stage holds tensors), the H x W convolution without
// padding of weights [K, C, H, W] (the same bytes as [K, C*H*W]: a flatten
// reads NCHW in this order): a 1 x 1 convolution of [K, C] weights over an
// [N, C] input, a 6 x 6 one after AlexNet's flatten. Asm, irgen, gemini and
// the functional model's weight image all take the weight shape and the
// geometry from here.
struct PeConv {
  std::array<int64_t, 4> weight{};  // [K, C/groups, kh, kw]
  std::array<int64_t, 2> kernel{1, 1}, stride{1, 1}, dilation{1, 1};
  std::array<int64_t, 4> pads{};  // top, bottom, left, right
  int64_t groups = 1;
  // Output channels per group: a part, run or tile of the layer holds whole groups.
  int64_t k_per_group() const { return groups > 1 ? weight[0] / groups : 1; }
};
// nullopt for a layer the array cannot run as a convolution (no weights, a
// matmul of two activations, a dense over the last axis of a token tensor,
// shapes that do not agree); `why`, when given, then says what is wrong.
std::optional<PeConv> pe_conv(const Layer& l, std::string* why = nullptr);
// Which of ONNX LayerNormalization's outputs a layer_norm layer gives
// (activation_attr "output": absent or "y", "mean", "inv_std_dev"). Mean and
// InvStdDev have the input's shape with the normalised axis of size 1.
// nullopt for another value; `why`, when given, then says what is wrong.
enum class LayerNormOutput { Y, Mean, InvStdDev };
std::optional<LayerNormOutput> layer_norm_output(const Layer& l, std::string* why = nullptr);
// Multiply-accumulates of a PE layer (conv2d, dense, matmul); 0 for the rest.
int64_t macs(const Layer& l);
int64_t element_count(const Shape& s);

// The box [N, C, H, W] the chip holds a FIR tensor in (stored NHWC, channels
// innermost). A 4-D tensor is its own box; [N] and [N, C] are [N, C, 1, 1];
// a 3-D token tensor [N, T, D] is [N, D, T, 1]: its tokens are rows of pixels
// whose channels are the features, so that the chip stores it row-major as
// the model holds it and only N is the batch. Ranks above 4 keep their first
// four dimensions (no accelerator layer has them).
std::array<int64_t, 4> chip_box(const Shape& s);
// The row-major index in chip_box(s) ([N, C, H, W]) of the tensor's element
// with row-major index `flat`.
int64_t chip_index(const Shape& s, int64_t flat);
// Its inverse: the tensor's row-major index of element `box` of chip_box(s).
int64_t fir_index(const Shape& s, int64_t box);
// A constant operand broadcast against an output of rank `rank` (numpy:
// aligned on the last axes) in the box of that rank.
std::array<int64_t, 4> chip_box_broadcast(const Shape& s, size_t rank);

// Reading. Schema validation (schemas/fir.schema.json) and the semantic
// checks below run unless disabled; errors name file and JSON pointer.
struct ReadOptions {
  bool validate_schema = true;
  bool validate_semantics = true;
};
Graph parse_fir(std::string_view text, const std::string& file, const ReadOptions& opts = {});
Graph read_fir(const std::string& path, const ReadOptions& opts = {});

// Writing, keys in the reference's order; format_fir validates its own
// output against the schema when `validate` is set (a failure is a bug: kExitInternal).
Json to_json(const Layer& l);
Json to_json(const Graph& g);
std::string format_fir(const Graph& g, bool validate = true);
void write_fir(const std::string& path, const Graph& g, bool validate = true);

// Semantic checks beyond the schema: unique names, layer_index a permutation
// of 0..n-1 and a topological order, previous/next symmetric and naming
// layers or graph inputs/outputs/constants, per-operation keys present, tensor
// counts consistent, dtypes known, output shapes following from the
// operation. Each problem is "file: /pointer: what".
std::vector<std::string> check(const Graph& g, const std::string& file);
// Throws Error(kExitInvalidInput) with the first problem, if any.
void validate(const Graph& g, const std::string& file);

// Data movement layers (extension): concat, slice and gather move elements
// and change no value when the quantizations of input and output agree
// (quant_info); otherwise each element is requantized on its way.
bool is_move_op(Op op);
// A standalone activation function on the vector processor (relu, sigmoid,
// hard_sigmoid, hard_swish, silu, gelu, tanh, clip, leaky_relu, elu, prelu).
bool is_activation_op(Op op);
// One block of a data movement layer's output and where it comes from: the
// output elements out_lo + d, for d within in_lo..in_hi's extent, are input
// `input`'s elements in_lo + d. Coordinates are NCHW (shapes of lower rank
// padded with trailing 1s).
struct MovePiece {
  size_t input = 0;  // among the layer's inputs (previous_layer)
  std::array<int64_t, 4> in_lo{}, in_hi{}, out_lo{};
  std::array<int64_t, 4> out_hi() const {
    return {out_lo[0] + in_hi[0] - in_lo[0], out_lo[1] + in_hi[1] - in_lo[1], out_lo[2] + in_hi[2] - in_lo[2],
            out_lo[3] + in_hi[3] - in_lo[3]};
  }
};
// The pieces that make up the output box [lo, hi] (inclusive), in output
// order: contiguous runs along every axis (a slice step other than 1 or a
// gather index out of sequence starts a new piece). nullopt, with *why, when
// the layer is no movement this library can cut (rank above 4, missing keys).
std::optional<std::vector<MovePiece>> move_pieces(const Layer& l, const std::array<int64_t, 4>& lo,
                                                  const std::array<int64_t, 4>& hi, std::string* why = nullptr);
// Whether input i of a data movement layer needs requantizing (its
// quantization or element type differs from the output's).
bool move_requantizes(const Layer& l, size_t input);

// "[1, 3, 224, 224]", for messages.
std::string shape_text(const Shape& s);

// Expected output shape of a layer from its inputs and attributes; nullopt
// when the operation does not determine it (reshape, unknown ops) or inputs
// are malformed. Used by check() and by onnx2fir to fill output_shape.
std::optional<Shape> infer_output_shape(const Layer& l);

}  // namespace cct::fir
