// A model of grouped convolutions, built in C++ (ONNX) and compiled by
// onnx2fir's pipeline; shared by the functional tests and the checks' tests.
#pragma once

#include "func_test_util.hpp"

namespace func_test {

// A chain of grouped convolutions between dense ones: depthwise (stride 2),
// depthwise with a channel multiplier, grouped and dilated, groups of 3
// outputs (not dividing the array's 64 columns), then dense again, so the
// group configuration must be set and reset between tiles.
const Compiled& grouped_model(int batch);

}  // namespace func_test
