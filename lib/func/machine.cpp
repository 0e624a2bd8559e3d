#include "func/machine.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "interp/gemm.hpp"
#include "interp/int8_ops.hpp"
#include "support/error.hpp"
#include "support/npy.hpp"

namespace cct::func {

using isa::Instruction;
using isa::Opcode;
using isa::Param;
using footprint::kLutAdd;
using footprint::kLutAvgPool;
using footprint::kLutMaxPool;
using footprint::kLutResize;
using footprint::takes_act_params;
using footprint::two_operands;

namespace {

// The activation function of an activation LUT (int8::activate's), if it is one
// (footprint::activation_lut lists the same LUTs).
std::optional<int8::ActMode> lut_activation(int64_t lut) {
  switch (isa::Lut(lut)) {
    case isa::Lut::Relu: return int8::ActMode::Relu;
    case isa::Lut::Clip: return int8::ActMode::Clip;
    case isa::Lut::LeakyRelu: return int8::ActMode::LeakyRelu;
    case isa::Lut::Elu: return int8::ActMode::Elu;
    case isa::Lut::HardSigmoid: return int8::ActMode::HardSigmoid;
    case isa::Lut::HardSwish: return int8::ActMode::HardSwish;
    case isa::Lut::Sigmoid: return int8::ActMode::Sigmoid;
    case isa::Lut::Silu: return int8::ActMode::Silu;
    case isa::Lut::Tanh: return int8::ActMode::Tanh;
    case isa::Lut::Gelu: return int8::ActMode::Gelu;
    case isa::Lut::PRelu: return int8::ActMode::LeakyRelu;  // the slope is operand B
    default: return std::nullopt;
  }
}
// GPMD bit enabling the ReLU stage after the operation (69 with it, 4 without).
constexpr int64_t kGpmdRelu = 1;

// Integer sums of int8 products stay exact in fp32 when at most this many
// terms are added: 255 * 128 * 512 < 2^24.
constexpr int64_t kExactChunk = 512;
// Elements of the convolution window matrix built at once.
constexpr int64_t kChunkElements = int64_t(1) << 22;

float load_half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return half_to_float(h);
}
void store_half(uint8_t* p, float v) {
  uint16_t h = float_to_half(v);
  std::memcpy(p, &h, 2);
}
float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

int64_t at(std::span<const int32_t> v, size_t i) { return i < v.size() ? v[i] : 1; }

int8::Carry carry_of(int64_t f2f) {
  return f2f == int64_t(isa::Float2Fixed::ROUND) ? int8::Carry::Round : int8::Carry::Ceil;
}

}  // namespace

struct Machine::Pending {
  std::vector<uint8_t> data;  // the bytes of the write blocks, in block order
};

Machine::Machine(const arch::Architecture& a, const isa::Program& p, std::string file, std::vector<uint8_t> weights,
                 std::vector<uint8_t> activations)
    : a_(a), prog_(p), file_(std::move(file)), dram_w_(std::move(weights)), dram_a_(std::move(activations)) {
  l2_bytes_ = a.core.l2_bytes;
  // The architecture's WL0 size is counted in the instruction set's address unit (rows).
  wl0_bytes_ = a.core.wl0_bytes();
  l2_.resize(static_cast<size_t>(a.core_count()));
  wl0_.resize(static_cast<size_t>(a.core_count()));
}

Machine::~Machine() = default;

void Machine::fail(size_t i, const std::string& what) const {
  throw Error(kExitInvalidInput,
              at_line(file_, long(i) + 1, std::string(prog_.instructions[i].mnemonic()) + ": " + what));
}

int64_t Machine::memory_size(Space s) const {
  switch (s) {
    case Space::L2: return l2_bytes_;
    case Space::Wl0: return wl0_bytes_;
    case Space::DramWeights: return int64_t(dram_w_.size());
    case Space::DramActivations: return int64_t(dram_a_.size());
  }
  return 0;
}

uint8_t* Machine::mem(Space s, int32_t core) {
  switch (s) {
    case Space::L2:
    case Space::Wl0: {
      auto& v = (s == Space::L2 ? l2_ : wl0_)[size_t(core)];
      // Memories start as zeros (deterministic), allocated when a core first uses them.
      if (v.empty()) v.assign(size_t(memory_size(s)), 0);
      return v.data();
    }
    case Space::DramWeights: return dram_w_.data();
    case Space::DramActivations: return dram_a_.data();
  }
  return nullptr;
}

const uint8_t* Machine::memory(Space s, int32_t core) const { return const_cast<Machine*>(this)->mem(s, core); }

const uint8_t* Machine::l2_run(int32_t core, int64_t address, int64_t len, std::vector<uint8_t>& tmp) {
  const uint8_t* l2 = mem(Space::L2, core);
  const int64_t at = footprint::l2_address(address, l2_bytes_);
  if (at + len <= l2_bytes_) return l2 + at;
  // A run the ring splits at the end of L2 (the planner accepted it).
  tmp.resize(size_t(len));
  std::memcpy(tmp.data(), l2 + at, size_t(l2_bytes_ - at));
  std::memcpy(tmp.data() + (l2_bytes_ - at), l2, size_t(len - (l2_bytes_ - at)));
  return tmp.data();
}

void Machine::write_dram(int64_t address, const std::vector<uint8_t>& bytes) {
  if (address < 0 || address + int64_t(bytes.size()) > memory_size(Space::DramActivations))
    throw Error(kExitInternal, "host result at DRAM byte " + std::to_string(address) + " lies outside the activation space");
  if (!bytes.empty()) std::memcpy(mem(Space::DramActivations, 0) + address, bytes.data(), bytes.size());
}

void Machine::read_block(const Block& b, std::vector<uint8_t>& out) const {
  out.resize(size_t(b.size()));
  if (b.empty()) return;
  const uint8_t* m = memory(b.space, b.core);
  b.for_each([&](int64_t addr, int64_t off, int64_t len) { std::memcpy(out.data() + off, m + addr, size_t(len)); });
}

// ---- planning ------------------------------------------------------------------

void Machine::plan() {
  footprint::Options o;
  o.file = file_;
  o.dram_weight_bytes = int64_t(dram_w_.size()), o.dram_activation_bytes = int64_t(dram_a_.size());
  o.functional = true;
  steps_ = footprint::plan_program(a_, prog_, o);
}

// ---- execution -----------------------------------------------------------------

void Machine::start(size_t i) {
  const Instruction& in = prog_.instructions[i];
  if (in.is_config()) return;
  const Step& s = steps_[i];
  auto p = std::make_unique<Pending>();
  switch (in.op()) {
    case Opcode::ct_st:
    case Opcode::ct_bc:
    case Opcode::ct_ed:
    case Opcode::ct_hs:  // the host's work is the functional run's (functional.cpp, run_step)
    case Opcode::ct_hw:
      return;
    case Opcode::pe_conv: compute_conv(i, *p); break;
    case Opcode::vp_self: compute_vp_self(i, *p); break;
    case Opcode::vp_pool:
      if (in.get(Param::LUT) == kLutResize) compute_vp_resize(i, *p);
      else compute_vp_pool(i, *p);
      break;
    case Opcode::so_mov: {
      std::vector<uint8_t> data;
      read_block(s.reads[0], data);
      channels_[{s.core, int32_t(in.get(Param::DCORE)), in.get(Param::TAG)}].push_back(std::move(data));
      return;
    }
    case Opcode::si_mov:
      return;  // the data arrives at the end
    default:
      // Moves: the bytes read become the bytes written.
      read_block(s.reads[0], p->data);
      break;
  }
  pending_[i] = std::move(p);
}

void Machine::finish(size_t i) {
  const Instruction& in = prog_.instructions[i];
  if (in.is_config()) return;
  const Step& s = steps_[i];
  std::vector<uint8_t> received;
  const std::vector<uint8_t>* data = nullptr;
  std::unique_ptr<Pending> p;
  if (in.op() == Opcode::si_mov) {
    auto it = channels_.find({int32_t(in.get(Param::SCORE)), s.core, in.get(Param::TAG)});
    if (it == channels_.end() || it->second.empty())
      fail(i, "nothing was sent by core " + std::to_string(in.get(Param::SCORE)) + " with TAG " +
                  std::to_string(in.get(Param::TAG)) + " before this receive ended");
    received = std::move(it->second.front());
    it->second.pop_front();
    if (int64_t(received.size()) != s.writes[0].size())
      fail(i, "receives " + std::to_string(s.writes[0].size()) + " bytes but the matching so_mov sent " +
                  std::to_string(received.size()));
    data = &received;
  } else {
    auto it = pending_.find(i);
    if (it == pending_.end()) return;  // nothing to write (control, so_mov)
    p = std::move(it->second);
    pending_.erase(it);
    data = &p->data;
  }
  int64_t off = 0;
  for (const Block& b : s.writes) {
    if (b.empty()) continue;
    uint8_t* m = mem(b.space, b.core);
    b.for_each([&](int64_t addr, int64_t o, int64_t len) { std::memcpy(m + addr, data->data() + off + o, size_t(len)); });
    off += b.size();
  }
  macs_done_ += s.macs;
}

// pe_conv: out[n, oh, ow, k] = post(sum over (i, j, c) of w[k][i][j][c] * (x - PADV)),
// x the input at box row SPHI + oh*sh + i, column SPWI + ow*sw + j (padding
// contributes 0); post = channel scale and bias from the weight record, ReLU,
// requantization (INT8) or float16 rounding (FP16).
void Machine::compute_conv(size_t i, Pending& p) {
  const Instruction& in = prog_.instructions[i];
  const Instruction& fm = cfg(i, kFm);
  const Instruction& pm = cfg(i, kPm);
  const Instruction& tp = cfg(i, kTp);
  const Step& s = steps_[i];
  Box ib = make_box(a_, fm.list(Param::STile), 1), ob = make_box(a_, fm.list(Param::DTile), element_bytes(fm.get_enum<isa::DataFmt>(Param::DF)));
  auto tile = tp.list(Param::Tile), kernel = tp.list(Param::KERNEL), stride = pm.list(Param::STRIDE);
  const int64_t N = tile[0], K = tile[1], C = tile[2], OH = tile[3], OW = tile[4];
  const int64_t kh = kernel[0], kw = kernel[1], sh = stride[0], sw = stride[1];
  const int64_t sphi = in.get(Param::SPHI), spwi = in.get(Param::SPWI), staddr = in.get(Param::STaddr);
  const int32_t padv = int32_t(fm.number(Param::PADV));
  std::vector<uint8_t> tmp;  // an input run split by the end of L2
  const uint8_t* wl0 = mem(Space::Wl0, s.core) + in.get(Param::SWaddr) * a_.core.wl0_row_bytes;
  int64_t G = 1, dh = 1, dw = 1;
  if (s.cfg[kGp] >= 0) {
    const Instruction& gp = cfg(i, kGp);
    G = gp.get(Param::GROUPS), dh = at(gp.list(Param::DILATION), 0), dw = at(gp.list(Param::DILATION), 1);
  }
  // Group g's Kg outputs read its Cg input channels: the block-diagonal
  // dense convolution, computed group by group.
  const int64_t Cg = C / G, Kg = K / G;
  const WeightRecord rec = weight_record(a_, Cg, kh, kw, 1);
  const int64_t taps = kh * kw, kdim = taps * Cg, P = N * OH * OW;

  // Weights of each group as a [kdim][Kg] matrix of exact integers, rows in (tap, channel) order.
  std::vector<float> wt(size_t(kdim * K));
  std::vector<float> scale(static_cast<size_t>(K)), bias(static_cast<size_t>(K));
  for (int64_t k = 0; k < K; ++k) {
    const uint8_t* r = wl0 + k * rec.bytes();
    float* gw = wt.data() + (k / Kg) * kdim * Kg;
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t c = 0; c < Cg; ++c) gw[size_t((t * Cg + c) * Kg + k % Kg)] = float(int8_t(r[t * rec.cpad + c]));
    bias[size_t(k)] = load_f32(r + rec.kernel_bytes() + kBiasOffset);
    scale[size_t(k)] = load_f32(r + rec.kernel_bytes() + kChannelScaleOffset);
  }
  // Epilogue parameters.
  // ACTMD: ReLU, a clamp to [0, ACTPM] or a leaky ReLU of slope ACTPM (int8::Activation's Clip, LeakyRelu).
  int8::Activation act;
  switch (pm.get_enum<isa::ActMode>(Param::ACTMD)) {
    case isa::ActMode::DISABLE: break;
    case isa::ActMode::RELU: act.kind = int8::Act::Relu; break;
    case isa::ActMode::CLIP: act.kind = int8::Act::Clip, act.lo = 0.0f, act.hi = int8::param(pm.number(Param::ACTPM)); break;
    case isa::ActMode::LEAKY_RELU: act.kind = int8::Act::LeakyRelu, act.alpha = int8::param(pm.number(Param::ACTPM)); break;
  }
  const bool to_int8 = fm.get_enum<isa::DataFmt>(Param::DF) == isa::DataFmt::INT8;
  float mul_k = int8::param(pm.number(Param::QK)), sum_b = int8::param(pm.number(Param::QB));
  // FP16 outputs without requantization carry QK 0: the value itself.
  if (!to_int8 && mul_k == 0.0f) mul_k = 1.0f;
  const int8::Carry carry = carry_of(pm.get(Param::QC));
  p.data.resize(size_t(P * K * ob.elem));
  // Output pixels in chunks, so the window matrix stays small.
  const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(P, kChunkElements / std::max<int64_t>(1, kdim)));
  std::vector<float> col(size_t(chunk * kdim)), part(size_t(chunk * Kg));
  std::vector<int32_t> acc(size_t(chunk * Kg));
  for (int64_t g = 0; g < G; ++g)
    for (int64_t q0 = 0; q0 < P; q0 += chunk) {
      const int64_t pc = std::min(chunk, P - q0);
      // Input windows of group g as a [pc][kdim] matrix of x - PADV (0 in the padding).
      for (int64_t q = 0; q < pc; ++q) {
        const int64_t pix = q0 + q, n = pix / (OH * OW), oh = (pix / OW) % OH, ow = pix % OW;
        float* d = col.data() + q * kdim;
        for (int64_t a = 0; a < kh; ++a) {
          const int64_t r = sphi + oh * sh + a * dh;
          for (int64_t b = 0; b < kw; ++b, d += Cg) {
            const int64_t cc = spwi + ow * sw + b * dw;
            if (r < 0 || r >= ib.h || cc < 0 || cc >= ib.w) {
              std::fill(d, d + Cg, 0.0f);
              continue;
            }
            const uint8_t* x =
                l2_run(s.core, staddr + n * ib.sample() + (r - sphi) * ib.row() + (cc - spwi) * ib.pixel + g * Cg, Cg, tmp);
            for (int64_t c = 0; c < Cg; ++c) d[c] = float(int32_t(int8_t(x[c])) - padv);
          }
        }
      }
      // Exact int32 accumulation in chunks the fp32 GEMM sums without rounding.
      const float* gw = wt.data() + g * kdim * Kg;
      std::fill(acc.begin(), acc.begin() + pc * Kg, 0);
      for (int64_t k0 = 0; k0 < kdim; k0 += kExactChunk) {
        const int64_t kc = std::min(kExactChunk, kdim - k0);
        interp::sgemm(pc, Kg, kc, col.data() + k0, kdim, gw + k0 * Kg, Kg, part.data(), Kg, false);
        for (int64_t e = 0; e < pc * Kg; ++e) acc[size_t(e)] += int32_t(part[size_t(e)]);
      }
      for (int64_t q = 0; q < pc; ++q)
        for (int64_t kk = 0; kk < Kg; ++kk) {
          const int64_t k = g * Kg + kk;
          float v = int8::activate(act, int8::pe_to_real(acc[size_t(q * Kg + kk)], scale[size_t(k)], bias[size_t(k)]));
          uint8_t* o = p.data.data() + ((q0 + q) * K + k) * ob.elem;
          if (to_int8) *o = uint8_t(int8::post_cal(v, mul_k, sum_b, carry));
          else store_half(o, int8::post_cal_float(v, mul_k, sum_b, true));
        }
    }
}

namespace {

// The VP's input stage: an element as fp32, dequantized when IQEN is set.
struct VpInput {
  bool half = false, dequantize = false;
  float scale = 1.0f, zero = 0.0f;
  float operator()(const uint8_t* p) const {
    if (half) {
      float f = load_half(p);
      return dequantize ? int8::pre_cal_float(f, scale, zero) : f;
    }
    int32_t q = int8_t(*p);
    return dequantize ? int8::pre_cal(q, scale, zero) : float(q);
  }
};

// The VP's output stage (vp_cfg_qp): requantization to INT8 or float16 rounding.
struct VpOutput {
  bool to_int8 = true;
  float mul_k = 1.0f, sum_b = 0.0f;
  int8::Carry carry = int8::Carry::Round;
  void operator()(float v, uint8_t* o) const {
    if (to_int8) *o = uint8_t(int8::post_cal(v, mul_k, sum_b, carry));
    else store_half(o, int8::post_cal_float(v, mul_k, sum_b, true));
  }
};

}  // namespace

void Machine::compute_vp_self(size_t i, Pending& p) {
  const Instruction& in = prog_.instructions[i];
  const Instruction& fm = cfg(i, kFm);
  const Instruction& tp = cfg(i, kTp);
  const Instruction& qp = cfg(i, kQp);
  const Step& s = steps_[i];
  const int64_t lut = in.get(Param::LUT);
  const bool two = two_operands(lut);
  const bool deq = in.get(Param::IQEN) != 0;
  const bool relu = (in.get(Param::GPMD) & kGpmdRelu) != 0;
  VpInput x0, x1;
  x0.half = x1.half = fm.get_enum<isa::DataFmt>(Param::IDF) == isa::DataFmt::FP16;
  Box bb = make_box(a_, fm.list(Param::STile), x0.half ? 2 : 1);
  if (two && s.cfg[kFm1] >= 0) {
    const Instruction& fm1 = cfg(i, kFm1);
    x1.half = fm1.get_enum<isa::DataFmt>(Param::IDF) == isa::DataFmt::FP16;
    bb = make_box(a_, fm1.list(Param::STile), x1.half ? 2 : 1);
  }
  const auto act = lut_activation(lut);
  float k_scalar = 1.0f, alpha = 0.0f, beta = 0.0f;
  if (act) k_scalar = int8::param(cfg(i, kGms).number(Param::MG0V));
  if (takes_act_params(lut)) {
    alpha = int8::param(cfg(i, kAct).number(Param::ACTPM));
    beta = int8::param(cfg(i, kAct).number(Param::ACTPM1));
  }
  x0.dequantize = x1.dequantize = deq;
  if (deq) {
    const Instruction& iq = cfg(i, kIq);
    x0.scale = int8::param(iq.number(Param::IQK0)), x0.zero = int8::param(iq.number(Param::IQB0));
    if (two) {
      const Instruction& iq1 = cfg(i, kIq1);
      x1.scale = int8::param(iq1.number(Param::IQK1)), x1.zero = int8::param(iq1.number(Param::IQB1));
    }
  }
  VpOutput out;
  out.to_int8 = fm.get_enum<isa::DataFmt>(Param::ODF) == isa::DataFmt::INT8;
  out.mul_k = int8::param(qp.number(Param::QK)), out.sum_b = int8::param(qp.number(Param::QB));
  out.carry = carry_of(qp.get(Param::QCS));
  auto tile = tp.list(Param::Tile);
  const int64_t C = tile[0], H = tile[1], W = tile[2];
  const int ie = x0.half ? 2 : 1, ie1 = x1.half ? 2 : 1, oe = out.to_int8 ? 1 : 2;
  // B's block as read in plan(): broadcast axes have one element.
  const int64_t cb = bb.c == 1 ? 1 : C, hb = bb.h == 1 ? 1 : H, wb = bb.w == 1 ? 1 : W;
  std::vector<uint8_t> a, b;
  read_block(s.reads[0], a);
  if (two) read_block(s.reads[1], b);
  const int64_t pixels = s.writes[0].pixels();
  p.data.resize(size_t(pixels * C * oe));
  for (int64_t q = 0; q < pixels; ++q) {
    const int64_t qb = two ? (hb == 1 ? 0 : q / W) * wb + (wb == 1 ? 0 : q % W) : 0;
    for (int64_t c = 0; c < C; ++c) {
      float v = x0(a.data() + (q * C + c) * ie);
      if (two) {
        float y = x1(b.data() + (qb * cb + (cb == 1 ? 0 : c)) * ie1);
        switch (isa::Lut(lut)) {
          case isa::Lut::Add: v = v + y; break;
          case isa::Lut::Sub: v = v - y; break;
          case isa::Lut::ReverseSub: v = y - v; break;
          case isa::Lut::Mul: v = v * y; break;
          default: alpha = y; break;  // PReLU: B is the slope
        }
      }
      if (act) v = int8::activate(*act, v * k_scalar, alpha, beta);
      if (relu && v < 0.0f) v = 0.0f;
      out(v, p.data.data() + (q * C + c) * oe);
    }
  }
}

void Machine::compute_vp_pool(size_t i, Pending& p) {
  const Instruction& in = prog_.instructions[i];
  const Instruction& fm = cfg(i, kFm);
  const Instruction& tp = cfg(i, kTp);
  const Instruction& qp = cfg(i, kQp);
  const Step& s = steps_[i];
  const bool is_max = in.get(Param::LUT) == kLutMaxPool;
  VpInput x;
  x.half = fm.get_enum<isa::DataFmt>(Param::IDF) == isa::DataFmt::FP16;
  x.dequantize = in.get(Param::IQEN) != 0;
  if (x.dequantize) {
    const Instruction& iq = cfg(i, kIq);
    x.scale = int8::param(iq.number(Param::IQK0)), x.zero = int8::param(iq.number(Param::IQB0));
  }
  VpOutput out;
  out.to_int8 = fm.get_enum<isa::DataFmt>(Param::ODF) == isa::DataFmt::INT8;
  out.mul_k = int8::param(qp.number(Param::QK)), out.sum_b = int8::param(qp.number(Param::QB));
  out.carry = carry_of(qp.get(Param::QCS));
  const float k_scalar = is_max ? 1.0f : int8::param(cfg(i, kGms).number(Param::MG0V));
  int64_t dh = 1, dw = 1;
  bool inside_divisor = false;
  if (s.cfg[kPl] >= 0) {
    const Instruction& pl = cfg(i, kPl);
    dh = pl.list(Param::DILATION)[0], dw = pl.list(Param::DILATION)[1];
    inside_divisor = !is_max && pl.get(Param::PLDIV) == 1;
  }
  const bool relu = (in.get(Param::GPMD) & kGpmdRelu) != 0;
  // Pads enter the window as PADV_AREA (the smallest value for max pooling, 0 for averages).
  const float pad = float(tp.get(Param::PADV_AREA));
  Box ib = make_box(a_, fm.list(Param::STile), x.half ? 2 : 1);
  auto tile = tp.list(Param::Tile), kernel = tp.list(Param::KERNEL), stride = tp.list(Param::STRIDE);
  const int64_t C = tile[0], OH = tile[1], OW = tile[2];
  const int64_t r0 = in.get(Param::IPH), c0 = in.get(Param::IPW), staddr = in.get(Param::STaddr);
  std::vector<uint8_t> tmp;
  const int oe = out.to_int8 ? 1 : 2;
  p.data.resize(size_t(OH * OW * C * oe));
  for (int64_t oh = 0; oh < OH; ++oh)
    for (int64_t ow = 0; ow < OW; ++ow)
      for (int64_t c = 0; c < C; ++c) {
        float acc = is_max ? -std::numeric_limits<float>::infinity() : 0.0f;
        float k = k_scalar;
        if (inside_divisor) {
          // PLDIV 1: the window's elements inside the box (the rest is padding).
          int64_t count = 0;
          for (int64_t a = 0; a < kernel[0]; ++a)
            for (int64_t b = 0; b < kernel[1]; ++b) {
              const int64_t r = r0 + oh * stride[0] + a * dh, cc = c0 + ow * stride[1] + b * dw;
              count += r >= 0 && r < ib.h && cc >= 0 && cc < ib.w;
            }
          k = int8::inside_divisor(std::max<int64_t>(count, 1));
        }
        for (int64_t a = 0; a < kernel[0]; ++a) {
          const int64_t r = r0 + oh * stride[0] + a * dh;
          for (int64_t b = 0; b < kernel[1]; ++b) {
            const int64_t cc = c0 + ow * stride[1] + b * dw;
            const bool inside = r >= 0 && r < ib.h && cc >= 0 && cc < ib.w;
            if (!inside && !is_max && (pad == 0.0f || inside_divisor)) continue;  // a zero pad adds nothing
            float t = inside ? x(l2_run(s.core, staddr + (r - r0) * ib.row() + (cc - c0) * ib.pixel + c * ib.elem, ib.elem, tmp)) : pad;
            acc = is_max ? std::max(acc, t) : int8::avg_pool_step(acc, t, k);
          }
        }
        if (relu && acc < 0.0f) acc = 0.0f;
        out(acc, p.data.data() + ((oh * OW + ow) * C + c) * oe);
      }
}

// Resize (LUT 57): each output pixel of the tile reads the taps of its row
// and column (int8::resize_tap, from vp_cfg_rs) in the input box at STaddr,
// dequantized; int8::resize_sample takes one element, blends four (linear)
// or gives zero (a hole of zero insertion).
void Machine::compute_vp_resize(size_t i, Pending& p) {
  const Instruction& in = prog_.instructions[i];
  const Instruction& fm = cfg(i, kFm);
  const Instruction& tp = cfg(i, kTp);
  const Instruction& qp = cfg(i, kQp);
  const Instruction& rs = cfg(i, kRs);
  const Step& s = steps_[i];
  VpInput x;
  x.half = fm.get_enum<isa::DataFmt>(Param::IDF) == isa::DataFmt::FP16;
  x.dequantize = in.get(Param::IQEN) != 0;
  if (x.dequantize) {
    const Instruction& iq = cfg(i, kIq);
    x.scale = int8::param(iq.number(Param::IQK0)), x.zero = int8::param(iq.number(Param::IQB0));
  }
  VpOutput out;
  out.to_int8 = fm.get_enum<isa::DataFmt>(Param::ODF) == isa::DataFmt::INT8;
  out.mul_k = int8::param(qp.number(Param::QK)), out.sum_b = int8::param(qp.number(Param::QB));
  out.carry = carry_of(qp.get(Param::QCS));
  const bool relu = (in.get(Param::GPMD) & kGpmdRelu) != 0;
  const auto mode = int8::ResizeMode(rs.get(Param::RSMD));
  auto insz = rs.list(Param::RSIN), oo = rs.list(Param::RSOO), io = rs.list(Param::RSIO);
  const float kh = int8::param(rs.number(Param::RSKH)), bh = int8::param(rs.number(Param::RSBH));
  const float kw = int8::param(rs.number(Param::RSKW)), bw = int8::param(rs.number(Param::RSBW));
  Box ib = make_box(a_, fm.list(Param::STile), x.half ? 2 : 1);
  auto tile = tp.list(Param::Tile);
  const int64_t C = tile[0], OH = tile[1], OW = tile[2];
  const int64_t staddr = in.get(Param::STaddr);
  std::vector<uint8_t> tmp;
  auto at = [&](int64_t r, int64_t c, int64_t ch) {
    return x(l2_run(s.core, staddr + (r - io[0]) * ib.row() + (c - io[1]) * ib.pixel + ch * ib.elem, ib.elem, tmp));
  };
  const int oe = out.to_int8 ? 1 : 2;
  p.data.resize(size_t(OH * OW * C * oe));
  for (int64_t oh = 0; oh < OH; ++oh) {
    const int8::ResizeTap ty = int8::resize_tap(mode, oo[0] + oh, kh, bh, insz[0]);
    for (int64_t ow = 0; ow < OW; ++ow) {
      const int8::ResizeTap tx = int8::resize_tap(mode, oo[1] + ow, kw, bw, insz[1]);
      for (int64_t c = 0; c < C; ++c) {
        float v = int8::resize_sample(mode, [&](int64_t r, int64_t col) { return at(r, col, c); }, ty, tx);
        if (relu && v < 0.0f) v = 0.0f;
        out(v, p.data.data() + ((oh * OW + ow) * C + c) * oe);
      }
    }
  }
}

}  // namespace cct::func
