// ONNX import: errors for bad files, unsupported operators and dynamic
// shapes; the graph passes (constant folding, BatchNorm folding, layout).
#include <doctest/doctest.h>

#include <cmath>

#include "frontend/graph_passes.hpp"
#include "frontend/onnx_import.hpp"
#include "interp/float_interp.hpp"
#include "onnx_builder.hpp"
#include "support/error.hpp"
#include "support/npy.hpp"
#include "../testing/testing.hpp"

using namespace cct;
using cct::testing::OnnxBuilder;

namespace {

std::string error_of(const std::function<void()>& f, ExitCode* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

OnnxBuilder conv_bn_relu(int64_t n = 1) {
  OnnxBuilder b;
  b.input("x", {n, 3, 8, 8}).output("y", {n, 4, 8, 8});
  cct::testing::add_conv_bn(b, "x", "bn");
  b.node("Relu", {"bn"}, {"y"});
  return b;
}

interp::Tensor ramp(const interp::Shape& s) {
  interp::Tensor t = interp::Tensor::floats(s);
  for (size_t k = 0; k < t.f.size(); ++k) t.f[k] = std::sin(0.37f * static_cast<float>(k));
  return t;
}

}  // namespace

TEST_CASE("a valid ONNX model imports with static shapes") {
  auto g = frontend::import_onnx_bytes(conv_bn_relu().bytes(), "m.onnx", ".");
  CHECK(g.nodes.size() == 3);
  CHECK(g.opset == 13);
  REQUIRE(g.inputs.size() == 1);
  CHECK(g.value(g.inputs[0]).shape == interp::Shape{1, 3, 8, 8});
  CHECK(g.value(g.outputs[0]).has_shape);
  CHECK(g.value(g.outputs[0]).shape == interp::Shape{1, 4, 8, 8});
}

TEST_CASE("corrupt, truncated and empty files give clear errors") {
  std::string good = conv_bn_relu().bytes();
  ExitCode code = kExitOk;
  std::string e = error_of([&] { frontend::import_onnx_bytes(good.substr(0, good.size() / 2), "half.onnx", "."); }, &code);
  CHECK(code == kExitInvalidInput);
  CHECK(e.find("half.onnx") == 0);
  CHECK(e.find("corrupt or truncated") != std::string::npos);
  e = error_of([&] { frontend::import_onnx_bytes("this is not a protobuf at all", "text.onnx", "."); });
  CHECK(e.find("text.onnx") == 0);
  e = error_of([&] { frontend::import_onnx_bytes("", "empty.onnx", "."); });
  CHECK(e.find("empty") != std::string::npos);
  e = error_of([&] { frontend::import_onnx("/nonexistent/model.onnx"); }, &code);
  CHECK(code == kExitIo);
}

TEST_CASE("convolutions of inputs without spatial dimensions are rejected before ONNX shape inference") {
  // The ONNX library's Conv shape inference crashed on this (found by test_fuzz).
  OnnxBuilder b;
  b.input("x", {1, 8}).output("y", {1, 4, 8, 8});
  b.random_init("w", {4, 3, 3, 3});
  auto& c = b.node("Conv", {"x", "w"}, {"y"}, "conv");
  OnnxBuilder::attr(c, "pads", std::vector<int64_t>{1, 1, 1, 1});
  ExitCode code = kExitOk;
  std::string e = error_of([&] { frontend::import_onnx_bytes(b.bytes(), "flat.onnx", "."); }, &code);
  CHECK(code == kExitInvalidInput);
  CHECK(e.find("flat.onnx: node 0 (Conv 'conv'): input 'x' has 2 dimensions") == 0);
  // Attributes that do not fit the input's rank.
  OnnxBuilder p;
  p.input("x", {1, 3, 8, 8}).output("y", {1, 3, 4, 4});
  auto& mp = p.node("MaxPool", {"x"}, {"y"}, "pool");
  OnnxBuilder::attr(mp, "kernel_shape", std::vector<int64_t>{2, 2, 2});
  e = error_of([&] { frontend::import_onnx_bytes(p.bytes(), "pool.onnx", "."); });
  CHECK(e.find("attribute kernel_shape has 3 values, 2 for an input of 4 dimensions") != std::string::npos);
}

TEST_CASE("a graph without outputs is rejected") {
  OnnxBuilder b;
  b.input("x", {1, 4});
  b.node("Relu", {"x"}, {"r"});
  std::string e = error_of([&] { frontend::import_onnx_bytes(b.bytes(), "none.onnx", "."); });
  CHECK(e.find("none.onnx: the graph declares no outputs") == 0);
}

TEST_CASE("unsupported operators are listed by name and node") {
  OnnxBuilder b;
  b.input("x", {1, 4}).output("y", {1, 4});
  b.node("Relu", {"x"}, {"r"});
  b.node("Hardmax", {"r"}, {"h"}, "my_hardmax");
  b.node("Det", {"h"}, {"y"}, "my_det");
  std::string e = error_of([&] { frontend::import_onnx_bytes(b.bytes(), "u.onnx", "."); });
  CHECK(e.find("2 node(s)") != std::string::npos);
  CHECK(e.find("my_hardmax") != std::string::npos);
  CHECK(e.find("Hardmax") != std::string::npos);
  CHECK(e.find("my_det") != std::string::npos);
}

TEST_CASE("a dynamic input shape needs --input-shape") {
  OnnxBuilder b;
  b.input("x", {-1, 3, 8, 8}).output("y", {-1, 3, 8, 8});
  b.node("Relu", {"x"}, {"y"});
  std::string e = error_of([&] { frontend::import_onnx_bytes(b.bytes(), "dyn.onnx", "."); });
  CHECK(e.find("dynamic shape [N, 3, 8, 8]") != std::string::npos);
  CHECK(e.find("--input-shape") != std::string::npos);
  frontend::ImportOptions o;
  o.input_shape = {2, 3, 8, 8};
  auto g = frontend::import_onnx_bytes(b.bytes(), "dyn.onnx", ".", o);
  CHECK(g.value(g.inputs[0]).shape == interp::Shape{2, 3, 8, 8});
  frontend::ImportOptions batch;
  batch.batch = 4;
  g = frontend::import_onnx_bytes(b.bytes(), "dyn.onnx", ".", batch);
  CHECK(g.value(g.inputs[0]).shape == interp::Shape{4, 3, 8, 8});
  o.input_shape = {2, 3};
  e = error_of([&] { frontend::import_onnx_bytes(b.bytes(), "dyn.onnx", ".", o); });
  CHECK(e.find("has 2 dimensions") != std::string::npos);
}

TEST_CASE("opsets outside the supported range are refused") {
  OnnxBuilder b(18);
  b.input("x", {1, 4}).output("y", {1, 4});
  b.node("Relu", {"x"}, {"y"});
  std::string e = error_of([&] { frontend::import_onnx_bytes(b.bytes(), "new.onnx", "."); });
  CHECK(e.find("opset 18 is not supported") != std::string::npos);
}

TEST_CASE("BatchNormalization folds into the convolution without changing results") {
  auto g = frontend::import_onnx_bytes(conv_bn_relu().bytes(), "m.onnx", ".");
  interp::Tensor x = ramp({1, 3, 8, 8});
  auto before = interp::FloatInterpreter(g).run({x});
  frontend::simplify(g);
  for (const auto& n : g.nodes) CHECK(n.op != "BatchNormalization");
  CHECK(g.nodes.size() == 2);
  auto after = interp::FloatInterpreter(g).run({x});
  REQUIRE(before[0].f.size() == after[0].f.size());
  for (size_t k = 0; k < before[0].f.size(); ++k) CHECK(after[0].f[k] == doctest::Approx(before[0].f[k]).epsilon(1e-5));
}

TEST_CASE("a standalone BatchNormalization becomes a depthwise 1x1 Conv on images, a multiply and add otherwise") {
  for (bool image : {true, false}) {
    CAPTURE(image);
    interp::Shape xs = image ? interp::Shape{1, 2, 3, 3} : interp::Shape{1, 2, 3};
    OnnxBuilder b;
    b.input("x", xs).output("y", xs);
    b.init("s", {2}, {2.0f, 3.0f}).init("b", {2}, {1.0f, -1.0f}).init("m", {2}, {0.5f, 0.0f}).init("v", {2}, {1.0f, 4.0f});
    b.node("Relu", {"x"}, {"r"});
    b.node("BatchNormalization", {"r", "s", "b", "m", "v"}, {"y"});
    auto g = frontend::import_onnx_bytes(b.bytes(), "bn.onnx", ".");
    interp::Tensor x = ramp(xs);
    auto before = interp::FloatInterpreter(g).run({x});
    frontend::simplify(g);
    std::vector<std::string> ops;
    for (const auto& n : g.nodes) ops.push_back(n.op);
    CHECK(ops == (image ? std::vector<std::string>{"Relu", "Conv"} : std::vector<std::string>{"Relu", "Mul", "Add"}));
    auto after = interp::FloatInterpreter(g).run({x});
    for (size_t k = 0; k < before[0].f.size(); ++k) CHECK(after[0].f[k] == doctest::Approx(before[0].f[k]).epsilon(1e-5));
  }
}

TEST_CASE("a standalone constant Pad becomes a depthwise 1x1 Conv with its padding (and a shift for a nonzero value)") {
  for (float value : {0.0f, 1.5f}) {
    CAPTURE(value);
    OnnxBuilder b;
    b.input("x", {1, 2, 3, 4}).output("y", {1, 2, 5, 9});
    b.init_i64("pads", {8}, {0, 0, 1, 2, 0, 0, 1, 3});
    b.init("value", {}, {value});
    b.node("Pad", {"x", "pads", "value"}, {"p"});
    b.node("Relu", {"p"}, {"y"});
    auto g = frontend::import_onnx_bytes(b.bytes(), "pad.onnx", ".");
    interp::Tensor x = ramp({1, 2, 3, 4});
    auto before = interp::FloatInterpreter(g).run({x});
    frontend::simplify(g);
    std::vector<std::string> ops;
    for (const auto& n : g.nodes) ops.push_back(n.op);
    // The Add of the value after the convolution is one per channel: it folds
    // into the convolution's bias (a padded pixel, 0 there, gets the value).
    CHECK(ops == (value == 0.0f ? std::vector<std::string>{"Conv", "Relu"}
                                : std::vector<std::string>{"Sub", "Conv", "Relu"}));
    auto after = interp::FloatInterpreter(g).run({x});
    REQUIRE(before[0].f.size() == after[0].f.size());
    for (size_t k = 0; k < before[0].f.size(); ++k) CHECK(after[0].f[k] == doctest::Approx(before[0].f[k]).epsilon(1e-5));
  }
}

TEST_CASE("constant subgraphs fold and shape arithmetic disappears") {
  OnnxBuilder b;
  b.input("x", {1, 4, 2, 2}).output("y", {1, 16});
  b.node("Shape", {"x"}, {"s"});
  b.init_i64("zero", {}, {0});
  auto& gather = b.node("Gather", {"s", "zero"}, {"n"});
  OnnxBuilder::attr(gather, "axis", int64_t{0});
  b.init_i64("axes", {1}, {0});
  b.node("Unsqueeze", {"n", "axes"}, {"n1"});
  b.init_i64("rest", {1}, {-1});
  auto& cat = b.node("Concat", {"n1", "rest"}, {"shape"});
  OnnxBuilder::attr(cat, "axis", int64_t{0});
  b.node("Reshape", {"x", "shape"}, {"y"});
  auto g = frontend::import_onnx_bytes(b.bytes(), "f.onnx", ".");
  frontend::simplify(g);
  REQUIRE(g.nodes.size() == 1);
  CHECK(g.nodes[0].op == "Reshape");
  CHECK(g.is_constant(g.nodes[0].input(1)));
  CHECK(g.value(g.outputs[0]).shape == interp::Shape{1, 16});
}

TEST_CASE("transposes that cancel are removed and Pad folds into Conv") {
  OnnxBuilder b;
  b.input("x", {1, 2, 5, 5}).output("y", {1, 3, 5, 5});
  auto& t1 = b.node("Transpose", {"x"}, {"nhwc"});
  OnnxBuilder::attr(t1, "perm", std::vector<int64_t>{0, 2, 3, 1});
  b.init_i64("pads", {8}, {0, 1, 1, 0, 0, 1, 1, 0});
  b.node("Pad", {"nhwc", "pads"}, {"padded"});
  b.node("Relu", {"padded"}, {"r"});
  auto& t2 = b.node("Transpose", {"r"}, {"nchw"});
  OnnxBuilder::attr(t2, "perm", std::vector<int64_t>{0, 3, 1, 2});
  b.random_init("w", {3, 2, 3, 3});
  b.node("Conv", {"nchw", "w"}, {"y"});
  auto g = frontend::import_onnx_bytes(b.bytes(), "t.onnx", ".");
  interp::Tensor x = ramp({1, 2, 5, 5});
  for (auto& v : x.f) v = std::fabs(v);  // Relu(pad(x)) = pad(Relu(x)) needs nothing else
  auto before = interp::FloatInterpreter(g).run({x});
  frontend::simplify(g);
  std::vector<std::string> ops;
  for (const auto& n : g.nodes) ops.push_back(n.op);
  // the pad moved before the relu is folded only when the conv reads it directly
  CHECK(std::count(ops.begin(), ops.end(), "Transpose") == 0);
  auto after = interp::FloatInterpreter(g).run({x});
  REQUIRE(after[0].shape == before[0].shape);
  for (size_t k = 0; k < before[0].f.size(); ++k) CHECK(after[0].f[k] == doctest::Approx(before[0].f[k]).epsilon(1e-5));
}

TEST_CASE("--constant-input turns a graph input into a constant, by name or by the TensorProto's own name") {
  OnnxBuilder b;
  b.input("x", {1, 2, 2, 2}).input("slope", {2, 1, 1}).output("y", {1, 2, 2, 2});
  b.node("PRelu", {"x", "slope"}, {"y"});
  std::string dir = testing::temp_dir("constant_input");
  std::string npy = dir + "/slope.npy";
  write_npy(npy, NpyArray::from_float({0.25f, -2.0f}, {2, 1, 1}));
  frontend::ImportOptions io;
  io.constant_inputs = {{"slope", npy}};
  auto g = frontend::import_onnx_bytes(b.bytes(), "prelu.onnx", ".", io);
  REQUIRE(g.inputs.size() == 1);
  CHECK(g.value(g.inputs[0]).name == "x");
  int s = g.find("slope");
  REQUIRE(g.is_constant(s));
  CHECK(g.constant(s).f == std::vector<float>{0.25f, -2.0f});
  io.constant_inputs = {{"nope", npy}};
  CHECK_THROWS_WITH_AS(frontend::import_onnx_bytes(b.bytes(), "prelu.onnx", ".", io),
                       doctest::Contains("has no input 'nope'"), Error);
  io.constant_inputs = {{"", npy}};  // a .npy has no name
  CHECK_THROWS_AS(frontend::import_onnx_bytes(b.bytes(), "prelu.onnx", ".", io), Error);
}
