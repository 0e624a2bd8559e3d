// The FIR's host graph (fir/host_graph.hpp) and the interpreter's graph:
// onnx2fir writes a post-processing of data-dependent shapes as one, the
// functional simulator and onnx2fir's goldens run it with the float
// interpreter, on the FIR outputs it reads.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "fir/fir.hpp"
#include "fir/host_graph.hpp"
#include "interp/fir_exec.hpp"
#include "interp/graph.hpp"
#include "support/npy.hpp"

namespace cct::interp {

// A tensor as .npy and back, element type kept (float32/16/64, int8 to
// int64, uint8, bool); others are refused naming `what`.
NpyArray tensor_to_npy(const Tensor& t, const std::string& what);
Tensor tensor_from_npy(const NpyArray& a);

// Nodes `nodes` of `g` (indices, in order) as a FIR host graph: it reads
// values `inputs`, input k from FIR graph output `from[k]`, and computes
// `outputs`, model outputs whose goldens are `golden_files`. Constants and
// tensor attributes become .npy files named host_graph_*.npy (appended to
// `files`); values of static shape (`dynamic` 0) get their shapes.
fir::HostGraph make_host_graph(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& inputs,
                               const std::vector<std::string>& from, const std::vector<int>& outputs,
                               const std::vector<std::string>& golden_files, const std::vector<char>& dynamic,
                               std::vector<std::pair<std::string, NpyArray>>& files);

// The host graph of a FIR, ready to run. Throws Error(kExitInvalidInput)
// naming `file` for nodes the interpreter cannot run (unknown operators) and
// for constants that do not read.
class HostGraphRunner {
 public:
  using Loader = std::function<NpyArray(const std::string& file)>;
  HostGraphRunner(const fir::Graph& g, const Loader& load, const std::string& file);

  // The model outputs (fir::HostGraph::outputs order), from the FIR graph
  // outputs as the FIR computes them: `fir_output(layer, "output3")` gives
  // graph output output3, which `layer` writes (its real values are the
  // host graph's input).
  using FirOutput = std::function<QTensor(const fir::Layer& layer, const std::string& output)>;
  std::vector<Tensor> run(const FirOutput& fir_output) const;

 private:
  const fir::Graph& g_;
  Graph graph_;
  std::vector<const fir::Layer*> from_;  // per input, the FIR layer writing it
};

}  // namespace cct::interp
