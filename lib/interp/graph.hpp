// The float graph: a model as a dataflow graph of ONNX-semantics operators.
//
// Every importer (ONNX, TFLite, TorchScript via ONNX) produces this form; the
// float interpreter runs it and the frontend folds, fuses and quantizes it
// into the Frontend IR. Values are numbered; nodes refer to them by index.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "interp/tensor.hpp"

namespace cct::interp {

// Quantization a source model already gives a tensor (TFLite INT8 models):
// real = scale[i] * (q - zero_point[i]) for slice i along `axis` (a single
// entry means per tensor). The frontend uses it instead of calibrating.
struct PresetQuant {
  std::vector<double> scale;
  std::vector<int64_t> zero_point;
  int64_t axis = 0;
};

// A named tensor flowing through the graph: a graph input, a node output or a
// constant (initializer, Constant node or folded subgraph).
struct Value {
  std::string name;
  DType dtype = DType::Unknown;
  Shape shape;
  bool has_shape = false;                   // shape is fully static and known
  std::shared_ptr<const Tensor> constant;   // set for constants
  int producer = -1;                        // index of the producing node, -1 for inputs/constants
  std::shared_ptr<const PresetQuant> preset;  // quantization given by the source model, if any
};

class Graph;

struct Attribute {
  // Graph: a subgraph (If's branches). The importer turns the outer-scope
  // values a subgraph reads into explicit inputs of its node, after the
  // node's own inputs, and into the subgraph's `inputs` in the same order,
  // so a subgraph refers to nothing outside itself.
  enum class Kind : uint8_t { Int, Float, String, Ints, Floats, Strings, Tensor, Graph, Other };
  Kind kind = Kind::Other;
  int64_t i = 0;
  float f = 0.0f;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  std::shared_ptr<const interp::Tensor> t;
  std::shared_ptr<const Graph> g;
};

struct Node {
  std::string name;    // as in the model; importers synthesise one when it is empty
  std::string op;      // ONNX operator type, e.g. "Conv"
  std::string domain;  // "" for the default ONNX domain
  std::vector<int> inputs;   // value indices; -1 for an omitted optional input
  std::vector<int> outputs;  // value indices; -1 for an omitted optional output
  std::map<std::string, Attribute> attrs;
  int source_index = 0;      // position of the node in the source model (for names like Conv_12)

  bool has(const std::string& a) const { return attrs.count(a) != 0; }
  int64_t get_int(const std::string& a, int64_t dflt) const;
  float get_float(const std::string& a, float dflt) const;
  std::string get_string(const std::string& a, const std::string& dflt) const;
  std::vector<int64_t> get_ints(const std::string& a, std::vector<int64_t> dflt = {}) const;
  std::vector<float> get_floats(const std::string& a, std::vector<float> dflt = {}) const;
  // The subgraph attribute `a`, nullptr when absent.
  const Graph* get_graph(const std::string& a) const;
  // Number of present (non-omitted) inputs.
  int input_count() const;
  int input(size_t k) const { return k < inputs.size() ? inputs[k] : -1; }
};

class Graph {
 public:
  std::vector<Value> values;
  std::vector<Node> nodes;   // topologically ordered after import
  std::vector<int> inputs;   // non-constant graph inputs, in model order
  std::vector<int> outputs;
  int opset = 0;             // default-domain opset version
  std::string source;        // file the graph came from (for messages)

  // Index of the value named `name`, -1 when absent.
  int find(const std::string& name) const;
  // Adds a value (its name must be new) and returns its index.
  int add_value(Value v);
  // A fresh unique name built from `base`.
  std::string unique_name(const std::string& base) const;

  const Value& value(int v) const { return values.at(static_cast<size_t>(v)); }
  Value& value(int v) { return values.at(static_cast<size_t>(v)); }
  bool is_constant(int v) const { return v >= 0 && values[static_cast<size_t>(v)].constant != nullptr; }
  const Tensor& constant(int v) const { return *values.at(static_cast<size_t>(v)).constant; }

  // For each value, the nodes reading it (in node order).
  std::vector<std::vector<int>> consumers() const;
  // Recomputes Value::producer from the node list.
  void relink();
  // Orders nodes so producers come first; throws on a cycle.
  void topo_sort();
  // Drops nodes whose outputs reach no graph output, then unreferenced values
  // (renumbering values; indices held outside the graph become invalid).
  void prune();

 private:
  std::unordered_map<std::string, int> index_;  // lookup only; never iterated into output
};

}  // namespace cct::interp
