// Operators of a detector's post-processing, whose output shapes may depend
// on the data: NonZero, GatherND, TopK, NonMaxSuppression, and the control
// flow of If. The float interpreter runs them (calibration, --report, the
// float model) and the FIR's host graph, in which onnx2fir keeps such a
// post-processing for the host (interp/host_graph.hpp; with
// --cut-postprocess it is left out; formats/Frontend_IR_Format.md, end of
// section 3). Each
// follows the ONNX operator definition; where ONNX leaves an order open
// (TopK ties, NonMaxSuppression ties) the lower index comes first, as in
// ONNX's reference implementation.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "interp/float_interp.hpp"
#include "interp/ops_common.hpp"

namespace cct::interp::detail {
namespace {

void k_nonzero(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need(n, in, 0);
  const int64_t r = std::max<int64_t>(x.rank(), 1);  // a scalar counts as rank 1 (ONNX reference)
  std::vector<int64_t> hits;
  for (int64_t k = 0; k < x.numel(); ++k)
    if (x.is_float() ? x.f[k] != 0.0f : x.i[k] != 0) hits.push_back(k);
  const int64_t cnt = static_cast<int64_t>(hits.size());
  Tensor y = Tensor::ints({r, cnt});
  std::vector<int64_t> st = strides_of(x.shape);
  for (int64_t j = 0; j < cnt; ++j) {
    int64_t rest = hits[j];
    for (int64_t d = 0; d < x.rank(); ++d) {
      y.i[d * cnt + j] = rest / st[d];
      rest %= st[d];
    }
    if (x.rank() == 0) y.i[j] = 0;
  }
  out[0] = std::move(y);
}

void k_gather_nd(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need(n, in, 0);
  const Tensor& ind = need(n, in, 1);
  const int64_t b = n.get_int("batch_dims", 0);
  const int64_t r = x.rank(), q = ind.rank();
  if (r < 1 || q < 1) fail(n, "data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q)) fail(n, "batch_dims must be in [0, min(rank(data), rank(indices)))");
  const int64_t m = ind.shape[q - 1];
  if (m < 1 || m > r - b) fail(n, "indices.shape[-1] must be in [1, rank(data) - batch_dims]");
  for (int64_t d = 0; d < b; ++d)
    if (x.shape[d] != ind.shape[d]) fail(n, "batch dimensions of data and indices differ");
  Shape s(ind.shape.begin(), ind.shape.end() - 1);
  s.insert(s.end(), x.shape.begin() + b + m, x.shape.end());
  int64_t batch = 1, slice = 1;
  for (int64_t d = 0; d < b; ++d) batch *= x.shape[d];
  for (int64_t d = b + m; d < r; ++d) slice *= x.shape[d];
  std::vector<int64_t> xs = strides_of(x.shape);
  const int64_t per_batch_tuples = ind.numel() / std::max<int64_t>(m, 1) / std::max<int64_t>(batch, 1);
  const int64_t batch_stride = b > 0 ? xs[b - 1] : 0;
  std::vector<int64_t> idx = ind.to_ints();
  std::vector<int64_t> index;
  index.reserve(static_cast<size_t>(batch * per_batch_tuples * slice));
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t t = 0; t < per_batch_tuples; ++t) {
      int64_t base = bi * batch_stride;
      for (int64_t j = 0; j < m; ++j) {
        int64_t v = idx[(bi * per_batch_tuples + t) * m + j], dim = x.shape[b + j];
        if (v < -dim || v >= dim) fail(n, "index " + std::to_string(v) + " out of range for dimension " + std::to_string(dim));
        if (v < 0) v += dim;
        base += v * xs[b + j];
      }
      for (int64_t k = 0; k < slice; ++k) index.push_back(base + k);
    }
  Tensor y;
  y.dtype = x.dtype;
  y.shape = s;
  if (x.is_float()) {
    y.f.resize(index.size());
    for (size_t k = 0; k < index.size(); ++k) y.f[k] = x.f[index[k]];
  } else {
    y.i.resize(index.size());
    for (size_t k = 0; k < index.size(); ++k) y.i[k] = x.i[index[k]];
  }
  out[0] = std::move(y);
}

void k_topk(const Node& n, int opset, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need(n, in, 0);
  if (x.rank() == 0) fail(n, "input must not be a scalar");
  const int64_t axis = normalize_axis(n.get_int("axis", -1), x.rank(), "TopK");
  int64_t k;
  if (opset < 10) k = n.get_int("k", -1);
  else {
    const Tensor& kt = need(n, in, 1);
    if (kt.numel() != 1) fail(n, "K must hold one value");
    k = kt.at_int(0);
  }
  const bool largest = n.get_int("largest", 1) != 0;
  const int64_t dim = x.shape[axis];
  if (k < 0 || k > dim) fail(n, "K = " + std::to_string(k) + " outside [0, " + std::to_string(dim) + "]");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape[d];
  Shape s = x.shape;
  s[axis] = k;
  Tensor vals;
  vals.dtype = x.dtype;
  vals.shape = s;
  if (x.is_float()) vals.f.resize(static_cast<size_t>(shape_numel(s)));
  else vals.i.resize(static_cast<size_t>(shape_numel(s)));
  Tensor idx = Tensor::ints(s);
  std::vector<int64_t> order(static_cast<size_t>(dim));
  // Sorted always (sorted=0 leaves the order to the implementation); equal
  // values keep the lower index first. NaN counts as larger than any number.
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return x.at_double((o * dim + j) * inner + i); };
      std::iota(order.begin(), order.end(), int64_t{0});
      auto before = [&](int64_t a, int64_t b) {
        double va = at(a), vb = at(b);
        bool na = std::isnan(va), nb = std::isnan(vb);
        if (na || nb) return largest ? (na && !nb) : (!na && nb);
        return largest ? va > vb : va < vb;
      };
      std::stable_sort(order.begin(), order.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        int64_t dst = (o * k + j) * inner + i, src = (o * dim + order[j]) * inner + i;
        if (x.is_float()) vals.f[dst] = x.f[src];
        else vals.i[dst] = x.i[src];
        idx.i[dst] = order[j];
      }
    }
  out[0] = std::move(vals);
  if (out.size() > 1) out[1] = std::move(idx);
}

// Boxes as [y1, x1, y2, x2] (any two opposite corners) or, with
// center_point_box, [x_center, y_center, width, height]; IoU in float as
// ONNX Runtime computes it. Suppressed when IoU > threshold.
struct Box {
  float y1, x1, y2, x2;
};
Box box_at(const Tensor& boxes, int64_t off, bool center) {
  const float* p = boxes.f.data() + off;
  if (center) {
    float xc = p[0], yc = p[1], w = p[2], h = p[3];
    return {yc - h / 2.0f, xc - w / 2.0f, yc + h / 2.0f, xc + w / 2.0f};
  }
  return {std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]), std::max(p[1], p[3])};
}
bool suppresses(const Box& a, const Box& b, float threshold) {
  float ix1 = std::max(a.x1, b.x1), iy1 = std::max(a.y1, b.y1);
  float ix2 = std::min(a.x2, b.x2), iy2 = std::min(a.y2, b.y2);
  float iw = ix2 - ix1, ih = iy2 - iy1;
  if (iw <= 0.0f || ih <= 0.0f) return false;
  float inter = iw * ih;
  float area_a = (a.x2 - a.x1) * (a.y2 - a.y1), area_b = (b.x2 - b.x1) * (b.y2 - b.y1);
  if (area_a <= 0.0f || area_b <= 0.0f) return false;
  float uni = area_a + area_b - inter;
  if (uni <= 0.0f) return false;
  return inter / uni > threshold;
}

void k_nms(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& boxes = need_float(n, in, 0);
  const Tensor& scores = need_float(n, in, 1);
  if (boxes.rank() != 3 || boxes.shape[2] != 4) fail(n, "boxes must be [num_batches, spatial_dimension, 4]");
  if (scores.rank() != 3 || scores.shape[0] != boxes.shape[0] || scores.shape[2] != boxes.shape[1])
    fail(n, "scores must be [num_batches, num_classes, spatial_dimension] matching boxes");
  int64_t max_out = 0;
  if (const Tensor* t = opt(in, 2); t && t->numel() > 0) max_out = t->at_int(0);
  float iou = 0.0f;
  if (const Tensor* t = opt(in, 3); t && t->numel() > 0) iou = static_cast<float>(t->at_double(0));
  const Tensor* st = opt(in, 4);
  const bool has_threshold = st && st->numel() > 0;
  const float score_threshold = has_threshold ? static_cast<float>(st->at_double(0)) : 0.0f;
  const bool center = n.get_int("center_point_box", 0) != 0;
  if (iou < 0.0f || iou > 1.0f) fail(n, "iou_threshold must be in [0, 1]");
  const int64_t B = boxes.shape[0], C = scores.shape[1], S = boxes.shape[1];
  std::vector<int64_t> sel;
  std::vector<int64_t> cand;
  std::vector<Box> kept;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      if (max_out <= 0) continue;
      const float* sc = scores.f.data() + (b * C + c) * S;
      cand.clear();
      for (int64_t s = 0; s < S; ++s)
        if (!has_threshold || sc[s] > score_threshold) cand.push_back(s);
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t x, int64_t y) { return sc[x] > sc[y]; });
      kept.clear();
      int64_t taken = 0;
      for (int64_t s : cand) {
        if (taken >= max_out) break;
        Box bx = box_at(boxes, (b * S + s) * 4, center);
        bool drop = false;
        for (const Box& k : kept)
          if (suppresses(k, bx, iou)) {
            drop = true;
            break;
          }
        if (drop) continue;
        kept.push_back(bx);
        ++taken;
        sel.insert(sel.end(), {b, c, s});
      }
    }
  const int64_t count = static_cast<int64_t>(sel.size() / 3);
  out[0] = Tensor::ints({count, 3}, std::move(sel));
}

void k_if(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& cond = need(n, in, 0);
  if (cond.numel() != 1) fail(n, "cond must hold one value");
  const bool take = cond.at_double(0) != 0.0;
  const Graph* g = n.get_graph(take ? "then_branch" : "else_branch");
  if (!g) fail(n, std::string("missing ") + (take ? "then_branch" : "else_branch"));
  // Inputs after the condition are the outer values the branches read.
  std::vector<Tensor> args;
  for (size_t k = 1; k < in.size(); ++k) {
    if (!in[k]) fail(n, "captured value " + std::to_string(k) + " is missing");
    args.push_back(*in[k]);
  }
  if (args.size() != g->inputs.size()) fail(n, "branch reads " + std::to_string(g->inputs.size()) + " outer values, " +
                                                std::to_string(args.size()) + " given");
  std::vector<Tensor> r = FloatInterpreter(*g).run(args);
  if (r.size() != n.outputs.size())
    fail(n, "branch has " + std::to_string(r.size()) + " outputs, the node " + std::to_string(n.outputs.size()));
  for (size_t k = 0; k < r.size(); ++k) out[k] = std::move(r[k]);
}

std::string check_if(const Node& n, int, const Graph*) {
  for (const char* b : {"then_branch", "else_branch"}) {
    const Graph* g = n.get_graph(b);
    if (!g) return std::string("missing subgraph ") + b;
    auto bad = unsupported_nodes(*g);
    if (!bad.empty()) return std::string(b) + ": " + bad.front();
  }
  return "";
}

std::string check_topk(const Node& n, int opset, const Graph*) {
  if (opset < 10 && !n.has("k")) return "TopK without k";
  return "";
}

}  // namespace

void register_dynamic(std::vector<KernelEntry>& t) {
  t.push_back({"NonZero", k_nonzero, nullptr});
  t.push_back({"GatherND", k_gather_nd, nullptr});
  t.push_back({"TopK", k_topk, check_topk});
  t.push_back({"NonMaxSuppression", k_nms, nullptr});
  t.push_back({"If", k_if, check_if});
}

}  // namespace cct::interp::detail

namespace cct::interp {

bool data_dependent_shape(const Node& n) {
  return n.op == "NonZero" || n.op == "NonMaxSuppression" || n.op == "If" || n.op == "Loop" || n.op == "Compress" ||
         n.op == "Unique";
}

}  // namespace cct::interp
