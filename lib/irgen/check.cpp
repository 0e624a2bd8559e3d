// irgen --check: semantic validation of a Scheduler IR across workloads.
#include <algorithm>
#include <map>
#include <set>

#include "irgen/irgen.hpp"
#include "support/error.hpp"
#include "support/int_math.hpp"

namespace cct::irgen {
namespace {

using sir::Coord;

struct Region {
  Coord lo{}, hi{};
};
int64_t volume(const Region& r) { return sir::box_volume(r.lo, r.hi); }
Region meet(const Region& a, const Region& b) {
  Region r;
  for (int i = 0; i < 4; ++i) r.lo[i] = std::max(a.lo[i], b.lo[i]), r.hi[i] = std::min(a.hi[i], b.hi[i]);
  return r;
}
bool inside(const Region& a, const Region& b) {
  for (int i = 0; i < 4; ++i)
    if (a.lo[i] < b.lo[i] || a.hi[i] > b.hi[i]) return false;
  return true;
}
Coord add(const Coord& a, const Coord& b) { return {a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]}; }
std::string str(const Coord& c) {
  return "[" + std::to_string(c[0]) + ", " + std::to_string(c[1]) + ", " + std::to_string(c[2]) + ", " +
         std::to_string(c[3]) + "]";
}
std::string str(const Region& r) { return str(r.lo) + ".." + str(r.hi); }
std::string range(int64_t lo, int64_t hi) { return std::to_string(lo) + ".." + std::to_string(hi); }

// A record's shape and size in words: "[1, 3, 3] (104 bytes each)".
std::string record_text(const footprint::WeightRecord& r) {
  std::string t = "[";  // appended piecewise: GCC 12 warns (-Wrestrict) on the operator+ chain
  t += std::to_string(r.c);
  t += ", ";
  t += std::to_string(r.kh);
  t += ", ";
  t += std::to_string(r.kw);
  t += "] (";
  t += std::to_string(r.bytes());
  t += " bytes each)";
  return t;
}
// Whether weight coordinates [0, k, c, kh*kw] lower..upper hold whole records
// of r: every input channel and tap of each output channel.
bool whole_records(const Coord& lo, const Coord& hi, const footprint::WeightRecord& r) {
  return lo[2] == 0 && hi[2] == r.c - 1 && lo[3] == 0 && hi[3] == r.kh * r.kw - 1;
}
std::string records_of(const Coord& lo, const Coord& hi) {
  return "[" + std::to_string(hi[2] - lo[2] + 1) + " channels, " + std::to_string(hi[3] - lo[3] + 1) + " taps]";
}
// Volume of `need` covered by pieces assumed disjoint.
int64_t covered(const Region& need, const std::vector<Region>& pieces) {
  int64_t v = 0;
  for (const auto& p : pieces) v += volume(meet(need, p));
  return v;
}
// Do the boxes overlap pairwise? Returns the first overlapping pair.
std::pair<int, int> first_overlap(const std::vector<Region>& boxes) {
  for (size_t i = 0; i < boxes.size(); ++i)
    for (size_t j = i + 1; j < boxes.size(); ++j)
      if (volume(meet(boxes[i], boxes[j])) > 0) return {int(i), int(j)};
  return {-1, -1};
}

struct Producer {
  enum Kind { Ofmap, DramLoad } kind;
  int64_t core = 0;
  size_t wl = 0, piece = 0;  // Ofmap: core position and piece; DramLoad: index in "-1"/out
  Region region;             // absolute layer coordinates (weights: weight coordinates)
  std::string pointer;
  const std::vector<sir::Destination>* destination = nullptr;
  bool weight = false;
};

class Checker {
 public:
  Checker(const sir::Schedule& s, const arch::Architecture& a, const fir::Graph* g, const std::string& file, size_t max)
      : s_(s), a_(a), g_(g), file_(file), max_(max) {}

  std::vector<std::string> run() {
    capacities();
    index_producers();
    for (const auto& c : s_.cores)
      for (size_t k = 0; k < c.workloads.size(); ++k) workload(c, k), weight_entry_transfers(c, k);
    dram();
    coverage();
    weights();
    return std::move(problems_);
  }

 private:
  void add_problem(const std::string& pointer, const std::string& what) {
    if (problems_.size() < max_) problems_.push_back(at_pointer(file_, pointer, what));
  }
  static std::string wp(int64_t core, size_t k) {
    std::string p = "/";  // appended piecewise: GCC 12 warns (-Wrestrict) on the operator+ chain
    p += std::to_string(core);
    p += '/';
    p += std::to_string(k);
    return p;
  }

  void capacities();
  void index_producers();
  void workload(const sir::Core& c, size_t k);
  void memory(const sir::Core& c, size_t k);
  void weight_entry_transfers(const sir::Core& c, size_t k);
  void dram();
  void coverage();
  void weights();
  void workload_weights(const sir::Core& c, size_t k);
  bool layer_dims(const std::string& name, Coord* dims, bool input, size_t which) const;

  const sir::Schedule& s_;
  const arch::Architecture& a_;
  const fir::Graph* g_;
  std::string file_;
  size_t max_;
  std::vector<std::string> problems_;
  std::map<int64_t, std::vector<Producer>> producers_;
  std::map<int64_t, std::pair<int64_t, size_t>> where_wl_;  // workload id -> (core, position)
  std::map<int64_t, std::map<int64_t, int64_t>> tensor_address_;  // core -> tensor_id -> address
};

void Checker::capacities() {
  if (s_.buffersize > a_.core.l2_bytes)
    add_problem("/buffersize", "buffersize " + std::to_string(s_.buffersize) + " exceeds the L2 of " + a_.name + " (" +
                                   std::to_string(a_.core.l2_bytes) + " bytes)");
  for (const auto& c : s_.cores)
    if (!a_.valid_core(c.id)) add_problem("/" + std::to_string(c.id), "core " + std::to_string(c.id) + " is not a core of " + a_.name);
}

void Checker::index_producers() {
  for (const auto& c : s_.cores)
    for (size_t k = 0; k < c.workloads.size(); ++k) {
      const auto& w = c.workloads[k];
      where_wl_[w.workload_id] = {c.id, k};
      for (size_t i = 0; i < w.ofmap.size(); ++i) {
        const auto& o = w.ofmap[i];
        Producer p{Producer::Ofmap, c.id, k, i, {add(w.lower, o.lower), add(w.lower, o.upper)},
                   wp(c.id, k) + "/ofmap/" + std::to_string(i), &o.destination, false};
        producers_[o.transfer_id].push_back(p);
      }
    }
  for (size_t i = 0; i < s_.dram.out.size(); ++i) {
    const auto& d = s_.dram.out[i];
    Producer p{Producer::DramLoad, sir::kDramCoreId, i, 0, {d.lower, d.upper}, "/-1/out/" + std::to_string(i),
               &d.destination, d.type == sir::DramLoadType::Weight};
    producers_[d.transfer_id].push_back(p);
  }
  for (const auto& [tid, list] : producers_)
    if (list.size() > 1)
      add_problem(list[1].pointer, "transfer " + std::to_string(tid) + " is produced twice (also at " + list[0].pointer + ")");
}

// The input of layer `name` (`which`-th activation input) or its output, [n, c, h, w] extents.
bool Checker::layer_dims(const std::string& name, Coord* dims, bool input, size_t which) const {
  if (!g_) return false;
  const fir::Layer* l = g_->find(name);
  if (!l) return false;
  const fir::Shape* s = nullptr;
  if (input) {
    size_t seen = 0;
    for (size_t i = 0; i < l->previous_layer.size() && i < l->input_shape.size(); ++i) {
      if (fir::is_constant_name(l->previous_layer[i])) continue;
      if (seen++ == which) {
        s = &l->input_shape[i];
        break;
      }
    }
  } else if (!l->output_shape.empty()) {
    s = &l->output_shape[0];
  }
  if (!s) return false;
  auto b = fir::chip_box(*s);
  *dims = {b[0], b[1], b[2], b[3]};
  return true;
}

void Checker::workload(const sir::Core& c, size_t k) {
  const auto& w = c.workloads[k];
  const std::string p = wp(c.id, k);
  Region box{w.lower, w.upper};
  const bool known = g_ && g_->find(w.layer_name);
  if (g_ && !known) add_problem(p + "/layer_name", "layer \"" + w.layer_name + "\" is not in the Frontend IR");
  Coord od{};
  if (layer_dims(w.layer_name, &od, false, 0)) {
    Region all{{0, 0, 0, 0}, {od[0] - 1, od[1] - 1, od[2] - 1, od[3] - 1}};
    if (!inside(box, all))
      add_problem(p + "/workload", "workload " + str(box) + " lies outside the output of \"" + w.layer_name + "\" " + str(all));
  }
  // A data movement workload's tile t is piece t of its box (fir::move_pieces)
  // and reads one input: the ifmap of that input among those giving pieces.
  const fir::Layer* fl = g_ ? g_->find(w.layer_name) : nullptr;
  // A windowed layer's tile: its input rows (columns) and padding span
  // exactly the windows of its output rows. asm addresses the window start
  // from the padding, so a wrong padding reads outside the tensor.
  if (fl && (fl->kernel_size || fl->pool_size)) {
    const auto win = fl->window(), st = fl->strides(), dil = fl->dilations();
    for (size_t t = 0; t < w.tile_info.size(); ++t) {
      const auto& tile = w.tile_info[t];
      for (int a = 0; a < 2; ++a) {
        const __int128 out = tile.ofmap_upper[2 + a] - tile.ofmap_lower[2 + a] + 1;
        const __int128 in = tile.ifmap_upper[2 + a] - tile.ifmap_lower[2 + a] + 1;
        const __int128 pads = __int128(tile.tile_padding_tblr[2 * a]) + tile.tile_padding_tblr[2 * a + 1];
        const __int128 need = (out - 1) * st[a] + (__int128(win[a]) - 1) * dil[a] + 1;
        if (in + pads == need) continue;
        add_problem(p + "/tile_info/tile_num_" + std::to_string(t) + "/tile_padding_tblr",
                    std::string(a == 0 ? "rows" : "columns") + ": the tile's " + std::to_string(int64_t(in)) +
                        " input ones and padding " + std::to_string(tile.tile_padding_tblr[2 * a]) + " + " +
                        std::to_string(tile.tile_padding_tblr[2 * a + 1]) + " do not span the " +
                        std::to_string(int64_t(need)) + " that its " + std::to_string(int64_t(out)) + " output ones read (window " +
                        std::to_string(win[a]) + ", stride " + std::to_string(st[a]) + ", dilation " +
                        std::to_string(dil[a]) + " of \"" + w.layer_name + "\")");
        break;
      }
    }
  }
  const bool moves = fl && fir::is_move_op(fl->op);
  std::vector<size_t> tile_ifmap, tile_input;
  if (moves)
    if (auto pieces = fir::move_pieces(*fl, w.lower, w.upper)) {
      std::vector<size_t> rank(fl->previous_layer.size() + 1, 0);
      std::vector<char> gives(fl->previous_layer.size() + 1, 0);
      for (const auto& m : *pieces)
        if (m.input < gives.size()) gives[m.input] = 1;
      for (size_t j = 1; j < gives.size(); ++j) rank[j] = rank[j - 1] + size_t(gives[j - 1]);
      for (const auto& m : *pieces) {
        tile_ifmap.push_back(m.input < rank.size() ? rank[m.input] : 0);
        tile_input.push_back(m.input);
      }
    }
  // Inputs: each transfer produced once, delivered to this core, and the
  // pieces cover what the tiles read.
  for (size_t i = 0; i < w.ifmap.size(); ++i) {
    const auto& f = w.ifmap[i];
    std::vector<Region> pieces;
    for (size_t j = 0; j < f.transfer_id.size(); ++j) {
      int64_t tid = f.transfer_id[j];
      std::string fp = p + "/ifmap/" + std::to_string(i) + "/transfer_id/" + std::to_string(j);
      auto it = producers_.find(tid);
      if (it == producers_.end()) {
        add_problem(fp, "transfer " + std::to_string(tid) + " has no producer (no ofmap piece, no DRAM load)");
        continue;
      }
      const Producer& pr = it->second[0];
      if (pr.weight) add_problem(fp, "transfer " + std::to_string(tid) + " is a weight load, consumed as a feature map");
      // Delivered to this workload, or to an earlier one on the same core.
      bool delivered = false;
      for (const auto& d : *pr.destination) {
        if (d.type != sir::Endpoint::Core || d.core_id != c.id || !d.workload_id) continue;
        auto at = where_wl_.find(*d.workload_id);
        if (at != where_wl_.end() && at->second.first == c.id && at->second.second <= k) delivered = true;
      }
      if (!delivered)
        add_problem(fp, "transfer " + std::to_string(tid) + " (" + pr.pointer +
                            ") names neither this workload nor an earlier one of core " + std::to_string(c.id) +
                            " as destination");
      pieces.push_back(pr.region);
    }
    // What the tiles read of this input.
    for (size_t t = 0; t < w.tile_info.size(); ++t) {
      const auto& tile = w.tile_info[t];
      Region need;
      if (moves) {
        if (t >= tile_ifmap.size() || tile_ifmap[t] != i) continue;
        need = {tile.ifmap_lower, tile.ifmap_upper};
      } else if (i == 0) need = {tile.ifmap_lower, tile.ifmap_upper};
      else if (i == 1 && tile.ifmap_lower2 && tile.ifmap_upper2) need = {*tile.ifmap_lower2, *tile.ifmap_upper2};
      else continue;
      Coord idims{};
      if (layer_dims(w.layer_name, &idims, true, moves ? tile_input[t] : i)) {
        Region all{{0, 0, 0, 0}, {idims[0] - 1, idims[1] - 1, idims[2] - 1, idims[3] - 1}};
        if (!inside(need, all))
          add_problem(p + "/tile_info/tile_num_" + std::to_string(t),
                      "the tile reads " + str(need) + " outside input " + std::to_string(i) + " " + str(all));
      }
      if (pieces.size() == f.transfer_id.size() && !pieces.empty() && covered(need, pieces) < volume(need))
        add_problem(p + "/ifmap/" + std::to_string(i),
                    "the transfers " + std::to_string(f.transfer_id.front()) + (f.transfer_id.size() > 1 ? ".." : "") +
                        " deliver only part of the region " + str(need) + " that tile " + std::to_string(t) + " reads");
    }
  }
  if (w.weight) {
    for (size_t j = 0; j < w.weight->transfer_id.size(); ++j) {
      int64_t tid = w.weight->transfer_id[j];
      std::string fp = p + "/weight/transfer_id/" + std::to_string(j);
      auto it = producers_.find(tid);
      if (it == producers_.end() || !it->second[0].weight) {
        add_problem(fp, "weight transfer " + std::to_string(tid) + " is not a weight load of \"-1\"/out");
        continue;
      }
      const Producer& pr = it->second[0];
      if (!inside({w.weight->lower, w.weight->upper}, pr.region))
        add_problem(p + "/weight", "weights " + str({w.weight->lower, w.weight->upper}) + " are not inside the load " +
                                       str(pr.region) + " of transfer " + std::to_string(tid));
    }
    if (w.weight->lower[1] > w.lower[1] || w.weight->upper[1] < w.upper[1])
      add_problem(p + "/weight", "weights for output channels " + std::to_string(w.weight->lower[1]) + ".." +
                                     std::to_string(w.weight->upper[1]) + " do not cover the workload's " +
                                     std::to_string(w.lower[1]) + ".." + std::to_string(w.upper[1]));
  } else if (w.layer_type == sir::LayerType::Pe) {
    add_problem(p, "a PE workload without weights");
  }
  // Outputs: every named consumer lists the transfer.
  for (size_t i = 0; i < w.ofmap.size(); ++i) {
    const auto& o = w.ofmap[i];
    for (size_t d = 0; d < o.destination.size(); ++d) {
      const auto& dst = o.destination[d];
      std::string dp = p + "/ofmap/" + std::to_string(i) + "/destination/" + std::to_string(d);
      if (dst.type == sir::Endpoint::Dram) {
        bool stored = false;
        for (const auto& st : s_.dram.in) stored = stored || st.transfer_id == o.transfer_id;
        if (!stored) add_problem(dp, "a DRAM destination without a \"-1\"/in store of transfer " + std::to_string(o.transfer_id));
        continue;
      }
      const sir::Workload* cw = dst.workload_id ? s_.find_workload(*dst.workload_id) : nullptr;
      if (!cw) continue;  // structural checks report it
      // The consumer reads the transfer, or keeps it in L2 with pieces it
      // reads (one buffer assembled from several pieces).
      bool lists = false;
      for (const auto& f : cw->ifmap)
        lists = lists || std::find(f.transfer_id.begin(), f.transfer_id.end(), o.transfer_id) != f.transfer_id.end();
      for (const auto& b : cw->buffer)
        lists = lists || (b.transfer_id && std::find(b.transfer_id->begin(), b.transfer_id->end(), o.transfer_id) !=
                                               b.transfer_id->end());
      if (!lists)
        add_problem(dp, "workload " + std::to_string(*dst.workload_id) + " does not read transfer " +
                            std::to_string(o.transfer_id));
    }
  }
  // Tiles cover the workload exactly once.
  std::vector<Region> tiles;
  int64_t vol = 0;
  for (const auto& t : w.tile_info) {
    tiles.push_back({t.ofmap_lower, t.ofmap_upper});
    vol += volume(tiles.back());
  }
  auto [x, y] = first_overlap(tiles);
  if (x >= 0)
    add_problem(p + "/tile_info/tile_num_" + std::to_string(y), "tile " + std::to_string(y) + " overlaps tile " + std::to_string(x));
  else if (!tiles.empty() && vol != volume(box))
    add_problem(p + "/tile_info", "the tiles cover " + std::to_string(vol) + " of the workload's " + std::to_string(volume(box)) +
                                      " output elements");
  memory(c, k);
}

// A weight-buffer entry loaded from DRAM names weight loads sent to its
// core: asm loads the entry by these ids, so another core's load (another
// part of the layer) or a feature map puts other records in WL0.
void Checker::weight_entry_transfers(const sir::Core& c, size_t k) {
  const auto& w = c.workloads[k];
  for (const auto* wb : {&w.wl0_buffer, &w.wl1_buffer}) {
    const std::string key = wb == &w.wl0_buffer ? "/wl0_buffer/" : "/wl1_buffer/";
    for (size_t i = 0; i < wb->entries.size(); ++i) {
      const auto& e = wb->entries[i];
      if (e.source != sir::WeightSource::Ddr) continue;
      for (size_t j = 0; j < e.transfer_id.size(); ++j) {
        const std::string tp = wp(c.id, k) + key + std::to_string(i) + "/transfer_id/" + std::to_string(j);
        auto it = producers_.find(e.transfer_id[j]);
        if (it == producers_.end() || !it->second[0].weight) {
          add_problem(tp, "transfer " + std::to_string(e.transfer_id[j]) + " is not a weight load of \"-1\"/out");
          continue;
        }
        bool here = false;
        for (const auto& d : *it->second[0].destination) here = here || (d.type == sir::Endpoint::Core && d.core_id == c.id);
        if (!here)
          add_problem(tp, "weight transfer " + std::to_string(e.transfer_id[j]) + " (" + it->second[0].pointer +
                              ") does not go to core " + std::to_string(c.id));
      }
    }
  }
}

void Checker::memory(const sir::Core& c, size_t k) {
  const auto& w = c.workloads[k];
  const std::string p = wp(c.id, k);
  // Ring-buffer regions inside L2 and disjoint.
  for (size_t i = 0; i < w.ring_buffer_info.size(); ++i)
    for (size_t j = i + 1; j < w.ring_buffer_info.size(); ++j)
      if (w.ring_buffer_info[i][0] < w.ring_buffer_info[j][1] && w.ring_buffer_info[j][0] < w.ring_buffer_info[i][1])
        add_problem(p + "/ring_buffer_info/" + std::to_string(j), "ring-buffer regions " + std::to_string(i) + " and " +
                                                                      std::to_string(j) + " overlap");
  // L2: inside the buffer and a ring region, pairwise disjoint, fixed addresses.
  std::vector<std::pair<int64_t, size_t>> byaddr;
  for (size_t i = 0; i < w.buffer.size(); ++i) {
    const auto& b = w.buffer[i];
    std::string bp = p + "/buffer/" + std::to_string(i);
    int64_t end = b.address + b.size;
    if (b.address < 0 || end > s_.buffersize || end > a_.core.l2_bytes)
      add_problem(bp + "/address", "tensor [" + std::to_string(b.address) + ", " + std::to_string(end) + ") is outside L2");
    if (!w.ring_buffer_info.empty()) {
      bool in_ring = false;
      for (const auto& r : w.ring_buffer_info) in_ring = in_ring || (r[0] <= b.address && end <= r[1]);
      if (!in_ring) add_problem(bp + "/address", "tensor [" + std::to_string(b.address) + ", " + std::to_string(end) +
                                                     ") is not inside one ring-buffer region");
    }
    // The data a tensor holds must fit its bytes.
    int64_t cpad = (b.upper[1] - b.lower[1] + 1 + std::max<int64_t>(1, b.align) - 1) / std::max<int64_t>(1, b.align) *
                   std::max<int64_t>(1, b.align);
    int64_t need = b.type == sir::TensorType::Weight
                       ? 0
                       : (b.upper[0] - b.lower[0] + 1) * (b.upper[2] - b.lower[2] + 1) * (b.upper[3] - b.lower[3] + 1) * cpad *
                             std::max<int64_t>(1, b.bitwidth / 8);
    if (need > b.size)
      add_problem(bp + "/size", "region " + str({b.lower, b.upper}) + " needs " + std::to_string(need) + " bytes, the tensor has " +
                                    std::to_string(b.size));
    auto [it, fresh] = tensor_address_[c.id].emplace(b.tensor_id, b.address);
    if (!fresh && it->second != b.address && !b.newly_added.value_or(false))
      add_problem(bp + "/address", "tensor " + std::to_string(b.tensor_id) + " moved from address " +
                                       std::to_string(it->second) + " without being loaded again");
    it->second = b.address;
    byaddr.push_back({b.address, i});
  }
  std::sort(byaddr.begin(), byaddr.end());
  int64_t reach = -1;
  size_t reach_i = 0;
  for (auto [addr, i] : byaddr) {
    const auto& b = w.buffer[i];
    if (b.size > 0 && addr < reach)
      add_problem(p + "/buffer/" + std::to_string(i), "tensor " + std::to_string(b.tensor_id) + " [" + std::to_string(addr) +
                                                          ", " + std::to_string(addr + b.size) + ") overlaps tensor " +
                                                          std::to_string(w.buffer[reach_i].tensor_id) + " (ends at " +
                                                          std::to_string(reach) + ") in L2");
    if (addr + b.size > reach) reach = addr + b.size, reach_i = i;
  }
  // Inputs and output are held in this workload's L2.
  auto held = [&](int64_t tid) {
    for (const auto& b : w.buffer)
      if (b.transfer_id && std::find(b.transfer_id->begin(), b.transfer_id->end(), tid) != b.transfer_id->end()) return true;
    return false;
  };
  for (size_t i = 0; i < w.ifmap.size(); ++i)
    for (int64_t tid : w.ifmap[i].transfer_id)
      if (!held(tid))
        add_problem(p + "/ifmap/" + std::to_string(i), "input transfer " + std::to_string(tid) + " is in no L2 tensor of the workload");
  // An input arriving in pieces is read as one tensor: one L2 tensor holds
  // every piece (asm addresses the input from a single buffer).
  for (size_t i = 0; i < w.ifmap.size(); ++i) {
    const auto& ids = w.ifmap[i].transfer_id;
    if (ids.size() < 2) continue;
    bool one = false;
    for (const auto& b : w.buffer) {
      if (!b.transfer_id) continue;
      bool all = true;
      for (int64_t tid : ids) all = all && std::find(b.transfer_id->begin(), b.transfer_id->end(), tid) != b.transfer_id->end();
      one = one || all;
    }
    if (!one && std::all_of(ids.begin(), ids.end(), held))
      add_problem(p + "/ifmap/" + std::to_string(i), "the " + std::to_string(ids.size()) +
                                                         " pieces of input " + std::to_string(i) +
                                                         " (transfers " + std::to_string(ids.front()) + ", " +
                                                         std::to_string(ids[1]) + (ids.size() > 2 ? ", ..." : "") +
                                                         ") are not held in one L2 tensor");
  }
  // The inputs of a two-input vector operation of one shape are read in one
  // box (vp_cfg_fm STile): the tensors asm reads them from (of the ifmap's
  // extent when several tensors hold its transfers) have one shape.
  // Data movement layers (concat) read each input in a box of its own.
  const fir::Layer* fl = g_ ? g_->find(w.layer_name) : nullptr;
  const bool moves = fl && fir::is_move_op(fl->op);
  if (w.layer_type == sir::LayerType::Vp && w.ifmap.size() > 1 && !moves) {
    auto extent = [](const Coord& lo, const Coord& hi) {
      return Coord{hi[1] - lo[1] + 1, hi[2] - lo[2] + 1, hi[3] - lo[3] + 1, 0};
    };
    std::vector<const sir::BufferTensor*> from;
    for (const auto& f : w.ifmap) {
      const sir::BufferTensor* holder = nullptr;
      for (const auto& b : w.buffer) {
        if (!b.transfer_id || f.transfer_id.empty()) continue;
        bool all = true;
        for (int64_t tid : f.transfer_id)
          all = all && std::find(b.transfer_id->begin(), b.transfer_id->end(), tid) != b.transfer_id->end();
        if (!all) continue;
        Coord bx = extent(b.lower, b.upper), fx = extent(f.lower, f.upper);
        if (bx == fx && b.upper[0] - b.lower[0] == f.upper[0] - f.lower[0]) {
          holder = &b;
          break;
        }
        if (!holder) holder = &b;
      }
      from.push_back(holder);
    }
    // A broadcast input (sizes of 1 where the other has more) is read in a
    // box of its own (vp_cfg_fm1) that must have size 1 along those axes.
    auto broadcast_problem = [&](size_t i, size_t full) -> bool {
      Coord fi = extent(w.ifmap[i].lower, w.ifmap[i].upper), ff = extent(w.ifmap[full].lower, w.ifmap[full].upper);
      if (fi == ff) return false;
      Coord bx = extent(from[i]->lower, from[i]->upper);
      for (int a = 0; a < 3; ++a)
        if (fi[a] != ff[a] && (fi[a] != 1 || bx[a] != 1))
          add_problem(p + "/ifmap/" + std::to_string(i),
                      "input " + std::to_string(i) + " " + str({w.ifmap[i].lower, w.ifmap[i].upper}) + " is neither input " +
                          std::to_string(full) + "'s size nor broadcast along each axis (size 1, held in a tensor of size 1 there: " +
                          std::to_string(from[i]->tensor_id) + " " + str({from[i]->lower, from[i]->upper}) + ")");
      return true;
    };
    for (size_t i = 1; i < from.size(); ++i) {
      if (!from[0] || !from[i]) continue;
      Coord f0 = extent(w.ifmap[0].lower, w.ifmap[0].upper), f1 = extent(w.ifmap[i].lower, w.ifmap[i].upper);
      bool first_full = f0[0] * f0[1] * f0[2] >= f1[0] * f1[1] * f1[2];
      if (first_full ? broadcast_problem(i, 0) : broadcast_problem(0, i)) continue;
      Coord x0 = extent(from[0]->lower, from[0]->upper), xi = extent(from[i]->lower, from[i]->upper);
      auto padded = [](int64_t c, int64_t align) { return round_up(c, align); };
      // The pixel stride, when both are read in A's box. Operands of
      // different element sizes (an INT8 activation and a float16 constant)
      // are read in boxes of their own (vp_cfg_fm1 gives B's box and
      // format, each padded to the channel alignment in bytes): their
      // [C, H, W] extents must agree, their padding in elements need not.
      if (from[0]->bitwidth == from[i]->bitwidth) {
        x0[3] = padded(x0[0], from[0]->align);
        xi[3] = padded(xi[0], from[i]->align);
      }
      if (x0 != xi)
        add_problem(p + "/ifmap/" + std::to_string(i),
                    "input " + std::to_string(i) + " is read from tensor " + std::to_string(from[i]->tensor_id) + " " +
                        str({from[i]->lower, from[i]->upper}) + ", input 0 from tensor " + std::to_string(from[0]->tensor_id) +
                        " " + str({from[0]->lower, from[0]->upper}) +
                        ": the two inputs of a vector operation share one [C, H, W] box (vp_cfg_fm STile)");
    }
  }
  // Every piece a tensor holds comes from a transfer of this workload's
  // core or one delivered to the core (a tensor lists the pieces later
  // workloads receive too), from the core that made it: asm pairs each
  // piece's receive with the producer's send by transfer id, so a piece
  // naming another transfer waits for a send that never comes (a deadlock).
  for (size_t i = 0; i < w.buffer.size(); ++i) {
    const auto& b = w.buffer[i];
    if (!b.source) continue;
    for (size_t j = 0; j < b.source->size(); ++j) {
      const auto& src = (*b.source)[j];
      const std::string sp = p + "/buffer/" + std::to_string(i) + "/source/" + std::to_string(j);
      auto it = producers_.find(src.transfer_id);
      if (it == producers_.end()) {
        add_problem(sp + "/transfer_id", "transfer " + std::to_string(src.transfer_id) + " has no producer (no ofmap piece, no DRAM load)");
        continue;
      }
      const Producer& pr = it->second[0];
      if (src.core_id != pr.core) {
        add_problem(sp + "/core_id", "transfer " + std::to_string(src.transfer_id) + " comes from " + pr.pointer + " on core " +
                                         std::to_string(pr.core) + ", not core " + std::to_string(src.core_id));
        continue;
      }
      bool here = pr.core == c.id;
      for (const auto& d : *pr.destination) here = here || (d.type == sir::Endpoint::Core && d.core_id == c.id);
      if (!here)
        add_problem(sp + "/transfer_id", "transfer " + std::to_string(src.transfer_id) + " (" + pr.pointer +
                                             ") is neither made on core " + std::to_string(c.id) + " nor sent to it");
    }
  }
  // The pieces a tensor was filled with lie inside it.
  for (size_t i = 0; i < w.buffer.size(); ++i) {
    const auto& b = w.buffer[i];
    if (!b.source || b.source->size() < 2) continue;
    for (size_t j = 0; j < b.source->size(); ++j) {
      const auto& src = (*b.source)[j];
      // A data movement layer's piece lands at `place`, not at its own coordinates.
      Region at{src.lower, src.upper};
      if (src.place)
        for (int a = 0; a < 4; ++a) at.lo[a] = (*src.place)[a], at.hi[a] = (*src.place)[a] + src.upper[a] - src.lower[a];
      if (!inside(at, {b.lower, b.upper}))
        add_problem(p + "/buffer/" + std::to_string(i) + "/source/" + std::to_string(j),
                    "piece " + str(at) + " of transfer " + std::to_string(src.transfer_id) +
                        " lies outside its tensor " + str({b.lower, b.upper}));
    }
  }
  // An output only stored to DRAM may sit in an "ofmap" tensor named after its layer.
  bool own_ofmap = false;
  for (const auto& b : w.buffer)
    own_ofmap = own_ofmap || (b.type == sir::TensorType::Ofmap && b.layer_name && *b.layer_name == w.layer_name);
  for (size_t i = 0; i < w.ofmap.size(); ++i)
    if (!held(w.ofmap[i].transfer_id) && !own_ofmap)
      add_problem(p + "/ofmap/" + std::to_string(i),
                  "output transfer " + std::to_string(w.ofmap[i].transfer_id) + " is in no L2 tensor of the workload");
  // WL0: entries inside the buffer and disjoint; PE workloads find their weights.
  const sir::WeightBuffer& wb = w.wl0_buffer.present() ? w.wl0_buffer : w.wl1_buffer;
  const char* key = w.wl0_buffer.present() ? "/wl0_buffer/" : "/wl1_buffer/";
  const int64_t wl0_capacity = a_.core.wl0_rows;  // in WL0 address units, as asm and zebusim bound it
  std::vector<std::pair<int64_t, size_t>> wa;
  bool own = false;
  for (size_t i = 0; i < wb.entries.size(); ++i) {
    const auto& e = wb.entries[i];
    if (e.address < 0 || e.address + e.size > wl0_capacity)
      add_problem(p + key + std::to_string(i), "entry [" + std::to_string(e.address) + ", " + std::to_string(e.address + e.size) +
                                                   ") is outside the weight buffer (" + std::to_string(wl0_capacity) + ")");
    wa.push_back({e.address, i});
    own = own || e.layer_name == w.layer_name;
  }
  std::sort(wa.begin(), wa.end());
  reach = -1;
  for (auto [addr, i] : wa) {
    const auto& e = wb.entries[i];
    if (addr < reach)
      add_problem(p + key + std::to_string(i), "weights of \"" + e.layer_name + "\" [" + std::to_string(addr) + ", " +
                                                   std::to_string(addr + e.size) + ") overlap another entry of the weight buffer");
    reach = std::max(reach, addr + e.size);
  }
  if (w.layer_type == sir::LayerType::Pe && !own)
    add_problem(p + std::string(key).substr(0, std::string(key).size() - 1),
                "the weight buffer holds nothing of the workload's layer \"" + w.layer_name + "\"");
}

void Checker::dram() {
  // Stores: produced by the workload they name, inside its output.
  for (size_t i = 0; i < s_.dram.in.size(); ++i) {
    const auto& st = s_.dram.in[i];
    std::string p = "/-1/in/" + std::to_string(i);
    auto it = producers_.find(st.transfer_id);
    const sir::Workload* w = s_.find_workload(st.workload_id);
    if (!w) continue;  // structural
    if (it == producers_.end() || it->second[0].kind != Producer::Ofmap) {
      add_problem(p + "/transfer_id", "store " + std::to_string(st.transfer_id) + " is not an ofmap of workload " +
                                          std::to_string(st.workload_id));
      continue;
    }
    if (!inside({st.lower, st.upper}, it->second[0].region))
      add_problem(p, "stored region " + str({st.lower, st.upper}) + " is not inside the ofmap " + str(it->second[0].region));
    if (st.related_ofmap)
      for (int64_t r : *st.related_ofmap) {
        auto lt = producers_.find(r);
        if (lt == producers_.end() || lt->second[0].kind != Producer::DramLoad)
          add_problem(p + "/related_ofmap", "transfer " + std::to_string(r) + " is not a DRAM load");
      }
  }
  // Host steps read stores and are read by loads that name them.
  if (s_.dram.host)
    for (size_t i = 0; i < s_.dram.host->size(); ++i) {
      const auto& h = (*s_.dram.host)[i];
      std::string p = "/-1/host/" + std::to_string(i);
      for (int64_t r : h.related_ifmap) {
        bool found = false;
        for (const auto& st : s_.dram.in) found = found || st.transfer_id == r;
        if (!found) add_problem(p + "/related_ifmap", "transfer " + std::to_string(r) + " is not a DRAM store");
      }
      for (int64_t r : h.related_ofmap) {
        bool found = false;
        for (const auto& ld : s_.dram.out)
          found = found || (ld.transfer_id == r &&
                            std::find(ld.related_ifmap.begin(), ld.related_ifmap.end(), h.transfer_id) != ld.related_ifmap.end());
        if (!found)
          add_problem(p + "/related_ofmap", "transfer " + std::to_string(r) + " is not a DRAM load naming host step " +
                                                 std::to_string(h.transfer_id));
      }
    }
  // Loads of stored data read what was stored; every destination reads it.
  for (size_t i = 0; i < s_.dram.out.size(); ++i) {
    const auto& ld = s_.dram.out[i];
    std::string p = "/-1/out/" + std::to_string(i);
    // A host step's result: what the host writes (checked with the step below).
    bool from_host = false;
    if (s_.dram.host)
      for (const auto& h : *s_.dram.host)
        for (int64_t r : ld.related_ifmap) from_host = from_host || r == h.transfer_id;
    if (!ld.related_ifmap.empty() && !from_host) {
      std::vector<Region> stored;
      for (int64_t r : ld.related_ifmap) {
        bool found = false;
        for (const auto& st : s_.dram.in)
          if (st.transfer_id == r) stored.push_back({st.lower, st.upper}), found = true;
        if (!found) add_problem(p + "/related_ifmap", "transfer " + std::to_string(r) + " is not a DRAM store");
      }
      Region need{ld.lower, ld.upper};
      if (!stored.empty() && covered(need, stored) < volume(need))
        add_problem(p, "the load " + str(need) + " reads beyond what its stores wrote");
    }
    for (size_t d = 0; d < ld.destination.size(); ++d) {
      const auto& dst = ld.destination[d];
      const sir::Workload* w = dst.workload_id ? s_.find_workload(*dst.workload_id) : nullptr;
      if (!w) continue;
      bool lists = w->weight && std::find(w->weight->transfer_id.begin(), w->weight->transfer_id.end(), ld.transfer_id) !=
                                    w->weight->transfer_id.end();
      for (const auto& f : w->ifmap)
        lists = lists || std::find(f.transfer_id.begin(), f.transfer_id.end(), ld.transfer_id) != f.transfer_id.end();
      if (!lists)
        add_problem(p + "/destination/" + std::to_string(d),
                    "workload " + std::to_string(*dst.workload_id) + " does not read transfer " + std::to_string(ld.transfer_id));
    }
  }
}

void Checker::coverage() {
  std::map<std::string, std::vector<std::pair<Region, std::string>>> by_layer;
  for (const auto& c : s_.cores)
    for (size_t k = 0; k < c.workloads.size(); ++k)
      by_layer[c.workloads[k].layer_name].push_back({{c.workloads[k].lower, c.workloads[k].upper}, wp(c.id, k)});
  for (const auto& [name, list] : by_layer) {
    std::vector<Region> boxes;
    Region hull = list[0].first;
    int64_t vol = 0;
    for (const auto& [r, ptr] : list) {
      boxes.push_back(r);
      vol += volume(r);
      for (int i = 0; i < 4; ++i) hull.lo[i] = std::min(hull.lo[i], r.lo[i]), hull.hi[i] = std::max(hull.hi[i], r.hi[i]);
    }
    auto [x, y] = first_overlap(boxes);
    if (x >= 0) {
      add_problem(list[size_t(y)].second + "/workload", "\"" + name + "\": workload " + str(boxes[size_t(y)]) +
                                                            " overlaps " + str(boxes[size_t(x)]) + " at " + list[size_t(x)].second);
      continue;
    }
    Coord od{};
    Region all = hull;
    if (layer_dims(name, &od, false, 0)) all = {{0, 0, 0, 0}, {od[0] - 1, od[1] - 1, od[2] - 1, od[3] - 1}};
    if (vol != volume(all))
      add_problem(list[0].second + "/workload", "the workloads of \"" + name + "\" cover " + std::to_string(vol) + " of its " +
                                                    std::to_string(volume(all)) + " output elements");
  }
  if (g_)
    for (const auto& l : g_->layers())
      if (l.device == fir::Device::Npu && !by_layer.count(l.name))
        add_problem("", "layer \"" + l.name + "\" of the Frontend IR has no workload");
}

// With the FIR: weights agree with their layers in the chip's record layout
// (layer_weight_record), the rule the functional model reads them by.
void Checker::weights() {
  if (!g_) return;
  // DRAM weight transfers: whole records of the layer's shape, and their bytes.
  for (size_t i = 0; i < s_.dram.out.size(); ++i) {
    const auto& d = s_.dram.out[i];
    if (d.type != sir::DramLoadType::Weight || d.destination.empty() || !d.destination[0].layer_name) continue;
    const std::string p = "/-1/out/" + std::to_string(i);
    const fir::Layer* l = g_->find(*d.destination[0].layer_name);
    if (!l) continue;  // the destinations' check names it
    const footprint::WeightRecord r = layer_weight_record(a_, *l);
    const std::string who = "weight transfer " + std::to_string(d.transfer_id) + " of \"" + l->name + "\"";
    if (r.c <= 0) {
      add_problem(p, who + ": the layer has no [K, C, kh, kw] weights");
      continue;
    }
    const int64_t channels = d.upper[1] - d.lower[1] + 1;
    auto k = fir::weight_shape(*l);
    if (d.lower[1] < 0 || d.upper[1] >= (*k)[0])
      add_problem(p + "/upper", who + " loads output channels " + range(d.lower[1], d.upper[1]) + " of its " +
                                    std::to_string((*k)[0]));
    if (!whole_records(d.lower, d.upper, r))
      add_problem(p + "/upper", who + " loads " + records_of(d.lower, d.upper) + " of each output channel; its records are " +
                                    record_text(r));
    if (d.size != channels * r.bytes())
      add_problem(p + "/size", who + " is " + std::to_string(d.size) + " bytes; its " + std::to_string(channels) +
                                   " output channels of records " + record_text(r) + " take " +
                                   std::to_string(channels * r.bytes()));
  }
  for (const auto& c : s_.cores)
    for (size_t k = 0; k < c.workloads.size(); ++k)
      if (c.workloads[k].layer_type == sir::LayerType::Pe) workload_weights(c, k);
}

// A PE workload's tiles read the input channels (whole groups) their output
// channels need, and its WL0 entries hold records of the layer's shape for
// every tile.
void Checker::workload_weights(const sir::Core& c, size_t k) {
  const auto& w = c.workloads[k];
  const std::string p = wp(c.id, k);
  const fir::Layer* l = g_->find(w.layer_name);
  if (!l) return;
  const footprint::WeightRecord r = layer_weight_record(a_, *l);
  auto wshape = fir::weight_shape(*l);
  if (r.c <= 0 || !wshape || (*wshape)[0] < 1) return;
  const int64_t groups = l->op == fir::Op::Conv2d ? l->group_count() : 1;
  const int64_t kg = (*wshape)[0] / groups;  // output channels per group
  // Dense layers reading a flattened [C, H, W] input have no channel rule here.
  const bool channels_known = l->op == fir::Op::Conv2d ||
                              (!l->input_shape.empty() && l->input_shape[0].size() >= 2 && fir::chip_box(l->input_shape[0])[1] == r.c);
  if (w.weight) {
    const auto& wt = *w.weight;
    const int64_t channels = wt.upper[1] - wt.lower[1] + 1;
    if (!whole_records(wt.lower, wt.upper, r))
      add_problem(p + "/weight", "the weights " + records_of(wt.lower, wt.upper) + " of each output channel are not \"" +
                                     l->name + "\"'s records " + record_text(r));
    else if (wt.size != channels * r.bytes())
      add_problem(p + "/weight/size", "the weights of " + std::to_string(channels) + " output channels are " +
                                          std::to_string(wt.size) + " bytes; records " + record_text(r) + " take " +
                                          std::to_string(channels * r.bytes()));
  }
  for (size_t t = 0; t < w.tile_info.size() && channels_known; ++t) {
    const auto& tile = w.tile_info[t];
    const std::string tp = p + "/tile_info/tile_num_" + std::to_string(t);
    const int64_t k0 = tile.ofmap_lower[1], k1 = tile.ofmap_upper[1];
    if (groups > 1 && (k0 % kg != 0 || (k1 + 1) % kg != 0)) {
      add_problem(tp, "the tile computes output channels " + range(k0, k1) + " of \"" + l->name + "\", not whole groups of " +
                          std::to_string(kg));
      continue;
    }
    // Group g's outputs read its r.c input channels; a dense layer's all of them.
    const int64_t c0 = groups > 1 ? k0 / kg * r.c : 0, c1 = groups > 1 ? (k1 + 1) / kg * r.c - 1 : r.c - 1;
    if (tile.ifmap_lower[1] != c0 || tile.ifmap_upper[1] != c1)
      add_problem(tp, "the tile reads input channels " + range(tile.ifmap_lower[1], tile.ifmap_upper[1]) +
                          "; its output channels " + range(k0, k1) + " of \"" + l->name + "\" (" + std::to_string(groups) +
                          (groups == 1 ? " group" : " groups") + ") need " + range(c0, c1));
  }
  // WL0: the entries of the workload's own weights.
  const sir::WeightBuffer& wb = w.wl0_buffer.present() ? w.wl0_buffer : w.wl1_buffer;
  const std::string key = w.wl0_buffer.present() ? "/wl0_buffer/" : "/wl1_buffer/";
  const int64_t row = a_.core.wl0_row_bytes;
  auto own = [&](const sir::WeightBufferEntry& e) {
    if (e.layer_name != w.layer_name) return false;
    if (!w.weight || w.weight->transfer_id.empty() || e.transfer_id.empty()) return true;
    for (int64_t id : e.transfer_id)
      if (std::find(w.weight->transfer_id.begin(), w.weight->transfer_id.end(), id) != w.weight->transfer_id.end())
        return true;
    return false;
  };
  for (size_t i = 0; i < wb.entries.size(); ++i) {
    const auto& e = wb.entries[i];
    if (!own(e) || !e.lower || !e.upper) continue;
    const std::string ep = p + key + std::to_string(i);
    if (!whole_records(*e.lower, *e.upper, r)) {
      add_problem(ep, "the entry holds " + records_of(*e.lower, *e.upper) + " of each output channel of \"" + l->name +
                          "\"; its records are " + record_text(r));
      continue;
    }
    const int64_t need = (*e.upper)[1] - (*e.lower)[1] + 1;
    if (e.source == sir::WeightSource::Ddr && e.size * row < need * r.bytes())
      add_problem(ep + "/size", "the entry's " + std::to_string(e.size) + " rows cannot hold its " + std::to_string(need) +
                                    " records " + record_text(r));
  }
  // Every tile finds its records in an entry (the one holding its output channels).
  const size_t slots = std::min<size_t>(2, w.tile_info.size());
  for (size_t t = 0; t < w.tile_info.size(); ++t) {
    const auto& tile = w.tile_info[t];
    const int64_t k0 = tile.ofmap_lower[1], kt = tile.ofmap_upper[1] - k0 + 1;
    const sir::WeightBufferEntry* e = nullptr;
    for (const auto& x : wb.entries) {
      if (!own(x)) continue;
      if (!e) e = &x;
      if (x.lower && x.upper && ((*x.lower)[1] > k0 || tile.ofmap_upper[1] > (*x.upper)[1])) continue;
      e = &x;
      break;
    }
    if (!e) break;  // memory() reports a buffer without the layer
    const std::string tp = p + "/tile_info/tile_num_" + std::to_string(t);
    if (e->source == sir::WeightSource::Core) {
      // Streamed tile by tile through `slots` slots of the entry.
      if (int64_t(slots) * kt * r.bytes() > e->size * row)
        add_problem(tp, "the tile's " + std::to_string(kt) + " records " + record_text(r) + " in " + std::to_string(slots) +
                            " slots need " + std::to_string(int64_t(slots) * kt * r.bytes()) + " bytes; its entry at " +
                            std::to_string(e->address) + " has " + std::to_string(e->size) + " rows");
      continue;
    }
    const int64_t first = e->lower ? (*e->lower)[1] : 0;
    const int64_t lo = (k0 - first) * r.bytes(), hi = lo + kt * r.bytes();
    if (lo < 0 || hi > e->size * row)
      add_problem(tp, "the tile reads records " + record_text(r) + " of output channels " + range(k0, tile.ofmap_upper[1]) +
                          " at bytes " + range(lo, hi - 1) + " of its entry at " + std::to_string(e->address) + ", which has " +
                          std::to_string(e->size) + " rows");
  }
}

}  // namespace

std::vector<std::string> check(const sir::Schedule& s, const arch::Architecture& arch, const fir::Graph* graph,
                               const std::string& file, size_t max_problems) {
  return Checker(s, arch, graph, file, max_problems).run();
}

}  // namespace cct::irgen
