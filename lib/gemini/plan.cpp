#include "gemini/plan.hpp"

#include <map>

#include "support/error.hpp"

namespace cct::gemini {

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      small.push_back(d);
      if (d != n / d) large.push_back(n / d);
    }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

Dims group_dims(const Layer& l, int64_t batch_groups) {
  Dims d = l.out;
  d[0] = batch_groups > 0 ? d[0] / batch_groups : d[0];
  return d;
}

int64_t k_unit(const Layer& l) { return l.groups > 1 && l.out[1] % l.groups == 0 ? l.out[1] / l.groups : 1; }

std::vector<mapping::Partition> partitions_of(const Dims& dims, int64_t cores, int64_t k_unit) {
  std::vector<mapping::Partition> out;
  if (cores <= 0) return out;
  for (int64_t b : divisors(dims[0])) {
    if (cores % b) continue;
    for (int64_t k : divisors(dims[1] / std::max<int64_t>(1, k_unit))) {
      if ((cores / b) % k) continue;
      for (int64_t h : divisors(dims[2])) {
        if ((cores / b / k) % h) continue;
        int64_t w = cores / b / k / h;
        if (dims[3] % w) continue;
        out.push_back({b, k, h, w});
      }
    }
  }
  return out;
}

std::vector<int> feasible_core_counts(const Dims& dims, int max_cores, int64_t k_unit) {
  std::vector<int> out;
  for (int n = 1; n <= max_cores; ++n) {
    // n = b * k * h * w with each factor dividing its dimension.
    bool ok = false;
    for (int64_t b : divisors(dims[0])) {
      if (ok || n % b) continue;
      for (int64_t k : divisors(dims[1] / std::max<int64_t>(1, k_unit))) {
        if (ok || (n / b) % k) continue;
        for (int64_t h : divisors(dims[2])) {
          if ((n / b / k) % h) continue;
          if (dims[3] % (n / b / k / h) == 0) {
            ok = true;
            break;
          }
        }
      }
    }
    if (ok) out.push_back(n);
  }
  return out;
}

mapping::Mapping to_mapping(const Plan& plan, const Network& net, const arch::Architecture& a) {
  mapping::Mapping m;
  m.arch = a.name;
  m.fir = net.name;
  m.batch = net.batch;
  for (const auto& sp : plan.segments) {
    mapping::Segment seg;
    seg.batch_groups = sp.batch_groups;
    seg.row_groups = sp.row_groups;
    for (const auto& lp : sp.layers) {
      mapping::LayerMapping lm;
      lm.layer = net.layers[size_t(lp.layer)].name;
      lm.cores.assign(lp.cores.begin(), lp.cores.end());
      lm.partition = lp.part;
      lm.dram = lp.dram;
      seg.layers.push_back(std::move(lm));
    }
    m.segments.push_back(std::move(seg));
  }
  return m;
}

Plan from_mapping(const mapping::Mapping& m, const Network& net) {
  std::map<std::string, int, std::less<>> index;
  for (size_t i = 0; i < net.layers.size(); ++i) index.emplace(net.layers[i].name, int(i));
  Plan plan;
  for (const auto& seg : m.segments) {
    SegmentPlan sp;
    sp.batch_groups = seg.batch_groups;
    sp.row_groups = seg.row_groups;
    for (const auto& lm : seg.layers) {
      auto it = index.find(lm.layer);
      if (it == index.end()) throw_input_error("mapping: layer \"" + lm.layer + "\" is not an accelerator layer");
      LayerPlan lp;
      lp.layer = it->second;
      lp.cores.assign(lm.cores.begin(), lm.cores.end());
      lp.part = lm.partition;
      lp.dram = lm.dram;
      sp.layers.push_back(std::move(lp));
    }
    plan.segments.push_back(std::move(sp));
  }
  return plan;
}

}  // namespace cct::gemini
