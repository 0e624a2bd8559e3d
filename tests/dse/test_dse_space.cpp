// The design space: reading, numbering points, their architectures.
#include <doctest/doctest.h>

#include "arch/arch.hpp"
#include "dse/space.hpp"
#include "support/error.hpp"
#include "testing.hpp"

using namespace cct;
using namespace cct::dse;

namespace {

std::string small_space() { return testing::source_dir() + "/tests/dse/small_space.json"; }

std::string error_of(const std::string& text) {
  try {
    DesignSpace s = parse_design_space(text, "space.json");
    (void)s.points(load_cost_table(testing::source_dir() + "/examples/dse/cost_model.json"));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("points: the cartesian product in a fixed order, unbuildable DRAM/package pairs left out") {
  DesignSpace s = load_design_space(small_space());
  CostTable t = load_cost_table(s.cost_model);
  auto pts = s.points(t);
  // 2 dies x 2 meshes x 2 channel counts x (lpddr5: organic, interposer; hbm2e: interposer) = 24
  REQUIRE(pts.size() == 24);
  for (size_t i = 0; i < pts.size(); ++i) CHECK(pts[i].index == int(i));
  CHECK(pts[0].key() == "dies=1 mesh=1x2 pe=64x64 l2_kib=8192 noc=32 d2d=32 io_links=2 dram=lpddr5*1 package=organic");
  CHECK(pts[1].package == "interposer");
  CHECK(pts[2].dram_channels == 2);
  CHECK(pts[4].dram_type == "hbm2e");
  CHECK(pts[4].package == "interposer");
  CHECK(pts.back().key() == "dies=2 mesh=2x2 pe=64x64 l2_kib=8192 noc=32 d2d=32 io_links=2 dram=hbm2e*2 package=interposer");
  for (const auto& p : pts) CHECK(!(p.dram_type == "hbm2e" && p.package == "organic"));
  CHECK(s.objective == Objective::LatencyPerDollar);
  CHECK(s.quick_search);
}

TEST_CASE("multicast as a parameter: varies fastest, named in the keys, set in the point's architecture") {
  std::string text = testing::read_file(small_space());
  const std::string last = R"("package": ["organic", "interposer"])";
  REQUIRE(text.find(last) != std::string::npos);
  text.replace(text.find(last), last.size(), last + R"(, "multicast": [false, true])");
  DesignSpace s = parse_design_space(text, testing::source_dir() + "/tests/dse/space.json");
  CostTable t = load_cost_table(s.cost_model);
  auto pts = s.points(t);
  REQUIRE(pts.size() == 48);
  CHECK(pts[0].key() ==
        "dies=1 mesh=1x2 pe=64x64 l2_kib=8192 noc=32 d2d=32 io_links=2 dram=lpddr5*1 package=organic multicast=0");
  CHECK(pts[1].key() ==
        "dies=1 mesh=1x2 pe=64x64 l2_kib=8192 noc=32 d2d=32 io_links=2 dram=lpddr5*1 package=organic multicast=1");
  const arch::Architecture base = arch::load_architecture("chip-64tops");
  REQUIRE(base.noc.multicast);
  CHECK_FALSE(point_architecture(pts[0], base, t).noc.multicast);
  CHECK(point_architecture(pts[1], base, t).noc.multicast);
  // Left out: the base architecture's value, either way.
  auto plain = load_design_space(small_space()).points(t);
  CHECK_FALSE(plain[0].multicast.has_value());
  CHECK(point_architecture(plain[0], base, t).noc.multicast);
  arch::Architecture unicast = base;
  unicast.noc.multicast = false;
  CHECK_FALSE(point_architecture(plain[0], unicast, t).noc.multicast);
  CHECK(error_of(R"({"format": "cct-dse-space", "version": 1, "name": "x", "base_arch": "chip-64tops",
    "cost_model": "c.json", "parameters": {"compute_dies": [1], "mesh": [[2, 2]], "pe_array": [[64, 64]],
    "l2_kib": [8192], "noc_bytes_per_cycle": [32], "d2d_bytes_per_cycle": [32], "io_links_per_die": [2],
    "dram_type": ["lpddr5"], "dram_channels": [4], "package": ["organic"], "multicast": ["yes"]}})")
            .find("multicast") != std::string::npos);
}

TEST_CASE("a point's architecture: dies, links, channels, constants from the point and the cost table") {
  DesignSpace s = load_design_space(small_space());
  CostTable t = load_cost_table(s.cost_model);
  const arch::Architecture base = arch::load_architecture("chip-64tops");
  auto pts = s.points(t);
  const arch::Architecture a = point_architecture(pts.back(), base, t);
  CHECK(a.core_count() == 8);
  CHECK(a.dies.size() == 3);
  // 2 links between the dies (one per core row) + 2 per die to the IO die.
  CHECK(a.d2d_links.size() == 6);
  CHECK(a.dram_channels.size() == 2);
  CHECK(a.dram.channel_gib_per_s == t.dram_types.at("hbm2e").channel_gib_per_s);
  CHECK(a.energy.dram_pj_per_bit == t.dram_types.at("hbm2e").pj_per_bit);
  CHECK(a.energy.d2d_pj_per_bit == t.packages.at("interposer").d2d_pj_per_bit);
  CHECK(a.core.l2_bytes == 8192 * 1024);
  // Every core reaches every other and the DRAM.
  for (int c = 0; c < a.core_count(); ++c) CHECK(a.dram_route(c, 0).d2d_crossings >= 1);
  CHECK(a.d2d_crossings(0, 7) == 1);
  // Four dies make a 2x2 grid; five a 3-column grid with a gap.
  DesignPoint p = pts.back();
  for (int dies : {3, 4, 5, 9}) {
    p.compute_dies = dies;
    const arch::Architecture b = point_architecture(p, base, t);
    CHECK(b.core_count() == 4 * dies);
    for (int c = 0; c < b.core_count(); ++c) CHECK(b.valid_core(c));
    CHECK(b.d2d_crossings(0, b.core_count() - 1) >= 1);
  }
}

TEST_CASE("space errors name the JSON pointer") {
  std::string text = testing::read_file(small_space());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = text;
    size_t at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  CHECK(error_of(with("\"compute_dies\": [1, 2]", "\"compute_dies\": [0]")).find("/parameters/compute_dies") !=
        std::string::npos);
  CHECK(error_of(with("\"package\": [\"organic\", \"interposer\"]", "\"package\": [\"wirebond\"]")).find("wirebond") !=
        std::string::npos);
  CHECK(error_of(with("\"objective\": \"latency_per_dollar\"", "\"objective\": \"speed\"")) != "");
  CHECK(error_of(with("{\"from\": 1, \"to\": 2, \"step\": 1}", "{\"from\": 1, \"to\": 2}")) != "");
  CHECK(error_of(with("\"cct-dse-space\"", "\"cct-arch\"")) != "");
  CHECK(error_of(text) == "");
  // Geometric ranges.
  DesignSpace s = parse_design_space(with("[8192]", "{\"from\": 1024, \"to\": 8192, \"times\": 2}"), "space.json");
  CHECK(s.l2_kib == std::vector<int64_t>{1024, 2048, 4096, 8192});
}
