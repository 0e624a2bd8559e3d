#include "irgen/weight_runs.hpp"

#include <algorithm>
#include <numeric>

#include "arch/datapath.hpp"
#include "support/int_math.hpp"

namespace cct::irgen {
int64_t wl0_rows(const arch::Architecture& a, int64_t k, int64_t per_k) {
  const int64_t cols = a.core.pe_cols;
  const int64_t channel = round_up(per_k, arch::kWeightBurstBytes);
  if (k < cols) return ceil_div(k * channel, a.core.wl0_row_bytes);
  return ceil_div(k, cols) * channel * cols / a.core.wl0_row_bytes;
}

WeightRuns weight_runs(const arch::Architecture& a, int64_t k, int64_t per_k, int out_bytes, bool once,
                       int64_t k_per_group) {
  WeightRuns r;
  const int64_t capacity = a.core.wl0_rows;
  if (k < 1 || wl0_rows(a, k, per_k) <= capacity) return r;
  const int64_t unit = std::max<int64_t>(1, k_per_group);
  const int64_t cols = std::lcm(a.core.pe_cols, unit);
  const int64_t half = capacity / 2;
  const int64_t block_rows = wl0_rows(a, cols, per_k);
  if (!once && block_rows <= half && k * per_k <= a.core.l2_bytes) {
    r.kind = WeightRuns::Stream;
    return r;
  }
  r.kind = WeightRuns::Runs;
  if (block_rows <= half) {
    // Nearly equal runs of whole pe_cols blocks.
    const int64_t per_run = half / block_rows;
    const int64_t blocks = ceil_div(k, cols);
    const int64_t runs = ceil_div(blocks, per_run);
    r.run = ceil_div(blocks, runs) * cols;
    return r;
  }
  // Fewer channels than a block: as many as fit half of WL0, a multiple of
  // the channels one L2 alignment unit holds when one fits.
  int64_t most = std::min(cols - 1, half * a.core.wl0_row_bytes / round_up(per_k, arch::kWeightBurstBytes));
  most = most / unit * unit;
  if (most < 1) {
    r.kind = WeightRuns::TooLarge;
    return r;
  }
  const int64_t align = std::lcm(std::max<int64_t>(1, a.core.l2_channel_align_bytes / std::max(1, out_bytes)), unit);
  if (most >= align) most = most / align * align;
  const int64_t runs = ceil_div(k, most);
  r.run = round_up(ceil_div(k, runs), unit);
  if (most % align == 0) r.run = round_up(r.run, align);
  return r;
}

}  // namespace cct::irgen
