// det_math: accuracy against long double libm over a sweep of every region
// and the edge cases, the activations built on it, and the bits themselves.
#include <doctest/doctest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>

#include "interp/det_math.hpp"
#include "interp/int8_ops.hpp"

using namespace cct;

namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// ref rounded to float (+-inf from the midpoint between FLT_MAX and 2^128).
float nearest_float(long double ref) {
  if (fabsl(ref) >= 0x1.ffffffp127L) return ref > 0 ? INFINITY : -INFINITY;
  return static_cast<float>(ref);
}

// |f - ref| in units of the float ulp at ref.
double ulp_error(float f, long double ref) {
  float cr = nearest_float(ref);
  if (std::isnan(f) || std::isnan(cr)) return std::isnan(f) == std::isnan(cr) ? 0.0 : 1e9;
  if (std::isinf(f) || std::isinf(cr)) return f == cr ? 0.0 : 1e9;
  long double a = fabsl(ref);
  long double ulp = a < FLT_MIN ? ldexpl(1.0L, -149) : ldexpl(1.0L, ilogbl(a) - 23);
  return static_cast<double>(fabsl(static_cast<long double>(f) - ref) / ulp);
}

struct Fn {
  const char* name;
  std::function<float(float)> ours;
  std::function<long double(long double)> ref;
  float lo, hi;  // where the result is not saturated
};

const Fn kFns[] = {
    {"exp", [](float x) { return det::exp(x); }, [](long double x) { return expl(x); }, -104.0f, 89.0f},
    {"expm1", [](float x) { return det::expm1(x); }, [](long double x) { return expm1l(x); }, -20.0f, 89.0f},
    {"tanh", [](float x) { return det::tanh(x); }, [](long double x) { return tanhl(x); }, -10.0f, 10.0f},
    {"erf", [](float x) { return det::erf(x); }, [](long double x) { return erfl(x); }, -4.0f, 4.0f},
};

}  // namespace

TEST_CASE("det_math: within half an ulp (+1e-5) of the true value across the float range") {
  // Every 2039th float bit pattern (2.1 million per function, every binade,
  // both signs, saturated regions and specials included);
  // CCT_DET_MATH_STRIDE=1 tries all 2^32 (an hour). det_math.hpp gives the
  // figures of the exhaustive run.
  const char* env = std::getenv("CCT_DET_MATH_STRIDE");
  const uint64_t stride = env ? std::max<uint64_t>(1, std::strtoull(env, nullptr, 10)) : 2039;
  for (const Fn& f : kFns) {
    double worst = 0.0;
    float worst_x = 0.0f;
    long tested = 0, misrounded = 0;
    for (uint64_t u = 0; u <= 0xffffffffu; u += stride) {
      float x = from_bits(static_cast<uint32_t>(u));
      float got = f.ours(x);
      long double ref = f.ref(x);
      double e = ulp_error(got, ref);
      ++tested;
      misrounded += !std::isnan(got) && bits(got) != bits(nearest_float(ref));
      if (e > worst) {
        worst = e;
        worst_x = x;
      }
    }
    MESSAGE(std::string(f.name) << ": " << tested << " values, max error " << worst << " ulp at " << worst_x << ", "
                                << misrounded << " not correctly rounded");
    CHECK_MESSAGE(worst < 0.50001, std::string(f.name) << " at " << worst_x);
  }
}

TEST_CASE("det_math: zeros, tiny, huge, infinities, NaN and the edges of saturation") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float denorm_min = std::numeric_limits<float>::denorm_min();
  for (const Fn& f : kFns) {
    INFO(std::string(f.name));
    CHECK(std::isnan(f.ours(nan)));
    CHECK(std::isnan(f.ours(-nan)));
    for (float x : {0.0f, -0.0f, denorm_min, -denorm_min, FLT_MIN, -FLT_MIN, 1e-30f, -1e-30f, 0x1p-26f, -0x1p-26f,
                    0.5f, -0.5f, 1.0f, -1.0f, 3.0f, -3.0f, FLT_MAX, -FLT_MAX, inf, -inf,
                    // each side of the saturation edges
                    f.lo, std::nextafter(f.lo, 0.0f), std::nextafter(f.lo, -inf), f.hi, std::nextafter(f.hi, 0.0f),
                    std::nextafter(f.hi, inf)}) {
      float got = f.ours(x);
      float want = nearest_float(f.ref(x));
      CHECK_MESSAGE(bits(got) == bits(want), x << ": " << got << " instead of " << want);
    }
  }
  // where exp leaves float's range: the last finite result and the first infinite one,
  // the last nonzero (the smallest subnormal) and the first zero
  CHECK(det::exp(0x1.62e42ep+6f) == 0x1.ffff08p+127f);
  CHECK(det::exp(0x1.62e43p+6f) == inf);
  CHECK(det::exp(-0x1.9fe368p+6f) == denorm_min);
  CHECK(det::exp(-0x1.9fe36ap+6f) == 0.0f);
  CHECK(std::signbit(det::tanh(-0.0f)));
  CHECK(std::signbit(det::erf(-0.0f)));
  CHECK(std::signbit(det::expm1(-0.0f)));
  CHECK(det::tanh(-inf) == -1.0f);
  CHECK(det::erf(-inf) == -1.0f);
  CHECK(det::expm1(-inf) == -1.0f);
}

TEST_CASE("the activations use det_math: their values and limits") {
  using int8::ActMode;
  const float inf = std::numeric_limits<float>::infinity();
  for (float x = -12.0f; x <= 12.0f; x += 0.37f) {
    long double X = x;
    // fp32 formulas of a few roundings each: within a few ulp of the truth
    CHECK(ulp_error(int8::activate(ActMode::Sigmoid, x), 1.0L / (1.0L + expl(-X))) < 3.0);
    CHECK(ulp_error(int8::activate(ActMode::Silu, x), X / (1.0L + expl(-X))) < 3.0);
    CHECK(ulp_error(int8::activate(ActMode::Tanh, x), tanhl(X)) <= 0.5);
    if (x > -1.0f)  // below, 1 + erf cancels: the fp32 formula's error, not erf's
      CHECK(ulp_error(int8::activate(ActMode::Gelu, x), 0.5L * X * (1.0L + erfl(X / sqrtl(2.0L)))) < 4.0);
  }
  CHECK(int8::activate(ActMode::Sigmoid, -inf) == 0.0f);
  CHECK(int8::activate(ActMode::Sigmoid, inf) == 1.0f);
  CHECK(int8::activate(ActMode::Sigmoid, -200.0f) == 0.0f);
  CHECK(int8::activate(ActMode::Silu, 0.0f) == 0.0f);
  CHECK(int8::activate(ActMode::Gelu, -10.0f) == -0.0f);
  CHECK(int8::activate(ActMode::Gelu, 10.0f) == 10.0f);
  CHECK(int8::activate(ActMode::Tanh, 20.0f) == 1.0f);
}

TEST_CASE("det_math gives these bits on every machine") {
  // FNV-1a of the results on a fixed set of inputs (every 65537th float bit
  // pattern and every float in [1, 1 + 2^-11)): a compiler, flag or library
  // that changed any result would change the golden data too. Recorded with
  // GCC 12 on x86-64; change them only with the algorithm.
  auto digest = [](const std::function<float(float)>& f) {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](float x) {
      uint32_t b = bits(f(x));
      for (int k = 0; k < 4; ++k) {
        h ^= (b >> (8 * k)) & 0xffu;
        h *= 1099511628211ull;
      }
    };
    for (uint64_t u = 0; u <= 0xffffffffu; u += 65537) mix(from_bits(static_cast<uint32_t>(u)));
    for (uint32_t u = bits(1.0f); u < bits(1.0f) + 4096; ++u) mix(from_bits(u));
    return h;
  };
  CHECK(digest(kFns[0].ours) == 0xab938bf22e9d4da8ull);  // exp
  CHECK(digest(kFns[1].ours) == 0xd982061a5b3f7b33ull);  // expm1
  CHECK(digest(kFns[2].ours) == 0x6680903880f5c9fdull);  // tanh
  CHECK(digest(kFns[3].ours) == 0xc5db87cca7b3d167ull);  // erf
}
