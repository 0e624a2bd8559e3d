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
  //   SRAM 2048 KiB L2 + 2048 KiB WL0 (32768 rows of 64 B) + 4 KiB AL1 + 8 KiB OL1 = 4206592 B
  //        = 4.01171875 MiB x 0.5 = 2.005859375 mm2
  //   logic 0.35 mm2, router 32 B/cycle x 0.004 = 0.128 mm2
  //   core = 0.4096 + 2.005859375 + 0.35 + 0.128 = 2.893459375 mm2
  // D2D PHY: 16 B/cycle x 1 GHz = 16 GB/s x 0.008 = 0.128 mm2 per link end.
  // Compute die: 4 cores = 11.5738375 mm2 + 2 link ends to the IO die (0.256) = 11.8298375 mm2
  CHECK(f.compute_die_mm2 == doctest::Approx(11.8298375).epsilon(1e-12));
  // IO die: 8 mm2 base + 2 LPDDR5 PHYs x 2.0 + 2 link ends x 0.128 = 12.256 mm2
  CHECK(f.io_die_mm2 == doctest::Approx(12.256).epsilon(1e-12));
  const DesignCost c = price_design(f, t);
  // Compute die on N7: side sqrt(11.8298375) + 0.1 scribe, squared = 12.52772812 mm2; r = 150 - 3 = 147 mm
  //   DPW = pi 147^2 / 12.52772812 - 2 pi 147 / sqrt(2 x 12.52772812) = 5418.91355 - 184.52110 = 5234.39 -> 5234
  CHECK(c.compute_dies_per_wafer == 5234);
  //   yield = (1 + 0.118298375 cm2 x 0.09 / 3)^-3 = 0.98942827
  CHECK(c.compute_die_yield == doctest::Approx(0.9894282720).epsilon(1e-9));
  //   known-good die = 9346 / 5234 / 0.98942827 = $1.80471132
  CHECK(c.compute_die_usd == doctest::Approx(1.8047113208).epsilon(1e-9));
  // IO die on N12: side^2 = (sqrt(12.256) + 0.1)^2 = 12.96617141 mm2
  //   DPW = 5235.67625 - 181.37454 = 5054.30 -> 5054; yield (1 + 0.12256 x 0.07 / 3)^-3 = 0.99146964
  //   known-good die = 3984 / 5054 / 0.99146964 = $0.79506873
  CHECK(c.io_dies_per_wafer == 5054);
  CHECK(c.io_die_usd == doctest::Approx(0.7950687318).epsilon(1e-9));
  // No interposer. Silicon 11.8298375 + 12.256 = 24.0858375 mm2;
  //   substrate 0.01 $/mm2 x 4 x 24.0858375 = $0.96343350; assembly $1.00
  //   assembly yield 0.99^2 (two dies bonded) = 0.9801
  //   package = (1.80471132 + 0.79506873 + 0.96343350 + 1.00) / 0.9801 = $4.65586527
  CHECK(c.interposer_usd == 0);
  CHECK(c.silicon_mm2 == doctest::Approx(24.0858375).epsilon(1e-12));
  CHECK(c.assembly_yield == doctest::Approx(0.9801).epsilon(1e-12));
  CHECK(c.package_usd == doctest::Approx(4.6558652715).epsilon(1e-9));
  // DRAM: 2 channels x 23.8 GiB/s x 1.073741824 GB/GiB = 51.1101108 GB/s x $1.2 = $61.33213299
  CHECK(c.dram_usd == doctest::Approx(61.3321329869).epsilon(1e-9));
  // Total $65.98799826
  CHECK(c.total_usd == doctest::Approx(65.9879982583).epsilon(1e-9));
}

TEST_CASE("design B: four 3x3 dies, 64x64 PEs, 8 MiB L2, 4 HBM2e channels, silicon interposer") {
  const CostTable t = table();
  const DesignPoint p = point(4, 3, 64, 8192, 32, "hbm2e", 4, "interposer");
  const arch::Architecture a = point_architecture(p, arch::load_architecture("chip-64tops"), t);
  const DesignFigures f = point_figures(p, a, t);
  // Core: 4096 x 0.0004 = 1.6384; SRAM 8192 KiB L2 + 2048 KiB WL0 + 12 KiB L1 = 10498048 B
  //   = 10.01171875 MiB x 0.5 = 5.005859375; + 0.35 + 0.128 = 7.122259375 mm2
  // D2D PHY: 32 GB/s x 0.008 = 0.256 mm2 per link end. The dies sit 2x2; each has 3 links to its
  //   horizontal neighbour (one per core row), 3 to its vertical one (one per core column) and 2 to
  //   the IO die: 8 link ends.
  // Compute die: 9 x 7.122259375 + 8 x 0.256 = 64.100334375 + 2.048 = 66.148334375 mm2
  CHECK(f.compute_die_mm2 == doctest::Approx(66.148334375).epsilon(1e-12));
  // IO die: 8 + 4 HBM2e PHYs x 1.5 + 4 dies x 2 link ends x 0.256 = 8 + 6 + 2.048 = 16.048 mm2
  CHECK(f.io_die_mm2 == doctest::Approx(16.048).epsilon(1e-12));
  const DesignCost c = price_design(f, t);
  // Compute die: side^2 = (sqrt(66.148334375) + 0.1)^2 = 67.78496690 mm2
  //   DPW = 1001.50046 - 79.32599 = 922.17 -> 922; yield (1 + 0.66148334 x 0.09 / 3)^-3 = 0.94275344
  //   known-good die = 9346 / 922 / 0.94275344 = $10.75218505
  CHECK(c.compute_dies_per_wafer == 922);
  CHECK(c.compute_die_yield == doctest::Approx(0.9427534390).epsilon(1e-9));
  CHECK(c.compute_die_usd == doctest::Approx(10.7521850534).epsilon(1e-9));
  // IO die: side^2 = 16.85919910; DPW = 4026.68450 - 159.06101 = 3867.62 -> 3867;
  //   yield (1 + 0.16048 x 0.07 / 3)^-3 = 0.98885001; KGD = 3984 / 3867 / 0.98885001 = $1.04187289
  CHECK(c.io_dies_per_wafer == 3867);
  CHECK(c.io_die_usd == doctest::Approx(1.0418728877).epsilon(1e-9));
  // Silicon 4 x 66.148334375 + 16.048 = 280.6413375 mm2
  // Interposer 1.1 x 280.6413375 = 308.70547125 mm2 on the 65 nm wafer: side^2 = 312.22947450;
  //   DPW = 217.42558 - 36.96113 = 180.46 -> 180; yield (1 + 3.0870547 x 0.05 / 3)^-3 = 0.86026647
  //   KGD = 1937 / 180 / 0.86026647 = $12.50904404 (an interposer is never free)
  CHECK(c.interposer_mm2 == doctest::Approx(308.70547125).epsilon(1e-12));
  CHECK(c.interposer_dies_per_wafer == 180);
  CHECK(c.interposer_usd == doctest::Approx(12.5090440416).epsilon(1e-9));
  // Substrate 0.01 x 4 x 280.6413375 = $11.22565350; assembly $5
  // Bonds: 4 compute + 1 IO + the interposer = 6; yield 0.98^6 = 0.88584238
  // Package = (4 x 10.75218505 + 1.04187289 + 12.50904404 + 11.22565350 + 5) / 0.88584238
  //         = 72.78531064 / 0.88584238 = $82.16508062
  CHECK(c.assembly_yield == doctest::Approx(0.885842380864).epsilon(1e-12));
  CHECK(c.package_usd == doctest::Approx(82.1650806232).epsilon(1e-9));
  // DRAM: 4 x 47.7 GiB/s x 1.073741824 = 204.8699400 GB/s x $0.4 = $81.94797601
  CHECK(c.dram_usd == doctest::Approx(81.9479760077).epsilon(1e-9));
  // Total $164.11305663
  CHECK(c.total_usd == doctest::Approx(164.113056631).epsilon(1e-9));
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
