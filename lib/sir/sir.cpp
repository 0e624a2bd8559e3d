// SIR enums, lookups, the transfer index and the structural checks.
#include <algorithm>
#include <climits>
#include <cmath>
#include <map>

#include "sir/sir.hpp"
#include "support/error.hpp"
#include "support/json_cursor.hpp"

namespace cct::sir {

std::string_view endpoint_name(Endpoint e) { return e == Endpoint::Dram ? "DRAM" : "core"; }
std::string_view layer_type_name(LayerType t) { return t == LayerType::Vp ? "vp" : "pe"; }
std::string_view tensor_type_name(TensorType t) {
  switch (t) {
    case TensorType::Ifmap: return "ifmap";
    case TensorType::Ofmap: return "ofmap";
    case TensorType::Weight: return "weight";
  }
  return "ifmap";
}
std::string_view dram_load_type_name(DramLoadType t) { return t == DramLoadType::Fmap ? "fmap" : "weight"; }
std::string_view weight_source_name(WeightSource s) { return s == WeightSource::Core ? "CORE" : "DDR"; }

int64_t box_volume(const Coord& lower, const Coord& upper) {
  int64_t n = 1;
  for (size_t i = 0; i < 4; ++i) {
    if (upper[i] < lower[i]) return 0;
    int64_t extent;
    // Coordinates come from files: saturate rather than overflow.
    if (__builtin_sub_overflow(upper[i], lower[i], &extent) || __builtin_add_overflow(extent, 1, &extent) ||
        __builtin_mul_overflow(n, extent, &n))
      return INT64_MAX;
  }
  return n;
}

const Core* Schedule::core(int64_t id) const {
  for (const auto& c : cores)
    if (c.id == id) return &c;
  return nullptr;
}

const Workload* Schedule::find_workload(int64_t workload_id) const {
  for (const auto& c : cores)
    for (const auto& w : c.workloads)
      if (w.workload_id == workload_id) return &w;
  return nullptr;
}

size_t Schedule::workload_count() const {
  size_t n = 0;
  for (const auto& c : cores) n += c.workloads.size();
  return n;
}

TransferIndex::TransferIndex(const Schedule& s) {
  using K = TransferRef::Kind;
  for (const auto& c : s.cores) {
    for (size_t wi = 0; wi < c.workloads.size(); ++wi) {
      const Workload& w = c.workloads[wi];
      for (size_t i = 0; i < w.ifmap.size(); ++i)
        for (int64_t t : w.ifmap[i].transfer_id) refs_[t].push_back({K::IfmapIn, c.id, wi, i});
      if (w.weight)
        for (int64_t t : w.weight->transfer_id) refs_[t].push_back({K::WeightIn, c.id, wi, 0});
      for (size_t i = 0; i < w.ofmap.size(); ++i) refs_[w.ofmap[i].transfer_id].push_back({K::OfmapOut, c.id, wi, i});
    }
  }
  for (size_t i = 0; i < s.dram.in.size(); ++i)
    refs_[s.dram.in[i].transfer_id].push_back({K::DramStore, kDramCoreId, i, 0});
  for (size_t i = 0; i < s.dram.out.size(); ++i)
    refs_[s.dram.out[i].transfer_id].push_back({K::DramLoad, kDramCoreId, i, 0});
}

void renumber_transfers(Schedule& s, const std::function<int64_t(int64_t)>& f) {
  auto one = [&](int64_t& id) {
    if (id >= 0) id = f(id);
  };
  auto all = [&](std::vector<int64_t>& ids) {
    for (int64_t& id : ids) one(id);
  };
  auto snapshot = [&](WeightBuffer& b) {
    for (auto& e : b.entries) all(e.transfer_id);
  };
  for (auto& c : s.cores)
    for (auto& w : c.workloads) {
      for (auto& b : w.buffer) {
        if (b.transfer_id) all(*b.transfer_id);
        if (b.source)
          for (auto& src : *b.source) one(src.transfer_id);
      }
      for (auto& f_in : w.ifmap) all(f_in.transfer_id);
      for (auto& o : w.ofmap) one(o.transfer_id);
      if (w.weight) all(w.weight->transfer_id);
      snapshot(w.wl0_buffer);
      snapshot(w.wl1_buffer);
    }
  for (auto& st : s.dram.in) {
    one(st.transfer_id);
    if (st.related_ofmap) all(*st.related_ofmap);
  }
  for (auto& ld : s.dram.out) {
    one(ld.transfer_id);
    all(ld.related_ifmap);
  }
  if (s.dram.host)
    for (auto& h : *s.dram.host) {
      one(h.transfer_id);
      all(h.related_ifmap);
      all(h.related_ofmap);
    }
}

const std::vector<TransferRef>& TransferIndex::refs(int64_t transfer_id) const {
  static const std::vector<TransferRef> none;
  auto it = refs_.find(transfer_id);
  return it == refs_.end() ? none : it->second;
}

// ---- structural checks -----------------------------------------------------------

namespace {

std::string coord_text(const Coord& c) {
  return "[" + std::to_string(c[0]) + ", " + std::to_string(c[1]) + ", " + std::to_string(c[2]) + ", " +
         std::to_string(c[3]) + "]";
}

class Checker {
 public:
  Checker(const Schedule& s, const std::string& file) : s_(s), file_(file) {}

  std::vector<std::string> run() {
    if (s_.buffersize <= 0) problem("/buffersize", "must be positive");
    if (s_.top_batch_cut < 1) problem("/top_batch_cut", "must be at least 1");
    if (s_.xlen < 1) problem("/xlen", "must be at least 1");
    if (s_.ylen < 1) problem("/ylen", "must be at least 1");
    for (const auto& c : s_.cores) {
      if (c.id < 0 || c.id >= static_cast<__int128>(s_.xlen) * s_.ylen)
        problem("/" + std::to_string(c.id), "core id outside the " + std::to_string(s_.xlen) + " x " +
                                                std::to_string(s_.ylen) + " mesh");
      for (const auto& w : c.workloads) {
        auto [it, fresh] = workloads_.emplace(w.workload_id, std::make_pair(c.id, &w));
        if (!fresh) dup_ids_.push_back(w.workload_id);
      }
    }
    for (const auto& c : s_.cores)
      for (size_t i = 0; i < c.workloads.size(); ++i)
        check_workload(c, i);
    for (size_t i = 0; i < s_.dram.in.size(); ++i) check_store(i);
    for (size_t i = 0; i < s_.dram.out.size(); ++i) check_load(i);
    return std::move(problems_);
  }

 private:
  void problem(const std::string& pointer, const std::string& what) {
    problems_.push_back(at_pointer(file_, pointer, what));
  }

  void box(const std::string& at, const Coord& lo, const Coord& hi) {
    for (size_t i = 0; i < 4; ++i) {
      if (lo[i] < 0) {
        problem(at, "negative lower coordinate " + coord_text(lo));
        return;
      }
      if (hi[i] < lo[i]) {
        problem(at, "upper " + coord_text(hi) + " below lower " + coord_text(lo));
        return;
      }
    }
  }

  void positive(const std::string& at, int64_t v, const char* what) {
    if (v <= 0) problem(at, std::string(what) + " must be positive, got " + std::to_string(v));
  }

  void destination(const std::string& at, const Destination& d) {
    if (d.type == Endpoint::Dram) {
      if (d.core_id != kDramCoreId) problem(at + "/core_id", "a DRAM destination has core_id -1");
      return;
    }
    if (!s_.core(d.core_id)) {
      problem(at + "/core_id", "no core " + std::to_string(d.core_id) + " in this schedule");
      return;
    }
    if (!d.workload_id) {
      problem(at, "a core destination needs a workload_id");
      return;
    }
    auto it = workloads_.find(*d.workload_id);
    if (it == workloads_.end()) {
      problem(at + "/workload_id", "no workload " + std::to_string(*d.workload_id));
    } else if (it->second.first != d.core_id) {
      problem(at + "/workload_id", "workload " + std::to_string(*d.workload_id) + " is on core " +
                                       std::to_string(it->second.first) + ", not " + std::to_string(d.core_id));
    } else if (d.layer_name && *d.layer_name != it->second.second->layer_name) {
      problem(at + "/layer_name", "workload " + std::to_string(*d.workload_id) + " runs \"" +
                                      it->second.second->layer_name + "\", not \"" + *d.layer_name + "\"");
    }
  }

  void check_workload(const Core& c, size_t wi) {
    const Workload& w = c.workloads[wi];
    const std::string at = "/" + std::to_string(c.id) + "/" + std::to_string(wi);
    if (std::find(dup_ids_.begin(), dup_ids_.end(), w.workload_id) != dup_ids_.end())
      problem(at + "/workload_id", "duplicate workload_id " + std::to_string(w.workload_id));
    if (w.workload_id < 0) problem(at + "/workload_id", "negative workload_id");
    box(at + "/workload", w.lower, w.upper);
    if (w.time < 0) problem(at + "/time", "negative time");
    if (w.ofmap.empty()) problem(at + "/ofmap", "a workload produces at least one ofmap");
    if (w.tile_info.empty()) problem(at + "/tile_info", "a workload has at least one tile");

    __int128 ofmap_bytes = 0;
    for (size_t i = 0; i < w.ofmap.size(); ++i) {
      const Ofmap& o = w.ofmap[i];
      std::string p = at + "/ofmap/" + std::to_string(i);
      box(p, o.lower, o.upper);
      positive(p + "/size", o.size, "size");
      ofmap_bytes += o.size;
      // ofmap coordinates are relative to the workload's region, so each piece fits its extent.
      for (size_t d = 0; d < 4; ++d)
        if (static_cast<__int128>(o.upper[d]) - o.lower[d] > static_cast<__int128>(w.upper[d]) - w.lower[d]) {
          problem(p, "ofmap " + coord_text(o.lower) + ".." + coord_text(o.upper) + " larger than the workload " +
                         coord_text(w.lower) + ".." + coord_text(w.upper));
          break;
        }
      for (size_t j = 0; j < o.destination.size(); ++j)
        destination(p + "/destination/" + std::to_string(j), o.destination[j]);
    }
    if (!w.ofmap.empty() && ofmap_bytes != w.ofmap_size)
      problem(at + "/ofmap_size", "is " + std::to_string(w.ofmap_size) + " but the ofmaps add up to " +
                                      (ofmap_bytes > INT64_MAX ? std::string("more than 2^63") : std::to_string(static_cast<int64_t>(ofmap_bytes))));
    for (size_t i = 0; i < w.ifmap.size(); ++i) {
      const Ifmap& f = w.ifmap[i];
      std::string p = at + "/ifmap/" + std::to_string(i);
      box(p, f.lower, f.upper);
      positive(p + "/size", f.size, "size");
      positive(p + "/align", f.align, "align");
      positive(p + "/bitwidth", f.bitwidth, "bitwidth");
      if (f.transfer_id.empty()) problem(p + "/transfer_id", "an ifmap arrives by at least one transfer");
    }
    if (w.weight) {
      std::string p = at + "/weight";
      box(p, w.weight->lower, w.weight->upper);
      positive(p + "/size", w.weight->size, "size");
      if (w.weight->transfer_id.empty()) problem(p + "/transfer_id", "weights arrive by at least one transfer");
    }
    for (size_t i = 0; i < w.buffer.size(); ++i) {
      const BufferTensor& b = w.buffer[i];
      std::string p = at + "/buffer/" + std::to_string(i);
      box(p, b.lower, b.upper);
      positive(p + "/size", b.size, "size");
      positive(p + "/align", b.align, "align");
      positive(p + "/bitwidth", b.bitwidth, "bitwidth");
      if (b.address < 0 || b.address > s_.buffersize || b.size > s_.buffersize - b.address)
        problem(p + "/address", "tensor at " + std::to_string(b.address) + " of " + std::to_string(b.size) +
                                    " bytes outside the " + std::to_string(s_.buffersize) + "-byte buffer");
      if (b.source)
        for (size_t j = 0; j < b.source->size(); ++j) {
          const Source& src = (*b.source)[j];
          std::string sp = p + "/source/" + std::to_string(j);
          box(sp, src.lower, src.upper);
          if ((src.type == Endpoint::Dram) != (src.core_id == kDramCoreId))
            problem(sp + "/core_id", "DRAM sources have core_id -1, core sources a core id");
        }
    }
    for (const auto* wb : {&w.wl0_buffer, &w.wl1_buffer}) {
      const char* name = wb == &w.wl0_buffer ? "/wl0_buffer/" : "/wl1_buffer/";
      for (size_t i = 0; i < wb->entries.size(); ++i) {
        const WeightBufferEntry& e = wb->entries[i];
        std::string p = at + name + std::to_string(i);
        if (e.lower && e.upper) box(p, *e.lower, *e.upper);
        positive(p + "/size", e.size, "size");
        if (e.address < 0) problem(p + "/address", "negative address");
      }
    }
    for (size_t i = 0; i < w.ring_buffer_info.size(); ++i) {
      const auto& r = w.ring_buffer_info[i];
      if (r[0] < 0 || r[1] <= r[0] || r[1] > s_.buffersize)
        problem(at + "/ring_buffer_info/" + std::to_string(i),
                "region [" + std::to_string(r[0]) + ", " + std::to_string(r[1]) + ") not inside the " +
                    std::to_string(s_.buffersize) + "-byte buffer");
    }
    for (size_t i = 0; i < w.tile_info.size(); ++i) {
      const Tile& t = w.tile_info[i];
      std::string p = at + "/tile_info/tile_num_" + std::to_string(i);
      box(p + "/ofmap_lower", t.ofmap_lower, t.ofmap_upper);
      box(p + "/ifmap_lower", t.ifmap_lower, t.ifmap_upper);
      if (t.ifmap_lower2) box(p + "/ifmap_lower2", *t.ifmap_lower2, *t.ifmap_upper2);
      for (size_t d = 0; d < 4; ++d)
        if (t.ofmap_lower[d] < w.lower[d] || t.ofmap_upper[d] > w.upper[d]) {
          problem(p + "/ofmap_lower", "tile " + coord_text(t.ofmap_lower) + ".." + coord_text(t.ofmap_upper) +
                                          " outside the workload " + coord_text(w.lower) + ".." + coord_text(w.upper));
          break;
        }
      if (!std::isfinite(t.single_tile_time_pred) || t.single_tile_time_pred < 0)
        problem(p + "/single_tile_time_pred", "must be a non-negative number");
      // Negative padding only on the far side of a window wholly in the
      // padding (it reads the input's edge row or column as its region):
      // region and padding span at least one row and column.
      for (size_t a = 0; a < 2; ++a) {
        const int64_t before = t.tile_padding_tblr[2 * a], after = t.tile_padding_tblr[2 * a + 1];
        const int64_t extent = t.ifmap_upper[2 + a] - t.ifmap_lower[2 + a] + 1;
        if ((before < 0 || after < 0) && !(before < 0 ? after > 0 && -before >= extent : before > 0 && -after >= extent)) {
          problem(p + "/tile_padding_tblr", "negative padding (allowed only past the far edge of a region that a window wholly in the "
                                            "padding reads, with positive padding on the other side)");
          break;
        }
      }
    }
  }

  void check_store(size_t i) {
    const DramStore& d = s_.dram.in[i];
    std::string p = "/-1/in/" + std::to_string(i);
    box(p, d.lower, d.upper);
    auto it = workloads_.find(d.workload_id);
    if (it == workloads_.end()) problem(p + "/workload_id", "no workload " + std::to_string(d.workload_id));
    else if (it->second.first != d.core_id)
      problem(p + "/core_id", "workload " + std::to_string(d.workload_id) + " is on core " +
                                  std::to_string(it->second.first));
  }

  void check_load(size_t i) {
    const DramLoad& l = s_.dram.out[i];
    std::string p = "/-1/out/" + std::to_string(i);
    box(p, l.lower, l.upper);
    positive(p + "/size", l.size, "size");
    if (l.destination.empty()) problem(p + "/destination", "a DRAM load needs a destination");
    for (size_t j = 0; j < l.destination.size(); ++j) {
      std::string dp = p + "/destination/" + std::to_string(j);
      if (l.destination[j].type == Endpoint::Dram) problem(dp + "/type", "a DRAM load goes to a core");
      else destination(dp, l.destination[j]);
    }
  }

  const Schedule& s_;
  const std::string& file_;
  std::map<int64_t, std::pair<int64_t, const Workload*>> workloads_;  // id -> (core, workload)
  std::vector<int64_t> dup_ids_;
  std::vector<std::string> problems_;
};

}  // namespace

std::vector<std::string> check(const Schedule& s, const std::string& file) { return Checker(s, file).run(); }

void validate(const Schedule& s, const std::string& file) {
  auto problems = check(s, file);
  if (!problems.empty()) {
    std::string msg = problems.front();
    if (problems.size() > 1) msg += " (and " + std::to_string(problems.size() - 1) + " more problems)";
    throw_input_error(msg);
  }
}

}  // namespace cct::sir
