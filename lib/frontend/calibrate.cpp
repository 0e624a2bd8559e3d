#include "frontend/calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "support/error.hpp"

namespace cct::frontend {

Calibrator parse_calibrator(const std::string& name) {
  if (name == "minmax") return Calibrator::MinMax;
  if (name == "percentile") return Calibrator::Percentile;
  if (name == "kl" || name == "entropy") return Calibrator::Entropy;
  throw_usage_error("unknown calibrator '" + name + "' (minmax, percentile or kl)");
}

const char* calibrator_name(Calibrator c) {
  switch (c) {
    case Calibrator::MinMax: return "minmax";
    case Calibrator::Percentile: return "percentile";
    case Calibrator::Entropy: return "kl";
  }
  return "?";
}

void RangeStats::grow_to(double r) {
  if (hist_.empty()) {
    // A power of two keeps every later doubling exact.
    range_ = std::exp2(std::ceil(std::log2(std::max(r, 1e-30))));
    hist_.assign(kBins, 0);
    return;
  }
  while (range_ < r) {
    // Bin i of [-R, R) lands in bin kBins/4 + i/2 of [-2R, 2R).
    std::vector<uint64_t> h(kBins, 0);
    for (int i = 0; i < kBins; ++i) h[kBins / 4 + i / 2] += hist_[i];
    hist_ = std::move(h);
    range_ *= 2.0;
  }
}

void RangeStats::observe(const float* data, int64_t n) {
  if (n <= 0) return;
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (int64_t k = 0; k < n; ++k) {
    float v = data[k];
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (lo > hi) return;  // nothing finite
  if (count_ == 0) {
    min_ = lo;
    max_ = hi;
  } else {
    min_ = std::min(min_, lo);
    max_ = std::max(max_, hi);
  }
  double need = std::max(std::fabs(static_cast<double>(lo)), std::fabs(static_cast<double>(hi)));
  if (hist_.empty() || need >= range_) grow_to(need * (1.0 + 1e-7) + 1e-30);
  double inv = kBins / (2.0 * range_);
  for (int64_t k = 0; k < n; ++k) {
    float v = data[k];
    if (!std::isfinite(v)) continue;
    int64_t b = static_cast<int64_t>((static_cast<double>(v) + range_) * inv);
    hist_[static_cast<size_t>(std::clamp<int64_t>(b, 0, kBins - 1))] += 1;
    ++count_;
  }
}

std::pair<double, double> RangeStats::percentile_range(double p) const {
  double tail = (100.0 - p) / 100.0 * static_cast<double>(count_);
  double w = bin_width();
  double lo = min_, hi = max_;
  double acc = 0.0;
  for (int i = 0; i < kBins; ++i) {
    acc += static_cast<double>(hist_[i]);
    if (acc > tail) {
      lo = std::max(static_cast<double>(min_), -range_ + i * w);
      break;
    }
  }
  acc = 0.0;
  for (int i = kBins - 1; i >= 0; --i) {
    acc += static_cast<double>(hist_[i]);
    if (acc > tail) {
      hi = std::min(static_cast<double>(max_), -range_ + (i + 1) * w);
      break;
    }
  }
  return {lo, hi};
}

// TensorRT-style entropy calibration on the |x| histogram: for each candidate
// threshold, the distribution clipped there (outliers folded into the last
// bin) is compared with its requantization to `levels` bins; the threshold
// with the smallest KL divergence wins.
double RangeStats::kl_threshold(bool one_sided) const {
  const int half = kBins / 2;
  std::vector<double> mag(half, 0.0);
  for (int i = 0; i < kBins; ++i) {
    int j = i >= half ? i - half : half - 1 - i;  // |x| bin
    mag[j] += static_cast<double>(hist_[i]);
  }
  const int levels = one_sided ? 255 : 127;
  double w = bin_width();
  int last = half;
  while (last > 1 && mag[last - 1] == 0.0) --last;
  if (last <= levels) return last * w;
  double best = std::numeric_limits<double>::infinity();
  int best_i = last;
  std::vector<double> p, q;
  for (int i = levels; i <= last; ++i) {
    p.assign(mag.begin(), mag.begin() + i);
    double outliers = 0.0;
    for (int j = i; j < half; ++j) outliers += mag[j];
    p[i - 1] += outliers;
    // quantize the first i bins into `levels` groups, spread back over non-empty bins
    q.assign(i, 0.0);
    double step = static_cast<double>(i) / levels;
    for (int g = 0; g < levels; ++g) {
      int b0 = static_cast<int>(std::floor(g * step)), b1 = static_cast<int>(std::floor((g + 1) * step));
      if (g == levels - 1) b1 = i;
      double sum = 0.0;
      int nonzero = 0;
      for (int b = b0; b < b1; ++b) {
        sum += mag[b];
        nonzero += mag[b] != 0.0;
      }
      for (int b = b0; b < b1; ++b)
        if (mag[b] != 0.0) q[b] = sum / nonzero;
    }
    double ps = 0.0, qs = 0.0;
    for (int b = 0; b < i; ++b) {
      ps += p[b];
      qs += q[b];
    }
    if (ps <= 0.0 || qs <= 0.0) continue;
    double kl = 0.0;
    for (int b = 0; b < i; ++b) {
      if (p[b] == 0.0) continue;
      double pp = p[b] / ps, qq = q[b] / qs;
      kl += qq > 0.0 ? pp * std::log(pp / qq) : pp * 30.0;  // an empty q bin where p has mass: heavy penalty
    }
    if (kl < best) {
      best = kl;
      best_i = i;
    }
  }
  return (best_i + 0.5) * w;
}

std::pair<double, double> RangeStats::range(Calibrator c, double percentile) const {
  if (count_ == 0) return {0.0, 0.0};
  switch (c) {
    case Calibrator::MinMax: return {min_, max_};
    case Calibrator::Percentile: return percentile_range(percentile);
    case Calibrator::Entropy: {
      double t = kl_threshold(min_ >= 0.0f);
      return {std::max(static_cast<double>(min_), -t), std::min(static_cast<double>(max_), t)};
    }
  }
  return {min_, max_};
}

}  // namespace cct::frontend
