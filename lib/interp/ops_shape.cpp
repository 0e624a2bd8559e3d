// Data-movement and shape operators: Reshape, Flatten, Transpose, Concat,
// Squeeze/Unsqueeze, Shape, Size, Gather, Slice, Split, Expand, Tile, Pad,
// ConstantOfShape, Constant, Range.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "interp/ops_common.hpp"

namespace cct::interp::detail {
namespace {

// A tensor of the same element type as `like` with the given shape, and
// elements taken from `x` at the listed indices.
Tensor take(const Tensor& x, Shape shape, const std::vector<int64_t>& index) {
  Tensor y;
  y.dtype = x.dtype;
  y.shape = std::move(shape);
  if (x.is_float()) {
    y.f.resize(index.size());
    for (size_t k = 0; k < index.size(); ++k) y.f[k] = x.f[index[k]];
  } else {
    y.i.resize(index.size());
    for (size_t k = 0; k < index.size(); ++k) y.i[k] = x.i[index[k]];
  }
  return y;
}

Tensor reshaped(const Tensor& x, Shape s) {
  Tensor y = x;
  y.shape = std::move(s);
  return y;
}

void k_reshape(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need(n, in, 0);
  std::vector<int64_t> target = need(n, in, 1).to_ints();
  bool allowzero = n.get_int("allowzero", 0) != 0;
  Shape s(target.size());
  int64_t known = 1, infer = -1;
  for (size_t d = 0; d < target.size(); ++d) {
    int64_t v = target[d];
    if (v == 0 && !allowzero) {
      if (d >= x.shape.size()) fail(n, "shape has 0 at a dimension the input does not have");
      v = x.shape[d];
    }
    if (v == -1) {
      if (infer >= 0) fail(n, "shape has more than one -1");
      infer = static_cast<int64_t>(d);
      continue;
    }
    if (v < 0) fail(n, "invalid dimension " + std::to_string(v) + " in shape");
    s[d] = v;
    known *= v;
  }
  if (infer >= 0) {
    if (known == 0 || x.numel() % known != 0) fail(n, "cannot infer -1 for " + shape_str(x.shape) + " -> " + shape_str(target));
    s[infer] = x.numel() / known;
  }
  if (shape_numel(s) != x.numel())
    fail(n, "cannot reshape " + shape_str(x.shape) + " to " + shape_str(target));
  out[0] = reshaped(x, s);
}

void k_flatten(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need(n, in, 0);
  int64_t axis = n.get_int("axis", 1);
  if (axis < 0) axis += x.rank();
  if (axis < 0 || axis > x.rank()) fail(n, "axis out of range");
  int64_t a = 1;
  for (int64_t d = 0; d < axis; ++d) a *= x.shape[d];
  out[0] = reshaped(x, {a, a == 0 ? 0 : x.numel() / std::max<int64_t>(a, 1)});
}

void k_transpose(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need(n, in, 0);
  int64_t r = x.rank();
  std::vector<int64_t> perm = n.get_ints("perm");
  if (perm.empty())
    for (int64_t d = r - 1; d >= 0; --d) perm.push_back(d);
  if (static_cast<int64_t>(perm.size()) != r) fail(n, "perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(r));
  std::vector<char> seen(static_cast<size_t>(r), 0);
  for (int64_t& p : perm) {
    p = normalize_axis(p, r, "Transpose perm");
    if (seen[p]++) fail(n, "perm repeats an axis");
  }
  Shape s(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) s[d] = x.shape[perm[d]];
  std::vector<int64_t> xs = strides_of(x.shape);
  std::vector<int64_t> index(static_cast<size_t>(x.numel()));
  std::vector<int64_t> idx(static_cast<size_t>(r), 0);
  for (int64_t o = 0; o < x.numel(); ++o) {
    int64_t src = 0;
    for (int64_t d = 0; d < r; ++d) src += idx[d] * xs[perm[d]];
    index[o] = src;
    for (int64_t d = r; d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
  out[0] = take(x, s, index);
}

void k_concat(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& first = need(n, in, 0);
  int64_t r = first.rank();
  int64_t axis = normalize_axis(n.get_int("axis", 0), r, "Concat");
  Shape s = first.shape;
  s[axis] = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    const Tensor& t = need(n, in, k);
    if (t.rank() != r || t.is_float() != first.is_float()) fail(n, "inputs differ in rank or type");
    for (int64_t d = 0; d < r; ++d)
      if (d != axis && t.shape[d] != first.shape[d])
        fail(n, "input shapes " + shape_str(first.shape) + " and " + shape_str(t.shape) + " differ outside the axis");
    s[axis] += t.shape[axis];
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[d];
  for (int64_t d = axis + 1; d < r; ++d) inner *= s[d];
  Tensor y = first.is_float() ? Tensor::floats(s) : Tensor::ints(s, {}, first.dtype);
  y.dtype = first.dtype;
  int64_t row = s[axis] * inner, off = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    const Tensor& t = *in[k];
    int64_t len = t.shape[axis] * inner;
    for (int64_t o = 0; o < outer; ++o) {
      if (t.is_float()) std::copy_n(t.f.data() + o * len, len, y.f.data() + o * row + off);
      else std::copy_n(t.i.data() + o * len, len, y.i.data() + o * row + off);
    }
    off += len;
  }
  out[0] = std::move(y);
}

std::vector<int64_t> axes_of(const Node& n, int opset, const KernelInputs& in, int since) {
  if (opset >= since) {
    const Tensor* a = opt(in, 1);
    return a ? a->to_ints() : std::vector<int64_t>{};
  }
  return n.get_ints("axes");
}

void k_squeeze(const Node& n, int opset, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need(n, in, 0);
  std::vector<int64_t> axes = axes_of(n, opset, in, 13);
  std::vector<char> drop(static_cast<size_t>(x.rank()), 0);
  if (axes.empty()) {
    for (int64_t d = 0; d < x.rank(); ++d) drop[d] = x.shape[d] == 1;
  } else {
    for (int64_t a : axes) {
      int64_t d = normalize_axis(a, x.rank(), "Squeeze");
      if (x.shape[d] != 1) fail(n, "cannot squeeze dimension " + std::to_string(a) + " of size " + std::to_string(x.shape[d]));
      drop[d] = 1;
    }
  }
  Shape s;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (!drop[d]) s.push_back(x.shape[d]);
  out[0] = reshaped(x, s);
}

void k_unsqueeze(const Node& n, int opset, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need(n, in, 0);
  std::vector<int64_t> axes = axes_of(n, opset, in, 13);
  int64_t r = x.rank() + static_cast<int64_t>(axes.size());
  std::vector<char> added(static_cast<size_t>(r), 0);
  for (int64_t a : axes) {
    int64_t d = normalize_axis(a, r, "Unsqueeze");
    if (added[d]++) fail(n, "axes repeat");
  }
  Shape s;
  size_t k = 0;
  for (int64_t d = 0; d < r; ++d) s.push_back(added[d] ? 1 : x.shape[k++]);
  out[0] = reshaped(x, s);
}

void k_shape(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need(n, in, 0);
  int64_t r = x.rank();
  int64_t start = n.get_int("start", 0), end = n.get_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(x.shape[d]);
  out[0] = Tensor::ints({static_cast<int64_t>(dims.size())}, dims);
}

void k_size(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  out[0] = Tensor::scalar_int(need(n, in, 0).numel());
}

void k_gather(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need(n, in, 0);
  const Tensor& ind = need(n, in, 1);
  if (x.rank() == 0) fail(n, "data must not be a scalar");
  int64_t axis = normalize_axis(n.get_int("axis", 0), x.rank(), "Gather");
  std::vector<int64_t> idx = ind.to_ints();
  int64_t dim = x.shape[axis];
  for (int64_t& i : idx) {
    if (i < -dim || i >= dim) fail(n, "index " + std::to_string(i) + " out of range for dimension " + std::to_string(dim));
    if (i < 0) i += dim;
  }
  Shape s(x.shape.begin(), x.shape.begin() + axis);
  s.insert(s.end(), ind.shape.begin(), ind.shape.end());
  s.insert(s.end(), x.shape.begin() + axis + 1, x.shape.end());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape[d];
  std::vector<int64_t> index;
  index.reserve(static_cast<size_t>(outer * idx.size() * inner));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i : idx)
      for (int64_t k = 0; k < inner; ++k) index.push_back((o * dim + i) * inner + k);
  out[0] = take(x, s, index);
}

void k_slice(const Node& n, int opset, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need(n, in, 0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset < 10) {
    starts = n.get_ints("starts");
    ends = n.get_ints("ends");
    axes = n.get_ints("axes");
  } else {
    starts = need(n, in, 1).to_ints();
    ends = need(n, in, 2).to_ints();
    if (const Tensor* a = opt(in, 3)) axes = a->to_ints();
    if (const Tensor* s = opt(in, 4)) steps = s->to_ints();
  }
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    fail(n, "starts, ends, axes and steps must have the same length");
  int64_t r = x.rank();
  std::vector<int64_t> begin(static_cast<size_t>(r), 0), step(static_cast<size_t>(r), 1);
  Shape s = x.shape;
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t d = normalize_axis(axes[k], r, "Slice");
    int64_t dim = x.shape[d], st = steps[k];
    if (st == 0) fail(n, "step must not be 0");
    int64_t b = starts[k], e = ends[k];
    if (b < 0) b += dim;
    if (e < 0) e += dim;
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      s[d] = e > b ? (e - b + st - 1) / st : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      s[d] = b > e ? (b - e - st - 1) / (-st) : 0;
    }
    begin[d] = b;
    step[d] = st;
  }
  std::vector<int64_t> xs = strides_of(x.shape);
  int64_t total = shape_numel(s);
  std::vector<int64_t> index(static_cast<size_t>(total));
  std::vector<int64_t> idx(static_cast<size_t>(r), 0);
  for (int64_t o = 0; o < total; ++o) {
    int64_t src = 0;
    for (int64_t d = 0; d < r; ++d) src += (begin[d] + idx[d] * step[d]) * xs[d];
    index[o] = src;
    for (int64_t d = r; d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
  out[0] = take(x, s, index);
}

void k_split(const Node& n, int opset, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need(n, in, 0);
  int64_t axis = normalize_axis(n.get_int("axis", 0), x.rank(), "Split");
  std::vector<int64_t> split;
  if (opset >= 13) {
    if (const Tensor* t = opt(in, 1)) split = t->to_ints();
  } else {
    split = n.get_ints("split");
  }
  int64_t parts = static_cast<int64_t>(n.outputs.size());
  int64_t dim = x.shape[axis];
  if (split.empty()) {
    if (parts == 0 || dim % parts != 0) fail(n, "dimension " + std::to_string(dim) + " does not split into " + std::to_string(parts) + " equal parts");
    split.assign(static_cast<size_t>(parts), dim / parts);
  }
  int64_t sum = 0;
  for (int64_t v : split) sum += v;
  if (static_cast<int64_t>(split.size()) != parts || sum != dim) fail(n, "split sizes do not match the dimension or the outputs");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape[d];
  int64_t off = 0;
  for (int64_t p = 0; p < parts; ++p) {
    Shape s = x.shape;
    s[axis] = split[p];
    std::vector<int64_t> index;
    index.reserve(static_cast<size_t>(shape_numel(s)));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < split[p] * inner; ++k) index.push_back(o * dim * inner + off * inner + k);
    out[p] = take(x, s, index);
    off += split[p];
  }
}

void k_expand(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need(n, in, 0);
  std::vector<int64_t> target = need(n, in, 1).to_ints();
  Shape s = broadcast_shape(x.shape, target, "node '" + n.name + "' (Expand)");
  std::vector<int64_t> index(static_cast<size_t>(shape_numel(s)));
  broadcast_runs(s, s, x.shape, [&](int64_t o, int64_t, int64_t, int64_t ib, int64_t sb, int64_t len) {
    for (int64_t k = 0; k < len; ++k) index[o + k] = ib + k * sb;
  });
  out[0] = take(x, s, index);
}

void k_tile(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need(n, in, 0);
  std::vector<int64_t> reps = need(n, in, 1).to_ints();
  if (static_cast<int64_t>(reps.size()) != x.rank()) fail(n, "repeats must have one entry per dimension");
  Shape s = x.shape;
  for (size_t d = 0; d < s.size(); ++d) {
    if (reps[d] < 0) fail(n, "negative repeat");
    s[d] *= reps[d];
  }
  std::vector<int64_t> xs = strides_of(x.shape);
  int64_t total = shape_numel(s);
  std::vector<int64_t> index(static_cast<size_t>(total));
  std::vector<int64_t> idx(s.size(), 0);
  for (int64_t o = 0; o < total; ++o) {
    int64_t src = 0;
    for (size_t d = 0; d < s.size(); ++d) src += (idx[d] % x.shape[d]) * xs[d];
    index[o] = src;
    for (size_t d = s.size(); d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
  out[0] = take(x, s, index);
}

void k_pad(const Node& n, int opset, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need(n, in, 0);
  std::vector<int64_t> pads;
  double value = 0.0;
  if (opset < 11) {
    pads = n.get_ints("pads");
    value = n.get_float("value", 0.0f);
  } else {
    pads = need(n, in, 1).to_ints();
    if (const Tensor* v = opt(in, 2); v && v->numel() > 0) value = v->at_double(0);
  }
  std::string mode = n.get_string("mode", "constant");
  int64_t r = x.rank();
  if (static_cast<int64_t>(pads.size()) != 2 * r) fail(n, "pads must have 2 entries per dimension");
  Shape s = x.shape;
  for (int64_t d = 0; d < r; ++d) {
    s[d] += pads[d] + pads[d + r];
    if (s[d] < 0) fail(n, "pads remove more than the dimension");
    if (mode == "reflect" && (pads[d] >= x.shape[d] || pads[d + r] >= x.shape[d]) && (pads[d] > 0 || pads[d + r] > 0))
      fail(n, "reflect padding must be smaller than the dimension");
    if (mode == "edge" && x.shape[d] == 0 && (pads[d] > 0 || pads[d + r] > 0)) fail(n, "edge padding of an empty dimension");
  }
  if (mode != "constant" && mode != "reflect" && mode != "edge") fail(n, "unknown mode '" + mode + "'");
  std::vector<int64_t> xs = strides_of(x.shape);
  int64_t total = shape_numel(s);
  Tensor y = x.is_float() ? Tensor::floats(s) : Tensor::ints(s, {}, x.dtype);
  y.dtype = x.dtype;
  std::vector<int64_t> idx(static_cast<size_t>(r), 0);
  for (int64_t o = 0; o < total; ++o) {
    int64_t src = 0;
    bool inside = true;
    for (int64_t d = 0; d < r; ++d) {
      int64_t i = idx[d] - pads[d], dim = x.shape[d];
      if (i < 0 || i >= dim) {
        if (mode == "constant") { inside = false; break; }
        if (mode == "edge") i = i < 0 ? 0 : dim - 1;
        else i = i < 0 ? -i : 2 * (dim - 1) - i;
      }
      src += i * xs[d];
    }
    if (x.is_float()) y.f[o] = inside ? x.f[src] : static_cast<float>(value);
    else y.i[o] = inside ? x.i[src] : static_cast<int64_t>(value);
    for (int64_t d = r; d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
  out[0] = std::move(y);
}

void k_constant_of_shape(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  std::vector<int64_t> s = need(n, in, 0).to_ints();
  for (int64_t d : s)
    if (d < 0) fail(n, "negative dimension");
  auto it = n.attrs.find("value");
  if (it != n.attrs.end() && it->second.t) {
    const Tensor& v = *it->second.t;
    if (v.numel() != 1) fail(n, "value must hold one element");
    if (v.is_float()) {
      Tensor y = Tensor::floats(s);
      y.dtype = v.dtype;
      std::fill(y.f.begin(), y.f.end(), v.f[0]);
      out[0] = std::move(y);
    } else {
      Tensor y = Tensor::ints(s, {}, v.dtype);
      std::fill(y.i.begin(), y.i.end(), v.i[0]);
      out[0] = std::move(y);
    }
    return;
  }
  out[0] = Tensor::floats(s);
}

void k_constant(const Node& n, int, const KernelInputs&, std::vector<Tensor>& out) {
  if (auto it = n.attrs.find("value"); it != n.attrs.end() && it->second.t) {
    out[0] = *it->second.t;
  } else if (n.has("value_float")) {
    out[0] = Tensor::scalar_float(n.get_float("value_float", 0.0f));
  } else if (n.has("value_floats")) {
    auto v = n.get_floats("value_floats");
    out[0] = Tensor::floats({static_cast<int64_t>(v.size())}, v);
  } else if (n.has("value_int")) {
    out[0] = Tensor::scalar_int(n.get_int("value_int", 0));
  } else if (n.has("value_ints")) {
    auto v = n.get_ints("value_ints");
    out[0] = Tensor::ints({static_cast<int64_t>(v.size())}, v);
  } else {
    fail(n, "Constant without a supported value attribute");
  }
}

std::string check_constant(const Node& n, int, const Graph*) {
  if (n.has("value") || n.has("value_float") || n.has("value_floats") || n.has("value_int") || n.has("value_ints"))
    return "";
  return "Constant with a string or sparse value is not supported";
}

void k_range(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& start = need(n, in, 0);
  const Tensor& limit = need(n, in, 1);
  const Tensor& delta = need(n, in, 2);
  double s = start.at_double(0), l = limit.at_double(0), d = delta.at_double(0);
  if (d == 0.0) fail(n, "delta must not be 0");
  int64_t count = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((l - s) / d)));
  if (start.is_float()) {
    Tensor y = Tensor::floats({count});
    y.dtype = start.dtype;
    for (int64_t k = 0; k < count; ++k) y.f[k] = static_cast<float>(s + static_cast<double>(k) * d);
    out[0] = std::move(y);
  } else {
    Tensor y = Tensor::ints({count}, {}, start.dtype);
    for (int64_t k = 0; k < count; ++k) y.i[k] = start.i[0] + k * delta.i[0];
    out[0] = std::move(y);
  }
}

}  // namespace

void register_shape(std::vector<KernelEntry>& t) {
  t.push_back({"Reshape", k_reshape, nullptr});
  t.push_back({"Flatten", k_flatten, nullptr});
  t.push_back({"Transpose", k_transpose, nullptr});
  t.push_back({"Concat", k_concat, nullptr});
  t.push_back({"Squeeze", k_squeeze, nullptr});
  t.push_back({"Unsqueeze", k_unsqueeze, nullptr});
  t.push_back({"Shape", k_shape, nullptr});
  t.push_back({"Size", k_size, nullptr});
  t.push_back({"Gather", k_gather, nullptr});
  t.push_back({"Slice", k_slice, nullptr});
  t.push_back({"Split", k_split, nullptr});
  t.push_back({"Expand", k_expand, nullptr});
  t.push_back({"Tile", k_tile, nullptr});
  t.push_back({"Pad", k_pad, nullptr});
  t.push_back({"ConstantOfShape", k_constant_of_shape, nullptr});
  t.push_back({"Constant", k_constant, check_constant});
  t.push_back({"Range", k_range, nullptr});
}

}  // namespace cct::interp::detail
