// FIR reader (straight from the RapidJSON DOM) and writer (reference key order).
#include <algorithm>
#include <cstring>

#include "fir/fir.hpp"
#include "fir/fir_ops.hpp"
#include "fir/host_graph.hpp"
#include "support/error.hpp"
#include "support/io.hpp"
#include "support/json_emit.hpp"
#include "support/json_rapid.hpp"
#include "support/rapid_cursor.hpp"
#include "support/schema.hpp"
#include "support/schema_parse.hpp"

namespace cct::fir {

namespace {

// ---- reading ------------------------------------------------------------------

std::vector<Shape> read_shapes(const RapidCursor& c) {
  std::vector<Shape> out;
  out.reserve(c.array_size());
  for (size_t i = 0; i < c.array_size(); ++i) {
    RapidCursor e = c.at(i);
    out.push_back(e.as_int_vector());
  }
  return out;
}

template <size_t N>
std::array<int64_t, N> read_ints(const RapidCursor& c) {
  return c.as_int_array<N>();
}

std::optional<int> lut_index(std::string_view key) {
  // "tensor<N>_lut"
  constexpr std::string_view pre = "tensor", post = "_lut";
  if (key.size() <= pre.size() + post.size() || key.substr(0, pre.size()) != pre ||
      key.substr(key.size() - post.size()) != post)
    return std::nullopt;
  std::string_view digits = key.substr(pre.size(), key.size() - pre.size() - post.size());
  if (digits.empty() || digits.size() > 6) return std::nullopt;
  int n = 0;
  for (char ch : digits) {
    if (ch < '0' || ch > '9') return std::nullopt;
    n = n * 10 + (ch - '0');
  }
  return n;
}

// "input_scale<N>" / "input_zero_point<N>" -> N (1-based).
std::optional<int> numbered(std::string_view key, std::string_view prefix) {
  if (key.size() <= prefix.size() || key.substr(0, prefix.size()) != prefix) return std::nullopt;
  std::string_view digits = key.substr(prefix.size());
  if (digits.size() > 6 || digits[0] == '0') return std::nullopt;
  int n = 0;
  for (char ch : digits) {
    if (ch < '0' || ch > '9') return std::nullopt;
    n = n * 10 + (ch - '0');
  }
  return n;
}

QuantInfo read_quant_info(const RapidCursor& c) {
  c.expect_object();
  QuantInfo q;
  std::vector<std::optional<double>> scales, zps;
  auto put = [](std::vector<std::optional<double>>& v, int n, double x) {
    if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
    v[static_cast<size_t>(n - 1)] = x;
  };
  const auto& obj = c.value();
  for (auto m = obj.MemberBegin(); m != obj.MemberEnd(); ++m) {
    RapidCursor v = c.member(m);
    std::string_view key(m->name.GetString(), m->name.GetStringLength());
    if (auto n = numbered(key, "input_scale")) put(scales, *n, v.as_double());
    else if (auto z = numbered(key, "input_zero_point")) put(zps, *z, v.as_double());
    else if (key == "output_scale") q.output_scale = v.as_double();
    else if (key == "output_zero_point") q.output_zero_point = v.as_double();
    else if (key == "round_type") q.round_type = v.as_string();
    else q.extra.emplace_back(std::string(key), json_from_rapidjson(m->value));
  }
  size_t n = std::max(scales.size(), zps.size());
  for (size_t i = 0; i < n; ++i) {
    if (i >= scales.size() || !scales[i] || i >= zps.size() || !zps[i])
      c.fail("input_scale" + std::to_string(i + 1) + " and input_zero_point" + std::to_string(i + 1) +
             " must both be given, for inputs 1.." + std::to_string(n) + " without gaps");
    q.inputs.push_back({*scales[i], *zps[i]});
  }
  return q;
}

std::vector<Module> read_module_list(const RapidCursor& c) {
  c.expect_object();
  std::vector<Module> out;
  const auto& obj = c.value();
  for (auto m = obj.MemberBegin(); m != obj.MemberEnd(); ++m) {
    RapidCursor g = c.member(m);
    g.expect_object();
    out.push_back({std::string(m->name.GetString(), m->name.GetStringLength()), json_from_rapidjson(m->value)});
  }
  return out;
}

Layer read_layer(const RapidCursor& c, std::string_view key) {
  c.expect_object();
  Layer l;
  bool have_index = false, have_name = false, have_op = false, have_device = false;
  bool have_in_dtype = false, have_out_dtype = false, have_in_shape = false, have_out_shape = false;
  bool have_prev = false, have_next = false, have_files = false, have_in_batch = false, have_out_batch = false;
  std::vector<std::pair<int, std::vector<int64_t>>> luts;
  const auto& obj = c.value();
  for (auto m = obj.MemberBegin(); m != obj.MemberEnd(); ++m) {
    RapidCursor v = c.member(m);
    std::string_view k(m->name.GetString(), m->name.GetStringLength());
    if (k == "layer_index") {
      l.layer_index = v.as_int();
      have_index = true;
    } else if (k == "name") {
      l.name = v.as_string();
      have_name = true;
    } else if (k == "operation") {
      l.operation = v.as_string();
      l.op = parse_op(l.operation);
      have_op = true;
    } else if (k == "device") {
      std::string_view d = v.as_string_view();
      if (d == "npu") l.device = Device::Npu;
      else if (d == "cpu") l.device = Device::Cpu;
      else v.fail("device must be \"npu\" or \"cpu\", got \"" + std::string(d) + "\"");
      have_device = true;
    } else if (k == "input_dtype") {
      l.input_dtype = v.as_string_vector();
      have_in_dtype = true;
    } else if (k == "output_dtype") {
      l.output_dtype = v.as_string_vector();
      have_out_dtype = true;
    } else if (k == "input_shape") {
      l.input_shape = read_shapes(v);
      have_in_shape = true;
    } else if (k == "output_shape") {
      l.output_shape = read_shapes(v);
      have_out_shape = true;
    } else if (k == "quant_info") {
      l.quant_info = read_quant_info(v);
    } else if (k == "previous_layer") {
      l.previous_layer = v.as_string_vector();
      have_prev = true;
    } else if (k == "next_layer") {
      l.next_layer = v.as_string_vector();
      have_next = true;
    } else if (k == "file_list") {
      v.expect_object();
      for (auto f = v.value().MemberBegin(); f != v.value().MemberEnd(); ++f) {
        RapidCursor fc = v.member(f);
        l.file_list.emplace_back(std::string(f->name.GetString(), f->name.GetStringLength()), fc.as_string());
      }
      have_files = true;
    } else if (k == "input_batchdim") {
      l.input_batchdim = v.as_int_vector();
      have_in_batch = true;
    } else if (k == "output_batchdim") {
      l.output_batchdim = v.as_int_vector();
      have_out_batch = true;
    } else if (k == "activation_type") {
      if (!l.activation) l.activation.emplace();
      if (!v.is_null()) l.activation->type = v.as_string();
    } else if (k == "activation_attr") {
      if (!l.activation) l.activation.emplace();
      if (!v.is_null() && !v.is_object()) v.fail("expected null or an object");
      l.activation->attr = json_from_rapidjson(v.value());
    } else if (k == "kernel_size") {
      l.kernel_size = read_ints<2>(v);
    } else if (k == "pool_size") {
      l.pool_size = read_ints<2>(v);
    } else if (k == "padding") {
      l.padding = read_ints<4>(v);
    } else if (k == "stride") {
      l.stride = read_ints<2>(v);
    } else if (k == "dilation") {
      l.dilation = read_ints<2>(v);
    } else if (k == "groups") {
      l.groups = v.as_int();
    } else if (k == "ceil_mode") {
      if (v.value().IsInt64()) {
        int64_t x = v.as_int();
        if (x != 0 && x != 1) v.fail("ceil_mode must be 0, 1, false or true");
        l.ceil_mode = x == 1;
        l.ceil_mode_numeric = true;
      } else {
        l.ceil_mode = v.as_bool();
      }
    } else if (k == "axis") {
      l.axis = v.as_int();
    } else if (k == "perm") {
      l.perm = v.as_int_vector();
    } else if (k == "starts") {
      l.starts = v.as_int_vector();
    } else if (k == "ends") {
      l.ends = v.as_int_vector();
    } else if (k == "steps") {
      l.steps = v.as_int_vector();
    } else if (k == "indices") {
      l.indices = v.as_int_vector();
    } else if (auto n = lut_index(k)) {
      luts.emplace_back(*n, v.as_int_vector());
    } else if (k == "tensor_mode") {
      l.tensor_mode = v.as_int();
    } else if (k == "module_list") {
      l.module_list = read_module_list(v);
    } else if (k == "ori_name") {
      l.ori_name = v.as_string();
    } else if (k == "nhwc_consistant") {
      l.nhwc_consistant = v.as_bool();
    } else {
      l.extra.emplace_back(std::string(k), json_from_rapidjson(m->value));
    }
  }
  auto require = [&](bool have, const char* what) {
    if (!have) c.fail(std::string("missing key \"") + what + "\"");
  };
  require(have_index, "layer_index");
  require(have_name, "name");
  require(have_op, "operation");
  require(have_device, "device");
  require(have_in_dtype, "input_dtype");
  require(have_out_dtype, "output_dtype");
  require(have_in_shape, "input_shape");
  require(have_out_shape, "output_shape");
  require(have_prev, "previous_layer");
  require(have_next, "next_layer");
  require(have_files, "file_list");
  require(have_in_batch, "input_batchdim");
  require(have_out_batch, "output_batchdim");
  if (l.name != key) {
    RapidCursor n = c.at("name");
    n.fail("name \"" + l.name + "\" differs from the layer's key \"" + std::string(key) + "\"");
  }
  // tensor<N>_lut are numbered 0..n-1.
  std::sort(luts.begin(), luts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < luts.size(); ++i) {
    if (luts[i].first != static_cast<int>(i)) {
      std::string k = "tensor" + std::to_string(luts[i].first) + "_lut";
      RapidCursor bad = c.at(k);
      bad.fail("tensor<N>_lut keys must be numbered 0, 1, ... without gaps");
    }
    l.tensor_lut.push_back(std::move(luts[i].second));
  }
  return l;
}

// ---- writing ------------------------------------------------------------------

enum class Slot : uint8_t {
  Index, Name, Operation, Device, InDtype, OutDtype, InShape, OutShape, QuantInfo, Prev, Next, FileList,
  InBatch, OutBatch, Activation, Kernel, PoolSize, Padding, Stride, CeilMode, Dilation, Groups, Axis, Perm,
  Luts, TensorMode, ModuleList, OriName, Nhwc,
};

// The orders of the reference files (the same within each family), with the
// extension keys placed next to their relatives.
constexpr Slot kPeOrder[] = {
    Slot::Index, Slot::Name, Slot::Operation, Slot::Device, Slot::InDtype, Slot::OutDtype, Slot::InShape,
    Slot::OutShape, Slot::QuantInfo, Slot::Prev, Slot::Next, Slot::FileList, Slot::InBatch, Slot::OutBatch,
    Slot::Activation, Slot::Kernel, Slot::PoolSize, Slot::Padding, Slot::Stride, Slot::CeilMode,
    Slot::Dilation, Slot::Groups, Slot::Axis, Slot::Perm, Slot::Luts, Slot::TensorMode, Slot::ModuleList,
    Slot::OriName, Slot::Nhwc,
};
constexpr Slot kVpOrder[] = {
    Slot::Index, Slot::Name, Slot::Operation, Slot::Device, Slot::Kernel, Slot::PoolSize, Slot::Padding,
    Slot::Stride, Slot::CeilMode, Slot::Dilation, Slot::Groups, Slot::Axis, Slot::Perm, Slot::FileList,
    Slot::Prev, Slot::Next, Slot::InShape, Slot::OutShape, Slot::InDtype, Slot::OutDtype, Slot::QuantInfo,
    Slot::Activation, Slot::Luts, Slot::TensorMode, Slot::ModuleList, Slot::OriName, Slot::InBatch,
    Slot::OutBatch, Slot::Nhwc,
};
constexpr Slot kQuantizeOrder[] = {
    Slot::Index, Slot::Name, Slot::Operation, Slot::Device, Slot::InDtype, Slot::OutDtype, Slot::InShape,
    Slot::OutShape, Slot::QuantInfo, Slot::FileList, Slot::Prev, Slot::Next, Slot::Luts, Slot::TensorMode,
    Slot::ModuleList, Slot::OriName, Slot::InBatch, Slot::OutBatch, Slot::Activation, Slot::Kernel,
    Slot::PoolSize, Slot::Padding, Slot::Stride, Slot::CeilMode, Slot::Dilation, Slot::Groups, Slot::Axis,
    Slot::Perm, Slot::Nhwc,
};

Json shapes_json(const std::vector<Shape>& shapes) {
  Json::Array a;
  a.reserve(shapes.size());
  for (const auto& s : shapes) a.emplace_back(s);
  return Json(std::move(a));
}

template <size_t N>
Json ints_json(const std::array<int64_t, N>& a) {
  Json::Array out;
  for (int64_t x : a) out.emplace_back(x);
  return Json(std::move(out));
}

Json quant_info_json(const QuantInfo& q) {
  Json j = Json::object();
  for (size_t i = 0; i < q.inputs.size(); ++i) {
    j.set("input_scale" + std::to_string(i + 1), q.inputs[i].scale);
    j.set("input_zero_point" + std::to_string(i + 1), q.inputs[i].zero_point);
  }
  if (q.output_scale) j.set("output_scale", *q.output_scale);
  if (q.output_zero_point) j.set("output_zero_point", *q.output_zero_point);
  if (q.round_type) j.set("round_type", *q.round_type);
  for (const auto& [k, v] : q.extra) j.set(k, v);
  return j;
}

void put_slot(Json::Object& o, const Layer& l, Slot s) {
  auto put = [&](const char* key, Json v) { o.emplace_back(key, std::move(v)); };
  switch (s) {
    case Slot::Index: put("layer_index", l.layer_index); break;
    case Slot::Name: put("name", l.name); break;
    case Slot::Operation: put("operation", l.op == Op::Unknown ? std::string_view(l.operation) : op_name(l.op)); break;
    case Slot::Device: put("device", device_name(l.device)); break;
    case Slot::InDtype: put("input_dtype", Json(l.input_dtype)); break;
    case Slot::OutDtype: put("output_dtype", Json(l.output_dtype)); break;
    case Slot::InShape: put("input_shape", shapes_json(l.input_shape)); break;
    case Slot::OutShape: put("output_shape", shapes_json(l.output_shape)); break;
    case Slot::QuantInfo:
      if (l.quant_info) put("quant_info", quant_info_json(*l.quant_info));
      break;
    case Slot::Prev: put("previous_layer", Json(l.previous_layer)); break;
    case Slot::Next: put("next_layer", Json(l.next_layer)); break;
    case Slot::FileList: {
      Json f = Json::object();
      for (const auto& [role, name] : l.file_list) f.set(role, name);
      put("file_list", std::move(f));
      break;
    }
    case Slot::InBatch: put("input_batchdim", Json(l.input_batchdim)); break;
    case Slot::OutBatch: put("output_batchdim", Json(l.output_batchdim)); break;
    case Slot::Activation:
      if (l.activation) {
        put("activation_type", l.activation->type ? Json(*l.activation->type) : Json());
        put("activation_attr", l.activation->attr);
      }
      break;
    case Slot::Kernel:
      if (l.kernel_size) put("kernel_size", ints_json(*l.kernel_size));
      break;
    case Slot::PoolSize:
      if (l.pool_size) put("pool_size", ints_json(*l.pool_size));
      break;
    case Slot::Padding:
      if (l.padding) put("padding", ints_json(*l.padding));
      break;
    case Slot::Stride:
      if (l.stride) put("stride", ints_json(*l.stride));
      break;
    case Slot::CeilMode:
      if (l.ceil_mode) put("ceil_mode", l.ceil_mode_numeric ? Json(*l.ceil_mode ? 1 : 0) : Json(*l.ceil_mode));
      break;
    case Slot::Dilation:
      if (l.dilation) put("dilation", ints_json(*l.dilation));
      break;
    case Slot::Groups:
      if (l.groups) put("groups", *l.groups);
      break;
    case Slot::Axis:
      if (l.axis) put("axis", *l.axis);
      break;
    case Slot::Perm:
      if (l.perm) put("perm", Json(*l.perm));
      if (l.starts) put("starts", Json(*l.starts));
      if (l.ends) put("ends", Json(*l.ends));
      if (l.steps) put("steps", Json(*l.steps));
      if (l.indices) put("indices", Json(*l.indices));
      break;
    case Slot::Luts:
      for (size_t i = 0; i < l.tensor_lut.size(); ++i)
        o.emplace_back("tensor" + std::to_string(i) + "_lut", Json(l.tensor_lut[i]));
      break;
    case Slot::TensorMode:
      if (l.tensor_mode) put("tensor_mode", *l.tensor_mode);
      break;
    case Slot::ModuleList:
      if (l.module_list) {
        Json::Object groups;
        groups.reserve(l.module_list->size());
        for (const auto& m : *l.module_list) groups.emplace_back(m.name, m.params);
        put("module_list", Json(std::move(groups)));
      }
      break;
    case Slot::OriName:
      if (l.ori_name) put("ori_name", *l.ori_name);
      break;
    case Slot::Nhwc:
      if (l.nhwc_consistant) put("nhwc_consistant", *l.nhwc_consistant);
      break;
  }
}

template <size_t N>
void put_all(Json::Object& o, const Layer& l, const Slot (&order)[N]) {
  for (Slot s : order) put_slot(o, l, s);
}

}  // namespace

// ---- fast writing: the same text as format_json(to_json(g)), via support/json_emit ----
//
// Mirrors put_slot() key for key; tests/fir compares the two writers byte for
// byte on every reference file.

using emit::Kind;

struct QuantInfoView {
  const QuantInfo* q;
};
constexpr Kind json_kind(const QuantInfoView&) { return Kind::Object; }
template <class F>
void for_each_member(const QuantInfoView& v, F&& f) {
  std::string key;
  for (size_t i = 0; i < v.q->inputs.size(); ++i) {
    key = "input_scale" + std::to_string(i + 1);
    f(std::string_view(key), v.q->inputs[i].scale);
    key = "input_zero_point" + std::to_string(i + 1);
    f(std::string_view(key), v.q->inputs[i].zero_point);
  }
  if (v.q->output_scale) f("output_scale", *v.q->output_scale);
  if (v.q->output_zero_point) f("output_zero_point", *v.q->output_zero_point);
  if (v.q->round_type) f("round_type", *v.q->round_type);
  for (const auto& [k, x] : v.q->extra) f(std::string_view(k), x);
}

struct FileListView {
  const std::vector<std::pair<std::string, std::string>>* files;
};
constexpr Kind json_kind(const FileListView&) { return Kind::Object; }
template <class F>
void for_each_member(const FileListView& v, F&& f) {
  for (const auto& [role, name] : *v.files) f(std::string_view(role), name);
}

struct ModuleListView {
  const std::vector<Module>* modules;
};
constexpr Kind json_kind(const ModuleListView&) { return Kind::Object; }
template <class F>
void for_each_member(const ModuleListView& v, F&& f) {
  for (const auto& m : *v.modules) f(std::string_view(m.name), m.params);
}

struct LayerView {
  const Layer* l;
};
constexpr Kind json_kind(const LayerView&) { return Kind::Object; }
constexpr bool json_always_expanded(const LayerView&) { return true; }  // 13 required keys

template <class F>
void visit_slot(const Layer& l, Slot s, F& f) {
  switch (s) {
    case Slot::Index: f("layer_index", l.layer_index); break;
    case Slot::Name: f("name", l.name); break;
    case Slot::Operation: f("operation", l.op == Op::Unknown ? std::string_view(l.operation) : op_name(l.op)); break;
    case Slot::Device: f("device", device_name(l.device)); break;
    case Slot::InDtype: f("input_dtype", l.input_dtype); break;
    case Slot::OutDtype: f("output_dtype", l.output_dtype); break;
    case Slot::InShape: f("input_shape", l.input_shape); break;
    case Slot::OutShape: f("output_shape", l.output_shape); break;
    case Slot::QuantInfo:
      if (l.quant_info) f("quant_info", QuantInfoView{&*l.quant_info});
      break;
    case Slot::Prev: f("previous_layer", l.previous_layer); break;
    case Slot::Next: f("next_layer", l.next_layer); break;
    case Slot::FileList: f("file_list", FileListView{&l.file_list}); break;
    case Slot::InBatch: f("input_batchdim", l.input_batchdim); break;
    case Slot::OutBatch: f("output_batchdim", l.output_batchdim); break;
    case Slot::Activation:
      if (l.activation) {
        f("activation_type", l.activation->type);
        f("activation_attr", l.activation->attr);
      }
      break;
    case Slot::Kernel:
      if (l.kernel_size) f("kernel_size", *l.kernel_size);
      break;
    case Slot::PoolSize:
      if (l.pool_size) f("pool_size", *l.pool_size);
      break;
    case Slot::Padding:
      if (l.padding) f("padding", *l.padding);
      break;
    case Slot::Stride:
      if (l.stride) f("stride", *l.stride);
      break;
    case Slot::CeilMode:
      if (l.ceil_mode) {
        if (l.ceil_mode_numeric) f("ceil_mode", int64_t{*l.ceil_mode ? 1 : 0});
        else f("ceil_mode", *l.ceil_mode);
      }
      break;
    case Slot::Dilation:
      if (l.dilation) f("dilation", *l.dilation);
      break;
    case Slot::Groups:
      if (l.groups) f("groups", *l.groups);
      break;
    case Slot::Axis:
      if (l.axis) f("axis", *l.axis);
      break;
    case Slot::Perm:
      if (l.perm) f("perm", *l.perm);
      if (l.starts) f("starts", *l.starts);
      if (l.ends) f("ends", *l.ends);
      if (l.steps) f("steps", *l.steps);
      if (l.indices) f("indices", *l.indices);
      break;
    case Slot::Luts: {
      std::string key;
      for (size_t i = 0; i < l.tensor_lut.size(); ++i) {
        key = "tensor" + std::to_string(i) + "_lut";
        f(std::string_view(key), l.tensor_lut[i]);
      }
      break;
    }
    case Slot::TensorMode:
      if (l.tensor_mode) f("tensor_mode", *l.tensor_mode);
      break;
    case Slot::ModuleList:
      if (l.module_list) f("module_list", ModuleListView{&*l.module_list});
      break;
    case Slot::OriName:
      if (l.ori_name) f("ori_name", *l.ori_name);
      break;
    case Slot::Nhwc:
      if (l.nhwc_consistant) f("nhwc_consistant", *l.nhwc_consistant);
      break;
  }
}

template <class F, size_t N>
void visit_slots(const Layer& l, const Slot (&order)[N], F& f) {
  for (Slot s : order) visit_slot(l, s, f);
}

template <class F>
void for_each_member(const LayerView& v, F&& f) {
  const Layer& l = *v.l;
  switch (detail::op_info(l.op).order) {
    case detail::KeyOrder::Pe: visit_slots(l, kPeOrder, f); break;
    case detail::KeyOrder::Vp: visit_slots(l, kVpOrder, f); break;
    case detail::KeyOrder::Quantize: visit_slots(l, kQuantizeOrder, f); break;
  }
  for (const auto& [k, x] : l.extra) f(std::string_view(k), x);
}

struct GraphView {
  const Graph* g;
};
constexpr Kind json_kind(const GraphView&) { return Kind::Object; }
template <class F>
void for_each_member(const GraphView& v, F&& f) {
  for (const auto& l : v.g->layers()) f(std::string_view(l.name), LayerView{&l});
  if (const HostGraph* hg = v.g->host_graph()) f(kHostGraphKey, to_json(*hg));
}

Graph parse_fir(std::string_view text, const std::string& file, const ReadOptions& opts) {
  rapidjson::Document doc;
  if (opts.validate_schema) parse_validated_rapidjson(doc, text, file, "fir");
  else parse_rapidjson(doc, text, file);
  RapidCursor root(doc, file);
  root.expect_object();
  Graph g;
  g.mutable_layers().reserve(doc.MemberCount());
  for (auto m = doc.MemberBegin(); m != doc.MemberEnd(); ++m) {
    RapidCursor member = root.member(m);
    const std::string_view key(m->name.GetString(), m->name.GetStringLength());
    if (key == kHostGraphKey) g.set_host_graph(std::make_shared<HostGraph>(read_host_graph(member)));
    else if (key.starts_with('$')) member.fail("unknown section (keys beginning with '$' are reserved; layers are named otherwise)");
    else g.mutable_layers().push_back(read_layer(member, key));
  }
  g.reindex();
  if (opts.validate_semantics) validate(g, file);
  return g;
}

Graph read_fir(const std::string& path, const ReadOptions& opts) {
  return parse_fir(read_input(path), display_name(path), opts);
}

Json to_json(const Layer& l) {
  Json::Object o;
  o.reserve(24 + l.extra.size());
  switch (detail::op_info(l.op).order) {
    case detail::KeyOrder::Pe: put_all(o, l, kPeOrder); break;
    case detail::KeyOrder::Vp: put_all(o, l, kVpOrder); break;
    case detail::KeyOrder::Quantize: put_all(o, l, kQuantizeOrder); break;
  }
  for (const auto& [k, v] : l.extra) o.emplace_back(k, v);
  return Json(std::move(o));
}

Json to_json(const Graph& g) {
  Json::Object o;
  o.reserve(g.size());
  for (const auto& l : g.layers()) o.emplace_back(l.name, to_json(l));
  if (const HostGraph* hg = g.host_graph()) o.emplace_back(std::string(kHostGraphKey), to_json(*hg));
  return Json(std::move(o));
}

std::string format_fir(const Graph& g, bool validate) {
  std::string text = emit::format(GraphView{&g});
  if (validate) validate_output_text_streaming(text, "fir", "FIR output");
  return text;
}

void write_fir(const std::string& path, const Graph& g, bool validate) {
  write_output(path, format_fir(g, validate));
}

}  // namespace cct::fir
