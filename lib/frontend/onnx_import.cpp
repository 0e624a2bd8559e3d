#include "frontend/onnx_import.hpp"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <functional>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "interp/float_interp.hpp"
#include "interp/ops.hpp"
#include "support/error.hpp"
#include "support/io.hpp"
#include "support/json_parse.hpp"
#include "support/npy.hpp"

namespace cct::frontend {

using interp::DType;
using interp::Graph;
using interp::Shape;
using interp::Tensor;

namespace {

DType dtype_of(int32_t code) {
  switch (code) {
    case onnx::TensorProto::FLOAT: return DType::F32;
    case onnx::TensorProto::UINT8: return DType::U8;
    case onnx::TensorProto::INT8: return DType::I8;
    case onnx::TensorProto::UINT16: return DType::U16;
    case onnx::TensorProto::INT16: return DType::I16;
    case onnx::TensorProto::INT32: return DType::I32;
    case onnx::TensorProto::INT64: return DType::I64;
    case onnx::TensorProto::BOOL: return DType::Bool;
    case onnx::TensorProto::FLOAT16: return DType::F16;
    case onnx::TensorProto::DOUBLE: return DType::F64;
    case onnx::TensorProto::UINT32: return DType::U32;
    case onnx::TensorProto::UINT64: return DType::U64;
    case onnx::TensorProto::BFLOAT16: return DType::BF16;
    case onnx::TensorProto::STRING: return DType::String;
    default: return DType::Unknown;
  }
}

size_t item_size(DType t) {
  switch (t) {
    case DType::F32: case DType::I32: case DType::U32: return 4;
    case DType::F64: case DType::I64: case DType::U64: return 8;
    case DType::F16: case DType::BF16: case DType::I16: case DType::U16: return 2;
    case DType::I8: case DType::U8: case DType::Bool: return 1;
    default: return 0;
  }
}

float bf16_to_float(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// Decodes little-endian raw bytes of type t into the tensor storage.
void decode_raw(const char* p, size_t count, DType t, Tensor& out) {
  auto rd = [&](size_t k, auto tag) {
    decltype(tag) v;
    std::memcpy(&v, p + k * sizeof v, sizeof v);
    return v;
  };
  if (interp::is_floating(t)) {
    out.f.resize(count);
    for (size_t k = 0; k < count; ++k) {
      switch (t) {
        case DType::F32: out.f[k] = rd(k, float{}); break;
        case DType::F64: out.f[k] = static_cast<float>(rd(k, double{})); break;
        case DType::F16: out.f[k] = half_to_float(rd(k, uint16_t{})); break;
        default: out.f[k] = bf16_to_float(rd(k, uint16_t{})); break;
      }
    }
    return;
  }
  out.i.resize(count);
  for (size_t k = 0; k < count; ++k) {
    switch (t) {
      case DType::I8: out.i[k] = rd(k, int8_t{}); break;
      case DType::U8: out.i[k] = rd(k, uint8_t{}); break;
      case DType::Bool: out.i[k] = rd(k, uint8_t{}) != 0; break;
      case DType::I16: out.i[k] = rd(k, int16_t{}); break;
      case DType::U16: out.i[k] = rd(k, uint16_t{}); break;
      case DType::I32: out.i[k] = rd(k, int32_t{}); break;
      case DType::U32: out.i[k] = rd(k, uint32_t{}); break;
      case DType::I64: out.i[k] = rd(k, int64_t{}); break;
      default: out.i[k] = static_cast<int64_t>(rd(k, uint64_t{})); break;
    }
  }
}

std::string read_external(const onnx::TensorProto& tp, const std::string& base_dir, const std::string& where) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& e : tp.external_data()) {
    if (e.key() == "location") location = e.value();
    else if (e.key() == "offset") offset = std::stoll(e.value());
    else if (e.key() == "length") length = std::stoll(e.value());
  }
  if (location.empty()) throw_input_error(where + ": external data without a location");
  std::filesystem::path p = std::filesystem::path(base_dir) / location;
  std::ifstream f(p, std::ios::binary);
  if (!f) throw_io_error(where + ": cannot open external data file " + p.string());
  f.seekg(0, std::ios::end);
  int64_t size = f.tellg();
  if (length < 0) length = size - offset;
  if (offset < 0 || offset + length > size)
    throw_input_error(where + ": external data range [" + std::to_string(offset) + ", " + std::to_string(offset + length) +
                      ") is outside " + p.string() + " (" + std::to_string(size) + " bytes)");
  std::string data(static_cast<size_t>(length), '\0');
  f.seekg(offset);
  f.read(data.data(), length);
  return data;
}

Tensor convert_tensor(const onnx::TensorProto& tp, const std::string& where, const std::string& base_dir) {
  Tensor t;
  t.dtype = dtype_of(tp.data_type());
  if (t.dtype == DType::Unknown || t.dtype == DType::String)
    throw_input_error(where + ": tensor '" + tp.name() + "' has unsupported element type " + std::to_string(tp.data_type()));
  for (int64_t d : tp.dims()) {
    if (d < 0) throw_input_error(where + ": tensor '" + tp.name() + "' has a negative dimension");
    t.shape.push_back(d);
  }
  size_t count = static_cast<size_t>(interp::shape_numel(t.shape));
  size_t isz = item_size(t.dtype);
  if (tp.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string raw = read_external(tp, base_dir, where + ": tensor '" + tp.name() + "'");
    if (raw.size() != count * isz) throw_input_error(where + ": tensor '" + tp.name() + "' external data has the wrong size");
    decode_raw(raw.data(), count, t.dtype, t);
    return t;
  }
  if (tp.has_raw_data()) {
    const std::string& raw = tp.raw_data();
    if (raw.size() != count * isz)
      throw_input_error(where + ": tensor '" + tp.name() + "' holds " + std::to_string(raw.size()) + " bytes, its shape " +
                        interp::shape_str(t.shape) + " needs " + std::to_string(count * isz));
    decode_raw(raw.data(), count, t.dtype, t);
    return t;
  }
  auto check = [&](size_t have) {
    if (have != count)
      throw_input_error(where + ": tensor '" + tp.name() + "' holds " + std::to_string(have) + " values, its shape " +
                        interp::shape_str(t.shape) + " needs " + std::to_string(count));
  };
  switch (t.dtype) {
    case DType::F32:
      check(static_cast<size_t>(tp.float_data_size()));
      t.f.assign(tp.float_data().begin(), tp.float_data().end());
      break;
    case DType::F64:
      check(static_cast<size_t>(tp.double_data_size()));
      for (double v : tp.double_data()) t.f.push_back(static_cast<float>(v));
      break;
    case DType::F16:
    case DType::BF16:
      check(static_cast<size_t>(tp.int32_data_size()));
      for (int32_t v : tp.int32_data())
        t.f.push_back(t.dtype == DType::F16 ? half_to_float(static_cast<uint16_t>(v)) : bf16_to_float(static_cast<uint16_t>(v)));
      break;
    case DType::I64:
      check(static_cast<size_t>(tp.int64_data_size()));
      t.i.assign(tp.int64_data().begin(), tp.int64_data().end());
      break;
    case DType::U32:
    case DType::U64:
      check(static_cast<size_t>(tp.uint64_data_size()));
      for (uint64_t v : tp.uint64_data()) t.i.push_back(static_cast<int64_t>(v));
      break;
    default:  // int8/16/32, uint8/16, bool live in int32_data
      check(static_cast<size_t>(tp.int32_data_size()));
      for (int32_t v : tp.int32_data()) t.i.push_back(t.dtype == DType::Bool ? (v != 0) : v);
      break;
  }
  return t;
}

interp::Attribute convert_attribute(const onnx::AttributeProto& a, const std::string& where, const std::string& base_dir) {
  interp::Attribute out;
  using K = interp::Attribute::Kind;
  switch (a.type()) {
    case onnx::AttributeProto::INT: out.kind = K::Int; out.i = a.i(); break;
    case onnx::AttributeProto::FLOAT: out.kind = K::Float; out.f = a.f(); break;
    case onnx::AttributeProto::STRING: out.kind = K::String; out.s = a.s(); break;
    case onnx::AttributeProto::INTS: out.kind = K::Ints; out.ints.assign(a.ints().begin(), a.ints().end()); break;
    case onnx::AttributeProto::FLOATS: out.kind = K::Floats; out.floats.assign(a.floats().begin(), a.floats().end()); break;
    case onnx::AttributeProto::STRINGS: out.kind = K::Strings; out.strings.assign(a.strings().begin(), a.strings().end()); break;
    case onnx::AttributeProto::TENSOR:
      out.kind = K::Tensor;
      out.t = std::make_shared<Tensor>(convert_tensor(a.t(), where, base_dir));
      break;
    default: out.kind = K::Other; break;  // graphs, sparse tensors, type protos: no kernel uses them
  }
  return out;
}

// Subgraphs (If's branches) -------------------------------------------------

void set_value_type(const onnx::ValueInfoProto& vi, interp::Value& v);

// Converts a subgraph. Names it reads that it does not define are values of
// an enclosing graph: each becomes an input of the subgraph (after its own
// formal inputs) and is listed in `captures`, in order of first use.
std::shared_ptr<Graph> convert_subgraph(const onnx::GraphProto& sg, const std::string& where, const std::string& base_dir,
                                        int opset, std::vector<std::string>& captures);

// The graph attributes of `np` into `node`; the outer values they read are
// appended to node.inputs through `value_for` (same order as each
// subgraph's captured inputs, which are aligned to one list).
void convert_graph_attributes(const onnx::NodeProto& np, interp::Node& node, const std::string& where,
                              const std::string& base_dir, int opset,
                              const std::function<int(const std::string&)>& value_for) {
  std::vector<std::string> captures;
  std::vector<std::pair<std::string, std::shared_ptr<Graph>>> subs;
  for (const auto& a : np.attribute()) {
    if (a.type() != onnx::AttributeProto::GRAPH) continue;
    subs.emplace_back(a.name(), convert_subgraph(a.g(), where + " attribute '" + a.name() + "'", base_dir, opset, captures));
  }
  for (auto& [aname, g] : subs) {
    size_t formal = static_cast<size_t>(g->inputs.size());
    for (int v : g->inputs)
      if (std::find(captures.begin(), captures.end(), g->value(v).name) != captures.end()) --formal;
    std::vector<int> ins(g->inputs.begin(), g->inputs.begin() + static_cast<long>(formal));
    for (const auto& c : captures) {
      int v = g->find(c);
      if (v < 0 || std::find(g->inputs.begin(), g->inputs.end(), v) == g->inputs.end()) {
        interp::Value val;
        val.name = v < 0 ? c : g->unique_name(c);
        v = g->add_value(std::move(val));
      }
      ins.push_back(v);
    }
    g->inputs = std::move(ins);
    interp::Attribute at;
    at.kind = interp::Attribute::Kind::Graph;
    at.g = g;
    node.attrs[aname] = std::move(at);
  }
  for (const auto& c : captures) node.inputs.push_back(value_for(c));
}

// An initializer as a constant value.
interp::Value constant_value(const onnx::TensorProto& init, const std::string& where, const std::string& base_dir) {
  interp::Value v;
  v.name = init.name();
  auto t = std::make_shared<Tensor>(convert_tensor(init, where, base_dir));
  v.dtype = t->dtype;
  v.shape = t->shape;
  v.has_shape = true;
  v.constant = std::move(t);
  return v;
}

// Node k of a graph (or subgraph) into `g`: a name unique in the graph,
// attributes, inputs (`value_for(name, reader)`, reader naming the node),
// subgraph attributes, and outputs typed from `infos` (an empty output name
// is an absent output). `where` names the graph in messages.
void convert_node(const onnx::NodeProto& np, int k, Graph& g, std::map<std::string, int>& name_count,
                  const std::map<std::string, const onnx::ValueInfoProto*>& infos, const std::string& where,
                  const std::string& base_dir, int opset,
                  const std::function<int(const std::string&, const std::string&)>& value_for) {
  interp::Node node;
  node.op = np.op_type();
  node.domain = np.domain() == "ai.onnx" ? "" : np.domain();
  node.source_index = k;
  node.name = np.name().empty() ? np.op_type() + "_" + std::to_string(k) : np.name();
  if (name_count[node.name]++) node.name += "_" + std::to_string(k);
  const std::string reader = "node '" + node.name + "'";
  const std::string nw = where + ": " + reader;
  for (const auto& a : np.attribute())
    if (a.type() != onnx::AttributeProto::GRAPH)
      node.attrs[a.name()] = convert_attribute(a, nw + " attribute '" + a.name() + "'", base_dir);
  for (const auto& in : np.input()) node.inputs.push_back(value_for(in, reader));
  convert_graph_attributes(np, node, nw, base_dir, opset,
                           [&](const std::string& c) { return value_for(c, reader + " (a subgraph)"); });
  for (const auto& out : np.output()) {
    if (out.empty()) {
      node.outputs.push_back(-1);
      continue;
    }
    interp::Value v;
    v.name = out;
    if (auto it = infos.find(out); it != infos.end()) set_value_type(*it->second, v);
    if (g.find(out) >= 0) throw_input_error(where + ": tensor '" + out + "' is produced twice");
    node.outputs.push_back(g.add_value(std::move(v)));
  }
  g.nodes.push_back(std::move(node));
}

std::shared_ptr<Graph> convert_subgraph(const onnx::GraphProto& sg, const std::string& where, const std::string& base_dir,
                                        int opset, std::vector<std::string>& captures) {
  auto graph = std::make_shared<Graph>();
  Graph& g = *graph;
  g.source = where;
  g.opset = opset;
  for (const auto& init : sg.initializer())
    if (g.find(init.name()) < 0) g.add_value(constant_value(init, where, base_dir));
  for (const auto& in : sg.input()) {
    if (g.find(in.name()) >= 0) continue;
    interp::Value v;
    v.name = in.name();
    set_value_type(in, v);
    g.inputs.push_back(g.add_value(std::move(v)));
  }
  std::map<std::string, const onnx::ValueInfoProto*> infos;
  for (const auto& vi : sg.value_info()) infos[vi.name()] = &vi;
  for (const auto& vi : sg.output()) infos[vi.name()] = &vi;
  auto value_for = [&](const std::string& vname, const std::string&) -> int {
    if (vname.empty()) return -1;
    int id = g.find(vname);
    if (id >= 0) return id;
    // An outer value: a new input of this subgraph.
    interp::Value v;
    v.name = vname;
    id = g.add_value(std::move(v));
    g.inputs.push_back(id);
    if (std::find(captures.begin(), captures.end(), vname) == captures.end()) captures.push_back(vname);
    return id;
  };
  std::map<std::string, int> name_count;
  for (int k = 0; k < sg.node_size(); ++k)
    convert_node(sg.node(k), k, g, name_count, infos, where, base_dir, opset, value_for);
  for (const auto& out : sg.output()) g.outputs.push_back(value_for(out.name(), ""));
  g.relink();
  return graph;
}

// Static shape from a TypeProto; false when any dimension is symbolic or unknown.
bool static_shape(const onnx::TypeProto& tp, Shape& out, std::string* text = nullptr) {
  out.clear();
  if (!tp.has_tensor_type() || !tp.tensor_type().has_shape()) {
    if (text) *text = "unknown";
    return false;
  }
  bool ok = true;
  std::string s = "[";
  for (const auto& d : tp.tensor_type().shape().dim()) {
    if (s.size() > 1) s += ", ";
    if (d.has_dim_value() && d.dim_value() >= 0) {
      out.push_back(d.dim_value());
      s += std::to_string(d.dim_value());
    } else {
      ok = false;
      out.push_back(-1);
      s += d.has_dim_param() && !d.dim_param().empty() ? d.dim_param() : "?";
    }
  }
  if (text) *text = s + "]";
  return ok;
}

void set_value_type(const onnx::ValueInfoProto& vi, interp::Value& v) {
  if (vi.type().has_tensor_type()) v.dtype = dtype_of(vi.type().tensor_type().elem_type());
  Shape s;
  if (static_shape(vi.type(), s)) {
    v.shape = s;
    v.has_shape = true;
  }
}

void set_shape(onnx::TypeProto* tp, const Shape& s) {
  auto* shape = tp->mutable_tensor_type()->mutable_shape();
  shape->clear_dim();
  for (int64_t d : s) shape->add_dim()->set_dim_value(d);
}

std::string join_shape(const std::vector<int64_t>& s) { return interp::shape_str(s); }

// Ranks the ONNX library's shape inference takes for granted. Its
// convolution and pooling rules index the input's dimensions by the
// attributes' lengths without checking them (a rank-2 input to a Conv
// crashed it), so those are checked first, on ranks propagated from the
// inputs and initializers through the operators that keep or set them.
void check_conv_ranks(const onnx::GraphProto& g, const std::string& name) {
  std::map<std::string, int64_t> rank;
  for (const auto& init : g.initializer()) rank[init.name()] = init.dims_size();
  for (const auto& in : g.input())
    if (in.type().tensor_type().has_shape()) rank.emplace(in.name(), in.type().tensor_type().shape().dim_size());
  auto rank_of = [&](const onnx::NodeProto& n, int i) -> int64_t {
    if (i >= n.input_size() || n.input(i).empty()) return -1;
    auto it = rank.find(n.input(i));
    return it == rank.end() ? -1 : it->second;
  };
  static const std::set<std::string> kConvPool = {"Conv", "ConvTranspose", "ConvInteger", "MaxPool", "AveragePool", "LpPool"};
  static const std::set<std::string> kSameRank = {
      "Relu", "LeakyRelu", "PRelu", "Sigmoid", "Tanh", "Clip", "BatchNormalization", "Dropout", "Identity", "Softmax",
      "HardSigmoid", "HardSwish", "Elu", "Selu", "Neg", "Abs", "Sqrt", "Exp", "Log", "Erf", "Cast", "QuantizeLinear",
      "DequantizeLinear", "LRN", "InstanceNormalization", "GlobalAveragePool", "GlobalMaxPool", "Pad", "Transpose",
      "LogSoftmax", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Softplus", "Mish", "Gelu"};
  static const std::set<std::string> kBroadcast = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Where"};
  for (int k = 0; k < g.node_size(); ++k) {
    const onnx::NodeProto& n = g.node(k);
    const std::string who = name + ": node " + std::to_string(k) + " (" + n.op_type() +
                            (n.name().empty() ? "" : " '" + n.name() + "'") + ")";
    int64_t out = -1;
    if (kConvPool.count(n.op_type())) {
      const int64_t r = rank_of(n, 0);
      if (r >= 0) {
        if (r < 3)
          throw_input_error(who + ": input '" + n.input(0) + "' has " + std::to_string(r) +
                            " dimensions; it needs [N, C] and at least one spatial dimension");
        const int64_t spatial = r - 2;
        for (const auto& a : n.attribute()) {
          int64_t want = a.name() == "pads" ? 2 * spatial
                         : (a.name() == "kernel_shape" || a.name() == "strides" || a.name() == "dilations" ||
                            a.name() == "output_padding" || a.name() == "output_shape")
                             ? spatial
                             : -1;
          if (want >= 0 && a.ints_size() != want)
            throw_input_error(who + ": attribute " + a.name() + " has " + std::to_string(a.ints_size()) + " values, " +
                              std::to_string(want) + " for an input of " + std::to_string(r) + " dimensions");
        }
        const int64_t wr = n.op_type().rfind("Conv", 0) == 0 ? rank_of(n, 1) : -1;
        if (wr >= 0 && wr != r)
          throw_input_error(who + ": weights '" + n.input(1) + "' have " + std::to_string(wr) + " dimensions, the input " +
                            std::to_string(r));
      }
      out = r;
    } else if (kSameRank.count(n.op_type())) {
      out = rank_of(n, 0);
    } else if (kBroadcast.count(n.op_type())) {
      for (int i = 0; i < n.input_size(); ++i) {
        int64_t r = rank_of(n, i);
        if (r < 0) {
          out = -1;
          break;
        }
        out = std::max(out, r);
      }
    } else if (n.op_type() == "Flatten" || n.op_type() == "Gemm") {
      out = 2;
    }
    if (n.output_size() > 0 && out >= 0) rank[n.output(0)] = out;
  }
}

}  // namespace

Tensor parse_onnx_tensor(const std::string& bytes, const std::string& name) {
  onnx::TensorProto tp;
  if (!tp.ParseFromString(bytes)) throw_input_error(name + ": not a serialized ONNX TensorProto (corrupt or truncated)");
  return convert_tensor(tp, name, ".");
}

interp::Graph import_onnx(const std::string& path, const ImportOptions& options) {
  std::string bytes = read_input(path);
  std::string dir = path == "-" ? "." : std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  return import_onnx_bytes(bytes, display_name(path), dir, options);
}

interp::Graph import_onnx_bytes(const std::string& bytes, const std::string& name, const std::string& base_dir,
                                const ImportOptions& options) {
  onnx::ModelProto model;
  if (bytes.empty()) throw_input_error(name + ": empty file (not an ONNX model)");
  if (!model.ParseFromString(bytes))
    throw_input_error(name + ": not a valid ONNX model: the protobuf does not parse (corrupt or truncated file)");
  if (!model.has_graph() || model.graph().node_size() == 0)
    throw_input_error(name + ": not a valid ONNX model: no graph or an empty graph (corrupt or truncated file?)");

  int opset = -1;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = static_cast<int>(o.version());
  if (opset < 0) throw_input_error(name + ": the model imports no opset of the default ONNX domain");
  if (opset < kMinOnnxOpset || opset > kMaxOnnxOpset)
    throw_input_error(name + ": opset " + std::to_string(opset) + " is not supported (opsets " +
                      std::to_string(kMinOnnxOpset) + " to " + std::to_string(kMaxOnnxOpset) + " are)");

  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw_input_error(name + ": the ONNX checker rejects the model: " + std::string(e.what()));
  }

  if (model.graph().output_size() == 0) throw_input_error(name + ": the graph declares no outputs");
  // Names become strings of the Frontend IR's JSON, which must be UTF-8.
  {
    auto utf8 = [&](const std::string& s, const char* what) {
      if (!valid_utf8(s))
        throw_input_error(name + ": not a valid ONNX model: the " + std::string(what) + " \"" + printable_excerpt(s, 60, true) +
                          "\" is not valid UTF-8");
    };
    const onnx::GraphProto& g = model.graph();
    for (const auto& n : g.node()) {
      utf8(n.name(), "node name");
      utf8(n.op_type(), "operator");
      for (const auto& t : n.input()) utf8(t, "tensor name");
      for (const auto& t : n.output()) utf8(t, "tensor name");
    }
    for (const auto& v : g.input()) utf8(v.name(), "input name");
    for (const auto& v : g.output()) utf8(v.name(), "output name");
    for (const auto& v : g.value_info()) utf8(v.name(), "tensor name");
    for (const auto& t : g.initializer()) utf8(t.name(), "initializer name");
  }

  // --constant-input: the value becomes an initializer of the input's name
  // (an input that is also an initializer is a constant, below).
  for (const auto& [given, file] : options.constant_inputs) {
    std::string cname = given;
    onnx::TensorProto tp;
    if (file.size() > 4 && file.compare(file.size() - 4, 4, ".npy") == 0) {
      NpyArray a = read_npy(file);
      std::vector<float> f = a.to_float();
      for (int64_t d : a.shape) tp.add_dims(d);
      tp.set_data_type(onnx::TensorProto::FLOAT);
      for (float x : f) tp.add_float_data(x);
    } else if (!tp.ParseFromString(read_input(file))) {
      throw_input_error(file + ": --constant-input: neither a .npy file nor an ONNX TensorProto");
    }
    if (cname.empty()) cname = tp.name();
    if (cname.empty()) throw_usage_error("--constant-input " + file + ": the tensor has no name; give NAME=FILE");
    bool found = false;
    for (const auto& in : model.graph().input()) found = found || in.name() == cname;
    if (!found) throw_usage_error(name + ": --constant-input " + file + ": the model has no input '" + cname + "'");
    tp.set_name(cname);
    auto* inits = model.mutable_graph()->mutable_initializer();
    auto old = std::find_if(inits->begin(), inits->end(), [&](const onnx::TensorProto& t) { return t.name() == cname; });
    if (old != inits->end()) *old = tp;
    else *inits->Add() = tp;
  }

  // Inputs that are also initializers are constants (old exporters list them).
  std::map<std::string, int> init_names;
  for (int k = 0; k < model.graph().initializer_size(); ++k) init_names[model.graph().initializer(k).name()] = k;

  // Apply --input-shape / --batch, then require static input shapes.
  auto* g = model.mutable_graph();
  bool first = true;
  for (const auto* list : {&g->input(), &g->output()})
    for (const auto& vi : *list)
      if (!vi.type().has_tensor_type())
        throw_input_error(name + ": '" + vi.name() +
                          "' is not a tensor (sequence, map and optional values are not supported)");
  for (auto& in : *g->mutable_input()) {
    if (init_names.count(in.name())) continue;
    Shape s;
    std::string text;
    bool ok = static_shape(in.type(), s, &text);
    if (first && !options.input_shape.empty()) {
      if (!s.empty() && s.size() != options.input_shape.size())
        throw_input_error(name + ": --input-shape " + join_shape(options.input_shape) + " has " +
                          std::to_string(options.input_shape.size()) + " dimensions, input '" + in.name() + "' has " +
                          std::to_string(s.size()) + " (" + text + ")");
      s = options.input_shape;
      ok = true;
    }
    if (options.batch > 0 && !s.empty()) {
      s[0] = options.batch;
      ok = std::all_of(s.begin(), s.end(), [](int64_t d) { return d >= 0; });
    }
    if (!ok)
      throw_input_error(name + ": input '" + in.name() + "' has a dynamic shape " + text +
                        "; give the shape with --input-shape N,C,H,W");
    set_shape(in.mutable_type(), s);
    first = false;
  }

  // Shapes recorded in the file were computed for the original input shape.
  if (!options.input_shape.empty() || options.batch > 0) {
    g->clear_value_info();
    for (auto& out : *g->mutable_output()) out.mutable_type()->mutable_tensor_type()->clear_shape();
  }
  check_conv_ranks(model.graph(), name);
  try {
    onnx::ShapeInferenceOptions opts(false, 0, true);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), opts);
  } catch (const std::exception& e) {
    throw_input_error(name + ": ONNX shape inference failed: " + std::string(e.what()));
  }

  Graph graph;
  graph.source = name;
  graph.opset = opset;
  const auto& gp = model.graph();
  for (const auto& init : gp.initializer()) graph.add_value(constant_value(init, name, base_dir));
  for (const auto& in : gp.input()) {
    if (init_names.count(in.name())) continue;
    interp::Value v;
    v.name = in.name();
    set_value_type(in, v);
    graph.inputs.push_back(graph.add_value(std::move(v)));
  }
  std::map<std::string, const onnx::ValueInfoProto*> infos;
  for (const auto& vi : gp.value_info()) infos[vi.name()] = &vi;
  for (const auto& vi : gp.output()) infos[vi.name()] = &vi;

  auto value_for = [&](const std::string& vname, const std::string& where) -> int {
    if (vname.empty()) return -1;
    int id = graph.find(vname);
    if (id < 0) throw_input_error(name + ": " + where + " reads '" + vname + "', which nothing produces");
    return id;
  };
  std::map<std::string, int> name_count;
  for (int k = 0; k < gp.node_size(); ++k)
    convert_node(gp.node(k), k, graph, name_count, infos, name, base_dir, opset, value_for);
  for (const auto& out : gp.output()) graph.outputs.push_back(value_for(out.name(), "graph output"));
  graph.relink();

  // Every unsupported operator, by name and node, in one message.
  auto bad = interp::unsupported_nodes(graph);
  if (!bad.empty()) {
    std::string msg = name + ": " + std::to_string(bad.size()) + " node(s) use unsupported operators or attributes:";
    for (const auto& b : bad) msg += "\n  " + b;
    throw Error(kExitInvalidInput, msg);
  }
  return graph;
}

}  // namespace cct::frontend
