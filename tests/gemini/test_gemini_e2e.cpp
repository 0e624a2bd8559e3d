// Mappings through the whole tool chain (irgen, asm, zebusim's engine): the
// hand-written example and gemini's own mapping compile and run, and the
// cost model predicts their cycles.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "asm/asm.hpp"
#include "gemini/plan.hpp"
#include "gemini/search.hpp"
#include "gemini_test_util.hpp"
#include "irgen/irgen.hpp"
#include "sim/sim.hpp"

using namespace cct;
using namespace cct::gemini;

namespace {

// One workload's compute as run or predicted: its layer, its first start
// and last end.
struct Span {
  std::string layer;
  int64_t start = 0, end = 0;
};
using CoreSpans = std::map<int64_t, std::vector<Span>>;  // per core, in program order

// zebusim's run of the program irgen and asm build for the mapping: its
// cycles, and per core each workload's PE and vector instructions.
struct Run {
  int64_t cycles = 0;
  CoreSpans spans;
};
Run simulated_run(const gemini_test::Setup& s, const mapping::Mapping& m) {
  sir::Schedule sched = irgen::generate(s.graph, m, s.arch);
  isa::Program prog = assembler::assemble(sched, s.graph, s.arch);
  sim::Result r = sim::simulate(prog, s.arch);
  std::map<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> run;  // (core, workload id) -> span
  for (size_t i = 0; i < prog.instructions.size(); ++i) {
    const isa::Instruction& in = prog.instructions[i];
    if ((in.queue() != isa::Queue::PE && in.queue() != isa::Queue::VP) || in.info().is_config) continue;
    auto [it, fresh] = run.try_emplace({in.mapping.core, in.mapping.wkl}, r.timing[i].start, r.timing[i].end);
    if (!fresh) it->second = {std::min(it->second.first, r.timing[i].start), std::max(it->second.second, r.timing[i].end)};
  }
  Run out;
  out.cycles = r.stats.total_cycles;
  for (const sir::Core& c : sched.cores)
    for (const sir::Workload& w : c.workloads) {
      auto it = run.find({c.id, w.workload_id});
      if (it != run.end()) out.spans[c.id].push_back({w.layer_name, it->second.first, it->second.second});
    }
  return out;
}

// zebusim's total cycles for a mapping compiled by irgen and asm.
int64_t simulated_cycles(const gemini_test::Setup& s, const mapping::Mapping& m) { return simulated_run(s, m).cycles; }

// The model's timeline of the same plan, its compute steps per core.
CoreSpans predicted_spans(const gemini_test::Setup& s, const PlanCost& cost) {
  CoreSpans out;
  for (const TimelineStep& st : cost.timeline)
    if (st.kind == TimelineStep::Compute) out[st.core].push_back({s.net.layers[size_t(st.layer)].name, st.start, st.end});
  return out;
}

}  // namespace

TEST_CASE("the hand-written example mapping compiles and runs; the model predicts it") {
  auto s = gemini_test::setup(gemini_test::tiny_fir(), "chip-64tops");
  mapping::Mapping m = mapping::read_mapping(gemini_test::tiny_mapping());
  CHECK(gemini_test::problems(m, *s) == "");
  int64_t measured = simulated_cycles(*s, m);
  int64_t predicted = s->model->evaluate(from_mapping(m, s->net), false).cycles;
  MESSAGE("example mapping: predicted " << predicted << ", zebusim " << measured);
  CHECK(measured > 0);
  CHECK(std::abs(double(predicted) / double(measured) - 1.0) < 0.10);
}

TEST_CASE("the model loads a later batch group's input ahead, while the group before it computes, as irgen places it") {
  // One core, the network's input loaded per batch group: irgen issues group
  // g+1's load in group g's block (load_head) and zebusim runs it during
  // that compute. A model that waits for the previous compute predicted
  // 31069 cycles here against zebusim's 29579 (+5%).
  auto s = gemini_test::setup(gemini_test::tiny_fir(), "zebu-1core");
  const mapping::Mapping m = mapping::parse_mapping(R"({"format": "cct-mapping", "version": 1, "arch": "zebu-1core",
    "fir": "tiny_cnn_b4", "batch": 4, "segments": [
      {"batch_groups": 4, "layers": [{"layer": "quant_in", "cores": [0]}, {"layer": "conv1", "cores": [0]},
                                     {"layer": "conv2", "cores": [0]}]},
      {"batch_groups": 4, "layers": [{"layer": "skip_dq", "cores": [0]}, {"layer": "conv3", "cores": [0]},
                                     {"layer": "add", "cores": [0]}, {"layer": "gap", "cores": [0]}]},
      {"layers": [{"layer": "fc", "cores": [0]}]}]})",
                                                    "<test>");
  REQUIRE(gemini_test::problems(m, *s) == "");
  const int64_t measured = simulated_cycles(*s, m);
  const int64_t predicted = s->model->evaluate(from_mapping(m, s->net), false, true).cycles;
  MESSAGE("batch groups on one core: predicted " << predicted << ", zebusim " << measured);
  CHECK(std::abs(double(predicted) / double(measured) - 1.0) < 0.01);
}

TEST_CASE("gemini's mapping of the example network and the baseline compile and run; the model predicts them") {
  auto s = gemini_test::setup(gemini_test::tiny_fir(), "chip-64tops");
  SearchOptions o;
  SearchResult r = search(*s->model, o);
  mapping::Mapping m = to_mapping(r.plan, s->net, s->arch);
  int64_t measured = simulated_cycles(*s, m);
  MESSAGE("gemini mapping: predicted " << r.cost.cycles << ", zebusim " << measured);
  CHECK(std::abs(double(r.cost.cycles) / double(measured) - 1.0) < 0.15);
  Plan seq = sequential_plan(*s->model, Objective::Latency);
  int64_t baseline = simulated_cycles(*s, to_mapping(seq, s->net, s->arch));
  int64_t predicted = s->model->evaluate(seq, false).cycles;
  MESSAGE("sequential baseline: predicted " << predicted << ", zebusim " << baseline);
  CHECK(std::abs(double(predicted) / double(baseline) - 1.0) < 0.15);
}

TEST_CASE("multicast: the model prices one DRAM read per group of cores loading the same weights, as asm and zebusim run it") {
  auto mc = gemini_test::setup(gemini_test::tiny_fir(), "chip-64tops");
  REQUIRE(mc->arch.noc.multicast);
  auto uni = gemini_test::setup(gemini_test::tiny_fir(), "chip-64tops");
  uni->arch.noc.multicast = false;
  uni->model = std::make_unique<CostModel>(uni->net, uni->arch);
  // Every layer on all eight cores split along w: each core loads every weight.
  Plan seq = sequential_plan(*mc->model, Objective::Latency);
  const mapping::Mapping m = to_mapping(seq, mc->net, mc->arch);
  auto dram_of = [](const PlanCost& c) {
    int64_t b = 0;
    for (const auto& sc : c.segments)
      for (const auto& lc : sc.layers) b += lc.dram_bytes;
    return b;
  };
  const PlanCost pm = mc->model->evaluate(seq, true), pu = uni->model->evaluate(seq, true);
  CHECK(dram_of(pm) < dram_of(pu));
  // The same mapping assembled both ways (asm merges on the multicast chip,
  // asm --no-multicast does not): each prediction against its own run.
  sir::Schedule sched = irgen::generate(mc->graph, m, mc->arch);
  assembler::MulticastMerge merged;
  assembler::Options ao;
  ao.multicast_result = &merged;
  const sim::Result rm = sim::simulate(assembler::assemble(sched, mc->graph, mc->arch, ao), mc->arch);
  ao.multicast = false;
  const sim::Result ru = sim::simulate(assembler::assemble(sched, mc->graph, mc->arch, ao), mc->arch);
  CHECK(merged.groups > 0);
  CHECK(merged.refused.empty());
  CHECK(rm.stats.dram_read_bytes < ru.stats.dram_read_bytes);
  MESSAGE("sequential plan: multicast predicted " << pm.cycles << ", zebusim " << rm.stats.total_cycles
                                                  << "; unicast predicted " << pu.cycles << ", zebusim "
                                                  << ru.stats.total_cycles);
  // This network runs a few thousand cycles (the model's fixed costs weigh;
  // ResNets agree within 1.2%, lib/gemini/README.md): each within 10%, and
  // multicast adds no error of its own.
  const double em = double(pm.cycles) / double(rm.stats.total_cycles), eu = double(pu.cycles) / double(ru.stats.total_cycles);
  CHECK(std::abs(em - 1.0) < 0.10);
  CHECK(std::abs(eu - 1.0) < 0.10);
  CHECK(std::abs(em - eu) < 0.01);
}

TEST_CASE("row stripes: the example mapping cut into stripes compiles and runs; plans keep them") {
  auto s = gemini_test::setup(gemini_test::tiny_fir(), "chip-64tops");
  mapping::Mapping m = mapping::read_mapping(gemini_test::tiny_mapping());
  int striped = 0;
  // Rows are the stripes' to cut: the first segment's h partitions become w.
  for (auto& l : m.segments[0].layers) std::swap(l.partition.h, l.partition.w);
  for (auto& seg : m.segments) {
    bool rows_free = true;
    for (const auto& l : seg.layers) rows_free = rows_free && l.partition.h == 1;
    if (rows_free) seg.row_groups = 2, ++striped;
  }
  REQUIRE(striped > 0);
  CHECK(gemini_test::problems(m, *s) == "");
  Plan p = from_mapping(m, s->net);
  CHECK(to_mapping(p, s->net, s->arch).segments == m.segments);
  int64_t measured = simulated_cycles(*s, m);  // no deadlock: every rendezvous in one order
  int64_t predicted = s->model->evaluate(p, false).cycles;
  MESSAGE("example mapping in row stripes: predicted " << predicted << ", zebusim " << measured);
  CHECK(m.segments[0].row_groups == 2);
  CHECK(std::abs(double(predicted) / double(measured) - 1.0) < 0.15);
}

TEST_CASE("ResNet-50 b4 on chip-64tops: gemini's compiled mapping beats the compiled baseline by 1.3x in zebusim" *
          doctest::test_suite("heavy")) {
  // Issue 7's quality criterion at batch 4 (bench_gemini measures b1, b4 and
  // b16): 773752 against 1010107 cycles when this test was written.
  auto s = gemini_test::setup(gemini_test::reference_fir("resnet50", 4), "chip-64tops");
  SearchOptions o;
  SearchResult r = search(*s->model, o);
  int64_t ours = simulated_cycles(*s, to_mapping(r.plan, s->net, s->arch));
  int64_t base = simulated_cycles(*s, to_mapping(sequential_plan(*s->model, Objective::Latency), s->net, s->arch));
  MESSAGE("gemini " << ours << " (predicted " << r.cost.cycles << "), sequential " << base << ": "
                    << double(base) / double(ours) << "x");
  CHECK(double(base) / double(ours) >= 1.3);
  CHECK(std::abs(double(r.cost.cycles) / double(ours) - 1.0) < 0.10);
  // The figure the tool reports prices the plan as irgen built it (its
  // weight paths, spills, and where each receive's bytes were last used):
  // within 1% (issue 22). Receives waiting for the compute two workloads
  // back instead: +2.8% (772251 against 751020).
  Plan plan = r.plan;
  BuiltPlan built;
  make_buildable(*s->model, s->graph, plan, gemini_test::reference_fir("resnet50", 4), &built);
  const PlanCost as_built = s->model->evaluate(plan, true, true, &built);
  const int64_t reported = as_built.cycles;
  const Run run = simulated_run(*s, to_mapping(plan, s->net, s->arch));
  const int64_t measured = run.cycles;
  MESSAGE("as built: predicted " << reported << ", zebusim " << measured);
  CHECK(std::abs(double(reported) / double(measured) - 1.0) < 0.01);
  // Workload by workload (issue 22: the prediction and the run follow the
  // same rules): every core runs its workloads in the order the model puts
  // them, and each starts and ends within 2% of the program's cycles of
  // where the model puts it (1.26% at most when this test was written, the
  // median 0.3%).
  const CoreSpans& ran = run.spans;
  const CoreSpans said = predicted_spans(*s, as_built);
  REQUIRE(ran.size() == said.size());
  int64_t worst = 0;
  std::string where;
  for (const auto& entry : ran) {
    const int64_t core = entry.first;
    const std::vector<Span>& spans = entry.second;
    const auto& model = said.at(core);
    REQUIRE_MESSAGE(spans.size() == model.size(), "core " << core);
    for (size_t i = 0; i < spans.size(); ++i) {
      REQUIRE_MESSAGE(spans[i].layer == model[i].layer, "core " << core << " workload " << i);
      const int64_t off = std::max(std::abs(spans[i].start - model[i].start), std::abs(spans[i].end - model[i].end));
      if (off > worst) worst = off, where = spans[i].layer + " on core " + std::to_string(core);
    }
  }
  MESSAGE("per workload: at most " << worst << " cycles apart (" << where << ")");
  CHECK(double(worst) < 0.02 * double(measured));
}
