#include "interp/float_interp.hpp"

#include "interp/ops.hpp"
#include "support/error.hpp"

namespace cct::interp {

std::vector<std::string> unsupported_nodes(const Graph& g) {
  std::vector<std::string> out;
  for (const Node& n : g.nodes) {
    std::string why = unsupported_reason(n, g.opset, &g);
    if (!why.empty()) out.push_back("node '" + n.name + "' (" + n.op + "): " + why);
  }
  return out;
}

FloatInterpreter::FloatInterpreter(const Graph& g) : g_(g) {
  auto bad = unsupported_nodes(g);
  if (!bad.empty()) {
    std::string msg = g.source + ": " + std::to_string(bad.size()) + " node(s) cannot be interpreted:";
    for (const auto& b : bad) msg += "\n  " + b;
    throw Error(kExitInvalidInput, msg);
  }
  last_use_.assign(g.values.size(), -1);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int v : g.nodes[n].inputs)
      if (v >= 0) last_use_[v] = static_cast<int>(n);
  for (int v : g.outputs) last_use_[v] = static_cast<int>(g.nodes.size());
}

std::vector<Tensor> FloatInterpreter::run(const std::vector<Tensor>& inputs, const Observer& observer,
                                          const std::vector<int>& keep, std::vector<Tensor>* kept) const {
  if (inputs.size() != g_.inputs.size())
    throw_input_error(g_.source + ": the model has " + std::to_string(g_.inputs.size()) + " input(s), " +
                      std::to_string(inputs.size()) + " given");
  std::vector<Tensor> live(g_.values.size());
  std::vector<char> present(g_.values.size(), 0);
  std::vector<int> last = last_use_;
  for (int v : keep)
    if (v >= 0) last[v] = static_cast<int>(g_.nodes.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    int v = g_.inputs[k];
    const Value& val = g_.values[v];
    if (val.has_shape && inputs[k].shape != val.shape)
      throw_input_error(g_.source + ": input '" + val.name + "' expects shape " + shape_str(val.shape) + ", got " +
                        shape_str(inputs[k].shape));
    live[v] = inputs[k];
    present[v] = 1;
  }
  KernelInputs args;
  std::vector<Tensor> outs;
  for (size_t n = 0; n < g_.nodes.size(); ++n) {
    const Node& node = g_.nodes[n];
    args.assign(node.inputs.size(), nullptr);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      int v = node.inputs[k];
      if (v < 0) continue;
      if (g_.values[v].constant) args[k] = g_.values[v].constant.get();
      else if (present[v]) args[k] = &live[v];
      else throw Error(kExitInternal, "node '" + node.name + "': input '" + g_.values[v].name + "' was not computed");
    }
    outs.clear();
    run_kernel(node, g_.opset, args, outs);
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      int v = node.outputs[k];
      if (v < 0 || k >= outs.size()) continue;
      if (observer) observer(v, outs[k]);
      if (last[v] < 0) continue;  // nobody reads it
      live[v] = std::move(outs[k]);
      present[v] = 1;
    }
    // free inputs whose last reader was this node
    for (int v : node.inputs)
      if (v >= 0 && present[v] && last[v] == static_cast<int>(n)) {
        live[v] = Tensor();
        present[v] = 0;
      }
  }
  std::vector<Tensor> result;
  for (int v : g_.outputs) {
    if (g_.values[v].constant) result.push_back(*g_.values[v].constant);
    else if (present[v]) result.push_back(live[v]);
    else throw Error(kExitInternal, "output '" + g_.values[v].name + "' was not computed");
  }
  if (kept) {
    kept->clear();
    for (int v : keep) {
      if (v >= 0 && g_.values[v].constant) kept->push_back(*g_.values[v].constant);
      else if (v >= 0 && present[v]) kept->push_back(live[v]);
      else kept->push_back(Tensor());
    }
  }
  return result;
}

}  // namespace cct::interp
