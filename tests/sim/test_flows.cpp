// sim::FairShareFlows: max-min fair rates of flows over shared resources.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "sim/flows.hpp"

using cct::sim::FairShareFlows;

namespace {

// Max-min fair rates by the textbook progressive filling, every resource
// taking part (the reference the class's shortcuts must agree with).
std::vector<double> progressive_filling(const std::vector<double>& cap, const std::vector<std::vector<int>>& routes) {
  std::vector<double> left = cap, rate(routes.size(), 0);
  std::vector<int> users(cap.size(), 0);
  std::vector<char> fixed(routes.size(), 0);
  for (const auto& r : routes)
    for (int x : r) ++users[size_t(x)];
  for (size_t open = routes.size(); open > 0;) {
    double share = 1e300;
    for (size_t x = 0; x < cap.size(); ++x)
      if (users[x] > 0) share = std::min(share, left[x] / users[x]);
    for (size_t f = 0; f < routes.size(); ++f) {
      if (fixed[f]) continue;
      bool tight = false;
      for (int x : routes[f]) tight = tight || left[size_t(x)] / users[size_t(x)] <= share * (1 + 1e-12);
      if (!tight) continue;
      fixed[f] = 1, rate[f] = share, --open;
      for (int x : routes[f]) left[size_t(x)] -= share, --users[size_t(x)];
    }
  }
  return rate;
}

}  // namespace

TEST_CASE("flows share a link fairly and the rest goes to the others") {
  // Resource 0 (10 B/cycle) carries A and C, resource 1 (4 B/cycle) A and B:
  // A and B split resource 1, C takes what A leaves of resource 0.
  const std::vector<double> cap = {10, 4};
  const std::vector<int> ra = {0, 1}, rb = {1}, rc = {0};
  FairShareFlows flows;
  flows.reset(&cap);
  const auto a = flows.add(100, &ra), b = flows.add(100, &rb), c = flows.add(100, &rc);
  for (auto f : {a, b, c}) flows.start(f, 0);
  std::set<FairShareFlows::Id> changed;
  flows.reallocate([&](FairShareFlows::Id f) { changed.insert(f); });
  CHECK(changed == std::set<FairShareFlows::Id>{a, b, c});  // new flows count as changed
  CHECK(flows.rate(a) == doctest::Approx(2));
  CHECK(flows.rate(b) == doctest::Approx(2));
  CHECK(flows.rate(c) == doctest::Approx(8));
  // After 10 cycles B stops: A takes all of resource 1, C the rest of resource 0.
  flows.advance(10);
  CHECK(flows.remaining(a) == doctest::Approx(80));
  CHECK(flows.remaining(c) == doctest::Approx(20));
  flows.stop(b);
  CHECK(flows.remaining(b) == 0);
  changed.clear();
  flows.reallocate([&](FairShareFlows::Id f) { changed.insert(f); });
  CHECK(changed == std::set<FairShareFlows::Id>{a, c});
  CHECK(flows.rate(a) == doctest::Approx(4));
  CHECK(flows.rate(c) == doctest::Approx(6));
  // Nothing changes: nobody is named.
  changed.clear();
  flows.reallocate([&](FairShareFlows::Id f) { changed.insert(f); });
  CHECK(changed.empty());
}

TEST_CASE("a flow alone on its links moves at its narrowest one") {
  const std::vector<double> cap = {137.4, 32, 16, 32};
  const std::vector<int> route = {0, 1, 2, 3};
  FairShareFlows flows;
  flows.reset(&cap);
  const auto f = flows.add(1000, &route);
  flows.start(f, 5);
  flows.reallocate([](FairShareFlows::Id) {});
  CHECK(flows.rate(f) == 16);
  flows.advance(15);
  CHECK(flows.remaining(f) == doctest::Approx(840));
}

TEST_CASE("random flows over random routes get the max-min fair rates") {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int nres = 2 + int(rng() % 12), nflows = 1 + int(rng() % 12);
    std::vector<double> cap;
    for (int r = 0; r < nres; ++r) cap.push_back(double(1 + rng() % 64));
    std::vector<std::vector<int>> routes(static_cast<size_t>(nflows));
    for (auto& route : routes) {
      std::set<int> used;
      const int hops = 1 + int(rng() % 5);
      for (int h = 0; h < hops; ++h) used.insert(int(rng() % uint64_t(nres)));
      route.assign(used.begin(), used.end());
    }
    FairShareFlows flows;
    flows.reset(&cap);
    for (const auto& route : routes) flows.start(flows.add(1e6, &route), 0);
    flows.reallocate([](FairShareFlows::Id) {});
    const std::vector<double> want = progressive_filling(cap, routes);
    for (size_t f = 0; f < routes.size(); ++f) CHECK(flows.rate(FairShareFlows::Id(f)) == doctest::Approx(want[f]));
    // No resource carries more than its capacity.
    std::vector<double> load(cap.size(), 0);
    for (size_t f = 0; f < routes.size(); ++f)
      for (int x : routes[f]) load[size_t(x)] += flows.rate(FairShareFlows::Id(f));
    for (size_t x = 0; x < cap.size(); ++x) CHECK(load[x] <= cap[x] * (1 + 1e-9));
  }
}

TEST_CASE("flows starting and stopping in any order keep the max-min fair rates") {
  // Every state of a random history of starts and stops gives the textbook
  // rates of the flows active then (routes naming a resource twice, and
  // flows on no resource beside them, included).
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 60; ++trial) {
    const int nres = 2 + int(rng() % 10), nflows = 2 + int(rng() % 14);
    std::vector<double> cap;
    for (int r = 0; r < nres; ++r) cap.push_back(double(1 + rng() % 64));
    std::vector<std::vector<int>> routes(static_cast<size_t>(nflows));
    for (auto& route : routes) {
      const int hops = int(rng() % 5);  // 0: a flow on no resource
      for (int h = 0; h < hops; ++h) route.push_back(int(rng() % uint64_t(nres)));
    }
    FairShareFlows flows;
    flows.reset(&cap);
    std::vector<FairShareFlows::Id> ids;
    for (const auto& route : routes) ids.push_back(flows.add(1e6, &route));
    std::vector<char> on(routes.size(), 0);
    for (int step = 0; step < 40; ++step) {
      // One to three starts or stops, then the rates.
      for (int k = 1 + int(rng() % 3); k > 0; --k) {
        const size_t f = size_t(rng() % routes.size());
        if (!on[f] && flows.remaining(ids[f]) > 0) flows.start(ids[f], 0), on[f] = 1;
        else if (on[f]) flows.stop(ids[f]), on[f] = 0;
      }
      flows.reallocate([](FairShareFlows::Id) {});
      std::vector<std::vector<int>> active;
      std::vector<size_t> which;
      for (size_t f = 0; f < routes.size(); ++f)  // a flow on no resource is unbounded: no reference rate
        if (on[f] && !routes[f].empty()) active.push_back(routes[f]), which.push_back(f);
      const std::vector<double> want = progressive_filling(cap, active);
      for (size_t i = 0; i < which.size(); ++i) CHECK(flows.rate(ids[which[i]]) == doctest::Approx(want[i]));
    }
  }
}
