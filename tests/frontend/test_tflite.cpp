// TFLite import of the reference files: operator counts, shapes and the
// quantization kept from the file (numbers from tflite-format-facts.md §11).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <flatbuffers/flatbuffers.h>

#include <map>

#include "fir/fir.hpp"
#include "frontend/pipeline.hpp"
#include "frontend/tflite_import.hpp"
#include "interp/fir_exec.hpp"
#include "support/error.hpp"
#include "testing.hpp"
#include "tflite_builder.hpp"
#include "tflite_generated.h"

using namespace cct;

namespace {

std::map<std::string, int> op_counts(const interp::Graph& g) {
  std::map<std::string, int> c;
  for (const auto& n : g.nodes) ++c[n.op];
  return c;
}

std::string tflite(const std::string& name) { return cct::testing::reference_dir() + "/tflite/" + name; }

using cct::testing::TfliteBuilder;

// TFLite builtin operator codes used by the built models.
enum : int32_t { CONV_2D = 3, FULLY_CONNECTED = 9, RESHAPE = 22, SOFTMAX = 25, CONCATENATION = 2, TRANSPOSE = 39,
                 MEAN = 40, PAD = 34 };

fir::Graph compile_fir(const std::string& path, frontend::CompileResult* out = nullptr) {
  frontend::CompileOptions o;
  o.calib_random = 2;
  auto res = frontend::compile(frontend::load_model(path, {}), o);
  auto g = fir::parse_fir(res.fir_text, "out.json");
  if (out) *out = std::move(res);
  return g;
}

const NpyArray& file(const frontend::CompileResult& r, const std::string& name) {
  for (const auto& [n, a] : r.files)
    if (n == name) return a;
  FAIL("no file " << name);
  return r.files.front().second;
}

}  // namespace

TEST_CASE("mobilenet_v2_quantized: operators, shapes and quantization") {
  auto g = frontend::import_tflite(tflite("mobilenet_v2_quantized_1x3x224x224.tflite"));
  auto c = op_counts(g);
  CHECK(c["Conv"] == 35 + 17);  // CONV_2D + DEPTHWISE_CONV_2D
  CHECK(c["Pad"] == 18);
  CHECK(c["Add"] == 10);
  CHECK(c["GlobalAveragePool"] == 1);  // MEAN over H, W
  CHECK(c["Gemm"] == 1);
  REQUIRE(g.inputs.size() == 1);
  const auto& in = g.value(g.inputs[0]);
  CHECK(in.shape == interp::Shape{1, 3, 224, 224});
  REQUIRE(in.preset);
  CHECK(in.preset->scale[0] == doctest::Approx(0.0186311).epsilon(1e-5));
  CHECK(in.preset->zero_point[0] == -14);
  const auto& out = g.value(g.outputs[0]);
  CHECK(out.shape == interp::Shape{1, 1000});
  REQUIRE(out.preset);
  CHECK(out.preset->scale[0] == doctest::Approx(0.113735).epsilon(1e-5));
  CHECK(out.preset->zero_point[0] == -24);
  // the first convolution's filter: [32, 3, 3, 3] with 32 per-channel scales
  const interp::Node* first = nullptr;
  for (const auto& n : g.nodes)
    if (n.op == "Conv") {
      first = &n;
      break;
    }
  REQUIRE(first);
  const auto& w = g.value(first->input(1));
  CHECK(w.shape == interp::Shape{32, 3, 3, 3});
  REQUIRE(w.preset);
  CHECK(w.preset->scale.size() == 32);
}

TEST_CASE("mobilenet_v2_quantized compiles keeping the file's quantization") {
  frontend::CompileResult r;
  fir::Graph g = compile_fir(tflite("mobilenet_v2_quantized_1x3x224x224.tflite"), &r);
  std::map<std::string, int> ops;
  for (const auto& l : g.layers()) ++ops[l.operation];
  CHECK(ops["conv2d"] == 52);
  CHECK(ops["element_wise_add"] == 10);
  CHECK(ops["avg_pool2d"] == 1);
  CHECK(ops["dense"] == 1);
  CHECK(ops["quantize"] == 1);  // pads folded into the convolutions, transposes cancelled
  const fir::Layer* q = g.find("src_quantize_1_1");
  REQUIRE(q);
  auto post = q->post_cal();
  REQUIRE(post);
  CHECK(1.0 / post->mul_k == doctest::Approx(0.0186311).epsilon(1e-5));  // the file's input scale
  CHECK(post->sum_b == -14.0);                                          // its zero point
  const fir::Layer* conv = nullptr;
  for (const auto& l : g.layers())
    if (l.op == fir::Op::Conv2d) {
      conv = &l;
      break;
    }
  REQUIRE(conv);
  CHECK(conv->input_shape[0] == fir::Shape{1, 3, 224, 224});
  CHECK(conv->quant_info->inputs[0].scale == doctest::Approx(0.0186311).epsilon(1e-5));
  CHECK(conv->quant_info->inputs[0].zero_point == 14.0);
  CHECK(conv->padding == std::optional<std::array<int64_t, 4>>({1, 1, 1, 1}));  // the explicit PAD, folded
  const NpyArray& ks = file(r, *conv->file("k_scale"));
  CHECK(ks.count() == 32);
  // k * k_scale reproduces the file's dequantized weights: the int8 values are the file's
  const NpyArray& k = file(r, *conv->file("k"));
  auto kf = k.to_float();
  auto sc = ks.to_float();
  auto graph = frontend::import_tflite(tflite("mobilenet_v2_quantized_1x3x224x224.tflite"));
  const interp::Tensor* w = nullptr;
  for (const auto& n : graph.nodes)
    if (n.op == "Conv") {
      w = &graph.constant(n.input(1));
      break;
    }
  REQUIRE(w);
  int64_t per = static_cast<int64_t>(kf.size()) / 32;
  for (int64_t i = 0; i < static_cast<int64_t>(kf.size()); ++i)
    CHECK(kf[i] * sc[i / per] == doctest::Approx(w->f[i]).epsilon(1e-5));
}

TEST_CASE("person_detect: operators, NHWC input made NCHW, quantization") {
  auto g = frontend::import_tflite(tflite("person_detect.tflite"));
  auto c = op_counts(g);
  CHECK(c["Conv"] == 28);
  CHECK(c["AveragePool"] == 1);
  CHECK(c["Softmax"] == 1);
  const auto& in = g.value(g.inputs[0]);
  CHECK(in.shape == interp::Shape{1, 1, 96, 96});  // [1, 96, 96, 1] NHWC in the file
  REQUIRE(in.preset);
  CHECK(in.preset->scale[0] == doctest::Approx(0.00784314).epsilon(1e-5));
  CHECK(in.preset->zero_point[0] == -1);
  const auto& out = g.value(g.outputs[0]);
  CHECK(out.shape == interp::Shape{1, 2});
  CHECK(out.preset->scale[0] == doctest::Approx(0.00390625));
  CHECK(out.preset->zero_point[0] == -128);
  // the first operator is a depthwise convolution with multiplier 8: 8 outputs from 1 channel
  const interp::Node& first = g.nodes.front();
  CHECK(first.op == "Conv");
  CHECK(g.value(first.input(1)).shape == interp::Shape{8, 1, 3, 3});
  CHECK(first.get_int("group", 0) == 1);
  fir::Graph f = compile_fir(tflite("person_detect.tflite"));
  std::map<std::string, int> ops;
  for (const auto& l : f.layers()) ++ops[l.operation + "/" + std::string(fir::device_name(l.device))];
  CHECK(ops["conv2d/npu"] == 28);
  CHECK(ops["avg_pool2d/npu"] == 1);
  CHECK(ops["softmax/cpu"] == 1);
}

TEST_CASE("hello_world float and int8 models compile") {
  for (const char* name : {"hello_world_float.tflite", "hello_world_int8.tflite"}) {
    fir::Graph f = compile_fir(tflite(name));
    int dense = 0;
    for (const auto& l : f.layers()) dense += l.op == fir::Op::Dense;
    CHECK(dense == 3);
  }
}

TEST_CASE("a tensor name that is not UTF-8 is refused, naming the tensor") {
  // The names become strings of the Frontend IR's JSON, which must be UTF-8.
  std::string bytes = cct::testing::read_file(tflite("hello_world_int8.tflite"));
  const std::string name = "sequential/dense/MatMul";
  const size_t at = bytes.find(name + '\0');
  REQUIRE(at != std::string::npos);
  CHECK_NOTHROW(frontend::import_tflite_bytes(bytes, "h.tflite"));
  bytes[at + name.size() - 1] = '\xF0';  // a lead byte whose continuation bytes never come
  std::string what;
  try {
    frontend::import_tflite_bytes(bytes, "h.tflite");
  } catch (const cct::Error& e) {
    what = e.what();
  }
  CHECK(what.rfind("h.tflite: tensor ", 0) == 0);
  CHECK(what.find("'s name \"sequential/dense/MatMu\\xf0\" is not valid UTF-8") != std::string::npos);
}

TEST_CASE("corrupt TFLite files give clear errors") {
  std::string bytes = cct::testing::read_file(tflite("person_detect.tflite"));
  for (size_t cut : {size_t{16}, bytes.size() / 2}) {
    try {
      frontend::import_tflite_bytes(bytes.substr(0, cut), "cut.tflite");
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("cut.tflite") == 0);
      CHECK(e.code() == kExitInvalidInput);
    }
  }
  std::string flipped = bytes;
  for (size_t k = 64; k < flipped.size(); k += 97) flipped[k] = static_cast<char>(flipped[k] ^ 0x5a);
  try {
    auto g = frontend::import_tflite_bytes(flipped, "flipped.tflite");
    (void)g;  // a flip may land in weight bytes only; then the model is still valid
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("flipped.tflite") == 0);
  }
}

// ---- --batch N ------------------------------------------------------------

namespace {

fir::Shape with_batch(fir::Shape s, int64_t n) {
  if (!s.empty()) s[0] = n;
  return s;
}

// Compiles `path` at batch 1 (the file's) and at batch n on the same
// calibration samples (min/max over the same set, so a float model gets the
// same quantization; an INT8 model keeps the file's), checks that the two
// FIRs differ only in the batch, then runs the batch-n FIR on n seeded
// samples and the batch-1 FIR on each alone: every layer's output, sample
// by sample, must be the same bits. Returns the number of layers compared.
size_t check_per_sample(const std::string& path, int64_t n) {
  frontend::CompileOptions o;
  o.calib_random = static_cast<int>(n);
  frontend::ImportOptions at_n;
  at_n.batch = n;
  frontend::CompileResult r1 = frontend::compile(frontend::load_model(path, {}), o);
  frontend::CompileResult rn = frontend::compile(frontend::load_model(path, at_n), o);
  fir::Graph g1 = fir::parse_fir(r1.fir_text, "b1.json"), gn = fir::parse_fir(rn.fir_text, "bn.json");

  // The same weights, biases, scales and constants; the same layers, shapes apart from the batch.
  REQUIRE(r1.files.size() == rn.files.size());
  for (size_t k = 0; k < r1.files.size(); ++k) {
    CHECK(r1.files[k].first == rn.files[k].first);
    CHECK(r1.files[k].second.bytes == rn.files[k].second.bytes);
  }
  REQUIRE(g1.layers().size() == gn.layers().size());
  fir::Shape input1;
  for (size_t k = 0; k < g1.layers().size(); ++k) {
    const fir::Layer &a = g1.layers()[k], &b = gn.layers()[k];
    CAPTURE(a.name);
    REQUIRE(a.name == b.name);
    CHECK(a.operation == b.operation);
    REQUIRE(a.output_shape.size() == 1);
    CHECK(with_batch(a.output_shape[0], n) == b.output_shape[0]);
    for (size_t i = 0; i < a.previous_layer.size(); ++i)
      if (a.previous_layer[i] == "input1") input1 = a.input_shape[i];
  }
  REQUIRE(!input1.empty());

  auto loader = [](const frontend::CompileResult& r) {
    return [&r](const std::string& f) -> NpyArray {
      for (const auto& [name, a] : r.files)
        if (name == f) return a;
      throw Error(kExitInvalidInput, f + ": not among the model files");
    };
  };
  interp::FirExecutor e1(g1, loader(r1)), en(gn, loader(rn));
  const int64_t per = interp::shape_numel(input1);
  interp::Tensor batch = interp::Tensor::floats(with_batch(input1, n));
  std::vector<float> v = TfliteBuilder::values(static_cast<size_t>(per * n), 7);
  for (size_t k = 0; k < v.size(); ++k) batch.f[k] = 3.0f * v[k];  // about the range of a [-1, 1] input
  std::map<std::string, interp::QTensor> at_batch;
  en.run({batch}, [&](const fir::Layer& l, const std::vector<const interp::QTensor*>&, const interp::QTensor& out) {
    at_batch[l.name] = out;
  });
  for (int64_t j = 0; j < n; ++j) {
    CAPTURE(j);
    interp::Tensor one = interp::Tensor::floats(input1, std::vector<float>(batch.f.begin() + j * per, batch.f.begin() + (j + 1) * per));
    e1.run({one}, [&](const fir::Layer& l, const std::vector<const interp::QTensor*>&, const interp::QTensor& out) {
      CAPTURE(l.name);
      const interp::QTensor& big = at_batch.at(l.name);
      REQUIRE(big.dtype == out.dtype);
      REQUIRE(big.numel() == n * out.numel());
      const int64_t m = out.numel();
      if (out.is_int8())
        CHECK(std::equal(out.q.begin(), out.q.end(), big.q.begin() + j * m));
      else
        CHECK(std::memcmp(out.f.data(), big.f.data() + j * m, static_cast<size_t>(m) * sizeof(float)) == 0);
    });
  }
  return at_batch.size();
}

// The error importing `bytes` at --batch n gives.
std::string batch_error(const std::string& bytes, int64_t n) {
  frontend::ImportOptions o;
  o.batch = n;
  try {
    frontend::import_tflite_bytes(bytes, "b.tflite", o);
  } catch (const Error& e) {
    CHECK(e.code() == kExitInvalidInput);
    return e.what();
  }
  return "";
}

// x [1, 6, 6, 3] NHWC -> CONV_2D 1x1 -> PAD (H, W by 1) -> CONV_2D 3x3 VALID, ReLU -> RESHAPE [1, 6, 24]
// (new_shape [1, -1, 24]) -> TRANSPOSE [0, 2, 1] -> RESHAPE [1, 144] -> FULLY_CONNECTED 5 -> SOFTMAX.
std::string small_cnn() {
  TfliteBuilder b;
  auto& f = b.fbb();
  int x = b.tensor("x", {1, 6, 6, 3});
  int w0 = b.constant("w0", {3, 1, 1, 3}, TfliteBuilder::values(9, 5));
  int c0 = b.tensor("c0", {1, 6, 6, 3});
  b.op(CONV_2D, {x, w0}, {c0}, tfl::BuiltinOptions::Conv2DOptions,
       tfl::CreateConv2DOptions(f, tfl::Padding::SAME, 1, 1).Union());
  int pads = b.ints("pads", {4, 2}, {0, 0, 1, 1, 1, 1, 0, 0});
  int xp = b.tensor("xp", {1, 8, 8, 3});
  b.op(PAD, {c0, pads}, {xp});
  int w = b.constant("w", {4, 3, 3, 3}, TfliteBuilder::values(108, 1));
  int bias = b.constant("bias", {4}, TfliteBuilder::values(4, 2));
  int c = b.tensor("c", {1, 6, 6, 4});
  b.op(CONV_2D, {xp, w, bias}, {c}, tfl::BuiltinOptions::Conv2DOptions,
       tfl::CreateConv2DOptions(f, tfl::Padding::VALID, 1, 1, tfl::ActivationFunctionType::RELU).Union());
  int s1 = b.ints("s1", {3}, {1, -1, 24});
  int r1 = b.tensor("r1", {1, 6, 24});
  std::vector<int32_t> ns1 = {1, -1, 24};
  b.op(RESHAPE, {c, s1}, {r1}, tfl::BuiltinOptions::ReshapeOptions, tfl::CreateReshapeOptionsDirect(f, &ns1).Union());
  int perm = b.ints("perm", {3}, {0, 2, 1});
  int t = b.tensor("t", {1, 24, 6});
  b.op(TRANSPOSE, {r1, perm}, {t});
  int s2 = b.ints("s2", {2}, {1, 144});
  int r2 = b.tensor("r2", {1, 144});
  b.op(RESHAPE, {t, s2}, {r2});
  int fw = b.constant("fw", {5, 144}, TfliteBuilder::values(720, 3));
  int fb = b.constant("fb", {5}, TfliteBuilder::values(5, 4));
  int fc = b.tensor("fc", {1, 5});
  b.op(FULLY_CONNECTED, {r2, fw, fb}, {fc}, tfl::BuiltinOptions::FullyConnectedOptions,
       tfl::CreateFullyConnectedOptions(f).Union());
  int y = b.tensor("y", {1, 5});
  b.op(SOFTMAX, {fc}, {y}, tfl::BuiltinOptions::SoftmaxOptions, tfl::CreateSoftmaxOptions(f, 1.0f).Union());
  return b.bytes({x}, {y});
}

}  // namespace

TEST_CASE("--batch N re-batches a TFLite model: shapes, reshapes and the graph outputs follow the batch") {
  std::string bytes = small_cnn();
  frontend::ImportOptions o;
  o.batch = 3;
  interp::Graph g = frontend::import_tflite_bytes(bytes, "cnn.tflite", o);
  CHECK(g.value(g.inputs[0]).shape == interp::Shape{3, 3, 6, 6});  // NCHW
  CHECK(g.value(g.outputs[0]).shape == interp::Shape{3, 5});
  int reshapes = 0;
  for (const auto& n : g.nodes)
    if (n.op == "Reshape") {
      ++reshapes;
      CHECK(g.value(n.outputs[0]).shape[0] == 3);
      CHECK(g.constant(n.input(1)).to_ints()[0] == 3);  // the shape operand's leading dimension is the batch
    }
  CHECK(reshapes == 2);
  // --input-shape may give the batch too; anything else about the input is the file's.
  frontend::ImportOptions is;
  is.input_shape = {2, 6, 6, 3};
  interp::Graph g2 = frontend::import_tflite_bytes(bytes, "cnn.tflite", is);
  CHECK(g2.value(g2.inputs[0]).shape == interp::Shape{2, 3, 6, 6});
  is.input_shape = {1, 6, 6, 4};
  CHECK_THROWS_WITH_AS(frontend::import_tflite_bytes(bytes, "cnn.tflite", is),
                       doctest::Contains("only the leading axis, the batch, may change"), Error);
  // The same model, sample by sample, at batch 3 as at batch 1.
  std::string path = cct::testing::temp_dir("tflite_batch_cnn") + "/cnn.tflite";
  cct::testing::write_file(path, bytes);
  CHECK(check_per_sample(path, 3) > 5);
}

TEST_CASE("--batch N: the reference INT8 TFLite models at batch 4 equal four batch-1 runs, layer by layer") {
  for (const char* name : {"hello_world_int8.tflite", "person_detect.tflite"}) {
    CAPTURE(name);
    frontend::ImportOptions o;
    o.batch = 4;
    interp::Graph g = frontend::import_tflite(tflite(name), o);
    CHECK(g.value(g.inputs[0]).shape[0] == 4);
    CHECK(g.value(g.outputs[0]).shape[0] == 4);
    size_t layers = check_per_sample(tflite(name), 4);
    CHECK(layers >= (std::string(name) == "person_detect.tflite" ? 30u : 4u));
  }
}

TEST_CASE("--batch N: MobileNetV2 INT8 at batch 4 equals four batch-1 runs, layer by layer" * doctest::test_suite("heavy")) {
  CHECK(check_per_sample(tflite("mobilenet_v2_quantized_1x3x224x224.tflite"), 4) > 60);
}

TEST_CASE("--batch N is refused, naming the operator, where the batch stops being the leading axis") {
  auto start = [](const std::string& e) { return e.rfind("b.tflite: operator ", 0) == 0; };
  {  // a reshape folding the batch into rows
    TfliteBuilder b;
    int x = b.tensor("x", {1, 4, 4, 2}), s = b.ints("s", {2}, {2, 16}), y = b.tensor("y", {2, 16});
    b.op(RESHAPE, {x, s}, {y});
    std::string e = batch_error(b.bytes({x}, {y}), 4);
    CHECK(start(e));
    CHECK(e.find("operator 0 (RESHAPE) gives 'y' [2, 16] from a batch of 1: the batch is no longer its leading axis") != std::string::npos);
    CHECK(e.find("--batch 4 cannot be applied") != std::string::npos);
  }
  {  // a transpose moving it
    TfliteBuilder b;
    int x = b.tensor("x", {1, 8}), p = b.ints("p", {2}, {1, 0}), y = b.tensor("y", {8, 1});
    b.op(TRANSPOSE, {x, p}, {y});
    std::string e = batch_error(b.bytes({x}, {y}), 2);
    CHECK(start(e));
    CHECK(e.find("(TRANSPOSE) moves the batch away from axis 0") != std::string::npos);
  }
  {  // a concatenation along it
    TfliteBuilder b;
    int x = b.tensor("x", {1, 8}), y = b.tensor("y", {2, 8});
    b.op(CONCATENATION, {x, x}, {y}, tfl::BuiltinOptions::ConcatenationOptions,
         tfl::CreateConcatenationOptions(b.fbb(), 0).Union());
    CHECK(batch_error(b.bytes({x}, {y}), 2).find("(CONCATENATION) concatenates along the batch axis") != std::string::npos);
  }
  {  // a mean over it (keeping the axis: the output still starts with 1)
    TfliteBuilder b;
    int x = b.tensor("x", {1, 8}), a = b.ints("a", {1}, {0}), y = b.tensor("y", {1, 8});
    b.op(MEAN, {x, a}, {y}, tfl::BuiltinOptions::ReducerOptions, tfl::CreateReducerOptions(b.fbb(), true).Union());
    CHECK(batch_error(b.bytes({x}, {y}), 2).find("operator 0 (MEAN) averages over the batch axis") != std::string::npos);
  }
  {  // a softmax across it
    TfliteBuilder b;
    int x = b.tensor("x", {5}), y = b.tensor("y", {5});
    b.op(SOFTMAX, {x}, {y}, tfl::BuiltinOptions::SoftmaxOptions, tfl::CreateSoftmaxOptions(b.fbb(), 1.0f).Union());
    CHECK(batch_error(b.bytes({x}, {y}), 2).find("(SOFTMAX) normalises over the batch axis") != std::string::npos);
  }
  {  // inputs without a common leading axis
    TfliteBuilder b;
    int x = b.tensor("x", {1, 8}), z = b.tensor("z", {3, 8}), y = b.tensor("y", {3, 8});
    b.op(CONCATENATION, {x, z}, {y}, tfl::BuiltinOptions::ConcatenationOptions,
         tfl::CreateConcatenationOptions(b.fbb(), 0).Union());
    std::string e = batch_error(b.bytes({x, z}, {y}), 2);
    CHECK(e.rfind("b.tflite: input 'z' has shape [3, 8]", 0) == 0);
    CHECK(e.find("do not share a leading (batch) axis") != std::string::npos);
  }
  // At the file's own batch nothing is re-batched, so nothing is refused.
  TfliteBuilder b;
  int x = b.tensor("x", {1, 8}), p = b.ints("p", {2}, {1, 0}), y = b.tensor("y", {8, 1});
  b.op(TRANSPOSE, {x, p}, {y});
  frontend::ImportOptions one;
  one.batch = 1;
  interp::Graph g1 = frontend::import_tflite_bytes(b.bytes({x}, {y}), "b.tflite", one);
  CHECK(g1.value(g1.outputs[0]).shape == interp::Shape{8, 1});
}

// ELU and PRELU in a model built here (the reference files have neither):
// they import as Elu and PRelu with PRELU's per-channel alpha, and compile
// to the Frontend IR's elu and prelu layers.
TEST_CASE("TFLite ELU and PRELU import as elu and prelu layers") {
  flatbuffers::FlatBufferBuilder fb;
  const float alpha[3] = {0.25f, -0.5f, 0.125f};
  std::vector<flatbuffers::Offset<tfl::Buffer>> buffers = {
      tfl::CreateBuffer(fb), tfl::CreateBuffer(fb, fb.CreateVector(reinterpret_cast<const uint8_t*>(alpha), sizeof alpha))};
  auto tensor = [&](std::vector<int> shape, uint32_t buffer, const char* name) {
    return tfl::CreateTensor(fb, fb.CreateVector(shape), tfl::TensorType::FLOAT32, buffer, fb.CreateString(name));
  };
  std::vector<flatbuffers::Offset<tfl::Tensor>> tensors = {tensor({1, 4, 4, 3}, 0, "x"), tensor({1, 4, 4, 3}, 0, "e"),
                                                           tensor({1, 1, 3}, 1, "alpha"), tensor({1, 4, 4, 3}, 0, "y")};
  std::vector<flatbuffers::Offset<tfl::OperatorCode>> codes = {tfl::CreateOperatorCode(fb, 111, 0, 1, 111),
                                                               tfl::CreateOperatorCode(fb, 54, 0, 1, 54)};
  std::vector<flatbuffers::Offset<tfl::Operator>> ops = {
      tfl::CreateOperator(fb, 0, fb.CreateVector(std::vector<int>{0}), fb.CreateVector(std::vector<int>{1})),
      tfl::CreateOperator(fb, 1, fb.CreateVector(std::vector<int>{1, 2}), fb.CreateVector(std::vector<int>{3}))};
  auto sub = tfl::CreateSubGraph(fb, fb.CreateVector(tensors), fb.CreateVector(std::vector<int>{0}),
                                 fb.CreateVector(std::vector<int>{3}), fb.CreateVector(ops));
  auto model = tfl::CreateModel(fb, 3, fb.CreateVector(codes), fb.CreateVector(std::vector{sub}), 0, fb.CreateVector(buffers));
  fb.Finish(model, "TFL3");
  std::string bytes(reinterpret_cast<const char*>(fb.GetBufferPointer()), fb.GetSize());
  interp::Graph g = frontend::import_tflite_bytes(bytes, "elu_prelu.tflite");
  auto c = op_counts(g);
  CHECK(c["Elu"] == 1);
  REQUIRE(c["PRelu"] == 1);
  for (const auto& n : g.nodes)
    if (n.op == "PRelu") {
      const interp::Tensor& s = g.constant(n.input(1));
      CHECK(s.f == std::vector<float>{0.25f, -0.5f, 0.125f});
    }
  std::string path = cct::testing::temp_dir("tflite_elu_prelu") + "/m.tflite";
  cct::testing::write_file(path, bytes);
  fir::Graph f = compile_fir(path);
  std::map<std::string, int> fops;
  for (const auto& l : f.layers()) ++fops[l.operation];
  CHECK(fops["elu"] == 1);
  CHECK(fops["prelu"] == 1);
}
