// Acceptance runs on torchvision models (random weights, eval mode) exported
// to ONNX by examples/models/export_torchvision.py. Slow: labelled "slow".
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include "fir/fir.hpp"
#include "testing.hpp"

using namespace cct;
namespace fs = std::filesystem;

namespace {

std::string model(const std::string& name) { return cct::testing::torchvision_onnx(name); }

struct Run {
  fir::Graph fir;
  std::string err;
};

Run compile(const std::string& name, const std::string& args) {
  std::string out = cct::testing::temp_dir("models_" + name) + "/" + name + ".fir.json";
  auto r = cct::testing::run_tool("onnx2fir", model(name) + " -o " + out + " " + args);
  REQUIRE_MESSAGE(r.exit_code == 0, name << ": " << r.err);
  return {fir::read_fir(out), r.err};
}

double final_cosine(const std::string& err) {
  auto p = err.find("final output cosine");
  REQUIRE(p != std::string::npos);
  return std::stod(err.substr(err.find("): ", p) + 3));
}

std::string tools_dir() {
  fs::path p = fs::path(cct::testing::reference_dir()).parent_path() / "tools";
  return p.string();
}

}  // namespace

TEST_CASE("resnet50 and resnet34 have the reference FIR's structure") {
  std::string ref = cct::testing::reference_dir() + "/gemini-ir/frontend/";
  for (auto [name, reffile, ignore, batch] :
       {std::tuple<const char*, const char*, const char*, int>{"resnet50", "int8_resnet50.sim_quantized_b1.json", "", 1},
        {"resnet50", "int8_resnet50.sim_quantized_b4.json", "", 4},
        {"resnet34", "int8_resnet34.sim_quantized_b1.json", "--ignore-ops quantize", 1}}) {
    std::string out = cct::testing::temp_dir(std::string("structure_") + name + std::to_string(batch)) + "/fir.json";
    auto r = cct::testing::run_tool("onnx2fir", model(name) + " --calib-random 2 --quiet --batch " +
                                                    std::to_string(batch) + " -o " + out);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    auto c = cct::testing::run("/usr/bin/python3 " + tools_dir() + "/fir_compare.py " + out + " " + ref + reffile + " " + ignore);
    INFO(c.out);
    CHECK(c.exit_code == 0);
    CHECK(c.out.find("0 extra layers in ours") != std::string::npos);
  }
}

TEST_CASE("INT8 keeps the final output within cosine 0.99 of float (16 calibration inputs)") {
  // The random-init logits of the MobileNets (~1e-9) and EfficientNet (~1e-14)
  // are below float16's range: the report measures them before the float16
  // rounding of the output and says that it loses them.
  for (auto [name, tiny] : {std::pair<const char*, bool>{"resnet18", false},
                            {"resnet50", false},
                            {"mobilenet_v2", true},
                            {"mobilenet_v3_small", true},
                            {"efficientnet_b0", true}}) {
    Run r = compile(name, "--calib-random 16 --report --quiet");
    double c = final_cosine(r.err);
    MESSAGE(std::string(name) << ": final output cosine " << c);
    CHECK(c >= 0.99);
    CHECK_MESSAGE((r.err.find("float16 tensor(s) cannot hold their values") != std::string::npos) == tiny, name);
  }
}

TEST_CASE("CNNs compile with everything but reshapes on the npu") {
  for (const char* name : {"resnet18", "mobilenet_v2", "vgg16", "squeezenet1_1", "googlenet", "efficientnet_b0"}) {
    Run r = compile(name, "--calib-random 2 --quiet");
    std::map<std::string, int> ops;
    for (const auto& l : r.fir.layers()) {
      ++ops[l.operation];
      if (l.op != fir::Op::Reshape) CHECK_MESSAGE(l.device == fir::Device::Npu, name << ": " << l.name);
    }
    CHECK(ops["conv2d"] > 0);
    CHECK(r.err.find("on the cpu") == std::string::npos);
  }
}

TEST_CASE("vit_b_16 compiles and reports its cpu fallbacks") {
  Run r = compile("vit_b_16", "--calib-random 2");
  int cpu = 0;
  std::map<std::string, int> cpu_ops;
  for (const auto& l : r.fir.layers())
    if (l.device == fir::Device::Cpu && l.op != fir::Op::Reshape) {
      ++cpu;
      ++cpu_ops[l.operation];
    }
  CHECK(cpu > 0);
  CHECK(cpu_ops["softmax"] == 12);
  CHECK(cpu_ops["layer_norm"] == 25);
  size_t reported = 0;
  for (size_t p = r.err.find("on the cpu"); p != std::string::npos; p = r.err.find("on the cpu", p + 1)) ++reported;
  CHECK(reported == static_cast<size_t>(cpu));
}
