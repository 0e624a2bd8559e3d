// The timing and energy formulas (lib/timing), checked against durations read
// off the ZeBu traces and against the properties predictors rely on.
#include <doctest/doctest.h>

#include <cmath>

#include "arch/arch.hpp"
#include "support/error.hpp"
#include "timing/timing.hpp"

using namespace cct;
using timing::ConvTile;

namespace {

const arch::Architecture& zebu() {
  static const arch::Architecture a = arch::load_architecture("zebu-1core");
  return a;
}

ConvTile tile(int64_t n, int64_t k, int64_t c, int64_t h, int64_t w, int64_t r, int64_t stride, int64_t mtk0,
              int64_t mtc0, int64_t mini_h, int64_t mini_w) {
  ConvTile t;
  t.n = n, t.k = k, t.c = c, t.h = h, t.w = w, t.r = r, t.s = r, t.stride_h = stride, t.stride_w = stride;
  t.mtk0 = mtk0, t.mtc0 = mtc0, t.mini_h = mini_h, t.mini_w = mini_w;
  return t;
}

}  // namespace

TEST_CASE("sizes in the L2 layout") {
  const auto& a = zebu();
  CHECK(timing::activation_bytes(a, 1, 3, 224, 224, 2) == 401408);  // 3 FP16 channels padded to 8 bytes
  CHECK(timing::activation_bytes(a, 1, 64, 56, 56, 1) == 200704);
  CHECK(timing::weight_bytes(a, 64, 64, 3, 3, 1) == 38912);          // 64 x (576 + 32)
  CHECK(timing::weight_bytes(a, 256, 64, 1, 1, 1) == 24576);
  CHECK(timing::weight_bytes(a, 64, 3, 7, 7, 1) == 28672);           // rows of 392 bytes stored on 32-byte boundaries
}

TEST_CASE("DRAM transfers match the reference loads and stores") {
  const auto& a = zebu();
  // Durations of lda_mov / sta_mov in the ResNet-50 batch-1 trace.
  CHECK(timing::dram_transfer_cycles(a, 2048, false) == 140);
  CHECK(timing::dram_transfer_cycles(a, 25088, false) == 1481);
  CHECK(timing::dram_transfer_cycles(a, 25088, true) == 1491);
  CHECK(std::abs(timing::dram_transfer_cycles(a, 2375680, false) - 138328) <= 30);  // 0.02%: 16 GiB/s vs the fit
  CHECK(timing::dram_transfer_energy(a, 1000).dram == doctest::Approx(8000 * a.energy.dram_pj_per_bit));
}

TEST_CASE("convolutions match reference pe_conv durations") {
  const auto& a = zebu();
  struct Case {
    ConvTile t;
    int64_t cycles;  // from the traces
  };
  const Case cases[] = {
      {tile(1, 64, 64, 56, 56, 3, 1, 1, 8, 4, 1), 28606},      // 3x3, compute bound
      {tile(4, 64, 64, 56, 56, 3, 1, 1, 8, 1, 4), 113701},
      {tile(1, 64, 256, 56, 56, 1, 1, 1, 32, 4, 1), 12831},    // 1x1
      {tile(1, 256, 64, 56, 56, 1, 1, 1, 8, 2, 1), 30057},     // 1x1, output-bound (64 channels in)
      {tile(4, 256, 256, 14, 14, 3, 1, 1, 4, 2, 2), 113923},
  };
  for (const auto& c : cases) {
    auto cost = timing::conv_cost(a, c.t);
    CAPTURE(c.cycles);
    CHECK(std::abs(double(cost.cycles - c.cycles)) / double(c.cycles) < 0.003);
    CHECK(cost.macs == c.t.n * c.t.k * c.t.c * c.t.h * c.t.w * c.t.r * c.t.s);
    CHECK(cost.energy.mac == doctest::Approx(double(cost.macs) * a.energy.mac_pj));
  }
  // Weights left in L2 stream at lw_bytes_per_cycle: a 7x7 layer with 512
  // input channels is weight bound (9785 cycles in the traces).
  ConvTile l2 = tile(1, 64, 512, 7, 7, 3, 1, 1, 8, 7, 1);
  l2.weights_in_l2 = true;
  CHECK(std::abs(double(timing::conv_cost(a, l2).cycles - 9785)) / 9785.0 < 0.005);
}

TEST_CASE("convolution cost behaves as predictors expect") {
  const auto& a = zebu();
  ConvTile t = timing::with_default_mini_tiles(tile(1, 128, 128, 28, 28, 3, 1, 1, 0, 1, 1));
  auto one = timing::conv_cost(a, t);
  t.n = 2;
  auto two = timing::conv_cost(a, t);
  CHECK(two.cycles > one.cycles);
  CHECK(two.cycles < 2 * one.cycles);  // the fixed part is paid once
  // Never faster than the array's peak.
  CHECK(double(one.cycles) >= double(one.macs) / double(a.core.macs_per_cycle()));
  ConvTile l2 = t;
  l2.weights_in_l2 = true;
  CHECK(timing::conv_cost(a, l2).cycles >= two.cycles);
  ConvTile bad = t;
  bad.h = 0;
  CHECK_THROWS_AS(timing::conv_cost(a, bad), Error);
}

TEST_CASE("grouped and dilated convolutions: true MACs, priced by the channels each column block reads") {
  const auto& a = zebu();
  // A dense tile is a tile of one group.
  ConvTile dense = tile(1, 128, 64, 14, 14, 3, 1, 1, 0, 2, 2);
  ConvTile one_group = dense;
  one_group.groups = 1;
  CHECK(timing::conv_cost(a, dense).cycles == timing::conv_cost(a, one_group).cycles);
  // Depthwise: 128 channels, each its own group.
  ConvTile dw = tile(1, 128, 128, 14, 14, 3, 1, 1, 0, 2, 2);
  dw.groups = 128;
  auto d = timing::conv_cost(a, dw);
  CHECK(d.macs == 128 * 14 * 14 * 9);
  CHECK(d.weight_bytes == timing::weight_bytes(a, 128, 1, 3, 3, 1));
  // Each block of 64 columns reads its 64 channels: as many array passes as
  // the dense 64 -> 128 convolution, for 64 times fewer MACs.
  ConvTile dense64 = tile(1, 128, 64, 14, 14, 3, 1, 1, 0, 2, 2);
  auto dd = timing::conv_cost(a, dense64);
  CHECK(d.cycles >= dd.cycles * 9 / 10);
  CHECK(d.cycles <= dd.cycles * 11 / 10);
  CHECK(double(d.cycles) >= double(d.macs) / double(a.core.macs_per_cycle()));
  // Twice the depthwise channels: about twice the time.
  ConvTile dw2 = dw;
  dw2.k = dw2.c = 256, dw2.groups = 256;
  auto d2 = timing::conv_cost(a, dw2);
  CHECK(d2.cycles > d.cycles * 17 / 10);
  CHECK(d2.cycles < d.cycles * 21 / 10);
  // Groups that do not divide the tile are refused.
  ConvTile bad = dw;
  bad.groups = 3;
  CHECK_THROWS_AS(timing::conv_cost(a, bad), Error);
  // Dilation: the same MACs over a wider window.
  ConvTile dil = dense;
  dil.dilation_h = dil.dilation_w = 2;
  auto x = timing::conv_cost(a, dil);
  CHECK(x.macs == timing::conv_cost(a, dense).macs);
  CHECK(x.act_bytes > timing::conv_cost(a, dense).act_bytes);
  // Taps further apart than a mini tile's run of pixels (DeepLab's atrous
  // rates 12 to 36 on a 14 x 14 map): the array reads each tap's run, not the
  // gaps, so a wider rate reads no more than the taps' pixels.
  ConvTile far = dense, farther = dense;
  far.dilation_h = far.dilation_w = 12;
  farther.dilation_h = farther.dilation_w = 36;
  auto f12 = timing::conv_cost(a, far), f36 = timing::conv_cost(a, farther);
  CHECK(f36.act_bytes == f12.act_bytes);
  CHECK(f36.cycles == f12.cycles);
  CHECK(f12.cycles < 3 * timing::conv_cost(a, dense).cycles);
}

TEST_CASE("vector-processor layers") {
  const auto& a = zebu();
  timing::VpOp add;  // FP16 + INT8 -> INT8 element-wise add, 64 x 56 x 56
  add.c = 64, add.h = 56, add.w = 56, add.in_bytes = 2, add.out_bytes = 1, add.two_inputs = true;
  CHECK(timing::vp_instruction_cycles(a, timing::vp_cost(a, add).layer_cycles, 1) == 12582);
  timing::VpOp deq;  // INT8 -> FP16, 64 x 56 x 56
  deq.c = 64, deq.h = 56, deq.w = 56, deq.in_bytes = 1, deq.out_bytes = 2;
  CHECK(timing::vp_instruction_cycles(a, timing::vp_cost(a, deq).layer_cycles, 1) == 12592);
  // Split over four batch instructions, as in the batch-4 programs.
  CHECK(timing::vp_instruction_cycles(a, timing::vp_cost(a, deq).layer_cycles, 4) == 3163);
  timing::VpOp pool;  // 3x3/2 max pool of 64 x 112 x 112
  pool.c = 64, pool.h = 112, pool.w = 112, pool.window = 9, pool.out_pixels = 56 * 56;
  CHECK(timing::vp_instruction_cycles(a, timing::vp_cost(a, pool).layer_cycles, 1) == 25124);
  timing::VpOp gap;  // global average pool 2048 x 7 x 7
  gap.c = 2048, gap.h = 7, gap.w = 7, gap.window = 49, gap.out_pixels = 1;
  CHECK(timing::vp_instruction_cycles(a, timing::vp_cost(a, gap).layer_cycles, 1) == 3177);
  // A broadcast second operand ([64, 1, 1] against 64 x 56 x 56) takes the
  // same time and reads its 64 elements once.
  timing::VpOp mul = add;
  mul.in_bytes = 1;
  auto full = timing::vp_cost(a, mul);
  mul.second_elements = 64;
  auto gate = timing::vp_cost(a, mul);
  CHECK(gate.layer_cycles == full.layer_cycles);
  CHECK(full.bytes == 3 * 64 * 56 * 56);
  CHECK(gate.bytes == 2 * 64 * 56 * 56 + 64);
  CHECK(gate.energy.l2 < full.energy.l2);
}

TEST_CASE("static energy") {
  const auto& a = zebu();
  auto e = timing::static_energy(a, 1, int64_t(a.clock_hz()));  // one second, one core
  CHECK(e.static_ == doctest::Approx(a.energy.core_static_mw * 1e9));
}
