// zebusim --functional: layouts, the instruction semantics end to end against
// the quantized FIR interpreter, the divergence finder, errors, the tool.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "../frontend/onnx_builder.hpp"
#include "../testing/testing.hpp"
#include "asm/asm.hpp"
#include "footprint/layout.hpp"
#include "func/machine.hpp"
#include "func_test_util.hpp"
#include "grouped_model.hpp"
#include "interp/int8_ops.hpp"
#include "irgen/irgen.hpp"
#include "isa/program_io.hpp"
#include "mapping/mapping_fir.hpp"
#include "sim/sim.hpp"
#include "support/error.hpp"
#include "support/io.hpp"
#include "support/npy.hpp"

namespace fs = std::filesystem;
using namespace cct;
using func_test::Built;
using func_test::Compiled;
using func_test::arch_named;

namespace {

// The error a functional run throws, or an empty message.
std::pair<int, std::string> run_error(const Compiled& c, const Built& b, const isa::Program& p, const arch::Architecture& a) {
  try {
    func_test::run(c, b, p, func_test::retime(p, a), a, true);
  } catch (const Error& e) {
    return {e.code(), e.what()};
  }
  return {0, ""};
}

size_t nth(const isa::Program& p, isa::Opcode op, int n) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p.instructions[i].op() == op && n-- == 0) return i;
  FAIL("the program has too few " << isa::mnemonic(op));
  return 0;
}

}  // namespace

TEST_CASE("layouts: L2 boxes pad each pixel's channels, weight records carry bias and channel scale") {
  const auto& a = arch_named("zebu-1core");
  int32_t chw[3] = {3, 4, 5};
  func::Box b = func::make_box(a, chw, 2);
  CHECK(b.pixel == 8);  // 3 FP16 channels = 6 bytes, padded to 8
  CHECK(b.row() == 40);
  CHECK(b.offset(1, 2, 3, 4) == ((1 * 4 + 3) * 5 + 4) * 8 + 2 * 2);
  func::Box packed = func::make_box(a, chw, 2, true);
  CHECK(packed.pixel == 6);

  func::WeightRecord r = func::weight_record(a, 3, 2, 2, 1);
  CHECK(r.cpad == 8);
  CHECK(r.bytes() == 8 * 4 + a.core.weight_extra_bytes_per_out_channel);
  // Two output channels of a [2, 3, 2, 2] kernel, values k*100 + c*10 + tap.
  std::vector<int8_t> k(24);
  for (int o = 0; o < 2; ++o)
    for (int c = 0; c < 3; ++c)
      for (int t = 0; t < 4; ++t) k[size_t((o * 3 + c) * 4 + t)] = int8_t(o * 50 + c * 10 + t);
  float bias[2] = {1.5f, -2.25f}, scale[2] = {0.125f, 3.0f};
  std::vector<uint8_t> out;
  func::pack_weights(r, k.data(), bias, scale, 1, 1, out);  // channel 1 only
  REQUIRE(out.size() == size_t(r.bytes()));
  for (int t = 0; t < 4; ++t) {
    for (int c = 0; c < 3; ++c) CHECK(int8_t(out[size_t(t * 8 + c)]) == 50 + c * 10 + t);
    for (int c = 3; c < 8; ++c) CHECK(out[size_t(t * 8 + c)] == 0);
  }
  float got_bias, got_scale;
  std::memcpy(&got_bias, out.data() + r.kernel_bytes() + func::kBiasOffset, 4);
  std::memcpy(&got_scale, out.data() + r.kernel_bytes() + func::kChannelScaleOffset, 4);
  CHECK(got_bias == -2.25f);
  CHECK(got_scale == 3.0f);
}

TEST_CASE("blocks: overlap is exact, not by extent") {
  func::Block a{func::Space::L2, 0, 0, 1, 2, 1, 0, 64, 8, 8};  // bytes [0, 8) and [64, 72)
  func::Block b = a;
  b.base = 16;  // [16, 24) and [80, 88): inside a's extent, no shared byte
  CHECK_FALSE(func::blocks_overlap(a, b));
  b.base = 60;  // [60, 68) meets [64, 72)
  CHECK(func::blocks_overlap(a, b));
  b.core = 1;  // another core's L2
  CHECK_FALSE(func::blocks_overlap(a, b));
}

TEST_CASE("the tiny ResNet runs bit for bit like the interpreter, every layer matching its golden") {
  struct Case {
    const char* arch;
    int batch;
    bool pipelined;
    int row_groups;
  } cases[] = {{"zebu-1core", 1, false, 1}, {"zebu-1core", 4, false, 1}, {"chip-64tops", 1, true, 1},
               {"chip-64tops", 4, true, 1},  {"chip-64tops", 1, true, 4},  {"chip-64tops", 4, true, 3}};
  for (const auto& k : cases) {
    CAPTURE(k.arch);
    CAPTURE(k.batch);
    CAPTURE(k.row_groups);
    const auto& a = arch_named(k.arch);
    const Compiled& c = func_test::tiny(k.batch);
    auto m = k.pipelined ? func_test::pipeline(c.graph, k.arch, a.core_count(), k.batch > 1 ? 2 : 1)
                         : func_test::single_core(c.graph, k.arch);
    // Row stripes pipelining through each segment (uneven with 3).
    for (auto& s : m.segments) s.row_groups = k.row_groups;
    Built b = func_test::build(c, m, a, testing::temp_dir("func_tiny"));
    func::Result r = func_test::run(c, b, b.program, b.timing, a, true);
    func_test::check_bit_exact(c, r);
    CHECK(r.elements_checked > 0);
    int64_t macs = 0;
    for (const auto& l : c.graph.layers()) macs += fir::macs(l);
    CHECK(r.macs == macs);
    if (k.pipelined) {
      std::set<int32_t> cores;
      for (const auto& in : b.program.instructions) cores.insert(in.mapping.core);
      CHECK(cores.size() > 1);
    }
  }
}

// Segments whose layers share cores (formats/Mapping_Format.md, "Layers
// sharing a core"): each batch group passes through the segment's layers on
// the same core before the next group starts.
TEST_CASE("layers sharing a core in a segment run bit for bit, one batch group after another") {
  struct Case {
    const char* arch;
    int per_segment;  // consecutive layers per segment
    int cores;        // layer j of a segment on core j % cores
    int groups;
  } cases[] = {{"zebu-1core", 3, 1, 2}, {"zebu-1core", 5, 1, 4}, {"chip-64tops", 4, 2, 2}, {"chip-64tops", 6, 3, 4}};
  for (const auto& k : cases) {
    const std::string arch_name = k.arch;
    CAPTURE(arch_name);
    CAPTURE(k.per_segment);
    CAPTURE(k.groups);
    const auto& a = arch_named(k.arch);
    const Compiled& c = func_test::tiny(4);
    mapping::Mapping single = func_test::single_core(c.graph, k.arch), m = single;
    m.segments.clear();
    std::vector<mapping::LayerMapping> layers;
    for (const auto& seg : single.segments)
      for (const auto& l : seg.layers) layers.push_back(l);
    for (size_t i = 0; i < layers.size(); i += size_t(k.per_segment)) {
      mapping::Segment seg;
      seg.batch_groups = k.groups;
      for (size_t j = i; j < std::min(layers.size(), i + size_t(k.per_segment)); ++j) {
        layers[j].cores = {int64_t((j - i) % size_t(k.cores))};
        seg.layers.push_back(layers[j]);
      }
      m.segments.push_back(seg);
    }
    REQUIRE(mapping::check_against_fir(m, c.graph, "m.json").empty());
    Built b = func_test::build(c, m, a, testing::temp_dir("func_shared_cores"));
    CHECK(assembler::check(b.program, a, "p.asm").ok());
    func::Result r = func_test::run(c, b, b.program, b.timing, a, true);
    func_test::check_bit_exact(c, r);
    // gemini's model prices it as irgen builds it (the groups in turn on each core).
    const std::string dir = testing::temp_dir("func_shared_cores_gemini");
    write_output(dir + "/m.json", mapping::format_mapping(m));
    auto t = testing::run_tool("gemini", c.fir_path + " --arch " + arch_name + " --evaluate " + dir + "/m.json");
    REQUIRE_MESSAGE(t.exit_code == 0, t.err);
    const int64_t predicted = testing::integer_after(t.err, "predicted latency");
    int64_t end = 0;
    for (const auto& x : b.timing) end = std::max(end, x.end);
    MESSAGE(arch_name << ", " << k.per_segment << " layers a segment, " << k.groups << " groups: gemini predicts " << predicted
                      << " cycles, zebusim " << end);
    // Measured: 3-11% above zebusim on this network of a few thousand cycles
    // (the model does not count irgen's overlaps with DRAM).
    CHECK(double(predicted) == doctest::Approx(double(end)).epsilon(0.12));
  }
}

TEST_CASE("grouped, depthwise and dilated convolutions run bit for bit, alone on a core and split across cores") {
  for (std::string arch : {"zebu-1core", "chip-64tops"})
    for (int batch : {1, 4}) {
      CAPTURE(arch);
      CAPTURE(batch);
      const auto& a = arch_named(arch);
      const Compiled& c = func_test::grouped_model(batch);
      mapping::Mapping m = func_test::single_core(c.graph, arch);
      if (a.core_count() >= 4)
        // Every grouped layer split in four along k (whole groups per core), or k and w.
        for (auto& s : m.segments)
          for (auto& lm : s.layers) {
            const fir::Layer* l = c.graph.find(lm.layer);
            if (l->group_count() <= 1) continue;
            lm.cores = {0, 1, 2, 3};
            lm.partition.k = l->group_count() % 4 == 0 ? 4 : 2;
            lm.partition.w = 4 / lm.partition.k;
          }
      Built b = func_test::build(c, m, a, testing::temp_dir("func_grouped"));
      func::Result r = func_test::run(c, b, b.program, b.timing, a, true);
      auto want = func_test::interpret(c);
      REQUIRE(r.outputs.size() == want.size());
      CHECK(func_test::same_bits(r.outputs[0].tensor, want[0]));
      int64_t npu_layers = 0, macs = 0, grouped_tiles = 0, resets = 0;
      for (const auto& l : c.graph.layers()) npu_layers += l.device == fir::Device::Npu, macs += fir::macs(l);
      CHECK(r.layers_checked == npu_layers);
      // True MACs: the functional run and the timing model count the groups' own.
      CHECK(r.macs == macs);
      CHECK(sim::simulate(b.program, a).stats.macs == macs);
      for (const auto& in : b.program.instructions)
        if (in.op() == isa::Opcode::pe_cfg_gp) (in.get(isa::Param::GROUPS) > 1 ? grouped_tiles : resets) += 1;
      CHECK(grouped_tiles > 0);
      CHECK(resets > 0);  // back to dense (and undilated) after the grouped layers
    }
}

// A network ending on the host, as person_detect.tflite does: convolution,
// pooling and dense on the accelerator, then the dense's reshape and a
// softmax on the cpu.
const Compiled& softmax_model(int batch) {
  static std::string path;
  if (path.empty()) {
    testing::OnnxBuilder b;
    b.input("x", {-1, 3, 8, 8}).output("y", {-1, 5});
    b.random_init("w", {8, 3, 3, 3}).random_init("cb", {8});
    testing::OnnxBuilder::attr(b.node("Conv", {"x", "w", "cb"}, {"c"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
    b.node("Relu", {"c"}, {"r"});
    b.node("GlobalAveragePool", {"r"}, {"p"});
    b.node("Flatten", {"p"}, {"f"});
    b.random_init("fw", {5, 8}).random_init("fb", {5});
    testing::OnnxBuilder::attr(b.node("Gemm", {"f", "fw", "fb"}, {"d"}), "transB", int64_t{1});
    testing::OnnxBuilder::attr(b.node("Softmax", {"d"}, {"y"}), "axis", int64_t{1});
    path = testing::temp_dir("func_softmax_model") + "/softmax.onnx";
    write_output(path, b.bytes());
  }
  return func_test::compile_model(path, batch, "softmax");
}

TEST_CASE("host layers at the end run on the interpreter: the graph output bit for bit, checked against the goldens") {
  for (std::string arch : {"zebu-1core", "chip-64tops"})
    for (int batch : {1, 4}) {
      CAPTURE(arch);
      CAPTURE(batch);
      const auto& a = arch_named(arch);
      const Compiled& c = softmax_model(batch);
      std::vector<std::string> host;
      int64_t npu_layers = 0;
      for (const fir::Layer* l : c.graph.in_index_order()) {
        if (l->device == fir::Device::Cpu) host.push_back(l->name);
        npu_layers += l->device == fir::Device::Npu;
      }
      REQUIRE(host.size() == 2);  // the dense's reshape, then the softmax
      REQUIRE(c.graph.find(host[1])->op == fir::Op::Softmax);
      auto m = a.core_count() > 1 ? func_test::pipeline(c.graph, arch, a.core_count(), batch > 1 ? 2 : 1)
                                  : func_test::single_core(c.graph, arch);
      Built b = func_test::build(c, m, a, testing::temp_dir("func_softmax"));
      func::Result r = func_test::run(c, b, b.program, b.timing, a, true);
      auto want = func_test::interpret(c);
      REQUIRE(r.outputs.size() == 1);
      CHECK(r.outputs[0].tensor.dtype == "float16");
      CHECK(r.outputs[0].tensor.shape == fir::Shape{batch, 5});
      CHECK(func_test::same_bits(r.outputs[0].tensor, want[0]));
      CHECK(r.layers_checked == npu_layers);
      CHECK(r.host_layers == host);
      CHECK(r.host_layers_checked == 2);
    }
  const auto& a = arch_named("zebu-1core");
  const Compiled& c = softmax_model(1);
  Built b = func_test::build(c, func_test::single_core(c.graph, "zebu-1core"), a, testing::temp_dir("func_softmax_bad"));
  const fir::Layer* dense = nullptr;
  for (const auto& l : c.graph.layers())
    if (l.op == fir::Op::Dense) dense = &l;
  REQUIRE(dense);
  // The host computes on the accelerator's data: another bias in the dense
  // (given to the program only) changes the softmax the run returns.
  func::NpyLoader changed = [&](const std::string& f) {
    NpyArray x = read_npy(c.dir + "/" + f);
    if (f == *dense->file("b")) {
      auto v = x.to_float();
      for (auto& e : v) e += 1.5f * float(&e - v.data()) - 3.0f;
      x = NpyArray::from_float(v, x.shape);
    }
    return x;
  };
  func::Options o;
  func::Result r = func::run(b.program, b.timing, a, c.graph, b.sir, changed, {c.input}, o);
  CHECK_FALSE(func_test::same_bits(r.outputs[0].tensor, func_test::interpret(c)[0]));
  CHECK(r.host_layers.size() == 2);
  // A golden softmax that is not the one the host computes is a divergence at the host layer.
  std::string dir = testing::temp_dir("func_softmax_golden");
  for (const auto& e : fs::directory_iterator(c.dir)) fs::copy(e.path(), fs::path(dir) / e.path().filename());
  const fir::Layer* softmax = c.graph.find(r.host_layers[1]);
  std::string gf = dir + "/" + *softmax->file("output_activation1");
  auto g = interp::QTensor::from_npy(read_npy(gf), gf);
  g.f[3] = g.f[3] == 0.25f ? 0.5f : 0.25f;
  write_npy(gf, g.to_npy());
  o.golden_dir = dir;
  try {
    func::run(b.program, b.timing, a, c.graph, b.sir, func::directory_npy_loader(c.dir), {c.input}, o);
    FAIL("a wrong host golden was not reported");
  } catch (const Error& e) {
    INFO(std::string(e.what()));
    CHECK(e.code() == kExitCheckFailed);
    CHECK(std::string(e.what()).find("divergence at host layer '" + softmax->name + "' (softmax") != std::string::npos);
    CHECK(std::string(e.what()).find("its result has [0, 3]") != std::string::npos);
  }
}

// Accelerator layers reading host results other than reshapes run since
// host steps (the program's round trip through the host), checked against
// the goldens; a host layer reading an accelerator output the program keeps
// in L2 only is refused before the run, naming the layers.
TEST_CASE("host layers between accelerator layers run; a host input the program never stores is refused") {
  const auto& a = arch_named("zebu-1core");
  auto compile = [&](testing::OnnxBuilder& b, const std::string& tag) -> const Compiled& {
    std::string path = testing::temp_dir("func_host_" + tag) + "/" + tag + ".onnx";
    write_output(path, b.bytes());
    return func_test::compile_model(path, 1, tag);
  };
  auto error_of = [&](const Compiled& c) -> std::pair<int, std::string> {
    try {
      Built b = func_test::build(c, func_test::single_core(c.graph, "zebu-1core"), a, testing::temp_dir("func_host_built"));
      func::Options o;
      o.fir_file = "m.fir.json";
      o.sir_file = "m.sir.json";
      o.golden_dir = c.dir;
      func::run(b.program, b.timing, a, c.graph, b.sir, func::directory_npy_loader(c.dir), {c.input}, o);
    } catch (const Error& e) {
      return {e.code(), e.what()};
    }
    return {0, ""};
  };
  {  // conv -> softmax (host) -> conv: a host step between the convolutions
    testing::OnnxBuilder b;
    b.input("x", {1, 3, 8, 8}).output("y", {1, 4, 8, 8});
    b.random_init("w1", {4, 3, 3, 3}).random_init("b1", {4}).random_init("w2", {4, 4, 3, 3}).random_init("b2", {4});
    testing::OnnxBuilder::attr(b.node("Conv", {"x", "w1", "b1"}, {"c"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
    testing::OnnxBuilder::attr(b.node("Softmax", {"c"}, {"s"}), "axis", int64_t{1});
    testing::OnnxBuilder::attr(b.node("Conv", {"s", "w2", "b2"}, {"y"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
    int code;
    std::string msg;
    std::tie(code, msg) = error_of(compile(b, "host_middle"));
    INFO(msg);
    CHECK(code == 0);
  }
  {  // an int8 transpose on the host before the output's dequantization on the accelerator
    testing::OnnxBuilder b;
    b.input("x", {1, 3, 8, 8}).output("y", {1, 4}).output("t", {1, 4, 8, 8});
    b.random_init("w1", {4, 3, 3, 3}).random_init("b1", {4}).random_init("fw", {4, 4}).random_init("fb", {4});
    testing::OnnxBuilder::attr(b.node("Conv", {"x", "w1", "b1"}, {"c"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
    b.node("GlobalAveragePool", {"c"}, {"p"});
    b.node("Flatten", {"p"}, {"f"});
    testing::OnnxBuilder::attr(b.node("Gemm", {"f", "fw", "fb"}, {"y"}), "transB", int64_t{1});
    testing::OnnxBuilder::attr(b.node("Transpose", {"c"}, {"t"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
    int code;
    std::string msg;
    std::tie(code, msg) = error_of(compile(b, "host_transpose"));
    INFO(msg);
    CHECK(code == 0);
  }
  {  // a Scheduler IR without the store of the dense the host reads
    const Compiled& c = softmax_model(1);
    Built b = func_test::build(c, func_test::single_core(c.graph, "zebu-1core"), a, testing::temp_dir("func_host_nostore"));
    std::string dense;
    for (const auto& l : c.graph.layers())
      if (l.op == fir::Op::Dense) dense = l.name;
    sir::Schedule s = b.sir;
    std::erase_if(s.dram.in, [&](const sir::DramStore& st) { return st.layer_name == dense; });
    REQUIRE(s.dram.in.size() < b.sir.dram.in.size());
    func::Options o;
    o.sir_file = "m.sir.json";
    try {
      func::run(b.program, b.timing, a, c.graph, s, func::directory_npy_loader(c.dir), {c.input}, o);
      FAIL("a host layer reading an unstored layer was not refused");
    } catch (const Error& e) {
      INFO(std::string(e.what()));
      CHECK(e.code() == kExitInvalidInput);
      // The reshape after the dense is read through: the softmax behind it reads the dense.
      CHECK(std::string(e.what()).find("m.sir.json: layer '" + dense + "' feeds host layer '") == 0);
      CHECK(std::string(e.what()).find("(softmax), but the program never stores it to DRAM") != std::string::npos);
    }
  }
}

// A softmax branch on the host beside the accelerator's path (the
// convolution's output dequantized on the accelerator, stored, read by the
// host): both graph outputs come out of the run.
TEST_CASE("a host branch to a second graph output runs on the interpreter") {
  const auto& a = arch_named("zebu-1core");
  testing::OnnxBuilder b;
  b.input("x", {1, 3, 8, 8}).output("y", {1, 4}).output("s", {1, 4, 8, 8});
  b.random_init("w1", {4, 3, 3, 3}).random_init("b1", {4}).random_init("fw", {4, 4}).random_init("fb", {4});
  testing::OnnxBuilder::attr(b.node("Conv", {"x", "w1", "b1"}, {"c"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
  b.node("GlobalAveragePool", {"c"}, {"p"});
  b.node("Flatten", {"p"}, {"f"});
  testing::OnnxBuilder::attr(b.node("Gemm", {"f", "fw", "fb"}, {"y"}), "transB", int64_t{1});
  testing::OnnxBuilder::attr(b.node("Softmax", {"c"}, {"s"}), "axis", int64_t{1});
  std::string path = testing::temp_dir("func_host_softmax_branch") + "/branch.onnx";
  write_output(path, b.bytes());
  const Compiled& c = func_test::compile_model(path, 1, "softmax_branch");
  Built built = func_test::build(c, func_test::single_core(c.graph, "zebu-1core"), a, testing::temp_dir("func_host_branch_built"));
  func::Result r = func_test::run(c, built, built.program, built.timing, a, true);
  auto want = func_test::interpret(c);
  REQUIRE(r.outputs.size() == 2);
  for (size_t i = 0; i < 2; ++i) CHECK(func_test::same_bits(r.outputs[i].tensor, want[i]));
  CHECK(r.host_layers.size() == 2);  // the dense's reshape and the softmax
  CHECK(r.host_layers_checked == 2);
}

// An addition on a core where one operand is a window of a wider tensor
// the core computed earlier (the producer cut in 2 along W, the addition in
// 4): both operands of a vp_self share one box (vp_cfg_fm STile), so irgen
// copies the window out and asm reads the copy. Reading the wider tensor in
// place gave wrong values from the second row on (ResNet-34 b4 with gemini's
// mapping on chip-64tops).
TEST_CASE("an addition reading a window of a wider tensor on its core computes the golden values") {
  const auto& a = arch_named("chip-64tops");
  for (int batch : {1, 4}) {
    CAPTURE(batch);
    const Compiled& c = func_test::tiny(batch);
    mapping::Mapping m = func_test::single_core(c.graph, "chip-64tops");
    for (auto& seg : m.segments)
      for (auto& l : seg.layers) {
        if (l.layer == "MaxPool_3_1") l.cores = {0, 1}, l.partition = {1, 1, 1, 2};
        if (l.layer == "Conv_7" || l.layer == "Add_9_1") l.cores = {0, 1, 2, 3}, l.partition = {1, 1, 1, 4};
      }
    Built b = func_test::build(c, m, a, testing::temp_dir("func_window"));
    // The situation: on core 0 the pool's output is wider than the addition's.
    auto width = [&](const std::string& layer) {
      for (const auto& w : b.sir.cores.at(0).workloads)
        if (w.layer_name == layer) return w.upper[3] - w.lower[3] + 1;
      return int64_t(-1);
    };
    REQUIRE(width("MaxPool_3_1") == 4);
    REQUIRE(width("Add_9_1") == 2);
    CHECK(irgen::check(b.sir, a, &c.graph, "s.json").empty());
    func::Result r = func_test::run(c, b, b.program, b.timing, a, true);
    auto want = func_test::interpret(c);
    REQUIRE(r.outputs.size() == want.size());
    CHECK(func_test::same_bits(r.outputs[0].tensor, want[0]));
    // Without the copy the addition would read the pool's wider tensor:
    // irgen --check and asm both refuse it.
    sir::Schedule bad = b.sir;
    bool removed = false;
    for (auto& w : bad.cores.at(0).workloads) {
      if (w.layer_name != "Add_9_1") continue;
      for (size_t i = 0; i < w.buffer.size() && !removed; ++i) {
        const auto& src = w.buffer[i].source;
        bool copy = src && src->size() == 1 && (*src)[0].layer_name && *(*src)[0].layer_name == "MaxPool_3_1" &&
                    w.buffer[i].upper[3] - w.buffer[i].lower[3] == 1;
        if (copy) w.buffer.erase(w.buffer.begin() + std::ptrdiff_t(i)), removed = true;
      }
    }
    REQUIRE(removed);
    auto problems = irgen::check(bad, a, &c.graph, "s.json");
    bool named = false;
    for (const auto& pr : problems) named |= pr.find("share one [C, H, W] box") != std::string::npos;
    CHECK_MESSAGE(named, problems.size() << " problems");
    CHECK_THROWS_WITH_AS(assembler::assemble(bad, c.graph, a), doctest::Contains("buffers of one shape"), Error);
  }
}

// A constant Pad is a 1x1 convolution padded by more than its kernel: cut
// along H and W, parts of its output read no input at all (test_constant_pad
// on chip-64tops). Such a part reads the input's nearest edge row or column,
// with negative padding on the far side (formats/Scheduler_IR_Format.md), and
// computes padding only.
TEST_CASE("a convolution part whose windows lie wholly in the padding reads the edge and computes the golden values") {
  static const std::string model = [] {
    testing::OnnxBuilder b(13);
    b.input("x", {-1, 3, 4, 5}).output("y", {-1, 3, 10, 16});
    b.init_i64("pads", {8}, {0, 0, 2, 5, 0, 0, 4, 6});  // columns 0..3 and 12..15 of the output are padding only
    b.init("value", {}, {0.0f});
    b.node("Pad", {"x", "pads", "value"}, {"y"});
    std::string path = testing::temp_dir("func_pad_model") + "/pad.onnx";
    write_output(path, b.bytes());
    return path;
  }();
  const auto& a = arch_named("chip-64tops");
  for (int batch : {1, 2}) {
    CAPTURE(batch);
    const Compiled& c = func_test::compile_model(model, batch, "func_pad");
    mapping::Mapping m = func_test::single_core(c.graph, "chip-64tops");
    int cut = 0;
    for (auto& seg : m.segments)
      for (auto& l : seg.layers)
        if (c.graph.find(l.layer)->op == fir::Op::Conv2d) l.cores = {0, 1, 2, 3, 4, 5, 6, 7}, l.partition = {1, 1, 2, 4}, ++cut;
    REQUIRE(cut == 1);
    Built b = func_test::build(c, m, a, testing::temp_dir("func_pad"));
    int negative = 0;
    for (const auto& cs : b.sir.cores)
      for (const auto& w : cs.workloads)
        for (const auto& t : w.tile_info)
          for (int64_t p : t.tile_padding_tblr) negative += p < 0;
    CHECK(negative > 0);
    CHECK(irgen::check(b.sir, a, &c.graph, "s.json").empty());
    func::Result r = func_test::run(c, b, b.program, b.timing, a, true);
    auto want = func_test::interpret(c);
    REQUIRE(r.outputs.size() == want.size());
    CHECK(func_test::same_bits(r.outputs[0].tensor, want[0]));
  }
}

TEST_CASE("divergence finder: a shifted address is caught and the layer reading it named") {
  const auto& a = arch_named("zebu-1core");
  const Compiled& c = func_test::tiny(1);
  Built b = func_test::build(c, func_test::single_core(c.graph, "zebu-1core"), a, testing::temp_dir("func_shift"));
  // The third convolution writes its output 64 bytes off.
  isa::Program p = b.program;
  size_t i = nth(p, isa::Opcode::pe_conv, 2);
  p.instructions[i].set(isa::Param::DTaddr, p.instructions[i].get(isa::Param::DTaddr) + 64);
  int code;
  std::string msg;
  std::tie(code, msg) = run_error(c, b, p, a);
  INFO(msg);
  CHECK(code == kExitCheckFailed);
  CHECK(msg.find("divergence in layer '") != std::string::npos);
  CHECK(msg.find("reads operand") != std::string::npos);
  CHECK(msg.find("golden") != std::string::npos);
  // The reader is a consumer of the shifted layer.
  const fir::Layer* shifted = nullptr;
  for (const auto& l : c.graph.layers())
    if (l.layer_index == p.instructions[i].mapping.slyr) shifted = &l;
  REQUIRE(shifted);
  bool names_consumer = false;
  for (const auto& n : shifted->next_layer) names_consumer |= msg.find("divergence in layer '" + n + "'") != std::string::npos;
  CHECK(names_consumer);

  // A shifted weight address reads weight records off their boundaries:
  // the timing run already refuses it (lib/footprint), naming the line.
  p = b.program;
  i = nth(p, isa::Opcode::pe_conv, 1);
  p.instructions[i].set(isa::Param::SWaddr, p.instructions[i].get(isa::Param::SWaddr) + 1);
  std::tie(code, msg) = run_error(c, b, p, a);
  INFO(msg);
  CHECK(code == kExitInvalidInput);
  CHECK(msg.find(":" + std::to_string(i + 1) + ": pe_conv: reads WL0") != std::string::npos);

  // A wrong output scale: the convolution's own output is wrong.
  p = b.program;
  size_t pm = i;
  while (p.instructions[pm].op() != isa::Opcode::pe_cfg_pm) --pm;
  p.instructions[pm].set_float(isa::Param::QK, p.instructions[pm].number(isa::Param::QK) * 2);
  std::tie(code, msg) = run_error(c, b, p, a);
  INFO(msg);
  CHECK(code == kExitCheckFailed);
  CHECK(msg.find("wrote") != std::string::npos);
  CHECK(msg.find("while its operands matched") != std::string::npos);
}

TEST_CASE("divergence finder: a moved token is caught") {
  const auto& a = arch_named("zebu-1core");
  const Compiled& c = func_test::tiny(1);
  Built b = func_test::build(c, func_test::single_core(c.graph, "zebu-1core"), a, testing::temp_dir("func_token"));
  // The first convolution no longer waits for the quantization feeding it;
  // the token goes to the next PE instruction instead (the counts balance).
  isa::Program p = b.program;
  size_t i = nth(p, isa::Opcode::pe_conv, 0);
  auto& first = p.instructions[i];
  REQUIRE(first.prev.contains(isa::Queue::VP));
  isa::QueueList kept;
  for (isa::Queue q : first.prev)
    if (q != isa::Queue::VP) kept.push_back(q);
  first.prev = kept;
  p.instructions[nth(p, isa::Opcode::pe_conv, 1)].prev.push_back(isa::Queue::VP);
  int code;
  std::string msg;
  std::tie(code, msg) = run_error(c, b, p, a);
  INFO(msg);
  CHECK(code != 0);
  CHECK((msg.find("race") != std::string::npos || msg.find("divergence") != std::string::npos));
  CHECK(msg.find("model.asm:" + std::to_string(i + 1)) != std::string::npos);
}

// The same two corruptions in core-to-core traffic on chip-64tops (one
// layer per core): a received piece landing one channel group off, and a
// load no longer waiting for the piece it reads.
TEST_CASE("divergence finder: a shifted si_mov address and a moved SI token on chip-64tops are caught") {
  const auto& a = arch_named("chip-64tops");
  const Compiled& c = func_test::tiny(1);
  Built b = func_test::build(c, func_test::pipeline(c.graph, "chip-64tops", a.core_count(), 1), a,
                             testing::temp_dir("func_multicore_corrupt"));
  REQUIRE(run_error(c, b, b.program, a).first == 0);
  auto layer_name = [&](int32_t index) {
    for (const auto& l : c.graph.layers())
      if (l.layer_index == index) return l.name;
    return std::string("?");
  };
  // The first si_mov carrying data (not a one-element completion message).
  size_t si = b.program.size();
  for (size_t i = 0; i < b.program.size() && si == b.program.size(); ++i) {
    const auto& in = b.program.instructions[i];
    if (in.op() != isa::Opcode::si_mov) continue;
    auto tile = in.list(isa::Param::Tile);
    int64_t n = 1;
    for (auto d : tile) n *= d;
    if (n > 64) si = i;
  }
  REQUIRE(si < b.program.size());
  {
    isa::Program p = b.program;
    p.instructions[si].set(isa::Param::DTaddr, p.instructions[si].get(isa::Param::DTaddr) + 8);
    int code;
    std::string msg;
    std::tie(code, msg) = run_error(c, b, p, a);
    INFO(msg);
    CHECK(code == kExitCheckFailed);
    // The layer reading the received piece is named.
    // (clyr: a receive may be issued by the workload before its reader.)
    REQUIRE(!b.program.instructions[si].mapping.clyr.empty());
    CHECK(msg.find("divergence in layer '" + layer_name(b.program.instructions[si].mapping.clyr[0]) + "'") !=
          std::string::npos);
  }
  {
    // The first instruction waiting for an si_mov that has a later
    // instruction of its kind on its core no longer waits; that later one
    // does instead (the counts balance).
    isa::Program p = b.program;
    size_t i = p.size(), j = p.size();
    for (size_t k = 0; k < p.size() && j == p.size(); ++k) {
      const auto& in = p.instructions[k];
      if (!in.prev.contains(isa::Queue::SI) || in.op() == isa::Opcode::si_mov) continue;
      for (size_t m = k + 1; m < p.size() && j == p.size(); ++m)
        if (p.instructions[m].op() == in.op() && p.instructions[m].mapping.core == in.mapping.core) i = k, j = m;
    }
    REQUIRE(j < p.size());
    isa::QueueList kept;
    for (isa::Queue q : p.instructions[i].prev)
      if (q != isa::Queue::SI) kept.push_back(q);
    p.instructions[i].prev = kept;
    p.instructions[j].prev.push_back(isa::Queue::SI);
    int code;
    std::string msg;
    std::tie(code, msg) = run_error(c, b, p, a);
    INFO(msg);
    CHECK(code != 0);
    CHECK((msg.find("race") != std::string::npos || msg.find("divergence") != std::string::npos));
    CHECK(msg.find("model.asm:" + std::to_string(i + 1)) != std::string::npos);
  }
}

TEST_CASE("errors: missing weights, wrong input shape, missing golden file") {
  const auto& a = arch_named("zebu-1core");
  const Compiled& c = func_test::tiny(1);
  Built b = func_test::build(c, func_test::single_core(c.graph, "zebu-1core"), a, testing::temp_dir("func_errors"));
  // A data directory without one weight file.
  std::string dir = testing::temp_dir("func_errors_data");
  const fir::Layer* conv = nullptr;
  for (const fir::Layer* l : c.graph.in_index_order())
    if (!conv && l->op == fir::Op::Conv2d) conv = l;
  for (const auto& e : fs::directory_iterator(c.dir))
    if (e.path().filename() != *conv->file("k")) fs::copy(e.path(), fs::path(dir) / e.path().filename());
  func::Options o;
  try {
    func::run(b.program, b.timing, a, c.graph, b.sir, func::directory_npy_loader(dir), {c.input}, o);
    FAIL("a missing weight file was not reported");
  } catch (const Error& e) {
    CHECK(e.code() == kExitIo);
    CHECK(std::string(e.what()).find(*conv->file("k")) != std::string::npos);
    CHECK(std::string(e.what()).find(conv->name) != std::string::npos);
  }
  // An input of the wrong shape.
  NpyArray wrong = NpyArray::from_float(std::vector<float>(3 * 16 * 16, 0.5f), {1, 3, 16, 16});
  try {
    func::check_inputs(c.graph, {wrong}, {"x.npy"});
    FAIL("a wrong input shape was not reported");
  } catch (const Error& e) {
    CHECK(e.code() == kExitInvalidInput);
    CHECK(std::string(e.what()).find("x.npy: shape [1, 3, 16, 16]") != std::string::npos);
  }
  // A golden directory without the goldens.
  o.golden_dir = testing::temp_dir("func_errors_nogolden");
  try {
    func::run(b.program, b.timing, a, c.graph, b.sir, func::directory_npy_loader(c.dir), {c.input}, o);
    FAIL("a missing golden file was not reported");
  } catch (const Error& e) {
    CHECK(e.code() == kExitIo);
    CHECK(std::string(e.what()).find("golden output of layer") != std::string::npos);
  }
}

TEST_CASE("zebusim --functional: outputs, dumps, the same trace, tool conventions") {
  const auto& a = arch_named("chip-64tops");
  const Compiled& c = func_test::tiny(4);
  std::string dir = testing::temp_dir("func_tool");
  Built b = func_test::build(c, func_test::pipeline(c.graph, "chip-64tops", a.core_count(), 2), a, dir);
  std::string common = b.program_path + " --arch chip-64tops";
  std::string func_args = common + " --functional --fir " + c.fir_path + " --sir " + b.sir_path + " --fir-data " + c.dir +
                          " --input " + c.input_path;
  auto plain = testing::run_tool("zebusim", common + " -o " + dir + "/plain.trace");
  REQUIRE(plain.exit_code == 0);
  // Layer to dump: the first convolution.
  std::string conv;
  for (const fir::Layer* l : c.graph.in_index_order())
    if (conv.empty() && l->op == fir::Op::Conv2d) conv = l->name;
  auto r = testing::run_tool("zebusim", func_args + " --golden " + c.dir + " --outputs " + dir + "/out --dump-layer " + conv +
                                            " -o " + dir + "/func.trace");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("golden: 12 layers match, and 1 host layer (") != std::string::npos);
  // The dense's reshape on the host gives the graph output, and is named.
  const fir::Layer* host = nullptr;
  for (const auto& l : c.graph.layers())
    if (l.device == fir::Device::Cpu) host = &l;
  REQUIRE(host);
  CHECK(r.err.find("1 host (cpu) layer run by the reference interpreter on the accelerator's outputs: " + host->name +
                   " (reshape)") != std::string::npos);
  CHECK(testing::read_file(dir + "/plain.trace") == testing::read_file(dir + "/func.trace"));
  auto want = func_test::interpret(c);
  auto got = interp::QTensor::from_npy(read_npy(dir + "/out/output1.npy"), "output1");
  CHECK(func_test::same_bits(got, want[0]));
  const fir::Layer* cl = c.graph.find(conv);
  NpyArray dumped = read_npy(dir + "/out/" + conv + ".npy");
  NpyArray golden = read_npy(c.dir + "/" + *cl->file("output_activation1"));
  CHECK(dumped.shape == golden.shape);
  CHECK(dumped.bytes == golden.bytes);
  // Deterministic: a second run writes the same bytes.
  auto r2 = testing::run_tool("zebusim", func_args + " --outputs " + dir + "/out2 -o " + dir + "/func2.trace");
  REQUIRE(r2.exit_code == 0);
  CHECK(testing::read_file(dir + "/out/output1.npy") == testing::read_file(dir + "/out2/output1.npy"));

  // Usage errors.
  CHECK(testing::run_tool("zebusim", common + " --fir " + c.fir_path).exit_code == kExitUsage);
  auto nosir = testing::run_tool("zebusim", common + " --functional --fir " + c.fir_path + " --input " + c.input_path);
  CHECK(nosir.exit_code == kExitUsage);
  CHECK(nosir.err.find("--sir") != std::string::npos);
  CHECK(testing::run_tool("zebusim", func_args + " --dump-layer " + conv).exit_code == kExitUsage);
  CHECK(testing::run_tool("zebusim", func_args + " --outputs " + dir + "/o3 --dump-layer nosuchlayer").exit_code == kExitUsage);
  // A wrong input shape and a missing input file.
  write_npy(dir + "/wrong.npy", NpyArray::from_float(std::vector<float>(3 * 8 * 8, 0.0f), {1, 3, 8, 8}));
  auto shape = testing::run_tool("zebusim", common + " --functional --fir " + c.fir_path + " --sir " + b.sir_path +
                                                " --fir-data " + c.dir + " --input " + dir + "/wrong.npy");
  CHECK(shape.exit_code == kExitInvalidInput);
  CHECK(shape.err.find("wrong.npy: shape [1, 3, 8, 8]") != std::string::npos);
  auto missing = testing::run_tool("zebusim", common + " --functional --fir " + c.fir_path + " --sir " + b.sir_path +
                                                  " --input " + dir + "/nosuch.npy");
  CHECK(missing.exit_code == kExitIo);
  // A divergence: exit code 1 and nothing written.
  isa::Program p = b.program;
  size_t i = nth(p, isa::Opcode::pe_conv, 2);
  p.instructions[i].set(isa::Param::DTaddr, p.instructions[i].get(isa::Param::DTaddr) + 64);
  isa::write_program(dir + "/bad.asm", p, isa::Syntax::JsonLines);
  auto bad = testing::run_tool("zebusim", dir + "/bad.asm --arch chip-64tops --functional --fir " + c.fir_path + " --sir " +
                                              b.sir_path + " --fir-data " + c.dir + " --input " + c.input_path + " --golden " +
                                              c.dir + " -o " + dir + "/bad.trace");
  CHECK(bad.exit_code == kExitCheckFailed);
  CHECK(bad.err.find("divergence in layer") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/bad.trace"));
}
