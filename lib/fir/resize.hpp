// The geometry of a resize layer: how each output row and column finds its
// source in the input, as the vector processor's resize (vp_cfg_rs) and the
// quantized interpreter take it. The arithmetic on it is int8::resize_tap
// (interp/int8_ops.hpp); this header only reads the Frontend IR.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "fir/fir.hpp"

namespace cct::fir {

// One spatial axis: output index o reads source coordinate o * step + offset
// (computed in fp32 from these numbers rounded to fp32), clamped into
// [0, in - 1]. The affine form covers ONNX's coordinate transformation modes:
//   half_pixel          step 1/s, offset 0.5/s - 0.5  (pytorch_half_pixel too, but 0, 0 for one output)
//   align_corners       step (in - 1)/(s*in - 1), offset 0
//   asymmetric          step 1/s, offset 0
//   tf_half_pixel_for_nn step 1/s, offset 0.5/s
// with s the axis's scale (activation_attr "scales", out/in when the model
// gave sizes). The padding modes (zeros, reflect, edge) hold integers
// instead: step the stride s (activation_attr "strides", 1 without), offset
// the output index of input index 0 (activation_attr "pads", the rows or
// columns before it; negative crops): see int8::resize_tap.
struct ResizeAxis {
  double step = 1.0, offset = 0.0;
  int64_t in = 1, out = 1;
};
struct ResizeGeometry {
  int mode = 0;  // int8::ResizeMode: 0 linear, 1 nearest round_prefer_floor, 2 round_prefer_ceil, 3 floor, 4 ceil,
                 // 5 zeros (zero insertion), 6 reflect, 7 edge
  std::array<ResizeAxis, 2> axis;  // H, W
};

// From the layer's activation_attr: "mode" ("nearest" or "linear"),
// "coordinate_transformation_mode", "nearest_mode", "scales" [sh, sw]; or
// "mode" "zeros" with "strides" [sh, sw] and "pads" [top, left], "reflect"
// or "edge" with "pads" [top, left].
// nullopt (and `why`) when they are missing or unknown.
std::optional<ResizeGeometry> resize_geometry(const Layer& l, std::string* why = nullptr);

}  // namespace cct::fir
