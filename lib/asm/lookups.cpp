// asm, lookups: what a workload's instructions refer to, found in the
// Scheduler IR and the Frontend IR (its buffers by transfer, its ofmap and
// inputs, its weight-buffer entry and WL0 address, its tiles in order, a
// layer's convolution, weight shape and DRAM slice).
#include "asm/core_assembler.hpp"

namespace cct::assembler::detail {

const BufferTensor& CoreAssembler::find_buffer(size_t k, int64_t tid, const std::string& what) const {
  for (const auto& b : W()[k].buffer)
    if (!early_buffer(b) && holds_here(b, tid)) return b;
  fail(sh_.o, wptr(k) + "/buffer", what + ": transfer " + std::to_string(tid) + " is in no buffer of the workload");
}

const BufferTensor& CoreAssembler::ofmap_buffer(size_t k) const {
  const Workload& w = W()[k];
  if (w.ofmap.empty()) fail(sh_.o, wptr(k) + "/ofmap", "the workload has no ofmap");
  for (const auto& b : w.buffer)
    if (b.type == sir::TensorType::Ofmap && b.layer_name && *b.layer_name == w.layer_name) return b;
  return find_buffer(k, w.ofmap[0].transfer_id, "ofmap");
}

Coord CoreAssembler::region_lower(size_t k, bool ofmap) const {
  const auto& ts = W()[k].tile_info;
  Coord lo{};
  for (int i = 0; i < 4; ++i) {
    int64_t m = std::numeric_limits<int64_t>::max();
    for (const auto& t : ts) m = std::min(m, ofmap ? t.ofmap_lower[i] : t.ifmap_lower[i]);
    lo[i] = ts.empty() ? 0 : m;
  }
  return lo;
}

// The L2 tensor an input is read from: the one holding every piece of it
// (its transfer ids); schedules that keep the pieces apart get the first's.
const BufferTensor& CoreAssembler::input_buffer(size_t k, size_t i) const {
  const Workload& w = W()[k];
  const auto& ids = w.ifmap[i].transfer_id;
  if (ids.empty()) fail(sh_.o, wptr(k) + "/ifmap/" + std::to_string(i), "no transfer id");
  // A copy of a window of the producer's tensor holds the same transfer as
  // the tensor itself: the buffer of the ifmap's extent is the copy (ifmap
  // boxes are relative to the piece, buffers in layer coordinates).
  const BufferTensor* holder = nullptr;
  for (const auto& b : w.buffer) {
    if (!b.transfer_id || early_buffer(b)) continue;
    bool all = true;
    for (int64_t t : ids) all = all && holds_here(b, t);
    if (!all) continue;
    if (dims_of(b.lower, b.upper) == dims_of(w.ifmap[i].lower, w.ifmap[i].upper)) return b;
    if (!holder) holder = &b;
  }
  if (holder) return *holder;
  return find_buffer(k, ids[0], "ifmap");
}

// Whether weights named by `ids` (or, without ids, by layer) are workload k's own.
bool CoreAssembler::own_weights(size_t k, const std::optional<std::vector<int64_t>>& ids, const std::string& layer_name) const {
  const Workload& w = W()[k];
  if (!w.weight || w.weight->transfer_id.empty() || !ids || ids->empty()) return layer_name == w.layer_name;
  for (int64_t t : *ids)
    if (std::find(w.weight->transfer_id.begin(), w.weight->transfer_id.end(), t) != w.weight->transfer_id.end()) return true;
  return false;
}

// The weight-buffer entry of workload k's own weights (the one holding tile
// t's output channels, when given).
const sir::WeightBufferEntry* CoreAssembler::own_entry(size_t k, const sir::Tile* t) const {
  const sir::WeightBufferEntry* first = nullptr;
  for (const auto& e : wl0(W()[k]).entries) {
    if (!own_weights(k, e.transfer_id, e.layer_name)) continue;
    if (!first) first = &e;
    if (t && e.lower && e.upper && ((*e.lower)[1] > t->ofmap_lower[1] || t->ofmap_upper[1] > (*e.upper)[1])) continue;
    return &e;
  }
  return first;
}

// WL0 address (64-byte rows) of tile t's weights loaded whole from DRAM: its
// entry, advanced to the tile's first output channel.
int64_t CoreAssembler::wl0_address(size_t k, const sir::Tile& t) const {
  const sir::WeightBufferEntry* e = own_entry(k, &t);
  if (!e) return 0;
  int64_t first = e->lower ? (*e->lower)[1] : 0;
  int64_t skip = (t.ofmap_lower[1] - first) * weight_per_k(W()[k].layer_name, wptr(k) + "/layer_name");
  if (skip % wl0_row_bytes() != 0)
    fail(sh_.o, wptr(k) + "/tile_info", "tile output channels from " + std::to_string(t.ofmap_lower[1]) +
                                            " start inside a weight-buffer row of the entry at " + std::to_string(e->address));
  return e->address + skip / wl0_row_bytes();
}

// Tiles in numeric order (tile_num_0, tile_num_1, ..., tile_num_10), or in
// the order of their keys as strings when the Scheduler IR lists them so
// (tile_num_10 before tile_num_2): the original tool emitted them in the
// order it read them.
std::vector<std::pair<size_t, const sir::Tile*>> CoreAssembler::tiles_in_order(size_t k) const {
  const auto& ts = W()[k].tile_info;
  std::vector<size_t> idx(ts.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  if (sh_.o.tile_order == TileOrder::KeyString)
    std::sort(idx.begin(), idx.end(), [](size_t a, size_t b) { return std::to_string(a) < std::to_string(b); });
  std::vector<std::pair<size_t, const sir::Tile*>> out;
  for (size_t i : idx) out.push_back({i, &ts[i]});
  return out;
}

fir::PeConv CoreAssembler::pe_conv(const std::string& name, const std::string& pointer) const {
  std::string why;
  auto pc = fir::pe_conv(layer_of(sh_, name, pointer), &why);
  if (!pc) fail(sh_.o, pointer, "layer \"" + name + "\" does not run on the PE array: " + why);
  return *pc;
}

// The weights as the array holds them, [K, C, kh, kw] (fir::pe_conv: a
// dense layer's [K, C] is [K, C, 1, 1]).
std::array<int32_t, 4> CoreAssembler::weight_shape(const std::string& name, const std::string& pointer) const {
  const auto w = pe_conv(name, pointer).weight;
  std::array<int32_t, 4> s{};
  for (int i = 0; i < 4; ++i) s[i] = i32(w[size_t(i)], sh_.o, pointer, "weight dimension");
  return s;
}

int64_t CoreAssembler::weight_per_k(const std::string& name, const std::string& pointer) const {
  auto it = sh_.weight_per_k.find(name);
  if (it == sh_.weight_per_k.end())
    fail(sh_.o, pointer, "no DRAM weight transfer (\"-1\"/out, type weight) names layer \"" + name + "\"");
  return it->second;
}

const DramWeightSlice& CoreAssembler::weight_slice(int64_t tid, const std::string& pointer) const {
  auto it = sh_.weight_dram.find(tid);
  if (it == sh_.weight_dram.end())
    fail(sh_.o, pointer, "transfer " + std::to_string(tid) + " is not a DRAM weight transfer (\"-1\"/out, type weight)");
  return it->second;
}

std::array<isa::YCutMode, 1> CoreAssembler::ycut_for(const std::string& name) const {
  auto it = first_wkl_.find(name);
  if (it == first_wkl_.end() || it->second->tile_info.empty() || !it->second->tile_info[0].cut_mode)
    return {isa::YCutMode::CUT_K};
  return {ycut_of(*it->second->tile_info[0].cut_mode)};
}

}  // namespace cct::assembler::detail
