// Checking a mapping against a Frontend IR.
#pragma once

#include <string>
#include <vector>

#include "fir/fir.hpp"
#include "mapping/mapping.hpp"

namespace cct::mapping {

// The network as the mapping checks see it: layers in layer_index order,
// output [N, K, H, W] from output_shape[0] (missing trailing dimensions are
// 1), the batch from the first layer's output.
Network network_of(const fir::Graph& g);

// check_against_network(m, network_of(g), file).
std::vector<std::string> check_against_fir(const Mapping& m, const fir::Graph& g, const std::string& file);

// Simple mappings for scripts, tests and benchmarks (gemini searches better ones).
// Every npu layer on core 0, one layer per segment, in layer_index order:
// the single-core mapping (what examples/mappings/single_core_mapping.py writes).
Mapping single_core_mapping(const fir::Graph& g, const std::string& arch);
// A layer pipeline: consecutive npu layers on cores 0, 1, ... `cores`-1 (one
// core each) form a segment; `batch_groups` groups of samples flow through it.
Mapping one_layer_per_core_mapping(const fir::Graph& g, const std::string& arch, int cores, int batch_groups);

}  // namespace cct::mapping
