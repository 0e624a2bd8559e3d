// Multicast loads run on data (formats/ISA_Format.md 5b): gemini's plan of
// the tiny ResNet at batch 4 on chip-64tops loads every weight slice on
// several cores; the same program after asm's multicast pass (those loads
// merged into groups) passes asm --check, reads DRAM once per group and
// computes bit for bit what the interpreter computes, every layer golden.
#include <doctest/doctest.h>

#include "../testing/testing.hpp"
#include "asm/asm.hpp"
#include "func_test_util.hpp"
#include "isa/check.hpp"
#include "mapping/mapping.hpp"
#include "sim/sim.hpp"
#include "support/error.hpp"

using namespace cct;


TEST_CASE("multicast weight loads run bit for bit, every layer golden, DRAM read once per group") {
  const auto& c = func_test::tiny(4);
  const auto& a = func_test::arch_named("chip-64tops");
  REQUIRE(a.noc.multicast);
  const std::string dir = testing::temp_dir("func_multicast");
  auto r = testing::run_tool("gemini", "'" + c.fir_path + "' --arch chip-64tops --no-progress -o '" + dir + "/m.json'");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  // Unicast first (asm --no-multicast), then the multicast pass by hand.
  func_test::Built b = func_test::build(c, mapping::read_mapping(dir + "/m.json"), a, dir, false);
  isa::Program mc = b.program;
  const int groups = assembler::merge_multicast_loads(mc, a).groups;
  REQUIRE(groups > 0);
  // asm --check: footprints, configurations, tokens, the groups' rendezvous.
  isa::CheckReport check = assembler::check(mc, a, "mc.asm");
  CHECK_MESSAGE(check.ok(), check.text("mc.asm"));
  const sim::Result unicast = sim::simulate(b.program, a, sim::Options{});
  const sim::Result multicast = sim::simulate(mc, a, sim::Options{});
  CHECK(multicast.stats.dram_read_bytes < unicast.stats.dram_read_bytes);
  CHECK(multicast.stats.energy.dram < unicast.stats.energy.dram);
  CHECK(multicast.stats.macs == unicast.stats.macs);
  MESSAGE(groups << " multicast groups: DRAM read " << unicast.stats.dram_read_bytes << " -> "
                 << multicast.stats.dram_read_bytes << " bytes, cycles " << unicast.stats.total_cycles << " -> "
                 << multicast.stats.total_cycles);
  func::Result fr = func_test::run(c, b, mc, func_test::retime(mc, a), a, true);
  REQUIRE(fr.outputs.size() == c.outputs.size());
  for (size_t i = 0; i < fr.outputs.size(); ++i) CHECK(func_test::same_bits(fr.outputs[i].tensor, c.outputs[i]));
  int64_t npu = 0;
  for (const auto& l : c.graph.layers()) npu += l.device == fir::Device::Npu;
  CHECK(fr.layers_checked == npu);
  // The same program on the chip without multicast is refused, by the check and the timing run.
  arch::Architecture plain = a;
  plain.noc.multicast = false;
  CHECK_THROWS_WITH_AS(assembler::check(mc, plain, "mc.asm"), doctest::Contains("noc.multicast"), Error);
  CHECK_THROWS_WITH_AS(sim::simulate(mc, plain, sim::Options{}), doctest::Contains("noc.multicast"), Error);
}
