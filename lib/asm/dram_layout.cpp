// The DRAM layout of an assembled program (see dram_layout.hpp).
#include "asm/dram_layout.hpp"

#include <algorithm>
#include <map>

#include "support/error.hpp"

namespace cct::assembler {
namespace {

[[noreturn]] void fail(const Options& o, const std::string& pointer, const std::string& what) {
  throw Error(kExitInvalidInput, at_pointer(o.sir_file, pointer, what));
}

const fir::Layer& layer_named(const fir::Graph& g, const Options& o, const std::string& name, const std::string& pointer) {
  const fir::Layer* l = g.find(name);
  if (!l) fail(o, pointer, "layer \"" + name + "\" is not in the Frontend IR " + o.fir_file);
  return *l;
}

int64_t element_bytes_of(const fir::Layer& l, bool input) {
  const auto& d = input ? l.input_dtype : l.output_dtype;
  return (!d.empty() && d[0] == "float16") ? 2 : 1;
}

}  // namespace

DramLayout layout_dram(const sir::Schedule& s, const fir::Graph& g, const Options& o) {
  DramLayout out;
  const auto& loads = s.dram.out;
  struct Weight {
    const sir::DramLoad* load;
    int64_t layer_index;
    size_t index;  // in "-1"/out
  };
  std::vector<Weight> weights;
  for (size_t i = 0; i < loads.size(); ++i) {
    const auto& d = loads[i];
    if (d.type != sir::DramLoadType::Weight) continue;
    const std::string p = "/-1/out/" + std::to_string(i) + "/destination";
    if (d.destination.empty() || !d.destination[0].layer_name) fail(o, p, "a weight transfer without a destination layer");
    weights.push_back({&d, layer_named(g, o, *d.destination[0].layer_name, p + "/0/layer_name").layer_index, i});
  }
  // Each layer's weights once, in Frontend IR layer order, output channel
  // after output channel: a transfer of channels k_lo..k_hi (one core's share
  // of a K-partitioned layer) reads the contiguous run starting at channel k_lo.
  std::stable_sort(weights.begin(), weights.end(),
                   [](const Weight& a, const Weight& b) { return a.layer_index < b.layer_index; });
  int64_t cur = 0;
  for (size_t i = 0; i < weights.size();) {
    size_t j = i;
    int64_t per_k = 0, channels = 0;
    for (; j < weights.size() && weights[j].layer_index == weights[i].layer_index; ++j) {
      const sir::DramLoad& d = *weights[j].load;
      const int64_t k = d.upper[1] - d.lower[1] + 1;
      const std::string p = "/-1/out/" + std::to_string(weights[j].index);
      if (d.lower[1] < 0 || k <= 0 || d.size % k != 0)
        fail(o, p, "weight transfer " + std::to_string(d.transfer_id) + ": " + std::to_string(d.size) +
                       " bytes are not a whole number of output channels " + std::to_string(d.lower[1]) + ".." +
                       std::to_string(d.upper[1]));
      if (per_k != 0 && d.size / k != per_k)
        fail(o, p + "/size", "weight transfer " + std::to_string(d.transfer_id) + " has " + std::to_string(d.size / k) +
                                 " bytes per output channel, another transfer of layer \"" +
                                 *d.destination[0].layer_name + "\" " + std::to_string(per_k));
      per_k = d.size / k;
      channels = std::max(channels, d.upper[1] + 1);
    }
    for (size_t x = i; x < j; ++x) {
      const sir::DramLoad& d = *weights[x].load;
      out.weights.push_back({*d.destination[0].layer_name, d.transfer_id, cur + d.lower[1] * per_k, d.size, d.lower[1],
                             d.upper[1]});
    }
    cur += channels * per_k;
    i = j;
  }
  std::stable_sort(out.weights.begin(), out.weights.end(),
                   [](const DramWeightSlice& a, const DramWeightSlice& b) { return a.address < b.address; });
  out.weight_bytes = cur;
  // Activations: unpadded NHWC, the network inputs (and host results) first,
  // then every stored tensor.
  std::map<int64_t, int64_t> host_ids;  // step transfer id -> itself
  if (s.dram.host)
    for (const auto& h : *s.dram.host) host_ids[h.transfer_id] = h.transfer_id;
  cur = 0;
  for (size_t i = 0; i < loads.size(); ++i) {
    const auto& d = loads[i];
    if (d.type != sir::DramLoadType::Fmap) continue;
    int64_t host_step = -1;
    if (d.related_ifmap.size() == 1 && host_ids.count(d.related_ifmap[0])) host_step = d.related_ifmap[0];
    if (!d.related_ifmap.empty() && host_step < 0) continue;
    DramRegion r;
    r.host_step = host_step;
    r.transfer_id = d.transfer_id;
    r.address = cur;
    r.lower = d.lower;
    r.upper = d.upper;
    if (!d.destination.empty() && d.destination[0].layer_name) {
      r.layer = *d.destination[0].layer_name;
      const fir::Layer& l = layer_named(g, o, r.layer, "/-1/out/" + std::to_string(i));
      r.element_bytes = element_bytes_of(l, true);
      // What the load brings: the name its L2 tensor gives as source.
      if (const sir::Workload* w = d.destination[0].workload_id ? s.find_workload(*d.destination[0].workload_id) : nullptr)
        for (const auto& b : w->buffer)
          if (b.source)
            for (const auto& src : *b.source)
              if (src.transfer_id == d.transfer_id && src.layer_name) r.source = *src.layer_name;
      // A constant (PReLU's slope) has its own element type; so has a host
      // result (the input it is of: named, or behind a host reshape).
      for (size_t k = 0; k < l.previous_layer.size() && k < l.input_dtype.size(); ++k)
        if (!r.source.empty() && l.previous_layer[k] == r.source && (fir::is_constant_name(r.source) || host_step >= 0))
          r.element_bytes = l.input_dtype[k] == "float16" ? 2 : 1;
    }
    cur += r.bytes();
    out.inputs.push_back(std::move(r));
  }
  for (size_t i = 0; i < s.dram.in.size(); ++i) {
    const auto& x = s.dram.in[i];
    const sir::Workload* w = s.find_workload(x.workload_id);
    if (!w) fail(o, "/-1/in/" + std::to_string(i) + "/workload_id", "no such workload");
    DramRegion r;
    r.transfer_id = x.transfer_id;
    r.layer = w->layer_name;
    r.element_bytes = element_bytes_of(layer_named(g, o, w->layer_name, "/-1/in/" + std::to_string(i)), false);
    r.address = cur;
    r.lower = x.lower;
    r.upper = x.upper;
    if (x.related_ofmap) r.reloads = *x.related_ofmap;
    cur += r.bytes();
    out.stores.push_back(std::move(r));
  }
  out.activation_bytes = cur;
  return out;
}

}  // namespace cct::assembler
