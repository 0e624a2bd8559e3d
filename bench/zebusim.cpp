// Simulation speed of zebusim's engine (lib/sim), single-threaded.
//
// 1. zebu-1core: the largest reference ResNet-50 program repeated until the
//    program has about --instructions instructions (ids of the copies renumbered
//    by layer so the VP layer split is per copy).
// 2. chip-64tops: the same program replicated on every core (each core runs
//    a copy; all copies share the DRAM channels and the D2D links), repeated to
//    about the same size.
// For each: simulated instructions per second (wall time and CPU time of the
// process, median of --repeat runs) and the simulated cycles. Pricing the
// instructions (lib/timing) is included; reading the program is not.
//
//   bench_zebusim [REFERENCE_DIR] [--instructions N] [--repeat N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "isa/program_io.hpp"
#include "sim/sim.hpp"
#include "support/error.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace cct;

namespace {

std::string pick_program(const std::string& dir) {
  std::string best;
  uintmax_t best_size = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.find("resnet50") == std::string::npos) continue;
    if (e.file_size() > best_size) best_size = e.file_size(), best = e.path().string();
  }
  if (best.empty()) throw_io_error(dir + ": no ResNet-50 program");
  return best;
}

// Copies of `base` until about `target` instructions, on cores 0..cores-1.
isa::Program replicate(const isa::Program& base, size_t target, int cores) {
  isa::Program p;
  size_t copies = std::max<size_t>(1, target / (base.size() * size_t(cores)));
  p.instructions.reserve(copies * base.size() * size_t(cores));
  for (int c = 0; c < cores; ++c)
    for (size_t k = 0; k < copies; ++k)
      for (isa::Instruction inst : base.instructions) {
        inst.mapping.core = c;
        inst.mapping.wkl += int32_t(k) * 100000;  // each copy's layers are its own
        p.instructions.push_back(inst);
      }
  return p;
}

struct Measure {
  double wall = 0, cpu = 0;
  int64_t cycles = 0;
};

Measure time_run(const isa::Program& p, const arch::Architecture& a, int repeat) {
  std::vector<double> walls, cpus;
  Measure m;
  sim::Options o;
  o.file = "bench";
  for (int i = 0; i < repeat; ++i) {
    std::clock_t c0 = std::clock();
    auto t0 = Clock::now();
    sim::Result r = sim::simulate(p, a, o);
    auto t1 = Clock::now();
    std::clock_t c1 = std::clock();
    walls.push_back(std::chrono::duration<double>(t1 - t0).count());
    cpus.push_back(double(c1 - c0) / CLOCKS_PER_SEC);
    m.cycles = r.stats.total_cycles;
  }
  std::sort(walls.begin(), walls.end());
  std::sort(cpus.begin(), cpus.end());
  m.wall = walls[walls.size() / 2];
  m.cpu = cpus[cpus.size() / 2];
  return m;
}

void report(const char* what, const isa::Program& p, const Measure& m) {
  std::printf("%-44s %9zu instructions  %7.3f s wall  %6.2f M instr/s (CPU %6.2f M/s)  %12lld cycles simulated\n", what,
              p.size(), m.wall, double(p.size()) / m.wall * 1e-6, double(p.size()) / std::max(m.cpu, 1e-9) * 1e-6,
              static_cast<long long>(m.cycles));
}

}  // namespace

int main(int argc, char** argv) {
  std::string ref = std::string(CCT_BENCH_SOURCE_DIR) + "/../shared/reference";
  if (const char* env = std::getenv("CCT_REFERENCE_DIR")) ref = env;
  size_t target = 1000000;
  int repeat = 3;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--instructions" && i + 1 < argc) target = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else ref = a;
  }
  try {
    std::string path = pick_program(ref + "/gemini-ir/asm");
    isa::Program base = isa::read_program(path);
    std::printf("program %s (%zu instructions), target %zu instructions, median of %d runs\n",
                fs::path(path).filename().c_str(), base.size(), target, repeat);
    arch::Architecture one = arch::load_architecture("zebu-1core");
    arch::Architecture chip = arch::load_architecture("chip-64tops");
    isa::Program p1 = replicate(base, target, 1);
    report("zebu-1core, copies in sequence", p1, time_run(p1, one, repeat));
    isa::Program p8 = replicate(base, target, chip.core_count());
    report("chip-64tops, copies on every core", p8, time_run(p8, chip, repeat));
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_zebusim: %s\n", e.what());
    return e.code();
  }
  return 0;
}
