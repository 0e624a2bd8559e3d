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
#include "interp/fir_exec.hpp"
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
  // A post-processing (find_post_processing: data-dependent operators and
  // what only they read) becomes the FIR's host graph, run by the host on
  // the FIR's outputs; cut_postprocess leaves it out instead (the FIR's
  // outputs are its inputs).
  bool cut_postprocess = false;
};

// What the report flags LOW.
inline bool low_similarity(double cosine, double euclidean) { return cosine < 0.9 || euclidean < 0.5; }

// The report's measures of an INT8 tensor y against the float model's x,
// summed in double: squares of float values neither underflow nor overflow
// there, so a tensor of 1e-20s is measured like one of 1s.
struct Similarity {
  double xy = 0, xx = 0, yy = 0, diff = 0, sum = 0, max_diff = 0, max_x = 0;
  void add(const float* x, const float* y, int64_t n);
  // x.y / |x||y|: the direction only, blind to a wrong scale (y = 2x gives 1).
  double cosine() const;
  // 1 - |x - y| / |(x + y) / 2|: 1 when equal, 0.33 for y = 2x, -1 for y = 0.
  double euclidean() const;
  // max |x - y| / max |x|: the worst element against the tensor's range
  // (0 when equal, 1 for y = 2x or y = 0).
  double max_error() const;
  bool low() const { return low_similarity(cosine(), euclidean()); }
};

struct LayerReport {
  std::string name, operation, device;
  // The INT8 result, before any float16 rounding, against float.
  double cosine = 1.0, euclidean = 1.0, max_error = 0.0;
  bool flagged = false;        // cosine < 0.9 or euclidean < 0.5
  bool float16_lossy = false;  // its output is float16 and among CompileResult::float16_losses
};

// A float16 tensor of the FIR (a graph input, or a layer's float16 output)
// that cannot hold the values the INT8 network computes in it.
struct Float16Loss {
  std::string tensor;  // "input1", or the layer's name
  int64_t values = 0, zeroed = 0, infinite = 0;  // over the calibration inputs: nonzero -> 0, finite -> +-inf
  double max_abs = 0.0;     // largest finite |value|
  double euclidean = 1.0;   // float16-rounded against the unrounded values
};

struct CompileResult {
  std::string fir_text;                                  // the FIR JSON
  std::vector<std::pair<std::string, NpyArray>> files;   // model .npy files
  std::vector<std::pair<std::string, NpyArray>> golden;  // golden activations (when requested)
  std::vector<interp::QTensor> golden_outputs;            // the FIR's outputs in that run, in graph output order
  std::vector<std::string> cpu_fallbacks;
  std::vector<LayerReport> report;                       // when requested, in layer order
  // Report only: final output(s), float vs INT8 before float16 rounding.
  double output_cosine = 1.0, output_euclidean = 1.0, output_max_error = 0.0;
  // Report only: float16 tensors that round the values by more than 1%
  // (euclidean < 0.99) or make some infinite, inputs first, then layers; when
  // there are any, the final output(s) as the FIR computes them, with every
  // float16 tensor rounded (the golden data, the chip), against float.
  std::vector<Float16Loss> float16_losses;
  double float16_output_cosine = 1.0, float16_output_euclidean = 1.0;
  int calibration_samples = 0;
  std::vector<std::string> notes;                        // warnings for the user
  // A post-processing: what runs on the host (or, with --cut-postprocess,
  // was left out) and the values it reads, which became the FIR's outputs.
  std::vector<std::string> postprocess;
};

// Compiles an imported graph. `progress`, when set, receives short status lines.
CompileResult compile(interp::Graph graph, const CompileOptions& options,
                      const std::function<void(const std::string&)>& progress = nullptr);

}  // namespace cct::frontend
