// gemini: search speed, and the quality and honesty of its mappings measured
// through the tool chain (irgen, asm and zebusim's engine, as libraries).
//
// 1. Speed: wall and CPU seconds of the default search for ResNet-50 on
//    chip-64tops (batch 1, 4, 16), chip-6x6-2x2 and chip-16x16-2x2 (batch 1).
// 2. Quality: ResNet-50 at batch 1, 4, 16 on chip-64tops: gemini's mapping and
//    --baseline sequential compiled and simulated; throughput ratio and MAC
//    utilisation against the chip's peak.
// 3. Honesty: ResNet-50 and ResNet-34 at batch 1 and 4: gemini's predicted
//    latency of its mapping against the simulated one.
// A mapping the tool chain cannot compile or run is reported with the error.
//
//   bench_gemini [REFERENCE_DIR] [--quick] [--no-speed] [--weights auto|wl0|l2]
//     --quick: speed only; --no-speed: skip it; --weights: irgen's weight
//     path (irgen --weights; default auto, as irgen compiles by default).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <string>

#include "arch/arch.hpp"
#include "asm/asm.hpp"
#include "fir/fir.hpp"
#include "gemini/cost.hpp"
#include "gemini/network.hpp"
#include "gemini/plan.hpp"
#include "gemini/search.hpp"
#include "irgen/irgen.hpp"
#include "sim/sim.hpp"
#include "support/error.hpp"

using namespace cct;
using Clock = std::chrono::steady_clock;

namespace {

std::string g_ref = CCT_BENCH_SOURCE_DIR "/../shared/reference";
irgen::Options g_irgen;

std::string fir_path(const std::string& net, int batch) {
  return g_ref + "/gemini-ir/frontend/int8_" + net + ".sim_quantized_b" + std::to_string(batch) + ".json";
}

struct Setup {
  arch::Architecture arch;
  fir::Graph graph;
  gemini::Network net;
  std::unique_ptr<gemini::CostModel> model;
  Setup(const std::string& fir, const std::string& arch_name)
      : arch(arch::load_architecture(arch_name)), graph(fir::read_fir(fir)) {
    net = gemini::build_network(graph, arch, fir);
    model = std::make_unique<gemini::CostModel>(net, arch);
  }
};

// Simulated cycles of a plan, or -1 with the error in `why`.
int64_t simulate(const Setup& s, const gemini::Plan& plan, std::string* why) {
  try {
    mapping::Mapping m = gemini::to_mapping(plan, s.net, s.arch);
    sir::Schedule sched = irgen::generate(s.graph, m, s.arch, g_irgen);
    isa::Program prog = assembler::assemble(sched, s.graph, s.arch);
    return sim::simulate(prog, s.arch).stats.total_cycles;
  } catch (const std::exception& e) {
    *why = e.what();
    if (why->size() > 160) *why = why->substr(0, 157) + "...";
    return -1;
  }
}

double cpu_seconds() { return double(std::clock()) / CLOCKS_PER_SEC; }

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, speed = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") quick = true;
    else if (a == "--no-speed") speed = false;
    else if (a == "--weights" && i + 1 < argc) {
      std::string w = argv[++i];
      if (w == "auto") g_irgen.weight_path = irgen::WeightPath::Auto;
      else if (w == "wl0") g_irgen.weight_path = irgen::WeightPath::Wl0;
      else if (w == "l2") g_irgen.weight_path = irgen::WeightPath::L2;
      else {
        std::fprintf(stderr, "bench_gemini: --weights takes auto, wl0 or l2\n");
        return 2;
      }
    } else
      g_ref = a;
  }
  try {
   if (speed) {
    std::printf("== search time (default effort, seed 1)\n");
    std::printf("%-10s %-16s %5s %8s %8s %12s %9s\n", "network", "arch", "batch", "wall s", "cpu s", "pred cycles",
                "segments");
    struct Case {
      const char* net;
      const char* arch;
      int batch;
    };
    for (Case c : {Case{"resnet50", "chip-64tops", 1}, Case{"resnet50", "chip-64tops", 4}, Case{"resnet50", "chip-64tops", 16},
                   Case{"resnet50", "chip-6x6-2x2", 1}, Case{"resnet50", "chip-16x16-2x2", 1}}) {
      Setup s(fir_path(c.net, c.batch), c.arch);
      double c0 = cpu_seconds();
      auto t0 = Clock::now();
      gemini::SearchResult r = gemini::search(*s.model, gemini::SearchOptions{});
      double wall = std::chrono::duration<double>(Clock::now() - t0).count();
      std::printf("%-10s %-16s %5d %8.2f %8.2f %12lld %9zu\n", c.net, c.arch, c.batch, wall, cpu_seconds() - c0,
                  (long long)r.cost.cycles, r.plan.segments.size());
      std::fflush(stdout);
    }
   }
    if (quick) return 0;

    std::printf("\n== quality on chip-64tops (zebusim cycles of the compiled mappings)\n");
    std::printf("%-10s %5s %12s %12s %12s %12s %8s %10s %10s\n", "network", "batch", "gemini pred", "gemini", "seq pred",
                "sequential", "speedup", "MAC util", "seq util");
    for (int batch : {1, 4, 16}) {
      Setup s(fir_path("resnet50", batch), "chip-64tops");
      gemini::SearchResult r = gemini::search(*s.model, gemini::SearchOptions{});
      gemini::Plan seq = gemini::sequential_plan(*s.model, gemini::Objective::Latency);
      std::string why_g, why_s;
      int64_t g = simulate(s, r.plan, &why_g), q = simulate(s, seq, &why_s);
      double peak = s.arch.peak_macs_per_cycle();
      double macs = double(s.net.total_macs());
      gemini::PlanCost seq_cost = s.model->evaluate(seq, false);
      std::printf("%-10s %5d %12lld %12lld %12lld %12lld", "resnet50", batch, (long long)r.cost.cycles, (long long)g,
                  (long long)seq_cost.cycles, (long long)q);
      if (g > 0 && q > 0)
        std::printf(" %8.2f %9.1f%% %9.1f%%\n", double(q) / double(g), 100.0 * macs / (peak * double(g)),
                    100.0 * macs / (peak * double(q)));
      else
        std::printf("  failed: %s\n", (g < 0 ? why_g : why_s).c_str());
      std::fflush(stdout);
    }

    std::printf("\n== honesty on chip-64tops (predicted vs zebusim cycles of gemini's mapping)\n");
    std::printf("%-10s %5s %12s %12s %8s\n", "network", "batch", "predicted", "zebusim", "error");
    for (const char* net : {"resnet50", "resnet34"})
      for (int batch : {1, 4}) {
        Setup s(fir_path(net, batch), "chip-64tops");
        gemini::SearchResult r = gemini::search(*s.model, gemini::SearchOptions{});
        std::string why;
        int64_t m = simulate(s, r.plan, &why);
        std::printf("%-10s %5d %12lld", net, batch, (long long)r.cost.cycles);
        if (m > 0)
          std::printf(" %12lld %7.1f%%\n", (long long)m, 100.0 * (double(r.cost.cycles) / double(m) - 1.0));
        else
          std::printf("  failed: %s\n", why.c_str());
        std::fflush(stdout);
      }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gemini: %s\n", e.what());
    return 1;
  }
  return 0;
}
