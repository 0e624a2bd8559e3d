// Dense layers assemble as the 1x1 convolutions they are on the PE array:
// hello_world_int8.tflite (three dense layers with [K, C] weights) through
// onnx2fir, gemini and irgen, on zebu-1core and chip-64tops.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "asm/asm.hpp"
#include "fir/fir.hpp"
#include "isa/program.hpp"
#include "sir/sir.hpp"
#include "support/error.hpp"
#include "testing.hpp"

namespace {

using namespace cct;

std::string q(const std::string& s) { return "'" + s + "'"; }

std::vector<int64_t> list(const isa::Instruction& in, isa::Param p) {
  auto v = in.list(p);
  return std::vector<int64_t>(v.begin(), v.end());
}

}  // namespace

TEST_CASE("asm: the [K, C] dense layers of hello_world_int8.tflite are 1x1 convolutions of [K, C, 1, 1] weights") {
  const std::string dir = testing::temp_dir("asm_dense");
  const std::string fir_file = dir + "/hw.fir.json";
  auto r = testing::run_tool("onnx2fir", q(testing::reference_dir() + "/tflite/hello_world_int8.tflite") +
                                             " --calib-random 2 --quiet --data-dir " + q(dir + "/data") + " -o " + q(fir_file));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  fir::Graph g = fir::read_fir(fir_file);
  std::set<std::vector<int64_t>> want;  // [C, 1, 1] of every dense layer
  for (const auto& l : g.layers())
    if (l.op == fir::Op::Dense) {
      REQUIRE(fir::weight_shape(l)->size() == 2);
      want.insert({(*fir::weight_shape(l))[1], 1, 1});
    }
  REQUIRE(want.size() == 2);  // [16, 1], [16, 16] and [1, 16]
  for (const std::string arch_name : {"zebu-1core", "chip-64tops"}) {
    CAPTURE(arch_name);
    auto a = arch::load_architecture(arch_name);
    const std::string map = dir + "/" + arch_name + ".map.json", sir_file = dir + "/" + arch_name + ".sir.json";
    r = testing::run_tool("gemini", q(fir_file) + " --arch " + arch_name + " --no-progress -o " + q(map));
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    r = testing::run_tool("irgen", q(fir_file) + " " + q(map) + " --arch " + arch_name + " -o " + q(sir_file));
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    sir::Schedule s = sir::read_sir(sir_file);
    isa::Program p = assembler::assemble(s, g, a);
    std::set<std::vector<int64_t>> loads, kernels;
    int convs = 0;
    for (const auto& in : p.instructions) {
      if (in.op() == isa::Opcode::lw_mov) {
        auto w = list(in, isa::Param::Wsize);
        loads.insert(std::vector<int64_t>(w.begin() + 1, w.end()));
      }
      if (in.op() == isa::Opcode::pe_cfg_tp) kernels.insert(list(in, isa::Param::KERNEL));
      convs += in.op() == isa::Opcode::pe_conv;
    }
    CHECK(loads == want);
    CHECK(kernels == std::set<std::vector<int64_t>>{{1, 1}});
    CHECK(convs >= 3);
    CHECK_MESSAGE(assembler::check(p, a).ok(), assembler::check(p, a).text("hello_world"));

    // A dense layer that is no convolution on the array (here: made to read
    // an input whose sample is neither its 16 features nor tokens of them)
    // is refused, naming the workload and layer.
    fir::Graph bad = g;
    for (auto& l : bad.mutable_layers())
      if (l.op == fir::Op::Dense && l.input_shape[0].back() == 16) l.input_shape[0] = {1, 3, 7};
    bad.reindex();
    assembler::Options o;
    o.sir_file = sir_file;
    try {
      assembler::assemble(s, bad, a, o);
      FAIL("asm accepted a dense layer over the last axis");
    } catch (const Error& e) {
      CHECK(e.code() == kExitInvalidInput);
      const std::string what = e.what();
      CHECK_MESSAGE(what.find(sir_file + ": /") == 0, what);
      CHECK_MESSAGE(what.find("does not run on the PE array") != std::string::npos, what);
    }
  }
}
