// Integer rounding shared by the models: sizes in bursts, rows, blocks and
// tiles.
#pragma once

#include <cstdint>

namespace cct {

// ceil(x / a) for x >= 0 and a > 0.
constexpr int64_t ceil_div(int64_t x, int64_t a) { return (x + a - 1) / a; }

// x rounded up to a multiple of a (a <= 1 leaves x as it is).
constexpr int64_t round_up(int64_t x, int64_t a) { return a <= 1 ? x : ceil_div(x, a) * a; }

}  // namespace cct
