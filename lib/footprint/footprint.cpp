#include "footprint/footprint.hpp"

#include <algorithm>
#include <cmath>

#include "support/error.hpp"

namespace cct::footprint {

using isa::Instruction;
using isa::Opcode;
using isa::Param;

namespace {

// The most element operations one instruction may ask for: a guard against
// programs that would run for hours (about a minute of work here).
constexpr int64_t kMaxOperations = int64_t(1) << 38;

int64_t at(std::span<const int32_t> v, size_t i) { return i < v.size() ? v[i] : 1; }

// The group structure and tap spacing of a convolution (pe_cfg_gp).
struct Geometry {
  int64_t groups = 1, dh = 1, dw = 1;
};

std::string range_text(int64_t lo, int64_t hi) { return "[" + std::to_string(lo) + ", " + std::to_string(hi) + ")"; }

}  // namespace

// Operations of two operands (A at STaddr1, B at STaddr).
bool two_operands(int64_t lut) {
  switch (isa::Lut(lut)) {
    case isa::Lut::Add: case isa::Lut::Sub: case isa::Lut::Mul: case isa::Lut::ReverseSub: case isa::Lut::PRelu:
      return true;
    default:
      return false;
  }
}

// The LUTs of lib/func's activations (its lut_activation maps them to int8::activate's functions).
bool activation_lut(int64_t lut) {
  switch (isa::Lut(lut)) {
    case isa::Lut::Relu: case isa::Lut::Clip: case isa::Lut::LeakyRelu: case isa::Lut::Elu: case isa::Lut::HardSigmoid:
    case isa::Lut::HardSwish: case isa::Lut::Sigmoid: case isa::Lut::Silu: case isa::Lut::Tanh: case isa::Lut::Gelu:
    case isa::Lut::PRelu:
      return true;
    default:
      return false;
  }
}

// Activation LUTs whose function takes vp_cfg_act parameters.
bool takes_act_params(int64_t lut) {
  auto l = isa::Lut(lut);
  return l == isa::Lut::Clip || l == isa::Lut::LeakyRelu || l == isa::Lut::Elu || l == isa::Lut::HardSigmoid;
}

std::string_view space_name(Space s) {
  switch (s) {
    case Space::L2: return "L2";
    case Space::Wl0: return "WL0";
    case Space::DramWeights: return "DRAM (weights)";
    case Space::DramActivations: return "DRAM (activations)";
  }
  return "?";
}

bool blocks_overlap(const Block& x, const Block& y) {
  if (x.space != y.space || x.core != y.core || x.empty() || y.empty()) return false;
  if (x.hi() <= y.lo() || y.hi() <= x.lo()) return false;
  // Extents overlap: compare the byte runs exactly (pixels are visited in
  // increasing address order, runs merged when adjacent).
  auto runs = [](const Block& b) {
    std::vector<std::pair<int64_t, int64_t>> r;
    r.reserve(static_cast<size_t>(std::min<int64_t>(b.pixels(), 1 << 16)));
    b.for_each([&](int64_t addr, int64_t) {
      if (!r.empty() && r.back().second == addr) r.back().second = addr + b.bytes;
      else r.push_back({addr, addr + b.bytes});
    });
    std::sort(r.begin(), r.end());
    return r;
  };
  auto rx = runs(x), ry = runs(y);
  size_t i = 0, j = 0;
  while (i < rx.size() && j < ry.size()) {
    if (rx[i].second <= ry[j].first) ++i;
    else if (ry[j].second <= rx[i].first) ++j;
    else return true;
  }
  return false;
}

// ---- planning ------------------------------------------------------------------

Planner::Planner(const arch::Architecture& a, const isa::Program& p, Options o) : a_(a), prog_(p), o_(std::move(o)) {}

void Planner::fail(size_t i, const std::string& what) const {
  throw Error(kExitInvalidInput,
              at_line(o_.file, long(i) + 1, std::string(prog_.instructions[i].mnemonic()) + ": " + what));
}

int64_t Planner::memory_size(Space s) const {
  switch (s) {
    case Space::L2: return a_.core.l2_bytes;
    // The architecture's WL0 size is counted in the instruction set's address unit (rows).
    case Space::Wl0: return a_.core.wl0_bytes();
    case Space::DramWeights: return o_.dram_weight_bytes;
    case Space::DramActivations: return o_.dram_activation_bytes;
  }
  return 0;
}

void Planner::check_block(size_t i, const Block& b, const char* what) const {
  if (b.empty()) return;
  int64_t size = memory_size(b.space);
  if (b.lo() < 0 || b.hi() > size) {
    std::string where = b.space == Space::L2 || b.space == Space::Wl0 ? " of core " + std::to_string(b.core) : "";
    fail(i, std::string(what) + " " + std::string(space_name(b.space)) + where + " bytes " + range_text(b.lo(), b.hi()) +
                ", outside the " + std::to_string(size) + " bytes there");
  }
}

void Planner::plan(size_t i, Step& s) {
  int32_t core = prog_.instructions[i].mapping.core;
  if (!a_.valid_core(core)) fail(i, "core " + std::to_string(core) + " is not a core of " + a_.name);
  auto it = last_.find(core);
  if (it == last_.end()) {
    std::array<int32_t, isa::kOpcodeCount> none;
    none.fill(-1);
    it = last_.emplace(core, none).first;
  }
  plan_one(i, s, it->second);
}

void Planner::plan_one(size_t i, Step& s, std::array<int32_t, isa::kOpcodeCount>& last_cfg) {
  const Instruction& in = prog_.instructions[i];
  s.core = in.mapping.core;
  if (in.is_config()) {
    last_cfg[size_t(in.op())] = int32_t(i);
    return;
  }
  // pe_cfg_gp is optional: before any, convolutions are dense and undilated.
  auto geometry = [&](size_t, const std::array<int32_t, isa::kOpcodeCount>& cfgs) {
    Geometry g;
    int32_t k = cfgs[size_t(Opcode::pe_cfg_gp)];
    if (k < 0) return g;
    s.cfg[kGp] = k;
    const Instruction& gp = prog_.instructions[size_t(k)];
    auto dil = gp.list(Param::DILATION);
    g.groups = gp.get(Param::GROUPS), g.dh = at(dil, 0), g.dw = at(dil, 1);
    if (g.groups <= 0 || g.dh <= 0 || g.dw <= 0)
      fail(i, "pe_cfg_gp GROUPS and DILATION must be positive (line " + std::to_string(k + 1) + ")");
    return g;
  };
  auto need = [&](Opcode c, Cfg slot) -> const Instruction& {
    int32_t k = last_cfg[size_t(c)];
    if (k < 0) fail(i, "no " + std::string(isa::mnemonic(c)) + " of core " + std::to_string(s.core) + " configured it");
    s.cfg[slot] = k;
    return prog_.instructions[size_t(k)];
  };
  auto fmt = [&](const Instruction& c, Param p) { return element_bytes(c.get_enum<isa::DataFmt>(p)); };
  auto positive = [&](std::span<const int32_t> v, const char* what) {
    for (int32_t x : v)
      if (x <= 0) fail(i, std::string(what) + " has a size " + std::to_string(x) + " (sizes must be positive)");
  };
  auto fits = [&](std::span<const int32_t> tile, const Box& box, const char* tile_name, const char* box_name) {
    // tile [C, H, W] against box [C, H, W]
    if (at(tile, 0) > box.c || at(tile, 1) > box.h || at(tile, 2) > box.w)
      fail(i, std::string(tile_name) + " [" + std::to_string(at(tile, 0)) + ", " + std::to_string(at(tile, 1)) + ", " +
                  std::to_string(at(tile, 2)) + "] does not fit " + box_name + " [" + std::to_string(box.c) + ", " +
                  std::to_string(box.h) + ", " + std::to_string(box.w) + "]");
  };
  auto block_in = [&](Space sp, int64_t base, const Box& b, int64_t n, int64_t h, int64_t w, int64_t bytes) {
    Block x;
    x.space = sp, x.core = (sp == Space::L2 || sp == Space::Wl0) ? s.core : 0;
    x.base = base, x.n = n, x.h = h, x.w = w, x.sn = b.sample(), x.sh = b.row(), x.sw = b.pixel, x.bytes = bytes;
    return x;
  };
  auto contiguous = [&](Space sp, int64_t base, int64_t bytes) {
    Block x;
    x.space = sp, x.core = (sp == Space::L2 || sp == Space::Wl0) ? s.core : 0;
    x.base = base, x.bytes = bytes;
    return x;
  };
  switch (in.op()) {
    case Opcode::ct_st:
    case Opcode::ct_bc:
    case Opcode::ct_ed:
      return;
    case Opcode::lda_mov:
    case Opcode::sta_mov:
    case Opcode::dt_cal: {
      const bool load = in.op() == Opcode::lda_mov, store = in.op() == Opcode::sta_mov;
      const Instruction& c = need(load ? Opcode::lda_cfg : store ? Opcode::sta_cfg : Opcode::dt_cfg, kFm);
      auto tile = in.list(Param::Tile);
      positive(tile, "Tile");
      int b = fmt(c, Param::DF);
      // DRAM tensors are packed, L2 tensors padded per pixel.
      Box src = make_box(a_, c.list(Param::STile), b, load), dst = make_box(a_, c.list(Param::DTile), b, store);
      positive(c.list(Param::STile), "STile");
      positive(c.list(Param::DTile), "DTile");
      fits(tile.subspan(1), src, "Tile", "STile");
      fits(tile.subspan(1), dst, "Tile", "DTile");
      Space from = load ? Space::DramActivations : Space::L2, to = store ? Space::DramActivations : Space::L2;
      s.reads.push_back(block_in(from, in.get(Param::STaddr), src, tile[0], tile[2], tile[3], int64_t(tile[1]) * b));
      s.writes.push_back(block_in(to, in.get(Param::DTaddr), dst, tile[0], tile[2], tile[3], int64_t(tile[1]) * b));
      break;
    }
    case Opcode::ldw_mov:
    case Opcode::lw_mov: {
      const bool lw = in.op() == Opcode::lw_mov;
      const Instruction& c = need(lw ? Opcode::lw_cfg : Opcode::ldw_cfg, kFm);
      auto ws = in.list(Param::Wsize);
      positive(ws, "Wsize");
      if (c.get_enum<isa::DataFmt>(Param::DF) != isa::DataFmt::INT8) fail(i, "only INT8 weights are implemented");
      WeightRecord r = weight_record(a_, ws[1], ws[2], ws[3], 1);
      int64_t bytes = int64_t(ws[0]) * r.bytes();
      Space from = (!lw || in.get(Param::SS) != 0) ? Space::DramWeights : Space::L2;
      s.reads.push_back(contiguous(from, in.get(Param::STaddr), bytes));
      s.writes.push_back(lw ? contiguous(Space::Wl0, in.get(Param::DTaddr) * a_.core.wl0_row_bytes, bytes)
                            : contiguous(Space::L2, in.get(Param::DTaddr), bytes));
      break;
    }
    case Opcode::so_mov:
    case Opcode::si_mov: {
      const bool send = in.op() == Opcode::so_mov;
      const Instruction& c = need(send ? Opcode::so_cfg : Opcode::si_cfg, kFm);
      auto tile = in.list(Param::Tile);
      positive(tile, "Tile");
      int b = fmt(c, Param::DF);
      Box box = make_box(a_, c.list(send ? Param::STile : Param::DTile), b);
      positive(c.list(send ? Param::STile : Param::DTile), send ? "STile" : "DTile");
      fits(tile.subspan(1), box, "Tile", send ? "STile" : "DTile");
      int64_t other = in.get(send ? Param::DCORE : Param::SCORE);
      if (!a_.valid_core(other) || other == s.core)
        fail(i, std::string(send ? "DCORE " : "SCORE ") + std::to_string(other) + " is not another core of " + a_.name);
      Block x = block_in(Space::L2, in.get(send ? Param::STaddr : Param::DTaddr), box, tile[0], tile[2], tile[3],
                         int64_t(tile[1]) * b);
      (send ? s.reads : s.writes).push_back(x);
      break;
    }
    case Opcode::pe_conv: {
      const Instruction& fm = need(Opcode::pe_cfg_fm, kFm);
      const Instruction& pm = need(Opcode::pe_cfg_pm, kPm);
      const Instruction& tp = need(Opcode::pe_cfg_tp, kTp);
      if (fm.get_enum<isa::DataFmt>(Param::SF) != isa::DataFmt::INT8 ||
          fm.get_enum<isa::DataFmt>(Param::WF) != isa::DataFmt::INT8)
        fail(i, "only INT8 inputs and weights are implemented (pe_cfg_fm SF/WF)");
      if (pm.get(Param::ADDEN) != 0) fail(i, "pe_cfg_pm ADDEN (fused addition) is not implemented");
      double padv = fm.number(Param::PADV);
      if (padv != std::round(padv) || padv < -128 || padv > 127)
        fail(i, "pe_cfg_fm PADV " + std::to_string(padv) + " is not an INT8 value");
      auto tile = tp.list(Param::Tile), kernel = tp.list(Param::KERNEL), stride = pm.list(Param::STRIDE);
      positive(tile, "pe_cfg_tp Tile");
      positive(kernel, "pe_cfg_tp KERNEL");
      positive(stride, "pe_cfg_pm STRIDE");
      positive(fm.list(Param::STile), "pe_cfg_fm STile");
      positive(fm.list(Param::DTile), "pe_cfg_fm DTile");
      Box ib = make_box(a_, fm.list(Param::STile), 1), ob = make_box(a_, fm.list(Param::DTile), fmt(fm, Param::DF));
      const int64_t N = tile[0], K = tile[1], C = tile[2], OH = tile[3], OW = tile[4];
      const int64_t kh = kernel[0], kw = kernel[1], sh = stride[0], sw = stride[1];
      if (C > ib.c) fail(i, "pe_cfg_tp Tile has " + std::to_string(C) + " input channels, pe_cfg_fm STile " + std::to_string(ib.c));
      const int32_t dt[3] = {int32_t(K), int32_t(OH), int32_t(OW)};
      fits(dt, ob, "pe_cfg_tp Tile [K, OH, OW]", "pe_cfg_fm DTile");
      const Geometry g = geometry(i, last_cfg);
      if (K % g.groups != 0 || C % g.groups != 0)
        fail(i, "pe_cfg_gp GROUPS " + std::to_string(g.groups) + " does not divide the tile's " + std::to_string(K) +
                    " output and " + std::to_string(C) + " input channels");
      // The window: box rows SPHI .. SPHI + (OH-1)*sh + (kh-1)*dh, the same for
      // columns; what lies outside the box is padding and is not read.
      const int64_t r0 = in.get(Param::SPHI), c0 = in.get(Param::SPWI);
      const int64_t r1 = r0 + (OH - 1) * sh + (kh - 1) * g.dh + 1, c1 = c0 + (OW - 1) * sw + (kw - 1) * g.dw + 1;
      const int64_t rr0 = std::max<int64_t>(r0, 0), rr1 = std::min(r1, ib.h);
      const int64_t cc0 = std::max<int64_t>(c0, 0), cc1 = std::min(c1, ib.w);
      if (rr1 > rr0 && cc1 > cc0)
        s.reads.push_back(block_in(Space::L2, in.get(Param::STaddr) + (rr0 - r0) * ib.row() + (cc0 - c0) * ib.pixel, ib,
                                   N, rr1 - rr0, cc1 - cc0, C));
      WeightRecord rec = weight_record(a_, C / g.groups, kh, kw, 1);
      if (rec.extra < kParameterBytes)
        fail(i, "the architecture's weight_extra_bytes_per_out_channel (" + std::to_string(rec.extra) +
                    ") cannot hold the bias and channel scale");
      s.reads.push_back(contiguous(Space::Wl0, in.get(Param::SWaddr) * a_.core.wl0_row_bytes, K * rec.bytes()));
      s.writes.push_back(block_in(Space::L2, in.get(Param::DTaddr), ob, N, OH, OW, K * ob.elem));
      s.macs = N * OH * OW * K * (C / g.groups) * kh * kw;
      if (s.macs > kMaxOperations)
        fail(i, std::to_string(s.macs) + " multiply-accumulates in one instruction is beyond the functional model's " +
                    std::to_string(kMaxOperations));
      break;
    }
    case Opcode::vp_self:
    case Opcode::vp_pool: {
      const bool pool = in.op() == Opcode::vp_pool;
      const Instruction& fm = need(Opcode::vp_cfg_fm, kFm);
      const Instruction& tp = need(Opcode::vp_cfg_tp, kTp);
      need(Opcode::vp_cfg_qp, kQp);
      const int64_t lut = in.get(Param::LUT);
      const bool two = !pool && two_operands(lut);
      if (pool ? (lut != kLutMaxPool && lut != kLutAvgPool) : (lut != kLutRequantize && !two && !activation_lut(lut)))
        fail(i, "LUT " + std::to_string(lut) + " is not an operation the functional model implements (" +
                    (pool ? "17 max pool, 56 average pool" : "16 requantize, 18-21 add, subtract, multiply, reverse subtract, 32-42 activations") + ")");
      if (in.get(Param::IQEN) != 0) need(Opcode::vp_cfg_iq, kIq);
      if (two && in.get(Param::IQEN) != 0) need(Opcode::vp_cfg_iq1, kIq1);
      if (pool && lut == kLutAvgPool) need(Opcode::vp_cfg_gms, kGms);
      if (!pool && activation_lut(lut)) need(Opcode::vp_cfg_gms, kGms);
      if (!pool && takes_act_params(lut)) need(Opcode::vp_cfg_act, kAct);
      // Operand B's box: vp_cfg_fm1 once one was given on this core, else A's (the reference programs).
      if (two && last_cfg[size_t(Opcode::vp_cfg_fm1)] >= 0) need(Opcode::vp_cfg_fm1, kFm1);
      auto tile = tp.list(Param::Tile);
      positive(tile, "vp_cfg_tp Tile");
      positive(fm.list(Param::STile), "vp_cfg_fm STile");
      positive(fm.list(Param::DTile), "vp_cfg_fm DTile");
      Box ib = make_box(a_, fm.list(Param::STile), fmt(fm, Param::IDF)), ob = make_box(a_, fm.list(Param::DTile), fmt(fm, Param::ODF));
      fits(tile, ob, "vp_cfg_tp Tile", "vp_cfg_fm DTile");
      if (tile[0] > ib.c) fail(i, "vp_cfg_tp Tile has more channels than vp_cfg_fm STile");
      const int64_t C = tile[0], H = tile[1], W = tile[2];
      if (pool) {
        auto kernel = tp.list(Param::KERNEL), stride = tp.list(Param::STRIDE);
        positive(kernel, "vp_cfg_tp KERNEL");
        positive(stride, "vp_cfg_tp STRIDE");
        if (C * H * W * int64_t(kernel[0]) * kernel[1] > kMaxOperations)
          fail(i, "the pooling windows hold more elements than the functional model's " + std::to_string(kMaxOperations));
        const int64_t r0 = in.get(Param::IPH), c0 = in.get(Param::IPW);
        const int64_t r1 = r0 + (H - 1) * stride[0] + kernel[0], c1 = c0 + (W - 1) * stride[1] + kernel[1];
        const int64_t rr0 = std::max<int64_t>(r0, 0), rr1 = std::min(r1, ib.h);
        const int64_t cc0 = std::max<int64_t>(c0, 0), cc1 = std::min(c1, ib.w);
        if (rr1 > rr0 && cc1 > cc0)
          s.reads.push_back(block_in(Space::L2, in.get(Param::STaddr) + (rr0 - r0) * ib.row() + (cc0 - c0) * ib.pixel, ib,
                                     1, rr1 - rr0, cc1 - cc0, C * ib.elem));
      } else {
        fits(tile, ib, "vp_cfg_tp Tile", "vp_cfg_fm STile");
        // The first operand (dequantized with IQK0/IQB0) is at STaddr1, the
        // second (IQK1/IQB1) at STaddr: the reference programs pair them so.
        s.reads.push_back(block_in(Space::L2, in.get(Param::STaddr1), ib, 1, H, W, C * ib.elem));
        if (two) {
          // B: a size of 1 in its box broadcasts along that axis.
          Box bb = ib;
          if (s.cfg[kFm1] >= 0) {
            const Instruction& fm1 = prog_.instructions[size_t(s.cfg[kFm1])];
            positive(fm1.list(Param::STile), "vp_cfg_fm1 STile");
            bb = make_box(a_, fm1.list(Param::STile), fmt(fm1, Param::IDF));
          }
          const int64_t cb = bb.c == 1 ? 1 : C, hb = bb.h == 1 ? 1 : H, wb = bb.w == 1 ? 1 : W;
          const int32_t tb[3] = {int32_t(cb), int32_t(hb), int32_t(wb)};
          fits(tb, bb, "vp_cfg_tp Tile (operand B)", s.cfg[kFm1] >= 0 ? "vp_cfg_fm1 STile" : "vp_cfg_fm STile");
          s.reads.push_back(block_in(Space::L2, in.get(Param::STaddr), bb, 1, hb, wb, cb * bb.elem));
        }
      }
      s.writes.push_back(block_in(Space::L2, in.get(Param::DTaddr), ob, 1, H, W, C * ob.elem));
      break;
    }
    default:
      fail(i, "the functional model does not implement this instruction");
  }
  for (const Block& b : s.reads) check_block(i, b, "reads");
  for (const Block& b : s.writes) check_block(i, b, "writes");
}

std::vector<Step> plan_program(const arch::Architecture& a, const isa::Program& p, const Options& o) {
  std::vector<Step> steps(p.size());
  Planner planner(a, p, o);
  for (size_t i = 0; i < p.size(); ++i) planner.plan(i, steps[i]);
  return steps;
}

}  // namespace cct::footprint
