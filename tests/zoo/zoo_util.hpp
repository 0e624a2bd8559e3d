// Shared pieces of the network-zoo tests: a compiled network taken through
// gemini, irgen, asm, the timing model and the functional model on one
// architecture, with every stage's failure caught and named, and the
// figures the tests compare (zebusim's MACs against the network's own).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "../func/func_test_util.hpp"
#include "support/npy.hpp"

namespace zoo {

// The network's multiply-accumulates, summed over the accelerator layers from
// the Frontend IR's shapes (written here, not taken from fir::macs, so that the
// check against zebusim is independent): conv2d N*K*OH*OW * (C/groups)*kh*kw
// with C the input channels; dense the output elements times the flattened
// input sample ([N, C, H, W]) or the last input axis (tokens); matmul the
// output elements times the first input's last axis.
int64_t real_macs(const cct::fir::Graph& g);
int64_t npu_layers(const cct::fir::Graph& g);

// The cpu layers between the accelerator and the graph outputs that the
// functional model cannot run (it runs the accelerator and reshapes only):
// the cpu layers followed only by graph outputs or such layers, when one of
// them is not a reshape; empty otherwise.
std::set<std::string> host_tail(const cct::fir::Graph& g);
// The graph without `tail`: the layers that fed it become the graph outputs
// output1, output2, ... in layer order; `producers` receives their names.
cct::fir::Graph cut_host_tail(const cct::fir::Graph& g, const std::set<std::string>& tail,
                              std::vector<std::string>& producers);

// What the functional run is compared with: the quantized FIR interpreter's
// graph outputs on `input` or, with a host tail, the outputs of the layers
// that feed it.
std::vector<cct::interp::QTensor> expected_outputs(const func_test::Compiled& c, const cct::NpyArray& input);

struct Case {
  std::string stage;  // the first stage that failed ("" when all passed)
  std::string error;  // its message
  std::string note;   // how the outputs were compared (host tail)
  int64_t gemini_cycles = -1;
  int64_t cycles = -1, sim_macs = -1;          // zebusim's timing model
  int64_t func_macs = -1, layers_checked = -1;  // the functional run
  double functional_seconds = 0;
  std::vector<cct::func::NamedTensor> outputs;
  bool ok() const { return stage.empty(); }
  std::string status() const { return ok() ? "OK" : stage + ": " + error; }
};

// A network compiled for one architecture: gemini (the built tool, as a user
// runs it) -> irgen -> asm -> the timing model. A stage that fails is
// recorded in `k`, not thrown. Files go to `dir`.
struct Build {
  Case k;
  cct::arch::Architecture arch;
  cct::sir::Schedule sir;
  cct::isa::Program program;
  std::vector<cct::trace::Timing> timing;
};
Build build(const func_test::Compiled& c, const std::string& arch, const std::string& dir);

// The functional run of a build on `input` (a Case with the build's figures);
// with `golden_dir` every accelerator layer is compared with the golden
// activations there. Graphs with a host tail run without it (see host_tail).
Case run(const Build& b, const func_test::Compiled& c, const cct::NpyArray& input, const std::string& golden_dir);

// Index of the largest element (the first of equal ones) and how many share it.
std::pair<int64_t, int64_t> top1(const cct::interp::QTensor& t);

std::string first_line(const std::string& text);

}  // namespace zoo
