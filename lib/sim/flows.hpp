// Byte streams sharing the chip's links and DRAM channels: the bandwidth
// model of the schedule.
//
// A flow moves its bytes over a list of resources (the pooled DRAM channels,
// the mesh and die-to-die links of a route or a multicast tree), each with a
// capacity in bytes per cycle. The active flows share every resource
// max-min fairly (water filling: the tightest resource fixes the rate of the
// flows through it, whose shares leave the rest to the others). zebusim runs
// it under every DRAM transfer and core-to-core transfer of a program.
// gemini's cost model does not yet: it gives each transfer its share of its
// narrowest link (lib/gemini/README.md, "Cost model", says why it waits).
//
// The caller owns time: it starts and stops flows, brings the remaining
// bytes up to a time with advance(), and after a change asks reallocate()
// for the new rates, which names the flows whose rate changed (their
// completion time moved; the others' did not).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cct::sim {

class FairShareFlows {
 public:
  using Id = uint32_t;

  // Forgets every flow; `capacity` (bytes per cycle of each resource) must
  // outlive the flows.
  void reset(const std::vector<double>* capacity);

  // A flow of `bytes` over `resources` (indices into the capacities; the
  // list must outlive the flow), not yet moving.
  Id add(double bytes, const std::vector<int>* resources);
  // Its bytes move from `now` on (call advance(now) first).
  void start(Id f, double now);
  // It no longer takes bandwidth; its remaining bytes are set to 0.
  void stop(Id f);

  // Brings the remaining bytes of every active flow up to `now`.
  void advance(double now);

  // The max-min fair rates of the active flows; calls changed(id) for every
  // active flow whose rate differs from the one the last call gave it (a
  // flow started since counts as changed).
  template <class Changed>
  void reallocate(Changed&& changed) {
    solve();
    for (Id f : active_) {
      Flow& x = flows_[f];
      if (x.rate == x.reported_rate) continue;
      x.reported_rate = x.rate;
      changed(f);
    }
  }

  double remaining(Id f) const { return flows_[f].remaining; }
  double rate(Id f) const { return flows_[f].rate; }
  bool active(Id f) const { return flows_[f].active; }
  const std::vector<Id>& active_flows() const { return active_; }
  size_t size() const { return flows_.size(); }

 private:
  struct Flow {
    double remaining = 0;       // bytes still to move
    double rate = 0;            // bytes per cycle
    double reported_rate = -1;  // the rate reallocate last named it with (-1: never)
    double last = 0;            // time `remaining` was last brought up to date
    const std::vector<int>* resources = nullptr;
    bool active = false;
    bool frozen = false;  // solve(): its rate is fixed this time
  };

  void solve();

  const std::vector<double>* capacity_ = nullptr;
  std::vector<Flow> flows_;
  std::vector<Id> active_;
  // solve()'s scratch, kept between calls: per resource its bytes per cycle
  // left and unfixed users, its slot among the resources that take part;
  // the flows through each of those (offset_ into through_) and each active
  // flow's resources that take part (uses_ from use_begin_).
  std::vector<double> left_;
  std::vector<int> users_;
  std::vector<int> count_;  // per resource: the active flows using it
  std::vector<int32_t> slot_;
  std::vector<int> touched_, uses_;
  std::vector<uint32_t> offset_, fill_, through_, use_begin_;
};

}  // namespace cct::sim
