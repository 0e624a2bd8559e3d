// ONNX import through libonnx: parse the ModelProto, run the ONNX checker
// and shape inference, and convert it to the float graph (interp::Graph).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "interp/graph.hpp"

namespace cct::frontend {

struct ImportOptions {
  // Replaces the shape of the (first) model input, e.g. {1, 3, 224, 224}.
  std::vector<int64_t> input_shape;
  // When > 0, sets dimension 0 (the batch) of every model input.
  int64_t batch = 0;
  // Graph inputs given a value (name, or "" for the TensorProto's own; file: a .pb or a
  // .npy): they become constants, as initializers. ONNX's node tests pass an
  // operator's parameters (Clip's bounds, PRelu's slope, BatchNormalization's
  // statistics, Pad's pads) as inputs, which the accelerator needs as constants.
  std::vector<std::pair<std::string, std::string>> constant_inputs;
};

// Opset range of the default ONNX domain the importer accepts. Older opsets
// are read too, but the legacy attribute forms of opsets 1 to 6 (explicit
// broadcast, consumed_inputs, ...) are reported as unsupported.
constexpr int kMinOnnxOpset = 1;
constexpr int kMaxOnnxOpset = 17;

// Reads an ONNX file ("-" = stdin, zstd transparent). External tensor data is
// looked up next to the file. Errors (Error, kExitInvalidInput) name the file
// and say what is wrong: not a protobuf, checker failure, unsupported opset,
// dynamic input shape without --input-shape, unsupported operators (each
// listed with its node name).
interp::Graph import_onnx(const std::string& path, const ImportOptions& options = {});

// Same from bytes in memory; `name` is used in messages, `base_dir` to find
// external data.
interp::Graph import_onnx_bytes(const std::string& bytes, const std::string& name, const std::string& base_dir,
                                const ImportOptions& options = {});

// Converts one ONNX TensorProto (serialized bytes) to a tensor; used by tests
// that read the backend test data (input_0.pb, output_0.pb).
interp::Tensor parse_onnx_tensor(const std::string& bytes, const std::string& name);

}  // namespace cct::frontend
