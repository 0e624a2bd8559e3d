// Max-min fair rates of byte streams over shared resources (flows.hpp).
#include "sim/flows.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace cct::sim {

void FairShareFlows::reset(const std::vector<double>* capacity) {
  capacity_ = capacity;
  flows_.clear();
  active_.clear();
  left_.assign(capacity->size(), 0);
  users_.assign(capacity->size(), 0);
  count_.assign(capacity->size(), 0);
  slot_.assign(capacity->size(), -1);
}

FairShareFlows::Id FairShareFlows::add(double bytes, const std::vector<int>* resources) {
  Flow f;
  f.remaining = bytes;
  f.resources = resources;
  flows_.push_back(f);
  return Id(flows_.size() - 1);
}

void FairShareFlows::start(Id f, double now) {
  flows_[f].active = true;
  flows_[f].last = now;
  active_.push_back(f);
  for (int r : *flows_[f].resources) ++count_[size_t(r)];
}

void FairShareFlows::stop(Id f) {
  Flow& x = flows_[f];
  if (!x.active) return;
  x.active = false;
  x.remaining = 0;
  active_.erase(std::find(active_.begin(), active_.end(), f));
  for (int r : *x.resources) --count_[size_t(r)];
}

void FairShareFlows::advance(double now) {
  for (Id f : active_) {
    Flow& x = flows_[f];
    x.remaining -= std::max(x.rate, 0.0) * (now - x.last);
    if (x.remaining < 0) x.remaining = 0;
    x.last = now;
  }
}

// Water filling. A resource only one flow uses keeps its capacity as that
// flow's share until the flow is fixed, so of those only the smallest per
// flow takes part; the rounds visit the resources that take part, not the
// network's (a 256-core mesh has thousands of links).
void FairShareFlows::solve() {
  const std::vector<double>& cap = *capacity_;
  touched_.clear();
  uses_.clear();
  use_begin_.clear();
  auto take = [&](int r) {
    if (slot_[size_t(r)] < 0) {
      slot_[size_t(r)] = int32_t(touched_.size());
      touched_.push_back(r);
      left_[size_t(r)] = cap[size_t(r)];
      users_[size_t(r)] = count_[size_t(r)];
    }
    uses_.push_back(r);
  };
  for (Id f : active_) {
    flows_[f].frozen = false;
    use_begin_.push_back(uint32_t(uses_.size()));
    int own = -1;
    for (int r : *flows_[f].resources)
      if (count_[size_t(r)] > 1) take(r);
      else if (own < 0 || cap[size_t(r)] < cap[size_t(own)]) own = r;
    if (own >= 0) take(own);
  }
  use_begin_.push_back(uint32_t(uses_.size()));
  // The flows (as positions in active_) through each resource that takes part.
  offset_.assign(touched_.size() + 1, 0);
  for (int r : uses_) ++offset_[size_t(slot_[size_t(r)]) + 1];
  for (size_t k = 0; k < touched_.size(); ++k) offset_[k + 1] += offset_[k];
  through_.resize(offset_.back());
  fill_.assign(offset_.begin(), offset_.end() - 1);
  for (size_t k = 0; k < active_.size(); ++k)
    for (uint32_t u = use_begin_[k]; u < use_begin_[k + 1]; ++u) through_[fill_[size_t(slot_[size_t(uses_[u])])]++] = uint32_t(k);
  size_t open = active_.size();
  auto freeze = [&](size_t k, double share) {
    Flow& x = flows_[active_[k]];
    x.frozen = true;
    x.rate = share;
    for (uint32_t u = use_begin_[k]; u < use_begin_[k + 1]; ++u) left_[size_t(uses_[u])] -= share, --users_[size_t(uses_[u])];
    --open;
  };
  bool first = true;
  while (open > 0) {  // freeze() counts the flows down
    double share = std::numeric_limits<double>::infinity();
    for (int r : touched_)
      if (users_[size_t(r)] > 0) share = std::min(share, left_[size_t(r)] / double(users_[size_t(r)]));
    if (!std::isfinite(share)) share = std::numeric_limits<double>::max();  // a flow using nothing shared
    if (first)
      for (size_t k = 0; k < active_.size(); ++k)
        if (use_begin_[k] == use_begin_[k + 1]) freeze(k, share);
    for (size_t t = 0; t < touched_.size(); ++t) {
      const size_t r = size_t(touched_[t]);
      if (users_[r] == 0 || left_[r] / double(users_[r]) > share * (1 + 1e-12)) continue;
      for (uint32_t i = offset_[t]; i < offset_[t + 1]; ++i)
        if (!flows_[active_[through_[i]]].frozen) freeze(through_[i], share);
    }
    first = false;
  }
  for (int r : touched_) slot_[size_t(r)] = -1;
}

}  // namespace cct::sim
