// The DRAM layout of an assembled program (see dram_layout.hpp).
#include "asm/dram_layout.hpp"

#include <algorithm>

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
  };
  std::vector<Weight> weights;
  for (size_t i = 0; i < loads.size(); ++i) {
    const auto& d = loads[i];
    if (d.type != sir::DramLoadType::Weight) continue;
    const std::string p = "/-1/out/" + std::to_string(i) + "/destination";
    if (d.destination.empty() || !d.destination[0].layer_name) fail(o, p, "a weight transfer without a destination layer");
    weights.push_back({&d, layer_named(g, o, *d.destination[0].layer_name, p + "/0/layer_name").layer_index});
  }
  // Weights are packed in Frontend IR layer order.
  std::stable_sort(weights.begin(), weights.end(),
                   [](const Weight& a, const Weight& b) { return a.layer_index < b.layer_index; });
  int64_t cur = 0;
  for (const auto& w : weights) {
    const sir::DramLoad& d = *w.load;
    // Weight coordinates are [0, k, c, kh*kw].
    out.weights.push_back({*d.destination[0].layer_name, d.transfer_id, cur, d.size, d.lower[1], d.upper[1]});
    cur += d.size;
  }
  out.weight_bytes = cur;
  // Activations: unpadded NHWC, the network inputs first, then every stored tensor.
  cur = 0;
  for (size_t i = 0; i < loads.size(); ++i) {
    const auto& d = loads[i];
    if (d.type != sir::DramLoadType::Fmap || !d.related_ifmap.empty()) continue;
    DramRegion r;
    r.transfer_id = d.transfer_id;
    r.address = cur;
    r.lower = d.lower;
    r.upper = d.upper;
    if (!d.destination.empty() && d.destination[0].layer_name) {
      r.layer = *d.destination[0].layer_name;
      r.element_bytes = element_bytes_of(layer_named(g, o, r.layer, "/-1/out/" + std::to_string(i)), true);
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
