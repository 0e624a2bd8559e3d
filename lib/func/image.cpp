#include "func/image.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

#include "fir/host.hpp"
#include "footprint/layout.hpp"
#include "interp/int8_ops.hpp"
#include "support/error.hpp"

namespace cct::func {

using footprint::pack_weights;
using footprint::weight_record;
using footprint::WeightRecord;

namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

[[noreturn]] void layer_error(const fir::Layer& l, const std::string& what) {
  throw Error(kExitInvalidInput, "layer '" + l.name + "' (" + l.operation + "): " + what);
}

NpyArray load_role(const fir::Layer& l, const std::string& role, const NpyLoader& load) {
  const std::string* f = l.file(role);
  if (!f) layer_error(l, "file_list has no '" + role + "'");
  try {
    return load(*f);
  } catch (const Error& e) {
    throw Error(e.code(), "layer '" + l.name + "': cannot load its '" + role + "': " + e.what());
  }
}

}  // namespace

NpyLoader directory_npy_loader(const std::string& dir) {
  return [dir](const std::string& file) {
    std::filesystem::path p = std::filesystem::path(dir) / file;
    if (!std::filesystem::exists(p)) throw Error(kExitIo, p.string() + ": no such file");
    return read_npy(p.string());
  };
}

std::vector<GraphInput> graph_inputs(const fir::Graph& g) {
  std::map<int, GraphInput> found;
  for (const fir::Layer* l : g.in_index_order())
    for (size_t k = 0; k < l->previous_layer.size(); ++k) {
      const std::string& n = l->previous_layer[k];
      if (!fir::is_graph_input_name(n)) continue;
      int index = std::stoi(n.substr(5));
      if (found.count(index)) continue;
      GraphInput gi;
      gi.name = n;
      if (k < l->input_shape.size()) gi.shape = l->input_shape[k];
      gi.dtype = k < l->input_dtype.size() ? l->input_dtype[k] : "float16";
      found.emplace(index, std::move(gi));
    }
  std::vector<GraphInput> out;
  for (auto& [k, v] : found) out.push_back(std::move(v));
  return out;
}

void check_inputs(const fir::Graph& g, const std::vector<NpyArray>& inputs, const std::vector<std::string>& names) {
  auto gi = graph_inputs(g);
  if (inputs.size() != gi.size())
    throw_input_error("the Frontend IR reads " + std::to_string(gi.size()) + " input(s), " + std::to_string(inputs.size()) +
                      " given");
  for (size_t k = 0; k < gi.size(); ++k) {
    const std::string& who = k < names.size() ? names[k] : gi[k].name;
    if (inputs[k].shape != gi[k].shape)
      throw_input_error(who + ": shape " + shape_text(inputs[k].shape) + ", but the Frontend IR's " + gi[k].name +
                        " is " + shape_text(gi[k].shape));
    bool int8_in = gi[k].dtype == "int8";
    bool is_float = inputs[k].type == NpyType::F16 || inputs[k].type == NpyType::F32 || inputs[k].type == NpyType::F64;
    if (int8_in ? inputs[k].type != NpyType::I8 : !is_float)
      throw_input_error(who + ": " + gi[k].name + " is " + gi[k].dtype + "; give " +
                        (int8_in ? "an int8 array" : "a float16, float32 or float64 array"));
  }
}

DramImage build_dram_image(const assembler::DramLayout& layout, const fir::Graph& g, const arch::Architecture& a,
                           const NpyLoader& load, const std::vector<NpyArray>& inputs) {
  DramImage img;
  img.weights.assign(size_t(layout.weight_bytes), 0);
  img.activations.assign(size_t(layout.activation_bytes), 0);

  // Weights: the records of each slice's channels.
  struct Packed {
    std::vector<int8_t> k;
    std::vector<float> bias, scale;
    fir::Shape shape;
  };
  std::map<std::string, Packed> cache;
  std::vector<uint8_t> records;
  for (const auto& s : layout.weights) {
    const fir::Layer* l = g.find(s.layer);
    if (!l) throw_input_error("weight transfer " + std::to_string(s.transfer_id) + ": layer '" + s.layer + "' is not in the Frontend IR");
    auto it = cache.find(s.layer);
    if (it == cache.end()) {
      Packed p;
      // The weights as the PE array holds them (a dense layer's [K, C] is
      // [K, C, 1, 1]); the .npy holds them in the same order, as input_shape[1].
      std::string why;
      auto pc = fir::pe_conv(*l, &why);
      if (!pc) layer_error(*l, "does not run on the PE array: " + why);
      const fir::Shape& ws = l->input_shape[1];
      if (!l->quant_info || l->quant_info->inputs.empty()) layer_error(*l, "quant_info has no input_scale1");
      NpyArray k = load_role(*l, "k", load), b = load_role(*l, "b", load), ks = load_role(*l, "k_scale", load);
      if (k.type != NpyType::I8) layer_error(*l, "'k' must be int8");
      if (k.shape != ws) layer_error(*l, "'k' has shape " + shape_text(k.shape) + ", input_shape[1] is " + shape_text(ws));
      const int64_t K = pc->weight[0];
      if (int64_t(b.count()) != K || int64_t(ks.count()) != K)
        layer_error(*l, "'b' and 'k_scale' must hold one value per output channel (" + std::to_string(K) + ")");
      p.shape = fir::Shape(pc->weight.begin(), pc->weight.end());
      p.k.resize(k.count());
      std::memcpy(p.k.data(), k.bytes.data(), k.count());
      p.bias = b.to_float();
      auto sc = ks.to_double();
      p.scale.resize(size_t(K));
      for (int64_t c = 0; c < K; ++c) p.scale[size_t(c)] = int8::pe_channel_scale(l->quant_info->inputs[0].scale, sc[size_t(c)]);
      it = cache.emplace(s.layer, std::move(p)).first;
    }
    const Packed& p = it->second;
    if (s.k_lo < 0 || s.k_hi < s.k_lo || s.k_hi >= p.shape[0])
      layer_error(*l, "weight transfer " + std::to_string(s.transfer_id) + " holds channels " + std::to_string(s.k_lo) +
                          ".." + std::to_string(s.k_hi) + " of " + std::to_string(p.shape[0]));
    WeightRecord r = weight_record(a, p.shape[1], p.shape[2], p.shape[3], 1);
    pack_weights(r, p.k.data(), p.bias.data(), p.scale.data(), s.k_lo, s.k_hi, records);
    if (int64_t(records.size()) != s.size)
      layer_error(*l, "weight transfer " + std::to_string(s.transfer_id) + " is " + std::to_string(s.size) +
                          " bytes in the Scheduler IR, the chip layout of channels " + std::to_string(s.k_lo) + ".." +
                          std::to_string(s.k_hi) + " takes " + std::to_string(records.size()));
    std::memcpy(img.weights.data() + s.address, records.data(), records.size());
  }

  // Network inputs: each region of its graph input, NHWC without padding.
  auto gi = graph_inputs(g);
  const fir::HostPlan plan = fir::host_plan(g, "Frontend IR");
  for (const auto& r : layout.inputs) {
    if (r.host_step >= 0) continue;  // a host result: the host writes it during the run
    const fir::Layer* l = g.find(r.layer);
    if (!l) throw_input_error("input transfer " + std::to_string(r.transfer_id) + " has no reading layer in the Frontend IR");
    if (fir::is_constant_name(r.source)) {
      // A constant operand (PReLU's slope): the reading layer's file of that input, as FP16.
      size_t k = 0;
      while (k < l->previous_layer.size() && l->previous_layer[k] != r.source) ++k;
      if (k == l->previous_layer.size() || k >= l->input_shape.size())
        layer_error(*l, "input transfer " + std::to_string(r.transfer_id) + " loads '" + r.source + "', not one of its inputs");
      NpyArray c = load_role(*l, "input_activation" + std::to_string(k + 1), load);
      std::vector<float> f = c.to_float();
      // Broadcast against the output as numpy does, in the output's box.
      auto box = fir::chip_box_broadcast(l->input_shape[k], l->output_shape.empty() ? 4 : l->output_shape[0].size());
      fir::Shape S(box.begin(), box.end());
      if (l->input_shape[k].size() <= 3 && !l->output_shape.empty() && l->output_shape[0].size() == 3) {
        fir::Shape full = l->input_shape[k];
        while (full.size() < 3) full.insert(full.begin(), 1);
        std::vector<float> g(f.size());
        for (size_t e = 0; e < f.size(); ++e) g[size_t(fir::chip_index(full, int64_t(e)))] = f[e];
        f = std::move(g);
      }
      if (int64_t(f.size()) != S[0] * S[1] * S[2] * S[3] || r.element_bytes != 2)
        layer_error(*l, "constant '" + r.source + "' does not hold " + shape_text(l->input_shape[k]) + " values, or is not loaded as FP16");
      auto d = r.dims();
      for (int q = 0; q < 4; ++q)
        if (r.lower[q] < 0 || r.upper[q] >= S[size_t(q)])
          throw_input_error("input transfer " + std::to_string(r.transfer_id) + " reads outside '" + r.source + "' " + shape_text(S));
      uint8_t* out = img.activations.data() + r.address;
      for (int64_t n = 0; n < d[0]; ++n)
        for (int64_t h = 0; h < d[2]; ++h)
          for (int64_t w = 0; w < d[3]; ++w)
            for (int64_t ch = 0; ch < d[1]; ++ch) {
              int64_t src = ((r.lower[0] + n) * S[1] + r.lower[1] + ch) * S[2] * S[3] + (r.lower[2] + h) * S[3] + r.lower[3] + w;
              uint16_t hb = float_to_half(f[size_t(src)]);
              std::memcpy(out + (((n * d[2] + h) * d[3] + w) * d[1] + ch) * 2, &hb, 2);
            }
      continue;
    }
    // The graph input, directly or through pass-through reshapes (which
    // keep the chip's byte order): the layer reads it in the box of its own
    // input's shape.
    int index = -1;
    fir::Shape seen;
    for (size_t k = 0; k < l->previous_layer.size(); ++k) {
      const std::string src = fir::resolve_through(g, plan, l->previous_layer[k]);
      if (fir::is_graph_input_name(src)) {
        index = std::stoi(src.substr(5)) - 1;
        if (k < l->input_shape.size()) seen = l->input_shape[k];
        break;
      }
    }
    if (index < 0 || size_t(index) >= inputs.size())
      layer_error(*l, "reads DRAM input transfer " + std::to_string(r.transfer_id) + " but no graph input");
    const NpyArray& x = inputs[size_t(index)];
    // Fewer dimensions ([N, C] before a dense layer) are viewed as [N, C, 1, 1], as every stage holds them.
    if (x.shape.empty() || x.shape.size() > 4)
      throw_input_error(gi[size_t(index)].name + ": expected a 1- to 4-D [N, C, H, W] array");
    if (seen.empty() || fir::element_count(seen) != fir::element_count(x.shape)) seen = x.shape;
    auto d = r.dims();
    // In the box the chip holds it in (a token tensor [N, T, D]: [N, D, T, 1]).
    auto box = fir::chip_box(seen);
    fir::Shape S(box.begin(), box.end());
    for (int k = 0; k < 4; ++k)
      if (r.lower[k] < 0 || r.upper[k] >= S[size_t(k)])
        throw_input_error("input transfer " + std::to_string(r.transfer_id) + " reads outside " + gi[size_t(index)].name +
                          " " + shape_text(S));
    std::vector<float> f;
    std::vector<int8_t> qv(x.bytes.size());
    if (x.type != NpyType::I8) f = x.to_float();
    else std::memcpy(qv.data(), x.bytes.data(), x.bytes.size());
    if (seen.size() == 3) {
      // Row-major [N, T, D] to the box's [N, D, T, 1] order.
      std::vector<float> g(f.size());
      std::vector<int8_t> gq(qv.size());
      for (size_t e = 0; e < f.size(); ++e) g[size_t(fir::chip_index(seen, int64_t(e)))] = f[e];
      for (size_t e = 0; e < qv.size() && x.type == NpyType::I8; ++e) gq[size_t(fir::chip_index(seen, int64_t(e)))] = qv[e];
      f = std::move(g);
      qv = std::move(gq);
    }
    const int8_t* q = qv.data();
    uint8_t* out = img.activations.data() + r.address;
    for (int64_t n = 0; n < d[0]; ++n)
      for (int64_t h = 0; h < d[2]; ++h)
        for (int64_t w = 0; w < d[3]; ++w)
          for (int64_t c = 0; c < d[1]; ++c) {
            int64_t src = ((r.lower[0] + n) * S[1] + r.lower[1] + c) * S[2] * S[3] + (r.lower[2] + h) * S[3] + r.lower[3] + w;
            uint8_t* o = out + (((n * d[2] + h) * d[3] + w) * d[1] + c) * r.element_bytes;
            if (r.element_bytes == 1) {
              if (x.type != NpyType::I8) throw_input_error(gi[size_t(index)].name + ": the program loads it as INT8; give an int8 array");
              *o = uint8_t(q[src]);
            } else {
              uint16_t hb = float_to_half(int8::to_float16(f.empty() ? float(q[src]) : f[size_t(src)]));
              std::memcpy(o, &hb, 2);
            }
          }
  }
  return img;
}

}  // namespace cct::func
