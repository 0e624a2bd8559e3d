// How far a DRAM transfer may overlap the compute around it, as one rule that
// irgen applies (a store's tail, an early load's head: how long its L2
// buffer lives) and gemini's cost model prices (where it issues a load
// ahead), so the two place the transfer at the same workload.
#pragma once

#include <cstdint>

#include "arch/arch.hpp"
#include "timing/timing.hpp"

namespace cct::irgen {

// From workload position `pos` of a core, stepping by `step` (+1: a store's
// tail, -1: a load's head) but not past `bound`, the first position where the
// workloads stepped over cover a transfer of `bytes` at one DRAM channel's
// rate: their predicted compute (`compute_at(position)`: PE cycles, 0 for the
// rest) adds up to the transfer's time. `may_enter(position)` may stop the
// walk before a position (gemini: no room in L2 there); irgen takes every
// position and shrinks the overlap when placement fails.
template <class ComputeAt, class MayEnter>
int covering(const arch::Architecture& a, int pos, int step, int bound, int64_t bytes, ComputeAt&& compute_at,
             MayEnter&& may_enter) {
  double left = double(bytes) / timing::dram_channel_bytes_per_cycle(a);
  while (left > 0 && (step > 0 ? pos < bound : pos > bound) && may_enter(pos + step)) {
    pos += step;
    left -= double(compute_at(pos));
  }
  return pos;
}

}  // namespace cct::irgen
