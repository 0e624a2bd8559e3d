#include "interp/ops.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "interp/ops_common.hpp"
#include "support/npy.hpp"

namespace cct::interp {
namespace detail {

void fail(const Node& n, const std::string& what) {
  throw Error(kExitInvalidInput, "node '" + n.name + "' (" + n.op + "): " + what);
}

const Tensor& need(const Node& n, const KernelInputs& in, size_t k) {
  if (k >= in.size() || in[k] == nullptr) fail(n, "input " + std::to_string(k) + " is required");
  return *in[k];
}

const Tensor* opt(const KernelInputs& in, size_t k) { return k < in.size() ? in[k] : nullptr; }

const Tensor& need_float(const Node& n, const KernelInputs& in, size_t k) {
  const Tensor& t = need(n, in, k);
  if (!t.is_float())
    fail(n, "input " + std::to_string(k) + " must be a floating-point tensor, not " + std::string(dtype_name(t.dtype)));
  return t;
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

std::vector<int64_t> broadcast_strides(const Shape& out, const Shape& s) {
  std::vector<int64_t> st(out.size(), 0);
  std::vector<int64_t> own = strides_of(s);
  size_t off = out.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d) st[off + d] = s[d] == 1 ? 0 : own[d];
  return st;
}

namespace {
const std::vector<KernelEntry>& table() {
  static const std::vector<KernelEntry> t = [] {
    std::vector<KernelEntry> v;
    register_elementwise(v);
    register_nn(v);
    register_shape(v);
    register_dynamic(v);
    std::sort(v.begin(), v.end(), [](const KernelEntry& a, const KernelEntry& b) { return std::strcmp(a.op, b.op) < 0; });
    return v;
  }();
  return t;
}

const KernelEntry* find(std::string_view op) {
  const auto& t = table();
  auto it = std::lower_bound(t.begin(), t.end(), op, [](const KernelEntry& e, std::string_view o) { return e.op < o; });
  return it != t.end() && it->op == op ? &*it : nullptr;
}
}  // namespace

}  // namespace detail

using namespace detail;

bool has_kernel(std::string_view op) { return find(op) != nullptr; }

std::vector<std::string> supported_ops() {
  std::vector<std::string> out;
  for (const auto& e : table()) out.emplace_back(e.op);
  return out;
}

std::string unsupported_reason(const Node& n, int opset, const Graph* g) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return "operator domain '" + n.domain + "' is not supported";
  const KernelEntry* e = find(n.op);
  if (!e) return "operator " + n.op + " is not supported";
  // Attributes of the opset 1-6 forms of some operators (explicit broadcast,
  // consumed_inputs, shape/paddings as attributes) have no kernel.
  for (const char* legacy : {"broadcast", "consumed_inputs", "paddings"})
    if (n.has(legacy)) return std::string("legacy attribute '") + legacy + "' (opset < 7 form) is not supported";
  if (n.op == "Reshape" && n.has("shape")) return "Reshape with a 'shape' attribute (opset < 5 form) is not supported";
  if (n.op == "Concat" && opset < 4 && !n.has("axis")) return "Concat without axis (opset < 4 form) is not supported";
  if ((n.op == "Dropout" || n.op == "BatchNormalization") && opset < 7 && n.get_int("is_test", 0) == 0)
    return n.op + " in training mode (is_test=0) is not supported";
  return e->check ? e->check(n, opset, g) : std::string();
}

void run_kernel(const Node& n, int opset, const KernelInputs& in, std::vector<Tensor>& out) {
  const KernelEntry* e = find(n.op);
  if (!e) fail(n, "operator " + n.op + " is not supported");
  out.resize(n.outputs.size());
  e->fn(n, opset, in, out);
}

Tensor transposed(const Tensor& x, const std::vector<int64_t>& perm) {
  Node t;
  t.op = "Transpose";
  t.name = "transpose";
  t.inputs = {-1};
  t.outputs = {-1};
  Attribute& p = t.attrs["perm"];
  p.kind = Attribute::Kind::Ints;
  p.ints = perm;
  std::vector<Tensor> out;
  run_kernel(t, /*opset=*/13, {&x}, out);  // one Transpose in every opset
  return std::move(out[0]);
}

Window resolve_window(const Node& n, const std::vector<int64_t>& in, const std::vector<int64_t>& kernel,
                      bool ceil_mode) {
  size_t r = in.size();
  Window w;
  w.kernel = kernel;
  w.stride = n.get_ints("strides", std::vector<int64_t>(r, 1));
  w.dilation = n.get_ints("dilations", std::vector<int64_t>(r, 1));
  std::vector<int64_t> pads = n.get_ints("pads", std::vector<int64_t>(2 * r, 0));
  if (w.kernel.size() != r || w.stride.size() != r || w.dilation.size() != r || pads.size() != 2 * r)
    fail(n, "kernel_shape/strides/dilations/pads do not match the " + std::to_string(r) + " spatial dimensions");
  for (size_t d = 0; d < r; ++d) {
    if (w.kernel[d] <= 0 || w.stride[d] <= 0 || w.dilation[d] <= 0)
      fail(n, "kernel, strides and dilations must be positive");
    if (pads[d] < 0 || pads[d + r] < 0) fail(n, "negative pads are not supported");
  }
  std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  w.pad_begin.assign(r, 0);
  w.pad_end.assign(r, 0);
  w.out.assign(r, 0);
  for (size_t d = 0; d < r; ++d) {
    int64_t ext = (w.kernel[d] - 1) * w.dilation[d] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t o = (in[d] + w.stride[d] - 1) / w.stride[d];
      int64_t total = std::max<int64_t>(0, (o - 1) * w.stride[d] + ext - in[d]);
      int64_t small = total / 2, big = total - small;
      w.pad_begin[d] = auto_pad == "SAME_UPPER" ? small : big;
      w.pad_end[d] = total - w.pad_begin[d];
      w.out[d] = o;
      continue;
    }
    if (auto_pad == "VALID") {
      w.out[d] = in[d] < ext ? 0 : (in[d] - ext) / w.stride[d] + 1;
      continue;
    }
    if (auto_pad != "NOTSET") fail(n, "unknown auto_pad '" + auto_pad + "'");
    w.pad_begin[d] = pads[d];
    w.pad_end[d] = pads[d + r];
    int64_t span = in[d] + w.pad_begin[d] + w.pad_end[d] - ext;
    if (span < 0) fail(n, "window larger than the padded input");
    if (ceil_mode) {
      int64_t o = (span + w.stride[d] - 1) / w.stride[d] + 1;
      // the last window must start inside the input or the begin padding
      if ((o - 1) * w.stride[d] >= in[d] + w.pad_begin[d]) --o;
      w.out[d] = o;
    } else {
      w.out[d] = span / w.stride[d] + 1;
    }
  }
  return w;
}

TransposeWindow resolve_transpose_window(const Node& n, const std::vector<int64_t>& in, const std::vector<int64_t>& kernel) {
  size_t r = in.size();
  TransposeWindow w;
  w.kernel = kernel;
  w.stride = n.get_ints("strides", std::vector<int64_t>(r, 1));
  w.dilation = n.get_ints("dilations", std::vector<int64_t>(r, 1));
  w.output_padding = n.get_ints("output_padding", std::vector<int64_t>(r, 0));
  std::vector<int64_t> pads = n.get_ints("pads", std::vector<int64_t>(2 * r, 0));
  std::vector<int64_t> shape = n.get_ints("output_shape");
  if (shape.size() == r + 2) shape.erase(shape.begin(), shape.begin() + 2);  // [N, C, spatial...] given
  if (w.kernel.size() != r || w.stride.size() != r || w.dilation.size() != r || pads.size() != 2 * r ||
      w.output_padding.size() != r || (!shape.empty() && shape.size() != r))
    fail(n, "kernel_shape/strides/dilations/pads/output_padding/output_shape do not match the " + std::to_string(r) +
                " spatial dimensions");
  std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID")
    fail(n, "unknown auto_pad '" + auto_pad + "'");
  w.pad_begin.assign(r, 0);
  w.pad_end.assign(r, 0);
  w.out.assign(r, 0);
  for (size_t d = 0; d < r; ++d) {
    if (w.kernel[d] <= 0 || w.stride[d] <= 0 || w.dilation[d] <= 0)
      fail(n, "kernel, strides and dilations must be positive");
    if (w.output_padding[d] < 0) fail(n, "output_padding must not be negative");
    const int64_t full = w.stride[d] * (in[d] - 1) + w.output_padding[d] + (w.kernel[d] - 1) * w.dilation[d] + 1;
    if (!shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t o = shape.empty() ? in[d] * w.stride[d] : shape[d];
      const int64_t total = full - o;
      // floor halves, as ONNX's reference (total may be negative)
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      w.pad_begin[d] = auto_pad == "SAME_UPPER" ? half : total - half;
      w.pad_end[d] = total - w.pad_begin[d];
      w.out[d] = o;
    } else if (auto_pad == "VALID") {
      w.out[d] = full;
    } else {
      if (pads[d] < 0 || pads[d + r] < 0) fail(n, "negative pads are not supported");
      w.pad_begin[d] = pads[d];
      w.pad_end[d] = pads[d + r];
      w.out[d] = full - pads[d] - pads[d + r];
    }
    if (w.out[d] <= 0) fail(n, "empty output");
  }
  return w;
}

Shape broadcast_shape(const Shape& a, const Shape& b, std::string_view what) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t d = 0; d < r; ++d) {
    int64_t x = d + a.size() >= r ? a[d + a.size() - r] : 1;
    int64_t y = d + b.size() >= r ? b[d + b.size() - r] : 1;
    if (x != y && x != 1 && y != 1)
      throw_input_error(std::string(what) + ": shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[d] = x == 1 ? y : x;
  }
  return out;
}

float round_to_half(float x) { return half_to_float(float_to_half(x)); }

}  // namespace cct::interp
