// irgen pass 7, emit: the Scheduler IR. Workloads with their tiles,
// ifmaps, ofmap pieces and destinations, the L2 and weight-buffer snapshots
// before each, the DRAM loads and stores, and the host steps.
#include "irgen/generator.hpp"

namespace cct::irgen::detail {

sir::BufferTensor Generator::buffer_entry(const L2Tensor& t, int pos, const Wl& w, int64_t id) const {
  sir::BufferTensor b;
  b.address = t.address;
  b.bitwidth = 8 * t.bytes;
  b.align = std::max<int64_t>(1, a_.core.l2_channel_align_bytes / t.bytes);
  bool cur = false;
  for (const auto& u : w.inputs)
    for (const auto& pc : u.pieces)
      cur = cur || std::find(t.transfers.begin(), t.transfers.end(), pc.transfer) != t.transfers.end();
  if (cur && pos >= t.reader) b.cur_wl_ifmap = true;
  b.layer_name = t.layer_name;
  b.lower = t.box.lo;
  b.upper = t.box.hi;
  b.newly_added = t.start == pos;
  b.size = t.size;
  b.source = t.source;
  b.tensor_id = id;
  b.tensor_order = t.order;
  b.transfer_id = t.transfers;
  b.type = t.type;
  return b;
}

sir::Schedule Generator::emit() {
  const int64_t align = a_.core.l2_channel_align_bytes;
  sir::Schedule s;
  s.buffersize = a_.core.l2_bytes;
  s.top_batch_cut = 1;
  s.xlen = a_.core_count();
  s.ylen = 1;
  // Tensors live at each position of each core.
  std::map<int, std::vector<int>> core_tensors;
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i].size > 0) core_tensors[tensors_[i].core].push_back(int(i));
  std::map<int, std::vector<const WeightLoad*>> core_weights;  // in weights_ order
  for (const auto& wt : weights_) core_weights[wt.core].push_back(&wt);
  for (auto& [core, ids] : per_core_) {
    sir::Core c;
    c.id = core;
    c.workloads.reserve(ids.size());
    const auto& mine = core_tensors[core];
    const auto& my_weights = core_weights[core];
    for (int id : ids) {
      Wl& w = wls_[size_t(id)];
      const LayerModel& L = layers_[size_t(w.layer)];
      sir::Workload& x = w.sir;
      x.workload_id = w.id;
      x.layer_name = L.fir->name;
      x.layer_type = L.pe ? sir::LayerType::Pe : sir::LayerType::Vp;
      x.lower = w.out.lo;
      x.upper = w.out.hi;
      x.ring_buffer_info = {{0, a_.core.l2_bytes}};
      if (!w.inputs.empty()) x.tile_padding_tblr = w.inputs[0].pad;
      for (size_t i = 0; i < w.inputs.size(); ++i) {
        const InputUse& u = w.inputs[i];
        const InputRef& in = L.inputs[i];
        if (L.move && u.pieces.empty()) continue;  // an input this part of the output does not read
        sir::Ifmap f;
        f.bitwidth = 8 * in.bytes;
        f.align = std::max<int64_t>(1, align / in.bytes);
        f.lower = {0, 0, 0, 0};
        f.upper = relative(u.region.hi, u.region.lo);
        Dims e = u.region.extent();
        f.size = timing::activation_bytes(a_, e[0], e[1], e[2], e[3], in.bytes);
        for (const auto& pc : u.pieces)
          if (std::find(f.transfer_id.begin(), f.transfer_id.end(), pc.transfer) == f.transfer_id.end())
            f.transfer_id.push_back(pc.transfer);
        x.ifmap.push_back(std::move(f));
      }
      // The whole output for this core and DRAM, then each region sent to
      // another core.
      sir::Ofmap of;
      of.destination = w.destinations;
      of.lower = {0, 0, 0, 0};
      of.upper = relative(w.out.hi, w.out.lo);
      Dims e = w.out.extent();
      of.size = timing::activation_bytes(a_, e[0], e[1], e[2], e[3], L.out_bytes);
      of.transfer_id = w.out_transfer;
      x.ofmap_size = of.size;
      x.ofmap.push_back(std::move(of));
      for (const auto& sd : w.sends) {
        sir::Ofmap piece;
        piece.destination = {sd.destination};
        piece.lower = relative(sd.region.lo, w.out.lo);
        piece.upper = relative(sd.region.hi, w.out.lo);
        Dims se = sd.region.extent();
        piece.size = timing::activation_bytes(a_, se[0], se[1], se[2], se[3], L.out_bytes);
        piece.transfer_id = sd.transfer;
        x.ofmap_size += piece.size;
        x.ofmap.push_back(std::move(piece));
      }
      if (w.weight >= 0) {
        const WeightLoad& wt = weights_[size_t(w.weight)];
        const Dims& shape = L.conv.weight;
        sir::Weight wg;
        wg.lower = {0, wt.k_lo, 0, 0};
        wg.upper = {0, wt.k_hi, shape[1] - 1, shape[2] * shape[3] - 1};
        wg.size = wt.bytes;
        wg.transfer_id = {wt.transfer};
        x.weight = wg;
      }
      // L2 snapshot: weights first, then activations, each by address.
      std::vector<int> live;
      for (int t : mine)
        if (tensors_[size_t(t)].start <= w.pos && w.pos <= tensors_[size_t(t)].end) live.push_back(t);
      std::stable_sort(live.begin(), live.end(), [&](int p, int q) {
        const auto &a = tensors_[size_t(p)], &b = tensors_[size_t(q)];
        bool wa = a.type == sir::TensorType::Weight, wb = b.type == sir::TensorType::Weight;
        return std::tie(wb, a.address) < std::tie(wa, b.address);
      });
      for (int t : live) x.buffer.push_back(buffer_entry(tensors_[size_t(t)], w.pos, w, t));
      // WL0 snapshot: every weight slice resident before the workload.
      std::vector<const WeightLoad*> wl0;
      for (const WeightLoad* wt : my_weights) {
        bool resident = wt->direct ? (wt->issue <= w.pos && w.pos <= wt->last)
                                   : (std::find(wt->workloads.begin(), wt->workloads.end(), w.id) != wt->workloads.end());
        if (resident) wl0.push_back(wt);
      }
      std::stable_sort(wl0.begin(), wl0.end(), [](const WeightLoad* p, const WeightLoad* q) { return p->order < q->order; });
      for (const WeightLoad* wt : wl0) {
        const LayerModel& WL = layers_[size_t(wt->layer)];
        const Dims& shape = WL.conv.weight;
        sir::WeightBufferEntry en;
        en.address = wt->wl0_address;
        en.align = align;
        en.bitwidth = 8;
        en.layer_name = WL.fir->name;
        en.size = wt->wl0_rows;
        en.transfer_id = {wt->transfer};
        if (wt->direct) {
          en.source = sir::WeightSource::Ddr;
          en.lower = Coord{0, wt->k_lo, 0, 0};
          en.upper = Coord{0, wt->k_hi, shape[1] - 1, shape[2] * shape[3] - 1};
          en.tensor_order = wt->order;
        } else {
          en.source = sir::WeightSource::Core;
        }
        x.wl0_buffer.entries.push_back(std::move(en));
      }
      x.wl0_buffer.when_empty = sir::EmptyForm::Null;
      c.workloads.push_back(std::move(x));  // the generator ends with emit()
    }
    s.cores.push_back(std::move(c));
  }
  // DRAM: weight loads, then activation loads, by transfer id.
  for (const auto& wt : weights_) {
    const LayerModel& L = layers_[size_t(wt.layer)];
    const Dims& shape = L.conv.weight;
    sir::DramLoad ld;
    for (int id : wt.workloads) ld.destination.push_back({wt.core, L.fir->name, sir::Endpoint::Core, id});
    ld.lower = {0, wt.k_lo, 0, 0};
    ld.upper = {0, wt.k_hi, shape[1] - 1, shape[2] * shape[3] - 1};
    ld.size = wt.bytes;
    ld.transfer_id = wt.transfer;
    ld.type = sir::DramLoadType::Weight;
    s.dram.out.push_back(ld);
  }
  for (const auto& ld : dram_out_) s.dram.out.push_back(ld);
  std::stable_sort(s.dram.out.begin(), s.dram.out.end(),
                   [](const sir::DramLoad& a, const sir::DramLoad& b) { return a.transfer_id < b.transfer_id; });
  s.dram.in = dram_in_;
  if (!host_.steps.empty()) s.dram.host = host_steps();
  return s;
}

// The host steps as the Scheduler IR gives them: the stores of their inputs,
// the loads of their results, their work and predicted time.
std::vector<sir::HostStep> Generator::host_steps() const {
  std::vector<sir::HostStep> out;
  for (size_t k = 0; k < host_.steps.size(); ++k) {
    const fir::HostStep& st = host_.steps[k];
    sir::HostStep h;
    h.layers = st.names();
    h.ops = st.ops;
    for (const auto& d : dram_in_)
      if (std::find(st.inputs.begin(), st.inputs.end(), d.layer_name) != st.inputs.end()) {
        h.related_ifmap.push_back(d.transfer_id);
        auto li = layer_index_.find(d.layer_name);
        Dims e = Box{d.lower, d.upper}.extent();
        h.size += e[0] * e[1] * e[2] * e[3] * layers_[size_t(li->second)].out_bytes;
      }
    for (const auto& [id, bytes] : host_loads_[k]) {
      h.related_ofmap.push_back(id);
      h.size += bytes;
    }
    std::sort(h.related_ofmap.begin(), h.related_ofmap.end());
    h.size += st.graph_io_bytes;  // graph inputs it reads, what it writes whole for the graph outputs
    h.time = timing::host_cycles(a_, h.ops, h.size);
    h.transfer_id = host_step_id(int(k));
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace cct::irgen::detail
