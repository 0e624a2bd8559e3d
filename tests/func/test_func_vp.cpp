// The vector processor's activation and element-wise operations and the PE
// epilogue's activations, end to end: small ONNX models built here go through
// onnx2fir's pipeline, irgen, asm and the functional model on both
// architectures, and every layer must match the quantized interpreter's
// golden activations bit for bit.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "../frontend/onnx_builder.hpp"
#include "../testing/testing.hpp"
#include "asm/asm.hpp"
#include "fir/resize.hpp"
#include "func_test_util.hpp"
#include "interp/fir_exec.hpp"
#include "irgen/irgen.hpp"
#include "support/error.hpp"
#include "support/io.hpp"
#include "support/npy.hpp"

namespace fs = std::filesystem;
using namespace cct;
using cct::testing::OnnxBuilder;
using func_test::Built;
using func_test::Compiled;
using func_test::arch_named;

namespace {

std::string save(OnnxBuilder& b, const std::string& name) {
  static const std::string dir = testing::temp_dir("func_vp_models");
  std::string path = dir + "/" + name + ".onnx";
  testing::write_file(path, b.bytes());
  return path;
}

// A conv of `x` (C -> K channels, k x k, same padding) writing `out`.
void conv(OnnxBuilder& b, const std::string& x, const std::string& out, int64_t c, int64_t k, int64_t ks, uint64_t seed) {
  b.random_init(out + "_w", {k, c, ks, ks}, 0.5f, seed).random_init(out + "_b", {k}, 0.2f, seed);
  auto& n = b.node("Conv", {x, out + "_w", out + "_b"}, {out});
  int64_t p = ks / 2;
  OnnxBuilder::attr(n, "pads", std::vector<int64_t>{p, p, p, p});
}

void clip(OnnxBuilder& b, const std::string& x, const std::string& out, float lo, float hi) {
  b.init(out + "_lo", {}, {lo}).init(out + "_hi", {}, {hi});
  b.node("Clip", {x, out + "_lo", out + "_hi"}, {out});
}

// Every activation the mobile networks use, standalone on the vector
// processor, each applied to one convolution's output and summed (adds,
// subtractions and a multiplication of one shape).
std::string standalone_model() {
  OnnxBuilder b(13);
  b.input("x", {-1, 8, 6, 6}).output("y", {-1, 8, 6, 6});
  conv(b, "x", "h", 8, 8, 3, 1);
  std::vector<std::string> acts;
  auto act = [&](const std::string& name) { acts.push_back(name); };
  b.node("Relu", {"h"}, {"relu"}), act("relu");
  clip(b, "h", "relu6", 0.0f, 6.0f), act("relu6");
  clip(b, "h", "clip", -0.75f, 1.5f), act("clip");
  OnnxBuilder::attr(b.node("LeakyRelu", {"h"}, {"leaky"}), "alpha", 0.2f), act("leaky");
  OnnxBuilder::attr(b.node("Elu", {"h"}, {"elu"}), "alpha", 0.7f), act("elu");
  auto& hs = b.node("HardSigmoid", {"h"}, {"hsig"});
  OnnxBuilder::attr(hs, "alpha", 0.25f), OnnxBuilder::attr(hs, "beta", 0.4f), act("hsig");
  // x * HardSigmoid(x; 1/6, 1/2): hard swish.
  auto& hs2 = b.node("HardSigmoid", {"h"}, {"hsw_g"});
  OnnxBuilder::attr(hs2, "alpha", 1.0f / 6.0f), OnnxBuilder::attr(hs2, "beta", 0.5f);
  b.node("Mul", {"h", "hsw_g"}, {"hswish"}), act("hswish");
  b.node("Sigmoid", {"h"}, {"sig"}), act("sig");
  b.node("Sigmoid", {"h"}, {"silu_g"}), b.node("Mul", {"silu_g", "h"}, {"silu"}), act("silu");
  b.node("Tanh", {"h"}, {"tanh"}), act("tanh");
  // PyTorch's GELU: x * 0.5 * (1 + erf(x / sqrt(2))).
  b.init("sqrt2", {}, {std::sqrt(2.0f)}).init("one", {}, {1.0f}).init("half", {}, {0.5f});
  b.node("Div", {"h", "sqrt2"}, {"g_d"}), b.node("Erf", {"g_d"}, {"g_e"}), b.node("Add", {"g_e", "one"}, {"g_a"});
  b.node("Mul", {"h", "g_a"}, {"g_m"}), b.node("Mul", {"g_m", "half"}, {"gelu"}), act("gelu");
  std::string s = acts[0];
  for (size_t i = 1; i < acts.size(); ++i) {
    std::string out = i + 1 == acts.size() ? "y" : "s" + std::to_string(i);
    const char* op = i % 4 == 1 ? "Sub" : i % 4 == 2 ? "Mul" : "Add";
    b.node(op, {s, acts[i]}, {out});
    s = out;
  }
  return save(b, "standalone");
}

// Activations fused into convolutions: leaky ReLU, ReLU6, clip [0, 2.5],
// ReLU; a clip [-1, 1] is not fused (the PE clamps to [0, max] only).
std::string fused_model() {
  OnnxBuilder b(13);
  b.input("x", {-1, 8, 6, 6}).output("y", {-1, 8, 6, 6});
  conv(b, "x", "c1", 8, 8, 3, 2);
  OnnxBuilder::attr(b.node("LeakyRelu", {"c1"}, {"a1"}), "alpha", 0.15f);
  conv(b, "a1", "c2", 8, 8, 3, 3);
  clip(b, "c2", "a2", 0.0f, 6.0f);
  conv(b, "a2", "c3", 8, 8, 1, 4);
  clip(b, "c3", "a3", 0.0f, 2.5f);
  conv(b, "a3", "c4", 8, 8, 3, 5);
  clip(b, "c4", "a4", -1.0f, 1.0f);
  conv(b, "a4", "c5", 8, 8, 3, 6);
  b.node("Relu", {"c5"}, {"y"});
  return save(b, "fused");
}

// Squeeze and excitation, and the broadcasts around it: a per-channel gate
// [N, C, 1, 1] times [N, C, H, W] in both operand orders, additions and
// subtractions of [N, C, 1, 1], a per-pixel [N, 1, H, W] factor, and
// constant operands (per channel and scalars, x / c among them).
std::string se_model() {
  OnnxBuilder b(13);
  b.input("x", {-1, 8, 6, 6}).output("y", {-1, 8, 6, 6});
  conv(b, "x", "c0", 8, 8, 3, 7);
  b.node("Relu", {"c0"}, {"f"});
  b.node("GlobalAveragePool", {"f"}, {"p"});
  conv(b, "p", "q", 8, 4, 1, 8);
  b.node("Relu", {"q"}, {"qr"});
  conv(b, "qr", "r", 4, 8, 1, 9);
  auto& hs = b.node("HardSigmoid", {"r"}, {"g1"});
  OnnxBuilder::attr(hs, "alpha", 1.0f / 6.0f), OnnxBuilder::attr(hs, "beta", 0.5f);
  b.node("Mul", {"f", "g1"}, {"m1"});  // the gate second
  conv(b, "p", "r2", 8, 8, 1, 10);
  b.node("Sigmoid", {"r2"}, {"g2"});
  b.node("Mul", {"g2", "m1"}, {"m2"});  // the gate first (torchvision's SqueezeExcitation)
  b.node("Add", {"m2", "p"}, {"a"});
  b.node("Sub", {"p", "a"}, {"s1"});  // the broadcast operand first: reverse subtraction
  b.node("Sub", {"s1", "g2"}, {"s2"});
  conv(b, "f", "t", 8, 1, 1, 11);  // one channel: a per-pixel factor
  b.node("Mul", {"s2", "t"}, {"m3"});
  // Constant operands, loaded from DRAM: per channel, and scalars.
  b.init("bias8", {8, 1, 1}, {0.5f, -0.25f, 1.0f, 0.0f, -1.5f, 0.125f, 2.0f, -0.75f});
  b.init("six", {}, {6.0f}).init("quarter", {}, {0.25f}).init("third", {1}, {0.3f});
  b.node("Add", {"m3", "bias8"}, {"k1"});
  b.node("Div", {"k1", "six"}, {"k2"});
  b.node("Sub", {"k2", "quarter"}, {"k3"});
  b.node("Mul", {"third", "k3"}, {"y"});  // the constant first: the operands trade places
  return save(b, "se");
}

// Upsampling and padding on the vector processor: transposed convolutions
// (2x2 stride 2; 3x3 stride (3, 2) with asymmetric pads, output_padding,
// dilation and two groups; 3x3 stride 1, the convolution padding by itself)
// and reflect and edge Pad, between convolutions.
std::string upsample_model() {
  OnnxBuilder b(13);
  b.input("x", {-1, 4, 5, 6}).output("y", {-1, 4, 36, 30});
  conv(b, "x", "c0", 4, 8, 3, 21);
  b.node("Relu", {"c0"}, {"r0"});
  b.random_init("t1_w", {8, 6, 2, 2}, 0.5f, 22).random_init("t1_b", {6}, 0.2f, 23);
  auto& t1 = b.node("ConvTranspose", {"r0", "t1_w", "t1_b"}, {"t1"});  // 10 x 12
  OnnxBuilder::attr(t1, "strides", std::vector<int64_t>{2, 2});
  b.init_i64("p1", {8}, {0, 0, 2, 1, 0, 0, 1, 2});
  auto& pad1 = b.node("Pad", {"t1", "p1"}, {"q1"});  // 13 x 15
  auto* m1 = pad1.add_attribute();
  m1->set_name("mode"), m1->set_type(onnx::AttributeProto::STRING), m1->set_s("reflect");
  b.random_init("t2_w", {6, 2, 3, 3}, 0.5f, 24).random_init("t2_b", {4}, 0.2f, 25);
  auto& t2 = b.node("ConvTranspose", {"q1", "t2_w", "t2_b"}, {"t2"});
  OnnxBuilder::attr(t2, "strides", std::vector<int64_t>{3, 2});
  OnnxBuilder::attr(t2, "pads", std::vector<int64_t>{1, 0, 2, 1});
  OnnxBuilder::attr(t2, "output_padding", std::vector<int64_t>{2, 1});
  OnnxBuilder::attr(t2, "dilations", std::vector<int64_t>{1, 2});
  OnnxBuilder::attr(t2, "group", int64_t(2));  // rows 3*12 + 2 + 2 + 1 - 3 = 38, columns 2*14 + 1 + 4 + 1 - 1 = 33
  b.node("Relu", {"t2"}, {"r2"});
  b.init_i64("p2", {8}, {0, 0, 0, 1, 0, 0, 0, 0});
  auto& pad2 = b.node("Pad", {"r2", "p2"}, {"q2"});  // 38 x 34
  auto* m2 = pad2.add_attribute();
  m2->set_name("mode"), m2->set_type(onnx::AttributeProto::STRING), m2->set_s("edge");
  b.random_init("t3_w", {4, 4, 3, 5}, 0.5f, 26);
  auto& t3 = b.node("ConvTranspose", {"q2", "t3_w"}, {"y"});  // stride 1, pads (2, 3): 36 x 30
  OnnxBuilder::attr(t3, "pads", std::vector<int64_t>{2, 4, 2, 4});
  return save(b, "upsample");
}

struct Arch {
  const char* name;
  bool pipelined;
};

// Compiles, maps, builds and runs a model; every layer checked against its golden.
void check_model(const Compiled& c, const std::string& tag) {
  for (Arch k : {Arch{"zebu-1core", false}, Arch{"chip-64tops", false}, Arch{"chip-64tops", true}}) {
    CAPTURE(k.name);
    CAPTURE(k.pipelined);
    const auto& a = arch_named(k.name);
    int batch = c.graph.in_index_order().front()->output_shape[0][0];
    auto m = k.pipelined ? func_test::pipeline(c.graph, k.name, a.core_count(), batch > 1 ? 2 : 1)
                         : func_test::single_core(c.graph, k.name);
    Built b = func_test::build(c, m, a, testing::temp_dir("func_vp_" + tag));
    CHECK(irgen::check(b.sir, a, &c.graph, "s.json").empty());
    // irgen's VP tile times are zebusim's (one timing model): exactly, one sample per tile.
    if (batch == 1) {
      std::map<std::pair<int64_t, int64_t>, int64_t> measured;
      for (size_t i = 0; i < b.program.size(); ++i) {
        const auto& in = b.program.instructions[i];
        if (in.op() == isa::Opcode::vp_self || in.op() == isa::Opcode::vp_pool)
          measured[{in.mapping.wkl, in.mapping.tile}] += b.timing[i].duration();
      }
      size_t compared = 0;
      for (const auto& core : b.sir.cores)
        for (const auto& w : core.workloads)
          for (size_t t = 0; t < w.tile_info.size(); ++t)
            if (auto it = measured.find({w.workload_id, int64_t(t)}); it != measured.end()) {
              CHECK(int64_t(w.tile_info[t].single_tile_time_pred) == it->second);
              ++compared;
            }
      CHECK(compared == measured.size());
    }
    func::Result r = func_test::run(c, b, b.program, b.timing, a, true);
    func_test::check_bit_exact(c, r);
  }
}

size_t count_ops(const fir::Graph& g, fir::Op op) {
  size_t n = 0;
  for (const auto& l : g.layers()) n += l.op == op;
  return n;
}

bool has_lut(const isa::Program& p, isa::Lut lut) {
  for (const auto& in : p.instructions)
    if (in.op() == isa::Opcode::vp_self && in.get(isa::Param::LUT) == int64_t(lut)) return true;
  return false;
}

}  // namespace

TEST_CASE("standalone activations run on the vector processor bit for bit like the interpreter") {
  for (int batch : {1, 2}) {
    CAPTURE(batch);
    const Compiled& c = func_test::compile_model(standalone_model(), batch, "vp_standalone");
    // Each activation became its own layer on the accelerator.
    for (fir::Op op : {fir::Op::Relu, fir::Op::Clip, fir::Op::LeakyRelu, fir::Op::Elu, fir::Op::HardSigmoid,
                       fir::Op::HardSwish, fir::Op::Sigmoid, fir::Op::Silu, fir::Op::Tanh, fir::Op::Gelu}) {
      CAPTURE(fir::op_name(op));
      CHECK(count_ops(c.graph, op) >= 1);
    }
    CHECK(count_ops(c.graph, fir::Op::Clip) == 2);  // relu6 and clip [-0.75, 1.5]
    check_model(c, "standalone");
    Built b = func_test::build(c, func_test::single_core(c.graph, "zebu-1core"), arch_named("zebu-1core"),
                               testing::temp_dir("func_vp_standalone_luts"));
    for (isa::Lut lut : {isa::Lut::Relu, isa::Lut::Clip, isa::Lut::LeakyRelu, isa::Lut::Elu, isa::Lut::HardSigmoid,
                         isa::Lut::HardSwish, isa::Lut::Sigmoid, isa::Lut::Silu, isa::Lut::Tanh, isa::Lut::Gelu,
                         isa::Lut::Add, isa::Lut::Sub, isa::Lut::Mul}) {
      CAPTURE(int(lut));
      CHECK(has_lut(b.program, lut));
    }
  }
}

TEST_CASE("squeeze-and-excitation and broadcast add, subtract and multiply run bit for bit") {
  for (int batch : {1, 2}) {
    CAPTURE(batch);
    const Compiled& c = func_test::compile_model(se_model(), batch, "vp_se");
    check_model(c, "se");
    Built b = func_test::build(c, func_test::single_core(c.graph, "zebu-1core"), arch_named("zebu-1core"),
                               testing::temp_dir("func_vp_se_luts"));
    CHECK(has_lut(b.program, isa::Lut::ReverseSub));
    size_t fm1 = 0;
    for (const auto& in : b.program.instructions) fm1 += in.op() == isa::Opcode::vp_cfg_fm1;
    CHECK(fm1 >= 2);
  }
}

// A fused ReLU6 / clip / leaky ReLU whose output zero point is not -128
// (TFLite's person_detect has such ReLU6 convolutions): the clamp is visible
// in the codes, so the PE must apply it. The zero points are moved here and
// the goldens recomputed with the interpreter.
TEST_CASE("activations fused into convolutions keep their clamp and slope whatever the output zero point") {
  const Compiled& c0 = func_test::compile_model(fused_model(), 1, "vp_fused");
  CHECK(count_ops(c0.graph, fir::Op::Clip) == 1);  // clip [-1, 1] stays a layer of its own
  std::map<std::string, int> acts;
  for (const auto& l : c0.graph.layers())
    if (l.activation && l.activation->type) ++acts[*l.activation->type];
  CHECK(acts["relu6"] == 1);
  CHECK(acts["clip"] == 1);
  CHECK(acts["leaky_relu"] == 1);
  CHECK(acts["relu"] == 1);
  check_model(c0, "fused");

  Compiled c = c0;
  c.dir = testing::temp_dir("func_vp_models/fused_zp_data");
  for (const auto& e : fs::directory_iterator(c0.dir)) fs::copy_file(e.path(), fs::path(c.dir) / e.path().filename(), fs::copy_options::overwrite_existing);
  // Output zero point 0 (codes -128..127 stand for [-128, 127] x scale) on every
  // fused activation, and the readers' input zero points with it.
  std::set<std::string> moved;
  for (auto& l : c.graph.mutable_layers())
    if (l.op == fir::Op::Conv2d && l.activation && l.activation->type && *l.activation->type != "relu") {
      l.quant_info->output_zero_point = 0.0;
      moved.insert(l.name);
    }
  REQUIRE(moved.size() == 3);
  for (auto& l : c.graph.mutable_layers()) {
    if (l.previous_layer.empty() || !moved.count(l.previous_layer[0])) continue;
    // (every reader here is a convolution)
    REQUIRE(l.op == fir::Op::Conv2d);
    l.quant_info->inputs[0].zero_point = 0.0;
  }
  func_test::write_goldens(c.graph, interp::directory_loader(c.dir), c.input, c.dir);
  // The test can fail: without the epilogue's activation the outputs differ.
  fir::Graph plain = c.graph;
  for (auto& l : plain.mutable_layers())
    if (moved.count(l.name)) l.activation->type.reset();
  Compiled cp = c;
  cp.graph = plain;
  CHECK_FALSE(func_test::same_bits(func_test::interpret(cp)[0], func_test::interpret(c)[0]));
  check_model(c, "fused_zp");
}

// PReLU's slope is a constant: irgen loads it from DRAM like a network
// input, as FP16 (onnx2fir rounds it to float16 numbers), and the VP reads it
// as a broadcast operand B [C, 1, 1] (LUT PReLU).
TEST_CASE("PReLU runs on the vector processor with its per-channel slope loaded from DRAM") {
  const float slope[8] = {0.1f, 0.2f, 0.3f, -0.1f, 0.25f, 0.5f, 0.05f, 0.0f};
  OnnxBuilder b(13);
  b.input("x", {-1, 8, 6, 6}).output("y", {-1, 8, 6, 6});
  conv(b, "x", "c", 8, 8, 3, 12);
  b.init("slope", {8, 1, 1}, std::vector<float>(slope, slope + 8));
  b.node("PRelu", {"c", "slope"}, {"p"});
  conv(b, "p", "c2", 8, 8, 1, 13);
  b.init("slope1", {1}, {0.375f});  // one slope for all: B of box [1, 1, 1]
  b.node("PRelu", {"c2", "slope1"}, {"y"});
  const std::string model = save(b, "prelu");
  for (int batch : {1, 2}) {
    CAPTURE(batch);
    const Compiled& c = func_test::compile_model(model, batch, "vp_prelu");
    REQUIRE(count_ops(c.graph, fir::Op::PRelu) == 2);
    // The interpreter's PReLU: the conv's output times its channel's slope below 0.
    const fir::Layer* pr = nullptr;
    for (const auto& l : c.graph.layers())
      if (l.op == fir::Op::PRelu && !pr) pr = &l;
    const fir::Layer* cv = c.graph.find(pr->previous_layer[0]);
    auto golden = [&](const fir::Layer& l) {
      return interp::real_values(l, interp::QTensor::from_npy(read_npy(c.dir + "/" + *l.file("output_activation1")), l.name));
    };
    std::vector<float> x = golden(*cv), y = golden(*pr);
    auto q = interp::output_quant(*pr);
    REQUIRE(q);
    REQUIRE(x.size() == y.size());
    int negative = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      float s = slope[(i / 36) % 8];  // (float16 numbers all)
      negative += x[i] < 0.0f;
      float want = x[i] >= 0.0f ? x[i] : s * x[i];
      CHECK(std::fabs(y[i] - want) <= q->scale);
    }
    CHECK(negative > 0);
    check_model(c, "prelu");
    Built bl = func_test::build(c, func_test::single_core(c.graph, "zebu-1core"), arch_named("zebu-1core"),
                                testing::temp_dir("func_vp_prelu_luts"));
    CHECK(has_lut(bl.program, isa::Lut::PRelu));
  }
}

// A slope of one value per element of a sample ([C, H, W]) or per column:
// operand B of the input's box, float16, whose channels are padded to the
// alignment in bytes (5 float16 channels take 16 bytes a pixel, 5 INT8 ones
// 8): vp_cfg_fm1 gives B's own box and format.
TEST_CASE("PReLU with a slope per element or per column: float16 operand B in a box of its own") {
  OnnxBuilder b(13);
  b.input("x", {-1, 5, 4, 6}).output("y", {-1, 5, 4, 6});
  conv(b, "x", "c", 5, 5, 3, 21);
  b.random_init("slope", {5, 4, 6}, 0.5f, 22);
  b.node("PRelu", {"c", "slope"}, {"p"});
  conv(b, "p", "c2", 5, 5, 1, 23);
  b.random_init("slope1", {6}, 0.5f, 24);  // along W: B of box [1, 1, 6]
  b.node("PRelu", {"c2", "slope1"}, {"y"});
  const std::string model = save(b, "prelu_elements");
  for (int batch : {1, 2}) {
    CAPTURE(batch);
    const Compiled& c = func_test::compile_model(model, batch, "vp_prelu_elements");
    REQUIRE(count_ops(c.graph, fir::Op::PRelu) == 2);
    check_model(c, "prelu_elements");
  }
}

// A slope that varies along axis 0 fixes the batch: at another batch it is
// refused, naming the layer and why.
TEST_CASE("PReLU with one slope per sample is refused at another batch, naming the node") {
  OnnxBuilder b(13);
  b.input("x", {2, 3, 4, 4}).output("y", {2, 3, 4, 4});
  b.random_init("slope", {2, 3, 4, 4}, 0.5f, 25);
  b.node("PRelu", {"x", "slope"}, {"y"});
  const std::string model = save(b, "prelu_per_sample");
  try {
    func_test::compile_model(model, 1, "vp_prelu_per_sample");
    FAIL("a per-sample slope at batch 1 was accepted");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK(m.find("PRelu") != std::string::npos);
    CHECK(m.find("one slope per sample along axis 0, the batch") != std::string::npos);
  }
}

TEST_CASE("a fused clip with a lower bound other than 0 is refused by asm, naming the layer") {
  const auto& a = arch_named("zebu-1core");
  // A conv2d whose clip was fused by hand with a lower bound of -1.
  const Compiled& f = func_test::compile_model(fused_model(), 1, "vp_fused");
  fir::Graph g = f.graph;
  bool edited = false;
  for (auto& l : g.mutable_layers())
    if (l.activation && l.activation->type && *l.activation->type == "clip") {
      l.activation->attr.set("min", -1.0);
      edited = true;
    }
  REQUIRE(edited);
  auto s2 = irgen::generate(g, func_test::single_core(g, "zebu-1core"), a);
  CHECK_THROWS_WITH_AS(assembler::assemble(s2, g, a), doctest::Contains("lower bound other than 0"), Error);
}

TEST_CASE("transposed convolutions and reflect / edge padding run bit for bit (resize modes 5-7 and the PE array)") {
  for (int batch : {1, 2}) {
    CAPTURE(batch);
    const Compiled& c = func_test::compile_model(upsample_model(), batch, "vp_upsample");
    std::map<std::string, int> modes;
    for (const auto& l : c.graph.layers())
      if (l.op == fir::Op::Resize) {
        auto g = fir::resize_geometry(l);
        REQUIRE(g);
        ++modes[g->mode == 5 ? "zeros" : g->mode == 6 ? "reflect" : g->mode == 7 ? "edge" : "other"];
      }
    CHECK(modes == std::map<std::string, int>{{"edge", 1}, {"reflect", 1}, {"zeros", 2}});
    CHECK(count_ops(c.graph, fir::Op::Conv2d) == 4);
    check_model(c, "upsample");
    // The program resamples with the padding modes.
    Built b = func_test::build(c, func_test::single_core(c.graph, "zebu-1core"), arch_named("zebu-1core"),
                               testing::temp_dir("func_vp_upsample_modes"));
    std::set<int64_t> rsmd;
    for (const auto& in : b.program.instructions)
      if (in.op() == isa::Opcode::vp_cfg_rs) rsmd.insert(in.get(isa::Param::RSMD));
    CHECK(rsmd == std::set<int64_t>{5, 6, 7});
  }
}
