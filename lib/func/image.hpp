// The DRAM image a program runs on: the weights of every PE layer in the
// chip's record layout (footprint/layout.hpp) and the network inputs, placed where
// the assembler's DRAM layout (asm/dram_layout.hpp) says the program finds them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "asm/dram_layout.hpp"
#include "fir/fir.hpp"
#include "support/npy.hpp"

namespace cct::func {

// Reads a .npy file named in a layer's file_list.
using NpyLoader = std::function<NpyArray(const std::string& file)>;
// A loader reading from a directory; a missing file is an input error naming it.
NpyLoader directory_npy_loader(const std::string& dir);

struct DramImage {
  std::vector<uint8_t> weights;      // the weight space
  std::vector<uint8_t> activations;  // the activation space (inputs filled, the rest zero)
};

// A graph input as the FIR describes it: the first layer reading it and its shape and dtype there.
struct GraphInput {
  std::string name;  // "input1", ...
  fir::Shape shape;
  std::string dtype;  // "float16", "int8", ...
};
std::vector<GraphInput> graph_inputs(const fir::Graph& g);

// Checks each input array against its graph input (shape; int8 arrays for
// int8 inputs, floating point otherwise); `names` name the arrays in errors.
void check_inputs(const fir::Graph& g, const std::vector<NpyArray>& inputs, const std::vector<std::string>& names);

// Builds the image. Weight slices get channels k_lo..k_hi of their layer
// ('k', 'b', 'k_scale' and quant_info input_scale1); input regions the
// values of their graph input (float inputs rounded to float16). Errors name
// the layer and the file, or the Scheduler IR transfer.
DramImage build_dram_image(const assembler::DramLayout& layout, const fir::Graph& g, const arch::Architecture& a,
                           const NpyLoader& load, const std::vector<NpyArray>& inputs);

}  // namespace cct::func
