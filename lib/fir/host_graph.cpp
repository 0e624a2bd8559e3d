#include "fir/host_graph.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "support/error.hpp"

namespace cct::fir {

bool HostAttribute::operator==(const HostAttribute& o) const {
  if (kind != o.kind || i != o.i || !(f == o.f) || s != o.s || ints != o.ints || floats != o.floats ||
      strings != o.strings || (graph == nullptr) != (o.graph == nullptr))
    return false;
  return !graph || *graph == *o.graph;
}

int host_dtype_bytes(std::string_view dtype) {
  static const std::map<std::string_view, int> bytes = {
      {"float32", 4}, {"float16", 2}, {"float64", 8}, {"int8", 1},  {"uint8", 1},
      {"int16", 2},   {"int32", 4},   {"int64", 8},   {"bool", 1}};
  auto it = bytes.find(dtype);
  return it == bytes.end() ? 0 : it->second;
}

size_t graph_output_position(std::string_view name) {
  return size_t(std::stoll(std::string(name.substr(6)))) - 1;  // is_graph_output_name holds
}

const Layer* output_layer(const Graph& g, std::string_view name) {
  for (const Layer* l : g.output_layers())
    for (const auto& n : l->next_layer)
      if (n == name) return l;
  return nullptr;
}

// ---- reading and writing ------------------------------------------------------

namespace {

HostAttribute read_attribute(const RapidCursor& c) {
  c.expect_object();
  if (c.member_count() != 1) c.fail("an attribute is an object of one member: its kind and value");
  auto m = c.value().MemberBegin();
  const RapidCursor v = c.member(m);
  const std::string_view kind(m->name.GetString(), m->name.GetStringLength());
  HostAttribute a;
  using K = HostAttribute::Kind;
  if (kind == "int") a.kind = K::Int, a.i = v.as_int();
  else if (kind == "float") a.kind = K::Float, a.f = v.as_double();
  else if (kind == "string") a.kind = K::String, a.s = v.as_string();
  else if (kind == "ints") a.kind = K::Ints, a.ints = v.as_int_vector();
  else if (kind == "floats") a.kind = K::Floats, a.floats = v.as_double_vector();
  else if (kind == "strings") a.kind = K::Strings, a.strings = v.as_string_vector();
  else if (kind == "tensor") a.kind = K::Tensor, a.s = v.as_string();
  else if (kind == "graph") a.kind = K::Graph, a.graph = std::make_shared<HostGraph>(read_host_graph(v, false));
  else c.fail("unknown attribute kind '" + std::string(kind) + "' (int, float, string, ints, floats, strings, tensor, graph)");
  return a;
}

Json attribute_json(const HostAttribute& a) {
  using K = HostAttribute::Kind;
  Json::Object o;
  switch (a.kind) {
    case K::Int: o.emplace_back("int", a.i); break;
    case K::Float: o.emplace_back("float", a.f); break;
    case K::String: o.emplace_back("string", a.s); break;
    case K::Ints: o.emplace_back("ints", Json(a.ints)); break;
    case K::Floats: o.emplace_back("floats", Json(a.floats)); break;
    case K::Strings: o.emplace_back("strings", Json(a.strings)); break;
    case K::Tensor: o.emplace_back("tensor", a.s); break;
    case K::Graph: o.emplace_back("graph", to_json(*a.graph, false)); break;
  }
  return Json(std::move(o));
}

std::vector<std::pair<std::string, std::string>> read_string_map(const RapidCursor& c) {
  c.expect_object();
  std::vector<std::pair<std::string, std::string>> out;
  for (auto m = c.value().MemberBegin(); m != c.value().MemberEnd(); ++m) {
    const RapidCursor v = c.member(m);
    out.emplace_back(std::string(m->name.GetString(), m->name.GetStringLength()), v.as_string());
  }
  return out;
}

}  // namespace

HostGraph read_host_graph(const RapidCursor& c, bool top) {
  c.expect_object();
  HostGraph hg;
  if (top) {
    const RapidCursor o = c.at("opset");
    hg.opset = o.as_int();
  }
  const RapidCursor ins = c.at("inputs");
  for (size_t k = 0; k < ins.array_size(); ++k) {
    const RapidCursor e = ins.at(k);
    const RapidCursor n = e.at("name");
    HostInput in{n.as_string(), ""};
    if (auto f = e.find("from")) in.from = f->as_string();
    hg.inputs.push_back(std::move(in));
  }
  const RapidCursor outs = c.at("outputs");
  for (size_t k = 0; k < outs.array_size(); ++k) {
    const RapidCursor e = outs.at(k);
    const RapidCursor n = e.at("name");
    HostOutput out{n.as_string(), "", ""};
    if (auto d = e.find("dtype")) out.dtype = d->as_string();
    if (auto f = e.find("file")) out.file = f->as_string();
    hg.outputs.push_back(std::move(out));
  }
  if (auto k = c.find("constants")) hg.constants = read_string_map(*k);
  if (auto s = c.find("shapes")) {
    s->expect_object();
    for (auto m = s->value().MemberBegin(); m != s->value().MemberEnd(); ++m) {
      const RapidCursor v = s->member(m);
      hg.shapes.emplace_back(std::string(m->name.GetString(), m->name.GetStringLength()), v.as_int_vector());
    }
  }
  const RapidCursor nodes = c.at("nodes");
  for (size_t k = 0; k < nodes.array_size(); ++k) {
    const RapidCursor e = nodes.at(k);
    HostNode n;
    const RapidCursor name = e.at("name"), op = e.at("op_type"), in = e.at("inputs"), out = e.at("outputs");
    n.name = name.as_string();
    n.op_type = op.as_string();
    if (auto d = e.find("domain")) n.domain = d->as_string();
    n.inputs = in.as_string_vector();
    n.outputs = out.as_string_vector();
    if (auto at = e.find("attributes")) {
      at->expect_object();
      for (auto m = at->value().MemberBegin(); m != at->value().MemberEnd(); ++m) {
        const RapidCursor v = at->member(m);
        n.attributes.emplace_back(std::string(m->name.GetString(), m->name.GetStringLength()), read_attribute(v));
      }
    }
    hg.nodes.push_back(std::move(n));
  }
  return hg;
}

Json to_json(const HostGraph& hg, bool top) {
  Json::Object o;
  if (top) o.emplace_back("opset", hg.opset);
  Json::Array ins, outs, nodes;
  for (const auto& in : hg.inputs) {
    Json::Object e{{"name", in.name}};
    if (top) e.emplace_back("from", in.from);
    ins.emplace_back(std::move(e));
  }
  for (const auto& out : hg.outputs) {
    Json::Object e{{"name", out.name}};
    if (top) e.emplace_back("dtype", out.dtype), e.emplace_back("file", out.file);
    outs.emplace_back(std::move(e));
  }
  o.emplace_back("inputs", Json(std::move(ins)));
  o.emplace_back("outputs", Json(std::move(outs)));
  Json::Object consts, shapes;
  for (const auto& [v, f] : hg.constants) consts.emplace_back(v, f);
  for (const auto& [v, s] : hg.shapes) shapes.emplace_back(v, Json(s));
  o.emplace_back("constants", Json(std::move(consts)));
  if (top) o.emplace_back("shapes", Json(std::move(shapes)));
  for (const auto& n : hg.nodes) {
    Json::Object e{{"name", n.name}, {"op_type", n.op_type}};
    if (!n.domain.empty()) e.emplace_back("domain", n.domain);
    e.emplace_back("inputs", Json(n.inputs));
    e.emplace_back("outputs", Json(n.outputs));
    Json::Object attrs;
    for (const auto& [k, a] : n.attributes) attrs.emplace_back(k, attribute_json(a));
    if (!attrs.empty()) e.emplace_back("attributes", Json(std::move(attrs)));
    nodes.emplace_back(std::move(e));
  }
  o.emplace_back("nodes", Json(std::move(nodes)));
  return Json(std::move(o));
}

// ---- checks ---------------------------------------------------------------------

namespace {

bool npy_name(const std::string& f) {
  return f.size() > 4 && f.ends_with(".npy") && f.find('/') == std::string::npos;
}

void check_body(const HostGraph& hg, const Graph& g, const std::string& file, const std::string& at, bool top,
                std::vector<std::string>& out) {
  auto bad = [&](const std::string& where, const std::string& what) { out.push_back(at_pointer(file, at + where, what)); };
  std::set<std::string> defined;
  auto define = [&](const std::string& name, const std::string& where) {
    if (name.empty()) bad(where, "a value needs a name");
    else if (!defined.insert(name).second) bad(where, "value '" + name + "' is defined twice");
  };
  if (top && hg.opset < 1) bad("/opset", "the opset must be positive");
  for (size_t k = 0; k < hg.inputs.size(); ++k) {
    const std::string p = "/inputs/" + std::to_string(k);
    define(hg.inputs[k].name, p + "/name");
    if (!top) continue;
    const Layer* l = output_layer(g, hg.inputs[k].from);
    if (!is_graph_output_name(hg.inputs[k].from) || !l)
      bad(p + "/from", "'" + hg.inputs[k].from + "' is not a graph output of the FIR");
  }
  for (size_t k = 0; k < hg.constants.size(); ++k) {
    define(hg.constants[k].first, "/constants");
    if (!npy_name(hg.constants[k].second))
      bad("/constants", "constant '" + hg.constants[k].first + "': '" + hg.constants[k].second + "' is not a .npy file name");
  }
  for (size_t k = 0; k < hg.nodes.size(); ++k) {
    const HostNode& n = hg.nodes[k];
    const std::string p = "/nodes/" + std::to_string(k);
    if (n.op_type.empty()) bad(p + "/op_type", "a node needs an operator type");
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (!n.inputs[i].empty() && !defined.count(n.inputs[i]))
        bad(p + "/inputs/" + std::to_string(i), "node '" + n.name + "' reads '" + n.inputs[i] +
                                                   "', which no input, constant or earlier node defines");
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (!n.outputs[i].empty()) define(n.outputs[i], p + "/outputs/" + std::to_string(i));
    for (const auto& [name, a] : n.attributes) {
      if (a.kind == HostAttribute::Kind::Tensor && !npy_name(a.s))
        bad(p + "/attributes/" + name, "'" + a.s + "' is not a .npy file name");
      if (a.kind == HostAttribute::Kind::Graph) check_body(*a.graph, g, file, at + p + "/attributes/" + name + "/graph", false, out);
    }
  }
  if (hg.outputs.empty()) bad("/outputs", "a graph needs an output");
  std::set<std::string> files;
  for (size_t k = 0; k < hg.outputs.size(); ++k) {
    const HostOutput& o = hg.outputs[k];
    const std::string p = "/outputs/" + std::to_string(k);
    if (!defined.count(o.name)) bad(p + "/name", "output '" + o.name + "' is not computed");
    if (!top) continue;
    if (!host_dtype_bytes(o.dtype)) bad(p + "/dtype", "unknown element type '" + o.dtype + "'");
    if (!npy_name(o.file) || !files.insert(o.file).second) bad(p + "/file", "'" + o.file + "' is not a .npy file name of its own");
  }
  for (const auto& [name, s] : hg.shapes) {
    if (!defined.count(name)) bad("/shapes", "shape of '" + name + "', which the graph does not define");
    for (int64_t d : s)
      if (d < 0) bad("/shapes", "shape of '" + name + "' has a negative dimension");
  }
  // The inputs are the FIR outputs: their shapes, when given, must agree.
  if (top)
    for (const auto& in : hg.inputs) {
      const Layer* l = output_layer(g, in.from);
      if (!l || l->output_shape.empty()) continue;
      for (const auto& [name, s] : hg.shapes)
        if (name == in.name && s != l->output_shape[0])
          bad("/shapes", "input '" + in.name + "' reads " + in.from + " of shape " + shape_text(l->output_shape[0]) +
                             ", but its shape is given as " + shape_text(s));
    }
}

}  // namespace

std::vector<std::string> check_host_graph(const HostGraph& hg, const Graph& g, const std::string& file) {
  std::vector<std::string> out;
  check_body(hg, g, file, "/" + std::string(kHostGraphKey), true, out);
  return out;
}

// ---- the static estimate ----------------------------------------------------------

namespace {

// Ops of one body given the element counts of its inputs; fills `size` with
// every value's count.
int64_t body_ops(const HostGraph& hg, const std::vector<int64_t>& input_size, std::map<std::string, int64_t>& size) {
  std::map<std::string, int64_t> fixed;
  for (const auto& [name, s] : hg.shapes) fixed[name] = element_count(s);
  for (size_t k = 0; k < hg.inputs.size(); ++k) size[hg.inputs[k].name] = k < input_size.size() ? input_size[k] : 0;
  for (const auto& [name, f] : hg.constants) size[name] = fixed.count(name) ? fixed[name] : 1;
  // Selections read only what they write (and their indices); Shape and
  // Size read no element at all.
  static const std::set<std::string> select = {"Gather", "GatherElements", "GatherND", "Slice", "Shape", "Size"};
  int64_t ops = 0;
  for (const HostNode& n : hg.nodes) {
    int64_t largest = 0, read = 0;
    std::vector<int64_t> ins;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const auto& v = n.inputs[k];
      int64_t e = v.empty() ? 0 : size[v];
      ins.push_back(e);
      largest = std::max(largest, e);
      if (k > 0 || !select.count(n.op_type)) read += e;
    }
    int64_t branch = 0;
    for (const auto& [name, a] : n.attributes)
      if (a.kind == HostAttribute::Kind::Graph) {
        // A branch's inputs are the node's inputs after the condition.
        std::vector<int64_t> sub(ins.begin() + std::min<size_t>(1, ins.size()), ins.end());
        std::map<std::string, int64_t> inner;
        branch = std::max(branch, body_ops(*a.graph, sub, inner));
      }
    int64_t written = 0;
    for (const auto& v : n.outputs) {
      if (v.empty()) continue;
      auto it = fixed.find(v);
      size[v] = it != fixed.end() ? it->second : largest;
      written += size[v];
    }
    ops += read + written + branch;
  }
  return ops;
}

}  // namespace

HostGraphCost host_graph_cost(const HostGraph& hg, const Graph& g) {
  std::vector<int64_t> in;
  for (const auto& i : hg.inputs) {
    const Layer* l = output_layer(g, i.from);
    in.push_back(l && !l->output_shape.empty() ? element_count(l->output_shape[0]) : 0);
  }
  std::map<std::string, int64_t> size;
  HostGraphCost c;
  c.ops = body_ops(hg, in, size);
  for (const auto& o : hg.outputs) c.output_bytes += size[o.name] * host_dtype_bytes(o.dtype);
  return c;
}

}  // namespace cct::fir
