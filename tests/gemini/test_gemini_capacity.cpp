// Capacities: a network whose tensors do not fit a core's L2 gets a mapping
// irgen builds -- split into more batch groups or row stripes, or with
// tensors spilled to DRAM -- from the search and from the sequential
// baseline; the model prices the spills irgen makes (one rule,
// irgen/spill.hpp).
#include <doctest/doctest.h>

#include "gemini/plan.hpp"
#include "gemini/search.hpp"
#include "gemini_test_util.hpp"
#include "irgen/irgen.hpp"
#include "irgen/spill.hpp"
#include "support/error.hpp"

using namespace cct;
using namespace cct::gemini;

namespace {

// ResNet-50 b1 with a smaller L2: on one core (1 MiB) its first convolution's
// input and output (0.4 + 0.8 MB) alone are over it; on chip-64tops (256 KiB
// a core) the sequential baseline's first layers are.
std::unique_ptr<gemini_test::Setup> small_l2(const std::string& arch_name, int64_t l2) {
  auto s = std::make_unique<gemini_test::Setup>();
  s->arch = arch::load_architecture(arch_name);
  s->arch.core.l2_bytes = l2;
  const std::string fir = gemini_test::reference_fir("resnet50", 1);
  s->graph = fir::read_fir(fir);
  s->net = build_network(s->graph, s->arch, fir);
  s->net.name = "test";
  s->model = std::make_unique<CostModel>(s->net, s->arch);
  return s;
}

int64_t splits(const Plan& p) {
  int64_t n = 0;
  for (const auto& sp : p.segments) n += (sp.batch_groups > 1) + (sp.row_groups > 1);
  return n;
}

// irgen builds the mapping (no capacity refusal) and its checks pass.
void builds(const gemini_test::Setup& s, const Plan& plan, const char* what) {
  INFO(what << " on " << s.arch.core.l2_bytes << " bytes of L2");
  mapping::Mapping m = to_mapping(plan, s.net, s.arch);
  CHECK(gemini_test::problems(m, s) == "");
  sir::Schedule sched;
  REQUIRE_NOTHROW(sched = irgen::generate(s.graph, m, s.arch));
  auto problems = irgen::check(sched, s.arch, &s.graph, "capacity");
  CHECK(problems.empty());
  for (const auto& [core, c] : sched.cores)
    for (const auto& w : c)
      for (const auto& b : w.buffer) CHECK(b.address + b.size <= s.arch.core.l2_bytes);
}

}  // namespace

TEST_CASE("the spill rule: the longest-lived kept tensor live where L2 runs out, the first on a tie") {
  std::vector<irgen::KeptTensor> kept = {{0, 5, 10}, {2, 9, 11}, {3, 4, 12}, {6, 13, 13}};
  CHECK(irgen::spill_choice(kept, 4, 4) == 11);    // 7 workloads, more than 5 and 1
  CHECK(irgen::spill_choice(kept, 10, 10) == 13);  // the only one live there
  CHECK(irgen::spill_choice(kept, 14, 20) == -1);
  kept.push_back({1, 8, 14});
  CHECK(irgen::spill_choice(kept, 4, 4) == 11);  // a tie keeps the first
  const auto a = arch::load_architecture("zebu-1core");
  CHECK(irgen::over_capacity("x", 150, 100, "L2", a) == "x needs 150 bytes, 50 more than the 100-byte L2 of zebu-1core");
}

TEST_CASE("a tensor over L2 on one core: the search and the sequential baseline split it, irgen builds both") {
  auto s = small_l2("zebu-1core", 1 << 20);
  // Left as it is (one layer per segment, the whole batch), the first
  // convolution does not fit: irgen refuses, naming the capacity.
  Plan plain = single_core_plan(s->net);
  CHECK(s->model->evaluate(plain, false).own_overflow > 0);
  CHECK_THROWS_AS(irgen::generate(s->graph, to_mapping(plain, s->net, s->arch), s->arch), irgen::CapacityError);

  SearchOptions o;
  Plan searched = search(*s->model, o).plan;
  CHECK(s->model->evaluate(searched, false).own_overflow == 0);
  CHECK(splits(searched) > 0);
  builds(*s, searched, "search");

  Plan seq = single_core_plan(s->net);
  relieve(*s->model, seq);
  CHECK(splits(seq) > 0);
  builds(*s, seq, "--baseline sequential");
  CHECK(make_buildable(*s->model, s->graph, seq, "f") == 0);
}

TEST_CASE("a tensor over L2 on chip-64tops: the search and the sequential baseline split or spill it, irgen builds both") {
  auto s = small_l2("chip-64tops", 3 << 16);  // small enough that irgen refuses the plain sequential plan
  Plan seq = sequential_plan(*s->model, Objective::Latency);
  CHECK_THROWS_AS(irgen::generate(s->graph, to_mapping(seq, s->net, s->arch), s->arch), irgen::CapacityError);
  relieve(*s->model, seq);
  CHECK(s->model->evaluate(seq, false).own_overflow == 0);
  // What the model's sums miss (alignment of many small tensors), irgen's
  // refusal points at and gemini splits.
  CHECK(make_buildable(*s->model, s->graph, seq, "f") >= 0);
  CHECK(splits(seq) > 0);
  builds(*s, seq, "--baseline sequential");

  SearchOptions o;
  Plan searched = search(*s->model, o).plan;
  CHECK(make_buildable(*s->model, s->graph, searched, "f") >= 0);
  builds(*s, searched, "search");
}

TEST_CASE("gemini prices the spills irgen makes: a plan with tensors kept over a small L2 costs DRAM traffic") {
  // One core, every layer its own segment: what a later segment reads stays
  // in L2 until L2 runs out, then goes through DRAM and back.
  auto roomy = gemini_test::setup(gemini_test::reference_fir("resnet50", 4), "zebu-1core");
  auto tight = gemini_test::setup(gemini_test::reference_fir("resnet50", 4), "zebu-1core");
  tight->arch.core.l2_bytes = 4 << 20;
  tight->model = std::make_unique<CostModel>(tight->net, tight->arch);
  Plan p = single_core_plan(roomy->net);
  for (auto& sp : p.segments) sp.batch_groups = 4;
  PlanCost a = roomy->model->evaluate(p, true), b = tight->model->evaluate(p, true);
  REQUIRE(b.feasible());
  CHECK(b.energy.dram > a.energy.dram);
  CHECK(b.cycles >= a.cycles);
  // irgen spills too: stores read back later besides the network's output.
  auto sched = irgen::generate(tight->graph, to_mapping(p, tight->net, tight->arch), tight->arch);
  int reloaded = 0;
  for (const auto& st : sched.dram.in) reloaded += st.related_ofmap.has_value();
  CHECK(reloaded > 0);
}
