#include "traceview/analysis.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "fir/host_graph.hpp"
#include "isa/multicast.hpp"
#include "support/cli.hpp"
#include "support/error.hpp"
#include "timing/instruction_model.hpp"

namespace cct::traceview {

using isa::Opcode;
using isa::Param;
using isa::Queue;

std::string_view edge_kind_name(EdgeKind k) {
  switch (k) {
    case EdgeKind::None: return "start";
    case EdgeKind::QueueOrder: return "queue order";
    case EdgeKind::Token: return "token";
    case EdgeKind::Transfer: return "transfer partner";
  }
  return "?";
}

namespace {

constexpr int kQ = isa::kQueueCount;

// Dense core indices: cores[k] is the k-th distinct core id, ascending.
std::vector<int32_t> core_indices(const trace::Trace& t, std::vector<int32_t>& cores) {
  cores.clear();
  for (const auto& inst : t.program.instructions) cores.push_back(inst.mapping.core);
  std::sort(cores.begin(), cores.end());
  cores.erase(std::unique(cores.begin(), cores.end()), cores.end());
  std::vector<int32_t> idx(t.size());
  for (size_t i = 0; i < t.size(); ++i)
    idx[i] = int32_t(std::lower_bound(cores.begin(), cores.end(), t.program.instructions[i].mapping.core) - cores.begin());
  return idx;
}

bool is_dram_read_opcode(const isa::Instruction& inst) {
  // The timing model's classification, used only when it could not price the trace.
  switch (inst.op()) {
    case Opcode::lda_mov:
    case Opcode::ldw_mov:
    case Opcode::lda_mc:
    case Opcode::ldw_mc:
    case Opcode::lw_mc: return true;
    case Opcode::lw_mov: return inst.get(Param::SS) != 0;
    default: return false;
  }
}

}  // namespace

std::vector<Dependence> binding_dependences(const trace::Trace& t, std::vector<int64_t>* partners_out) {
  const size_t n = t.size();
  const auto& insts = t.program.instructions;
  std::vector<int32_t> cores;
  std::vector<int32_t> core = core_indices(t, cores);
  const size_t nc = cores.size();

  // Producers of every token, per (core, from, to), in push order.
  std::vector<std::vector<int64_t>> pushes(nc * kQ * kQ);
  for (size_t i = 0; i < n; ++i) {
    const auto& inst = insts[i];
    for (Queue to : inst.next) pushes[(size_t(core[i]) * kQ + size_t(inst.queue())) * kQ + size_t(to)].push_back(int64_t(i));
  }
  std::vector<size_t> popped(nc * kQ * kQ, 0);
  std::vector<int64_t> last_in_lane(nc * kQ, -1);
  std::vector<Dependence> dep(n);

  auto better = [&](const Dependence& cand, const Dependence& cur) {
    if (cur.pred < 0) return true;
    int64_t ec = t.timing[size_t(cand.pred)].end, eb = t.timing[size_t(cur.pred)].end;
    if (ec != eb) return ec > eb;
    // Equal ends: a token (or transfer) says more about why than queue order.
    if ((cand.kind == EdgeKind::QueueOrder) != (cur.kind == EdgeKind::QueueOrder)) return cur.kind == EdgeKind::QueueOrder;
    return cand.pred > cur.pred;
  };
  auto consider = [&](Dependence& d, int64_t pred, EdgeKind kind, Queue from, int64_t start) {
    // A predecessor that ended after this instruction started cannot have held
    // it back (an inconsistent or filtered trace): ignore it.
    if (pred < 0 || t.timing[size_t(pred)].end > start) return;
    Dependence cand{pred, kind, from};
    if (better(cand, d)) d = cand;
  };

  for (size_t i = 0; i < n; ++i) {
    const auto& inst = insts[i];
    size_t lane = size_t(core[i]) * kQ + size_t(inst.queue());
    int64_t start = t.timing[i].start;
    Dependence d;
    consider(d, last_in_lane[lane], EdgeKind::QueueOrder, inst.queue(), start);
    last_in_lane[lane] = int64_t(i);
    for (Queue from : inst.prev) {
      size_t key = (size_t(core[i]) * kQ + size_t(from)) * kQ + size_t(inst.queue());
      size_t k = popped[key]++;
      if (k < pushes[key].size()) consider(d, pushes[key][k], EdgeKind::Token, from, start);
    }
    dep[i] = d;
  }

  // Transfers: the k-th so_mov A->B with tag t pairs with the k-th si_mov on B from A with tag t;
  // the pair starts together, so whatever held one back held back both.
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::pair<std::vector<int64_t>, std::vector<int64_t>>> pairs;
  for (size_t i = 0; i < n; ++i) {
    const auto& inst = insts[i];
    if (inst.op() == Opcode::so_mov)
      pairs[{inst.mapping.core, inst.get(Param::DCORE), inst.get(Param::TAG)}].first.push_back(int64_t(i));
    else if (inst.op() == Opcode::si_mov)
      pairs[{inst.get(Param::SCORE), inst.mapping.core, inst.get(Param::TAG)}].second.push_back(int64_t(i));
  }
  std::vector<int64_t> partner(partners_out ? n : 0, -1);
  std::vector<Dependence> own = dep;
  for (const auto& [key, sr] : pairs) {
    size_t m = std::min(sr.first.size(), sr.second.size());
    for (size_t k = 0; k < m; ++k) {
      int64_t s = sr.first[k], r = sr.second[k];
      if (partners_out) partner[size_t(s)] = r, partner[size_t(r)] = s;
      for (auto [me, other] : {std::pair{s, r}, std::pair{r, s}}) {
        const Dependence& o = own[size_t(other)];
        if (o.pred >= 0) consider(dep[size_t(me)], o.pred, EdgeKind::Transfer, o.token_from, t.timing[size_t(me)].start);
      }
    }
  }
  // Multicast groups (formats/ISA_Format.md 5b) start together when their
  // last member is ready: each member is held back by whatever held back the
  // others. Each member links to the next of its group (by core), so the
  // partner links walk round the group.
  const isa::MulticastGroups groups = isa::group_multicast_loads(t.program, [](size_t, const std::string&) {});
  for (const auto& g : groups.groups)
    for (size_t k = 0; k < g.members.size(); ++k) {
      const size_t me = g.members[k];
      if (partners_out && g.members.size() > 1) partner[me] = g.members[(k + 1) % g.members.size()];
      for (uint32_t other : g.members) {
        const Dependence& o = own[other];
        if (other != me && o.pred >= 0) consider(dep[me], o.pred, EdgeKind::Transfer, o.token_from, t.timing[me].start);
      }
    }
  if (partners_out) *partners_out = std::move(partner);
  return dep;
}

std::string Analysis::layer_label(int32_t slyr) const {
  const LayerRow* l = layer(slyr);
  if (l && !l->name.empty()) return l->name;
  return "layer " + std::to_string(slyr);
}

const LayerRow* Analysis::layer(int32_t slyr) const {
  auto it = std::lower_bound(layers.begin(), layers.end(), slyr, [](const LayerRow& r, int32_t s) { return r.layer < s; });
  return it != layers.end() && it->layer == slyr ? &*it : nullptr;
}

// Host steps (ct_hw, formats/ISA_Format.md): the host's cycles by the timing
// model, once per TAG, and the cycles in which some core waited for it.
void analyze_host(const trace::Trace& t, const arch::Architecture& arch, HostShare& h) {
  std::map<int64_t, HostStepRun> steps;  // by TAG
  std::vector<std::pair<int64_t, int64_t>> waits;
  for (size_t i = 0; i < t.program.instructions.size(); ++i) {
    const auto& in = t.program.instructions[i];
    if (in.op() != isa::Opcode::ct_hw) continue;
    HostStepRun& r = steps[in.get(isa::Param::TAG)];
    r.tag = in.get(isa::Param::TAG), r.ops = in.get(isa::Param::HOPS), r.bytes = in.get(isa::Param::HBYTES);
    r.cycles = timing::host_cycles(arch, r.ops, r.bytes);
    r.end = std::max(r.end, t.timing[i].end);
    r.start = std::max<int64_t>(0, r.end - r.cycles);
    waits.emplace_back(t.timing[i].start, t.timing[i].end);
  }
  h.steps = int64_t(steps.size());
  for (const auto& [tag, r] : steps) h.cycles += r.cycles, h.runs.push_back(r);
  std::sort(waits.begin(), waits.end());
  int64_t lo = -1, hi = -1;
  for (const auto& [s, e] : waits) {
    if (s > hi) {
      h.wait_cycles += hi - lo;
      lo = s, hi = e;
    } else {
      hi = std::max(hi, e);
    }
  }
  h.wait_cycles += hi - lo;
}

Analysis analyze(const trace::Trace& t, const Options& opt) {
  if (!opt.arch) throw Error(kExitInternal, "traceview: analyze() needs an architecture");
  const arch::Architecture& arch = *opt.arch;
  const auto& insts = t.program.instructions;
  const size_t n = t.size();
  Analysis a;
  a.arch_name = arch.name;
  a.clock_ghz = arch.clock_ghz;
  a.macs_per_cycle_per_core = arch.core.macs_per_cycle();
  a.instructions = int64_t(n);
  a.total_cycles = t.total_cycles();
  std::vector<int32_t> core = core_indices(t, a.cores);
  const size_t nc = a.cores.size();

  // ---- Lanes (core, queue) with instructions, in core then queue order.
  std::vector<int32_t> lane_index(nc * kQ, -1);
  for (size_t i = 0; i < n; ++i) lane_index[size_t(core[i]) * kQ + size_t(insts[i].queue())] = 0;
  for (size_t k = 0; k < lane_index.size(); ++k)
    if (lane_index[k] == 0) {
      lane_index[k] = int32_t(a.lanes.size());
      Lane l;
      l.core = a.cores[k / kQ];
      l.queue = Queue(k % kQ);
      a.lanes.push_back(l);
    }

  // ---- The timing model: MACs, bytes and DRAM direction of every instruction.
  std::vector<timing::Work> work;
  try {
    std::map<std::pair<int32_t, int32_t>, int64_t> vp_parts;  // the simulator's split of a VP layer
    for (size_t i = 0; i < n; ++i)
      if (insts[i].op() == Opcode::vp_self || insts[i].op() == Opcode::vp_pool) ++vp_parts[{core[i], insts[i].mapping.wkl}];
    std::vector<timing::CoreModel> models(nc, timing::CoreModel(arch));
    work.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const auto& inst = insts[i];
      int64_t parts = 0;
      if (inst.op() == Opcode::vp_self || inst.op() == Opcode::vp_pool) parts = vp_parts[{core[i], inst.mapping.wkl}];
      work[i] = models[size_t(core[i])].price(inst, parts, opt.file, long(i) + 1);
    }
    a.model_priced = true;
  } catch (const Error& e) {
    work.clear();
    a.model_problem = e.what();
    cli::warn("the timing model cannot price this trace (" + a.model_problem +
              "); MACs and DRAM bytes come from the trace alone");
  }

  // A multicast group reads DRAM once: its first member (lowest core) counts
  // the bytes, as zebusim does (formats/ISA_Format.md 5b).
  const isa::MulticastGroups groups = isa::group_multicast_loads(t.program, [](size_t, const std::string&) {});
  a.lane_of.resize(n);
  a.macs_of.assign(n, 0);
  a.dram_read_of.assign(n, 0);
  a.dram_write_of.assign(n, 0);
  bool all_ops = n > 0, all_bytes = n > 0, all_energy = n > 0;
  std::map<int32_t, LayerRow> layers;
  for (size_t i = 0; i < n; ++i) {
    const auto& inst = insts[i];
    const auto& tm = t.timing[i];
    all_ops = all_ops && tm.has(trace::Timing::kOps);
    all_bytes = all_bytes && tm.has(trace::Timing::kBytes);
    all_energy = all_energy && tm.has(trace::Timing::kEnergy);
    int32_t lane = lane_index[size_t(core[i]) * kQ + size_t(inst.queue())];
    a.lane_of[i] = lane;
    Lane& l = a.lanes[size_t(lane)];
    ++l.instructions;
    add_to(l.busy_cycles, tm.duration());
    if (tm.has(trace::Timing::kEnergy)) l.energy_pj += tm.energy;
    ++a.count_by_opcode[size_t(inst.op())];
    add_to(a.cycles_by_opcode[size_t(inst.op())], tm.duration());
    ++a.count_by_queue[size_t(inst.queue())];

    if (inst.op() == Opcode::pe_conv) {
      a.macs_of[i] = tm.has(trace::Timing::kOps) ? tm.ops : work.empty() ? 0 : work[i].ops;
      add_to(a.macs, a.macs_of[i]);
    }
    bool read = (work.empty() ? is_dram_read_opcode(inst) : work[i].kind == timing::WorkKind::DramLoad) && !groups.shares_read(i);
    bool write = work.empty() ? inst.op() == Opcode::sta_mov : work[i].kind == timing::WorkKind::DramStore;
    int64_t bytes = tm.has(trace::Timing::kBytes) ? tm.bytes : work.empty() ? 0 : work[i].bytes;
    if (read) a.dram_read_of[i] = bytes, add_to(a.dram_read, bytes);
    if (write) a.dram_write_of[i] = bytes, add_to(a.dram_write, bytes);

    auto [it, fresh] = layers.try_emplace(inst.mapping.slyr);
    LayerRow& r = it->second;
    if (fresh) r.layer = inst.mapping.slyr, r.first_start = tm.start, r.last_end = tm.end;
    if (!inst.is_config()) {
      if (r.instructions == 0) r.first_start = tm.start, r.last_end = tm.end;
      ++r.instructions;
      r.first_start = std::min(r.first_start, tm.start);
      r.last_end = std::max(r.last_end, tm.end);
    } else if (r.instructions == 0) {
      r.first_start = std::min(r.first_start, tm.start);
      r.last_end = std::max(r.last_end, tm.end);
    }
    if (inst.op() == Opcode::pe_conv) add_to(r.pe_busy_cycles, tm.duration());
    add_to(r.macs, a.macs_of[i]);
    add_to(r.dram_read, a.dram_read_of[i]);
    add_to(r.dram_write, a.dram_write_of[i]);
    if (tm.has(trace::Timing::kEnergy)) r.energy_pj += tm.energy;
  }
  a.trace_has_ops = all_ops;
  a.trace_has_bytes = all_bytes;

  // ---- Names and MACs from the Frontend IR.
  if (opt.fir) {
    const auto& fl = opt.fir->layers();
    int32_t missing = -1;
    for (auto& [id, r] : layers) {
      if (id >= 0 && size_t(id) < fl.size()) {
        r.name = fl[size_t(id)].name;
        r.op = fl[size_t(id)].operation;
        r.fir_macs = fir::macs(fl[size_t(id)]);
      } else if (size_t(id) == fl.size() && opt.fir->host_graph()) {
        r.name = std::string(fir::kHostGraphKey);  // its host step's slyr (formats/ISA_Format.md, 5a)
        r.op = "host graph";
      } else if (missing < 0) {
        missing = id;
      }
    }
    if (missing >= 0)
      cli::warn("layer " + std::to_string(missing) + " of the trace is not in the Frontend IR (" +
                std::to_string(fl.size()) + " layers): is it the FIR of this program?");
  }

  // ---- Critical path.
  a.dep_of = binding_dependences(t, &a.transfer_partner);
  if (n > 0) {
    int64_t last = 0;
    for (size_t i = 1; i < n; ++i)
      if (t.timing[i].end >= t.timing[size_t(last)].end) last = int64_t(i);
    std::vector<char> seen(n, 0);
    for (int64_t i = last; i >= 0 && !seen[size_t(i)]; i = a.dep_of[size_t(i)].pred) {
      seen[size_t(i)] = 1;
      a.critical.push_back(i);
    }
    std::reverse(a.critical.begin(), a.critical.end());
    int64_t prev_end = 0;
    for (size_t k = 0; k < a.critical.size(); ++k) {
      int64_t i = a.critical[k];
      const auto& inst = insts[size_t(i)];
      const auto& tm = t.timing[size_t(i)];
      // The first instruction of the chain is charged from cycle 0.
      int64_t from = k == 0 ? 0 : prev_end;
      int64_t charge = tm.end - from, wait = tm.start - from;
      prev_end = tm.end;
      LayerRow& r = layers[inst.mapping.slyr];
      r.cycles += charge;
      ++r.path_instructions;
      a.path_cycles_by_queue[size_t(inst.queue())] += charge;
      a.path_wait_cycles += wait;
      if (inst.op() == isa::Opcode::ct_hw) {
        // The host's computing only, not the wait for the step's other signals before it.
        const int64_t host = timing::host_cycles(arch, inst.get(isa::Param::HOPS), inst.get(isa::Param::HBYTES));
        a.host.path_cycles += std::min(charge, host);
      }
      const Dependence& d = a.dep_of[size_t(i)];
      bool same_run = !a.path_runs.empty() && a.path_runs.back().core == inst.mapping.core &&
                      a.path_runs.back().queue == inst.queue() && a.path_runs.back().layer == inst.mapping.slyr;
      if (!same_run) {
        PathRun run;
        run.first = i;
        run.core = inst.mapping.core;
        run.queue = inst.queue();
        run.layer = inst.mapping.slyr;
        run.begin = from;
        run.entry = k == 0 ? EdgeKind::None : d.kind;
        run.entry_from = d.token_from;
        a.path_runs.push_back(run);
      }
      PathRun& run = a.path_runs.back();
      run.last = i;
      ++run.instructions;
      run.end = tm.end;
      run.wait_cycles += wait;
    }
  }
  for (auto& [id, r] : layers) a.layers.push_back(std::move(r));

  // ---- Energy.
  EnergyBreakdown& e = a.energy;
  e.available = all_energy;
  if (all_energy) {
    timing::Energy model;
    for (size_t i = 0; i < n; ++i) {
      e.instructions_pj += t.timing[i].energy;
      e.by_queue[size_t(insts[i].queue())] += t.timing[i].energy;
      if (work.empty()) continue;
      timing::Energy ei = work[i].energy;
      if (groups.shares_read(i)) ei.dram = 0;  // the group's DRAM read is priced once, as zebusim does
      model += ei;
    }
    if (!work.empty()) {
      // The trace's energy is the model's per-instruction energy plus the
      // links (NoC hops, D2D crossings) the simulator charged; anything less
      // means the trace was priced differently, and no split is shown.
      double links = e.instructions_pj - model.total();
      if (links >= -1e-6 * std::max(1.0, e.instructions_pj)) {
        e.components = true;
        e.split = model;
        e.split.noc = std::max(0.0, links);
        e.split.d2d = 0;
        e.split.static_ = timing::static_energy(arch, int64_t(nc), a.total_cycles).static_;
      }
    }
  }
  analyze_host(t, arch, a.host);
  return a;
}

}  // namespace cct::traceview
