// The intra-core compiler: how one workload is cut into tiles for the PE
// array, and the mini tiles each tile runs in, chosen to minimise the time
// the timing model (lib/timing, the model zebusim executes) predicts.
//
// A tile is one pe_conv: a sub-box of the workload's output. Every tile
// pays a fixed issue cost and a pipeline fill, so the search prefers few
// tiles; it cuts only where a resource forces it (weights streamed from L2
// must fit two weight-buffer slots) or where the model says a cut pays.
// Mini tiles are bounded by the activation and output L1 buffers:
//   act window  mtc0 x align x window_h x window_w x in_bytes <= al1_bytes
//   partial sums mtk0 x pe_cols x mini_h x mini_w x 4        <= ol1_bytes
// (the largest mini tiles of the reference schedules meet both).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "timing/timing.hpp"

namespace cct::irgen {

// The convolution a PE workload computes, in output terms.
struct ConvShape {
  int64_t n = 1, k = 1, c = 1, h = 1, w = 1;  // output batch, channels, rows, cols; input channels
  int64_t r = 1, s = 1;                       // kernel
  int64_t stride_h = 1, stride_w = 1;
  int in_bytes = 1, out_bytes = 1;
  bool weights_in_l2 = false;  // weights stream from L2 (lw_mov SS=0) instead of WL0
  int64_t dilation_h = 1, dilation_w = 1;
  // Grouped convolutions: output and input channels per group (0: dense).
  // A tile then holds whole groups and reads only their input channels.
  int64_t group_out = 0, group_in = 0;
  auto key() const {
    return std::array<int64_t, 16>{n,          k,          c,         h,        w,         r,         s,
                                   stride_h,   stride_w,   dilation_h, dilation_w, group_out, group_in, in_bytes,
                                   out_bytes,  weights_in_l2};
  }
  bool grouped() const { return group_out > 0; }
  // The input channels a tile of `kt` output channels reads.
  int64_t tile_c(int64_t kt) const { return grouped() ? kt / group_out * group_in : c; }
};

struct MiniTile {
  int64_t mtk0 = 1, mtc0 = 1, mini_h = 1, mini_w = 1;
  int64_t cycles = 0;  // predicted pe_conv cycles of the tile with this mini tiling
};

// A cut of the workload's output into nk x nh x nw tiles (K, rows, cols).
struct TileCut {
  int64_t nk = 1, nh = 1, nw = 1;
};

// One planned tile: its output box relative to the workload's lower corner
// ([n, k, h, w] offsets and extents) and its mini tiling.
struct PlannedTile {
  std::array<int64_t, 4> offset{}, extent{};
  MiniTile mini;
};

struct TilePlan {
  TileCut cut;
  std::vector<PlannedTile> tiles;  // K outermost, then rows, then cols ("KNHW")
  int64_t cycles = 0;              // sum of the tiles' predicted cycles
  std::string cut_mode() const;    // "KK", "KH" or "KW"
};

class Tiler {
 public:
  explicit Tiler(const arch::Architecture& a) : arch_(a) {}

  // The timing model's cycles for one tile with a given mini tiling.
  int64_t conv_cycles(const ConvShape& tile, const MiniTile& m) const;
  // The fastest mini tiling of one tile within the L1 limits (memoised).
  MiniTile best_mini(const ConvShape& tile);
  // The fastest cut of a workload. `max_tile_k`: largest tile K allowed (0:
  // no limit), tiles are then cut along K in multiples of the array width.
  // Weights streamed from L2 are only ever cut along K (a spatial cut would
  // stream them again for every tile).
  TilePlan plan(const ConvShape& workload, int64_t max_tile_k);

  // Vector-processor workloads run as one instruction: its cycles.
  int64_t vp_cycles(const timing::VpOp& op) const;

 private:
  const arch::Architecture& arch_;
  std::map<std::array<int64_t, 16>, MiniTile> memo_;
};

}  // namespace cct::irgen
