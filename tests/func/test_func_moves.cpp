// Data movement on the chip (concat, split and slice, channel shuffle):
// small models built in C++, through irgen, asm and the functional model on
// one core and across cores, bit for bit against the interpreter; the
// requantizing path, with an input quantization moved away from the output's;
// and gemini's prices of both against zebusim's cycles.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>

#include "../frontend/onnx_builder.hpp"
#include "../testing/testing.hpp"
#include "func_test_util.hpp"
#include "gemini/cost.hpp"
#include "gemini/network.hpp"
#include "gemini/plan.hpp"
#include "gemini/search.hpp"
#include "interp/fir_exec.hpp"
#include "irgen/irgen.hpp"
#include "support/io.hpp"

namespace fs = std::filesystem;
using namespace cct;
using cct::testing::OnnxBuilder;
using func_test::Built;
using func_test::Compiled;
using func_test::arch_named;

namespace {

void conv(OnnxBuilder& b, const std::string& x, const std::string& out, int64_t c, int64_t k, int64_t ks, uint64_t seed) {
  b.random_init(out + "_w", {k, c, ks, ks}, 0.5f, seed).random_init(out + "_b", {k}, 0.2f, seed);
  auto& n = b.node("Conv", {x, out + "_w", out + "_b"}, {out});
  int64_t p = ks / 2;
  OnnxBuilder::attr(n, "pads", std::vector<int64_t>{p, p, p, p});
}

// Convolutions of 3, 5, 8 and 2 channels concatenated (channel counts that
// fit no alignment), split in two unequal parts, a channel shuffle of one
// part (Reshape, Transpose, Reshape), a strided slice of rows, and a concat
// again: every piece lands at a channel or row offset of its output.
std::string moves_model() {
  OnnxBuilder b(13);
  b.input("x", {1, 4, 8, 8}).output("y", {1, 20, 4, 8});
  conv(b, "x", "c0", 4, 3, 1, 1);
  conv(b, "x", "c1", 4, 5, 3, 2);
  conv(b, "x", "c2", 4, 8, 1, 3);
  conv(b, "x", "c3", 4, 2, 3, 4);
  auto& cat = b.node("Concat", {"c0", "c1", "c2", "c3"}, {"cat"});
  OnnxBuilder::attr(cat, "axis", int64_t{1});
  b.init_i64("parts", {2}, {6, 12});
  auto& sp = b.node("Split", {"cat", "parts"}, {"a", "bb"});
  OnnxBuilder::attr(sp, "axis", int64_t{1});
  b.init_i64("s5", {5}, {0, 3, 4, 8, 8});  // 0: the batch as it is
  b.node("Reshape", {"bb", "s5"}, {"r5"});
  auto& t = b.node("Transpose", {"r5"}, {"t5"});
  OnnxBuilder::attr(t, "perm", std::vector<int64_t>{0, 2, 1, 3, 4});
  b.init_i64("s4", {4}, {0, 12, 8, 8});
  b.node("Reshape", {"t5", "s4"}, {"shuf"});
  conv(b, "a", "ca", 6, 8, 3, 5);
  auto& cat2 = b.node("Concat", {"shuf", "ca"}, {"cat2"});
  OnnxBuilder::attr(cat2, "axis", int64_t{1});
  b.init_i64("st", {1}, {0}).init_i64("en", {1}, {8}).init_i64("ax", {1}, {2}).init_i64("stp", {1}, {2});
  b.node("Slice", {"cat2", "st", "en", "ax", "stp"}, {"y"});
  static const std::string dir = testing::temp_dir("func_moves_models");
  std::string path = dir + "/moves.onnx";
  testing::write_file(path, b.bytes());
  return path;
}

size_t count_ops(const fir::Graph& g, fir::Op op) {
  size_t n = 0;
  for (const auto& l : g.layers()) n += l.op == op;
  return n;
}

// On one core of each preset and one layer per core of the chip: every
// layer against its golden, the outputs against the interpreter's; returns
// the zebu-1core program.
isa::Program check_model(const Compiled& c, const std::string& tag) {
  isa::Program first;
  for (auto name_pipelined : {std::pair{"zebu-1core", false}, {"chip-64tops", false}, {"chip-64tops", true}}) {
    const char* name = name_pipelined.first;
    const bool pipelined = name_pipelined.second;
    CAPTURE(name);
    CAPTURE(pipelined);
    const auto& a = arch_named(name);
    int batch = int(c.graph.in_index_order().front()->output_shape[0][0]);
    auto m = pipelined ? func_test::pipeline(c.graph, name, a.core_count(), batch > 1 ? 2 : 1)
                       : func_test::single_core(c.graph, name);
    Built b = func_test::build(c, m, a, testing::temp_dir("func_moves_" + tag));
    CHECK(irgen::check(b.sir, a, &c.graph, "s.json").empty());
    func::Result r = func_test::run(c, b, b.program, b.timing, a, true);
    auto want = func_test::interpret(c);
    REQUIRE(r.outputs.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) CHECK(func_test::same_bits(r.outputs[i].tensor, want[i]));
    // Layers computed by instructions are checked against their goldens; a
    // movement done by transfers alone is checked where its readers read it.
    int64_t npu = 0;
    for (const auto& l : c.graph.layers()) npu += l.device == fir::Device::Npu && !fir::is_move_op(l.op);
    CHECK(r.layers_checked >= npu);
    if (!pipelined && std::string(name) == "zebu-1core") first = b.program;
  }
  return first;
}

}  // namespace

TEST_CASE("concat, split, strided slice and channel shuffle move data bit for bit, on one core and across cores") {
  for (int batch : {1, 2}) {
    CAPTURE(batch);
    const Compiled& c = func_test::compile_model(moves_model(), batch, "moves");
    CHECK(count_ops(c.graph, fir::Op::Concat) == 2);
    CHECK(count_ops(c.graph, fir::Op::Slice) == 3);
    CHECK(count_ops(c.graph, fir::Op::Gather) == 1);
    check_model(c, "plain");
  }
}

TEST_CASE("a concat input quantized apart from the output is requantized on its way, bit for bit") {
  const Compiled& c0 = func_test::compile_model(moves_model(), 1, "moves");
  Compiled c = c0;
  c.dir = testing::temp_dir("func_moves_models/requant_data");
  for (const auto& e : fs::directory_iterator(c0.dir))
    fs::copy_file(e.path(), fs::path(c.dir) / e.path().filename(), fs::copy_options::overwrite_existing);
  // The first concat's input 1 read as if its codes stood for 1.5 times the
  // values (a producer of another scale): the interpreter requantizes it.
  bool moved = false;
  for (auto& l : c.graph.mutable_layers())
    if (l.op == fir::Op::Concat && l.previous_layer.size() == 4) {
      REQUIRE(l.quant_info);
      l.quant_info->inputs[1].scale *= 1.5;
      REQUIRE(fir::move_requantizes(l, 1));
      CHECK_FALSE(fir::move_requantizes(l, 0));
      moved = true;
    }
  REQUIRE(moved);
  func_test::write_goldens(c.graph, interp::directory_loader(c.dir), c.input, c.dir);
  // The test can fail: the copy's outputs differ from the requantization's.
  CHECK_FALSE(func_test::same_bits(func_test::interpret(c0)[0], func_test::interpret(c)[0]));
  isa::Program p = check_model(c, "requant");
  size_t requant = 0;
  for (const auto& in : p.instructions)
    requant += in.op() == isa::Opcode::vp_self && in.get(isa::Param::LUT) == int64_t(isa::Lut::Requantize);
  CHECK(requant >= 1);
}

// A token tensor [N, T, D] is the box [N, D, T, 1] (fir::chip_box): a concat
// along the tokens (T) moves rows of the box, one along the features (D)
// channels, and slices likewise. fir::move_pieces cut the Frontend IR's axes
// as if they were the box's (rows for D, channels for T) before.
TEST_CASE("concat and slice of token tensors along the tokens and the features move the right box axes") {
  OnnxBuilder b(13);
  b.input("x", {-1, 6, 5}).output("y", {-1, 10, 4});
  b.node("Relu", {"x"}, {"r"});
  b.node("Sigmoid", {"x"}, {"s"});
  OnnxBuilder::attr(b.node("Concat", {"r", "s"}, {"t"}), "axis", int64_t{1});   // [N, 12, 5]: tokens
  OnnxBuilder::attr(b.node("Concat", {"t", "t"}, {"d"}), "axis", int64_t{-1});  // [N, 12, 10]: features
  b.init_i64("st", {2}, {1, 2}).init_i64("en", {2}, {11, 10}).init_i64("ax", {2}, {1, 2}).init_i64("stp", {2}, {1, 2});
  b.node("Slice", {"d", "st", "en", "ax", "stp"}, {"y"});  // tokens 1..10, features 2, 4, 6, 8
  static const std::string dir = testing::temp_dir("func_moves_models");
  const std::string path = dir + "/tokens.onnx";
  testing::write_file(path, b.bytes());
  for (int batch : {1, 2}) {
    CAPTURE(batch);
    const Compiled& c = func_test::compile_model(path, batch, "moves_tokens");
    CHECK(count_ops(c.graph, fir::Op::Concat) == 2);
    CHECK(count_ops(c.graph, fir::Op::Slice) == 1);
    check_model(c, "tokens");
  }
}

// Axis 0 is the batch: a concat or slice along it changes the batch, which
// no accelerator layer may (work is cut by sample); it runs on the host,
// exact, and the outputs are the interpreter's.
TEST_CASE("a concat and a slice along the batch run on the host, bit for bit") {
  OnnxBuilder b(13);
  b.input("x", {2, 3, 4, 4}).output("y", {3, 3, 4, 4});
  conv(b, "x", "c", 3, 3, 3, 31);
  b.node("Relu", {"c"}, {"r"});
  OnnxBuilder::attr(b.node("Concat", {"c", "r"}, {"cat"}), "axis", int64_t{0});  // [4, 3, 4, 4]
  b.init_i64("st", {1}, {1}).init_i64("en", {1}, {4}).init_i64("ax", {1}, {0});
  b.node("Slice", {"cat", "st", "en", "ax"}, {"y"});  // samples 1..3
  static const std::string dir = testing::temp_dir("func_moves_models");
  const std::string path = dir + "/batch_axis.onnx";
  testing::write_file(path, b.bytes());
  const Compiled& c = func_test::compile_model(path, 2, "moves_batch_axis");
  for (const auto& l : c.graph.layers())
    if (l.op == fir::Op::Concat || l.op == fir::Op::Slice) CHECK(l.device == fir::Device::Cpu);
  for (const char* name : {"zebu-1core", "chip-64tops"}) {
    CAPTURE(name);
    const auto& a = arch_named(name);
    Built bl = func_test::build(c, func_test::single_core(c.graph, name), a, testing::temp_dir("func_moves_batch_axis"));
    func::Result r = func_test::run(c, bl, bl.program, bl.timing, a, true);
    auto want = func_test::interpret(c);
    REQUIRE(r.outputs.size() == want.size());
    REQUIRE(want[0].shape == interp::Shape{3, 3, 4, 4});
    CHECK(func_test::same_bits(r.outputs[0].tensor, want[0]));
  }
}

TEST_CASE("gemini prices data movement as irgen and asm run it: transfers, copies and requantizations, no compute") {
  const Compiled& c0 = func_test::compile_model(moves_model(), 1, "moves");
  for (bool requant : {false, true}) {
    CAPTURE(requant);
    Compiled c = c0;
    if (requant)
      for (auto& l : c.graph.mutable_layers())
        if (l.op == fir::Op::Concat && l.previous_layer.size() == 4) l.quant_info->inputs[1].scale *= 1.5;
    for (const std::string preset : {"zebu-1core", "chip-64tops"}) {
      CAPTURE(preset);
      const auto& a = arch_named(preset);
      gemini::Network net = gemini::build_network(c.graph, a, c.fir_path);
      gemini::CostModel model(net, a);
      // A movement's workload computes nothing but its requantized pieces
      // (the first concat's input 1 when requantizing); a slice of a part
      // reads the channels its pieces come from.
      for (size_t i = 0; i < net.layers.size(); ++i) {
        const gemini::Layer& L = net.layers[i];
        if (!L.move) continue;
        CAPTURE(L.name);
        const int64_t cycles = model.part_cycles(int(i), mapping::Partition{}, 1);
        const bool requantizes = requant && L.fir->op == fir::Op::Concat && L.inputs.size() == 4;
        CHECK((cycles > 0) == requantizes);
        if (L.fir->op == fir::Op::Concat && L.inputs.size() == 4) {
          mapping::Partition k2;
          k2.k = 2;  // 18 channels in two parts of 9: the first holds inputs 0 (3) and 1 (5) and one of input 2
          mapping::Box first = mapping::part_box(k2, L.out, 0);
          CHECK(gemini::input_region(net, L, 2, first).lower[1] == 0);
          CHECK(gemini::input_region(net, L, 2, first).upper[1] == 0);
          CHECK(gemini::empty_box(gemini::input_region(net, L, 3, first)));
        }
      }
      gemini::Plan plan = gemini::search(model, gemini::SearchOptions{}).plan;
      const int64_t predicted = model.evaluate(plan, false).cycles;
      Built b = func_test::build(c, gemini::to_mapping(plan, net, a), a, testing::temp_dir("func_moves_gemini"));
      int64_t end = 0;
      for (const auto& t : b.timing) end = std::max(end, t.end);
      MESSAGE(preset << std::string(requant ? " (requantizing)" : "") << ": predicted " << predicted << ", zebusim " << end);
      CHECK(double(predicted) == doctest::Approx(double(end)).epsilon(0.06));
    }
  }
}

TEST_CASE("gemini receives a reader's pieces in irgen's transfer order: a gate before the map it scales") {
  // Squeeze and excitation with the gate as the Mul's first input
  // (torchvision's order): the map is cut by channels over four cores, the
  // gate computed on one, the Mul cut by columns, so every core sends every
  // other core a piece of the map, and the gate's core sends them the gate.
  // irgen numbers a reader's transfers input by input (the gate's first,
  // though it is produced last) and each core receives in that order; priced
  // in producer order, the map's pieces would flow before the gate is ready.
  OnnxBuilder b(13);
  b.input("x", {1, 32, 16, 16}).output("y", {1, 32, 16, 16});
  conv(b, "x", "c0", 32, 32, 1, 31);
  b.node("Relu", {"c0"}, {"f"});
  b.node("GlobalAveragePool", {"f"}, {"p"});
  conv(b, "p", "q", 32, 8, 1, 32);
  b.node("Relu", {"q"}, {"qr"});
  conv(b, "qr", "r", 8, 32, 1, 33);
  auto& hs = b.node("HardSigmoid", {"r"}, {"g"});
  OnnxBuilder::attr(hs, "alpha", 1.0f / 6.0f), OnnxBuilder::attr(hs, "beta", 0.5f);
  b.node("Mul", {"g", "f"}, {"m"});
  conv(b, "m", "y", 32, 32, 1, 34);
  const std::string path = testing::temp_dir("func_moves_models") + "/gate_first.onnx";
  testing::write_file(path, b.bytes());
  const Compiled& c = func_test::compile_model(path, 1, "gate_first");
  const auto& a = arch_named("chip-64tops");
  mapping::Mapping m = func_test::single_core(c.graph, "chip-64tops");
  int gate_core = 4;
  for (auto& s : m.segments)
    for (auto& lm : s.layers) {
      const fir::Layer* l = c.graph.find(lm.layer);
      REQUIRE(l);
      const int64_t channels = fir::chip_box(l->output_shape[0])[1];
      lm.partition = mapping::Partition{};
      if (l->op == fir::Op::ElementWiseMul) {
        lm.cores = {0, 1, 2, 3}, lm.partition.w = 4;
      } else if (channels == 32 && fir::chip_box(l->output_shape[0])[2] > 1) {
        lm.cores = {0, 1, 2, 3}, lm.partition.k = 4;
      } else {
        lm.cores = {gate_core++ % a.core_count()};
      }
    }
  gemini::Network net = gemini::build_network(c.graph, a, c.fir_path);
  gemini::CostModel model(net, a);
  gemini::Plan plan = gemini::from_mapping(m, net);
  REQUIRE(gemini::to_mapping(plan, net, a).segments == m.segments);
  const gemini::PlanCost cost = model.evaluate(plan, false);
  CHECK(cost.problem == "");
  Built built = func_test::build(c, m, a, testing::temp_dir("func_moves_gate_first"));
  int64_t end = 0;
  for (const auto& t : built.timing) end = std::max(end, t.end);
  MESSAGE("gate first: predicted " << cost.cycles << ", zebusim " << end);
  CHECK(double(cost.cycles) == doctest::Approx(double(end)).epsilon(0.01));
  func::Result r = func_test::run(c, built, built.program, built.timing, a, true);
  auto want = func_test::interpret(c);
  REQUIRE(r.outputs.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(func_test::same_bits(r.outputs[i].tensor, want[i]));
}
