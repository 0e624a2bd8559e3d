// irgen pass 6, tiles: each workload cut into the tiles the timing model
// predicts fastest (Tiler on lib/timing): PE workloads by output channels
// and rows, vector workloads by rows, data movement workloads by piece.
#include "irgen/generator.hpp"

namespace cct::irgen::detail {

ConvShape Generator::conv_shape(const Wl& w, bool weights_in_l2) const {
  const LayerModel& L = layers_[size_t(w.layer)];
  const InputRef& in = L.inputs.at(0);
  Dims e = w.out.extent();
  ConvShape cs;
  cs.n = e[0], cs.k = e[1], cs.h = e[2], cs.w = e[3];
  cs.c = w.inputs[0].region.extent()[1];
  auto win = L.conv.kernel;
  auto st = L.conv.stride;
  auto dil = L.conv.dilation;
  cs.r = win[0], cs.s = win[1], cs.stride_h = st[0], cs.stride_w = st[1];
  cs.dilation_h = dil[0], cs.dilation_w = dil[1];
  if (L.conv.groups > 1) cs.group_out = L.conv.k_per_group(), cs.group_in = L.conv.weight[1];
  cs.in_bytes = in.bytes;
  cs.out_bytes = L.out_bytes;
  cs.weights_in_l2 = weights_in_l2;
  return cs;
}

void Generator::tile_pe(Wl& w) {
  const LayerModel& L = layers_[size_t(w.layer)];
  const WeightLoad& wt = weights_[size_t(w.weight)];
  const InputRef& in = L.inputs.at(0);
  ConvShape cs = conv_shape(w, !wt.direct);
  TilePlan plan = tiler_.plan(cs, wt.direct ? 0 : wt.tile_k);
  const std::string mode = plan.cut_mode();
  int64_t total = 0;
  w.sir.tile_info.clear();
  for (const auto& pt : plan.tiles) {
    Box tb;
    for (int i = 0; i < 4; ++i) tb.lo[i] = w.out.lo[i] + pt.offset[i], tb.hi[i] = tb.lo[i] + pt.extent[i] - 1;
    InputUse u = input_use(L, in, tb);
    sir::Tile t;
    const MiniTile& m = pt.mini;
    int64_t wh = (std::min(m.mini_h, pt.extent[2]) - 1) * cs.stride_h + (cs.r - 1) * cs.dilation_h + 1;
    int64_t ww = (std::min(m.mini_w, pt.extent[3]) - 1) * cs.stride_w + (cs.s - 1) * cs.dilation_w + 1;
    t.act_mini_tile = Coord{1, m.mtc0, wh, ww};
    t.ci_cut_num = 1;
    t.cut_mode = mode;
    t.ifmap_lower = u.region.lo;
    t.ifmap_upper = u.region.hi;
    t.layer_name = L.fir->name;
    t.loop_order = "KNHW";
    t.mtc0_mtk0 = std::array<int64_t, 2>{m.mtc0, m.mtk0};
    t.ofmap_lower = tb.lo;
    t.ofmap_upper = tb.hi;
    // The output mini tile counts channel groups: mtk0 blocks of pe_cols channels.
    t.out_mini_tile = Coord{1, m.mtk0 * a_.core.pe_cols / arch::kChannelGroup, m.mini_h, m.mini_w};
    t.single_tile_time_pred = double(m.cycles);
    t.tile_padding_tblr = u.pad;
    total += m.cycles;
    w.sir.tile_info.push_back(std::move(t));
  }
  w.sir.time = total;
}

void Generator::tile_vp(Wl& w) {
  const LayerModel& L = layers_[size_t(w.layer)];
  const fir::Layer& l = *L.fir;
  Dims e = w.out.extent();
  const bool pool = is_pool_op(l.op);
  // Pools read their window over the whole input buffer.
  const bool pool_input = pool && !w.inputs.empty() && !w.inputs[0].pieces.empty();
  const Dims over = pool_input ? tensors_[size_t(w.inputs[0].pieces[0].buffer)].box.extent() : e;
  timing::VpOp op = timing::vp_workload(over, e, L.inputs.empty() ? 1 : L.inputs[0].bytes, L.out_bytes);
  op.two_inputs = !pool && l.lut_code(1) != 0;
  if (op.two_inputs && w.inputs.size() > 1)
    timing::set_second_operand(op, w.inputs[1].region.extent(), L.inputs.size() > 1 ? L.inputs[1].bytes : op.in_bytes);
  auto ps = l.pool_size.value_or(std::array<int64_t, 2>{1, 1});
  op.window = pool ? ps[0] * ps[1] : 1;
  // A resize works per output pixel, blending 4 taps (linear) or taking 1.
  if (l.op == fir::Op::Resize) {
    auto g = fir::resize_geometry(l);
    op.window = g && g->mode == 0 ? 4 : 1;
  }
  int64_t cycles = tiler_.vp_cycles(op);
  w.sir.tile_info.clear();
  sir::Tile t;
  if (!w.inputs.empty()) {
    t.ifmap_lower = w.inputs[0].region.lo;
    t.ifmap_upper = w.inputs[0].region.hi;
    t.tile_padding_tblr = w.inputs[0].pad;
  }
  if (w.inputs.size() > 1) {
    t.ifmap_lower2 = w.inputs[1].region.lo;
    t.ifmap_upper2 = w.inputs[1].region.hi;
  }
  t.ofmap_lower = w.out.lo;
  t.ofmap_upper = w.out.hi;
  t.single_tile_time_pred = double(cycles);
  w.sir.tile_info.push_back(std::move(t));
  w.sir.time = cycles;
  w.vp_time = cycles;
}

// A data movement workload: one tile per piece of its output (ifmap in the
// input's coordinates, ofmap in the layer's). A piece delivered straight
// into the output tensor costs nothing here (its transfer does); one read
// from an input tensor on this core is a copy (dt_cal) or, where the
// quantizations differ, a requantization on the vector processor.
void Generator::tile_move(Wl& w) {
  const LayerModel& L = layers_[size_t(w.layer)];
  w.sir.tile_info.clear();
  int64_t total = 0;
  for (const auto& m : w.moves) {
    size_t i = 0;
    while (i < L.inputs.size() && L.inputs[i].fir_index != m.input) ++i;
    const bool direct = i < w.direct.size() && w.direct[i];
    sir::Tile t;
    t.ifmap_lower = m.in_lo;
    t.ifmap_upper = m.in_hi;
    t.ofmap_lower = m.out_lo;
    t.ofmap_upper = m.out_hi();
    t.tile_padding_tblr = {0, 0, 0, 0};
    int64_t cycles = 0;
    if (!direct) {
      Dims e = {m.in_hi[0] - m.in_lo[0] + 1, m.in_hi[1] - m.in_lo[1] + 1, m.in_hi[2] - m.in_lo[2] + 1,
                m.in_hi[3] - m.in_lo[3] + 1};
      if (fir::move_requantizes(*L.fir, m.input)) {
        timing::VpOp op;
        op.c = e[1], op.h = e[2], op.w = e[3];
        op.out_pixels = e[2] * e[3];
        op.in_bytes = i < L.inputs.size() ? L.inputs[i].bytes : 1;
        op.out_bytes = L.out_bytes;
        cycles = e[0] * tiler_.vp_cycles(op);  // one instruction per sample
      } else {
        cycles = int64_t(a_.timing.dt_fixed_cycles);
      }
    }
    t.single_tile_time_pred = double(cycles);
    total += cycles;
    w.sir.tile_info.push_back(std::move(t));
  }
  w.sir.time = total;
  w.vp_time = total;
}

}  // namespace cct::irgen::detail
