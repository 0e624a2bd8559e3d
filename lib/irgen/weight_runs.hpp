// The weight buffer (WL0) as irgen fills it, and how irgen computes a PE
// part whose weights do not fit it: in runs of output channels, each a
// workload with its own DRAM -> WL0 load. gemini's cost model calls the same
// functions, so that it prices the workloads irgen makes.
#pragma once

#include <cstdint>

#include "arch/arch.hpp"

namespace cct::irgen {

// WL0 rows (units of wl0_row_bytes) taken by `k` output channels of `per_k`
// weight bytes each, loaded whole: blocks of pe_cols channels (one block of
// k channels when there are fewer), each channel's weights on whole 32-byte
// bursts.
int64_t wl0_rows(const arch::Architecture& a, int64_t k, int64_t per_k);

// How a PE part of `k` output channels (`per_k` weight bytes each, output
// elements of `out_bytes`) is computed.
struct WeightRuns {
  enum Kind {
    Whole,     // one workload, its weights in WL0 whole (or streamed from L2, as irgen's search chooses)
    Stream,    // one workload per batch group, its weights loaded into L2 once and streamed tile by tile
    Runs,      // runs of `run` output channels (the last may be shorter), each a workload with its own load
    TooLarge,  // not even one output channel fits half of WL0: the layer cannot be computed
  } kind = Whole;
  int64_t run = 0;  // Runs: output channels per run
};
// `once`: the part is computed once on its core (its segment has one batch
// group and one row stripe). Runs fit half of WL0, so that one run's weights
// load while the previous run computes: whole pe_cols blocks when one fits,
// else fewer channels, multiples of the L2 channel alignment when one such
// multiple fits. A part computed again for every batch group or stripe
// streams its weights from L2 (loaded once for all) when it can: a tile of
// pe_cols channels fits half of WL0 and the part's weights fit L2; otherwise
// it too is computed in runs, whose weights every group loads again.
// `k_per_group`: runs hold whole groups of a grouped convolution.
WeightRuns weight_runs(const arch::Architecture& a, int64_t k, int64_t per_k, int out_bytes, bool once,
                       int64_t k_per_group = 1);

}  // namespace cct::irgen
