#include "interp/int8_ops.hpp"

#include <limits>

#include "support/npy.hpp"

namespace cct::int8 {

float to_float16(float v) { return half_to_float(float_to_half(v)); }

ActMode parse_act_mode(std::string_view s) {
  if (s == "others") return ActMode::Others;
  if (s == "relu") return ActMode::Relu;
  if (s == "sigmoid") return ActMode::Sigmoid;
  if (s == "hard_sigmoid") return ActMode::HardSigmoid;
  if (s == "hard_swish") return ActMode::HardSwish;
  if (s == "silu") return ActMode::Silu;
  if (s == "gelu") return ActMode::Gelu;
  if (s == "tanh") return ActMode::Tanh;
  if (s == "clip") return ActMode::Clip;
  if (s == "leaky_relu") return ActMode::LeakyRelu;
  if (s == "elu") return ActMode::Elu;
  throw std::invalid_argument("unknown act_mode '" + std::string(s) + "'");
}

TensorQuant choose_tensor_quant(double lo, double hi) {
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  if (!(hi - lo > 1e-12)) hi = lo + 1e-12;  // constant zero tensor
  TensorQuant q;
  q.scale = (hi - lo) / 255.0;
  // q = round(x / scale) + zq maps lo to -128: zq = -128 - round(lo / scale).
  double zq = -128.0 - std::round(lo / q.scale);
  zq = std::clamp(zq, -128.0, 127.0);
  q.zero_point = -zq;
  return q;
}

double weight_scale(const float* w, int64_t n) {
  double m = 0.0;
  for (int64_t k = 0; k < n; ++k) m = std::max(m, std::fabs(static_cast<double>(w[k])));
  return m > 0.0 ? m / 127.0 : 1.0;
}

}  // namespace cct::int8
