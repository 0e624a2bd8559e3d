// The whole tool chain as a user runs it, stage by stage through the command
// lines (process start, file I/O and schema validation included): wall time of
// each stage and of the chain, for ResNet-50 batch 1 on chip-64tops by default.
//
//   bench_pipeline [MODEL.onnx] [--arch NAME|FILE] [--batch N] [--repeat N] [--keep DIR]
//
// Without MODEL, torchvision's resnet50 (random weights) is exported once with
// examples/models/export_torchvision.py into build/bench-cache/. Each stage is
// timed --repeat times (default 3) and the median printed; calibration
// (onnx2fir) is reported apart from the rest of the chain.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

#include "bench_model.hpp"

namespace fs = std::filesystem;

namespace {

double run_timed(const std::string& cmd) {
  auto t0 = std::chrono::steady_clock::now();
  int rc = std::system(cmd.c_str());
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rc != 0) {
    std::cerr << "bench_pipeline: failed (" << rc << "): " << cmd << "\n";
    std::exit(1);
  }
  return s;
}

std::string q(const std::string& s) { return "'" + s + "'"; }

}  // namespace

int main(int argc, char** argv) {
  std::string model, arch = "chip-64tops", keep;
  int batch = 1, repeat = 3;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    if (a == "--batch" && k + 1 < argc) batch = std::atoi(argv[++k]);
    else if (a == "--arch" && k + 1 < argc) arch = argv[++k];
    else if (a == "--repeat" && k + 1 < argc) repeat = std::max(1, std::atoi(argv[++k]));
    else if (a == "--keep" && k + 1 < argc) keep = argv[++k];
    else if (a == "-h" || a == "--help") {
      std::cout << "usage: bench_pipeline [MODEL.onnx] [--arch NAME|FILE] [--batch N] [--repeat N] [--keep DIR]\n";
      return 0;
    } else model = a;
  }
  fs::path exe_dir = fs::absolute(fs::path(argv[0])).parent_path();
  fs::path bin = exe_dir.parent_path() / "bin";
  if (model.empty() && (model = cct::bench::cached_resnet50(argv[0], "bench_pipeline")).empty()) return 1;
  fs::path dir = keep.empty() ? fs::temp_directory_path() / ("bench_pipeline_" + std::to_string(::getpid())) : fs::path(keep);
  fs::create_directories(dir);
  const std::string d = dir.string(), fir = d + "/m.fir.json", B = bin.string() + "/";
  const std::string A = " --arch " + q(arch);
  struct Stage {
    std::string name, cmd;
    bool chain;  // part of the chain proper (calibration is not)
  };
  const std::vector<Stage> stages = {
      {"onnx2fir (import, calibrate, quantize)",
       B + "onnx2fir " + q(model) + " --batch " + std::to_string(batch) + " --calib-random 4 --quiet --data-dir " +
           q(d + "/data") + " -o " + q(fir),
       false},
      {"gemini (mapping search)", B + "gemini " + q(fir) + A + " --no-progress -o " + q(d + "/m.map.json"), true},
      {"irgen (Scheduler IR)", B + "irgen " + q(fir) + " " + q(d + "/m.map.json") + A + " -o " + q(d + "/m.sir.json"), true},
      {"asm (ISA program)", B + "asm " + q(d + "/m.sir.json") + " --fir " + q(fir) + A + " -o " + q(d + "/m.asm"), true},
      {"zebusim (trace)", B + "zebusim " + q(d + "/m.asm") + A + " -o " + q(d + "/m.trace"), true},
      {"traceview (summary + HTML)",
       B + "traceview " + q(d + "/m.trace") + A + " --fir " + q(fir) + " --summary --html " + q(d + "/m.html") + " -o " +
           q(d + "/m.summary.txt"),
       true},
  };
  std::printf("bench_pipeline: %s batch %d on %s, median of %d runs per stage (wall time, through the CLIs)\n",
              model.c_str(), batch, arch.c_str(), repeat);
  double chain = 0;
  for (const auto& s : stages) {
    std::vector<double> t;
    for (int r = 0; r < repeat; ++r) t.push_back(run_timed(s.cmd));
    std::sort(t.begin(), t.end());
    double med = t[t.size() / 2];
    if (s.chain) chain += med;
    std::printf("  %-40s %8.3f s\n", s.name.c_str(), med);
  }
  std::printf("  %-40s %8.3f s\n", "chain without calibration", chain);
  std::printf("  sizes: FIR %ju B, mapping %ju B, SIR %ju B, program %ju B, trace %ju B, HTML %ju B\n",
              uintmax_t(fs::file_size(fir)), uintmax_t(fs::file_size(d + "/m.map.json")),
              uintmax_t(fs::file_size(d + "/m.sir.json")), uintmax_t(fs::file_size(d + "/m.asm")),
              uintmax_t(fs::file_size(d + "/m.trace")), uintmax_t(fs::file_size(d + "/m.html")));
  if (keep.empty()) fs::remove_all(dir);
  return 0;
}
