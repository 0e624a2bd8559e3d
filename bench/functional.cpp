// zebusim --functional on ResNet-50: the functional run (DRAM image, every
// instruction on data, outputs) timed apart from the compile chain, with and
// without the golden comparison; prints MACs per second.
//
//   bench_functional [MODEL.onnx] [--batch N] [--arch zebu-1core|chip-64tops] [--repeat N]
//
// Without MODEL, torchvision's resnet50 (random weights) is exported once with
// examples/models/export_torchvision.py into build/bench-cache/. zebu-1core
// runs the single-core mapping; chip-64tops a layer pipeline over its cores
// (segments of 8 layers, one batch group per sample up to 4).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "bench_model.hpp"
#include "arch/arch.hpp"
#include "asm/asm.hpp"
#include "frontend/pipeline.hpp"
#include "func/functional.hpp"
#include "interp/parallel.hpp"
#include "irgen/irgen.hpp"
#include "mapping/mapping.hpp"
#include "mapping/mapping_fir.hpp"
#include "sim/sim.hpp"
#include "support/io.hpp"
#include "support/npy.hpp"

namespace fs = std::filesystem;
using namespace cct;

namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

mapping::Mapping make_mapping(const fir::Graph& g, const arch::Architecture& a) {
  if (a.core_count() == 1) return mapping::single_core_mapping(g, a.name);
  int64_t batch = g.in_index_order().front()->output_shape.front().front(), groups = std::min<int64_t>(batch, 4);
  while (batch % groups) --groups;
  return mapping::one_layer_per_core_mapping(g, a.name, a.core_count(), int(groups));
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, arch_name = "zebu-1core";
  int batch = 1, repeat = 3;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    if (a == "--batch" && k + 1 < argc) batch = std::atoi(argv[++k]);
    else if (a == "--arch" && k + 1 < argc) arch_name = argv[++k];
    else if (a == "--repeat" && k + 1 < argc) repeat = std::max(1, std::atoi(argv[++k]));
    else model = a;
  }
  fs::path exe_dir = fs::absolute(fs::path(argv[0])).parent_path();
  if (model.empty() && (model = cct::bench::cached_resnet50(argv[0], "bench_functional")).empty()) return 1;
  try {
    arch::Architecture a = arch::load_architecture(arch_name);
    fs::path dir = exe_dir.parent_path() / "bench-out" / ("functional-b" + std::to_string(batch));
    fs::create_directories(dir);
    auto t0 = std::chrono::steady_clock::now();
    frontend::CompileOptions o;
    o.import.batch = batch;
    o.calib_random = 8;
    o.golden = true;
    frontend::CompileResult cr = frontend::compile(frontend::load_model(model, o.import), o);
    for (const auto& [name, arr] : cr.files) write_npy((dir / name).string(), arr);
    for (const auto& [name, arr] : cr.golden) write_npy((dir / name).string(), arr);
    fir::Graph g = fir::parse_fir(cr.fir_text, "resnet50.fir.json");
    double t_front = since(t0);
    t0 = std::chrono::steady_clock::now();
    sir::Schedule s = irgen::generate(g, make_mapping(g, a), a);
    isa::Program p = assembler::assemble(s, g, a);
    sim::Options so;
    so.extras = false;
    sim::Result timed = sim::simulate(p, a, so);
    double t_chain = since(t0);
    const fir::Layer* first = g.in_index_order().front();
    NpyArray input = read_npy((dir / *first->file("input_activation1")).string());

    func::Options fo;
    fo.program_file = "resnet50.asm";
    std::vector<double> plain, golden;
    func::Result r;
    for (int k = 0; k < repeat; ++k) {
      t0 = std::chrono::steady_clock::now();
      r = func::run(p, timed.timing, a, g, s, func::directory_npy_loader(dir.string()), {input}, fo);
      plain.push_back(since(t0));
    }
    fo.golden_dir = dir.string();
    func::Result rg;
    for (int k = 0; k < repeat; ++k) {
      t0 = std::chrono::steady_clock::now();
      rg = func::run(p, timed.timing, a, g, s, func::directory_npy_loader(dir.string()), {input}, fo);
      golden.push_back(since(t0));
    }
    std::sort(plain.begin(), plain.end());
    std::sort(golden.begin(), golden.end());
    double tp = plain[plain.size() / 2], tg = golden[golden.size() / 2];
    std::printf("bench_functional: %s batch %d on %s, %zu instructions, %d threads\n", model.c_str(), batch,
                a.name.c_str(), p.size(), interp::thread_count());
    std::printf("  onnx2fir (import, calibrate, quantize, goldens)  %8.3f s (not part of the run)\n", t_front);
    std::printf("  irgen + asm + timing                            %8.3f s (not part of the run)\n", t_chain);
    std::printf("  functional run (median of %d)                    %8.3f s  %.3g MAC/s (%lld MACs)\n", repeat, tp,
                double(r.macs) / tp, static_cast<long long>(r.macs));
    std::printf("  functional run with --golden (median of %d)      %8.3f s  %.3g MAC/s, %lld layers match\n", repeat,
                tg, double(rg.macs) / tg, static_cast<long long>(rg.layers_checked));
  } catch (const std::exception& e) {
    std::cerr << "bench_functional: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
