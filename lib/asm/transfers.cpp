// asm, transfers: the instructions that move data. DRAM -> L2 loads of
// activations and weights, DRAM or L2 -> WL0 weight loads, stores, sends and
// receives between cores (with the messages that order a store before
// another core's load of it), copies inside L2, and host steps.
#include "asm/core_assembler.hpp"

namespace cct::assembler::detail {

void CoreAssembler::lw_cfg(const isa::Mapping& m, const std::array<int32_t, 4>& shape) {
  Instruction c(Opcode::lw_cfg);
  c.mapping = m;
  c.set(Param::BAS, 1);
  c.set_enum(Param::DF, isa::DataFmt::INT8);
  c.set_list(Param::SWsize, {shape[1], shape[2], shape[3]});
  c.set_list(Param::DWsize, {shape[1], shape[2], shape[3]});
  emit_cfg(c);
}

void CoreAssembler::lw_dram(size_t k, const sir::WeightBufferEntry& e, isa::Mapping m) {
  const std::string p = wptr(k);
  if (e.transfer_id.empty()) fail(sh_.o, p, "weight buffer entry of layer \"" + e.layer_name + "\" names no transfer");
  // Exactly the output channels of the transfer (e.g. one core's share of a
  // K-partitioned layer), from where they sit in the layer's weights.
  const DramWeightSlice& sl = weight_slice(e.transfer_id[0], p);
  const int64_t addr = sl.address, size = sl.size;
  auto shape = weight_shape(e.layer_name, p);
  lw_cfg(m, shape);
  shape[0] = i32(sl.k_hi - sl.k_lo + 1, sh_.o, p, "weight channels");
  Instruction in(Opcode::lw_mov);
  in.mapping = m;
  in.set(Param::SS, 1);
  in.set_list(Param::XYmode, {static_cast<int32_t>(isa::XCutMode::CUT_K), static_cast<int32_t>(ycut_for(e.layer_name)[0])});
  in.set(Param::STaddr, addr);
  in.set(Param::DTaddr, e.address);
  in.set_list(Param::Wsize, shape);
  Meta meta;
  meta.kind = Kind::LoadWl0Dram;
  meta.reads = {{Space::DramWeights, addr, addr + size}};
  meta.writes = {{Space::Wl0, e.address * wl0_row_bytes(), e.address * wl0_row_bytes() + size}};
  meta.dram_layer = static_cast<int32_t>(layer_of(sh_, e.layer_name, p).layer_index);
  meta.own_layer = own_weights(k, e.transfer_id, e.layer_name);
  emit(std::move(in), std::move(meta));
}

void CoreAssembler::lw_tile(size_t k, size_t ti, const sir::Tile& t, int64_t slot, const BufferTensor& l2) {
  (void)ti;
  const Workload& w = W()[k];
  const std::string p = wptr(k);
  auto shape = weight_shape(w.layer_name, p);
  int64_t perk = weight_per_k(w.layer_name, p);
  int64_t k0 = t.ofmap_lower[1];
  int64_t kt = t.ofmap_upper[1] - k0 + 1;
  auto m = mapping(k, -1);
  m.clyr.push_back(static_cast<int32_t>(layer(k).layer_index));
  m.c_flyr.push_back(flyr_);
  lw_cfg(m, shape);
  // The L2 copy starts at its first output channel (weight coordinates [0, k, c, r]).
  int64_t src = l2.address + (k0 - l2.lower[1]) * perk;
  Instruction in(Opcode::lw_mov);
  in.mapping = m;
  in.set(Param::SS, 0);
  in.set_list(Param::XYmode, {static_cast<int32_t>(isa::XCutMode::CUT_K), static_cast<int32_t>(ycut_for(w.layer_name)[0])});
  in.set(Param::STaddr, src);
  in.set(Param::DTaddr, slot);
  in.set_list(Param::Wsize, {i32(kt, sh_.o, p, "tile channels"), shape[1], shape[2], shape[3]});
  Meta meta;
  meta.kind = Kind::LoadWl0Tile;
  meta.reads = {{Space::L2, src, src + kt * perk}};
  meta.writes = {{Space::Wl0, slot * wl0_row_bytes(), slot * wl0_row_bytes() + kt * perk}};
  emit(std::move(in), std::move(meta));
}

void CoreAssembler::ldw(size_t k, const BufferTensor& b, isa::Mapping m) {
  const std::string p = wptr(k) + "/buffer";
  if (!b.layer_name) fail(sh_.o, p, "a weight buffer without layer_name");
  if (!b.transfer_id || b.transfer_id->empty())
    fail(sh_.o, p, "weights of layer \"" + *b.layer_name + "\" name no DRAM weight transfer");
  const DramWeightSlice& sl = weight_slice(b.transfer_id->front(), p);
  const int64_t addr = sl.address, size = sl.size;
  auto shape = weight_shape(*b.layer_name, p);
  Instruction c(Opcode::ldw_cfg);
  c.mapping = m;
  c.set(Param::RS, 1);
  c.set(Param::BAS, 1);
  c.set_enum(Param::DF, isa::DataFmt::INT8);
  c.set_list(Param::SWsize, {shape[1], shape[2], shape[3]});
  c.set_list(Param::DWsize, {shape[1], shape[2], shape[3]});
  emit_cfg(c);
  Instruction in(Opcode::ldw_mov);
  in.mapping = m;
  in.set(Param::RS, 1);
  in.set(Param::STaddr, addr);
  in.set(Param::DTaddr, b.address);
  shape[0] = i32(sl.k_hi - sl.k_lo + 1, sh_.o, p, "weight channels");
  in.set_list(Param::Wsize, shape);
  Meta meta;
  meta.kind = Kind::LoadWeights;
  meta.reads = {{Space::DramWeights, addr, addr + size}};
  meta.writes = {{Space::L2, b.address, b.address + b.size}};
  emit(std::move(in), std::move(meta));
}

// Where piece `source` of an L2 tensor filled from DRAM starts.
int64_t CoreAssembler::act_destination(const BufferTensor& b, size_t source) const {
  if (!b.source || b.source->size() <= 1) return b.address;
  const sir::Source& s = (*b.source)[source];
  TensorView v = TensorView::of(b);
  const Coord lo = s.place.value_or(s.lower), hi = placed_upper(s);
  return v.holds(lo, hi) ? v.addr(lo[0], lo[1], lo[2], lo[3]) : b.address;
}

void CoreAssembler::lda(size_t k, const BufferTensor& b, size_t source, isa::Mapping m) {
  const std::string p = wptr(k) + "/buffer";
  int64_t tid = (*b.source)[source].transfer_id;
  auto it = sh_.act_dram.find(tid);
  auto ot = std::find_if(sh_.s.dram.out.begin(), sh_.s.dram.out.end(),
                         [&](const sir::DramLoad& d) { return d.transfer_id == tid; });
  if (it == sh_.act_dram.end() || ot == sh_.s.dram.out.end())
    fail(sh_.o, p, "DRAM source transfer " + std::to_string(tid) + " is not a stored or input tensor (\"-1\")");
  const auto& full = it->second.dims;
  int64_t byt = it->second.bytes;
  auto rd = dims_of(ot->lower, ot->upper);
  std::array<int64_t, 4> rl;  // the region's corner within the DRAM tensor
  for (int i = 0; i < 4; ++i) rl[i] = ot->lower[i] - it->second.origin[i];
  // A tensor filled from several pieces takes this one at its place (a
  // strided write when the piece has fewer channels or columns).
  int64_t dst = b.address;
  std::array<int32_t, 3> dtile{i32(rd[1], sh_.o, p, "dim"), i32(rd[2], sh_.o, p, "dim"), i32(rd[3], sh_.o, p, "dim")};
  Range written{Space::L2, b.address, b.address + b.size};
  if (b.source->size() > 1 || (*b.source)[source].place) {
    // At its place in the tensor (a data movement layer's piece lands elsewhere than its own coordinates).
    const sir::Source& s = (*b.source)[source];
    Coord lo = ot->lower, hi = ot->upper;
    if (s.place)
      for (int i = 0; i < 4; ++i) lo[i] = (*s.place)[i] + ot->lower[i] - s.lower[i], hi[i] = lo[i] + rd[i] - 1;
    TensorView v = TensorView::of(b);
    if (!v.holds(lo, hi))
      fail(sh_.o, p, "piece " + std::to_string(tid) + " of a tensor assembled from pieces lies outside it");
    dst = v.addr(lo[0], lo[1], lo[2], lo[3]);
    dtile = v.dims();
    written = v.span(lo, hi);
  }
  // The first load of data other cores stored waits until they say it is there.
  if (loaded_.insert(tid).second)
    if (auto si = sh_.sync_in.find({core_.id, tid}); si != sh_.sync_in.end())
      for (int64_t writer : si->second)
        if (writer != core_.id) sync_receive(m, dst, writer, tid);
  Instruction c(Opcode::lda_cfg);
  c.mapping = m;
  c.set(Param::SME, 1);
  // A host result: the load waits until the host has written it.
  if (auto h = sh_.host_of_load.find(tid); h != sh_.host_of_load.end()) {
    int64_t first = it->second.address;
    host_wait(m, *h->second, Range{Space::DramActivations, first, first + full[0] * full[1] * full[2] * full[3] * byt});
  }
  c.set_enum(Param::DF, fmt_of_bits(b.bitwidth));
  c.set_list(Param::STile, {i32(full[1], sh_.o, p, "dim"), i32(full[2], sh_.o, p, "dim"), i32(full[3], sh_.o, p, "dim")});
  c.set_list(Param::DTile, dtile);
  emit_cfg(c);
  // DRAM tensors are NHWC without padding: the region's first element, at
  // its channel too (a piece of a channel-partitioned tensor).
  auto at = [&](int64_t n, int64_t c, int64_t h, int64_t x) {
    return it->second.address + (((n * full[2] + h) * full[3] + x) * full[1] + c) * byt;
  };
  int64_t st = at(rl[0], rl[1], rl[2], rl[3]);
  Range read{Space::DramActivations, st, st + rd[0] * rd[1] * rd[2] * rd[3] * byt};
  if (rd[1] != full[1]) read.hi = at(rl[0] + rd[0] - 1, rl[1] + rd[1] - 1, rl[2] + rd[2] - 1, rl[3] + rd[3] - 1) + byt;
  Instruction in(Opcode::lda_mov);
  in.mapping = m;
  in.set(Param::STaddr, st);
  in.set(Param::DTaddr, dst);
  in.set_list(Param::Tile, {i32(rd[0], sh_.o, p, "dim"), i32(rd[1], sh_.o, p, "dim"), i32(rd[2], sh_.o, p, "dim"),
                            i32(rd[3], sh_.o, p, "dim")});
  Meta meta;
  meta.kind = Kind::LoadAct;
  meta.reads = {read};
  meta.writes = {written};
  emit(std::move(in), std::move(meta));
}

// Host steps (formats/ISA_Format.md): ct_hs reads the stored DRAM range, so
// it waits for the store; ct_hw writes the range of the host result the
// load reads, so the load waits for it (and the host).
void CoreAssembler::host_signal(isa::Mapping m, const sir::HostStep& h, const Range& stored) {
  m.slyr = sh_.host_slyr.at(h.transfer_id);
  Instruction in(Opcode::ct_hs);
  in.mapping = m;
  in.set(Param::TAG, h.transfer_id);
  Meta meta;
  meta.kind = Kind::Control;
  meta.reads = {stored};
  emit(std::move(in), std::move(meta));
}

void CoreAssembler::host_wait(isa::Mapping m, const sir::HostStep& h, std::optional<Range> result) {
  m.slyr = sh_.host_slyr.at(h.transfer_id);
  m.clyr.clear();
  m.c_flyr.clear();
  Instruction in(Opcode::ct_hw);
  in.mapping = m;
  in.set(Param::TAG, h.transfer_id);
  in.set(Param::HOPS, h.ops);
  in.set(Param::HBYTES, h.size);
  Meta meta;
  meta.kind = Kind::Control;
  if (result) meta.writes = {*result};
  emit(std::move(in), std::move(meta));
}

void CoreAssembler::sta(size_t k, const BufferTensor& b, int64_t store_tid) {
  const std::string p = wptr(k);
  auto it = sh_.store_dram.find(store_tid);
  if (it == sh_.store_dram.end()) fail(sh_.o, p, "no DRAM store (\"-1\"/in) for transfer " + std::to_string(store_tid));
  const auto& d = it->second.dims;
  auto m = mapping(k, -1);
  Instruction c(Opcode::sta_cfg);
  c.mapping = m;
  c.set(Param::SME, sh_.dialect == Dialect::Wl1 ? 0 : 1);
  c.set_enum(Param::DF, fmt_of_bits(b.bitwidth));
  std::array<int32_t, 3> chw{i32(d[1], sh_.o, p, "dim"), i32(d[2], sh_.o, p, "dim"), i32(d[3], sh_.o, p, "dim")};
  c.set_list(Param::STile, chw);
  c.set_list(Param::DTile, chw);
  // The stored region at its place in the buffer (which may hold more: the
  // outputs of sibling workloads).
  TensorView v = TensorView::of(b);
  const Coord lo{it->second.origin[0], it->second.origin[1], it->second.origin[2], it->second.origin[3]};
  const Coord hi{lo[0] + d[0] - 1, lo[1] + d[1] - 1, lo[2] + d[2] - 1, lo[3] + d[3] - 1};
  int64_t src = b.address;
  Range read{Space::L2, b.address, b.address + b.size};
  if (v.holds(lo, hi) && v.d != d) {
    src = v.addr(lo[0], lo[1], lo[2], lo[3]);
    read = v.span(lo, hi);
    c.set_list(Param::STile, v.dims());
  }
  emit_cfg(c);
  Instruction in(Opcode::sta_mov);
  in.mapping = m;
  in.set(Param::STaddr, src);
  in.set(Param::DTaddr, it->second.address);
  in.set_list(Param::Tile, {i32(d[0], sh_.o, p, "dim"), chw[0], chw[1], chw[2]});
  Meta meta;
  meta.kind = Kind::Store;
  meta.reads = {read};
  const Range stored{Space::DramActivations, it->second.address,
                     it->second.address + d[0] * d[1] * d[2] * d[3] * it->second.bytes};
  meta.writes = {stored};
  emit(std::move(in), std::move(meta));
  if (auto h = sh_.host_of_store.find(store_tid); h != sh_.host_of_store.end()) {
    host_signal(m, *h->second, stored);
    if (sh_.host_tail_store.count(store_tid)) host_wait(m, *h->second, std::nullopt);
  }
  if (auto so = sh_.sync_out.find(store_tid); so != sh_.sync_out.end())
    for (const auto& t : so->second) {
      auto idle = sh_.idle_byte.find(core_.id);
      int64_t from = idle != sh_.idle_byte.end() && idle->second >= 0 ? idle->second : b.address;
      ready_syncs_.push_back({t.reader, t.core, t.load, from, stored, m});
    }
}

// Sends the pending outputs whose readers come before workload `before` in
// the global order, in that order, each after the completion messages for
// earlier readers.
void CoreAssembler::flush_sends(int64_t before) {
  std::stable_sort(pending_sends_.begin(), pending_sends_.end(), [](const PendingSend& a, const PendingSend& b) {
    return std::tie(a.reader, a.tid) < std::tie(b.reader, b.tid);
  });
  size_t n = 0;
  while (n < pending_sends_.size() && pending_sends_[n].reader < before) ++n;
  for (size_t i = 0; i < n; ++i) {
    const PendingSend& x = pending_sends_[i];
    emit_syncs(x.reader);
    so(x.k, *x.src, x.lo, x.hi, *x.d, x.tid);
  }
  pending_sends_.erase(pending_sends_.begin(), pending_sends_.begin() + static_cast<std::ptrdiff_t>(n));
}

// Sends the completion messages of stores already made whose readers come
// before workload `before` in the global (topological) workload order. Sends
// and receives thus follow one order on every core, which keeps the
// rendezvous free of cycles, and a send never holds up this core's next
// writes to the stored buffer.
void CoreAssembler::emit_syncs(int64_t before) {
  std::stable_sort(ready_syncs_.begin(), ready_syncs_.end(),
                   [](const ReadySync& a, const ReadySync& b) { return std::tie(a.key, a.tag) < std::tie(b.key, b.tag); });
  size_t n = 0;
  while (n < ready_syncs_.size() && ready_syncs_[n].key < before) ++n;
  for (size_t i = 0; i < n; ++i) {
    const ReadySync& r = ready_syncs_[i];
    sync_send(r.mapping, r.l2_address, r.stored, r.core, r.tag);
  }
  ready_syncs_.erase(ready_syncs_.begin(), ready_syncs_.begin() + static_cast<std::ptrdiff_t>(n));
}

// A one-pixel send telling core `reader` that the store (DRAM range `stored`)
// is complete: it reads the stored range, so it waits for the store.
void CoreAssembler::sync_send(const isa::Mapping& m, int64_t l2_address, const Range& stored, int64_t reader,
                              int64_t tag) {
  Instruction c(Opcode::so_cfg);
  c.mapping = m;
  c.set_enum(Param::DF, isa::DataFmt::INT8);
  c.set_list(Param::STile, {1, 1, 1});
  emit_cfg(c);
  Instruction in(Opcode::so_mov);
  in.mapping = m;
  in.set(Param::DCORE, reader);
  in.set(Param::TAG, tag);
  in.set(Param::STaddr, l2_address);
  in.set_list(Param::Tile, {1, 1, 1, 1});
  Meta meta;
  meta.kind = Kind::Send;
  meta.reads = {{Space::L2, l2_address, l2_address + 1}, stored};
  emit(std::move(in), std::move(meta));
}

// A one-pixel receive of the message `writer` sends with `tag`, landing at
// L2 `address`; `stands_for`: what else it writes as far as the tokens go.
void CoreAssembler::pixel_receive(const isa::Mapping& m, int64_t address, int64_t writer, int64_t tag,
                                  std::optional<Range> stands_for) {
  Instruction c(Opcode::si_cfg);
  c.mapping = m;
  c.set_enum(Param::DF, isa::DataFmt::INT8);
  c.set_list(Param::DTile, {1, 1, 1});
  emit_cfg(c);
  Instruction in(Opcode::si_mov);
  in.mapping = m;
  in.set(Param::SCORE, writer);
  in.set(Param::TAG, tag);
  in.set(Param::DTaddr, address);
  in.set_list(Param::Tile, {1, 1, 1, 1});
  Meta meta;
  meta.kind = Kind::Receive;
  meta.writes = {{Space::L2, address, address + 1}};
  if (stands_for) meta.writes.push_back(*stands_for);
  emit(std::move(in), std::move(meta));
}

// The matching receive, into the first byte of the buffer the load fills
// next: it writes the buffer, so the load waits for it.
void CoreAssembler::sync_receive(const isa::Mapping& m, int64_t address, int64_t writer, int64_t tag) {
  pixel_receive(m, address, writer, tag, std::nullopt);
}

// An early receive (Shared::early_receive) lands in the idle pixel and
// stands for the stored range: the loads reading it wait for it.
void CoreAssembler::early_receive(const isa::Mapping& m, int64_t landing, const Shared::EarlyReceive& x) {
  pixel_receive(m, landing, x.writer, x.tag, Range{Space::DramActivations, x.dram_lo, x.dram_hi});
}

void CoreAssembler::dt(size_t k, const BufferTensor& src, const BufferTensor& dst,
                       const std::vector<int32_t>& consumers) {
  const std::string p = wptr(k);
  auto m = mapping(k, -1);
  for (int32_t c : consumers) {
    m.clyr.push_back(c);
  }
  m.c_flyr.push_back(flyr_);
  auto d = dims_of(dst.lower, dst.upper);
  std::array<int32_t, 3> chw{i32(d[1], sh_.o, p, "dim"), i32(d[2], sh_.o, p, "dim"), i32(d[3], sh_.o, p, "dim")};
  Instruction c(Opcode::dt_cfg);
  c.mapping = m;
  c.set_enum(Param::DF, fmt_of_bits(dst.bitwidth));
  c.set_list(Param::STile, chw);
  c.set_list(Param::DTile, chw);
  emit_cfg(c);
  Instruction in(Opcode::dt_cal);
  in.mapping = m;
  in.set(Param::STaddr, src.address);
  in.set(Param::DTaddr, dst.address);
  in.set_list(Param::Tile, {i32(d[0], sh_.o, p, "dim"), chw[0], chw[1], chw[2]});
  Meta meta;
  meta.kind = Kind::Transform;
  meta.reads = {{Space::L2, src.address, src.address + src.size}};
  meta.writes = {{Space::L2, dst.address, dst.address + dst.size}};
  emit(std::move(in), std::move(meta));
}

// Core-to-core: the producer sends the region [lower, upper] (layer
// coordinates) of its output tensor, tagged with the transfer id.
void CoreAssembler::so(size_t k, const BufferTensor& src, const Coord& lower, const Coord& upper,
                       const sir::Destination& d, int64_t tid) {
  const std::string p = wptr(k);
  auto m = mapping(k, -1);
  TensorView v = TensorView::of(src).place(lower);
  if (!v.holds(lower, upper) && v.org == v.lo)
    fail(sh_.o, p + "/ofmap", "transfer " + std::to_string(tid) + " sends a region outside the output tensor");
  auto dd = dims_of(lower, upper);
  Instruction c(Opcode::so_cfg);
  c.mapping = m;
  c.set_enum(Param::DF, fmt_of_bits(src.bitwidth));
  c.set_list(Param::STile, v.dims());
  emit_cfg(c);
  Instruction in(Opcode::so_mov);
  in.mapping = m;
  in.set(Param::DCORE, d.core_id);
  in.set(Param::TAG, tid);
  in.set(Param::STaddr, v.addr(lower[0], lower[1], lower[2], lower[3]));
  in.set_list(Param::Tile, {i32(dd[0], sh_.o, p, "dim"), i32(dd[1], sh_.o, p, "dim"), i32(dd[2], sh_.o, p, "dim"),
                            i32(dd[3], sh_.o, p, "dim")});
  Meta meta;
  meta.kind = Kind::Send;
  meta.reads = {v.span(lower, upper)};
  emit(std::move(in), std::move(meta));
}

// Core-to-core: piece `source` of the tensor arrives from its core, at its
// place in the tensor (a strided write when it has fewer channels or columns).
void CoreAssembler::si(size_t k, const BufferTensor& b, size_t source, isa::Mapping m) {
  const std::string p = wptr(k) + "/buffer";
  const sir::Source& s = (*b.source)[source];
  const Coord lo = s.place.value_or(s.lower), hi = placed_upper(s);
  TensorView v = TensorView::of(b).place(lo);
  if (!v.holds(lo, hi) && v.org == v.lo)
    fail(sh_.o, p, "piece " + std::to_string(s.transfer_id) + " lies outside its tensor");
  auto dd = dims_of(s.lower, s.upper);
  Instruction c(Opcode::si_cfg);
  c.mapping = m;
  c.set_enum(Param::DF, fmt_of_bits(b.bitwidth));
  c.set_list(Param::DTile, v.dims());
  emit_cfg(c);
  Instruction in(Opcode::si_mov);
  in.mapping = m;
  in.set(Param::SCORE, s.core_id);
  in.set(Param::TAG, s.transfer_id);
  in.set(Param::DTaddr, v.addr(lo[0], lo[1], lo[2], lo[3]));
  in.set_list(Param::Tile, {i32(dd[0], sh_.o, p, "dim"), i32(dd[1], sh_.o, p, "dim"), i32(dd[2], sh_.o, p, "dim"),
                            i32(dd[3], sh_.o, p, "dim")});
  Meta meta;
  meta.kind = Kind::Receive;
  meta.writes = {v.span(lo, hi)};
  emit(std::move(in), std::move(meta));
}

// A piece this core produced that another tensor of the snapshot holds: it
// is copied from there (pieces only this tensor holds were written into it).
const BufferTensor* CoreAssembler::copy_source(size_t k, const BufferTensor& b, int64_t tid) const {
  for (const auto& x : W()[k].buffer)
    if (&x != &b && !early_buffer(x) && holds_here(x, tid)) return &x;
  return nullptr;
}

// L2 to L2: piece `source` of tensor b copied from the tensor its producer
// wrote, each at its place (strided on both sides).
void CoreAssembler::copy(size_t k, const BufferTensor& b, size_t source) {
  const std::string p = wptr(k) + "/buffer";
  const sir::Source& s = (*b.source)[source];
  const BufferTensor* from = copy_source(k, b, s.transfer_id);
  if (!from) fail(sh_.o, p, "piece " + std::to_string(s.transfer_id) + " is in no other tensor to copy it from");
  const Coord dlo = s.place.value_or(s.lower), dhi = placed_upper(s);
  TensorView sv = TensorView::of(*from).place(s.lower), dv = TensorView::of(b).place(dlo);
  if (!sv.holds(s.lower, s.upper) || !dv.holds(dlo, dhi))
    fail(sh_.o, p, "piece " + std::to_string(s.transfer_id) + " does not lie inside the tensors it is copied between");
  auto dd = dims_of(s.lower, s.upper);
  auto m = mapping(k, -1);
  m.clyr.push_back(static_cast<int32_t>(layer(k).layer_index));
  m.c_flyr.push_back(flyr_);
  Instruction c(Opcode::dt_cfg);
  c.mapping = m;
  c.set_enum(Param::DF, fmt_of_bits(b.bitwidth));
  c.set_list(Param::STile, sv.dims());
  c.set_list(Param::DTile, dv.dims());
  emit_cfg(c);
  Instruction in(Opcode::dt_cal);
  in.mapping = m;
  in.set(Param::Order, 0);
  in.set(Param::STaddr, sv.addr(s.lower[0], s.lower[1], s.lower[2], s.lower[3]));
  in.set(Param::DTaddr, dv.addr(dlo[0], dlo[1], dlo[2], dlo[3]));
  in.set_list(Param::Tile, {i32(dd[0], sh_.o, p, "dim"), i32(dd[1], sh_.o, p, "dim"), i32(dd[2], sh_.o, p, "dim"),
                            i32(dd[3], sh_.o, p, "dim")});
  Meta meta;
  meta.kind = Kind::Transform;
  meta.reads = {sv.span(s.lower, s.upper)};
  meta.writes = {dv.span(dlo, dhi)};
  emit(std::move(in), std::move(meta));
}

}  // namespace cct::assembler::detail
