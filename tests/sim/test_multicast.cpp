// Multicast loads (formats/ISA_Format.md 5b): one DRAM read reaching several
// cores, in the untimed checker and in the timing run.
#include <doctest/doctest.h>

#include <string>

#include "arch/arch.hpp"
#include "isa/check.hpp"
#include "programs.hpp"
#include "sim/sim.hpp"
#include "support/error.hpp"
#include "testing.hpp"

using namespace cct;
using cct::testing::deps;
using cct::testing::line;
using cct::testing::parse;

namespace {

const std::string kWeights = "\"Wsize\": [64, 64, 3, 3]";

// A member of group `tag` on `core`: ldw_mc (weights to L2 at `dst`) or
// lw_mc (to WL0 row `dst`), with its configuration.
std::string member(int core, int tag, int members, bool to_wl0, long dst = 0, long src = 4096,
                   const std::string& prev = "", const std::string& next = "") {
  const std::string shape = "\"SWsize\": [64, 3, 3], \"DWsize\": [64, 3, 3]";
  const std::string group = "\"TAG\": " + std::to_string(tag) + ", \"MEMBERS\": " + std::to_string(members) + ", ";
  if (to_wl0)
    return line("lw_cfg", "\"BAS\": 0, \"DF\": \"DataFmt.INT8\", \"MKC\": 0, \"MKEN\": 0, " + shape, core) +
           line("lw_mc", group + "\"XYmode\": [\"XCutMode.CUT_K\", \"YCutMode.CUT_H\"], \"SBSG\": 0, \"STaddr\": " +
                             std::to_string(src) + ", \"DTaddr\": " + std::to_string(dst) + ", " + kWeights + ", " +
                             deps(prev, next),
                core);
  return line("ldw_cfg", "\"RS\": 1, \"BAS\": 0, \"DF\": \"DataFmt.INT8\", \"MKC\": 0, \"MKEN\": 0, " + shape, core) +
         line("ldw_mc", group + "\"RS\": 1, \"DBSG\": 0, \"STaddr\": " + std::to_string(src) + ", \"DTaddr\": " +
                           std::to_string(dst) + ", " + kWeights + ", " + deps(prev, next),
              core);
}

// The same weights by a unicast ldw_mov.
std::string unicast(int core) {
  return line("ldw_cfg", "\"RS\": 1, \"BAS\": 0, \"DF\": \"DataFmt.INT8\", \"MKC\": 0, \"MKEN\": 0, "
                         "\"SWsize\": [64, 3, 3], \"DWsize\": [64, 3, 3]",
              core) +
         line("ldw_mov", "\"RS\": 1, \"DBSG\": 0, \"STaddr\": 4096, \"DTaddr\": 0, " + kWeights + ", " + deps("", ""), core);
}

sim::Result run(const std::string& text, const arch::Architecture& a) {
  sim::Options o;
  o.file = "t.jsonl";
  return sim::simulate(parse(text), a, o);
}

std::string sim_error(const std::string& text, const arch::Architecture& a) {
  try {
    run(text, a);
  } catch (const Error& e) {
    CHECK(e.code() == kExitInvalidInput);
    return e.what();
  }
  FAIL("no error");
  return "";
}

std::string check_text(const std::string& text) { return isa::check_program(parse(text)).text("t.jsonl"); }

}  // namespace

TEST_CASE("a multicast load reads DRAM once for all its cores") {
  arch::Architecture a = arch::load_architecture("chip-64tops");
  REQUIRE(a.noc.multicast);
  const int n = a.core_count();
  std::string group, each;
  for (int c = 0; c < n; ++c) {
    group += member(c, 7, n, c % 2 == 0);
    each += unicast(c);
  }
  CHECK(isa::check_program(parse(group)).ok());
  sim::Result g = run(group, a), u = run(each, a), one = run(unicast(0), a);
  // DRAM is read once: the bytes of one core's load.
  CHECK(g.stats.dram_read_bytes == one.stats.dram_read_bytes);
  CHECK(u.stats.dram_read_bytes == int64_t(n) * one.stats.dram_read_bytes);
  CHECK(g.stats.energy.dram == doctest::Approx(one.stats.energy.dram));
  // Each link of the tree carries the bytes once: fewer byte-hops and
  // crossings than eight loads, more than one.
  CHECK(g.stats.d2d_bytes < u.stats.d2d_bytes);
  CHECK(g.stats.noc_byte_hops <= u.stats.noc_byte_hops);
  CHECK(g.stats.d2d_bytes > one.stats.d2d_bytes);
  // Every member starts together; the group is not slower than one lone
  // load by more than the route to the farthest core, and much faster than
  // eight loads sharing the IO links.
  int64_t last_end = 0;
  for (int c = 0; c < n; ++c) {
    CHECK(g.timing[size_t(2 * c + 1)].start == g.timing[1].start);
    last_end = std::max(last_end, g.timing[size_t(2 * c + 1)].end);
  }
  int64_t unicast_end = 0;
  for (const auto& t : u.timing) unicast_end = std::max(unicast_end, t.end);
  CHECK(last_end < unicast_end);
  CHECK(last_end - g.timing[1].start <= one.timing[1].end - one.timing[1].start + 2 * int64_t(a.d2d.latency_cycles) + 8);
}

TEST_CASE("a multicast group starts when its last member is ready") {
  arch::Architecture a = arch::load_architecture("chip-64tops");
  // Core 1's member waits for a long load on its LD queue first.
  std::string p = member(0, 3, 2, false) + cct::testing::load(1, 64, 64, 64, 1 << 20) + member(1, 3, 2, false, 0);
  sim::Result r = run(p, a);
  // Lines: ldw_cfg, ldw_mc (core 0), lda_cfg, lda_mov (core 1), ldw_cfg, ldw_mc (core 1).
  CHECK(r.timing[1].start == r.timing[5].start);
  CHECK(r.timing[5].start >= r.timing[3].end);
}

TEST_CASE("multicast loads need a multicast NoC, a full group and one source") {
  arch::Architecture a = arch::load_architecture("chip-64tops");
  SUBCASE("an architecture without multicast refuses them") {
    a.noc.multicast = false;
    std::string msg = sim_error(member(0, 1, 2, true) + member(1, 1, 2, true), a);
    CHECK(msg.find("t.jsonl:2") != std::string::npos);
    CHECK(msg.find("noc.multicast") != std::string::npos);
  }
  SUBCASE("MEMBERS must count the group") {
    std::string p = member(0, 1, 3, true) + member(1, 1, 3, true);
    CHECK(sim_error(p, a).find("MEMBERS says 3") != std::string::npos);
    CHECK(check_text(p).find("t.jsonl:2: error:") != std::string::npos);
  }
  SUBCASE("members read the same bytes") {
    std::string p = member(0, 1, 2, true) + member(1, 1, 2, true, 0, 8192);
    CHECK(sim_error(p, a).find("reads other DRAM bytes") != std::string::npos);
    CHECK(check_text(p).find("t.jsonl:4: error:") != std::string::npos);
  }
  SUBCASE("groups met in opposite orders deadlock, in the checker and in the timing run") {
    std::string p = member(0, 1, 2, false, 0) + member(0, 2, 2, false, 1 << 16) + member(1, 2, 2, false, 0) +
                    member(1, 1, 2, false, 1 << 16);
    std::string text = check_text(p);
    CHECK(text.find("deadlock") != std::string::npos);
    CHECK(text.find("multicast group") != std::string::npos);
    std::string msg = sim_error(p, a);
    CHECK(msg.find("deadlock") != std::string::npos);
    CHECK(msg.find("multicast group (TAG") != std::string::npos);
  }
}

TEST_CASE("the multicast example of formats/ISA_Format.md runs as the text says") {
  std::string doc = cct::testing::read_file(cct::testing::source_dir() + "/formats/ISA_Format.md");
  size_t at = doc.find("## 5b.");
  REQUIRE(at != std::string::npos);
  size_t from = doc.find("```\n", at) + 4, to = doc.find("```", from);
  arch::Architecture a = arch::load_architecture("chip-64tops");
  sim::Result r = run(doc.substr(from, to - from), a);
  REQUIRE(r.timing.size() == 4);
  CHECK(r.timing[1].start == 21);
  CHECK(r.timing[3].start == 21);
  CHECK(r.timing[1].end == 1279);
  CHECK(r.timing[3].end == 1279);
  CHECK(r.stats.dram_read_bytes == 38912);
  CHECK(r.stats.d2d_bytes == 2 * 38912);
  CHECK(doc.find("end\nat cycle 1,279") != std::string::npos);
}
