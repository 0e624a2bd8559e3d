// Wall time of irgen (mapping -> Scheduler IR, including the intra-core
// tiling search and the weight-path search) on ResNet-50:
//  1. zebu-1core, the single-core mapping (every layer on core 0, one per segment);
//  2. chip-64tops, a layer pipeline (consecutive layers on the 8 cores,
//     segments of 8 layers, one batch group per sample), batch 1, 4 and 16.
// Reading the inputs is not timed; formatting the SIR text is reported apart.
// Median of --repeat runs, wall and CPU time of the process.
//
//   bench_irgen [REFERENCE_DIR] [--repeat N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "fir/fir.hpp"
#include "irgen/irgen.hpp"
#include "mapping/mapping.hpp"
#include "mapping/mapping_fir.hpp"
#include "sir/sir.hpp"

using Clock = std::chrono::steady_clock;
using namespace cct;

namespace {

double cpu_seconds() { return double(std::clock()) / CLOCKS_PER_SEC; }

void run(const char* label, const fir::Graph& g, const mapping::Mapping& m, const arch::Architecture& a, int repeat) {
  std::vector<double> wall, cpu, fmt;
  size_t workloads = 0, bytes = 0;
  for (int r = 0; r < repeat; ++r) {
    auto t0 = Clock::now();
    double c0 = cpu_seconds();
    sir::Schedule s = irgen::generate(g, m, a);
    double c1 = cpu_seconds();
    auto t1 = Clock::now();
    std::string text = sir::format_sir(s, false);
    auto t2 = Clock::now();
    wall.push_back(std::chrono::duration<double>(t1 - t0).count());
    cpu.push_back(c1 - c0);
    fmt.push_back(std::chrono::duration<double>(t2 - t1).count());
    workloads = s.workload_count();
    bytes = text.size();
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  std::sort(fmt.begin(), fmt.end());
  std::printf("%-34s %6zu workloads  generate %8.1f ms wall %8.1f ms CPU  format %6.1f ms (%zu bytes)\n", label, workloads,
              1e3 * wall[wall.size() / 2], 1e3 * cpu[cpu.size() / 2], 1e3 * fmt[fmt.size() / 2], bytes);
}

}  // namespace

int main(int argc, char** argv) {
  std::string ref = "../shared/reference";
  if (const char* e = std::getenv("CCT_REFERENCE_DIR")) ref = e;
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else ref = s;
  }
  try {
    auto zebu = arch::load_architecture("zebu-1core");
    auto chip = arch::load_architecture("chip-64tops");
    std::string dir = ref + "/gemini-ir/frontend/int8_resnet50.sim_quantized_b";
    auto g1 = fir::read_fir(dir + "1.json");
    run("ResNet-50 b1 zebu-1core single", g1, mapping::single_core_mapping(g1, "zebu-1core"), zebu, repeat);
    for (int b : {1, 4, 16}) {
      auto g = fir::read_fir(dir + std::to_string(b) + ".json");
      std::string label = "ResNet-50 b" + std::to_string(b) + " chip-64tops pipeline";
      run(label.c_str(), g, mapping::one_layer_per_core_mapping(g, "chip-64tops", chip.core_count(), b), chip, repeat);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_irgen: %s\n", e.what());
    return 1;
  }
  return 0;
}
