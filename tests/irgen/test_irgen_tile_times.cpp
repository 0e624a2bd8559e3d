// Issue 6: the tile times irgen predicts (tile_info single_tile_time_pred)
// agree with the times zebusim measures for the instructions asm writes from
// those tiles, within 5% in the median, on the reference networks compiled
// for the emulated core and on a layer pipeline over chip-64tops.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "arch/arch.hpp"
#include "asm/asm.hpp"
#include "fir/fir.hpp"
#include "irgen/irgen.hpp"
#include "irgen_test_util.hpp"
#include "sim/sim.hpp"
#include "testing.hpp"

namespace {

using namespace cct;

struct Agreement {
  size_t tiles = 0;
  double median_ape = 0, p90_ape = 0;  // absolute percentage error of the prediction
};

// Sums the measured durations of the compute instructions (pe_conv, vp_self,
// vp_pool) of each (workload, tile) and compares them with the prediction.
Agreement agreement(const fir::Graph& g, const mapping::Mapping& m, const arch::Architecture& a) {
  sir::Schedule s = irgen::generate(g, m, a);
  isa::Program p = assembler::assemble(s, g, a);
  sim::Result r = sim::simulate(p, a);
  std::map<std::pair<int64_t, int64_t>, int64_t> measured;
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const auto& in = p.instructions[i];
    isa::Opcode op = in.op();
    if (op != isa::Opcode::pe_conv && op != isa::Opcode::vp_self && op != isa::Opcode::vp_pool) continue;
    measured[{in.mapping.wkl, in.mapping.tile}] += r.timing[i].duration();
  }
  std::vector<double> ape;
  for (const auto& c : s.cores)
    for (const auto& w : c.workloads)
      for (size_t t = 0; t < w.tile_info.size(); ++t) {
        auto it = measured.find({w.workload_id, int64_t(t)});
        REQUIRE_MESSAGE(it != measured.end(), "no compute instruction for workload " << w.workload_id << " tile " << t);
        double pred = w.tile_info[t].single_tile_time_pred;
        ape.push_back(std::abs(pred - double(it->second)) / double(it->second));
      }
  REQUIRE(!ape.empty());
  std::sort(ape.begin(), ape.end());
  Agreement ag;
  ag.tiles = ape.size();
  ag.median_ape = ape[ape.size() / 2];
  ag.p90_ape = ape[ape.size() * 9 / 10];
  return ag;
}

}  // namespace

TEST_CASE("tile_info predictions agree with zebusim's instruction times within 5% in the median") {
  const arch::Architecture one = arch::load_architecture("zebu-1core");
  const arch::Architecture chip = arch::load_architecture("chip-64tops");
  for (const std::string net : {"resnet34", "resnet50"})
    for (int batch : {1, 4}) {
      CAPTURE(net);
      CAPTURE(batch);
      fir::Graph g = fir::read_fir(testing::reference_dir() + "/gemini-ir/frontend/int8_" + net +
                                   ".sim_quantized_b" + std::to_string(batch) + ".json");
      Agreement single = agreement(g, irgen_test::single_core(g, "zebu-1core"), one);
      MESSAGE(net << " b" << batch << " zebu-1core: " << single.tiles << " tiles, median error "
                  << 100 * single.median_ape << "%, p90 " << 100 * single.p90_ape << "%");
      CHECK(single.median_ape < 0.05);
      if (batch == 4 && net == "resnet50") {
        Agreement piped = agreement(g, irgen_test::pipeline(g, "chip-64tops", chip.core_count(), 2), chip);
        MESSAGE(net << " b" << batch << " chip-64tops pipeline: " << piped.tiles << " tiles, median error "
                    << 100 * piped.median_ape << "%, p90 " << 100 * piped.p90_ape << "%");
        CHECK(piped.median_ape < 0.05);
      }
    }
}
