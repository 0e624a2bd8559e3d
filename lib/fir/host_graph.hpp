// The FIR's host graph: a post-processing whose tensors have data-dependent
// shapes (a detector's score threshold, TopK, non-maximum suppression), kept
// as ONNX-semantics nodes that the host runs with the reference interpreter
// after the stores of the FIR outputs it reads (formats/Frontend_IR_Format.md,
// "The host graph"). It is the FIR member "$host_graph"; lib/interp
// (interp/host_graph.hpp) turns it into an interpreter graph and back.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fir/fir.hpp"
#include "support/json.hpp"
#include "support/rapid_cursor.hpp"

namespace cct::fir {

// The FIR member holding the host graph, and the name host steps give it
// (Scheduler IR "-1"/host "layers"). Layer names never begin with '$'.
inline constexpr std::string_view kHostGraphKey = "$host_graph";

struct HostGraph;

// An ONNX attribute: {"int": 1}, {"float": 0.5}, {"string": "x"}, {"ints": [..]},
// {"floats": [..]}, {"strings": [..]}, {"tensor": "file.npy"}, {"graph": {...}}.
struct HostAttribute {
  enum class Kind : uint8_t { Int, Float, String, Ints, Floats, Strings, Tensor, Graph };
  Kind kind = Kind::Int;
  int64_t i = 0;
  double f = 0.0;
  std::string s;  // String, or the .npy file of a Tensor
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strings;
  std::shared_ptr<const HostGraph> graph;  // Graph (If's branches)
  bool operator==(const HostAttribute& o) const;
};

struct HostNode {
  std::string name, op_type, domain;
  std::vector<std::string> inputs, outputs;  // value names; "" for an omitted optional one
  std::vector<std::pair<std::string, HostAttribute>> attributes;  // in name order
  bool operator==(const HostNode&) const = default;
};

// A graph input: at the top level the FIR graph output it reads ("output3");
// a branch's inputs are its node's inputs after the condition, in order.
struct HostInput {
  std::string name, from;
  bool operator==(const HostInput&) const = default;
};
// A graph output: at the top level a model output, with its element type and
// golden .npy file (the interpreter's result on the FIR's golden outputs).
struct HostOutput {
  std::string name, dtype, file;
  bool operator==(const HostOutput&) const = default;
};

struct HostGraph {
  int64_t opset = 0;  // the default domain's opset (top level; branches take it)
  std::vector<HostInput> inputs;
  std::vector<HostOutput> outputs;
  std::vector<std::pair<std::string, std::string>> constants;  // value name -> .npy file
  std::vector<std::pair<std::string, Shape>> shapes;           // values of static shape (top level)
  std::vector<HostNode> nodes;                                 // in execution order
  bool operator==(const HostGraph&) const = default;
};

// Element types of host-graph values, as the interpreter names them.
// Bytes per element, 0 for a name not among them.
int host_dtype_bytes(std::string_view dtype);

HostGraph read_host_graph(const RapidCursor& c, bool top = true);
Json to_json(const HostGraph& hg, bool top = true);

// Structural checks (the operators are the interpreter's to check, when it
// builds the graph): unique value names, every input defined before use,
// top-level inputs reading graph outputs of `g` that exist, outputs, files
// and dtypes well-formed, branches self-contained. "file: /pointer: what".
std::vector<std::string> check_host_graph(const HostGraph& hg, const Graph& g, const std::string& file);

// The static estimate of the host's work and writes, the same for gemini,
// irgen and the timing model (formats/Frontend_IR_Format.md): each node
// counts one operation per element it reads and writes (a selection, Gather,
// GatherElements, GatherND or Slice, reads only its indices besides what it
// writes; Shape and Size read nothing), an If its larger branch besides; a value of static shape counts its elements, one of
// data-dependent shape as many as the largest value its node reads (a
// selection makes no more than it reads); the inputs are the FIR outputs'
// shapes. `output_bytes`: the graph outputs so counted, by their dtypes.
struct HostGraphCost {
  int64_t ops = 0;
  int64_t output_bytes = 0;
};
HostGraphCost host_graph_cost(const HostGraph& hg, const Graph& g);

// The position of graph output `name` among the outputs: 2 for "output3".
size_t graph_output_position(std::string_view name);
// The layer writing graph output `name` ("output3"), nullptr if none.
const Layer* output_layer(const Graph& g, std::string_view name);

}  // namespace cct::fir
