// Element-wise operators: activations, arithmetic with numpy broadcasting,
// comparisons, Where, Clip, Cast.
#include <algorithm>
#include <cmath>
#include <limits>

#include "interp/ops_common.hpp"
#include "interp/parallel.hpp"

namespace cct::interp::detail {
namespace {

template <class F>
void unary_on(const Tensor& x, std::vector<Tensor>& out, F f);

// Unary float map, parallel over large tensors.
template <class F>
void unary(const Node& n, const KernelInputs& in, std::vector<Tensor>& out, F f) {
  const Tensor& x = need_float(n, in, 0);
  unary_on(x, out, f);
}

template <class F>
void unary_on(const Tensor& x, std::vector<Tensor>& out, F f) {
  Tensor y = Tensor::floats(x.shape);
  y.dtype = x.dtype;
  const float* src = x.f.data();
  float* dst = y.f.data();
  parallel_for(static_cast<int64_t>(x.f.size()), 1 << 15, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) dst[k] = f(src[k]);
  });
  out[0] = std::move(y);
}

#define UNARY(NAME, EXPR)                                                                \
  void NAME(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {      \
    unary(n, in, out, [](float x) -> float { return EXPR; });                            \
  }

UNARY(k_relu, x > 0.0f ? x : 0.0f)
UNARY(k_sigmoid, 1.0f / (1.0f + std::exp(-x)))
UNARY(k_tanh, std::tanh(x))
UNARY(k_erf, std::erf(x))
UNARY(k_exp, std::exp(x))
UNARY(k_log, std::log(x))
UNARY(k_sqrt, std::sqrt(x))
// Neg, Abs and Sign also take integers (shape arithmetic).
template <class FF, class FI>
void unary_any(const Node& n, const KernelInputs& in, std::vector<Tensor>& out, FF ff, FI fi) {
  const Tensor& x = need(n, in, 0);
  if (x.is_float()) {
    unary_on(x, out, ff);
    return;
  }
  Tensor y = x;
  for (auto& v : y.i) v = fi(v);
  out[0] = std::move(y);
}

void k_neg(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  unary_any(n, in, out, [](float x) { return -x; }, [](int64_t x) { return -x; });
}
void k_abs(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  unary_any(n, in, out, [](float x) { return std::fabs(x); }, [](int64_t x) { return x < 0 ? -x : x; });
}
void k_sign(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  unary_any(n, in, out, [](float x) { return static_cast<float>((x > 0.0f) - (x < 0.0f)); },
            [](int64_t x) { return static_cast<int64_t>((x > 0) - (x < 0)); });
}

UNARY(k_reciprocal, 1.0f / x)
UNARY(k_floor, std::floor(x))
UNARY(k_ceil, std::ceil(x))
UNARY(k_round, std::nearbyint(x))  // default rounding mode: half to even, as ONNX requires
UNARY(k_hardswish, x * std::max(0.0f, std::min(1.0f, x / 6.0f + 0.5f)))
UNARY(k_softsign, x / (1.0f + std::fabs(x)))
UNARY(k_sin, std::sin(x))
UNARY(k_cos, std::cos(x))
#undef UNARY

void k_softplus(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  unary(n, in, out, [](float x) -> float { return x > 20.0f ? x : std::log1p(std::exp(x)); });
}

void k_leaky_relu(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  float a = n.get_float("alpha", 0.01f);
  unary(n, in, out, [a](float x) { return x >= 0.0f ? x : a * x; });
}

void k_elu(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  float a = n.get_float("alpha", 1.0f);
  unary(n, in, out, [a](float x) { return x >= 0.0f ? x : a * (std::exp(x) - 1.0f); });
}

void k_selu(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  float a = n.get_float("alpha", 1.67326319217681884765625f);
  float g = n.get_float("gamma", 1.05070102214813232421875f);
  unary(n, in, out, [a, g](float x) { return x > 0.0f ? g * x : g * (a * std::exp(x) - a); });
}

void k_hard_sigmoid(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  float a = n.get_float("alpha", 0.2f), b = n.get_float("beta", 0.5f);
  unary(n, in, out, [a, b](float x) { return std::max(0.0f, std::min(1.0f, a * x + b)); });
}

void k_clip(const Node& n, int opset, const KernelInputs& in, std::vector<Tensor>& out) {
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  if (opset < 11) {
    lo = n.get_float("min", lo);
    hi = n.get_float("max", hi);
  } else {
    if (const Tensor* t = opt(in, 1)) {
      if (t->numel() != 1) fail(n, "min must be a scalar");
      lo = static_cast<float>(t->at_double(0));
    }
    if (const Tensor* t = opt(in, 2)) {
      if (t->numel() != 1) fail(n, "max must be a scalar");
      hi = static_cast<float>(t->at_double(0));
    }
  }
  unary(n, in, out, [lo, hi](float x) { return std::min(hi, std::max(lo, x)); });
}

void k_identity(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) { out[0] = need(n, in, 0); }

void k_dropout(const Node& n, int opset, const KernelInputs& in, std::vector<Tensor>& out) {
  // Inference semantics; training mode is only accepted when it drops nothing.
  if (const Tensor* training = opt(in, 2); training && training->numel() == 1 && training->at_int(0) != 0) {
    const Tensor* ratio = opt(in, 1);
    if (!ratio || ratio->at_double(0) != 0.0) fail(n, "Dropout in training mode is not supported (it is random)");
  }
  out[0] = need(n, in, 0);
  if (out.size() > 1 && n.outputs[1] >= 0) {
    Tensor mask = Tensor::ints(out[0].shape, {}, DType::Bool);
    std::fill(mask.i.begin(), mask.i.end(), 1);
    out[1] = std::move(mask);
  }
}

std::string check_dropout(const Node& n, int opset, const Graph* g) {
  // Training mode with a non-zero ratio is random: only inference is supported.
  int training = n.input(2);
  if (training < 0) return "";
  if (!g || !g->is_constant(training)) return "Dropout with a run-time training_mode input is not supported";
  if (g->constant(training).numel() == 1 && g->constant(training).at_int(0) != 0) {
    int ratio = n.input(1);
    if (ratio < 0 || !g->is_constant(ratio) || g->constant(ratio).at_double(0) != 0.0)
      return "Dropout in training mode is not supported (it is random)";
  }
  return "";
}

// Binary arithmetic with broadcasting. Float when either input is floating;
// int64 otherwise (shape arithmetic).
enum class Arith { Add, Sub, Mul, Div, Pow, Max, Min, Mod };

float apply_f(Arith op, float a, float b) {
  switch (op) {
    case Arith::Add: return a + b;
    case Arith::Sub: return a - b;
    case Arith::Mul: return a * b;
    case Arith::Div: return a / b;
    case Arith::Pow: return std::pow(a, b);
    case Arith::Max: return std::isnan(a) || std::isnan(b) ? std::numeric_limits<float>::quiet_NaN() : std::max(a, b);
    case Arith::Min: return std::isnan(a) || std::isnan(b) ? std::numeric_limits<float>::quiet_NaN() : std::min(a, b);
    case Arith::Mod: return std::fmod(a, b);
  }
  return 0.0f;
}

int64_t ipow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : 0;
  int64_t r = 1;
  while (b > 0) {
    if (b & 1) r *= a;
    a *= a;
    b >>= 1;
  }
  return r;
}

int64_t apply_i(Arith op, int64_t a, int64_t b, const Node& n) {
  switch (op) {
    case Arith::Add: return a + b;
    case Arith::Sub: return a - b;
    case Arith::Mul: return a * b;
    case Arith::Div:
      if (b == 0) fail(n, "integer division by zero");
      return a / b;
    case Arith::Pow: return ipow(a, b);
    case Arith::Max: return std::max(a, b);
    case Arith::Min: return std::min(a, b);
    case Arith::Mod: {
      if (b == 0) fail(n, "integer modulo by zero");
      int64_t r = a % b;  // Python-style sign (follows the divisor) unless fmod=1
      if (n.get_int("fmod", 0) == 0 && r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
  }
  return 0;
}

Tensor binary(const Node& n, Arith op, const Tensor& a, const Tensor& b) {
  Shape shape = broadcast_shape(a.shape, b.shape, "node '" + n.name + "' (" + n.op + ")");
  if (a.is_float() || b.is_float() || op == Arith::Pow) {
    bool int_result = op == Arith::Pow && !a.is_float();  // Pow(int, float) keeps the base's type
    std::vector<float> fa, fb;
    const float* pa;
    const float* pb;
    if (a.is_float()) pa = a.f.data();
    else { fa.assign(a.i.begin(), a.i.end()); pa = fa.data(); }
    if (b.is_float()) pb = b.f.data();
    else { fb.assign(b.i.begin(), b.i.end()); pb = fb.data(); }
    if (int_result) {
      Tensor y = Tensor::ints(shape, {}, a.dtype);
      int64_t* py = y.i.data();
      broadcast_runs(shape, a.shape, b.shape, [&](int64_t o, int64_t ia, int64_t sa, int64_t ib, int64_t sb, int64_t len) {
        for (int64_t k = 0; k < len; ++k)
          py[o + k] = static_cast<int64_t>(std::pow(static_cast<double>(pa[ia + k * sa]), static_cast<double>(pb[ib + k * sb])));
      });
      return y;
    }
    Tensor y = Tensor::floats(shape);
    y.dtype = a.is_float() ? a.dtype : b.dtype;
    float* py = y.f.data();
    if (a.shape == b.shape) {
      parallel_for(static_cast<int64_t>(y.f.size()), 1 << 15, [&](int64_t s, int64_t e) {
        for (int64_t k = s; k < e; ++k) py[k] = apply_f(op, pa[k], pb[k]);
      });
      return y;
    }
    broadcast_runs(shape, a.shape, b.shape, [&](int64_t o, int64_t ia, int64_t sa, int64_t ib, int64_t sb, int64_t len) {
      for (int64_t k = 0; k < len; ++k) py[o + k] = apply_f(op, pa[ia + k * sa], pb[ib + k * sb]);
    });
    return y;
  }
  Tensor y = Tensor::ints(shape, {}, a.dtype);
  int64_t* py = y.i.data();
  broadcast_runs(shape, a.shape, b.shape, [&](int64_t o, int64_t ia, int64_t sa, int64_t ib, int64_t sb, int64_t len) {
    for (int64_t k = 0; k < len; ++k) py[o + k] = apply_i(op, a.i[ia + k * sa], b.i[ib + k * sb], n);
  });
  return y;
}

template <Arith OP>
void k_binary(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  out[0] = binary(n, OP, need(n, in, 0), need(n, in, 1));
}

// Max, Min, Sum, Mean: variadic with broadcasting.
template <Arith OP>
void k_variadic(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  Tensor acc = need(n, in, 0);
  for (size_t k = 1; k < in.size(); ++k) acc = binary(n, OP, acc, need(n, in, k));
  out[0] = std::move(acc);
}

void k_mean(const Node& n, int opset, const KernelInputs& in, std::vector<Tensor>& out) {
  k_variadic<Arith::Add>(n, opset, in, out);
  float inv = static_cast<float>(in.size());
  for (float& v : out[0].f) v /= inv;
}

void k_prelu(const Node& n, int opset, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need_float(n, in, 0);
  Tensor slope = need_float(n, in, 1);
  // Before opset 7 a 1-D slope holds one value per channel (axis 1).
  if (opset < 7 && slope.rank() == 1 && x.rank() >= 2 && slope.numel() == x.shape[1] && slope.numel() > 1) {
    Shape s(static_cast<size_t>(x.rank() - 1), 1);
    s[0] = slope.numel();
    slope.shape = s;
  }
  Shape shape = broadcast_shape(x.shape, slope.shape, "node '" + n.name + "' (PRelu)");
  Tensor y = Tensor::floats(shape);
  broadcast_runs(shape, x.shape, slope.shape, [&](int64_t o, int64_t ia, int64_t sa, int64_t ib, int64_t sb, int64_t len) {
    for (int64_t k = 0; k < len; ++k) {
      float v = x.f[ia + k * sa];
      y.f[o + k] = v < 0.0f ? v * slope.f[ib + k * sb] : v;
    }
  });
  out[0] = std::move(y);
}

enum class Cmp { Equal, Greater, Less, GreaterEq, LessEq };

template <Cmp OP>
void k_compare(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& a = need(n, in, 0);
  const Tensor& b = need(n, in, 1);
  Shape shape = broadcast_shape(a.shape, b.shape, "node '" + n.name + "' (" + n.op + ")");
  Tensor y = Tensor::ints(shape, {}, DType::Bool);
  broadcast_runs(shape, a.shape, b.shape, [&](int64_t o, int64_t ia, int64_t sa, int64_t ib, int64_t sb, int64_t len) {
    for (int64_t k = 0; k < len; ++k) {
      double x = a.at_double(ia + k * sa), z = b.at_double(ib + k * sb);
      bool r = false;
      switch (OP) {
        case Cmp::Equal: r = x == z; break;
        case Cmp::Greater: r = x > z; break;
        case Cmp::Less: r = x < z; break;
        case Cmp::GreaterEq: r = x >= z; break;
        case Cmp::LessEq: r = x <= z; break;
      }
      y.i[o + k] = r;
    }
  });
  out[0] = std::move(y);
}

void k_not(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& a = need(n, in, 0);
  Tensor y = Tensor::ints(a.shape, {}, DType::Bool);
  for (size_t k = 0; k < y.i.size(); ++k) y.i[k] = a.i[k] == 0;
  out[0] = std::move(y);
}

void k_where(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& c = need(n, in, 0);
  const Tensor& x = need(n, in, 1);
  const Tensor& z = need(n, in, 2);
  std::string what = "node '" + n.name + "' (Where)";
  Shape shape = broadcast_shape(broadcast_shape(c.shape, x.shape, what), z.shape, what);
  std::vector<int64_t> sc = broadcast_strides(shape, c.shape), sx = broadcast_strides(shape, x.shape),
                       sz = broadcast_strides(shape, z.shape);
  bool fl = x.is_float();
  if (fl != z.is_float()) fail(n, "X and Y must have the same type");
  Tensor y = fl ? Tensor::floats(shape) : Tensor::ints(shape, {}, x.dtype);
  int64_t total = shape_numel(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t o = 0; o < total; ++o) {
    int64_t ic = 0, ix = 0, iz = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      ic += idx[d] * sc[d];
      ix += idx[d] * sx[d];
      iz += idx[d] * sz[d];
    }
    bool cond = c.at_int(ic) != 0;
    if (fl) y.f[o] = cond ? x.f[ix] : z.f[iz];
    else y.i[o] = cond ? x.i[ix] : z.i[iz];
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  out[0] = std::move(y);
}

// ONNX TensorProto.DataType codes.
DType dtype_from_onnx(int64_t code) {
  switch (code) {
    case 1: return DType::F32;
    case 2: return DType::U8;
    case 3: return DType::I8;
    case 4: return DType::U16;
    case 5: return DType::I16;
    case 6: return DType::I32;
    case 7: return DType::I64;
    case 9: return DType::Bool;
    case 10: return DType::F16;
    case 11: return DType::F64;
    case 12: return DType::U32;
    case 13: return DType::U64;
    case 16: return DType::BF16;
    default: return DType::Unknown;
  }
}

std::string check_cast(const Node& n, int, const Graph*) {
  DType t = dtype_from_onnx(n.get_int("to", 0));
  if (t == DType::Unknown || t == DType::BF16) return "Cast to type code " + std::to_string(n.get_int("to", 0)) + " is not supported";
  return "";
}

int64_t wrap_int(int64_t v, DType t) {
  switch (t) {
    case DType::I8: return static_cast<int8_t>(v);
    case DType::U8: return static_cast<uint8_t>(v);
    case DType::I16: return static_cast<int16_t>(v);
    case DType::U16: return static_cast<uint16_t>(v);
    case DType::I32: return static_cast<int32_t>(v);
    case DType::U32: return static_cast<uint32_t>(v);
    case DType::Bool: return v != 0;
    default: return v;
  }
}

void k_cast(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need(n, in, 0);
  DType to = dtype_from_onnx(n.get_int("to", 0));
  if (to == DType::Unknown) fail(n, "unsupported target type");
  if (is_floating(to)) {
    Tensor y = Tensor::floats(x.shape);
    y.dtype = to;
    for (int64_t k = 0; k < x.numel(); ++k) {
      float v = static_cast<float>(x.at_double(k));
      y.f[k] = to == DType::F16 ? round_to_half(v) : v;
    }
    out[0] = std::move(y);
    return;
  }
  Tensor y = Tensor::ints(x.shape, {}, to);
  for (int64_t k = 0; k < x.numel(); ++k) {
    if (x.is_float()) {
      float v = x.f[k];
      if (to == DType::Bool) y.i[k] = v != 0.0f;
      else if (!std::isfinite(v)) y.i[k] = 0;
      else y.i[k] = wrap_int(static_cast<int64_t>(std::trunc(static_cast<double>(v))), to);
    } else {
      y.i[k] = wrap_int(x.i[k], to);
    }
  }
  out[0] = std::move(y);
}

}  // namespace

void register_elementwise(std::vector<KernelEntry>& t) {
  t.push_back({"Relu", k_relu, nullptr});
  t.push_back({"Sigmoid", k_sigmoid, nullptr});
  t.push_back({"Tanh", k_tanh, nullptr});
  t.push_back({"Erf", k_erf, nullptr});
  t.push_back({"Exp", k_exp, nullptr});
  t.push_back({"Log", k_log, nullptr});
  t.push_back({"Sqrt", k_sqrt, nullptr});
  t.push_back({"Neg", k_neg, nullptr});
  t.push_back({"Abs", k_abs, nullptr});
  t.push_back({"Reciprocal", k_reciprocal, nullptr});
  t.push_back({"Floor", k_floor, nullptr});
  t.push_back({"Ceil", k_ceil, nullptr});
  t.push_back({"Round", k_round, nullptr});
  t.push_back({"HardSwish", k_hardswish, nullptr});
  t.push_back({"HardSigmoid", k_hard_sigmoid, nullptr});
  t.push_back({"Softsign", k_softsign, nullptr});
  t.push_back({"Softplus", k_softplus, nullptr});
  t.push_back({"Sin", k_sin, nullptr});
  t.push_back({"Cos", k_cos, nullptr});
  t.push_back({"Sign", k_sign, nullptr});
  t.push_back({"LeakyRelu", k_leaky_relu, nullptr});
  t.push_back({"Elu", k_elu, nullptr});
  t.push_back({"Selu", k_selu, nullptr});
  t.push_back({"Clip", k_clip, nullptr});
  t.push_back({"Identity", k_identity, nullptr});
  t.push_back({"Dropout", k_dropout, check_dropout});
  t.push_back({"Add", k_binary<Arith::Add>, nullptr});
  t.push_back({"Sub", k_binary<Arith::Sub>, nullptr});
  t.push_back({"Mul", k_binary<Arith::Mul>, nullptr});
  t.push_back({"Div", k_binary<Arith::Div>, nullptr});
  t.push_back({"Pow", k_binary<Arith::Pow>, nullptr});
  t.push_back({"Mod", k_binary<Arith::Mod>, nullptr});
  t.push_back({"Max", k_variadic<Arith::Max>, nullptr});
  t.push_back({"Min", k_variadic<Arith::Min>, nullptr});
  t.push_back({"Sum", k_variadic<Arith::Add>, nullptr});
  t.push_back({"Mean", k_mean, nullptr});
  t.push_back({"PRelu", k_prelu, nullptr});
  t.push_back({"Equal", k_compare<Cmp::Equal>, nullptr});
  t.push_back({"Greater", k_compare<Cmp::Greater>, nullptr});
  t.push_back({"Less", k_compare<Cmp::Less>, nullptr});
  t.push_back({"GreaterOrEqual", k_compare<Cmp::GreaterEq>, nullptr});
  t.push_back({"LessOrEqual", k_compare<Cmp::LessEq>, nullptr});
  t.push_back({"Not", k_not, nullptr});
  t.push_back({"Where", k_where, nullptr});
  t.push_back({"Cast", k_cast, check_cast});
}

}  // namespace cct::interp::detail
