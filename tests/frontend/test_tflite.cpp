// TFLite import of the reference files: operator counts, shapes and the
// quantization kept from the file (numbers from tflite-format-facts.md §11).
#include <doctest/doctest.h>

#include <flatbuffers/flatbuffers.h>

#include <map>

#include "fir/fir.hpp"
#include "frontend/pipeline.hpp"
#include "frontend/tflite_import.hpp"
#include "support/error.hpp"
#include "testing.hpp"
#include "tflite_generated.h"

using namespace cct;

namespace {

std::map<std::string, int> op_counts(const interp::Graph& g) {
  std::map<std::string, int> c;
  for (const auto& n : g.nodes) ++c[n.op];
  return c;
}

std::string tflite(const std::string& name) { return cct::testing::reference_dir() + "/tflite/" + name; }

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
