// How fast the schedule models run as the chip grows (issue "One schedule
// model, fast at every size"):
//
// 1. gemini's search (default effort, seed 1) on the reference ResNet-50
//    Frontend IR: chip-64tops at batch 1, 4, 16 and 64, then 2x2-die meshes
//    of 16, 36, 64 and 256 cores at batch 1 (chip-6x6-2x2 and chip-16x16-2x2
//    are presets; the 4x4 and 8x8 meshes are built here on their pattern:
//    one D2D link per core along each shared die edge, a port to the IO die
//    on every other row of the outer column, a DRAM channel per port). CPU
//    seconds of the search, and the peak memory of the process that ran it
//    when the search ends and at the end of the case, the mapping built and
//    simulated (each case runs in a process of its own, so peaks do not
//    carry over).
// 2. The mapping as the tool writes it (make_buildable), gemini's figure
//    for it as irgen built it against zebusim's run of its program (irgen
//    and asm as libraries), and zebusim's microseconds of CPU per simulated
//    instruction, against the core count.
// The figures are measured, not asserted; compare two builds by running
// both in the same minute.
//
//   bench_schedule_speed [REFERENCE_DIR] [--only ARCH] [--no-sim]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

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
#include "support/json.hpp"

using namespace cct;

namespace {

double cpu_seconds() { return double(std::clock()) / CLOCKS_PER_SEC; }

// A 2x2 package of m x m meshes on chip-6x6-2x2's pattern (its core,
// timing, energy, NoC and D2D constants).
arch::Architecture mesh_2x2(int m) {
  const arch::Architecture base = arch::load_architecture("chip-6x6-2x2");
  Json j = arch::architecture_to_json(base);
  const std::string side = std::to_string(2 * m);
  j.set("name", Json("chip-" + side + "x" + side + "-2x2"));
  j.set("description", Json("bench_schedule_speed: four compute dies of " + std::to_string(m) + "x" + std::to_string(m) +
                            " cores in a 2x2 package on chip-6x6-2x2's pattern"));
  auto site = [](const std::string& die, int x, int y) {
    Json s = Json::object();
    s.set("die", Json(die));
    s.set("core", Json::array({Json(int64_t(x)), Json(int64_t(y))}));
    return s;
  };
  Json dies = Json::array();
  Json io = Json::object();
  io.set("name", Json("io"));
  io.set("kind", Json("io"));
  io.set("position", Json::array({Json(int64_t(2)), Json(int64_t(0))}));
  dies.as_array().push_back(io);
  for (int d = 0; d < 4; ++d) {
    Json c = Json::object();
    c.set("name", Json("compute" + std::to_string(d)));
    c.set("kind", Json("compute"));
    c.set("position", Json::array({Json(int64_t(d % 2)), Json(int64_t(d / 2))}));
    c.set("mesh", Json::array({Json(int64_t(m)), Json(int64_t(m))}));
    dies.as_array().push_back(c);
  }
  j.set("dies", dies);
  Json links = Json::array();
  auto link = [&](Json a, Json b) { links.as_array().push_back(Json::array({std::move(a), std::move(b)})); };
  for (int k = 0; k < m; ++k) {
    link(site("compute0", m - 1, k), site("compute1", 0, k));
    link(site("compute2", m - 1, k), site("compute3", 0, k));
    link(site("compute0", k, m - 1), site("compute2", k, 0));
    link(site("compute1", k, m - 1), site("compute3", k, 0));
  }
  int ports = 0;
  for (int d = 0; d < 4; ++d)
    for (int y = m > 1 ? 1 : 0; y < m; y += 2) {
      Json io_end = Json::object();
      io_end.set("die", Json("io"));
      link(site("compute" + std::to_string(d), d % 2 ? m - 1 : 0, y), io_end);
      ++ports;
    }
  j.find("d2d")->set("links", links);
  Json channels = Json::array();
  for (int c = 0; c < ports; ++c) {
    Json ch = Json::object();
    ch.set("die", Json("io"));
    channels.as_array().push_back(ch);
  }
  j.find("dram")->set("channels", channels);
  return arch::parse_architecture(format_json(j), "bench:" + side + "x" + side);
}

struct Case {
  std::string arch;  // a preset, or chip-4x4-2x2 / chip-8x8-2x2 (mesh_2x2)
  int batch;
};

arch::Architecture architecture(const std::string& name) {
  if (name == "chip-4x4-2x2") return mesh_2x2(2);
  if (name == "chip-8x8-2x2") return mesh_2x2(4);
  return arch::load_architecture(name);
}

// One case, in the calling process: prints its line's figures but the peak
// memory, which the parent adds.
std::string run_case(const std::string& ref, const Case& c, bool sim) {
  const std::string fir = ref + "/gemini-ir/frontend/int8_resnet50.sim_quantized_b" + std::to_string(c.batch) + ".json";
  const arch::Architecture a = architecture(c.arch);
  const fir::Graph graph = fir::read_fir(fir);
  const gemini::Network net = gemini::build_network(graph, a, fir);
  gemini::CostModel model(net, a);
  const double c0 = cpu_seconds();
  gemini::SearchResult r = gemini::search(model, gemini::SearchOptions{});
  const double search_s = cpu_seconds() - c0;
  // The process's peak so far: reading the FIR and the search (the tool's
  // build, irgen, asm and zebusim come after).
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  char buf[256];
  std::snprintf(buf, sizeof buf, "%4d %8.2f %9.1f", a.core_count(), search_s, double(ru.ru_maxrss) / 1024.0);
  std::string out = buf;
  if (sim) {
    // As the tool reports it: the plan irgen builds, priced as built.
    gemini::BuiltPlan built;
    gemini::make_buildable(model, graph, r.plan, fir, &built);
    const int64_t reported = model.evaluate(r.plan, false, true, &built).cycles;
    const mapping::Mapping m = gemini::to_mapping(r.plan, net, a);
    const sir::Schedule s = irgen::generate(graph, m, a, irgen::Options{});
    const isa::Program p = assembler::assemble(s, graph, a);
    const double s0 = cpu_seconds();
    const sim::Result res = sim::simulate(p, a, sim::Options{});
    const double sim_s = cpu_seconds() - s0;
    std::snprintf(buf, sizeof buf, " %12lld %12lld %+6.2f%% %10zu %8.2f", (long long)reported,
                  (long long)res.stats.total_cycles,
                  100.0 * double(reported - res.stats.total_cycles) / double(res.stats.total_cycles), p.size(),
                  1e6 * sim_s / double(p.size()));
    out += buf;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string ref = std::string(CCT_BENCH_SOURCE_DIR) + "/../shared/reference";
  if (const char* env = std::getenv("CCT_REFERENCE_DIR")) ref = env;
  std::string only;
  bool sim = true;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--only" && i + 1 < argc) only = argv[++i];
    else if (arg == "--no-sim") sim = false;
    else if (arg == "-h" || arg == "--help") {
      std::printf("usage: bench_schedule_speed [REFERENCE_DIR] [--only ARCH] [--no-sim]\n");
      return 0;
    } else ref = arg;
  }
  const std::vector<Case> cases = {{"chip-64tops", 1},  {"chip-64tops", 4},  {"chip-64tops", 16},
                                   {"chip-64tops", 64}, {"chip-4x4-2x2", 1}, {"chip-6x6-2x2", 1},
                                   {"chip-8x8-2x2", 1}, {"chip-16x16-2x2", 1}};
  std::printf("ResNet-50 (reference Frontend IR), gemini's default search, seed 1; zebusim on its mapping's program\n");
  std::printf("%-16s %5s %4s %8s %9s", "arch", "batch", "cores", "search s", "srch MiB");
  if (sim) std::printf(" %12s %12s %7s %10s %8s", "gemini", "zebusim", "error", "instrs", "us/instr");
  std::printf(" %9s\n", "all MiB");
  std::fflush(stdout);
  int failed = 0;
  for (const Case& c : cases) {
    if (!only.empty() && c.arch != only) continue;
    int fd[2];
    if (pipe(fd) != 0) return 1;
    const pid_t pid = fork();
    if (pid == 0) {
      close(fd[0]);
      std::string line;
      int code = 0;
      try {
        line = run_case(ref, c, sim);
      } catch (const std::exception& e) {
        line = std::string("failed: ") + e.what();
        code = 1;
      }
      if (write(fd[1], line.data(), line.size()) < 0) code = 1;
      close(fd[1]);
      _exit(code);
    }
    close(fd[1]);
    std::string line;
    char buf[512];
    for (ssize_t n; (n = read(fd[0], buf, sizeof buf)) > 0;) line.append(buf, size_t(n));
    close(fd[0]);
    int status = 0;
    rusage ru{};
    wait4(pid, &status, 0, &ru);
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    failed += !ok;
    std::printf("%-16s %5d %s %9.1f\n", c.arch.c_str(), c.batch, line.c_str(), double(ru.ru_maxrss) / 1024.0);
    std::fflush(stdout);
  }
  return failed ? 1 : 0;
}
