// gemini's search: deterministic, valid on the reference networks, never
// worse than the sequential baseline by its model, honours the time limit,
// works on the scale architectures.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "gemini/plan.hpp"
#include "gemini/search.hpp"
#include "gemini_test_util.hpp"
#include "mapping/mapping.hpp"

using namespace cct;
using namespace cct::gemini;

namespace {

SearchResult run(const gemini_test::Setup& s, uint64_t seed, Objective o = Objective::Latency, double limit = 0) {
  SearchOptions opt;
  opt.seed = seed;
  opt.objective = o;
  opt.time_limit = limit;
  return search(*s.model, opt);
}

}  // namespace

TEST_CASE("the same seed gives the same mapping, byte for byte") {
  auto s = gemini_test::setup(gemini_test::tiny_fir(), "chip-64tops");
  SearchResult a = run(*s, 7), b = run(*s, 7);
  std::string ta = mapping::format_mapping(to_mapping(a.plan, s->net, s->arch));
  std::string tb = mapping::format_mapping(to_mapping(b.plan, s->net, s->arch));
  CHECK(ta == tb);
  CHECK(a.cost.cycles == b.cost.cycles);
  CHECK(a.stats.evaluations == b.stats.evaluations);
  CHECK(a.stats.accepted == b.stats.accepted);
}

TEST_CASE("searched mappings of the reference networks pass every mapping check and fit" * doctest::test_suite("heavy")) {
  for (auto net_batch : {std::pair{"resnet50", 1}, std::pair{"resnet34", 4}}) {
    const char* net = net_batch.first;
    const int batch = net_batch.second;
    CAPTURE(net);
    CAPTURE(batch);
    auto s = gemini_test::setup(gemini_test::reference_fir(net, batch), "chip-64tops");
    SearchResult r = run(*s, 1);
    mapping::Mapping m = to_mapping(r.plan, s->net, s->arch);
    CHECK(gemini_test::problems(m, *s) == "");
    CHECK(r.cost.feasible());
    CHECK(r.cost.cycles > 0);
    CHECK(r.cost.segments.size() == r.plan.segments.size());
    // Round trip through the file format.
    CHECK(mapping::parse_mapping(mapping::format_mapping(m), "m") == m);
    // Consecutive layers, every accelerator layer once, in order.
    int next = 0;
    for (const auto& sp : r.plan.segments)
      for (const auto& lp : sp.layers) CHECK(lp.layer == next++);
    CHECK(next == int(s->net.layers.size()));
  }
}

TEST_CASE("the search is never worse than the sequential baseline by the model" * doctest::test_suite("heavy")) {
  for (Objective o : {Objective::Latency, Objective::Energy, Objective::Edp}) {
    CAPTURE(objective_name(o));
    auto s = gemini_test::setup(gemini_test::reference_fir("resnet50", 1), "chip-64tops");
    // Cut short: the property holds for any budget (the sweeps start from
    // the best of the candidates, the baseline among them).
    SearchResult r = run(*s, 3, o, 1.0);
    Plan seq = sequential_plan(*s->model, o);
    PlanCost base = s->model->evaluate(seq, false);
    CHECK(gemini_test::problems(to_mapping(seq, s->net, s->arch), *s) == "");
    CHECK(r.cost.value(o, s->arch) <= base.value(o, s->arch));
  }
  // At batch 1 ResNet-50 is bound by its weights: spreading layers over the
  // cores beats running each layer on all cores in turn.
  auto s = gemini_test::setup(gemini_test::reference_fir("resnet50", 1), "chip-64tops");
  SearchResult r = run(*s, 1);
  PlanCost base = s->model->evaluate(sequential_plan(*s->model, Objective::Latency), false);
  CHECK(r.cost.cycles < base.cycles);
}

TEST_CASE("batch-split candidates keep each sample on its cores and beat the baseline at a large batch") {
  auto s = gemini_test::setup(gemini_test::reference_fir("resnet50", 16), "chip-64tops");
  std::vector<Plan> plans = batch_split_plans(*s->model);
  // b = 1, 2, 4, 8 (the divisors of 16 up to 8 cores): three axis orders
  // each, one for b = 8 (no cores left to split along an axis).
  REQUIRE(plans.size() == 10);
  const Plan& b8 = plans.back();
  CHECK(gemini_test::problems(to_mapping(b8, s->net, s->arch), *s) == "");
  for (const SegmentPlan& sp : b8.segments) {
    REQUIRE(sp.layers.size() == 1);
    CHECK(sp.layers[0].part.b == 8);
    CHECK(sp.layers[0].cores.size() == 8);
  }
  CHECK(s->model->evaluate(b8, false).feasible());
  PlanCost base = s->model->evaluate(sequential_plan(*s->model, Objective::Latency), false);
  // Activations stay in L2 from layer to layer instead of going from core
  // to core: the best split (b = 4, h = 2: model 2.70M cycles against the
  // baseline's 3.29M) beats the baseline clearly.
  int64_t best = std::numeric_limits<int64_t>::max();
  for (const Plan& p : plans) best = std::min(best, s->model->evaluate(p, false).cycles);
  MESSAGE("best batch split " << best << " cycles, baseline " << base.cycles);
  CHECK(double(best) < 0.9 * double(base.cycles));
}

TEST_CASE("--time-limit returns the best plan found in time") {
  auto s = gemini_test::setup(gemini_test::reference_fir("resnet50", 1), "chip-6x6-2x2");
  // After the limit the search still prices a few whole plans (the best
  // candidates and the result): allow for that, timed on this machine
  // before and after the search (other processes may slow it down), plus a
  // second of slack (without the limit the search takes about 3 s here).
  Plan seq = sequential_plan(*s->model, Objective::Latency);
  auto evaluation_seconds = [&] {
    auto t0 = std::chrono::steady_clock::now();
    s->model->evaluate(seq, true);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  double one = evaluation_seconds();
  SearchResult r = run(*s, 1, Objective::Latency, 0.3);
  one = std::max(one, evaluation_seconds());
  CHECK(r.stats.timed_out);
  CHECK(r.stats.seconds < 0.3 + 8 * one + 1.0);
  CHECK(gemini_test::problems(to_mapping(r.plan, s->net, s->arch), *s) == "");
}

TEST_CASE("the scale architectures load and map a network" * doctest::test_suite("heavy")) {
  for (auto name_cores : {std::pair{"chip-6x6-2x2", 36}, std::pair{"chip-16x16-2x2", 256}}) {
    const char* name = name_cores.first;
    const int cores = name_cores.second;
    CAPTURE(name);
    auto s = gemini_test::setup(gemini_test::tiny_fir(), name);
    CHECK(s->arch.core_count() == cores);
    int compute = 0;
    for (const auto& d : s->arch.dies) compute += d.is_compute();
    CHECK(compute == 4);
    // Opposite corners of the package are two die crossings apart.
    CHECK(s->arch.d2d_crossings(0, cores - 1) == 2);
    SearchResult r = run(*s, 1, Objective::Latency, 20);
    CHECK(gemini_test::problems(to_mapping(r.plan, s->net, s->arch), *s) == "");
    CHECK(r.cost.feasible());
  }
}

TEST_CASE("a single-core chip gets every layer on core 0, one per segment, in order") {
  auto s = gemini_test::setup(gemini_test::reference_fir("resnet34", 1), "zebu-1core");
  SearchResult r = run(*s, 1);
  REQUIRE(r.plan.segments.size() == s->net.layers.size());
  for (size_t i = 0; i < r.plan.segments.size(); ++i) {
    REQUIRE(r.plan.segments[i].layers.size() == 1);
    CHECK(r.plan.segments[i].layers[0].layer == int(i));
    CHECK(r.plan.segments[i].layers[0].cores == std::vector<int>{0});
  }
  CHECK(gemini_test::problems(to_mapping(r.plan, s->net, s->arch), *s) == "");
}
