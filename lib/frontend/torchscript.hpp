// PyTorch TorchScript archives (.pt): exported to ONNX by a small Python
// helper run with Debian's python3-torch (/usr/bin/python3, or $CCT_PYTHON).
#pragma once

#include <string>

#include "frontend/onnx_import.hpp"

namespace cct::frontend {

// Returns the ONNX bytes of the TorchScript model at `path`. The input shape
// comes from options.input_shape (required: an archive does not record it),
// with options.batch replacing its first dimension. Errors say when python3
// or python3-torch is missing and how to install it.
std::string torchscript_to_onnx(const std::string& path, const ImportOptions& options);

// The Python helper's source (also usable by hand: python3 - MODEL.pt OUT.onnx N,C,H,W).
const char* torchscript_export_script();

}  // namespace cct::frontend
