#include "gemini/network.hpp"
#include "mapping/mapping_fir.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "fir/host.hpp"
#include "fir/resize.hpp"
#include "interp/int8_ops.hpp"
#include "support/error.hpp"
#include "timing/timing.hpp"

namespace cct::gemini {
namespace {

// The box the chip holds a tensor in (token tensors: tokens are pixels).
Dims dims4(const fir::Shape& s) {
  auto b = fir::chip_box(s);
  return Dims{b[0], b[1], b[2], b[3]};
}

int elem_bytes(const std::vector<std::string>& dtypes, size_t i) {
  int b = i < dtypes.size() ? fir::dtype_bytes(dtypes[i]) : 1;
  return b > 0 ? b : 1;
}

LayerKind kind_of(fir::Op op) {
  switch (op) {
    case fir::Op::Conv2d: return LayerKind::Conv;
    case fir::Op::Dense:
    case fir::Op::MatMul: return LayerKind::Dense;
    case fir::Op::MaxPool2d:
    case fir::Op::AvgPool2d: return LayerKind::Pool;
    default: return LayerKind::Vector;
  }
}

class Builder {
 public:
  Builder(const fir::Graph& g, const arch::Architecture& a, const std::string& file) : g_(g), a_(a), file_(file) {}

  Network run() {
    Network net;
    for (const fir::Layer* l : g_.in_index_order()) {
      if (l->device != fir::Device::Npu) continue;
      index_[l->name] = int(net.layers.size());
      net.layers.push_back(make_layer(*l));
    }
    plan_ = fir::host_plan(g_, file_);
    for (const auto& st : plan_.steps) {
      HostStepModel h;
      h.ops = st.ops;
      h.graph_io_bytes = st.graph_io_bytes;
      for (const auto& name : st.inputs)
        if (auto it = index_.find(name); it != index_.end()) h.inputs.push_back(it->second);
      net.host_steps.push_back(std::move(h));
    }
    for (size_t i = 0; i < net.layers.size(); ++i) connect(net, int(i));
    for (const auto& h : net.host_steps)
      for (int li : h.inputs) net.layers[size_t(li)].to_dram = true;  // the host reads it from DRAM
    // A network all on the host maps no layer; its batch is the mapping
    // format's (mapping::network_of): the first layer's.
    net.batch = net.layers.empty() ? mapping::network_of(g_).batch : net.layers.front().out[0];
    for (const auto& l : net.layers)
      if (l.out[0] != net.batch)
        throw_input_error(at_pointer(file_, "/" + l.name + "/output_shape",
                                     "batch " + std::to_string(l.out[0]) + " differs from the network's " +
                                         std::to_string(net.batch) +
                                         ": every accelerator layer keeps the network's batch (a layer before it "
                                         "changes the batch: a concatenation, slice or reshape along axis 0)"));
    return net;
  }

 private:
  [[noreturn]] void fail(const std::string& layer, const std::string& what) const {
    throw_input_error(at_pointer(file_, "/" + layer, what));
  }

  Layer make_layer(const fir::Layer& l) const {
    Layer L;
    L.name = l.name;
    L.fir = &l;
    L.kind = kind_of(l.op);
    L.move = fir::is_move_op(l.op);
    if (l.output_shape.empty()) fail(l.name, "layer has no output shape");
    L.out = dims4(l.output_shape[0]);
    for (int64_t d : L.out)
      if (d <= 0) fail(l.name, "output shape has a non-positive dimension");
    L.out_bytes = elem_bytes(l.output_dtype, 0);
    if (L.kind == LayerKind::Pool) {
      auto win = l.window();
      auto st = l.strides();
      auto dil = l.dilations();
      L.kernel_h = win[0], L.kernel_w = win[1];
      L.stride_h = st[0], L.stride_w = st[1];
      L.dilation_h = dil[0], L.dilation_w = dil[1];
      L.pads = l.pads();
      if (L.kernel_h <= 0 || L.kernel_w <= 0 || L.stride_h <= 0 || L.stride_w <= 0)
        fail(l.name, "kernel and stride must be positive");
    }
    if (L.pe()) {
      // The convolution the array runs (a dense layer is one too:
      // fir::pe_conv; over a token tensor, a 1 x 1 one over its tokens).
      // A matmul of two activations is none (onnx2fir puts it on the host;
      // irgen refuses it on the accelerator); the model prices one as a
      // 1 x 1 convolution of its weight shape, for design sweeps of FIRs
      // written by hand.
      auto pc = fir::pe_conv(l);
      auto ws = fir::weight_shape(l);
      if (!pc && (!ws || ws->size() < 2)) fail(l.name, "a PE layer without a [K, C, kh, kw] weight shape");
      Dims wd = pc ? pc->weight : dims4(*ws);
      if (pc) {
        L.kernel_h = pc->kernel[0], L.kernel_w = pc->kernel[1];
        L.stride_h = pc->stride[0], L.stride_w = pc->stride[1];
        L.dilation_h = pc->dilation[0], L.dilation_w = pc->dilation[1];
        L.pads = pc->pads;
        L.groups = std::max<int64_t>(1, pc->groups);
        if (L.kernel_h <= 0 || L.kernel_w <= 0 || L.stride_h <= 0 || L.stride_w <= 0)
          fail(l.name, "kernel and stride must be positive");
      }
      L.weight_c = wd[1];
      L.weight_taps = wd[2] * wd[3];
      L.weight_elem_bytes = elem_bytes(l.input_dtype, 1);
      L.weight_bytes_per_k = timing::weight_bytes(a_, 1, wd[1], wd[2], wd[3], L.weight_elem_bytes);
      L.macs = fir::macs(l);
    }
    if (L.kind == LayerKind::Pool) L.pool_window = L.kernel_h * L.kernel_w;
    if (l.op == fir::Op::Resize) {
      // As irgen prices it: per output pixel, 4 taps blended (linear) or 1.
      std::string why;
      auto g = fir::resize_geometry(l, &why);
      if (!g) fail(l.name, why);
      L.pool_window = g->mode == 0 ? 4 : 1;
    }
    if (L.kind == LayerKind::Vector) {
      // A second activation input selected by the layer's tensor look-up table.
      L.two_input_vp = l.lut_code(1) != 0;
    }
    return L;
  }

  // The accelerator layer (or graph input: -1) behind a name, through
  // pass-through reshapes; a host step's result is -1 too, loaded from DRAM
  // once the step is done (*host_step).
  int resolve(const std::string& name, bool* through_host, int* host_step) const {
    const std::string src = fir::resolve_through(g_, plan_, name);
    if (src != name) *through_host = true;
    if (fir::is_graph_input_name(src)) return -1;
    const fir::Layer* l = g_.find(src);
    if (!l) return -2;
    if (l->device == fir::Device::Npu) {
      auto it = index_.find(src);
      return it == index_.end() ? -2 : it->second;
    }
    *host_step = plan_.step(src);
    return *host_step >= 0 ? -1 : -2;
  }

  void connect(Network& net, int li) {
    Layer& L = net.layers[size_t(li)];
    const fir::Layer& l = *L.fir;
    for (size_t i = 0; i < l.previous_layer.size(); ++i) {
      const std::string& p = l.previous_layer[i];
      if (fir::is_constant_name(p)) continue;
      LayerInput in;
      bool through_host = false;
      in.producer = resolve(p, &through_host, &in.host_step);
      if (in.producer == -2) fail(l.name, "input \"" + p + "\" is neither a layer nor a graph input");
      if (in.producer >= li) fail(l.name, "input \"" + p + "\" comes later in layer_index order");
      if (i >= l.input_shape.size()) fail(l.name, "no input_shape for input " + std::to_string(i));
      in.dims = dims4(l.input_shape[i]);
      in.bytes = elem_bytes(l.input_dtype, i);
      in.fir_index = i;
      if (L.move) in.requant = fir::move_requantizes(l, i);
      if (in.producer >= 0 && net.layers[size_t(in.producer)].out != in.dims) in.reshaped = true;
      L.inputs.push_back(in);
      if (in.producer >= 0) {
        auto& cons = net.layers[size_t(in.producer)].consumers;
        if (std::find(cons.begin(), cons.end(), li) == cons.end()) cons.push_back(li);
      }
      if (L.pe()) break;  // the next input is the weights
    }
    bool npu_consumer = false;
    for (const fir::Layer* c : g_.consumers(l)) npu_consumer = npu_consumer || c->device == fir::Device::Npu;
    bool graph_output = false;
    for (const auto& nx : l.next_layer) graph_output = graph_output || fir::is_graph_output_name(nx);
    L.to_dram = graph_output || !npu_consumer;
  }

  const fir::Graph& g_;
  const arch::Architecture& a_;
  const std::string& file_;
  std::map<std::string, int, std::less<>> index_;
  fir::HostPlan plan_;
};

}  // namespace

int64_t Network::total_macs() const {
  int64_t s = 0;
  for (const auto& l : layers) s += l.macs;
  return s;
}

Network build_network(const fir::Graph& g, const arch::Architecture& a, const std::string& file) {
  Network net = Builder(g, a, file).run();
  for (auto& l : net.layers) std::sort(l.consumers.begin(), l.consumers.end());
  return net;
}

mapping::Box input_region(const Network& net, const Layer& L, size_t input, const mapping::Box& out) {
  const LayerInput& in = L.inputs[input];
  const Dims& d = in.dims;
  mapping::Box r;
  r.lower[0] = out.lower[0], r.upper[0] = out.upper[0];
  auto spatial = [&](int axis, int64_t stride, int64_t kernel, int64_t dil, int64_t pad_before) {
    int64_t first = out.lower[size_t(axis)] * stride - pad_before;
    int64_t last = out.upper[size_t(axis)] * stride - pad_before + (kernel - 1) * dil;
    r.lower[size_t(axis)] = std::clamp<int64_t>(first, 0, d[size_t(axis)] - 1);
    r.upper[size_t(axis)] = std::clamp<int64_t>(last, 0, d[size_t(axis)] - 1);
  };
  if (L.move && L.fir) {
    // irgen's rule (input_use): the hull of the pieces this input gives.
    auto pieces = fir::move_pieces(*L.fir, out.lower, out.upper);
    if (pieces) {
      bool any = false;
      for (const auto& m : *pieces) {
        if (m.input != in.fir_index) continue;
        for (size_t a = 0; a < 4; ++a) {
          r.lower[a] = any ? std::min(r.lower[a], m.in_lo[a]) : m.in_lo[a];
          r.upper[a] = any ? std::max(r.upper[a], m.in_hi[a]) : m.in_hi[a];
        }
        any = true;
      }
      if (!any) r.lower = {0, 0, 0, 0}, r.upper = {-1, -1, -1, -1};
    } else {
      for (size_t i = 1; i < 4; ++i) r.lower[i] = 0, r.upper[i] = d[i] - 1;
    }
  } else if (L.kind == LayerKind::Conv || L.kind == LayerKind::Pool) {
    spatial(2, L.stride_h, L.kernel_h, L.dilation_h, L.pads[0]);
    spatial(3, L.stride_w, L.kernel_w, L.dilation_w, L.pads[2]);
    if (L.kind == LayerKind::Pool) {
      r.lower[1] = std::min(out.lower[1], d[1] - 1), r.upper[1] = std::min(out.upper[1], d[1] - 1);
    } else {
      int64_t cg = std::max<int64_t>(1, d[1] / L.groups);
      int64_t kg = std::max<int64_t>(1, L.out[1] / L.groups);
      r.lower[1] = out.lower[1] / kg * cg;
      r.upper[1] = std::min<int64_t>(d[1] - 1, (out.upper[1] / kg + 1) * cg - 1);
    }
  } else if (L.fir && L.fir->op == fir::Op::Resize) {
    // irgen's rule: the rows and columns the outputs' taps reach (int8::resize_span).
    auto g = fir::resize_geometry(*L.fir);
    for (size_t a = 0; g && a < 2; ++a) {
      const auto mode = static_cast<int8::ResizeMode>(g->mode);
      float step = int8::param(g->axis[a].step), off = int8::param(g->axis[a].offset);
      std::tie(r.lower[2 + a], r.upper[2 + a]) = int8::resize_span(mode, out.lower[2 + a], out.upper[2 + a], step, off, g->axis[a].in);
    }
    r.lower[1] = std::min(out.lower[1], d[1] - 1), r.upper[1] = std::min(out.upper[1], d[1] - 1);
  } else if (L.kind == LayerKind::Dense) {
    for (int i = 1; i < 4; ++i) r.lower[size_t(i)] = 0, r.upper[size_t(i)] = d[size_t(i)] - 1;
    // As irgen: a dense layer's window (fir::pe_conv) is its whole flattened
    // sample, or 1 x 1 over the tokens of a token tensor.
    if (L.fir && L.fir->op == fir::Op::Dense && L.kernel_h > 0 && L.kernel_w > 0) {
      spatial(2, 1, L.kernel_h, 1, 0);
      spatial(3, 1, L.kernel_w, 1, 0);
    }
  } else {
    for (size_t i = 1; i < 4; ++i) {
      r.lower[i] = d[i] == 1 ? 0 : std::min(out.lower[i], d[i] - 1);
      r.upper[i] = d[i] == 1 ? 0 : std::min(out.upper[i], d[i] - 1);
    }
  }
  if (in.reshaped && in.producer >= 0 && !L.move) {  // (irgen's input_use: not for moves)
    const Dims& pd = net.layers[size_t(in.producer)].out;
    r.lower = {out.lower[0], 0, 0, 0};
    r.upper = {out.upper[0], pd[1] - 1, pd[2] - 1, pd[3] - 1};
  }
  return r;
}

}  // namespace cct::gemini
