// Host steps end to end: a network with layers the chip cannot run (softmax
// over channels) between accelerator layers and at its end. The chain stores
// their inputs, signals the host (ct_hs), waits for it (ct_hw) and loads its
// results; zebusim's functional run computes them with the reference
// interpreter at their place in the program, bit for bit; the timing model,
// gemini and traceview charge and show the host at the architecture's rates.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "../frontend/onnx_builder.hpp"
#include "../testing/testing.hpp"
#include "asm/asm.hpp"
#include "fir/host.hpp"
#include "frontend/onnx_import.hpp"
#include "func_test_util.hpp"
#include "gemini/cost.hpp"
#include "gemini/network.hpp"
#include "gemini/plan.hpp"
#include "gemini/search.hpp"
#include "irgen/irgen.hpp"
#include "sim/sim.hpp"
#include "support/error.hpp"
#include "support/npy.hpp"
#include "timing/timing.hpp"
#include "traceview/analysis.hpp"
#include "traceview/views.hpp"

using namespace cct;
using cct::testing::OnnxBuilder;
using func_test::Built;
using func_test::Compiled;
using func_test::arch_named;

namespace {

void conv(OnnxBuilder& b, const std::string& x, const std::string& out, int64_t c, int64_t k, int64_t ks, uint64_t seed) {
  b.random_init(out + "_w", {k, c, ks, ks}, 0.5f, seed).random_init(out + "_b", {k}, 0.2f, seed);
  auto& n = b.node("Conv", {x, out + "_w", out + "_b"}, {out});
  int64_t p = ks / 2;
  OnnxBuilder::attr(n, "pads", std::vector<int64_t>{p, p, p, p});
}

// conv -> softmax over channels (host) -> conv -> relu -> conv -> softmax (host, the graph output).
const Compiled& host_model(int batch) {
  static const std::string path = [] {
    OnnxBuilder b(13);
    b.input("x", {-1, 8, 6, 6}).output("y", {-1, 8, 6, 6});
    conv(b, "x", "c1", 8, 8, 3, 21);
    OnnxBuilder::attr(b.node("Softmax", {"c1"}, {"s1"}), "axis", int64_t{1});
    conv(b, "s1", "c2", 8, 8, 3, 22);
    b.node("Relu", {"c2"}, {"r2"});
    conv(b, "r2", "c3", 8, 8, 1, 23);
    OnnxBuilder::attr(b.node("Softmax", {"c3"}, {"y"}), "axis", int64_t{1});
    std::string p = testing::temp_dir("func_host_models") + "/host.onnx";
    testing::write_file(p, b.bytes());
    return p;
  }();
  return func_test::compile_model(path, batch, "host");
}

std::vector<std::string> host_layer_names(const fir::Graph& g) {
  std::vector<std::string> v;
  for (const auto& l : g.layers())
    if (l.device == fir::Device::Cpu) v.push_back(l.name);
  return v;
}

// Per host step (TAG): the last ct_hs end, the first ct_hw end, the host's cycles.
struct StepTimes {
  int64_t signalled = -1, done = -1, cycles = 0;
  int signals = 0, waits = 0;
};
std::map<int64_t, StepTimes> step_times(const isa::Program& p, const std::vector<trace::Timing>& t,
                                        const arch::Architecture& a) {
  std::map<int64_t, StepTimes> s;
  for (size_t i = 0; i < p.size(); ++i) {
    const auto& in = p.instructions[i];
    if (in.op() == isa::Opcode::ct_hs) {
      auto& x = s[in.get(isa::Param::TAG)];
      x.signalled = std::max(x.signalled, t[i].end), ++x.signals;
    } else if (in.op() == isa::Opcode::ct_hw) {
      auto& x = s[in.get(isa::Param::TAG)];
      x.done = x.done < 0 ? t[i].end : std::min(x.done, t[i].end), ++x.waits;
      x.cycles = timing::host_cycles(a, in.get(isa::Param::HOPS), in.get(isa::Param::HBYTES));
    }
  }
  return s;
}

int64_t end_of(const std::vector<trace::Timing>& t) {
  int64_t e = 0;
  for (const auto& x : t) e = std::max(e, x.end);
  return e;
}

}  // namespace

TEST_CASE("host layers between accelerator layers run as a round trip, bit for bit, on both architectures") {
  for (int batch : {1, 2}) {
    CAPTURE(batch);
    const Compiled& c = host_model(batch);
    const auto hosts = host_layer_names(c.graph);
    REQUIRE(hosts.size() == 2);
    struct Case {
      const char* arch;
      bool pipelined;
    };
    for (Case k : {Case{"zebu-1core", false}, Case{"chip-64tops", false}, Case{"chip-64tops", true}}) {
      CAPTURE(k.arch);
      CAPTURE(k.pipelined);
      const auto& a = arch_named(k.arch);
      auto m = k.pipelined ? func_test::pipeline(c.graph, k.arch, a.core_count(), batch > 1 ? 2 : 1)
                           : func_test::single_core(c.graph, k.arch);
      Built b = func_test::build(c, m, a, testing::temp_dir("func_host"));
      CHECK(irgen::check(b.sir, a, &c.graph, "s.json").empty());
      auto report = assembler::check(b.program, a, "p.asm");
      CHECK_MESSAGE(report.ok(), report.text("p.asm"));

      // The round trip in the trace: the host starts once every signal of its
      // step ended and takes its cycles; the results are loaded after.
      auto steps = step_times(b.program, b.timing, a);
      REQUIRE(steps.size() == 2);
      for (const auto& tag_step : steps) {
        const auto& tag = tag_step.first;
        const auto& s = tag_step.second;
        CAPTURE(tag);
        CHECK(s.signals > 0);
        CHECK(s.waits > 0);
        CHECK(s.cycles >= int64_t(a.timing.host_latency_cycles));
        CHECK(s.done >= s.signalled + s.cycles);
      }
      const int64_t mid_done = steps.begin()->second.done;
      bool loaded_after = false, stored_before = false;
      for (size_t i = 0; i < b.program.size(); ++i) {
        const auto op = b.program.instructions[i].op();
        loaded_after = loaded_after || (op == isa::Opcode::lda_mov && b.timing[i].start >= mid_done);
        stored_before = stored_before || (op == isa::Opcode::sta_mov && b.timing[i].end <= steps.begin()->second.signalled);
      }
      CHECK(loaded_after);
      CHECK(stored_before);

      // Functional run: the host layers by the reference interpreter at their
      // place, every accelerator layer and host layer against its golden.
      func::Result r = func_test::run(c, b, b.program, b.timing, a, true);
      auto want = func_test::interpret(c);
      REQUIRE(r.outputs.size() == want.size());
      for (size_t i = 0; i < want.size(); ++i) CHECK(func_test::same_bits(r.outputs[i].tensor, want[i]));
      CHECK(r.host_layers == hosts);
      CHECK(r.host_layers_checked == int64_t(hosts.size()));
    }
  }
}

TEST_CASE("the host's cost follows the architecture's keys in zebusim, traceview and gemini") {
  const Compiled& c = host_model(1);
  const auto& a = arch_named("zebu-1core");
  Built b = func_test::build(c, func_test::single_core(c.graph, a.name), a, testing::temp_dir("func_host_cost"));
  const int64_t base = end_of(b.timing);

  // A host 16 times slower at computing, then one with a longer round trip:
  // the run grows by what the steps' cycles grow (the host is on the path).
  arch::Architecture slow = a;
  slow.timing.host_ops_per_cycle /= 16;
  arch::Architecture late = a;
  late.timing.host_latency_cycles += 100000;
  auto steps = step_times(b.program, b.timing, a);
  int64_t grow_slow = 0, grow_late = 0;
  for (const auto& [tag, s] : step_times(b.program, b.timing, slow)) grow_slow += s.cycles - steps.at(tag).cycles;
  for (const auto& [tag, s] : step_times(b.program, b.timing, late)) grow_late += s.cycles - steps.at(tag).cycles;
  REQUIRE(grow_slow > 0);
  CHECK(grow_late == 2 * 100000);
  const int64_t t_slow = end_of(func_test::retime(b.program, slow));
  const int64_t t_late = end_of(func_test::retime(b.program, late));
  CHECK(t_slow - base == grow_slow);
  CHECK(t_late - base == grow_late);

  // traceview: the host's share, in the summary and as a Perfetto track.
  trace::Trace t{b.program, b.timing};
  traceview::Options o;
  o.arch = &a;
  o.fir = &c.graph;
  traceview::Analysis an = traceview::analyze(t, o);
  CHECK(an.host.steps == 2);
  int64_t host_cycles = 0;
  for (const auto& [tag, s] : steps) host_cycles += s.cycles;
  CHECK(an.host.cycles == host_cycles);
  CHECK(an.host.wait_cycles > 0);
  CHECK(an.host.path_cycles > 0);
  CHECK(an.host.path_cycles <= an.host.cycles);
  REQUIRE(an.host.runs.size() == 2);
  for (const auto& run : an.host.runs) CHECK(run.end - run.start == run.cycles);
  const std::string summary = traceview::format_summary(an, "t", 10);
  CHECK(summary.find("host          2 steps") != std::string::npos);
  const std::string chrome = traceview::format_chrome_trace(t, an, true, "t", "t.json");
  CHECK(chrome.find("\"cat\": \"host\"") != std::string::npos);

  // gemini prices the same steps with the same model: a slower host costs
  // its plan what it costs zebusim.
  gemini::Network net = gemini::build_network(c.graph, a, c.fir_path);
  REQUIRE(net.host_steps.size() == 2);
  gemini::CostModel fast_model(net, a), slow_model(net, slow);
  gemini::SearchOptions so;
  so.effort = 1;
  gemini::Plan plan = gemini::search(fast_model, so).plan;
  const int64_t g_fast = fast_model.evaluate(plan, false).cycles, g_slow = slow_model.evaluate(plan, false).cycles;
  CHECK(g_slow - g_fast == grow_slow);
  // And its estimate of the whole run is zebusim's, roughly.
  Built gb = func_test::build(c, gemini::to_mapping(plan, net, a), a, testing::temp_dir("func_host_gemini"));
  CHECK(double(g_fast) == doctest::Approx(double(end_of(gb.timing))).epsilon(0.1));
}

TEST_CASE("the check modes accept the host syncs and refuse malformed ones") {
  const Compiled& c = host_model(2);
  const auto& a = arch_named("chip-64tops");
  Built b = func_test::build(c, func_test::pipeline(c.graph, "chip-64tops", a.core_count(), 2), a,
                             testing::temp_dir("func_host_checks"));
  auto refused = [&](const isa::Program& p, const std::string& needle) {
    auto report = assembler::check(p, a, "p.asm");
    CHECK_MESSAGE(!report.ok(), "asm --check accepted it");
    CHECK_MESSAGE(report.text("p.asm").find(needle) != std::string::npos, report.text("p.asm"));
    sim::Options o;
    o.file = "p.asm";
    CHECK_THROWS_AS(sim::simulate(p, a, o), Error);
  };
  REQUIRE(assembler::check(b.program, a, "p.asm").ok());
  std::vector<size_t> hs, hw;
  for (size_t i = 0; i < b.program.size(); ++i) {
    if (b.program.instructions[i].op() == isa::Opcode::ct_hs) hs.push_back(i);
    if (b.program.instructions[i].op() == isa::Opcode::ct_hw) hw.push_back(i);
  }
  REQUIRE(!hs.empty());
  REQUIRE(!hw.empty());
  const int64_t tag = b.program.instructions[hs[0]].get(isa::Param::TAG);
  SUBCASE("a step that nothing waits for") {
    isa::Program p = b.program;
    for (size_t i : hw)
      if (p.instructions[i].get(isa::Param::TAG) == tag) p.instructions[i].set(isa::Param::TAG, 9999);
    refused(p, "has no ct_hw");
  }
  SUBCASE("a wait for a step whose signal never comes") {
    // One ct_hs of the step moved to another TAG: that one has no ct_hw.
    isa::Program p = b.program;
    p.instructions[hs[0]].set(isa::Param::TAG, 9998);
    refused(p, "has no ct_hw");
  }
  SUBCASE("a load of a host result that does not wait for the host") {
    // The token from a ct_hw to the load after it on its core dropped on
    // both ends: the tokens still balance, so asm --check and the timing run
    // accept it; the functional run refuses it, naming the load.
    isa::Program p = b.program;
    auto drop = [](isa::QueueList& l, isa::Queue q) {
      isa::QueueList out;
      bool done = false;
      for (isa::Queue x : l)
        if (x == q && !done) done = true;
        else out.push_back(x);
      l = out;
      return done;
    };
    bool cut = false;
    for (size_t i : hw) {
      auto& w = p.instructions[i];
      if (std::find(w.next.begin(), w.next.end(), isa::Queue::LD) == w.next.end()) continue;
      for (size_t j = i + 1; j < p.size() && !cut; ++j) {
        auto& ld = p.instructions[j];
        if (ld.mapping.core != w.mapping.core || ld.op() != isa::Opcode::lda_mov) continue;
        REQUIRE(drop(ld.prev, isa::Queue::CT));
        REQUIRE(drop(w.next, isa::Queue::LD));
        cut = true;
      }
      if (cut) break;
    }
    REQUIRE(cut);
    CHECK(assembler::check(p, a, "p.asm").ok());
    auto timing = func_test::retime(p, a);
    try {
      func::Options o;
      o.program_file = "p.asm";
      func::run(p, timing, a, c.graph, b.sir, func::directory_npy_loader(c.dir), {c.input}, o);
      FAIL("the functional run accepted a load that does not wait for the host");
    } catch (const Error& e) {
      CHECK(e.code() == kExitInvalidInput);
      CHECK_MESSAGE(std::string(e.what()).find("does not wait for a ct_hw") != std::string::npos, e.what());
    }
  }
  SUBCASE("waits that disagree on the step's work") {
    isa::Program p = b.program;
    size_t n = 0;
    for (size_t i : hw)
      if (p.instructions[i].get(isa::Param::TAG) == tag && ++n == 2) p.instructions[i].set(isa::Param::HOPS, 1);
    if (n < 2) {  // one wait only: a negative amount of work instead
      for (size_t i : hw)
        if (p.instructions[i].get(isa::Param::TAG) == tag) p.instructions[i].set(isa::Param::HBYTES, -1);
      refused(p, "must not be negative");
    } else {
      refused(p, "other HOPS/HBYTES");
    }
  }
}

TEST_CASE("gemini ends a segment at a host step, so that its mappings build and run (chip-64tops, batch 4)") {
  // A segment holding both the stores a step reads and the loads of its
  // results waits on itself (the step runs once for the whole batch): the
  // pipelined batch groups of such a mapping deadlocked.
  const Compiled& c = host_model(4);
  const auto& a = arch_named("chip-64tops");
  gemini::Network net = gemini::build_network(c.graph, a, c.fir_path);
  gemini::CostModel model(net, a);
  gemini::SearchOptions so;
  so.effort = 1;
  gemini::Plan plan = gemini::search(model, so).plan;
  for (const auto& seg : plan.segments) {
    std::set<int> in;
    for (const auto& lp : seg.layers) in.insert(lp.layer);
    for (const auto& lp : seg.layers)
      for (const auto& x : net.layers[size_t(lp.layer)].inputs)
        if (x.host_step >= 0)
          for (int li : net.host_steps[size_t(x.host_step)].inputs) CHECK(in.count(li) == 0);
  }
  Built b = func_test::build(c, gemini::to_mapping(plan, net, a), a, testing::temp_dir("func_host_gemini4"));
  auto report = assembler::check(b.program, a, "p.asm");
  CHECK_MESSAGE(report.ok(), report.text("p.asm"));
  func::Result r = func_test::run(c, b, b.program, b.timing, a, true);
  auto want = func_test::interpret(c);
  REQUIRE(r.outputs.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(func_test::same_bits(r.outputs[i].tensor, want[i]));
}

TEST_CASE("a network all on the host runs end to end: gemini maps no layer, the program waits for the host") {
  // Softmax and a transpose: nothing for the chip. The program is a start, a
  // wait for the one host step (graph input in, graph output out, both in
  // the step's bytes) and an end; the run takes the step's cycles.
  static const std::string path = [] {
    OnnxBuilder b(13);
    b.input("x", {-1, 4, 3, 5}).output("y", {-1, 3, 4, 5});
    OnnxBuilder::attr(b.node("Softmax", {"x"}, {"s"}), "axis", int64_t{1});
    OnnxBuilder::attr(b.node("Transpose", {"s"}, {"y"}), "perm", std::vector<int64_t>{0, 2, 1, 3});
    std::string p = testing::temp_dir("func_host_models") + "/host_only.onnx";
    testing::write_file(p, b.bytes());
    return p;
  }();
  for (int batch : {1, 2}) {
    CAPTURE(batch);
    const Compiled& c = func_test::compile_model(path, batch, "host_only");
    REQUIRE(host_layer_names(c.graph).size() == 2);
    for (const char* arch : {"zebu-1core", "chip-64tops"}) {
      CAPTURE(arch);
      const auto& a = arch_named(arch);
      gemini::Network net = gemini::build_network(c.graph, a, c.fir_path);
      CHECK(net.layers.empty());
      gemini::CostModel model(net, a);
      gemini::SearchOptions so;
      gemini::SearchResult res = gemini::search(model, so);
      CHECK(res.plan.segments.empty());
      mapping::Mapping m = gemini::to_mapping(res.plan, net, a);
      CHECK(m.segments.empty());
      CHECK(m.batch == batch);
      Built b = func_test::build(c, m, a, testing::temp_dir("func_host_only"));
      CHECK(irgen::check(b.sir, a, &c.graph, "s.json").empty());
      auto report = assembler::check(b.program, a, "p.asm");
      CHECK_MESSAGE(report.ok(), report.text("p.asm"));
      REQUIRE(b.program.size() == 3);
      CHECK(b.program.instructions[0].op() == isa::Opcode::ct_st);
      CHECK(b.program.instructions[1].op() == isa::Opcode::ct_hw);
      CHECK(b.program.instructions[2].op() == isa::Opcode::ct_ed);
      const int64_t io_bytes = 2 * batch * 4 * 3 * 5 * 2;  // float16 input and output
      CHECK(b.program.instructions[1].get(isa::Param::HBYTES) == io_bytes);
      auto steps = step_times(b.program, b.timing, a);
      REQUIRE(steps.size() == 1);
      CHECK(steps.begin()->second.done >= steps.begin()->second.cycles);
      CHECK(end_of(b.timing) - steps.begin()->second.done < 100);
      // gemini's prediction is the program's run.
      CHECK(gemini::CostModel(net, a).evaluate(res.plan, true).cycles == end_of(b.timing));
      func::Result r = func_test::run(c, b, b.program, b.timing, a, true);
      auto want = func_test::interpret(c);
      REQUIRE(r.outputs.size() == want.size());
      for (size_t i = 0; i < want.size(); ++i) CHECK(func_test::same_bits(r.outputs[i].tensor, want[i]));
      CHECK(r.host_layers_checked == 2);
    }
  }
}

namespace {

// libonnx-testdata's node tests (as tests/interp/test_onnx_node_tests.cpp finds them).
std::string onnx_node_dir(const std::string& name) {
  const char* e = std::getenv("CCT_ONNX_TESTDATA");
  std::string d = std::string(e && *e ? e : "/usr/share/libonnx-testdata/data") + "/node/" + name;
  if (!std::filesystem::exists(d + "/model.onnx"))
    FAIL("ONNX test data not found at " << d << " (install libonnx-testdata or set CCT_ONNX_TESTDATA)");
  return d;
}

interp::Tensor read_pb(const std::string& path) {
  REQUIRE_MESSAGE(std::filesystem::exists(path), path << " is missing");
  return frontend::parse_onnx_tensor(testing::read_file(path), path);
}

// A node test compiled at its own batch: the inputs after the first bound as
// constants, calibrated on its input (as tests/zoo does), goldens for it.
Compiled compile_node_test(const std::string& name, std::vector<interp::Tensor>& want) {
  const std::string dir = onnx_node_dir(name), set = dir + "/test_data_set_0/";
  std::vector<std::pair<std::string, std::string>> constants;
  for (int k = 1; std::filesystem::exists(set + "input_" + std::to_string(k) + ".pb"); ++k)
    constants.emplace_back("", set + "input_" + std::to_string(k) + ".pb");
  interp::Tensor x = read_pb(set + "input_0.pb");
  REQUIRE(x.is_float());
  const std::string calib = testing::temp_dir("func_node_calib_" + name);
  write_npy(calib + "/input_0.npy", NpyArray::from_float(x.f, x.shape));
  Compiled c = func_test::compile_model(dir + "/model.onnx", int(x.shape[0]), "node_" + name, constants, calib);
  const std::string compiled_dir = c.dir;
  c.input = NpyArray::from_float(x.f, x.shape);
  c.dir = testing::temp_dir("func_node_data_" + name);
  for (const auto& e : std::filesystem::directory_iterator(compiled_dir))
    if (e.path().extension() == ".npy")
      std::filesystem::copy_file(e.path(), std::filesystem::path(c.dir) / e.path().filename(),
                                 std::filesystem::copy_options::overwrite_existing);
  func_test::write_goldens(c.graph, interp::directory_loader(c.dir), c.input, c.dir);
  for (int k = 0; std::filesystem::exists(set + "output_" + std::to_string(k) + ".pb"); ++k)
    want.push_back(read_pb(set + "output_" + std::to_string(k) + ".pb"));
  return c;
}

// The chain on both architectures (gemini's mapping, irgen, asm, the timing
// and functional models): every output bit for bit the FIR interpreter's.
void chain_bit_for_bit(const Compiled& c) {
  const auto want = func_test::interpret(c);
  for (const char* arch : {"zebu-1core", "chip-64tops"}) {
    CAPTURE(arch);
    const auto& a = arch_named(arch);
    gemini::Network net = gemini::build_network(c.graph, a, c.fir_path);
    gemini::CostModel model(net, a);
    gemini::SearchResult res = gemini::search(model, gemini::SearchOptions{});
    Built b = func_test::build(c, gemini::to_mapping(res.plan, net, a), a, testing::temp_dir("func_node_chain"));
    auto report = assembler::check(b.program, a, "p.asm");
    CHECK_MESSAGE(report.ok(), report.text("p.asm"));
    func::Result r = func_test::run(c, b, b.program, b.timing, a, true);
    REQUIRE(r.outputs.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) CHECK(func_test::same_bits(r.outputs[i].tensor, want[i]));
  }
}

}  // namespace

// Every LayerNormalization node test (axis anywhere, so over one or several
// trailing axes, batch axis included; Mean and InvStdDev as graph outputs),
// whatever the tests/zoo matrix can and cannot hold (it repeats samples to
// the batch, which a normalisation over axis 0 does not allow). Each output
// against ONNX's: the layers run in fp32 on the host, but the FIR holds its
// float tensors as float16 (the input it reads, the outputs it writes), a
// relative error of 2^-11 per rounding, which the normalisation carries
// into Y amplified by |scale| / stddev (about 1 to 3 for these random
// data): 2^-9 * max(1, |expected|) (1.95e-3) bounds it with room (measured:
// at most 9.1e-4, in Y of test_layer_normalization_4d_axis_negative_1), and
// a wrong axis or statistic is off by far more (an epsilon 1e-2 larger:
// 5e-3 to 1.7e-2).
TEST_CASE("libonnx-testdata LayerNormalization node tests: Y, Mean and InvStdDev close to ONNX's, the chain bit for bit") {
  const char* names[] = {"2d_axis0", "2d_axis1", "2d_axis_negative_1", "2d_axis_negative_2", "3d_axis0_epsilon",
                         "3d_axis1_epsilon", "3d_axis2_epsilon", "3d_axis_negative_1_epsilon",
                         "3d_axis_negative_2_epsilon", "3d_axis_negative_3_epsilon", "4d_axis0", "4d_axis1", "4d_axis2",
                         "4d_axis3", "4d_axis_negative_1", "4d_axis_negative_2", "4d_axis_negative_3",
                         "4d_axis_negative_4", "default_axis"};
  for (const char* suffix : names) {
    const std::string name = std::string("test_layer_normalization_") + suffix;
    CAPTURE(name);
    std::vector<interp::Tensor> want;
    Compiled c = compile_node_test(name, want);
    REQUIRE(want.size() == 3);  // Y, Mean, InvStdDev
    for (const auto& l : c.graph.layers()) CHECK(l.device == fir::Device::Cpu);
    const auto got = func_test::interpret(c);
    REQUIRE(got.size() == want.size());
    for (size_t o = 0; o < want.size(); ++o) {
      CAPTURE(o);
      REQUIRE(got[o].shape == want[o].shape);
      double worst = 0;
      for (int64_t k = 0; k < want[o].numel(); ++k) {
        const double g = got[o].f[size_t(k)], w = want[o].f[size_t(k)];
        worst = std::max(worst, std::fabs(g - w) / std::max(1.0, std::fabs(w)));
      }
      CHECK_MESSAGE(worst <= std::ldexp(1.0, -9), "largest error relative to max(1, |expected|): " << worst);
    }
    chain_bit_for_bit(c);
  }
}

// 1-D pooling and transposed convolution run on the chip as the 2-D operator
// over a row ([N, C, 1, L]) between host reshapes. INT8: the input and the
// output are rounded to the nearest code (calibrated on this input, so the
// output's scale is about its largest value / 127), half a step each; two
// output steps bound that with room (a wrong window or padding gives errors
// of the order of the values).
TEST_CASE("libonnx-testdata 1-D MaxPool, AveragePool and ConvTranspose node tests run on the chip, close to ONNX's, bit for bit") {
  for (const char* name : {"test_maxpool_1d_default", "test_averagepool_1d_default", "test_convtranspose_1d"}) {
    CAPTURE(name);
    std::vector<interp::Tensor> want;
    Compiled c = compile_node_test(name, want);
    REQUIRE(want.size() == 1);
    int npu = 0;
    for (const auto& l : c.graph.layers()) npu += l.device == fir::Device::Npu && l.op != fir::Op::Quantize;
    CHECK(npu == 1);  // the pooling or convolution itself
    // The reshape to the row moves the chip's bytes ([N, C, L] is stored as
    // [N, L, C]) unless C = 1: then the host runs it, else it is read through.
    const fir::HostPlan plan = fir::host_plan(c.graph, "f.json");
    int rows = 0;
    for (const auto& l : c.graph.layers())
      if (l.op == fir::Op::Reshape && l.output_shape[0].size() == 4) {
        ++rows;
        CHECK(plan.is_pass_through(l.name) == (l.input_shape[0][1] == 1));
        CHECK((plan.step(l.name) >= 0) == (l.input_shape[0][1] != 1));
      }
    CHECK(rows == 1);
    const auto got = func_test::interpret(c);
    REQUIRE(got.size() == 1);
    REQUIRE(got[0].shape == want[0].shape);
    double range = 0, worst = 0;
    for (float w : want[0].f) range = std::max(range, double(std::fabs(w)));
    for (int64_t k = 0; k < want[0].numel(); ++k) worst = std::max(worst, std::fabs(double(got[0].f[size_t(k)]) - want[0].f[size_t(k)]));
    CHECK_MESSAGE(worst <= 2 * range / 127, "largest error " << worst << ", largest value " << range);
    chain_bit_for_bit(c);
  }
}
