// Where the assembler places data in DRAM: the weight image and the
// activation regions (network inputs, stored tensors) the program's DRAM
// addresses refer to. assemble() lays DRAM out with this function, and the
// functional simulator (lib/func) builds the DRAM image it loads from it.
//
// Two address spaces: weights (read by ldw_mov and by lw_mov with SS=1) and
// activations (lda_mov, sta_mov), both starting at 0.
//  - Weights: each layer's weights once, back to back in Frontend IR layer
//    order, one record per output channel (formats/ISA_Format.md). A DRAM
//    weight transfer of the Scheduler IR reads output channels k_lo..k_hi of
//    its layer: the contiguous `size` bytes from channel k_lo's record on.
//    Transfers of one layer may overlap (the same channels loaded by several
//    cores) and then name the same bytes.
//  - Activations: unpadded NHWC. First every network-input region (a DRAM
//    load that no store wrote, or that a host step writes: its source is
//    then the host layer), in Scheduler IR order, then every stored region
//    ("-1"/in), each at its own dimensions.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "asm/asm.hpp"
#include "fir/fir.hpp"
#include "sir/sir.hpp"

namespace cct::assembler {

struct DramWeightSlice {
  std::string layer;  // the PE layer whose weights these are
  int64_t transfer_id = 0;
  int64_t address = 0;  // byte address in the weight space
  int64_t size = 0;     // bytes (the Scheduler IR transfer's size)
  int64_t k_lo = 0, k_hi = 0;  // output channels held, inclusive
};

// A tensor region in the activation space, [n, c, h, w] inclusive corners in
// the coordinates of the whole tensor, stored NHWC without padding.
struct DramRegion {
  int64_t transfer_id = 0;  // the "-1"/out load (inputs) or the "-1"/in store
  std::string layer;        // inputs: the first layer reading it; stores: the layer writing it
  std::string source;       // inputs: the network input ("input1") or constant (PReLU's slope) it holds
  int64_t address = 0;
  sir::Coord lower{}, upper{};
  int64_t element_bytes = 1;
  std::vector<int64_t> reloads;  // stores: the "-1"/out loads that read the region back
  int64_t host_step = -1;        // inputs: the host step ("-1"/host) that writes it, -1 for a network input

  std::array<int64_t, 4> dims() const {
    return {upper[0] - lower[0] + 1, upper[1] - lower[1] + 1, upper[2] - lower[2] + 1, upper[3] - lower[3] + 1};
  }
  int64_t bytes() const {
    auto d = dims();
    return d[0] * d[1] * d[2] * d[3] * element_bytes;
  }
};

struct DramLayout {
  std::vector<DramWeightSlice> weights;  // one per weight transfer, in address order
  std::vector<DramRegion> inputs;        // network-input regions, in address order
  std::vector<DramRegion> stores;        // stored regions, in address order (after the inputs)
  int64_t weight_bytes = 0;              // size of the weight space
  int64_t activation_bytes = 0;          // size of the activation space
};

// Throws Error(kExitInvalidInput) naming the Scheduler IR (options.sir_file)
// and the JSON pointer of a transfer without a known layer or workload.
DramLayout layout_dram(const sir::Schedule& schedule, const fir::Graph& graph, const Options& options = {});

}  // namespace cct::assembler
