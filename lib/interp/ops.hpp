// The float interpreter's operator kernels, one per ONNX operator type.
//
// Each kernel follows the ONNX specification of the opset the model imports
// (attribute-vs-input forms of Clip, Slice, Squeeze, Split, Softmax axes, ...).
// Shapes are computed from the actual inputs, so a kernel also serves
// constant folding and shape propagation.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "interp/graph.hpp"

namespace cct::interp {

using KernelInputs = std::vector<const Tensor*>;  // nullptr for an omitted optional input

// Runs node `n` (opset `opset`) on `in`, filling `out` (one tensor per node
// output; omitted outputs may be left empty). Throws cct::Error naming the
// node when inputs are invalid.
void run_kernel(const Node& n, int opset, const KernelInputs& in, std::vector<Tensor>& out);
// x transposed by `perm` (ONNX's Transpose, the same kernel).
Tensor transposed(const Tensor& x, const std::vector<int64_t>& perm);

// True when the operator type (default domain) has a kernel.
bool has_kernel(std::string_view op);
// Empty when the node can run; otherwise why not (an attribute value or a
// mode outside what the kernel implements), for error messages. `g`, when
// given, lets checks look at constant inputs (e.g. Dropout's training_mode).
std::string unsupported_reason(const Node& n, int opset, const Graph* g = nullptr);
// True for operators whose output shapes depend on the input data (NonZero,
// NonMaxSuppression, If, ...): their results and everything computed from
// them have no static shape, and run on the host (ops_dynamic.cpp).
bool data_dependent_shape(const Node& n);
// The operator types with kernels, sorted.
std::vector<std::string> supported_ops();

// Helpers shared with the frontend -----------------------------------------

// Spatial output size and begin/end padding of a sliding window (Conv and
// pooling), from ONNX's auto_pad / pads / strides / dilations / ceil_mode.
struct Window {
  std::vector<int64_t> kernel, stride, dilation, pad_begin, pad_end, out;
};
// `in` holds the spatial input dims; attributes are read from `n`.
Window resolve_window(const Node& n, const std::vector<int64_t>& in, const std::vector<int64_t>& kernel,
                      bool ceil_mode);

// ConvTranspose's geometry, from ONNX's auto_pad / pads / strides /
// dilations / output_padding / output_shape: output index
// o = i * stride - pad_begin + tap * dilation receives input index i
// through kernel tap `tap`. When output_shape is given (or auto_pad is
// SAME_*), the pads follow from it: total = stride * (in - 1) +
// output_padding + (kernel - 1) * dilation + 1 - out, split total / 2 before
// and the rest after for SAME_UPPER, the other way round otherwise (a
// negative total pads the output with rows no input reaches).
struct TransposeWindow {
  std::vector<int64_t> kernel, stride, dilation, pad_begin, pad_end, output_padding, out;
};
TransposeWindow resolve_transpose_window(const Node& n, const std::vector<int64_t>& in, const std::vector<int64_t>& kernel);

// Shape of the numpy-style broadcast of a and b; throws naming `what` when incompatible.
Shape broadcast_shape(const Shape& a, const Shape& b, std::string_view what);

// Rounds a float to the nearest float16 value (round to nearest even).
float round_to_half(float x);

}  // namespace cct::interp
