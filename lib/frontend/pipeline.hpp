// The whole of onnx2fir as a library call: import a model, simplify, lower,
// calibrate, quantize, and produce the FIR text, its .npy files, golden
// activations and the float-vs-INT8 report.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "frontend/calibrate.hpp"
#include "frontend/onnx_import.hpp"
#include "interp/graph.hpp"
#include "support/npy.hpp"

namespace cct::frontend {

// Reads a model by its content: ONNX protobuf, TFLite flatbuffer ("TFL3"),
// or a TorchScript archive (a zip, exported to ONNX through python3-torch).
interp::Graph load_model(const std::string& path, const ImportOptions& options);

struct CompileOptions {
  ImportOptions import;
  std::string calib_dir;     // .npy files, one sample (or a stack of samples) each
  int calib_random = 0;      // else: this many seeded random samples (standard normal)
  uint64_t seed = 1;
  Calibrator calibrator = Calibrator::MinMax;
  double percentile = 99.99;
  bool golden = false;       // compute golden activations (first calibration batch)
  bool report = false;       // compare float and INT8 layer by layer on every calibration batch
  bool validate = true;
  std::string output_dtype = "float16";  // of the float tensors reaching the graph outputs
};

struct LayerReport {
  std::string name, operation, device;
  double cosine = 1.0, euclidean = 1.0;
  bool flagged = false;  // cosine < 0.9 or euclidean < 0.5
};

struct CompileResult {
  std::string fir_text;                                  // the FIR JSON
  std::vector<std::pair<std::string, NpyArray>> files;   // model .npy files
  std::vector<std::pair<std::string, NpyArray>> golden;  // golden activations (when requested)
  std::vector<std::string> cpu_fallbacks;
  std::vector<LayerReport> report;                       // when requested, in layer order
  double output_cosine = 1.0;                            // final output(s), float vs INT8 (report only)
  int calibration_samples = 0;
  std::vector<std::string> notes;                        // warnings for the user
};

// Compiles an imported graph. `progress`, when set, receives short status lines.
CompileResult compile(interp::Graph graph, const CompileOptions& options,
                      const std::function<void(const std::string&)>& progress = nullptr);

}  // namespace cct::frontend
