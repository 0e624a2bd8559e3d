// ONNX backend node tests: every test whose operators (and attributes) the
// importer accepts, and whose tensors are float32/int64/bool (the
// interpreter's element types), must reproduce the expected outputs within the
// ONNX runner's default tolerance (rtol 1e-3, atol 1e-7).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>

#include "frontend/onnx_import.hpp"
#include "interp/float_interp.hpp"
#include "support/error.hpp"
#include "testing.hpp"

namespace fs = std::filesystem;
using namespace cct;
using interp::DType;
using interp::Tensor;

namespace {

std::string testdata_dir() {
  const char* e = std::getenv("CCT_ONNX_TESTDATA");
  return e && *e ? e : "/usr/share/libonnx-testdata/data";
}

bool interp_type(DType t) { return t == DType::F32 || t == DType::I64 || t == DType::Bool; }

std::vector<Tensor> load_set(const fs::path& dir, const std::string& prefix) {
  std::vector<Tensor> out;
  for (int k = 0;; ++k) {
    fs::path p = dir / (prefix + "_" + std::to_string(k) + ".pb");
    if (!fs::exists(p)) break;
    out.push_back(frontend::parse_onnx_tensor(testing::read_file(p.string()), p.string()));
  }
  return out;
}

// "" when equal within tolerance, else what differs.
std::string compare(const Tensor& want, const Tensor& got, double rtol, double atol) {
  if (want.shape != got.shape) return "shape " + interp::shape_str(got.shape) + " != " + interp::shape_str(want.shape);
  for (int64_t k = 0; k < want.numel(); ++k) {
    double w = want.at_double(k), g = got.at_double(k);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && w == g) continue;
    if (!(std::fabs(w - g) <= atol + rtol * std::fabs(w)))
      return "element " + std::to_string(k) + ": got " + std::to_string(g) + ", want " + std::to_string(w);
  }
  return "";
}

struct Tally {
  int total = 0, applicable = 0, passed = 0;
  std::map<std::string, int> skipped;  // reason -> count
  std::vector<std::string> failures;
};

void run_suite(const std::string& sub, Tally& t) {
  fs::path root = fs::path(testdata_dir()) / sub;
  if (!fs::is_directory(root)) FAIL("ONNX test data not found at " << root << " (install libonnx-testdata or set CCT_ONNX_TESTDATA)");
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory()) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& dir : dirs) {
    fs::path model = dir / "model.onnx";
    if (!fs::exists(model)) continue;
    ++t.total;
    std::string name = dir.filename().string();
    interp::Graph g;
    try {
      g = frontend::import_onnx(model.string());
    } catch (const Error& e) {
      std::string msg = e.what();
      if (msg.find("unsupported operators") != std::string::npos) ++t.skipped["unsupported operator or attribute"];
      else if (msg.find("opset") != std::string::npos) ++t.skipped["opset outside 1..17"];
      else if (msg.find("element type") != std::string::npos) ++t.skipped["tensor type outside float32/int64/bool"];
      else if (msg.find("is not a tensor") != std::string::npos) ++t.skipped["sequence/optional values"];
      else ++t.skipped["model not importable: " + msg.substr(0, 60)];
      continue;
    }
    std::vector<fs::path> sets;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
    std::sort(sets.begin(), sets.end());
    bool types_ok = true;
    for (int v : g.inputs) types_ok &= interp_type(g.value(v).dtype);
    for (int v : g.outputs) types_ok &= interp_type(g.value(v).dtype);
    if (!types_ok || sets.empty()) {
      ++t.skipped[sets.empty() ? "no test data" : "tensor type outside float32/int64/bool"];
      continue;
    }
    ++t.applicable;
    std::string failure;
    try {
      interp::FloatInterpreter fi(g);
      for (const auto& set : sets) {
        auto inputs = load_set(set, "input");
        auto want = load_set(set, "output");
        // Optional inputs given as empty names are not graph inputs.
        if (inputs.size() > g.inputs.size()) inputs.resize(g.inputs.size());
        auto got = fi.run(inputs);
        if (got.size() != want.size()) {
          failure = "output count " + std::to_string(got.size()) + " != " + std::to_string(want.size());
          break;
        }
        for (size_t k = 0; k < got.size() && failure.empty(); ++k) {
          std::string d = compare(want[k], got[k], 1e-3, 1e-7);
          if (!d.empty()) failure = set.filename().string() + " output " + std::to_string(k) + ": " + d;
        }
        if (!failure.empty()) break;
      }
    } catch (const std::exception& e) {
      failure = std::string("error: ") + e.what();
    }
    if (failure.empty()) ++t.passed;
    else t.failures.push_back(name + ": " + failure);
  }
}

void report(const std::string& sub, const Tally& t) {
  std::cout << "onnx " << sub << " tests: " << t.total << " total, " << t.applicable << " applicable, " << t.passed
            << " passed\n";
  for (const auto& [why, n] : t.skipped) std::cout << "  not applicable (" << why << "): " << n << "\n";
  for (const auto& f : t.failures) std::cout << "  FAIL " << f << "\n";
}

}  // namespace

TEST_CASE("ONNX backend node tests: every applicable test passes") {
  Tally t;
  run_suite("node", t);
  report("node", t);
  CHECK(t.applicable > 300);
  CHECK(t.failures.empty());
  CHECK(t.passed == t.applicable);
}

TEST_CASE("ONNX pytorch-converted and pytorch-operator tests: every applicable test passes") {
  for (const char* sub : {"pytorch-converted", "pytorch-operator", "simple"}) {
    Tally t;
    run_suite(sub, t);
    report(sub, t);
    CHECK(t.failures.empty());
  }
}
