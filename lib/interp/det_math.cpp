// See det_math.hpp. The build compiles everything with -ffp-contract=off
// (top-level CMakeLists.txt): every a * b + c below is two roundings, as
// written, whatever the target's FMA.
#include "interp/det_math.hpp"

#include <bit>
#include <cstdint>
#include <limits>

static_assert(std::numeric_limits<double>::is_iec559 && std::numeric_limits<float>::is_iec559);

namespace cct::det {

namespace {

constexpr double kInvLn2 = 1.4426950408889634;
// ln 2 = kLn2Hi + kLn2Lo; kLn2Hi has 29 significant bits, so k * kLn2Hi is
// exact for every k used here, and so is x - k * kLn2Hi (Sterbenz).
constexpr double kLn2Hi = 0x1.62e42ffp-1;
constexpr double kLn2Lo = -0x1.718432a1b0e26p-35;
constexpr double kTwoOverSqrtPi = 1.1283791670955126;
// The midpoint between FLT_MAX and 2^128: doubles from it up round to +inf.
constexpr double kFloatOverflow = 0x1.ffffffp127;
constexpr float kInf = std::numeric_limits<float>::infinity();

// 2^k for k in [-1022, 1023], built in the exponent field.
double pow2(int k) { return std::bit_cast<double>(static_cast<uint64_t>(k + 1023) << 52); }

// Rounds to the nearest float; the explicit overflow test keeps the
// conversion within float's range, where C++ defines it.
float to_float(double y) {
  if (y >= kFloatOverflow) return kInf;
  if (y <= -kFloatOverflow) return -kInf;
  return static_cast<float>(y);
}

// e^r - 1 for |r| <= 0.35: Taylor series to r^13 / 13! (the next term is
// below 1.2e-17 relative), in Horner form.
double expm1_reduced(double r) {
  constexpr double c[] = {1.0,
                          1.0 / 2,
                          1.0 / 6,
                          1.0 / 24,
                          1.0 / 120,
                          1.0 / 720,
                          1.0 / 5040,
                          1.0 / 40320,
                          1.0 / 362880,
                          1.0 / 3628800,
                          1.0 / 39916800,
                          1.0 / 479001600,
                          1.0 / 6227020800.0};
  double p = c[12];
  for (int n = 11; n >= 0; --n) {
    p = p * r;
    p = p + c[n];
  }
  return p * r;
}

// x = k ln 2 + r with k the nearest integer to x / ln 2, |r| <= 0.35.
// For |x| <= 200.
int reduce(double x, double& r) {
  double t = x * kInvLn2;
  int k = static_cast<int>(t < 0.0 ? t - 0.5 : t + 0.5);  // conversion truncates
  double hi = x - k * kLn2Hi;
  r = hi - k * kLn2Lo;
  return k;
}

// e^x for |x| <= 200, relative error about 2e-16.
double exp_core(double x) {
  double r;
  int k = reduce(x, r);
  return pow2(k) * (1.0 + expm1_reduced(r));
}

// e^x - 1 for |x| <= 200, relative error about 4e-16 (no cancellation near 0).
double expm1_core(double x) {
  double r;
  int k = reduce(x, r);
  if (k == 0) return expm1_reduced(r);
  double s = pow2(k);
  return (s - 1.0) + s * expm1_reduced(r);  // s - 1 is exact for k >= -53
}

// 1 / (2n + 1) for the erf series.
struct OddReciprocals {
  double v[128];
  constexpr OddReciprocals() : v() {
    for (int n = 0; n < 128; ++n) v[n] = 1.0 / (2 * n + 1);
  }
};
constexpr OddReciprocals kOdd;

}  // namespace

float exp(float x) {
  if (x != x) return x + x;  // NaN
  // e^89 > 2^128 and e^-104 < 2^-150 (half the smallest subnormal): the
  // results round to +inf and 0 (also for +-inf).
  if (x > 89.0f) return kInf;
  if (x < -104.0f) return 0.0f;
  return to_float(exp_core(x));
}

float expm1(float x) {
  if (x != x) return x + x;
  if (x > 89.0f) return kInf;
  // e^-20 - 1 is within 2^-28 of -1: it rounds to -1.
  if (x < -20.0f) return -1.0f;
  if (x == 0.0f) return x;  // +-0 (the reduction would give +0 for -0)
  return to_float(expm1_core(x));
}

float tanh(float x) {
  if (x != x) return x + x;
  double a = x < 0.0f ? -static_cast<double>(x) : static_cast<double>(x);
  if (a == 0.0) return x;  // +-0
  double t;
  // 1 - tanh(a) = 2 / (e^2a + 1) < 2^-27 for a >= 10: rounds to 1.
  if (a >= 10.0) t = 1.0;
  else {
    double e = expm1_core(2.0 * a);
    t = e / (e + 2.0);
  }
  return to_float(x < 0.0f ? -t : t);
}

float erf(float x) {
  if (x != x) return x + x;
  double a = x < 0.0f ? -static_cast<double>(x) : static_cast<double>(x);
  if (a == 0.0) return x;  // +-0
  double y;
  // 1 - erf(4) = 1.5e-8 < 2^-25: rounds to 1 (and so beyond).
  if (a >= 4.0) y = 1.0;
  else {
    // erf(a) = 2/sqrt(pi) e^-a^2 sum_n a (2a^2)^n / (2n+1)!!: positive terms,
    // so no cancellation; a^2 is exact (a has 24 bits). Stops when a term no
    // longer moves the sum (at most about 70 terms for a < 4).
    double z = 2.0 * a * a;
    double term = a, sum = a;
    for (int n = 1; n < 128; ++n) {
      term = term * z;
      term = term * kOdd.v[n];
      double next = sum + term;
      if (next == sum) break;
      sum = next;
    }
    y = kTwoOverSqrtPi * exp_core(-(a * a)) * sum;
  }
  return to_float(x < 0.0f ? -y : y);
}

}  // namespace cct::det
