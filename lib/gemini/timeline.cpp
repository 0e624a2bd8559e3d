// gemini's cost model, its timeline: each core runs its workloads in the
// order asm lays them out (per-core queues of computes, DRAM transfers and
// core-to-core transfers with their dependences), as events over time; DRAM
// and link bandwidth is shared by the transfers using it. The plan's
// expansion into workloads is cost.cpp's; the rules are cost.hpp's header.
#include "gemini/cost_impl.hpp"

namespace cct::gemini {

// ---- The timeline: per-core queues in asm's order, events, shared links -------

void CostModel::Impl::simulate(const Plan& plan, const std::vector<std::vector<int>>& per_core, PlanCost& pc,
                               std::vector<LayerCost>& lcost, bool detail, bool program_frame, bool multicast) const {
  const int64_t load_fixed = std::llround(a.dram.latency_cycles + a.timing.ld_fixed_cycles);
  const int64_t store_fixed = std::llround(a.dram.latency_cycles + a.timing.st_fixed_cycles);
  lcost.assign(net.layers.size(), LayerCost{});
  ops.clear();
  edges.clear();
  send_chain.clear();
  send_begin.assign(size_t(C) + 1, 0);
  send_feeds.clear();
  wl_ops.assign(wls.size(), WlOps{});
  need_flags.assign(needs.size(), 0);
  sync_flags.assign(syncs.size(), 0);
  send_runs.clear();
  send_chain.reserve(needs.size() + syncs.size());
  Stamp clock = 0;
  Stamp run_end = 0;  // the clock after the last send
  size_t recvs = needs.size();  // receives: of every need, and of the messages of workloads that load
  auto op = [&](Op::Kind k, int core, int wl) {
    Op o;
    o.kind = k, o.core = core, o.wl = wl;
    o.stamp = clock++;
    ops.push_back(o);
    return int(ops.size()) - 1;
  };
  auto edge = [&](int from, int to) {
    if (from >= 0 && to >= 0) edges.push_back({from, to, clock++});
  };
  std::vector<int> weight_op(wts.size(), -1);
  // Weights by the workload that issues them.
  std::vector<std::vector<int>> issued(wls.size());
  for (size_t i = 0; i < wts.size(); ++i) issued[size_t(per_core[size_t(wts[i].core)][size_t(wts[i].issue)])].push_back(int(i));

  // Stores another core loads back: the storing core sends that core a
  // one-pixel message once the store is done, in global workload order, and
  // the loading core's load waits for it (asm's cross-core synchronisation).
  // Message k (an entry of `syncs`) goes from the producer syncs[k] to the
  // workload whose sync range holds k.
  std::vector<std::vector<std::pair<int, int>>> readers_of(wls.size());  // producer -> (reader, k)
  sync_reader.assign(syncs.size(), -1);
  for (size_t id = 0; id < wls.size(); ++id)
    for (int k = wls[id].sync_begin; k < wls[id].sync_end; ++k) {
      readers_of[size_t(syncs[size_t(k)])].emplace_back(int(id), k);
      sync_reader[size_t(k)] = int(id);
    }
  const int64_t sync_bytes = timing::activation_bytes(a, 1, 1, 1, 1, 1);
  // Inputs loaded ahead (Wl::early_head): issued_early: workload -> readers
  // whose loads it issues, early_load: reader -> that load.
  std::vector<std::vector<int>> issued_early(wls.size());
  std::vector<int> early_load(wls.size(), -1);
  for (size_t id = 0; id < wls.size(); ++id)
    if (wls[id].early_head >= 0)
      issued_early[size_t(per_core[size_t(wls[id].core)][size_t(wls[id].early_head)])].push_back(int(id));

  for (int c = 0; c < C; ++c) {
    send_begin[size_t(c)] = int(send_chain.size());
    int prev_compute = -1, prev_dram = -1;
    int prev2_compute = -1;  // the compute before prev_compute
    int prev_so_first = -1, prev_so_last = -1;  // the previous workload's own sends (chain positions)
    // Per unit (PE, VP): its last compute, layer and configuration.
    std::array<int, 2> unit_compute{-1, -1}, unit_layer{-1, -1};
    std::array<std::optional<timing::UnitConfig>, 2> unit_config;
    int pending_store = -1;  // workload whose store goes in the next block
    // (reader, k) whose store is made; a reader's messages are sorted by producer, so this is reader, producer order.
    std::vector<std::pair<int, int>> ready_syncs;
    // A send (after the previous send of this core and what it reads): its
    // place in the core's chain.
    auto send = [&](Xfer t, int k) {
      const int pos = int(send_chain.size());
      if (send_runs.empty() || clock != run_end) send_runs.push_back({pos, clock});
      clock += 3;
      run_end = clock;
      send_chain.push_back(xfer_handle(t, k));
      return pos;
    };
    auto emit_syncs = [&](int before) {
      std::stable_sort(ready_syncs.begin(), ready_syncs.end());
      size_t n = 0;
      while (n < ready_syncs.size() && ready_syncs[n].first < before) ++n;
      for (size_t i = 0; i < n; ++i) send(Xfer::SyncSend, ready_syncs[i].second);
      ready_syncs.erase(ready_syncs.begin(), ready_syncs.begin() + std::ptrdiff_t(n));
    };

    auto dram = [&](Op::Kind k, int wl, int weight, int64_t bytes, int pieces, int channel) {
      int o = op(k, c, wl);
      Op& x = ops[size_t(o)];
      x.weight = weight;
      x.bytes = bytes;
      x.route = &dram_route(channel, c, k == Op::Store);
      x.fixed = double(pieces * ((k == Op::Store ? store_fixed : load_fixed) + x.route->latency));
      edge(prev_dram, o);
      edge(prev_compute, o);  // a block's DRAM transfers wait for the previous compute
      prev_dram = o;
      return o;
    };
    // A weight slice's DRAM load, issued in workload `wl`.
    auto weight_load = [&](int wl, int wi) {
      return weight_op[size_t(wi)] = dram(Op::Load, wl, wi, wts[size_t(wi)].bytes, 1, wts[size_t(wi)].channel);
    };
    // The store of the last workload that stores, in the block after its
    // compute; the messages to the cores loading it back become ready.
    auto store_pending = [&]() {
      const Wl& pw = wls[size_t(pending_store)];
      wl_ops[size_t(pending_store)].store = dram(Op::Store, pending_store, -1, pw.out_bytes, 1, pw.out_channel);
      for (const auto& rk : readers_of[size_t(pending_store)]) ready_syncs.push_back(rk);
      pending_store = -1;
    };
    // Sends wait until everything this core sends to earlier readers has
    // gone (asm keeps one global order of readers, and for one reader the
    // order of its receives): after each workload, those whose reader comes
    // before the core's next workload go.
    using PendingSend = std::pair<int, int>;  // (consumer, need), sent in this order
    std::priority_queue<PendingSend, std::vector<PendingSend>, std::greater<>> pending_sends;
    // The LW queue issues in order: a streamed workload's tile loads (L2 ->
    // weight buffer) wait behind the DRAM -> weight buffer loads issued in
    // earlier workloads (irgen's estimate charges the same), e.g. a multicast
    // load issued far ahead whose group fires late.
    int lw_tail = -1;
    const auto& mine = per_core[size_t(c)];
    for (size_t qi = 0; qi < mine.size(); ++qi) {
      const int id = mine[qi];
      const Wl& w = wls[size_t(id)];
      WlOps& wo = wl_ops[size_t(id)];
      const int lw_before = lw_tail;
      std::vector<int> own;
      for (int wi : issued[size_t(id)])
        if (wts[size_t(wi)].first == w.q && !wts[size_t(wi)].direct) own.push_back(weight_load(id, wi));
      if (pending_store >= 0) store_pending();
      emit_syncs(id);
      // Receives, in order, into buffers of their own from the previous
      // workload on (irgen), so once the one before it no longer reads the
      // bytes; asm queues them before the messages of stores this workload
      // loads back (a producer sends its data before such a message, so the
      // other order could wait in a cycle).
      // (A data movement's piece lands in its output tensor, which irgen
      // places from this workload on; asm's receive still runs ahead of
      // the previous compute as far as its L2 bytes allow, measured as
      // for the other receives.) Where irgen placed the buffers, after
      // what last used their bytes.
      wo.recv_after = w.receive_after == -2   ? prev2_compute
                      : w.receive_after >= 0 ? wl_ops[size_t(mine[size_t(w.receive_after)])].compute
                                             : -1;
      wo.recvs = clock;
      clock += 3 * Stamp(w.need_end - w.need_begin);  // each after the previous receive and what it waits for
      const bool loaded_ahead = early_load[size_t(id)] >= 0;
      const int64_t own_bytes = w.dram_bytes - (loaded_ahead ? w.early_bytes : 0);
      if (own_bytes > 0) {
        // Waits for the storing cores' messages first.
        wo.sync_after = prev_compute;
        wo.syncs = clock;
        clock += 3 * Stamp(w.sync_end - w.sync_begin);
        recvs += size_t(w.sync_end - w.sync_begin);
        int ld = dram(Op::Load, id, -1, own_bytes, w.dram_pieces - (loaded_ahead ? w.early_pieces : 0), w.in_channel);
        wo.load = ld;
        ops[size_t(ld)].deps += w.sync_end - w.sync_begin;
        wo.sync_edges = clock;
        clock += Stamp(w.sync_end - w.sync_begin);
        own.push_back(ld);
      } else {
        for (int k = w.sync_begin; k < w.sync_end; ++k) sync_flags[size_t(k)] |= kUnpaired;
      }
      if (loaded_ahead) own.push_back(early_load[size_t(id)]);
      for (int wi : issued[size_t(id)])
        if (wts[size_t(wi)].first == w.q && wts[size_t(wi)].direct) own.push_back(lw_tail = weight_load(id, wi));
      int cmp = op(Op::Compute, c, id);
      ops[size_t(cmp)].cycles = w.cycles;
      wo.compute = cmp;
      edge(prev_compute, cmp);
      if (w.weight >= 0 && !wts[size_t(w.weight)].direct) edge(lw_before, cmp);
      if (w.store_before >= 0) edge(wl_ops[size_t(mine[size_t(w.store_before)])].store, cmp);
      if (program_frame) {
        // A layer's configuration instructions run in its unit's queue as soon
        // as the unit's previous instruction is done, before its inputs come.
        const Layer& L = net.layers[size_t(w.layer)];
        const size_t unit = L.pe() ? 0 : 1;
        if (!L.move && unit_layer[unit] != w.layer) {
          timing::UnitConfig uc = unit_config_of(L, w.box);
          int cfg = op(Op::Config, c, id);
          ops[size_t(cfg)].cycles = timing::layer_change_config_cycles(a, unit_config[unit] ? &*unit_config[unit] : nullptr, uc);
          edge(unit_compute[unit], cfg);
          edge(cfg, cmp);
          unit_config[unit] = uc;
        }
        unit_compute[unit] = cmp, unit_layer[unit] = w.layer;
      }
      for (int o : own) edge(o, cmp);
      ops[size_t(cmp)].deps += w.need_end - w.need_begin;
      wo.recv_edges = clock;
      clock += Stamp(w.need_end - w.need_begin);
      // The previous workload's sends still read the buffer this one writes.
      if (prev_so_first >= 0) {
        ops[size_t(cmp)].deps += prev_so_last - prev_so_first + 1;
        send_feeds.push_back({prev_so_first, prev_so_last, cmp, clock});
        clock += Stamp(prev_so_last - prev_so_first + 1);
      }
      prev_so_first = prev_so_last = -1;
      // Inputs of later workloads loaded ahead here, then weights issued
      // here for later workloads.
      for (int r : issued_early[size_t(id)]) {
        const Wl& rw = wls[size_t(r)];
        early_load[size_t(r)] = dram(Op::Load, r, -1, rw.early_bytes, rw.early_pieces, rw.in_channel);
      }
      for (int wi : issued[size_t(id)])
        if (wts[size_t(wi)].first != w.q) {
          const int o = weight_load(id, wi);
          if (wts[size_t(wi)].direct) lw_tail = o;
        }
      for (int si = w.send_begin; si < w.send_end; ++si) {
        const int k = sends[size_t(si)];
        pending_sends.emplace(needs[size_t(k)].consumer, k);
      }
      const int next = qi + 1 < mine.size() ? mine[qi + 1] : std::numeric_limits<int>::max();
      while (!pending_sends.empty() && pending_sends.top().first < next) {
        const auto [consumer, k] = pending_sends.top();
        pending_sends.pop();
        emit_syncs(consumer);
        const int o = send(Xfer::NeedSend, k);
        // Only this workload's own sends read a buffer the next one may reuse.
        if (need_producer(k) != id) continue;
        if (prev_so_first < 0) prev_so_first = o;
        prev_so_last = o;
      }
      prev2_compute = prev_compute;
      prev_compute = cmp;
      if (w.stored) pending_store = id;
    }
    if (pending_store >= 0) store_pending();
    emit_syncs(std::numeric_limits<int>::max());
  }
  send_begin[size_t(C)] = int(send_chain.size());
  // Host steps: after the stores of their inputs, one at a time (one host),
  // before the loads of their results (the ct_hs / ct_hw round trip).
  {
    int prev_host = -1;
    std::vector<int> host_op(net.host_steps.size(), -1);
    for (size_t k = 0; k < net.host_steps.size(); ++k) {
      int o = op(Op::Host, 0, -1);
      ops[size_t(o)].cycles = timing::host_cycles(a, net.host_steps[k].ops, host_bytes[k]);
      ops[size_t(o)].bytes = host_bytes[k];
      for (int pid : host_inputs[k]) edge(wl_ops[size_t(pid)].store, o);
      edge(prev_host, o);
      prev_host = host_op[k] = o;
    }
    for (size_t id = 0; id < wls.size(); ++id)
      for (int k : wls[id].host_steps) edge(host_op[size_t(k)], wl_ops[id].load);
  }
  // Compute waits for its weights wherever they were issued.
  for (size_t id = 0; id < wls.size(); ++id)
    if (wls[id].weight >= 0) {
      int wo = weight_op[size_t(wls[id].weight)];
      // Issued in the same workload or earlier: the edge may already exist (harmless).
      edge(wo, wl_ops[id].compute);
    }
  // Multicast: the loads several cores make of the same weights are one
  // group (asm's multicast pass merges them): it starts when its last member
  // is ready, one stream over the tree (mc_groups).
  mc_groups.clear();
  if (a.noc.multicast && multicast) {
    // The weight slices by (layer, k range, batch group), then index: runs
    // of equal keys are the groups (a sort of scratch, not a map per
    // evaluation: this runs for every plan the search prices).
    auto slice = [&](int i) {
      const Wt& t = wts[size_t(i)];
      return std::make_tuple(t.layer, t.k_lo, t.k_hi, t.batch_group);
    };
    std::vector<int>& same = mc_scratch;
    same.clear();
    for (size_t i = 0; i < wts.size(); ++i)
      if (weight_op[i] >= 0) same.push_back(int(i));
    std::sort(same.begin(), same.end(), [&](int x, int y) { return std::make_pair(slice(x), x) < std::make_pair(slice(y), y); });
    std::vector<int>& cores = mc_cores;
    for (size_t b = 0, e; b < same.size(); b = e) {
      e = b + 1;
      while (e < same.size() && slice(same[e]) == slice(same[b])) ++e;
      if (e - b < 2) continue;
      McGroup g;
      cores.clear();
      for (size_t j = b; j < e; ++j) {
        const int wi = same[j];
        g.ops.push_back(weight_op[size_t(wi)]);
        cores.push_back(wts[size_t(wi)].core);
        ops[size_t(weight_op[size_t(wi)])].group = int(mc_groups.size());
      }
      std::sort(cores.begin(), cores.end());
      g.tree = &tree_route(wts[size_t(same[b])].channel, cores);
      mc_groups.push_back(std::move(g));
    }
  }
  // Successor lists (in the order the dependencies were made).
  {
    std::vector<int> count(ops.size() + 1, 0);
    for (const Edge& e : edges) ++count[size_t(e.from)], ++ops[size_t(e.to)].deps;
    int at = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      ops[i].succ_begin = ops[i].succ_end = at;
      at += count[i];
    }
    succ.resize(size_t(at));
    succ_stamp.resize(size_t(at));
    for (const Edge& e : edges) {
      const int k = ops[size_t(e.from)].succ_end++;
      succ[size_t(k)] = e.to, succ_stamp[size_t(k)] = e.stamp;
    }
  }

  // ---- the transfers
  // Either side of a transfer: its workload, core, bytes, partner, stamp,
  // and what it waits for besides the one before it in its core's chain.
  auto xfer_wl = [&](Handle h) {
    const int k = xfer_index(h);
    switch (xfer_of(h)) {
      case Xfer::NeedSend: return need_producer(k);
      case Xfer::NeedRecv: return needs[size_t(k)].consumer;
      case Xfer::SyncSend: return syncs[size_t(k)];
      case Xfer::SyncRecv: break;
    }
    return sync_reader[size_t(k)];
  };
  auto xfer_core = [&](Handle h) { return wls[size_t(xfer_wl(h))].core; };
  auto xfer_bytes = [&](Handle h) {
    const Xfer t = xfer_of(h);
    return t == Xfer::NeedSend || t == Xfer::NeedRecv ? need_bytes(xfer_index(h)) : sync_bytes;
  };
  auto flags = [&](Handle h) -> uint8_t& {
    const Xfer t = xfer_of(h);
    return (t == Xfer::NeedSend || t == Xfer::NeedRecv ? need_flags : sync_flags)[size_t(xfer_index(h))];
  };
  // The receive's side of a pair, or the send's; -1: a message no receive waits for.
  auto partner = [&](Handle h) -> Handle {
    const int k = xfer_index(h);
    switch (xfer_of(h)) {
      case Xfer::NeedSend: return xfer_handle(Xfer::NeedRecv, k);
      case Xfer::NeedRecv: return xfer_handle(Xfer::NeedSend, k);
      case Xfer::SyncSend: return sync_flags[size_t(k)] & kUnpaired ? -1 : xfer_handle(Xfer::SyncRecv, k);
      case Xfer::SyncRecv: break;
    }
    return xfer_handle(Xfer::SyncSend, k);
  };
  // When the send at a chain position was made, and an op or receive.
  auto send_stamp = [&](int pos) {
    const auto run = std::upper_bound(send_runs.begin(), send_runs.end(), pos,
                                      [](int p, const SendRun& r) { return p < r.lo; }) - 1;
    return run->stamp + 3 * Stamp(pos - run->lo);
  };
  auto stamp_of = [&](Handle h) {
    if (h >= 0) return ops[size_t(h)].stamp;
    const int k = xfer_index(h);
    if (xfer_of(h) == Xfer::NeedRecv) {
      const int w = needs[size_t(k)].consumer;
      return wl_ops[size_t(w)].recvs + 3 * Stamp(k - wls[size_t(w)].need_begin);
    }
    const int w = sync_reader[size_t(k)];
    return wl_ops[size_t(w)].syncs + 3 * Stamp(k - wls[size_t(w)].sync_begin);
  };
  // A pair's route: from the sender's core to the receiver's.
  auto xfer_route = [&](Handle h) -> const Route& {
    const Handle s = is_send(xfer_of(h)) ? h : partner(h);
    const int k = xfer_index(s);
    const int to = xfer_of(s) == Xfer::NeedSend ? needs[size_t(k)].consumer : sync_reader[size_t(k)];
    return core_route(xfer_core(s), wls[size_t(to)].core);
  };
  auto route_of = [&](Handle h) -> const Route* { return h >= 0 ? ops[size_t(h)].route : &xfer_route(h); };
  // What a side waits for besides the one before it in its core's chain (an
  // op; -1: nothing): the producer's compute, the op a workload's receives
  // wait for (Wl::receive_after), the store a message reports, the compute
  // before a workload that loads.
  auto trigger = [&](Handle h) {
    const int k = xfer_index(h);
    switch (xfer_of(h)) {
      case Xfer::NeedSend: return wl_ops[size_t(need_producer(k))].compute;
      case Xfer::NeedRecv: return wl_ops[size_t(needs[size_t(k)].consumer)].recv_after;
      case Xfer::SyncSend: return wl_ops[size_t(syncs[size_t(k)])].store;
      case Xfer::SyncRecv: break;
    }
    return wl_ops[size_t(sync_reader[size_t(k)])].sync_after;
  };
  auto trigger_done = [&](Handle h) {
    const int t = trigger(h);
    return t < 0 || ops[size_t(t)].end >= 0;
  };
  // A core's receive at or after `at` (its position on the core, and among
  // that workload's receives), -1 when none is left.
  struct RecvAt {
    int q = 0, j = 0;
  };
  auto recv_at = [&](int c, RecvAt& at) -> Handle {
    const auto& mine = per_core[size_t(c)];
    for (; at.q < int(mine.size()); ++at.q, at.j = 0) {
      const int id = mine[size_t(at.q)];
      const Wl& w = wls[size_t(id)];
      const int n = w.need_end - w.need_begin;
      if (at.j < n) return xfer_handle(Xfer::NeedRecv, w.need_begin + at.j);
      if (wl_ops[size_t(id)].load >= 0 && at.j - n < w.sync_end - w.sync_begin)
        return xfer_handle(Xfer::SyncRecv, w.sync_begin + at.j - n);
    }
    return -1;
  };
  // Per core and chain (sends, receives): the next to begin, and whether the
  // one before it is still running.
  std::vector<int> send_next(send_begin.begin(), send_begin.end() - 1);
  std::vector<RecvAt> recv_next(static_cast<size_t>(C));
  std::vector<char> send_busy(size_t(C), 0), recv_busy(size_t(C), 0);
  // Sends' times, for the timeline (detail).
  std::vector<std::pair<double, double>> need_send_time, sync_send_time;
  if (detail) {
    need_send_time.assign(needs.size(), {-1.0, -1.0});
    sync_send_time.assign(syncs.size(), {-1.0, -1.0});
  }
  auto send_time = [&](Handle h) -> std::pair<double, double>& {
    return (xfer_of(h) == Xfer::NeedSend ? need_send_time : sync_send_time)[size_t(xfer_index(h))];
  };
  double xfer_end = -1;  // the latest end of a transfer (-1: none ended)

  // ---- run
  active.clear();
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;
  uint64_t seq = 0;
  double now = 0;
  auto push = [&](double t, int kind, Handle id) { events.push(Event{t, seq++, kind, id}); };
  // The earliest end of a flow, as the shares stand (kept apart: each change
  // of the shares replaces it).
  std::optional<Event> flow_done;
  auto advance = [&]() {
    for (Flow& x : active) {
      x.remaining = std::max(0.0, x.remaining - x.rate * (now - x.last));
      x.last = now;
    }
  };
  // Each active flow gets its fair share of its narrowest resource (the
  // bandwidth divided by the flows using it); one pending event stands for
  // the earliest completion.
  users.assign(capacity.size(), 0);
  share.assign(capacity.size(), std::numeric_limits<double>::infinity());
  auto use = [&](int r, int delta) {
    users[size_t(r)] += delta;
    share[size_t(r)] = users[size_t(r)] > 0 ? capacity[size_t(r)] / double(users[size_t(r)])
                                            : std::numeric_limits<double>::infinity();
  };
  auto reallocate = [&]() {
    work += int64_t(active.size()) + 1;
    double first = std::numeric_limits<double>::infinity();
    for (Flow& x : active) {
      double rate = std::numeric_limits<double>::infinity();
      for (int r : x.route->resources) rate = std::min(rate, share[size_t(r)]);
      x.rate = std::isfinite(rate) ? rate : a.noc.link_bytes_per_cycle;
      first = std::min(first, now + x.remaining / x.rate);
    }
    flow_done.reset();
    if (std::isfinite(first)) flow_done = Event{first, seq++, 2, -1};
  };
  auto start_stream = [&](Handle o, int64_t bytes, const Route* route) {
    advance();
    Flow fl;
    fl.op = o;
    // (A send streams while it runs, the last begun on its core.)
    fl.stamp = o >= 0 ? ops[size_t(o)].stamp : send_stamp(send_next[size_t(xfer_core(o))] - 1);
    fl.route = route;
    fl.remaining = double(bytes);
    fl.last = now;
    active.push_back(fl);
    for (int r : route->resources) use(r, +1);
    reallocate();
  };
  // A transfer's side begins (it heads its core's chain): the pair streams
  // once both sides have begun.
  auto begin_xfer = [&](Handle h) {
    const Xfer t = xfer_of(h);
    const int c = xfer_core(h);
    uint8_t& st = flags(h);
    if (is_send(t)) {
      st |= kSendBegun, ++send_next[size_t(c)], send_busy[size_t(c)] = 1;
      if (detail) send_time(h).first = now;
    } else {
      st |= kRecvBegun, ++recv_next[size_t(c)].j, recv_busy[size_t(c)] = 1;  // (it heads the chain)
    }
    const Handle p = partner(h);
    if (p == -1) {  // a message no receive waits for: done at once
      push(now, 0, h);
      return;
    }
    if (!(st & (is_send(t) ? kRecvBegun : kSendBegun))) return;  // waits for its partner
    // As zebusim: the bytes stream at once; the sender is done with the
    // last byte, the receiver the route's latency later.
    push(now, 1, is_send(t) ? h : p);
  };
  auto begin = [&](Handle o) {
    if (o < 0) return begin_xfer(o);
    Op& x = ops[size_t(o)];
    x.start = now;
    switch (x.kind) {
      case Op::Compute:
      case Op::Config:
      case Op::Host: push(now + double(x.cycles), 0, o); break;
      case Op::Load:
        if (x.group >= 0) {
          McGroup& g = mc_groups[size_t(x.group)];
          if (++g.ready < g.ops.size()) break;
          for (int m : g.ops) ops[size_t(m)].start = now;
          Op& lead = ops[size_t(g.ops.front())];
          lead.route = g.tree;
          push(now + double(load_fixed + g.tree->latency), 1, g.ops.front());
          break;
        }
        push(now + x.fixed, 1, o);
        break;
      case Op::Store: push(now + x.fixed, 1, o); break;
    }
  };
  // A send's bytes are all out: its receive ends the route's latency later.
  auto receive_after_latency = [&](Handle snd) { push(now + double(xfer_route(snd).latency), 0, partner(snd)); };
  // An op that `from` was the last to wait for begins.
  auto dependency_done = [&](Handle from, int to) {
    Op& y = ops[size_t(to)];
    y.last_dep = from;
    if (--y.deps == 0) begin(to);
  };
  // What waits for `h`, in the order the dependencies were made: the next
  // in its chain (made with it) and the op it feeds.
  auto finish_xfer = [&](Handle h) {
    const Xfer t = xfer_of(h);
    const int c = xfer_core(h);
    xfer_end = std::max(xfer_end, now);
    if (detail && is_send(t)) send_time(h).second = now;
    int feeds = -1;
    Stamp feed_stamp = 0;
    Handle next = -1;
    Stamp next_stamp = 0;
    if (is_send(t)) {
      send_busy[size_t(c)] = 0;
      const int pos = send_next[size_t(c)] - 1;
      auto f = std::upper_bound(send_feeds.begin(), send_feeds.end(), pos,
                                [](int p, const SendFeed& s) { return p < s.lo; });
      if (f != send_feeds.begin() && (f - 1)->hi >= pos) feeds = (f - 1)->compute, feed_stamp = (f - 1)->stamp;
      if (send_next[size_t(c)] < send_begin[size_t(c) + 1])
        next = send_chain[size_t(send_next[size_t(c)])], next_stamp = send_stamp(send_next[size_t(c)]);
    } else {
      recv_busy[size_t(c)] = 0;
      const WlOps& wo = wl_ops[size_t(xfer_wl(h))];
      if (t == Xfer::NeedRecv)
        feeds = wo.compute, feed_stamp = wo.recv_edges;
      else
        feeds = wo.load, feed_stamp = wo.sync_edges;
      next = recv_at(c, recv_next[size_t(c)]);
      if (next != -1) next_stamp = stamp_of(next);
    }
    const bool next_first = next != -1 && (feeds < 0 || next_stamp < feed_stamp);
    if (next_first && trigger_done(next)) begin_xfer(next);
    if (feeds >= 0) dependency_done(h, feeds);
    if (!next_first && next != -1 && trigger_done(next)) begin_xfer(next);
  };
  // What waits for op `o`: its successors, and the heads of its core's
  // chains that wait for it last, in the order the dependencies were made.
  auto finish = [&](Handle o) {
    if (o < 0) return finish_xfer(o);
    Op& x = ops[size_t(o)];
    x.end = now;
    std::array<std::pair<Stamp, Handle>, 2> heads;
    size_t n = 0;
    if (x.kind == Op::Compute || x.kind == Op::Store) {
      const size_t c = size_t(x.core);
      if (!send_busy[c] && send_next[c] < send_begin[c + 1] && trigger(send_chain[size_t(send_next[c])]) == o)
        heads[n++] = {send_stamp(send_next[c]), send_chain[size_t(send_next[c])]};
      if (const Handle h = recv_busy[c] ? -1 : recv_at(int(c), recv_next[c]); h != -1 && trigger(h) == o)
        heads[n++] = {stamp_of(h), h};
      if (n == 2 && heads[1].first < heads[0].first) std::swap(heads[0], heads[1]);
    }
    size_t hi = 0;
    for (int k = x.succ_begin; k < x.succ_end; ++k) {
      while (hi < n && heads[hi].first < succ_stamp[size_t(k)]) begin_xfer(heads[hi++].second);
      dependency_done(o, succ[size_t(k)]);
    }
    while (hi < n) begin_xfer(heads[hi++].second);
  };
  // The load queue of every core waits for its control prologue (ct_st,
  // ct_bc); weights loaded straight into the weight buffer do not (asm's
  // tokens), so a weight-bound start overlaps it. A core's first receive
  // may wait for nothing.
  const double prologue = program_frame ? double(timing::program_prologue_cycles(a)) : 0.0;
  {
    std::vector<Handle> first_recvs;
    for (int c = 0; c < C; ++c)
      if (const Handle h = recv_at(c, recv_next[size_t(c)]); h != -1 && trigger(h) < 0) first_recvs.push_back(h);
    size_t r = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      while (r < first_recvs.size() && stamp_of(first_recvs[r]) < ops[i].stamp) begin_xfer(first_recvs[r++]);
      if (ops[i].deps != 0) continue;
      const bool direct_weight = ops[i].weight >= 0 && wts[size_t(ops[i].weight)].direct;
      if (ops[i].kind == Op::Load && !direct_weight)
        push(prologue, 3, int(i));
      else
        begin(int(i));
    }
    while (r < first_recvs.size()) begin_xfer(first_recvs[r++]);
  }
  // A send's stream, or a DRAM transfer's.
  auto stream = [&](Handle h) {
    if (h >= 0) return std::make_pair(ops[size_t(h)].bytes, ops[size_t(h)].route);
    return std::make_pair(xfer_bytes(h), &xfer_route(h));
  };
  size_t done = 0;
  while (!events.empty() || flow_done) {
    Event e;
    if (flow_done && (events.empty() || events.top() > *flow_done)) {
      e = *flow_done;
      flow_done.reset();
    } else {
      e = events.top();
      events.pop();
    }
    now = e.time;
    switch (e.kind) {
      case 0:
        finish(e.id), ++done;
        break;
      case 3:
        begin(e.id);
        break;
      case 1: {
        const auto [bytes, route] = stream(e.id);
        if (bytes <= 0 || !route) {
          finish(e.id), ++done;
          if (e.id < 0 && partner(e.id) != -1) receive_after_latency(e.id);
        } else {
          start_stream(e.id, bytes, route);
        }
        break;
      }
      case 2: {
        advance();
        // Every flow done by now (within a byte) ends; so does one whose end
        // rounds to now (late in a long run a double cannot step by its
        // last bytes' time, and waiting for it would never end).
        std::vector<std::pair<Stamp, Handle>> ended;
        for (size_t k = 0; k < active.size();) {
          Flow& f = active[k];
          if (f.remaining <= 0.5 || now + f.remaining / f.rate <= now) {
            ended.emplace_back(f.stamp, f.op);
            for (int r : f.route->resources) use(r, -1);
            active[k] = active.back();
            active.pop_back();
          } else {
            ++k;
          }
        }
        std::sort(ended.begin(), ended.end());  // in the order they were made
        for (const auto& [stamp, o] : ended) {
          if (o >= 0 && ops[size_t(o)].group >= 0) {
            // Each member ends when the bytes have come its own way.
            const McGroup& g = mc_groups[size_t(ops[size_t(o)].group)];
            for (int m : g.ops) {
              const Op& y = ops[size_t(m)];
              push(now + double(dram_route(wts[size_t(y.weight)].channel, y.core, false).latency - g.tree->latency), 0, m);
            }
            continue;
          }
          finish(o), ++done;
          if (o < 0 && partner(o) != -1) receive_after_latency(o);
        }
        reallocate();
        break;
      }
    }
  }
  const size_t total = ops.size() + send_chain.size() + recvs;
  if (done < total && !mc_groups.empty()) {
    // Groups met in opposite orders on two cores wait for each other: asm's
    // multicast pass then keeps the unicast loads (its check finds the
    // deadlock), so the plan is priced as that program.
    simulate(plan, per_core, pc, lcost, detail, program_frame, false);
    return;
  }
  if (done < total) {
    // A cycle of waits (cannot happen with irgen's order); price it as hopeless.
    pc.overflow = std::max<int64_t>(pc.overflow, a.core.l2_bytes);
    pc.problem = "the transfers of this plan wait on each other in a cycle";
  }

  // ---- figures (ops and transfers in the order they were made)
  if (detail) {
    size_t si = 0;
    auto sends_before = [&](Stamp before) {
      for (; si < send_chain.size() && send_stamp(int(si)) < before; ++si) {
        const Handle h = send_chain[si];
        const Wl& w = wls[size_t(xfer_wl(h))];
        TimelineStep t;
        t.kind = TimelineStep::Send;
        t.core = xfer_core(h);
        t.layer = w.layer;
        t.segment = w.seg, t.group = w.group, t.part = w.part;
        t.bytes = xfer_bytes(h);
        if (const Handle p = partner(h); p != -1) t.peer = xfer_core(p);
        t.start = timing::saturate_cycles(send_time(h).first);
        t.end = timing::saturate_cycles(send_time(h).second);
        pc.timeline.push_back(t);
      }
    };
    for (const Op& x : ops) {
      sends_before(x.stamp);
      if (x.kind == Op::Host || x.kind == Op::Config) continue;
      TimelineStep t;
      t.kind = x.kind == Op::Compute ? TimelineStep::Compute
               : x.kind == Op::Load  ? TimelineStep::Load
                                     : TimelineStep::Store;
      const Wl& w = wls[size_t(x.wl)];
      t.core = x.core;
      t.layer = x.weight >= 0 ? wts[size_t(x.weight)].layer : w.layer;
      t.segment = w.seg, t.group = w.group, t.part = w.part;
      t.bytes = x.kind == Op::Compute ? 0 : x.bytes;
      t.start = timing::saturate_cycles(x.start);
      t.end = timing::saturate_cycles(x.end);
      pc.timeline.push_back(t);
    }
    sends_before(std::numeric_limits<Stamp>::max());
  }
  std::vector<int> first_part(lcost.size(), -1);  // per layer: the leader of its first part
  // A program without workloads (a network all on the host) still starts and ends.
  if (program_frame) pc.cycles = std::llround(a.timing.control_cycles) + timing::program_epilogue_cycles(a);
  auto end_cycles = [&](double end) {
    return timing::add_cycles(timing::saturate_cycles(std::ceil(end - 1e-9)), program_frame ? timing::program_epilogue_cycles(a) : 0);
  };
  if (!send_chain.empty() || recvs > 0) pc.cycles = std::max(pc.cycles, end_cycles(xfer_end));
  int rc = 0;
  RecvAt ra;
  // The bytes each receive brought and their energy, charged to its layer.
  auto recvs_before = [&](Stamp before) {
    for (; rc < C; ++rc, ra = RecvAt{})
      for (Handle h; (h = recv_at(rc, ra)) != -1; ++ra.j) {
        if (stamp_of(h) >= before) return;
        LayerCost& lc = lcost[size_t(wls[size_t(xfer_wl(h))].layer)];
        const int64_t bytes = xfer_bytes(h);
        lc.transfer_bytes += bytes;
        lc.energy += link_energy(xfer_route(h), bytes);
      }
  };
  for (const Op& x : ops) {
    recvs_before(x.stamp);
    pc.cycles = std::max(pc.cycles, end_cycles(x.end));
    if (x.kind == Op::Compute) {
      const Wl& w = wls[size_t(x.wl)];
      LayerCost& lc = lcost[size_t(w.layer)];
      int64_t s = timing::saturate_cycles(x.start), e = timing::saturate_cycles(x.end);
      if (lc.busy_cycles == 0 && lc.end == 0) {
        lc.start = s, lc.part_cycles = 0, lc.layer = w.layer;
        first_part[size_t(w.layer)] = w.leader;
      }
      if (w.leader == first_part[size_t(w.layer)]) lc.part_cycles += x.cycles;  // every run of the first part
      lc.start = std::min(lc.start, s);
      lc.end = std::max(lc.end, e);
      lc.busy_cycles += x.cycles;
      lc.l2_peak = std::max(lc.l2_peak, w.foot);
      // Waiting time, charged to what came last.
      double prev_end = 0;
      if (w.q > 0) prev_end = ops[size_t(wl_ops[size_t(per_core[size_t(w.core)][size_t(w.q - 1)])].compute)].end;
      if (x.start > prev_end + 0.5 && x.last_dep != -1) {
        const Route* route = route_of(x.last_dep);
        Binding b = route ? route->bound : Binding::Compute;
        if (x.last_dep >= 0 && ops[size_t(x.last_dep)].kind == Op::Load && route && route->bound == Binding::Noc) b = Binding::Dram;
        lc.wait_cycles[int(b)] += int64_t(x.start - prev_end);
      }
    } else if (x.kind == Op::Load || x.kind == Op::Store) {
      // A multicast group's DRAM read and tree are charged once, to its first member.
      if (x.group >= 0 && mc_groups[size_t(x.group)].ops.front() != int(&x - ops.data())) continue;
      int layer = x.weight >= 0 ? wts[size_t(x.weight)].layer : wls[size_t(x.wl)].layer;
      LayerCost& lc = lcost[size_t(layer)];
      timing::Energy e = timing::dram_transfer_energy(a, x.bytes);
      e += link_energy(*x.route, x.bytes);
      lc.energy += e;
      lc.dram_bytes += x.bytes;
    }
  }
  recvs_before(std::numeric_limits<Stamp>::max());
  (void)plan;
}


}  // namespace cct::gemini
