#include "frontend/graph_passes.hpp"

#include <algorithm>
#include <set>
#include <cmath>

#include "interp/float_interp.hpp"
#include "interp/ops.hpp"
#include "support/error.hpp"

namespace cct::frontend {

using interp::Graph;
using interp::Node;
using interp::Tensor;

namespace {

void make_constant(Graph& g, int v, Tensor t) {
  auto& val = g.value(v);
  val.dtype = t.dtype;
  val.shape = t.shape;
  val.has_shape = true;
  val.constant = std::make_shared<Tensor>(std::move(t));
  val.producer = -1;
}

// Replaces every read of value `from` by `to` (nodes and graph outputs); a
// quantization the source model gave `from` moves to `to` if it has none.
void replace_uses(Graph& g, int from, int to) {
  if (g.value(from).preset && !g.value(to).preset) g.value(to).preset = g.value(from).preset;
  for (auto& n : g.nodes)
    for (int& v : n.inputs)
      if (v == from) v = to;
  for (int& v : g.outputs)
    if (v == from) v = to;
}

// Removes the nodes a rewrite marked dead (their one output set to -1).
void drop_dead_nodes(Graph& g) {
  std::vector<Node> kept;
  for (auto& n : g.nodes)
    if (!(n.outputs.size() == 1 && n.outputs[0] < 0)) kept.push_back(std::move(n));
  g.nodes = std::move(kept);
  g.relink();
}

bool is_graph_output(const Graph& g, int v) {
  for (int o : g.outputs)
    if (o == v) return true;
  return false;
}

int add_constant(Graph& g, const std::string& base, Tensor t) {
  interp::Value v;
  v.name = g.unique_name(base);
  int id = g.add_value(std::move(v));
  make_constant(g, id, std::move(t));
  return id;
}

// A depthwise 1x1 Conv over C channels named after `like` (weights, bias,
// pads and the operands are the caller's): what a standalone batch norm and
// a constant Pad become, so that the PE array runs them like any other.
Node depthwise_1x1_conv(const Node& like, int64_t channels) {
  Node conv;
  conv.op = "Conv";
  conv.name = like.name;
  conv.source_index = like.source_index;
  interp::Attribute grp;
  grp.kind = interp::Attribute::Kind::Int;
  grp.i = channels;
  conv.attrs["group"] = grp;
  interp::Attribute ks;
  ks.kind = interp::Attribute::Kind::Ints;
  ks.ints = {1, 1};
  conv.attrs["kernel_shape"] = ks;
  return conv;
}

}  // namespace

int fold_constants(Graph& g) {
  int folded = 0;
  std::vector<Node> kept;
  for (auto& n : g.nodes) {
    bool all_const = !n.domain.size();
    for (int v : n.inputs)
      if (v >= 0 && !g.is_constant(v)) all_const = false;
    // Shape and Size only need the input's static shape.
    if ((n.op == "Shape" || n.op == "Size") && n.inputs.size() == 1 && n.inputs[0] >= 0 &&
        g.value(n.inputs[0]).has_shape && !g.is_constant(n.inputs[0])) {
      Tensor shape_only;
      shape_only.shape = g.value(n.inputs[0]).shape;
      shape_only.dtype = interp::DType::F32;
      shape_only.f.assign(static_cast<size_t>(interp::shape_numel(shape_only.shape)), 0.0f);
      if (interp::shape_numel(shape_only.shape) <= (1 << 24)) {
        std::vector<Tensor> out;
        interp::run_kernel(n, g.opset, {&shape_only}, out);
        make_constant(g, n.outputs[0], std::move(out[0]));
        ++folded;
        continue;
      }
    }
    if (!all_const || n.outputs.empty() || n.op == "RandomNormal" || n.op == "RandomUniform") {
      kept.push_back(std::move(n));
      continue;
    }
    interp::KernelInputs args;
    for (int v : n.inputs) args.push_back(v >= 0 ? &g.constant(v) : nullptr);
    std::vector<Tensor> out;
    interp::run_kernel(n, g.opset, args, out);
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (n.outputs[k] >= 0 && k < out.size()) make_constant(g, n.outputs[k], std::move(out[k]));
    ++folded;
  }
  g.nodes = std::move(kept);
  g.relink();
  return folded;
}

int remove_noops(Graph& g) {
  int removed = 0;
  std::vector<Node> kept;
  for (auto& n : g.nodes) {
    bool noop = false;
    int in = n.input(0), out = n.outputs.empty() ? -1 : n.outputs[0];
    if (n.op == "Identity" || n.op == "Dropout") {
      // Dropout's mask output, if anyone reads it, keeps the node.
      noop = n.outputs.size() == 1 || n.outputs[1] < 0;
    } else if (n.op == "Reshape" || n.op == "Flatten" || n.op == "Squeeze" || n.op == "Unsqueeze") {
      noop = in >= 0 && out >= 0 && g.value(in).has_shape && g.value(out).has_shape &&
             g.value(in).shape == g.value(out).shape;
    } else if ((n.op == "Concat" && n.input_count() == 1) || (n.op == "Split" && n.outputs.size() == 1)) {
      // Concatenating one tensor, splitting into one piece.
      noop = in >= 0 && out >= 0 && g.value(in).has_shape && g.value(out).has_shape &&
             g.value(in).shape == g.value(out).shape;
    } else if (n.op == "Pad" && g.opset >= 11) {
      // Padding by nothing, in any mode (torchvision's detection transform
      // pads each image to a size multiple, here by zero).
      int pads = n.input(1);
      noop = in >= 0 && out >= 0 && pads >= 0 && g.is_constant(pads) && g.value(in).has_shape &&
             g.value(out).has_shape && g.value(in).shape == g.value(out).shape;
      if (noop)
        for (int64_t v : g.constant(pads).to_ints()) noop = noop && v == 0;
    }
    // A graph output keeps its producer so the output name stays meaningful
    // unless the input is computed (then the output is simply rewired): a
    // graph input or a constant passed straight out would be computed by no
    // layer.
    const bool passes_through = in >= 0 && (g.is_constant(in) || g.value(in).producer < 0);
    if (noop && in >= 0 && out >= 0 && !(is_graph_output(g, out) && passes_through)) {
      replace_uses(g, out, in);
      ++removed;
      continue;
    }
    kept.push_back(std::move(n));
  }
  g.nodes = std::move(kept);
  g.relink();
  return removed;
}

int fold_batch_norm(Graph& g) {
  int folded = 0;
  auto consumers = g.consumers();
  std::vector<char> drop(g.nodes.size(), 0);
  std::vector<Node> extra;  // Mul/Add replacing standalone BNs, placed where the BN was
  std::vector<std::pair<size_t, std::vector<Node>>> inserts;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    Node& bn = g.nodes[k];
    if (bn.op != "BatchNormalization" || !interp::unsupported_reason(bn, g.opset, &g).empty()) continue;
    bool consts = true;
    for (int i = 1; i <= 4; ++i) consts &= g.is_constant(bn.input(i));
    if (!consts) continue;
    const Tensor& scale = g.constant(bn.input(1));
    const Tensor& bias = g.constant(bn.input(2));
    const Tensor& mean = g.constant(bn.input(3));
    const Tensor& var = g.constant(bn.input(4));
    float eps = bn.get_float("epsilon", 1e-5f);
    int64_t C = scale.numel();
    if (bias.numel() != C || mean.numel() != C || var.numel() != C) continue;
    std::vector<float> a(static_cast<size_t>(C)), b(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) {
      a[c] = scale.f[c] / std::sqrt(var.f[c] + eps);
      b[c] = bias.f[c] - mean.f[c] * a[c];
    }
    int x = bn.input(0), y = bn.outputs[0];
    int p = g.value(x).producer;
    bool single = consumers[x].size() == 1 && !is_graph_output(g, x);
    if (p >= 0 && single && g.nodes[p].op == "Conv" && g.is_constant(g.nodes[p].input(1)) &&
        (g.nodes[p].input(2) < 0 || g.is_constant(g.nodes[p].input(2)))) {
      Node& conv = g.nodes[p];
      Tensor w = g.constant(conv.input(1));
      if (w.shape.empty() || w.shape[0] != C) continue;
      int64_t per = w.numel() / C;
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < per; ++i) w.f[c * per + i] *= a[c];
      Tensor nb = Tensor::floats({C});
      for (int64_t c = 0; c < C; ++c) {
        float b0 = conv.input(2) >= 0 ? g.constant(conv.input(2)).f[c] : 0.0f;
        nb.f[c] = b0 * a[c] + b[c];
      }
      int wv = add_constant(g, g.value(conv.input(1)).name + "_bnfold", std::move(w));
      int bv = add_constant(g, conv.name + "_bias_bnfold", std::move(nb));
      conv.inputs.resize(3);
      conv.inputs[1] = wv;
      conv.inputs[2] = bv;
      // The conv now produces the BN's output directly.
      int old = conv.outputs[0];
      replace_uses(g, y, old);
      drop[k] = 1;
      ++folded;
      continue;
    }
    if (!g.value(x).has_shape || g.value(x).shape.size() < 2) continue;
    if (g.value(x).shape.size() == 4 && g.value(x).shape[1] == C) {
      // Standalone on an image: a depthwise 1x1 convolution (weights a,
      // bias b), which the PE array runs like any other.
      Node conv = depthwise_1x1_conv(bn, C);
      int wv = add_constant(g, bn.name + "_scale", Tensor::floats({C, 1, 1, 1}, a));
      int bv = add_constant(g, bn.name + "_shift", Tensor::floats({C}, b));
      conv.inputs = {x, wv, bv};
      conv.outputs = {y};
      std::vector<Node> one;
      one.push_back(std::move(conv));
      inserts.push_back({k, std::move(one)});
      drop[k] = 1;
      ++folded;
      continue;
    }
    // Standalone: y = x * a + b with a, b shaped [C, 1, ...] to broadcast on axis 1.
    interp::Shape cs(g.value(x).shape.size() - 1, 1);
    cs[0] = C;
    int av = add_constant(g, bn.name + "_scale", Tensor::floats(cs, a));
    int bv = add_constant(g, bn.name + "_shift", Tensor::floats(cs, b));
    interp::Value mid;
    mid.name = g.unique_name(bn.name + "_scaled");
    mid.dtype = interp::DType::F32;
    mid.shape = g.value(x).shape;
    mid.has_shape = g.value(x).has_shape;
    int mv = g.add_value(std::move(mid));
    Node mul;
    mul.op = "Mul";
    mul.name = bn.name + "_mul";
    mul.source_index = bn.source_index;
    mul.inputs = {x, av};
    mul.outputs = {mv};
    Node add;
    add.op = "Add";
    add.name = bn.name;
    add.source_index = bn.source_index;
    add.inputs = {mv, bv};
    add.outputs = {y};
    inserts.push_back({k, {std::move(mul), std::move(add)}});
    drop[k] = 1;
    ++folded;
  }
  std::vector<Node> kept;
  size_t next_insert = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (next_insert < inserts.size() && inserts[next_insert].first == k) {
      for (auto& n : inserts[next_insert].second) kept.push_back(std::move(n));
      ++next_insert;
    }
    if (!drop[k]) kept.push_back(std::move(g.nodes[k]));
  }
  g.nodes = std::move(kept);
  g.relink();
  return folded;
}

namespace {

bool reshape_like(const Node& n) {
  return n.op == "Reshape" || n.op == "Flatten" || n.op == "Squeeze" || n.op == "Unsqueeze";
}

// A Reshape of `x` to the (static) shape of value `out`, in place of node n.
void make_reshape(Graph& g, Node& n, int x, int out) {
  const interp::Shape& s = g.value(out).shape;
  int sv = add_constant(g, n.name + "_shape", Tensor::ints({static_cast<int64_t>(s.size())}, s));
  n.op = "Reshape";
  n.attrs.clear();
  n.inputs = {x, sv};
}

// One rewrite of Op(R(x), c) into R(Op(x, c')), where R is a reshape that
// only drops leading axes of size 1, Op an element-wise Add/Sub/Mul/Div and
// c a constant (c' is c with those axes put back in front): torchvision's
// detection transform normalises images[0] of a batch of one this way, and
// the chip keeps the network's batch as axis 0. R is then next to the
// reshape after, with which it collapses. False when there is none.
bool sink_squeeze(Graph& g) {
  auto cons = g.consumers();
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    Node& n = g.nodes[k];
    if (n.op != "Add" && n.op != "Sub" && n.op != "Mul" && n.op != "Div") continue;
    if (n.inputs.size() != 2 || n.outputs.size() != 1 || n.outputs[0] < 0) continue;
    for (int side = 0; side < 2; ++side) {
      int r = n.inputs[side], c = n.inputs[1 - side];
      if (r < 0 || c < 0 || !g.is_constant(c) || g.is_constant(r)) continue;
      int pi = g.value(r).producer;
      if (pi < 0 || !reshape_like(g.nodes[pi]) || cons[r].size() != 1 || is_graph_output(g, r)) continue;
      int x = g.nodes[pi].input(0);
      if (x < 0 || !g.value(x).has_shape || !g.value(r).has_shape || !g.value(n.outputs[0]).has_shape) continue;
      const interp::Shape xs = g.value(x).shape, rs = g.value(r).shape;  // copies: add_value below may move them
      if (xs.size() <= rs.size() || g.value(n.outputs[0]).shape != rs) continue;
      size_t lead = xs.size() - rs.size();
      bool drops = std::equal(rs.begin(), rs.end(), xs.begin() + static_cast<long>(lead));
      for (size_t d = 0; d < lead; ++d) drops = drops && xs[d] == 1;
      const Tensor& ct = g.constant(c);
      if (!drops || ct.shape.size() > rs.size()) continue;
      Tensor c2 = ct;
      c2.shape.insert(c2.shape.begin(), xs.size() - ct.shape.size(), 1);
      int cv = add_constant(g, g.value(c).name + "_lifted", std::move(c2));
      interp::Value mid;
      mid.name = g.unique_name(g.value(n.outputs[0]).name + "_lifted");
      mid.dtype = g.value(n.outputs[0]).dtype;
      mid.shape = xs;
      mid.has_shape = true;
      int mv = g.add_value(std::move(mid));
      int out = n.outputs[0];
      Node& rn = g.nodes[static_cast<size_t>(pi)];
      n.inputs[side] = x;
      n.inputs[1 - side] = cv;
      n.outputs[0] = mv;
      make_reshape(g, rn, mv, out);
      rn.outputs = {out};
      rn.name += "_after";
      g.value(r).producer = -1;
      // The reshape now reads the operation: swap their places (nothing
      // between them reads the reshape's old output, only n did).
      std::swap(g.nodes[static_cast<size_t>(pi)], g.nodes[k]);
      g.relink();
      return true;
    }
  }
  return false;
}

}  // namespace

int simplify_layout(Graph& g) {
  int changed = 0;
  bool again = true;
  while (again) {
    again = false;
    g.relink();
    if (sink_squeeze(g)) {
      ++changed;
      again = true;
      continue;
    }
    for (auto& n : g.nodes) {
      int x = n.input(0);
      if (x < 0 || n.outputs.empty() || n.outputs[0] < 0) continue;
      int out = n.outputs[0];
      int p = g.value(x).producer;
      if (n.op == "Transpose") {
        std::vector<int64_t> perm = n.get_ints("perm");
        int64_t r = static_cast<int64_t>(g.value(x).shape.size());
        if (perm.empty())
          for (int64_t d = r - 1; d >= 0; --d) perm.push_back(d);
        if (p >= 0 && g.nodes[p].op == "Transpose" && g.nodes[p].get_ints("perm").size() == perm.size()) {
          // T2(T1(y)): element d of the result is axis p1[p2[d]] of y
          std::vector<int64_t> p1 = g.nodes[p].get_ints("perm"), total(perm.size());
          for (size_t d = 0; d < perm.size(); ++d) total[d] = p1[perm[d]];
          int y = g.nodes[p].input(0);
          bool identity = true;
          for (size_t d = 0; d < total.size(); ++d) identity &= total[d] == static_cast<int64_t>(d);
          if (identity && !is_graph_output(g, out)) {
            replace_uses(g, out, y);
            n.inputs = {y};
            n.outputs = {-1};  // dead: pruned below
          } else {
            n.inputs = {y};
            n.attrs["perm"].ints = total;
          }
          ++changed;
          again = true;
          break;
        }
        // keeps the element order when the axes larger than 1 stay in order
        if (g.value(x).has_shape && g.value(out).has_shape) {
          const auto& xs = g.value(x).shape;
          std::vector<int64_t> order;
          for (int64_t d : perm)
            if (xs[d] != 1) order.push_back(d);
          if (std::is_sorted(order.begin(), order.end())) {
            make_reshape(g, n, x, out);
            ++changed;
            again = true;
            break;
          }
        }
      }
      // Element-wise operators and Pad commute with a Transpose before them:
      // move the Transpose after, where it may cancel with the next one.
      bool unary = n.op == "Relu" || n.op == "Clip" || n.op == "Sigmoid" || n.op == "Tanh" || n.op == "HardSwish" ||
                   n.op == "LeakyRelu" || n.op == "Identity" || n.op == "Pad";
      if (unary && p >= 0 && g.nodes[p].op == "Transpose" && g.consumers()[x].size() == 1 && !is_graph_output(g, x) &&
          g.value(g.nodes[p].input(0)).has_shape && g.value(out).has_shape) {
        Node& t = g.nodes[p];
        std::vector<int64_t> perm = t.get_ints("perm");
        int y = t.input(0);
        if (perm.empty())
          for (int64_t d = static_cast<int64_t>(g.value(y).shape.size()) - 1; d >= 0; --d) perm.push_back(d);
        if (n.op == "Pad") {
          if (g.opset < 11 || !g.is_constant(n.input(1))) goto next;
          std::vector<int64_t> pads = g.constant(n.input(1)).to_ints();
          size_t r = perm.size();
          if (pads.size() != 2 * r) goto next;
          std::vector<int64_t> moved(2 * r);
          for (size_t d = 0; d < r; ++d) {
            moved[perm[d]] = pads[d];
            moved[perm[d] + r] = pads[d + r];
          }
          n.inputs[1] = add_constant(g, n.name + "_pads", Tensor::ints({static_cast<int64_t>(2 * r)}, moved));
        }
        // n: y -> mid (in y's layout); t: mid -> out
        interp::Shape ms(perm.size());
        const auto& os = g.value(out).shape;
        for (size_t d = 0; d < perm.size(); ++d) ms[perm[d]] = os[d];
        interp::Value mv;
        mv.name = g.unique_name(g.value(out).name + "_untransposed");
        mv.dtype = g.value(out).dtype;
        mv.shape = ms;
        mv.has_shape = true;
        mv.preset = g.value(out).preset;
        int mid = g.add_value(std::move(mv));
        n.inputs[0] = y;
        n.outputs[0] = mid;
        t.inputs = {mid};
        t.outputs = {out};
        g.topo_sort();
        ++changed;
        again = true;
        break;
      }
      next:
      if (reshape_like(n) && p >= 0 && reshape_like(g.nodes[p]) && g.value(out).has_shape) {
        make_reshape(g, n, g.nodes[p].input(0), out);
        ++changed;
        again = true;
        break;
      }
    }
    if (again) {
      drop_dead_nodes(g);
    }
  }
  return changed;
}

int fold_pads(Graph& g) {
  int folded = 0;
  auto cons = g.consumers();
  std::vector<char> drop(g.nodes.size(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    Node& pad = g.nodes[k];
    if (pad.op != "Pad" || pad.get_string("mode", "constant") != "constant") continue;
    int x = pad.input(0), out = pad.outputs[0];
    if (!g.value(x).has_shape || g.value(x).shape.size() != 4 || is_graph_output(g, out) || cons[out].empty()) continue;
    std::vector<int64_t> pads;
    float value = 0.0f;
    if (g.opset < 11) {
      pads = pad.get_ints("pads");
      value = pad.get_float("value", 0.0f);
    } else {
      if (!g.is_constant(pad.input(1))) continue;
      pads = g.constant(pad.input(1)).to_ints();
      if (pad.input(2) >= 0) {
        if (!g.is_constant(pad.input(2)) || g.constant(pad.input(2)).numel() != 1) continue;
        value = static_cast<float>(g.constant(pad.input(2)).at_double(0));
      }
    }
    if (pads.size() != 8 || value != 0.0f || pads[0] || pads[1] || pads[4] || pads[5]) continue;
    bool ok = true;
    for (int64_t v : pads) ok &= v >= 0;
    for (int c : cons[out]) {
      const Node& r = g.nodes[c];
      bool conv = r.op == "Conv" && r.input(0) == out && r.get_string("auto_pad", "NOTSET") == "NOTSET";
      bool avg = r.op == "AveragePool" && r.input(0) == out && r.get_string("auto_pad", "NOTSET") == "NOTSET" &&
                 r.get_int("ceil_mode", 0) == 0;
      if (avg) {
        auto rp = r.get_ints("pads", {0, 0, 0, 0});
        bool own = std::any_of(rp.begin(), rp.end(), [](int64_t v) { return v != 0; });
        if (own && r.get_int("count_include_pad", 0) == 0) avg = false;
      }
      ok &= conv || avg;
    }
    if (!ok) continue;
    for (int c : cons[out]) {
      Node& r = g.nodes[c];
      auto rp = r.get_ints("pads", {0, 0, 0, 0});
      if (rp.size() != 4) rp.assign(4, 0);
      // ONNX order: [top, left, bottom, right] for the two spatial axes
      rp[0] += pads[2];
      rp[1] += pads[3];
      rp[2] += pads[6];
      rp[3] += pads[7];
      interp::Attribute a;
      a.kind = interp::Attribute::Kind::Ints;
      a.ints = rp;
      r.attrs["pads"] = a;
      if (r.op == "AveragePool") {
        interp::Attribute c1;
        c1.kind = interp::Attribute::Kind::Int;
        c1.i = 1;
        r.attrs["count_include_pad"] = c1;
      }
      r.inputs[0] = x;
    }
    if (g.value(out).preset && !g.value(x).preset) g.value(x).preset = g.value(out).preset;
    drop[k] = 1;
    ++folded;
  }
  std::vector<Node> kept;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (!drop[k]) kept.push_back(std::move(g.nodes[k]));
  g.nodes = std::move(kept);
  g.relink();
  return folded;
}

int pads_to_conv(Graph& g) {
  int made = 0;
  std::vector<std::pair<size_t, std::vector<Node>>> extra;  // node index, {Sub, Add}
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    Node& pad = g.nodes[k];
    if (pad.op != "Pad" || pad.get_string("mode", "constant") != "constant") continue;
    int x = pad.input(0);
    if (!g.value(x).has_shape || g.value(x).shape.size() != 4) continue;
    std::vector<int64_t> pads;
    float value = 0.0f;
    if (g.opset < 11) {
      pads = pad.get_ints("pads");
      value = pad.get_float("value", 0.0f);
    } else {
      if (!g.is_constant(pad.input(1))) continue;
      pads = g.constant(pad.input(1)).to_ints();
      if (pad.input(2) >= 0) {
        if (!g.is_constant(pad.input(2)) || g.constant(pad.input(2)).numel() != 1) continue;
        value = static_cast<float>(g.constant(pad.input(2)).at_double(0));
      }
    }
    if (pads.size() != 8 || !std::isfinite(value) || pads[0] || pads[1] || pads[4] || pads[5]) continue;
    if (std::any_of(pads.begin(), pads.end(), [](int64_t v) { return v < 0; })) continue;
    // A zero Pad of the spatial axes is a depthwise 1x1 convolution by 1
    // whose padding is the Pad's: the PE array fills the border with zeros.
    // Another value v: (x - v) padded with zeros, plus v.
    const int64_t C = g.value(x).shape[1];
    const int y = pad.outputs[0];
    int conv_in = x, conv_out = y;
    std::vector<Node> around;
    if (value != 0.0f) {
      auto mid = [&](const std::string& base, const interp::Shape& sh) {
        interp::Value v;
        v.name = g.unique_name(base);
        v.dtype = interp::DType::F32;
        v.shape = sh;
        v.has_shape = true;
        return g.add_value(std::move(v));
      };
      int vv = add_constant(g, pad.name + "_value", Tensor::floats({1}, {value}));
      conv_in = mid(pad.name + "_shifted", g.value(x).shape);
      interp::Shape ps = g.value(x).shape;
      ps[2] += pads[2] + pads[6], ps[3] += pads[3] + pads[7];
      conv_out = mid(pad.name + "_zero_padded", ps);
      Node sub;
      sub.op = "Sub", sub.name = pad.name + "_sub", sub.source_index = pad.source_index;
      sub.inputs = {x, vv}, sub.outputs = {conv_in};
      Node add;
      add.op = "Add", add.name = pad.name + "_add", add.source_index = pad.source_index;
      add.inputs = {conv_out, vv}, add.outputs = {y};
      around.push_back(std::move(sub));
      around.push_back(std::move(add));
    }
    Node conv = depthwise_1x1_conv(pad, C);
    interp::Attribute pa;
    pa.kind = interp::Attribute::Kind::Ints;
    pa.ints = {pads[2], pads[3], pads[6], pads[7]};
    conv.attrs["pads"] = pa;
    int wv = add_constant(g, pad.name + "_identity", Tensor::floats({C, 1, 1, 1}, std::vector<float>(size_t(C), 1.0f)));
    conv.inputs = {conv_in, wv};
    conv.outputs = {conv_out};
    if (around.empty()) {
      pad = std::move(conv);
    } else {
      conv.name = pad.name + "_conv";
      pad = std::move(conv);
      extra.push_back({k, std::move(around)});
    }
    ++made;
  }
  if (!extra.empty()) {
    // The Sub before its Conv, the Add after it.
    std::vector<Node> kept;
    size_t e = 0;
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      bool here = e < extra.size() && extra[e].first == k;
      if (here) kept.push_back(std::move(extra[e].second[0]));
      kept.push_back(std::move(g.nodes[k]));
      if (here) kept.push_back(std::move(extra[e++].second[1]));
    }
    g.nodes = std::move(kept);
  }
  g.relink();
  return made;
}

std::vector<char> dynamic_values(const Graph& g) {
  std::vector<char> dyn(g.values.size(), 0);
  for (const auto& n : g.nodes) {
    bool d = interp::data_dependent_shape(n);
    for (int v : n.inputs) d = d || (v >= 0 && dyn[v]);
    if (d)
      for (int v : n.outputs)
        if (v >= 0) dyn[v] = 1;
  }
  return dyn;
}

PostProcessing find_post_processing(const Graph& g) {
  PostProcessing pp;
  std::vector<char> dyn = dynamic_values(g);
  std::vector<char> in(g.nodes.size(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    bool d = interp::data_dependent_shape(n);
    if (d && pp.first.empty()) pp.first = "node '" + n.name + "' (" + n.op + ")";
    for (int v : n.inputs) d = d || (v >= 0 && dyn[v]);
    in[k] = d;
  }
  if (pp.first.empty()) return pp;
  // Grow backwards over nodes that only it reads (not the PE array's work).
  auto cons = g.consumers();
  for (size_t k = g.nodes.size(); k-- > 0;) {
    const Node& n = g.nodes[k];
    if (in[k] || n.op == "Conv" || n.op == "ConvTranspose" || n.op == "Gemm" || n.op == "MatMul") continue;
    bool only = !n.outputs.empty();
    for (int v : n.outputs) {
      if (v < 0) continue;
      if (is_graph_output(g, v) || cons[v].empty()) only = false;
      for (int c : cons[v]) only = only && in[c];
    }
    if (only) in[k] = 1;
  }
  std::vector<char> read(g.values.size(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (!in[k]) continue;
    pp.nodes.push_back(static_cast<int>(k));
    for (int v : g.nodes[k].inputs)
      if (v >= 0 && !g.is_constant(v) && (g.value(v).producer < 0 || !in[g.value(v).producer])) read[v] = 1;
  }
  for (size_t v = 0; v < read.size(); ++v)
    if (read[v]) pp.inputs.push_back(static_cast<int>(v));
  return pp;
}

namespace {

bool same_attribute(const interp::Attribute& a, const interp::Attribute& b) {
  if (a.kind != b.kind || a.i != b.i || a.s != b.s || a.ints != b.ints || a.strings != b.strings) return false;
  if (!(a.f == b.f) || a.floats != b.floats) return false;
  if ((a.t == nullptr) != (b.t == nullptr) || a.g || b.g) return false;
  return !a.t || (a.t->dtype == b.t->dtype && a.t->shape == b.t->shape && a.t->f == b.t->f && a.t->i == b.t->i);
}

bool same_constant(const Graph& g, int a, int b) {
  if (a == b) return true;
  if (a < 0 || b < 0 || !g.is_constant(a) || !g.is_constant(b)) return false;
  const Tensor &x = g.constant(a), &y = g.constant(b);
  return x.dtype == y.dtype && x.shape == y.shape && x.f == y.f && x.i == y.i;
}

// Node n (reading `cur` of shape [1, ...] as input 0) treats each sample
// alone and can run on the whole batch as it is, or with its leading 1 made
// the batch (Resize sizes, Reshape shape): the other inputs constant.
bool per_sample(const Graph& g, const Node& n, int cur) {
  static const std::set<std::string> unary = {"Relu", "Clip", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish",
                                              "LeakyRelu", "Identity", "Exp", "Abs", "Neg"};
  const auto& cs = g.value(cur).shape;
  if (cs.empty() || cs[0] != 1 || n.outputs.size() != 1 || n.outputs[0] < 0 || !n.domain.empty()) return false;
  const auto& os = g.value(n.outputs[0]).shape;
  if (!g.value(n.outputs[0]).has_shape || os.empty() || os[0] != 1) return false;
  for (size_t k = 1; k < n.inputs.size(); ++k)
    if (n.inputs[k] >= 0 && !g.is_constant(n.inputs[k])) return false;
  if (n.inputs.empty() || n.inputs[0] != cur) {
    // a binary element-wise op may read the sample second
    if (!(n.op == "Add" || n.op == "Mul") || n.inputs.size() != 2 || n.inputs[1] != cur || !g.is_constant(n.inputs[0]))
      return false;
  }
  if (unary.count(n.op)) return true;
  if (n.op == "Add" || n.op == "Sub" || n.op == "Mul" || n.op == "Div") {
    int c = n.inputs[0] == cur ? n.inputs[1] : n.inputs[0];
    const auto& s = g.constant(c).shape;
    return s.size() < cs.size() || (s.size() == cs.size() && s[0] == 1);
  }
  if (n.op == "Reshape") return true;  // [1, ...] -> [1, ...]: the batch axis stays first
  if (n.op == "Resize" && g.opset >= 11) {
    int sizes = n.input(3), scales = n.input(2);
    if (sizes >= 0 && g.constant(sizes).numel() > 0) return g.constant(sizes).at_int(0) == 1;
    return scales >= 0 && g.constant(scales).numel() > 0 && g.constant(scales).at_double(0) == 1.0;
  }
  return false;
}

}  // namespace

int merge_sample_branches(Graph& g) {
  int merged = 0;
  auto cons = g.consumers();
  for (size_t si = 0; si < g.nodes.size(); ++si) {
    const Node& sp = g.nodes[si];
    if (sp.op != "Split" || sp.get_int("axis", 0) != 0 || sp.outputs.size() < 2) continue;
    int x = sp.input(0);
    if (x < 0 || !g.value(x).has_shape || g.value(x).shape.empty()) continue;
    const int64_t N = g.value(x).shape[0];
    if (N != static_cast<int64_t>(sp.outputs.size())) continue;
    // Each piece's chain of single-reader per-sample nodes up to a common Concat.
    std::vector<std::vector<int>> chains;
    int concat = -1;
    bool ok = true;
    for (size_t i = 0; i < sp.outputs.size() && ok; ++i) {
      int cur = sp.outputs[i];
      std::vector<int> chain;
      while (ok) {
        if (cur < 0 || !g.value(cur).has_shape || cons[cur].size() != 1 || is_graph_output(g, cur)) {
          ok = false;
          break;
        }
        int c = cons[cur][0];
        const Node& cn = g.nodes[static_cast<size_t>(c)];
        if (cn.op == "Concat") {
          int64_t r = static_cast<int64_t>(g.value(cur).shape.size());
          int64_t axis = cn.get_int("axis", 0);
          ok = (axis == 0 || axis == -r) && cn.inputs.size() == sp.outputs.size() && cn.inputs[i] == cur &&
               (concat < 0 || concat == c);
          concat = c;
          break;
        }
        if (!per_sample(g, cn, cur)) {
          ok = false;
          break;
        }
        chain.push_back(c);
        cur = cn.outputs[0];
      }
      chains.push_back(chain);
    }
    if (!ok || concat < 0) continue;
    // The same nodes in every chain: operator, attributes, constants.
    for (size_t i = 1; i < chains.size() && ok; ++i) {
      ok = chains[i].size() == chains[0].size();
      for (size_t k = 0; k < chains[0].size() && ok; ++k) {
        const Node &a = g.nodes[static_cast<size_t>(chains[0][k])], &b = g.nodes[static_cast<size_t>(chains[i][k])];
        ok = a.op == b.op && a.inputs.size() == b.inputs.size() && a.attrs.size() == b.attrs.size();
        for (auto ia = a.attrs.begin(), ib = b.attrs.begin(); ok && ia != a.attrs.end(); ++ia, ++ib)
          ok = ia->first == ib->first && same_attribute(ia->second, ib->second);
        for (size_t j = 0; j < a.inputs.size() && ok; ++j) {
          bool a_const = a.inputs[j] >= 0 && g.is_constant(a.inputs[j]);
          ok = a_const ? same_constant(g, a.inputs[j], b.inputs[j]) : (b.inputs[j] < 0) == (a.inputs[j] < 0) && !g.is_constant(b.inputs[j]);
        }
      }
    }
    if (!ok) continue;
    // Run chain 0 on the whole batch: its first node reads x, shapes and
    // the batch entries of Resize sizes / Reshape shapes become N.
    int cur = x;
    for (int k : chains[0]) {
      Node& n = g.nodes[static_cast<size_t>(k)];
      for (auto& v : n.inputs)
        if (v >= 0 && !g.is_constant(v) && g.value(v).producer != k) v = cur;
      int batch_input = n.op == "Resize" ? 3 : n.op == "Reshape" ? 1 : -1;
      if (batch_input >= 0 && n.input(batch_input) >= 0 && g.constant(n.input(batch_input)).numel() > 0) {
        Tensor t = g.constant(n.input(batch_input));
        t.i[0] = N;
        n.inputs[static_cast<size_t>(batch_input)] = add_constant(g, n.name + "_batch", std::move(t));
      }
      g.value(n.outputs[0]).shape[0] = N;
      cur = n.outputs[0];
    }
    Node& cc = g.nodes[static_cast<size_t>(concat)];
    cc.inputs = {cur};  // a Concat of one input: removed as a no-op
    ++merged;
    g.relink();
    cons = g.consumers();
  }
  return merged;
}

int squeeze_gathers(Graph& g) {
  int changed = 0;
  for (auto& n : g.nodes) {
    int x = n.input(0), out = n.outputs.empty() ? -1 : n.outputs[0];
    if (n.op != "Gather" || x < 0 || out < 0 || !g.value(x).has_shape || !g.value(out).has_shape ||
        !g.is_constant(n.input(1)) || g.constant(n.input(1)).rank() != 0 || g.value(x).shape.empty())
      continue;
    const auto& xs = g.value(x).shape;
    int64_t r = static_cast<int64_t>(xs.size());
    int64_t axis = n.get_int("axis", 0);
    if (axis < 0) axis += r;
    int64_t idx = g.constant(n.input(1)).at_int(0);
    if (axis < 0 || axis >= r || xs[axis] != 1 || (idx != 0 && idx != -1)) continue;
    make_reshape(g, n, x, out);
    ++changed;
  }
  if (changed) g.relink();
  return changed;
}

bool complete_shapes(Graph& g) {
  // Shapes that depend on the data are not recorded: the zero input would
  // give them one value of many.
  std::vector<char> dyn = dynamic_values(g);
  bool missing = false;
  for (const auto& n : g.nodes)
    for (int v : n.outputs)
      if (v >= 0 && !g.value(v).has_shape && !dyn[v]) missing = true;
  if (!missing) return false;
  std::vector<Tensor> inputs;
  for (int v : g.inputs) {
    const auto& val = g.value(v);
    if (!val.has_shape) throw_input_error(g.source + ": input '" + val.name + "' has no static shape");
    inputs.push_back(interp::is_floating(val.dtype) || val.dtype == interp::DType::Unknown
                         ? Tensor::floats(val.shape)
                         : Tensor::ints(val.shape, {}, val.dtype));
  }
  interp::FloatInterpreter fi(g);
  fi.run(inputs, [&](int v, const Tensor& t) {
    if (dyn[v]) return;
    auto& val = g.value(v);
    val.shape = t.shape;
    val.has_shape = true;
    val.dtype = t.dtype;
  });
  return true;
}

// ---- transposes sunk through channels-last regions ---------------------------

namespace {

std::vector<int64_t> perm_of(const Graph& g, const Node& t) {
  std::vector<int64_t> perm = t.get_ints("perm");
  if (perm.empty() && t.input(0) >= 0)
    for (int64_t d = static_cast<int64_t>(g.value(t.input(0)).shape.size()) - 1; d >= 0; --d) perm.push_back(d);
  return perm;
}

// c' with Transpose_perm(c') == c, c first given the rank of perm (numpy
// broadcast: leading 1s): c transposed by the inverse permutation (the
// interpreter's Transpose).
Tensor untranspose_constant(const Tensor& c, const std::vector<int64_t>& perm) {
  Tensor x = c;
  while (x.shape.size() < perm.size()) x.shape.insert(x.shape.begin(), 1);
  std::vector<int64_t> inverse(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) inverse[static_cast<size_t>(perm[d])] = static_cast<int64_t>(d);
  return interp::transposed(x, inverse);
}

bool elementwise_unary(const std::string& op) {
  static const char* const kOps[] = {"Relu", "Clip", "Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "LeakyRelu",
                                     "Elu", "Erf", "Sqrt", "Neg", "Abs", "Exp", "Reciprocal", "Softplus"};
  for (const char* o : kOps)
    if (op == o) return true;
  return false;
}
bool elementwise_binary(const std::string& op) {
  return op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "PRelu";
}
bool reduction(const std::string& op) {
  return op == "ReduceMean" || op == "ReduceMax" || op == "ReduceSum" || op == "ReduceMin";
}

// Axes of a reduction with keepdims (attribute, or a constant input from
// opset 18); false when they are not known or the node drops them.
bool reduce_axes(const Graph& g, const Node& n, std::vector<int64_t>& axes) {
  if (n.get_int("keepdims", 1) != 1) return false;
  if (g.opset >= 18 && n.op != "ReduceMax" && n.op != "ReduceMin") {
    if (n.input(1) < 0 || !g.is_constant(n.input(1))) return false;
    axes = g.constant(n.input(1)).to_ints();
  } else if (g.opset >= 18) {
    if (n.input(1) < 0 || !g.is_constant(n.input(1))) return false;
    axes = g.constant(n.input(1)).to_ints();
  } else {
    axes = n.get_ints("axes");
  }
  return !axes.empty();
}

// The values of a region: each computed in the transposed layout, with its
// counterpart in the layout before the transpose.
struct SinkRegion {
  std::vector<int> nodes;       // region nodes, in node order
  std::vector<int> ends;        // Transposes reading the region (they cancel or compose)
  std::vector<char> in_region;  // per value
};

// Collects the region of the Transpose `t`: every reader of a transposed
// value must be an operator that commutes with the transpose (element-wise,
// a reduction keeping its axes, a MatMul by a constant over what is axis 1
// of a 4-D tensor before the transpose) or a Transpose; every other operand
// of a region node a constant. False when anything else reads the region.
bool collect_region(const Graph& g, const std::vector<std::vector<int>>& cons, int t, SinkRegion& r) {
  const Node& tn = g.nodes[static_cast<size_t>(t)];
  std::vector<int64_t> perm = perm_of(g, tn);
  const int64_t rank = static_cast<int64_t>(perm.size());
  r.in_region.assign(g.values.size(), 0);
  std::vector<char> node_in(g.nodes.size(), 0);
  std::vector<int> work = {tn.outputs[0]};
  r.in_region[static_cast<size_t>(tn.outputs[0])] = 1;
  while (!work.empty()) {
    int v = work.back();
    work.pop_back();
    const auto& val = g.value(v);
    if (is_graph_output(g, v) || !val.has_shape || static_cast<int64_t>(val.shape.size()) != rank) return false;
    if (val.preset && val.preset->scale.size() > 1) return false;
    if (cons[static_cast<size_t>(v)].empty()) return false;
    for (int c : cons[static_cast<size_t>(v)]) {
      if (node_in[static_cast<size_t>(c)]) continue;
      const Node& n = g.nodes[static_cast<size_t>(c)];
      bool ok = false;
      if (n.op == "Transpose") {
        ok = perm_of(g, n).size() == perm.size() && !is_graph_output(g, n.outputs[0]);
        if (ok) {
          node_in[static_cast<size_t>(c)] = 1;
          r.ends.push_back(c);
          continue;
        }
      } else if (n.outputs.size() == 1 && n.outputs[0] >= 0 && n.domain.empty()) {
        if (elementwise_unary(n.op)) {
          ok = n.input(0) == v;
          for (size_t i = 1; i < n.inputs.size(); ++i)
            ok &= n.inputs[i] < 0 || (g.is_constant(n.inputs[i]) && g.constant(n.inputs[i]).numel() == 1);
        } else if (elementwise_binary(n.op)) {
          ok = n.inputs.size() == 2;
        } else if (reduction(n.op)) {
          std::vector<int64_t> axes;
          ok = n.input(0) == v && reduce_axes(g, n, axes);
        } else if (n.op == "MatMul") {
          // [.., C] x [C, K] over the transposed layout: a 1x1 convolution
          // when that last axis is the channel axis of a 4-D tensor.
          int b = n.input(1);
          ok = n.input(0) == v && rank == 4 && perm[3] == 1 && g.is_constant(b) && g.constant(b).is_float() &&
               g.constant(b).rank() == 2 && g.constant(b).shape[0] == val.shape[3];
        }
      }
      if (!ok) return false;
      node_in[static_cast<size_t>(c)] = 1;
      r.nodes.push_back(c);
      int o = n.outputs[0];
      if (!r.in_region[static_cast<size_t>(o)]) {
        r.in_region[static_cast<size_t>(o)] = 1;
        work.push_back(o);
      }
      if (r.nodes.size() > 4096) return false;
    }
  }
  // Every operand of a region node is in the region or a constant that can
  // be given the layout before the transpose.
  for (int k : r.nodes) {
    const Node& n = g.nodes[static_cast<size_t>(k)];
    for (int in : n.inputs) {
      if (in < 0 || r.in_region[static_cast<size_t>(in)]) continue;
      if (!g.is_constant(in)) return false;
      const Tensor& c = g.constant(in);
      if (c.numel() == 1 || n.op == "MatMul" || reduction(n.op)) continue;  // scalars, weights, axes
      if (!c.is_float() || c.rank() > rank) return false;
    }
  }
  std::sort(r.nodes.begin(), r.nodes.end());
  return true;
}

}  // namespace

int sink_transposes(Graph& g) {
  int changed = 0;
  for (bool again = true; again;) {
    again = false;
    g.relink();
    auto cons = g.consumers();
    for (size_t t = 0; t < g.nodes.size() && !again; ++t) {
      if (g.nodes[t].op != "Transpose" || g.nodes[t].outputs.empty() || g.nodes[t].outputs[0] < 0) continue;
      int x = g.nodes[t].input(0);
      if (x < 0 || !g.value(x).has_shape) continue;
      SinkRegion r;
      if (!collect_region(g, cons, static_cast<int>(t), r)) continue;
      const std::vector<int64_t> perm = perm_of(g, g.nodes[t]);
      const size_t rank = perm.size();
      std::vector<int> un(g.values.size(), -1);  // region value -> the same value before the transpose
      un[static_cast<size_t>(g.nodes[t].outputs[0])] = x;
      auto untransposed_shape = [&](const interp::Shape& s) {
        interp::Shape m(rank);
        for (size_t d = 0; d < rank; ++d) m[static_cast<size_t>(perm[d])] = s[d];
        return m;
      };
      for (int k : r.nodes) {
        Node& n = g.nodes[static_cast<size_t>(k)];
        for (size_t i = 0; i < n.inputs.size(); ++i) {
          int in = n.inputs[i];
          if (in < 0) continue;
          if (r.in_region[static_cast<size_t>(in)]) {
            n.inputs[i] = un[static_cast<size_t>(in)];
          } else if (n.op != "MatMul" && !reduction(n.op) && g.constant(in).numel() > 1) {
            n.inputs[i] = add_constant(g, g.value(in).name + "_untransposed", untranspose_constant(g.constant(in), perm));
          }
        }
        if (reduction(n.op)) {
          std::vector<int64_t> axes;
          reduce_axes(g, n, axes);
          for (int64_t& a : axes) a = perm[static_cast<size_t>(interp::normalize_axis(a, static_cast<int64_t>(rank), n.op))];
          if (n.has("axes")) {
            n.attrs["axes"].ints = axes;
          } else {
            n.inputs[1] = add_constant(g, n.name + "_axes", Tensor::ints({static_cast<int64_t>(axes.size())}, axes));
          }
        }
        if (n.op == "MatMul") {
          // x' [N, C, H, W] * W[C, K] over C: Conv with weights [K, C, 1, 1].
          const Tensor& b = g.constant(n.inputs[1]);
          int64_t C = b.shape[0], K = b.shape[1];
          Tensor w = Tensor::floats({K, C, 1, 1});
          for (int64_t i = 0; i < K; ++i)
            for (int64_t j = 0; j < C; ++j) w.f[static_cast<size_t>(i * C + j)] = b.f[static_cast<size_t>(j * K + i)];
          n.op = "Conv";
          n.inputs[1] = add_constant(g, g.value(n.inputs[1]).name + "_conv1x1", std::move(w));
          interp::Attribute ks;
          ks.kind = interp::Attribute::Kind::Ints;
          ks.ints = {1, 1};
          n.attrs["kernel_shape"] = ks;
        }
        int out = n.outputs[0];
        interp::Value mv;
        mv.name = g.unique_name(g.value(out).name + "_untransposed");
        mv.dtype = g.value(out).dtype;
        mv.shape = untransposed_shape(g.value(out).shape);
        mv.has_shape = true;
        mv.preset = g.value(out).preset;
        int mid = g.add_value(std::move(mv));
        if (un.size() < g.values.size()) un.resize(g.values.size(), -1);
        un[static_cast<size_t>(out)] = mid;
        n.outputs[0] = mid;
      }
      // Transposes reading the region now read the value before the first
      // one: the two compose (and vanish when they cancel).
      for (int e : r.ends) {
        Node& n = g.nodes[static_cast<size_t>(e)];
        std::vector<int64_t> q = perm_of(g, n), total(rank);
        for (size_t d = 0; d < rank; ++d) total[d] = perm[static_cast<size_t>(q[d])];
        int y = un[static_cast<size_t>(n.input(0))];
        bool identity = true;
        for (size_t d = 0; d < rank; ++d) identity &= total[d] == static_cast<int64_t>(d);
        if (identity) {
          replace_uses(g, n.outputs[0], y);
          n.inputs = {y};
          n.outputs = {-1};
        } else {
          n.inputs = {y};
          n.attrs["perm"].kind = interp::Attribute::Kind::Ints;
          n.attrs["perm"].ints = total;
        }
      }
      g.nodes[t].outputs = {-1};
      drop_dead_nodes(g);
      g.topo_sort();
      ++changed;
      again = true;
    }
  }
  return changed;
}

int fold_conv_affine(Graph& g) {
  int folded = 0;
  for (bool again = true; again;) {
    again = false;
    g.relink();
    auto cons = g.consumers();
    for (auto& a : g.nodes) {
      if ((a.op != "Add" && a.op != "Mul") || a.inputs.size() != 2 || a.outputs.empty() || a.outputs[0] < 0) continue;
      for (int side = 0; side < 2 && !again; ++side) {
        int x = a.inputs[static_cast<size_t>(side)], c = a.inputs[static_cast<size_t>(1 - side)];
        if (x < 0 || !g.is_constant(c) || !g.constant(c).is_float() || g.value(x).producer < 0) continue;
        Node& conv = g.nodes[static_cast<size_t>(g.value(x).producer)];
        if (conv.op != "Conv" || cons[static_cast<size_t>(x)].size() != 1 || is_graph_output(g, x) ||
            !g.is_constant(conv.input(1)) || !g.constant(conv.input(1)).is_float() ||
            (conv.input(2) >= 0 && (!g.is_constant(conv.input(2)) || !g.constant(conv.input(2)).is_float())) ||
            !g.value(x).has_shape || g.value(x).shape.size() != 4 || g.value(x).preset || g.value(conv.input(1)).preset)
          continue;
        // One value per output channel: [K, 1, 1] or [1, K, 1, 1] (or a scalar).
        const Tensor& ct = g.constant(c);
        const int64_t K = g.value(x).shape[1];
        interp::Shape cs = ct.shape;
        while (cs.size() < 4) cs.insert(cs.begin(), 1);
        if (cs.size() != 4 || cs[0] != 1 || cs[2] != 1 || cs[3] != 1 || (cs[1] != K && cs[1] != 1)) continue;
        auto at = [&](int64_t k) { return ct.f[static_cast<size_t>(cs[1] == 1 ? 0 : k)]; };
        Tensor bias = Tensor::floats({K});
        if (conv.input(2) >= 0) bias.f = g.constant(conv.input(2)).f;
        if (a.op == "Add") {
          for (int64_t k = 0; k < K; ++k) bias.f[static_cast<size_t>(k)] += at(k);
        } else {
          Tensor w = g.constant(conv.input(1));
          const int64_t per = w.numel() / K;
          for (int64_t k = 0; k < K; ++k) {
            for (int64_t j = 0; j < per; ++j) w.f[static_cast<size_t>(k * per + j)] *= at(k);
            bias.f[static_cast<size_t>(k)] *= at(k);
          }
          conv.inputs[1] = add_constant(g, conv.name + "_scaled_weight", std::move(w));
        }
        int bv = add_constant(g, conv.name + "_bias", std::move(bias));
        if (conv.inputs.size() < 3) conv.inputs.resize(3, -1);
        conv.inputs[2] = bv;
        conv.outputs[0] = a.outputs[0];
        a.outputs = {-1};
        ++folded;
        again = true;
      }
      if (again) break;
    }
    if (again) {
      drop_dead_nodes(g);
    }
  }
  return folded;
}

// ---- sequence-first attention: transposes and reshapes off the dense layers --

namespace {

bool data_movement(const Graph& g, int v) {
  int p = v >= 0 ? g.value(v).producer : -1;
  if (p < 0) return false;
  const std::string& op = g.nodes[static_cast<size_t>(p)].op;
  return op == "Transpose" || op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze";
}

interp::Value like_value(const Graph& g, int v, const interp::Shape& shape, const std::string& suffix) {
  interp::Value mv;
  mv.name = g.unique_name(g.value(v).name + suffix);
  mv.dtype = g.value(v).dtype;
  mv.shape = shape;
  mv.has_shape = true;
  return mv;
}

interp::Shape permuted(const interp::Shape& s, const std::vector<int64_t>& perm) {
  interp::Shape o(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) o[d] = s[static_cast<size_t>(perm[d])];
  return o;
}

bool keeps_last(const std::vector<int64_t>& perm) {
  return !perm.empty() && perm.back() == static_cast<int64_t>(perm.size()) - 1;
}

bool const_matmul(const Graph& g, const Node& n) {
  return n.op == "MatMul" && g.is_constant(n.input(1)) && g.constant(n.input(1)).is_float() &&
         g.constant(n.input(1)).rank() == 2 && !g.is_constant(n.input(0));
}

// A Slice whose starts, ends, axes and steps are constants.
bool const_slice(const Graph& g, const Node& n) {
  if (n.op != "Slice" || g.opset < 10) return false;
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (n.inputs[i] >= 0 && !g.is_constant(n.inputs[i])) return false;
  return n.input(1) >= 0 && n.input(2) >= 0;
}

}  // namespace

int batch_first_dense(Graph& g) {
  int changed = 0;
  for (bool again = true; again;) {
    again = false;
    g.relink();
    auto cons = g.consumers();
    auto only_reader = [&](int v) -> int {
      if (v < 0 || is_graph_output(g, v) || cons[static_cast<size_t>(v)].size() != 1) return -1;
      return cons[static_cast<size_t>(v)][0];
    };
    for (size_t k = 0; k < g.nodes.size() && !again; ++k) {
      Node& n = g.nodes[k];
      if (n.outputs.size() != 1 || n.outputs[0] < 0) continue;
      const int out = n.outputs[0];
      const int x = n.input(0);
      if (x < 0 || !g.value(x).has_shape || !g.value(out).has_shape) continue;

      do {
      // (1) A Transpose keeping the last axis, of a tensor no data movement
      // made, sinks past the dense layer (MatMul by a constant, and an
      // element-wise operation with a constant) or the Slices reading it: the
      // dense then reads the tensor in its own layout (ViT's in-projection
      // reads [N, T, D], not the sequence-first [T, N, D]).
      if (n.op == "Transpose" && g.value(x).shape.size() == 3 && keeps_last(perm_of(g, n)) && !data_movement(g, x)) {
        const std::vector<int64_t> perm = perm_of(g, n);
        const Node tmpl = n;  // g.nodes grows below
        const auto& readers = cons[static_cast<size_t>(out)];
        if (readers.empty() || is_graph_output(g, out)) break;
        bool all_slices = true;
        for (int r : readers) all_slices &= const_slice(g, g.nodes[static_cast<size_t>(r)]) &&
                                           g.nodes[static_cast<size_t>(r)].input(0) == out;
        int r = only_reader(out);
        Node* rn = r >= 0 ? &g.nodes[static_cast<size_t>(r)] : nullptr;
        bool dense = rn && const_matmul(g, *rn) && rn->input(0) == out;
        bool with_const = rn && (rn->op == "Add" || rn->op == "Mul" || rn->op == "Sub" || rn->op == "Div") &&
                          rn->inputs.size() == 2 && (rn->input(0) == out) != (rn->input(1) == out) &&
                          g.is_constant(rn->input(rn->input(0) == out ? 1 : 0)) &&
                          g.constant(rn->input(rn->input(0) == out ? 1 : 0)).is_float() &&
                          g.constant(rn->input(rn->input(0) == out ? 1 : 0)).rank() <= 3;
        if (!dense && !with_const && !all_slices) break;
        std::vector<int> sinks = all_slices && !dense && !with_const ? readers : std::vector<int>{r};
        bool shaped = true;
        for (int s : sinks) {
          int so = g.nodes[static_cast<size_t>(s)].outputs.empty() ? -1 : g.nodes[static_cast<size_t>(s)].outputs[0];
          shaped &= so >= 0 && g.value(so).has_shape && g.value(so).shape.size() == 3 &&
                    g.nodes[static_cast<size_t>(s)].outputs.size() == 1;
        }
        if (!shaped) break;
        for (int s : sinks) {
          Node& sn = g.nodes[static_cast<size_t>(s)];
          for (size_t i = 0; i < sn.inputs.size(); ++i) {
            int in = sn.inputs[i];
            if (in == out) {
              sn.inputs[i] = x;
            } else if (i > 0 && sn.op == "Slice" && i == 3) {
              // axes follow the transpose
              auto axes = g.constant(in).to_ints();
              for (int64_t& a : axes) a = perm[static_cast<size_t>(interp::normalize_axis(a, 3, "Slice axes"))];
              sn.inputs[i] = add_constant(g, sn.name + "_axes", Tensor::ints({static_cast<int64_t>(axes.size())}, axes));
            } else if (in >= 0 && with_const && g.constant(in).numel() > 1) {
              sn.inputs[i] = add_constant(g, g.value(in).name + "_untransposed", untranspose_constant(g.constant(in), perm));
            }
          }
          if (sn.op == "Slice" && sn.input(3) < 0) {
            // default axes 0, 1, ... of the starts: given explicitly, moved
            std::vector<int64_t> axes;
            for (int64_t a = 0; a < g.constant(sn.input(1)).numel(); ++a) axes.push_back(perm[static_cast<size_t>(a)]);
            if (sn.inputs.size() < 4) sn.inputs.resize(4, -1);
            sn.inputs[3] = add_constant(g, sn.name + "_axes", Tensor::ints({static_cast<int64_t>(axes.size())}, axes));
          }
          int so = sn.outputs[0];
          interp::Shape inv(3);
          for (size_t d = 0; d < 3; ++d) inv[static_cast<size_t>(perm[d])] = g.value(so).shape[d];
          int mid = g.add_value(like_value(g, so, inv, "_untransposed"));
          sn.outputs[0] = mid;
          Node t = tmpl;
          t.name = g.unique_name(tmpl.name + "_" + sn.name);
          t.inputs = {mid};
          t.outputs = {so};
          g.nodes.push_back(std::move(t));
        }
        g.nodes[k].outputs = {-1};
        again = true;
      }

      } while (false);
      do {
      // (2) A 2-D dense between reshapes that merge and split the leading
      // axes ([a, b, ..] -> [a*b, D] -> Gemm/MatMul -> [a, b, K]: a
      // sequence-first out-projection) is the dense over the last axis of
      // [a, b, D]; a Transpose keeping the last axis after it moves before it.
      if (!again && (n.op == "Reshape" || n.op == "Flatten") && g.value(out).shape.size() == 2) {
        int d = only_reader(out);
        if (d < 0) break;
        Node& dn = g.nodes[static_cast<size_t>(d)];
        bool gemm = dn.op == "Gemm" && dn.input(0) == out && g.is_constant(dn.input(1)) &&
                    (dn.input(2) < 0 || g.is_constant(dn.input(2))) && dn.get_int("transA", 0) == 0 &&
                    dn.get_float("alpha", 1.0f) == 1.0f && dn.get_float("beta", 1.0f) == 1.0f;
        if (!gemm && !(const_matmul(g, dn) && dn.input(0) == out)) break;
        int r2 = only_reader(dn.outputs[0]);
        if (r2 < 0 || g.nodes[static_cast<size_t>(r2)].op != "Reshape") break;
        const Node& rs = g.nodes[static_cast<size_t>(r2)];
        const interp::Shape ys = g.value(rs.outputs[0]).shape;
        const interp::Shape ms = g.value(out).shape;
        if (!g.value(rs.outputs[0]).has_shape || ys.size() != 3 || ys[0] * ys[1] != ms[0]) break;
        const Tensor& B = g.constant(dn.input(1));
        bool tb = gemm && dn.get_int("transB", 0) != 0;
        int64_t D = ms[1], K = ys[2];
        if (B.rank() != 2 || (tb ? B.shape[1] : B.shape[0]) != D || (tb ? B.shape[0] : B.shape[1]) != K) break;
        Tensor w = Tensor::floats({D, K});
        for (int64_t i = 0; i < D; ++i)
          for (int64_t j = 0; j < K; ++j) w.f[static_cast<size_t>(i * K + j)] = tb ? B.f[static_cast<size_t>(j * D + i)] : B.f[static_cast<size_t>(i * K + j)];
        Tensor bias = Tensor::floats({K});
        if (gemm && dn.input(2) >= 0) {
          const Tensor& C = g.constant(dn.input(2));
          if (C.numel() != 1 && C.numel() != K) break;
          for (int64_t j = 0; j < K; ++j) bias.f[static_cast<size_t>(j)] = C.f[static_cast<size_t>(C.numel() == 1 ? 0 : j)];
        }
        // x -> [a, b, D]
        int shp = add_constant(g, n.name + "_shape", Tensor::ints({3}, {ys[0], ys[1], D}));
        int x3 = g.add_value(like_value(g, out, {ys[0], ys[1], D}, "_3d"));
        Node& n2 = g.nodes[k];
        n2.op = "Reshape";
        n2.attrs.clear();
        n2.inputs = {n2.input(0), shp};
        n2.outputs = {x3};
        Node& dn2 = g.nodes[static_cast<size_t>(d)];
        int mm = g.add_value(like_value(g, dn2.outputs[0], {ys[0], ys[1], K}, "_3d"));
        dn2.op = "MatMul";
        dn2.attrs.clear();
        dn2.inputs = {x3, add_constant(g, dn2.name + "_weight", std::move(w))};
        dn2.outputs = {mm};
        Node& rs2 = g.nodes[static_cast<size_t>(r2)];
        rs2.op = "Add";
        rs2.attrs.clear();
        rs2.inputs = {mm, add_constant(g, dn2.name + "_bias", std::move(bias))};
        again = true;
      }

      } while (false);
      do {
      // (3) A Transpose keeping the last axis after a dense (MatMul by a
      // constant, then optionally an Add of a constant) whose input data
      // movement made moves before the dense, joining that data movement.
      if (!again && n.op == "Transpose" && g.value(x).shape.size() == 3 && keeps_last(perm_of(g, n))) {
        const std::vector<int64_t> perm = perm_of(g, n);
        int p = g.value(x).producer;
        if (p < 0 || only_reader(x) != static_cast<int>(k)) break;
        int add = -1, mmn = p;
        if (g.nodes[static_cast<size_t>(p)].op == "Add") {
          const Node& an = g.nodes[static_cast<size_t>(p)];
          int c = an.input(1), v = an.input(0);
          if (g.is_constant(v)) std::swap(c, v);
          if (!g.is_constant(c) || g.constant(c).rank() < 1 || g.constant(c).numel() != g.constant(c).shape.back() ||
              g.value(v).producer < 0 ||
              only_reader(v) != p)
            break;
          add = p;
          mmn = g.value(v).producer;
        }
        const Node& mn = g.nodes[static_cast<size_t>(mmn)];
        if (!const_matmul(g, mn) || !data_movement(g, mn.input(0)) || !g.value(mn.input(0)).has_shape ||
            g.value(mn.input(0)).shape.size() != 3 || !g.value(mn.outputs[0]).has_shape ||
            (add >= 0 && !g.value(g.nodes[static_cast<size_t>(add)].outputs[0]).has_shape))
          break;
        // y = T(x0) -> MatMul -> [Add] -> result value of n
        int x0 = mn.input(0);
        int tx = g.add_value(like_value(g, x0, permuted(g.value(x0).shape, perm), "_transposed"));
        Node t = n;
        t.name = g.unique_name(n.name + "_before");
        t.inputs = {x0};
        t.outputs = {tx};
        Node& mn2 = g.nodes[static_cast<size_t>(mmn)];
        mn2.inputs[0] = tx;
        int mo = mn2.outputs[0];
        g.value(mo).shape = permuted(g.value(mo).shape, perm);
        if (add >= 0) {
          Node& an = g.nodes[static_cast<size_t>(add)];
          int ao = an.outputs[0];
          replace_uses(g, out, ao);
          g.value(ao).shape = permuted(g.value(ao).shape, perm);
        } else {
          replace_uses(g, out, mo);
        }
        g.nodes[k].outputs = {-1};
        g.nodes.push_back(std::move(t));
        again = true;
      }

      } while (false);
      do {
      // (4) A Mul or Div by a scalar constant after data movement (a
      // Transpose, a Reshape) moves before it, towards the dense layer that
      // can take it in its weights (attention's 1/sqrt(d) on q).
      if (!again && (n.op == "Mul" || n.op == "Div") && n.inputs.size() == 2 && g.is_constant(n.input(1)) &&
          g.constant(n.input(1)).numel() == 1 && g.constant(n.input(1)).is_float()) {
        int p = g.value(x).producer;
        if (p < 0 || only_reader(x) != static_cast<int>(k)) break;
        Node& pn = g.nodes[static_cast<size_t>(p)];
        // Not before a Slice: the sliced tensor has other readers (q, k and v
        // slice one projection); after it, the slice's own dense takes it.
        bool movable = pn.op == "Transpose" || pn.op == "Reshape";
        if (!movable || pn.input(0) < 0 || !g.value(pn.input(0)).has_shape || g.is_constant(pn.input(0))) break;
        int src = pn.input(0);
        int scaled = g.add_value(like_value(g, src, g.value(src).shape, "_scaled"));
        Node m = n;
        m.name = g.unique_name(n.name + "_moved");
        m.inputs = {src, n.input(1)};
        m.outputs = {scaled};
        pn.inputs[0] = scaled;
        replace_uses(g, out, x);
        g.nodes[k].outputs = {-1};
        g.nodes.push_back(std::move(m));
        again = true;
      }
      } while (false);
    }
    if (again) {
      ++changed;
      std::vector<Node> kept;
      for (auto& nd : g.nodes)
        if (!(nd.outputs.size() == 1 && nd.outputs[0] < 0)) kept.push_back(std::move(nd));
      g.nodes = std::move(kept);
      g.relink();
      g.topo_sort();
    }
  }
  return changed;
}

void simplify(Graph& g) {
  fold_constants(g);
  remove_noops(g);
  g.prune();
  // Before simplify_layout turns a transpose of a size-1 batch into a
  // reshape, with every shape known (slices of computed bounds).
  if (complete_shapes(g))
    while (fold_constants(g) > 0) {
      g.prune();
      complete_shapes(g);
    }
  if (batch_first_dense(g) > 0) g.prune();
  simplify_layout(g);
  g.prune();  // transposes left dead by cancellation must not count as readers
  fold_pads(g);
  pads_to_conv(g);
  fold_batch_norm(g);
  g.prune();
  complete_shapes(g);
  // Shapes may have become known: fold what reads them (a Resize's sizes
  // taken from a Shape), drop reshapes that turned out to be no-ops.
  while (fold_constants(g) > 0) {
    g.prune();
    complete_shapes(g);
  }
  // Channels-last regions between a transpose pair (ConvNeXt's permute,
  // LayerNorm, Linear, GELU, Linear, permute back) in the layout before them.
  if (batch_first_dense(g) > 0) g.prune();
  if (sink_transposes(g) > 0) g.prune();
  fold_conv_affine(g);
  simplify_layout(g);
  remove_noops(g);
  if (squeeze_gathers(g) > 0) {
    g.prune();
    simplify_layout(g);
    g.prune();
  }
  remove_noops(g);
  if (merge_sample_branches(g) > 0) {
    g.prune();
    simplify_layout(g);
    g.prune();
  }
  remove_noops(g);
  g.prune();
}

}  // namespace cct::frontend
