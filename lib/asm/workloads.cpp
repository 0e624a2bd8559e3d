// asm, workloads: a core's workloads in order. Per workload the loads it
// needs first (with early receives ordered by reader), its tiles, the loads
// of later workloads issued here (prefetch) and the stores of its output;
// then the layer numbers each instruction carries (clyr).
#include "asm/core_assembler.hpp"

namespace cct::assembler::detail {

// A tensor added before its reader that other cores fill (irgen's early
// receives): the pieces this core copies into it go in the reader, and until
// then it holds nothing to read or copy from.
bool CoreAssembler::early_buffer(const BufferTensor& b) const {
  if (b.cur_wl_ifmap.value_or(false) || b.type == sir::TensorType::Weight || !b.source) return false;
  for (const auto& s : *b.source)
    if (s.type != sir::Endpoint::Dram && s.core_id != core_.id) return true;
  return false;
}

// Loads first needed in workload k: L2 entries marked newly_added (weights,
// activations from DRAM or from another core) and WL0 entries loaded from
// DRAM that the previous workload did not hold.
std::vector<Load> CoreAssembler::new_loads(size_t k) const {
  const Workload& w = W()[k];
  std::vector<Load> out;
  for (const auto& b : w.buffer) {
    if (!b.newly_added || !*b.newly_added) continue;
    if (b.type == sir::TensorType::Weight) {
      out.push_back({Load::Weights, &b, nullptr, b.tensor_order, true});
    } else if (b.source) {
      // Every piece from DRAM or another core (pieces this core wrote are there).
      for (size_t i = 0; i < b.source->size(); ++i) {
        const sir::Source& s = (*b.source)[i];
        if (s.type == sir::Endpoint::Dram) out.push_back({Load::Act, &b, nullptr, b.tensor_order, true, i});
        else if (s.core_id != core_.id) out.push_back({Load::Receive, &b, nullptr, b.tensor_order, true, i});
        else if (!early_buffer(b) && copy_source(k, b, s.transfer_id))
          out.push_back({Load::Copy, &b, nullptr, b.tensor_order, true, i});
      }
    }
  }
  // A tensor added in the workload before its reader (its other pieces
  // arrive early) takes the pieces copied on this core in the reader, as its
  // own loads: the producer may be that earlier workload, whose later tiles
  // are still writing them there.
  if (k > 0)
    for (const auto& pb : W()[k - 1].buffer) {
      if (!pb.newly_added.value_or(false) || !early_buffer(pb)) continue;
      for (const auto& b : w.buffer) {
        if (!b.source || b.address != pb.address || b.transfer_id != pb.transfer_id || !b.cur_wl_ifmap.value_or(false) ||
            b.newly_added.value_or(false))
          continue;
        for (size_t i = 0; i < b.source->size(); ++i) {
          const sir::Source& s = (*b.source)[i];
          if (s.type != sir::Endpoint::Dram && s.core_id == core_.id && copy_source(k, b, s.transfer_id))
            out.push_back({Load::Copy, &b, nullptr, b.tensor_order, true, i});
        }
      }
    }
  // An entry is the same weights at the same place (several entries of one
  // layer: the runs of output channels of a part split to fit the buffer).
  using Key = std::tuple<std::string, std::vector<int64_t>, int64_t, sir::WeightSource>;
  std::set<Key> prev;
  if (k > 0)
    for (const auto& e : wl0(W()[k - 1]).entries) prev.insert({e.layer_name, e.transfer_id, e.address, e.source});
  for (const auto& e : wl0(w).entries) {
    if (e.source == sir::WeightSource::Ddr && !prev.count({e.layer_name, e.transfer_id, e.address, e.source}))
      out.push_back({Load::Wl0Dram, nullptr, &e, e.tensor_order.value_or(0), e.tensor_order.has_value()});
  }
  return out;
}

bool CoreAssembler::is_own(size_t k, const Load& l) const {
  switch (l.type) {
    case Load::Weights: return l.buffer->layer_name && own_weights(k, l.buffer->transfer_id, *l.buffer->layer_name);
    case Load::Wl0Dram: return own_weights(k, l.entry->transfer_id, l.entry->layer_name);
    case Load::Act:
    case Load::Receive:
    case Load::Copy: return l.buffer->cur_wl_ifmap.value_or(false);
  }
  return false;
}

void CoreAssembler::emit_load(size_t k, const Load& l) {
  const std::string p = wptr(k);
  switch (l.type) {
    case Load::Wl0Dram: {
      auto m = mapping(k, -1);
      const fir::Layer& L = layer_of(sh_, l.entry->layer_name, p);
      m.clyr.push_back(static_cast<int32_t>(L.layer_index));
      auto it = first_wkl_.find(l.entry->layer_name);
      m.c_flyr.push_back(it != first_wkl_.end() ? sh_.group_of.at(it->second->workload_id) : flyr_);
      lw_dram(k, *l.entry, m);
      break;
    }
    case Load::Weights: ldw(k, *l.buffer, mapping(k, -1)); break;
    case Load::Copy: copy(k, *l.buffer, l.source); break;
    case Load::Act:
    case Load::Receive: {
      auto m = mapping(k, -1);
      int64_t tid = (*l.buffer->source)[l.source].transfer_id;
      std::vector<int64_t> cons;
      if (l.type == Load::Act) {
        auto ot = std::find_if(sh_.s.dram.out.begin(), sh_.s.dram.out.end(),
                               [&](const sir::DramLoad& d) { return d.transfer_id == tid; });
        if (ot == sh_.s.dram.out.end())
          fail(sh_.o, p + "/buffer", "DRAM source transfer " + std::to_string(tid) + " is not in \"-1\"/out");
        for (const auto& d : ot->destination)
          if (d.workload_id) cons.push_back(*d.workload_id);
      } else {
        // The workload reading the piece: this one, or a later one for a
        // buffer filled ahead (irgen's early receives).
        cons.push_back(W()[reader_of(k, tid)].workload_id);
      }
      int g = flyr_;
      for (int64_t c : cons) {
        const Workload* cw = sh_.s.find_workload(c);
        if (!cw) fail(sh_.o, p + "/buffer", "transfer " + std::to_string(tid) + " goes to unknown workload " + std::to_string(c));
        m.clyr.push_back(static_cast<int32_t>(layer_of(sh_, cw->layer_name, p).layer_index));
      }
      if (!cons.empty()) g = sh_.group_of.count(*std::min_element(cons.begin(), cons.end()))
                                 ? sh_.group_of.at(*std::min_element(cons.begin(), cons.end()))
                                 : flyr_;
      m.c_flyr.push_back(g);
      if (l.type == Load::Act) lda(k, *l.buffer, l.source, m);
      else si(k, *l.buffer, l.source, m);
      break;
    }
  }
}

// A workload's own inputs: first the pieces other cores send, then the
// completion messages of other cores' stores it loads back, then the loads.
// A core sends its pieces for a workload before the completion messages
// that workload waits for (emit_syncs), so both cores meet them in one order.
void CoreAssembler::emit_own(size_t k, const std::vector<Load>& own) {
  // Pieces from other cores in tag order, the order their senders use for
  // one reader (flush_sends).
  std::vector<const Load*> receives;
  for (const auto& l : own)
    if (l.type == Load::Receive) receives.push_back(&l);
  auto tag = [](const Load* l) { return (*l->buffer->source)[l->source].transfer_id; };
  std::stable_sort(receives.begin(), receives.end(), [&](const Load* a, const Load* b) { return tag(a) < tag(b); });
  for (const Load* l : receives) emit_load(k, *l);
  struct Wait {
    int64_t writer, tag;
    const Load* load;
  };
  std::vector<Wait> waits;
  for (const auto& l : own) {
    if (l.type != Load::Act) continue;
    int64_t tid = (*l.buffer->source)[l.source].transfer_id;
    auto si = sh_.sync_in.find({core_.id, tid});
    if (si == sh_.sync_in.end() || !loaded_.insert(tid).second) continue;
    for (int64_t writer : si->second)
      if (writer != core_.id) waits.push_back({writer, tid, &l});
  }
  std::stable_sort(waits.begin(), waits.end(),
                   [](const Wait& a, const Wait& b) { return std::tie(a.writer, a.tag) < std::tie(b.writer, b.tag); });
  for (const auto& x : waits) {
    auto m = mapping(k, -1);
    const BufferTensor& b = *x.load->buffer;
    sync_receive(m, act_destination(b, x.load->source), x.writer, x.tag);
  }
  if (auto e = sh_.early_receive.find({core_.id, W()[k].workload_id}); e != sh_.early_receive.end()) {
    std::vector<Shared::EarlyReceive> list = e->second;
    std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
      return std::tie(a.writer, a.tag) < std::tie(b.writer, b.tag);
    });
    const int64_t landing = sh_.idle_byte.at(core_.id) + sh_.a.core.l2_channel_align_bytes;
    for (const auto& x : list) early_receive(mapping(k, -1), landing, x);
  }
  for (const auto& l : own)
    if (l.type != Load::Receive) emit_load(k, l);
}

// The workload that reads transfer `tid` received in workload k: k itself
// or a later one (irgen's early receives fill a buffer ahead of its reader).
size_t CoreAssembler::reader_of(size_t k, int64_t tid) const {
  for (size_t r = k; r < W().size(); ++r)
    for (const auto& f : W()[r].ifmap)
      if (std::find(f.transfer_id.begin(), f.transfer_id.end(), tid) != f.transfer_id.end()) return r;
  return k;
}

// Receives for later readers keep their places among workload k's other
// loads but take them in the order the senders send (flush_sends: by
// reader, then transfer id); in the SIR's tensor order two pieces one core
// sends to one reader could meet the sender's queue in the other order and
// wait for each other.
void CoreAssembler::order_early_receives(size_t k, std::vector<Load>& loads) const {
  std::vector<size_t> at;
  std::vector<std::pair<std::pair<int64_t, int64_t>, Load>> keyed;
  for (size_t i = 0; i < loads.size(); ++i) {
    if (loads[i].type != Load::Receive) continue;
    const int64_t tid = (*loads[i].buffer->source)[loads[i].source].transfer_id;
    at.push_back(i);
    keyed.push_back({{W()[reader_of(k, tid)].workload_id, tid}, loads[i]});
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t j = 0; j < at.size(); ++j) loads[at[j]] = keyed[j].second;
}

void CoreAssembler::workload(size_t k) {
  const Workload& w = W()[k];
  auto loads = new_loads(k);
  std::vector<Load> own, pre;
  for (const auto& l : loads) (is_own(k, l) ? own : pre).push_back(l);
  std::stable_sort(pre.begin(), pre.end(), [](const Load& a, const Load& b) {
    if (a.has_order != b.has_order) return a.has_order;
    return a.order < b.order;
  });
  order_early_receives(k, pre);
  std::vector<Load> own_rest;
  for (const auto& l : own) {
    if (l.type != Load::Weights) {
      own_rest.push_back(l);
      continue;
    }
    // Weights loaded into L2 go before the previous workload's stores (the
    // reference programs' order) unless they land on bytes a store still
    // reads: then the stores go first, or the load would overwrite them.
    for (const auto& ps : pending_stores_)
      if (sir::share_bytes(*l.buffer, *ps.src)) {
        flush_stores();
        break;
      }
    emit_load(k, l);
  }
  flush_stores();
  emit_syncs(w.workload_id);
  auto tiles = tiles_in_order(k);
  const sir::WeightBufferEntry* core_entry = nullptr;
  if (w.layer_type == sir::LayerType::Pe)
    for (const auto& e : wl0(w).entries)
      if (own_weights(k, e.transfer_id, e.layer_name) && e.source == sir::WeightSource::Core) core_entry = &e;
  if (core_entry) {
    core_tiles(k, *core_entry, own_rest, pre);
  } else {
    emit_own(k, own_rest);
    // Prefetch loads follow the first tile; in the Wl1 dialect a single-tile
    // workload stores its output first.
    const bool store_first = sh_.dialect == Dialect::Wl1 && tiles.size() == 1;
    for (size_t i = 0; i < tiles.size(); ++i) {
      if (w.layer_type == sir::LayerType::Pe) pe_tile(k, tiles[i].first, *tiles[i].second, wl0_address(k, *tiles[i].second));
      else if (fir::is_move_op(layer(k).op)) move_tile(k, tiles[i].first, *tiles[i].second);
      else vp_tile(k, tiles[i].first, *tiles[i].second);
      if (i == 0 && !store_first)
        for (const auto& l : pre) emit_load(k, l);
    }
    if (store_first) {
      stores(k);
      for (const auto& l : pre) emit_load(k, l);
      return;
    }
    if (tiles.empty())
      for (const auto& l : pre) emit_load(k, l);
  }
  stores(k);
}

// Weights kept in L2 stream into two WL0 slots tile by tile: before tile i
// the weights of tile i+1 go into the other slot, then (first tile only) tile
// i's own. The DRAM transfers of the workload go between the tile blocks.
void CoreAssembler::core_tiles(size_t k, const sir::WeightBufferEntry& entry, const std::vector<Load>& own,
                               const std::vector<Load>& pre) {
  const Workload& w = W()[k];
  const std::string p = wptr(k);
  const BufferTensor* l2 = nullptr;
  for (const auto& b : w.buffer)
    if (b.type == sir::TensorType::Weight && b.layer_name && own_weights(k, b.transfer_id, *b.layer_name)) l2 = &b;
  if (!l2) fail(sh_.o, p + "/buffer", "weights of \"" + w.layer_name + "\" come from L2 but no L2 buffer holds them");
  auto tiles = tiles_in_order(k);
  size_t n = tiles.size();
  if (n == 0) return;
  const sir::Tile& t0 = *tiles[0].second;
  int64_t kt = t0.ofmap_upper[1] - t0.ofmap_lower[1] + 1;
  int64_t per = kt * weight_per_k(w.layer_name, p) / wl0_row_bytes();
  // Weights that already had slots (another batch part) keep them.
  int64_t A = core_slots_.emplace(entry.transfer_id.empty() ? -1 : entry.transfer_id[0], entry.address).first->second;
  int64_t B = A + per;
  int64_t slots[2] = {A, B};
  bool prefetch_first = block0_prefetch(k, A, B, per);
  std::vector<bool> loaded(n, false);
  // The own loads go in block 0; then each tile block takes one prefetch, at
  // most one per DMA queue over the workload; the rest follow the last tile.
  std::vector<Load> queue = pre;
  size_t first_block = prefetch_first ? 0 : 1;
  std::set<int> used_queues;
  auto dma_queue = [](const Load& l) {
    return l.type == Load::Wl0Dram ? 0 : l.type == Load::Receive ? 2 : l.type == Load::Copy ? 3 : 1;
  };
  for (size_t i = 0; i < n; ++i) {
    if (i + 1 < n && (i > 0 || prefetch_first)) {
      lw_tile(k, tiles[i + 1].first, *tiles[i + 1].second, slots[(i + 1) % 2], *l2);
      loaded[i + 1] = true;
    }
    if (!loaded[i]) {
      lw_tile(k, tiles[i].first, *tiles[i].second, slots[i % 2], *l2);
      loaded[i] = true;
    }
    if (i == 0 && !own.empty()) {
      emit_own(k, own);
    } else if (i >= first_block) {
      for (size_t q = 0; q < queue.size(); ++q)
        if (used_queues.insert(dma_queue(queue[q])).second) {
          emit_load(k, queue[q]);
          queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(q));
          break;
        }
    }
    pe_tile(k, tiles[i].first, *tiles[i].second, slots[i % 2]);
  }
  for (const auto& l : queue) emit_load(k, l);
}

// Whether the second tile's weights are loaded before the first tile runs:
// not when the latest convolution whose weights overlap the two slots
// overlaps only the first slot.
bool CoreAssembler::block0_prefetch(size_t k, int64_t A, int64_t B, int64_t per) const {
  for (size_t j = k; j-- > 0;) {
    const Workload& pw = W()[j];
    if (pw.layer_type != sir::LayerType::Pe) continue;
    const sir::WeightBufferEntry* e = own_entry(j, nullptr);
    if (!e) continue;
    int64_t r0 = e->address, r1 = e->address + e->size;
    bool ova = r0 < A + per && A < r1;
    bool ovb = r0 < B + per && B < r1;
    if (ova || ovb) return !(ova && !ovb);
  }
  return true;
}

void CoreAssembler::stores(size_t k) {
  const Workload& w = W()[k];
  if (w.ofmap.empty()) return;
  const sir::Ofmap& o = w.ofmap[0];
  const BufferTensor& src = ofmap_buffer(k);
  bool to_dram = false;
  std::vector<int32_t> local;
  // Piece i of the output goes to its destinations: other cores get exactly
  // its region (ofmap coordinates are relative to the workload's corner).
  // Sends go in the global order of the workloads reading them, each after
  // the completion messages for earlier readers (emit_syncs), so that every
  // core meets its rendezvous in one order.
  struct Send {
    int64_t reader;
    const sir::Ofmap* piece;
    const sir::Destination* d;
  };
  std::vector<Send> sends;  // queued in pending_sends_, sent by flush_sends
  for (size_t i = 0; i < w.ofmap.size(); ++i)
    for (const auto& d : w.ofmap[i].destination) {
      if (d.type == sir::Endpoint::Dram) {
        to_dram = to_dram || i == 0;
      } else if (d.core_id != core_.id) {
        sends.push_back({d.workload_id.value_or(std::numeric_limits<int64_t>::max()), &w.ofmap[i], &d});
      } else if (d.workload_id && i == 0) {
        const Workload* cw = sh_.s.find_workload(*d.workload_id);
        if (!cw) fail(sh_.o, wptr(k) + "/ofmap/0/destination", "unknown workload " + std::to_string(*d.workload_id));
        local.push_back(static_cast<int32_t>(layer_of(sh_, cw->layer_name, wptr(k)).layer_index));
      }
    }
  for (const Send& x : sends) {
    const auto& p = *x.piece;
    Coord lo{w.lower[0] + p.lower[0], w.lower[1] + p.lower[1], w.lower[2] + p.lower[2], w.lower[3] + p.lower[3]};
    Coord hi{w.lower[0] + p.upper[0], w.lower[1] + p.upper[1], w.lower[2] + p.upper[2], w.lower[3] + p.upper[3]};
    pending_sends_.push_back({x.reader, k, &src, lo, hi, x.d, p.transfer_id});
  }
  // Later workloads of this core send only to readers after them, so what
  // reads before the next one is due now; a send to a later reader (the
  // halo of a row stripe) waits until this core has sent everything that
  // comes before it.
  flush_sends(k + 1 < W().size() ? W()[k + 1].workload_id : std::numeric_limits<int64_t>::max());
  if (!to_dram) return;
  int64_t store_tid = -1;
  for (const auto& x : sh_.s.dram.in)
    if (x.workload_id == w.workload_id) store_tid = x.transfer_id;
  if (store_tid < 0) fail(sh_.o, wptr(k) + "/ofmap/0/destination", "a DRAM destination without a \"-1\"/in store");
  // The copy kept on core, if the output lives in its own buffer (not a
  // reader's buffer that other cores fill early, which takes this output as
  // one of its pieces, copied in the reader).
  const BufferTensor* copy = nullptr;
  if (!local.empty())
    for (const auto& b : w.buffer)
      if (&b != &src && !early_buffer(b) && holds_here(b, o.transfer_id)) copy = &b;
  if (sh_.dialect == Dialect::Wl1) {
    sta(k, src, store_tid);
    if (copy) dt(k, src, *copy, local);
  } else {
    // Stores wait for the next workload's own weight loads.
    if (copy) dt(k, src, *copy, local);
    pending_stores_.push_back({k, &src, store_tid});
  }
}

void CoreAssembler::flush_stores() {
  int32_t keep = flyr_;
  for (const auto& ps : pending_stores_) {
    flyr_ = sh_.group_of.at(W()[ps.k].workload_id);
    sta(ps.k, *ps.src, ps.tid);
  }
  flyr_ = keep;
  pending_stores_.clear();
}

// A DRAM transfer followed by a DRAM -> WL0 weight load also names the
// layer of that load.
void CoreAssembler::link_clyr() {
  std::vector<size_t> dram;
  for (size_t i = 0; i < out_.size(); ++i) {
    Kind kd = out_[i].meta.kind;
    if (kd == Kind::LoadAct || kd == Kind::LoadWeights || kd == Kind::LoadWl0Dram || kd == Kind::Store) dram.push_back(i);
  }
  for (size_t a = 0; a + 1 < dram.size(); ++a) {
    Built& x = out_[dram[a]];
    const Built& y = out_[dram[a + 1]];
    if (x.meta.kind == Kind::Store || y.meta.kind != Kind::LoadWl0Dram || y.meta.own_layer) continue;
    int32_t lay = y.meta.dram_layer;
    if (!x.inst.mapping.clyr.contains(lay)) {
      x.inst.mapping.clyr.push_back(lay);
      if (x.inst.mapping.c_flyr.empty())
        for (int32_t g : y.inst.mapping.c_flyr) x.inst.mapping.c_flyr.push_back(g);
    }
  }
  // Configuration instructions share the mapping of the move they configure.
  for (size_t i = out_.size(); i-- > 1;) {
    Built& c = out_[i - 1];
    const Built& mv = out_[i];
    auto op = c.inst.op();
    bool pair = (op == Opcode::lw_cfg && mv.inst.op() == Opcode::lw_mov) ||
                (op == Opcode::ldw_cfg && mv.inst.op() == Opcode::ldw_mov) ||
                (op == Opcode::lda_cfg && mv.inst.op() == Opcode::lda_mov) ||
                (op == Opcode::sta_cfg && mv.inst.op() == Opcode::sta_mov) ||
                (op == Opcode::dt_cfg && mv.inst.op() == Opcode::dt_cal);
    if (pair) c.inst.mapping = mv.inst.mapping;
  }
}

std::vector<Built> CoreAssembler::run() {
  const bool host_only = core_.id == sh_.free_steps_core && !sh_.free_steps.empty();
  if (W().empty()) {
    if (core_.id != sh_.free_steps_core) return {};
    // A network all on the host: the program starts, waits for the host, ends
    // (no wait when the host only reads through: an identity).
    isa::Mapping m;
    m.core = static_cast<int32_t>(core_.id);
    if (host_only) m.slyr = sh_.host_slyr.at(sh_.free_steps.front()->transfer_id);
    emit(Instruction(Opcode::ct_st), Meta{Kind::Control, {}, {}, -1}).inst.mapping = m;
    for (const sir::HostStep* h : sh_.free_steps) host_wait(m, *h, std::nullopt);
    emit(Instruction(Opcode::ct_ed), Meta{Kind::Control, {}, {}, -1}).inst.mapping = m;
    return std::move(out_);
  }
  for (const auto& w : W()) first_wkl_.emplace(w.layer_name, &w);
  const auto& rb = W()[0].ring_buffer_info;
  flyr_ = 0;
  auto m0 = mapping(0, -1);
  emit(Instruction(Opcode::ct_st), Meta{Kind::Control, {}, {}, -1}).inst.mapping = m0;
  for (int i = 0; i < isa::kBufferCutRegisters; ++i) {
    Instruction in(Opcode::ct_bc);
    in.mapping = m0;
    in.set(Param::BCS, i);
    std::array<int32_t, 8> cut{};
    if (static_cast<size_t>(i) < rb.size()) {
      cut[0] = i32(rb[i][0] / kBufCutUnit, sh_.o, wptr(0) + "/ring_buffer_info", "buffer cut");
      cut[1] = i32(rb[i][1] / kBufCutUnit - 1, sh_.o, wptr(0) + "/ring_buffer_info", "buffer cut");
    }
    in.set_list(Param::BufCut, cut);
    emit(std::move(in), Meta{Kind::Control, {}, {}, -1});
  }
  for (size_t k = 0; k < W().size(); ++k) {
    flyr_ = sh_.group_of.at(W()[k].workload_id);
    workload(k);
  }
  flush_stores();
  flush_sends(std::numeric_limits<int64_t>::max());
  emit_syncs(std::numeric_limits<int64_t>::max());
  if (host_only)
    for (const sir::HostStep* h : sh_.free_steps) host_wait(mapping(W().size() - 1, -1), *h, std::nullopt);
  Instruction ed(Opcode::ct_ed);
  ed.mapping = mapping(W().size() - 1, -1);
  emit(std::move(ed), Meta{Kind::Control, {}, {}, -1});
  link_clyr();
  return std::move(out_);
}

}  // namespace cct::assembler::detail
