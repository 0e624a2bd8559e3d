// dse: what the sweep's quick search gives up against gemini's full search,
// and what each costs, on chosen design points of a space.
//
//   bench_dse SPACE FIR[,FIR...] POINT[,POINT...] [--no-full]
//
// For every point and network: the quick plan (segmentation only), gemini's
// sequential baseline and the full search (effort 1, seed 1): cycles, energy
// (uJ), EDP relative to the full search's, segments and seconds.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "dse/sweep.hpp"
#include "gemini/network.hpp"
#include "gemini/search.hpp"
#include "support/error.hpp"

using namespace cct;

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');) out.push_back(x);
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: bench_dse SPACE FIR[,FIR...] POINT[,POINT...] [--no-full]\n");
    return 2;
  }
  const bool full = !(argc > 4 && std::string(argv[4]) == "--no-full");
  try {
    dse::Sweep s = dse::prepare_sweep(argv[1], split(argv[2]), true);
    const gemini::Objective obj = dse::mapping_objective(s.space.objective);
    std::printf("%-6s %-32s %-10s %12s %12s %9s %5s %8s\n", "point", "network", "search", "cycles", "energy_uJ",
                "edp/full", "segs", "seconds");
    std::printf("(cores: cores used by the plan; layers/seg: the longest segment)\n");
    for (const std::string& ps : split(argv[3])) {
      const dse::DesignPoint& p = s.points.at(size_t(std::stoi(ps)));
      const arch::Architecture a = dse::point_architecture(p, s.base, s.table);
      for (size_t i = 0; i < s.networks.size(); ++i) {
        gemini::Network net = gemini::build_network(s.graphs[i], a, s.networks[i].fir);
        gemini::CostModel model(net, a);
        struct Row {
          const char* name;
          gemini::Plan plan;
          double seconds;
        };
        std::vector<Row> rows;
        auto t0 = std::chrono::steady_clock::now();
        gemini::Plan q = dse::quick_plan(model, obj);
        rows.push_back({"quick", q, seconds_since(t0)});
        t0 = std::chrono::steady_clock::now();
        gemini::Plan seq = gemini::sequential_plan(model, obj);
        rows.push_back({"sequential", seq, seconds_since(t0)});
        double full_edp = 0;
        if (full) {
          gemini::SearchOptions so;
          so.objective = obj;
          t0 = std::chrono::steady_clock::now();
          gemini::Plan f = gemini::search(model, so).plan;
          rows.push_back({"full", f, seconds_since(t0)});
          gemini::PlanCost c = model.evaluate(f, false);
          full_edp = double(c.cycles) * c.energy.total();
        }
        for (const Row& r : rows) {
          gemini::PlanCost c = model.evaluate(r.plan, false);
          const double edp = double(c.cycles) * c.energy.total();
          size_t longest = 0;
          for (const auto& sp : r.plan.segments) longest = std::max(longest, sp.layers.size());
          std::printf("%-6d %-32s %-10s %12lld %12.1f %9.3f %5zu %8.2f  cores %d layers/seg %zu\n", p.index,
                      s.networks[i].name.c_str(), r.name, (long long)c.cycles, c.energy.total() * 1e-6,
                      full ? edp / full_edp : 0.0, r.plan.segments.size(), r.seconds, c.cores_used, longest);
        }
      }
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_dse: %s\n", e.what());
    return e.code();
  }
  return 0;
}
