// zebusim --functional: runs an ISA program on real data, in the order the
// timing model executes it, and writes the network's outputs.
//
// Inputs: the program and its timed run (sim::simulate), the architecture,
// the Frontend IR with its weight .npy files, the Scheduler IR the program was
// assembled from (it fixes where the assembler put weights and inputs in
// DRAM, and which tensor coordinates each tile holds), and the network input
// tensors.
//
// Order: every instruction reads its operands when it starts and writes its
// result when it ends (at equal times, ends come first; ties between
// instructions follow their dependencies). A program with a missing
// dependency therefore reads stale data, as the hardware would. Two
// instructions that touch the same bytes at overlapping times, at least one
// writing, are reported as a race (an error naming both lines).
//
// With a golden directory (onnx2fir --data-dir), every compute instruction's
// operands are compared with the golden activations of the layers that
// produced them when it starts, and its output tile with its own layer's
// golden when it ends; the first difference stops the run with an Error
// (kExitCheckFailed) naming the layer, the line, the element [n, c, h, w],
// both values and, for a wrong operand, the instruction that last wrote it.
//
// The FIR's host graph (a post-processing of data-dependent shapes) runs in
// its host step, on the FIR outputs as the program stored them; with a
// golden directory each of its outputs must equal its golden exactly
// (element type, shape and bits).
//
// The host is part of the system: after the program, the cpu layers whose
// results reach a graph output run on the reference interpreter
// (interp::FirExecutor, the code that made the goldens), reading the
// accelerator layers' outputs where the program stored them in DRAM; the
// graph outputs are theirs. With a golden directory their operands and
// results are checked too. Refused (kExitInvalidInput, before the run): an
// accelerator layer reading a host layer other than a reshape (irgen reads
// through host layers), and a host layer reading an accelerator layer the
// program does not store to DRAM.
#pragma once

#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "fir/fir.hpp"
#include "func/image.hpp"
#include "interp/fir_exec.hpp"
#include "isa/program.hpp"
#include "sir/sir.hpp"
#include "trace/trace.hpp"

namespace cct::func {

struct Options {
  std::string program_file = "<program>";
  std::string sir_file = "<sir>";
  std::string fir_file = "<fir>";
  std::string golden_dir;                // non-empty: compare with the golden activations there
  std::vector<std::string> dump_layers;  // layers whose output tensors to capture
  bool check_races = true;
};

struct NamedTensor {
  std::string name;
  interp::QTensor tensor;
};

struct NamedArray {
  std::string name;
  NpyArray array;
};

struct Result {
  std::vector<NamedTensor> outputs;  // graph outputs: output1, output2, ... (FIR shapes and dtypes)
  std::vector<NamedTensor> dumps;    // the dumped layers, in the order asked
  int64_t macs = 0;                  // multiply-accumulates the PE instructions performed
  int64_t layers_checked = 0;        // accelerator layers whose every output tile matched the golden
  int64_t elements_checked = 0;      // golden comparisons made (operands and outputs)
  std::vector<std::string> host_layers;  // the cpu layers run by the reference interpreter, in order
  int64_t host_layers_checked = 0;       // of those, the ones whose operands and result matched the goldens
  // The FIR's host graph's outputs (the model's), named by their golden
  // files without ".npy" (host_graph_output1, ...), in its order.
  std::vector<NamedArray> host_graph_outputs;
  int64_t host_graph_outputs_checked = 0;  // of those, the ones equal to their goldens
};

Result run(const isa::Program& program, const std::vector<trace::Timing>& timing, const arch::Architecture& a,
           const fir::Graph& g, const sir::Schedule& s, const NpyLoader& weights, const std::vector<NpyArray>& inputs,
           const Options& o);

}  // namespace cct::func
