// The chip's data layouts, as the functional simulator reads and writes them
// and the footprint planner (footprint.hpp) bounds them (formats/ISA_Format.md,
// "Data layouts and functional semantics").
//
//  - Activations in L2: NHWC; the channels of a pixel take
//    round_up(C * element bytes, core.l2_channel_align_bytes) bytes, the rest
//    of the pixel is padding. A tensor box [C, H, W] (the STile / DTile of the
//    configuration) is a run of such pixels, sample after sample.
//  - Activations in DRAM: NHWC without padding.
//  - Weights (DRAM, L2 and WL0 alike): one record per output channel:
//    the kernel [kh][kw][Cpad] (input channels padded like an L2 pixel, zeros
//    in the padding) followed by core.weight_extra_bytes_per_out_channel
//    bytes of parameters: the fp32 bias at byte 0, the fp32 channel scale
//    (input scale x weight scale of the channel) at byte 4, zeros after.
//    Records of consecutive channels follow each other. WL0 addresses count
//    64-byte rows; a record run loaded to row R starts at byte 64 R.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "arch/arch.hpp"
#include "isa/isa.hpp"

namespace cct::footprint {

// Bytes per element of a DataFmt (INT8 1, FP16 2).
int element_bytes(isa::DataFmt f);

// An NHWC tensor box in L2: `c` channels of `elem` bytes padded to `pixel`
// bytes per pixel, `w` pixels per row, `h` rows per sample.
struct Box {
  int64_t c = 0, h = 0, w = 0;
  int elem = 1;
  int64_t pixel = 0;
  int64_t row() const { return w * pixel; }
  int64_t sample() const { return h * w * pixel; }
  // Byte offset of element (n, c, h, w) from the box origin.
  int64_t offset(int64_t n, int64_t ch, int64_t y, int64_t x) const {
    return ((n * h + y) * w + x) * pixel + ch * elem;
  }
};
// The L2 box of a [C, H, W] configuration list; `packed` leaves the pixels
// unpadded (the DRAM layout).
Box make_box(const arch::Architecture& a, std::span<const int32_t> chw, int elem, bool packed = false);

// The per-output-channel weight record of a [C, kh, kw] kernel.
struct WeightRecord {
  int64_t c = 0, kh = 0, kw = 0;
  int elem = 1;
  int64_t cpad = 0;    // bytes of one kernel tap (input channels, padded)
  int64_t extra = 0;   // parameter bytes after the kernel
  int64_t kernel_bytes() const { return cpad * kh * kw; }
  int64_t bytes() const { return kernel_bytes() + extra; }
};
WeightRecord weight_record(const arch::Architecture& a, int64_t c, int64_t kh, int64_t kw, int elem);

// Where the parameters sit in the extra bytes of a record.
inline constexpr int64_t kBiasOffset = 0;
inline constexpr int64_t kChannelScaleOffset = 4;
inline constexpr int64_t kParameterBytes = 8;  // the extra bytes must hold at least this many

// Writes the records of output channels k_lo..k_hi of an INT8 weight tensor
// k [K, C, kh, kw] (C order) with their biases and channel scales into out
// (resized to (k_hi - k_lo + 1) records).
void pack_weights(const WeightRecord& r, const int8_t* k, const float* bias, const float* channel_scale, int64_t k_lo,
                  int64_t k_hi, std::vector<uint8_t>& out);

}  // namespace cct::footprint
