// Semantic validation of a FIR graph and output-shape inference.
#include <algorithm>
#include <cmath>
#include <set>

#include "fir/fir.hpp"
#include "fir/fir_ops.hpp"
#include "fir/host_graph.hpp"
#include "support/error.hpp"
#include "support/pyfloat.hpp"

namespace cct::fir {

std::string shape_text(const Shape& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

namespace {

// Output size of one spatial axis of a sliding window.
std::optional<int64_t> window_out(int64_t in, int64_t pad_lo, int64_t pad_hi, int64_t k, int64_t stride,
                                  int64_t dil, bool ceil_mode) {
  if (k < 1 || stride < 1 || dil < 1 || pad_lo < 0 || pad_hi < 0) return std::nullopt;
  int64_t span = in + pad_lo + pad_hi - dil * (k - 1) - 1;
  if (span < 0) return std::nullopt;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // With ceil_mode the last window must start inside the input or its leading padding.
  if (ceil_mode && (out - 1) * stride >= in + pad_lo) --out;
  return out;
}

std::optional<Shape> broadcast(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

std::optional<int64_t> normalized_axis(int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return axis < 0 ? axis + r : axis;
}

}  // namespace

// Dimensions and attributes beyond this are rejected before any arithmetic
// on them, so shape inference cannot overflow.
constexpr int64_t kMaxExtent = int64_t{1} << 31;

namespace {
bool in_range(int64_t v) { return v >= -kMaxExtent && v <= kMaxExtent; }
template <class C>
bool all_in_range(const C& c) {
  for (int64_t v : c)
    if (!in_range(v)) return false;
  return true;
}
bool attributes_in_range(const Layer& l) {
  for (const auto& s : l.input_shape)
    if (!all_in_range(s)) return false;
  for (const auto* a : {&l.kernel_size, &l.pool_size, &l.stride, &l.dilation})
    if (*a && !all_in_range(**a)) return false;
  if (l.padding && !all_in_range(*l.padding)) return false;
  if (l.groups && !in_range(*l.groups)) return false;
  if (l.axis && !in_range(*l.axis)) return false;
  return true;
}
}  // namespace

std::optional<Shape> infer_output_shape(const Layer& l) {
  const auto& in = l.input_shape;
  if (in.empty() || !attributes_in_range(l)) return std::nullopt;
  const Shape& x = in[0];
  switch (l.op) {
    case Op::Conv2d: {
      if (in.size() < 2 || x.size() != 4 || in[1].size() != 4) return std::nullopt;
      const Shape& w = in[1];
      int64_t g = l.group_count();
      if (g < 1 || x[1] % g != 0 || w[0] % g != 0 || w[1] * g != x[1]) return std::nullopt;
      auto k = l.kernel_size.value_or(std::array<int64_t, 2>{w[2], w[3]});
      if (k[0] != w[2] || k[1] != w[3]) return std::nullopt;
      auto p = l.pads();
      auto s = l.strides();
      auto d = l.dilations();
      auto oh = window_out(x[2], p[0], p[1], k[0], s[0], d[0], false);
      auto ow = window_out(x[3], p[2], p[3], k[1], s[1], d[1], false);
      if (!oh || !ow) return std::nullopt;
      return Shape{x[0], w[0], *oh, *ow};
    }
    case Op::MaxPool2d:
    case Op::AvgPool2d: {
      if (x.size() != 4 || !l.pool_size) return std::nullopt;
      auto k = *l.pool_size;
      auto p = l.pads();
      auto s = l.strides();
      auto d = l.dilations();
      bool ceil = l.ceil_mode.value_or(false);
      auto oh = window_out(x[2], p[0], p[1], k[0], s[0], d[0], ceil);
      auto ow = window_out(x[3], p[2], p[3], k[1], s[1], d[1], ceil);
      if (!oh || !ow) return std::nullopt;
      return Shape{x[0], x[1], *oh, *ow};
    }
    case Op::Dense: {
      if (in.size() < 2 || x.size() < 2 || in[1].size() < 2) return std::nullopt;
      const Shape& w = in[1];
      int64_t features = element_count(w) / w[0];
      // Either the whole sample is flattened into the features ([N, C, 1, 1] x [K, C, 1, 1])
      // or the last axis is (tokens: [N, T, D] x [K, D]).
      Shape rest(x.begin() + 1, x.end());
      if (element_count(rest) == features) {
        Shape out(x.size(), 1);
        out[0] = x[0];
        out[1] = w[0];
        return out;
      }
      if (x.back() == features) {
        Shape out = x;
        out.back() = w[0];
        return out;
      }
      return std::nullopt;
    }
    case Op::MatMul: {
      if (in.size() < 2 || x.size() < 2 || in[1].size() < 2) return std::nullopt;
      const Shape& y = in[1];
      if (x.back() != y[y.size() - 2]) return std::nullopt;
      auto batch = broadcast(Shape(x.begin(), x.end() - 2), Shape(y.begin(), y.end() - 2));
      if (!batch) return std::nullopt;
      Shape out = *batch;
      out.push_back(x[x.size() - 2]);
      out.push_back(y.back());
      return out;
    }
    case Op::ElementWiseAdd:
    case Op::ElementWiseSub:
    case Op::ElementWiseMul:
      if (in.size() < 2) return std::nullopt;
      return broadcast(x, in[1]);
    case Op::Concat: {
      auto axis = normalized_axis(l.axis.value_or(1), x.size());
      if (!axis) return std::nullopt;
      Shape out = x;
      for (size_t i = 1; i < in.size(); ++i) {
        if (in[i].size() != x.size()) return std::nullopt;
        for (size_t d = 0; d < x.size(); ++d) {
          if (static_cast<int64_t>(d) == *axis) out[d] += in[i][d];
          else if (in[i][d] != x[d]) return std::nullopt;
        }
      }
      return out;
    }
    case Op::Slice: {
      // ONNX's normalized slice: starts in range, ends exclusive (-1: before
      // the first element, for negative steps), steps not 0.
      if (!l.starts || !l.ends || !l.steps || l.starts->size() != x.size() || l.ends->size() != x.size() ||
          l.steps->size() != x.size())
        return std::nullopt;
      Shape out(x.size());
      for (size_t d = 0; d < x.size(); ++d) {
        int64_t b = (*l.starts)[d], e = (*l.ends)[d], s = (*l.steps)[d];
        if (s == 0 || b < 0 || b >= x[d] || e < -1 || e > x[d]) return std::nullopt;
        int64_t n = s > 0 ? (e - b + s - 1) / s : (b - e + (-s) - 1) / (-s);
        if (n < 1) return std::nullopt;
        out[d] = n;
      }
      return out;
    }
    case Op::Gather: {
      auto axis = normalized_axis(l.axis.value_or(1), x.size());
      if (!axis || !l.indices || l.indices->empty()) return std::nullopt;
      for (int64_t i : *l.indices)
        if (i < 0 || i >= x[static_cast<size_t>(*axis)]) return std::nullopt;
      Shape out = x;
      out[static_cast<size_t>(*axis)] = static_cast<int64_t>(l.indices->size());
      return out;
    }
    case Op::ReduceMax:
    case Op::ReduceSum: {
      auto axis = normalized_axis(l.axis.value_or(-1), x.size());
      if (!axis) return std::nullopt;
      Shape out = x;
      out[static_cast<size_t>(*axis)] = 1;
      return out;
    }
    case Op::Transpose: {
      if (!l.perm || l.perm->size() != x.size()) return std::nullopt;
      Shape out(x.size());
      std::vector<bool> used(x.size(), false);
      for (size_t i = 0; i < x.size(); ++i) {
        int64_t p = (*l.perm)[i];
        if (p < 0 || p >= static_cast<int64_t>(x.size()) || used[static_cast<size_t>(p)]) return std::nullopt;
        used[static_cast<size_t>(p)] = true;
        out[i] = x[static_cast<size_t>(p)];
      }
      return out;
    }
    case Op::Resize: {
      // The output size is the layer's own (ONNX gives sizes or scales);
      // batch and channels pass through.
      if (x.size() != 4 || l.output_shape.size() != 1 || l.output_shape[0].size() != 4) return std::nullopt;
      return Shape{x[0], x[1], l.output_shape[0][2], l.output_shape[0][3]};
    }
    case Op::Quantize:
    case Op::Relu:
    case Op::Sigmoid:
    case Op::HardSigmoid:
    case Op::HardSwish:
    case Op::Silu:
    case Op::Gelu:
    case Op::Tanh:
    case Op::Clip:
    case Op::LeakyRelu:
    case Op::Elu:
    case Op::PRelu:
    case Op::Softmax:
      return x;
    case Op::LayerNorm: {
      auto which = layer_norm_output(l);
      auto axis = normalized_axis(l.axis.value_or(-1), x.size());
      if (!which || !axis) return std::nullopt;
      Shape out = x;
      if (*which != LayerNormOutput::Y) out[static_cast<size_t>(*axis)] = 1;  // Mean, InvStdDev
      return out;
    }
    case Op::Reshape:
    case Op::Unknown:
      return std::nullopt;
  }
  return std::nullopt;
}

namespace {

class Checker {
 public:
  Checker(const Graph& g, const std::string& file) : g_(g), file_(file) {}

  std::vector<std::string> run() {
    check_names_and_indices();
    for (const auto& l : g_.layers()) check_layer(l);
    return std::move(problems_);
  }

 private:
  std::string ptr(const Layer& l, std::string_view key = {}, long index = -1) const {
    std::string p;
    append_pointer_token(p, l.name);
    if (!key.empty()) append_pointer_token(p, key);
    if (index >= 0) p += "/" + std::to_string(index);
    return p;
  }
  void problem(const std::string& pointer, const std::string& what) {
    problems_.push_back(at_pointer(file_, pointer.empty() ? "/" : pointer, what));
  }

  void check_names_and_indices() {
    std::set<std::string_view> names;
    std::vector<const Layer*> by_index(g_.size(), nullptr);
    for (const auto& l : g_.layers()) {
      if (!names.insert(l.name).second) problem(ptr(l), "duplicate layer name \"" + l.name + "\"");
      if (l.name.empty()) problem(ptr(l, "name"), "empty layer name");
      if (l.layer_index < 0 || l.layer_index >= static_cast<int64_t>(g_.size())) {
        problem(ptr(l, "layer_index"), "layer_index " + std::to_string(l.layer_index) + " outside 0.." +
                                           std::to_string(static_cast<int64_t>(g_.size()) - 1));
      } else if (const Layer* other = by_index[static_cast<size_t>(l.layer_index)]) {
        problem(ptr(l, "layer_index"),
                "layer_index " + std::to_string(l.layer_index) + " already used by \"" + other->name + "\"");
      } else {
        by_index[static_cast<size_t>(l.layer_index)] = &l;
      }
    }
  }

  static bool contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  }

  void check_layer(const Layer& l) {
    const auto& info = detail::op_info(l.op);
    if (l.op == Op::Unknown) problem(ptr(l, "operation"), "unknown operation \"" + l.operation + "\"");

    // Tensor counts.
    size_t n_in = l.input_shape.size();
    if (l.previous_layer.size() != n_in)
      problem(ptr(l, "previous_layer"), std::to_string(l.previous_layer.size()) + " entries for " +
                                            std::to_string(n_in) + " input shapes");
    if (l.input_dtype.size() != n_in)
      problem(ptr(l, "input_dtype"),
              std::to_string(l.input_dtype.size()) + " entries for " + std::to_string(n_in) + " input shapes");
    // ResNet-50's reference gives only the activation's batch axis for conv2d ([0], not [0, -1]).
    if (l.input_batchdim.size() > n_in || (n_in > 0 && l.input_batchdim.empty()))
      problem(ptr(l, "input_batchdim"),
              std::to_string(l.input_batchdim.size()) + " entries for " + std::to_string(n_in) + " input shapes");
    if (l.output_shape.size() != 1)
      problem(ptr(l, "output_shape"), "expected exactly one output shape, got " + std::to_string(l.output_shape.size()));
    if (l.output_dtype.size() != l.output_shape.size())
      problem(ptr(l, "output_dtype"), std::to_string(l.output_dtype.size()) + " entries for " +
                                          std::to_string(l.output_shape.size()) + " output shapes");
    if (l.output_batchdim.size() != l.output_shape.size())
      problem(ptr(l, "output_batchdim"), std::to_string(l.output_batchdim.size()) + " entries for " +
                                             std::to_string(l.output_shape.size()) + " output shapes");
    if (l.op != Op::Unknown) {
      if (static_cast<int>(n_in) < info.min_inputs || (info.max_inputs >= 0 && static_cast<int>(n_in) > info.max_inputs))
        problem(ptr(l, "input_shape"), l.operation + " takes " + std::to_string(info.min_inputs) +
                                           (info.max_inputs == info.min_inputs ? std::string()
                                            : info.max_inputs < 0 ? std::string(" or more")
                                                                  : " to " + std::to_string(info.max_inputs)) +
                                           " inputs, got " + std::to_string(n_in));
    }

    // dtypes and shapes.
    for (size_t i = 0; i < l.input_dtype.size(); ++i)
      if (!is_known_dtype(l.input_dtype[i]))
        problem(ptr(l, "input_dtype", static_cast<long>(i)), "unknown dtype \"" + l.input_dtype[i] + "\"");
    for (size_t i = 0; i < l.output_dtype.size(); ++i)
      if (!is_known_dtype(l.output_dtype[i]))
        problem(ptr(l, "output_dtype", static_cast<long>(i)), "unknown dtype \"" + l.output_dtype[i] + "\"");
    auto check_dims = [&](const std::vector<Shape>& shapes, const char* key) {
      for (size_t i = 0; i < shapes.size(); ++i) {
        if (shapes[i].empty()) problem(ptr(l, key, static_cast<long>(i)), "empty shape");
        for (int64_t d : shapes[i])
          if (d < 1 || d > kMaxExtent) {
            problem(ptr(l, key, static_cast<long>(i)), "dimension " + std::to_string(d) + " in " + shape_text(shapes[i]));
            break;
          }
      }
    };
    check_dims(l.input_shape, "input_shape");
    check_dims(l.output_shape, "output_shape");

    // Per-operation keys.
    auto need = [&](bool have, const char* key) {
      if (!have) problem(ptr(l), l.operation + " layer needs \"" + key + "\"");
    };
    switch (l.op) {
      case Op::Conv2d:
        need(l.kernel_size.has_value(), "kernel_size");
        need(l.padding.has_value(), "padding");
        need(l.stride.has_value(), "stride");
        need(l.activation.has_value(), "activation_type");
        break;
      case Op::Dense: need(l.activation.has_value(), "activation_type"); break;
      case Op::MaxPool2d:
      case Op::AvgPool2d:
        need(l.pool_size.has_value(), "pool_size");
        need(l.padding.has_value(), "padding");
        need(l.stride.has_value(), "stride");
        break;
      case Op::Transpose: need(l.perm.has_value(), "perm"); break;
      case Op::Slice:
        need(l.starts.has_value(), "starts");
        need(l.ends.has_value(), "ends");
        need(l.steps.has_value(), "steps");
        break;
      case Op::Gather:
        need(l.axis.has_value(), "axis");
        need(l.indices.has_value(), "indices");
        break;
      case Op::ReduceMax:
      case Op::ReduceSum: need(l.axis.has_value(), "axis"); break;
      default: break;
    }
    if (info.needs_module_list_on_npu && l.device == Device::Npu) need(l.module_list.has_value(), "module_list");
    if (l.groups && *l.groups < 1) problem(ptr(l, "groups"), "groups must be at least 1");
    for (auto* arr : {&l.kernel_size, &l.pool_size, &l.stride, &l.dilation})
      if (*arr && ((**arr)[0] < 1 || (**arr)[1] < 1)) {
        const char* key = arr == &l.kernel_size ? "kernel_size"
                          : arr == &l.pool_size ? "pool_size"
                          : arr == &l.stride    ? "stride"
                                                : "dilation";
        problem(ptr(l, key), std::string(key) + " entries must be at least 1");
      }
    if (l.op == Op::LayerNorm) {
      std::string why;
      if (!layer_norm_output(l, &why)) problem(ptr(l, "activation_attr"), why);
    }
    if (l.padding)
      for (int64_t p : *l.padding)
        if (p < 0) {
          problem(ptr(l, "padding"), "negative padding");
          break;
        }
    for (size_t i = 0; i < l.tensor_lut.size(); ++i)
      if (l.tensor_lut[i].size() != 3)
        problem(ptr(l, "tensor" + std::to_string(i) + "_lut"), "expected 3 integers");
      else if (std::any_of(l.tensor_lut[i].begin(), l.tensor_lut[i].end(), [](int64_t f) { return f != 0 && f != 1; }))
        problem(ptr(l, "tensor" + std::to_string(i) + "_lut"), "expected flags of 0 or 1");

    // module_list groups decode.
    if (l.module_list) {
      for (const auto& m : *l.module_list) {
        std::string p = ptr(l, "module_list");
        append_pointer_token(p, m.name);
        try {
          check_module(m.name, JsonCursor(m.params, file_, p));
        } catch (const Error& e) {
          problems_.push_back(e.what());
        }
      }
    }
    if (l.quant_info) {
      const auto& q = *l.quant_info;
      auto finite = [&](double v, const std::string& key) {
        if (!std::isfinite(v)) problem(ptr(l, "quant_info") + "/" + key, "not a finite number");
      };
      // A scale maps codes to reals (input) or reals to codes (output, the
      // reciprocal): zero, negative or infinite has no meaning and divides
      // by zero or flips every value downstream.
      auto scale = [&](double v, const std::string& key) {
        if (!(std::isfinite(v) && v > 0))
          problem(ptr(l, "quant_info") + "/" + key,
                  "layer \"" + l.name + "\": " + key + " must be a finite number > 0, got " + python_float(v));
      };
      for (size_t i = 0; i < q.inputs.size(); ++i) {
        scale(q.inputs[i].scale, "input_scale" + std::to_string(i + 1));
        finite(q.inputs[i].zero_point, "input_zero_point" + std::to_string(i + 1));
      }
      if (q.output_scale) scale(*q.output_scale, "output_scale");
      if (q.output_zero_point) finite(*q.output_zero_point, "output_zero_point");
    }
    for (const auto& [role, name] : l.file_list) {
      if (name.size() < 5 || name.compare(name.size() - 4, 4, ".npy") != 0) {
        // Not in a lambda: clang before 16 cannot capture structured bindings (the fuzz build).
        std::string p = ptr(l, "file_list");
        append_pointer_token(p, role);
        problem(p, "\"" + name + "\" is not a .npy file name");
      }
    }

    // Output shape follows from the operation.
    if (l.output_shape.size() == 1) {
      if (auto expect = infer_output_shape(l)) {
        if (*expect != l.output_shape[0])
          problem(ptr(l, "output_shape", 0), l.operation + " of " + shape_text(l.input_shape[0]) + " gives " +
                                                 shape_text(*expect) + ", not " + shape_text(l.output_shape[0]));
      } else if (l.op != Op::Reshape && l.op != Op::Unknown && !l.input_shape.empty()) {
        problem(ptr(l, "input_shape"), "input shapes and attributes are inconsistent for " + l.operation);
      }
      if (l.op == Op::Reshape && !l.input_shape.empty() &&
          element_count(l.input_shape[0]) != element_count(l.output_shape[0]))
        problem(ptr(l, "output_shape", 0), "reshape changes the element count: " + shape_text(l.input_shape[0]) +
                                               " to " + shape_text(l.output_shape[0]));
    }

    // Edges.
    for (size_t i = 0; i < l.previous_layer.size(); ++i) {
      const std::string& p = l.previous_layer[i];
      const Layer* prod = g_.find(p);
      auto here = [&] { return ptr(l, "previous_layer", static_cast<long>(i)); };
      if (!prod) {
        if (!is_graph_input_name(p) && !is_constant_name(p))
          problem(here(), "\"" + p + "\" is neither a layer, a graph input (input<N>) nor a constant");
        continue;
      }
      if (!contains(prod->next_layer, l.name))
        problem(here(), "\"" + p + "\" does not list \"" + l.name + "\" in its next_layer");
      if (prod->layer_index >= l.layer_index)
        problem(here(), "producer \"" + p + "\" has layer_index " + std::to_string(prod->layer_index) +
                          ", not before " + std::to_string(l.layer_index));
      if (!prod->output_shape.empty() && i < l.input_shape.size() && prod->output_shape[0] != l.input_shape[i])
        problem(ptr(l, "input_shape", static_cast<long>(i)),
                shape_text(l.input_shape[i]) + " but producer \"" + p + "\" outputs " + shape_text(prod->output_shape[0]));
      if (!prod->output_dtype.empty() && i < l.input_dtype.size() && prod->output_dtype[0] != l.input_dtype[i])
        problem(ptr(l, "input_dtype", static_cast<long>(i)),
                "\"" + l.input_dtype[i] + "\" but producer \"" + p + "\" outputs \"" + prod->output_dtype[0] + "\"");
    }
    for (size_t i = 0; i < l.next_layer.size(); ++i) {
      const std::string& n = l.next_layer[i];
      const Layer* cons = g_.find(n);
      auto here = [&] { return ptr(l, "next_layer", static_cast<long>(i)); };
      if (!cons) {
        if (!is_graph_output_name(n)) problem(here(), "\"" + n + "\" is neither a layer nor a graph output (output<N>)");
        continue;
      }
      if (!contains(cons->previous_layer, l.name))
        problem(here(), "\"" + n + "\" does not list \"" + l.name + "\" in its previous_layer");
    }
  }

  const Graph& g_;
  const std::string& file_;
  std::vector<std::string> problems_;
};

}  // namespace

std::vector<std::string> check(const Graph& g, const std::string& file) {
  std::vector<std::string> out = Checker(g, file).run();
  for (const auto& l : g.layers())
    if (l.name.starts_with('$')) out.push_back(at_pointer(file, "/" + l.name, "layer names may not begin with '$' (reserved for sections such as " + std::string(kHostGraphKey) + ")"));
  if (const HostGraph* hg = g.host_graph()) {
    auto more = check_host_graph(*hg, g, file);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

void validate(const Graph& g, const std::string& file) {
  auto problems = check(g, file);
  if (!problems.empty()) {
    std::string msg = problems.front();
    if (problems.size() > 1) msg += " (and " + std::to_string(problems.size() - 1) + " more problems)";
    throw_input_error(msg);
  }
}

}  // namespace cct::fir
