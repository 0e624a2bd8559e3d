#include "interp/graph.hpp"

#include <algorithm>

#include "support/error.hpp"

namespace cct::interp {

int64_t Node::get_int(const std::string& a, int64_t dflt) const {
  auto it = attrs.find(a);
  if (it == attrs.end()) return dflt;
  if (it->second.kind == Attribute::Kind::Float) return static_cast<int64_t>(it->second.f);
  return it->second.i;
}

float Node::get_float(const std::string& a, float dflt) const {
  auto it = attrs.find(a);
  if (it == attrs.end()) return dflt;
  if (it->second.kind == Attribute::Kind::Int) return static_cast<float>(it->second.i);
  return it->second.f;
}

std::string Node::get_string(const std::string& a, const std::string& dflt) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? dflt : it->second.s;
}

std::vector<int64_t> Node::get_ints(const std::string& a, std::vector<int64_t> dflt) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? dflt : it->second.ints;
}

std::vector<float> Node::get_floats(const std::string& a, std::vector<float> dflt) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? dflt : it->second.floats;
}

const Graph* Node::get_graph(const std::string& a) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? nullptr : it->second.g.get();
}

int Node::input_count() const {
  return static_cast<int>(std::count_if(inputs.begin(), inputs.end(), [](int v) { return v >= 0; }));
}

int Graph::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second;
}

int Graph::add_value(Value v) {
  if (index_.count(v.name)) throw_input_error(source + ": duplicate tensor name '" + v.name + "'");
  int id = static_cast<int>(values.size());
  index_.emplace(v.name, id);
  values.push_back(std::move(v));
  return id;
}

std::string Graph::unique_name(const std::string& base) const {
  if (!index_.count(base)) return base;
  for (int k = 1;; ++k) {
    std::string n = base + "_" + std::to_string(k);
    if (!index_.count(n)) return n;
  }
}

std::vector<std::vector<int>> Graph::consumers() const {
  std::vector<std::vector<int>> out(values.size());
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int v : nodes[n].inputs)
      if (v >= 0 && (out[v].empty() || out[v].back() != static_cast<int>(n))) out[v].push_back(static_cast<int>(n));
  return out;
}

void Graph::relink() {
  for (auto& v : values) v.producer = -1;
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int v : nodes[n].outputs)
      if (v >= 0) values[v].producer = static_cast<int>(n);
}

void Graph::topo_sort() {
  relink();
  size_t n = nodes.size();
  std::vector<int> pending(n, 0);
  auto cons = consumers();
  for (size_t k = 0; k < n; ++k)
    for (int v : nodes[k].inputs)
      if (v >= 0 && values[v].producer >= 0) ++pending[k];
  // Kahn's algorithm, always taking the lowest ready index so the original
  // order is kept wherever it is already valid.
  std::vector<int> order;
  order.reserve(n);
  std::vector<char> done(n, 0);
  std::vector<int> ready;
  for (size_t k = 0; k < n; ++k)
    if (pending[k] == 0) ready.push_back(static_cast<int>(k));
  while (!ready.empty()) {
    auto it = std::min_element(ready.begin(), ready.end());
    int k = *it;
    ready.erase(it);
    order.push_back(k);
    done[k] = 1;
    for (int v : nodes[k].outputs) {
      if (v < 0) continue;
      for (int c : cons[v]) {
        // a node may read the same value twice: count each input slot
        for (int in : nodes[c].inputs)
          if (in == v) --pending[c];
        if (pending[c] == 0 && !done[c] && std::find(ready.begin(), ready.end(), c) == ready.end()) ready.push_back(c);
      }
    }
  }
  if (order.size() != n) {
    for (size_t k = 0; k < n; ++k)
      if (!done[k]) throw_input_error(source + ": graph has a cycle through node '" + nodes[k].name + "'");
  }
  std::vector<Node> sorted;
  sorted.reserve(n);
  for (int k : order) sorted.push_back(std::move(nodes[k]));
  nodes = std::move(sorted);
  relink();
}

void Graph::prune() {
  relink();
  std::vector<char> live_value(values.size(), 0), live_node(nodes.size(), 0);
  std::vector<int> stack(outputs.begin(), outputs.end());
  while (!stack.empty()) {
    int v = stack.back();
    stack.pop_back();
    if (v < 0 || live_value[v]) continue;
    live_value[v] = 1;
    int p = values[v].producer;
    if (p >= 0 && !live_node[p]) {
      live_node[p] = 1;
      for (int in : nodes[p].inputs) stack.push_back(in);
      for (int out : nodes[p].outputs)
        if (out >= 0) live_value[out] = 1;
    }
  }
  for (int v : inputs) live_value[v] = 1;
  std::vector<int> remap(values.size(), -1);
  std::vector<Value> kept;
  index_.clear();
  for (size_t v = 0; v < values.size(); ++v) {
    if (!live_value[v]) continue;
    remap[v] = static_cast<int>(kept.size());
    index_.emplace(values[v].name, remap[v]);
    kept.push_back(std::move(values[v]));
  }
  values = std::move(kept);
  std::vector<Node> kept_nodes;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (!live_node[n]) continue;
    Node node = std::move(nodes[n]);
    for (int& v : node.inputs) v = v >= 0 ? remap[v] : -1;
    for (int& v : node.outputs) v = v >= 0 ? remap[v] : -1;
    kept_nodes.push_back(std::move(node));
  }
  nodes = std::move(kept_nodes);
  for (int& v : inputs) v = remap[v];
  for (int& v : outputs) v = remap[v];
  relink();
}

}  // namespace cct::interp
