#include "interp/fir_exec.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>

#include "fir/resize.hpp"
#include "interp/gemm.hpp"
#include "interp/ops.hpp"
#include "interp/ops_common.hpp"
#include "interp/parallel.hpp"
#include "support/error.hpp"

namespace cct::interp {

using fir::Layer;
using fir::Op;

// ---- QTensor -----------------------------------------------------------------

NpyArray QTensor::to_npy() const {
  if (is_int8()) {
    std::vector<int8_t> v = q;
    return NpyArray::from_int8(v, shape);
  }
  if (dtype == "float16") {
    NpyArray a;
    a.type = NpyType::F16;
    a.shape = shape;
    a.bytes.resize(f.size() * 2);
    for (size_t k = 0; k < f.size(); ++k) {
      uint16_t h = float_to_half(f[k]);
      std::memcpy(a.bytes.data() + 2 * k, &h, 2);
    }
    return a;
  }
  return NpyArray::from_float(f, shape);
}

QTensor QTensor::from_npy(const NpyArray& a, const std::string& where) {
  QTensor t;
  t.shape = a.shape;
  switch (a.type) {
    case NpyType::I8: {
      t.dtype = "int8";
      t.q.resize(a.count());
      std::memcpy(t.q.data(), a.bytes.data(), a.count());
      break;
    }
    case NpyType::F16: t.dtype = "float16"; t.f = a.to_float(); break;
    case NpyType::F32: case NpyType::F64: t.dtype = "float32"; t.f = a.to_float(); break;
    default: throw_input_error(where + ": expected an int8, float16 or float32 array");
  }
  return t;
}

std::optional<int8::TensorQuant> output_quant(const Layer& l) {
  if (l.output_dtype.empty() || l.output_dtype[0] != "int8") return std::nullopt;
  if (l.quant_info && l.quant_info->output_scale && l.quant_info->output_zero_point) {
    double os = *l.quant_info->output_scale;
    if (os == 0.0) return std::nullopt;
    return int8::TensorQuant{1.0 / os, -*l.quant_info->output_zero_point};
  }
  if (auto post = l.post_cal(); post && post->mul_k != 0.0) return int8::TensorQuant{1.0 / post->mul_k, -post->sum_b};
  return std::nullopt;
}

std::vector<float> real_values(const Layer& l, const QTensor& t) {
  if (!t.is_int8()) return t.f;
  auto q = output_quant(l);
  double s = q ? q->scale : 1.0, z = q ? q->zero_point : 0.0;
  std::vector<float> out(t.q.size());
  for (size_t k = 0; k < t.q.size(); ++k) out[k] = static_cast<float>(s * (t.q[k] + z));
  return out;
}

FirExecutor::Loader directory_loader(const std::string& dir) {
  return [dir](const std::string& file) { return read_npy((std::filesystem::path(dir) / file).string()); };
}

// ---- plans -------------------------------------------------------------------

struct FirExecutor::Plan {
  const Layer* layer = nullptr;
  struct Src {
    int layer = -1;        // producing layer (index in order_)
    int graph_input = -1;  // input1 -> 0
    std::shared_ptr<QTensor> constant;
  };
  std::vector<Src> srcs;
  std::vector<float> pre_s, pre_z;  // per input
  float mul_k = 1.0f, sum_b = 0.0f;
  bool to_int8 = false;
  int8::Carry carry = int8::Carry::Round;
  // PE layers
  std::vector<int32_t> in_zp;
  std::vector<float> in_scale;
  std::vector<float> wf;  // int8 weights held as floats; conv: [K, Cg*kh*kw], dense: transposed [D, K]
  std::vector<float> bias;
  std::vector<float> ch_scale;
  int64_t K = 0, D = 0;
  int8::Activation act;
  // vector processor
  int8::ActMode mode = int8::ActMode::Others;
  float k_scalar = 1.0f, alpha = 1.0f / 6.0f, beta = 0.5f;
  bool relu = false, sub = false;
  bool inside_divisor = false;  // avg_pool2d: divide by the window's elements inside the input
  std::array<int64_t, 2> window{1, 1}, stride{1, 1}, dilation{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  int64_t groups = 1;
  // concat
  std::vector<std::optional<int8::TensorQuant>> in_q;
  std::optional<int8::TensorQuant> out_q;
  // cpu layers
  std::vector<float> gamma, beta_v;
  float eps = 1e-5f;
  fir::LayerNormOutput ln_output = fir::LayerNormOutput::Y;  // which of LayerNormalization's outputs
  int64_t axis = 0;
  std::vector<int64_t> perm;
  // resize
  fir::ResizeGeometry resize;
  int consumers = 0;
  bool computed = true;   // false: the output comes from run()'s `given`
  bool needed = false;    // (not computed) a computed layer or a graph output reads it
};

namespace {

[[noreturn]] void bad(const Layer& l, const std::string& what) {
  throw Error(kExitInvalidInput, "layer '" + l.name + "' (" + l.operation + "): " + what);
}

const Json* group_field(const Layer& l, const char* group, const char* key) {
  const fir::Module* m = l.module(group);
  return m ? m->params.find(key) : nullptr;
}

float group_float(const Layer& l, const char* group, const char* key, float dflt) {
  const Json* j = group_field(l, group, key);
  return j && j->is_number() ? int8::param(j->as_double()) : dflt;
}

int8::Activation parse_activation(const Layer& l) {
  int8::Activation a;
  if (!l.activation || !l.activation->type) return a;
  const std::string& t = *l.activation->type;
  auto attr = [&](const char* k, double d) {
    const Json* j = l.activation->attr.is_object() ? l.activation->attr.find(k) : nullptr;
    return j && j->is_number() ? static_cast<float>(j->as_double()) : static_cast<float>(d);
  };
  if (t == "relu") a.kind = int8::Act::Relu;
  else if (t == "relu6") a.kind = int8::Act::Relu6;
  else if (t == "clip") { a.kind = int8::Act::Clip; a.lo = attr("min", 0); a.hi = attr("max", 6); }
  else if (t == "leaky_relu") { a.kind = int8::Act::LeakyRelu; a.alpha = attr("alpha", 0.01); }
  else bad(l, "unknown activation_type '" + t + "'");
  return a;
}

int32_t integral_zp(const Layer& l, double zp, const char* what) {
  if (zp != std::round(zp) || std::fabs(zp) > 255.0) bad(l, std::string(what) + " must be an integer in [-255, 255]");
  return static_cast<int32_t>(zp);
}

// Sums the int32 products of chunks of at most `chunk` terms with the float
// GEMM: every partial sum is an integer below 2^24, hence exact.
void int_gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
              int32_t* C, int64_t chunk, std::vector<float>& tmp) {
  tmp.resize(static_cast<size_t>(M * N));
  std::fill(C, C + M * N, 0);
  for (int64_t k0 = 0; k0 < K; k0 += chunk) {
    int64_t kc = std::min(chunk, K - k0);
    sgemm(M, N, kc, A + k0, lda, B + k0 * ldb, ldb, tmp.data(), N, false);
    for (int64_t i = 0; i < M * N; ++i) C[i] += static_cast<int32_t>(tmp[i]);
  }
}

Tensor as_float_tensor(const QTensor& t) {
  Tensor x = Tensor::floats(t.shape);
  if (t.is_int8()) for (size_t k = 0; k < t.q.size(); ++k) x.f[k] = t.q[k];
  else x.f = t.f;
  return x;
}

}  // namespace

FirExecutor::~FirExecutor() = default;

FirExecutor::FirExecutor(const fir::Graph& g, const Loader& load, const Select& only) : g_(g) {
  order_ = g.in_index_order();
  plans_.resize(order_.size());
  std::map<std::string, int> index;
  for (size_t k = 0; k < order_.size(); ++k) index[order_[k]->name] = static_cast<int>(k);
  auto load_file = [&](const Layer& l, const std::string& role) -> NpyArray {
    const std::string* f = l.file(role);
    if (!f) bad(l, "file_list has no '" + role + "'");
    try {
      return load(*f);
    } catch (const Error& e) {
      bad(l, std::string("cannot load '") + role + "': " + e.what());
    }
  };
  for (size_t k = 0; k < order_.size(); ++k) {
    const Layer& l = *order_[k];
    Plan& p = plans_[k];
    p.layer = &l;
    if (only && !only(l)) {
      p.computed = false;
      for (const auto& n : l.next_layer)
        if (fir::is_graph_output_name(n)) {
          output_count_ = std::max(output_count_, static_cast<size_t>(std::stoi(n.substr(6))));
          p.needed = true;
        }
      continue;
    }
    bool pe = (l.op == Op::Conv2d || l.op == Op::Dense) ;
    // Inputs.
    for (size_t i = 0; i < l.previous_layer.size(); ++i) {
      if (pe && i == 1) break;  // the weight: loaded from "k"
      const std::string& name = l.previous_layer[i];
      Plan::Src s;
      if (auto it = index.find(name); it != index.end()) {
        s.layer = it->second;
        if (s.layer >= static_cast<int>(k)) bad(l, "input '" + name + "' comes later in layer_index order");
        ++plans_[static_cast<size_t>(s.layer)].consumers;
        plans_[static_cast<size_t>(s.layer)].needed = true;
      } else if (fir::is_graph_input_name(name)) {
        s.graph_input = std::stoi(name.substr(5)) - 1;
        input_count_ = std::max(input_count_, static_cast<size_t>(s.graph_input + 1));
      } else if (fir::is_constant_name(name)) {
        s.constant = std::make_shared<QTensor>(
            QTensor::from_npy(load_file(l, "input_activation" + std::to_string(i + 1)), l.name));
        if (i < l.input_shape.size() && s.constant->shape != l.input_shape[i] &&
            shape_numel(s.constant->shape) == shape_numel(l.input_shape[i]))
          s.constant->shape = l.input_shape[i];
      } else {
        bad(l, "input '" + name + "' is not a layer, a graph input or a constant");
      }
      p.srcs.push_back(std::move(s));
    }
    for (const auto& n : l.next_layer)
      if (fir::is_graph_output_name(n)) output_count_ = std::max(output_count_, static_cast<size_t>(std::stoi(n.substr(6))));
    bool out_int8 = !l.output_dtype.empty() && l.output_dtype[0] == "int8";
    // pre_cal / post_cal.
    if (auto pre = l.pre_cal()) {
      p.pre_s = {int8::param(pre->requan_scale_a), int8::param(pre->requan_scale_b.value_or(1.0))};
      p.pre_z = {int8::param(pre->requan_zp_a), int8::param(pre->requan_zp_b.value_or(0.0))};
    } else {
      p.pre_s.assign(std::max<size_t>(2, p.srcs.size()), 1.0f);
      p.pre_z.assign(std::max<size_t>(2, p.srcs.size()), 0.0f);
    }
    if (auto post = l.post_cal()) {
      p.mul_k = int8::param(post->mul_k);
      p.sum_b = int8::param(post->sum_b);
      if (post->carry_sel) p.carry = int8::parse_carry(*post->carry_sel);
      p.to_int8 = out_int8;
      if (out_int8 && !post->carry_sel) bad(l, "an int8 output needs post_cal carry_sel");
    }
    // Per operation.
    const fir::QuantInfo* qi = l.quant_info ? &*l.quant_info : nullptr;
    auto pe_output = [&] {
      if (qi && qi->output_scale) {
        p.mul_k = int8::param(*qi->output_scale);
        p.sum_b = int8::param(qi->output_zero_point.value_or(0.0));
        if (qi->round_type) p.carry = int8::parse_carry(*qi->round_type);
        p.to_int8 = out_int8;
      } else if (out_int8) {
        bad(l, "an int8 output needs quant_info output_scale");
      }
    };
    try {
      switch (l.op) {
        case Op::Conv2d:
        case Op::Dense: {
          if (!qi || qi->inputs.empty()) bad(l, "quant_info needs input_scale1/input_zero_point1");
          p.in_scale = {int8::param(qi->inputs[0].scale)};
          p.in_zp = {integral_zp(l, qi->inputs[0].zero_point, "input_zero_point1")};
          pe_output();
          p.act = parse_activation(l);
          NpyArray k = load_file(l, "k"), b = load_file(l, "b"), ks = load_file(l, "k_scale");
          if (k.type != NpyType::I8) bad(l, "'k' must be int8");
          if (b.type != NpyType::F32) bad(l, "'b' must be float32");
          auto ws = l.input_shape.size() > 1 ? l.input_shape[1] : Shape{};
          if (k.shape != ws) bad(l, "'k' has shape " + shape_str(k.shape) + ", input_shape[1] is " + shape_str(ws));
          p.K = ws.empty() ? 0 : ws[0];
          p.D = p.K ? static_cast<int64_t>(k.count()) / p.K : 0;
          auto bi = b.to_float();
          auto sc = ks.to_double();
          if (static_cast<int64_t>(bi.size()) != p.K || static_cast<int64_t>(sc.size()) != p.K)
            bad(l, "'b' and 'k_scale' must hold one value per output channel");
          p.bias.assign(bi.begin(), bi.end());
          p.ch_scale.resize(static_cast<size_t>(p.K));
          for (int64_t c = 0; c < p.K; ++c) p.ch_scale[c] = int8::pe_channel_scale(qi->inputs[0].scale, sc[c]);
          const int8_t* kq = reinterpret_cast<const int8_t*>(k.bytes.data());
          p.wf.resize(k.count());
          if (l.op == Op::Conv2d) {
            for (size_t i = 0; i < k.count(); ++i) p.wf[i] = kq[i];
            p.window = l.window();
            p.stride = l.strides();
            p.dilation = l.dilations();
            p.pads = l.pads();
            p.groups = l.group_count();
          } else {  // dense: [K, D] -> [D, K]
            for (int64_t r = 0; r < p.K; ++r)
              for (int64_t d = 0; d < p.D; ++d) p.wf[d * p.K + r] = kq[r * p.D + d];
          }
          break;
        }
        case Op::MatMul:
          if (l.device == fir::Device::Npu) {
            if (!qi || qi->inputs.size() < 2) bad(l, "quant_info needs the scales and zero points of both inputs");
            p.in_scale = {int8::param(qi->inputs[0].scale), int8::param(qi->inputs[1].scale)};
            p.in_zp = {integral_zp(l, qi->inputs[0].zero_point, "input_zero_point1"),
                       integral_zp(l, qi->inputs[1].zero_point, "input_zero_point2")};
            p.ch_scale = {int8::param(qi->inputs[0].scale * qi->inputs[1].scale)};
            pe_output();
          }
          break;
        case Op::MaxPool2d:
        case Op::AvgPool2d:
          p.window = l.window();
          p.stride = l.strides();
          p.dilation = l.dilations();
          p.pads = l.pads();
          if (const Json* attr = l.activation_attr())
            if (const Json* c = attr->find("count_include_pad")) p.inside_divisor = c->is_bool() && !c->as_bool();
          p.k_scalar = group_float(l, "fp32_mul_group", "mul_group_k_scalar", 1.0f);
          break;
        case Op::ElementWiseAdd:
        case Op::ElementWiseSub:
          p.relu = l.has_relu_group();
          if (auto s = l.fp32_sum_sub_group()) p.sub = s->sumsub_group_mode == "sub";
          else p.sub = l.op == Op::ElementWiseSub;
          break;
        case Op::Relu: case Op::Sigmoid: case Op::HardSigmoid: case Op::HardSwish:
        case Op::Silu: case Op::Gelu: case Op::Tanh: case Op::Clip: case Op::LeakyRelu: case Op::Elu:
        case Op::PRelu: {
          auto m = l.fp32_mul_group();
          // prelu is leaky_relu with its slope read from the second input.
          p.mode = l.op == Op::PRelu ? int8::ActMode::LeakyRelu
                                     : int8::parse_act_mode(m ? m->act_mode : std::string(fir::op_name(l.op)));
          p.k_scalar = m && m->mul_group_k_scalar ? int8::param(*m->mul_group_k_scalar) : 1.0f;
          // Defaults: ONNX's (LeakyRelu 0.01, Elu 1; a clip without bounds is relu6).
          if (l.op == Op::LeakyRelu) p.alpha = 0.01f;
          if (l.op == Op::Elu) p.alpha = 1.0f;
          if (l.op == Op::Clip) p.alpha = 0.0f, p.beta = 6.0f;
          if (const Json* attr = l.activation_attr()) {
            bool clip = l.op == Op::Clip;
            if (const Json* a = attr->find(clip ? "min" : "alpha")) p.alpha = static_cast<float>(a->as_double());
            if (const Json* b = attr->find(clip ? "max" : "beta")) p.beta = static_cast<float>(b->as_double());
          }
          break;
        }
        case Op::Slice:
        case Op::Gather:
        case Op::Concat: {
          p.axis = l.axis.value_or(1);
          for (size_t i = 0; i < p.srcs.size(); ++i) {
            if (qi && i < qi->inputs.size()) p.in_q.push_back(int8::TensorQuant{qi->inputs[i].scale, qi->inputs[i].zero_point});
            else p.in_q.push_back(std::nullopt);
          }
          p.out_q = output_quant(l);
          break;
        }
        case Op::LayerNorm: {
          NpyArray gk = load_file(l, "k"), bk = load_file(l, "b");
          p.gamma = gk.to_float();
          p.beta_v = bk.to_float();
          p.axis = l.axis.value_or(-1);
          if (const Json* attr = l.activation_attr())
            if (const Json* e = attr->find("epsilon")) p.eps = static_cast<float>(e->as_double());
          std::string why;
          auto which = fir::layer_norm_output(l, &why);
          if (!which) bad(l, why);
          p.ln_output = *which;
          break;
        }
        case Op::Resize: {
          std::string why;
          auto g = fir::resize_geometry(l, &why);
          if (!g) bad(l, why);
          p.resize = *g;
          break;
        }
        case Op::Softmax: p.axis = l.axis.value_or(-1); break;
        case Op::ReduceMax:
        case Op::ReduceSum:
          p.axis = l.axis.value_or(-1);
          p.k_scalar = group_float(l, "fp32_mul_group", "mul_group_k_scalar", 1.0f);
          break;
        case Op::Transpose: if (l.perm) p.perm = *l.perm; break;
        case Op::Quantize: case Op::Reshape: case Op::ElementWiseMul: break;
        case Op::Unknown: bad(l, "unknown operation");
      }
    } catch (const std::invalid_argument& e) {
      bad(l, e.what());
    }
  }
}

// ---- execution ----------------------------------------------------------------

namespace {

struct Ctx {
  const Layer& l;
  const std::vector<const QTensor*>& in;
};

// Dequantizes input i of a VP layer into fp32 through pre_cal.
std::vector<float> pre(const QTensor& t, float s, float z) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  if (t.is_int8()) for (size_t k = 0; k < v.size(); ++k) v[k] = int8::pre_cal(t.q[k], s, z);
  else for (size_t k = 0; k < v.size(); ++k) v[k] = int8::pre_cal_float(t.f[k], s, z);
  return v;
}

}  // namespace

std::vector<QTensor> FirExecutor::run(const std::vector<Tensor>& inputs, const Observer& observer, const Given& given,
                                      Float16 float16) const {
  if (inputs.size() < input_count_)
    throw_input_error("the FIR reads " + std::to_string(input_count_) + " input(s), " + std::to_string(inputs.size()) + " given");
  const bool round16 = float16 == Float16::Round;
  // A value of a float tensor of the given FIR dtype.
  auto as_dtype = [round16](const std::string& dtype, float v) {
    return dtype == "float16" && round16 ? int8::to_float16(v) : v;
  };
  std::vector<QTensor> outs(order_.size());
  std::vector<int> remaining(order_.size());
  for (size_t k = 0; k < order_.size(); ++k) remaining[k] = plans_[k].consumers;
  std::vector<QTensor> graph_in(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    graph_in[k].dtype = "float16";
    graph_in[k].shape = inputs[k].shape;
    graph_in[k].f.resize(inputs[k].f.size());
    for (size_t i = 0; i < inputs[k].f.size(); ++i) graph_in[k].f[i] = round16 ? int8::to_float16(inputs[k].f[i]) : inputs[k].f[i];
  }
  std::vector<QTensor> results(output_count_);
  std::vector<float> tmp;
  for (size_t k = 0; k < order_.size(); ++k) {
    const Plan& p = plans_[k];
    const Layer& l = *p.layer;
    if (!p.computed) {
      if (!p.needed) continue;
      if (!given) bad(l, "the layer was not prepared and no output was given for it");
      QTensor t = given(l);
      std::string want = l.output_dtype.empty() ? "int8" : l.output_dtype[0];
      Shape ws = l.output_shape.empty() ? Shape{} : l.output_shape[0];
      if (t.dtype != want || t.shape != ws || static_cast<int64_t>(t.is_int8() ? t.q.size() : t.f.size()) != t.numel())
        bad(l, "the given output is " + t.dtype + " " + shape_str(t.shape) + ", output_shape and output_dtype say " +
                   want + " " + shape_str(ws));
      for (const auto& n : l.next_layer)
        if (fir::is_graph_output_name(n)) results[static_cast<size_t>(std::stoi(n.substr(6)) - 1)] = t;
      outs[k] = std::move(t);
      continue;
    }
    std::vector<const QTensor*> in;
    for (const auto& s : p.srcs) {
      if (s.layer >= 0) in.push_back(&outs[static_cast<size_t>(s.layer)]);
      else if (s.graph_input >= 0) in.push_back(&graph_in[static_cast<size_t>(s.graph_input)]);
      else in.push_back(s.constant.get());
    }
    for (size_t i = 0; i < in.size() && i < l.input_shape.size(); ++i)
      if (in[i]->shape != l.input_shape[i] && !(l.op == Op::Conv2d || l.op == Op::Dense ? i > 0 : false))
        bad(l, "input " + std::to_string(i) + " has shape " + shape_str(in[i]->shape) + ", input_shape says " + shape_str(l.input_shape[i]));
    QTensor out;
    out.dtype = l.output_dtype.empty() ? "int8" : l.output_dtype[0];
    out.shape = l.output_shape.empty() ? Shape{} : l.output_shape[0];
    int64_t n_out = shape_numel(out.shape);
    bool int_out = out.is_int8();
    if (int_out) out.q.resize(static_cast<size_t>(n_out));
    else out.f.resize(static_cast<size_t>(n_out));
    // Writes one fp32 result through post_cal (or float16 rounding).
    auto emit = [&](int64_t i, float v) {
      if (int_out) out.q[i] = int8::post_cal(v, p.mul_k, p.sum_b, p.carry);
      else out.f[i] = int8::post_cal_float(v, p.mul_k, p.sum_b, out.dtype == "float16" && round16);
    };
    auto need_int8 = [&](size_t i) {
      if (i >= in.size() || !in[i]->is_int8()) bad(l, "input " + std::to_string(i) + " must be int8");
    };
    switch (l.op) {
      case Op::Quantize: {
        std::vector<float> v = pre(*in.at(0), p.pre_s[0], p.pre_z[0]);
        for (int64_t i = 0; i < n_out; ++i) emit(i, v[static_cast<size_t>(i)]);
        break;
      }
      case Op::Conv2d: {
        need_int8(0);
        const QTensor& x = *in[0];
        if (x.shape.size() != 4) bad(l, "input must be 4-D");
        int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
        int64_t Ho = out.shape[2], Wo = out.shape[3], P = Ho * Wo;
        int64_t G = p.groups, Cg = C / G, Mg = p.K / G;
        const int64_t kh = p.window[0], kw = p.window[1];
        int64_t Kdim = Cg * kh * kw;
        int32_t zp = p.in_zp[0];
        std::vector<float> col(static_cast<size_t>(Kdim * P));
        std::vector<int32_t> acc(static_cast<size_t>(Mg * P));
        for (int64_t n = 0; n < N; ++n)
          for (int64_t g = 0; g < G; ++g) {
            // im2col of u = q + zero_point (0 in the padding: a real zero)
            parallel_for(Kdim, 8, [&](int64_t b, int64_t e) {
              for (int64_t r = b; r < e; ++r) {
                int64_t c = r / (kh * kw), i = (r / kw) % kh, j = r % kw;
                const int8_t* plane = x.q.data() + ((n * C) + g * Cg + c) * H * W;
                float* d = col.data() + r * P;
                for (int64_t oh = 0; oh < Ho; ++oh) {
                  int64_t ih = oh * p.stride[0] - p.pads[0] + i * p.dilation[0];
                  for (int64_t ow = 0; ow < Wo; ++ow) {
                    int64_t iw = ow * p.stride[1] - p.pads[2] + j * p.dilation[1];
                    d[oh * Wo + ow] = (ih < 0 || ih >= H || iw < 0 || iw >= W)
                                          ? 0.0f
                                          : static_cast<float>(plane[ih * W + iw] + zp);
                  }
                }
              }
            });
            int_gemm(Mg, P, Kdim, p.wf.data() + g * Mg * Kdim, Kdim, col.data(), P, acc.data(), int8::kExactFloatTerms, tmp);
            for (int64_t m = 0; m < Mg; ++m) {
              int64_t oc = g * Mg + m;
              for (int64_t q = 0; q < P; ++q)
                emit((n * p.K + oc) * P + q,
                     int8::activate(p.act, int8::pe_to_real(acc[m * P + q], p.ch_scale[oc], p.bias[oc])));
            }
          }
        break;
      }
      case Op::Dense: {
        need_int8(0);
        const QTensor& x = *in[0];
        int64_t rows = x.numel() / p.D;
        if (rows * p.D != x.numel()) bad(l, "input size is not a multiple of the weight's features");
        std::vector<float> u(static_cast<size_t>(x.numel()));
        for (size_t i = 0; i < u.size(); ++i) u[i] = static_cast<float>(x.q[i] + p.in_zp[0]);
        std::vector<int32_t> acc(static_cast<size_t>(rows * p.K));
        int_gemm(rows, p.K, p.D, u.data(), p.D, p.wf.data(), p.K, acc.data(), int8::kExactFloatTerms, tmp);
        if (rows * p.K != n_out) bad(l, "output_shape does not match the weight");
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < p.K; ++c)
            emit(r * p.K + c, int8::activate(p.act, int8::pe_to_real(acc[r * p.K + c], p.ch_scale[c], p.bias[c])));
        break;
      }
      case Op::MatMul: {
        if (l.device == fir::Device::Npu) {
          need_int8(0);
          need_int8(1);
          const QTensor& a = *in[0];
          const QTensor& b = *in[1];
          int64_t M = a.shape[a.shape.size() - 2], Dd = a.shape.back(), Nn = b.shape.back();
          Shape ab(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
          Shape batch = broadcast_shape(ab, bb, "layer '" + l.name + "'");
          std::vector<int64_t> sa = detail::broadcast_strides(batch, ab), sb = detail::broadcast_strides(batch, bb);
          std::vector<float> ua(a.q.size()), ub(b.q.size());
          for (size_t i = 0; i < ua.size(); ++i) ua[i] = static_cast<float>(a.q[i] + p.in_zp[0]);
          for (size_t i = 0; i < ub.size(); ++i) ub[i] = static_cast<float>(b.q[i] + p.in_zp[1]);
          std::vector<int32_t> acc(static_cast<size_t>(M * Nn));
          int64_t nb = shape_numel(batch);
          std::vector<int64_t> idx(batch.size(), 0);
          for (int64_t bi = 0; bi < nb; ++bi) {
            int64_t ia = 0, ib = 0;
            for (size_t d = 0; d < batch.size(); ++d) {
              ia += idx[d] * sa[d];
              ib += idx[d] * sb[d];
            }
            // |u| <= 255 on both sides: 256 terms stay below 2^24
            int_gemm(M, Nn, Dd, ua.data() + ia * M * Dd, Dd, ub.data() + ib * Dd * Nn, Nn, acc.data(), 256, tmp);
            for (int64_t i = 0; i < M * Nn; ++i) emit(bi * M * Nn + i, int8::pe_to_real(acc[i], p.ch_scale[0], 0.0f));
            for (size_t d = batch.size(); d-- > 0;) {
              if (++idx[d] < batch[d]) break;
              idx[d] = 0;
            }
          }
        } else {
          Node n;
          n.op = "MatMul";
          n.name = l.name;
          n.outputs = {0};
          Tensor a = as_float_tensor(*in.at(0)), b = as_float_tensor(*in.at(1));
          std::vector<Tensor> r;
          run_kernel(n, 13, {&a, &b}, r);
          if (r[0].numel() != n_out) bad(l, "output_shape does not match the product");
          for (int64_t i = 0; i < n_out; ++i) out.f[i] = as_dtype(out.dtype, r[0].f[i]);
        }
        break;
      }
      case Op::MaxPool2d:
      case Op::AvgPool2d: {
        const QTensor& x = *in.at(0);
        int64_t NC = x.shape[0] * x.shape[1], H = x.shape[2], W = x.shape[3], Ho = out.shape[2], Wo = out.shape[3];
        std::vector<float> v = pre(x, p.pre_s[0], p.pre_z[0]);
        bool is_max = l.op == Op::MaxPool2d;
        float ks = p.k_scalar;
        if (!is_max && p.srcs.size() > 1 && in[1]->numel() == 1 && !in[1]->is_int8() && !l.fp32_mul_group())
          ks = in[1]->f[0];
        parallel_for(NC, 4, [&](int64_t b, int64_t e) {
          for (int64_t nc = b; nc < e; ++nc)
            for (int64_t oh = 0; oh < Ho; ++oh)
              for (int64_t ow = 0; ow < Wo; ++ow) {
                float acc = is_max ? -std::numeric_limits<float>::infinity() : 0.0f;
                float k = ks;
                if (!is_max && p.inside_divisor) {
                  int64_t count = 0;
                  for (int64_t i = 0; i < p.window[0]; ++i) {
                    int64_t ih = oh * p.stride[0] - p.pads[0] + i * p.dilation[0];
                    for (int64_t j = 0; j < p.window[1]; ++j) {
                      int64_t iw = ow * p.stride[1] - p.pads[2] + j * p.dilation[1];
                      count += ih >= 0 && ih < H && iw >= 0 && iw < W;
                    }
                  }
                  k = int8::inside_divisor(std::max<int64_t>(count, 1));
                }
                for (int64_t i = 0; i < p.window[0]; ++i) {
                  int64_t ih = oh * p.stride[0] - p.pads[0] + i * p.dilation[0];
                  if (ih < 0 || ih >= H) continue;
                  for (int64_t j = 0; j < p.window[1]; ++j) {
                    int64_t iw = ow * p.stride[1] - p.pads[2] + j * p.dilation[1];
                    if (iw < 0 || iw >= W) continue;
                    float t = v[static_cast<size_t>((nc * H + ih) * W + iw)];
                    if (is_max) acc = std::max(acc, t);
                    else acc = int8::avg_pool_step(acc, t, k);
                  }
                }
                emit((nc * Ho + oh) * Wo + ow, acc);
              }
        });
        break;
      }
      case Op::Resize: {
        // Dequantize, then per output pixel the source taps of its row and
        // column (int8::resize_tap), one element, the linear blend, or zero
        // (int8::resize_sample).
        const QTensor& x = *in.at(0);
        int64_t NC = x.shape[0] * x.shape[1], H = x.shape[2], W = x.shape[3], Ho = out.shape[2], Wo = out.shape[3];
        std::vector<float> v = pre(x, p.pre_s[0], p.pre_z[0]);
        const auto mode = static_cast<int8::ResizeMode>(p.resize.mode);
        const auto& ay = p.resize.axis[0];
        const auto& ax = p.resize.axis[1];
        std::vector<int8::ResizeTap> ty(static_cast<size_t>(Ho)), tx(static_cast<size_t>(Wo));
        for (int64_t o = 0; o < Ho; ++o) ty[o] = int8::resize_tap(mode, o, int8::param(ay.step), int8::param(ay.offset), H);
        for (int64_t o = 0; o < Wo; ++o) tx[o] = int8::resize_tap(mode, o, int8::param(ax.step), int8::param(ax.offset), W);
        parallel_for(NC, 4, [&](int64_t b, int64_t e) {
          for (int64_t nc = b; nc < e; ++nc) {
            const float* s = v.data() + nc * H * W;
            for (int64_t oh = 0; oh < Ho; ++oh)
              for (int64_t ow = 0; ow < Wo; ++ow) {
                auto at = [&](int64_t r, int64_t c) { return s[r * W + c]; };
                emit((nc * Ho + oh) * Wo + ow, int8::resize_sample(mode, at, ty[oh], tx[ow]));
              }
          }
        });
        break;
      }
      case Op::ElementWiseAdd:
      case Op::ElementWiseSub:
      case Op::ElementWiseMul: {
        const QTensor& a = *in.at(0);
        const QTensor& b = *in.at(1);
        std::vector<float> va = pre(a, p.pre_s[0], p.pre_z[0]), vb = pre(b, p.pre_s[1], p.pre_z[1]);
        detail::broadcast_runs(out.shape, a.shape, b.shape,
                               [&](int64_t o, int64_t ia, int64_t sa, int64_t ib, int64_t sb, int64_t len) {
          for (int64_t i = 0; i < len; ++i) {
            float x = va[static_cast<size_t>(ia + i * sa)], y = vb[static_cast<size_t>(ib + i * sb)];
            float r = l.op == Op::ElementWiseMul ? x * y : (p.sub ? x - y : x + y);
            if (p.relu && r < 0.0f) r = 0.0f;
            emit(o + i, r);
          }
        });
        break;
      }
      case Op::PRelu: {
        const QTensor& a = *in.at(0);
        const QTensor& b = *in.at(1);
        std::vector<float> va = pre(a, p.pre_s[0], p.pre_z[0]), vb = pre(b, p.pre_s[1], p.pre_z[1]);
        detail::broadcast_runs(out.shape, a.shape, b.shape,
                               [&](int64_t o, int64_t ia, int64_t sa, int64_t ib, int64_t sb, int64_t len) {
          for (int64_t i = 0; i < len; ++i) {
            float x = va[static_cast<size_t>(ia + i * sa)] * p.k_scalar;
            emit(o + i, int8::activate(p.mode, x, vb[static_cast<size_t>(ib + i * sb)], p.beta));
          }
        });
        break;
      }
      case Op::ReduceMax:
      case Op::ReduceSum: {
        // Over one axis, in index order: a maximum, or a sum of
        // x * mul_group_k_scalar as average pooling sums its window (a
        // reduction over rows or columns is such a pooling on the chip).
        const QTensor& x = *in.at(0);
        const int64_t r = static_cast<int64_t>(x.shape.size());
        const int64_t a = p.axis < 0 ? p.axis + r : p.axis;
        if (a < 0 || a >= r) bad(l, "axis outside the input");
        int64_t outer = 1, inner = 1, len = x.shape[static_cast<size_t>(a)];
        for (int64_t d = 0; d < a; ++d) outer *= x.shape[static_cast<size_t>(d)];
        for (int64_t d = a + 1; d < r; ++d) inner *= x.shape[static_cast<size_t>(d)];
        std::vector<float> v = pre(x, p.pre_s[0], p.pre_z[0]);
        const bool is_max = l.op == Op::ReduceMax;
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i) {
            float acc = is_max ? -std::numeric_limits<float>::infinity() : 0.0f;
            for (int64_t k = 0; k < len; ++k) {
              size_t e = static_cast<size_t>((o * len + k) * inner + i);
              acc = is_max ? std::max(acc, v[e]) : int8::avg_pool_step(acc, v[e], p.k_scalar);
            }
            emit(o * inner + i, acc);
          }
        break;
      }
      case Op::Relu: case Op::Sigmoid: case Op::HardSigmoid: case Op::HardSwish:
      case Op::Silu: case Op::Gelu: case Op::Tanh: case Op::Clip: case Op::LeakyRelu: case Op::Elu: {
        std::vector<float> v = pre(*in.at(0), p.pre_s[0], p.pre_z[0]);
        for (int64_t i = 0; i < n_out; ++i) {
          float x = v[static_cast<size_t>(i)] * p.k_scalar;
          emit(i, int8::activate(p.mode, x, p.alpha, p.beta));
        }
        break;
      }
      case Op::Slice:
      case Op::Gather: {
        // Output element (i_0, .., i_r-1) is input element (starts + i * steps)
        // per axis (slice) or indices[i_axis] along the axis (gather); the
        // value is copied when the quantizations agree, else requantized as
        // concat does.
        const QTensor& t = *in.at(0);
        const int64_t r = static_cast<int64_t>(out.shape.size());
        if (static_cast<int64_t>(t.shape.size()) != r) bad(l, "the input and output ranks differ");
        const int64_t axis = p.axis < 0 ? p.axis + r : p.axis;
        std::vector<int64_t> in_stride(static_cast<size_t>(r), 1);
        for (int64_t d = r - 2; d >= 0; --d) in_stride[static_cast<size_t>(d)] = in_stride[static_cast<size_t>(d + 1)] * t.shape[static_cast<size_t>(d + 1)];
        auto src_of = [&](int64_t d, int64_t i) -> int64_t {
          if (l.op == Op::Slice) return (*l.starts)[static_cast<size_t>(d)] + i * (*l.steps)[static_cast<size_t>(d)];
          return d == axis ? (*l.indices)[static_cast<size_t>(i)] : i;
        };
        const bool same = t.is_int8() && int_out && !p.in_q.empty() && p.in_q[0] && p.out_q &&
                          int8::requantize_is_identity(p.in_q[0]->scale, p.in_q[0]->zero_point, p.out_q->scale,
                                                       p.out_q->zero_point);
        float s = 1.0f, z = 0.0f, mk = 1.0f, sb = 0.0f;
        if (t.is_int8() && !same) {
          if (p.in_q.empty() || !p.in_q[0]) bad(l, "quant_info lacks the quantization of its int8 input");
          s = int8::param(p.in_q[0]->scale);
          z = int8::param(p.in_q[0]->zero_point * p.in_q[0]->scale);
        }
        if (int_out && !same) {
          if (!p.out_q) bad(l, "quant_info lacks output_scale");
          mk = int8::param(1.0 / p.out_q->scale);
          sb = int8::param(-p.out_q->zero_point);
        }
        std::vector<int64_t> idx(static_cast<size_t>(r), 0);
        for (int64_t e = 0; e < n_out; ++e) {
          int64_t src = 0;
          for (int64_t d = 0; d < r; ++d) src += src_of(d, idx[static_cast<size_t>(d)]) * in_stride[static_cast<size_t>(d)];
          if (same) {
            out.q[e] = t.q[src];
          } else {
            float v = t.is_int8() ? int8::pre_cal(t.q[src], s, z) : t.f[src];
            if (int_out) out.q[e] = int8::post_cal(v, mk, sb, int8::Carry::Round);
            else out.f[e] = as_dtype(out.dtype, v);
          }
          for (int64_t d = r - 1; d >= 0; --d) {
            if (++idx[static_cast<size_t>(d)] < out.shape[static_cast<size_t>(d)]) break;
            idx[static_cast<size_t>(d)] = 0;
          }
        }
        break;
      }
      case Op::Concat: {
        int64_t r = static_cast<int64_t>(out.shape.size());
        int64_t axis = p.axis < 0 ? p.axis + r : p.axis;
        int64_t outer = 1, inner = 1;
        for (int64_t d = 0; d < axis; ++d) outer *= out.shape[d];
        for (int64_t d = axis + 1; d < r; ++d) inner *= out.shape[d];
        int64_t row = out.shape[axis] * inner, off = 0;
        for (size_t i = 0; i < in.size(); ++i) {
          const QTensor& t = *in[i];
          int64_t len = t.shape[axis] * inner;
          bool same = t.is_int8() && int_out && p.in_q[i] && p.out_q &&
                      int8::requantize_is_identity(p.in_q[i]->scale, p.in_q[i]->zero_point, p.out_q->scale,
                                                   p.out_q->zero_point);
          float s = 1.0f, z = 0.0f;
          if (t.is_int8()) {
            if (!p.in_q[i]) bad(l, "quant_info lacks the quantization of int8 input " + std::to_string(i + 1));
            s = int8::param(p.in_q[i]->scale);
            z = int8::param(p.in_q[i]->zero_point * p.in_q[i]->scale);
          }
          float mk = 1.0f, sb = 0.0f;
          if (int_out) {
            if (!p.out_q) bad(l, "quant_info lacks output_scale");
            mk = int8::param(1.0 / p.out_q->scale);
            sb = int8::param(-p.out_q->zero_point);
          }
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t e = 0; e < len; ++e) {
              int64_t src = o * len + e, dst = o * row + off + e;
              if (same) {
                out.q[dst] = t.q[src];
                continue;
              }
              float v = t.is_int8() ? int8::pre_cal(t.q[src], s, z) : t.f[src];
              if (int_out) out.q[dst] = int8::post_cal(v, mk, sb, int8::Carry::Round);
              else out.f[dst] = as_dtype(out.dtype, v);
            }
          off += len;
        }
        break;
      }
      case Op::Reshape: {
        const QTensor& x = *in.at(0);
        if (x.numel() != n_out) bad(l, "reshape changes the element count");
        if (x.dtype != out.dtype) bad(l, "reshape changes the dtype");
        out.q = x.q;
        out.f = x.f;
        break;
      }
      case Op::Transpose:
      case Op::Softmax:
      case Op::LayerNorm: {
        const QTensor& x = *in.at(0);
        Node n;
        n.name = l.name;
        n.outputs = {0};
        Attribute a;
        int opset = 17;
        std::vector<Tensor> r;
        Tensor xf = as_float_tensor(x);
        if (l.op == Op::Transpose) {
          n.op = "Transpose";
          a.kind = Attribute::Kind::Ints;
          a.ints = p.perm;
          n.attrs["perm"] = a;
          run_kernel(n, opset, {&xf}, r);
        } else if (l.op == Op::Softmax) {
          n.op = "Softmax";
          a.kind = Attribute::Kind::Int;
          a.i = p.axis;
          n.attrs["axis"] = a;
          run_kernel(n, opset, {&xf}, r);
        } else {
          n.op = "LayerNormalization";
          a.kind = Attribute::Kind::Int;
          a.i = p.axis;
          n.attrs["axis"] = a;
          Attribute e;
          e.kind = Attribute::Kind::Float;
          e.f = p.eps;
          n.attrs["epsilon"] = e;
          // The kernel gives Y, Mean and InvStdDev; the layer keeps one.
          const size_t which = static_cast<size_t>(p.ln_output);
          n.outputs.assign(which + 1, 0);
          Tensor gm = Tensor::floats({static_cast<int64_t>(p.gamma.size())}, p.gamma);
          Tensor bt = Tensor::floats({static_cast<int64_t>(p.beta_v.size())}, p.beta_v);
          // The FIR's layer_norm normalises over the one axis `axis`: any
          // other than the last is moved last and back (ONNX's kernel
          // normalises from its axis to the end).
          const int64_t rank = xf.rank();
          const int64_t ax = normalize_axis(p.axis, rank, "layer_norm axis");
          if (ax == rank - 1) {
            run_kernel(n, opset, {&xf, &gm, &bt}, r);
            if (which != 0) r[0] = std::move(r[which]);
          } else {
            std::vector<int64_t> to_last, back(static_cast<size_t>(rank));
            for (int64_t d = 0; d < rank; ++d)
              if (d != ax) to_last.push_back(d);
            to_last.push_back(ax);
            for (int64_t d = 0; d < rank; ++d) back[static_cast<size_t>(to_last[static_cast<size_t>(d)])] = d;
            n.attrs["axis"].i = rank - 1;
            Tensor xl = transposed(xf, to_last);
            std::vector<Tensor> rl;
            run_kernel(n, opset, {&xl, &gm, &bt}, rl);
            r.push_back(transposed(rl[which], back));
          }
        }
        if (r[0].numel() != n_out) bad(l, "output_shape does not match the result");
        if (x.is_int8() && int_out) {
          if (l.op != Op::Transpose) bad(l, "int8 is only passed through by reshape and transpose");
          for (int64_t i = 0; i < n_out; ++i) out.q[i] = static_cast<int8_t>(r[0].f[i]);
        } else {
          for (int64_t i = 0; i < n_out; ++i) out.f[i] = as_dtype(out.dtype, r[0].f[i]);
        }
        break;
      }
      case Op::Unknown:
        bad(l, "unknown operation");
    }
    if (observer) observer(l, in, out);
    for (const auto& n : l.next_layer)
      if (fir::is_graph_output_name(n)) results[static_cast<size_t>(std::stoi(n.substr(6)) - 1)] = out;
    outs[k] = std::move(out);
    for (const auto& s : p.srcs)
      if (s.layer >= 0 && --remaining[static_cast<size_t>(s.layer)] == 0) outs[static_cast<size_t>(s.layer)] = QTensor();
  }
  return results;
}

}  // namespace cct::interp
