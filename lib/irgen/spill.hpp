// What irgen does when a core's L2 runs out, as one rule that irgen applies
// and gemini's cost model prices (so gemini predicts the DRAM traffic irgen
// will write, and never proposes a plan irgen has to refuse).
//
// A tensor kept in a core's L2 for a reader in a later segment (on that core,
// or sent to another core when its reader comes) is the only thing irgen may
// move out of L2: it is stored to DRAM after its producer and every
// later-segment reader loads its piece back. When the tensors live at some
// point of a core's program do not fit L2, the kept tensor live there that
// lives longest goes through DRAM (the first of them on a tie), then the
// next, until the bytes live there fit, and the placement is tried again.
// What still does not fit once nothing is left to spill -- one workload's
// own inputs and output over L2 -- is refused by irgen and split by gemini
// (more batch groups, row stripes or cores).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arch/arch.hpp"

namespace cct::irgen {

// A tensor kept in L2 for a later segment, live over workload positions
// [start, end] of its core; `id` names it to the caller.
struct KeptTensor {
  int start = 0, end = 0;
  int id = -1;
};

// The tensor to spill when L2 runs out over positions [lo, hi]: of the
// candidates live there, the longest-lived, the first on a tie; -1 if none.
int spill_choice(const std::vector<KeptTensor>& candidates, int lo, int hi);

// The refusal when one workload's own data cannot fit a buffer, with the
// capacity and by how much it is exceeded: "<what> needs N bytes, M more
// than the K-byte <buffer> of <arch>".
std::string over_capacity(const std::string& what, int64_t need, int64_t capacity, const std::string& buffer,
                          const arch::Architecture& a);

}  // namespace cct::irgen
