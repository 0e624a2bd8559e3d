// Core numbering, hops, die crossings and routes on the presets and on a
// larger hand-built chip.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "arch/arch.hpp"
#include "support/error.hpp"

using namespace cct::arch;

TEST_CASE("core ids map to (die, x, y) and back") {
  Architecture c = load_architecture("chip-64tops");
  int compute0 = c.die_index("compute0"), compute1 = c.die_index("compute1");
  REQUIRE(compute0 >= 0);
  REQUIRE(compute1 >= 0);
  // Compute dies in file order, row-major inside each mesh.
  CHECK(c.core_id(compute0, 0, 0) == 0);
  CHECK(c.core_id(compute0, 1, 0) == 1);
  CHECK(c.core_id(compute0, 0, 1) == 2);
  CHECK(c.core_id(compute1, 0, 0) == 4);
  CHECK(c.core_id(compute1, 1, 1) == 7);
  CHECK(c.core_id(c.die_index("io"), 0, 0) == -1);
  CHECK(c.core_id(compute0, 2, 0) == -1);
  for (int id = 0; id < c.core_count(); ++id) {
    CoreLocation l = c.core_location(id);
    CHECK(c.core_id(l.die, l.x, l.y) == id);
  }
  CHECK_THROWS_AS(c.core_location(8), cct::Error);
  CHECK_THROWS_AS(c.core_location(-1), cct::Error);
  CHECK_THROWS_AS(c.dram_site(4), cct::Error);
  CHECK(c.valid_core(7));
  CHECK(!c.valid_core(8));
}

TEST_CASE("hops and crossings on chip-64tops") {
  Architecture c = load_architecture("chip-64tops");
  // Same die: Manhattan distance, no crossing.
  CHECK(c.hops(0, 0) == 0);
  CHECK(c.hops(0, 3) == 2);
  CHECK(c.d2d_crossings(0, 3) == 0);
  CHECK(!c.different_dies(0, 3));
  // compute0 (1,0) is wired to compute1 (0,0): one crossing, no hop.
  CHECK(c.different_dies(1, 4));
  CHECK(c.core_route(1, 4).mesh_hops == 0);
  CHECK(c.core_route(1, 4).d2d_crossings == 1);
  // compute0 (0,0) -> compute1 (1,1): either link costs 3 hops in all
  // (1 + 2 by the top link, 2 + 1 by the bottom one).
  RouteSummary r = c.core_route(0, 7);
  CHECK(r.d2d_crossings == 1);
  CHECK(r.mesh_hops == 3);
  CHECK(c.route_latency_cycles(r) == doctest::Approx(3 * c.noc.hop_latency_cycles + c.d2d.latency_cycles));
  // compute0 (0,1) -> compute1 (0,1): the bottom link, 1 hop to its port.
  CHECK(c.core_route(2, 6).mesh_hops == 1);
  // Symmetric.
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) {
      CHECK(c.core_route(a, b).mesh_hops == c.core_route(b, a).mesh_hops);
      CHECK(c.core_route(a, b).d2d_crossings == c.core_route(b, a).d2d_crossings);
    }
  // DRAM sits on the IO die: one crossing from every core; the bottom-row
  // cores hold the IO ports.
  for (int ch = 0; ch < 4; ++ch) {
    CHECK(c.dram_route(0, ch).d2d_crossings == 1);
    CHECK(c.dram_route(0, ch).mesh_hops == 1);
    CHECK(c.dram_route(2, ch).mesh_hops == 0);
    CHECK(c.dram_route(7, ch).mesh_hops == 0);
  }
  // A crossing costs more than an on-die hop.
  CHECK(c.route_latency_cycles(c.core_route(1, 4)) > c.route_latency_cycles(c.core_route(0, 1)));
}

TEST_CASE("route legs agree with the summary") {
  Architecture c = load_architecture("chip-64tops");
  std::vector<RouteLeg> legs;
  for (int a = 0; a < c.core_count(); ++a)
    for (int b = 0; b < c.core_count(); ++b) {
      c.route_legs(c.core_site(a), c.core_site(b), legs);
      RouteSummary r = c.core_route(a, b);
      int hops = 0, links = 0;
      for (size_t i = 0; i < legs.size(); ++i) {
        hops += legs[i].hops();
        if (i + 1 < legs.size()) {
          REQUIRE(legs[i].link >= 0);
          ++links;
          // The leg ends at the link's port on its die; the next leg starts at the other end.
          const D2dLink& l = c.d2d_links[size_t(legs[i].link)];
          const Site& here = l.end[0].die == legs[i].die ? l.end[0] : l.end[1];
          const Site& there = l.end[0].die == legs[i].die ? l.end[1] : l.end[0];
          CHECK(here == Site{legs[i].die, legs[i].to_x, legs[i].to_y});
          CHECK(there == Site{legs[i + 1].die, legs[i + 1].from_x, legs[i + 1].from_y});
        } else {
          CHECK(legs[i].link == -1);
        }
      }
      CHECK(hops == r.mesh_hops);
      CHECK(links == r.d2d_crossings);
    }
  // DRAM reads leave the IO die by the port nearest the reading core.
  c.route_legs(c.dram_site(0), c.core_site(3), legs);
  REQUIRE(legs.size() == 2);
  CHECK(legs[1].die == c.die_index("compute0"));
  CHECK(legs[1].hops() == 0);
}

TEST_CASE("single core preset") {
  Architecture z = load_architecture("zebu-1core");
  CHECK(z.core_count() == 1);
  CHECK(z.hops(0, 0) == 0);
  CHECK(z.dram_route(0, 0).mesh_hops == 0);
  CHECK(z.dram_route(0, 0).d2d_crossings == 0);
}

TEST_CASE("a chain of dies routes through the middle one") {
  // Three 4x4 compute dies in a row, with an IO die on the first; built in code.
  Architecture a = load_architecture("zebu-1core");
  a.name = "chain";
  a.dies.clear();
  a.dies.push_back({"io", DieKind::Io, 0, 1, 0, 0, 0});
  for (int i = 0; i < 3; ++i) a.dies.push_back({"c" + std::to_string(i), DieKind::Compute, i, 0, 4, 4, 0});
  a.d2d_links = {D2dLink{{Site{1, 3, 1}, Site{2, 0, 1}}}, D2dLink{{Site{2, 3, 2}, Site{3, 0, 2}}},
                 D2dLink{{Site{0, 0, 0}, Site{1, 0, 3}}}};
  a.dram_channels = {DramChannel{Site{0, 0, 0}}, DramChannel{Site{3, 3, 3}}};
  a.finalize("chain");
  CHECK(a.core_count() == 48);
  int first = a.core_id(1, 0, 0), last = a.core_id(3, 3, 3);
  CHECK(first == 0);
  CHECK(last == 47);
  RouteSummary r = a.core_route(first, last);
  CHECK(r.d2d_crossings == 2);
  // (0,0)->(3,1): 4 hops; (0,1)->(3,2): 4 hops; (0,2)->(3,3): 4 hops.
  CHECK(r.mesh_hops == 12);
  // The DRAM channel wired into the last die: from there, the IO channel is 3 crossings away.
  CHECK(a.dram_route(last, 1).d2d_crossings == 0);
  CHECK(a.dram_route(last, 0).d2d_crossings == 3);
}

TEST_CASE("link resources: one per directed NoC link and D2D direction, routes charge what they cross") {
  Architecture c = load_architecture("chip-64tops");
  const int first = 3;
  LinkResources links(c, first);
  std::vector<double> capacity;
  links.append_capacities(capacity);
  int mesh_links = 0;
  for (const auto& d : c.dies)
    if (d.is_compute()) mesh_links += d.core_count() * 4;
  CHECK(links.d2d_base() == first + mesh_links);
  CHECK(links.end() == links.d2d_base() + int(c.d2d_links.size()) * 2);
  CHECK(int(capacity.size()) == links.end() - first);
  CHECK(capacity.front() == c.noc.link_bytes_per_cycle);
  CHECK(capacity.back() == c.d2d.link_bytes_per_cycle);
  std::vector<RouteLeg> scratch;
  for (int a = 0; a < c.core_count(); ++a)
    for (int b = 0; b < c.core_count(); ++b) {
      CAPTURE(a);
      CAPTURE(b);
      std::vector<int> res;
      RouteSummary s;
      links.append_route(c.core_site(a), c.core_site(b), res, s, scratch);
      RouteSummary want = c.core_route(a, b);
      CHECK(s.mesh_hops == want.mesh_hops);
      CHECK(s.d2d_crossings == want.d2d_crossings);
      int d2d = 0;
      for (int r : res) {
        CHECK(r >= first);
        CHECK(r < links.end());
        d2d += r >= links.d2d_base();
      }
      CHECK(d2d == want.d2d_crossings);
      // Every hop on a compute die occupies one link; the two directions of a link differ.
      if (a != b) {
        std::vector<int> back;
        RouteSummary sb;
        links.append_route(c.core_site(b), c.core_site(a), back, sb, scratch);
        for (int r : back)
          if (r >= links.d2d_base()) CHECK(std::find(res.begin(), res.end(), r) == res.end());
      }
    }
}

TEST_CASE("multicast routes: the union of the unicast routes, each link once") {
  for (const char* name : {"chip-64tops", "chip-6x6-2x2"}) {
    CAPTURE(name);
    Architecture c = load_architecture(name);
    LinkResources links(c, 1);
    std::vector<RouteLeg> scratch;
    const Site dram = c.dram_site(0);
    auto unicast = [&](int core) {
      std::vector<int> res;
      RouteSummary s;
      links.append_route(dram, c.core_site(core), res, s, scratch);
      return res;
    };
    // One destination: the unicast route's links and length.
    for (int core = 0; core < c.core_count(); ++core) {
      std::vector<int> res;
      RouteSummary s;
      const Site to[] = {c.core_site(core)};
      links.append_multicast_route(dram, to, res, s, scratch);
      std::vector<int> want = unicast(core);
      std::sort(want.begin(), want.end());
      CHECK(res == want);
      RouteSummary u = c.route(dram, c.core_site(core));
      CHECK(s.mesh_hops == u.mesh_hops);
      CHECK(s.d2d_crossings == u.d2d_crossings);
    }
    // Every core: each link of any unicast route once, no other link.
    std::vector<Site> all;
    std::vector<int> want;
    int unicast_links = 0;
    for (int core = 0; core < c.core_count(); ++core) {
      all.push_back(c.core_site(core));
      std::vector<int> u = unicast(core);
      unicast_links += int(u.size());
      want.insert(want.end(), u.begin(), u.end());
    }
    std::sort(want.begin(), want.end());
    want.erase(std::unique(want.begin(), want.end()), want.end());
    std::vector<int> res;
    RouteSummary s;
    links.append_multicast_route(dram, all, res, s, scratch);
    CHECK(res == want);
    CHECK(s.mesh_hops + s.d2d_crossings == int(res.size()));
    CHECK(int(res.size()) < unicast_links);  // shared links are charged once
    int d2d = 0;
    for (int r : res) d2d += r >= links.d2d_base();
    CHECK(s.d2d_crossings == d2d);
  }
}
