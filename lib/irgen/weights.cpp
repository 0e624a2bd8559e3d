// irgen pass 5, weights: each weight slice's path (DRAM -> weight buffer, or
// DRAM -> L2 streamed tile by tile), chosen by a search priced on irgen's
// own timeline (estimate), and each load's buffer address and the workload
// that issues it, as early as its buffer has room (assign).
#include "irgen/generator.hpp"

namespace cct::irgen::detail {

// Weights: DRAM -> WL0 when the slice fits the weight buffer whole (the PE
// reads it at WL0 speed), otherwise DRAM -> L2 and streamed tile by tile
// through two WL0 slots. Each load is issued as early as its buffer has
// room until its last use, in the order the workloads need them.
//
// Which path each layer takes is a trade: WL0 makes the layer compute
// faster, but the buffer is small, so few loads can run ahead; L2 holds
// weights many layers ahead, so DRAM keeps streaming while compute-heavy
// layers run. Loads into WL0 also share the in-order LW queue with the tile
// loads of streamed layers, so they are never issued at or before a
// streamed workload that precedes their own. The choice is searched: a
// split point (WL0 before it, L2 after), then single-layer flips, each
// candidate priced by estimate() on a timeline of compute and DRAM.
int64_t Generator::weight_bytes_per_k(const LayerModel& L) const {
  const footprint::WeightRecord r = layer_weight_record(a_, *L.fir);
  if (r.c <= 0) fail_fir(L.fir->name, "a PE layer without a [K, C, kh, kw] weight shape");
  return r.bytes();
}

// WL0 rows (64-byte units) of `kcount` output channels loaded whole
// (irgen::wl0_rows: blocks of pe_cols channels, each channel's weights on
// whole 32-byte bursts).
int64_t Generator::wl0_rows(int64_t kcount, int64_t per_k) const { return irgen::wl0_rows(a_, kcount, per_k); }

// The output-channel runs a PE part is computed in (weight_runs): the whole
// part when its weights fit the weight buffer, when weights stream from L2
// anyway, or when a part computed for several groups streams them; otherwise
// runs of output channels whose weights fit half the buffer, so that one
// run's weights load while the previous run computes.
std::vector<std::pair<int64_t, int64_t>> Generator::wl0_chunks(const LayerModel& L, int64_t k_lo, int64_t k_hi,
                                                               bool once) const {
  const int64_t kcount = k_hi - k_lo + 1;
  if (!L.pe || !o_.split_for_wl0 || o_.weight_path == WeightPath::L2) return {{k_lo, k_hi}};
  const int64_t per_k = weight_bytes_per_k(L);
  const WeightRuns wr = weight_runs(a_, kcount, per_k, L.out_bytes, once, L.conv.k_per_group());
  if (wr.kind == WeightRuns::TooLarge)
    fail_fir(L.fir->name, over_capacity("one output channel's weights (" + std::to_string(per_k) + " bytes, " +
                                            std::to_string(wl0_rows(1, per_k)) + " rows of " +
                                            std::to_string(a_.core.wl0_row_bytes) + " bytes)",
                                        wl0_rows(1, per_k) * a_.core.wl0_row_bytes,
                                        a_.core.wl0_rows / 2 * a_.core.wl0_row_bytes,
                                        "half of the weight buffer (a run's weights load while the previous run computes)",
                                        a_) +
                              ": the layer cannot be computed on this architecture");
  if (wr.kind != WeightRuns::Runs) return {{k_lo, k_hi}};
  const int64_t size = wr.run;
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t k = k_lo; k <= k_hi; k += size) out.push_back({k, std::min(k_hi, k + size - 1)});
  return out;
}

// Output channels are cut (runs, streamed tiles) in multiples of this: whole
// array column blocks, and whole groups of a grouped convolution.
int64_t Generator::k_block(const LayerModel& L) const { return std::lcm(a_.core.pe_cols, L.conv.k_per_group()); }

void Generator::size_weight(WeightLoad& wt) {
  const int64_t cols = k_block(layers_[size_t(wt.layer)]);
  const int64_t wl0_capacity = a_.core.wl0_rows;
  const LayerModel& L = layers_[size_t(wt.layer)];
  const Dims& wd = L.conv.weight;
  int wbytes = dtype_size(L.fir->input_dtype, 1);
  wt.per_k = weight_bytes_per_k(L);
  int64_t kcount = wt.k_hi - wt.k_lo + 1;
  wt.bytes = kcount * wt.per_k;
  wt.footprint = std::max(wt.bytes, timing::weight_bytes(a_, kcount, wd[1], wd[2], wd[3], wbytes));
  wt.rows = wl0_rows(kcount, wt.per_k);
  // Tiles of a streamed layer: two WL0 slots sharing the whole buffer
  // (no DRAM -> WL0 load is live during a streamed workload).
  wt.tile_k = std::max(cols, wl0_capacity / 2 * a_.core.wl0_row_bytes / wt.per_k / cols * cols);
  wt.slots = 2;
  if (wt.tile_k >= kcount) wt.tile_k = kcount, wt.slots = 1;
  wt.fits_wl0 = wt.rows <= wl0_capacity && o_.weight_path != WeightPath::L2;
}

// Weight slices above which plan_weights moves whole layers (ResNet-50 on
// chip-64tops has about 450, on 36 cores about 2,000).
constexpr size_t kSliceSearchLimit = 4096;

Generator::EstimateInputs Generator::estimate_inputs() const {
  EstimateInputs in;
  in.loads.resize(wls_.size());
  in.senders.assign(wls_.size(), -1);
  std::map<std::vector<int>, int> set_of;
  std::vector<int> from;
  for (const Wl& w : wls_) {
    from.clear();
    for (const auto& u : w.inputs)
      for (const auto& pc : u.pieces) {
        if (pc.kind == Piece::GraphInput) in.loads[size_t(w.id)].push_back({true, -1, pc.host_step, pc.bytes});
        if (pc.kind == Piece::Dram) in.loads[size_t(w.id)].push_back({false, pc.producer_wl, -1, pc.bytes});
        if (pc.kind == Piece::Remote) from.push_back(pc.producer_wl);
      }
    if (from.empty()) continue;
    std::sort(from.begin(), from.end());
    from.erase(std::unique(from.begin(), from.end()), from.end());
    auto [it, fresh] = set_of.try_emplace(from, int(in.sets.size()));
    if (fresh) in.sets.push_back(from);
    in.senders[size_t(w.id)] = it->second;
  }
  return in;
}

bool Generator::plan_weights() {
  estimate_inputs_ = estimate_inputs();
  for (auto& wt : weights_) {
    wt.direct_time = wt.stream_time = 0;
    for (int id : wt.workloads) {
      wt.direct_time += tiler_.plan(conv_shape(wls_[size_t(id)], false), 0).cycles;
      wt.stream_time += tiler_.plan(conv_shape(wls_[size_t(id)], true), wt.tile_k).cycles;
    }
  }
  std::vector<char> direct(weights_.size());
  for (size_t i = 0; i < weights_.size(); ++i)
    direct[i] = o_.weight_path != WeightPath::L2 && weights_[i].fits_wl0;
  if (o_.weight_path == WeightPath::Auto && !weights_.empty()) {
    // Weights in the order they are needed (workload ids are topological).
    std::vector<size_t> order(weights_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return wls_[size_t(weights_[x].workloads[0])].id < wls_[size_t(weights_[y].workloads[0])].id;
    });
    // Two policies for the LW queue: DRAM -> WL0 loads never issued before
    // a streamed workload that precedes their own (strict), or issued
    // freely, the streamed workload then waiting for them (the estimate
    // charges it). The search runs for both.
    // Each candidate prices a whole timeline, so the search costs slices x
    // workloads: on a big chip, where every core holds its own slice of
    // every layer, it moves whole layers instead (split points at layer
    // changes, one flip per layer). ResNet-50 b1 on 256 cores took over ten
    // minutes slice by slice.
    const bool by_layer = order.size() > kSliceSearchLimit;
    std::vector<std::vector<size_t>> moves;  // the slices one flip turns
    for (size_t i : order) {
      if (!weights_[i].fits_wl0) continue;
      auto same = by_layer ? std::find_if(moves.begin(), moves.end(),
                                          [&](const auto& mv) { return weights_[mv.front()].layer == weights_[i].layer; })
                           : moves.end();
      if (same != moves.end()) same->push_back(i);
      else moves.push_back({i});
    }
    int64_t best = std::numeric_limits<int64_t>::max();
    std::vector<char> best_modes = direct;
    bool best_strict = true;
    for (bool strict : {true, false}) {
      strict_lw_ = strict;
      int64_t b = estimate(direct);
      std::vector<char> modes = direct;
      for (size_t split = 0; split < order.size(); ++split) {
        if (by_layer && split > 0 && weights_[order[split - 1]].layer == weights_[order[split]].layer) continue;
        std::vector<char> m(weights_.size(), 0);
        for (size_t i = 0; i < split; ++i) m[order[i]] = weights_[order[i]].fits_wl0;
        int64_t t = estimate(m);
        if (t < b) b = t, modes = m;
      }
      for (int pass = 0; pass < 2; ++pass) {
        bool improved = false;
        for (const auto& mv : moves) {
          std::vector<char> m = modes;
          for (size_t i : mv) m[i] = !modes[mv.front()];
          int64_t t = estimate(m);
          if (t < b) b = t, modes = m, improved = true;
        }
        if (!improved) break;
      }
      if (b < best) best = b, best_modes = modes, best_strict = strict;
    }
    strict_lw_ = best_strict;
    direct = best_modes;
  }
  estimated_cycles_ = estimate(direct);
  return assign(direct, true) >= 0;
}

// Places every weight load for the given paths: WL0 entries, tile slots, L2
// copies and issue positions. Returns -1 (assign_error_ says why) when some
// load finds no room. With `commit` the L2 copies become L2 tensors.
int Generator::assign(const std::vector<char>& direct, bool commit) {
  const int64_t wl0_capacity = a_.core.wl0_rows;
  std::vector<std::vector<int>> by_core(size_t(a_.core_count()));
  for (size_t i = 0; i < weights_.size(); ++i) by_core[size_t(weights_[i].core)].push_back(int(i));
  for (size_t id = 0; id < by_core.size(); ++id) {
    std::vector<int>& list = by_core[id];
    if (list.empty()) continue;
    const int core = int(id);
    std::stable_sort(list.begin(), list.end(), [&](int x, int y) { return weights_[size_t(x)].first < weights_[size_t(y)].first; });
    Allocator wl0(wl0_capacity);
    Allocator l2 = l2_.try_emplace(core, a_.core.l2_bytes).first->second;
    int prev_issue_lw = 0, prev_issue_ld = 0;
    int after_streamed = 0;  // strict: DRAM -> WL0 loads wait behind the LW queue's tile loads of streamed layers
    std::set<int> many_tiles;  // positions of streamed workloads with more than two tiles
    for (int wi : list) {
      WeightLoad& wt = weights_[size_t(wi)];
      const LayerModel& L = layers_[size_t(wt.layer)];
      wt.direct = direct[size_t(wi)] && wt.fits_wl0;
      // Loads come in order of first use and each queue issues in order, so
      // no later search starts before these.
      wl0.forget_before(std::min(wt.first, prev_issue_lw));
      l2.forget_before(std::min(wt.first, prev_issue_ld));
      // Named only in an error (the weight-path search calls this per candidate).
      auto who = [&, c = core] { return "weights of \"" + L.fir->name + "\" on core " + std::to_string(c); };
      if (wt.direct) {
        int lb = o_.prefetch ? std::min(std::max(prev_issue_lw, strict_lw_ ? after_streamed : 0), wt.first) : wt.first;
        // The earliest issue position with room until the last use (room
        // at j means room at every later j: fewer blocks live), not inside
        // a streamed workload whose later tile loads would queue behind it.
        int j = earliest_room(lb, wt.first, [&](int p) { return wl0.find(p, wt.last, wt.rows, 1) >= 0; });
        while (j <= wt.first && many_tiles.count(j)) ++j;
        const int64_t addr = j <= wt.first ? wl0.find(j, wt.last, wt.rows, 1) : -1;
        if (addr < 0) {
          assign_segment_ = L.segment;
          assign_error_ = "no room in the weight buffer for the " + who();
          return -1;
        }
        wt.issue = j;
        wt.wl0_address = addr;
        wt.wl0_rows = wt.rows;
        wl0.add(j, wt.last, addr, wt.rows);
        prev_issue_lw = j;
      } else {
        wt.wl0_rows = wt.slots * ceil_div(wt.tile_k * wt.per_k, a_.core.wl0_row_bytes);
        const bool reserved = wt.l2_tensor >= 0;
        int64_t waddr = wl0.find(wt.first, wt.last, wt.wl0_rows, 1);
        if (waddr < 0) {
          assign_segment_ = L.segment;
          assign_error_ = "one tile of the " + who() + " does not fit the weight buffer twice";
          return -1;
        }
        wt.wl0_address = waddr;
        wl0.add(wt.first, wt.last, waddr, wt.wl0_rows);
        int lb = o_.prefetch && !reserved ? std::min(prev_issue_ld, wt.first) : wt.first;
        int64_t addr = reserved ? tensors_[size_t(wt.l2_tensor)].address : -1;
        int j = lb;
        if (!reserved) {
          j = earliest_room(lb, wt.first, [&](int p) { return l2.find(p, wt.last, wt.footprint, arch::kL2AllocationAlignBytes) >= 0; });
          if (j <= wt.first) addr = l2.find(j, wt.last, wt.footprint, arch::kL2AllocationAlignBytes);
        }
        if (addr < 0) {
          assign_segment_ = L.segment;
          assign_error_ = "the " + who() + " (" + std::to_string(wt.bytes) +
                          " bytes) do not fit in L2 next to the activations live with them";
          return -1;
        }
        wt.issue = j;
        wt.l2_address = addr;
        if (!reserved) l2.add(j, wt.last, addr, wt.footprint);
        after_streamed = std::max(after_streamed, wt.last + 1);
        if (ceil_div(wt.k_hi - wt.k_lo + 1, wt.tile_k) > 2)
          for (int p = wt.first; p <= wt.last; ++p) many_tiles.insert(p);
        prev_issue_ld = j;
      }
    }
  }
  if (!commit) return 0;
  for (size_t wi = 0; wi < weights_.size(); ++wi) {
    WeightLoad& wt = weights_[wi];
    wt.order = next_order_++;
    if (wt.direct) continue;
    const LayerModel& L = layers_[size_t(wt.layer)];
    const Dims& wd = L.conv.weight;
    const bool reserved = wt.l2_tensor >= 0;
    L2Tensor fresh;
    L2Tensor& t = reserved ? tensors_[size_t(wt.l2_tensor)] : fresh;
    t.core = wt.core;
    t.start = wt.issue;
    t.end = wt.last;
    t.size = wt.bytes;
    t.address = wt.l2_address;
    t.box.lo = {0, wt.k_lo, 0, 0};
    t.box.hi = {0, wt.k_hi, wd[1] - 1, wd[2] * wd[3] - 1};
    t.type = sir::TensorType::Weight;
    t.layer_name = L.fir->name;
    sir::Source src;
    src.core_id = sir::kDramCoreId;
    src.lower = t.box.lo;
    src.upper = t.box.hi;
    src.size = wt.bytes;
    src.transfer_id = wt.transfer;
    src.type = sir::Endpoint::Dram;
    t.source.push_back(src);
    t.transfers.push_back(wt.transfer);
    t.weight = int(wi);
    t.order = wt.order;
    if (reserved) continue;
    wt.l2_tensor = int(tensors_.size());
    tensors_.push_back(std::move(t));
  }
  return 0;
}

// Predicted end of the program for the given weight paths. Workloads run
// one after another on their core, each waiting for its weights and inputs;
// each core's DRAM transfers are served in the order asm issues them (a
// transfer issued in workload j starts once workload j-1 has finished) at
// one channel's bandwidth. An output read back by another core is stored
// behind the transfers its core issued before it (the loads issued ahead in
// its own workload), and the load reading it waits for that store: a burst
// of weights issued ahead of a store delays every core that needs it.
// Workload ids are topological, so one pass in id order sees every
// producer before its consumers.
int64_t Generator::estimate(const std::vector<char>& direct) {
  if (assign(direct, false) < 0) return std::numeric_limits<int64_t>::max();
  const double bw = timing::dram_channel_bytes_per_cycle(a_);
  struct CoreState {
    double t = 0, dram_free = 0, lw_tail = 0;
  };
  std::vector<CoreState> cores(size_t(a_.core_count()));
  std::vector<std::vector<int>> issued(wls_.size());  // workload id -> weights issued in it
  for (size_t wi = 0; wi < weights_.size(); ++wi) {
    const auto& ids = per_core_.at(weights_[wi].core);
    issued[size_t(ids[size_t(weights_[wi].issue)])].push_back(int(wi));
  }
  std::vector<double> ready(weights_.size(), 0.0);
  std::vector<double> done(wls_.size(), 0.0);    // compute end
  std::vector<double> stored(wls_.size(), 0.0);  // end of the output's store, when stored
  std::vector<double> senders_done(estimate_inputs_.sets.size(), -1.0);  // per set of senders, -1: not yet taken
  // A host step starts when the last of its inputs is stored (their producers
  // come first in id order) and takes timing::host_cycles.
  std::vector<double> host_end(host_.steps.size(), -1.0);
  const std::vector<sir::HostStep> steps = host_steps();
  auto host_done = [&](int k) {
    if (host_end[size_t(k)] >= 0) return host_end[size_t(k)];
    double start = 0;
    for (const std::string& name : host_.steps[size_t(k)].inputs) {
      auto it = layer_index_.find(name);
      if (it == layer_index_.end()) continue;
      for (int id : layer_wls_[size_t(it->second)]) start = std::max(start, stored[size_t(id)]);
    }
    host_end[size_t(k)] = start + double(steps[size_t(k)].time);
    return host_end[size_t(k)];
  };
  double worst = 0;
  for (const Wl& w : wls_) {
    CoreState& c = cores[size_t(w.core)];
    auto load = [&](int64_t bytes, double not_before) {
      double start = std::max({c.t, c.dram_free, not_before});
      c.dram_free = start + double(bytes) / bw;
      return c.dram_free;
    };
    // The workload's own loads go first, then the loads it issues ahead.
    double inputs_ready = c.t;
    for (const EstimateLoad& l : estimate_inputs_.loads[size_t(w.id)])
      inputs_ready = std::max(inputs_ready, l.graph_input ? load(l.bytes, l.host_step >= 0 ? host_done(l.host_step) : 0)
                                                          : load(l.bytes, stored[size_t(l.producer_wl)]));
    // What it receives: the latest end of its senders (producers come first
    // in id order, so a set's latest end is known at its first reader).
    if (const int set = estimate_inputs_.senders[size_t(w.id)]; set >= 0) {
      if (senders_done[size_t(set)] < 0)
        for (int p : estimate_inputs_.sets[size_t(set)]) senders_done[size_t(set)] = std::max(senders_done[size_t(set)], done[size_t(p)]);
      inputs_ready = std::max(inputs_ready, senders_done[size_t(set)]);
    }
    for (int wi : issued[size_t(w.id)])
      if (weights_[size_t(wi)].first == w.pos) ready[size_t(wi)] = load(weights_[size_t(wi)].bytes, 0);
    for (int wi : issued[size_t(w.id)])
      if (weights_[size_t(wi)].first != w.pos) ready[size_t(wi)] = load(weights_[size_t(wi)].bytes, 0);
    c.t = inputs_ready;
    // A streamed workload's tile loads queue behind the DRAM -> WL0 loads
    // issued before it.
    const double lw_before = c.lw_tail;
    for (int wi : issued[size_t(w.id)])
      if (weights_[size_t(wi)].direct) c.lw_tail = std::max(c.lw_tail, ready[size_t(wi)]);
    double dur = double(w.vp_time);
    if (w.weight >= 0) {
      const WeightLoad& wt = weights_[size_t(w.weight)];
      c.t = std::max(c.t, ready[size_t(w.weight)]);
      if (!wt.direct) c.t = std::max(c.t, lw_before);
      dur = double(wt.direct ? wt.direct_time : wt.stream_time) / double(wt.workloads.size());
    }
    c.t += dur;
    done[size_t(w.id)] = c.t;
    if (w.to_dram) {
      Dims e = w.out.extent();
      int64_t bytes = timing::activation_bytes(a_, e[0], e[1], e[2], e[3], layers_[size_t(w.layer)].out_bytes);
      stored[size_t(w.id)] = load(bytes, c.t);
      worst = std::max(worst, stored[size_t(w.id)]);
    }
    worst = std::max(worst, c.t);
  }
  return int64_t(worst);
}

}  // namespace cct::irgen::detail
