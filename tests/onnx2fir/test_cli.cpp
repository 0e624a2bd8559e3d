// onnx2fir as a user runs it: help, errors and exit codes, outputs.
#include <doctest/doctest.h>

#include <filesystem>

#include "fir/fir.hpp"
#include "onnx_builder.hpp"
#include "support/error.hpp"
#include "support/io.hpp"
#include "support/npy.hpp"
#include "testing.hpp"
#include "tflite_builder.hpp"

using namespace cct;
using cct::testing::OnnxBuilder;
namespace fs = std::filesystem;

namespace {

// head scales the classifier: 1e-9 gives logits below float16's range.
OnnxBuilder tiny(int64_t batch = 1, float head = 0.5f) {
  OnnxBuilder b;
  b.input("x", {batch, 3, 8, 8}).output("y", {batch, 5});
  b.random_init("w", {4, 3, 3, 3}).random_init("b", {4}, 0.1f);
  auto& c = b.node("Conv", {"x", "w", "b"}, {"c"});
  OnnxBuilder::attr(c, "pads", std::vector<int64_t>{1, 1, 1, 1});
  b.node("Relu", {"c"}, {"r"});
  b.node("GlobalAveragePool", {"r"}, {"g"});
  b.node("Flatten", {"g"}, {"f"});
  b.random_init("fw", {5, 4}, head).random_init("fb", {5}, head / 5.0f);
  auto& gemm = b.node("Gemm", {"f", "fw", "fb"}, {"y"});
  OnnxBuilder::attr(gemm, "transB", int64_t{1});
  return b;
}

std::string write_model(const std::string& dir, const std::string& name, const OnnxBuilder& b) {
  std::string p = dir + "/" + name;
  cct::testing::write_file(p, b.bytes());
  return p;
}

bool torch_available() {
  return cct::testing::run("/usr/bin/python3 -c 'import torch' 2>/dev/null").exit_code == 0;
}

}  // namespace

TEST_CASE("--help and --version") {
  auto r = cct::testing::run_tool("onnx2fir", "--help");
  CHECK(r.exit_code == 0);
  for (const char* opt : {"--batch", "--calib", "--calib-random", "--calibrator", "--data-dir", "--input-shape", "--report", "-o"})
    CHECK_MESSAGE(r.out.find(opt) != std::string::npos, opt);
  r = cct::testing::run_tool("onnx2fir", "--version");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("onnx2fir") == 0);
}

TEST_CASE("usage errors, missing and corrupt files have distinct exit codes") {
  std::string dir = cct::testing::temp_dir("onnx2fir_errors");
  auto r = cct::testing::run_tool("onnx2fir", "");
  CHECK(r.exit_code == kExitUsage);
  r = cct::testing::run_tool("onnx2fir", dir + "/missing.onnx -o " + dir + "/x.json");
  CHECK(r.exit_code == kExitIo);
  CHECK(r.err.find("onnx2fir: ") == 0);
  CHECK(!fs::exists(dir + "/x.json"));
  cct::testing::write_file(dir + "/junk.onnx", std::string(100, '\x07'));
  r = cct::testing::run_tool("onnx2fir", dir + "/junk.onnx -o " + dir + "/x.json");
  CHECK(r.exit_code == kExitInvalidInput);
  CHECK(r.err.find(dir + "/junk.onnx: ") != std::string::npos);
  CHECK(!fs::exists(dir + "/x.json"));  // never a half-written output
  std::string good = tiny().bytes();
  cct::testing::write_file(dir + "/cut.onnx", good.substr(0, good.size() - 40));
  r = cct::testing::run_tool("onnx2fir", dir + "/cut.onnx -o " + dir + "/x.json");
  CHECK(r.exit_code == kExitInvalidInput);
  CHECK(r.err.find("truncated") != std::string::npos);
  r = cct::testing::run_tool("onnx2fir", write_model(dir, "m.onnx", tiny()) + " --calibrator best");
  CHECK(r.exit_code == kExitUsage);
  r = cct::testing::run_tool("onnx2fir", dir + "/m.onnx --input-shape 1,x,8,8");
  CHECK(r.exit_code == kExitUsage);
  r = cct::testing::run_tool("onnx2fir", dir + "/m.onnx --calib " + dir + "/nodir --calib-random 2");
  CHECK(r.exit_code == kExitUsage);
}

// Issue 20: a damaged .tflite was "not a valid ONNX model".
TEST_CASE("a damaged model is named by its format") {
  std::string dir = cct::testing::temp_dir("onnx2fir_formats");
  const std::string junk(100, '\x07');
  for (const char* file : {"junk.tflite", "junk.tflite.zst", "junk.pt", "junk.onnx"}) {
    CAPTURE(file);
    std::string path = dir + "/" + file;
    if (std::string(file).ends_with(".zst")) cct::write_output(path, junk);
    else cct::testing::write_file(path, junk);
    auto r = cct::testing::run_tool("onnx2fir", path + " -o " + dir + "/x.json");
    CHECK(r.exit_code == kExitInvalidInput);
    const std::string format = std::string(file).find(".tflite") != std::string::npos ? "TFLite"
                               : std::string(file).ends_with(".pt")                     ? "TorchScript"
                                                                                        : "ONNX";
    CHECK(r.err.find(path + ": not a valid " + format + " model") != std::string::npos);
    if (format != "ONNX") CHECK(r.err.find("ONNX") == std::string::npos);
  }
}

TEST_CASE("unsupported operators and dynamic shapes are explained") {
  std::string dir = cct::testing::temp_dir("onnx2fir_unsupported");
  OnnxBuilder u;
  u.input("x", {1, 4}).output("y", {1, 4});
  u.node("Hardmax", {"x"}, {"y"}, "the_hardmax");
  auto r = cct::testing::run_tool("onnx2fir", write_model(dir, "u.onnx", u) + " -o " + dir + "/u.json");
  CHECK(r.exit_code == kExitInvalidInput);
  CHECK(r.err.find("the_hardmax") != std::string::npos);
  CHECK(r.err.find("Hardmax") != std::string::npos);
  OnnxBuilder d = tiny(-1);
  std::string model = write_model(dir, "dyn.onnx", d);
  r = cct::testing::run_tool("onnx2fir", model + " -o " + dir + "/d.json");
  CHECK(r.exit_code == kExitInvalidInput);
  CHECK(r.err.find("--input-shape") != std::string::npos);
  r = cct::testing::run_tool("onnx2fir", model + " --input-shape 2,3,8,8 --calib-random 2 --quiet -o " + dir + "/d.json");
  CHECK(r.exit_code == 0);
  fir::Graph g = fir::read_fir(dir + "/d.json");
  CHECK(g.find("src_quantize_1_1")->output_shape[0] == fir::Shape{2, 3, 8, 8});
}

// Issue 20: a failed FIR write left its .npy files in --data-dir.
TEST_CASE("the FIR and its .npy files are one unit: a failed write leaves none") {
  std::string dir = cct::testing::temp_dir("onnx2fir_unit");
  std::string model = write_model(dir, "m.onnx", tiny());
  auto r = cct::testing::run_tool("onnx2fir", model + " --calib-random 2 --quiet --data-dir " + dir + "/data -o /dev/full");
  CHECK(r.exit_code == kExitIo);
  REQUIRE(fs::is_directory(dir + "/data"));
  CHECK(fs::is_empty(dir + "/data"));  // no .npy, no temporary
  r = cct::testing::run_tool("onnx2fir", model + " --calib-random 2 --quiet --data-dir " + dir + "/data -o " + dir + "/m.json");
  CHECK(r.exit_code == 0);
  CHECK(!fs::is_empty(dir + "/data"));
}

TEST_CASE("a full run: FIR, weights, golden activations, report") {
  std::string dir = cct::testing::temp_dir("onnx2fir_full");
  std::string model = write_model(dir, "m.onnx", tiny());
  auto r = cct::testing::run_tool("onnx2fir", model + " -o " + dir + "/out/m.fir.json --calib-random 3 --data-dir " +
                                                  dir + "/data --report --calibrator percentile");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.out.empty());
  fir::Graph g = fir::read_fir(dir + "/out/m.fir.json");
  CHECK(g.size() == 5);  // quantize, conv2d, avg_pool2d, dense, reshape
  for (const auto& l : g.layers())
    for (const auto& role_file : l.file_list) CHECK_MESSAGE(fs::exists(dir + "/data/" + role_file.second), role_file.second);
  CHECK(r.err.find("final output cosine") != std::string::npos);
  CHECK(r.err.find("Conv_0") != std::string::npos);
  // without --data-dir the model files go next to the FIR, golden data is not written
  r = cct::testing::run_tool("onnx2fir", model + " -o " + dir + "/side/m.fir.json --calib-random 3 --quiet");
  REQUIRE(r.exit_code == 0);
  CHECK(fs::exists(dir + "/side/Conv_0_k.npy"));
  CHECK(!fs::exists(dir + "/side/Conv_0_output_activation1.npy"));
}

TEST_CASE("--report on logits too small for float16: measured before the rounding, the loss named") {
  std::string dir = cct::testing::temp_dir("onnx2fir_tiny_logits");
  std::string model = write_model(dir, "m.onnx", tiny(1, 1e-9f));
  auto r = cct::testing::run_tool("onnx2fir", model + " -o " + dir + "/m.fir.json --calib-random 3 --report --quiet");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  INFO(r.err);
  auto p = r.err.find("final output cosine (INT8 vs float, 3 calibration inputs): ");
  REQUIRE(p != std::string::npos);
  CHECK(std::stod(r.err.substr(r.err.find("): ", p) + 3)) > 0.99);
  // LOW only for the output as float16 holds it (last check)
  CHECK(r.err.find("LOW") == r.err.rfind("LOW"));
  CHECK(r.err.find("0 layer(s) under cosine 0.9 or euclidean 0.5") != std::string::npos);
  CHECK(r.err.find("Gemm_4                                   dense             npu     ") != std::string::npos);
  CHECK(r.err.find("  FLOAT16\n") != std::string::npos);
  CHECK(r.err.find("2 float16 tensor(s) cannot hold their values") != std::string::npos);
  CHECK(r.err.find("  Gemm_4: largest |x| ") != std::string::npos);
  CHECK(r.err.find("15 of 15 values become 0, 0 infinite") != std::string::npos);
  CHECK(r.err.find("float16 rounded, as the golden data and the chip): cosine 0.000000, euclidean -1.000000  LOW") !=
        std::string::npos);
  CHECK(r.err.find("--output-dtype float32 keeps") != std::string::npos);
  // in float32 nothing is lost, and nothing is said about float16
  r = cct::testing::run_tool("onnx2fir", model + " -o " + dir + "/m.fir.json --calib-random 3 --report --quiet "
                                                 "--output-dtype float32");
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("float16") == std::string::npos);
  CHECK(r.err.find("LOW") == std::string::npos);
}

TEST_CASE("stdin, stdout, zstd output and determinism") {
  std::string dir = cct::testing::temp_dir("onnx2fir_io");
  std::string model = write_model(dir, "m.onnx", tiny());
  auto a = cct::testing::run_tool("onnx2fir", "- --calib-random 2 --quiet", cct::testing::read_file(model));
  REQUIRE(a.exit_code == 0);
  CHECK(a.err.find("not written") != std::string::npos);  // no .npy files without a directory
  auto b = cct::testing::run_tool("onnx2fir", model + " --calib-random 2 --quiet");
  REQUIRE(b.exit_code == 0);
  CHECK(a.out == b.out);
  CHECK(a.out.find("\"src_quantize_1_1\"") != std::string::npos);
  auto c = cct::testing::run_tool("onnx2fir", model + " --calib-random 2 --quiet -o " + dir + "/m.fir.json.zst");
  REQUIRE(c.exit_code == 0);
  CHECK(read_input(dir + "/m.fir.json.zst") == b.out);
  auto d = cct::testing::run_tool("onnx2fir", model + " --calib-random 2 --quiet --threads 1");
  CHECK(d.out == b.out);  // thread count does not change the result
}

TEST_CASE("TorchScript archives go through python3-torch") {
  if (!torch_available()) {
    MESSAGE("python3-torch not installed: skipping the TorchScript run");
    return;
  }
  std::string dir = cct::testing::temp_dir("onnx2fir_torchscript");
  std::string script = R"PY(
import torch, sys
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(4, 2)).eval()
torch.jit.trace(m, torch.zeros(1, 3, 8, 8)).save(sys.argv[1])
)PY";
  cct::testing::write_file(dir + "/make.py", script);
  auto mk = cct::testing::run("/usr/bin/python3 " + dir + "/make.py " + dir + "/m.pt");
  REQUIRE_MESSAGE(mk.exit_code == 0, mk.err);
  auto r = cct::testing::run_tool("onnx2fir", dir + "/m.pt --input-shape 1,3,8,8 --calib-random 2 --quiet -o " + dir + "/m.json");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  fir::Graph g = fir::read_fir(dir + "/m.json");
  int conv = 0, dense = 0;
  for (const auto& l : g.layers()) {
    conv += l.op == fir::Op::Conv2d;
    dense += l.op == fir::Op::Dense;
  }
  CHECK(conv == 1);
  CHECK(dense == 1);
  r = cct::testing::run_tool("onnx2fir", dir + "/m.pt -o " + dir + "/n.json");
  CHECK(r.exit_code == kExitUsage);
  CHECK(r.err.find("--input-shape") != std::string::npos);
  r = cct::testing::run("CCT_PYTHON=/nonexistent/python3 " + cct::testing::bin_dir() + "/onnx2fir " + dir +
                        "/m.pt --input-shape 1,3,8,8 -o " + dir + "/n.json");
  CHECK(r.exit_code == kExitIo);
  CHECK(r.err.find("python3-torch") != std::string::npos);
}

TEST_CASE("--batch N on a TFLite model: re-batched, or refused naming the operator") {
  std::string dir = cct::testing::temp_dir("onnx2fir_tflite_batch");
  std::string model = cct::testing::reference_dir() + "/tflite/person_detect.tflite";
  auto r = cct::testing::run_tool("onnx2fir", "'" + model + "' --batch 4 --calib-random 1 --quiet --data-dir " + dir +
                                                  "/data -o " + dir + "/p.fir.json");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  fir::Graph g = fir::read_fir(dir + "/p.fir.json");
  CHECK(g.in_index_order().front()->input_shape[0] == fir::Shape{4, 1, 96, 96});
  CHECK(g.in_index_order().back()->output_shape[0] == fir::Shape{4, 2});
  // A transpose that moves the batch: exit 3, the file and the operator named.
  cct::testing::TfliteBuilder b;
  int x = b.tensor("x", {1, 8}), p = b.ints("p", {2}, {1, 0}), y = b.tensor("y", {8, 1});
  b.op(39, {x, p}, {y});  // TRANSPOSE
  cct::testing::write_file(dir + "/t.tflite", b.bytes({x}, {y}));
  r = cct::testing::run_tool("onnx2fir", dir + "/t.tflite --batch 2 -o " + dir + "/t.fir.json");
  CHECK(r.exit_code == kExitInvalidInput);
  CHECK(r.err.find("onnx2fir: " + dir + "/t.tflite: operator 0 (TRANSPOSE) moves the batch away from axis 0; the model "
                   "cannot be re-batched: --batch 2 cannot be applied") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/t.fir.json"));
}

TEST_CASE("--report lists what runs where and why: host steps, their layers with the reason, reshapes read through") {
  std::string dir = cct::testing::temp_dir("onnx2fir_host_report");
  OnnxBuilder b;
  b.input("x", {1, 4, 6, 6}).output("y", {1, 4, 6, 6});
  b.random_init("w1", {4, 4, 3, 3}).random_init("b1", {4}).random_init("w2", {4, 4, 3, 3}).random_init("b2", {4});
  OnnxBuilder::attr(b.node("Conv", {"x", "w1", "b1"}, {"c"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxBuilder::attr(b.node("Softmax", {"c"}, {"s"}), "axis", int64_t{1});
  OnnxBuilder::attr(b.node("Conv", {"s", "w2", "b2"}, {"y"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
  std::string model = write_model(dir, "m.onnx", b);
  auto r = cct::testing::run_tool("onnx2fir", model + " -o " + dir + "/m.fir.json --calib-random 2 --report --quiet");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  INFO(r.err);
  CHECK(r.err.find("on the accelerator: 4 layer(s); on the host: 1 step(s) of 1 layer(s)\n") != std::string::npos);
  CHECK(r.err.find("host step 0 (") != std::string::npos);
  CHECK(r.err.find("; reads Conv_0):\n") != std::string::npos);
  CHECK(r.err.find("  Softmax_1_1 (softmax): softmax (exponent and division over a whole axis") != std::string::npos);
  // The classifier's flatten is a reshape the chip reads through.
  r = cct::testing::run_tool("onnx2fir", write_model(dir, "t.onnx", tiny()) + " -o " + dir + "/t.fir.json --calib-random 2 --report --quiet");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.err.find("on the host: 0 step(s) of 0 layer(s)") != std::string::npos);
}

TEST_CASE("--constant-input fixes a model input (a Slice's starts given as an input, as ONNX's node tests do)") {
  std::string dir = cct::testing::temp_dir("onnx2fir_constant_input");
  OnnxBuilder b;
  b.input("x", {1, 8, 4, 4}).input("starts", {1}).output("y", {1, 3, 4, 4});
  b.init_i64("ends", {1}, {7}).init_i64("axes", {1}, {1}).init_i64("steps", {1}, {2});
  b.random_init("w", {8, 8, 1, 1}).random_init("b", {8}, 0.1f);
  b.node("Conv", {"x", "w", "b"}, {"c"});
  b.node("Slice", {"c", "starts", "ends", "axes", "steps"}, {"y"});
  std::string model = write_model(dir, "s.onnx", b);
  // Without the value the slice's bounds are unknown.
  auto r = cct::testing::run_tool("onnx2fir", model + " --calib-random 2 --quiet -o " + dir + "/a.json");
  CHECK(r.exit_code == kExitInvalidInput);
  write_npy(dir + "/starts.npy", NpyArray::from_int32({1}, {1}));
  r = cct::testing::run_tool("onnx2fir", model + " --constant-input starts=" + dir + "/starts.npy --calib-random 2 --quiet -o " +
                                             dir + "/s.json");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  fir::Graph g = fir::read_fir(dir + "/s.json");
  const fir::Layer* s = nullptr;
  for (const auto& l : g.layers())
    if (l.op == fir::Op::Slice) s = &l;
  REQUIRE(s);
  CHECK(*s->starts == std::vector<int64_t>{0, 1, 0, 0});
  CHECK(*s->ends == std::vector<int64_t>{1, 7, 4, 4});
  CHECK(*s->steps == std::vector<int64_t>{1, 2, 1, 1});
  CHECK(s->output_shape[0] == fir::Shape{1, 3, 4, 4});
  r = cct::testing::run_tool("onnx2fir", model + " --constant-input nope=" + dir + "/starts.npy -o " + dir + "/n.json");
  CHECK(r.exit_code == kExitUsage);
  CHECK(r.err.find("has no input 'nope'") != std::string::npos);
}
