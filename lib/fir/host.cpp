#include "fir/host.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>

#include "fir/host_graph.hpp"
#include "support/error.hpp"

namespace cct::fir {

namespace {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

int64_t tensor_bytes(const std::vector<Shape>& shapes, const std::vector<std::string>& dtypes, size_t i) {
  if (i >= shapes.size()) return 0;
  const int b = i < dtypes.size() ? dtype_bytes(dtypes[i]) : 1;
  return numel(shapes[i]) * (b > 0 ? b : 1);
}

// Whether the chip stores a tensor of shape `a` and one of shape `b` (same
// elements) in the same byte order: element by element, the NHWC offset in
// chip_box(a) equals that in chip_box(b).
bool same_chip_order(const Shape& a, const Shape& b) {
  if (numel(a) != numel(b)) return false;
  const auto ba = chip_box(a), bb = chip_box(b);
  auto offset = [](const std::array<int64_t, 4>& box, int64_t i) {  // box row-major [N, C, H, W] -> NHWC
    const int64_t w = i % box[3], h = i / box[3] % box[2], c = i / (box[2] * box[3]) % box[1], n = i / (box[1] * box[2] * box[3]);
    return ((n * box[2] + h) * box[3] + w) * box[1] + c;
  };
  for (int64_t e = 0, n = numel(a); e < n; ++e)
    if (offset(ba, chip_index(a, e)) != offset(bb, chip_index(b, e))) return false;
  return true;
}

// Whether an accelerator layer reads l's output, directly or through reshapes.
bool read_by_accelerator(const Graph& g, const Layer& l, int depth = 0) {
  for (const auto& n : l.next_layer) {
    const Layer* r = g.find(n);
    if (!r) continue;
    if (r->device == Device::Npu) return true;
    if (r->op == Op::Reshape && depth < 1024 && read_by_accelerator(g, *r, depth + 1)) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> HostStep::names() const {
  std::vector<std::string> out;
  for (const Layer* l : layers) out.push_back(l->name);
  if (host_graph) out.emplace_back(kHostGraphKey);
  return out;
}

int64_t host_ops(const Layer& l) {
  int64_t ops = 0;
  for (const auto& s : l.input_shape) ops += numel(s);
  for (const auto& s : l.output_shape) ops += numel(s);
  if (l.op == Op::MatMul || l.op == Op::Dense) ops += macs(l);
  return ops;
}

std::string resolve_through(const Graph& g, const HostPlan& plan, const std::string& name) {
  std::string cur = name;
  for (int depth = 0; depth < 1024 && plan.is_pass_through(cur); ++depth) {
    const Layer* l = g.find(cur);
    std::string next;
    for (const auto& p : l->previous_layer)
      if (!is_constant_name(p)) {
        next = p;
        break;
      }
    if (next.empty()) break;
    cur = next;
  }
  return cur;
}

HostPlan host_plan(const Graph& g, const std::string& file) {
  HostPlan plan;
  const auto order = g.in_index_order();
  auto first_input = [](const Layer& l) -> std::string {
    for (const auto& p : l.previous_layer)
      if (!is_constant_name(p)) return p;
    return {};
  };
  std::vector<const Layer*> host;
  for (const Layer* l : order) {
    if (l->device != Device::Cpu) continue;
    if (l->op == Op::Reshape) {
      const std::string in = first_input(*l);
      const Layer* p = g.find(in);
      // Read through unless it reorders the chip's bytes for an accelerator
      // reader ([N, C, L] to [N, C, 1, L]): then the host moves the data.
      const bool moves = !l->input_shape.empty() && !l->output_shape.empty() &&
                         !same_chip_order(l->input_shape[0], l->output_shape[0]) && read_by_accelerator(g, *l);
      if (!moves && (is_graph_input_name(in) || (p && (p->device == Device::Npu || plan.pass.count(in))))) {
        plan.pass[l->name] = true;
        continue;
      }
    }
    host.push_back(l);
  }
  // Steps: connected groups of host layers (union-find over cpu-to-cpu edges).
  std::map<std::string, std::string> parent;
  for (const Layer* l : host) parent[l->name] = l->name;
  std::function<std::string(const std::string&)> root = [&](const std::string& x) {
    std::string r = x;
    while (parent[r] != r) r = parent[r];
    return r;
  };
  for (const Layer* l : host)
    for (const auto& p : l->previous_layer)
      if (parent.count(p)) {
        std::string a = root(p), b = root(l->name);
        if (a != b) parent[std::max(a, b)] = std::min(a, b);
      }
  std::map<std::string, int> step_of_root;
  for (const Layer* l : host) {
    std::string r = root(l->name);
    auto [it, fresh] = step_of_root.try_emplace(r, int(plan.steps.size()));
    if (fresh) plan.steps.emplace_back();
    plan.steps[size_t(it->second)].layers.push_back(l);
    plan.step_of[l->name] = it->second;
  }
  // The host graph reads graph outputs: through pass-throughs, accelerator
  // layers (from DRAM) or host layers (whose step it joins; the first such).
  const HostGraph* hg = g.host_graph();
  std::vector<std::string> graph_reads;
  if (hg) {
    int joined = -1;
    for (const auto& in : hg->inputs) {
      const Layer* l = output_layer(g, in.from);
      if (!l) continue;
      const std::string src = resolve_through(g, plan, l->name);
      graph_reads.push_back(src);
      if (joined < 0) joined = plan.step(src);
    }
    if (joined < 0) {
      joined = int(plan.steps.size());
      plan.steps.emplace_back();
    }
    plan.steps[size_t(joined)].host_graph = true;
    plan.step_of[std::string(kHostGraphKey)] = joined;
  }
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    HostStep& st = plan.steps[k];
    std::set<std::string> seen;
    for (const Layer* l : st.layers) {
      st.ops += host_ops(*l);
      for (size_t i = 0; i < l->previous_layer.size(); ++i) {
        const std::string& p = l->previous_layer[i];
        if (is_constant_name(p) || plan.step(p) == int(k)) continue;
        std::string src = resolve_through(g, plan, p);
        if (!seen.insert(src).second) continue;
        st.inputs.push_back(src);
        if (is_graph_input_name(src)) st.graph_io_bytes += tensor_bytes(l->input_shape, l->input_dtype, i);
      }
      bool result = false, output = false;
      for (const auto& n : l->next_layer) {
        output = output || is_graph_output_name(n);
        result = result || is_graph_output_name(n) || plan.step(n) != int(k);
      }
      if (result) st.results.push_back(l);
      if (output) st.graph_io_bytes += tensor_bytes(l->output_shape, l->output_dtype, 0);
    }
    if (st.host_graph) {
      const HostGraphCost c = host_graph_cost(*hg, g);
      st.ops += c.ops;
      st.graph_io_bytes += c.output_bytes;
      for (const auto& src : graph_reads)
        if (plan.step(src) != int(k) && seen.insert(src).second) st.inputs.push_back(src);
    }
    std::sort(st.inputs.begin(), st.inputs.end(), [&](const std::string& a, const std::string& b) {
      const Layer* x = g.find(a);
      const Layer* y = g.find(b);
      int64_t ia = x ? x->layer_index : -1, ib = y ? y->layer_index : -1;
      return ia != ib ? ia < ib : a < b;
    });
    // A step that feeds itself through the accelerator cannot run as one step.
    std::set<std::string> visited;
    std::vector<std::string> stack(st.inputs.begin(), st.inputs.end());
    while (!stack.empty()) {
      std::string x = stack.back();
      stack.pop_back();
      if (!visited.insert(x).second) continue;
      if (plan.step(x) == int(k))
        throw Error(kExitInvalidInput,
                    at_pointer(file, "/" + st.layers[0]->name,
                               "host layers " + st.layers.front()->name + " .. " + st.layers.back()->name +
                                   " form one host step, but part of it reads another part's result through "
                                   "accelerator layers (" + x + ")"));
      if (const Layer* l = g.find(x))
        for (const auto& p : l->previous_layer)
          if (!is_constant_name(p) && !is_graph_input_name(p)) stack.push_back(p);
    }
  }
  return plan;
}

}  // namespace cct::fir
