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
// Accelerator layers that are data movement (concat, slice, gather): done by
// transfers alone they have no compute instruction of their own to check and
// are checked through their readers, whose every output is compared.
int64_t npu_move_layers(const cct::fir::Graph& g);

struct Case {
  std::string stage;  // the first stage that failed ("" when all passed)
  std::string error;  // its message
  std::string note;   // the host (cpu) layers the functional run ran
  int64_t gemini_cycles = -1;
  int64_t cycles = -1, sim_macs = -1;          // zebusim's timing model
  int64_t func_macs = -1, layers_checked = -1;  // the functional run
  double functional_seconds = 0;
  std::vector<cct::func::NamedTensor> outputs;
  // The FIR's host graph (a detector's post-processing): its outputs, and
  // how many equalled their goldens.
  std::vector<cct::func::NamedArray> host_graph_outputs;
  int64_t host_graph_checked = 0;
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
// with `golden_dir` every layer is compared with the golden activations there.
Case run(const Build& b, const func_test::Compiled& c, const cct::NpyArray& input, const std::string& golden_dir);

// Index of the largest element (the first of equal ones) and how many share it.
std::pair<int64_t, int64_t> top1(const cct::interp::QTensor& t);

std::string first_line(const std::string& text);

}  // namespace zoo
