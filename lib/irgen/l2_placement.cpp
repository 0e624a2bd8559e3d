// irgen pass 4, L2 placement: addresses for every L2 tensor, first fit in
// order of first use (or largest first when that fragments L2), stores'
// tails and early loads' heads shrunk where they keep something else from
// fitting, tensors kept across segments spilled through DRAM when L2 runs
// out, and a refusal naming the fullest position when nothing helps.
#include "irgen/generator.hpp"
#include "irgen/overlap.hpp"

namespace cct::irgen::detail {

std::vector<int> Generator::place_activations() {
  // First fit in order of first use; if that fragments L2 too much, the
  // largest tensors first.
  std::vector<int> failed = place_activations(false);
  return failed.empty() ? failed : place_activations(true);
}

std::vector<int> Generator::place_activations(bool largest_first) {
  l2_.clear();
  std::vector<int> order, failed;
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i].size > 0) order.push_back(int(i));
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    const auto &a = tensors_[size_t(x)], &b = tensors_[size_t(y)];
    if (largest_first) return std::make_tuple(a.core, -a.size, a.start) < std::make_tuple(b.core, -b.size, b.start);
    return std::tie(a.core, a.start) < std::tie(b.core, b.start);
  });
  for (int i : order) {
    L2Tensor& t = tensors_[size_t(i)];
    auto it = l2_.try_emplace(t.core, a_.core.l2_bytes).first;
    // In order of first use no later tensor of the core is live before this
    // one starts: the blocks that end before it are out of every search.
    if (!largest_first) it->second.set_aside_before(t.start);
    const int64_t bytes = std::max(t.size, t.footprint);
    int64_t addr = it->second.find(t.start, t.end, bytes, arch::kL2AllocationAlignBytes, t.lowest);
    if (addr < 0) {
      if (failed.empty())
        place_error_ = tensor_label(t) + " (" + std::to_string(t.size) + " bytes, live over " +
                       std::to_string(t.end - t.start + 1) + " workloads) does not fit in the L2 of core " +
                       std::to_string(t.core) + " next to the tensors live with it (" + std::to_string(a_.core.l2_bytes) +
                       " bytes); split the layer or batch in the mapping";
      failed.push_back(i);  // the rest is still placed: failures elsewhere get their remedies in the same round
      continue;
    }
    t.address = addr;
    it->second.add(t.start, t.end, addr, bytes);
  }
  for (auto& [core, blocks] : l2_) blocks.restore();  // assign() searches them from the start
  return failed;
}

// What makes room for the tensors that found none, before connecting again:
// kept tensors through DRAM (spill_for), else, when none is left to spill
// there, the overlaps with DRAM cut short (drop_overlaps): a spill's store
// and reload overlap compute in their turn, a lost overlap waits for its
// transfer (measured: ResNet-50 b16 on zebu-1core 21.46M cycles the other
// way round, 20.79M this way). Remedies for the first failure,
// then for each later one whose lifetime no remedy of this round touched
// (a round per failure would reconnect the whole program each time:
// thousands of rounds at batch 16). Nothing to remedy for the first: the
// mapping is refused.
void Generator::remedy(const std::vector<int>& failed) {
  std::vector<Span> touched, spilled;  // failures remedied, tensors spilled
  auto live_at = [](const std::vector<Span>& spans, int core, int lo, int hi) {
    return std::any_of(spans.begin(), spans.end(), [&](const Span& s) { return s.core == core && s.lo <= hi && lo <= s.hi; });
  };
  for (int f : failed) {
    const L2Tensor& t = tensors_[size_t(f)];
    if (live_at(touched, t.core, t.start, t.end)) continue;
    // A tensor spilled this round and live where this one is fullest may
    // have made its room.
    const auto [q, need] = fullest(f);
    if (live_at(spilled, t.core, q, q)) continue;
    const size_t before = spilled.size();
    spill_for(f, q, need, spilled);
    if (spilled.size() > before || drop_overlaps(t.core, q, need)) touched.push_back({t.core, t.start, t.end});
    else if (touched.empty()) refuse(f);  // else perhaps resolved by this round's remedies (spills, overlaps cut short)
  }
}

// Shrinks the overlaps live at position q of `core` (store tails ending
// before q, early loads starting after it), the largest first, until the
// bytes live there fit L2 (at least one: L2 may be fragmented). False when
// none is live there.
bool Generator::drop_overlaps(int core, int q, int64_t need) {
  std::vector<std::pair<int64_t, size_t>> live;  // (bytes, tensor)
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const L2Tensor& t = tensors_[i];
    if (t.core != core || t.size == 0 || t.start > q || t.end < q) continue;
    const bool in_tail = t.store_tail && wls_[size_t(t.storing_wl)].pos < q;
    const bool in_head = t.early_load && q < t.reader;
    if (in_tail || in_head) live.push_back({std::max(t.size, t.footprint), i});
  }
  std::stable_sort(live.begin(), live.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  bool any = false;
  for (const auto& [bytes, i] : live) {
    if (any && need <= a_.core.l2_bytes) break;
    const L2Tensor& t = tensors_[i];
    if (t.early_load && q < t.reader) {
      int& first = head_limit_.try_emplace(t.load_transfer, q + 1).first->second;
      first = std::max(first, q + 1);
    } else {
      int& last = tail_limit_.try_emplace(t.storing_wl, q - 1).first->second;
      last = std::min(last, q - 1);
    }
    need -= bytes;
    any = true;
  }
  return any;
}

int64_t Generator::compute_cycles(int id) {
  if (compute_cycles_.empty()) compute_cycles_.assign(wls_.size(), -1);
  int64_t& c = compute_cycles_[size_t(id)];
  if (c < 0) {
    const Wl& w = wls_[size_t(id)];
    c = layers_[size_t(w.layer)].pe ? tiler_.plan(conv_shape(w, false), 0).cycles : 0;
  }
  return c;
}

int Generator::load_head(int core, int pos, int earliest, int64_t bytes, int64_t transfer) {
  const auto limit = head_limit_.find(transfer);
  if (limit != head_limit_.end()) earliest = std::max(earliest, limit->second);
  return covering(core, pos, -1, earliest, bytes);
}

int Generator::covering(int core, int pos, int step, int bound, int64_t bytes) {
  const auto& order = per_core_.at(core);
  return irgen::covering(
      a_, pos, step, bound, bytes, [&](int p) { return compute_cycles(order[size_t(p)]); }, [](int) { return true; });
}

void Generator::refuse(int failed) const {
  const L2Tensor& t = tensors_[size_t(failed)];
  const int seg = wls_[size_t(per_core_.at(t.core)[size_t(fullest(failed).first)])].segment;
  throw CapacityError(at_pointer(o_.mapping_file, "/segments/" + std::to_string(seg), refusal(failed)), seg);
}

// The outputs kept in L2 for a later segment that go through DRAM instead
// when `failed` finds no room (the rule gemini prices, spill.hpp): the one
// live at `q`, the fullest position of its lifetime with `need` bytes, that
// lives longest, then the next, until the bytes left there fit L2 (as
// many rounds of one spill each would choose them; at least one, as L2 may
// be fragmented); if none is live at `q`, one live with it anywhere. Their
// spans are added to `spilled`.
void Generator::spill_for(int failed, int q, int64_t need, std::vector<Span>& spilled) {
  const L2Tensor& f = tensors_[size_t(failed)];
  std::vector<KeptTensor> kept;
  std::map<int, int64_t> bytes;  // by producer workload
  for (const auto& t : tensors_) {
    if (t.core != f.core || t.size == 0 || t.producer_wl < 0 || !t.cross_segment || spill_.count(t.producer_wl)) continue;
    kept.push_back({t.start, t.end, t.producer_wl});
    bytes[t.producer_wl] += std::max(t.size, t.footprint);
  }
  auto spill = [&](int id) {
    auto k = std::find_if(kept.begin(), kept.end(), [&](const KeptTensor& c) { return c.id == id; });
    spilled.push_back({f.core, k->start, k->end});
    spill_.insert(id);
    kept.erase(k);
  };
  const size_t before = spilled.size();
  for (int v; (spilled.size() == before || need > a_.core.l2_bytes) && (v = spill_choice(kept, q, q)) >= 0;) {
    need -= bytes[v];
    spill(v);
  }
  if (spilled.size() == before)
    if (const int v = spill_choice(kept, f.start, f.end); v >= 0) spill(v);
}

std::pair<int, int64_t> Generator::fullest(int failed) const {
  const L2Tensor& f = tensors_[size_t(failed)];
  // Bytes entering and leaving at each position of the lifetime: one pass
  // over the tensors, however long the lifetime.
  std::vector<int64_t> delta(size_t(f.end - f.start) + 2, 0);
  for (const auto& t : tensors_) {
    if (t.core != f.core || t.end < f.start || t.start > f.end) continue;
    const int64_t b = std::max(t.size, t.footprint);
    delta[size_t(std::max(t.start, f.start) - f.start)] += b;
    delta[size_t(std::min(t.end, f.end) - f.start) + 1] -= b;
  }
  int64_t need = -1, sum = 0;
  int at = f.start;
  for (int q = f.start; q <= f.end; ++q) {
    sum += delta[size_t(q - f.start)];
    if (sum > need) need = sum, at = q;
  }
  return {at, need};
}

// Why nothing more can be spilled for `failed`: the bytes live with it at its
// fullest position, against L2.
std::string Generator::refusal(int failed) const {
  const L2Tensor& f = tensors_[size_t(failed)];
  const auto [at, need] = fullest(failed);
  const int wid = per_core_.at(f.core)[size_t(at)];
  const Wl& w = wls_[size_t(wid)];
  const std::string who = "workload " + std::to_string(wid) + " of \"" + layers_[size_t(w.layer)].fir->name +
                          "\" on core " + std::to_string(f.core) + " (its inputs, output and the tensors live with it)";
  if (need > a_.core.l2_bytes)
    return over_capacity(who, need, a_.core.l2_bytes, "L2", a_) +
           "; nothing kept for a later segment is left to spill: split the layer or batch in the mapping (more batch "
           "groups, row groups or cores)";
  return place_error_ + " (" + std::to_string(need) + " bytes live there in all: L2 is too fragmented)";
}

void Generator::reset_connections() {
  tensors_.clear();
  weights_.clear();
  dram_in_.clear();
  dram_out_.clear();
  host_loads_.assign(host_.steps.size(), {});
  transfers_of_layer_.assign(layers_.size(), 0);
  for (auto& w : wls_) {
    for (auto& u : w.inputs) u.pieces.clear();
    w.out_transfer = -1;
    w.out_buffer = -1;
    w.destinations.clear();
    w.sends.clear();
    w.to_dram = false;
    w.dram_reloads.clear();
    w.weight = -1;
  }
}

}  // namespace cct::irgen::detail
