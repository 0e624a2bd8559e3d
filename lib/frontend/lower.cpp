#include "frontend/lower.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>

#include "interp/int8_ops.hpp"
#include "interp/ops.hpp"
#include "support/error.hpp"

namespace cct::frontend {

using interp::Graph;
using interp::Node;
using interp::Shape;
using interp::Tensor;

namespace {

// A layer found by pattern matching, still in terms of float-graph values.
struct Proto {
  LLayer l;
  std::vector<int> in_values;  // float-graph values read (activations and constants), in FIR input order
  Shape fir_shape;             // output shape in the FIR (may differ from the graph value: dense gives [N, K, 1, 1])
  bool selection = false;      // a selection matmul standing for a Gather (output has no float counterpart)
  std::string host_why;        // non-empty: this layer runs on the host, for this reason (else by its operation)
};

bool transparent(fir::Op op) { return op == fir::Op::Reshape || op == fir::Op::Transpose; }

fir::Device device_of(fir::Op op, bool selection) {
  switch (op) {
    case fir::Op::Reshape:
    case fir::Op::Transpose:
    case fir::Op::Softmax:
    case fir::Op::LayerNorm:
    case fir::Op::ReduceMax:
    case fir::Op::ReduceSum:
      return fir::Device::Cpu;
    case fir::Op::MatMul:
      // Only matmuls of two activations and selections remain matmuls (a
      // constant operand makes a dense layer): the PE array takes its
      // weights as records from DRAM only.
      return fir::Device::Cpu;
    default:
      return fir::Device::Npu;
  }
}

fir::Device device_of(const Proto& p) {
  return p.host_why.empty() ? device_of(p.l.op, p.selection) : fir::Device::Cpu;
}

std::string why_cpu(fir::Op op) {
  switch (op) {
    case fir::Op::Reshape: return "reshape (data movement between layouts, done by the host as in the reference)";
    case fir::Op::Transpose: return "transpose (no transpose unit on the chip)";
    case fir::Op::Softmax: return "softmax (exponent and division over a whole axis: no vector-processor mode)";
    case fir::Op::LayerNorm: return "layer normalisation (mean/variance over an axis: no vector-processor mode)";
    case fir::Op::MatMul: return "matmul of two activations (the PE array loads its weights as records from DRAM; "
                                 "no path turns an activation into weights), or a gather written as a selection matmul";
    case fir::Op::ReduceMax:
    case fir::Op::ReduceSum:
      return "reduction over an axis that is not the rows or columns of a 4-D tensor (the vector processor reduces "
             "only within pooling windows)";
    default: return "";
  }
}

class Lowerer {
 public:
  Lowerer(const Graph& g, const LowerOptions& o) : g_(g), opt_(o), cons_(g.consumers()), consumed_(g.nodes.size(), 0) {
    alias_.assign(g.values.size(), -1);
  }

  LoweredModel run() {
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      if (consumed_[k]) continue;
      consumed_[k] = 1;
      match(static_cast<int>(k));
    }
    if (!errors_.empty()) {
      std::string msg = g_.source + ": " + std::to_string(errors_.size()) +
                        " node(s) cannot be expressed in the Frontend IR:";
      for (const auto& e : errors_) msg += "\n  " + e;
      throw Error(kExitInvalidInput, msg);
    }
    assemble();
    return std::move(m_);
  }

 private:
  // ---- helpers --------------------------------------------------------------
  const Node& node(int k) const { return g_.nodes[static_cast<size_t>(k)]; }
  bool is_const(int v) const { return g_.is_constant(v); }
  const Shape& shape(int v) const { return g_.value(v).shape; }
  bool is_output(int v) const { return std::find(g_.outputs.begin(), g_.outputs.end(), v) != g_.outputs.end(); }

  // The only node reading v (and v is no graph output), else -1.
  int single_reader(int v) const {
    if (v < 0 || is_output(v) || cons_[v].size() != 1) return -1;
    int r = cons_[v][0];
    return consumed_[r] ? -1 : r;
  }
  bool scalar_const(int v, float& out) const {
    // Integer scalars too: Clip on an int8 or int32 tensor has bounds of its type.
    if (!is_const(v) || g_.constant(v).numel() != 1) return false;
    out = static_cast<float>(g_.constant(v).at_double(0));
    return true;
  }
  static bool near(float a, float b, float tol) { return std::fabs(a - b) <= tol * std::max(1.0f, std::fabs(b)); }
  // The operand of binary node n that is not `v`, or -1.
  int other(const Node& n, int v) const {
    if (n.input(0) == v) return n.input(1);
    if (n.input(1) == v) return n.input(0);
    return -1;
  }
  void fail(const Node& n, const std::string& what) {
    errors_.push_back("node '" + n.name + "' (" + n.op + "): " + what);
  }
  // Weights, biases and scales: float constants (a file may declare any type).
  bool float_const(int v) const { return is_const(v) && g_.constant(v).is_float(); }
  std::string base_name(const Node& n) const { return n.op + "_" + std::to_string(n.source_index); }

  Proto& emit(Proto p, int out_value) {
    p.l.value = out_value;
    if (p.fir_shape.empty() && out_value >= 0) p.fir_shape = shape(out_value);
    p.l.out_shape = p.fir_shape;
    if (out_value >= 0) producer_[out_value] = static_cast<int>(protos_.size());
    protos_.push_back(std::move(p));
    return protos_.back();
  }

  // Follows absorbed Flatten/Reshape nodes to the value a dense reads.
  int resolve(int v) const {
    while (v >= 0 && alias_[v] >= 0) v = alias_[v];
    return v;
  }

  // A following Mul or Div by a scalar constant (the only reader) scales a
  // dense layer's weights and bias (attention's 1/sqrt(d) on q).
  void fold_scalar(Proto& p, int& out, std::string& ori) {
    int r = single_reader(out);
    if (r < 0 || !p.l.weight || !p.l.bias || !p.l.weight_scales.empty()) return;
    const Node& a = node(r);
    if ((a.op != "Mul" && a.op != "Div") || a.inputs.size() != 2) return;
    int c = other(a, out);
    float f;
    if (c < 0 || !float_const(c) || !scalar_const(c, f) || (a.op == "Div" && a.input(1) != c)) return;
    if (a.op == "Div") f = 1.0f / f;
    if (!std::isfinite(f)) return;
    for (float& w : p.l.weight->f) w *= f;
    for (float& b : p.l.bias->f) b *= f;
    consumed_[r] = 1;
    out = a.outputs[0];
    ori = a.name;
  }

  // Fuses a following ReLU / Clip / LeakyReLU into a conv2d or dense.
  void fuse_activation(Proto& p, int& out, std::string& ori) {
    int r = single_reader(out);
    if (r < 0) return;
    const Node& a = node(r);
    if (a.op == "Relu") {
      p.l.activation = "relu";
    } else if (a.op == "Clip") {
      float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
      if (g_.opset < 11) {
        lo = a.get_float("min", lo);
        hi = a.get_float("max", hi);
      } else {
        if (a.input(1) >= 0 && !scalar_const(a.input(1), lo)) return;
        if (a.input(2) >= 0 && !scalar_const(a.input(2), hi)) return;
      }
      if (lo == 0.0f && hi == 6.0f) {
        p.l.activation = "relu6";
      } else if (lo == 0.0f && std::isinf(hi)) {
        p.l.activation = "relu";
      } else {
        // The PE epilogue clamps to [0, ACTPM] only (ActMode CLIP): other
        // bounds run as a clip layer on the vector processor.
        if (lo != 0.0f || std::isinf(hi)) return;
        p.l.activation = "clip";
        p.l.activation_attr = Json::object();
        p.l.activation_attr.set("min", static_cast<double>(lo)).set("max", static_cast<double>(hi));
      }
    } else if (a.op == "LeakyRelu") {
      p.l.activation = "leaky_relu";
      p.l.activation_attr = Json::object();
      p.l.activation_attr.set("alpha", static_cast<double>(a.get_float("alpha", 0.01f)));
    } else {
      return;
    }
    consumed_[r] = 1;
    out = a.outputs[0];
    ori = a.name;
  }

  // ---- matching -------------------------------------------------------------
  void match(int k) {
    const Node& n = node(k);
    const std::string& op = n.op;
    if (op == "Conv") return conv(n);
    if (op == "Gemm") return gemm(n);
    if (op == "MatMul") return matmul(n);
    if (op == "Div" && gelu(k)) return;
    if (op == "ReduceMean" && layer_norm_pattern(k)) return;
    if (op == "ReduceMean" || op == "ReduceMax" || op == "ReduceSum") return reduce(n);
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") return binary(n);
    if (op == "Relu" || op == "Sigmoid" || op == "HardSigmoid" || op == "HardSwish" || op == "Tanh" || op == "Clip" ||
        op == "LeakyRelu" || op == "Elu" || op == "PRelu")
      return activation(k);
    if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool") return pool(n);
    if (op == "Concat") return concat(n);
    if (op == "Slice") return slice(n);
    if (op == "Split") return split(n);
    if ((op == "Reshape" || op == "Flatten") && channel_gather(n)) return;
    if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") return reshape(n);
    if (op == "Transpose") return transpose(n);
    if (op == "Softmax") return softmax(n);
    if (op == "LayerNormalization") return layer_norm(n);
    if (op == "Gather") return gather(n);
    if (op == "Resize" || op == "Upsample") return resize(n);
    if (op == "ConvTranspose") return conv_transpose(n);
    if (op == "Pad" && n.get_string("mode", "constant") != "constant") return pad_copy(n);
    if (op == "Pad")
      fail(n, "Pad in mode 'constant' is not supported here: a constant Pad runs on the accelerator (as a "
              "convolution's padding) when it pads the spatial axes of an image (N, C, H, W) with constant "
              "non-negative pads and a constant finite value");
    if (op == "BatchNormalization")
      fail(n, "BatchNormalization whose scale, bias, mean and variance are not constants (per channel) is not supported");
    fail(n, "operator " + op + " has no Frontend IR equivalent");
  }

  void conv(const Node& n) {
    int x = n.input(0), w = n.input(1), b = n.input(2);
    if (!float_const(w) || (b >= 0 && !float_const(b)))
      return fail(n, "the weights and bias must be floating-point constants");
    if (shape(x).size() != 4) return fail(n, "only 2-D convolution (4-D input) is supported");
    const Tensor& wt = g_.constant(w);
    const int64_t groups = n.get_int("group", 1);
    if (wt.rank() != 4 || groups < 1 || wt.shape[0] % groups != 0 || wt.shape[1] * groups != shape(x)[1])
      return fail(n, "weights " + interp::shape_str(wt.shape) + " do not fit the input " + interp::shape_str(shape(x)) +
                         " in " + std::to_string(groups) + " group(s)");
    if (b >= 0 && g_.constant(b).numel() != wt.shape[0])
      return fail(n, "the bias does not hold one value per output channel");
    Shape kernel(wt.shape.begin() + 2, wt.shape.end());
    interp::Window win = interp::resolve_window(n, {shape(x)[2], shape(x)[3]}, kernel, false);
    Proto p;
    p.l.op = fir::Op::Conv2d;
    p.l.name = base_name(n);
    p.l.kernel = std::array<int64_t, 2>{kernel[0], kernel[1]};
    p.l.stride = std::array<int64_t, 2>{win.stride[0], win.stride[1]};
    if (win.dilation[0] != 1 || win.dilation[1] != 1) p.l.dilation = std::array<int64_t, 2>{win.dilation[0], win.dilation[1]};
    p.l.padding = std::array<int64_t, 4>{win.pad_begin[0], win.pad_end[0], win.pad_begin[1], win.pad_end[1]};
    int64_t group = n.get_int("group", 1);
    if (group != 1) p.l.groups = group;
    p.l.has_activation_key = true;
    p.l.weight = wt;
    p.l.weight_scales = preset_scales(w, 0, wt.shape[0]);
    p.l.bias = b >= 0 ? g_.constant(b) : Tensor::floats({wt.shape[0]});
    p.in_values = {x};
    int out = n.outputs[0];
    std::string ori = n.name;
    fuse_activation(p, out, ori);
    p.l.ori_name = ori;
    emit(std::move(p), out);
  }

  // ConvTranspose of an image (formats/Frontend_IR_Format.md, "Transposed
  // convolution"): output o = i * s - pad_begin + tap * d is a convolution
  // with stride 1 and the same dilation, over the input with s - 1 zeros
  // inserted between its pixels and (k - 1) * d - pad_begin zeros before
  // (the rest after, output_padding included), by the kernel flipped in
  // space with input and output channels swapped within each group. The
  // zero insertion and that padding are one resize layer (mode "zeros",
  // the vector processor's resampling); with stride 1 and no negative
  // padding the convolution pads by itself and there is no such layer.
  void conv_transpose(const Node& n) {
    int x = n.input(0), w = n.input(1), b = n.input(2);
    if (!float_const(w) || (b >= 0 && !float_const(b)))
      return fail(n, "the weights and bias must be floating-point constants");
    const bool row = shape(x).size() == 3;  // 1-D: over [N, C, 1, L], weights [C, K/g, 1, k]
    if (shape(x).size() != 4 && !row)
      return fail(n, "only 1-D and 2-D ConvTranspose (3-D or 4-D input) are supported (input " + interp::shape_str(shape(x)) + ")");
    Tensor wt = g_.constant(w);
    if (row && wt.rank() == 3) wt.shape.insert(wt.shape.begin() + 2, 1);
    const Shape xs = row ? as_row(shape(x)) : shape(x);
    const int64_t groups = n.get_int("group", 1);
    if (wt.rank() != 4 || groups < 1 || wt.shape[0] != xs[1] || xs[1] % groups != 0)
      return fail(n, "weights " + interp::shape_str(wt.shape) + " do not fit the input " + interp::shape_str(xs) + " in " +
                         std::to_string(groups) + " group(s)");
    const int64_t C = xs[1], Cg = C / groups, Kg = wt.shape[1], K = Kg * groups, kh = wt.shape[2], kw = wt.shape[3];
    if (b >= 0 && g_.constant(b).numel() != K) return fail(n, "the bias does not hold one value per output channel");
    interp::TransposeWindow tw;
    try {
      tw = row ? interp::resolve_transpose_window(n, {xs[3]}, {kw}) : interp::resolve_transpose_window(n, {xs[2], xs[3]}, {kh, kw});
    } catch (const Error& e) {
      return fail(n, e.what());
    }
    if (row) {
      // The row axis: one element, kernel 1, no stride, padding or dilation.
      for (auto* v : {&tw.kernel, &tw.stride, &tw.dilation, &tw.out}) v->insert(v->begin(), 1);
      for (auto* v : {&tw.pad_begin, &tw.pad_end, &tw.output_padding}) v->insert(v->begin(), 0);
    }
    // Per axis: zeros before the first input pixel (pre) and after the last
    // (post) on the zero-inserted grid; the convolution over it is valid.
    std::array<int64_t, 2> pre{}, post{}, up{};
    bool plain = true;
    for (int d = 0; d < 2; ++d) {
      const int64_t ext = (std::array<int64_t, 2>{kh, kw}[d] - 1) * tw.dilation[d];
      pre[d] = ext - tw.pad_begin[d];
      up[d] = tw.out[d] + ext;
      post[d] = up[d] - ((xs[2 + d] - 1) * tw.stride[d] + 1) - pre[d];
      plain &= tw.stride[d] == 1 && pre[d] >= 0 && post[d] >= 0;
    }
    // W'[g * Kg + k, c, a, b] = W[g * Cg + c, k, kh - 1 - a, kw - 1 - b]
    Tensor fw = Tensor::floats({K, Cg, kh, kw});
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t k = 0; k < Kg; ++k)
        for (int64_t c = 0; c < Cg; ++c)
          for (int64_t i = 0; i < kh; ++i)
            for (int64_t j = 0; j < kw; ++j)
              fw.f[static_cast<size_t>((((g * Kg + k) * Cg + c) * kh + i) * kw + j)] =
                  wt.f[static_cast<size_t>((((g * Cg + c) * Kg + k) * kh + (kh - 1 - i)) * kw + (kw - 1 - j))];
    int src = row ? reshaped(x, xs, base_name(n) + "_row", n.name) : x;
    if (!plain) {
      Proto z;
      z.l.op = fir::Op::Resize;
      z.l.name = base_name(n) + "_zeros";
      z.l.ori_name = n.name;
      z.l.activation_attr = Json::object();
      z.l.activation_attr.set("mode", "zeros");
      z.l.activation_attr.set("strides", Json(std::vector<int64_t>{tw.stride[0], tw.stride[1]}));
      z.l.activation_attr.set("pads", Json(std::vector<int64_t>{pre[0], pre[1]}));
      z.in_values = {src};
      z.fir_shape = {xs[0], C, up[0], up[1]};
      z.l.value = -1;  // no float counterpart: quantized as its input (assign_qclasses)
      z.l.out_shape = z.fir_shape;
      int tmp = new_pseudo();
      protos_.push_back(std::move(z));
      pseudo_[tmp] = static_cast<int>(protos_.size() - 1);
      src = tmp;
    }
    Proto p;
    p.l.op = fir::Op::Conv2d;
    p.l.name = base_name(n);
    p.l.kernel = std::array<int64_t, 2>{kh, kw};
    p.l.stride = std::array<int64_t, 2>{1, 1};
    if (tw.dilation[0] != 1 || tw.dilation[1] != 1) p.l.dilation = std::array<int64_t, 2>{tw.dilation[0], tw.dilation[1]};
    p.l.padding = plain ? std::array<int64_t, 4>{pre[0], post[0], pre[1], post[1]} : std::array<int64_t, 4>{0, 0, 0, 0};
    if (groups != 1) p.l.groups = groups;
    p.l.has_activation_key = true;
    p.l.weight = std::move(fw);
    p.l.bias = b >= 0 ? g_.constant(b) : Tensor::floats({K});
    p.in_values = {src};
    int out = n.outputs[0];
    std::string ori = n.name;
    fuse_activation(p, out, ori);
    p.l.ori_name = ori;
    if (row) p.fir_shape = as_row(shape(out));
    emit(std::move(p), out);
  }

  // Reflect and edge Pad of the rows and columns of an image: a resize
  // layer in that mode (the vector processor's resampling reads each output
  // pixel's source pixel; formats/Frontend_IR_Format.md).
  void pad_copy(const Node& n) {
    const std::string mode = n.get_string("mode", "constant");
    int x = n.input(0);
    if (mode != "reflect" && mode != "edge") return fail(n, "Pad in mode '" + mode + "' is not supported");
    if (!g_.value(x).has_shape || shape(x).size() != 4)
      return fail(n, "Pad in mode '" + mode + "' is supported for the rows and columns of an image (N, C, H, W) only");
    const Shape& xs = shape(x);
    std::vector<int64_t> pads;
    if (g_.opset < 11) {
      pads = n.get_ints("pads");
    } else {
      if (n.input(1) < 0 || !is_const(n.input(1)))
        return fail(n, "the pads must be a constant (here they are computed or a graph input)");
      pads = g_.constant(n.input(1)).to_ints();
      if (n.input(3) >= 0) return fail(n, "Pad with an axes input is not supported");
    }
    if (pads.size() != 8) return fail(n, "pads must hold 8 values for a 4-D input");
    if (pads[0] || pads[1] || pads[4] || pads[5])
      return fail(n, "Pad in mode '" + mode + "' of the batch or channel axis is not supported (only rows and columns)");
    for (int d = 0; d < 2; ++d) {
      const int64_t lo = pads[static_cast<size_t>(2 + d)], hi = pads[static_cast<size_t>(6 + d)], in = xs[static_cast<size_t>(2 + d)];
      if (in + lo + hi < 1) return fail(n, "the pads remove the whole axis");
      if (mode == "reflect" && (lo >= in || hi >= in) && (lo > 0 || hi > 0))
        return fail(n, "reflect padding must be smaller than the axis it pads");
    }
    Proto p;
    p.l.op = fir::Op::Resize;
    p.l.name = base_name(n) + "_1";
    p.l.ori_name = n.name;
    p.l.activation_attr = Json::object();
    p.l.activation_attr.set("mode", mode);
    p.l.activation_attr.set("pads", Json(std::vector<int64_t>{pads[2], pads[3]}));
    p.in_values = {x};
    emit(std::move(p), n.outputs[0]);
  }

  // Symmetric weight scales the source model gives along `axis` (one per
  // output channel, K of them); empty when there are none.
  std::vector<double> preset_scales(int w, int64_t axis, int64_t K) const {
    const auto& pq = g_.value(w).preset;
    if (!pq || pq->scale.empty()) return {};
    for (int64_t z : pq->zero_point)
      if (z != 0) return {};
    for (double s : pq->scale)
      if (!(s > 0)) return {};  // no INT8 code at a zero or negative scale: derive it from the weights
    if (pq->scale.size() == 1) return std::vector<double>(static_cast<size_t>(K), pq->scale[0]);
    if (pq->axis != axis || static_cast<int64_t>(pq->scale.size()) != K) return {};
    return pq->scale;
  }

  // Dense from a weight W[K, D] (already transposed to FIR layout) and bias[K].
  void dense(const Node& n, int x, Tensor w, Tensor bias, int out, std::string ori, const std::string& name,
             std::vector<double> scales = {}) {
    Proto p;
    p.l.weight_scales = std::move(scales);
    p.l.op = fir::Op::Dense;
    p.l.name = name;
    p.l.has_activation_key = true;
    int src = resolve(x);
    // The input as the FIR sees it: a dense before may have produced [N, K, 1, 1].
    Shape xs = shape(src);
    if (auto it = producer_.find(src); it != producer_.end()) xs = protos_[static_cast<size_t>(it->second)].fir_shape;
    int64_t K = w.shape[0];
    if (xs.size() == 4 && interp::shape_numel(xs) / xs[0] == w.shape[1]) {
      // Flatten absorbed: the weight takes the [K, C, H, W] layout of the 4-D input.
      w.shape = {K, xs[1], xs[2], xs[3]};
      p.fir_shape = {xs[0], K, 1, 1};
    } else if (xs.size() == 2) {
      p.fir_shape = {xs[0], K};
    } else if (interp::shape_numel(xs) / xs[0] == w.shape[1]) {
      // [A, 1, D]: as a FIR dense this would read as a flattened sample;
      // make the token form explicit with a reshape to [A, D] first.
      int64_t rows = interp::shape_numel(xs) / w.shape[1];
      Proto rs;
      rs.l.op = fir::Op::Reshape;
      rs.l.name = name + "_reshape_input0";
      rs.l.ori_name = n.name;
      rs.in_values = {src};
      rs.fir_shape = {rows, w.shape[1]};
      auto key = std::make_pair(src, rows);
      if (auto it = flat_inputs_.find(key); it != flat_inputs_.end()) {
        src = it->second;
      } else {
        int tmp = new_pseudo();
        rs.l.out_shape = rs.fir_shape;
        rs.l.value = src;  // the same data as src, reshaped: its statistics and float reference
        protos_.push_back(std::move(rs));
        pseudo_[tmp] = static_cast<int>(protos_.size() - 1);
        flat_inputs_[key] = tmp;
        src = tmp;
      }
      p.fir_shape = {rows, K};
    } else {
      Shape s = xs;
      s.back() = K;
      p.fir_shape = s;
    }
    p.l.weight = std::move(w);
    p.l.bias = std::move(bias);
    p.in_values = {src};
    fold_scalar(p, out, ori);
    fuse_activation(p, out, ori);
    p.l.ori_name = ori;
    emit(std::move(p), out);
  }

  void gemm(const Node& n) {
    int a = n.input(0), b = n.input(1), c = n.input(2);
    if (!float_const(b) || (c >= 0 && !float_const(c)))
      return fail(n, "B and C must be floating-point constants (a dense layer)");
    if (n.get_int("transA", 0) != 0) return fail(n, "transA=1 is not supported");
    float alpha = n.get_float("alpha", 1.0f), beta = n.get_float("beta", 1.0f);
    const Tensor& B = g_.constant(b);
    if (B.rank() != 2) return fail(n, "B must be 2-D");
    bool tb = n.get_int("transB", 0) != 0;
    int64_t K = tb ? B.shape[0] : B.shape[1], D = tb ? B.shape[1] : B.shape[0];
    Tensor w = Tensor::floats({K, D});
    for (int64_t i = 0; i < K; ++i)
      for (int64_t j = 0; j < D; ++j) w.f[i * D + j] = alpha * (tb ? B.f[i * D + j] : B.f[j * K + i]);
    Tensor bias = Tensor::floats({K});
    if (c >= 0 && beta != 0.0f) {
      const Tensor& C = g_.constant(c);
      if (C.numel() == 1) std::fill(bias.f.begin(), bias.f.end(), beta * C.f[0]);
      else if (C.numel() == K) for (int64_t i = 0; i < K; ++i) bias.f[i] = beta * C.f[i];
      else return fail(n, "C of shape " + interp::shape_str(C.shape) + " is not a per-output bias");
    }
    dense(n, a, std::move(w), std::move(bias), n.outputs[0], n.name, base_name(n), preset_scales(b, tb ? 0 : 1, K));
  }

  void matmul(const Node& n) {
    int a = n.input(0), b = n.input(1);
    if (is_const(a)) return fail(n, "a constant first operand is not supported");
    if (!is_const(b)) {
      Proto p;
      p.l.op = fir::Op::MatMul;
      p.l.name = base_name(n);
      p.l.ori_name = n.name;
      p.in_values = {a, b};
      emit(std::move(p), n.outputs[0]);
      return;
    }
    const Tensor& B = g_.constant(b);
    if (!B.is_float() || B.rank() != 2 || shape(a).size() < 2)
      return fail(n, "a constant operand must be 2-D floating point and the input at least 2-D");
    int64_t D = B.shape[0], K = B.shape[1];
    Tensor w = Tensor::floats({K, D});
    for (int64_t i = 0; i < K; ++i)
      for (int64_t j = 0; j < D; ++j) w.f[i * D + j] = B.f[j * K + i];
    Tensor bias = Tensor::floats({K});
    int out = n.outputs[0];
    std::string ori = n.name;
    // A following Add of a per-output constant is the bias.
    if (int r = single_reader(out); r >= 0 && node(r).op == "Add") {
      int c = other(node(r), out);
      if (c >= 0 && float_const(c) && g_.constant(c).numel() == K && g_.constant(c).shape.back() == K) {
        bias.f = g_.constant(c).f;
        bias.shape = {K};
        consumed_[r] = 1;
        out = node(r).outputs[0];
        ori = node(r).name;
      }
    }
    // Slices of the output along its last axis (the q/k/v split of attention)
    // become one dense per slice.
    if (split_dense(n, a, w, bias, out)) return;
    dense(n, a, std::move(w), std::move(bias), out, ori, base_name(n), preset_scales(b, 1, K));
  }

  bool split_dense(const Node& n, int a, const Tensor& w, const Tensor& bias, int out) {
    if (is_output(out) || cons_[out].size() < 2) return false;
    int64_t K = w.shape[0], D = w.shape[1];
    int64_t rank = static_cast<int64_t>(shape(out).size());
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (int r : cons_[out]) {
      const Node& s = node(r);
      if (consumed_[r] || s.op != "Slice" || g_.opset < 10 || s.input(0) != out) return false;
      for (int i = 1; i < 5; ++i)
        if (s.input(i) >= 0 && !is_const(s.input(i))) return false;
      auto starts = g_.constant(s.input(1)).to_ints(), ends = g_.constant(s.input(2)).to_ints();
      std::vector<int64_t> axes = s.input(3) >= 0 ? g_.constant(s.input(3)).to_ints() : std::vector<int64_t>{0};
      std::vector<int64_t> steps = s.input(4) >= 0 ? g_.constant(s.input(4)).to_ints() : std::vector<int64_t>{1};
      if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1 || steps.size() != 1 || steps[0] != 1) return false;
      int64_t ax = axes[0] < 0 ? axes[0] + rank : axes[0];
      if (ax != rank - 1) return false;
      int64_t b = std::clamp<int64_t>(starts[0] < 0 ? starts[0] + K : starts[0], 0, K);
      int64_t e = std::clamp<int64_t>(ends[0] < 0 ? ends[0] + K : ends[0], 0, K);
      if (e <= b) return false;
      ranges.push_back({b, e});
    }
    int j = 0;
    for (int r : cons_[out]) {
      auto [b, e] = ranges[static_cast<size_t>(j)];
      Tensor ws = Tensor::floats({e - b, D}), bs = Tensor::floats({e - b});
      std::copy(w.f.begin() + b * D, w.f.begin() + e * D, ws.f.begin());
      std::copy(bias.f.begin() + b, bias.f.begin() + e, bs.f.begin());
      consumed_[r] = 1;
      dense(n, a, std::move(ws), std::move(bs), node(r).outputs[0], node(r).name,
            base_name(n) + "_" + std::to_string(j));
      ++j;
    }
    return true;
  }

  // x * 0.5 * (1 + erf(x / sqrt(2))), as exported by PyTorch.
  bool gelu(int k) {
    const Node& d = node(k);
    int x = d.input(0);
    float c;
    if (!scalar_const(d.input(1), c) || !near(c, std::sqrt(2.0f), 1e-3f)) return false;
    int e = single_reader(d.outputs[0]);
    if (e < 0 || node(e).op != "Erf") return false;
    int a = single_reader(node(e).outputs[0]);
    float one;
    if (a < 0 || node(a).op != "Add" || !scalar_const(other(node(a), node(e).outputs[0]), one) || one != 1.0f) return false;
    int m1 = single_reader(node(a).outputs[0]);
    if (m1 < 0 || node(m1).op != "Mul" || other(node(m1), node(a).outputs[0]) != x) return false;
    int m2 = single_reader(node(m1).outputs[0]);
    float half;
    if (m2 < 0 || node(m2).op != "Mul" || !scalar_const(other(node(m2), node(m1).outputs[0]), half) || half != 0.5f)
      return false;
    for (int u : {e, a, m1, m2}) consumed_[u] = 1;
    vp_activation("gelu", fir::Op::Gelu, node(m2), x, node(m2).outputs[0], d.op + "_" + std::to_string(d.source_index) + "_1");
    return true;
  }

  // ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div [, Mul gamma [, Add beta]].
  bool layer_norm_pattern(int k) {
    const Node& rm1 = node(k);
    int x = rm1.input(0);
    if (x < 0 || !g_.value(x).has_shape) return false;
    int64_t rank = static_cast<int64_t>(shape(x).size());
    // Over one axis: the last (tokens, channels-last tensors) or, for a 4-D
    // image, the channels (a channels-last LayerNorm whose transposes were
    // sunk around it).
    int64_t axis = -1;
    auto one_axis = [&](const Node& r) {
      std::vector<int64_t> axes = r.get_ints("axes");
      if (g_.opset >= 18 && r.input(1) >= 0 && is_const(r.input(1))) axes = g_.constant(r.input(1)).to_ints();
      if (axes.size() != 1 || r.get_int("keepdims", 1) != 1 || axes[0] < -rank || axes[0] >= rank) return false;
      int64_t a = axes[0] < 0 ? axes[0] + rank : axes[0];
      if (a != rank - 1 && !(rank == 4 && a == 1)) return false;
      if (axis >= 0 && a != axis) return false;
      axis = a;
      return true;
    };
    if (!one_axis(rm1)) return false;
    int sub = single_reader(rm1.outputs[0]);
    if (sub < 0 || node(sub).op != "Sub" || node(sub).input(0) != x) return false;
    int d = node(sub).outputs[0];
    if (cons_[d].size() != 2 || is_output(d)) return false;
    int pw = -1, dv = -1;
    for (int r : cons_[d]) {
      if (node(r).op == "Pow") pw = r;
      if (node(r).op == "Div" && node(r).input(0) == d) dv = r;
    }
    float two, eps;
    if (pw < 0 || dv < 0 || !scalar_const(node(pw).input(1), two) || two != 2.0f) return false;
    int rm2 = single_reader(node(pw).outputs[0]);
    if (rm2 < 0 || node(rm2).op != "ReduceMean" || !one_axis(node(rm2))) return false;
    int ad = single_reader(node(rm2).outputs[0]);
    if (ad < 0 || node(ad).op != "Add" || !scalar_const(other(node(ad), node(rm2).outputs[0]), eps)) return false;
    int sq = single_reader(node(ad).outputs[0]);
    if (sq < 0 || node(sq).op != "Sqrt" || node(dv).input(1) != node(sq).outputs[0]) return false;
    int64_t C = shape(x)[static_cast<size_t>(axis)];
    Tensor gamma = Tensor::floats({C}, std::vector<float>(static_cast<size_t>(C), 1.0f)), beta = Tensor::floats({C});
    int out = node(dv).outputs[0];
    std::vector<int> used = {sub, pw, rm2, ad, sq, dv};
    // One value per element of the axis, broadcast along the others.
    auto along_axis = [&](int v) {
      if (v < 0 || !float_const(v) || g_.constant(v).numel() != C) return false;
      Shape cs = g_.constant(v).shape;
      if (static_cast<int64_t>(cs.size()) > rank) return false;
      while (static_cast<int64_t>(cs.size()) < rank) cs.insert(cs.begin(), 1);
      return cs[static_cast<size_t>(axis)] == C;
    };
    if (int ml = single_reader(out); ml >= 0 && node(ml).op == "Mul") {
      int gv = other(node(ml), out);
      if (along_axis(gv)) {
        gamma.f = g_.constant(gv).f;
        used.push_back(ml);
        out = node(ml).outputs[0];
        if (int ab = single_reader(out); ab >= 0 && node(ab).op == "Add") {
          int bv = other(node(ab), out);
          if (along_axis(bv)) {
            beta.f = g_.constant(bv).f;
            used.push_back(ab);
            out = node(ab).outputs[0];
          }
        }
      }
    }
    for (int u : used) consumed_[u] = 1;
    Proto p;
    p.l.op = fir::Op::LayerNorm;
    p.l.name = "LayerNorm_" + std::to_string(rm1.source_index) + "_1";
    p.l.ori_name = node(used.back()).name;
    p.l.axis = axis;
    p.l.activation_attr = Json::object();
    p.l.activation_attr.set("epsilon", static_cast<double>(eps));
    p.l.weight = std::move(gamma);
    p.l.bias = std::move(beta);
    p.in_values = {x};
    emit(std::move(p), out);
    return true;
  }

  // LayerNormalization over the trailing axes [axis, rank). The FIR's
  // layer_norm normalises one axis: the trailing axes are flattened into one
  // by a host reshape, with scale and bias broadcast over them and flattened
  // alike (the kernel walks the normalised elements in row-major order
  // either way, so the values are the same), and the result reshaped back.
  // The optional Mean and InvStdDev outputs, when read, are layer_norm
  // layers giving that output of the same kernel (activation_attr "output").
  void layer_norm(const Node& n) {
    int x = n.input(0), s = n.input(1), b = n.input(2);
    if (!float_const(s) || (b >= 0 && !float_const(b))) return fail(n, "scale and bias must be floating-point constants");
    if (!g_.value(x).has_shape) return fail(n, "the input has no known shape");
    const Shape& xs = shape(x);
    const int64_t rank = static_cast<int64_t>(xs.size());
    int64_t axis = n.get_int("axis", -1);
    if (axis < -rank || axis >= rank)
      return fail(n, "axis " + std::to_string(axis) + " outside the input " + interp::shape_str(xs));
    if (axis < 0) axis += rank;
    if (n.get_int("stash_type", 1) != 1)
      return fail(n, "stash_type " + std::to_string(n.get_int("stash_type", 1)) + " (only 1, float32, is supported)");
    const Shape norm(xs.begin() + axis, xs.end());
    const int64_t C = interp::shape_numel(norm);
    // A constant broadcast to the normalised shape (the interpreter's Expand,
    // numpy's rule, as the kernel broadcasts them), flattened.
    auto spread = [&](int v, Tensor& out) {
      Node e;
      e.op = "Expand";
      e.name = n.name;
      e.outputs = {0};
      const Tensor to = Tensor::ints({static_cast<int64_t>(norm.size())}, norm);
      std::vector<Tensor> r;
      try {
        interp::run_kernel(e, g_.opset, {&g_.constant(v), &to}, r);
      } catch (const Error&) {
        return false;
      }
      if (r.empty() || r[0].shape != norm) return false;  // Expand also broadcasts norm to t's extra dims
      out = Tensor::floats({C}, std::move(r[0].f));
      return true;
    };
    Tensor scale, bias = Tensor::floats({C});
    if (!spread(s, scale) || (b >= 0 && !spread(b, bias)))
      return fail(n, "scale and bias must broadcast to the normalised dimensions " + interp::shape_str(norm));
    Shape flat(xs.begin(), xs.begin() + axis);
    flat.push_back(C);
    int src = x;
    if (flat != xs) src = reshaped(x, flat, base_name(n) + "_flatten", n.name);
    Shape stat = flat;
    stat.back() = 1;
    const char* names[] = {"y", "mean", "inv_std_dev"};
    for (size_t k = 0; k < n.outputs.size() && k < 3; ++k) {
      const int v = n.outputs[k];
      if (v < 0 || (cons_[v].empty() && !is_output(v))) continue;  // not read
      Proto p;
      p.l.op = fir::Op::LayerNorm;
      p.l.name = base_name(n) + (k == 0 ? std::string("_1") : "_" + std::string(names[k]));
      p.l.ori_name = n.name;
      p.l.axis = static_cast<int64_t>(flat.size()) - 1;
      p.l.activation_attr = Json::object();
      p.l.activation_attr.set("epsilon", static_cast<double>(n.get_float("epsilon", 1e-5f)));
      if (k > 0) p.l.activation_attr.set("output", names[k]);
      p.l.weight = scale;
      p.l.bias = bias;
      p.in_values = {src};
      p.fir_shape = k == 0 ? flat : stat;
      emit(std::move(p), v);
    }
  }

  void binary(const Node& n) {
    int a = n.input(0), b = n.input(1);
    bool ca = is_const(a), cb = is_const(b);
    if (ca && cb) return fail(n, "both operands are constants");
    bool commutative = n.op == "Add" || n.op == "Mul";
    if (ca && commutative) std::swap(a, b), std::swap(ca, cb);
    if (ca) return fail(n, "a constant first operand is not supported");
    Proto p;
    p.l.name = base_name(n) + "_1";
    p.l.ori_name = n.name;
    int bv = b;
    if (n.op == "Add" || n.op == "Sub") {
      p.l.op = n.op == "Add" ? fir::Op::ElementWiseAdd : fir::Op::ElementWiseSub;
      p.l.sumsub_mode = n.op == "Add" ? "add" : "sub";
    } else {
      p.l.op = fir::Op::ElementWiseMul;
    }
    if (cb) {
      // A constant operand is loaded from DRAM as FP16 (operand B of the
      // vector processor): float16 numbers, of the other operand's rank
      // (numpy broadcast). x / c = x * (1/c).
      Tensor r = g_.constant(b);
      if (!r.is_float()) {
        std::vector<float> f(r.i.begin(), r.i.end());
        r = Tensor::floats(r.shape, std::move(f));
      }
      if (n.op == "Div")
        for (float& v : r.f) v = 1.0f / v;
      for (float& v : r.f) v = int8::to_float16(v);
      while (r.shape.size() < shape(a).size()) r.shape.insert(r.shape.begin(), 1);
      bv = add_constant_value(p.l.name + "_constant1", std::move(r));
    } else if (n.op == "Div") {
      return fail(n, "division by a computed tensor is not supported");
    }
    int out = n.outputs[0];
    if (p.l.op == fir::Op::ElementWiseAdd) {
      if (int r = single_reader(out); r >= 0 && node(r).op == "Relu") {
        p.l.relu_group = true;
        consumed_[r] = 1;
        out = node(r).outputs[0];
        p.l.ori_name = node(r).name;
      }
    }
    p.in_values = {a, bv};
    if (!g_.value(a).has_shape || (b >= 0 && !g_.value(b).has_shape)) return fail(n, "operand shapes are unknown");
    emit(std::move(p), out);
  }

  // Pseudo values stand for layer outputs with no float-graph counterpart.
  int new_pseudo() { return -1000000 - static_cast<int>(pseudo_.size()) - 1; }

  // A host reshape of value v to `to`, as a pseudo value its reader takes in
  // place of v: the same data, so v's statistics and float reference.
  int reshaped(int v, Shape to, const std::string& name, const std::string& ori) {
    Proto rs;
    rs.l.op = fir::Op::Reshape;
    rs.l.name = name;
    rs.l.ori_name = ori;
    rs.in_values = {v};
    rs.fir_shape = to;
    rs.l.out_shape = std::move(to);
    rs.l.value = v;
    int tmp = new_pseudo();
    protos_.push_back(std::move(rs));
    pseudo_[tmp] = static_cast<int>(protos_.size() - 1);
    return tmp;
  }
  // 1-D pooling and transposed convolution run as the 2-D operator over a
  // row: [N, C, L] is viewed as [N, C, 1, L] (kernel [1, k]); the layer's
  // output [N, K, 1, L'] goes back to 3-D through the reshape every reader
  // of a layer whose FIR shape is not its value's gets (assemble()).
  static Shape as_row(const Shape& s) { return {s[0], s[1], 1, s[2]}; }

  // Constants created by lowering live in a side table; values index them as
  // -(2 + index) so they never collide with graph values.
  int add_constant_value(const std::string& name, Tensor t) {
    if (t.shape.empty()) t.shape = {1};  // FIR shapes have at least one dimension
    extra_constants_.push_back({name, std::move(t)});
    return -2 - static_cast<int>(extra_constants_.size() - 1);
  }

  void vp_activation(const std::string& mode, fir::Op op, const Node& last, int x, int out, const std::string& name) {
    Proto p;
    p.l.op = op;
    p.l.name = name;
    p.l.ori_name = last.name;
    p.l.act_mode = mode;
    p.in_values = {x};
    emit(std::move(p), out);
  }

  void activation(int k) {
    const Node& n = node(k);
    int x = n.input(0), out = n.outputs[0];
    std::string name = base_name(n) + "_1";
    if (n.op == "Relu") return vp_activation("relu", fir::Op::Relu, n, x, out, name);
    if (n.op == "Tanh") return vp_activation("tanh", fir::Op::Tanh, n, x, out, name);
    if (n.op == "HardSwish") return vp_activation("hard_swish", fir::Op::HardSwish, n, x, out, name);
    if (n.op == "Clip") return clip(n, x, out, name);
    if (n.op == "LeakyRelu" || n.op == "Elu") {
      bool leaky = n.op == "LeakyRelu";
      vp_activation(leaky ? "leaky_relu" : "elu", leaky ? fir::Op::LeakyRelu : fir::Op::Elu, n, x, out, name);
      protos_.back().l.activation_attr = Json::object();
      protos_.back().l.activation_attr.set("alpha", static_cast<double>(n.get_float("alpha", leaky ? 0.01f : 1.0f)));
      return;
    }
    if (n.op == "PRelu") return prelu(n, x, out, name);
    // x * f(x) forms: sigmoid -> silu, hard sigmoid (1/6, 1/2) -> hard swish
    int m = single_reader(out);
    bool times_x = m >= 0 && node(m).op == "Mul" && other(node(m), out) == x;
    if (n.op == "Sigmoid") {
      if (times_x) {
        consumed_[m] = 1;
        return vp_activation("silu", fir::Op::Silu, node(m), x, node(m).outputs[0], name);
      }
      return vp_activation("sigmoid", fir::Op::Sigmoid, n, x, out, name);
    }
    // HardSigmoid
    float alpha = n.get_float("alpha", 0.2f), beta = n.get_float("beta", 0.5f);
    if (times_x && near(alpha, 1.0f / 6.0f, 1e-5f) && beta == 0.5f) {
      consumed_[m] = 1;
      return vp_activation("hard_swish", fir::Op::HardSwish, node(m), x, node(m).outputs[0], name);
    }
    vp_activation("hard_sigmoid", fir::Op::HardSigmoid, n, x, out, name);
    protos_.back().l.activation_attr = Json::object();
    protos_.back().l.activation_attr.set("alpha", static_cast<double>(alpha)).set("beta", static_cast<double>(beta));
  }

  // A standalone Clip (ReLU6 among them) on the vector processor; a missing
  // bound is the largest float, so the clamp stays one operation.
  void clip(const Node& n, int x, int out, const std::string& name) {
    float lo = std::numeric_limits<float>::lowest(), hi = std::numeric_limits<float>::max();
    if (g_.opset < 11) {
      lo = n.get_float("min", lo);
      hi = n.get_float("max", hi);
    } else if ((n.input(1) >= 0 && !scalar_const(n.input(1), lo)) || (n.input(2) >= 0 && !scalar_const(n.input(2), hi))) {
      return fail(n, "the bounds must be scalar constants");
    }
    lo = std::max(lo, std::numeric_limits<float>::lowest());
    hi = std::min(hi, std::numeric_limits<float>::max());
    vp_activation("clip", fir::Op::Clip, n, x, out, name);
    protos_.back().l.activation_attr = Json::object();
    protos_.back().l.activation_attr.set("min", static_cast<double>(lo)).set("max", static_cast<double>(hi));
  }

  // PReLU: a leaky ReLU whose slope is a constant tensor broadcast over the
  // input (ONNX's unidirectional broadcast: one value per channel is
  // [C, 1, 1]), kept as a second input of the input's rank.
  void prelu(const Node& n, int x, int out, const std::string& name) {
    int s = n.input(1);
    if (!float_const(s)) return fail(n, "the slope must be a floating-point constant");
    const Shape& xs = shape(x);
    Tensor slope = g_.constant(s);
    Shape ss(xs.size(), 1);
    bool fits = slope.shape.size() <= xs.size();
    for (size_t i = 0; fits && i < slope.shape.size(); ++i) {
      int64_t d = slope.shape[slope.shape.size() - 1 - i];
      fits = d == 1 || d == xs[xs.size() - 1 - i];
      ss[xs.size() - 1 - i] = d;
    }
    if (!fits) {
      // A slope of the input's rank that differs only along axis 0 holds one
      // slope per sample: it fixes the batch (onnx2fir --batch resized the input).
      bool per_sample = slope.shape.size() == xs.size() && !xs.empty() && slope.shape[0] != 1 && slope.shape[0] != xs[0] &&
                        std::equal(slope.shape.begin() + 1, slope.shape.end(), xs.begin() + 1);
      return fail(n, "the slope " + interp::shape_str(slope.shape) + " does not broadcast to the input " +
                         interp::shape_str(xs) +
                         (per_sample ? ": it holds one slope per sample along axis 0, the batch, so the model runs at batch " +
                                           std::to_string(slope.shape[0]) + " only"
                                     : ""));
    }
    slope.shape = ss;
    // The vector processor reads the slope from DRAM as FP16 (operand B):
    // the interpreter computes with the same float16 numbers.
    for (float& v : slope.f) v = int8::to_float16(v);
    vp_activation("prelu", fir::Op::PRelu, n, x, out, name);
    protos_.back().in_values.push_back(add_constant_value(name + "_constant1", std::move(slope)));
  }

  void pool(const Node& n) {
    int x = n.input(0);
    const bool row = shape(x).size() == 3;  // 1-D: over [N, C, 1, L]
    if (shape(x).size() != 4 && !row)
      return fail(n, "only 1-D and 2-D pooling (3-D or 4-D input) are supported (input " + interp::shape_str(shape(x)) + ")");
    const Shape xs = row ? as_row(shape(x)) : shape(x);
    Proto p;
    p.l.name = base_name(n) + "_1";
    p.l.ori_name = n.name;
    p.in_values = {row ? reshaped(x, xs, base_name(n) + "_row", n.name) : x};
    bool global = n.op == "GlobalAveragePool" || n.op == "GlobalMaxPool";
    bool is_max = n.op == "MaxPool" || n.op == "GlobalMaxPool";
    p.l.op = is_max ? fir::Op::MaxPool2d : fir::Op::AvgPool2d;
    if (global) {
      p.l.pool = std::array<int64_t, 2>{xs[2], xs[3]};
      p.l.stride = std::array<int64_t, 2>{1, 1};
      p.l.padding = std::array<int64_t, 4>{0, 0, 0, 0};
      p.l.ceil_mode = false;
    } else {
      std::vector<int64_t> kernel = n.get_ints("kernel_shape");
      bool ceil = n.get_int("ceil_mode", 0) != 0;
      interp::Window w;
      try {
        w = row ? interp::resolve_window(n, {xs[3]}, kernel, ceil) : interp::resolve_window(n, {xs[2], xs[3]}, kernel, ceil);
      } catch (const Error& e) {
        return fail(n, e.what());
      }
      if (row) {
        // The row axis: one element, window 1, no stride, padding or dilation.
        for (auto* v : {&kernel, &w.stride, &w.dilation, &w.out}) v->insert(v->begin(), 1);
        for (auto* v : {&w.pad_begin, &w.pad_end}) v->insert(v->begin(), 0);
      }
      if (w.dilation[0] != 1 || w.dilation[1] != 1) p.l.dilation = std::array<int64_t, 2>{w.dilation[0], w.dilation[1]};
      p.l.pool = std::array<int64_t, 2>{kernel[0], kernel[1]};
      p.l.stride = std::array<int64_t, 2>{w.stride[0], w.stride[1]};
      p.l.padding = std::array<int64_t, 4>{w.pad_begin[0], w.pad_end[0], w.pad_begin[1], w.pad_end[1]};
      p.l.ceil_mode = ceil;
      if (!is_max) {
        bool pads = w.pad_begin[0] || w.pad_end[0] || w.pad_begin[1] || w.pad_end[1];
        bool overhang = false;
        for (int d = 0; d < 2; ++d)
          if ((w.out[d] - 1) * w.stride[d] + (kernel[d] - 1) * w.dilation[d] + 1 > xs[2 + d] + w.pad_begin[d] + w.pad_end[d])
            overhang = true;
        bool include_pad = n.get_int("count_include_pad", 0) != 0;
        if (pads && include_pad && overhang)
          return fail(n, "average pooling counting its padding whose ceil_mode windows also reach past the padding "
                         "(a divisor of the padded window's part) is not supported");
        // The divisor varies at the borders: the window's elements inside the input.
        if ((pads && !include_pad) || overhang) {
          p.l.activation_attr = Json::object();
          p.l.activation_attr.set("count_include_pad", false);
        }
      }
    }
    if (!is_max) {
      // As in the reference, average pooling takes the window's reciprocal as
      // a second, constant [1, 1, 1, 1] input (the vector processor's scalar
      // multiplier, mul_group_k_scalar).
      p.l.pool_divisor = 1.0 / static_cast<double>((*p.l.pool)[0] * (*p.l.pool)[1]);
      Tensor k = Tensor::floats({1, 1, 1, 1}, {static_cast<float>(p.l.pool_divisor)});
      p.in_values.push_back(add_constant_value(p.l.name + "_constant1", std::move(k)));
    }
    if (row) p.fir_shape = as_row(shape(n.outputs[0]));
    emit(std::move(p), n.outputs[0]);
  }

  // Resize of H and W on the vector processor (formats/Frontend_IR_Format.md):
  // ONNX's attributes and the scales in activation_attr, the output size in
  // the output shape.
  void resize(const Node& n) {
    int x = n.input(0), out = n.outputs[0];
    const Shape& xs = shape(x);
    const Shape& os = shape(out);
    if (xs.size() != 4 || os.size() != 4 || xs[0] != os[0] || xs[1] != os[1])
      return fail(n, "only the height and width of a 4-D tensor may be resized");
    bool legacy = n.op == "Upsample" || g_.opset < 11;
    std::vector<double> scales;
    int sv = n.op == "Upsample" ? (g_.opset >= 9 ? n.input(1) : -1) : (g_.opset < 11 ? n.input(1) : n.input(2));
    int zv = legacy ? -1 : n.input(3);
    if (n.op == "Upsample" && g_.opset < 9) {
      for (float f : n.get_floats("scales")) scales.push_back(f);
    } else if (zv >= 0 && is_const(zv) && g_.constant(zv).numel() == 4) {
      for (int d = 0; d < 4; ++d) scales.push_back(double(os[d]) / double(xs[d]));
    } else if (sv >= 0 && is_const(sv) && g_.constant(sv).numel() == 4) {
      for (int d = 0; d < 4; ++d) scales.push_back(g_.constant(sv).at_double(d));
    } else {
      return fail(n, "the scales or sizes must be constants");
    }
    if (scales.size() != 4) return fail(n, "scales must hold one value per axis");
    std::string mode = n.get_string("mode", "nearest");
    Proto p;
    p.l.op = fir::Op::Resize;
    p.l.name = base_name(n) + "_1";
    p.l.ori_name = n.name;
    p.l.activation_attr = Json::object();
    p.l.activation_attr.set("mode", mode == "nearest" ? "nearest" : "linear");
    p.l.activation_attr.set("coordinate_transformation_mode",
                            legacy ? std::string("asymmetric") : n.get_string("coordinate_transformation_mode", "half_pixel"));
    p.l.activation_attr.set("nearest_mode", legacy ? std::string("floor") : n.get_string("nearest_mode", "round_prefer_floor"));
    p.l.activation_attr.set("scales", Json(std::vector<double>{scales[2], scales[3]}));
    p.in_values = {x};
    emit(std::move(p), out);
  }

  // ReduceMean, ReduceMax, ReduceSum. Over the rows and/or columns of a 4-D
  // tensor: one pooling window as large as the reduced axes (the vector
  // processor's max / average pooling; a sum is an average with factor 1).
  // Over other axes: one reduce_max / reduce_sum per axis, on the host.
  void reduce(const Node& n) {
    int x = n.input(0);
    if (x < 0 || !g_.value(x).has_shape) return fail(n, "the input has no known shape");
    const Shape& xs = shape(x);
    const int64_t r = static_cast<int64_t>(xs.size());
    std::vector<int64_t> axes = n.get_ints("axes");
    if (n.input(1) >= 0) {
      // opset 18 (ReduceSum from 13): the axes are a second input.
      if (!is_const(n.input(1))) return fail(n, "the axes must be a constant (here they are computed or a graph input)");
      axes = g_.constant(n.input(1)).to_ints();
    }
    if (axes.empty()) {
      if (n.get_int("noop_with_empty_axes", 0) != 0) {
        Proto p;  // the identity: a reshape to the same shape
        p.l.op = fir::Op::Reshape;
        p.l.name = base_name(n);
        p.l.ori_name = n.name;
        p.in_values = {x};
        emit(std::move(p), n.outputs[0]);
        return;
      }
      for (int64_t d = 0; d < r; ++d) axes.push_back(d);
    }
    for (auto& a : axes) {
      if (a < -r || a >= r) return fail(n, "axis " + std::to_string(a) + " outside the input " + interp::shape_str(xs));
      if (a < 0) a += r;
    }
    std::sort(axes.begin(), axes.end());
    axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
    const bool is_max = n.op == "ReduceMax", mean = n.op == "ReduceMean";
    Shape kept = xs;
    int64_t count = 1;
    for (int64_t a : axes) count *= xs[static_cast<size_t>(a)], kept[static_cast<size_t>(a)] = 1;
    if (r == 4 && axes.front() >= 2) {
      Proto p;
      p.l.op = is_max ? fir::Op::MaxPool2d : fir::Op::AvgPool2d;
      p.l.name = base_name(n) + "_1";
      p.l.ori_name = n.name;
      p.in_values = {x};
      p.l.pool = std::array<int64_t, 2>{xs[2] / kept[2], xs[3] / kept[3]};
      p.l.stride = std::array<int64_t, 2>{1, 1};
      p.l.padding = std::array<int64_t, 4>{0, 0, 0, 0};
      p.l.ceil_mode = false;
      if (!is_max) {
        p.l.pool_divisor = mean ? 1.0 / static_cast<double>(count) : 1.0;
        Tensor k = Tensor::floats({1, 1, 1, 1}, {static_cast<float>(p.l.pool_divisor)});
        p.in_values.push_back(add_constant_value(p.l.name + "_constant1", std::move(k)));
      }
      p.fir_shape = kept;  // keepdims = 0: readers see it through a reshape
      emit(std::move(p), n.outputs[0]);
      return;
    }
    int cur = x;
    Shape cs = xs;
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t a = axes[i];
      Proto p;
      p.l.op = is_max ? fir::Op::ReduceMax : fir::Op::ReduceSum;
      p.l.name = base_name(n) + "_" + std::to_string(i + 1);
      p.l.ori_name = n.name;
      p.l.axis = a;
      // A mean over several axes is the mean of the means over each.
      p.l.pool_divisor = mean ? 1.0 / static_cast<double>(xs[static_cast<size_t>(a)]) : 1.0;
      p.in_values = {cur};
      cs[static_cast<size_t>(a)] = 1;
      p.fir_shape = cs;
      if (i + 1 == axes.size()) {
        emit(std::move(p), n.outputs[0]);
        return;
      }
      int tmp = new_pseudo();
      p.l.value = -1;
      p.l.out_shape = p.fir_shape;
      protos_.push_back(std::move(p));
      pseudo_[tmp] = static_cast<int>(protos_.size() - 1);
      cur = tmp;
    }
  }

  void concat(const Node& n) {
    Proto p;
    p.l.op = fir::Op::Concat;
    p.l.name = base_name(n) + "_1";
    p.l.ori_name = n.name;
    int64_t rank = static_cast<int64_t>(shape(n.outputs[0]).size());
    int64_t axis = n.get_int("axis", 1);
    p.l.axis = axis < 0 ? axis + rank : axis;
    int c = 0;
    for (int v : n.inputs) {
      if (v < 0) continue;
      if (is_const(v)) {
        v = add_constant_value(p.l.name + "_constant" + std::to_string(++c), g_.constant(v));
        // Data movement brings no constant into L2 (ViT's class token).
        p.host_why = "concat of a constant (data movement on the chip moves activations only: no transfer brings a "
                 "constant into L2)";
      }
      p.in_values.push_back(v);
    }
    if (p.l.axis == 0 && p.in_values.size() > 1) p.host_why = batch_move_why("concatenation");
    emit(std::move(p), n.outputs[0]);
  }

  // Axis 0 of every tensor the chip holds is the batch (fir::chip_box): each
  // sample is a box of its own, and every accelerator layer keeps the
  // network's batch (gemini, irgen and the mapping's b partition cut work by
  // sample). A data movement that changes the batch runs on the host (the
  // reference interpreter, exact); accelerator layers after it, whose batch
  // is no longer the network's, are refused by gemini, naming the layer.
  static std::string batch_move_why(const std::string& what) {
    return what + " along axis 0, the batch: every accelerator layer keeps the network's batch (a sample is a box "
                  "of its own, work is cut by sample), so a layer that changes it runs on the host";
  }

  // ONNX Slice with constant starts/ends/axes/steps (inputs since opset 10,
  // attributes before): a FIR slice with ONNX's normalized bounds on every axis.
  void slice(const Node& n) {
    int x = n.input(0), out = n.outputs[0];
    const Shape& xs = shape(x);
    const int64_t r = static_cast<int64_t>(xs.size());
    std::vector<int64_t> starts, ends, axes, steps;
    if (g_.opset < 10) {
      starts = n.get_ints("starts");
      ends = n.get_ints("ends");
      axes = n.get_ints("axes");
    } else {
      auto ints = [&](int i, std::vector<int64_t>& v) {
        if (n.input(i) < 0) return true;
        if (!is_const(n.input(i))) return false;
        v = g_.constant(n.input(i)).to_ints();
        return true;
      };
      if (!ints(1, starts) || !ints(2, ends) || !ints(3, axes) || !ints(4, steps))
        return fail(n, "starts, ends, axes and steps must be constants");
    }
    if (axes.empty())
      for (int64_t d = 0; d < static_cast<int64_t>(starts.size()); ++d) axes.push_back(d);
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (starts.size() != ends.size() || starts.size() != axes.size() || starts.size() != steps.size())
      return fail(n, "starts, ends, axes and steps differ in length");
    Proto p;
    p.l.op = fir::Op::Slice;
    p.l.name = base_name(n) + "_1";
    p.l.ori_name = n.name;
    std::vector<int64_t> b(static_cast<size_t>(r), 0), e(xs.begin(), xs.end()), st(static_cast<size_t>(r), 1);
    for (size_t k = 0; k < axes.size(); ++k) {
      int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
      if (a < 0 || a >= r) return fail(n, "axis " + std::to_string(axes[k]) + " out of range");
      const size_t d = static_cast<size_t>(a);
      const int64_t dim = xs[d], s = steps[k];
      if (s == 0) return fail(n, "a step of 0");
      // ONNX's clamping: negative bounds count from the end; starts within
      // [0, dim] ([0, dim - 1] for negative steps), ends within [0, dim]
      // ([-1, dim - 1]).
      int64_t lo = starts[k] < 0 ? starts[k] + dim : starts[k], hi = ends[k] < 0 ? ends[k] + dim : ends[k];
      if (s > 0) {
        lo = std::clamp<int64_t>(lo, 0, dim);
        hi = std::clamp<int64_t>(hi, 0, dim);
      } else {
        lo = std::clamp<int64_t>(lo, 0, dim - 1);
        hi = std::clamp<int64_t>(hi, -1, dim - 1);
      }
      b[d] = lo, e[d] = hi, st[d] = s;
    }
    for (int64_t d : shape(out))
      if (d < 1) return fail(n, "the slice is empty (output " + interp::shape_str(shape(out)) + ")");
    p.l.starts = b;
    p.l.ends = e;
    p.l.steps = st;
    p.in_values = {x};
    if (r > 0 && (b[0] != 0 || e[0] != xs[0] || st[0] != 1)) p.host_why = batch_move_why("a slice");
    emit(std::move(p), out);
  }

  // ONNX Split: one FIR slice per output.
  void split(const Node& n) {
    int x = n.input(0);
    const Shape& xs = shape(x);
    const int64_t r = static_cast<int64_t>(xs.size());
    int64_t axis = n.get_int("axis", 0);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) return fail(n, "axis out of range");
    int64_t off = 0;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      int out = n.outputs[k];
      if (out < 0) continue;
      const int64_t len = shape(out)[static_cast<size_t>(axis)];
      if (len < 1) return fail(n, "output " + std::to_string(k) + " is empty");
      Proto p;
      p.l.op = fir::Op::Slice;
      p.l.name = base_name(n) + "_" + std::to_string(k + 1);
      p.l.ori_name = n.name;
      std::vector<int64_t> b(static_cast<size_t>(r), 0), e(xs.begin(), xs.end()), st(static_cast<size_t>(r), 1);
      b[static_cast<size_t>(axis)] = off;
      e[static_cast<size_t>(axis)] = off + len;
      p.l.starts = b;
      p.l.ends = e;
      p.l.steps = st;
      p.in_values = {x};
      if (axis == 0 && len != xs[0]) p.host_why = batch_move_why("a split");
      emit(std::move(p), out);
      off += len;
    }
  }

  // A chain of Reshape/Flatten and Transpose nodes (each the only reader of
  // the one before) from a 4-D tensor back to its own shape that only
  // reorders channels, as a channel shuffle does (reshape to [N, g, C/g, H,
  // W], swap the two channel axes, reshape back): a FIR gather of the
  // channels. The composite order is found by running the chain on a tensor
  // of element numbers.
  bool channel_gather(const Node& first) {
    int x = first.input(0);
    const Shape& xs = shape(x);
    if (xs.size() != 4 || interp::shape_numel(xs) > (int64_t{1} << 24)) return false;
    std::vector<int> chain;
    int v = x, k = -1;
    for (const Node* n = &first;;) {
      if (n->op != "Reshape" && n->op != "Flatten" && n->op != "Transpose") return false;
      if (n->input(0) != v || n->outputs.empty()) return false;
      chain.push_back(k);
      v = n->outputs[0];
      if (shape(v) == xs && chain.size() > 1) break;
      if (chain.size() >= 6) return false;
      k = single_reader(v);
      if (k < 0) return false;
      n = &node(k);
    }
    // Every node but the first by index; the first is `first`.
    Tensor t = Tensor::floats(xs);
    for (size_t e = 0; e < t.f.size(); ++e) t.f[e] = static_cast<float>(e);
    Tensor cur = t;
    for (size_t i = 0; i < chain.size(); ++i) {
      const Node& n = i == 0 ? first : node(chain[i]);
      interp::KernelInputs args{&cur};
      for (size_t j = 1; j < n.inputs.size(); ++j) args.push_back(n.inputs[j] >= 0 ? &g_.constant(n.inputs[j]) : nullptr);
      for (size_t j = 1; j < n.inputs.size(); ++j)
        if (n.inputs[j] >= 0 && !is_const(n.inputs[j])) return false;
      std::vector<Tensor> r;
      try {
        interp::run_kernel(n, g_.opset, args, r);
      } catch (const std::exception&) {
        return false;
      }
      if (r.empty()) return false;
      cur = std::move(r[0]);
    }
    if (cur.shape != xs) return false;
    // Output (n, c, h, w) must be input (n, idx[c], h, w).
    const int64_t N = xs[0], C = xs[1], HW = xs[2] * xs[3];
    std::vector<int64_t> idx(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) {
      int64_t src = static_cast<int64_t>(cur.f[static_cast<size_t>(c * HW)]);
      idx[static_cast<size_t>(c)] = src / HW % C;
    }
    for (int64_t b = 0; b < N; ++b)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t e = 0; e < HW; ++e) {
          int64_t want = (b * C + idx[static_cast<size_t>(c)]) * HW + e;
          if (static_cast<int64_t>(cur.f[static_cast<size_t>((b * C + c) * HW + e)]) != want) return false;
        }
    for (size_t i = 1; i < chain.size(); ++i) consumed_[static_cast<size_t>(chain[i])] = 1;
    Proto p;
    p.l.op = fir::Op::Gather;
    p.l.name = base_name(first) + "_1";
    p.l.ori_name = chain.size() > 1 ? node(chain.back()).name : first.name;
    p.l.axis = 1;
    p.l.indices = idx;
    p.in_values = {x};
    emit(std::move(p), v);
    return true;
  }

  void reshape(const Node& n) {
    int x = n.input(0), out = n.outputs[0];
    // A flatten read only by dense layers is absorbed into them.
    const Shape& xs = shape(x);
    const Shape& os = shape(out);
    bool flatten = xs.size() == 4 && os.size() == 2 && os[0] == xs[0] && !is_output(out) && !cons_[out].empty();
    if (flatten) {
      for (int r : cons_[out]) {
        const Node& c = node(r);
        bool dense_reader = (c.op == "Gemm" && c.input(0) == out && is_const(c.input(1)) && c.get_int("transA", 0) == 0) ||
                            (c.op == "MatMul" && c.input(0) == out && is_const(c.input(1)));
        if (!dense_reader) flatten = false;
      }
    }
    if (flatten) {
      alias_[out] = x;
      return;
    }
    Proto p;
    p.l.op = fir::Op::Reshape;
    p.l.name = base_name(n);
    p.l.ori_name = n.name;
    p.in_values = {x};
    emit(std::move(p), out);
  }

  void transpose(const Node& n) {
    Proto p;
    p.l.op = fir::Op::Transpose;
    p.l.name = base_name(n);
    p.l.ori_name = n.name;
    int64_t r = static_cast<int64_t>(shape(n.input(0)).size());
    std::vector<int64_t> perm = n.get_ints("perm");
    if (perm.empty())
      for (int64_t d = r - 1; d >= 0; --d) perm.push_back(d);
    for (auto& d : perm)
      if (d < 0) d += r;
    p.l.perm = perm;
    p.in_values = {n.input(0)};
    emit(std::move(p), n.outputs[0]);
  }

  void softmax(const Node& n) {
    int64_t r = static_cast<int64_t>(shape(n.input(0)).size());
    int64_t axis = n.get_int("axis", g_.opset < 13 ? 1 : -1);
    if (axis < 0) axis += r;
    if (g_.opset < 13 && axis != r - 1)
      return fail(n, "opset < 13 Softmax over the flattened trailing axes is only supported on the last axis");
    Proto p;
    p.l.op = fir::Op::Softmax;
    p.l.name = base_name(n) + "_1";
    p.l.ori_name = n.name;
    p.l.axis = axis;
    p.in_values = {n.input(0)};
    emit(std::move(p), n.outputs[0]);
  }

  // Gather of one fixed index along axis 1 of [N, T, D] (ViT's class token):
  // a selection matmul [1, T] x [N, T, D] -> [N, 1, D], then a reshape.
  void gather(const Node& n) {
    int x = n.input(0), idx = n.input(1);
    const Shape& xs = shape(x);
    int64_t axis = n.get_int("axis", 0);
    if (axis < 0) axis += static_cast<int64_t>(xs.size());
    if (xs.size() != 3 || axis != 1 || !is_const(idx) || g_.constant(idx).numel() != 1 || g_.constant(idx).rank() != 0)
      return fail(n, "only Gather of one constant index along axis 1 of a 3-D tensor is supported");
    int64_t T = xs[1], i = g_.constant(idx).at_int(0);
    if (i < 0) i += T;
    Tensor sel = Tensor::floats({1, T});
    sel.f[static_cast<size_t>(i)] = 1.0f;
    Proto mm;
    mm.l.op = fir::Op::MatMul;
    mm.l.name = base_name(n) + "_select";
    mm.l.ori_name = n.name;
    mm.selection = true;
    int sv = add_constant_value(mm.l.name + "_constant1", std::move(sel));
    mm.in_values = {sv, x};
    mm.fir_shape = {xs[0], 1, xs[2]};
    int tmp = new_pseudo();
    mm.l.value = -1;
    mm.l.out_shape = mm.fir_shape;
    protos_.push_back(std::move(mm));
    pseudo_[tmp] = static_cast<int>(protos_.size() - 1);
    Proto rs;
    rs.l.op = fir::Op::Reshape;
    rs.l.name = base_name(n);
    rs.l.ori_name = n.name;
    rs.in_values = {tmp};
    emit(std::move(rs), n.outputs[0]);
  }

  // ---- assembly: dtypes, quantize layers, final order ------------------------
  struct Edge {
    int producer;  // proto index, or -1 for graph input
    int input;     // graph input number when producer < 0
  };

  Edge source_of(int v) const {
    if (auto it = pseudo_.find(v); it != pseudo_.end()) return {it->second, -1};
    auto it = producer_.find(v);
    if (it != producer_.end()) return {it->second, -1};
    for (size_t k = 0; k < g_.inputs.size(); ++k)
      if (g_.inputs[k] == v) return {-1, static_cast<int>(k)};
    return {-2, -1};
  }

  // Does every reader of proto p's output want floating point (cpu layers,
  // graph outputs), looking through reshapes and transposes?
  bool wants_float(int p) {
    if (auto it = wants_float_memo_.find(p); it != wants_float_memo_.end()) return it->second;
    bool any = false, all = true;
    for (size_t q = 0; q < protos_.size(); ++q) {
      const Proto& c = protos_[q];
      for (int v : c.in_values) {
        Edge e = source_of(v);
        if (e.producer != p) continue;
        any = true;
        bool f;
        if (transparent(c.l.op)) f = wants_float(static_cast<int>(q));
        else f = device_of(c) == fir::Device::Cpu;
        all &= f;
      }
    }
    int v = protos_[static_cast<size_t>(p)].l.value;
    if (v >= 0 && is_output(v)) any = true;  // graph outputs are float
    bool r = any && all;
    wants_float_memo_[p] = r;
    return r;
  }

  int find_or(std::map<std::pair<int, std::string>, int>& cache, std::pair<int, std::string> key,
              const std::function<int()>& make) {
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    int k = make();
    cache[key] = k;
    return k;
  }

  void assemble() {
    // Output dtypes of the matched layers.
    for (size_t p = 0; p < protos_.size(); ++p) {
      Proto& pr = protos_[p];
      pr.l.device = device_of(pr);
      if (pr.l.device == fir::Device::Cpu && pr.l.op != fir::Op::Reshape)
        m_.cpu_fallbacks.push_back(pr.l.name + ": " + (pr.host_why.empty() ? why_cpu(pr.l.op) : pr.host_why));
    }
    std::vector<int> final_index(protos_.size(), -1);
    std::map<std::pair<int, std::string>, int> converted;  // (source key, kind) -> layer
    for (size_t k = 0; k < g_.inputs.size(); ++k) {
      m_.graph_inputs.push_back(g_.inputs[k]);
      m_.graph_input_shapes.push_back(shape(g_.inputs[k]));
    }

    // Layer output dtypes follow from producers for transparent layers, so
    // they are set while assembling in order.
    auto source_dtype = [&](const Edge& e) -> std::string {
      if (e.producer < 0) return "float16";
      return m_.layers[static_cast<size_t>(final_index[static_cast<size_t>(e.producer)])].out_dtype;
    };
    auto source_layer = [&](const Edge& e) { return e.producer < 0 ? -1 : final_index[static_cast<size_t>(e.producer)]; };
    auto value_of = [&](const Edge& e) -> int {
      if (e.producer < 0) return g_.inputs[static_cast<size_t>(e.input)];
      return protos_[static_cast<size_t>(e.producer)].l.value;
    };
    auto operand_of = [&](const Edge& e) -> Operand {
      if (e.producer < 0) return {Operand::Kind::GraphInput, e.input};
      return {Operand::Kind::Layer, final_index[static_cast<size_t>(e.producer)]};
    };
    auto shape_of = [&](const Operand& o) -> Shape {
      if (o.kind == Operand::Kind::GraphInput) return shape(g_.inputs[static_cast<size_t>(o.index)]);
      if (o.kind == Operand::Kind::Constant) return m_.constants[static_cast<size_t>(o.index)].tensor.shape;
      return m_.layers[static_cast<size_t>(o.index)].out_shape;
    };
    auto batch_of = [&](const Operand& o) -> int64_t {
      if (o.kind == Operand::Kind::Layer) return m_.layers[static_cast<size_t>(o.index)].batch_axis;
      return o.kind == Operand::Kind::GraphInput ? 0 : -1;
    };
    auto key_of = [&](const Edge& e) { return e.producer < 0 ? -1 - e.input : e.producer; };

    // Inserts a quantize (float16 -> int8) or dequantize (int8 -> float16) layer.
    auto convert = [&](const Edge& e, const std::string& to) -> Operand {
      int k = find_or(converted, {key_of(e), to}, [&] {
        LLayer q;
        q.op = fir::Op::Quantize;
        q.device = fir::Device::Npu;
        q.inputs = {operand_of(e)};
        q.out_shape = shape_of(q.inputs[0]);
        q.out_dtype = to;
        q.value = value_of(e);
        q.batch_axis = batch_of(q.inputs[0]);
        if (e.producer < 0) {
          q.name = "src_quantize_" + std::to_string(e.input + 1) + "_1";
          q.ori_name = "src_quantize_" + std::to_string(e.input + 1);
        } else {
          const std::string& pn = m_.layers[static_cast<size_t>(source_layer(e))].name;
          q.name = (to == "int8" ? "quantize_" : "dequantize_") + pn + "_1";
        }
        m_.layers.push_back(std::move(q));
        return static_cast<int>(m_.layers.size() - 1);
      });
      return {Operand::Kind::Layer, k};
    };
    // Inserts a reshape back to the float graph's shape after a dense that
    // produced [N, K, 1, 1].
    auto reshape_back = [&](const Edge& e, int v) -> int {
      Proto& pr = protos_[static_cast<size_t>(e.producer)];
      int k = find_or(converted, {key_of(e), "reshape"}, [&] {
        LLayer r;
        r.op = fir::Op::Reshape;
        r.device = fir::Device::Cpu;
        r.inputs = {operand_of(e)};
        r.out_shape = shape(v);
        r.out_dtype = source_dtype(e);
        r.value = v;
        r.batch_axis = 0;
        r.name = m_.layers[static_cast<size_t>(source_layer(e))].name + "_reshape_output0";
        r.ori_name = pr.l.name;
        r.nhwc_consistent = true;
        m_.layers.push_back(std::move(r));
        return static_cast<int>(m_.layers.size() - 1);
      });
      reshaped_[k] = true;
      return k;
    };

    for (size_t p = 0; p < protos_.size(); ++p) {
      Proto& pr = protos_[p];
      LLayer l = pr.l;
      bool is_transparent = transparent(l.op);
      bool cpu_float = l.device == fir::Device::Cpu && !is_transparent;
      std::string first_dtype;
      for (int v : pr.in_values) {
        if (v <= -2 && v > -1000000) {
          // constant made by lowering
          size_t ci = static_cast<size_t>(-2 - v);
          m_.constants.push_back(extra_constants_[ci]);
          l.inputs.push_back({Operand::Kind::Constant, static_cast<int>(m_.constants.size() - 1)});
          continue;
        }
        Edge e = source_of(v);
        if (e.producer == -2) {
          errors_.push_back("value '" + (v >= 0 ? g_.value(v).name : std::string("?")) + "' read by " + l.name + " has no producer");
          continue;
        }
        Operand o = operand_of(e);
        std::string dt = source_dtype(e);
        // dense [N, K, 1, 1] output read by a non-dense layer: reshape back first
        if (e.producer >= 0 && l.op != fir::Op::Dense && v >= 0 &&
            protos_[static_cast<size_t>(e.producer)].fir_shape != shape(v) && !protos_[static_cast<size_t>(e.producer)].selection) {
          o = {Operand::Kind::Layer, reshape_back(e, v)};
          dt = m_.layers[static_cast<size_t>(o.index)].out_dtype;
        }
        if (!is_transparent) {
          std::string need = cpu_float ? "float16" : "int8";
          if (dt != need) {
            if (o.kind == Operand::Kind::Layer && reshaped_.count(o.index)) {
              // convert after the inserted reshape
              LLayer q;
              q.op = fir::Op::Quantize;
              q.inputs = {o};
              q.out_shape = m_.layers[static_cast<size_t>(o.index)].out_shape;
              q.out_dtype = need;
              q.value = m_.layers[static_cast<size_t>(o.index)].value;
              q.name = (need == "int8" ? "quantize_" : "dequantize_") + m_.layers[static_cast<size_t>(o.index)].name + "_1";
              m_.layers.push_back(std::move(q));
              o = {Operand::Kind::Layer, static_cast<int>(m_.layers.size() - 1)};
            } else {
              o = convert(e, need);
            }
            dt = need;
          }
        }
        if (first_dtype.empty()) first_dtype = dt;
        l.inputs.push_back(o);
      }
      // output dtype
      if (is_transparent) l.out_dtype = first_dtype.empty() ? "float16" : first_dtype;
      else if (cpu_float) l.out_dtype = "float16";
      // Data movement layers keep int8 (a dequantize follows for float readers).
      else l.out_dtype = !fir::is_move_op(l.op) && wants_float(static_cast<int>(p)) ? "float16" : "int8";
      // batch axis
      // A concat's batch axis is that of its first input with one (a
      // constant first, as a class token before the tokens, has none).
      int64_t b = l.inputs.empty() ? 0 : batch_of(l.inputs[0]);
      for (size_t i = 1; i < l.inputs.size() && b < 0 && l.op == fir::Op::Concat; ++i)
        if (l.inputs[i].kind != Operand::Kind::Constant) b = batch_of(l.inputs[i]);
      if (l.op == fir::Op::MatMul && pr.selection && l.inputs.size() > 1) b = batch_of(l.inputs[1]);
      if (l.op == fir::Op::Transpose && b >= 0 && l.perm) {
        auto it = std::find(l.perm->begin(), l.perm->end(), b);
        b = it == l.perm->end() ? -1 : it - l.perm->begin();
      } else if (l.op == fir::Op::Reshape && b >= 0 && !l.inputs.empty()) {
        Shape in = shape_of(l.inputs[0]);
        int64_t pre = 1, pre_out = 1;
        for (int64_t d = 0; d < b && d < static_cast<int64_t>(in.size()); ++d) pre *= in[d];
        for (int64_t d = 0; d < b && d < static_cast<int64_t>(l.out_shape.size()); ++d) pre_out *= l.out_shape[d];
        if (b >= static_cast<int64_t>(l.out_shape.size()) || b >= static_cast<int64_t>(in.size()) || pre != pre_out ||
            in[b] != l.out_shape[b])
          b = -1;
      }
      l.batch_axis = b;
      if (l.op == fir::Op::Reshape) l.nhwc_consistent = nhwc_consistent(shape_of(l.inputs[0]), l.out_shape);
      final_index[p] = static_cast<int>(m_.layers.size());
      m_.layers.push_back(std::move(l));
    }
    // Graph outputs: floating point, in the float graph's shape.
    for (int v : g_.outputs) {
      Edge e = source_of(v);
      if (e.producer < 0) {
        errors_.push_back("graph output '" + g_.value(v).name + "' is not computed by any layer");
        continue;
      }
      Operand o = operand_of(e);
      if (protos_[static_cast<size_t>(e.producer)].fir_shape != shape(v)) {
        o = {Operand::Kind::Layer, reshape_back(e, v)};
      }
      if (m_.layers[static_cast<size_t>(o.index)].out_dtype != "float16") {
        LLayer q;
        q.op = fir::Op::Quantize;
        q.inputs = {o};
        q.out_shape = m_.layers[static_cast<size_t>(o.index)].out_shape;
        q.out_dtype = "float16";
        q.value = m_.layers[static_cast<size_t>(o.index)].value;
        q.batch_axis = m_.layers[static_cast<size_t>(o.index)].batch_axis;
        q.name = "dequantize_" + m_.layers[static_cast<size_t>(o.index)].name + "_1";
        m_.layers.push_back(std::move(q));
        o = {Operand::Kind::Layer, static_cast<int>(m_.layers.size() - 1)};
      }
      m_.graph_outputs.push_back(o.index);
    }
    // The floating-point tensors on the way to the outputs take output_dtype.
    if (opt_.output_dtype != "float16") {
      for (int o : m_.graph_outputs) {
        int k = o;
        while (k >= 0) {
          LLayer& l = m_.layers[static_cast<size_t>(k)];
          if (l.out_dtype == "int8") break;
          l.out_dtype = opt_.output_dtype;
          if (!transparent(l.op) || l.inputs.empty() || l.inputs[0].kind != Operand::Kind::Layer) break;
          k = l.inputs[0].index;
        }
      }
    }
    if (!errors_.empty()) {
      std::string msg = g_.source + ": cannot build the Frontend IR:";
      for (const auto& e : errors_) msg += "\n  " + e;
      throw Error(kExitInvalidInput, msg);
    }
    // Layer names must be unique; the naming rules make clashes unlikely, but
    // a source model may reuse node names.
    std::map<std::string, int> seen;
    for (auto& l : m_.layers)
      if (seen[l.name]++) l.name += "_" + std::to_string(seen[l.name] - 1);
    assign_qclasses();
  }

  static bool nhwc_consistent(const Shape& a, const Shape& b) {
    // The element order is the same in NHWC when, dropping unit dimensions,
    // nothing but the channel axis of a 4-D tensor carries data (or nothing
    // but its spatial axes).
    auto squeeze = [](const Shape& s) {
      Shape o;
      for (int64_t d : s)
        if (d != 1) o.push_back(d);
      return o;
    };
    auto channel_only = [](const Shape& s) { return s.size() != 4 || s[1] == 1 || s[2] * s[3] == 1; };
    return squeeze(a) == squeeze(b) && channel_only(a) && channel_only(b);
  }

  // Union-find over int8 outputs: max pools, reshapes and transposes keep
  // their input's quantization; all inputs of a concat share its output's.
  void assign_qclasses() {
    size_t n = m_.layers.size();
    std::vector<int> parent(n);
    std::iota(parent.begin(), parent.end(), 0);
    std::function<int(int)> find = [&](int x) { return parent[x] == x ? x : parent[x] = find(parent[x]); };
    auto unite = [&](int a, int b) { parent[find(a)] = find(b); };
    for (size_t k = 0; k < n; ++k) {
      const LLayer& l = m_.layers[k];
      if (l.out_dtype != "int8") continue;
      // (a resize's values lie between its input's)
      bool keep = l.op == fir::Op::MaxPool2d || l.op == fir::Op::Reshape || l.op == fir::Op::Transpose ||
                  l.op == fir::Op::Slice || l.op == fir::Op::Gather || l.op == fir::Op::Resize;
      if (keep && !l.inputs.empty() && l.inputs[0].kind == Operand::Kind::Layer &&
          m_.layers[static_cast<size_t>(l.inputs[0].index)].out_dtype == "int8")
        unite(static_cast<int>(k), l.inputs[0].index);
      if (l.op == fir::Op::Concat)
        for (const auto& o : l.inputs)
          if (o.kind == Operand::Kind::Layer && m_.layers[static_cast<size_t>(o.index)].out_dtype == "int8")
            unite(o.index, static_cast<int>(k));
    }
    std::map<int, int> class_of_root;
    for (size_t k = 0; k < n; ++k) {
      LLayer& l = m_.layers[k];
      if (l.out_dtype != "int8") continue;
      int root = find(static_cast<int>(k));
      auto it = class_of_root.find(root);
      if (it == class_of_root.end()) {
        it = class_of_root.emplace(root, static_cast<int>(m_.qclass_values.size())).first;
        m_.qclass_values.emplace_back();
      }
      l.qclass = it->second;
      if (l.value >= 0) {
        auto& vals = m_.qclass_values[static_cast<size_t>(it->second)];
        if (std::find(vals.begin(), vals.end(), l.value) == vals.end()) vals.push_back(l.value);
      }
    }
  }

  const Graph& g_;
  LowerOptions opt_;
  std::vector<std::vector<int>> cons_;
  std::vector<char> consumed_;
  std::vector<int> alias_;
  std::vector<Proto> protos_;
  std::map<int, int> producer_;  // graph value -> proto
  std::map<int, int> pseudo_;    // pseudo values (selection matmul, reshaped dense inputs) -> proto
  std::map<std::pair<int, int64_t>, int> flat_inputs_;  // (value, rows) -> pseudo value of its 2-D reshape
  std::vector<LConstant> extra_constants_;
  std::map<int, bool> wants_float_memo_;
  std::map<int, bool> reshaped_;
  std::vector<std::string> errors_;
  LoweredModel m_;
};

}  // namespace

LoweredModel lower(const interp::Graph& g, const LowerOptions& options) { return Lowerer(g, options).run(); }

fir::Graph structure_of(const LoweredModel& m) {
  std::vector<fir::Layer> out;
  out.reserve(m.layers.size());
  // next_layer lists
  std::vector<std::vector<std::string>> next(m.layers.size());
  for (const auto& l : m.layers)
    for (const auto& o : l.inputs)
      if (o.kind == Operand::Kind::Layer) next[static_cast<size_t>(o.index)].push_back(l.name);
  for (size_t k = 0; k < m.graph_outputs.size(); ++k)
    next[static_cast<size_t>(m.graph_outputs[k])].push_back("output" + std::to_string(k + 1));
  for (size_t k = 0; k < m.layers.size(); ++k) {
    const LLayer& l = m.layers[k];
    fir::Layer f;
    f.layer_index = static_cast<int64_t>(k);
    f.name = l.name;
    f.op = l.op;
    f.operation = std::string(fir::op_name(l.op));
    f.device = l.device;
    auto add_input = [&](const std::string& name, const Shape& s, const std::string& dt, int64_t batch) {
      f.previous_layer.push_back(name);
      f.input_shape.push_back(s);
      f.input_dtype.push_back(dt);
      f.input_batchdim.push_back(batch);
    };
    for (const auto& o : l.inputs) {
      if (o.kind == Operand::Kind::Layer) {
        const LLayer& p = m.layers[static_cast<size_t>(o.index)];
        add_input(p.name, p.out_shape, p.out_dtype, p.batch_axis);
      } else if (o.kind == Operand::Kind::GraphInput) {
        add_input("input" + std::to_string(o.index + 1), m.graph_input_shapes[static_cast<size_t>(o.index)], "float16", 0);
      } else {
        const LConstant& c = m.constants[static_cast<size_t>(o.index)];
        // The constant operands of prelu and element-wise layers are float16
        // numbers, loaded as FP16 (see prelu(), binary()).
        bool fp16 = l.op == fir::Op::PRelu || l.op == fir::Op::ElementWiseAdd || l.op == fir::Op::ElementWiseSub ||
                    l.op == fir::Op::ElementWiseMul;
        add_input(c.name, c.tensor.shape, fp16 ? "float16" : "float32", -1);
      }
    }
    if (l.op == fir::Op::Conv2d || l.op == fir::Op::Dense) {
      f.previous_layer.push_back("constant_" + l.name + "_k");
      f.input_shape.push_back(l.weight->shape);
      f.input_dtype.push_back("int8");
      f.input_batchdim.push_back(-1);
    }
    f.output_shape = {l.out_shape};
    f.output_dtype = {l.out_dtype};
    f.output_batchdim = {l.batch_axis};
    f.next_layer = next[k];
    if (l.has_activation_key) f.activation = fir::Activation{l.activation, l.activation_attr};
    else if (!l.activation_attr.is_null()) f.extra.push_back({"activation_attr", l.activation_attr});
    if (l.op == fir::Op::Conv2d) f.kernel_size = l.kernel;
    if (l.pool) f.pool_size = l.pool;
    f.padding = l.padding;
    f.stride = l.stride;
    f.dilation = l.dilation;
    f.groups = l.groups;
    f.ceil_mode = l.ceil_mode;
    f.axis = l.axis;
    f.perm = l.perm;
    f.starts = l.starts;
    f.ends = l.ends;
    f.steps = l.steps;
    f.indices = l.indices;
    if (!l.ori_name.empty()) f.ori_name = l.ori_name;
    if (l.op == fir::Op::Reshape) f.nhwc_consistant = l.nhwc_consistent;
    out.push_back(std::move(f));
  }
  return fir::Graph(std::move(out));
}

}  // namespace cct::frontend
