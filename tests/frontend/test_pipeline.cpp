// The whole pipeline on small models: a valid FIR, its files, golden
// activations reproduced from disk by the quantized interpreter, the conv
// arithmetic checked by hand, determinism and the report.
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "fir/fir.hpp"
#include "frontend/onnx_import.hpp"
#include "frontend/pipeline.hpp"
#include "interp/fir_exec.hpp"
#include "interp/int8_ops.hpp"
#include "onnx_builder.hpp"
#include "transformer_models.hpp"
#include "support/error.hpp"
#include "support/io.hpp"
#include "testing.hpp"

using namespace cct;
using cct::testing::OnnxBuilder;

namespace {

// head scales the classifier's weights and bias: 1e-9 gives logits of about
// 4e-9, below float16's smallest value (6e-8), like those of randomly
// initialised MobileNets.
OnnxBuilder small_cnn(float head = 0.5f) {
  OnnxBuilder b;
  b.input("x", {1, 3, 10, 10}).output("y", {1, 4});
  b.random_init("w1", {8, 3, 3, 3}).random_init("b1", {8}, 0.1f);
  auto& c1 = b.node("Conv", {"x", "w1", "b1"}, {"c1"});
  OnnxBuilder::attr(c1, "pads", std::vector<int64_t>{1, 1, 1, 1});
  b.node("Relu", {"c1"}, {"r1"});
  auto& mp = b.node("MaxPool", {"r1"}, {"p1"});
  OnnxBuilder::attr(mp, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(mp, "strides", std::vector<int64_t>{2, 2});
  b.random_init("w2", {8, 1, 3, 3}).random_init("b2", {8}, 0.1f);
  auto& dw = b.node("Conv", {"p1", "w2", "b2"}, {"c2"});
  OnnxBuilder::attr(dw, "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxBuilder::attr(dw, "group", int64_t{8});
  b.init("zero", {}, {0.0f}).init("six", {}, {6.0f});
  b.node("Clip", {"c2", "zero", "six"}, {"r2"});
  b.node("Add", {"r2", "p1"}, {"a"});
  b.node("Sigmoid", {"a"}, {"s"});
  b.node("Mul", {"a", "s"}, {"silu"});
  b.node("GlobalAveragePool", {"silu"}, {"g"});
  b.node("Flatten", {"g"}, {"f"});
  b.random_init("fw", {4, 8}, head).random_init("fb", {4}, head / 5.0f);
  auto& gemm = b.node("Gemm", {"f", "fw", "fb"}, {"y"});
  OnnxBuilder::attr(gemm, "transB", int64_t{1});
  return b;
}

// A transformer-like block: layer normalisation (decomposed), dense with
// bias, transpose, matmul of two activations, softmax, erf GELU, a lone hard
// sigmoid and a concat with a constant.
OnnxBuilder small_transformer() {
  OnnxBuilder b;
  b.input("x", {1, 4, 8}).output("y", {1, 5, 8});
  b.init_i64("last", {1}, {-1});
  auto& m1 = b.node("ReduceMean", {"x"}, {"m"});
  OnnxBuilder::attr(m1, "axes", std::vector<int64_t>{-1});
  b.node("Sub", {"x", "m"}, {"d"});
  b.init("two", {}, {2.0f}).init("eps", {}, {1e-6f});
  b.node("Pow", {"d", "two"}, {"p"});
  auto& m2 = b.node("ReduceMean", {"p"}, {"v"});
  OnnxBuilder::attr(m2, "axes", std::vector<int64_t>{-1});
  b.node("Add", {"v", "eps"}, {"ve"});
  b.node("Sqrt", {"ve"}, {"sd"});
  b.node("Div", {"d", "sd"}, {"n"});
  b.random_init("gamma", {8}, 1.0f).random_init("beta", {8}, 0.2f);
  b.node("Mul", {"n", "gamma"}, {"ng"});
  b.node("Add", {"ng", "beta"}, {"ln"});
  b.random_init("wq", {8, 8}).random_init("bq", {8}, 0.1f);
  b.node("MatMul", {"ln", "wq"}, {"q"});
  b.node("Add", {"q", "bq"}, {"qb"});
  auto& t = b.node("Transpose", {"qb"}, {"qt"});
  OnnxBuilder::attr(t, "perm", std::vector<int64_t>{0, 2, 1});
  b.node("MatMul", {"qb", "qt"}, {"att"});
  auto& sm = b.node("Softmax", {"att"}, {"sm"});
  OnnxBuilder::attr(sm, "axis", int64_t{-1});
  b.node("MatMul", {"sm", "qb"}, {"ctx"});
  b.init("sqrt2", {}, {1.4142135f}).init("one", {}, {1.0f}).init("half", {}, {0.5f});
  b.node("Div", {"ctx", "sqrt2"}, {"g1"});
  b.node("Erf", {"g1"}, {"g2"});
  b.node("Add", {"g2", "one"}, {"g3"});
  b.node("Mul", {"ctx", "g3"}, {"g4"});
  b.node("Mul", {"g4", "half"}, {"gelu"});
  b.node("HardSigmoid", {"gelu"}, {"hs"});
  b.random_init("cls", {1, 1, 8});
  auto& cat = b.node("Concat", {"cls", "hs"}, {"y"});
  OnnxBuilder::attr(cat, "axis", int64_t{1});
  return b;
}

frontend::CompileResult compile(const OnnxBuilder& b, bool golden, bool report,
                                 const std::string& output_dtype = "float16") {
  frontend::CompileOptions o;
  o.calib_random = 4;
  o.golden = golden;
  o.report = report;
  o.output_dtype = output_dtype;
  return frontend::compile(frontend::import_onnx_bytes(b.bytes(), "small.onnx", "."), o);
}

std::map<std::string, const NpyArray*> by_name(const frontend::CompileResult& r) {
  std::map<std::string, const NpyArray*> m;
  for (const auto& [n, a] : r.files) m[n] = &a;
  for (const auto& [n, a] : r.golden) m[n] = &a;
  return m;
}

}  // namespace

TEST_CASE("the FIR is valid and names files that exist") {
  auto r = compile(small_cnn(), true, false);
  fir::Graph g = fir::parse_fir(r.fir_text, "small.json");  // schema and semantic checks
  std::vector<std::string> ops;
  for (const auto* l : g.in_index_order()) ops.push_back(l->operation);
  CHECK(ops == std::vector<std::string>{"quantize", "conv2d", "max_pool2d", "conv2d", "element_wise_add", "silu",
                                        "avg_pool2d", "dense", "reshape"});
  auto files = by_name(r);
  for (const auto& l : g.layers())
    for (const auto& role_name : l.file_list)
      CHECK_MESSAGE(files.count(role_name.second), l.name << " " << role_name.first << " " << role_name.second);
  const fir::Layer* dw = g.find("Conv_3");
  REQUIRE(dw);
  CHECK(dw->groups == std::optional<int64_t>(8));
  CHECK(dw->activation->type == std::optional<std::string>("relu6"));
  CHECK(files.at(*dw->file("k"))->type == NpyType::I8);
  CHECK(files.at(*dw->file("b"))->type == NpyType::F32);
  CHECK(files.at(*dw->file("k_scale"))->shape == std::vector<int64_t>{8});
}

TEST_CASE("golden activations are reproduced from the files on disk, bit for bit") {
  auto r = compile(small_cnn(), true, false);
  std::string dir = cct::testing::temp_dir("frontend_golden");
  for (const auto& [n, a] : r.files) write_npy(dir + "/" + n, a);
  for (const auto& [n, a] : r.golden) write_npy(dir + "/" + n, a);
  write_output(dir + "/small.json", r.fir_text);
  fir::Graph g = fir::read_fir(dir + "/small.json");
  interp::FirExecutor exec(g, interp::directory_loader(dir));
  NpyArray in = read_npy(dir + "/src_quantize_1_1_input_activation1.npy");
  CHECK(in.type == NpyType::F16);
  interp::Tensor x = interp::Tensor::floats(in.shape, in.to_float());
  int compared = 0;
  exec.run({x}, [&](const fir::Layer& l, const std::vector<const interp::QTensor*>&, const interp::QTensor& out) {
    NpyArray want = read_npy(dir + "/" + *l.file("output_activation1"));
    NpyArray got = out.to_npy();
    CHECK_MESSAGE(got.bytes == want.bytes, l.name);
    CHECK(got.shape == want.shape);
    ++compared;
  });
  CHECK(compared == static_cast<int>(g.size()));
}

TEST_CASE("transformer layers: structure, and golden data reproduced from disk") {
  auto r = compile(small_transformer(), true, true);
  std::string dir = cct::testing::temp_dir("frontend_transformer");
  for (const auto& [n, a] : r.files) write_npy(dir + "/" + n, a);
  write_output(dir + "/t.json", r.fir_text);
  fir::Graph g = fir::read_fir(dir + "/t.json");
  std::map<std::string, std::string> devices;
  for (const auto& l : g.layers()) devices[l.operation] += std::string(fir::device_name(l.device)) + " ";
  CHECK(devices["layer_norm"] == "cpu ");
  CHECK(devices["softmax"] == "cpu ");
  CHECK(devices["transpose"] == "cpu ");
  CHECK(devices["matmul"] == "cpu cpu ");  // two activations: on the host
  CHECK(devices["gelu"] == "npu ");
  CHECK(devices["hard_sigmoid"] == "npu ");
  CHECK(devices["dense"] == "npu ");
  // A concat with a constant (the class token): data movement on the chip
  // brings no constant into L2, so the host concatenates.
  CHECK(devices["concat"] == "cpu ");
  auto files = by_name(r);
  interp::FirExecutor exec(g, interp::directory_loader(dir));
  // the graph input feeds the (cpu) layer norm directly: no quantize layer
  CHECK(g.find("src_quantize_1_1") == nullptr);
  const fir::Layer* first = g.input_layers().at(0);
  CHECK(first->operation == "layer_norm");
  NpyArray in = *files.at(*first->file("input_activation1"));
  int compared = 0;
  exec.run({interp::Tensor::floats(in.shape, in.to_float())},
           [&](const fir::Layer& l, const std::vector<const interp::QTensor*>&, const interp::QTensor& out) {
             CHECK_MESSAGE(out.to_npy().bytes == files.at(*l.file("output_activation1"))->bytes, l.name);
             ++compared;
           });
  CHECK(compared == static_cast<int>(g.size()));
  CHECK(r.output_cosine > 0.99);
}

TEST_CASE("a dense on [A, 1, D] tokens goes through a reshape and keeps calibrated quantization") {
  // [A, 1, D] would read as a flattened sample: lowering reshapes it to [A, D]
  // first; the quantize layer after that reshape must be calibrated too.
  OnnxBuilder b;
  b.input("x", {5, 1, 8}).output("y", {5, 1, 6});
  auto& sm = b.node("Softmax", {"x"}, {"t"});  // a cpu layer: its float16 output needs a quantize layer
  OnnxBuilder::attr(sm, "axis", int64_t{-1});
  b.random_init("w", {8, 6}).random_init("bias", {6}, 0.1f);
  b.node("MatMul", {"t", "w"}, {"m"});
  b.node("Add", {"m", "bias"}, {"a"});
  b.node("Relu", {"a"}, {"r"});
  b.random_init("w2", {6, 6});
  b.node("MatMul", {"r", "w2"}, {"y"});
  auto r = compile(b, false, true);
  fir::Graph g = fir::parse_fir(r.fir_text, "tokens.json");
  CHECK(g.find("MatMul_1_reshape_input0") != nullptr);
  for (const auto& l : r.report) CHECK_MESSAGE(l.cosine > 0.99, l.name << " " << l.cosine);
  CHECK(r.output_cosine > 0.99);
}

TEST_CASE("the quantized convolution matches a direct computation with int8_ops") {
  auto r = compile(small_cnn(), true, false);
  fir::Graph g = fir::parse_fir(r.fir_text, "small.json");
  auto files = by_name(r);
  const fir::Layer& c = *g.find("Conv_0");
  auto in = files.at(*c.file("input_activation1"))->to_int();
  auto out = files.at(*c.file("output_activation1"))->to_int();
  auto k = files.at(*c.file("k"))->to_int();
  auto b = files.at(*c.file("b"))->to_float();
  auto ks = files.at(*c.file("k_scale"))->to_double();
  const auto& qi = *c.quant_info;
  int zp = static_cast<int>(qi.inputs[0].zero_point);
  int checked = 0;
  for (int oc = 0; oc < 8; ++oc)
    for (int oh = 0; oh < 10; oh += 3)
      for (int ow = 0; ow < 10; ow += 4) {
        int32_t acc = 0;
        for (int ic = 0; ic < 3; ++ic)
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
              int ih = oh - 1 + i, iw = ow - 1 + j;
              if (ih < 0 || ih >= 10 || iw < 0 || iw >= 10) continue;
              acc += static_cast<int32_t>(in[(ic * 10 + ih) * 10 + iw] + zp) * static_cast<int32_t>(k[((oc * 3 + ic) * 3 + i) * 3 + j]);
            }
        float real = int8::pe_to_real(acc, int8::param(qi.inputs[0].scale * ks[oc]), b[oc]);
        real = int8::activate(int8::Activation{int8::Act::Relu}, real);
        int8_t q = int8::post_cal(real, int8::param(*qi.output_scale), int8::param(*qi.output_zero_point), int8::Carry::Round);
        CHECK(out[(oc * 10 + oh) * 10 + ow] == q);
        ++checked;
      }
  CHECK(checked == 8 * 4 * 3);
}

TEST_CASE("compiling twice gives identical bytes") {
  auto a = compile(small_cnn(), true, false);
  auto b = compile(small_cnn(), true, false);
  CHECK(a.fir_text == b.fir_text);
  REQUIRE(a.files.size() == b.files.size());
  for (size_t k = 0; k < a.files.size(); ++k) CHECK(serialize_npy(a.files[k].second) == serialize_npy(b.files[k].second));
  REQUIRE(a.golden.size() == b.golden.size());
  for (size_t k = 0; k < a.golden.size(); ++k) CHECK(serialize_npy(a.golden[k].second) == serialize_npy(b.golden[k].second));
}

TEST_CASE("the report compares every layer and the final output") {
  auto r = compile(small_cnn(), false, true);
  CHECK(r.report.size() >= 8);
  for (const auto& l : r.report) {
    CHECK_MESSAGE(l.cosine > 0.95, l.name);
    CHECK(l.flagged == (l.cosine < 0.9 || l.euclidean < 0.5));
  }
  CHECK(r.output_cosine > 0.99);
  CHECK(r.calibration_samples == 4);
}

TEST_CASE("the report measures tiny logits that float16 cannot hold, and says float16 loses them") {
  auto r = compile(small_cnn(1e-9f), true, true);
  // The INT8 network computes the logits as float does: compared before the
  // float16 rounding of the output, which would make every value 0.
  CHECK(r.output_cosine > 0.99);
  CHECK(r.output_euclidean > 0.8);
  CHECK(r.output_max_error < 0.2);
  for (const auto& l : r.report) {
    CHECK_MESSAGE(!l.flagged, l.name << " " << l.cosine << " " << l.euclidean);
    CHECK_MESSAGE(l.float16_lossy == (l.name == "Gemm_10" || l.name == "Gemm_10_reshape_output0"), l.name);
  }
  // The loss itself is reported: the FIR as written (float16 output), as the
  // golden data and the chip compute it, gives zeros.
  REQUIRE(r.float16_losses.size() == 2);
  const auto& loss = r.float16_losses[0];
  CHECK(loss.tensor == "Gemm_10");
  CHECK(loss.values == 4 * 4);  // 4 calibration inputs, 4 logits
  CHECK(loss.zeroed == loss.values);
  CHECK(loss.infinite == 0);
  CHECK(loss.max_abs > 1e-10);
  CHECK(loss.max_abs < 3e-8);
  CHECK(r.float16_output_cosine == 0.0);
  CHECK(r.float16_output_euclidean == -1.0);
  auto files = by_name(r);
  fir::Graph g = fir::parse_fir(r.fir_text, "tiny.json");
  for (float v : files.at(*g.find("Gemm_10")->file("output_activation1"))->to_float()) CHECK(v == 0.0f);

  // Kept in float32, the same figures and no loss.
  auto f32 = compile(small_cnn(1e-9f), false, true, "float32");
  CHECK(f32.float16_losses.empty());
  CHECK(f32.output_cosine == doctest::Approx(r.output_cosine).epsilon(1e-3));
  // Logits of ordinary size: float16 holds them.
  CHECK(compile(small_cnn(), false, true).float16_losses.empty());
}

TEST_CASE("the executor holds float16 tensors unrounded on request, and nothing else changes") {
  auto r = compile(small_cnn(1e-9f), true, false);
  auto files = by_name(r);
  fir::Graph g = fir::parse_fir(r.fir_text, "tiny.json");
  interp::FirExecutor exec(g, [&](const std::string& f) { return *files.at(f); });
  NpyArray in = *files.at("src_quantize_1_1_input_activation1.npy");
  std::vector<interp::Tensor> x = {interp::Tensor::floats(in.shape, in.to_float())};
  std::map<std::string, interp::QTensor> rounded, kept;
  exec.run(x, [&](const fir::Layer& l, const std::vector<const interp::QTensor*>&, const interp::QTensor& out) {
    rounded[l.name] = out;
  });
  auto outs = exec.run(x, [&](const fir::Layer& l, const std::vector<const interp::QTensor*>&,
                              const interp::QTensor& out) { kept[l.name] = out; },
                       nullptr, interp::FirExecutor::Float16::Fp32);
  REQUIRE(rounded.size() == kept.size());
  for (const auto& [name, t] : rounded) {
    const interp::QTensor& u = kept.at(name);
    CHECK(t.dtype == u.dtype);
    CHECK(t.q == u.q);  // the input is float16 already: every int8 tensor is the same
    for (size_t i = 0; i < t.f.size(); ++i) {
      CHECK(t.f[i] == int8::to_float16(u.f[i]));
      if (name == "Gemm_10") CHECK(u.f[i] != 0.0f);
    }
  }
  REQUIRE(outs.size() == 1);
  CHECK(outs[0].dtype == "float16");
  CHECK(outs[0].f == kept.at("Gemm_10_reshape_output0").f);
}

TEST_CASE("the report's similarity: any magnitude alike, a wrong scale seen") {
  std::vector<float> x(64), y(64), zero(64, 0.0f);
  for (size_t k = 0; k < x.size(); ++k) {
    x[k] = std::sin(0.7f * static_cast<float>(k));
    y[k] = x[k] + 0.01f * std::cos(1.3f * static_cast<float>(k));
  }
  frontend::Similarity one;
  one.add(x.data(), y.data(), 64);
  CHECK(one.cosine() > 0.999);
  CHECK(!one.low());
  // Values of 1e-20 (squares of 1e-40, below float's normal range) measure
  // the same: the sums are in double.
  for (float tiny : {1e-20f, 1e-30f}) {
    std::vector<float> xs(x), ys(y);
    for (size_t k = 0; k < x.size(); ++k) {
      xs[k] *= tiny;
      ys[k] *= tiny;
    }
    frontend::Similarity s;
    s.add(xs.data(), ys.data(), 64);
    CHECK(s.cosine() == doctest::Approx(one.cosine()).epsilon(1e-6));
    CHECK(s.euclidean() == doctest::Approx(one.euclidean()).epsilon(1e-4));
    CHECK(s.max_error() == doctest::Approx(one.max_error()).epsilon(1e-4));
  }
  // Twice the float values: the cosine cannot see it, the euclidean can.
  std::vector<float> twice(x);
  for (auto& v : twice) v *= 2.0f;
  frontend::Similarity s2;
  s2.add(x.data(), twice.data(), 64);
  CHECK(s2.cosine() == doctest::Approx(1.0));
  CHECK(s2.euclidean() == doctest::Approx(1.0 / 3.0));
  CHECK(s2.max_error() == doctest::Approx(1.0));
  CHECK(s2.low());
  frontend::Similarity s0;
  s0.add(x.data(), zero.data(), 64);
  CHECK(s0.cosine() == 0.0);
  CHECK(s0.euclidean() == doctest::Approx(-1.0));
  CHECK(s0.max_error() == 1.0);
  CHECK(s0.low());
  CHECK(one.max_error() < 0.02);
}

TEST_CASE("calibration inputs from a directory, and their errors") {
  std::string dir = cct::testing::temp_dir("frontend_calib");
  interp::Tensor x = interp::Tensor::floats({2, 3, 10, 10});
  for (size_t k = 0; k < x.f.size(); ++k) x.f[k] = std::cos(0.1f * static_cast<float>(k));
  write_npy(dir + "/a.npy", NpyArray::from_float(x.f, {2, 3, 10, 10}));                      // a stack of two
  write_npy(dir + "/b.npy", NpyArray::from_float(std::vector<float>(x.f.begin(), x.f.begin() + 300), {3, 10, 10}));
  frontend::CompileOptions o;
  o.calib_dir = dir;
  auto r = frontend::compile(frontend::import_onnx_bytes(small_cnn().bytes(), "small.onnx", "."), o);
  CHECK(r.calibration_samples == 3);
  write_npy(dir + "/c.npy", NpyArray::from_float(std::vector<float>(12, 0.0f), {3, 4}));
  try {
    frontend::compile(frontend::import_onnx_bytes(small_cnn().bytes(), "small.onnx", "."), o);
    FAIL("expected an error");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(m.find("c.npy") != std::string::npos);
    CHECK(m.find("does not match the model input [1, 3, 10, 10]") != std::string::npos);
  }
}

TEST_CASE("weights that fold to NaN or infinity are refused, naming the model and the layer") {
  // A negative running variance makes BatchNormalization's 1/sqrt(var + eps)
  // NaN: the folded weights have no INT8 code.
  for (float var : {-1.0f, 0.0f}) {
    CAPTURE(var);
    OnnxBuilder b;
    b.input("x", {1, 3, 8, 8}).output("y", {1, 4, 8, 8});
    cct::testing::add_conv_bn(b, "x", "y", {1.0f, var, 1.0f, 1.0f}, 0.0f);  // epsilon 0: var 0 gives 1/sqrt(0)
    frontend::CompileOptions o;
    o.calib_random = 1;
    try {
      frontend::compile(frontend::import_onnx_bytes(b.bytes(), "nan.onnx", "."), o);
      FAIL("expected an error");
    } catch (const Error& e) {
      std::string m = e.what();
      CHECK(e.code() == kExitInvalidInput);
      CHECK(m.rfind("nan.onnx: layer '", 0) == 0);
      CHECK(m.find("hold a NaN or infinite value") != std::string::npos);
    }
  }
}

TEST_CASE("a channels-last block's layer norm over channels is the float model's, layer by layer") {
  auto r = compile(testing::convnext_block(2), true, true);
  fir::Graph g = fir::parse_fir(r.fir_text, "block.json");
  int ln = 0;
  for (const auto& l : g.layers())
    if (l.op == fir::Op::LayerNorm) {
      ++ln;
      CHECK(l.axis == std::optional<int64_t>(1));
      CHECK(l.output_shape.at(0) == fir::Shape{2, 8, 5, 5});
    }
  CHECK(ln == 1);
  for (const auto& l : r.report) CHECK_MESSAGE(l.cosine > 0.99, l.name << " " << l.cosine);
  CHECK(r.output_cosine > 0.99);
}
