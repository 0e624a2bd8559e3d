// gemini's network model, plan helpers and cost model.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "gemini/cost.hpp"
#include "gemini/network.hpp"
#include "gemini/plan.hpp"
#include "gemini/search.hpp"
#include "gemini_test_util.hpp"
#include "irgen/tiling.hpp"
#include "support/error.hpp"

using namespace cct;
using namespace cct::gemini;

namespace {

int index_of(const Network& net, const std::string& name) {
  for (size_t i = 0; i < net.layers.size(); ++i)
    if (net.layers[i].name == name) return int(i);
  FAIL("no layer " << name);
  return -1;
}

}  // namespace

TEST_CASE("the network of ResNet-50: accelerator layers, producers through host layers, weights") {
  auto s = gemini_test::setup(gemini_test::reference_fir("resnet50", 1), "chip-64tops");
  const Network& net = s->net;
  CHECK(net.batch == 1);
  CHECK(net.layers.size() == 73);  // the reshape after the classifier runs on the host
  const Layer& q = net.layers[0];
  CHECK(q.name == "src_quantize_1_1");
  REQUIRE(q.inputs.size() == 1);
  CHECK(q.inputs[0].producer == -1);
  const Layer& c0 = net.layers[size_t(index_of(net, "Conv_0"))];
  CHECK(c0.kind == LayerKind::Conv);
  CHECK(c0.inputs.size() == 1);  // the weights are not an activation input
  CHECK(c0.inputs[0].producer == 0);
  CHECK(c0.kernel_h == 7);
  CHECK(c0.stride_h == 2);
  // 64 output channels of 3 input channels padded to 8 bytes x 49 taps, rows of 32 bytes, plus 32 extra bytes.
  CHECK(c0.weight_bytes_per_k == 416 + 32);
  CHECK(c0.weight_bytes() == 64 * 448);
  const Layer& add = net.layers[size_t(index_of(net, "Add_9_1"))];
  CHECK(add.inputs.size() == 2);
  CHECK(add.two_input_vp);
  const Layer& fc = net.layers.back();
  CHECK(fc.name == "Gemm_121");
  CHECK(fc.kind == LayerKind::Dense);
  CHECK(fc.to_dram);  // it feeds only the host reshape
  CHECK_FALSE(c0.to_dram);
  int64_t macs = 0;
  for (const auto& l : s->graph.layers()) macs += fir::macs(l);
  CHECK(net.total_macs() == macs);
  // Consumers are the reverse of producers.
  for (size_t i = 0; i < net.layers.size(); ++i)
    for (const auto& in : net.layers[i].inputs)
      if (in.producer >= 0) {
        const auto& cons = net.layers[size_t(in.producer)].consumers;
        CHECK(std::find(cons.begin(), cons.end(), int(i)) != cons.end());
      }
}

TEST_CASE("input regions follow the window, stride and padding") {
  auto s = gemini_test::setup(gemini_test::reference_fir("resnet50", 1), "chip-64tops");
  const Layer& c0 = s->net.layers[size_t(index_of(s->net, "Conv_0"))];  // 7x7 stride 2 pad 3, 224 -> 112
  mapping::Box out{{0, 0, 0, 0}, {0, 63, 55, 111}};
  mapping::Box in = input_region(s->net, c0, 0, out);
  CHECK(in.lower == std::array<int64_t, 4>{0, 0, 0, 0});
  CHECK(in.upper == std::array<int64_t, 4>{0, 2, 55 * 2 - 3 + 6, 223});
  out = {{0, 0, 56, 0}, {0, 31, 111, 111}};
  in = input_region(s->net, c0, 0, out);
  CHECK(in.lower[2] == 56 * 2 - 3);
  CHECK(in.upper[2] == 223);
  CHECK(in.upper[1] == 2);  // every input channel
  const Layer& add = s->net.layers[size_t(index_of(s->net, "Add_9_1"))];
  out = {{0, 8, 3, 4}, {0, 15, 9, 10}};
  CHECK(input_region(s->net, add, 1, out) == out);
}

TEST_CASE("partitions, core counts and divisors") {
  CHECK(divisors(12) == std::vector<int64_t>{1, 2, 3, 4, 6, 12});
  CHECK(divisors(1) == std::vector<int64_t>{1});
  Dims d{1, 64, 56, 56};
  auto parts = partitions_of(d, 8);
  CHECK(parts.size() == 10);  // (k, h, w) with k h w = 8, each a power of two dividing its dim
  std::set<std::array<int64_t, 4>> seen;
  for (const auto& p : parts) {
    CHECK(p.product() == 8);
    CHECK(d[0] % p.b == 0);
    CHECK(d[1] % p.k == 0);
    CHECK(d[2] % p.h == 0);
    CHECK(d[3] % p.w == 0);
    seen.insert(p.factors());
  }
  CHECK(seen.size() == parts.size());
  CHECK(partitions_of({1, 3, 7, 7}, 2).empty());
  CHECK(feasible_core_counts({1, 1000, 1, 1}, 8) == std::vector<int>{1, 2, 4, 5, 8});
  CHECK(feasible_core_counts({4, 3, 7, 7}, 8) == std::vector<int>{1, 2, 3, 4, 6, 7});
  Layer l;
  l.out = {16, 64, 8, 8};
  CHECK(group_dims(l, 4) == Dims{4, 64, 8, 8});
}

TEST_CASE("compute time of a part is irgen's tiler prediction") {
  auto s = gemini_test::setup(gemini_test::reference_fir("resnet50", 4), "chip-64tops");
  const int li = index_of(s->net, "Conv_5");  // 3x3, 64 -> 64 on 56x56
  const Layer& L = s->net.layers[size_t(li)];
  irgen::Tiler tiler(s->arch);
  irgen::ConvShape cs;
  cs.n = 2, cs.k = 64, cs.c = 64, cs.h = 28, cs.w = 56, cs.r = 3, cs.s = 3;
  cs.in_bytes = L.inputs[0].bytes;
  cs.out_bytes = L.out_bytes;
  int64_t direct = tiler.plan(cs, 0).cycles;
  cs.weights_in_l2 = true;
  int64_t streamed = tiler.plan(cs, 64).cycles;
  // Two batch groups of two samples, rows split in two.
  int64_t got = s->model->part_cycles(li, mapping::Partition{1, 1, 2, 1}, 2);
  CHECK((got == direct || got == streamed));
  CHECK(got == std::min(direct, streamed));
  CHECK(s->model->part_weight_bytes(li, mapping::Partition{1, 4, 1, 1}) == L.weight_bytes() / 4);
}

TEST_CASE("the cost of a plan: time, energy by component, segments and layers") {
  auto s = gemini_test::setup(gemini_test::reference_fir("resnet50", 1), "chip-64tops");
  Plan seq = sequential_plan(*s->model, Objective::Latency);
  CHECK(seq.segments.size() == s->net.layers.size());
  PlanCost c = s->model->evaluate(seq, true);
  CHECK(c.feasible());
  CHECK(c.cores_used == 8);
  CHECK(c.segments.size() == seq.segments.size());
  // No faster than the chip's peak MAC rate, no faster than loading the weights once.
  int64_t weights = 0;
  for (const auto& l : s->net.layers) weights += l.weight_bytes();
  CHECK(double(c.cycles) > double(s->net.total_macs()) / s->arch.peak_macs_per_cycle());
  double dram_pool = s->arch.dram_channel_bytes_per_cycle() * double(s->arch.dram_channels.size());
  CHECK(double(c.cycles) > double(weights) / dram_pool);
  CHECK(c.energy.mac == doctest::Approx(double(s->net.total_macs()) * s->arch.energy.mac_pj).epsilon(0.01));
  CHECK(c.energy.dram > 0);
  CHECK(c.energy.static_ > 0);
  CHECK(c.energy.d2d > 0);  // DRAM sits on the IO die: every load crosses a die boundary
  int64_t latest = 0;
  for (const auto& sc : c.segments) {
    REQUIRE(sc.layers.size() == 1);
    CHECK(sc.layers[0].end > sc.layers[0].start);
    CHECK(sc.layers[0].end - sc.layers[0].start >= sc.layers[0].part_cycles);
    latest = std::max(latest, sc.end);
  }
  CHECK(latest <= c.cycles);
  CHECK(c.value(Objective::Latency, s->arch) == double(c.cycles));
  CHECK(c.value(Objective::Edp, s->arch) == doctest::Approx(double(c.cycles) * c.energy.total()));
  // The same plan costs the same (the model is a function).
  PlanCost again = s->model->evaluate(seq, false);
  CHECK(again.cycles == c.cycles);
  CHECK(again.energy.total() == doctest::Approx(c.energy.total()));
}

TEST_CASE("more DRAM bandwidth never makes a plan slower; a DRAM-bound one faster") {
  auto s = gemini_test::setup(gemini_test::reference_fir("resnet50", 1), "chip-64tops");
  Plan seq = sequential_plan(*s->model, Objective::Latency);
  int64_t base = s->model->evaluate(seq, false).cycles;
  arch::Architecture fast = s->arch;
  fast.dram.channel_gib_per_s *= 4;
  fast.d2d.link_bytes_per_cycle *= 4;
  fast.noc.link_bytes_per_cycle *= 4;
  fast.finalize("fast");
  CostModel m(s->net, fast);
  int64_t quicker = m.evaluate(seq, false).cycles;
  CHECK(quicker < base);
}

TEST_CASE("tensors that do not fit a core's L2 make a plan infeasible") {
  auto s = gemini_test::setup(gemini_test::reference_fir("resnet50", 16), "chip-64tops");
  // The input quantize of 16 images on one core: 2 x 16 x 224 x 224 x 8 bytes.
  Plan p;
  SegmentPlan sp;
  sp.layers.push_back(LayerPlan{0, {0}, {}, {}});
  p.segments.push_back(sp);
  PlanCost c = s->model->evaluate(p, false);
  CHECK_FALSE(c.feasible());
  CHECK(c.overflow == 2 * 16 * 224 * 224 * 8 - s->arch.core.l2_bytes);
  CHECK(c.problem.find("core 0") != std::string::npos);
  CHECK(c.value(Objective::Latency, s->arch) > 4.0 * double(c.cycles));
  // Four batch groups fit.
  p.segments[0].batch_groups = 4;
  CHECK(s->model->evaluate(p, false).feasible());
}

TEST_CASE("a plan converts to a valid mapping and back") {
  auto s = gemini_test::setup(gemini_test::tiny_fir(), "chip-64tops");
  Plan seq = sequential_plan(*s->model, Objective::Latency);
  mapping::Mapping m = to_mapping(seq, s->net, s->arch);
  CHECK(m.arch == "chip-64tops");
  CHECK(m.batch == 4);
  CHECK(gemini_test::problems(m, *s) == "");
  CHECK(from_mapping(m, s->net) == seq);
  mapping::Mapping hand = mapping::read_mapping(gemini_test::tiny_mapping());
  Plan p = from_mapping(hand, s->net);
  CHECK(to_mapping(p, s->net, s->arch).segments == hand.segments);
  CHECK(s->model->evaluate(p, false).cycles > 0);
}

TEST_CASE("no partition part reads only padding (a constant Pad folded into a 1x1 convolution)") {
  // [1, 3, 4, 5] padded by rows (1, 2) and columns (3, 4) by a 1x1 convolution: [1, 3, 7, 12].
  Layer L;
  L.kind = LayerKind::Conv;
  L.out = {1, 3, 7, 12};
  L.pads = {1, 2, 3, 4};
  LayerInput in;
  in.dims = {1, 3, 4, 5};
  L.inputs.push_back(in);
  CHECK(part_reads_input(L, 3, 2));   // columns 0-5 read input 0-2, 6-11 read 3-4
  CHECK(!part_reads_input(L, 3, 4));  // columns 0-2 lie in the left padding
  CHECK(!part_reads_input(L, 2, 7));  // row 0 is padding
  CHECK(part_reads_input(L, 1, 3));   // channels: not a spatial cut
  for (const auto& p : partitions_of(L.out, 4, 1, &L)) CHECK(p.w != 4);
  CHECK(partitions_of(L.out, 4, 1).size() > partitions_of(L.out, 4, 1, &L).size());
  auto counts = feasible_core_counts(L.out, 8, 1, &L);
  CHECK(std::find(counts.begin(), counts.end(), 7) == counts.end());  // 7 only as 7 rows
}
