#include "interp/host_graph.hpp"

#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "interp/float_interp.hpp"
#include "support/error.hpp"

namespace cct::interp {

namespace {

struct NpyKind {
  DType dtype;
  NpyType npy;
};
constexpr NpyKind kNpyKinds[] = {
    {DType::F32, NpyType::F32}, {DType::F16, NpyType::F16}, {DType::F64, NpyType::F64}, {DType::I8, NpyType::I8},
    {DType::U8, NpyType::U8},   {DType::I16, NpyType::I16}, {DType::I32, NpyType::I32}, {DType::I64, NpyType::I64},
    {DType::Bool, NpyType::Bool}};

template <class T, class S>
void put(std::vector<uint8_t>& bytes, const std::vector<S>& v) {
  bytes.resize(v.size() * sizeof(T));
  for (size_t k = 0; k < v.size(); ++k) {
    const T x = static_cast<T>(v[k]);
    std::memcpy(bytes.data() + k * sizeof(T), &x, sizeof(T));
  }
}

}  // namespace

NpyArray tensor_to_npy(const Tensor& t, const std::string& what) {
  NpyArray a;
  a.shape = t.shape;
  bool known = false;
  for (const auto& k : kNpyKinds) known = known || (k.dtype == t.dtype && (a.type = k.npy, true));
  if (!known) throw_input_error(what + ": " + std::string(dtype_name(t.dtype)) + " tensors cannot be written as .npy");
  switch (a.type) {
    case NpyType::F32: put<float>(a.bytes, t.f); break;
    case NpyType::F64: put<double>(a.bytes, t.f); break;
    case NpyType::F16: {
      std::vector<uint16_t> h(t.f.size());
      for (size_t k = 0; k < h.size(); ++k) h[k] = float_to_half(t.f[k]);
      put<uint16_t>(a.bytes, h);
      break;
    }
    case NpyType::I8: put<int8_t>(a.bytes, t.i); break;
    case NpyType::U8: put<uint8_t>(a.bytes, t.i); break;
    case NpyType::Bool: {
      std::vector<uint8_t> b(t.i.size());
      for (size_t k = 0; k < b.size(); ++k) b[k] = t.i[k] != 0;
      put<uint8_t>(a.bytes, b);
      break;
    }
    case NpyType::I16: put<int16_t>(a.bytes, t.i); break;
    case NpyType::I32: put<int32_t>(a.bytes, t.i); break;
    case NpyType::I64: put<int64_t>(a.bytes, t.i); break;
  }
  return a;
}

Tensor tensor_from_npy(const NpyArray& a) {
  Tensor t;
  t.shape = a.shape;
  for (const auto& k : kNpyKinds)
    if (k.npy == a.type) t.dtype = k.dtype;
  if (is_floating(t.dtype)) t.f = a.to_float();
  else t.i = a.to_int();
  return t;
}

// ---- the interpreter's nodes as a host graph ---------------------------------

namespace {

class HostGraphWriter {
 public:
  HostGraphWriter(std::vector<std::pair<std::string, NpyArray>>& files) : files_(files) {}

  // One body: nodes of g reading `inputs`, computing `outputs`.
  fir::HostGraph body(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& inputs,
                      const std::vector<int>& outputs) {
    fir::HostGraph hg;
    for (int v : inputs) hg.inputs.push_back({g.value(v).name, ""});
    for (int v : outputs) hg.outputs.push_back({g.value(v).name, "", ""});
    std::set<int> constants;
    for (int k : nodes)
      for (int v : g.nodes[size_t(k)].inputs)
        if (g.is_constant(v)) constants.insert(v);
    for (int v : outputs)
      if (g.is_constant(v)) constants.insert(v);
    for (int v : constants) hg.constants.emplace_back(g.value(v).name, file(g.constant(v), "constant '" + g.value(v).name + "'"));
    for (int k : nodes) hg.nodes.push_back(node(g, g.nodes[size_t(k)]));
    return hg;
  }

 private:
  std::string file(const Tensor& t, const std::string& what) {
    std::string name = "host_graph_" + std::to_string(++written_) + ".npy";
    files_.emplace_back(name, tensor_to_npy(t, "host graph " + what));
    return name;
  }

  fir::HostNode node(const Graph& g, const Node& n) {
    fir::HostNode h;
    h.name = n.name, h.op_type = n.op, h.domain = n.domain;
    for (int v : n.inputs) h.inputs.push_back(v < 0 ? "" : g.value(v).name);
    for (int v : n.outputs) h.outputs.push_back(v < 0 ? "" : g.value(v).name);
    using K = Attribute::Kind;
    using F = fir::HostAttribute::Kind;
    for (const auto& [name, a] : n.attrs) {  // std::map: in name order
      fir::HostAttribute x;
      switch (a.kind) {
        case K::Int: x.kind = F::Int, x.i = a.i; break;
        case K::Float: x.kind = F::Float, x.f = a.f; break;
        case K::String: x.kind = F::String, x.s = a.s; break;
        case K::Ints: x.kind = F::Ints, x.ints = a.ints; break;
        case K::Floats: x.kind = F::Floats, x.floats.assign(a.floats.begin(), a.floats.end()); break;
        case K::Strings: x.kind = F::Strings, x.strings = a.strings; break;
        case K::Tensor: x.kind = F::Tensor, x.s = file(*a.t, "attribute '" + name + "' of node '" + n.name + "'"); break;
        case K::Graph: {
          const Graph& sub = *a.g;
          std::vector<int> all(sub.nodes.size());
          for (size_t k = 0; k < all.size(); ++k) all[k] = int(k);
          x.kind = F::Graph;
          x.graph = std::make_shared<fir::HostGraph>(body(sub, all, sub.inputs, sub.outputs));
          break;
        }
        case K::Other:
          throw_input_error(g.source + ": node '" + n.name + "' (" + n.op + "): attribute '" + name +
                            "' is of a kind the host graph cannot hold");
      }
      h.attributes.emplace_back(name, std::move(x));
    }
    return h;
  }

  std::vector<std::pair<std::string, NpyArray>>& files_;
  int written_ = 0;
};

}  // namespace

fir::HostGraph make_host_graph(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& inputs,
                               const std::vector<std::string>& from, const std::vector<int>& outputs,
                               const std::vector<std::string>& golden_files, const std::vector<char>& dynamic,
                               std::vector<std::pair<std::string, NpyArray>>& files) {
  HostGraphWriter w(files);
  fir::HostGraph hg = w.body(g, nodes, inputs, outputs);
  hg.opset = g.opset;
  for (size_t k = 0; k < hg.inputs.size() && k < from.size(); ++k) hg.inputs[k].from = from[k];
  for (size_t k = 0; k < hg.outputs.size(); ++k) {
    hg.outputs[k].dtype = std::string(dtype_name(g.value(outputs[k]).dtype));
    if (k < golden_files.size()) hg.outputs[k].file = golden_files[k];
  }
  // Static shapes: the inputs', then each node output's in node order.
  auto shape_of = [&](int v) {
    if (v >= 0 && g.value(v).has_shape && !dynamic[size_t(v)] && !g.is_constant(v))
      hg.shapes.emplace_back(g.value(v).name, g.value(v).shape);
  };
  for (int v : inputs) shape_of(v);
  for (int k : nodes)
    for (int v : g.nodes[size_t(k)].outputs) shape_of(v);
  return hg;
}

// ---- running it ---------------------------------------------------------------------

namespace {

Graph build(const fir::HostGraph& hg, int opset, const HostGraphRunner::Loader& load, const std::string& source) {
  Graph g;
  g.opset = opset;
  g.source = source;
  auto fresh = [&](const std::string& name) {
    Value v;
    v.name = name;
    return g.add_value(std::move(v));
  };
  auto known = [&](const std::string& name) {
    int v = g.find(name);
    if (v < 0) throw_input_error(source + ": value '" + name + "' is read but never defined");
    return v;
  };
  auto tensor = [&](const std::string& file) { return std::make_shared<const Tensor>(tensor_from_npy(load(file))); };
  for (const auto& in : hg.inputs) g.inputs.push_back(fresh(in.name));
  for (const auto& [name, file] : hg.constants) {
    Value& v = g.value(fresh(name));
    v.constant = tensor(file);
    v.dtype = v.constant->dtype, v.shape = v.constant->shape, v.has_shape = true;
  }
  for (const auto& hn : hg.nodes) {
    Node n;
    n.name = hn.name, n.op = hn.op_type, n.domain = hn.domain;
    for (const auto& v : hn.inputs) n.inputs.push_back(v.empty() ? -1 : known(v));
    for (const auto& v : hn.outputs) n.outputs.push_back(v.empty() ? -1 : fresh(v));
    using K = Attribute::Kind;
    using F = fir::HostAttribute::Kind;
    for (const auto& [name, x] : hn.attributes) {
      Attribute& a = n.attrs[name];
      switch (x.kind) {
        case F::Int: a.kind = K::Int, a.i = x.i; break;
        case F::Float: a.kind = K::Float, a.f = float(x.f); break;
        case F::String: a.kind = K::String, a.s = x.s; break;
        case F::Ints: a.kind = K::Ints, a.ints = x.ints; break;
        case F::Floats: a.kind = K::Floats, a.floats.assign(x.floats.begin(), x.floats.end()); break;
        case F::Strings: a.kind = K::Strings, a.strings = x.strings; break;
        case F::Tensor: a.kind = K::Tensor, a.t = tensor(x.s); break;
        case F::Graph:
          a.kind = K::Graph;
          a.g = std::make_shared<const Graph>(build(*x.graph, opset, load, source + " node '" + hn.name + "' " + name));
          break;
      }
    }
    g.nodes.push_back(std::move(n));
  }
  for (const auto& [name, shape] : hg.shapes) {
    Value& v = g.value(known(name));
    if (!v.constant) v.shape = shape, v.has_shape = true;
  }
  for (const auto& out : hg.outputs) g.outputs.push_back(known(out.name));
  g.relink();
  return g;
}

}  // namespace

HostGraphRunner::HostGraphRunner(const fir::Graph& g, const Loader& load, const std::string& file) : g_(g) {
  const fir::HostGraph* hg = g.host_graph();
  if (!hg) throw Error(kExitInternal, file + ": no host graph to run");
  graph_ = build(*hg, int(hg->opset), load, file + ": " + std::string(fir::kHostGraphKey));
  // Refuses what the interpreter cannot run, naming the nodes.
  FloatInterpreter check(graph_);
  for (const auto& in : hg->inputs) {
    const fir::Layer* l = fir::output_layer(g, in.from);
    if (!l) throw_input_error(file + ": " + std::string(fir::kHostGraphKey) + " reads " + in.from + ", not a graph output");
    from_.push_back(l);
  }
}

std::vector<Tensor> HostGraphRunner::run(const FirOutput& fir_output) const {
  std::vector<Tensor> xs;
  for (size_t k = 0; k < from_.size(); ++k) {
    const QTensor q = fir_output(*from_[k], g_.host_graph()->inputs[k].from);
    xs.push_back(Tensor::floats(q.shape, real_values(*from_[k], q)));
  }
  return FloatInterpreter(graph_).run(xs);
}

}  // namespace cct::interp
