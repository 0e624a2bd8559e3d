// ResNet-50 through onnx2fir's pipeline: import, calibration on 8 inputs,
// quantization and FIR + .npy write; prints the wall time of each stage.
//
//   bench_onnx2fir [MODEL.onnx] [--calib N] [--out DIR]
//
// Without MODEL, torchvision's resnet50 (random weights) is exported once with
// examples/models/export_torchvision.py into build/bench-cache/.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "bench_model.hpp"
#include "frontend/pipeline.hpp"
#include "interp/gemm.hpp"
#include "interp/parallel.hpp"
#include "support/io.hpp"
#include "support/npy.hpp"

namespace fs = std::filesystem;
using namespace cct;

namespace {
double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int main(int argc, char** argv) {
  std::string model, out_dir;
  int calib = 8;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    if (a == "--calib" && k + 1 < argc) calib = std::atoi(argv[++k]);
    else if (a == "--out" && k + 1 < argc) out_dir = argv[++k];
    else model = a;
  }
  fs::path exe_dir = fs::absolute(fs::path(argv[0])).parent_path();
  if (model.empty() && (model = cct::bench::cached_resnet50(argv[0], "bench_onnx2fir")).empty()) return 1;
  if (out_dir.empty()) out_dir = (exe_dir.parent_path() / "bench-out" / "onnx2fir").string();
  fs::create_directories(out_dir);

  auto t0 = std::chrono::steady_clock::now();
  auto t = t0;
  interp::Graph g = frontend::load_model(model, {});
  double t_import = since(t);
  frontend::CompileOptions o;
  o.calib_random = calib;
  std::vector<std::pair<std::string, double>> stages;
  t = std::chrono::steady_clock::now();
  auto last = t;
  frontend::CompileResult r = frontend::compile(std::move(g), o, [&](const std::string& s) {
    stages.push_back({s, since(last)});
    last = std::chrono::steady_clock::now();
  });
  double t_compile = since(t);
  t = std::chrono::steady_clock::now();
  size_t bytes = r.fir_text.size();
  for (const auto& [name, a] : r.files) {
    std::string data = serialize_npy(a);
    bytes += data.size();
    write_output((fs::path(out_dir) / name).string(), data);
  }
  write_output((fs::path(out_dir) / "resnet50.fir.json").string(), r.fir_text);
  double t_write = since(t);
  double total = since(t0);

  std::printf("bench_onnx2fir: %s, %d calibration inputs, %d threads, avx2 %s\n", model.c_str(), calib,
              interp::thread_count(), interp::sgemm_uses_avx2() ? "yes" : "no");
  std::printf("  import (parse, check, shape inference)   %7.3f s\n", t_import);
  for (const auto& [s, secs] : stages) std::printf("  %-40s %7.3f s\n", s.c_str(), secs);
  std::printf("  compile total                             %7.3f s\n", t_compile);
  std::printf("  write FIR + %zu .npy (%.1f MB)           %7.3f s\n", r.files.size(), bytes / 1e6, t_write);
  std::printf("  total wall time                           %7.3f s\n", total);
  return 0;
}
