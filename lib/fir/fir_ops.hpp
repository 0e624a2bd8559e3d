// Internal: the operation table shared by the reader, writer and checker.
#pragma once

#include <string_view>

#include "fir/fir.hpp"

namespace cct::fir::detail {

// Key order family of a layer when written (the reference writes PE layers,
// vector-processor layers and quantize layers with different key orders).
enum class KeyOrder : uint8_t { Pe, Vp, Quantize };

struct OpInfo {
  Op op;
  std::string_view name;
  KeyOrder order;
  int min_inputs;  // entries in previous_layer / input_shape, weights and constants included
  int max_inputs;  // -1: no upper bound
  bool needs_module_list_on_npu;  // reference VP layers always carry their configuration
};

const OpInfo& op_info(Op op);

}  // namespace cct::fir::detail
