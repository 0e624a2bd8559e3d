// Activation-range calibration: statistics of float activations gathered
// over the calibration inputs, and three ways to turn them into a range.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cct::frontend {

enum class Calibrator : uint8_t {
  MinMax,      // the observed minimum and maximum
  Percentile,  // clip both tails at a percentile of the observed values
  Entropy,     // the clipping threshold minimising the KL divergence (TensorRT's method)
};

// "minmax", "percentile", "kl" (also "entropy"); throws a usage error otherwise.
Calibrator parse_calibrator(const std::string& name);
const char* calibrator_name(Calibrator c);

// Streaming statistics of one tensor: exact min/max and a histogram over a
// symmetric range [-R, R] that doubles (merging bin pairs, which is exact)
// whenever a value falls outside it.
class RangeStats {
 public:
  static constexpr int kBins = 4096;

  void observe(const float* data, int64_t n);
  bool empty() const { return count_ == 0; }
  float min() const { return min_; }
  float max() const { return max_; }

  // The range [lo, hi] the calibrator picks. `percentile` applies to
  // Calibrator::Percentile (e.g. 99.99).
  std::pair<double, double> range(Calibrator c, double percentile = 99.99) const;

 private:
  void grow_to(double r);
  double bin_width() const { return 2.0 * range_ / kBins; }
  std::pair<double, double> percentile_range(double p) const;
  double kl_threshold(bool one_sided) const;

  double range_ = 0.0;  // histogram covers [-range_, range_)
  std::vector<uint64_t> hist_;
  float min_ = 0.0f, max_ = 0.0f;
  uint64_t count_ = 0;
};

}  // namespace cct::frontend
