// Facts of the core's datapath that every chip of this family shares and the
// architecture format does not describe (read off the ZeBu reference traces
// and programs; formats/ISA_Format.md). The architecture's own constants live
// in arch.hpp; these are the rest, in one table, so no model states them as
// literals.
#pragma once

#include <cstdint>

namespace cct::arch {

// One output channel's kernel occupies whole bursts of the weight path, in
// DRAM, L2 and WL0 alike: a 7x7 kernel over 3 channels (392 bytes) takes 416
// bytes before its parameters.
inline constexpr int64_t kWeightBurstBytes = 32;

// The mini-tile fields of a convolution (pe_cfg_tp MTC0, the Scheduler IR's
// out_mini_tile) count channels in groups of this many.
inline constexpr int64_t kChannelGroup = 8;

// irgen starts every L2 allocation (a tensor, a weight copy) on this
// boundary, as the reference Scheduler IRs place theirs.
inline constexpr int64_t kL2AllocationAlignBytes = 64;

// Bytes in a GiB (the architecture's DRAM bandwidths are GiB/s).
inline constexpr double kBytesPerGiB = 1073741824.0;

}  // namespace cct::arch
