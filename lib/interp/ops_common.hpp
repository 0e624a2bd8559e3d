// Internal helpers shared by the kernel files (not part of the public API).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "interp/ops.hpp"
#include "support/error.hpp"

namespace cct::interp::detail {

[[noreturn]] void fail(const Node& n, const std::string& what);

// The input at k, or a clear error when a required one is missing.
const Tensor& need(const Node& n, const KernelInputs& in, size_t k);
const Tensor* opt(const KernelInputs& in, size_t k);
// Requires a float tensor.
const Tensor& need_float(const Node& n, const KernelInputs& in, size_t k);

// Contiguous strides of a shape.
std::vector<int64_t> strides_of(const Shape& s);

// Strides of `s` (right-aligned) inside a broadcast to `out`; 0 where broadcast.
std::vector<int64_t> broadcast_strides(const Shape& out, const Shape& s);

// Walks the broadcast of shapes a and b into `out` one innermost run at a
// time: fn(out_offset, a_offset, a_step, b_offset, b_step, length), where the
// run covers out[out_offset + k] = f(a[a_offset + k*a_step], b[b_offset + k*b_step]).
template <class F>
void broadcast_runs(const Shape& out, const Shape& a, const Shape& b, F&& fn) {
  int64_t total = shape_numel(out);
  if (total == 0) return;
  if (out.empty()) {
    fn(int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{1});
    return;
  }
  std::vector<int64_t> sa = broadcast_strides(out, a), sb = broadcast_strides(out, b);
  size_t rank = out.size();
  int64_t inner = out[rank - 1];
  int64_t outer = total / inner;
  std::vector<int64_t> idx(rank, 0);
  int64_t ia = 0, ib = 0;
  for (int64_t o = 0; o < outer; ++o) {
    fn(o * inner, ia, sa[rank - 1], ib, sb[rank - 1], inner);
    // advance the odometer over dims [0, rank-1)
    for (size_t d = rank - 1; d-- > 0;) {
      ++idx[d];
      ia += sa[d];
      ib += sb[d];
      if (idx[d] < out[d]) break;
      ia -= sa[d] * out[d];
      ib -= sb[d] * out[d];
      idx[d] = 0;
    }
  }
}

// Registration: each kernel file adds its operators.
using KernelFn = void (*)(const Node&, int opset, const KernelInputs&, std::vector<Tensor>&);
using CheckFn = std::string (*)(const Node&, int opset, const Graph* g);  // "" when supported; g may be null
struct KernelEntry {
  const char* op;
  KernelFn fn;
  CheckFn check;  // may be null
};
void register_elementwise(std::vector<KernelEntry>& table);
void register_nn(std::vector<KernelEntry>& table);
void register_shape(std::vector<KernelEntry>& table);
void register_dynamic(std::vector<KernelEntry>& table);

}  // namespace cct::interp::detail
