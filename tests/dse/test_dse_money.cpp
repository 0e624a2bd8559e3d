// The money model against figures worked out by hand from
// examples/dse/cost_model.json (the arithmetic is in the comments; a pocket
// calculator reproduces every line).
#include <doctest/doctest.h>

#include <cmath>

#include "arch/arch.hpp"
#include "dse/money.hpp"
#include "dse/space.hpp"
#include "support/error.hpp"
#include "support/io.hpp"
#include "testing.hpp"

using namespace cct;
using namespace cct::dse;

namespace {

CostTable table() { return load_cost_table(testing::source_dir() + "/examples/dse/cost_model.json"); }

DesignPoint point(int dies, int mesh, int pe, int64_t l2_kib, double d2d, const char* dram, int channels,
                  const char* package) {
  DesignPoint p;
  p.compute_dies = dies;
  p.mesh_x = p.mesh_y = mesh;
  p.pe_rows = p.pe_cols = pe;
  p.l2_kib = l2_kib;
  p.noc_bytes_per_cycle = 32;
  p.d2d_bytes_per_cycle = d2d;
  p.io_links_per_die = 2;
  p.dram_type = dram;
  p.dram_channels = channels;
  p.package = package;
  return p;
}

}  // namespace

TEST_CASE("design A: one 2x2 die, 32x32 PEs, 2 MiB L2, 2 LPDDR5 channels, organic substrate") {
  const CostTable t = table();
  const DesignPoint p = point(1, 2, 32, 2048, 16, "lpddr5", 2, "organic");
  const arch::Architecture a = point_architecture(p, arch::load_architecture("chip-64tops"), t);
  const DesignFigures f = point_figures(p, a, t);
  // Core: 1024 MACs x 0.0004 = 0.4096 mm2
  //   SRAM 2048 KiB L2 + 32 KiB WL0 + 4 KiB AL1 + 8 KiB OL1 = 2142208 B = 2.04296875 MiB x 0.5 = 1.021484375 mm2
  //   logic 0.35 mm2, router 32 B/cycle x 0.004 = 0.128 mm2
  //   core = 0.4096 + 1.021484375 + 0.35 + 0.128 = 1.909084375 mm2
  // D2D PHY: 16 B/cycle x 1 GHz = 16 GB/s x 0.008 = 0.128 mm2 per link end.
  // Compute die: 4 cores = 7.6363375 mm2 + 2 link ends to the IO die (0.256) = 7.8923375 mm2
  CHECK(f.compute_die_mm2 == doctest::Approx(7.8923375).epsilon(1e-12));
  // IO die: 8 mm2 base + 2 LPDDR5 PHYs x 2.0 + 2 link ends x 0.128 = 12.256 mm2
  CHECK(f.io_die_mm2 == doctest::Approx(12.256).epsilon(1e-12));
  const DesignCost c = price_design(f, t);
  // Compute die on N7: side sqrt(7.8923375) + 0.1 scribe, squared = 8.46420359 mm2; r = 150 - 3 = 147 mm
  //   DPW = pi 147^2 / 8.46420359 - 2 pi 147 / sqrt(2 x 8.46420359) = 8020.44456 - 224.48594 = 7795.96 -> 7795
  CHECK(c.compute_dies_per_wafer == 7795);
  //   yield = (1 + 0.078923375 cm2 x 0.09 / 3)^-3 = 0.99293040
  CHECK(c.compute_die_yield == doctest::Approx(0.9929304000).epsilon(1e-9));
  //   known-good die = 9346 / 7795 / 0.99293040 = $1.20751032
  CHECK(c.compute_die_usd == doctest::Approx(1.2075103160).epsilon(1e-9));
  // IO die on N12: side^2 = (sqrt(12.256) + 0.1)^2 = 12.96617141 mm2
  //   DPW = 5235.67625 - 181.37454 = 5054.30 -> 5054; yield (1 + 0.12256 x 0.07 / 3)^-3 = 0.99146964
  //   known-good die = 3984 / 5054 / 0.99146964 = $0.79506873
  CHECK(c.io_dies_per_wafer == 5054);
  CHECK(c.io_die_usd == doctest::Approx(0.7950687318).epsilon(1e-9));
  // No interposer. Silicon 7.8923375 + 12.256 = 20.1483375 mm2;
  //   substrate 0.01 $/mm2 x 4 x 20.1483375 = $0.80593350; assembly $1.00
  //   assembly yield 0.99^2 (two dies bonded) = 0.9801
  //   package = (1.20751032 + 0.79506873 + 0.80593350 + 1.00) / 0.9801 = $3.88584078
  CHECK(c.interposer_usd == 0);
  CHECK(c.silicon_mm2 == doctest::Approx(20.1483375).epsilon(1e-12));
  CHECK(c.assembly_yield == doctest::Approx(0.9801).epsilon(1e-12));
  CHECK(c.package_usd == doctest::Approx(3.8858407792).epsilon(1e-9));
  // DRAM: 2 channels x 23.8 GiB/s x 1.073741824 GB/GiB = 51.1101108 GB/s x $1.2 = $61.33213299
  CHECK(c.dram_usd == doctest::Approx(61.3321329869).epsilon(1e-9));
  // Total $65.21797377
  CHECK(c.total_usd == doctest::Approx(65.2179737661).epsilon(1e-9));
}

TEST_CASE("design B: four 3x3 dies, 64x64 PEs, 8 MiB L2, 4 HBM2e channels, silicon interposer") {
  const CostTable t = table();
  const DesignPoint p = point(4, 3, 64, 8192, 32, "hbm2e", 4, "interposer");
  const arch::Architecture a = point_architecture(p, arch::load_architecture("chip-64tops"), t);
  const DesignFigures f = point_figures(p, a, t);
  // Core: 4096 x 0.0004 = 1.6384; SRAM (8388608 + 45056) B = 8.04296875 MiB x 0.5 = 4.021484375;
  //   + 0.35 + 0.128 = 6.137884375 mm2
  // D2D PHY: 32 GB/s x 0.008 = 0.256 mm2 per link end. The dies sit 2x2; each has 3 links to its
  //   horizontal neighbour (one per core row), 3 to its vertical one (one per core column) and 2 to
  //   the IO die: 8 link ends.
  // Compute die: 9 x 6.137884375 + 8 x 0.256 = 55.240959375 + 2.048 = 57.288959375 mm2
  CHECK(f.compute_die_mm2 == doctest::Approx(57.288959375).epsilon(1e-12));
  // IO die: 8 + 4 HBM2e PHYs x 1.5 + 4 dies x 2 link ends x 0.256 = 8 + 6 + 2.048 = 16.048 mm2
  CHECK(f.io_die_mm2 == doctest::Approx(16.048).epsilon(1e-12));
  const DesignCost c = price_design(f, t);
  // Compute die: side^2 = (sqrt(57.288959375) + 0.1)^2 = 58.81274878 mm2
  //   DPW = 1154.28503 - 85.16212 = 1069.12 -> 1069; yield (1 + 0.57288959 x 0.09 / 3)^-3 = 0.95016274
  //   known-good die = 9346 / 1069 / 0.95016274 = $9.20131873
  CHECK(c.compute_dies_per_wafer == 1069);
  CHECK(c.compute_die_yield == doctest::Approx(0.9501627415).epsilon(1e-9));
  CHECK(c.compute_die_usd == doctest::Approx(9.2013187337).epsilon(1e-9));
  // IO die: side^2 = 16.85919910; DPW = 4026.68450 - 159.06101 = 3867.62 -> 3867;
  //   yield (1 + 0.16048 x 0.07 / 3)^-3 = 0.98885001; KGD = 3984 / 3867 / 0.98885001 = $1.04187289
  CHECK(c.io_dies_per_wafer == 3867);
  CHECK(c.io_die_usd == doctest::Approx(1.0418728877).epsilon(1e-9));
  // Silicon 4 x 57.288959375 + 16.048 = 245.2038375 mm2
  // Interposer 1.1 x 245.2038375 = 269.72422125 mm2 on the 65 nm wafer: side^2 = 273.01887783;
  //   DPW = 248.65195 - 39.52627 = 209.13 -> 209; yield (1 + 2.6972422 x 0.05 / 3)^-3 = 0.87641224
  //   KGD = 1937 / 209 / 0.87641224 = $10.57486663 (an interposer is never free)
  CHECK(c.interposer_mm2 == doctest::Approx(269.72422125).epsilon(1e-12));
  CHECK(c.interposer_dies_per_wafer == 209);
  CHECK(c.interposer_usd == doctest::Approx(10.5748666321).epsilon(1e-9));
  // Substrate 0.01 x 4 x 245.2038375 = $9.80815350; assembly $5
  // Bonds: 4 compute + 1 IO + the interposer = 6; yield 0.98^6 = 0.88584238
  // Package = (4 x 9.20131873 + 1.04187289 + 10.57486663 + 9.80815350 + 5) / 0.88584238
  //         = 63.23016796 / 0.88584238 = $71.37857628
  CHECK(c.assembly_yield == doctest::Approx(0.885842380864).epsilon(1e-12));
  CHECK(c.package_usd == doctest::Approx(71.3785762804).epsilon(1e-9));
  // DRAM: 4 x 47.7 GiB/s x 1.073741824 = 204.8699400 GB/s x $0.4 = $81.94797601
  CHECK(c.dram_usd == doctest::Approx(81.9479760077).epsilon(1e-9));
  // Total $153.32655229
  CHECK(c.total_usd == doctest::Approx(153.326552288).epsilon(1e-9));
}

TEST_CASE("a larger die yields worse and costs more per mm2; more dies per wafer for smaller dies") {
  const CostTable t = table();
  CHECK(die_yield(t.compute_process, 400) < die_yield(t.compute_process, 100));
  CHECK(dies_per_wafer(t.compute_process, 100) > 4 * dies_per_wafer(t.compute_process, 400));
  CHECK(known_good_die_usd(t.compute_process, 400) / 400 > known_good_die_usd(t.compute_process, 100) / 100);
  // Prices are never truncated to whole dollars: a tiny die costs cents.
  CHECK(known_good_die_usd(t.compute_process, 1) < 1.0);
  CHECK(known_good_die_usd(t.compute_process, 1) > 0.0);
  CHECK_THROWS_AS(known_good_die_usd(t.compute_process, 80000), Error);
}

TEST_CASE("cost table checks: no free interposer, no zero-energy DRAM, names the JSON pointer") {
  std::string text = testing::read_file(testing::source_dir() + "/examples/dse/cost_model.json");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = text;
    size_t at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  auto error_of = [](const std::string& s) {
    try {
      parse_cost_table(s, "cost.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // The schema refuses zero prices and energies outright.
  CHECK(error_of(with("\"pj_per_bit\": 3.9", "\"pj_per_bit\": 0")) != "");
  CHECK(error_of(with("\"wafer_usd\": 1937.0", "\"wafer_usd\": 0")) != "");
  // A die-sized or missing interposer in the interposer package.
  std::string e = error_of(with("\"interposer_area_factor\": 1.1", "\"interposer_area_factor\": 0.0"));
  CHECK(e.find("/packages/interposer/interposer_area_factor") != std::string::npos);
  e = error_of(with("\"interposer_area_factor\": 1.1", "\"interposer_area_factor\": 0.5"));
  CHECK(e.find("at least as large") != std::string::npos);
  e = error_of(with("\"packages\": [\"interposer\"]", "\"packages\": [\"cowos\"]"));
  CHECK(e.find("/dram_types/hbm2e/packages/0") != std::string::npos);
  // Without the schema, the reader's own checks still refuse a zero-energy DRAM.
  try {
    parse_cost_table(with("\"pj_per_bit\": 3.9", "\"pj_per_bit\": 0"), "cost.json", false);
    FAIL("accepted a zero-energy DRAM type");
  } catch (const Error& err) {
    CHECK(std::string(err.what()).find("/dram_types/hbm2e/pj_per_bit") != std::string::npos);
  }
}
