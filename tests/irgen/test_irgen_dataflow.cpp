// Multi-core dataflow conventions of irgen (and what asm makes of them):
// an input arriving in pieces is one NHWC tensor in the consumer's L2, a
// producer sends each consumer only the region it reads, K-partitioned
// weights are loaded as exactly their channels.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "asm/asm.hpp"
#include "fir/fir.hpp"
#include "irgen/irgen.hpp"
#include "irgen_test_util.hpp"
#include "isa/program.hpp"
#include "mapping/mapping.hpp"
#include "sir/sir.hpp"
#include "testing.hpp"

namespace {

using namespace cct;

using cct::testing::joined;

bool inside(const sir::Coord& lo, const sir::Coord& hi, const sir::Coord& blo, const sir::Coord& bhi) {
  for (int i = 0; i < 4; ++i)
    if (lo[i] < blo[i] || hi[i] > bhi[i]) return false;
  return true;
}
sir::Coord plus(const sir::Coord& a, const sir::Coord& b) { return {a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]}; }

// ResNet-50 on chip-64tops, every layer alone on core 0 except two segments
// that split work over several cores:
//  - the first 1x1 -> 3x3 convolution pair: the 1x1 over 4 cores by rows,
//    the 3x3 over 2 cores by rows (each 3x3 part reads rows of three 1x1
//    parts: a window with a halo, from several cores);
//  - global average pool over 4 cores by channels, the dense layer over 2
//    cores by output channels (each dense part reads channel pieces of all
//    four pool parts, and loads half of the weights).
mapping::Mapping split_mapping(const fir::Graph& g, std::string* conv_a, std::string* conv_b) {
  mapping::Mapping m = irgen_test::single_core(g, "chip-64tops");
  // The first 3x3 convolution right after the 1x1 convolution feeding it.
  const fir::Layer* prev = nullptr;
  for (const fir::Layer* l : g.in_index_order()) {
    if (l->device != fir::Device::Npu) continue;
    if (prev && l->op == fir::Op::Conv2d && l->window() == std::array<int64_t, 2>{3, 3} && !l->previous_layer.empty() &&
        l->previous_layer[0] == prev->name && prev->op == fir::Op::Conv2d && prev->window() == std::array<int64_t, 2>{1, 1}) {
      *conv_a = prev->name, *conv_b = l->name;
      break;
    }
    prev = l;
  }
  REQUIRE(!conv_a->empty());
  std::vector<mapping::Segment> out;
  for (size_t i = 0; i < m.segments.size(); ++i) {
    const std::string& name = m.segments[i].layers[0].layer;
    const fir::Layer* l = g.find(name);
    auto next_is = [&](fir::Op op) {
      return i + 1 < m.segments.size() && g.find(m.segments[i + 1].layers[0].layer)->op == op;
    };
    if (name == *conv_a && i + 1 < m.segments.size() && m.segments[i + 1].layers[0].layer == *conv_b) {
      mapping::Segment s;
      mapping::LayerMapping a{name, {1, 2, 3, 4}, {1, 1, 4, 1}, {}};
      mapping::LayerMapping b{*conv_b, {5, 6}, {1, 1, 2, 1}, {}};
      s.layers = {a, b};
      out.push_back(s);
      ++i;
    } else if (l->op == fir::Op::AvgPool2d && next_is(fir::Op::Dense)) {
      mapping::Segment s;
      mapping::LayerMapping a{name, {1, 2, 3, 4}, {1, 4, 1, 1}, {}};
      mapping::LayerMapping b{m.segments[i + 1].layers[0].layer, {5, 6}, {1, 2, 1, 1}, {}};
      s.layers = {a, b};
      out.push_back(s);
      ++i;
    } else {
      out.push_back(m.segments[i]);
    }
  }
  m.segments = out;
  return m;
}

const sir::BufferTensor* holding(const sir::Workload& w, int64_t tid) {
  for (const auto& b : w.buffer)
    if (b.transfer_id && std::find(b.transfer_id->begin(), b.transfer_id->end(), tid) != b.transfer_id->end()) return &b;
  return nullptr;
}

}  // namespace

TEST_CASE("irgen dataflow: inputs in pieces are one tensor, sends carry only what the consumer reads") {
  auto a = arch::load_architecture("chip-64tops");
  for (int batch : {1, 4}) {
    CAPTURE(batch);
    auto g = fir::read_fir(irgen_test::fir_path("resnet50", batch));
    std::string conv_a, conv_b;
    auto m = split_mapping(g, &conv_a, &conv_b);
    auto s = irgen::generate(g, m, a);
    auto problems = irgen::check(s, a, &g, "split");
    CHECK_MESSAGE(problems.empty(), joined(problems));
    sir::format_sir(s, true);

    int multi_piece = 0, channel_pieces = 0, sends = 0;
    for (const auto& c : s.cores)
      for (const auto& w : c.workloads) {
        // One L2 tensor holds every piece of an input, at its place.
        for (const auto& f : w.ifmap) {
          const sir::BufferTensor* b = holding(w, f.transfer_id.at(0));
          REQUIRE(b);
          for (int64_t t : f.transfer_id) CHECK(holding(w, t) == b);
          if (f.transfer_id.size() < 2) continue;
          ++multi_piece;
          REQUIRE(b->source);
          CHECK(b->source->size() == f.transfer_id.size());
          for (const auto& src : *b->source) {
            CHECK(inside(src.lower, src.upper, b->lower, b->upper));
            channel_pieces += src.upper[1] - src.lower[1] < b->upper[1] - b->lower[1];
          }
        }
        // Each region sent to another core lies inside the window its
        // consumer holds: nothing the consumer does not read crosses the NoC.
        for (const auto& o : w.ofmap)
          for (const auto& d : o.destination) {
            if (d.type != sir::Endpoint::Core || d.core_id == c.id) continue;
            ++sends;
            const sir::Workload* cw = s.find_workload(*d.workload_id);
            REQUIRE(cw);
            const sir::BufferTensor* b = holding(*cw, o.transfer_id);
            REQUIRE(b);
            CHECK(inside(plus(w.lower, o.lower), plus(w.lower, o.upper), b->lower, b->upper));
          }
      }
    CHECK(multi_piece > 0);     // the 3x3 parts and the dense parts
    CHECK(channel_pieces > 0);  // the dense parts read channel pieces of the pool
    CHECK(sends > 0);

    // The 3x3 workloads read their rows plus the halo, from three 1x1 parts.
    for (const auto& c : s.cores)
      for (const auto& w : c.workloads)
        if (w.layer_name == conv_b) CHECK(w.ifmap[0].transfer_id.size() == 3);
  }
}

TEST_CASE("irgen dataflow: the pieces of a split input assemble into the tensor asm addresses") {
  auto a = arch::load_architecture("chip-64tops");
  auto g = fir::read_fir(irgen_test::fir_path("resnet50", 1));
  std::string conv_a, conv_b;
  auto m = split_mapping(g, &conv_a, &conv_b);
  auto s = irgen::generate(g, m, a);
  isa::Program p = assembler::assemble(s, g, a);
  auto report = assembler::check(p, a);
  CHECK_MESSAGE(report.ok(), report.text("split"));
  // The dense parts: the whole pooled vector is the PE input, each pool part's
  // channels land at their offset in it, and only the part's weights load.
  const fir::Layer* dense = nullptr;
  for (const auto& l : g.layers())
    if (l.op == fir::Op::Dense) dense = &l;
  REQUIRE(dense);
  const int64_t C = dense->input_shape[0][1], K = dense->output_shape[0][1];
  int receives = 0, convs = 0, weight_loads = 0;
  for (const auto& in : p.instructions) {
    // Weight loads from DRAM on the dense cores (5, 6; they may be issued
    // by an earlier workload there): the dense layer's are [K/2, C, 1, 1].
    const bool from_dram = in.op() == isa::Opcode::ldw_mov || (in.op() == isa::Opcode::lw_mov && in.get(isa::Param::SS) == 1);
    if (from_dram && (in.mapping.core == 5 || in.mapping.core == 6)) {
      auto ws = in.list(isa::Param::Wsize);
      if (ws[1] == C && ws[2] == 1 && ws[3] == 1 && ws[0] != C / 4) {
        ++weight_loads;
        CHECK(ws[0] == K / 2);
      }
    }
    // Receives name the layer reading them in clyr (they may be issued by
    // the workload before it, while it computes).
    const auto& cl = in.mapping.clyr;
    if (in.op() == isa::Opcode::si_mov && std::find(cl.begin(), cl.end(), int32_t(dense->layer_index)) != cl.end()) {
      ++receives;
      CHECK(in.list(isa::Param::Tile)[1] == C / 4);
    }
    if (in.mapping.slyr != int32_t(dense->layer_index)) continue;
    if (in.op() == isa::Opcode::pe_cfg_fm) CHECK(in.list(isa::Param::STile)[0] == C);
    if (in.op() == isa::Opcode::pe_conv) ++convs;
  }
  CHECK(receives == 8);  // 4 pieces to each of the 2 dense cores
  CHECK(convs >= 2);
  CHECK(weight_loads >= 2);
}
