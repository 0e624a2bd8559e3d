// irgen pass 3, connect: producers to consumers. Each input region becomes
// pieces read in place, copied, sent by another core or loaded from DRAM,
// with transfer ids numbered layer by layer, the L2 tensors that hold them
// (assembled once per core and window), stores and their reloads, and the
// weight loads of each PE part.
#include "irgen/generator.hpp"

namespace cct::irgen::detail {

// One input of a workload: its pieces, their transfers and the L2 tensor
// holding them (see connect()).
void Generator::connect_input(Wl& w, size_t i, Assembled& assembled) {
  const LayerModel& L = layers_[size_t(w.layer)];
  InputUse& u = w.inputs[i];
  const InputRef& in = L.inputs[i];
  if (in.producer < 0) {
    // The network's input (or a host step's result): loaded from DRAM for this workload.
    Piece pc;
    pc.kind = Piece::GraphInput;
    pc.host_step = in.host_step;
    pc.region = u.region;
    pc.transfer = new_transfer(w.layer);
    Dims e = u.region.extent();
    pc.bytes = timing::activation_bytes(a_, e[0], e[1], e[2], e[3], in.bytes);
    L2Tensor t;
    t.core = w.core;
    t.start = t.end = w.pos;
    if (o_.load_overlap && in.host_step < 0) t.start = load_head(w.core, w.pos, 0, pc.bytes, pc.transfer);
    if (t.start < w.pos) t.reader = w.pos, t.early_load = true, t.load_transfer = pc.transfer;
    t.bytes = in.bytes;
    t.box = u.region;
    t.size = pc.bytes;
    sir::Source src;
    src.core_id = sir::kDramCoreId;
    src.layer_name = in.graph_input;
    src.lower = u.region.lo;
    src.upper = u.region.hi;
    src.size = t.size;
    src.transfer_id = pc.transfer;
    src.type = sir::Endpoint::Dram;
    t.source.push_back(src);
    t.transfers.push_back(pc.transfer);
    pc.buffer = int(tensors_.size());
    tensors_.push_back(std::move(t));
    sir::DramLoad ld;
    ld.destination.push_back({w.core, L.fir->name, sir::Endpoint::Core, w.id});
    ld.lower = u.region.lo;
    ld.upper = u.region.hi;
    ld.size = pc.bytes;
    ld.transfer_id = pc.transfer;
    ld.type = sir::DramLoadType::Fmap;
    if (in.host_step >= 0) {
      ld.related_ifmap = {host_step_id(in.host_step)};
      Dims e = u.region.extent();
      host_loads_[size_t(in.host_step)].push_back({pc.transfer, e[0] * e[1] * e[2] * e[3] * in.bytes});
    }
    dram_out_.push_back(ld);
    u.pieces.push_back(pc);
    return;
  }
  std::vector<std::pair<int, Box>> parts;  // producer workload, the region of it this input reads
  for (int pid : layer_wls_[size_t(in.producer)]) {
    Box piece = intersect(wls_[size_t(pid)].out, u.region);
    if (!piece.empty()) parts.push_back({pid, piece});
  }
  if (parts.empty())
    fail_mapping(where(w), "workload " + std::to_string(w.id) + " of \"" + L.fir->name + "\" finds no producer of input " +
                               std::to_string(i));
  const int out_bytes = layers_[size_t(in.producer)].out_bytes;
  // Read in place when every piece is in one tensor on this core (one
  // producer, or the siblings of one). The operands of a two-input vector
  // operation share one box (vp_cfg_fm STile), so there the tensor must be
  // exactly the region read: a window of a wider tensor is copied out.
  const bool one_box = !L.pe && !L.move && L.inputs.size() > 1;
  bool in_place = true;
  for (const auto& [pid, piece] : parts) {
    const Wl& p = wls_[size_t(pid)];
    bool spilled = p.segment != w.segment && spill_.count(p.leader);
    in_place = in_place && p.core == w.core && !spilled && p.out_buffer == wls_[size_t(parts[0].first)].out_buffer;
  }
  if (in_place && one_box) in_place = tensors_[size_t(wls_[size_t(parts[0].first)].out_buffer)].box == u.region;
  if (in_place) {
    for (const auto& [pid, piece] : parts) {
      Wl& p = wls_[size_t(pid)];
      Piece pc;
      pc.kind = Piece::Local;
      pc.producer_wl = p.id;
      pc.region = piece;
      pc.transfer = p.out_transfer;
      pc.buffer = p.out_buffer;
      L2Tensor& t = tensors_[size_t(p.out_buffer)];
      t.end = std::max(t.end, w.pos);
      t.cross_segment = t.cross_segment || p.segment != w.segment;
      p.destinations.push_back({w.core, std::nullopt, sir::Endpoint::Core, w.id});
      u.pieces.push_back(pc);
    }
    return;
  }
  // One buffer for the whole window, shared with an earlier reader of
  // the same window on this core in this segment.
  auto key = std::make_tuple(w.core, w.segment, in.producer, u.region.lo, u.region.hi);
  auto found = assembled.find(key);
  if (found != assembled.end()) {
    L2Tensor& t = tensors_[size_t(found->second.first)];
    t.end = std::max(t.end, w.pos);
    u.pieces = found->second.second;
    return;
  }
  const int buffer = int(tensors_.size());
  {
    L2Tensor t;
    t.core = w.core;
    t.start = t.end = w.pos;
    t.bytes = out_bytes;
    t.box = u.region;
    Dims e = u.region.extent();
    t.size = timing::activation_bytes(a_, e[0], e[1], e[2], e[3], out_bytes);
    tensors_.push_back(std::move(t));
  }
  for (const auto& [pid, piece] : parts) {
    Wl& p = wls_[size_t(pid)];
    Piece pc;
    pc.producer_wl = pid;
    pc.region = piece;
    pc.buffer = buffer;
    Dims e = piece.extent();
    pc.bytes = timing::activation_bytes(a_, e[0], e[1], e[2], e[3], out_bytes);
    sir::Source src;
    src.lower = piece.lo;
    src.upper = piece.hi;
    src.size = pc.bytes;
    const bool spilled = p.segment != w.segment && spill_.count(p.leader);
    if (p.core == w.core && !spilled) {
      // On this core: copied from the producer's tensor, which lives until then.
      pc.kind = Piece::Copy;
      pc.transfer = p.out_transfer;
      L2Tensor& t = tensors_[size_t(p.out_buffer)];
      t.end = std::max(t.end, w.pos);
      t.cross_segment = t.cross_segment || p.segment != w.segment;
      p.destinations.push_back({w.core, std::nullopt, sir::Endpoint::Core, w.id});
      src.core_id = w.core;
      src.layer_name = layers_[size_t(p.layer)].fir->name;
      src.transfer_id = pc.transfer;
      src.type = sir::Endpoint::Core;
      tensors_[size_t(buffer)].source.push_back(src);
      tensors_[size_t(buffer)].transfers.push_back(pc.transfer);
      u.pieces.push_back(pc);
      continue;
    }
    pc.transfer = new_transfer(w.layer);
    src.transfer_id = pc.transfer;
    if (p.core != w.core && !spilled && (p.segment == w.segment || o_.send_across_segments)) {
      // Core to core: the producer sends exactly this piece. Its output
      // stays live while its core runs workloads that come before this
      // reader in the global order: a write there (reusing the bytes) would
      // wait for the send, which waits for this later reader, and the cores
      // would no longer meet their rendezvous in one order.
      pc.kind = Piece::Remote;
      p.sends.push_back({pc.transfer, piece, {w.core, std::nullopt, sir::Endpoint::Core, w.id}});
      L2Tensor& out = tensors_[size_t(p.out_buffer)];
      out.transfers.push_back(pc.transfer);
      const auto& ids = per_core_.at(p.core);
      const int before = int(std::lower_bound(ids.begin(), ids.end(), w.id) - ids.begin()) - 1;
      out.end = std::max(out.end, before);
      out.cross_segment = out.cross_segment || p.segment != w.segment;
      src.core_id = p.core;
      src.layer_name = layers_[size_t(p.layer)].fir->name;
      src.type = sir::Endpoint::Core;
    } else {
      // Through DRAM: stored by the producer, this piece read back.
      pc.kind = Piece::Dram;
      p.to_dram = true;
      p.dram_reloads.push_back(pc.transfer);
      src.core_id = sir::kDramCoreId;
      src.type = sir::Endpoint::Dram;
      sir::DramLoad ld;
      ld.destination.push_back({w.core, L.fir->name, sir::Endpoint::Core, w.id});
      ld.lower = piece.lo;
      ld.upper = piece.hi;
      ld.related_ifmap = {p.out_transfer};
      ld.size = pc.bytes;
      ld.transfer_id = pc.transfer;
      ld.type = sir::DramLoadType::Fmap;
      dram_out_.push_back(ld);
    }
    tensors_[size_t(buffer)].source.push_back(src);
    tensors_[size_t(buffer)].transfers.push_back(pc.transfer);
    u.pieces.push_back(pc);
  }
  // A buffer that other cores fill is live from the workload before its
  // reader: it gets its own bytes, so the receives run while that workload
  // computes instead of waiting for it to stop reading a buffer at the same
  // address (asm issues them there, as prefetches; the pieces copied on this
  // core stay in the reader). Not with DRAM reloads, which wait for their
  // stores' messages in the reader.
  bool early = w.pos > 0 && o_.early_receives, remote = false;
  for (const auto& pc : u.pieces) {
    early = early && (pc.kind == Piece::Remote || pc.kind == Piece::Copy);
    remote = remote || pc.kind == Piece::Remote;
  }
  if (early && remote) {
    tensors_[size_t(buffer)].start = w.pos - 1;
    tensors_[size_t(buffer)].reader = w.pos;
  }
  // Pieces reloaded from DRAM that an earlier segment stored (its stores all
  // issued before this segment's first workload) load during the workloads
  // of this segment before the reader, as weights are prefetched.
  bool reload = w.pos > 0 && o_.load_overlap && !u.pieces.empty();
  int64_t bytes = 0;
  for (const auto& pc : u.pieces) {
    reload = reload && pc.kind == Piece::Dram && wls_[size_t(pc.producer_wl)].segment < w.segment;
    bytes += pc.bytes;
  }
  if (reload) {
    const auto& order = per_core_.at(w.core);
    int first = w.pos;  // of this segment on the core
    while (first > 0 && wls_[size_t(order[size_t(first - 1)])].segment == w.segment) --first;
    L2Tensor& t = tensors_[size_t(buffer)];
    const int64_t transfer = u.pieces.front().transfer;
    t.start = load_head(w.core, w.pos, first, bytes, transfer);
    if (t.start < w.pos) t.reader = w.pos, t.early_load = true, t.load_transfer = transfer;
  }
  assembled.emplace(key, std::make_pair(buffer, u.pieces));
}

// Input i of a data movement workload delivered straight into its output
// tensor: each producer's piece lands at its place there (the source's
// `place`), copied from the producer's tensor on this core, sent by another
// core or loaded from DRAM.
void Generator::connect_direct(Wl& w, size_t i) {
  const LayerModel& L = layers_[size_t(w.layer)];
  InputUse& u = w.inputs[i];
  const InputRef& in = L.inputs[i];
  const fir::MovePiece* mv = nullptr;
  for (const auto& m : w.moves)
    if (m.input == in.fir_index) mv = &m;
  auto place_of = [&](const Box& piece) {
    Coord p;
    for (int a = 0; a < 4; ++a) p[a] = piece.lo[a] - mv->in_lo[a] + mv->out_lo[a];
    return p;
  };
  const int out_buffer = w.out_buffer;
  auto add_source = [&](Piece& pc, sir::Source src) {
    src.lower = pc.region.lo;
    src.upper = pc.region.hi;
    src.place = place_of(pc.region);
    src.size = pc.bytes;
    src.transfer_id = pc.transfer;
    tensors_[size_t(out_buffer)].source.push_back(src);
    tensors_[size_t(out_buffer)].transfers.push_back(pc.transfer);
    pc.buffer = out_buffer;
    u.pieces.push_back(pc);
  };
  if (in.producer < 0) {
    Piece pc;
    pc.kind = Piece::GraphInput;
    pc.region = u.region;
    pc.transfer = new_transfer(w.layer);
    Dims e = u.region.extent();
    pc.bytes = timing::activation_bytes(a_, e[0], e[1], e[2], e[3], in.bytes);
    sir::DramLoad ld;
    ld.destination.push_back({w.core, L.fir->name, sir::Endpoint::Core, w.id});
    ld.lower = u.region.lo;
    ld.upper = u.region.hi;
    ld.size = pc.bytes;
    ld.transfer_id = pc.transfer;
    ld.type = sir::DramLoadType::Fmap;
    dram_out_.push_back(ld);
    sir::Source src;
    src.core_id = sir::kDramCoreId;
    src.layer_name = in.graph_input;
    src.type = sir::Endpoint::Dram;
    add_source(pc, src);
    return;
  }
  const int out_bytes = layers_[size_t(in.producer)].out_bytes;
  bool any = false;
  for (int pid : layer_wls_[size_t(in.producer)]) {
    Box piece = intersect(wls_[size_t(pid)].out, u.region);
    if (piece.empty()) continue;
    any = true;
    Wl& p = wls_[size_t(pid)];
    Piece pc;
    pc.producer_wl = pid;
    pc.region = piece;
    Dims e = piece.extent();
    pc.bytes = timing::activation_bytes(a_, e[0], e[1], e[2], e[3], out_bytes);
    sir::Source src;
    src.layer_name = layers_[size_t(p.layer)].fir->name;
    const bool spilled = p.segment != w.segment && spill_.count(p.leader);
    if (p.core == w.core && !spilled) {
      pc.kind = Piece::Copy;
      pc.transfer = p.out_transfer;
      L2Tensor& t = tensors_[size_t(p.out_buffer)];
      t.end = std::max(t.end, w.pos);
      t.cross_segment = t.cross_segment || p.segment != w.segment;
      p.destinations.push_back({w.core, std::nullopt, sir::Endpoint::Core, w.id});
      src.core_id = w.core;
      src.type = sir::Endpoint::Core;
    } else if (p.core != w.core && !spilled && (p.segment == w.segment || o_.send_across_segments)) {
      pc.kind = Piece::Remote;
      pc.transfer = new_transfer(w.layer);
      p.sends.push_back({pc.transfer, piece, {w.core, std::nullopt, sir::Endpoint::Core, w.id}});
      L2Tensor& t = tensors_[size_t(p.out_buffer)];
      t.transfers.push_back(pc.transfer);
      const auto& ids = per_core_.at(p.core);
      const int before = int(std::lower_bound(ids.begin(), ids.end(), w.id) - ids.begin()) - 1;
      t.end = std::max(t.end, before);
      t.cross_segment = t.cross_segment || p.segment != w.segment;
      src.core_id = p.core;
      src.type = sir::Endpoint::Core;
    } else {
      pc.kind = Piece::Dram;
      pc.transfer = new_transfer(w.layer);
      p.to_dram = true;
      p.dram_reloads.push_back(pc.transfer);
      sir::DramLoad ld;
      ld.destination.push_back({w.core, L.fir->name, sir::Endpoint::Core, w.id});
      ld.lower = piece.lo;
      ld.upper = piece.hi;
      ld.related_ifmap = {p.out_transfer};
      ld.size = pc.bytes;
      ld.transfer_id = pc.transfer;
      ld.type = sir::DramLoadType::Fmap;
      dram_out_.push_back(ld);
      src.core_id = sir::kDramCoreId;
      src.type = sir::Endpoint::Dram;
    }
    add_source(pc, src);
  }
  if (!any)
    fail_mapping(where(w), "workload " + std::to_string(w.id) + " of \"" + L.fir->name + "\" finds no producer of input " +
                               std::to_string(i));
}

// Producers to consumers: transfer ids, routes, DRAM traffic, L2 tensors.
void Generator::connect() {
  // Transfer ids: weights first (assigned in plan_weights order would
  // interleave), so reserve them now in workload order.
  std::map<std::tuple<int, int, int64_t, int64_t, int>, int> weight_of;
  for (auto& w : wls_) {
    const LayerModel& L = layers_[size_t(w.layer)];
    if (!L.pe) continue;
    auto key = std::make_tuple(w.core, w.layer, w.out.lo[1], w.out.hi[1], w.group_weights ? w.group : -1);
    auto it = weight_of.find(key);
    if (it == weight_of.end()) {
      WeightLoad wt;
      wt.core = w.core, wt.layer = w.layer, wt.k_lo = w.out.lo[1], wt.k_hi = w.out.hi[1];
      wt.first = wt.last = w.pos;
      wt.transfer = new_transfer(w.layer);
      size_weight(wt);
      it = weight_of.emplace(key, int(weights_.size())).first;
      weights_.push_back(wt);
    }
    WeightLoad& wt = weights_[size_t(it->second)];
    wt.last = std::max(wt.last, w.pos);
    wt.workloads.push_back(w.id);
    w.weight = it->second;
  }

  // Output buffers of every workload on its own core; siblings write one
  // tensor, each its channels.
  for (auto& w : wls_) {
    const LayerModel& L = layers_[size_t(w.layer)];
    w.out_transfer = new_transfer(w.layer);
    Dims e = w.out.extent();
    sir::Source src;
    src.core_id = w.core;
    src.layer_name = L.fir->name;
    src.lower = w.out.lo;
    src.upper = w.out.hi;
    src.size = timing::activation_bytes(a_, e[0], e[1], e[2], e[3], L.out_bytes);
    src.transfer_id = w.out_transfer;
    src.type = sir::Endpoint::Core;
    if (w.leader != w.id) {
      w.out_buffer = wls_[size_t(w.leader)].out_buffer;
      L2Tensor& t = tensors_[size_t(w.out_buffer)];
      t.end = std::max(t.end, w.pos);
      for (int i = 0; i < 4; ++i) t.box.lo[i] = std::min(t.box.lo[i], w.out.lo[i]), t.box.hi[i] = std::max(t.box.hi[i], w.out.hi[i]);
      Dims be = t.box.extent();
      t.size = timing::activation_bytes(a_, be[0], be[1], be[2], be[3], t.bytes);
      t.source.push_back(src);
      t.transfers.push_back(w.out_transfer);
      continue;
    }
    L2Tensor t;
    t.core = w.core;
    t.start = t.end = w.pos;
    t.bytes = L.out_bytes;
    t.box = w.out;
    t.size = src.size;
    t.source.push_back(src);
    t.transfers.push_back(w.out_transfer);
    t.producer_wl = w.id;
    w.out_buffer = int(tensors_.size());
    tensors_.push_back(std::move(t));
  }

  // Consumers. An input whose pieces all sit in one tensor on the consumer's
  // core (one producer there, or siblings) is read in place; any other input
  // gets ONE tensor on the consumer's core holding its whole window (NHWC,
  // the layer's coordinates), and each piece lands at its place inside it:
  // copied from a producer's tensor on this core, sent by a producer on
  // another core of the same segment (only the piece this consumer reads),
  // or loaded from DRAM (the network input, or a later segment's read of
  // another core's output).
  Assembled assembled;
  for (auto& w : wls_) {
    const LayerModel& L = layers_[size_t(w.layer)];
    if (L.move) w.direct.assign(w.inputs.size(), 0);
    for (size_t i = 0; i < w.inputs.size(); ++i) {
      if (L.move) {
        // Pieces go straight into the output tensor when they only move
        // (same quantization) in one block; otherwise the input is read
        // where it is (or assembled) and each piece copied or requantized.
        int64_t blocks = 0;
        for (const auto& m : w.moves) blocks += m.input == L.inputs[i].fir_index;
        if (blocks == 0) continue;
        if (blocks == 1 && !fir::move_requantizes(*L.fir, L.inputs[i].fir_index)) {
          w.direct[i] = 1;
          connect_direct(w, i);
          continue;
        }
      }
      connect_input(w, i, assembled);
      InputUse& u = w.inputs[i];
      // A padded pooling window starts before the tensor's first byte: keep
      // that address inside L2 (convolutions may start below it).
      for (const auto& pc : u.pieces) {
        if (!is_pool_op(L.fir->op)) break;
        L2Tensor& t = tensors_[size_t(pc.buffer)];
        Dims e = t.box.extent();
        int64_t pixel = timing::activation_bytes(a_, 1, e[1], 1, 1, t.bytes);
        t.lowest = std::max(t.lowest, (u.pad[0] * e[3] + u.pad[2]) * pixel);
      }
      if (u.pieces.empty() && !L.move)
        fail_mapping(where(w), "workload " + std::to_string(w.id) + " of \"" + L.fir->name + "\" finds no producer of input " +
                                   std::to_string(i));
    }
    // Element-wise adds may write their result over an input that dies
    // with them: the same bytes, so the L2 footprint does not grow. The
    // input is a producer's tensor on this core, or the buffer it is loaded
    // into from DRAM (spilled), so a spill never makes the add need more.
    if (o_.in_place_add && L.fir->op == fir::Op::ElementWiseAdd) {
      for (size_t i = 0; i < w.inputs.size(); ++i) {
        const InputUse& u = w.inputs[i];
        bool loaded = !u.pieces.empty();
        for (const auto& pc : u.pieces) loaded = loaded && pc.kind == Piece::Dram;
        if (!loaded && (u.pieces.size() != 1 || u.pieces[0].kind != Piece::Local)) continue;
        int b = u.pieces[0].buffer;
        L2Tensor& t = tensors_[size_t(b)];
        L2Tensor& o = tensors_[size_t(w.out_buffer)];
        bool shared = false;
        for (size_t j = 0; j < w.inputs.size(); ++j)
          if (j != i)
            for (const auto& pc : w.inputs[j].pieces) shared = shared || pc.buffer == b;
        if (shared || t.end != w.pos || t.box != w.out || t.size != o.size || t.bytes != o.bytes) continue;
        t.source.push_back(o.source[0]);
        t.transfers.push_back(w.out_transfer);
        t.producer_wl = w.id;  // now the add's output: what later segments read, so what a spill sends through DRAM
        o.size = 0;  // merged
        w.out_buffer = b;
        break;
      }
    }
  }

  // Weights that can only stream from L2 take their place among the
  // activations (when L2 is tight), loaded in the workload that needs them.
  if (reserve_weights_)
    for (size_t wi = 0; wi < weights_.size(); ++wi) {
      WeightLoad& wt = weights_[wi];
      if (wt.fits_wl0) continue;
      L2Tensor t;
      t.core = wt.core;
      t.start = wt.first;
      t.end = wt.last;
      t.size = wt.bytes;
      t.footprint = wt.footprint;
      t.type = sir::TensorType::Weight;
      t.weight = int(wi);
      wt.l2_tensor = int(tensors_.size());
      tensors_.push_back(std::move(t));
    }

  // Network outputs and cross-segment producers: stored to DRAM.
  for (auto& w : wls_) {
    const LayerModel& L = layers_[size_t(w.layer)];
    if (L.graph_output) w.to_dram = true;
    if (!w.to_dram) continue;
    w.destinations.push_back({sir::kDramCoreId, std::nullopt, sir::Endpoint::Dram, std::nullopt});
    sir::DramStore st;
    st.core_id = w.core;
    st.layer_name = L.fir->name;
    st.lower = w.out.lo;
    st.upper = w.out.hi;
    if (!w.dram_reloads.empty()) st.related_ofmap = w.dram_reloads;
    st.transfer_id = w.out_transfer;
    st.workload_id = w.id;
    dram_in_.push_back(st);
  }
  // A stored output keeps its bytes through the workloads on its core that
  // compute while the store runs (predicted: its bytes at the DRAM rate),
  // which would otherwise write over them and so wait for the store
  // (gemini's model overlaps the two). Where L2 has no room for all of
  // that, the tail is cut short (drop_overlaps).
  if (o_.store_overlap) {
    for (const auto& w : wls_) {
      if (!w.to_dram || w.out_buffer < 0) continue;
      L2Tensor& t = tensors_[size_t(w.out_buffer)];
      const auto& order = per_core_.at(w.core);
      if (t.size == 0 || t.end != w.pos) continue;
      const auto limit = tail_limit_.find(w.id);
      const int last = limit != tail_limit_.end() ? limit->second : int(order.size()) - 1;
      const int end = covering(w.core, w.pos, +1, last, t.size);
      if (end > w.pos) t.end = end, t.store_tail = true, t.storing_wl = w.id;
    }
  }
}

}  // namespace cct::irgen::detail
