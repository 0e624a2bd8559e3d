// Scheduler IR -> instruction stream. See asm.hpp and docs in formats/.
//
// One Assembler per core walks the workloads in order and emits, per
// workload: the loads first needed by it (DRAM -> L2 activations and weights,
// DRAM -> WL0 weights), the tiles (configuration registers that changed, the
// compute instruction, and for weights kept in L2 the per-tile L2 -> WL0
// loads through two alternating slots), the loads of later workloads
// (prefetch) and the stores of its output (core_assembler.hpp: the class and
// its files). assign_tokens() then links the instructions with queue tokens.
#include "asm/core_assembler.hpp"

namespace cct::assembler {
namespace {

using namespace detail;

void layout_dram(Shared& sh) {
  DramLayout lay = assembler::layout_dram(sh.s, sh.g, sh.o);
  for (const auto& w : lay.weights) {
    sh.weight_dram.emplace(w.transfer_id, w);
    sh.weight_per_k.emplace(w.layer, w.size / (w.k_hi - w.k_lo + 1));
  }
  auto act = [](const DramRegion& r) {
    auto d = r.dims();
    return Shared::DramAct{r.address, d, r.element_bytes, {r.lower[0], r.lower[1], r.lower[2], r.lower[3]}};
  };
  for (const auto& r : lay.inputs) sh.act_dram[r.transfer_id] = act(r);
  if (sh.s.dram.host)
    for (const auto& h : *sh.s.dram.host) {
      for (int64_t t : h.related_ifmap) sh.host_of_store[t] = &h;
      for (int64_t t : h.related_ofmap) sh.host_of_load[t] = &h;
      if (h.related_ofmap.empty() && !h.related_ifmap.empty()) sh.host_tail_store[h.related_ifmap.back()] = &h;
      if (h.related_ofmap.empty() && h.related_ifmap.empty()) sh.free_steps.push_back(&h);
      // The step's slyr: its first layer's, or, for the host graph alone,
      // one past the last layer (formats/ISA_Format.md, 5a).
      const fir::Layer* first = h.layers.empty() ? nullptr : sh.g.find(h.layers[0]);
      const bool graph_only = h.layers.size() == 1 && h.layers[0] == fir::kHostGraphKey && sh.g.host_graph();
      if (!first && !graph_only)
        fail(sh.o, "/-1/host", "host step " + std::to_string(h.transfer_id) + " names no layer of the Frontend IR");
      sh.host_slyr[h.transfer_id] = first ? int32_t(first->layer_index) : int32_t(sh.g.size());
    }
  for (const auto& r : lay.stores) {
    sh.store_dram[r.transfer_id] = act(r);
    for (int64_t t : r.reloads) sh.act_dram[t] = act(r);
  }
}

// Cross-core DRAM dependencies: the cores that load each stored region back.
void plan_dram_sync(Shared& sh) {
  for (const auto& core : sh.s.cores) {
    int64_t top = 0;
    for (const auto& w : core.workloads)
      for (const auto& b : w.buffer) top = std::max(top, b.address + b.size);
    // A one-pixel block: one padded pixel of L2.
    const int64_t pixel = sh.a.core.l2_channel_align_bytes;
    sh.idle_byte[core.id] = top <= sh.a.core.l2_bytes - 2 * pixel ? sh.a.core.l2_bytes - 2 * pixel : -1;
  }
  // (core, layer) -> its workload ids of that layer, in program order
  std::map<std::pair<int64_t, std::string>, std::vector<int64_t>> ids_of;
  std::map<int64_t, const std::string*> layer_of_wl;
  for (const auto& core : sh.s.cores)
    for (const auto& w : core.workloads) {
      ids_of[{core.id, w.layer_name}].push_back(w.workload_id);
      layer_of_wl[w.workload_id] = &w.layer_name;
    }
  std::map<int64_t, std::set<int64_t>> loaders;  // DRAM load id -> cores loading it
  std::map<std::pair<int64_t, int64_t>, int64_t> reader;  // (core, load id) -> first workload reading it
  for (const auto& core : sh.s.cores)
    for (const auto& w : core.workloads) {
      for (const auto& b : w.buffer)
        if (b.newly_added && *b.newly_added && b.type != sir::TensorType::Weight && b.source)
          for (const auto& src : *b.source)
            if (src.type == sir::Endpoint::Dram) loaders[src.transfer_id].insert(core.id);
      for (const auto& f : w.ifmap)
        for (int64_t t : f.transfer_id) reader.emplace(std::make_pair(core.id, t), w.workload_id);
    }
  for (const auto& x : sh.s.dram.in) {
    if (!x.related_ofmap) continue;
    for (int64_t r : *x.related_ofmap) {
      auto it = loaders.find(r);
      if (it == loaders.end()) continue;
      for (int64_t c : it->second)
        if (c != x.core_id) {
          auto rd = reader.find({c, r});
          int64_t key = rd != reader.end() ? rd->second : x.workload_id;
          if (rd != reader.end() && sh.idle_byte[c] >= 0) {
            for (int64_t id : ids_of[{c, *layer_of_wl.at(key)}])
              if (id > x.workload_id) {
                key = std::min(key, id);
                break;
              }
            auto st = sh.store_dram.find(x.transfer_id);
            if (st == sh.store_dram.end()) continue;
            const auto& d = st->second.dims;
            int64_t hi = st->second.address + d[0] * d[1] * d[2] * d[3] * st->second.bytes;
            sh.early_receive[{c, key}].push_back({x.core_id, r, st->second.address, hi});
          } else {
            sh.sync_in[{c, r}].push_back(x.core_id);
          }
          sh.sync_out[x.transfer_id].push_back({c, r, key});
        }
    }
  }
}

// Fusion groups: a workload storing a tensor that is read back registers the
// first reader; the group number grows at the first workload reaching a
// registered reader.
void compute_groups(Shared& sh, const sir::Core& core) {
  std::map<int64_t, std::vector<int64_t>> spill_reader;
  for (const auto& x : sh.s.dram.in) {
    if (!x.related_ofmap) continue;
    int64_t first = std::numeric_limits<int64_t>::max();
    for (int64_t t : *x.related_ofmap)
      for (const auto& o : sh.s.dram.out)
        if (o.transfer_id == t)
          for (const auto& d : o.destination)
            if (d.workload_id) first = std::min(first, *d.workload_id);
    if (first != std::numeric_limits<int64_t>::max()) spill_reader[x.workload_id].push_back(first);
  }
  int g = 0;
  std::vector<int64_t> pending;
  for (const auto& w : core.workloads) {
    if (!pending.empty() && w.workload_id >= *std::min_element(pending.begin(), pending.end())) {
      ++g;
      pending.clear();
    }
    sh.group_of[w.workload_id] = g;
    auto it = spill_reader.find(w.workload_id);
    if (it != spill_reader.end()) pending.insert(pending.end(), it->second.begin(), it->second.end());
  }
}

TokenRules rules_for(Dialect d) {
  TokenRules r;
  if (d == Dialect::Wl1) {
    r.same_queue_tokens = true;
    r.control_to_all = true;
    r.descending_order = true;
    r.pairwise_only = true;
    r.tile_weight_reads_untracked = true;
  }
  return r;
}

}  // namespace

TileOrder detect_tile_order(std::string_view text) {
  // Among the tile keys in document order, "tile_num_10" right after
  // "tile_num_1" means string order, right after "tile_num_9" numeric.
  constexpr std::string_view key = "\"tile_num_";
  int64_t prev = -1;
  for (size_t at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
    size_t i = at + key.size();
    int64_t n = 0;
    size_t digits = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && digits < 9) n = n * 10 + (text[i++] - '0'), ++digits;
    if (digits == 0 || i >= text.size() || text[i] != '"') continue;
    if (prev == 1 && n == 10) return TileOrder::KeyString;
    if (prev == 9 && n == 10) return TileOrder::Numeric;
    prev = n;
  }
  return TileOrder::Numeric;
}

Dialect detect_dialect(const sir::Schedule& s) {
  for (const auto& c : s.cores)
    for (const auto& w : c.workloads)
      if (w.wl1_buffer.present()) return Dialect::Wl1;
  return Dialect::Wl0;
}

isa::Program assemble(const sir::Schedule& schedule, const fir::Graph& graph, const arch::Architecture& arch,
                      const Options& options) {
  Shared sh(schedule, graph, arch, options);
  if (sh.dialect == Dialect::Auto) sh.dialect = detect_dialect(schedule);
  for (size_t c = 0; c < schedule.cores.size(); ++c) {
    const auto& core = schedule.cores[c];
    if (!arch.valid_core(core.id))
      fail(options, "/" + std::to_string(core.id), "core " + std::to_string(core.id) + " is not a core of " + arch.name);
    for (size_t k = 0; k < core.workloads.size(); ++k) {
      const Workload& w = core.workloads[k];
      layer_of(sh, w.layer_name, ptr_workload(core.id, k) + "/layer_name");
      for (size_t i = 0; i < w.buffer.size(); ++i) {
        const BufferTensor& b = w.buffer[i];
        if (b.address < 0 || b.size < 0 || b.address > arch.core.l2_bytes - b.size)
          fail(options, ptr_workload(core.id, k) + "/buffer/" + std::to_string(i) + "/address",
               "tensor [" + std::to_string(b.address) + ", " + std::to_string(b.address + b.size) + ") is outside L2 (" +
                   std::to_string(arch.core.l2_bytes) + " bytes of " + arch.name + ")");
      }
    }
  }
  layout_dram(sh);
  plan_dram_sync(sh);
  for (const auto& core : schedule.cores) compute_groups(sh, core);
  isa::Program prog;
  TokenRules rules = rules_for(sh.dialect);
  // Free host steps close the first core's program; a network all on the
  // host has no core in its schedule, so core 0 runs just that.
  sir::Core host_core;
  std::vector<const sir::Core*> cores;
  for (const auto& core : schedule.cores) cores.push_back(&core);
  if (cores.empty()) cores.push_back(&host_core);
  if (!cores.empty()) sh.free_steps_core = cores.front()->id;
  for (const sir::Core* cp : cores) {
    const auto& core = *cp;
    CoreAssembler ca(sh, core);
    auto built = ca.run();
    assign_tokens(built, rules);
    for (auto& b : built) {
      if (schedule.cores.size() > 1) b.inst.mapping.core_written = true;
      prog.instructions.push_back(std::move(b.inst));
    }
  }
  if (options.multicast && arch.noc.multicast) {
    MulticastMerge mm = merge_multicast_loads(prog, arch);
    if (options.multicast_result) *options.multicast_result = mm;
  }
  return prog;
}

}  // namespace cct::assembler
