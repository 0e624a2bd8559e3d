// Graph-level simplifications run after import, before lowering to the FIR:
// constant folding, removal of no-op nodes, BatchNorm folding, and filling in
// any tensor shape ONNX shape inference left open.
#pragma once

#include "interp/graph.hpp"

namespace cct::frontend {

// Evaluates every node whose inputs are all constants (and Shape/Size of
// tensors with static shapes), turning its outputs into constants.
// Returns the number of nodes folded.
int fold_constants(interp::Graph& g);

// Removes Identity, inference-mode Dropout, Reshape/Flatten/Squeeze/
// Unsqueeze nodes that do not change the shape and Pads by zero, rewiring
// their readers.
int remove_noops(interp::Graph& g);

// Folds BatchNormalization into the Conv (or Gemm) that feeds it when that
// producer has no other reader; any other BatchNormalization of an image
// (4-D) becomes a depthwise 1x1 Conv, of other ranks a Mul and an Add by
// per-channel constants. Returns the number of BN nodes removed.
int fold_batch_norm(interp::Graph& g);

// Composes consecutive Transposes (dropping those that cancel), turns
// Transposes that keep the element order into Reshapes, and collapses chains
// of Reshape/Flatten/Squeeze/Unsqueeze into one Reshape. Returns the number
// of nodes changed.
int simplify_layout(interp::Graph& g);

// Folds a zero constant Pad of the spatial axes into the Conv (or, as
// count_include_pad, the AveragePool) reading it. Returns the number folded.
int fold_pads(interp::Graph& g);

// Turns each remaining constant Pad of the spatial axes of an image into a
// depthwise 1x1 Conv by 1 with the Pad's padding (zeros); a nonzero value v
// becomes Sub(x, v), that Conv, Add(.., v). Returns the number made.
int pads_to_conv(interp::Graph& g);

// Sinks each Transpose through the operators reading its output when they
// all commute with it (element-wise operators, reductions that keep their
// axes, a MatMul by a constant [C, K] over what was the channel axis of a
// 4-D tensor, which becomes a 1x1 Conv) and every path out of that region
// ends in another Transpose, which then composes with it (and vanishes when
// the two cancel). Nothing changes when any other node reads the region.
// Returns the number of Transposes sunk.
int sink_transposes(interp::Graph& g);

// Keeps dense layers off sequence-first layouts (torch's MultiheadAttention
// works on [T, N, D] and [T*N, D]): a Transpose of a 3-D tensor that keeps
// the last axis sinks past the MatMul by a constant, element-wise operation
// with a constant, or Slices reading it (unless data movement made its
// input); Reshape [a, b, ..] -> [a*b, D], Gemm/MatMul, Reshape [a, b, K] is
// a MatMul over the last axis of [a, b, D]; a Transpose keeping the last axis
// after a dense whose input data movement made moves before it; a Mul or
// Div by a scalar after a Transpose or Reshape moves before it. Returns the
// number of rounds that changed the graph.
int batch_first_dense(interp::Graph& g);

// Folds an Add or a Mul by one constant per output channel ([K, 1, 1],
// [1, K, 1, 1] or a scalar) into the bias (and weights) of the Conv feeding
// it as its only reader: a Linear's bias after its MatMul became a Conv,
// ConvNeXt's layer scale. Returns the number folded.
int fold_conv_affine(interp::Graph& g);

// Turns a Gather of the one element of an axis of size 1 by a scalar
// index (images[0] of a batch of one) into a Reshape. Returns the number.
int squeeze_gathers(interp::Graph& g);

// A Split of the batch into its samples, each sample through the same
// chain of per-sample nodes (element-wise by constants, Resize, Reshape
// keeping the batch axis first), and a Concat of the results along the
// batch in order (torchvision's detection transform at batch > 1) becomes
// that chain on the whole batch. Returns the number merged.
int merge_sample_branches(interp::Graph& g);

// Runs the float interpreter once on zero inputs when some computed tensor
// still lacks a static shape, and records every shape. Returns true if it ran.
bool complete_shapes(interp::Graph& g);

// Per value: 1 when its shape depends on the data (an output of a
// data-dependent operator such as NonZero, or computed from one).
std::vector<char> dynamic_values(const interp::Graph& g);

// The post-processing of a network: the nodes with data-dependent shapes
// (interp::data_dependent_shape) and everything computed from them, plus the
// nodes before them whose every result only they read, up to (not
// including) the convolutions and matmuls. `inputs` are the values it reads
// from the rest of the graph (no constants), in value order. Empty when the
// graph has no data-dependent operator.
struct PostProcessing {
  std::vector<int> nodes;   // node indices, in node order
  std::vector<int> inputs;  // values read from outside it
  std::string first;        // "node 'x' (NonZero)": its first data-dependent node
};
PostProcessing find_post_processing(const interp::Graph& g);

// All of the above in order, then prunes dead nodes.
void simplify(interp::Graph& g);

}  // namespace cct::frontend
