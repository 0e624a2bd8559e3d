// The float reference interpreter: runs a Graph on float32 inputs, node by
// node, with the kernels of interp/ops.hpp. Used for calibration, for the
// --report comparison against the quantized FIR, and for constant folding.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "interp/graph.hpp"

namespace cct::interp {

// One line per node the interpreter cannot run ("node 'x' (Op): reason"),
// in node order; empty when the whole graph is supported.
std::vector<std::string> unsupported_nodes(const Graph& g);

class FloatInterpreter {
 public:
  // Throws Error(kExitInvalidInput) listing every unsupported node.
  explicit FloatInterpreter(const Graph& g);

  // Called after each node with every output value it computed.
  using Observer = std::function<void(int value, const Tensor& t)>;

  // Runs the graph on one tensor per graph input (in Graph::inputs order) and
  // returns the graph outputs. Intermediate tensors are freed after their last
  // use unless listed in `keep` (then they are returned through `kept`,
  // indexed like `keep`).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const Observer& observer = nullptr,
                          const std::vector<int>& keep = {}, std::vector<Tensor>* kept = nullptr) const;

 private:
  const Graph& g_;
  std::vector<int> last_use_;  // per value: index of the last node reading it
};

}  // namespace cct::interp
