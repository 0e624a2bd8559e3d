// The quantized FIR interpreter: executes a Frontend IR layer by layer with
// the accelerator's INT8 arithmetic (interp/int8_ops.hpp), bit for bit.
// Layers on the cpu run in fp32 and round their outputs to float16.
// run() can also keep the FIR's float16 tensors in fp32 (Float16::Fp32).
//
// onnx2fir uses it for the golden activations and the --report comparison;
// other tools can run any FIR whose .npy files are on disk.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fir/fir.hpp"
#include "interp/int8_ops.hpp"
#include "interp/tensor.hpp"
#include "support/npy.hpp"

namespace cct::interp {

// A tensor as the FIR holds it: int8 codes, or floating-point values (float16
// values kept in fp32, or float32 constants).
struct QTensor {
  std::string dtype = "int8";  // "int8", "float16" or "float32"
  Shape shape;
  std::vector<int8_t> q;  // dtype int8
  std::vector<float> f;   // otherwise

  bool is_int8() const { return dtype == "int8"; }
  int64_t numel() const { return shape_numel(shape); }
  // As a .npy array of the FIR dtype (int8, float16 or float32).
  NpyArray to_npy() const;
  static QTensor from_npy(const NpyArray& a, const std::string& where);
};

// The quantization of a layer's int8 output (real = scale * (q + zero_point)),
// from quant_info (PE layers, concat) or post_cal; nullopt for float outputs.
std::optional<int8::TensorQuant> output_quant(const fir::Layer& l);

// Real values of a layer output (int8 dequantized with the layer's output_quant).
std::vector<float> real_values(const fir::Layer& l, const QTensor& t);

class FirExecutor {
 public:
  // Reads a .npy named in a file_list (weights "k", bias "b", per-channel weight
  // scales "k_scale", constant inputs "input_activationN").
  using Loader = std::function<NpyArray(const std::string& file)>;

  // Prepares every layer (or only those `only` selects); throws
  // Error(kExitInvalidInput) naming the layer when a parameter is missing or
  // inconsistent.
  using Select = std::function<bool(const fir::Layer&)>;
  FirExecutor(const fir::Graph& g, const Loader& load, const Select& only = nullptr);
  ~FirExecutor();
  FirExecutor(const FirExecutor&) = delete;
  FirExecutor& operator=(const FirExecutor&) = delete;

  // Called after each layer with its inputs (constants included) and output.
  using Observer = std::function<void(const fir::Layer&, const std::vector<const QTensor*>& inputs, const QTensor& out)>;

  // The output of a layer the executor did not prepare, computed elsewhere
  // (the functional simulator's accelerator layers).
  using Given = std::function<QTensor(const fir::Layer&)>;

  // How run() holds the tensors the FIR gives as float16 (graph inputs, float
  // outputs of post_cal and of cpu layers): Round, as the chip holds them (the
  // golden data); Fp32 keeps them unrounded (dtype still "float16"), so that
  // comparing with a float model measures the INT8 arithmetic even where
  // float16's range loses the values (|x| < 3e-8 becomes 0, > 65504 infinite).
  enum class Float16 { Round, Fp32 };

  // Runs on one float tensor per graph input (input1, input2, ...); returns the
  // graph outputs (output1, ...). Layers left out by `only` are not computed:
  // `given` supplies the output of each one a computed layer or a graph output
  // reads, once, in layer_index order (its shape and dtype must be the FIR's).
  std::vector<QTensor> run(const std::vector<Tensor>& inputs, const Observer& observer = nullptr,
                           const Given& given = nullptr, Float16 float16 = Float16::Round) const;

  const fir::Graph& graph() const { return g_; }

 private:
  struct Plan;
  const fir::Graph& g_;
  std::vector<const fir::Layer*> order_;
  std::vector<Plan> plans_;
  size_t input_count_ = 0, output_count_ = 0;
};

// A Loader reading files from a directory.
FirExecutor::Loader directory_loader(const std::string& dir);

}  // namespace cct::interp
