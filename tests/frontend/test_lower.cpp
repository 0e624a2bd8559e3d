// Lowering: fusion patterns, devices, dtypes and the FIR structure.
#include <doctest/doctest.h>

#include <map>

#include "frontend/graph_passes.hpp"
#include "frontend/lower.hpp"
#include "frontend/onnx_import.hpp"
#include "interp/float_interp.hpp"
#include "onnx_builder.hpp"
#include "transformer_models.hpp"
#include "support/error.hpp"

using namespace cct;
using cct::testing::OnnxBuilder;

namespace {

frontend::LoweredModel lower(OnnxBuilder& b, const frontend::LowerOptions& o = {}) {
  auto g = frontend::import_onnx_bytes(b.bytes(), "m.onnx", ".");
  frontend::simplify(g);
  return frontend::lower(g, o);
}

std::vector<std::string> ops(const frontend::LoweredModel& m) {
  std::vector<std::string> out;
  for (const auto& l : m.layers) out.emplace_back(fir::op_name(l.op));
  return out;
}

const frontend::LLayer& find(const frontend::LoweredModel& m, fir::Op op) {
  for (const auto& l : m.layers)
    if (l.op == op) return l;
  FAIL("no layer of the operation");
  return m.layers.front();
}

void conv(OnnxBuilder& b, const std::string& in, const std::string& out, int64_t cin, int64_t cout, int64_t k,
          int64_t group = 1, int64_t stride = 1) {
  b.random_init(out + "_w", {cout, cin / group, k, k}).random_init(out + "_b", {cout}, 0.1f);
  auto& n = b.node("Conv", {in, out + "_w", out + "_b"}, {out});
  OnnxBuilder::attr(n, "pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2});
  OnnxBuilder::attr(n, "strides", std::vector<int64_t>{stride, stride});
  if (group != 1) OnnxBuilder::attr(n, "group", group);
}

}  // namespace

TEST_CASE("Conv + ReLU fuses into one conv2d after a quantize layer") {
  OnnxBuilder b;
  b.input("x", {1, 3, 8, 8}).output("y", {1, 4, 8, 8});
  conv(b, "x", "c", 3, 4, 3);
  b.node("Relu", {"c"}, {"r"});
  conv(b, "r", "y", 4, 4, 1);
  auto m = lower(b);
  CHECK(ops(m) == std::vector<std::string>{"quantize", "conv2d", "conv2d"});
  const auto& c = m.layers[1];
  CHECK(c.activation == std::optional<std::string>("relu"));
  CHECK(c.padding == std::optional<std::array<int64_t, 4>>({1, 1, 1, 1}));
  CHECK(c.out_dtype == "int8");
  // the last layer feeds the graph output: no output quantization, float16 as in the reference
  CHECK(m.layers.back().out_dtype == "float16");
  CHECK(m.layers.front().name == "src_quantize_1_1");
  CHECK(m.layers.front().out_dtype == "int8");
}

TEST_CASE("an int8 tensor read by a graph output and by a layer gets a dequantize layer") {
  OnnxBuilder b;
  b.input("x", {1, 3, 8, 8}).output("y", {1, 4, 8, 8}).output("z", {1, 4, 8, 8});
  conv(b, "x", "y", 3, 4, 3);
  conv(b, "y", "z", 4, 4, 1);
  auto m = lower(b);
  CHECK(ops(m) == std::vector<std::string>{"quantize", "conv2d", "conv2d", "quantize"});
  CHECK(m.layers[3].name == "dequantize_Conv_0_1");
  CHECK(m.layers[3].out_dtype == "float16");
}

TEST_CASE("Clip(0, 6) fuses as relu6, Clip(0, max) as clip, other clips stay clip layers on the VP") {
  OnnxBuilder b;
  b.input("x", {1, 3, 8, 8}).output("y", {1, 4, 8, 8}).output("z", {1, 4, 8, 8}).output("u", {1, 4, 8, 8});
  conv(b, "x", "c1", 3, 4, 3);
  b.init("zero", {}, {0.0f}).init("six", {}, {6.0f}).init("lo", {}, {-1.0f}).init("hi", {}, {2.0f});
  b.node("Clip", {"c1", "zero", "six"}, {"y"});
  conv(b, "x", "c2", 3, 4, 1);
  b.node("Clip", {"c2", "lo", "hi"}, {"z"});
  conv(b, "x", "c3", 3, 4, 1);
  b.node("Clip", {"c3", "zero", "hi"}, {"u"});
  auto m = lower(b);
  std::vector<std::string> acts;
  for (const auto& l : m.layers)
    if (l.op == fir::Op::Conv2d) acts.push_back(l.activation.value_or("none"));
  // The PE clamps to [0, max]: a lower bound of -1 is a layer of its own.
  CHECK(acts == std::vector<std::string>{"relu6", "none", "clip"});
  const frontend::LLayer& clip = find(m, fir::Op::Clip);
  CHECK(clip.act_mode == "clip");
  CHECK(clip.activation_attr.find("min")->as_double() == -1.0);
  CHECK(clip.activation_attr.find("max")->as_double() == 2.0);
}

TEST_CASE("opset 9 attribute forms (Clip min/max) lower the same way") {
  OnnxBuilder b(9);
  b.input("x", {1, 3, 8, 8}).output("y", {1, 4, 8, 8});
  conv(b, "x", "c", 3, 4, 3);
  auto& clip = b.node("Clip", {"c"}, {"y"});
  OnnxBuilder::attr(clip, "min", 0.0f);
  OnnxBuilder::attr(clip, "max", 6.0f);
  auto m = lower(b);
  CHECK(find(m, fir::Op::Conv2d).activation == std::optional<std::string>("relu6"));
}

TEST_CASE("x * sigmoid(x) is silu, x * hardsigmoid(x) is hard_swish, SE gating is element_wise_mul") {
  OnnxBuilder b;
  b.input("x", {1, 4, 6, 6}).output("y", {1, 4, 6, 6});
  conv(b, "x", "c", 4, 4, 3);
  b.node("Sigmoid", {"c"}, {"s"});
  b.node("Mul", {"c", "s"}, {"silu"});
  auto& hs = b.node("HardSigmoid", {"silu"}, {"h"});
  OnnxBuilder::attr(hs, "alpha", 1.0f / 6.0f);
  OnnxBuilder::attr(hs, "beta", 0.5f);
  b.node("Mul", {"h", "silu"}, {"hsw"});
  b.node("GlobalAveragePool", {"hsw"}, {"gap"});
  conv(b, "gap", "fc", 4, 4, 1);
  b.node("Sigmoid", {"fc"}, {"gate"});
  b.node("Mul", {"hsw", "gate"}, {"y"});
  auto m = lower(b);
  CHECK(ops(m) == std::vector<std::string>{"quantize", "conv2d", "silu", "hard_swish", "avg_pool2d", "conv2d", "sigmoid",
                                           "element_wise_mul"});
  CHECK(find(m, fir::Op::Silu).act_mode == "silu");
  CHECK(find(m, fir::Op::HardSwish).act_mode == "hard_swish");
}

TEST_CASE("residual Add + ReLU is one element_wise_add with a relu group") {
  OnnxBuilder b;
  b.input("x", {1, 4, 6, 6}).output("y", {1, 4, 6, 6});
  conv(b, "x", "c", 4, 4, 3);
  b.node("Add", {"c", "x"}, {"a"});
  b.node("Relu", {"a"}, {"y"});
  auto m = lower(b);
  const auto& add = find(m, fir::Op::ElementWiseAdd);
  CHECK(add.relu_group);
  CHECK(add.inputs.size() == 2);
}

TEST_CASE("GlobalAveragePool + Flatten + Gemm: avg_pool2d, dense on [N, C, 1, 1], reshape on the cpu") {
  OnnxBuilder b;
  b.input("x", {1, 8, 7, 7}).output("y", {1, 10});
  b.node("GlobalAveragePool", {"x"}, {"g"});
  b.node("Flatten", {"g"}, {"f"});
  b.random_init("fw", {10, 8}).random_init("fb", {10});
  auto& gemm = b.node("Gemm", {"f", "fw", "fb"}, {"y"});
  OnnxBuilder::attr(gemm, "transB", int64_t{1});
  auto m = lower(b);
  CHECK(ops(m) == std::vector<std::string>{"quantize", "avg_pool2d", "dense", "reshape"});
  const auto& pool = find(m, fir::Op::AvgPool2d);
  CHECK(pool.pool == std::optional<std::array<int64_t, 2>>({7, 7}));
  CHECK(pool.pool_divisor == doctest::Approx(1.0 / 49));
  const auto& d = find(m, fir::Op::Dense);
  CHECK(d.weight->shape == interp::Shape{10, 8, 1, 1});
  CHECK(d.out_shape == interp::Shape{1, 10, 1, 1});
  CHECK(d.out_dtype == "float16");
  CHECK(m.layers.back().device == fir::Device::Cpu);
  CHECK(m.layers.back().out_shape == interp::Shape{1, 10});
  CHECK(m.cpu_fallbacks.empty());  // reshapes are not fallbacks
  frontend::LowerOptions f32;
  f32.output_dtype = "float32";
  auto m32 = lower(b, f32);
  CHECK(find(m32, fir::Op::Dense).out_dtype == "float32");
}

TEST_CASE("depthwise and grouped convolutions keep their groups; concat shares quantization") {
  OnnxBuilder b;
  b.input("x", {1, 4, 6, 6}).output("y", {1, 2, 6, 6});
  conv(b, "x", "dw", 4, 4, 3, 4);
  conv(b, "x", "gc", 4, 8, 3, 2);
  auto& cat = b.node("Concat", {"dw", "gc"}, {"cat"});
  conv(b, "cat", "y", 12, 2, 1);
  OnnxBuilder::attr(cat, "axis", int64_t{1});
  auto m = lower(b);
  std::vector<int64_t> groups;
  std::vector<int> classes;
  for (const auto& l : m.layers)
    if (l.op == fir::Op::Conv2d) {
      groups.push_back(l.groups.value_or(1));
      classes.push_back(l.qclass);
    }
  CHECK(groups == std::vector<int64_t>{4, 2, 1});
  const auto& c = find(m, fir::Op::Concat);
  CHECK(c.axis == std::optional<int64_t>(1));
  // both producers and the concat share one quantization class
  CHECK(classes[0] == classes[1]);
  CHECK(c.qclass == classes[0]);
}

TEST_CASE("softmax and transpose go to the cpu with float16 tensors around them") {
  OnnxBuilder b;
  b.input("x", {1, 4, 6}).output("y", {1, 6, 4});
  b.random_init("w", {6, 6});
  b.node("MatMul", {"x", "w"}, {"m"});
  auto& t = b.node("Transpose", {"m"}, {"t"});
  OnnxBuilder::attr(t, "perm", std::vector<int64_t>{0, 2, 1});
  b.node("Softmax", {"t"}, {"s"});
  b.random_init("w2", {4, 4});
  b.node("MatMul", {"s", "w2"}, {"y"});
  auto m = lower(b);
  CHECK(ops(m) == std::vector<std::string>{"quantize", "dense", "transpose", "softmax", "quantize", "dense"});
  CHECK(find(m, fir::Op::Softmax).device == fir::Device::Cpu);
  CHECK(find(m, fir::Op::Transpose).device == fir::Device::Cpu);
  CHECK(find(m, fir::Op::Softmax).out_dtype == "float16");
  // the dense feeds the softmax through the transpose, so both carry float16
  CHECK(find(m, fir::Op::Transpose).out_dtype == "float16");
  CHECK(m.cpu_fallbacks.size() == 2);
}

TEST_CASE("operators without a FIR equivalent are listed") {
  OnnxBuilder b;
  b.input("x", {1, 4}).output("y", {1, 4});
  b.node("Exp", {"x"}, {"e"}, "my_exp");
  b.node("Log", {"e"}, {"y"}, "my_log");
  try {
    lower(b);
    FAIL("expected an error");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(m.find("my_exp") != std::string::npos);
    CHECK(m.find("my_log") != std::string::npos);
    CHECK(m.find("no Frontend IR equivalent") != std::string::npos);
  }
}

TEST_CASE("the FIR structure passes the format's semantic checks except for the quantizer's fields") {
  OnnxBuilder b;
  b.input("x", {2, 3, 8, 8}).output("y", {2, 5});
  conv(b, "x", "c", 3, 4, 3, 1, 2);
  b.node("Relu", {"c"}, {"r"});
  auto& mp = b.node("MaxPool", {"r"}, {"p"});
  OnnxBuilder::attr(mp, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(mp, "strides", std::vector<int64_t>{2, 2});
  b.node("Flatten", {"p"}, {"f"});
  b.random_init("fw", {5, 16});
  auto& gemm = b.node("Gemm", {"f", "fw"}, {"y"});
  OnnxBuilder::attr(gemm, "transB", int64_t{1});
  auto m = lower(b);
  fir::Graph g = frontend::structure_of(m);
  auto problems = fir::check(g, "s.json");
  for (const auto& p : problems) CHECK(p.find("module_list") != std::string::npos);
  const fir::Layer* c = g.find("Conv_0");
  REQUIRE(c);
  CHECK(c->input_shape == std::vector<fir::Shape>{{2, 3, 8, 8}, {4, 3, 3, 3}});
  CHECK(c->output_shape == std::vector<fir::Shape>{{2, 4, 4, 4}});
  CHECK(c->previous_layer == std::vector<std::string>{"src_quantize_1_1", "constant_Conv_0_k"});
}

TEST_CASE("channel split, shuffle and a spatial mean: slices, one gather and global average pooling") {
  // ShuffleNetV2's unit: Split in two, conv on one half, Concat, then the
  // shuffle Reshape [1, 2, 4, 6, 6] -> Transpose -> Reshape [1, 8, 6, 6].
  OnnxBuilder b;
  b.input("x", {1, 8, 6, 6}).output("y", {1, 8});
  conv(b, "x", "c0", 8, 8, 1);
  b.init_i64("parts", {2}, {4, 4});
  auto& sp = b.node("Split", {"c0", "parts"}, {"a", "bb"});
  OnnxBuilder::attr(sp, "axis", int64_t{1});
  conv(b, "bb", "c1", 4, 4, 3);
  auto& cat = b.node("Concat", {"a", "c1"}, {"cat"});
  OnnxBuilder::attr(cat, "axis", int64_t{1});
  b.init_i64("s5", {5}, {1, 2, 4, 6, 6});
  b.node("Reshape", {"cat", "s5"}, {"r5"});
  auto& t = b.node("Transpose", {"r5"}, {"t5"});
  OnnxBuilder::attr(t, "perm", std::vector<int64_t>{0, 2, 1, 3, 4});
  b.init_i64("s4", {4}, {1, 8, 6, 6});
  b.node("Reshape", {"t5", "s4"}, {"shuf"});
  b.init_i64("st", {1}, {1}).init_i64("en", {1}, {5}).init_i64("ax", {1}, {2}).init_i64("stp", {1}, {2});
  b.node("Slice", {"shuf", "st", "en", "ax", "stp"}, {"sl"});
  auto& rm = b.node("ReduceMean", {"sl"}, {"y"});
  OnnxBuilder::attr(rm, "axes", std::vector<int64_t>{2, 3});
  OnnxBuilder::attr(rm, "keepdims", int64_t{0});
  auto m = lower(b);
  CHECK(ops(m) == std::vector<std::string>{"quantize", "conv2d", "slice", "slice", "conv2d", "concat", "gather", "slice",
                                           "avg_pool2d", "reshape"});
  const auto& g = find(m, fir::Op::Gather);
  CHECK(g.axis == std::optional<int64_t>(1));
  CHECK(g.indices == std::optional<std::vector<int64_t>>(std::vector<int64_t>{0, 4, 1, 5, 2, 6, 3, 7}));
  std::vector<std::vector<int64_t>> starts, ends, steps;
  for (const auto& l : m.layers)
    if (l.op == fir::Op::Slice) starts.push_back(*l.starts), ends.push_back(*l.ends), steps.push_back(*l.steps);
  REQUIRE(starts.size() == 3);
  CHECK(starts[1] == std::vector<int64_t>{0, 4, 0, 0});
  CHECK(ends[1] == std::vector<int64_t>{1, 8, 6, 6});
  CHECK(starts[2] == std::vector<int64_t>{0, 0, 1, 0});
  CHECK(ends[2] == std::vector<int64_t>{1, 8, 5, 6});
  CHECK(steps[2] == std::vector<int64_t>{1, 1, 2, 1});
  // Data movement keeps int8 and one device: the accelerator.
  for (const auto& l : m.layers)
    if (fir::is_move_op(l.op)) {
      CHECK(l.out_dtype == "int8");
      CHECK(l.device == fir::Device::Npu);
    }
}

TEST_CASE("reductions: over rows and columns a pooling window on the accelerator, over other axes one host layer per axis") {
  {
    OnnxBuilder b;
    b.input("x", {2, 3, 4, 5}).output("y", {2, 3});
    auto& r = b.node("ReduceMean", {"x"}, {"y"});
    OnnxBuilder::attr(r, "axes", std::vector<int64_t>{-1, 2});
    OnnxBuilder::attr(r, "keepdims", int64_t{0});
    auto m = lower(b);
    const auto& p = find(m, fir::Op::AvgPool2d);
    CHECK(p.device == fir::Device::Npu);
    CHECK(*p.pool == std::array<int64_t, 2>{4, 5});
    CHECK(p.pool_divisor == doctest::Approx(1.0 / 20));
    CHECK(p.out_shape == interp::Shape{2, 3, 1, 1});
  }
  {
    OnnxBuilder b;
    b.input("x", {2, 3, 4}).output("y", {2, 1, 4});
    auto& r = b.node("ReduceMean", {"x"}, {"y"});
    OnnxBuilder::attr(r, "axes", std::vector<int64_t>{1});
    auto m = lower(b);
    const auto& s = find(m, fir::Op::ReduceSum);
    CHECK(s.device == fir::Device::Cpu);
    CHECK(*s.axis == 1);
    CHECK(s.pool_divisor == doctest::Approx(1.0 / 3));
    CHECK(m.cpu_fallbacks.size() == 1);
  }
  {
    // Every axis (no axes attribute): one reduce_max per axis.
    OnnxBuilder b;
    b.input("x", {2, 3, 4}).output("y", {1, 1, 1});
    b.node("ReduceMax", {"x"}, {"y"});
    auto m = lower(b);
    int n = 0;
    for (const auto& l : m.layers) n += l.op == fir::Op::ReduceMax;
    CHECK(n == 3);
  }
  {
    // Axes computed at run time cannot be compiled.
    OnnxBuilder b;
    b.input("x", {2, 3, 4}).input("axes", {1}).output("y", {2, 1, 4});
    b.node("ReduceSum", {"x", "axes"}, {"y"}, "my_sum");
    try {
      lower(b);
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("my_sum") != std::string::npos);
      CHECK(std::string(e.what()).find("axes must be a constant") != std::string::npos);
    }
  }
}

namespace {

// The float graph's outputs on a fixed input, before and after simplify().
std::pair<interp::Tensor, interp::Tensor> float_before_after(const OnnxBuilder& b) {
  auto g0 = frontend::import_onnx_bytes(b.bytes(), "m.onnx", ".");
  auto g1 = g0;
  frontend::simplify(g1);
  const auto& in = g0.value(g0.inputs.at(0));
  interp::Tensor x = interp::Tensor::floats(in.shape);
  for (size_t i = 0; i < x.f.size(); ++i) x.f[i] = static_cast<float>((i * 37) % 23) / 11.0f - 1.0f;
  auto y0 = interp::FloatInterpreter(g0).run({x}).at(0);
  auto y1 = interp::FloatInterpreter(g1).run({x}).at(0);
  return {y0, y1};
}

}  // namespace

TEST_CASE("a channels-last block between a permute pair is a layer norm over channels and 1x1 convolutions") {
  // ConvNeXt: dwconv, permute, LayerNorm, Linear, GELU, Linear, permute back,
  // layer scale, residual add.
  for (int batch : {1, 3}) {
    CAPTURE(batch);
    auto b = testing::convnext_block(batch);
    auto m = lower(b);
    CHECK(ops(m) == std::vector<std::string>{"quantize", "conv2d", "layer_norm", "quantize", "conv2d", "gelu", "conv2d",
                                             "element_wise_add"});
    // The permutes cancel: the block works on the NCHW tensor.
    const auto& ln = find(m, fir::Op::LayerNorm);
    CHECK(ln.device == fir::Device::Cpu);
    CHECK(ln.axis == std::optional<int64_t>(1));
    CHECK(ln.out_shape == interp::Shape{batch, 8, 5, 5});
    CHECK(ln.weight->numel() == 8);
    std::vector<std::array<int64_t, 2>> kernels;
    std::vector<interp::Shape> weights;
    for (const auto& l : m.layers)
      if (l.op == fir::Op::Conv2d) {
        kernels.push_back(*l.kernel);
        weights.push_back(l.weight->shape);
        CHECK(l.out_shape.size() == 4);
        CHECK(l.out_shape[0] == batch);
      }
    CHECK(kernels == std::vector<std::array<int64_t, 2>>{{3, 3}, {1, 1}, {1, 1}});
    CHECK(weights == std::vector<interp::Shape>{{8, 1, 3, 3}, {32, 8, 1, 1}, {8, 32, 1, 1}});
    // Only the layer norm is on the host.
    CHECK(m.cpu_fallbacks.size() == 1);
  }
  // The rewrite computes what the model computes (float graph before and after).
  auto [y0, y1] = float_before_after(testing::convnext_block(2));
  REQUIRE(y0.shape == y1.shape);
  double worst = 0;
  for (size_t i = 0; i < y0.f.size(); ++i) worst = std::max(worst, static_cast<double>(std::fabs(y0.f[i] - y1.f[i])));
  CHECK(worst < 1e-4);
}

TEST_CASE("a permuted region read by an operator that does not commute with the permute keeps its transposes") {
  OnnxBuilder b;
  b.input("x", {1, 8, 4, 4}).output("y", {1, 4, 4, 8});
  OnnxBuilder::attr(b.node("Transpose", {"x"}, {"t"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
  testing::linear_last_axis(b, "t", "fc", 8, 8);
  // Softmax over the last axis then flattening across it: not an operator the
  // permute moves through, so nothing moves.
  OnnxBuilder::attr(b.node("Softmax", {"fc"}, {"y"}), "axis", int64_t{-1});
  auto g = frontend::import_onnx_bytes(b.bytes(), "m.onnx", ".");
  frontend::simplify(g);
  int transposes = 0, matmuls = 0;
  for (const auto& n : g.nodes) {
    transposes += n.op == "Transpose";
    matmuls += n.op == "MatMul";
  }
  CHECK(transposes == 1);
  CHECK(matmuls == 1);
  // A permute whose region reaches a graph output unpermuted stays too.
  OnnxBuilder o;
  o.input("x", {1, 8, 4, 4}).output("y", {1, 4, 4, 8});
  OnnxBuilder::attr(o.node("Transpose", {"x"}, {"t"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
  testing::linear_last_axis(o, "t", "y", 8, 8);
  auto go = frontend::import_onnx_bytes(o.bytes(), "m.onnx", ".");
  frontend::simplify(go);
  transposes = 0;
  for (const auto& n : go.nodes) transposes += n.op == "Transpose";
  CHECK(transposes == 1);
}

TEST_CASE("a Mul or Add by one constant per channel after a convolution folds into it") {
  OnnxBuilder b;
  b.input("x", {1, 3, 6, 6}).output("y", {1, 4, 6, 6});
  conv(b, "x", "c", 3, 4, 3);
  b.random_init("s", {4, 1, 1}, 0.5f).random_init("a", {1, 4, 1, 1}, 0.5f);
  b.node("Mul", {"s", "c"}, {"m"});
  b.node("Add", {"m", "a"}, {"y"});
  auto m = lower(b);
  CHECK(ops(m) == std::vector<std::string>{"quantize", "conv2d"});
  auto [y0, y1] = float_before_after(b);
  REQUIRE(y0.shape == y1.shape);
  for (size_t i = 0; i < y0.f.size(); ++i) CHECK(y1.f[i] == doctest::Approx(y0.f[i]).epsilon(1e-5));
}

TEST_CASE("sequence-first attention: its dense layers read [N, T, D] (tokens and features never the batch)") {
  for (int batch : {1, 3}) {
    CAPTURE(batch);
    auto model = testing::sequence_first_attention(batch);
    auto m = lower(model);
    std::map<std::string, int> npu, cpu;
    for (const auto& l : m.layers) (l.device == fir::Device::Npu ? npu : cpu)[std::string(fir::op_name(l.op))]++;
    // q, k, v and the out-projection on the PE array; 1/sqrt(d) in q's weights.
    CHECK(npu["dense"] == 4);
    CHECK(npu.count("element_wise_mul") == 0);
    CHECK(npu["element_wise_add"] == 1);
    for (const auto& l : m.layers)
      if (l.op == fir::Op::Dense) {
        CHECK(l.out_shape == interp::Shape{batch, 6, 16});
        CHECK(l.batch_axis != 1);
        CHECK(l.batch_axis != 2);
      }
    // The heads' data movement, Q.K^T, softmax and P.V on the host.
    CHECK(cpu["layer_norm"] == 1);
    CHECK(cpu["matmul"] == 2);
    CHECK(cpu["softmax"] == 1);
    CHECK(cpu.count("dense") == 0);
  }
  auto [y0, y1] = float_before_after(testing::sequence_first_attention(2));
  REQUIRE(y0.shape == y1.shape);
  for (size_t i = 0; i < y0.f.size(); ++i) CHECK(y1.f[i] == doctest::Approx(y0.f[i]).epsilon(1e-4));
}

// ---- ConvTranspose and reflect / edge Pad ------------------------------------

namespace {
void str_attr(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}
std::string lower_error(OnnxBuilder& b) {
  try {
    lower(b);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("ConvTranspose lowers to a zero-insertion resize and a convolution by the flipped, channel-swapped kernel") {
  OnnxBuilder b;
  b.input("x", {1, 4, 5, 6}).output("y", {1, 6, 11, 12});
  // W [C=4, K/g=3, 3, 2], 2 groups; stride (2, 2), pads (1, 0, 0, 1), output_padding (1, 0), dilation (1, 2):
  b.random_init("w", {4, 3, 3, 2}, 0.5f, 3).random_init("bias", {6}, 0.1f, 4);
  auto& n = b.node("ConvTranspose", {"x", "w", "bias"}, {"t"});
  OnnxBuilder::attr(n, "strides", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(n, "pads", std::vector<int64_t>{1, 0, 0, 1});
  OnnxBuilder::attr(n, "output_padding", std::vector<int64_t>{1, 0});
  OnnxBuilder::attr(n, "dilations", std::vector<int64_t>{1, 2});
  OnnxBuilder::attr(n, "group", int64_t(2));
  b.node("Relu", {"t"}, {"y"});
  auto m = lower(b);
  CHECK(ops(m) == std::vector<std::string>{"quantize", "resize", "conv2d"});
  const auto& z = find(m, fir::Op::Resize);
  const auto& c = find(m, fir::Op::Conv2d);
  // rows: 2*(5-1) + 1 + (3-1)*1 + 1 - 1 - 0 = 11; columns: 2*(6-1) + 0 + (2-1)*2 + 1 - 0 - 1 = 12
  CHECK(c.out_shape == interp::Shape{1, 6, 11, 12});
  CHECK(z.activation_attr.find("mode")->as_string() == "zeros");
  // zeros before: (k - 1) d - pad_begin = 2 - 1 = 1 row, 2 - 0 = 2 columns; the grid is out + (k - 1) d.
  CHECK(z.activation_attr.find("pads")->as_array()[0].as_int() == 1);
  CHECK(z.activation_attr.find("pads")->as_array()[1].as_int() == 2);
  CHECK(z.activation_attr.find("strides")->as_array()[0].as_int() == 2);
  CHECK(z.out_shape == interp::Shape{1, 4, 13, 14});
  CHECK(z.qclass == m.layers[0].qclass);  // quantized as its input: the zeros are its zero point
  CHECK(z.value == -1);
  CHECK(c.padding == std::array<int64_t, 4>{0, 0, 0, 0});
  CHECK(c.stride == std::array<int64_t, 2>{1, 1});
  CHECK(c.dilation == std::array<int64_t, 2>{1, 2});
  CHECK(c.groups == 2);
  CHECK(c.activation == std::optional<std::string>("relu"));
  // W'[g*3 + k, c, a, b] = W[g*2 + c, k, 2 - a, 1 - b]
  const auto& w = b.model().graph().initializer(0);
  REQUIRE(c.weight->shape == interp::Shape{6, 2, 3, 2});
  for (int64_t g = 0; g < 2; ++g)
    for (int64_t k = 0; k < 3; ++k)
      for (int64_t ci = 0; ci < 2; ++ci)
        for (int64_t a = 0; a < 3; ++a)
          for (int64_t bb = 0; bb < 2; ++bb)
            CHECK(c.weight->f[size_t((((g * 3 + k) * 2 + ci) * 3 + a) * 2 + bb)] ==
                  w.float_data(int((((g * 2 + ci) * 3 + k) * 3 + (2 - a)) * 2 + (1 - bb))));
}

TEST_CASE("a ConvTranspose of stride 1 is one convolution that pads by itself") {
  OnnxBuilder b;
  b.input("x", {1, 3, 6, 6}).output("y", {1, 2, 6, 6});
  b.random_init("w", {3, 2, 3, 3}, 0.5f, 5);
  auto& n = b.node("ConvTranspose", {"x", "w"}, {"y"});
  OnnxBuilder::attr(n, "pads", std::vector<int64_t>{1, 1, 1, 1});
  auto m = lower(b);
  CHECK(ops(m) == std::vector<std::string>{"quantize", "conv2d"});
  CHECK(find(m, fir::Op::Conv2d).padding == std::array<int64_t, 4>{1, 1, 1, 1});
}

TEST_CASE("reflect and edge Pad of rows and columns are resize layers; other pads are refused by name") {
  for (const char* mode : {"reflect", "edge"}) {
    CAPTURE(mode);
    OnnxBuilder b(13);
    b.input("x", {1, 3, 5, 6}).output("y", {1, 3, 8, 9});
    b.init_i64("pads", {8}, {0, 0, 2, 1, 0, 0, 1, 2});
    str_attr(b.node("Pad", {"x", "pads"}, {"p"}), "mode", mode);
    conv(b, "p", "y", 3, 3, 1);
    auto m = lower(b);
    const auto& r = find(m, fir::Op::Resize);
    CHECK(r.activation_attr.find("mode")->as_string() == mode);
    CHECK(r.activation_attr.find("pads")->as_array()[0].as_int() == 2);
    CHECK(r.activation_attr.find("pads")->as_array()[1].as_int() == 1);
    CHECK(r.out_shape == interp::Shape{1, 3, 8, 9});
    CHECK(r.qclass == m.layers[0].qclass);
  }
  {
    OnnxBuilder b(13);
    b.input("x", {1, 3, 5, 6}).output("y", {1, 5, 5, 6});
    b.init_i64("pads", {8}, {0, 1, 0, 0, 0, 1, 0, 0});
    str_attr(b.node("Pad", {"x", "pads"}, {"y"}, "chan_pad"), "mode", "edge");
    std::string e = lower_error(b);
    CHECK(e.find("chan_pad") != std::string::npos);
    CHECK(e.find("batch or channel axis is not supported") != std::string::npos);
  }
  {
    OnnxBuilder b(13);
    b.input("x", {1, 3, 5, 6}).output("y", {1, 3, 5, 18});
    b.init_i64("pads", {8}, {0, 0, 0, 6, 0, 0, 0, 6});
    str_attr(b.node("Pad", {"x", "pads"}, {"y"}, "wide"), "mode", "reflect");
    CHECK(!lower_error(b).empty());  // reflect pads must be smaller than the axis (the float interpreter says so too)
  }
}

TEST_CASE("1-D ConvTranspose and pooling are the 2-D operators over a row [N, C, 1, L] between reshapes; 3-D ones are refused") {
  {
    OnnxBuilder b;
    b.input("x", {1, 2, 5}).output("y", {1, 4, 11});
    b.random_init("w", {2, 2, 3}, 0.5f, 6);
    auto& n = b.node("ConvTranspose", {"x", "w"}, {"y"}, "ct1d");
    OnnxBuilder::attr(n, "strides", std::vector<int64_t>{2});
    OnnxBuilder::attr(n, "group", int64_t{2});
    auto m = lower(b);
    CHECK(ops(m) == std::vector<std::string>{"reshape", "quantize", "resize", "conv2d", "reshape"});
    CHECK(m.layers[0].out_shape == interp::Shape{1, 2, 1, 5});
    CHECK(m.layers[0].device == fir::Device::Cpu);
    const auto& z = find(m, fir::Op::Resize);
    CHECK(z.activation_attr.find("strides")->as_array()[0].as_int() == 1);
    CHECK(z.activation_attr.find("strides")->as_array()[1].as_int() == 2);
    CHECK(z.activation_attr.find("pads")->as_array()[0].as_int() == 0);
    CHECK(z.out_shape == interp::Shape{1, 2, 1, 13});
    const auto& c = find(m, fir::Op::Conv2d);
    CHECK(c.kernel == std::optional<std::array<int64_t, 2>>({1, 3}));
    CHECK(c.weight->shape == interp::Shape{4, 1, 1, 3});
    CHECK(c.groups == std::optional<int64_t>(2));
    CHECK(c.out_shape == interp::Shape{1, 4, 1, 11});
    CHECK(m.layers.back().out_shape == interp::Shape{1, 4, 11});
  }
  for (const char* op : {"MaxPool", "AveragePool"}) {
    CAPTURE(op);
    OnnxBuilder b;
    b.input("x", {1, 3, 9}).output("y", {1, 3, 5});
    auto& n = b.node(op, {"x"}, {"y"}, "pool1d");
    OnnxBuilder::attr(n, "kernel_shape", std::vector<int64_t>{3});
    OnnxBuilder::attr(n, "strides", std::vector<int64_t>{2});
    OnnxBuilder::attr(n, "pads", std::vector<int64_t>{1, 1});
    auto m = lower(b);
    const auto& p = find(m, std::string(op) == "MaxPool" ? fir::Op::MaxPool2d : fir::Op::AvgPool2d);
    CHECK(p.pool == std::optional<std::array<int64_t, 2>>({1, 3}));
    CHECK(p.stride == std::optional<std::array<int64_t, 2>>({1, 2}));
    CHECK(p.padding == std::optional<std::array<int64_t, 4>>({0, 0, 1, 1}));
    CHECK(p.out_shape == interp::Shape{1, 3, 1, 5});
    CHECK(m.layers.front().op == fir::Op::Reshape);
    CHECK(m.layers.back().out_shape == interp::Shape{1, 3, 5});
  }
  {
    OnnxBuilder b;
    b.input("x", {1, 1, 3, 4, 4}).output("y", {1, 1, 2, 3, 3});
    OnnxBuilder::attr(b.node("MaxPool", {"x"}, {"y"}, "pool3d"), "kernel_shape", std::vector<int64_t>{2, 2, 2});
    std::string e = lower_error(b);
    CHECK(e.find("pool3d") != std::string::npos);
    CHECK(e.find("3 spatial dimensions") != std::string::npos);
  }
}

TEST_CASE("LayerNormalization over trailing axes: one layer_norm over them flattened; Mean and InvStdDev layers of their own") {
  {
    // Axis 1 of [2, 3, 4]: the normalised axes [3, 4] flattened to 12; the
    // scale [4] broadcast over them, the bias [3, 1] too.
    OnnxBuilder b(17);
    b.input("x", {2, 3, 4}).output("y", {2, 3, 4}).output("mean", {2, 1, 1}).output("inv", {2, 1, 1});
    b.init("s", {4}, {1, 2, 3, 4}).init("bias", {3, 1}, {10, 20, 30});
    OnnxBuilder::attr(b.node("LayerNormalization", {"x", "s", "bias"}, {"y", "mean", "inv"}, "ln"), "axis", int64_t{1});
    auto m = lower(b);
    CHECK(ops(m) == std::vector<std::string>{"reshape", "layer_norm", "layer_norm", "layer_norm", "reshape", "reshape",
                                             "reshape"});
    CHECK(m.layers[0].out_shape == interp::Shape{2, 12});
    std::map<std::string, const frontend::LLayer*> by;
    for (const auto& l : m.layers) by[l.name] = &l;
    REQUIRE(by.count("LayerNormalization_0_1"));
    REQUIRE(by.count("LayerNormalization_0_mean"));
    REQUIRE(by.count("LayerNormalization_0_inv_std_dev"));
    const auto& y = *by["LayerNormalization_0_1"];
    CHECK(y.axis == std::optional<int64_t>(1));
    CHECK(y.out_shape == interp::Shape{2, 12});
    CHECK(y.activation_attr.find("output") == nullptr);
    CHECK(y.weight->f == std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4});
    CHECK(y.bias->f == std::vector<float>{10, 10, 10, 10, 20, 20, 20, 20, 30, 30, 30, 30});
    CHECK(by["LayerNormalization_0_mean"]->activation_attr.find("output")->as_string() == "mean");
    CHECK(by["LayerNormalization_0_mean"]->out_shape == interp::Shape{2, 1});
    CHECK(by["LayerNormalization_0_inv_std_dev"]->activation_attr.find("output")->as_string() == "inv_std_dev");
    REQUIRE(m.graph_outputs.size() == 3);
    CHECK(m.layers[size_t(m.graph_outputs[0])].out_shape == interp::Shape{2, 3, 4});
    CHECK(m.layers[size_t(m.graph_outputs[1])].out_shape == interp::Shape{2, 1, 1});
    CHECK(m.layers[size_t(m.graph_outputs[2])].out_shape == interp::Shape{2, 1, 1});
  }
  {
    // The last axis: no reshape; unread Mean / InvStdDev: no layer.
    OnnxBuilder b(17);
    b.input("x", {2, 3, 4}).output("y", {2, 3, 4});
    b.init("s", {4}, {1, 2, 3, 4});
    b.node("LayerNormalization", {"x", "s"}, {"y", "", ""}, "ln");
    CHECK(ops(lower(b)) == std::vector<std::string>{"layer_norm"});
  }
  {
    OnnxBuilder b(17);
    b.input("x", {2, 3, 4}).output("y", {2, 3, 4});
    b.init("s", {3}, {1, 2, 3});
    OnnxBuilder::attr(b.node("LayerNormalization", {"x", "s"}, {"y"}, "ln_bad_scale"), "axis", int64_t{1});
    std::string e = lower_error(b);
    CHECK(e.find("ln_bad_scale") != std::string::npos);
    CHECK(e.find("broadcast to the normalised dimensions [3, 4]") != std::string::npos);
  }
}

TEST_CASE("a detection transform's per-image branches merge into one on the batch; the float result is unchanged") {
  // x [2, 3, 4, 4] -> Split into samples -> Squeeze -> Sub(mean [3, 1, 1]) ->
  // Div(std) -> Unsqueeze -> Resize to 8x8 (sizes [1, 3, 8, 8]) -> Gather [0]
  // -> Pad by 0 -> Unsqueeze, per sample; Concat along the batch -> Conv.
  OnnxBuilder b(13);
  b.input("x", {2, 3, 4, 4}).output("y", {2, 4, 8, 8});
  b.init("mean", {3, 1, 1}, {0.1f, 0.2f, 0.3f}).init("std", {3, 1, 1}, {0.5f, 0.25f, 2.0f});
  b.init_i64("ax0", {1}, {0}).init_i64("sizes", {4}, {1, 3, 8, 8}).init_i64("zero", {}, {0});
  b.init_i64("pads", {6}, {0, 0, 0, 0, 0, 0});
  auto& sp = b.node("Split", {"x"}, {"s0", "s1"});
  OnnxBuilder::attr(sp, "axis", int64_t{0});
  for (const char* s : {"s0", "s1"}) {
    std::string p = s;
    b.node("Squeeze", {p, "ax0"}, {p + "_sq"});
    b.node("Sub", {p + "_sq", "mean"}, {p + "_sub"});
    b.node("Div", {p + "_sub", "std"}, {p + "_div"});
    b.node("Unsqueeze", {p + "_div", "ax0"}, {p + "_un"});
    auto& rs = b.node("Resize", {p + "_un", "", "", "sizes"}, {p + "_rs"});
    auto* m = rs.add_attribute();
    m->set_name("mode");
    m->set_type(onnx::AttributeProto::STRING);
    m->set_s("linear");
    auto& ga = b.node("Gather", {p + "_rs", "zero"}, {p + "_g"});
    OnnxBuilder::attr(ga, "axis", int64_t{0});
    b.node("Pad", {p + "_g", "pads"}, {p + "_pad"});
    b.node("Unsqueeze", {p + "_pad", "ax0"}, {p + "_img"});
  }
  OnnxBuilder::attr(b.node("Concat", {"s0_img", "s1_img"}, {"batch"}), "axis", int64_t{0});
  conv(b, "batch", "y", 3, 4, 3);

  auto before = frontend::import_onnx_bytes(b.bytes(), "m.onnx", ".");
  interp::Tensor x = interp::Tensor::floats({2, 3, 4, 4});
  for (int64_t k = 0; k < x.numel(); ++k) x.f[size_t(k)] = float((k * 7) % 11) - 5.0f;
  auto want = interp::FloatInterpreter(before).run({x});
  auto after = before;
  frontend::simplify(after);
  std::map<std::string, int> count;
  for (const auto& n : after.nodes) ++count[n.op];
  CHECK(count["Split"] == 0);
  CHECK(count["Concat"] == 0);
  CHECK(count["Resize"] == 1);
  CHECK(count["Sub"] == 1);
  CHECK(count["Pad"] == 0);
  auto got = interp::FloatInterpreter(after).run({x});
  REQUIRE(got.size() == 1);
  CHECK(got[0].shape == want[0].shape);
  CHECK(got[0].f == want[0].f);
  auto m = lower(b);
  for (const auto& l : m.layers) CHECK_MESSAGE(l.device == fir::Device::Npu, l.name);
}
