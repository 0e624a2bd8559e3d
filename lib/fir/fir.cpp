// FIR types: the operation table, module_list groups, Layer and Graph helpers.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>

#include "fir/fir.hpp"
#include "fir/host_graph.hpp"

#include "interp/int8_ops.hpp"  // header only: the interpreter's requantization arithmetic
#include "fir/fir_ops.hpp"
#include "support/error.hpp"

namespace cct::fir {

namespace detail {

namespace {
// Input counts include weights and constants (they appear in previous_layer and input_shape).
constexpr OpInfo kOps[] = {
    {Op::Quantize, "quantize", KeyOrder::Quantize, 1, 1, true},
    {Op::Conv2d, "conv2d", KeyOrder::Pe, 2, 2, false},
    {Op::Dense, "dense", KeyOrder::Pe, 2, 2, false},
    {Op::MaxPool2d, "max_pool2d", KeyOrder::Vp, 1, 1, true},
    {Op::AvgPool2d, "avg_pool2d", KeyOrder::Vp, 1, 2, true},
    {Op::ElementWiseAdd, "element_wise_add", KeyOrder::Vp, 2, 2, true},
    {Op::Reshape, "reshape", KeyOrder::Pe, 1, 1, false},
    {Op::ElementWiseSub, "element_wise_sub", KeyOrder::Vp, 2, 2, false},
    {Op::ElementWiseMul, "element_wise_mul", KeyOrder::Vp, 2, 2, false},
    {Op::Concat, "concat", KeyOrder::Vp, 1, -1, false},
    {Op::MatMul, "matmul", KeyOrder::Pe, 2, 2, false},
    {Op::Transpose, "transpose", KeyOrder::Pe, 1, 1, false},
    {Op::Relu, "relu", KeyOrder::Vp, 1, 1, false},
    {Op::Sigmoid, "sigmoid", KeyOrder::Vp, 1, 1, false},
    {Op::HardSigmoid, "hard_sigmoid", KeyOrder::Vp, 1, 1, false},
    {Op::HardSwish, "hard_swish", KeyOrder::Vp, 1, 1, false},
    {Op::Silu, "silu", KeyOrder::Vp, 1, 1, false},
    {Op::Gelu, "gelu", KeyOrder::Vp, 1, 1, false},
    {Op::Tanh, "tanh", KeyOrder::Vp, 1, 1, false},
    {Op::Clip, "clip", KeyOrder::Vp, 1, 1, false},
    {Op::LeakyRelu, "leaky_relu", KeyOrder::Vp, 1, 1, false},
    {Op::Elu, "elu", KeyOrder::Vp, 1, 1, false},
    {Op::PRelu, "prelu", KeyOrder::Vp, 2, 2, false},
    {Op::Softmax, "softmax", KeyOrder::Pe, 1, 1, false},
    {Op::LayerNorm, "layer_norm", KeyOrder::Pe, 1, 3, false},
    {Op::Slice, "slice", KeyOrder::Vp, 1, 1, false},
    {Op::Gather, "gather", KeyOrder::Vp, 1, 1, false},
    {Op::Resize, "resize", KeyOrder::Vp, 1, 1, false},
    {Op::ReduceMax, "reduce_max", KeyOrder::Vp, 1, 1, false},
    {Op::ReduceSum, "reduce_sum", KeyOrder::Vp, 1, 2, false},
    {Op::Unknown, "unknown", KeyOrder::Pe, 0, -1, false},
};
}  // namespace

const OpInfo& op_info(Op op) {
  for (const auto& info : kOps)
    if (info.op == op) return info;
  return kOps[std::size(kOps) - 1];
}

}  // namespace detail

std::string_view op_name(Op op) { return detail::op_info(op).name; }

Op parse_op(std::string_view name) {
  for (const auto& info : detail::kOps)
    if (info.op != Op::Unknown && info.name == name) return info.op;
  return Op::Unknown;
}

std::vector<std::string_view> known_op_names() {
  std::vector<std::string_view> out;
  for (const auto& info : detail::kOps)
    if (info.op != Op::Unknown) out.push_back(info.name);
  return out;
}

std::string_view device_name(Device d) { return d == Device::Cpu ? "cpu" : "npu"; }

int dtype_bytes(std::string_view t) {
  if (t == "int8" || t == "uint8") return 1;
  if (t == "int16" || t == "float16") return 2;
  if (t == "int32" || t == "float32") return 4;
  return 0;
}

bool is_known_dtype(std::string_view t) { return dtype_bytes(t) != 0; }

// ---- module_list groups -----------------------------------------------------

namespace {

Json shapes_json(const std::vector<Shape>& shapes) {
  Json a = Json::array();
  for (const auto& s : shapes) a.push(Json(s));
  return a;
}

std::vector<Shape> read_shapes(const JsonCursor& c) {
  std::vector<Shape> out;
  for (const auto& e : c.elements()) out.push_back(e.as_int_vector());
  return out;
}

void read_module_shapes(const JsonCursor& c, ModuleShapes& s) {
  s.input_shape = read_shapes(c.at("input_shape"));
  s.output_shape = read_shapes(c.at("output_shape"));
}

std::optional<double> opt_double(const JsonCursor& c, std::string_view key) {
  auto m = c.find(key);
  if (!m) return std::nullopt;
  return m->as_double();
}

void put_shapes(Json& j, const ModuleShapes& s) {
  j.set("input_shape", shapes_json(s.input_shape));
  j.set("output_shape", shapes_json(s.output_shape));
}

}  // namespace

Module make_module(const PreCal& g) {
  Json j = Json::object();
  j.set("requan_scale_a", g.requan_scale_a).set("requan_zp_a", g.requan_zp_a);
  if (g.requan_scale_b) j.set("requan_scale_b", *g.requan_scale_b);
  if (g.requan_zp_b) j.set("requan_zp_b", *g.requan_zp_b);
  put_shapes(j, g);
  return {"pre_cal", std::move(j)};
}

Module make_module(const PostCal& g) {
  Json j = Json::object();
  j.set("mul_k", g.mul_k).set("sum_b", g.sum_b).set("sumsub_mode", g.sumsub_mode);
  if (g.carry_sel) j.set("carry_sel", *g.carry_sel);
  put_shapes(j, g);
  return {"post_cal", std::move(j)};
}

Module make_module(const CompareGroup& g) {
  Json j = Json::object();
  j.set("cmp_mode", g.cmp_mode).set("cmp_max_en", g.cmp_max_en).set("cmp_dim", g.cmp_dim);
  put_shapes(j, g);
  return {"compare_group", std::move(j)};
}

Module make_module(const Fp32MulGroup& g) {
  Json j = Json::object();
  j.set("mul_group_k_mux", g.mul_group_k_mux).set("act_mode", g.act_mode);
  if (g.mul_group_k_scalar) j.set("mul_group_k_scalar", *g.mul_group_k_scalar);
  put_shapes(j, g);
  return {"fp32_mul_group", std::move(j)};
}

Module make_module(const AccTreeGroup& g) {
  Json j = Json::object();
  j.set("acc_tree_mode", g.acc_tree_mode).set("acc_dim", g.acc_dim);
  put_shapes(j, g);
  return {"acc_tree_group", std::move(j)};
}

Module make_module(const Fp32SumSubGroup& g) {
  Json j = Json::object();
  j.set("sumsub_group_mode", g.sumsub_group_mode).set("sumsub_group_b_mux", g.sumsub_group_b_mux);
  put_shapes(j, g);
  return {"fp32_sum_sub_group0", std::move(j)};
}

Module make_module(const ReluGroup& g) {
  Json j = Json::object();
  put_shapes(j, g);
  return {"relu_group", std::move(j)};
}

PreCal decode_pre_cal(const JsonCursor& c) {
  PreCal g;
  read_module_shapes(c, g);
  g.requan_scale_a = c.at("requan_scale_a").as_double();
  g.requan_zp_a = c.at("requan_zp_a").as_double();
  g.requan_scale_b = opt_double(c, "requan_scale_b");
  g.requan_zp_b = opt_double(c, "requan_zp_b");
  if (g.requan_scale_b.has_value() != g.requan_zp_b.has_value())
    c.fail("requan_scale_b and requan_zp_b go together");
  return g;
}

PostCal decode_post_cal(const JsonCursor& c) {
  PostCal g;
  read_module_shapes(c, g);
  g.mul_k = c.at("mul_k").as_double();
  g.sum_b = c.at("sum_b").as_double();
  g.sumsub_mode = c.at("sumsub_mode").as_string();
  if (auto m = c.find("carry_sel")) g.carry_sel = m->as_string();
  return g;
}

CompareGroup decode_compare_group(const JsonCursor& c) {
  CompareGroup g;
  read_module_shapes(c, g);
  g.cmp_mode = c.at("cmp_mode").as_string();
  g.cmp_max_en = c.at("cmp_max_en").as_string();
  g.cmp_dim = c.at("cmp_dim").as_string();
  return g;
}

Fp32MulGroup decode_fp32_mul_group(const JsonCursor& c) {
  Fp32MulGroup g;
  read_module_shapes(c, g);
  g.mul_group_k_mux = c.at("mul_group_k_mux").as_string();
  g.act_mode = c.at("act_mode").as_string();
  g.mul_group_k_scalar = opt_double(c, "mul_group_k_scalar");
  if (g.mul_group_k_mux == "scalar" && !g.mul_group_k_scalar) c.fail("mul_group_k_mux \"scalar\" needs mul_group_k_scalar");
  return g;
}

AccTreeGroup decode_acc_tree_group(const JsonCursor& c) {
  AccTreeGroup g;
  read_module_shapes(c, g);
  g.acc_tree_mode = c.at("acc_tree_mode").as_string();
  g.acc_dim = c.at("acc_dim").as_string();
  return g;
}

Fp32SumSubGroup decode_fp32_sum_sub_group(const JsonCursor& c) {
  Fp32SumSubGroup g;
  read_module_shapes(c, g);
  g.sumsub_group_mode = c.at("sumsub_group_mode").as_string();
  g.sumsub_group_b_mux = c.at("sumsub_group_b_mux").as_string();
  return g;
}

ReluGroup decode_relu_group(const JsonCursor& c) {
  ReluGroup g;
  read_module_shapes(c, g);
  return g;
}

void check_module(const std::string& name, const JsonCursor& c) {
  c.expect_object();
  if (name == "pre_cal") decode_pre_cal(c);
  else if (name == "post_cal") decode_post_cal(c);
  else if (name == "compare_group") decode_compare_group(c);
  else if (name == "fp32_mul_group") decode_fp32_mul_group(c);
  else if (name == "acc_tree_group") decode_acc_tree_group(c);
  else if (name.rfind("fp32_sum_sub_group", 0) == 0) decode_fp32_sum_sub_group(c);
  else if (name == "relu_group") decode_relu_group(c);
  else {
    ModuleShapes s;
    read_module_shapes(c, s);
  }
}

// ---- Layer ----------------------------------------------------------------

const Json* Layer::activation_attr() const {
  if (activation && activation->attr.is_object()) return &activation->attr;
  for (const auto& [key, val] : extra)
    if (key == "activation_attr" && val.is_object()) return &val;
  return nullptr;
}

const Module* Layer::module(std::string_view group) const {
  if (!module_list) return nullptr;
  for (const auto& m : *module_list)
    if (m.name == group) return &m;
  return nullptr;
}

namespace {
template <class T, class F>
std::optional<T> decode_group(const Layer& l, std::string_view group, F decode) {
  const Module* m = l.module(group);
  if (!m) return std::nullopt;
  static const std::string file = "FIR";
  std::string ptr;
  append_pointer_token(ptr, l.name);
  ptr += "/module_list";
  append_pointer_token(ptr, group);
  return decode(JsonCursor(m->params, file, ptr));
}
}  // namespace

std::optional<PreCal> Layer::pre_cal() const { return decode_group<PreCal>(*this, "pre_cal", decode_pre_cal); }
std::optional<PostCal> Layer::post_cal() const { return decode_group<PostCal>(*this, "post_cal", decode_post_cal); }
std::optional<CompareGroup> Layer::compare_group() const {
  return decode_group<CompareGroup>(*this, "compare_group", decode_compare_group);
}
std::optional<Fp32MulGroup> Layer::fp32_mul_group() const {
  return decode_group<Fp32MulGroup>(*this, "fp32_mul_group", decode_fp32_mul_group);
}
std::optional<AccTreeGroup> Layer::acc_tree_group() const {
  return decode_group<AccTreeGroup>(*this, "acc_tree_group", decode_acc_tree_group);
}
std::optional<Fp32SumSubGroup> Layer::fp32_sum_sub_group() const {
  return decode_group<Fp32SumSubGroup>(*this, "fp32_sum_sub_group0", decode_fp32_sum_sub_group);
}

const std::string* Layer::file(std::string_view role) const {
  for (const auto& f : file_list)
    if (f.first == role) return &f.second;
  return nullptr;
}

int64_t Layer::lut_code(size_t i) const {
  if (i >= tensor_lut.size() || tensor_lut[i].size() < 3) return 0;
  const auto& f = tensor_lut[i];
  return (f[0] << 2) | (f[1] << 1) | f[2];
}

std::array<int64_t, 2> Layer::window() const {
  if (kernel_size) return *kernel_size;
  if (pool_size) return *pool_size;
  return {1, 1};
}
std::array<int64_t, 4> Layer::pads() const { return padding.value_or(std::array<int64_t, 4>{0, 0, 0, 0}); }
std::array<int64_t, 2> Layer::strides() const { return stride.value_or(std::array<int64_t, 2>{1, 1}); }
std::array<int64_t, 2> Layer::dilations() const { return dilation.value_or(std::array<int64_t, 2>{1, 1}); }

// ---- names ------------------------------------------------------------------

namespace {
bool prefix_then_digits(std::string_view s, std::string_view prefix) {
  if (s.size() <= prefix.size() || s.substr(0, prefix.size()) != prefix) return false;
  return std::all_of(s.begin() + static_cast<std::ptrdiff_t>(prefix.size()), s.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}
}  // namespace

bool is_graph_input_name(std::string_view n) { return prefix_then_digits(n, "input"); }
bool is_graph_output_name(std::string_view n) { return prefix_then_digits(n, "output"); }
bool is_constant_name(std::string_view n) {
  return n.rfind("constant", 0) == 0 || n.find("_constant") != std::string_view::npos;
}

// ---- Graph ------------------------------------------------------------------

Graph::Graph(std::vector<Layer> layers) : layers_(std::move(layers)) { reindex(); }

bool Graph::operator==(const Graph& o) const {
  if (layers_ != o.layers_ || (host_graph_ == nullptr) != (o.host_graph_ == nullptr)) return false;
  return !host_graph_ || *host_graph_ == *o.host_graph_;
}

void Graph::add(Layer layer) {
  by_name_.emplace(layer.name, layers_.size());
  layers_.push_back(std::move(layer));
}

void Graph::reindex() {
  by_name_.clear();
  for (size_t i = 0; i < layers_.size(); ++i) by_name_.emplace(layers_[i].name, i);
}

const Layer* Graph::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &layers_[it->second];
}

Layer* Graph::find(std::string_view name) {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &layers_[it->second];
}

std::vector<const Layer*> Graph::in_index_order() const {
  std::vector<const Layer*> out;
  out.reserve(layers_.size());
  for (const auto& l : layers_) out.push_back(&l);
  std::stable_sort(out.begin(), out.end(),
                   [](const Layer* a, const Layer* b) { return a->layer_index < b->layer_index; });
  return out;
}

std::vector<const Layer*> Graph::producers(const Layer& l) const {
  std::vector<const Layer*> out;
  for (const auto& p : l.previous_layer)
    if (const Layer* x = find(p)) out.push_back(x);
  return out;
}

std::vector<const Layer*> Graph::consumers(const Layer& l) const {
  std::vector<const Layer*> out;
  for (const auto& n : l.next_layer)
    if (const Layer* x = find(n)) out.push_back(x);
  return out;
}

std::vector<const Layer*> Graph::input_layers() const {
  std::vector<const Layer*> out;
  for (const Layer* l : in_index_order())
    if (std::any_of(l->previous_layer.begin(), l->previous_layer.end(),
                    [](const std::string& p) { return is_graph_input_name(p); }))
      out.push_back(l);
  return out;
}

std::vector<const Layer*> Graph::output_layers() const {
  std::vector<const Layer*> out;
  for (const Layer* l : in_index_order())
    if (std::any_of(l->next_layer.begin(), l->next_layer.end(),
                    [](const std::string& n) { return is_graph_output_name(n); }))
      out.push_back(l);
  return out;
}

// ---- helpers ----------------------------------------------------------------

namespace {
// Products saturate instead of overflowing: shapes come from files.
int64_t mul_sat(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
  return r;
}
}  // namespace

int64_t element_count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n = mul_sat(n, d);
  return n;
}

std::array<int64_t, 4> chip_box(const Shape& s) {
  if (s.size() == 3) return {s[0], s[2], s[1], 1};
  std::array<int64_t, 4> b{1, 1, 1, 1};
  for (size_t i = 0; i < s.size() && i < 4; ++i) b[i] = s[i];
  return b;
}

int64_t chip_index(const Shape& s, int64_t flat) {
  if (s.size() != 3) return flat;
  const int64_t T = s[1], D = s[2];
  const int64_t n = flat / (T * D), t = flat / D % T, d = flat % D;
  return (n * D + d) * T + t;
}

int64_t fir_index(const Shape& s, int64_t box) {
  if (s.size() != 3) return box;
  const int64_t T = s[1], D = s[2];
  const int64_t n = box / (D * T), d = box / T % D, t = box % T;
  return (n * T + t) * D + d;
}

std::array<int64_t, 4> chip_box_broadcast(const Shape& s, size_t rank) {
  Shape p = s;
  while (p.size() < rank) p.insert(p.begin(), 1);
  return chip_box(p);
}

std::optional<Shape> weight_shape(const Layer& l) {
  if ((l.op == Op::Conv2d || l.op == Op::Dense || l.op == Op::MatMul) && l.input_shape.size() >= 2)
    return l.input_shape[1];
  return std::nullopt;
}

std::optional<PeConv> pe_conv(const Layer& l, std::string* why) {
  auto no = [&](const std::string& what) -> std::optional<PeConv> {
    if (why) *why = what;
    return std::nullopt;
  };
  auto text = [](const Shape& s) {
    std::string t = "[";
    for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
    return t + "]";
  };
  if (l.op != Op::Conv2d && l.op != Op::Dense)
    return no("a " + std::string(op_name(l.op)) + " layer is not a convolution on the PE array");
  if (l.input_shape.size() < 2) return no("no weight shape (input_shape[1])");
  const Shape& x = l.input_shape[0];
  const Shape& w = l.input_shape[1];
  for (const Shape* s : {&x, &w})
    for (int64_t d : *s)
      if (d < 1) return no("input_shape " + text(*s) + " has a dimension below 1");
  PeConv pc;
  if (l.op == Op::Conv2d) {
    if (w.size() != 4) return no("a conv2d needs a [K, C, kh, kw] weight shape, input_shape[1] is " + text(w));
    for (int i = 0; i < 4; ++i) pc.weight[size_t(i)] = w[size_t(i)];
    pc.kernel = {w[2], w[3]};
    pc.stride = l.strides();
    pc.dilation = l.dilations();
    pc.pads = l.pads();
    pc.groups = l.group_count();
    return pc;
  }
  if (x.size() < 2 || x.size() > 4 || w.size() < 2)
    return no("a dense layer needs a 2- to 4-D input and an at least 2-D weight, input_shape is " + text(x) + ", " + text(w));
  if (x.size() == 3 && w.size() == 2 && x[2] == w[1]) {
    // A dense over the features of a token tensor: a 1 x 1 convolution over
    // its tokens, the pixels of its box [N, D, T, 1] (chip_box).
    pc.weight = {w[0], w[1], 1, 1};
    return pc;
  }
  Shape sample(x.begin() + 1, x.end());
  if (element_count(sample) != element_count(w) / w[0])
    return no("the dense layer's weight " + text(w) + " does not take each sample of its input " + text(x) +
              " whole (a dense over the last axis of a token tensor is not a convolution on the PE array)");
  pc.weight = {w[0], x[1], x.size() > 2 ? x[2] : 1, x.size() > 3 ? x[3] : 1};
  pc.kernel = {pc.weight[2], pc.weight[3]};
  return pc;
}

std::optional<LayerNormOutput> layer_norm_output(const Layer& l, std::string* why) {
  const Json* attr = nullptr;
  if (l.activation && l.activation->attr.is_object()) attr = &l.activation->attr;
  for (const auto& [key, val] : l.extra)
    if (!attr && key == "activation_attr" && val.is_object()) attr = &val;
  const Json* o = attr ? attr->find("output") : nullptr;
  if (!o) return LayerNormOutput::Y;
  const std::string v = o->is_string() ? o->as_string() : std::string();
  if (v == "y") return LayerNormOutput::Y;
  if (v == "mean") return LayerNormOutput::Mean;
  if (v == "inv_std_dev") return LayerNormOutput::InvStdDev;
  if (why) *why = "activation_attr output must be \"y\", \"mean\" or \"inv_std_dev\"";
  return std::nullopt;
}

int64_t macs(const Layer& l) {
  if (l.output_shape.empty()) return 0;
  const Shape& out = l.output_shape[0];
  auto w = weight_shape(l);
  if (!w) return 0;
  switch (l.op) {
    case Op::Conv2d: {
      // Each output element accumulates (C / groups) * kh * kw products: the weight's inner size.
      if (w->size() != 4) return 0;
      return mul_sat(element_count(out), element_count({(*w)[1], (*w)[2], (*w)[3]}));
    }
    case Op::Dense: {
      if (w->size() < 2 || (*w)[0] < 1) return 0;
      return mul_sat(element_count(out), element_count(*w) / (*w)[0]);
    }
    case Op::MatMul: {
      // [.., M, K] x [.., K, N]: every output element takes K products.
      const Shape& a = l.input_shape[0];
      if (a.empty()) return 0;
      return mul_sat(element_count(out), a.back());
    }
    default: return 0;
  }
}

// ---- data movement -------------------------------------------------------------

bool is_move_op(Op op) { return op == Op::Concat || op == Op::Slice || op == Op::Gather; }

bool is_activation_op(Op op) {
  switch (op) {
    case Op::Relu: case Op::Sigmoid: case Op::HardSigmoid: case Op::HardSwish: case Op::Silu: case Op::Gelu:
    case Op::Tanh: case Op::Clip: case Op::LeakyRelu: case Op::Elu: case Op::PRelu:
      return true;
    default:
      return false;
  }
}

std::optional<std::vector<MovePiece>> move_pieces(const Layer& l, const std::array<int64_t, 4>& lo,
                                                  const std::array<int64_t, 4>& hi, std::string* why) {
  auto fail = [&](const std::string& w) -> std::optional<std::vector<MovePiece>> {
    if (why) *why = w;
    return std::nullopt;
  };
  if (!is_move_op(l.op)) return fail("not a data movement layer");
  if (l.output_shape.empty() || l.input_shape.empty()) return fail("no input or output shape");
  const size_t rank = l.output_shape[0].size();
  if (rank > 4) return fail("rank " + std::to_string(rank) + " above 4");
  // Boxes are the chip's (chip_box): lo, hi and the pieces are box
  // coordinates [N, C, H, W]; the layer's axis, starts and steps are the
  // Frontend IR's. A token tensor [N, T, D] is the box [N, D, T, 1]: its
  // axis 1 is box axis 2 and its axis 2 box axis 1.
  auto box_axis = [&](size_t a) -> size_t { return rank == 3 && a >= 1 ? 3 - a : a; };
  auto fir_axis = [&](size_t d) -> size_t { return rank == 3 && (d == 1 || d == 2) ? 3 - d : d; };
  std::vector<MovePiece> out;
  if (l.op == Op::Concat) {
    int64_t axis = l.axis.value_or(1);
    if (axis < 0) axis += static_cast<int64_t>(rank);
    if (axis < 0 || axis >= static_cast<int64_t>(rank)) return fail("axis out of range");
    const size_t a = box_axis(static_cast<size_t>(axis));
    int64_t off = 0;
    for (size_t i = 0; i < l.input_shape.size(); ++i) {
      if (l.input_shape[i].size() != rank) return fail("inputs of different ranks");
      const int64_t n = l.input_shape[i][static_cast<size_t>(axis)];
      MovePiece p;
      p.input = i;
      p.in_lo = lo, p.in_hi = hi, p.out_lo = lo;
      p.out_lo[a] = std::max(lo[a], off);
      const int64_t last = std::min(hi[a], off + n - 1);
      if (p.out_lo[a] <= last) {
        p.in_lo[a] = p.out_lo[a] - off;
        p.in_hi[a] = last - off;
        out.push_back(p);
      }
      off += n;
    }
    return out;
  }
  // Slice and gather: per axis, the runs of consecutive output indices whose
  // sources are consecutive too; the pieces are their products.
  if (l.input_shape[0].size() != rank) return fail("input and output of different ranks");
  const auto in = chip_box(l.input_shape[0]);
  struct Run {
    int64_t out, src, len;
  };
  std::array<std::vector<Run>, 4> runs;
  int64_t axis = l.axis.value_or(1);
  if (axis < 0) axis += static_cast<int64_t>(rank);
  for (size_t d = 0; d < 4; ++d) {
    const size_t f = fir_axis(d);  // the Frontend IR's axis of box axis d
    auto src = [&](int64_t i) -> int64_t {
      if (f >= rank) return i;
      if (l.op == Op::Slice) return (*l.starts)[f] + i * (*l.steps)[f];
      return static_cast<int64_t>(f) == axis ? (*l.indices)[static_cast<size_t>(i)] : i;
    };
    if (l.op == Op::Slice && f < rank &&
        (!l.starts || !l.steps || l.starts->size() != rank || l.steps->size() != rank))
      return fail("slice without starts and steps for every axis");
    if (l.op == Op::Gather && (!l.indices || axis < 0 || axis >= static_cast<int64_t>(rank)))
      return fail("gather without indices or with its axis out of range");
    for (int64_t i = lo[d]; i <= hi[d]; ++i) {
      const int64_t s = src(i);
      if (s < 0 || s >= in[d]) return fail("an index outside the input");
      if (!runs[d].empty() && runs[d].back().src + runs[d].back().len == s) ++runs[d].back().len;
      else runs[d].push_back({i, s, 1});
    }
  }
  for (const Run& n : runs[0])
    for (const Run& c : runs[1])
      for (const Run& h : runs[2])
        for (const Run& w : runs[3]) {
          MovePiece p;
          p.out_lo = {n.out, c.out, h.out, w.out};
          p.in_lo = {n.src, c.src, h.src, w.src};
          p.in_hi = {n.src + n.len - 1, c.src + c.len - 1, h.src + h.len - 1, w.src + w.len - 1};
          out.push_back(p);
        }
  return out;
}

bool move_requantizes(const Layer& l, size_t input) {
  const std::string& in = input < l.input_dtype.size() ? l.input_dtype[input] : std::string("int8");
  const std::string& o = l.output_dtype.empty() ? std::string("int8") : l.output_dtype[0];
  if (in != o) return true;
  if (in != "int8") return false;
  if (!l.quant_info || input >= l.quant_info->inputs.size() || !l.quant_info->output_scale ||
      !l.quant_info->output_zero_point)
    return true;
  // The interpreter's rule (fir_exec: the output quantization is the
  // reciprocal of output_scale and minus output_zero_point).
  const auto& q = l.quant_info->inputs[input];
  if (*l.quant_info->output_scale == 0.0) return true;
  return !int8::requantize_is_identity(q.scale, q.zero_point, 1.0 / *l.quant_info->output_scale,
                                       -*l.quant_info->output_zero_point);
}

}  // namespace cct::fir

// ---- resize -------------------------------------------------------------------

#include "fir/resize.hpp"

namespace cct::fir {

std::optional<ResizeGeometry> resize_geometry(const Layer& l, std::string* why) {
  auto no = [&](const std::string& w) -> std::optional<ResizeGeometry> {
    if (why) *why = w;
    return std::nullopt;
  };
  const Json* attr = nullptr;
  if (l.activation && l.activation->attr.is_object()) attr = &l.activation->attr;
  for (const auto& [key, val] : l.extra)
    if (!attr && key == "activation_attr" && val.is_object()) attr = &val;
  if (!attr) return no("activation_attr with the resize parameters is missing");
  auto str = [&](const char* k, const char* dflt) {
    const Json* v = attr->find(k);
    return v && v->is_string() ? v->as_string() : std::string(dflt);
  };
  if (l.input_shape.empty() || l.input_shape[0].size() != 4 || l.output_shape.size() != 1 || l.output_shape[0].size() != 4)
    return no("a resize takes one [N, C, H, W] input to one [N, C, H, W] output");
  ResizeGeometry g;
  if (const std::string mode = str("mode", ""); mode == "zeros" || mode == "reflect" || mode == "edge") {
    // Padding modes: integer strides and offsets (int8::resize_tap).
    g.mode = mode == "zeros" ? 5 : mode == "reflect" ? 6 : 7;
    auto pair = [&](const char* key, bool need, int64_t dflt, int64_t lo) -> std::optional<std::array<int64_t, 2>> {
      const Json* v = attr->find(key);
      if (!v) {
        if (need) return std::nullopt;
        return std::array<int64_t, 2>{dflt, dflt};
      }
      if (!v->is_array() || v->size() != 2) return std::nullopt;
      std::array<int64_t, 2> r{};
      for (size_t d = 0; d < 2; ++d) {
        const Json& e = v->as_array()[d];
        if (!e.is_number() || e.as_double() != std::floor(e.as_double()) || e.as_double() < double(lo) ||
            std::fabs(e.as_double()) > double(1 << 24))
          return std::nullopt;
        r[d] = static_cast<int64_t>(e.as_double());
      }
      return r;
    };
    auto strides = pair("strides", false, 1, 1);
    auto pads = pair("pads", true, 0, -(1 << 24));
    if (!strides) return no("\"strides\" must hold two integers [sh, sw] of at least 1");
    if (!pads) return no("\"pads\" must hold two integers [top, left] (the rows and columns before the input's first)");
    if (mode != "zeros" && ((*strides)[0] != 1 || (*strides)[1] != 1))
      return no("\"strides\" must be [1, 1] for " + mode + " padding");
    for (int d = 0; d < 2; ++d) {
      ResizeAxis& a = g.axis[static_cast<size_t>(d)];
      a.in = l.input_shape[0][static_cast<size_t>(2 + d)];
      a.out = l.output_shape[0][static_cast<size_t>(2 + d)];
      a.step = static_cast<double>((*strides)[static_cast<size_t>(d)]);
      a.offset = static_cast<double>((*pads)[static_cast<size_t>(d)]);
      if (a.in < 1 || a.out < 1) return no("empty input or output");
    }
    return g;
  }
  std::string mode = str("mode", "nearest"), ctm = str("coordinate_transformation_mode", "half_pixel"),
              nearest = str("nearest_mode", "round_prefer_floor");
  if (mode == "linear") g.mode = 0;
  else if (mode != "nearest") return no("resize mode \"" + mode + "\" (nearest or linear)");
  else if (nearest == "round_prefer_floor") g.mode = 1;
  else if (nearest == "round_prefer_ceil") g.mode = 2;
  else if (nearest == "floor") g.mode = 3;
  else if (nearest == "ceil") g.mode = 4;
  else return no("nearest_mode \"" + nearest + "\"");
  const Json* scales = attr->find("scales");
  if (!scales || !scales->is_array() || scales->size() != 2) return no("\"scales\" must hold [sh, sw]");
  for (int d = 0; d < 2; ++d) {
    const Json& sj = scales->as_array()[static_cast<size_t>(d)];
    if (!sj.is_number() || !(sj.as_double() > 0)) return no("\"scales\" must be positive numbers");
    double s = sj.as_double();
    ResizeAxis& a = g.axis[static_cast<size_t>(d)];
    a.in = l.input_shape[0][static_cast<size_t>(2 + d)];
    a.out = l.output_shape[0][static_cast<size_t>(2 + d)];
    if (ctm == "half_pixel" || (ctm == "pytorch_half_pixel" && a.out > 1)) {
      a.step = 1.0 / s, a.offset = 0.5 / s - 0.5;
    } else if (ctm == "pytorch_half_pixel") {
      a.step = 0.0, a.offset = 0.0;
    } else if (ctm == "align_corners") {
      double len = s * static_cast<double>(a.in);
      a.step = len > 1.0 ? static_cast<double>(a.in - 1) / (len - 1.0) : 0.0, a.offset = 0.0;
    } else if (ctm == "asymmetric") {
      a.step = 1.0 / s, a.offset = 0.0;
    } else if (ctm == "tf_half_pixel_for_nn") {
      a.step = 1.0 / s, a.offset = 0.5 / s;
    } else {
      return no("coordinate_transformation_mode \"" + ctm + "\"");
    }
  }
  return g;
}

}  // namespace cct::fir
