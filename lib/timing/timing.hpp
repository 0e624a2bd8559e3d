// The timing and energy model of one core: how long an operation takes and
// what it costs, from the architecture's constants (lib/arch `timing`,
// `core`, `dram`, `energy`). zebusim executes programs with it; irgen and
// gemini call the same functions to predict a tile or a layer without a
// program.
//
// The formulas were fitted to the ZeBu traces (formats/Architecture_Format.md
// lists the constants and where they come from):
//  - every non-configuration instruction pays a fixed issue/drain part;
//  - DRAM transfers: DRAM latency + bytes / channel bandwidth, sizes in the
//    L2 layout (channels padded, weights with per-output-channel extras);
//  - a convolution runs output mini tile by output mini tile; each mini tile
//    takes the longest of its MACs on the 64x64 array, the fetch of its
//    activation window and (1x1 kernels with many weights) the reload of its
//    weights; the output path sets a floor per pixel; weights the PE reads
//    from L2 or WL0 stream in blocks of 64 input channels that overlap the
//    compute of the previous block (a 1x1 tile's stream from L2 loses part
//    of that overlap); 1x1 tiles whose input pixels collide in L2 banks run
//    at a fraction of the MAC rate; a grouped convolution runs as the
//    block-diagonal dense one, each block of array columns reading only
//    its groups' input channels (formats/ISA_Format.md, section 9.4);
//  - a vector-processor layer takes one cycle per 32 bytes of each pixel's
//    channels plus a pipeline depth, split evenly over the layer's
//    instructions.
#pragma once

#include <array>
#include <cstdint>

#include "arch/arch.hpp"
#include "support/int_math.hpp"

namespace cct::timing {

// ---- Cycle counts -------------------------------------------------------------

// Every duration the model gives is at most kMaxCycles (146 years at 1 GHz):
// far beyond a real run, yet sums of a few stay inside int64. Durations
// saturate at it instead of overflowing (huge tiles, slow rates); zebusim
// refuses a run whose clock passes it (sim::simulate).
inline constexpr int64_t kMaxCycles = int64_t(1) << 62;
// A model's cycles as an integer: rounded to nearest, clamped to
// [0, kMaxCycles] (NaN -> kMaxCycles).
int64_t saturate_cycles(double cycles);
// a + b for durations in [0, kMaxCycles], clamped to kMaxCycles.
inline int64_t add_cycles(int64_t a, int64_t b) { return a >= kMaxCycles - b ? kMaxCycles : a + b; }

// ---- Sizes in the L2 / DRAM layout ------------------------------------------

// Bytes of an activation block [n, c, h, w] with `elem_bytes` per element:
// each pixel's channels are padded to core.l2_channel_align_bytes.
inline int64_t activation_bytes(const arch::Architecture& a, int64_t n, int64_t c, int64_t h, int64_t w, int elem_bytes) {
  return n * h * w * round_up(c * elem_bytes, a.core.l2_channel_align_bytes);
}
// Bytes of a weight tensor [k, c, r, s]: per output channel the padded input
// channels times the kernel, rounded up to 32 bytes, plus
// core.weight_extra_bytes_per_out_channel (bias and requantisation).
int64_t weight_bytes(const arch::Architecture& a, int64_t k, int64_t c, int64_t r, int64_t s, int elem_bytes);

// ---- Energy -------------------------------------------------------------------

// Energy split by component, pJ.
struct Energy {
  double mac = 0, vp = 0, l1 = 0, l2 = 0, dram = 0, noc = 0, d2d = 0, static_ = 0;
  double total() const { return mac + vp + l1 + l2 + dram + noc + d2d + static_; }
  Energy& operator+=(const Energy& o);
};

// ---- DRAM ------------------------------------------------------------------------

// Bytes per cycle of one DRAM channel at the core clock.
double dram_channel_bytes_per_cycle(const arch::Architecture& a);
// Cycles of a DRAM transfer without contention: latency + fixed part +
// bytes / one channel. `store` selects st_fixed_cycles over ld_fixed_cycles.
int64_t dram_transfer_cycles(const arch::Architecture& a, int64_t bytes, bool store);
// Energy of moving `bytes` between DRAM and L2.
Energy dram_transfer_energy(const arch::Architecture& a, int64_t bytes);

// ---- PE (convolution / matrix multiply) ---------------------------------------

// One pe_conv: the output tile and the mini tiles it is processed in.
struct ConvTile {
  int64_t n = 1, k = 1, c = 1, h = 1, w = 1;  // batch, output channels, input channels, output rows, output cols
  int64_t r = 1, s = 1;                       // kernel rows, cols
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;  // distance between kernel taps, in input pixels
  int64_t groups = 1;       // grouped convolution: k and c split into this many independent groups
  int64_t mtk0 = 1;         // groups of 64 output channels per mini tile (>= 1)
  int64_t mtc0 = 0;         // groups of 8 input channels per mini tile (0 = all input channels)
  int64_t mini_h = 1, mini_w = 1;  // output mini tile, pixels (MTI + 1)
  int in_bytes = 1;         // input element size (1 INT8, 2 FP16)
  int out_bytes = 1;        // output element size
  bool weights_in_l2 = false;  // true: the weights stay in L2 (lw_mov SS=0) and stream in during the conv
};

struct ConvCost {
  int64_t cycles = 0;        // duration of the pe_conv
  int64_t macs = 0;          // useful multiply-accumulates (a grouped tile's own, not the block-diagonal ones)
  int64_t act_bytes = 0;     // activation bytes fetched from L2 (windows of all mini tiles)
  int64_t weight_bytes = 0;  // weight bytes read (from WL0 or L2)
  int64_t out_bytes = 0;     // output bytes written to L2
  Energy energy;
};

// Throws Error(kExitInvalidInput) with `where` prefixed when the tile is
// malformed (a non-positive size).
ConvCost conv_cost(const arch::Architecture& a, const ConvTile& t, const char* where = "conv");

// A reasonable mini tiling when none is given (predictors without a
// program): one 64-channel output group, all input channels up to 512, a
// square output mini tile of about 4 pixels.
ConvTile with_default_mini_tiles(ConvTile t);

// ---- VP (vector processor) ------------------------------------------------------

struct VpOp {
  int64_t c = 1, h = 1, w = 1;  // pixels processed (input side for pooling) and channels
  int in_bytes = 1, out_bytes = 1;
  bool two_inputs = false;       // element-wise operations on two tensors
  // The second tensor's elements read (-1: as many as the first), and their
  // size (0: in_bytes): a broadcast operand ([C, 1, 1] against [C, H, W])
  // is read once per element, not once per output element.
  int64_t second_elements = -1;
  int second_bytes = 0;
  int64_t window = 1;            // pooling window elements (kernel rows x cols); 1 = none
  int64_t out_pixels = 0;        // output pixels (0 = h*w)
};

// The VpOp of a vector workload whose output region has extent `out`
// ([N, C, H, W]), working over the region `over` (a pool: the input region it
// reads; every other operation: its output). irgen prices its workloads by it
// and gemini its parts, so the two agree.
VpOp vp_workload(const std::array<int64_t, 4>& over, const std::array<int64_t, 4>& out, int in_bytes, int out_bytes);
// The second operand of an element-wise workload, read over `extent`
// (smaller than the first's when it broadcasts).
void set_second_operand(VpOp& op, const std::array<int64_t, 4>& extent, int bytes);

struct VpCost {
  int64_t layer_cycles = 0;  // work of the whole operation, without the fixed part
  int64_t elements = 0;      // element operations
  int64_t bytes = 0;         // bytes read and written in L2
  Energy energy;
};
VpCost vp_cost(const arch::Architecture& a, const VpOp& op);
// Duration of one VP instruction when the operation is split over `parts`
// instructions (the reference hardware divides a layer's time evenly).
int64_t vp_instruction_cycles(const arch::Architecture& a, int64_t layer_cycles, int64_t parts);

// ---- The program's control frame ---------------------------------------------------

// Cycles of the control queue before any other instruction may start (ct_st
// and the ct_bc of every buffer-cut register, in order), and after the last
// store (ct_ed). What every program pays once: it dominates tiny networks.
int64_t program_prologue_cycles(const arch::Architecture& a);
int64_t program_epilogue_cycles(const arch::Architecture& a);

// ---- Configuration between layers ----------------------------------------------

// What a compute workload writes into its unit's configuration registers, as
// far as their number goes.
struct UnitConfig {
  bool pe = true;                          // the PE array (else the vector processor)
  std::array<int64_t, 4> in{}, out{};      // extents [n, c, h, w] of its input region and output box
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  int in_bytes = 1, out_bytes = 1;
  // pe_cfg_gp: the groups in the tile (1 for dense layers) and the dilation;
  // both 1 at reset.
  int64_t groups = 1;
  std::array<int64_t, 2> dilation{1, 1};
  // The per-layer register values, as asm derives them from the layer:
  // PE: pe_cfg_pm (the output's quantisation in `requantize`, the fused
  // activation in `act`, the stride). VP: vp_cfg_gcs (window maximum),
  // vp_cfg_gms (the multiplier), vp_cfg_qp (post_cal in `requantize`),
  // vp_cfg_iq and vp_cfg_iq1 (pre_cal of inputs a and b; b 0 for one
  // input), vp_cfg_act (an activation's parameters, when it takes any).
  bool max_pool = false;
  double multiplier = 0;
  std::array<double, 3> requantize{};      // scale, zero point or bias, rounding/INT8 (1) or not (0)
  std::array<double, 2> dequantize_a{}, dequantize_b{};  // requan_scale, requan_zp
  bool has_act = false;
  std::array<double, 2> act{};             // the activation (a code) and its parameters
};
// Cycles of the configuration instructions a unit runs before the first tile
// of a layer after `previous` (nullptr: the first on the unit). asm writes a
// register only when its value changes: every PE layer brings its own
// quantisation (pe_cfg_pm); the boxes and formats (pe_cfg_fm, vp_cfg_fm) and
// the tile and window (pe_cfg_tp, vp_cfg_tp) change with the shapes; the
// vector processor's other registers with their values (UnitConfig). The
// first layer on a unit writes every register it uses. They run in the
// unit's queue after its previous instruction, so they delay a layer whose
// inputs are already there (tiny networks, many small segments).
int64_t layer_change_config_cycles(const arch::Architecture& a, const UnitConfig* previous, const UnitConfig& next);

// ---- The host -----------------------------------------------------------------

// Cycles of one host step (formats/ISA_Format.md, ct_hw): the architecture's
// fixed host latency, plus `bytes` read and written in DRAM and `ops` element
// operations at the host's rates, each rounded up.
int64_t host_cycles(const arch::Architecture& a, int64_t ops, int64_t bytes);

// ---- Static power -----------------------------------------------------------------

// Static energy of `cores` cores and every IO die of the architecture over
// `cycles` core cycles.
Energy static_energy(const arch::Architecture& a, int64_t cores, int64_t cycles);

}  // namespace cct::timing
