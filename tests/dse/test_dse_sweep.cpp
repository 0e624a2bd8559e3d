// The sweep: quick search plans, `gemini --dse` outputs, --jobs, the journal
// (resume after an interruption) and --point.
#include <doctest/doctest.h>

#include <algorithm>

#include "arch/arch.hpp"
#include "dse/sweep.hpp"
#include "fir/fir.hpp"
#include "gemini/network.hpp"
#include "gemini/search.hpp"
#include "mapping/mapping.hpp"
#include "mapping/mapping_fir.hpp"
#include "support/error.hpp"
#include "testing.hpp"

using namespace cct;

namespace {

std::string small_space() { return testing::source_dir() + "/tests/dse/small_space.json"; }
std::string tiny_fir() { return testing::source_dir() + "/examples/mappings/tiny_cnn_b4.fir.json"; }

size_t count_lines(const std::string& s) { return size_t(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST_CASE("quick_plan: a valid mapping, no worse than the sequential baseline") {
  const arch::Architecture a = arch::load_architecture("chip-64tops");
  const fir::Graph g = fir::read_fir(tiny_fir());
  gemini::Network net = gemini::build_network(g, a, "tiny");
  net.name = "tiny_cnn_b4";
  gemini::CostModel model(net, a);
  for (auto obj : {gemini::Objective::Latency, gemini::Objective::Energy, gemini::Objective::Edp}) {
    gemini::Plan plan = dse::quick_plan(model, obj);
    mapping::Mapping m = gemini::to_mapping(plan, net, a);
    auto problems = mapping::check_structure(m, "quick");
    auto more = mapping::check_against_arch(m, a, "quick");
    problems.insert(problems.end(), more.begin(), more.end());
    more = mapping::check_against_fir(m, g, "quick");
    problems.insert(problems.end(), more.begin(), more.end());
    CHECK(problems.empty());
    const double v = model.evaluate(plan, false).value(obj, a);
    CHECK(v <= model.evaluate(gemini::sequential_plan(model, obj), false).value(obj, a));
    // Deterministic.
    CHECK(dse::quick_plan(model, obj) == plan);
  }
}

TEST_CASE("gemini --dse: CSV, SVG, summary; --jobs 2 equals --jobs 1; resume from the journal; --point") {
  const std::string d1 = testing::temp_dir("dse_sweep_j1"), d2 = testing::temp_dir("dse_sweep_j2");
  auto r1 = testing::run_tool("gemini", "--dse " + small_space() + " --nets " + tiny_fir() + " -o " + d1 + "/r.csv");
  REQUIRE_MESSAGE(r1.exit_code == 0, r1.err);
  auto r2 = testing::run_tool("gemini", "--dse " + small_space() + " --nets " + tiny_fir() + " -o " + d2 +
                                            "/r.csv --jobs 2 --no-progress");
  REQUIRE_MESSAGE(r2.exit_code == 0, r2.err);
  const std::string csv = testing::read_file(d1 + "/r.csv");
  CHECK(csv == testing::read_file(d2 + "/r.csv"));
  CHECK(testing::read_file(d1 + "/r.pareto.svg") == testing::read_file(d2 + "/r.pareto.svg"));
  CHECK(count_lines(csv) == 25);  // header + 24 points x 1 network
  CHECK(csv.starts_with("point,network,batch,"));
  // Exactly one chosen design, on the Pareto front; its explanation on stderr and in the summary.
  size_t chosen = 0, front = 0;
  size_t pos = csv.find('\n') + 1;
  while (pos < csv.size()) {
    size_t end = csv.find('\n', pos);
    std::string row = csv.substr(pos, end - pos);
    chosen += row.ends_with(",1,1");
    front += row.ends_with(",1,0") || row.ends_with(",1,1");
    pos = end + 1;
  }
  CHECK(chosen == 1);
  CHECK(front >= 1);
  const std::string summary = testing::read_file(d1 + "/r.summary.txt");
  CHECK(summary.find("chosen by latency_per_dollar: point ") != std::string::npos);
  CHECK(summary.find("-bound") != std::string::npos);
  CHECK(summary.find("neighbours") != std::string::npos);
  CHECK(r1.err.find(summary) != std::string::npos);
  CHECK(r1.err.find("24/24 points done") != std::string::npos);
  const std::string svg = testing::read_file(d1 + "/r.pareto.svg");
  CHECK(svg.starts_with("<svg "));
  CHECK(svg.find("#d62728") != std::string::npos);

  // An interrupted sweep: the journal holds 10 points and half a line.
  const std::string journal = testing::read_file(d1 + "/r.csv.journal");
  CHECK(count_lines(journal) == 24);
  size_t cut = 0;
  for (int i = 0; i < 10; ++i) cut = journal.find('\n', cut) + 1;
  const std::string d3 = testing::temp_dir("dse_sweep_resume");
  testing::write_file(d3 + "/r.csv.journal", journal.substr(0, cut) + journal.substr(cut, 30));
  auto r3 = testing::run_tool("gemini", "--dse " + small_space() + " --nets " + tiny_fir() + " -o " + d3 + "/r.csv");
  REQUIRE_MESSAGE(r3.exit_code == 0, r3.err);
  CHECK(r3.err.find("10 of 24 points already in") != std::string::npos);
  CHECK(r3.err.find("unfinished line") != std::string::npos);
  CHECK(r3.err.find("14/14 points done") != std::string::npos);
  CHECK(testing::read_file(d3 + "/r.csv") == csv);
  // A complete journal: nothing to evaluate, the same CSV.
  auto r4 = testing::run_tool("gemini", "--dse " + small_space() + " --nets " + tiny_fir() + " -o " + d1 + "/r.csv");
  REQUIRE(r4.exit_code == 0);
  CHECK(r4.err.find("24 of 24 points already") != std::string::npos);
  CHECK(r4.err.find("points done") == std::string::npos);
  CHECK(testing::read_file(d1 + "/r.csv") == csv);

  // --point I writes point I's journal line.
  auto r5 = testing::run_tool("gemini", "--dse " + small_space() + " --nets " + tiny_fir() + " --point 7");
  REQUIRE(r5.exit_code == 0);
  CHECK(journal.find(r5.out) != std::string::npos);
  CHECK(r5.out.starts_with("{\"point\":7,"));
  auto r6 = testing::run_tool("gemini", "--dse " + small_space() + " --count-points");
  CHECK(r6.out == "24\n");
}

TEST_CASE("gemini --dse errors") {
  auto r = testing::run_tool("gemini", "--dse " + small_space());
  CHECK(r.exit_code == kExitUsage);
  CHECK(r.err.find("no networks") != std::string::npos);
  r = testing::run_tool("gemini", "--dse " + small_space() + " --nets " + tiny_fir() + " --point 24");
  CHECK(r.exit_code == kExitUsage);
  CHECK(r.err.find("points 0..23") != std::string::npos);
  r = testing::run_tool("gemini", "--dse " + small_space() + " --nets " + tiny_fir() + " --jobs 0");
  CHECK(r.exit_code == kExitUsage);
  r = testing::run_tool("gemini", "--dse /nonexistent/space.json --nets " + tiny_fir());
  CHECK(r.exit_code == kExitIo);
  r = testing::run_tool("gemini", "--dse " + tiny_fir() + " --nets " + tiny_fir());
  CHECK(r.exit_code == kExitInvalidInput);
}
