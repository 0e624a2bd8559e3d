// gemini's cost model (cost.hpp): a plan expanded as irgen expands a mapping
// (workloads, their inputs and sends, spills, weight loads), timed by the
// event simulation in timeline.cpp, and its figures.
#include "gemini/cost.hpp"

#include "gemini/cost_impl.hpp"

namespace cct::gemini {

std::string_view objective_name(Objective o) {
  switch (o) {
    case Objective::Latency: return "latency";
    case Objective::Energy: return "energy";
    case Objective::Edp: return "edp";
  }
  return "?";
}

std::string_view binding_name(Binding b) {
  switch (b) {
    case Binding::Compute: return "compute";
    case Binding::Dram: return "DRAM";
    case Binding::Noc: return "NoC";
    case Binding::D2d: return "D2D";
  }
  return "?";
}

std::string_view step_name(TimelineStep::Kind k) {
  switch (k) {
    case TimelineStep::Compute: return "compute";
    case TimelineStep::Load: return "load";
    case TimelineStep::Store: return "store";
    case TimelineStep::Send: return "send";
  }
  return "?";
}

double PlanCost::value(Objective o, const arch::Architecture& a) const {
  double v = 0;
  switch (o) {
    case Objective::Latency: v = double(cycles); break;
    case Objective::Energy: v = energy.total(); break;
    case Objective::Edp: v = double(cycles) * energy.total(); break;
  }
  if (overflow > 0) v *= 4.0 + 4.0 * double(overflow) / double(std::max<int64_t>(1, a.core.l2_bytes));
  return v;
}


CostModel::CostModel(const Network& net, const arch::Architecture& a)
    : net_(net), arch_(a), impl_(std::make_unique<Impl>(net, a)) {}
CostModel::~CostModel() = default;

int64_t CostModel::part_cycles(int layer, const mapping::Partition& p, int64_t batch_groups) const {
  return impl_->part_cycles(layer, p, batch_groups, true);
}

int64_t CostModel::part_weight_bytes(int layer, const mapping::Partition& p) const {
  const Layer& L = net_.layers[size_t(layer)];
  return L.pe() ? L.weight_bytes_per_k * (L.out[1] / std::max<int64_t>(1, p.k)) : 0;
}

int64_t CostModel::work() const { return impl_->work; }

double CostModel::dram_stream_bytes_per_cycle() const {
  double bw = arch_.dram_channel_bytes_per_cycle();
  if (!arch_.d2d_links.empty()) bw = std::min(bw, arch_.d2d.link_bytes_per_cycle);
  if (arch_.core_count() > 1) bw = std::min(bw, arch_.noc.link_bytes_per_cycle);
  return bw;
}

PlanCost CostModel::evaluate(const Plan& plan, bool detail, bool program_frame, const BuiltPlan* built) const {
  return impl_->evaluate(plan, detail, program_frame, built);
}

// The inputs of every workload (local, received, or loaded from DRAM), its
// L2 footprint and what it keeps for later readers, with the outputs in
// `spilled` (by their first run) going through DRAM to later segments.
void CostModel::Impl::connect_inputs(const std::vector<int>& seg_of, const std::vector<std::vector<int>>& per_core,
                                     const std::vector<std::vector<int>>& layer_wls, const std::vector<char>& spilled,
                                     bool fresh) const {
  needs.clear();
  syncs.clear();
  if (fresh) read_region.clear(), read_pieces.clear(), pieces.clear();
  needed_by.assign(wls.size(), -1);
  size_t read = 0;  // the next input read, in the order of read_region
  // Host steps: bytes read (their inputs, stored whole) and written (the
  // regions loaded back, results that are graph outputs), as irgen counts them.
  host_bytes.assign(net.host_steps.size(), 0);
  host_inputs.assign(net.host_steps.size(), {});
  for (size_t k = 0; k < net.host_steps.size(); ++k) {
    host_bytes[k] = net.host_steps[k].graph_io_bytes;
    for (int li : net.host_steps[k].inputs)
      for (int pid : layer_wls[size_t(li)]) {
        host_inputs[k].push_back(pid);
        mapping::Dims e = extent(wls[size_t(pid)].box);
        host_bytes[k] += e[0] * e[1] * e[2] * e[3] * net.layers[size_t(li)].out_bytes;
      }
  }
  sample_hi_upto.resize(layer_wls.size());
  sample_lo_from.resize(layer_wls.size());
  for (size_t l = 0; fresh && l < layer_wls.size(); ++l) {
    const std::vector<int>& ids = layer_wls[l];
    auto& hi = sample_hi_upto[l];
    auto& lo = sample_lo_from[l];
    hi.resize(ids.size());
    lo.resize(ids.size());
    for (size_t k = 0; k < ids.size(); ++k)
      hi[k] = std::max(k ? hi[k - 1] : std::numeric_limits<int64_t>::min(), wls[size_t(ids[k])].box.upper[0]);
    for (size_t k = ids.size(); k-- > 0;)
      lo[k] = std::min(k + 1 < ids.size() ? lo[k + 1] : std::numeric_limits<int64_t>::max(), wls[size_t(ids[k])].box.lower[0]);
  }
  for (Wl& w : wls) {
    w.host_steps.clear();
    w.keep_until = -1;
    w.kept = false;
    w.dram_bytes = 0;
    w.dram_pieces = 0;
    w.early_bytes = 0;
    w.early_pieces = 0;
    w.early_from = 0;
    w.stored = false;
    w.overwrite = false;
    w.copies = 0;
  }
  for (size_t id = 0; id < wls.size(); ++id) {
    Wl& w = wls[id];
    const Layer& L = net.layers[size_t(w.layer)];
    w.need_begin = int(needs.size());
    w.sync_begin = int(syncs.size());
    int64_t foot = w.out_bytes;
    std::vector<int>& own_reads = own_scratch;
    own_reads.clear();
    bool loaded_over = false;
    // A later run of a part reads the inputs its first run loaded or
    // received (irgen keeps them in L2 for it) and writes the same output
    // tensor: the earlier runs' outputs stay.
    const bool sibling = w.leader != int(id);
    if (sibling) {
      const Wl& first = wls[size_t(w.leader)];
      foot += first.foot - first.out_bytes;
      for (int k = w.leader; k < int(id); ++k) wls[size_t(k)].keep_until = std::max(wls[size_t(k)].keep_until, w.q);
    }
    const MoveInfo* mi = L.move ? &move_info(w.layer, w.box) : nullptr;
    for (size_t in = 0; in < L.inputs.size(); ++in) {
      const LayerInput& li = L.inputs[in];
      if (mi && !mi->reads[in]) continue;  // gives this box no piece
      const size_t r = read++;
      if (fresh) {
        read_region.push_back(mi ? mi->region[in] : input_region(net, L, in, w.box));
        read_pieces.push_back({0, 0});
      }
      const mapping::Box reg = read_region[r];
      // A piece delivered straight into a data movement's output takes no
      // buffer of its own (the output's bytes are counted once).
      const bool direct = mi && mi->direct[in];
      if (li.producer < 0 || seg_of[size_t(li.producer)] < 0) {
        if (sibling) continue;
        int64_t b = act_bytes(reg, li.bytes);
        w.dram_bytes += b, ++w.dram_pieces, foot += direct ? 0 : b;
        if (li.producer < 0 && li.host_step < 0) w.early_bytes += b, ++w.early_pieces;  // the network's input
        if (li.host_step >= 0) {
          // A host result: the host writes the region this workload loads (unpadded).
          mapping::Dims e = extent(reg);
          host_bytes[size_t(li.host_step)] += e[0] * e[1] * e[2] * e[3] * li.bytes;
          w.host_steps.push_back(li.host_step);
        }
        continue;
      }
      const Layer& P = net.layers[size_t(li.producer)];
      // irgen reads an input in place only when all of it is in one tensor
      // on this core (one producer part, or its runs); otherwise it gives the
      // region a buffer of its own and copies the local pieces into it.
      int local_leader = -1, local_pieces = 0;
      bool several = false;
      int64_t other_bytes = 0;  // counted in foot already: loaded and received pieces
      if (fresh) {
        // The producer parts whose samples can meet the region, then those it meets.
        const std::vector<int>& producers = layer_wls[size_t(li.producer)];
        const auto& hi = sample_hi_upto[size_t(li.producer)];
        const auto& lo = sample_lo_from[size_t(li.producer)];
        const size_t first = size_t(std::lower_bound(hi.begin(), hi.end(), reg.lower[0]) - hi.begin());
        const size_t last = size_t(std::upper_bound(lo.begin(), lo.end(), reg.upper[0]) - lo.begin());
        read_pieces[r].first = int(pieces.size());
        for (size_t k = first; k < last; ++k) {
          const Wl& pw = wls[size_t(producers[k])];
          mapping::Box x;
          if (!intersect(pw.box, reg, &x)) continue;
          int before = -1;
          if (pw.core != w.core) {
            const auto& ids = per_core[size_t(pw.core)];
            before = int(std::lower_bound(ids.begin(), ids.end(), int(id)) - ids.begin()) - 1;
          }
          pieces.push_back({producers[k], before, act_bytes(x, P.out_bytes), x == w.box && reg == w.box ? 1u : 0u});
        }
        read_pieces[r].second = int(pieces.size());
      }
      // Loaded ahead when every piece is reloaded from this core's store
      // in an earlier segment (irgen's reload; another core's store waits
      // for that core's message, kept in the reader's block here).
      bool reload = !sibling && w.q > 0;
      int64_t reload_bytes = 0;
      int reload_pieces = 0;
      for (int k = read_pieces[r].first; k < read_pieces[r].second; ++k) {
        const ReadPiece& piece = pieces[size_t(k)];
        const int pid = piece.producer;
        Wl& pw = wls[size_t(pid)];
        if (pw.seg != w.seg && spilled[size_t(pw.leader)]) {
          // Spilled: stored by its producer, this piece loaded back (after
          // the storing core's message when that is another core).
          pw.stored = true;
          if (sibling) continue;
          const int64_t b = piece.bytes;
          w.dram_bytes += b, ++w.dram_pieces, foot += direct ? 0 : b;
          reload = reload && pw.core == w.core, reload_bytes += b, ++reload_pieces;
          other_bytes += direct ? 0 : b;
          if (pw.core != w.core) syncs.push_back(pid);
          // irgen writes an element-wise add over the buffer an input is loaded into, too.
          loaded_over = loaded_over || (L.fir->op == fir::Op::ElementWiseAdd && piece.whole);
        } else if (pw.core == w.core) {
          // Stays in this core's L2 until here.
          reload = false;
          own_reads.push_back(pid);
          if (local_leader >= 0 && pw.leader != local_leader) several = true;
          local_leader = pw.leader, ++local_pieces;
          pw.keep_until = std::max(pw.keep_until, w.q);
          pw.kept = pw.kept || pw.seg != w.seg;
        } else if (!sibling) {
          // Another core, in this segment or an earlier one: sent core to core.
          reload = false;
          if (needed_by[size_t(pid)] != int(id)) {
            needed_by[size_t(pid)] = int(id);
            // asm sends each consumer only the region it reads.
            const int64_t b = piece.bytes;
            needs.push_back({int(id), uint32_t(k), direct ? 1u : 0u});
            foot += direct ? 0 : b;
            other_bytes += direct ? 0 : b;
          }
          // For a later segment the sender keeps it until the reader comes
          // (irgen: live through its core's workloads before the reader).
          if (pw.seg != w.seg) {
            pw.keep_until = std::max(pw.keep_until, piece.before_reader);
            pw.kept = true;
          }
        }
      }
      if (reload && reload_pieces > 0) {
        int from = w.q;  // the first position of this segment on the core
        const auto& ids = per_core[size_t(w.core)];
        while (from > 0 && wls[size_t(ids[size_t(from - 1)])].seg == w.seg) --from;
        w.early_from = w.early_bytes > 0 ? std::min(w.early_from, from) : from;
        w.early_bytes += reload_bytes, w.early_pieces += reload_pieces;
      }
      if (!mi && !sibling && local_pieces > 0 && (several || other_bytes > 0)) {
        foot += act_bytes(reg, P.out_bytes) - other_bytes;  // the assembled buffer (its other pieces counted above)
        w.copies += local_pieces;
      }
    }
    w.need_end = int(needs.size());
    // Received in transfer order, the order each sending core uses for one
    // reader too (asm sorts both by transfer id): irgen numbers a reader's
    // transfers input by input, each input's producers in workload order,
    // which is the order they were pushed here.
    // One message per producer, however many pieces of its output are loaded.
    std::sort(syncs.begin() + w.sync_begin, syncs.end());
    syncs.erase(std::unique(syncs.begin() + w.sync_begin, syncs.end()), syncs.end());
    w.sync_end = int(syncs.size());
    w.foot = foot;
    std::sort(own_reads.begin(), own_reads.end());
    own_reads.erase(std::unique(own_reads.begin(), own_reads.end()), own_reads.end());
    w.own = foot;
    bool overwrite = loaded_over;  // irgen writes an element-wise add over an input of its box that dies with it
    for (int pid : own_reads) {
      w.own += wls[size_t(pid)].out_bytes;
      overwrite = overwrite || (L.fir->op == fir::Op::ElementWiseAdd && wls[size_t(pid)].box == w.box);
    }
    if (overwrite) w.own -= w.out_bytes;
    w.overwrite = overwrite;
    if (L.to_dram) w.stored = true;
    // Outputs read by layers outside the plan go to DRAM too.
    for (int c : L.consumers)
      if (seg_of[size_t(c)] < 0) w.stored = true;
  }
}

// Where the inputs a workload loads ahead (Wl::early_bytes) are issued, as
// irgen places their buffers (load_head): far enough back that the PE
// compute up to the reader covers the load at one channel's rate, no
// earlier than early_from, and only over positions whose L2 has room for
// the bytes next to what is live there (irgen shrinks a head that does not
// fit); the bytes then count there for the next.
void CostModel::Impl::place_early_loads(const std::vector<std::vector<int>>& per_core,
                                        std::vector<std::vector<int64_t>>& l2) const {
  for (int c = 0; c < C; ++c) {
    const auto& mine = per_core[size_t(c)];
    auto& used = l2[size_t(c)];
    for (size_t qi = 0; qi < mine.size(); ++qi) {
      Wl& w = wls[size_t(mine[qi])];
      w.early_head = -1;
      if (w.early_bytes <= 0) continue;
      const int pos = irgen::covering(
          a, int(qi), -1, w.early_from, w.early_bytes,
          [&](int p) {
            const Wl& x = wls[size_t(mine[size_t(p)])];
            return net.layers[size_t(x.layer)].pe() ? x.cycles : int64_t(0);
          },
          [&](int p) { return used[size_t(p)] + w.early_bytes <= a.core.l2_bytes; });
      if (pos == int(qi)) continue;
      w.early_head = pos;
      for (int q = pos; q < int(qi); ++q) used[size_t(q)] += w.early_bytes;
    }
  }
}

PlanCost CostModel::Impl::evaluate(const Plan& plan, bool detail, bool program_frame, const BuiltPlan* built) const {
  PlanCost pc;
  const int nlayers = int(net.layers.size());
  // Where each layer is: segment and position, -1 when not in the plan.
  std::vector<int> seg_of(static_cast<size_t>(nlayers), -1), pos_of(size_t(nlayers), -1);
  for (size_t s = 0; s < plan.segments.size(); ++s)
    for (size_t p = 0; p < plan.segments[s].layers.size(); ++p) {
      int l = plan.segments[s].layers[p].layer;
      seg_of[size_t(l)] = int(s), pos_of[size_t(l)] = int(p);
    }

  // ---- workloads, in irgen's order
  wls.clear();
  needs.clear();
  sends.clear();
  syncs.clear();
  wts.clear();
  std::vector<std::vector<int>> layer_wls(static_cast<size_t>(nlayers));
  std::vector<std::vector<int>> per_core(static_cast<size_t>(C));
  int too_large = -1;  // a layer not even one output channel of which fits half the weight buffer
  for (size_t s = 0; s < plan.segments.size(); ++s) {
    const SegmentPlan& sp = plan.segments[s];
    const int64_t G = std::max<int64_t>(1, sp.batch_groups), R = std::max<int64_t>(1, sp.row_groups);
    const std::vector<std::vector<int64_t>> ends = R > 1 ? row_stripes(sp) : std::vector<std::vector<int64_t>>{};
    for (int64_t g = 0; g < G * R; ++g)
      for (size_t p = 0; p < sp.layers.size(); ++p) {
        const LayerPlan& lp = sp.layers[p];
        const Layer& L = net.layers[size_t(lp.layer)];
        Dims gd = group_dims(L, G);
        const int64_t bg = g / R, r = g % R;
        int64_t row0 = 0;
        if (R > 1) {
          row0 = r > 0 ? ends[p][size_t(r - 1)] : 0;
          gd[2] = ends[p][size_t(r)] - row0;
          if (gd[2] == 0) continue;  // an empty stripe
        }
        for (size_t i = 0; i < lp.cores.size(); ++i) {
          Wl w;
          w.core = lp.cores[i];
          w.seg = int(s), w.group = int(g), w.pos = int(p), w.part = int(i), w.layer = lp.layer;
          w.box = shifted(mapping::part_box(lp.part, gd, int64_t(i)), bg * gd[0]);
          w.box.lower[2] += row0;
          w.box.upper[2] += row0;
          w.in_channel = int(lp.dram.ifmap), w.out_channel = int(lp.dram.ofmap);
          // One workload per run of output channels, as irgen cuts the part.
          const mapping::Box part = w.box;
          const int64_t k = extent(part)[1];
          const irgen::WeightRuns wr = runs(L, k, G * R == 1);
          if (wr.kind == irgen::WeightRuns::TooLarge && too_large < 0) too_large = lp.layer;
          w.run = wr.kind == irgen::WeightRuns::Runs;
          w.group_weights = w.run && G * R > 1;
          w.part_k = k;
          w.leader = int(wls.size());
          const int64_t step = w.run ? wr.run : k;
          for (int64_t k0 = part.lower[1]; k0 <= part.upper[1]; k0 += step) {
            w.box.lower[1] = k0;
            w.box.upper[1] = std::min(part.upper[1], k0 + step - 1);
            w.out_bytes = act_bytes(w.box, L.out_bytes);
            w.q = int(per_core[size_t(w.core)].size());
            per_core[size_t(w.core)].push_back(int(wls.size()));
            layer_wls[size_t(lp.layer)].push_back(int(wls.size()));
            wls.push_back(w);
          }
        }
      }
  }

  // ---- inputs: local, received, or from DRAM; spills; weights
  // An output kept in its core's L2 for a later segment goes through DRAM
  // when L2 runs out, as irgen decides it (spill_kept). Weights that cannot
  // sit in the weight buffer whole stream from an L2 copy: as irgen does
  // (connect_and_place), a first placement leaves them out of the
  // activations' room; when one then finds none, they are given their bytes
  // with the activations, which spills kept tensors for them, and all
  // starts again.
  std::vector<std::vector<int64_t>> l2(static_cast<size_t>(C));
  std::vector<ReservedWeight> reserved;
  Overflow overflow;
  for (int attempt = 0;; ++attempt) {
    overflow = Overflow{};
    spill_kept(seg_of, per_core, layer_wls, reserved, l2, built);
    group_sends();
    for (const Wl& w : wls)
      if (w.own - a.core.l2_bytes > pc.own_overflow) pc.own_overflow = w.own - a.core.l2_bytes, pc.own_overflow_segment = w.seg;
    pc.uncomputable = too_large;
    if (too_large >= 0) {
      const Layer& L = net.layers[size_t(too_large)];
      overflow.note(weight_rows(L, 1) * a.core.wl0_row_bytes - a.core.wl0_rows / 2 * a.core.wl0_row_bytes,
                    "one output channel's weights of \"" + L.name + "\" do not fit half of the weight buffer", -1);
    }
    for (int c = 0; c < C; ++c)
      for (size_t q = 0; q < l2[size_t(c)].size(); ++q)
        if (l2[size_t(c)][q] > a.core.l2_bytes)
          overflow.note(l2[size_t(c)][q] - a.core.l2_bytes,
                        "the activations of workload " + std::to_string(q) + " on core " + std::to_string(c) + " need " +
                            std::to_string(l2[size_t(c)][q]) + " bytes of L2",
                        wls[size_t(per_core[size_t(c)][q])].seg);
    const bool weights_short = place_weights(plan, per_core, l2, built, attempt > 0, overflow);
    if (!weights_short || attempt > 0) break;
    reserved.clear();
    for (const Wt& t : wts)
      if (t.rows > a.core.wl0_rows) reserved.push_back({t.core, t.first, t.last, t.bytes});
    if (reserved.empty()) break;
  }

  // ---- timeline
  for (Wl& w : wls) {
    const SegmentPlan& sp = plan.segments[size_t(w.seg)];
    bool direct = w.weight < 0;
    if (!direct) {
      const Wt& t = wts[size_t(w.weight)];
      direct = t.built_issue >= 0 ? t.built_whole : t.direct || (w.run && !w.group_weights);
    }
    w.cycles = sp.row_groups > 1 || w.run || net.layers[size_t(w.layer)].move
                   ? box_cycles(w.layer, w.box, direct)
                                          : part_cycles(w.layer, sp.layers[size_t(w.pos)].part, sp.batch_groups, direct);
    w.cycles += int64_t(w.copies) * std::llround(a.timing.dt_fixed_cycles);
  }
  place_early_loads(per_core, l2);
  if (built)  // (workloads are made afresh per evaluation, with the model's rule)
    for (Wl& w : wls) {
      if (auto r = built->receive_after.find({w.core, w.q}); r != built->receive_after.end() && r->second < w.q)
        w.receive_after = r->second;
      if (auto r = built->store_before.find({w.core, w.q}); r != built->store_before.end() && r->second < w.q)
        w.store_before = r->second;
    }
  for (int c = 0; c < C; ++c) pc.cores_used += per_core[size_t(c)].empty() ? 0 : 1;
  simulate(plan, per_core, pc, lcost_scratch, detail, program_frame);
  std::vector<LayerCost>& lcost = lcost_scratch;
  timing::Energy total;

  // Compute energy and the per-layer binding.
  for (const SegmentPlan& sp : plan.segments)
    for (const LayerPlan& lp : sp.layers) {
      LayerCost& lc = lcost[size_t(lp.layer)];
      timing::Energy e = part_energy(lp.layer, lp.part, sp.batch_groups);
      double n = double(lp.cores.size()) * double(std::max<int64_t>(1, sp.batch_groups));
      e.mac *= n, e.vp *= n, e.l1 *= n, e.l2 *= n;
      e.dram = e.noc = e.d2d = e.static_ = 0;
      lc.energy += e;
      int64_t best = lc.busy_cycles;
      lc.binding = Binding::Compute;
      for (int b = 1; b < 4; ++b)
        if (lc.wait_cycles[b] > best) best = lc.wait_cycles[b], lc.binding = Binding(b);
      total += lc.energy;
    }
  pc.energy = total;
  pc.energy += timing::static_energy(a, pc.cores_used, pc.cycles);
  if (overflow.bytes > pc.overflow) pc.overflow = overflow.bytes, pc.problem = overflow.problem, pc.overflow_segment = overflow.segment;
  if (detail) {
    for (const SegmentPlan& sp : plan.segments) {
      SegmentCost sc;
      sc.start = std::numeric_limits<int64_t>::max();
      for (const LayerPlan& lp : sp.layers) {
        const LayerCost& lc = lcost[size_t(lp.layer)];
        sc.start = std::min(sc.start, lc.start);
        sc.end = std::max(sc.end, lc.end);
        sc.energy += lc.energy;
        sc.layers.push_back(lc);
      }
      if (sp.layers.empty()) sc.start = 0;
      pc.segments.push_back(std::move(sc));
    }
  }
  release_unused_scratch();
  return pc;
}

void CostModel::Impl::spill_kept(const std::vector<int>& seg_of, const std::vector<std::vector<int>>& per_core,
                                  const std::vector<std::vector<int>>& layer_wls,
                                  const std::vector<ReservedWeight>& reserved, std::vector<std::vector<int64_t>>& l2,
                                  const BuiltPlan* built) const {
  std::vector<char>& spilled = spilled_scratch;
  std::vector<irgen::KeptTensor>& kept = kept_scratch;
  spilled.assign(wls.size(), 0);
  if (built)
    for (auto [id, layer] : built->spilled)
      if (id >= 0 && size_t(id) < wls.size() && wls[size_t(id)].layer == layer) spilled[size_t(wls[size_t(id)].leader)] = 1;
  for (bool fresh = true;; fresh = false) {
    connect_inputs(seg_of, per_core, layer_wls, spilled, fresh);
    for (int c = 0; c < C; ++c) l2[size_t(c)].assign(per_core[size_t(c)].size(), 0);
    for (const Wl& w : wls) {
      auto& u = l2[size_t(w.core)];
      u[size_t(w.q)] += w.foot - (w.overwrite ? w.out_bytes : 0);
      // Received inputs are live from the workload before (irgen gives them
      // their own bytes there, so the receives overlap its compute).
      if (w.q > 0)
        for (int k = w.need_begin; k < w.need_end; ++k)
          if (!needs[size_t(k)].direct) u[size_t(w.q) - 1] += need_bytes(k);
    }
    // Kept for a later consumer (on this core, or sent when it comes): live
    // in between too, added as differences at both ends.
    std::vector<int64_t>& kept_from = kept_bytes_scratch;
    for (int c = 0; c < C; ++c) {
      kept_from.assign(per_core[size_t(c)].size() + 1, 0);
      for (int id : per_core[size_t(c)]) {
        const Wl& w = wls[size_t(id)];
        if (w.keep_until <= w.q) continue;
        kept_from[size_t(w.q) + 1] += w.out_bytes;
        kept_from[size_t(w.keep_until) + 1] -= w.out_bytes;
      }
      auto& u = l2[size_t(c)];
      int64_t live = 0;
      for (size_t q = 0; q < u.size(); ++q) live += kept_from[q], u[q] += live;
    }
    for (const ReservedWeight& r : reserved)
      for (int q = r.first; q <= r.last; ++q) l2[size_t(r.core)][size_t(q)] += r.bytes;
    bool more = false;
    for (int c = 0; c < C; ++c) {
      const auto& u = l2[size_t(c)];
      size_t q = 0;
      while (q < u.size() && u[q] <= a.core.l2_bytes) ++q;
      if (q == u.size()) continue;
      kept.clear();
      for (int id : per_core[size_t(c)]) {
        const Wl& w = wls[size_t(id)];
        if (w.kept && !spilled[size_t(w.leader)]) kept.push_back({wls[size_t(w.leader)].q, w.keep_until, w.leader});
      }
      const int victim = irgen::spill_choice(kept, int(q), int(q));
      if (victim >= 0) spilled[size_t(victim)] = 1, more = true;
    }
    if (!more) break;
  }
}

void CostModel::Impl::group_sends() const {
  std::vector<int> count(wls.size(), 0);
  for (size_t k = 0; k < needs.size(); ++k) ++count[size_t(need_producer(int(k)))];
  int at = 0;
  for (size_t id = 0; id < wls.size(); ++id) {
    wls[id].send_begin = wls[id].send_end = at;
    at += count[id];
  }
  sends.resize(size_t(at));
  for (size_t k = 0; k < needs.size(); ++k) sends[size_t(wls[size_t(need_producer(int(k)))].send_end++)] = int(k);
}

bool CostModel::Impl::place_weights(const Plan& plan, const std::vector<std::vector<int>>& per_core,
                                    std::vector<std::vector<int64_t>>& l2, const BuiltPlan* built, bool reserved,
                                    Overflow& overflow) const {
  bool weights_short = false;  // a weight streamed from L2 found no room next to the activations
  wts.clear();
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(C));  // weight-buffer rows in use per position
  for (int c = 0; c < C; ++c) rows[size_t(c)].assign(per_core[size_t(c)].size(), 0);
  std::map<std::tuple<int, int, int64_t, int>, int> wt_of;  // (core, layer, k_lo, group of its own) -> weight
  for (size_t id = 0; id < wls.size(); ++id) {
    Wl& w = wls[id];
    const Layer& L = net.layers[size_t(w.layer)];
    if (!L.pe()) continue;
    auto key = std::make_tuple(w.core, w.layer, w.box.lower[1], w.group_weights ? w.group : -1);
    auto it = wt_of.find(key);
    if (it == wt_of.end()) {
      Wt t;
      t.core = w.core, t.layer = w.layer;
      t.k_lo = w.box.lower[1], t.k_hi = w.box.upper[1];
      t.first = t.last = w.q;
      int64_t k = t.k_hi - t.k_lo + 1;
      t.bytes = L.weight_bytes_per_k * k;
      t.rows = weight_rows(L, k);
      // How irgen's weight-path search mostly treats a part cut into runs:
      // a whole layer on its core whose weights fit comfortably in L2
      // streams from an L2 copy loaded far ahead (the LW queue then copies
      // each run into WL0 as it is due; its runs still compute at
      // weight-buffer speed, see the timeline below); a share of a layer
      // split over cores, or weights L2 cannot hold, loads each run into
      // WL0. (Measured on ResNet-50 on one core, VGG-11 and AlexNet on
      // both presets; a shared schedule model would not need the rule.)
      const bool streamed_runs = w.run && !w.group_weights && w.part_k == L.out[1] &&
                                 L.weight_bytes_per_k * w.part_k <= a.core.l2_bytes / 2;
      t.direct = t.rows <= a.core.wl0_rows && !streamed_runs;
      if (built)
        if (auto b = built->weights.find(std::make_tuple(t.core, t.layer, t.k_lo)); b != built->weights.end()) {
          t.direct = b->second.direct && t.rows <= a.core.wl0_rows;
          t.built_issue = b->second.issue;
          t.built_whole = b->second.whole_in_wl0;
        }
      int64_t tk = std::min(tile_k(L), k);
      t.tile_rows = (tk < k ? 2 : 1) * ceil_div(tk * L.weight_bytes_per_k, a.core.wl0_row_bytes);
      t.channel = int(plan.segments[size_t(w.seg)].layers[size_t(w.pos)].dram.weights);
      t.batch_group = std::get<3>(key);
      it = wt_of.emplace(key, int(wts.size())).first;
      wts.push_back(t);
    }
    Wt& t = wts[size_t(it->second)];
    t.last = std::max(t.last, w.q);
    w.weight = it->second;
  }
  // Per core in first-use order: the earliest position from the previous
  // issue on that buffer's queue where the buffer has room until last use.
  std::vector<std::vector<int>> by_core(static_cast<size_t>(C));
  for (size_t i = 0; i < wts.size(); ++i) by_core[size_t(wts[i].core)].push_back(int(i));
  const int64_t wl0_cap = a.core.wl0_rows;
  for (int c = 0; c < C; ++c) {
    auto& list = by_core[size_t(c)];
    std::stable_sort(list.begin(), list.end(), [&](int x, int y) { return wts[size_t(x)].first < wts[size_t(y)].first; });
    auto& r = rows[size_t(c)];
    auto& u = l2[size_t(c)];
    int prev_lw = 0, prev_ld = 0, after_streamed = 0;
    auto peak = [](const std::vector<int64_t>& used, int from, int to) {
      int64_t most = 0;
      for (int q = from; q <= to; ++q) most = std::max(most, used[size_t(q)]);
      return most;
    };
    auto fits = [](const std::vector<int64_t>& used, int from, int to, int64_t size, int64_t cap) {
      for (int q = from; q <= to; ++q)
        if (used[size_t(q)] + size > cap) return false;
      return true;
    };
    for (int wi : list) {
      Wt& t = wts[size_t(wi)];
      if (t.direct) {
        int lb = std::min(std::max(prev_lw, after_streamed), t.first);
        int j = t.built_issue >= 0 ? std::min(t.built_issue, t.first) : lb;
        while (j < t.first && !fits(r, j, t.last, t.rows, wl0_cap)) ++j;
        if (!fits(r, j, t.last, t.rows, wl0_cap)) {
          // No room even at first use: stream it from L2 instead.
          t.direct = false;
        } else {
          t.issue = j;
          for (int q = j; q <= t.last; ++q) r[size_t(q)] += t.rows;
          prev_lw = j;
          continue;
        }
      }
      if (!fits(r, t.first, t.last, t.tile_rows, wl0_cap)) {
        // irgen refuses this: the tile slots of a streamed layer are held
        // from its first use to its last (on one core, layers sharing it
        // hold theirs through every batch group).
        overflow.note((peak(r, t.first, t.last) + t.tile_rows - wl0_cap) * a.core.wl0_row_bytes,
             "one tile of the weights of \"" + net.layers[size_t(t.layer)].name + "\" on core " + std::to_string(c) +
                 " does not fit the weight buffer twice",
             wls[size_t(per_core[size_t(c)][size_t(t.first)])].seg);
      }
      for (int q = t.first; q <= t.last; ++q) r[size_t(q)] += t.tile_rows;
      if (reserved && t.rows > wl0_cap) {
        // Placed with the activations: its room is counted from its first use.
        t.issue = t.first;
        after_streamed = std::max(after_streamed, t.last + 1);
        prev_ld = t.first;
        continue;
      }
      int lb = std::min(prev_ld, t.first);
      int j = t.built_issue >= 0 && !t.direct ? std::min(t.built_issue, t.first) : lb;
      while (j < t.first && !fits(u, j, t.last, t.bytes, a.core.l2_bytes)) ++j;
      if (!fits(u, j, t.last, t.bytes, a.core.l2_bytes)) {
        weights_short = true;
        overflow.note(peak(u, j, t.last) + t.bytes - a.core.l2_bytes,
             "the weights of \"" + net.layers[size_t(t.layer)].name + "\" on core " + std::to_string(c) +
                 " do not fit in L2 next to the activations",
             wls[size_t(per_core[size_t(c)][size_t(t.first)])].seg);
      }
      t.issue = j;
      for (int q = j; q <= t.last; ++q) u[size_t(q)] += t.bytes;
      after_streamed = std::max(after_streamed, t.last + 1);
      prev_ld = j;
    }
  }
  return weights_short;
}

}  // namespace cct::gemini
