// irgen pass 2, workloads: every part of every mapped layer, per batch group
// and row stripe, on its core in mapping order (Wl), each input's region and
// padding (input_use), and the output-channel runs of parts whose weights do
// not fit the weight buffer whole.
#include "irgen/generator.hpp"

namespace cct::irgen::detail {

InputUse Generator::input_use(const LayerModel& L, const InputRef& in, const Box& out) const {
  const fir::Layer& l = *L.fir;
  InputUse u;
  Dims d = in.dims;
  Box r;
  r.lo[0] = out.lo[0], r.hi[0] = out.hi[0];
  // The rows (columns) [first, last] of the windows: the region is their
  // part inside the input, the padding what lies before and after it. Windows
  // wholly in the padding (a convolution padded by more than its kernel, as a
  // constant Pad is: a part of its output may read no input) read the
  // input's nearest edge row (column), as gemini's input_region clamps; the
  // padding on the region's other side is then negative, so that region and
  // padding still span the windows (formats/Scheduler_IR_Format.md).
  auto spatial = [&](int axis, int64_t stride, int64_t kernel, int64_t dil, int64_t pad_before, int64_t* pb,
                     int64_t* pa) {
    int64_t first = out.lo[axis] * stride - pad_before;
    int64_t last = out.hi[axis] * stride - pad_before + (kernel - 1) * dil;
    r.lo[axis] = std::max<int64_t>(0, first);
    r.hi[axis] = std::min<int64_t>(d[axis] - 1, last);
    if (r.lo[axis] > r.hi[axis]) r.lo[axis] = r.hi[axis] = std::clamp<int64_t>(first, 0, d[axis] - 1);
    *pb = r.lo[axis] - first;
    *pa = last - r.hi[axis];
  };
  if (L.move) {
    // The hull of the pieces this input gives (empty: none).
    r.lo = {0, 0, 0, 0};
    r.hi = {-1, -1, -1, -1};
    bool any = false;
    // (A named copy: a range-for over *optional-temporary would dangle.)
    const std::vector<fir::MovePiece> pieces = fir::move_pieces(l, out.lo, out.hi).value();
    for (const auto& m : pieces) {
      if (m.input != in.fir_index) continue;
      for (int a = 0; a < 4; ++a) {
        r.lo[a] = any ? std::min(r.lo[a], m.in_lo[a]) : m.in_lo[a];
        r.hi[a] = any ? std::max(r.hi[a], m.in_hi[a]) : m.in_hi[a];
      }
      any = true;
    }
    u.region = r;
    return u;
  }
  if (l.op == fir::Op::Conv2d || is_pool_op(l.op)) {
    auto win = l.window();
    auto st = l.strides();
    auto dil = l.dilations();
    auto pads = l.pads();
    spatial(2, st[0], win[0], dil[0], pads[0], &u.pad[0], &u.pad[1]);
    spatial(3, st[1], win[1], dil[1], pads[2], &u.pad[2], &u.pad[3]);
    if (is_pool_op(l.op)) {
      r.lo[1] = out.lo[1], r.hi[1] = out.hi[1];
    } else {
      int64_t groups = l.group_count();
      int64_t cg = std::max<int64_t>(1, d[1] / std::max<int64_t>(1, groups));
      int64_t kg = std::max<int64_t>(1, L.out[1] / std::max<int64_t>(1, groups));
      r.lo[1] = out.lo[1] / kg * cg;
      r.hi[1] = std::min<int64_t>(d[1] - 1, (out.hi[1] / kg + 1) * cg - 1);
    }
  } else if (l.op == fir::Op::Resize) {
    // The rows and columns the taps of the output's pixels reach
    // (int8::resize_span); no padding: the border repeats, the holes of zero
    // insertion read nothing.
    std::string why;
    auto g = fir::resize_geometry(l, &why);
    if (!g) fail_fir(l.name, why);
    const auto mode = static_cast<int8::ResizeMode>(g->mode);
    for (int a = 0; a < 2; ++a) {
      const auto& ax = g->axis[size_t(a)];
      float step = int8::param(ax.step), off = int8::param(ax.offset);
      std::tie(r.lo[2 + a], r.hi[2 + a]) = int8::resize_span(mode, out.lo[2 + a], out.hi[2 + a], step, off, ax.in);
    }
    r.lo[1] = out.lo[1], r.hi[1] = out.hi[1];
  } else if (is_pe_op(l.op)) {
    r.lo[1] = 0, r.hi[1] = d[1] - 1;
    r.lo[2] = 0, r.hi[2] = d[2] - 1;
    r.lo[3] = 0, r.hi[3] = d[3] - 1;
    // A dense layer is the convolution fir::pe_conv gives: over a flattened
    // sample its window is the whole input; over a token tensor it is 1 x 1,
    // so a part of the tokens reads those tokens only.
    if (auto pc = fir::pe_conv(l); pc && l.op == fir::Op::Dense) {
      spatial(2, 1, pc->kernel[0], 1, 0, &u.pad[0], &u.pad[1]);
      spatial(3, 1, pc->kernel[1], 1, 0, &u.pad[2], &u.pad[3]);
    }
  } else {
    for (int i = 0; i < 4; ++i) {
      // Broadcast axes of size 1 read their only element (the batch too: a constant).
      r.lo[i] = d[i] == 1 ? 0 : out.lo[i];
      r.hi[i] = d[i] == 1 ? 0 : std::min<int64_t>(d[i] - 1, out.hi[i]);
    }
  }
  u.region = r;
  // A host reshape between producer and consumer that changes the shape:
  // the consumer reads the producer's whole output.
  if (in.producer >= 0 && layers_[size_t(in.producer)].out != d) {
    const Dims& pd = layers_[size_t(in.producer)].out;
    u.region.lo = {out.lo[0], 0, 0, 0};
    u.region.hi = {out.hi[0], pd[1] - 1, pd[2] - 1, pd[3] - 1};
  }
  return u;
}

void Generator::build_workloads() {
  for (size_t s = 0; s < m_.segments.size(); ++s)
    for (size_t i = 0; i < m_.segments[s].layers.size(); ++i) {
      const auto& lm = m_.segments[s].layers[i];
      auto it = layer_index_.find(lm.layer);
      std::string p = "/segments/" + std::to_string(s) + "/layers/" + std::to_string(i) + "/layer";
      if (it == layer_index_.end()) fail_mapping(p, "layer \"" + lm.layer + "\" is not an accelerator layer of the FIR");
      LayerModel& L = layers_[size_t(it->second)];
      if (L.map) fail_mapping(p, "layer \"" + lm.layer + "\" is mapped twice");
      L.map = &lm;
      L.segment = int(s), L.position = int(i);
    }
  for (const auto& L : layers_)
    if (!L.map) fail_mapping("/segments", "layer \"" + L.fir->name + "\" is not mapped");
  layer_wls_.assign(layers_.size(), {});
  // Ids in (segment, batch group, layer, part) order: a topological order.
  int id = 0;
  for (size_t s = 0; s < m_.segments.size(); ++s) {
    const auto& seg = m_.segments[s];
    const int64_t groups = seg.batch_groups, stripes = std::max<int64_t>(1, seg.row_groups);
    const std::vector<std::vector<int64_t>> ends = row_stripes(seg);
    for (int64_t g = 0; g < groups * stripes; ++g)
      for (size_t i = 0; i < seg.layers.size(); ++i) {
        const auto& lm = seg.layers[i];
        int li = layer_index_.at(lm.layer);
        LayerModel& L = layers_[size_t(li)];
        mapping::Dims dims = L.out;
        if (dims[0] % groups != 0)
          fail_mapping("/segments/" + std::to_string(s) + "/batch_groups",
                       std::to_string(groups) + " batch groups do not divide the batch " + std::to_string(dims[0]));
        dims[0] /= groups;
        const int64_t bg = g / stripes, r = g % stripes;
        const int64_t row0 = r > 0 ? ends[i][size_t(r - 1)] : 0;
        dims[2] = ends[i][size_t(r)] - row0;
        if (dims[2] == 0) continue;  // an empty stripe
        for (int64_t part = 0; part < lm.partition.product(); ++part) {
          mapping::Box b = mapping::part_box(lm.partition, dims, part);
          b.lower[0] += bg * dims[0];
          b.upper[0] += bg * dims[0];
          b.lower[2] += row0;
          b.upper[2] += row0;
          const int leader = id;
          // A part computed once on its core goes in runs of output channels
          // when its weights do not fit WL0; one computed for every group
          // (or stripe) streams them from L2 if it can (weight_runs).
          const bool once = groups * stripes == 1;
          auto runs = wl0_chunks(L, b.lower[1], b.upper[1], once);
          for (auto [k_lo, k_hi] : runs) {
            Wl w;
            w.id = id++;
            w.leader = leader;
            w.group_weights = !once && runs.size() > 1;
            w.layer = li;
            w.core = int(lm.cores[size_t(part)]);
            w.segment = int(s);
            w.group = int(g);
            w.out.lo = b.lower;
            w.out.hi = b.upper;
            w.out.lo[1] = k_lo;
            w.out.hi[1] = k_hi;
            for (const auto& in : L.inputs) w.inputs.push_back(input_use(L, in, w.out));
            if (L.move) w.moves = *fir::move_pieces(*L.fir, w.out.lo, w.out.hi);
            per_core_[w.core].push_back(w.id);
            w.pos = int(per_core_[w.core].size()) - 1;
            layer_wls_[size_t(li)].push_back(w.id);
            wls_.push_back(std::move(w));
          }
        }
      }
  }
}

// The row stripes of a segment's layers (mapping::row_stripes), from the
// rows each input of a consumer reads.
std::vector<std::vector<int64_t>> Generator::row_stripes(const mapping::Segment& seg) const {
  std::vector<int> lis;
  std::vector<int64_t> rows;
  for (const auto& lm : seg.layers) {
    lis.push_back(layer_index_.at(lm.layer));
    rows.push_back(layers_[size_t(lis.back())].out[2]);
  }
  std::vector<std::vector<size_t>> consumers(lis.size());
  for (size_t c = 0; c < lis.size(); ++c)
    for (const auto& in : layers_[size_t(lis[c])].inputs)
      for (size_t p = 0; p < c; ++p)
        if (in.producer == lis[p] && (consumers[p].empty() || consumers[p].back() != c)) consumers[p].push_back(c);
  auto rows_read = [&](size_t c, size_t p, int64_t n) -> int64_t {
    if (n == 0) return 0;
    const LayerModel& C = layers_[size_t(lis[c])];
    Box out;
    out.lo = {0, 0, 0, 0};
    out.hi = {C.out[0] - 1, C.out[1] - 1, n - 1, C.out[3] - 1};
    int64_t end = 0;
    for (const auto& in : C.inputs)
      if (in.producer == lis[p]) end = std::max(end, input_use(C, in, out).region.hi[2] + 1);
    return end;
  };
  return mapping::row_stripes(rows, consumers, seg.row_groups, rows_read);
}

}  // namespace cct::irgen::detail
