#include "gemini/search.hpp"
#include "irgen/irgen.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <random>

#include "support/error.hpp"

namespace cct::gemini {
namespace {

// Portable random numbers: the engine is specified by the standard, the
// distributions below are ours (libstdc++'s differ from other libraries').
class Rng {
 public:
  explicit Rng(uint64_t seed) : e_(seed) {}
  // Uniform in [0, n), n >= 1, without modulo bias.
  int64_t below(int64_t n) {
    const uint64_t un = uint64_t(n);
    const uint64_t limit = UINT64_MAX - UINT64_MAX % un;
    uint64_t x;
    do x = e_();
    while (x >= limit);
    return int64_t(x % un);
  }
  // Uniform in [0, 1).
  double real() { return double(e_() >> 11) * 0x1.0p-53; }

 private:
  std::mt19937_64 e_;
};

using Clock = std::chrono::steady_clock;

// Segments before the one being annealed that its objective includes.
constexpr size_t kWindow = 1;
// On one core: the most layers a segment sharing it holds (the segmentation's
// candidates grow with it). ResNet-50 b64 on zebu-1core: 87.70M zebusim
// cycles with 12, 82.83M with 24, 82.78M with 36 (gemini 10.6, 14.8, 13.3 s
// on a loaded machine); b16 20.59M with 12, 19.94M with 24.
constexpr int kSharedLayers = 24;
// Workload evaluations the per-segment annealing may spend (effort 1).
constexpr int64_t kAnnealBudget = 1000000;
// Cost-model work (CostModel::work, flow updates) the per-segment annealing
// may spend (effort 1). On the 8-core chip the budget above binds first; on
// big chips, where every evaluation moves many more transfers at once, this
// does, so that the search takes about as long (the iteration counts are cut
// before the annealing starts, so the cooling schedule stays whole and the
// result deterministic).
constexpr int64_t kAnnealWork = 250000000;
// Cost-model work the whole-plan candidates (sequential, batch split) and
// then the segment sweeps of the chosen plan may spend (effort 1).
constexpr int64_t kCandidatesWork = 100000000;
constexpr int64_t kSweepWork = 60000000;
// Cost-model work the last phase, single partition changes judged on the
// whole plan, may spend (effort 1), and the least gain it keeps. Smaller
// gains are within the model's error and, taken by the dozen, lead the plan
// where the model is wrong (ResNet-50 b4 on chip-64tops, all gains kept:
// 737,194 zebusim cycles on 60M of work, 775,062 on 120M; at least 0.1%:
// 737,755, done in 82M; at least 0.3%: 739,913).
constexpr int64_t kPolishWork = 100000000;
constexpr double kPolishGain = 0.001;
// The polish prices whole plans only for partitions whose quick score is at
// most this many times the current one's (ResNet-50 b1 on chip-64tops: the
// same mapping, search 2.2 -> 1.9 s; at 1.2 b1 lost 1%).
constexpr double kPolishScoreSlack = 1.5;
// Segments after it (as the segmentation left them).
constexpr size_t kAhead = 1;
// Chips with more cores than this do proportionally fewer moves: each move
// prices more transfers sharing more links. (ResNet-50 b1 on chip-6x6-2x2:
// with 24 here, 784257 cycles predicted in 5.1-6.4 s; with 20, 771623 in
// 4.7-4.9 s on the same loaded machine.)
constexpr double kCoresAtFullEffort = 20.0;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Cores along a path that visits each compute die row by row, alternating
// direction, dies in package order (rows of dies, alternating too), so that
// neighbours on the path are neighbours on the chip.
std::vector<int> snake_order(const arch::Architecture& a) {
  std::vector<int> dies;
  for (size_t d = 0; d < a.dies.size(); ++d)
    if (a.dies[d].is_compute()) dies.push_back(int(d));
  std::stable_sort(dies.begin(), dies.end(), [&](int x, int y) {
    const auto &dx = a.dies[size_t(x)], &dy = a.dies[size_t(y)];
    int kx = dx.position_y % 2 ? -dx.position_x : dx.position_x;
    int ky = dy.position_y % 2 ? -dy.position_x : dy.position_x;
    return std::tie(dx.position_y, kx) < std::tie(dy.position_y, ky);
  });
  std::vector<int> order;
  for (int d : dies) {
    const auto& die = a.dies[size_t(d)];
    for (int y = 0; y < die.mesh_y; ++y)
      for (int i = 0; i < die.mesh_x; ++i) {
        int x = y % 2 ? die.mesh_x - 1 - i : i;
        order.push_back(a.core_id(d, x, y));
      }
  }
  return order;
}

class Searcher {
 public:
  Searcher(const CostModel& m, const SearchOptions& o)
      : model_(m), net_(m.network()), a_(m.arch()), opt_(o), rng_(o.seed), C_(m.arch().core_count()) {
    order_ = snake_order(a_);
    dist_.assign(size_t(C_) * size_t(C_), 0);
    // A die crossing counts as many hops as its latency is worth.
    const int crossing = a_.noc.hop_latency_cycles > 0
                             ? std::max(1, int(std::lround(a_.d2d.latency_cycles / a_.noc.hop_latency_cycles)))
                             : 1;
    for (int x = 0; x < C_; ++x)
      for (int y = 0; y < C_; ++y) {
        auto r = a_.core_route(x, y);
        dist_[size_t(x) * size_t(C_) + size_t(y)] = r.mesh_hops + crossing * r.d2d_crossings;
        max_dist_ = std::max(max_dist_, dist_[size_t(x) * size_t(C_) + size_t(y)]);
      }
    nch_ = int(a_.dram_channels.size());
    groups_ = divisors(net_.batch);
  }

  // ---- shared helpers

  // A layer's k parts hold whole groups of this many output channels.
  int64_t unit_of(int layer) const { return k_unit(net_.layers[size_t(layer)]); }

  const std::vector<int>& counts(int layer, int64_t G) {
    auto key = std::make_pair(layer, G);
    auto it = counts_.find(key);
    if (it == counts_.end())
      it = counts_.emplace(key, feasible_core_counts(group_dims(net_.layers[size_t(layer)], G), C_, unit_of(layer))).first;
    return it->second;
  }

  // A quick per-core time of a layer with a partition: compute, weights and
  // inputs brought in at one stream's bandwidth.
  double quick_score(int layer, const mapping::Partition& p, int64_t G) {
    const Layer& L = net_.layers[size_t(layer)];
    double compute = double(model_.part_cycles(layer, p, G)) * double(G);
    double bw = model_.dram_stream_bytes_per_cycle();
    double bytes = double(model_.part_weight_bytes(layer, p));
    mapping::Box box = mapping::part_box(p, group_dims(L, G), 0);
    for (size_t i = 0; i < L.inputs.size(); ++i) {
      Dims e = extent(input_region(net_, L, i, box));
      bytes += double(G) * double(timing::activation_bytes(a_, e[0], e[1], e[2], e[3], L.inputs[i].bytes));
    }
    return std::max(compute, bytes / bw) + 0.25 * std::min(compute, bytes / bw);
  }

  mapping::Partition best_partition(int layer, int64_t n, int64_t G) {
    auto key = std::make_tuple(layer, n, G);
    if (auto it = best_part_.find(key); it != best_part_.end()) return it->second;
    auto parts = partitions_of(group_dims(net_.layers[size_t(layer)], G), n, unit_of(layer));
    mapping::Partition best;
    double best_score = std::numeric_limits<double>::infinity();
    for (const auto& p : parts) {
      double s = quick_score(layer, p, G);
      if (s < best_score) best_score = s, best = p;
    }
    best_part_.emplace(key, best);
    return best;
  }

  void default_channels(LayerPlan& lp) const {
    if (nch_ <= 1) return;
    lp.dram.weights = lp.layer % nch_;
    lp.dram.ifmap = (lp.layer + 1) % nch_;
    lp.dram.ofmap = (lp.layer + 2) % nch_;
  }

  // The most layers one segment holds: one per core, or on one core up to
  // kSharedLayers sharing it.
  int segment_layers() const { return C_ == 1 ? kSharedLayers : C_; }

  // Cores in proportion to each layer's work, then laid out along the snake.
  // Whether layers [first, last] hold both an input of a host step and a
  // reader of its result. Such a segment cannot be built: the step runs once
  // for the whole batch between its stores and its loads, so the segment's
  // pipeline (batch groups, early sends) would wait on itself; the segment
  // ends before the reader instead.
  bool spans_host(int first, int last) const {
    for (int r = first; r <= last; ++r)
      for (const LayerInput& in : net_.layers[size_t(r)].inputs) {
        if (in.host_step < 0) continue;
        for (int li : net_.host_steps[size_t(in.host_step)].inputs)
          if (li >= first && li < r) return true;
      }
    return false;
  }

  SegmentPlan initial_segment(int first, int last, int64_t G) {
    SegmentPlan sp;
    sp.batch_groups = G;
    const int n = last - first + 1;
    std::vector<double> work(static_cast<size_t>(n));
    std::vector<int> cnt(static_cast<size_t>(n), 1);
    for (int i = 0; i < n; ++i) work[size_t(i)] = quick_score(first + i, mapping::Partition{}, G);
    int remaining = C_ - n;
    while (remaining > 0) {
      int pick = -1, next = 0;
      double worst = -1;
      for (int i = 0; i < n; ++i) {
        const auto& cs = counts(first + i, G);
        auto it = std::upper_bound(cs.begin(), cs.end(), cnt[size_t(i)]);
        if (it == cs.end() || *it - cnt[size_t(i)] > remaining) continue;
        double per_core = work[size_t(i)] / double(cnt[size_t(i)]);
        if (per_core > worst) worst = per_core, pick = i, next = *it;
      }
      if (pick < 0) break;
      remaining -= next - cnt[size_t(pick)];
      cnt[size_t(pick)] = next;
    }
    size_t at = 0;
    for (int i = 0; i < n; ++i) {
      LayerPlan lp;
      lp.layer = first + i;
      lp.part = best_partition(lp.layer, cnt[size_t(i)], G);
      // More layers than cores (one core): they share it, in turn per group.
      for (int k = 0; k < cnt[size_t(i)]; ++k) lp.cores.push_back(order_[at++ % size_t(C_)]);
      default_channels(lp);
      sp.layers.push_back(std::move(lp));
    }
    return sp;
  }

  // Segments [lo, hi) of a plan, after the earlier segments that produce
  // inputs of their data movement layers (in plan order). A layer outside a
  // partial plan is taken to be in DRAM; a movement costs nothing but its
  // transfers, so one reading tensors kept far back (a concatenation of a
  // dense block's features) would be priced as loading them, which favours
  // partitions (k parts of a concatenation take fewer DRAM pieces) that cost
  // more where its inputs really are. Computing layers keep the plain
  // window: their compute dominates, and wider windows leave the sweeps'
  // budget fewer changes (every producer in: ResNet-50 b4 on chip-64tops
  // 773752 -> 860990 zebusim cycles). *at: where segment lo lands.
  Plan window_of(const Plan& plan, size_t lo, size_t hi, size_t* at) const {
    std::vector<char> wanted(net_.layers.size(), 0);
    for (size_t k = lo; k < hi; ++k)
      for (const auto& lp : plan.segments[k].layers)
        if (net_.layers[size_t(lp.layer)].move)
          for (const auto& in : net_.layers[size_t(lp.layer)].inputs)
            if (in.producer >= 0) wanted[size_t(in.producer)] = 1;
    Plan w;
    for (size_t k = 0; k < lo; ++k) {
      bool produces = false;
      for (const auto& lp : plan.segments[k].layers) produces = produces || wanted[size_t(lp.layer)];
      if (produces) w.segments.push_back(plan.segments[k]);
    }
    *at = w.segments.size();
    w.segments.insert(w.segments.end(), plan.segments.begin() + std::ptrdiff_t(lo), plan.segments.begin() + std::ptrdiff_t(hi));
    return w;
  }

  // The objective's value of a plan (whole or partial).
  double plan_value(const Plan& plan, PlanCost* cost_out = nullptr) {
    ++stats_.evaluations;
    PlanCost c = model_.evaluate(plan, false, /*program_frame=*/false);
    double v = c.value(opt_.objective, a_);
    if (cost_out) *cost_out = std::move(c);
    return v;
  }

  bool out_of_time() {
    if (opt_.time_limit <= 0) return false;
    if (seconds_since(t0_) >= opt_.time_limit) stats_.timed_out = true;
    return stats_.timed_out;
  }

  // ---- 1. segmentation

  // The cost of a candidate segment is what it adds to the best plan before
  // it, priced after that plan's last segment: what overlaps across the
  // boundary (weights loaded ahead, cores finishing at different times)
  // counts, at the cost of a two-segment evaluation.
  std::vector<SegmentPlan> segment_dp() {
    const int n = int(net_.layers.size());
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> best(static_cast<size_t>(n) + 1, inf);
    std::vector<int> from(static_cast<size_t>(n) + 1, -1);
    std::vector<SegmentPlan> choice(static_cast<size_t>(n) + 1);
    std::vector<double> alone(static_cast<size_t>(n) + 1, 0);  // value of choice[i] by itself
    best[0] = 0;
    // Segment lengths tried: every length up to 16 layers, then steps of
    // about an eighth (long segments only exist on chips with many cores,
    // where each costs more to price).
    // On one core, segments of up to kSharedLayers layers sharing it.
    std::vector<int> lengths;
    const int longest = std::min(segment_layers(), n);
    for (int len = 1; len <= longest; len += len < 16 ? 1 : std::max(1, len / 8)) lengths.push_back(len);
    int64_t total_pairs = 0;
    for (int j = 0; j < n; ++j)
      for (int len : lengths) total_pairs += len <= j + 1;
    int64_t done = 0;
    for (int j = 0; j < n; ++j) {
      if (out_of_time()) {
        // Out of time: the rest one layer per segment, unpriced.
        best[size_t(j) + 1] = best[size_t(j)];
        from[size_t(j) + 1] = j;
        choice[size_t(j) + 1] = initial_segment(j, j, 1);
        continue;
      }
      for (int len : lengths) {
        if (len > j + 1) break;
        const int i = j - len + 1;
        ++done;
        if (spans_host(i, j)) break;  // longer ones too
        if (best[size_t(i)] == inf) continue;
        double seg_best = inf, seg_alone = 0;
        SegmentPlan seg_plan;
        bool any_fits = false;
        for (int64_t G : groups_) {
          Plan two;
          if (i > 0) two.segments.push_back(choice[size_t(i)]);
          two.segments.push_back(initial_segment(i, j, G));
          PlanCost c;
          double v = plan_value(two, &c) - alone[size_t(i)];
          any_fits = any_fits || c.feasible();
          if (v < seg_best) {
            seg_best = v;
            seg_plan = std::move(two.segments.back());
          }
        }
        if (best[size_t(i)] + seg_best < best[size_t(j) + 1]) {
          best[size_t(j) + 1] = best[size_t(i)] + seg_best;
          from[size_t(j) + 1] = i;
          choice[size_t(j) + 1] = seg_plan;
          (void)seg_alone;
        }
        // Longer segments ending here only hold more: stop where buffers overflow.
        if (!any_fits) break;
      }
      if (from[size_t(j) + 1] >= 0) {
        Plan one;
        one.segments.push_back(choice[size_t(j) + 1]);
        alone[size_t(j) + 1] = plan_value(one);
      }
      if (opt_.progress) opt_.progress(0.2 * double(done) / double(std::max<int64_t>(1, total_pairs)));
    }
    stats_.dp_evaluations = stats_.evaluations;
    stats_.dp_seconds = seconds_since(t0_);
    stats_.dp_work = model_.work();
    std::vector<SegmentPlan> segs;
    for (int j = n; j > 0; j = from[size_t(j)]) {
      if (from[size_t(j)] < 0) throw Error(kExitInternal, "gemini: segmentation found no plan");
      segs.push_back(choice[size_t(j)]);
    }
    std::reverse(segs.begin(), segs.end());
    return segs;
  }

  // ---- 2. annealing

  // Core -> (layer position, slot) in the segment; -1 for unused cores.
  struct Owner {
    int pos = -1, slot = -1;
  };
  std::vector<Owner> owners(const SegmentPlan& sp) const {
    std::vector<Owner> o(static_cast<size_t>(C_));
    for (size_t p = 0; p < sp.layers.size(); ++p)
      for (size_t s = 0; s < sp.layers[p].cores.size(); ++s) o[size_t(sp.layers[p].cores[s])] = {int(p), int(s)};
    return o;
  }
  int dist(int x, int y) const { return dist_[size_t(x) * size_t(C_) + size_t(y)]; }

  bool move_swap(SegmentPlan& sp, double heat) {
    LayerPlan& A = sp.layers[size_t(rng_.below(int64_t(sp.layers.size())))];
    int slot = int(rng_.below(int64_t(A.cores.size())));
    int x = A.cores[size_t(slot)];
    int radius = std::max(1, int(std::lround(double(max_dist_) * heat)));
    std::vector<int> near;
    for (int y = 0; y < C_; ++y)
      if (y != x && dist(x, y) <= radius) near.push_back(y);
    if (near.empty()) return false;
    int y = near[size_t(rng_.below(int64_t(near.size())))];
    auto own = owners(sp);
    Owner oy = own[size_t(y)];
    if (oy.pos < 0) {
      A.cores[size_t(slot)] = y;
    } else {
      sp.layers[size_t(oy.pos)].cores[size_t(oy.slot)] = x;
      A.cores[size_t(slot)] = y;
    }
    return true;
  }

  void repartition(LayerPlan& lp, int64_t G) {
    if (rng_.real() < 0.7) {
      lp.part = best_partition(lp.layer, int64_t(lp.cores.size()), G);
    } else {
      auto parts = partitions_of(group_dims(net_.layers[size_t(lp.layer)], G), int64_t(lp.cores.size()), unit_of(lp.layer));
      lp.part = parts[size_t(rng_.below(int64_t(parts.size())))];
    }
  }

  // Gives a layer more cores (from unused cores, then from a donor layer),
  // or takes some away.
  bool move_cores(SegmentPlan& sp) {
    const int64_t G = sp.batch_groups;
    const int n = int(sp.layers.size());
    auto own = owners(sp);
    std::vector<int> unused;
    for (int c = 0; c < C_; ++c)
      if (own[size_t(c)].pos < 0) unused.push_back(c);
    if (rng_.real() < 0.5) {
      // Grow B.
      LayerPlan& B = sp.layers[size_t(rng_.below(n))];
      const auto& cs = counts(B.layer, G);
      auto it = std::upper_bound(cs.begin(), cs.end(), int(B.cores.size()));
      if (it == cs.end()) return false;
      int need = *it - int(B.cores.size());
      int anchor = B.cores[0];
      auto nearest = [&](std::vector<int>& pool) {
        std::stable_sort(pool.begin(), pool.end(), [&](int p, int q) { return dist(anchor, p) < dist(anchor, q); });
      };
      std::vector<int> got;
      nearest(unused);
      for (int c : unused)
        if (int(got.size()) < need) got.push_back(c);
      if (int(got.size()) < need) {
        if (n < 2) return false;
        int ai = int(rng_.below(n - 1));
        if (ai >= int(&B - &sp.layers[0])) ++ai;
        LayerPlan& A = sp.layers[size_t(ai)];
        const auto& ca = counts(A.layer, G);
        int short_by = need - int(got.size());
        // The largest feasible count of A that frees enough cores.
        int target = -1;
        for (int c : ca)
          if (c <= int(A.cores.size()) - short_by) target = c;
        if (target < 1) return false;
        std::vector<int> give = A.cores;
        nearest(give);
        std::vector<int> keep;
        int freed = int(A.cores.size()) - target;
        // A keeps the cores farthest from B, gives the nearest.
        std::vector<int> given(give.begin(), give.begin() + freed);
        for (int c : A.cores)
          if (std::find(given.begin(), given.end(), c) == given.end()) keep.push_back(c);
        A.cores = keep;
        repartition(A, G);
        for (int c : given)
          if (int(got.size()) < need) got.push_back(c);
      }
      for (int c : got) B.cores.push_back(c);
      repartition(B, G);
      return true;
    }
    // Shrink A to its next smaller feasible count.
    LayerPlan& A = sp.layers[size_t(rng_.below(n))];
    const auto& ca = counts(A.layer, G);
    auto it = std::lower_bound(ca.begin(), ca.end(), int(A.cores.size()));
    if (it == ca.begin()) return false;
    int target = *(it - 1);
    // Drop random cores.
    while (int(A.cores.size()) > target) A.cores.erase(A.cores.begin() + rng_.below(int64_t(A.cores.size())));
    repartition(A, G);
    return true;
  }

  bool move_partition(SegmentPlan& sp) {
    LayerPlan& lp = sp.layers[size_t(rng_.below(int64_t(sp.layers.size())))];
    auto parts = partitions_of(group_dims(net_.layers[size_t(lp.layer)], sp.batch_groups), int64_t(lp.cores.size()),
                               unit_of(lp.layer));
    if (parts.size() < 2) return false;
    mapping::Partition p = parts[size_t(rng_.below(int64_t(parts.size())))];
    if (p == lp.part) return false;
    lp.part = p;
    return true;
  }

  bool move_channel(SegmentPlan& sp) {
    if (nch_ < 2) return false;
    LayerPlan& lp = sp.layers[size_t(rng_.below(int64_t(sp.layers.size())))];
    int64_t ch = rng_.below(nch_);
    switch (rng_.below(3)) {
      case 0:
        if (!net_.layers[size_t(lp.layer)].pe() || lp.dram.weights == ch) return false;
        lp.dram.weights = ch;
        break;
      case 1:
        if (lp.dram.ifmap == ch) return false;
        lp.dram.ifmap = ch;
        break;
      default:
        if (lp.dram.ofmap == ch) return false;
        lp.dram.ofmap = ch;
        break;
    }
    return true;
  }

  bool move_groups(SegmentPlan& sp) {
    if (groups_.size() < 2) return false;
    int64_t G = groups_[size_t(rng_.below(int64_t(groups_.size())))];
    if (G == sp.batch_groups) return false;
    return set_groups(sp, G);
  }

  // The segment with G batch groups: each layer keeps the largest feasible
  // core count it can, and its partition if still valid.
  bool set_groups(SegmentPlan& sp, int64_t G) {
    for (auto& lp : sp.layers) {
      const auto& cs = counts(lp.layer, G);
      int n = 0;
      for (int c : cs)
        if (c <= int(lp.cores.size())) n = c;
      lp.cores.resize(size_t(n));
      auto parts = partitions_of(group_dims(net_.layers[size_t(lp.layer)], G), n, unit_of(lp.layer));
      if (std::find(parts.begin(), parts.end(), lp.part) == parts.end()) lp.part = best_partition(lp.layer, n, G);
    }
    sp.batch_groups = G;
    return true;
  }

  bool mutate(SegmentPlan& sp, double heat) {
    double r = rng_.real();
    if (r < 0.35) return move_swap(sp, heat);
    if (r < 0.60) return move_cores(sp);
    if (r < 0.80) return move_partition(sp);
    if (r < 0.90) return move_channel(sp);
    return move_groups(sp);
  }

  // Anneals segment `s` of `plan` (the segments before it are final). The
  // objective is the cost of the segment run after the one before it, which
  // accounts for what carries over (cores finishing at different times, data
  // kept in a core's L2, weights loaded ahead) at a fraction of the cost of
  // the whole plan.
  void anneal(Plan& plan, size_t s, int64_t iterations, int64_t work_budget, double deadline, double progress_from,
              double progress_span) {
    Plan prefix;
    const size_t lo = s > kWindow ? s - kWindow : 0, hi = std::min(plan.segments.size(), s + kAhead + 1);
    prefix.segments.assign(plan.segments.begin() + std::ptrdiff_t(lo), plan.segments.begin() + std::ptrdiff_t(hi));
    const size_t at = s - lo;
    SegmentPlan cur = prefix.segments[at];
    const int64_t w0 = model_.work();
    double cur_v = plan_value(prefix);
    iterations = std::min(iterations, work_budget / std::max<int64_t>(1, model_.work() - w0));
    SegmentPlan best = cur;
    double best_v = cur_v;
    if (iterations > 0) {
      const double t0 = 0.05 * cur_v;  // the paper starts from the initial cost
      const double t_end = 1e-4 * cur_v;
      const double alpha = std::pow(t_end / t0, 1.0 / double(iterations));
      double temp = t0;
      for (int64_t it = 0; it < iterations; ++it, temp *= alpha) {
        if ((it & 15) == 0) {
          if (out_of_time() || (deadline > 0 && seconds_since(t0_) >= deadline)) break;
          if (opt_.progress && (it & 63) == 0)
            opt_.progress(progress_from + progress_span * double(it) / double(iterations));
        }
        SegmentPlan cand = cur;
        if (!mutate(cand, temp / t0)) continue;
        prefix.segments[at] = cand;
        double v = plan_value(prefix);
        if (v < cur_v || rng_.real() < std::exp(-(v - cur_v) / temp)) {
          cur = std::move(cand);
          cur_v = v;
          ++stats_.accepted;
          if (v < best_v) {
            best = cur;
            best_v = v;
            ++stats_.improved;
          }
        }
      }
    }
    plan.segments[s] = std::move(best);
  }

  // Tries, one segment at a time, every other partition of each layer's
  // cores, every other batch-group count, merging it with the next segment
  // and splitting it in two (first allocations, as the segmentation makes
  // them), each judged next to the neighbouring segments (as the annealing
  // judges them); the changes that gain most there are then kept one by one
  // if the whole plan gains too. The whole-plan candidates (sequential,
  // batch split) come with one rule for every layer; this fits each
  // layer's, such as a classifier whose weights would otherwise load once
  // per batch split. Stops when the work budget is spent.
  double sweep_segments(Plan& plan, double value, int64_t work_budget) {
    struct Change {
      double gain;
      int first, last;                  // the layers whose segments it replaces
      std::vector<SegmentPlan> segments;
      bool split = false;               // a segment split in two (tried first)
    };
    std::vector<Change> changes;
    const int64_t w0 = model_.work();
    const size_t n = plan.segments.size();
    auto spent = [&]() { return model_.work() - w0 > work_budget / 2 || out_of_time(); };
    // Segments [s, s + count) replaced by `with`, priced with one neighbour
    // on each side; gain over the plan as it is.
    auto gain_of = [&](size_t s, size_t count, const std::vector<SegmentPlan>& with, double* base) {
      const size_t lo = s > kWindow ? s - kWindow : 0, hi = std::min(n, s + count + kAhead);
      size_t first = 0;
      Plan window = window_of(plan, lo, hi, &first);
      if (*base < 0) *base = plan_value(window);
      const size_t at = first + s - lo;
      window.segments.erase(window.segments.begin() + std::ptrdiff_t(at), window.segments.begin() + std::ptrdiff_t(at + count));
      window.segments.insert(window.segments.begin() + std::ptrdiff_t(at), with.begin(), with.end());
      return *base - plan_value(window);
    };
    for (size_t s = 0; s < n && !spent(); ++s) {
      const SegmentPlan& original = plan.segments[s];
      // The window's value as the plan is, once per extent: a change of one
      // segment is priced over a narrower window than a merge of two.
      double base[2] = {-1, -1};
      // The best change of each kind (a partition, the group count, a merge,
      // a split) is tried on the whole plan; the best split whatever it
      // gains in the window, and the splits first. The window prices a
      // split poorly: one that gains nothing next to its neighbours can gain
      // most in the whole plan (ResNeXt-50 b4 on chip-64tops: 986,652
      // zebusim cycles when only the largest window gain of each segment is
      // tried, 909,475 so).
      enum Kind { kPartition, kGroups, kMerge, kSplit, kKinds };
      std::vector<Change> best(kKinds, Change{0, original.first(), original.last(), {}});
      auto consider = [&](Kind kind, size_t count, std::vector<SegmentPlan> with) {
        double g = gain_of(s, count, with, &base[count - 1]);
        Change& b = best[kind];
        const bool enough = kind == kSplit || g > 0.002 * base[count - 1];
        if (enough && (b.segments.empty() || g > b.gain)) {
          b.gain = g;
          b.last = plan.segments[s + count - 1].last();
          b.segments = std::move(with);
        }
      };
      for (size_t pos = 0; pos < original.layers.size() && !spent(); ++pos) {
        const LayerPlan& lp = original.layers[pos];
        for (const auto& p : partitions_of(group_dims(net_.layers[size_t(lp.layer)], original.batch_groups),
                                           int64_t(lp.cores.size()), unit_of(lp.layer))) {
          if (p == lp.part || spent()) continue;
          SegmentPlan sp = original;
          sp.layers[pos].part = p;
          consider(kPartition, 1, {sp});
        }
      }
      for (int64_t G : groups_) {
        SegmentPlan sp = original;
        if (G == original.batch_groups || spent() || !set_groups(sp, G)) continue;
        consider(kGroups, 1, {sp});
      }
      // Merged with the next segment; split in two.
      if (s + 1 < n && int(original.layers.size() + plan.segments[s + 1].layers.size()) <= segment_layers() &&
          !spans_host(original.first(), plan.segments[s + 1].last()))
        for (int64_t G : groups_)
          if (!spent()) consider(kMerge, 2, {initial_segment(original.first(), plan.segments[s + 1].last(), G)});
      for (int at = original.first() + 1; at <= original.last() && !spent(); ++at)
        consider(kSplit, 1, {initial_segment(original.first(), at - 1, original.batch_groups),
                             initial_segment(at, original.last(), original.batch_groups)});
      best[kSplit].split = true;
      for (Change& c : best)
        if (!c.segments.empty()) changes.push_back(std::move(c));
      if (opt_.progress)
        opt_.progress(0.9 + 0.1 * std::min(1.0, double(model_.work() - sweep_w0_) / double(std::max<int64_t>(1, sweep_budget_))));
    }
    std::stable_sort(changes.begin(), changes.end(), [](const Change& x, const Change& y) {
      return x.split != y.split ? x.split : x.gain > y.gain;
    });
    for (Change& c : changes) {
      if (model_.work() - w0 > work_budget || out_of_time()) break;
      // The segments it replaces, unless an earlier change moved their bounds.
      size_t i = 0;
      while (i < plan.segments.size() && plan.segments[i].first() != c.first) ++i;
      size_t j = i;
      while (j < plan.segments.size() && plan.segments[j].last() < c.last) ++j;
      if (j >= plan.segments.size() || plan.segments[j].last() != c.last) continue;
      std::vector<SegmentPlan> cur(plan.segments.begin() + std::ptrdiff_t(i), plan.segments.begin() + std::ptrdiff_t(j + 1));
      if (cur == c.segments) continue;
      plan.segments.erase(plan.segments.begin() + std::ptrdiff_t(i), plan.segments.begin() + std::ptrdiff_t(j + 1));
      plan.segments.insert(plan.segments.begin() + std::ptrdiff_t(i), c.segments.begin(), c.segments.end());
      double v = plan_value(plan);
      if (v < value) {
        value = v;
        ++stats_.improved;
      } else {
        plan.segments.erase(plan.segments.begin() + std::ptrdiff_t(i),
                            plan.segments.begin() + std::ptrdiff_t(i + c.segments.size()));
        plan.segments.insert(plan.segments.begin() + std::ptrdiff_t(i), cur.begin(), cur.end());
      }
    }
    return value;
  }

  // Sweeps until one gains nothing or the budget is spent; `v` is the
  // plan's value.
  void sweep(Plan& plan, double v) {
    sweep_budget_ = int64_t(double(opt_.effort) * double(kSweepWork));
    sweep_w0_ = model_.work();
    while (model_.work() - sweep_w0_ < sweep_budget_ && !out_of_time()) {
      double w = sweep_segments(plan, v, sweep_budget_ - (model_.work() - sweep_w0_));
      if (w >= v) break;
      v = w;
    }
  }

  // The last phase: each layer's other partitions, one at a time, each judged
  // on the whole plan (the sweeps judge them next to the neighbouring
  // segments only, where a change that gains in the whole plan can lose),
  // kept when it gains enough; again while a pass gains and the budget
  // lasts. ResNet-50 on chip-64tops, zebusim cycles without and with it: b1
  // 309,853 -> 304,418, b4 751,020 -> 737,755.
  // It runs only where one whole pass fits its budget (ResNet-50 b64 on
  // chip-64tops: a pass would take twice the budget; its first 313 changes
  // took 30 s and gained nothing).
  void polish(Plan& plan) {
    const int64_t budget = int64_t(double(opt_.effort) * double(kPolishWork));
    int64_t w0 = model_.work();
    double v = plan_value(plan);
    const int64_t per_change = std::max<int64_t>(1, model_.work() - w0);
    // A layer's partitions worth a whole-plan price: those its quick score
    // does not put far behind the one it has.
    auto candidates = [&](const SegmentPlan& sp, const LayerPlan& lp) {
      std::vector<mapping::Partition> out;
      const double own = quick_score(lp.layer, lp.part, sp.batch_groups);
      for (const auto& p : partitions_of(group_dims(net_.layers[size_t(lp.layer)], sp.batch_groups),
                                         int64_t(lp.cores.size()), unit_of(lp.layer)))
        if (!(p == lp.part) && quick_score(lp.layer, p, sp.batch_groups) <= kPolishScoreSlack * own) out.push_back(p);
      return out;
    };
    int64_t changes = 0;
    for (const SegmentPlan& sp : plan.segments)
      for (const LayerPlan& lp : sp.layers) changes += int64_t(candidates(sp, lp).size());
    if (changes * per_change > budget) return;
    w0 = model_.work();
    auto spent = [&]() { return model_.work() - w0 > budget || out_of_time(); };
    for (bool gained = true; gained && !spent();) {
      gained = false;
      for (size_t s = 0; s < plan.segments.size() && !spent(); ++s)
        for (size_t pos = 0; pos < plan.segments[s].layers.size() && !spent(); ++pos) {
          for (const auto& p : candidates(plan.segments[s], plan.segments[s].layers[pos])) {
            if (spent()) break;
            const mapping::Partition before = plan.segments[s].layers[pos].part;
            plan.segments[s].layers[pos].part = p;
            const double w = plan_value(plan);
            if (w < v * (1 - kPolishGain)) v = w, gained = true;
            else plan.segments[s].layers[pos].part = before;
          }
        }
    }
  }

  SearchResult run() {
    t0_ = Clock::now();
    SearchResult res;
    if (C_ == 1) {
      // One layer per segment, split where one workload's own data does
      // not fit L2 (relieve()). With a batch to cut into groups, also the
      // segmentation with layers sharing the core (a few samples at a time
      // through several layers in L2, formats/Mapping_Format.md), when the
      // model prices it faster.
      res.plan = single_core_plan(net_);
      relieve(res.plan);
      if (groups_.size() > 1) {
        Plan shared;
        shared.segments = segment_dp();
        // The segmentation prices each segment after its predecessor only:
        // the sweeps (merges, splits, group counts) judge whole plans.
        sweep(shared, plan_value(shared));
        relieve(shared);
        fit(shared);
        if (plan_value(shared) < plan_value(res.plan)) res.plan = std::move(shared);
      }
    } else {
      res.plan.segments = segment_dp();
      const Plan segmented = res.plan;
      const size_t n = res.plan.segments.size();
      auto workloads = [](const SegmentPlan& sp) {
        int64_t w = 0;
        for (const auto& lp : sp.layers) w += int64_t(lp.cores.size()) * sp.batch_groups;
        return w;
      };
      for (size_t s = 0; s < n; ++s) {
        // Moves per segment grow with its layers, up to a share of a budget
        // of workload evaluations (its window's workloads make a move cost
        // more on big chips and batches).
        const int64_t layers = int64_t(res.plan.segments[s].layers.size());
        int64_t window = 0;
        for (size_t k = s > kWindow ? s - kWindow : 0; k < std::min(n, s + kAhead + 1); ++k)
          window += workloads(res.plan.segments[k]);
        const double share = double(kAnnealBudget) * double(layers) / double(net_.layers.size());
        // More cores also mean more transfers sharing links per workload.
        const double per_core = std::clamp(kCoresAtFullEffort / double(C_), 0.1, 1.0);
        int64_t iterations =
            int64_t(double(opt_.effort) *
                    std::min(per_core * double(150 + 40 * layers), share / double(std::max<int64_t>(1, window))));
        double deadline = 0;
        if (opt_.time_limit > 0) {
          double left = opt_.time_limit - seconds_since(t0_);
          deadline = seconds_since(t0_) + std::max(0.0, left) / double(n - s);
        }
        if (out_of_time()) break;
        const int64_t work = int64_t(double(opt_.effort) * double(kAnnealWork) * double(layers) / double(net_.layers.size()));
        anneal(res.plan, s, iterations, work, deadline, 0.2 + 0.7 * double(s) / double(n), 0.7 / double(n));
      }
      // The annealing judged each segment next to its neighbours only; start
      // the last phase from whichever whole plan is best: annealed, as
      // segmented, or the sequential baseline (a plan the search space holds).
      double best_v = plan_value(res.plan);
      // The batch-split plans last: on a big chip each costs a lot to price,
      // and they stop when the whole-plan work budget is spent.
      std::vector<Plan> others = {segmented, sequential_plan(model_, opt_.objective)};
      for (Plan& p : batch_split_plans(model_)) others.push_back(std::move(p));
      const int64_t w0 = model_.work();
      for (const Plan& other : others) {
        if (model_.work() - w0 > int64_t(double(opt_.effort) * double(kCandidatesWork))) break;
        double v = plan_value(other);
        if (v < best_v) best_v = v, res.plan = other;
      }
      sweep(res.plan, best_v);
      polish(res.plan);
      relieve(res.plan);
    }
    res.cost = model_.evaluate(res.plan, true);
    if (opt_.progress) opt_.progress(1.0);
    stats_.seconds = seconds_since(t0_);
    stats_.work = model_.work();
    res.stats = stats_;
    return res;
  }

  // One step of splitting a segment: the next batch-group count, else twice
  // the row stripes (layers not cut along h, up to their rows).
  bool raise(SegmentPlan& sp) const {
    // A group's samples still divide among each layer's b parts.
    for (auto next = std::upper_bound(groups_.begin(), groups_.end(), sp.batch_groups); next != groups_.end(); ++next) {
      bool whole = true;
      for (const auto& lp : sp.layers) whole = whole && (net_.batch / *next) % lp.part.b == 0;
      if (!whole) continue;
      sp.batch_groups = *next;
      return true;
    }
    // Stripes cut the rows themselves: a layer cut along h is cut along w
    // instead (by as many parts), when its columns allow.
    int64_t rows = 1;
    SegmentPlan out = sp;
    for (auto& lp : out.layers) {
      const Dims& d = net_.layers[size_t(lp.layer)].out;
      if (lp.part.h != 1) {
        if (d[3] % (lp.part.w * lp.part.h) != 0) return false;
        lp.part.w *= lp.part.h;
        lp.part.h = 1;
      }
      rows = std::max(rows, d[2]);
    }
    if (out.row_groups * 2 > rows) return false;
    out.row_groups *= 2;
    sp = std::move(out);
    return true;
  }

  // What irgen cannot relieve by spilling tensors kept for later segments
  // (irgen/spill.hpp) -- one workload's own inputs and output over L2 --
  // is split: the segment where it happens takes its batch in more groups,
  // and so do the segments before it whose outputs it reads (their groups
  // then die one by one); when the batch is used up, its rows in more
  // stripes (segments whose layers are not cut along h). Widening back from
  // that segment until the overflow goes or moves on, segment after segment.
  void relieve(Plan& plan) {
    PlanCost cost = model_.evaluate(plan, false);
    constexpr int kMaxWiden = 16;
    while (cost.own_overflow > 0 && cost.own_overflow_segment >= 0) {
      const int s = cost.own_overflow_segment;
      bool better = false;
      for (int lo = s; lo >= std::max(0, s - kMaxWiden) && !better; --lo) {
        Plan p = plan;
        bool raised = false;
        for (int k = lo; k <= s; ++k) raised = raise(p.segments[size_t(k)]) || raised;
        if (!raised) continue;
        PlanCost c = model_.evaluate(p, false);
        if (c.own_overflow_segment != s || c.own_overflow < cost.own_overflow)
          plan = std::move(p), cost = c, better = true;
      }
      if (!better) break;
    }
  }

  // Splits one segment further (irgen refused it): false when it cannot be.
  bool split(Plan& plan, int segment) {
    if (segment < 0 || segment >= int(plan.segments.size())) return false;
    if (raise(plan.segments[size_t(segment)])) return true;
    return halve(plan, segment);  // no finer groups or stripes
  }

  // Cuts a segment of layers sharing cores into two: false for one layer.
  static bool halve(Plan& plan, int segment) {
    SegmentPlan& head = plan.segments[size_t(segment)];
    if (head.layers.size() < 2) return false;
    SegmentPlan tail = head;
    const auto mid = std::ptrdiff_t(head.layers.size() / 2);
    tail.layers.erase(tail.layers.begin(), tail.layers.begin() + mid);
    head.layers.erase(head.layers.begin() + mid, head.layers.end());
    plan.segments.insert(plan.segments.begin() + segment + 1, std::move(tail));
    return true;
  }

  // While the model finds a segment overflowing (what irgen would refuse:
  // the sweeps may leave one when no single move pays), the better of its
  // two splits, more batch groups or its layers in halves.
  void fit(Plan& plan) {
    PlanCost cost;
    double v = plan_value(plan, &cost);
    while (cost.overflow > 0 && cost.overflow_segment >= 0) {
      const int s = cost.overflow_segment;
      std::vector<Plan> splits;
      if (Plan p = plan; raise(p.segments[size_t(s)])) splits.push_back(std::move(p));
      if (Plan p = plan; halve(p, s)) splits.push_back(std::move(p));
      bool better = false;
      for (Plan& p : splits) {
        PlanCost c;
        if (double w = plan_value(p, &c); w < v) plan = std::move(p), cost = std::move(c), v = w, better = true;
      }
      if (!better) return;
    }
  }


  mapping::Partition baseline_partition(int layer, int64_t n) { return best_partition(layer, n, 1); }
  const std::vector<int>& snake() const { return order_; }

 private:
  const CostModel& model_;
  const Network& net_;
  const arch::Architecture& a_;
  SearchOptions opt_;
  Rng rng_;
  int C_;
  int nch_ = 1;
  std::vector<int> order_;
  std::vector<int> dist_;
  int max_dist_ = 1;
  std::vector<int64_t> groups_;
  std::map<std::pair<int, int64_t>, std::vector<int>> counts_;
  std::map<std::tuple<int, int64_t, int64_t>, mapping::Partition> best_part_;
  SearchStats stats_;
  Clock::time_point t0_;
  int64_t sweep_w0_ = 0, sweep_budget_ = 1;  // the sweeps' work so far and budget (progress)
};

}  // namespace

SearchResult search(const CostModel& model, const SearchOptions& options) {
  if (options.effort < 1) throw_usage_error("--effort must be at least 1");
  Searcher s(model, options);
  return s.run();
}

Plan sequential_plan(const CostModel& model, Objective objective) {
  SearchOptions o;
  o.objective = objective;
  Searcher s(model, o);
  const Network& net = model.network();
  const int C = model.arch().core_count();
  Plan plan;
  for (size_t l = 0; l < net.layers.size(); ++l) {
    auto counts = feasible_core_counts(group_dims(net.layers[l], 1), C, k_unit(net.layers[l]));
    int n = counts.back();
    LayerPlan lp;
    lp.layer = int(l);
    lp.part = s.baseline_partition(int(l), n);
    for (int k = 0; k < n; ++k) lp.cores.push_back(s.snake()[size_t(k)]);
    s.default_channels(lp);
    SegmentPlan sp;
    sp.layers.push_back(std::move(lp));
    plan.segments.push_back(std::move(sp));
  }
  return plan;
}

std::vector<Plan> batch_split_plans(const CostModel& model) {
  const Network& net = model.network();
  const int C = model.arch().core_count();
  std::vector<Plan> out;
  if (C < 2 || net.layers.empty()) return out;
  SearchOptions o;
  Searcher s(model, o);
  static constexpr std::array<std::array<int, 3>, 3> kOrders{{{2, 3, 1}, {3, 2, 1}, {1, 2, 3}}};  // h w k, w h k, k h w
  for (int64_t b : divisors(net.batch)) {
    if (b > C) break;
    const int64_t rest = C / b;
    for (const auto& order : kOrders) {
      if (rest == 1 && &order != &kOrders[0]) break;  // the order matters only when something is left to split
      Plan plan;
      for (size_t l = 0; l < net.layers.size(); ++l) {
        Dims d = net.layers[l].out;
        d[1] /= k_unit(net.layers[l]);  // k parts hold whole groups
        LayerPlan lp;
        lp.layer = int(l);
        lp.part = {b, 1, 1, 1};
        // The largest factor of the rest that one axis takes, first axis first.
        for (int64_t f = rest; f > 1 && lp.part.k * lp.part.h * lp.part.w == 1; --f) {
          if (rest % f) continue;
          for (int axis : order) {
            if (d[size_t(axis)] % f) continue;
            (axis == 1 ? lp.part.k : axis == 2 ? lp.part.h : lp.part.w) = f;
            break;
          }
        }
        const int64_t n = b * lp.part.k * lp.part.h * lp.part.w;
        for (int64_t k = 0; k < n; ++k) lp.cores.push_back(s.snake()[size_t(k)]);
        s.default_channels(lp);
        SegmentPlan sp;
        sp.layers.push_back(std::move(lp));
        plan.segments.push_back(std::move(sp));
      }
      out.push_back(std::move(plan));
    }
  }
  return out;
}

void relieve(const CostModel& model, Plan& plan) {
  SearchOptions o;
  Searcher s(model, o);
  s.relieve(plan);
}

bool split_segment(const CostModel& model, Plan& plan, int segment) {
  SearchOptions o;
  Searcher s(model, o);
  return s.split(plan, segment);
}

namespace {

// A weight load is issued with the first workload of its core whose
// snapshot holds it: in the weight buffer as loaded from DRAM (direct), or
// in L2 as a weight tensor (streamed from there). The workload computing
// with it holds it whole in the weight buffer, or a tile slot of it. A store
// loaded back onto the core that stored it is a spill.
BuiltPlan built_plan_of(const sir::Schedule& s, const Network& net) {
  std::map<std::string, int, std::less<>> layer_of;
  for (size_t l = 0; l < net.layers.size(); ++l) layer_of.emplace(net.layers[l].name, int(l));
  BuiltPlan out;
  for (const auto& c : s.cores)
    for (size_t q = 0; q < c.workloads.size(); ++q) {
      const sir::Workload& w = c.workloads[q];
      auto place = [&](const std::string& layer, const sir::Coord& lower, bool direct) {
        if (auto l = layer_of.find(layer); l != layer_of.end())
          out.weights.try_emplace(std::make_tuple(int(c.id), l->second, lower[1]), BuiltWeight{direct, int(q), true});
      };
      for (const auto& e : w.wl0_buffer.entries)
        if (e.source == sir::WeightSource::Ddr && e.lower) place(e.layer_name, *e.lower, true);
      for (const auto& b : w.buffer)
        if (b.type == sir::TensorType::Weight && b.layer_name) place(*b.layer_name, b.lower, false);
      auto l = layer_of.find(w.layer_name);
      if (!w.weight || l == layer_of.end()) continue;
      auto own = out.weights.find(std::make_tuple(int(c.id), l->second, w.weight->lower[1]));
      if (own == out.weights.end()) continue;
      for (const auto& e : w.wl0_buffer.entries)
        if (e.layer_name == w.layer_name)
          own->second.whole_in_wl0 = e.source == sir::WeightSource::Ddr || e.size >= w.weight->size;
    }
  // The receives of a reader land in buffers placed from the workload
  // before it (early receives) or its own; they may start once the last
  // workload whose tensors overlap those bytes is done (looked for up to
  // kReceiveLookBack workloads back; none found: at once). A tensor that
  // workload only copies into an input assembled from pieces (asm's dt_cal
  // at its start) frees its bytes when the workload starts, i.e. once the
  // one before it is done (tiny U-Net b4: a concatenation's receives ran
  // during the transposed convolution before it, whose input they overlap
  // only in the copied pieces).
  constexpr int kReceiveLookBack = 64;
  auto copied_only = [&](const sir::Core& c, const sir::Workload& w, const sir::BufferTensor& o) {
    if (!o.transfer_id) return false;
    for (const auto& a : w.buffer) {
      if (&a == &o || !a.cur_wl_ifmap.value_or(false) || !a.source) continue;
      for (const auto& src : *a.source)
        if (src.type == sir::Endpoint::Core && src.core_id == c.id &&
            std::find(o.transfer_id->begin(), o.transfer_id->end(), src.transfer_id) != o.transfer_id->end())
          return true;
    }
    return false;
  };
  for (const auto& c : s.cores)
    for (size_t q = 0; q < c.workloads.size(); ++q)
      for (const auto& b : c.workloads[q].buffer) {
        if (!b.newly_added.value_or(false) || !b.source || b.size <= 0) continue;
        bool received = false;
        for (const auto& src : *b.source) received = received || (src.type == sir::Endpoint::Core && src.core_id != c.id);
        if (!received) continue;
        const int reader = b.cur_wl_ifmap.value_or(false) ? int(q) : int(q) + 1;
        int last = -1;
        for (int j = int(q) - 1; j >= 0 && j >= int(q) - kReceiveLookBack; --j) {
          bool overlap = false, busy = false;
          for (const auto& o : c.workloads[size_t(j)].buffer)
            if (sir::share_bytes(o, b)) {
              overlap = true;
              busy = busy || !copied_only(c, c.workloads[size_t(j)], o);
            }
          if (overlap) {
            last = busy ? j : j - 1;
            break;
          }
        }
        auto [it, fresh] = out.receive_after.try_emplace({int(c.id), reader}, last);
        if (!fresh) it->second = std::max(it->second, last);
      }
  // A workload's output over bytes an earlier stored output held: its
  // compute waits for that store (the latest such output, up to
  // kReceiveLookBack positions back).
  std::set<int64_t> stored_wl;
  for (const auto& st : s.dram.in) stored_wl.insert(st.workload_id);
  auto own_output = [](const sir::Core& c, const sir::Workload& w) -> const sir::BufferTensor* {
    for (const auto& b : w.buffer) {
      if (!b.newly_added.value_or(false) || !b.source || b.source->size() != 1) continue;
      const sir::Source& src = b.source->front();
      if (src.type == sir::Endpoint::Core && src.core_id == c.id && src.layer_name == w.layer_name) return &b;
    }
    return nullptr;
  };
  std::vector<const sir::BufferTensor*> outputs, stored_outputs;  // per position of the core
  for (const auto& c : s.cores) {
    outputs.clear(), stored_outputs.clear();
    for (const auto& w : c.workloads) {
      outputs.push_back(own_output(c, w));
      stored_outputs.push_back(stored_wl.count(w.workload_id) ? outputs.back() : nullptr);
    }
    for (int q = 1; q < int(outputs.size()); ++q) {
      if (!outputs[size_t(q)]) continue;
      for (int j = q - 1; j >= 0 && j >= q - kReceiveLookBack; --j)
        if (stored_outputs[size_t(j)] && sir::share_bytes(*stored_outputs[size_t(j)], *outputs[size_t(q)])) {
          out.store_before[{int(c.id), q}] = j;
          break;
        }
    }
  }
  std::map<int64_t, const sir::DramStore*> store_of;
  for (const auto& st : s.dram.in) store_of.emplace(st.transfer_id, &st);
  for (const auto& ld : s.dram.out)
    for (int64_t id : ld.related_ifmap)
      if (auto st = store_of.find(id); st != store_of.end())
        for (const auto& d : ld.destination)
          if (d.core_id == st->second->core_id)
            if (auto l = layer_of.find(st->second->layer_name); l != layer_of.end())
              out.spilled.emplace_back(st->second->workload_id, l->second);
  std::sort(out.spilled.begin(), out.spilled.end());
  out.spilled.erase(std::unique(out.spilled.begin(), out.spilled.end()), out.spilled.end());
  return out;
}

}  // namespace

BuiltPlan built_plan(const CostModel& model, const fir::Graph& graph, const Plan& plan,
                               const std::string& fir_file) {
  irgen::Options io;
  io.fir_file = fir_file;
  io.mapping_file = "<gemini's mapping>";
  return built_plan_of(irgen::generate(graph, to_mapping(plan, model.network(), model.arch()), model.arch(), io),
                         model.network());
}

int make_buildable(const CostModel& model, const fir::Graph& graph, Plan& plan, const std::string& fir_file,
                   BuiltPlan* built) {
  for (int splits = 0;; ++splits) {
    try {
      BuiltPlan paths = built_plan(model, graph, plan, fir_file);
      if (built) *built = std::move(paths);
      return splits;
    } catch (const irgen::CapacityError& e) {
      if (splits >= 64 || !split_segment(model, plan, e.segment()))
        throw_input_error(fir_file + ": gemini finds no mapping of this network that irgen can build on " +
                          model.arch().name +
                          ": " + e.what());
    }
  }
}

SegmentPlan initial_segment(const CostModel& model, int first, int last, int64_t batch_groups) {
  SearchOptions o;
  Searcher s(model, o);
  return s.initial_segment(first, last, batch_groups);
}

Plan single_core_plan(const Network& net) {
  Plan plan;
  for (size_t l = 0; l < net.layers.size(); ++l) {
    SegmentPlan sp;
    LayerPlan lp;
    lp.layer = int(l);
    lp.cores = {0};
    sp.layers.push_back(std::move(lp));
    plan.segments.push_back(std::move(sp));
  }
  return plan;
}

}  // namespace cct::gemini
