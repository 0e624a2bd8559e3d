#include "mapping/mapping_fir.hpp"

namespace cct::mapping {

Network network_of(const fir::Graph& g) {
  Network net;
  std::vector<const fir::Layer*> order = g.in_index_order();
  net.layers.reserve(order.size());
  for (const fir::Layer* l : order) {
    NetworkLayer nl;
    nl.name = l->name;
    nl.on_npu = l->device == fir::Device::Npu;
    if (!l->output_shape.empty()) {
      const fir::Shape& s = l->output_shape.front();
      nl.rank = int(s.size());
      auto b = fir::chip_box(s);  // the box the chip holds it in
      for (size_t d = 0; d < 4; ++d) nl.dims[d] = b[d];
    }
    if (l->op == fir::Op::Conv2d && l->group_count() > 1 && nl.dims[1] % l->group_count() == 0)
      nl.k_unit = nl.dims[1] / l->group_count();
    for (const fir::Layer* p : g.producers(*l)) nl.producers.push_back(p->name);
    net.layers.push_back(std::move(nl));
  }
  if (!net.layers.empty()) net.batch = net.layers.front().dims[0];
  return net;
}

std::vector<std::string> check_against_fir(const Mapping& m, const fir::Graph& g, const std::string& file) {
  return check_against_network(m, network_of(g), file);
}

Mapping single_core_mapping(const fir::Graph& g, const std::string& arch) {
  Mapping m;
  m.arch = arch;
  auto order = g.in_index_order();
  m.batch = order.front()->output_shape.front().front();
  for (const fir::Layer* l : order) {
    if (l->device != fir::Device::Npu) continue;
    Segment s;
    LayerMapping lm;
    lm.layer = l->name;
    lm.cores = {0};
    s.layers.push_back(lm);
    m.segments.push_back(s);
  }
  return m;
}

Mapping one_layer_per_core_mapping(const fir::Graph& g, const std::string& arch, int cores, int batch_groups) {
  Mapping m;
  m.arch = arch;
  auto order = g.in_index_order();
  m.batch = order.front()->output_shape.front().front();
  Segment s;
  s.batch_groups = batch_groups;
  for (const fir::Layer* l : order) {
    if (l->device != fir::Device::Npu) continue;
    LayerMapping lm;
    lm.layer = l->name;
    lm.cores = {int64_t(s.layers.size())};
    s.layers.push_back(lm);
    if (int(s.layers.size()) == cores) {
      m.segments.push_back(s);
      s.layers.clear();
    }
  }
  if (!s.layers.empty()) m.segments.push_back(s);
  return m;
}

}  // namespace cct::mapping
