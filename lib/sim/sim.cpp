#include "sim/sim.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <queue>
#include <tuple>
#include <unordered_map>

#include "footprint/footprint.hpp"
#include "isa/multicast.hpp"
#include "sim/flows.hpp"
#include "support/error.hpp"
#include "timing/instruction_model.hpp"

namespace cct::sim {

using isa::Opcode;
using isa::Param;
using isa::Queue;
using timing::WorkKind;

namespace {

constexpr int kQ = isa::kQueueCount;

// "file:line" of the instruction at `index`.
std::string line_of(const Options& o, size_t index) { return o.file + ":" + std::to_string(index + 1); }

// A route as the resources it occupies plus its latency and length.
struct Route {
  std::vector<int> resources;
  int64_t latency = 0;
  int hops = 0;
  int crossings = 0;
};

class Network {
 public:
  explicit Network(const arch::Architecture& a)
      : a_(a), ncores_(size_t(a.core_count())), links_(a, 1), dram_routes_(ncores_ * 2) {
    // Resource 0: the DRAM channels, pooled (addresses interleave over them).
    capacity_.push_back(a.dram_channel_bytes_per_cycle() * double(a.dram_channels.size()));
    links_.append_capacities(capacity_);
  }

  const std::vector<double>& capacity() const { return capacity_; }

  // The route between two cores (made when first used: a program's pairs,
  // not the mesh's cores squared).
  const Route& core_route(int from, int to) {
    const uint64_t key = uint64_t(from) * ncores_ + uint64_t(to);
    auto it = core_routes_.find(key);
    if (it == core_routes_.end())
      it = core_routes_.emplace(key, make_route(a_.core_site(from), a_.core_site(to), false)).first;
    return it->second;
  }
  // The latency of a load from a DRAM site to a core (a multicast member's,
  // from its group's channel).
  int64_t dram_latency(const arch::Site& dram, int core) {
    if (dram == nearest_dram(core)) return dram_route(core, false).latency;
    return make_route(dram, a_.core_site(core), true).latency;
  }
  // The route of a core's DRAM loads (or stores): to its nearest channel.
  const Route& dram_route(int core, bool store) {
    auto& slot = dram_routes_[size_t(core) * 2 + (store ? 1 : 0)];
    if (!slot) {
      const arch::Site& dram = nearest_dram(core);
      const arch::Site here = a_.core_site(core);
      slot = std::make_unique<Route>(store ? make_route(here, dram, true) : make_route(dram, here, true));
    }
    return *slot;
  }

  // One multicast from a DRAM site to several cores: the DRAM pool and the
  // tree's links, each once (arch::LinkResources::append_multicast_route).
  // Its latency is the nearest member's; each member's own is route()'s.
  const Route& multicast_route(const arch::Site& dram, const std::vector<int>& cores) {
    auto key = std::make_pair(std::array<int, 3>{dram.die, dram.x, dram.y}, cores);
    auto it = tree_cache_.find(key);
    if (it != tree_cache_.end()) return it->second;
    Route r;
    r.resources.push_back(0);
    std::vector<arch::Site> sites;
    r.latency = std::numeric_limits<int64_t>::max();
    for (int c : cores) {
      sites.push_back(a_.core_site(c));
      r.latency = std::min(r.latency, make_route(dram, sites.back(), true).latency);
    }
    arch::RouteSummary s;
    links_.append_multicast_route(dram, sites, r.resources, s, legs_);
    r.hops = s.mesh_hops, r.crossings = s.d2d_crossings;
    return tree_cache_.emplace(std::move(key), std::move(r)).first->second;
  }

  // The DRAM channel a core reaches with the least latency (ties: lowest id).
  const arch::Site& nearest_dram(int core) {
    auto it = dram_choice_.find(core);
    if (it != dram_choice_.end()) return a_.dram_channels[size_t(it->second)].attach;
    int best = 0;
    double best_latency = std::numeric_limits<double>::infinity();
    for (size_t c = 0; c < a_.dram_channels.size(); ++c) {
      double l = a_.route_latency_cycles(a_.dram_route(core, int(c)));
      if (l < best_latency) best_latency = l, best = int(c);
    }
    dram_choice_.emplace(core, best);
    return a_.dram_channels[size_t(best)].attach;
  }

 private:
  // A route between two sites (a core's site, a DRAM attach point).
  Route make_route(const arch::Site& from, const arch::Site& to, bool dram) {
    Route r;
    if (dram) r.resources.push_back(0);
    arch::RouteSummary s;
    links_.append_route(from, to, r.resources, s, legs_);
    r.hops = s.mesh_hops, r.crossings = s.d2d_crossings;
    r.latency = std::llround(a_.route_latency_cycles(s));
    return r;
  }

  const arch::Architecture& a_;
  const size_t ncores_;
  std::vector<double> capacity_;
  arch::LinkResources links_;  // after resource 0
  std::vector<arch::RouteLeg> legs_;
  std::unordered_map<uint64_t, Route> core_routes_;  // from * cores + to (lookups only: no order reaches output)
  std::vector<std::unique_ptr<Route>> dram_routes_;  // [core * 2 + store]
  std::map<std::pair<std::array<int, 3>, std::vector<int>>, Route> tree_cache_;
  std::map<int, int> dram_choice_;
};

// What a flow of the bandwidth model (FairShareFlows) is for.
struct FlowUse {
  size_t first = 0;          // the instruction the flow serves (send: the so_mov)
  size_t second = SIZE_MAX;  // receive side of a transfer
  int64_t tail = 0;          // cycles from the last byte sent to the receive side's end
  int32_t group = -1;        // a multicast load's group: every member ends with it
  uint32_t version = 0;      // of its pending completion event
};

enum EventKind : uint8_t { kEnd, kStream, kFlowDone, kHostDone };
struct Event {
  int64_t time;
  uint64_t seq;
  EventKind kind;
  uint32_t id;
  uint32_t version;
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

// What the event loop needs of an instruction, packed (an isa::Instruction
// is several cache lines; this is one).
struct Node {
  int32_t core = 0;
  uint8_t queue = 0;
  uint8_t nprev = 0, nnext = 0;
  uint8_t prev[isa::kMaxQueueList]{};
  uint8_t next[isa::kMaxQueueList]{};
};

// The priced work of an instruction, compact; energy components go straight
// into the run's totals.
struct Job {
  WorkKind kind = WorkKind::Fixed;
  int64_t cycles = 0;
  int64_t bytes = 0;
  int64_t ops = 0;
  double energy = 0;  // pJ, before link energy
  // A multicast member other than its group's first: the group's DRAM read
  // and links are charged to the first (lowest core).
  bool shares_read = false;
};

struct QueueState {
  std::vector<uint32_t> order;  // instruction indices, program order
  size_t head = 0;
  bool busy = false;
  int64_t free_at = 0;
};

class Engine {
 public:
  Engine(const isa::Program& p, const arch::Architecture& a, const Options& o)
      : prog_(p), a_(a), opt_(o), net_(a), n_(p.size()) {
    flows_.reset(&net_.capacity());
  }

  Result run() {
    prepare();
    for (int c = 0; c < ncores_; ++c)
      for (int q = 0; q < kQ; ++q) try_start(c, q, 0);
    while (!events_.empty()) {
      Event e = events_.top();
      events_.pop();
      now_ = e.time;
      switch (e.kind) {
        case kEnd: finish(e.id); break;
        case kStream: begin_stream(e.id); break;
        case kFlowDone:
          if (flows_.active(e.id) && uses_[e.id].version == e.version) flow_done(e.id);
          break;
        case kHostDone: host_done(e.id); break;
      }
      // Rates matter only once time moves on: the flows that began or ended
      // in this cycle share the links from one reallocation.
      if (rates_stale_ && (events_.empty() || events_.top().time > now_)) {
        rates_stale_ = false;
        reallocate();
      }
    }
    if (ended_ < n_) report_deadlock();
    report_leftover_tokens();
    return collect();
  }

 private:
  // ---- Preparation: cores, work, footprints, transfer pairs ----------------
  void prepare() {
    if (n_ == 0) throw_input_error(opt_.file + ": empty program");
    core_.resize(n_);
    node_.resize(n_);
    work_.resize(n_);
    result_.timing.resize(n_);
    partner_.assign(n_, SIZE_MAX);
    ready_.assign(n_, false);
    route_.assign(n_, nullptr);
    ncores_ = 0;
    for (size_t i = 0; i < n_; ++i) {
      const auto& inst = prog_.instructions[i];
      int64_t c = inst.mapping.core;
      if (!a_.valid_core(c))
        throw_input_error(line_of(opt_, i) + ": " + std::string(inst.mnemonic()) + " runs on core " + std::to_string(c) +
                          " but architecture \"" + a_.name + "\" has " + std::to_string(a_.core_count()) +
                          (a_.core_count() == 1 ? " core" : " cores"));
      core_[i] = int(c);
      ncores_ = std::max(ncores_, int(c) + 1);
      Node& nd = node_[i];
      nd.core = int32_t(c);
      nd.queue = uint8_t(inst.queue());
      for (Queue q : inst.prev) nd.prev[nd.nprev++] = uint8_t(q);
      for (Queue q : inst.next) nd.next[nd.nnext++] = uint8_t(q);
    }
    queues_.assign(size_t(ncores_) * kQ, QueueState{});
    produced_.assign(size_t(ncores_) * kQ * kQ, 0);
    consumed_.assign(size_t(ncores_) * kQ * kQ, 0);
    for (size_t i = 0; i < n_; ++i) qs(core_[i], int(prog_.instructions[i].queue())).order.push_back(uint32_t(i));

    // VP layers are split evenly over their instructions: count them.
    std::map<std::pair<int, int32_t>, int64_t> vp_parts;
    for (size_t i = 0; i < n_; ++i) {
      auto op = prog_.instructions[i].op();
      if (op == Opcode::vp_self || op == Opcode::vp_pool) ++vp_parts[{core_[i], prog_.instructions[i].mapping.wkl}];
    }
    // Multicast loads: the k-th member of each TAG on each core form a group
    // (formats/ISA_Format.md 5b), which only a multicast NoC can run.
    groups_ = isa::group_multicast_loads(
        prog_, [&](size_t i, const std::string& m) { throw_input_error(line_of(opt_, i) + ": " + m); });
    if (!groups_.groups.empty() && !a_.noc.multicast) {
      const size_t i = groups_.groups[0].members[0];
      throw_input_error(line_of(opt_, i) + ": " + isa::multicast_unsupported(prog_.instructions[i], a_.name));
    }
    group_ready_.assign(groups_.groups.size(), 0);
    std::vector<timing::CoreModel> models(size_t(ncores_), timing::CoreModel{a_});
    // What each instruction reads and writes: the functional model's rules
    // (inside L2 and WL0, weights read as they were loaded), DRAM sizes unknown.
    footprint::Options fo;
    fo.file = opt_.file;
    footprint::Planner footprints(a_, prog_, fo);
    footprint::Step step;
    for (size_t i = 0; i < n_; ++i) {
      const auto& inst = prog_.instructions[i];
      int64_t parts = 1;
      if (inst.op() == Opcode::vp_self || inst.op() == Opcode::vp_pool) parts = vp_parts[{core_[i], inst.mapping.wkl}];
      // The footprint rules first: what asm --check refuses, the timing run
      // refuses with the same message.
      footprints.plan(i, step);
      timing::Work w = models[size_t(core_[i])].price(inst, parts, opt_.file, long(i) + 1);
      const bool shares = groups_.shares_read(i);
      if (shares) w.energy.dram = 0;  // DRAM is read once, for the group's first member
      work_[i] = Job{w.kind, w.cycles, w.bytes, w.ops, w.energy.total(), shares};
      if ((w.kind == WorkKind::DramLoad || w.kind == WorkKind::DramStore) && a_.dram_channels.empty())
        throw_input_error(line_of(opt_, i) + ": " + std::string(inst.mnemonic()) + " needs DRAM but architecture \"" + a_.name +
                          "\" has no DRAM channel");
      result_.stats.energy += w.energy;
    }
    pair_transfers();
    prepare_host();
  }

  // Host steps (ct_hs / ct_hw, formats/ISA_Format.md): step TAG is ready when
  // every ct_hs of its TAG has ended; the one host runs ready steps one at a
  // time, in the order they became ready (ties: lower TAG); every ct_hw of
  // the TAG ends when the step is done.
  struct HostStep {
    int64_t tag = 0;
    int64_t cycles = 0;
    size_t signals_left = 0;
    std::vector<size_t> waits;  // ct_hw instructions
    bool ready = false, done = false;
    int64_t start = -1;
  };
  void prepare_host() {
    std::map<int64_t, size_t> index;
    auto step_of = [&](int64_t tag) -> HostStep& {
      auto [it, fresh] = index.try_emplace(tag, host_steps_.size());
      if (fresh) {
        host_steps_.emplace_back();
        host_steps_.back().tag = tag;
      }
      return host_steps_[it->second];
    };
    host_step_of_.assign(n_, SIZE_MAX);
    for (size_t i = 0; i < n_; ++i) {
      const auto& inst = prog_.instructions[i];
      if (inst.op() != Opcode::ct_hs && inst.op() != Opcode::ct_hw) continue;
      HostStep& st = step_of(inst.get(Param::TAG));
      host_step_of_[i] = index.at(st.tag);
      if (inst.op() == Opcode::ct_hs) {
        ++st.signals_left;
        continue;
      }
      if (!st.waits.empty() && work_[st.waits[0]].cycles != work_[i].cycles)
        throw_input_error(line_of(opt_, i) + ": ct_hw of host step " + std::to_string(st.tag) +
                          " gives other HOPS/HBYTES than the one at " + line_of(opt_, st.waits[0]));
      st.cycles = work_[i].cycles;
      st.waits.push_back(i);
    }
    for (const HostStep& st : host_steps_)
      if (st.waits.empty())
        throw_input_error(opt_.file + ": host step " + std::to_string(st.tag) +
                          " has ct_hs but no ct_hw (nothing gives its work or waits for it)");
    host_waiting_.assign(n_, -1);
    for (size_t k = 0; k < host_steps_.size(); ++k)
      if (host_steps_[k].signals_left == 0) host_ready(k, 0);
  }

  void host_ready(size_t k, int64_t now) {
    host_steps_[k].ready = true;
    host_queue_.push_back(k);
    if (!host_busy_) host_next(now);
  }

  void host_next(int64_t now) {
    if (host_queue_.empty()) return;
    size_t k = host_queue_.front();
    host_queue_.pop_front();
    host_busy_ = true;
    host_steps_[k].start = now;
    push(now, host_steps_[k].cycles, kHostDone, uint32_t(k));
  }

  void host_done(size_t k) {
    HostStep& st = host_steps_[k];
    st.done = true;
    host_busy_ = false;
    host_cycles_ += now_ - st.start;
    for (size_t i : st.waits)
      if (host_waiting_[i] >= 0) {
        mark_started(i, std::max(host_waiting_[i], st.start));
        finish(i);
      }
    host_next(now_);
  }

  void pair_transfers() {
    // (source core, destination core, tag) -> sends / receives in program order.
    std::map<std::tuple<int, int64_t, int64_t>, std::vector<size_t>> sends, receives;
    for (size_t i = 0; i < n_; ++i) {
      const auto& inst = prog_.instructions[i];
      if (inst.op() != Opcode::so_mov && inst.op() != Opcode::si_mov) continue;
      bool send = inst.op() == Opcode::so_mov;
      int64_t other = inst.get(send ? Param::DCORE : Param::SCORE);
      const char* key = send ? "DCORE" : "SCORE";
      if (!a_.valid_core(other))
        throw_input_error(line_of(opt_, i) + ": " + std::string(inst.mnemonic()) + ": " + key + " = " +
                          std::to_string(other) + " is not a core of architecture \"" + a_.name + "\"");
      if (other == core_[i])
        throw_input_error(line_of(opt_, i) + ": " + std::string(inst.mnemonic()) + ": a core cannot transfer to itself");
      int src = send ? core_[i] : int(other), dst = send ? int(other) : core_[i];
      (send ? sends : receives)[{src, dst, inst.get(Param::TAG)}].push_back(i);
    }
    auto unmatched = [&](size_t i, bool send) {
      const auto& inst = prog_.instructions[i];
      throw_input_error(line_of(opt_, i) + ": " + std::string(inst.mnemonic()) + " (TAG " +
                        std::to_string(inst.get(Param::TAG)) + ") has no matching " + (send ? "si_mov on core " : "so_mov on core ") +
                        std::to_string(inst.get(send ? Param::DCORE : Param::SCORE)));
    };
    for (const auto& [key, s] : sends) {
      auto it = receives.find(key);
      size_t nr = it == receives.end() ? 0 : it->second.size();
      for (size_t k = 0; k < s.size(); ++k) {
        if (k >= nr) unmatched(s[k], true);
        size_t r = it->second[k];
        auto ts = prog_.instructions[s[k]].list(Param::Tile);
        auto tr = prog_.instructions[r].list(Param::Tile);
        if (!std::equal(ts.begin(), ts.end(), tr.begin(), tr.end()))
          throw_input_error(line_of(opt_, r) + ": si_mov Tile differs from its so_mov's (" + line_of(opt_, s[k]) + ")");
        partner_[s[k]] = r;
        partner_[r] = s[k];
      }
    }
    for (const auto& [key, r] : receives)
      for (size_t i : r)
        if (partner_[i] == SIZE_MAX) unmatched(i, false);
  }

  // ---- Execution ---------------------------------------------------------------
  QueueState& qs(int core, int q) { return queues_[size_t(core) * kQ + size_t(q)]; }
  int64_t& produced(int core, int src, int dst) { return produced_[(size_t(core) * kQ + size_t(src)) * kQ + size_t(dst)]; }
  int64_t& consumed(int core, int src, int dst) { return consumed_[(size_t(core) * kQ + size_t(src)) * kQ + size_t(dst)]; }

  // Schedules an event `delay` cycles after `now`. Durations are at most
  // timing::kMaxCycles, so the sum cannot overflow; a run whose clock passes
  // that bound is refused rather than timed wrongly.
  void push(int64_t now, int64_t delay, EventKind k, uint32_t id, uint32_t version = 0) {
    delay = std::max<int64_t>(delay, 0);
    if (delay > timing::kMaxCycles - now)
      throw_input_error(opt_.file + ": the run passes " + std::to_string(timing::kMaxCycles) +
                        " cycles (2^62): the program's sizes or the architecture's rates are out of any physical range");
    events_.push(Event{now + delay, seq_++, k, id, version});
  }

  void try_start(int core, int q, int64_t now) {
    QueueState& s = qs(core, q);
    if (s.busy || s.head >= s.order.size()) return;
    size_t i = s.order[s.head];
    const Node& nd = node_[i];
    // One token per Prev_Insts entry (an entry may repeat).
    for (int k = 0; k < nd.nprev; ++k) {
      int need = 0;
      for (int m = 0; m < nd.nprev; ++m) need += nd.prev[m] == nd.prev[k];
      if (produced(core, nd.prev[k], q) - consumed(core, nd.prev[k], q) < need) return;
    }
    for (int k = 0; k < nd.nprev; ++k) ++consumed(core, nd.prev[k], q);
    s.busy = true;
    auto& t = result_.timing[i];
    t.inst_idx = int64_t(i) + 1;
    t.issue = s.free_at;
    const auto& w = work_[i];
    if (w.kind == WorkKind::HostWait) {
      const HostStep& st = host_steps_[host_step_of_[i]];
      if (st.done) {
        mark_started(i, now);
        push(now, 0, kEnd, uint32_t(i));
      } else {
        host_waiting_[i] = now;  // ends with the step (host_done)
      }
      return;
    }
    if (w.kind == WorkKind::Send || w.kind == WorkKind::Receive) {
      ready_[i] = true;
      if (ready_[partner_[i]]) start_transfer(w.kind == WorkKind::Send ? i : partner_[i], now);
      return;
    }
    if (const int32_t g = groups_.group_of[i]; g >= 0) {
      ready_[i] = true;
      if (++group_ready_[size_t(g)] == groups_.groups[size_t(g)].members.size()) start_group(g, now);
      return;
    }
    mark_started(i, now);
    if (w.kind == WorkKind::Fixed) {
      push(now, w.cycles, kEnd, uint32_t(i));
    } else {
      bool store = w.kind == WorkKind::DramStore;
      route_[i] = &net_.dram_route(core, store);
      int64_t latency = std::llround(a_.dram.latency_cycles +
                                     (store ? a_.timing.st_fixed_cycles : a_.timing.ld_fixed_cycles)) +
                        route_[i]->latency;
      uint32_t f = new_flow(i, SIZE_MAX, double(w.bytes), &route_[i]->resources, 0);
      push(now, latency, kStream, f);
    }
  }

  void mark_started(size_t i, int64_t now) { result_.timing[i].start = now; }

  uint32_t new_flow(size_t first, size_t second, double bytes, const std::vector<int>* res, int64_t tail) {
    FlowUse u;
    u.first = first;
    u.second = second;
    u.tail = tail;
    uses_.push_back(u);
    return flows_.add(bytes, res);
  }

  void start_transfer(size_t send, int64_t now) {
    size_t recv = partner_[send];
    mark_started(send, now);
    mark_started(recv, now);
    route_[send] = &net_.core_route(core_[send], core_[recv]);
    route_[recv] = route_[send];
    uint32_t f = new_flow(send, recv, double(work_[send].bytes), &route_[send]->resources, route_[send]->latency);
    begin_stream(f);
  }

  // A multicast load starts when its last member is ready: one DRAM read
  // streams over the tree (the DRAM pool and each link once); a member ends
  // when the last byte has travelled its own route.
  void start_group(int32_t g, int64_t now) {
    const auto& members = groups_.groups[size_t(g)].members;
    std::vector<int> cores;
    for (uint32_t m : members) {
      mark_started(m, now);
      cores.push_back(core_[m]);
    }
    const size_t lead = members.front();
    const arch::Site& dram = net_.nearest_dram(core_[lead]);
    const Route& tree = net_.multicast_route(dram, cores);
    route_[lead] = &tree;  // the group's links, charged once
    int64_t latency = std::llround(a_.dram.latency_cycles + a_.timing.ld_fixed_cycles) + tree.latency;
    uint32_t f = new_flow(lead, SIZE_MAX, double(work_[lead].bytes), &tree.resources, 0);
    uses_[f].group = g;
    push(now, latency, kStream, f);
  }

  void begin_stream(uint32_t f) {
    if (flows_.remaining(f) <= 0) {
      flow_done(f);
      return;
    }
    flows_.advance(double(now_));
    flows_.start(f, double(now_));
    rates_stale_ = true;
  }

  // The rates of the active flows, once the flows that began or ended in a
  // cycle are known; a flow whose rate changed gets a new completion event.
  void reallocate() {
    flows_.reallocate([&](uint32_t f) {
      FlowUse& u = uses_[f];
      ++u.version;
      // A partial last cycle counts whole, as in timing::dram_transfer_cycles.
      double cycles = std::ceil(flows_.remaining(f) / std::max(flows_.rate(f), 1e-12) - 1e-9);
      push(now_, timing::saturate_cycles(cycles), kFlowDone, f, u.version);
    });
  }

  void flow_done(uint32_t f) {
    flows_.advance(double(now_));
    flows_.stop(f);
    const FlowUse& x = uses_[f];
    size_t first = x.first, second = x.second;
    int64_t tail = x.tail;
    if (x.group >= 0) {
      // Each member ends when the bytes have come its own way: its route's
      // latency past the nearest member's (which the stream started after).
      const auto& members = groups_.groups[size_t(x.group)].members;
      const int64_t nearest = route_[first]->latency;
      const arch::Site& dram = net_.nearest_dram(core_[first]);
      for (uint32_t m : members) {
        int64_t extra = net_.dram_latency(dram, core_[m]) - nearest;
        if (extra <= 0) finish(m);
        else push(now_, extra, kEnd, m);
      }
    } else {
      finish(first);
      if (second != SIZE_MAX) push(now_, tail, kEnd, uint32_t(second));
    }
    rates_stale_ = true;
  }

  void finish(size_t i) {
    const Node& nd = node_[i];
    int core = nd.core, q = nd.queue;
    result_.timing[i].end = now_;
    ++ended_;
    for (int k = 0; k < nd.nnext; ++k) ++produced(core, q, nd.next[k]);
    if (prog_.instructions[i].op() == Opcode::ct_hs) {
      size_t k = host_step_of_[i];
      if (--host_steps_[k].signals_left == 0) host_ready(k, now_);
    }
    QueueState& s = qs(core, q);
    s.busy = false;
    s.free_at = now_;
    ++s.head;
    try_start(core, q, now_);
    for (int k = 0; k < nd.nnext; ++k)
      if (nd.next[k] != q) try_start(core, nd.next[k], now_);
  }

  // Tokens left at the end: some pop took a token pushed for a later one, so
  // an instruction may have started before the one it waits for (asm --check
  // refuses the same program).
  void report_leftover_tokens() {
    for (int c = 0; c < ncores_; ++c)
      for (int x = 0; x < kQ; ++x)
        for (int y = 0; y < kQ; ++y) {
          int64_t left = produced(c, x, y) - consumed(c, x, y);
          if (left <= 0) continue;
          const auto& order = qs(c, x).order;
          throw_input_error((order.empty() ? opt_.file : line_of(opt_, order.back())) + ": core " + std::to_string(c) + ": " +
                            std::to_string(left) + " " + std::string(isa::queue_name(Queue(x))) + "->" +
                            std::string(isa::queue_name(Queue(y))) + " token(s) pushed but never popped");
        }
  }

  [[noreturn]] void report_deadlock() {
    std::string msg = opt_.file + ": deadlock: " + std::to_string(n_ - ended_) + " of " + std::to_string(n_) +
                      " instructions never ran; waiting:";
    // The head of every stuck queue (a rendezvous cycle runs through several
    // cores), up to a screenful.
    const int limit = 64;
    int shown = 0, more = 0;
    for (int c = 0; c < ncores_; ++c)
      for (int q = 0; q < kQ; ++q) {
        QueueState& s = qs(c, q);
        if (s.head >= s.order.size()) continue;
        if (shown == limit) {
          ++more;
          continue;
        }
        size_t i = s.order[s.head];
        const auto& inst = prog_.instructions[i];
        msg += "\n  " + line_of(opt_, i) + ": " + std::string(inst.mnemonic()) + " (core " + std::to_string(c) + ", queue " +
               std::string(isa::queue_name(Queue(q))) + ")";
        if (work_[i].kind == WorkKind::HostWait && host_waiting_[i] >= 0) {
          const HostStep& st = host_steps_[host_step_of_[i]];
          msg += " waits for host step " + std::to_string(st.tag) + ", " + std::to_string(st.signals_left) +
                 " of whose ct_hs never ran";
        } else if (ready_[i] && partner_[i] != SIZE_MAX) {
          msg += " waits for its partner at " + line_of(opt_, partner_[i]);
        } else if (ready_[i] && groups_.group_of[i] >= 0) {
          const auto& grp = groups_.groups[size_t(groups_.group_of[i])];
          std::string waiting;
          for (uint32_t m : grp.members)
            if (!ready_[m]) waiting += std::string(waiting.empty() ? "" : ", ") + line_of(opt_, m);
          msg += " waits for the other members of its multicast group (TAG " + std::to_string(grp.tag) + "): " + waiting;
        } else if (s.busy) {
          msg += " is running";
        } else {
          std::string missing;
          for (Queue src : inst.prev)
            if (produced(c, int(src), q) - consumed(c, int(src), q) <= 0)
              missing += std::string(missing.empty() ? "" : ", ") + std::string(isa::queue_name(src)) + "->" +
                         std::string(isa::queue_name(Queue(q)));
          msg += " waits for a " + missing + " token that is never produced";
        }
        ++shown;
      }
    if (more > 0) msg += "\n  ... and " + std::to_string(more) + " more queues";
    throw_input_error(msg);
  }

  // ---- Results -----------------------------------------------------------------
  Result collect() {
    Stats& st = result_.stats;
    st.instructions = int64_t(n_);
    std::map<int32_t, LayerStats> layers;
    std::vector<bool> core_used(size_t(ncores_), false);
    for (size_t i = 0; i < n_; ++i) {
      const auto& inst = prog_.instructions[i];
      auto& t = result_.timing[i];
      t.inst_idx = int64_t(i) + 1;
      core_used[size_t(core_[i])] = true;
      const Job& w = work_[i];
      double energy = w.energy;
      int64_t dur = t.end - t.start;
      st.total_cycles = std::max(st.total_cycles, t.end);
      auto& qstat = st.queues[size_t(inst.queue())];
      ++qstat.instructions;
      qstat.busy_cycles = timing::add_cycles(qstat.busy_cycles, dur);
      if (inst.op() == Opcode::pe_conv) st.macs += w.ops;
      if (inst.op() == Opcode::vp_self || inst.op() == Opcode::vp_pool || inst.op() == Opcode::dt_cal) st.vp_ops += w.ops;
      if (w.kind == WorkKind::DramLoad && !w.shares_read) st.dram_read_bytes += w.bytes;
      if (w.kind == WorkKind::DramStore) st.dram_write_bytes += w.bytes;
      if (w.kind == WorkKind::Send) st.transfer_bytes += w.bytes;
      if (route_[i] != nullptr && w.kind != WorkKind::Receive) {
        // Links are charged once per transfer, on the side that moves the data.
        double bits = double(w.bytes) * 8.0;
        timing::Energy links;
        links.noc = bits * double(route_[i]->hops) * a_.energy.noc_pj_per_bit_hop;
        links.d2d = bits * double(route_[i]->crossings) * a_.energy.d2d_pj_per_bit;
        st.noc_byte_hops += w.bytes * route_[i]->hops;
        st.d2d_bytes += w.bytes * route_[i]->crossings;
        st.energy += links;
        energy += links.total();
      }
      if (opt_.extras) {
        t.set_issue(std::min(t.issue, t.start));
        t.set_energy(energy);
        t.set_bytes(w.bytes);
        t.set_ops(w.ops);
      } else {
        t.present = 0;
      }
      if (inst.is_config()) continue;
      auto [it, fresh] = layers.try_emplace(inst.mapping.slyr);
      LayerStats& l = it->second;
      if (fresh) l.layer = inst.mapping.slyr, l.first_start = t.start, l.last_end = t.end;
      l.first_start = std::min(l.first_start, t.start);
      l.last_end = std::max(l.last_end, t.end);
      ++l.instructions;
      if (inst.op() == Opcode::pe_conv) l.macs += w.ops;
      l.energy_pj += energy;
    }
    for (bool u : core_used) st.cores_used += u;
    st.host_steps = int64_t(host_steps_.size());
    st.host_cycles = host_cycles_;
    st.energy += timing::static_energy(a_, st.cores_used, st.total_cycles);
    for (auto& [id, l] : layers) st.layers.push_back(l);
    return std::move(result_);
  }

  const isa::Program& prog_;
  const arch::Architecture& a_;
  const Options& opt_;
  Network net_;
  size_t n_;
  int ncores_ = 0;
  std::vector<int> core_;
  std::vector<Node> node_;
  std::vector<Job> work_;
  std::vector<bool> ready_;
  std::vector<size_t> partner_;
  isa::MulticastGroups groups_;
  std::vector<size_t> group_ready_;  // members at the head of their queue with their tokens
  std::vector<const Route*> route_;
  std::vector<QueueState> queues_;
  std::vector<int64_t> produced_, consumed_;
  FairShareFlows flows_;       // the DRAM and link bandwidth the transfers share
  std::vector<FlowUse> uses_;  // per flow of flows_
  bool rates_stale_ = false;  // a flow began or ended since the last reallocate
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::vector<HostStep> host_steps_;
  std::vector<size_t> host_step_of_;   // instruction -> its host step (ct_hs, ct_hw)
  std::vector<int64_t> host_waiting_;  // ct_hw: cycle it began to wait, -1 if not waiting
  std::deque<size_t> host_queue_;      // ready steps, in order
  bool host_busy_ = false;
  int64_t host_cycles_ = 0;
  uint64_t seq_ = 0;
  int64_t now_ = 0;
  size_t ended_ = 0;
  Result result_;
};

}  // namespace

Result simulate(const isa::Program& program, const arch::Architecture& arch, const Options& options) {
  Engine e(program, arch, options);
  return e.run();
}

}  // namespace cct::sim
