#include "irgen/tiling.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "support/int_math.hpp"

namespace cct::irgen {
namespace {

// The distinct values of ceil(total / m) for m = 1..total, capped at `cap`:
// every mini-tile size that changes how many mini tiles cover `total`.
std::vector<int64_t> split_sizes(int64_t total, int64_t cap) {
  std::vector<int64_t> out;
  for (int64_t m = 1; m <= total; ++m) {
    int64_t v = ceil_div(total, m);
    if (v <= cap && (out.empty() || out.back() != v)) out.push_back(v);
  }
  if (out.empty()) out.push_back(1);
  return out;
}

// Bytes of one partial sum in the output L1 (32-bit accumulators).
constexpr int64_t kPartialSumBytes = 4;

}  // namespace

std::string TilePlan::cut_mode() const {
  if (cut.nh > 1) return "KH";
  if (cut.nw > 1) return "KW";
  return "KK";
}

int64_t Tiler::conv_cycles(const ConvShape& t, const MiniTile& m) const {
  timing::ConvTile ct;
  ct.n = t.n, ct.k = t.k, ct.c = t.c, ct.h = t.h, ct.w = t.w;
  ct.r = t.r, ct.s = t.s, ct.stride_h = t.stride_h, ct.stride_w = t.stride_w;
  ct.dilation_h = t.dilation_h, ct.dilation_w = t.dilation_w;
  ct.groups = t.grouped() ? t.k / t.group_out : 1;
  ct.mtk0 = m.mtk0, ct.mtc0 = m.mtc0, ct.mini_h = m.mini_h, ct.mini_w = m.mini_w;
  ct.in_bytes = t.in_bytes, ct.out_bytes = t.out_bytes;
  ct.weights_in_l2 = t.weights_in_l2;
  return timing::conv_cost(arch_, ct, "irgen tile").cycles;
}

MiniTile Tiler::best_mini(const ConvShape& t) {
  auto key = t.key();
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  const auto& core = arch_.core;
  const int64_t group_ch = std::max<int64_t>(1, core.l2_channel_align_bytes / t.in_bytes);
  const int64_t c_groups = ceil_div(round_up(t.c * t.in_bytes, core.l2_channel_align_bytes) / t.in_bytes, group_ch);
  const int64_t out_groups = ceil_div(t.k, core.pe_cols);
  const int64_t ol1_slots = std::max<int64_t>(1, core.ol1_bytes / (core.pe_cols * kPartialSumBytes));
  const auto mk_c = split_sizes(out_groups, ol1_slots);
  const auto mc_c = split_sizes(c_groups, c_groups);
  const auto mh_c = split_sizes(t.h, ol1_slots);
  const auto mw_c = split_sizes(t.w, ol1_slots);

  auto fits = [&](const MiniTile& m) {
    int64_t win = ((std::min(m.mini_h, t.h) - 1) * t.stride_h + (t.r - 1) * t.dilation_h + 1) *
                  ((std::min(m.mini_w, t.w) - 1) * t.stride_w + (t.s - 1) * t.dilation_w + 1);
    return m.mtk0 * m.mini_h * m.mini_w <= ol1_slots && m.mtc0 * group_ch * t.in_bytes * win <= core.al1_bytes;
  };
  auto eval = [&](MiniTile& m) {
    if (!fits(m)) return false;
    m.cycles = conv_cycles(t, m);
    return true;
  };

  // The smallest legal mini tile is the start (it always fits unless one
  // kernel window of 8 channels exceeds AL1, where nothing better exists).
  MiniTile best{1, 1, 1, 1, 0};
  best.cycles = conv_cycles(t, best);
  // Coordinate descent over the four parameters, from a few starts.
  std::vector<MiniTile> starts = {best};
  for (int64_t mc : {mc_c.front(), mc_c.back()})
    for (int64_t mh : {int64_t(1), mh_c.back() < 4 ? mh_c.back() : int64_t(2)}) {
      MiniTile s{1, mc, mh, mh, 0};
      if (eval(s)) starts.push_back(s);
    }
  for (MiniTile cur : starts) {
    if (cur.cycles == 0) continue;
    for (int round = 0; round < 6; ++round) {
      bool improved = false;
      auto try_values = [&](const std::vector<int64_t>& values, int64_t MiniTile::*field) {
        for (int64_t v : values) {
          if (v == cur.*field) continue;
          MiniTile cand = cur;
          cand.*field = v;
          if (eval(cand) && cand.cycles < cur.cycles) {
            cur = cand;
            improved = true;
          }
        }
      };
      try_values(mc_c, &MiniTile::mtc0);
      try_values(mk_c, &MiniTile::mtk0);
      try_values(mh_c, &MiniTile::mini_h);
      try_values(mw_c, &MiniTile::mini_w);
      if (!improved) break;
    }
    if (cur.cycles < best.cycles ||
        (cur.cycles == best.cycles && std::tie(cur.mtk0, cur.mtc0, cur.mini_h, cur.mini_w) <
                                          std::tie(best.mtk0, best.mtc0, best.mini_h, best.mini_w)))
      best = cur;
  }
  memo_.emplace(key, best);
  return best;
}

TilePlan Tiler::plan(const ConvShape& wl, int64_t max_tile_k) {
  // K cuts fall on array column blocks and, for grouped convolutions, on group boundaries.
  const int64_t cols = wl.grouped() ? std::lcm(arch_.core.pe_cols, wl.group_out) : arch_.core.pe_cols;
  std::vector<int64_t> nks;
  int64_t nk_min = 1;
  if (max_tile_k > 0 && wl.k > max_tile_k) nk_min = ceil_div(wl.k, std::max<int64_t>(cols, max_tile_k / cols * cols));
  for (int64_t nk : {nk_min, nk_min * 2, nk_min * 4})
    if (nk <= ceil_div(wl.k, cols) || nk == 1) nks.push_back(nk);
  std::vector<int64_t> nhs = {1}, nws = {1};
  if (!wl.weights_in_l2) {
    for (int64_t v : {2, 4})
      if (v <= wl.h) nhs.push_back(v);
    if (wl.w >= 2) nws.push_back(2);
  }

  auto parts = [](int64_t total, int64_t n, int64_t unit) {
    // n nearly equal parts, sizes multiples of `unit` but the last.
    std::vector<std::pair<int64_t, int64_t>> out;
    int64_t size = round_up(ceil_div(total, n), unit);
    for (int64_t o = 0; o < total; o += size) out.push_back({o, std::min(size, total - o)});
    return out;
  };

  TilePlan best;
  best.cycles = std::numeric_limits<int64_t>::max();
  for (int64_t nk : nks)
    for (int64_t nh : nhs)
      for (int64_t nw : nws) {
        if (nh > 1 && nw > 1) continue;  // one spatial cut direction per workload
        TilePlan p;
        p.cut = {nk, nh, nw};
        p.cycles = 0;
        for (auto [k0, kn] : parts(wl.k, nk, cols))
          for (auto [h0, hn] : parts(wl.h, nh, 1))
            for (auto [w0, wn] : parts(wl.w, nw, 1)) {
              ConvShape t = wl;
              t.k = kn, t.h = hn, t.w = wn;
              t.c = wl.tile_c(kn);
              PlannedTile pt;
              pt.offset = {0, k0, h0, w0};
              pt.extent = {wl.n, kn, hn, wn};
              pt.mini = best_mini(t);
              p.cycles += pt.mini.cycles;
              p.tiles.push_back(pt);
            }
        p.cut.nk = int64_t(parts(wl.k, nk, cols).size());
        if (p.cycles < best.cycles) best = std::move(p);
      }
  return best;
}

int64_t Tiler::vp_cycles(const timing::VpOp& op) const {
  timing::VpCost c = timing::vp_cost(arch_, op);
  return timing::vp_instruction_cycles(arch_, c.layer_cycles, 1);
}

}  // namespace cct::irgen
