#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "frontend/calibrate.hpp"
#include "interp/int8_ops.hpp"
#include "support/error.hpp"

using namespace cct;
using frontend::Calibrator;
using frontend::RangeStats;

TEST_CASE("min/max is exact and survives histogram growth") {
  RangeStats s;
  std::vector<float> a = {0.1f, -0.2f, 0.05f};
  std::vector<float> b = {7.5f, -3.0f};
  s.observe(a.data(), 3);
  s.observe(b.data(), 2);
  auto [lo, hi] = s.range(Calibrator::MinMax);
  CHECK(lo == -3.0f);
  CHECK(hi == 7.5f);
}

TEST_CASE("percentile clips rare outliers, KL clips a long tail") {
  std::mt19937_64 rng(7);
  // uniform [-1, 1] with two far outliers
  std::vector<float> v(200000);
  for (auto& x : v) x = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 1000.0f;
  v[10] = 50.0f;
  v[20] = -40.0f;
  RangeStats s;
  s.observe(v.data(), static_cast<int64_t>(v.size()));
  auto mm = s.range(Calibrator::MinMax);
  CHECK(mm.second == 50.0f);
  auto pc = s.range(Calibrator::Percentile, 99.99);
  CHECK(pc.second < 1.2);
  CHECK(pc.first > -1.2);
  // Laplace(0, 1): a long tail the entropy threshold cuts
  std::vector<float> lap(400000);
  for (auto& x : lap) {
    double u = (static_cast<double>(rng() >> 11) + 0.5) / 9007199254740992.0 - 0.5;
    x = static_cast<float>(-(u < 0 ? -1.0 : 1.0) * std::log(1.0 - 2.0 * std::fabs(u)));
  }
  RangeStats t;
  t.observe(lap.data(), static_cast<int64_t>(lap.size()));
  auto kl = t.range(Calibrator::Entropy);
  double top = std::max(-t.min(), t.max());
  CHECK(kl.second < 0.9 * top);
  CHECK(kl.second > 2.0);
  CHECK(kl.first == doctest::Approx(-kl.second).epsilon(0.05));
}

TEST_CASE("calibrator names") {
  CHECK(frontend::parse_calibrator("kl") == Calibrator::Entropy);
  CHECK(frontend::parse_calibrator("minmax") == Calibrator::MinMax);
  CHECK_THROWS_AS(frontend::parse_calibrator("magic"), Error);
}

TEST_CASE("tensor quantization maps the range onto [-128, 127] with 0 exact") {
  auto q = int8::choose_tensor_quant(0.0, 6.0);  // ReLU6: q = -128 is 0
  CHECK(q.zero_point == 128.0);
  CHECK(q.scale == doctest::Approx(6.0 / 255));
  auto a = int8::choose_tensor_quant(-1.0, 3.0);
  double zero_code = -a.zero_point;  // q with real value 0
  CHECK(zero_code == std::round(zero_code));
  CHECK(a.scale * (-128 + a.zero_point) == doctest::Approx(-1.0).epsilon(0.01));
  auto c = int8::choose_tensor_quant(0.0, 0.0);  // a constant zero tensor stays representable
  CHECK(c.scale > 0.0);
}

TEST_CASE("INT8 arithmetic: rounding, saturation, requantization") {
  using int8::Carry;
  CHECK(int8::carry(2.5f, Carry::Round) == 3.0f);
  CHECK(int8::carry(-2.5f, Carry::Round) == -3.0f);
  CHECK(int8::carry(-2.5f, Carry::Floor) == -3.0f);
  CHECK(int8::carry(-2.5f, Carry::Trunc) == -2.0f);
  CHECK(int8::saturate(300.0f) == 127);
  CHECK(int8::saturate(-300.0f) == -128);
  CHECK(int8::saturate(std::nanf("")) == 0);
  CHECK(int8::post_cal(1.0f, 10.0f, -128.0f, Carry::Round) == -118);
  CHECK(int8::pre_cal(-118, 0.1f, 12.8f) == doctest::Approx(1.0f));
  CHECK(int8::post_cal_float(1.0f / 3.0f, 1.0f, 0.0f) == int8::to_float16(1.0f / 3.0f));
  CHECK(int8::post_cal_float(1e-9f, 1.0f, 0.0f) == 0.0f);  // below float16's range
  CHECK(int8::post_cal_float(1e-9f, 1.0f, 0.0f, false) == 1e-9f);
  CHECK(int8::pe_to_real(1000, 0.5f, 1.0f) == 501.0f);
  int8::Activation r6{int8::Act::Relu6};
  CHECK(int8::activate(r6, 7.0f) == 6.0f);
  CHECK(int8::activate(int8::ActMode::HardSwish, 3.0f) == 3.0f);
  CHECK(int8::activate(int8::ActMode::Silu, 0.0f) == 0.0f);
  CHECK_THROWS(int8::parse_carry("banker"));
  std::vector<float> w = {0.5f, -1.27f, 0.0f};
  double s = int8::weight_scale(w.data(), 3);
  CHECK(s == doctest::Approx(0.01));
  CHECK(int8::quantize_weight(-1.27f, s) == -127);
  CHECK(int8::quantize_weight(100.0f, s) == 127);
}
