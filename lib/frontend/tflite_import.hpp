// TFLite import through flatbuffers, with a schema written from the format
// facts (lib/frontend/tflite.fbs, compiled by flatc at build time).
//
// NHWC activations become NCHW tensors of the float graph (transposes are
// inserted where the layout matters and cancelled by the graph passes);
// INT8 models keep their quantization: every tensor's scale/zero point and
// the per-channel weight scales are recorded on the graph values
// (interp::Value::preset) and used instead of calibration.
#pragma once

#include <string>

#include "frontend/onnx_import.hpp"
#include "interp/graph.hpp"

namespace cct::frontend {

interp::Graph import_tflite(const std::string& path, const ImportOptions& options = {});
interp::Graph import_tflite_bytes(const std::string& bytes, const std::string& name, const ImportOptions& options = {});

}  // namespace cct::frontend
