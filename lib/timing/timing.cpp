#include "timing/timing.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "arch/datapath.hpp"
#include "isa/isa.hpp"
#include "support/error.hpp"
#include "support/int_math.hpp"

namespace cct::timing {
namespace {

// Model cycles to integer cycles: the fixed part plus floor(work / efficiency).
// The small epsilon keeps an exact product (X / 0.995...) from flooring one low.
int64_t scaled_cycles(double fixed, double work, double efficiency) {
  return add_cycles(saturate_cycles(fixed), saturate_cycles(std::floor(work / efficiency + 1e-7)));
}

}  // namespace

int64_t saturate_cycles(double cycles) {
  if (!(cycles < double(kMaxCycles))) return kMaxCycles;  // also NaN
  return cycles <= 0 ? 0 : std::llround(cycles);
}

Energy& Energy::operator+=(const Energy& o) {
  mac += o.mac, vp += o.vp, l1 += o.l1, l2 += o.l2, dram += o.dram, noc += o.noc, d2d += o.d2d;
  static_ += o.static_;
  return *this;
}

int64_t weight_bytes(const arch::Architecture& a, int64_t k, int64_t c, int64_t r, int64_t s, int elem_bytes) {
  // Rows of one output channel are stored on whole bursts of the weight path
  // (measured on the reference loads).
  int64_t row = round_up(round_up(c * elem_bytes, a.core.l2_channel_align_bytes) * r * s, arch::kWeightBurstBytes);
  return k * (row + a.core.weight_extra_bytes_per_out_channel);
}

double dram_channel_bytes_per_cycle(const arch::Architecture& a) { return a.dram_channel_bytes_per_cycle(); }

int64_t dram_transfer_cycles(const arch::Architecture& a, int64_t bytes, bool store) {
  double fixed = a.dram.latency_cycles + (store ? a.timing.st_fixed_cycles : a.timing.ld_fixed_cycles);
  // The last partial cycle of a transfer counts whole (matches the reference to the cycle for small loads).
  return add_cycles(saturate_cycles(fixed), saturate_cycles(std::ceil(double(bytes) / dram_channel_bytes_per_cycle(a) - 1e-9)));
}

Energy dram_transfer_energy(const arch::Architecture& a, int64_t bytes) {
  Energy e;
  e.dram = double(bytes) * 8.0 * a.energy.dram_pj_per_bit;
  e.l2 = double(bytes) * a.energy.l2_pj_per_byte;
  return e;
}

// The default mini tile reads at most this many input channels (a guess for
// predictors without a program, not a limit of the array).
constexpr int64_t kDefaultInputChannels = 512;

ConvTile with_default_mini_tiles(ConvTile t) {
  t.mtk0 = 1;
  int64_t groups = ceil_div(t.c, arch::kChannelGroup);
  t.mtc0 = std::min<int64_t>(groups, kDefaultInputChannels / arch::kChannelGroup);
  t.mini_h = std::min<int64_t>(t.h, 2);
  t.mini_w = std::min<int64_t>(t.w, 2);
  return t;
}

ConvCost conv_cost(const arch::Architecture& a, const ConvTile& t, const char* where) {
  auto bad = [&](const char* what) { throw_input_error(std::string(where) + ": " + what); };
  if (t.n <= 0 || t.k <= 0 || t.c <= 0 || t.h <= 0 || t.w <= 0) bad("tile sizes must be positive");
  if (t.r <= 0 || t.s <= 0 || t.stride_h <= 0 || t.stride_w <= 0) bad("kernel and stride must be positive");
  if (t.dilation_h <= 0 || t.dilation_w <= 0) bad("dilation must be positive");
  if (t.groups <= 0 || t.k % t.groups != 0 || t.c % t.groups != 0)
    bad("groups must divide the tile's output and input channels");
  if (t.mtk0 <= 0 || t.mtc0 < 0 || t.mini_h <= 0 || t.mini_w <= 0) bad("mini tile sizes must be positive");
  if (t.in_bytes <= 0 || t.out_bytes <= 0) bad("element sizes must be positive");
  // The model walks (output groups / mtk0) x (channel blocks) weight blocks:
  // bound the walk so no tile can stall a caller.
  constexpr double kMaxBlocks = 1 << 24;
  if (double(t.k) / double(a.core.pe_cols) / double(t.mtk0) * (double(t.c) / double(a.core.pe_rows) + 1) > kMaxBlocks)
    bad("tile too large for the timing model");

  const auto& tm = a.timing;
  const int64_t rows = a.core.pe_rows;      // input channels (x kernel taps) per cycle
  const int64_t cols = a.core.pe_cols;      // output channels per cycle
  const int64_t align = a.core.l2_channel_align_bytes;
  auto padded = [&](int64_t ch) { return round_up(ch * t.in_bytes, align) / t.in_bytes; };  // channels as laid out
  const bool grouped = t.groups > 1;
  const int64_t group_in = t.c / t.groups, group_out = t.k / t.groups;
  const int64_t rec_c = padded(group_in);  // input channels of one output channel's weight record
  const int64_t taps = t.r * t.s;
  const int64_t out_groups = ceil_div(t.k, cols);
  const int64_t group_ch = align / t.in_bytes;  // MTC0 counts groups of this many channels
  const int64_t mini_h = std::min(t.mini_h, t.h), mini_w = std::min(t.mini_w, t.w);
  const double out_floor = t.out_bytes >= 2 ? tm.pe_output_cycles_fp16 : tm.pe_output_cycles_int8;
  // The input pixels an output block of h x w pixels reads: per axis the
  // union of each tap's run of (n - 1) * stride + 1 pixels. Taps further
  // apart than a run (a strongly dilated kernel) leave gaps the array does
  // not read, so the span is the taps' runs, not the whole window.
  auto span = [](int64_t n, int64_t stride, int64_t taps_on_axis, int64_t dilation) {
    const int64_t run = (n - 1) * stride + 1;
    return dilation <= run ? run + (taps_on_axis - 1) * dilation : taps_on_axis * run;
  };
  auto window_of = [&](int64_t h, int64_t w) {
    return span(h, t.stride_h, t.r, t.dilation_h) * span(w, t.stride_w, t.s, t.dilation_w);
  };
  // Input channels the outputs [k0, k1) read: all of them for a dense
  // convolution, the channels of the groups they belong to otherwise (a
  // grouped convolution runs on the array as the block-diagonal dense one:
  // each column reads its group's channels, so a column block of depthwise
  // outputs reads as many channels as it has columns).
  auto channels_read = [&](int64_t k0, int64_t k1) {
    if (!grouped) return padded(t.c);
    return padded((( k1 - 1) / group_out - k0 / group_out + 1) * group_in);
  };
  auto ch_mini_of = [&](int64_t ch) { return t.mtc0 == 0 ? ch : std::min(ch, t.mtc0 * group_ch); };

  // Output mini tiles of one image fall in at most four size classes: full,
  // right edge, bottom edge and corner.
  struct Mini {
    int64_t h, w, count;
  };
  Mini minis[4];
  int nminis = 0;
  const int64_t fh = t.h / mini_h, rh = t.h % mini_h, fw = t.w / mini_w, rw = t.w % mini_w;
  auto add_mini = [&](int64_t h, int64_t w, int64_t count) {
    if (h > 0 && w > 0 && count > 0) minis[nminis++] = Mini{h, w, count};
  };
  add_mini(mini_h, mini_w, fh * fw);
  add_mini(mini_h, rw, fh);
  add_mini(rh, mini_w, fw);
  add_mini(rh, rw, 1);

  // Input pixels of a 1x1 convolution read at this pitch collide in L2.
  const bool conflicts = taps == 1 && tm.pe_bank_conflict_pitch_bytes > 0 &&
                         double(padded(t.c) * t.in_bytes * t.stride_w) == tm.pe_bank_conflict_pitch_bytes;

  ConvCost cost;
  // Cycles of all output mini tiles of the batch for one input-channel mini
  // tile of `ch` channels and `mk` output groups processed together. In a
  // dense convolution every output group reads the same channels (the array
  // takes them mk times); in a grouped one they are the groups' own channels,
  // read once.
  auto minis_cycles = [&](int64_t ch, int64_t mk, int64_t* act_bytes) {
    const int64_t passes = grouped ? 1 : mk;
    double sum = 0;
    for (int i = 0; i < nminis; ++i) {
      const Mini& m = minis[i];
      double macs_cycles = double(passes * m.h * m.w * ch * taps) / double(rows);
      if (conflicts) macs_cycles /= tm.pe_bank_conflict_efficiency;
      int64_t act = ch * t.in_bytes * window_of(m.h, m.w);
      double cycles = std::max(macs_cycles, double(act) / tm.pe_act_bytes_per_cycle);
      int64_t mini_weights = mk * cols * (grouped ? rec_c : ch) * taps;
      if (taps == 1 && double(mini_weights) > tm.pe_weight_cache_bytes)
        cycles = std::max(cycles, double(mini_weights) / tm.pe_weight_reload_bytes_per_cycle);
      sum += cycles * double(m.count);
      *act_bytes += act * m.count * t.n;
    }
    return sum * double(t.n);
  };

  double compute = 0;
  int64_t first_ch_mini = 0, first_channel_minis = 1;
  for (int64_t g = 0; g < out_groups; g += t.mtk0) {
    int64_t mk = std::min(t.mtk0, out_groups - g);
    int64_t ch_read = channels_read(g * cols, std::min(t.k, (g + mk) * cols));
    int64_t ch_mini = ch_mini_of(ch_read);
    if (g == 0) first_ch_mini = ch_mini, first_channel_minis = ceil_div(ch_read, ch_mini);
    double group = 0;
    for (int64_t c0 = 0; c0 < ch_read; c0 += ch_mini) group += minis_cycles(std::min(ch_mini, ch_read - c0), mk, &cost.act_bytes);
    group = std::max(group, double(t.n * t.h * t.w * mk) * out_floor);
    compute += group;
  }

  // Pipeline fill: grows with the first activation window.
  double first_act = double(first_ch_mini * t.in_bytes * window_of(mini_h, mini_w));
  double setup = tm.pe_setup_cycles + tm.pe_setup_cycles_per_act_line * first_act / double(rows) +
                 (first_channel_minis > 1 ? tm.pe_channel_split_cycles : 0.0);

  // Weights stream in blocks of `rows` record channels x (mtk0 x cols)
  // outputs and overlap the compute; before the first mini tile the weights
  // of its channels (whole blocks) must be in.
  const double weight_rate = t.weights_in_l2 ? tm.lw_bytes_per_cycle : tm.pe_wl0_bytes_per_cycle;
  const double extra_per_k = double(a.core.weight_extra_bytes_per_out_channel);
  double first_block = -1, all_blocks = 0;
  int64_t blocks = 0;
  for (int64_t g = 0; g < out_groups; g += t.mtk0) {
    int64_t mk = std::min(t.mtk0, out_groups - g);
    for (int64_t c0 = 0; c0 < rec_c; c0 += rows) {
      int64_t ch = std::min(rows, rec_c - c0);
      double bytes = double(mk * cols) * (double(ch * taps * t.in_bytes) + extra_per_k * double(ch) / double(rec_c));
      double cycles = bytes / weight_rate;
      if (first_block < 0) {
        int64_t first_ch = std::min(rec_c, round_up(grouped ? rec_c : first_ch_mini, rows));
        first_block = double(mk * cols) * (double(first_ch * taps * t.in_bytes) + extra_per_k * double(first_ch) / double(rec_c)) /
                      weight_rate;
      }
      all_blocks += cycles;
      ++blocks;
    }
  }
  // Weights streamed from L2 for a 1x1 tile share L2 with the activation
  // fetch: where the stream bounds the tile, part of the compute it overlaps
  // is lost (fitted on the references' weight-bound 1x1 tiles).
  const double streamed_overlap = t.weights_in_l2 && taps == 1 ? std::min(all_blocks, compute) : 0.0;
  double work = std::max(first_block + compute + setup,
                         all_blocks + compute / double(blocks) + tm.pe_l2_weight_overlap_loss * streamed_overlap);
  cost.cycles = scaled_cycles(tm.pe_fixed_cycles, work, tm.pe_efficiency);

  cost.macs = t.n * t.h * t.w * t.k * group_in * taps;
  cost.weight_bytes = weight_bytes(a, t.k, group_in, t.r, t.s, t.in_bytes);
  cost.out_bytes = activation_bytes(a, t.n, t.k, t.h, t.w, t.out_bytes);
  const auto& en = a.energy;
  cost.energy.mac = double(cost.macs) * en.mac_pj;
  // Activations: L2 read into AL1; outputs: OL1 then L2; weights: WL0 (or L2).
  cost.energy.l2 = double(cost.act_bytes + cost.out_bytes) * en.l2_pj_per_byte;
  cost.energy.l1 = double(cost.act_bytes + cost.out_bytes) * en.l1_pj_per_byte;
  if (t.weights_in_l2)
    cost.energy.l2 += double(cost.weight_bytes) * en.l2_pj_per_byte;
  else
    cost.energy.l1 += double(cost.weight_bytes) * en.l1_pj_per_byte;
  return cost;
}

VpOp vp_workload(const std::array<int64_t, 4>& over, const std::array<int64_t, 4>& out, int in_bytes, int out_bytes) {
  VpOp op;
  op.c = over[1], op.h = over[2], op.w = over[3];
  op.out_pixels = out[2] * out[3];
  op.in_bytes = in_bytes;
  op.out_bytes = out_bytes;
  return op;
}

void set_second_operand(VpOp& op, const std::array<int64_t, 4>& extent, int bytes) {
  op.second_elements = extent[1] * extent[2] * extent[3];
  op.second_bytes = bytes;
}

VpCost vp_cost(const arch::Architecture& a, const VpOp& op) {
  const auto& tm = a.timing;
  int elem = std::max(op.in_bytes, op.out_bytes);
  int64_t pixels = op.h * op.w;
  int64_t per_pixel = ceil_div(op.c * elem, a.core.vp_bytes_per_cycle);
  double depth = tm.vp_pipeline_cycles + (op.two_inputs ? tm.vp_second_input_cycles : 0.0) +
                 (op.out_bytes >= 2 ? tm.vp_fp16_output_cycles : 0.0);
  if (op.window > 1) depth += std::ceil(double(op.window) * tm.vp_pool_cycles_per_window - 1e-9);
  VpCost cost;
  cost.layer_cycles = add_cycles(saturate_cycles(double(pixels) * double(per_pixel)), saturate_cycles(depth));
  int64_t out_pixels = op.out_pixels > 0 ? op.out_pixels : pixels;
  cost.elements = pixels * op.c * (op.two_inputs ? 2 : 1);
  int64_t second = 0;
  if (op.two_inputs)
    second = (op.second_elements >= 0 ? op.second_elements : pixels * op.c) * (op.second_bytes > 0 ? op.second_bytes : op.in_bytes);
  cost.bytes = pixels * op.c * op.in_bytes + second + out_pixels * op.c * op.out_bytes;
  cost.energy.vp = double(cost.elements) * a.energy.vp_op_pj;
  cost.energy.l2 = double(cost.bytes) * a.energy.l2_pj_per_byte;
  return cost;
}

int64_t vp_instruction_cycles(const arch::Architecture& a, int64_t layer_cycles, int64_t parts) {
  parts = std::max<int64_t>(parts, 1);
  return add_cycles(saturate_cycles(a.timing.vp_fixed_cycles), ceil_div(layer_cycles, parts));
}

int64_t program_prologue_cycles(const arch::Architecture& a) {
  return (1 + isa::kBufferCutRegisters) * std::llround(a.timing.control_cycles);
}

int64_t program_epilogue_cycles(const arch::Architecture& a) { return std::llround(a.timing.control_cycles); }

int64_t layer_change_config_cycles(const arch::Architecture& a, const UnitConfig* previous, const UnitConfig& next) {
  // asm's registers per unit: PE fm, pm, dq, tp (gp only for grouped or
  // dilated layers); VP gcs, gms, sms, qp, iq, iq1, fm, tp (act for an
  // activation with parameters).
  const bool grouped = next.groups != 1 || next.dilation != std::array<int64_t, 2>{1, 1};
  int64_t instructions = next.pe ? 4 + int64_t(grouped) : 8 + int64_t(next.has_act);
  if (previous) {
    const UnitConfig& p = *previous;
    const bool boxes = p.in[1] != next.in[1] || p.in[2] != next.in[2] || p.in[3] != next.in[3] ||
                       p.out[1] != next.out[1] || p.out[2] != next.out[2] || p.out[3] != next.out[3] ||
                       p.in_bytes != next.in_bytes || p.out_bytes != next.out_bytes;
    const bool tile = p.out != next.out || p.in[1] != next.in[1] || p.kernel_h != next.kernel_h ||
                      p.kernel_w != next.kernel_w || p.stride_h != next.stride_h || p.stride_w != next.stride_w;
    instructions = int64_t(boxes) + int64_t(tile);
    if (next.pe) {
      // pe_cfg_pm: the output's quantisation, the fused activation, the stride.
      instructions += int64_t(p.requantize != next.requantize || p.act != next.act || p.stride_h != next.stride_h ||
                              p.stride_w != next.stride_w);
      instructions += int64_t(p.groups != next.groups || p.dilation != next.dilation);  // pe_cfg_gp
    } else {
      instructions += int64_t(p.max_pool != next.max_pool) + int64_t(p.multiplier != next.multiplier) +
                      int64_t(p.requantize != next.requantize) + int64_t(p.dequantize_a != next.dequantize_a) +
                      int64_t(p.dequantize_b != next.dequantize_b) +
                      int64_t(next.has_act && (!p.has_act || p.act != next.act));
    }
  }
  return instructions * std::llround(a.timing.config_cycles);
}

int64_t host_cycles(const arch::Architecture& a, int64_t ops, int64_t bytes) {
  const auto& tm = a.timing;
  auto per = [](int64_t n, double rate) { return saturate_cycles(std::ceil(double(std::max<int64_t>(n, 0)) / rate - 1e-9)); };
  return add_cycles(add_cycles(saturate_cycles(tm.host_latency_cycles), per(bytes, tm.host_bytes_per_cycle)),
                    per(ops, tm.host_ops_per_cycle));
}

Energy static_energy(const arch::Architecture& a, int64_t cores, int64_t cycles) {
  int io_dies = 0;
  for (const auto& d : a.dies) io_dies += d.is_compute() ? 0 : 1;
  double seconds = double(cycles) / a.clock_hz();
  Energy e;
  // mW x s = mJ = 1e9 pJ.
  e.static_ = (double(cores) * a.energy.core_static_mw + double(io_dies) * a.energy.io_die_static_mw) * seconds * 1e9;
  return e;
}

}  // namespace cct::timing
