// Quantization: turns a lowered model plus calibrated activation ranges into
// the final Frontend IR (quant_info, module_list, file_list) and the .npy
// arrays it names (int8 weights, int32 biases, per-channel weight scales,
// constant operands).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "fir/fir.hpp"
#include "frontend/calibrate.hpp"
#include "frontend/lower.hpp"
#include "interp/int8_ops.hpp"
#include "support/npy.hpp"

namespace cct::frontend {

struct QuantizeOptions {
  Calibrator calibrator = Calibrator::MinMax;
  double percentile = 99.99;
};

struct QuantizedModel {
  fir::Graph fir;
  // Model files (weights, biases, scales, constants), in layer order.
  std::vector<std::pair<std::string, NpyArray>> files;
  // Per quantization class, the chosen parameters (for reports and tests).
  std::vector<int8::TensorQuant> class_quant;
};

// `stats` is indexed by float-graph value; only the values listed in
// m.qclass_values are read. With `graph`, quantization the source model
// gives (interp::Value::preset) takes precedence over calibration.
QuantizedModel quantize(const LoweredModel& m, const std::vector<RangeStats>& stats, const QuantizeOptions& options,
                        const interp::Graph* graph = nullptr);

// File names: "<layer>_<role>.npy".
std::string file_name(const std::string& layer, const std::string& role);

}  // namespace cct::frontend
