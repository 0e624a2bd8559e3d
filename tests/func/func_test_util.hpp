// Shared helpers of the functional-simulation tests: a model compiled by
// onnx2fir's pipeline (weights and golden activations on disk), mappings,
// the irgen -> asm -> timing chain, and the reference interpreter's outputs.
#pragma once

#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "fir/fir.hpp"
#include "func/functional.hpp"
#include "interp/fir_exec.hpp"
#include "isa/program.hpp"
#include "mapping/mapping.hpp"
#include "mapping/mapping_fir.hpp"
#include "sir/sir.hpp"
#include "trace/trace.hpp"

namespace func_test {

// An architecture preset or file, loaded once per test binary.
const cct::arch::Architecture& arch_named(const std::string& name);

// A FIR in a directory with its .npy files and golden activations.
struct Compiled {
  std::string dir;       // weights, biases, scales, goldens
  std::string fir_path;  // dir/<name>.fir.json
  cct::fir::Graph graph;
  std::string input_path;  // the golden input of the first layer
  cct::NpyArray input;
  // The interpreter's graph outputs on `input` (from onnx2fir's golden run),
  // what a functional run must reproduce bit for bit.
  std::vector<cct::interp::QTensor> outputs;
};

// onnx2fir's pipeline (8 seeded calibration inputs, golden activations) on a
// model at a batch size; compiled once per process and tag.
// constant_inputs: onnx2fir's --constant-input; calib_dir: --calib (else 8 random samples);
// cut_postprocess: --cut-postprocess.
const Compiled& compile_model(const std::string& model_path, int batch, const std::string& tag,
                              const std::vector<std::pair<std::string, std::string>>& constant_inputs = {},
                              const std::string& calib_dir = "", bool cut_postprocess = false);
// Drops a compiled model from the cache and removes its directory (a matrix
// done with a network).
void forget_model(const std::string& tag, int batch);
// examples/tiny_resnet/tiny_resnet.onnx
const Compiled& tiny(int batch);

// Every accelerator layer on core 0, one per segment.
inline cct::mapping::Mapping single_core(const cct::fir::Graph& g, const std::string& arch) {
  return cct::mapping::single_core_mapping(g, arch);
}
// Segments of `cores` consecutive layers, the j-th on core j, `groups` batch groups.
inline cct::mapping::Mapping pipeline(const cct::fir::Graph& g, const std::string& arch, int cores, int groups) {
  return cct::mapping::one_layer_per_core_mapping(g, arch, cores, groups);
}

// irgen, asm and the timing model; the SIR and program are also written to `dir`.
struct Built {
  cct::sir::Schedule sir;
  cct::isa::Program program;
  std::vector<cct::trace::Timing> timing;
  std::string sir_path, program_path;
};
// multicast: asm's multicast pass, on architectures with it (false: unicast loads only).
Built build(const Compiled& c, const cct::mapping::Mapping& m, const cct::arch::Architecture& a, const std::string& dir,
            bool multicast = true);
// Re-times a (modified) program.
std::vector<cct::trace::Timing> retime(const cct::isa::Program& p, const cct::arch::Architecture& a);

// The functional run of a built program.
cct::func::Result run(const Compiled& c, const Built& b, const cct::isa::Program& program,
                      const std::vector<cct::trace::Timing>& timing, const cct::arch::Architecture& a, bool golden);

// The quantized FIR interpreter's graph outputs for the compiled input.
std::vector<cct::interp::QTensor> interpret(const Compiled& c);
// The same on another input (host layers included).
std::vector<cct::interp::QTensor> interpret(const Compiled& c, const cct::NpyArray& input);
// Writes every layer's output (the interpreter's) as output_activation1 files
// into dir; returns the graph outputs.
std::vector<cct::interp::QTensor> write_goldens(const cct::fir::Graph& g, const cct::interp::FirExecutor::Loader& load, const cct::NpyArray& input,
                   const std::string& dir);

// The functional run against the quantized FIR interpreter (doctest checks):
// every output bit for bit, every accelerator layer matched its golden.
void check_bit_exact(const Compiled& c, const cct::func::Result& r);

// Bit-for-bit equality of two tensors (dtype, shape, values; float16 compared as float16 bits).
bool same_bits(const cct::interp::QTensor& a, const cct::interp::QTensor& b);

}  // namespace func_test
