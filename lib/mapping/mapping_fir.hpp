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

}  // namespace cct::mapping
