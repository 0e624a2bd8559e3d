#include "timing/instruction_model.hpp"

#include <algorithm>
#include <cmath>

#include "support/error.hpp"

namespace cct::timing {

using isa::Opcode;
using isa::Param;

int format_bytes(int64_t data_fmt) { return data_fmt == int64_t(isa::DataFmt::FP16) ? 2 : 1; }

namespace {

int64_t at(std::span<const int32_t> v, size_t i) { return i < v.size() ? v[i] : 1; }

// Sizes read from a program must be positive and small enough that every
// product the model forms stays exact: each at most 2^20, a block at most 2^40
// elements. Anything else is an input error, not an overflow.
constexpr int64_t kMaxDim = isa::kMaxDimension;
constexpr int64_t kMaxElements = int64_t(1) << 40;

void check_dims(std::span<const int32_t> dims, std::string_view what, const isa::Instruction& inst,
                const std::string& file, long line) {
  int64_t product = 1;
  for (int32_t d : dims) {
    if (d <= 0 || d > kMaxDim)
      throw_input_error(at_line(file, line, std::string(inst.mnemonic()) + ": " + std::string(what) + " sizes must be in 1.." +
                                                std::to_string(kMaxDim) + ", got " + std::to_string(d)));
    product *= d;
    if (product > kMaxElements)
      throw_input_error(at_line(file, line, std::string(inst.mnemonic()) + ": " + std::string(what) + " is too large (over " +
                                                std::to_string(kMaxElements) + " elements)"));
  }
}

Work fixed(double cycles) {
  Work w;
  w.cycles = saturate_cycles(cycles);
  return w;
}

}  // namespace

const isa::Instruction& CoreModel::config(Opcode cfg, const isa::Instruction& user, const std::string& file,
                                          long line) const {
  if (!have_cfg_[size_t(cfg)])
    throw_input_error(at_line(file, line, "") + std::string(user.mnemonic()) + " before any " + std::string(isa::mnemonic(cfg)) +
                      " of its core configured it");
  return cfg_[size_t(cfg)];
}

Work CoreModel::price(const isa::Instruction& inst, int64_t vp_parts, const std::string& file, long line) {
  const arch::Architecture& a = *arch_;
  const auto& tm = a.timing;
  if (inst.is_config()) {
    cfg_[size_t(inst.op())] = inst;
    have_cfg_[size_t(inst.op())] = true;
    return fixed(tm.config_cycles);
  }
  // A multicast member is priced as the unicast load it performs on its
  // core; the simulator reads DRAM once for its group.
  switch (isa::unicast_load_of(inst.op())) {
    case Opcode::ct_st:
    case Opcode::ct_bc:
    case Opcode::ct_ed:
    case Opcode::ct_hs:
      return fixed(tm.control_cycles);
    case Opcode::ct_hw: {
      // The host's work; the simulator runs it on the host and ends the wait.
      Work w;
      w.kind = WorkKind::HostWait;
      if (inst.get(Param::HOPS) < 0 || inst.get(Param::HBYTES) < 0)
        throw_input_error(at_line(file, line, "ct_hw: HOPS and HBYTES must not be negative"));
      w.ops = inst.get(Param::HOPS);
      w.bytes = inst.get(Param::HBYTES);
      w.cycles = host_cycles(a, w.ops, w.bytes);
      return w;
    }
    case Opcode::dt_cal: {
      auto tile = inst.list(Param::Tile);
      check_dims(tile, "Tile", inst, file, line);
      Work w = fixed(tm.dt_fixed_cycles);
      w.ops = at(tile, 0) * at(tile, 1) * at(tile, 2) * at(tile, 3);
      return w;
    }
    case Opcode::lda_mov:
    case Opcode::sta_mov: {
      bool store = inst.op() == Opcode::sta_mov;
      const auto& cfg = config(store ? Opcode::sta_cfg : Opcode::lda_cfg, inst, file, line);
      auto tile = inst.list(Param::Tile);
      check_dims(tile, "Tile", inst, file, line);
      Work w;
      w.kind = store ? WorkKind::DramStore : WorkKind::DramLoad;
      w.bytes = activation_bytes(a, at(tile, 0), at(tile, 1), at(tile, 2), at(tile, 3), format_bytes(cfg.get(Param::DF)));
      w.energy = dram_transfer_energy(a, w.bytes);
      return w;
    }
    case Opcode::ldw_mov:
    case Opcode::lw_mov: {
      bool lw = inst.op() == Opcode::lw_mov || inst.op() == Opcode::lw_mc;
      const auto& cfg = config(lw ? Opcode::lw_cfg : Opcode::ldw_cfg, inst, file, line);
      auto ws = inst.list(Param::Wsize);
      check_dims(ws, "Wsize", inst, file, line);
      int64_t bytes = weight_bytes(a, at(ws, 0), at(ws, 1), at(ws, 2), at(ws, 3), format_bytes(cfg.get(Param::DF)));
      if (lw) {
        bool from_dram = inst.op() == Opcode::lw_mc || inst.get(Param::SS) != 0;
        wl0_in_l2_[inst.get(Param::DTaddr)] = !from_dram;
        // SS=0 copies nothing: the PE streams those weights from L2 itself.
        if (!from_dram) return fixed(tm.lw_fixed_cycles);
      }
      Work w;
      w.kind = WorkKind::DramLoad;
      w.bytes = bytes;
      w.energy = dram_transfer_energy(a, bytes);
      if (lw) w.energy.l1 += double(bytes) * a.energy.l1_pj_per_byte;
      return w;
    }
    case Opcode::pe_conv: {
      const auto& fm = config(Opcode::pe_cfg_fm, inst, file, line);
      const auto& pm = config(Opcode::pe_cfg_pm, inst, file, line);
      const auto& tp = config(Opcode::pe_cfg_tp, inst, file, line);
      auto tile = tp.list(Param::Tile);
      auto kernel = tp.list(Param::KERNEL);
      auto stride = pm.list(Param::STRIDE);
      check_dims(tile, "pe_cfg_tp Tile", inst, file, line);
      check_dims(kernel, "pe_cfg_tp KERNEL", inst, file, line);
      check_dims(stride, "pe_cfg_pm STRIDE", inst, file, line);
      auto mti = tp.list(Param::MTI);
      ConvTile t;
      t.n = at(tile, 0), t.k = at(tile, 1), t.c = at(tile, 2), t.h = at(tile, 3), t.w = at(tile, 4);
      t.r = at(kernel, 0), t.s = at(kernel, 1);
      t.stride_h = at(stride, 0), t.stride_w = at(stride, 1);
      t.mtk0 = std::max<int64_t>(1, tp.get(Param::MTK0));
      t.mtc0 = tp.get(Param::MTC0);
      t.mini_h = at(mti, 0) + 1, t.mini_w = at(mti, 1) + 1;
      // pe_cfg_gp is optional: before any, convolutions are dense and undilated.
      if (have_cfg_[size_t(Opcode::pe_cfg_gp)]) {
        const auto& gp = cfg_[size_t(Opcode::pe_cfg_gp)];
        auto dil = gp.list(Param::DILATION);
        t.groups = gp.get(Param::GROUPS);
        t.dilation_h = at(dil, 0), t.dilation_w = at(dil, 1);
        if (t.groups <= 0 || t.groups > kMaxDim || t.dilation_h <= 0 || t.dilation_w <= 0 || t.dilation_h > kMaxDim ||
            t.dilation_w > kMaxDim)
          throw_input_error(at_line(file, line, "pe_conv: pe_cfg_gp GROUPS and DILATION must be positive"));
        if (t.k % t.groups != 0 || t.c % t.groups != 0)
          throw_input_error(at_line(file, line, "pe_conv: pe_cfg_gp GROUPS " + std::to_string(t.groups) +
                                                    " does not divide the tile's " + std::to_string(t.k) + " outputs and " +
                                                    std::to_string(t.c) + " inputs"));
      }
      t.in_bytes = format_bytes(fm.get(Param::SF));
      t.out_bytes = format_bytes(fm.get(Param::DF));
      auto it = wl0_in_l2_.find(inst.get(Param::SWaddr));
      t.weights_in_l2 = it != wl0_in_l2_.end() && it->second;
      if (t.n <= 0 || t.k <= 0 || t.c <= 0 || t.h <= 0 || t.w <= 0 || t.r <= 0 || t.s <= 0 || t.stride_h <= 0 ||
          t.stride_w <= 0 || t.mtc0 < 0 || t.mtc0 > kMaxDim || t.mtk0 > kMaxDim || t.mini_h <= 0 || t.mini_w <= 0 ||
          t.mini_h > kMaxDim || t.mini_w > kMaxDim)
        throw_input_error(at_line(file, line, "pe_conv: its configuration has a non-positive tile, kernel, stride or mini tile"));
      ConvCost c = conv_cost(a, t, "pe_conv");
      Work w = fixed(0);
      w.cycles = c.cycles;
      w.ops = c.macs;
      w.bytes = c.act_bytes + c.weight_bytes + c.out_bytes;
      w.energy = c.energy;
      return w;
    }
    case Opcode::vp_self:
    case Opcode::vp_pool: {
      const auto& fm = config(Opcode::vp_cfg_fm, inst, file, line);
      const auto& tp = config(Opcode::vp_cfg_tp, inst, file, line);
      bool pool = inst.op() == Opcode::vp_pool;
      // A resize works per output pixel (KERNEL: the taps it blends), a
      // pooling over its input box.
      bool resize = pool && inst.get(Param::LUT) == int64_t(isa::Lut::Resize);
      if (resize) pool = false;
      auto in = pool ? fm.list(Param::STile) : tp.list(Param::Tile);
      auto out = tp.list(Param::Tile);
      auto kernel = tp.list(Param::KERNEL);
      check_dims(in, pool ? "vp_cfg_fm STile" : "vp_cfg_tp Tile", inst, file, line);
      check_dims(out, "vp_cfg_tp Tile", inst, file, line);
      if (pool || resize) check_dims(kernel, "vp_cfg_tp KERNEL", inst, file, line);  // unused by elementwise operations
      VpOp op;
      op.c = at(in, 0), op.h = at(in, 1), op.w = at(in, 2);
      op.out_pixels = at(out, 1) * at(out, 2);
      op.in_bytes = format_bytes(fm.get(Param::IDF));
      op.out_bytes = format_bytes(fm.get(Param::ODF));
      op.two_inputs = !pool && tp.get(Param::T1F) != 0;
      // A second operand with a box of its own (vp_cfg_fm1) reads one element
      // along each axis where the box has size 1 (broadcast).
      if (op.two_inputs && have_cfg_[size_t(Opcode::vp_cfg_fm1)]) {
        const auto& fm1 = cfg_[size_t(Opcode::vp_cfg_fm1)];
        auto b = fm1.list(Param::STile);
        check_dims(b, "vp_cfg_fm1 STile", inst, file, line);
        op.second_elements = (at(b, 0) == 1 ? 1 : op.c) * (at(b, 1) == 1 ? 1 : op.h) * (at(b, 2) == 1 ? 1 : op.w);
        op.second_bytes = format_bytes(fm1.get(Param::IDF));
      }
      op.window = pool || resize ? at(kernel, 0) * at(kernel, 1) : 1;
      if (op.c <= 0 || op.h <= 0 || op.w <= 0) throw_input_error(at_line(file, line, std::string(inst.mnemonic()) + ": empty tile"));
      VpCost c = vp_cost(a, op);
      Work w = fixed(0);
      w.cycles = vp_instruction_cycles(a, c.layer_cycles, vp_parts);
      double share = 1.0 / double(std::max<int64_t>(vp_parts, 1));
      w.ops = c.elements;
      w.bytes = c.bytes;
      w.energy = c.energy;
      // The work is the layer's, split like the time.
      w.energy.vp *= share, w.energy.l2 *= share;
      w.ops = int64_t(std::llround(double(c.elements) * share));
      w.bytes = int64_t(std::llround(double(c.bytes) * share));
      return w;
    }
    case Opcode::so_mov:
    case Opcode::si_mov: {
      bool send = inst.op() == Opcode::so_mov;
      const auto& cfg = config(send ? Opcode::so_cfg : Opcode::si_cfg, inst, file, line);
      auto tile = inst.list(Param::Tile);
      check_dims(tile, "Tile", inst, file, line);
      Work w;
      w.kind = send ? WorkKind::Send : WorkKind::Receive;
      w.bytes = activation_bytes(a, at(tile, 0), at(tile, 1), at(tile, 2), at(tile, 3), format_bytes(cfg.get(Param::DF)));
      w.energy.l2 = double(w.bytes) * a.energy.l2_pj_per_byte;
      return w;
    }
    default:
      break;
  }
  throw_input_error(at_line(file, line, std::string(inst.mnemonic()) + ": no timing model for this instruction"));
}

}  // namespace cct::timing
