// The INT8 arithmetic of the accelerator, as the Frontend IR describes it.
//
// This header is the single definition of requantisation, rounding,
// saturation and activation functions. The quantized FIR interpreter
// (interp/fir_exec.hpp), onnx2fir's golden activations and the functional
// simulator all call these functions, so they agree bit for bit.
//
// Conventions (see formats/Frontend_IR_Format.md):
//   * An int8 tensor q stands for real = scale * (q + zero_point)
//     (quant_info input_scaleN / input_zero_pointN; zero_point is integral).
//   * pre_cal turns an int8 input into fp32:  x = q * requan_scale + requan_zp
//     (requan_scale = scale, requan_zp = zero_point * scale).
//   * post_cal turns an fp32 result into the output: y = x * mul_k + sum_b,
//     then, when carry_sel is given, carry(y) saturated to [-128, 127];
//     otherwise y is the output, rounded to float16.
//     (mul_k = 1 / output scale, sum_b = -output zero point; the same numbers
//     as quant_info output_scale / output_zero_point of PE layers.)
//   * The PE array accumulates sum((q + zero_point) * k) exactly in int32; the
//     vector processor converts it to fp32, multiplies by
//     input_scale * weight_scale[c] and adds the fp32 bias. (A bias in
//     accumulator units would overflow int32 whenever the input and weight
//     scales are tiny, as in networks with vanishing activations.)
//   * All vector-processor arithmetic is IEEE fp32, one rounding per
//     operation, in the order written here (no fused multiply-add: the build
//     has -ffp-contract=off). FIR parameters, stored as doubles, are first
//     rounded to fp32. exp, erf and tanh are det_math's (within 0.5 + 3e-7
//     ulp; libm's differ between machines in the last bit).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "interp/det_math.hpp"

namespace cct::int8 {

// carry_sel / round_type.
enum class Carry : uint8_t {
  Round,  // "round": to nearest, ties away from zero
  Floor,  // "floor"
  Ceil,   // "ceil"
  Trunc,  // "trunc": toward zero
};

// Parses a carry_sel / round_type name; throws std::invalid_argument otherwise.
inline Carry parse_carry(std::string_view s) {
  if (s == "round") return Carry::Round;
  if (s == "floor") return Carry::Floor;
  if (s == "ceil") return Carry::Ceil;
  if (s == "trunc") return Carry::Trunc;
  throw std::invalid_argument("unknown rounding '" + std::string(s) + "' (round, floor, ceil, trunc)");
}

inline float carry(float v, Carry c) {
  switch (c) {
    case Carry::Round: return std::round(v);
    case Carry::Floor: return std::floor(v);
    case Carry::Ceil: return std::ceil(v);
    case Carry::Trunc: return std::trunc(v);
  }
  return v;
}

// Clamps an already rounded value to int8; NaN becomes 0.
inline int8_t saturate(float v) {
  if (!(v == v)) return 0;
  if (v <= -128.0f) return -128;
  if (v >= 127.0f) return 127;
  return static_cast<int8_t>(v);
}

// Rounds an fp32 value to the nearest float16 value (ties to even); values
// beyond the float16 range become +-infinity.
float to_float16(float v);

// A FIR parameter (a double in the file) as the hardware holds it.
inline float param(double v) { return static_cast<float>(v); }

// pre_cal of one int8 value.
inline float pre_cal(int32_t q, float requan_scale, float requan_zp) {
  float x = static_cast<float>(q) * requan_scale;
  return x + requan_zp;
}

// pre_cal of a floating-point value (float16 inputs held in fp32).
inline float pre_cal_float(float x, float requan_scale, float requan_zp) {
  float y = x * requan_scale;
  return y + requan_zp;
}

// post_cal to int8 (carry_sel given).
inline int8_t post_cal(float x, float mul_k, float sum_b, Carry c) {
  float y = x * mul_k;
  y = y + sum_b;
  return saturate(carry(y, c));
}

// post_cal without carry_sel: the output stays floating point, rounded to
// float16 unless the FIR gives the output as float32.
inline float post_cal_float(float x, float mul_k, float sum_b, bool half = true) {
  float y = x * mul_k;
  y = y + sum_b;
  return half ? to_float16(y) : y;
}

// Whether requantizing every int8 value from the input quantization
// (real = scale * (q + zero_point)) to the output's (TensorQuant: scale and
// zero point, as fir_exec's output_quant gives them) with pre_cal and
// post_cal (rounding) gives the value back: then a data movement layer
// (concat, slice, gather) only copies. Decided on all 256 values, so the
// copy is bit-identical to the requantization by construction (scales that
// differ in the last bit, as a reciprocal written to a file may, still copy).
inline bool requantize_is_identity(double in_scale, double in_zero_point, double out_scale, double out_zero_point) {
  if (out_scale == 0.0) return false;
  const float s = param(in_scale), z = param(in_zero_point * in_scale);
  const float mk = param(1.0 / out_scale), sb = param(-out_zero_point);
  for (int32_t q = -128; q <= 127; ++q)
    if (post_cal(pre_cal(q, s, z), mk, sb, Carry::Round) != q) return false;
  return true;
}

// PE epilogue of conv2d / dense / matmul: the exact int32 accumulator to
// fp32, times the channel's scale (input_scale * weight_scale[c], or
// input_scale1 * input_scale2 for matmul), plus the fp32 bias.
inline float pe_to_real(int32_t acc, float channel_scale, float bias) {
  float x = static_cast<float>(acc) * channel_scale;
  return x + bias;
}

// The channel scale pe_to_real multiplies by: input_scale * weight_scale[c]
// formed in double (the FIR's precision), then held as fp32.
inline float pe_channel_scale(double input_scale, double weight_scale) { return param(input_scale * weight_scale); }

// One step of average pooling (fp32_mul_group, then acc_tree_group): the
// window element times the scalar, added to the running sum. Windows are
// summed row by row, left to right.
inline float avg_pool_step(float acc, float x, float k) {
  float t = x * k;
  return acc + t;
}

// The multiplier of an average whose divisor is the window's elements inside
// the input (count_include_pad 0, or ceil_mode windows past the input): the
// fp32 reciprocal of that count, used as avg_pool_step's k.
inline float inside_divisor(int64_t count) { return 1.0f / static_cast<float>(count); }

// The int32 range the PE array accumulates in; products of an int8 weight
// and an input with its zero point added (|q + zp| <= 255) keep 2^24 / 32385
// = 518 terms exact in fp32, which is why the interpreter sums in chunks.
constexpr int kExactFloatTerms = 512;

// ---- activations --------------------------------------------------------

// activation_type of conv2d/dense, applied to the real value before post_cal.
enum class Act : uint8_t { None, Relu, Relu6, Clip, LeakyRelu };
struct Activation {
  Act kind = Act::None;
  float lo = 0.0f, hi = 0.0f;  // Clip
  float alpha = 0.0f;          // LeakyRelu
};

inline float activate(const Activation& a, float x) {
  switch (a.kind) {
    case Act::None: return x;
    case Act::Relu: return x > 0.0f ? x : 0.0f;
    case Act::Relu6: return std::min(6.0f, std::max(0.0f, x));
    case Act::Clip: return std::min(a.hi, std::max(a.lo, x));
    case Act::LeakyRelu: return x >= 0.0f ? x : x * a.alpha;
  }
  return x;
}

// act_mode of fp32_mul_group (vector-processor activation layers).
// Clip, LeakyRelu and Elu (activation layers clip, leaky_relu, elu, and
// prelu with a per-channel alpha) take their parameters in alpha/beta.
enum class ActMode : uint8_t { Others, Relu, Sigmoid, HardSigmoid, HardSwish, Silu, Gelu, Tanh, Clip, LeakyRelu, Elu };

// Parses an act_mode name; throws std::invalid_argument otherwise.
ActMode parse_act_mode(std::string_view s);

// alpha/beta are HardSigmoid's slope and offset (1/6 and 1/2 for hard_swish),
// Clip's lower and upper bound, LeakyRelu's and Elu's alpha. exp, erf and
// tanh are det_math's (the same bits on every machine, unlike libm's); the
// rest is fp32 arithmetic as written.
inline float activate(ActMode m, float x, float alpha = 1.0f / 6.0f, float beta = 0.5f) {
  switch (m) {
    case ActMode::Others: return x;
    case ActMode::Relu: return x > 0.0f ? x : 0.0f;
    case ActMode::Sigmoid: return 1.0f / (1.0f + det::exp(-x));
    case ActMode::HardSigmoid: return std::min(1.0f, std::max(0.0f, x * alpha + beta));
    case ActMode::HardSwish: return x * std::min(1.0f, std::max(0.0f, x * (1.0f / 6.0f) + 0.5f));
    case ActMode::Silu: return x / (1.0f + det::exp(-x));
    case ActMode::Gelu: return 0.5f * x * (1.0f + det::erf(x * 0.70710678118654752f));
    case ActMode::Tanh: return det::tanh(x);
    case ActMode::Clip: return std::min(beta, std::max(alpha, x));
    case ActMode::LeakyRelu: return x >= 0.0f ? x : x * alpha;
    case ActMode::Elu: return x >= 0.0f ? x : alpha * det::expm1(x);
  }
  return x;
}


// ---- resampling (resize) ----------------------------------------------------

// How an output index finds its source (the VP's resize, vp_cfg_rs RSMD):
// linear interpolation between two neighbours, or one neighbour chosen by
// rounding the source coordinate (ONNX's nearest_mode); or one of the
// padding modes, which place the input on the output grid with integer
// parameters (see resize_tap): zero insertion (a transposed convolution's
// stride holes and padding), reflect and edge padding (ONNX Pad).
enum class ResizeMode : uint8_t {
  Linear = 0,
  NearestRoundPreferFloor = 1,
  NearestRoundPreferCeil = 2,
  NearestFloor = 3,
  NearestCeil = 4,
  Zeros = 5,
  Reflect = 6,
  Edge = 7,
};
inline constexpr int kResizeModeCount = 8;

// The padding modes: integer step (stride) and offset (the output index of
// input index 0), no interpolation.
inline bool resize_pads(ResizeMode m) { return m == ResizeMode::Zeros || m == ResizeMode::Reflect || m == ResizeMode::Edge; }

// The source of output index o along one axis: elements i0 and i1 of the
// input (clamped to [0, in - 1], so the border repeats) with weights w0, w1;
// `zero` when the output there is zero whatever the input (a hole of zero
// insertion; i0 and i1 still name a pixel of the input, for the spans).
struct ResizeTap {
  int64_t i0 = 0, i1 = 0;
  float w0 = 1.0f, w1 = 0.0f;
  bool zero = false;
};

// Index i reflected into [0, in - 1] without repeating the border (ONNX's
// reflect: -1 -> 1, in -> in - 2), as often as it takes (period 2(in - 1)).
inline int64_t reflect_index(int64_t i, int64_t in) {
  if (in <= 1) return 0;
  const int64_t period = 2 * (in - 1);
  int64_t r = i % period;
  if (r < 0) r += period;
  return r < in ? r : period - r;
}

// Floor division (b > 0).
inline int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The affine modes: the source coordinate is o * step + offset in fp32
// (step and offset are the layer's affine coordinate map, held as fp32: see
// fir/resize.hpp). The padding modes take step as the integer stride s >= 1
// and offset as the integer p, the output index of input index 0; with
// r = o - p, output o reads
//   Zeros    input r / s when s divides r and 0 <= r / s < in, else zero,
//   Reflect  input reflect_index(r, in)   (s is 1),
//   Edge     input r clamped to [0, in - 1] (s is 1).
inline ResizeTap resize_tap(ResizeMode m, int64_t o, float step, float offset, int64_t in) {
  ResizeTap t;
  if (resize_pads(m)) {
    const int64_t s = std::max<int64_t>(1, static_cast<int64_t>(step)), r = o - static_cast<int64_t>(offset);
    int64_t i = m == ResizeMode::Reflect ? reflect_index(r, in) : m == ResizeMode::Edge ? r : floor_div(r, s);
    if (m == ResizeMode::Zeros) t.zero = i * s != r || i < 0 || i >= in;
    t.i0 = t.i1 = std::min(std::max<int64_t>(i, 0), in - 1);
    return t;
  }
  float y = static_cast<float>(o) * step;
  y = y + offset;
  auto clampi = [in](float v) { return static_cast<int64_t>(std::min(std::max(v, 0.0f), static_cast<float>(in - 1))); };
  if (m == ResizeMode::Linear) {
    float f = std::floor(y);
    t.i0 = clampi(f);
    t.i1 = clampi(f + 1.0f);
    t.w1 = y - f;
    t.w0 = 1.0f - t.w1;
    return t;
  }
  float r = m == ResizeMode::NearestRoundPreferCeil ? std::floor(y + 0.5f)
            : m == ResizeMode::NearestFloor         ? std::floor(y)
            : m == ResizeMode::NearestCeil          ? std::ceil(y)
                                                    : std::ceil(y - 0.5f);
  t.i0 = t.i1 = clampi(r);
  return t;
}

// The input rows (or columns) that outputs o0..o1 read, lowest and highest:
// the first output's first tap and the last output's second for the modes
// whose taps grow with o; reflect folds back, so there all of them count.
inline std::pair<int64_t, int64_t> resize_span(ResizeMode m, int64_t o0, int64_t o1, float step, float offset, int64_t in) {
  if (m != ResizeMode::Reflect) return {resize_tap(m, o0, step, offset, in).i0, resize_tap(m, o1, step, offset, in).i1};
  if (o1 - o0 + 1 >= 2 * in) return {0, in - 1};
  int64_t lo = in - 1, hi = 0;
  for (int64_t o = o0; o <= o1; ++o) {
    int64_t i = resize_tap(m, o, step, offset, in).i0;
    lo = std::min(lo, i), hi = std::max(hi, i);
  }
  return {lo, hi};
}

// Bilinear blend of the four neighbours v[row][col] (rows from ty, columns
// from tx): along the row first, then between the rows.
inline float resize_blend(float v00, float v01, float v10, float v11, const ResizeTap& ty, const ResizeTap& tx) {
  float a = v00 * tx.w0;
  float b = v01 * tx.w1;
  float top = a + b;
  float c = v10 * tx.w0;
  float d = v11 * tx.w1;
  float bot = c + d;
  float e = top * ty.w0;
  float f = bot * ty.w1;
  return e + f;
}

// One output element of a resize: `at(row, col)` reads the dequantized
// input; zero at the holes of zero insertion, the blend for linear, the
// one tap otherwise.
template <class At>
float resize_sample(ResizeMode m, const At& at, const ResizeTap& ty, const ResizeTap& tx) {
  if (ty.zero || tx.zero) return 0.0f;
  if (m == ResizeMode::Linear)
    return resize_blend(at(ty.i0, tx.i0), at(ty.i0, tx.i1), at(ty.i1, tx.i0), at(ty.i1, tx.i1), ty, tx);
  return at(ty.i0, tx.i0);
}

// ---- choosing quantization parameters -------------------------------------

// Asymmetric per-tensor parameters for values in [lo, hi] (widened to hold
// 0): 256 levels, real = scale * (q + zero_point), q in [-128, 127].
struct TensorQuant {
  double scale = 1.0;
  double zero_point = 0.0;  // integral
};
TensorQuant choose_tensor_quant(double lo, double hi);

// Symmetric per-channel weight scale: max |w| / 127 (1 for an all-zero channel).
double weight_scale(const float* w, int64_t n);
// round(w / scale) clamped to [-127, 127].
inline int8_t quantize_weight(float w, double scale) {
  double q = std::round(static_cast<double>(w) / scale);
  return static_cast<int8_t>(std::clamp(q, -127.0, 127.0));
}

}  // namespace cct::int8
