// irgen::generate on the reference networks: valid, deterministic, with
// the reference's conventions, tiles priced by the timing model; mapping
// errors; the intra-core tiler.
#include <doctest/doctest.h>

#include <string>

#include "arch/arch.hpp"
#include "fir/fir.hpp"
#include "irgen/irgen.hpp"
#include "irgen/tiling.hpp"
#include "irgen_test_util.hpp"
#include "sir/sir.hpp"
#include "support/error.hpp"
#include "support/int_math.hpp"
#include "testing.hpp"
#include "timing/timing.hpp"

namespace {

using namespace cct;

using cct::testing::joined;

// Every PE tile's prediction is what the timing model gives for the
// instruction asm writes from it.
void check_predictions(const sir::Schedule& s, const fir::Graph& g, const arch::Architecture& a) {
  for (const auto& c : s.cores)
    for (const auto& w : c.workloads) {
      if (w.layer_type != sir::LayerType::Pe) continue;
      const fir::Layer* l = g.find(w.layer_name);
      REQUIRE(l);
      bool streamed = false;
      for (const auto& e : w.wl0_buffer.entries)
        if (w.weight && e.transfer_id == w.weight->transfer_id) streamed = e.source == sir::WeightSource::Core;
      for (const auto& t : w.tile_info) {
        timing::ConvTile ct;
        ct.n = t.ofmap_upper[0] - t.ofmap_lower[0] + 1;
        ct.k = t.ofmap_upper[1] - t.ofmap_lower[1] + 1;
        ct.c = t.ifmap_upper[1] - t.ifmap_lower[1] + 1;
        ct.h = t.ofmap_upper[2] - t.ofmap_lower[2] + 1;
        ct.w = t.ofmap_upper[3] - t.ofmap_lower[3] + 1;
        auto win = l->op == fir::Op::Conv2d ? l->window() : std::array<int64_t, 2>{1, 1};
        auto st = l->op == fir::Op::Conv2d ? l->strides() : std::array<int64_t, 2>{1, 1};
        ct.r = win[0], ct.s = win[1], ct.stride_h = st[0], ct.stride_w = st[1];
        ct.mtc0 = (*t.mtc0_mtk0)[0], ct.mtk0 = (*t.mtc0_mtk0)[1];
        ct.mini_h = (*t.out_mini_tile)[2], ct.mini_w = (*t.out_mini_tile)[3];
        ct.in_bytes = fir::dtype_bytes(l->input_dtype[0]);
        ct.out_bytes = fir::dtype_bytes(l->output_dtype[0]);
        ct.weights_in_l2 = streamed;
        CHECK(t.single_tile_time_pred == doctest::Approx(double(timing::conv_cost(a, ct).cycles)));
      }
    }
}

}  // namespace

TEST_CASE("irgen: single-core schedules of the reference networks pass --check, are deterministic and priced by the model") {
  auto a = arch::load_architecture("zebu-1core");
  for (std::string net : {"resnet34", "resnet50"})
    for (int b : {1, 4}) {
      CAPTURE(net);
      CAPTURE(b);
      auto g = fir::read_fir(irgen_test::fir_path(net, b));
      auto m = irgen_test::single_core(g, "zebu-1core");
      int64_t estimate = 0;
      auto s = irgen::generate(g, m, a, {}, &estimate);
      auto problems = irgen::check(s, a, &g, "generated");
      CHECK_MESSAGE(problems.empty(), joined(problems));
      std::string text = sir::format_sir(s, true);  // validates against the schema
      CHECK(sir::format_sir(irgen::generate(g, m, a), true) == text);
      // Reading it back and writing again gives the same bytes (structural checks included).
      CHECK(sir::format_sir(sir::parse_sir(text, "generated"), true) == text);
      check_predictions(s, g, a);
      CHECK(estimate > 0);
      // One workload per accelerator layer, in mapping order, except layers
      // whose weights do not fit the weight buffer: those are computed in
      // consecutive runs of output channels (64-channel blocks) that do.
      REQUIRE(s.cores.size() == 1);
      const auto& W = s.cores[0].workloads;
      size_t k = 0, layers = 0;
      for (const fir::Layer* l : g.in_index_order()) {
        if (l->device != fir::Device::Npu) continue;
        ++layers;
        REQUIRE(k < W.size());
        CHECK(W[k].layer_name == l->name);
        size_t runs = 0;
        int64_t next = 0;
        for (; k < W.size() && W[k].layer_name == l->name; ++k, ++runs) {
          CHECK(W[k].lower[1] == next);
          next = W[k].upper[1] + 1;
        }
        if (runs > 1) {
          auto ws = *fir::weight_shape(*l);
          int64_t taps = ws.size() == 4 ? ws[2] * ws[3] : 1;
          int64_t per_k = round_up(ws[1], 8) * taps + 32;
          CHECK(round_up(ws[0], 64) * round_up(per_k, 32) / 64 > a.core.wl0_rows);  // the whole layer does not fit
        }
      }
      CHECK(k == W.size());
      CHECK(layers < W.size());
    }
}

TEST_CASE("irgen: the reference's size conventions") {
  auto a = arch::load_architecture("zebu-1core");
  auto g = fir::read_fir(irgen_test::fir_path("resnet50", 1));
  auto s = irgen::generate(g, irgen_test::single_core(g, "zebu-1core"), a);
  // Weights: 32 extra bytes per output channel, input channels padded to 8.
  for (const auto& d : s.dram.out) {
    if (d.type != sir::DramLoadType::Weight) continue;
    const fir::Layer* l = g.find(*d.destination.at(0).layer_name);
    auto ws = *fir::weight_shape(*l);
    int64_t taps = ws.size() == 4 ? ws[2] * ws[3] : 1;
    CHECK(d.size == (d.upper[1] - d.lower[1] + 1) * (round_up(ws[1], 8) * taps + 32));
  }
  // Activations: NHWC, channels padded to 8 bytes; the FP16 image aligns to 4 elements.
  const auto& first = s.cores[0].workloads[0];
  REQUIRE(first.layer_name == "src_quantize_1_1");
  CHECK(first.ifmap[0].bitwidth == 16);
  CHECK(first.ifmap[0].align == 4);
  CHECK(first.ifmap[0].size == 224 * 224 * 8);
  for (const auto& w : s.cores[0].workloads) {
    CHECK(w.ring_buffer_info == std::vector<std::array<int64_t, 2>>{{0, a.core.l2_bytes}});
    for (const auto& b : w.buffer) {
      if (b.type == sir::TensorType::Weight) continue;
      int64_t n = b.upper[0] - b.lower[0] + 1, c = b.upper[1] - b.lower[1] + 1, h = b.upper[2] - b.lower[2] + 1,
              x = b.upper[3] - b.lower[3] + 1;
      CHECK(b.size == n * h * x * round_up(c * b.bitwidth / 8, 8));
    }
  }
  // The first convolution's padding (7x7, stride 2, pad 3: 224 -> 112).
  CHECK(s.cores[0].workloads[1].tile_padding_tblr == sir::Padding{3, 2, 3, 2});
}

TEST_CASE("irgen: a layer pipeline over the cores of chip-64tops passes --check") {
  auto a = arch::load_architecture("chip-64tops");
  for (int b : {1, 4}) {
    CAPTURE(b);
    auto g = fir::read_fir(irgen_test::fir_path("resnet50", b));
    auto m = irgen_test::pipeline(g, "chip-64tops", a.core_count(), b);
    auto s = irgen::generate(g, m, a);
    auto problems = irgen::check(s, a, &g, "pipeline");
    CHECK_MESSAGE(problems.empty(), joined(problems));
    CHECK(int(s.cores.size()) == a.core_count());
    sir::format_sir(s, true);
    // Core-to-core transfers name the receiving workload on the other core.
    int remote = 0;
    for (const auto& c : s.cores)
      for (const auto& w : c.workloads)
        for (const auto& o : w.ofmap)
          for (const auto& d : o.destination) remote += d.type == sir::Endpoint::Core && d.core_id != c.id;
    CHECK(remote > 0);
  }
}

TEST_CASE("irgen: mapping errors") {
  auto a = arch::load_architecture("zebu-1core");
  auto g = fir::read_fir(irgen_test::fir_path("resnet34", 1));
  auto m = irgen_test::single_core(g, "zebu-1core");
  auto expect_error = [&](const mapping::Mapping& bad, const std::string& what) {
    try {
      irgen::generate(g, bad, a, {});
      FAIL("no error for " << what);
    } catch (const Error& e) {
      CHECK(e.code() == kExitInvalidInput);
      CHECK_MESSAGE(std::string(e.what()).find(what) != std::string::npos, e.what());
    }
  };
  auto missing = m;
  std::string dropped = missing.segments[5].layers[0].layer;
  missing.segments.erase(missing.segments.begin() + 5);
  expect_error(missing, "layer \"" + dropped + "\" is not mapped");
  auto unknown = m;
  unknown.segments[0].layers[0].layer = "NoSuchLayer";
  expect_error(unknown, "NoSuchLayer");
  auto bad_core = m;
  bad_core.segments[2].layers[0].cores = {3};
  expect_error(bad_core, "/segments/2/layers/0/cores/0");
  auto bad_arch = m;
  bad_arch.arch = "chip-64tops";
  expect_error(bad_arch, "chip-64tops");
}

TEST_CASE("irgen tiler: mini tiles within the L1 buffers, never worse than the smallest, K cuts within the limit") {
  auto a = arch::load_architecture("zebu-1core");
  irgen::Tiler t(a);
  irgen::ConvShape shapes[] = {
      {1, 64, 3, 112, 112, 7, 7, 2, 2, 1, 1, false},  {1, 512, 512, 7, 7, 3, 3, 1, 1, 1, 1, true},
      {4, 256, 64, 56, 56, 1, 1, 1, 1, 1, 1, false},  {1, 1000, 2048, 1, 1, 1, 1, 1, 1, 1, 2, true},
      {1, 512, 256, 28, 28, 1, 1, 2, 2, 1, 1, false},
  };
  for (const auto& s : shapes) {
    CAPTURE(s.k);
    CAPTURE(s.c);
    irgen::MiniTile m = t.best_mini(s);
    CHECK(m.cycles <= t.conv_cycles(s, {1, 1, 1, 1, 0}));
    CHECK(m.cycles == t.conv_cycles(s, m));
    CHECK(m.mtk0 * a.core.pe_cols * m.mini_h * m.mini_w * 4 <= a.core.ol1_bytes);
    int64_t wh = (std::min(m.mini_h, s.h) - 1) * s.stride_h + s.r, ww = (std::min(m.mini_w, s.w) - 1) * s.stride_w + s.s;
    CHECK(m.mtc0 * 8 * wh * ww * s.in_bytes <= a.core.al1_bytes);
    irgen::TilePlan p = t.plan(s, s.weights_in_l2 ? 128 : 0);
    int64_t sum = 0, volume = 0;
    for (const auto& tile : p.tiles) {
      sum += tile.mini.cycles;
      volume += tile.extent[0] * tile.extent[1] * tile.extent[2] * tile.extent[3];
      if (s.weights_in_l2) CHECK(tile.extent[1] <= 128);
    }
    CHECK(sum == p.cycles);
    CHECK(volume == s.n * s.k * s.h * s.w);
  }
}

TEST_CASE("irgen: tensors kept in L2 across segments spill to DRAM when L2 runs out") {
  auto a = arch::load_architecture("zebu-1core");
  a.core.l2_bytes = 4 << 20;  // half the emulated core's L2
  auto g = fir::read_fir(irgen_test::fir_path("resnet50", 4));
  auto m = irgen_test::single_core(g, "zebu-1core");
  for (auto& s : m.segments) s.batch_groups = 4;
  auto s = irgen::generate(g, m, a);
  auto problems = irgen::check(s, a, &g, "spilled");
  CHECK_MESSAGE(problems.empty(), joined(problems));
  // Stores read back later (besides the network's output).
  int reloaded = 0;
  for (const auto& st : s.dram.in) reloaded += st.related_ofmap.has_value();
  CHECK(reloaded > 0);
  for (const auto& w : s.cores[0].workloads)
    for (const auto& b : w.buffer) CHECK(b.address + b.size <= a.core.l2_bytes);
  // An L2 too small for one workload's own data: a clear error naming the
  // capacity and by how much it is exceeded.
  a.core.l2_bytes = 1 << 20;
  CHECK_THROWS_WITH_AS(irgen::generate(g, m, a), doctest::Contains("more than the 1048576-byte L2 of zebu-1core"), Error);
}

TEST_CASE("irgen: the hand-written multi-core example mapping (partitions over b, k, h) passes --check") {
  std::string dir = testing::source_dir() + "/examples/mappings/";
  auto a = arch::load_architecture("chip-64tops");
  auto g = fir::read_fir(dir + "tiny_cnn_b4.fir.json");
  auto m = mapping::read_mapping(dir + "tiny_cnn_b4.chip-64tops.mapping.json");
  auto s = irgen::generate(g, m, a);
  auto problems = irgen::check(s, a, &g, "tiny");
  CHECK_MESSAGE(problems.empty(), joined(problems));
  sir::format_sir(s, true);
}
