// irgen's internals, shared by its passes: the network, workloads, L2
// tensors and weight loads as irgen models them, the first-fit allocator,
// and the Generator whose state the passes fill in, one file per pass:
//
//   network.cpp       the FIR's layers as the mapping places them (LayerModel)
//   workloads.cpp     each layer part per batch group and stripe (Wl), its input regions
//   connect.cpp       producers to consumers: transfers, DRAM traffic, L2 tensors
//   l2_placement.cpp  L2 addresses first fit, with spills and overlaps shrunk for room
//   weights.cpp       weight paths (weight buffer or L2), loads and issue positions
//   tiles.cpp         intra-core tiles of PE, vector and data movement workloads
//   emit.cpp          the Scheduler IR: workloads, buffer snapshots, DRAM traffic
//
// generate.cpp runs them in order (Generator::run). Not an installed header.
#pragma once

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "fir/host.hpp"
#include "arch/datapath.hpp"
#include "fir/resize.hpp"
#include "interp/int8_ops.hpp"
#include "irgen/irgen.hpp"
#include "irgen/spill.hpp"
#include "irgen/tiling.hpp"
#include "irgen/weight_runs.hpp"
#include "mapping/mapping_fir.hpp"
#include "support/error.hpp"
#include "support/int_math.hpp"
#include "timing/timing.hpp"

namespace cct::irgen::detail {

using sir::Coord;
using Dims = std::array<int64_t, 4>;

struct Box {
  Coord lo{}, hi{};
  bool empty() const {
    for (int i = 0; i < 4; ++i)
      if (hi[i] < lo[i]) return true;
    return false;
  }
  Dims extent() const { return {hi[0] - lo[0] + 1, hi[1] - lo[1] + 1, hi[2] - lo[2] + 1, hi[3] - lo[3] + 1}; }
  bool operator==(const Box&) const = default;
};
inline Box intersect(const Box& a, const Box& b) {
  Box r;
  for (int i = 0; i < 4; ++i) r.lo[i] = std::max(a.lo[i], b.lo[i]), r.hi[i] = std::min(a.hi[i], b.hi[i]);
  return r;
}
inline Coord relative(const Coord& c, const Coord& origin) {
  return {c[0] - origin[0], c[1] - origin[1], c[2] - origin[2], c[3] - origin[3]};
}
// The box the chip holds a tensor in (token tensors: tokens are pixels).
inline Dims dims4(const fir::Shape& s) {
  auto b = fir::chip_box(s);
  return Dims{b[0], b[1], b[2], b[3]};
}
inline int dtype_size(const std::vector<std::string>& v, size_t i) {
  int b = i < v.size() ? fir::dtype_bytes(v[i]) : 1;
  return b > 0 ? b : 1;
}

// ---- The network as irgen needs it ----------------------------------------

struct InputRef {
  int producer = -1;        // index into Net::layers, -1 for a graph input
  std::string graph_input;  // "input1" when producer == -1 (or a host layer's name: its result in DRAM)
  int host_step = -1;       // the host step whose result it is (fir::HostPlan), -1 otherwise
  size_t fir_index = 0;     // position in the consumer's input_shape / input_dtype
  Dims dims{};              // the consumer's view of the tensor
  int bytes = 1;
};

struct LayerModel {
  const fir::Layer* fir = nullptr;
  bool pe = false;
  bool move = false;  // a data movement layer (concat, slice, gather): its inputs' pieces land in its output
  fir::PeConv conv;  // PE layers: the convolution the array runs (fir::pe_conv)
  Dims out{};
  int out_bytes = 1;
  std::vector<InputRef> inputs;  // activations, in input order
  bool graph_output = false;
  int segment = -1, position = -1;  // where the mapping places it
  const mapping::LayerMapping* map = nullptr;
};

inline bool is_pe_op(fir::Op op) { return op == fir::Op::Conv2d || op == fir::Op::Dense || op == fir::Op::MatMul; }
inline bool is_pool_op(fir::Op op) { return op == fir::Op::MaxPool2d || op == fir::Op::AvgPool2d; }

// ---- Workloads and tensors ----------------------------------------------------

struct Piece {  // one delivery of input data to a workload
  // Local: read in the producer's tensor; Copy: copied from the producer's
  // tensor on this core into the consumer's (dt_cal); Remote: sent by
  // another core; Dram: stored by the producer and loaded back.
  enum Kind { Local, Copy, Remote, Dram, GraphInput } kind = Local;
  int producer_wl = -1;  // producing workload (Local, Remote, Dram)
  Box region;            // layer coordinates of the producer (graph input coordinates for GraphInput)
  int64_t transfer = -1; // the transfer id the consumer lists
  int buffer = -1;       // L2 tensor on the consumer's core holding it
  int64_t bytes = 0;     // bytes moved to deliver it (Remote, Dram, GraphInput)
  int host_step = -1;    // GraphInput: the host step whose result it loads
};

struct InputUse {
  Box region;  // needed region, in the producer's (or graph input's) coordinates
  sir::Padding pad{};
  std::vector<Piece> pieces;
};

struct Wl {
  int id = 0, layer = 0, core = 0, segment = 0, group = 0, pos = 0;
  // A part whose weights do not fit the weight buffer is computed as several
  // workloads, one per run of output channels whose weights do ("siblings",
  // consecutive on the core); they write one output tensor. `leader` is the
  // first sibling (the workload itself when the part is not split).
  int leader = 0;
  // One of several runs of a part computed again for every batch group or
  // stripe: its weights are loaded for this group alone.
  bool group_weights = false;
  Box out;
  std::vector<InputUse> inputs;
  // Data movement workloads: the pieces of the output and where each comes
  // from (fir::move_pieces), and per input whether its pieces are delivered
  // straight into the output tensor (else the input is read, or assembled,
  // as any other and each piece copied or requantized from there).
  std::vector<fir::MovePiece> moves;
  std::vector<char> direct;
  int64_t out_transfer = -1;
  int out_buffer = -1;
  std::vector<sir::Destination> destinations;  // of the whole output (ofmap piece 0)
  struct Send {  // a region of the output sent to one workload on another core
    int64_t transfer = -1;
    Box region;  // layer coordinates
    sir::Destination destination;
  };
  std::vector<Send> sends;  // ofmap pieces 1, 2, ...
  bool to_dram = false;
  std::vector<int64_t> dram_reloads;  // DRAM load ids that read this output back
  int weight = -1;                    // index into weights
  int64_t vp_time = 0;                // vector-processor workloads: predicted cycles
  sir::Workload sir;                  // filled at the end
};

struct L2Tensor {
  int core = 0;
  int start = 0, end = 0;  // positions on the core, inclusive
  int64_t size = 0, address = -1;
  int bytes = 1;  // element size
  Box box;        // region held (layer coordinates)
  sir::TensorType type = sir::TensorType::Ifmap;
  std::optional<std::string> layer_name;
  std::vector<sir::Source> source;
  std::vector<int64_t> transfers;
  int64_t order = 0;
  int weight = -1;  // weight tensors: index into weights
  int64_t lowest = 0;          // reads with top/left padding start this many bytes before it
  int64_t footprint = 0;       // bytes reserved in L2 when more than `size` (weight bursts)
  int producer_wl = -1;        // output buffers: the producing workload
  bool cross_segment = false;  // read by a workload of a later segment
  int reader = -1;             // early receive buffers: the position of the first reader
  // Overlap: an output stored to DRAM stays live over the workloads that
  // compute while the store runs (its tail); an activation loaded from DRAM
  // (a network input, an earlier segment's store) is live from a workload
  // before its reader, so the load runs while those compute (its head).
  // Both cost L2; where they keep something else from fitting they shrink.
  // (A buffer loaded early that an element-wise add writes over may also be
  // stored with a tail.)
  bool store_tail = false, early_load = false;
  int storing_wl = -1;        // the tail's workload (tail_limit_)
  int64_t load_transfer = -1;  // the head's load (head_limit_)
};

struct WeightLoad {
  int core = 0, layer = 0;
  int64_t k_lo = 0, k_hi = 0;
  int first = 0, last = 0;  // positions of the workloads using it
  std::vector<int> workloads;
  int64_t transfer = -1;
  int64_t bytes = 0;     // in DRAM / L2 (SIR size)
  int64_t rows = 0;      // WL0 rows when loaded whole (DDR)
  bool direct = true;    // DRAM -> WL0; false: DRAM -> L2, streamed per tile
  int issue = 0;         // position of the workload that issues the load
  int64_t wl0_address = -1;  // DDR entry, or the tile slots (CORE)
  int64_t wl0_rows = 0;
  int l2_tensor = -1;    // CORE: the L2 copy
  int64_t order = 0;
  int64_t tile_k = 0;    // CORE: K of one tile
  int64_t slots = 2;     // CORE: WL0 slots (1 when one tile holds all)
  int64_t per_k = 0;     // bytes of one output channel
  int64_t footprint = 0; // L2 bytes the weight DMA writes (rows rounded to bursts), >= bytes
  int64_t l2_address = -1;
  bool fits_wl0 = false;
  int64_t direct_time = 0, stream_time = 0;  // predicted cycles of its workloads on each path
};

// First-fit placement of [start, end] x size blocks in an address space.
// Blocks are kept sorted by address, so a search is one allocation-free scan
// (irgen calls it for every candidate issue position of every buffer).
class Allocator {
 public:
  explicit Allocator(int64_t capacity) : capacity_(capacity) {}
  // Lowest aligned address free over the whole interval, -1 if none.
  // `lowest`: the smallest address allowed.
  int64_t find(int start, int end, int64_t size, int64_t align, int64_t lowest = 0) const {
    int64_t a = round_up(lowest, align);
    for (const auto& b : blocks_) {
      if (b.start > end || start > b.end) continue;  // not live at the same time
      if (a + size <= b.address) break;
      a = std::max(a, round_up(b.address + b.size, align));
    }
    return a + size <= capacity_ ? a : -1;
  }
  void add(int start, int end, int64_t address, int64_t size) {
    Block b{start, end, address, size};
    auto at = std::upper_bound(blocks_.begin(), blocks_.end(), b,
                               [](const Block& x, const Block& y) { return x.address < y.address; });
    blocks_.insert(at, b);
    min_end_ = std::min(min_end_, end);
  }
  // Drops the blocks that end before `t` when no later find() starts before
  // it (find() skips them anyway; at large batch a core holds thousands).
  void forget_before(int t) {
    if (t <= forgotten_) return;
    forgotten_ = t;
    blocks_.erase(std::remove_if(blocks_.begin(), blocks_.end(), [t](const Block& b) { return b.end < t; }),
                  blocks_.end());
  }
  // The same for a while: the blocks set aside come back with restore()
  // (placing in order of start, then searching again from the beginning).
  // find() gives the same address either way (blocks of one address may
  // come back in another order, which find() does not see).
  void set_aside_before(int t) {
    if (t <= min_end_) return;  // no block ends before t
    size_t kept = 0;
    min_end_ = std::numeric_limits<int>::max();
    for (const Block& b : blocks_)
      if (b.end < t) aside_.push_back(b);
      else blocks_[kept++] = b, min_end_ = std::min(min_end_, b.end);
    blocks_.resize(kept);
  }
  void restore() {
    if (aside_.empty()) return;
    auto by_address = [](const Block& x, const Block& y) { return x.address < y.address; };
    std::stable_sort(aside_.begin(), aside_.end(), by_address);
    const size_t mid = blocks_.size();
    blocks_.insert(blocks_.end(), aside_.begin(), aside_.end());
    std::inplace_merge(blocks_.begin(), blocks_.begin() + std::ptrdiff_t(mid), blocks_.end(), by_address);
    aside_.clear();
    min_end_ = std::numeric_limits<int>::min();
  }

 private:
  struct Block {
    int start, end;
    int64_t address, size;
  };
  int64_t capacity_;
  int forgotten_ = 0;
  std::vector<Block> blocks_;  // by address
  std::vector<Block> aside_;   // set_aside_before()
  int min_end_ = std::numeric_limits<int>::min();  // of blocks_ after the last set_aside_before (a lower bound)
};

// The smallest p in [lo, hi] with fits(p), hi + 1 if none, for a `fits`
// that holds from some point on (a binary search).
template <class Fits>
int earliest_room(int lo, int hi, Fits fits) {
  int first = hi + 1;
  while (lo <= hi) {
    const int mid = lo + (hi - lo) / 2;
    if (fits(mid)) first = mid, hi = mid - 1;
    else lo = mid + 1;
  }
  return first;
}

class Generator {
 public:
  Generator(const fir::Graph& g, const mapping::Mapping& m, const arch::Architecture& a, const Options& o,
            int64_t* estimate_out)
      : g_(g), m_(m), a_(a), o_(o), tiler_(a), estimate_out_(estimate_out) {}

  // The passes in order (generate.cpp).
  sir::Schedule run();

 private:
  // Transfers, L2 placement, VP tiles and weight loads (retried with spills
  // and with weights streamed from L2 when memory runs out; generate.cpp).
  void connect_and_place();

  [[noreturn]] void fail_mapping(const std::string& pointer, const std::string& what) const {
    throw Error(kExitInvalidInput, at_pointer(o_.mapping_file, pointer, what));
  }
  [[noreturn]] void fail_fir(const std::string& layer, const std::string& what) const {
    throw Error(kExitInvalidInput, at_pointer(o_.fir_file, "/" + layer, what));
  }

  // ---- network
  void build_network();
  int resolve_producer(const std::string& name, std::string* graph_input, int* host_step) const;
  int64_t host_step_id(int k) const { return int64_t(layers_.size() + size_t(k)) * transfer_stride_; }
  std::vector<sir::HostStep> host_steps() const;
  // ---- workloads
  void build_workloads();
  int64_t weight_bytes_per_k(const LayerModel& L) const;
  int64_t wl0_rows(int64_t kcount, int64_t per_k) const;
  int64_t k_block(const LayerModel& L) const;
  std::vector<std::pair<int64_t, int64_t>> wl0_chunks(const LayerModel& L, int64_t k_lo, int64_t k_hi, bool once) const;
  InputUse input_use(const LayerModel& L, const InputRef& in, const Box& out) const;
  void connect();
  // (consumer core, segment, producer layer, window) -> the L2 tensor holding the window and its pieces
  using Assembled = std::map<std::tuple<int, int, int, Coord, Coord>, std::pair<int, std::vector<Piece>>>;
  void connect_input(Wl& w, size_t i, Assembled& assembled);
  void connect_direct(Wl& w, size_t i);
  std::vector<std::vector<int64_t>> row_stripes(const mapping::Segment& seg) const;
  // ---- memory
  // The tensors that found no room, in the order they were placed (empty:
  // all placed; place_error_ says more of the first).
  std::vector<int> place_activations();
  std::vector<int> place_activations(bool largest_first);
  struct Span {
    int core, lo, hi;
  };
  void remedy(const std::vector<int>& failed);
  void spill_for(int failed, int q, int64_t need, std::vector<Span>& spilled);
  std::string refusal(int failed) const;
  // What an L2 tensor holds, named by its layer, for refusals. The weights
  // reserved with the activations (second attempt) carry neither a producer
  // nor a source: they were "a tensor".
  std::string tensor_label(const L2Tensor& t) const {
    if (t.weight >= 0) return "the weights of \"" + layers_[size_t(weights_[size_t(t.weight)].layer)].fir->name + "\"";
    if (t.producer_wl >= 0) return "the output of \"" + layers_[size_t(wls_[size_t(t.producer_wl)].layer)].fir->name + "\"";
    if (!t.source.empty() && t.source[0].layer_name) return "the output of \"" + *t.source[0].layer_name + "\"";
    if (t.layer_name) return "a tensor of \"" + *t.layer_name + "\"";
    return "a tensor";
  }
  // The position in `failed`'s lifetime where the tensors of its core (it
  // included) take the most L2, and those bytes.
  std::pair<int, int64_t> fullest(int failed) const;
  [[noreturn]] void refuse(int failed) const;
  void reset_connections();
  std::set<int> spill_;  // producer workloads whose outputs reach later segments through DRAM
  // Overlaps shrunk for room: the last position a store's tail may reach
  // (by storing workload), the first an early load's head may start at (by
  // the load's transfer id).
  std::map<int, int> tail_limit_;
  std::map<int64_t, int> head_limit_;
  bool drop_overlaps(int core, int q, int64_t need);
  // Predicted compute cycles of a workload (PE workloads; 0 for the rest),
  // what a store or load may overlap.
  int64_t compute_cycles(int id);
  std::vector<int64_t> compute_cycles_;
  // The first position of an activation load's buffer for the reader at
  // `pos` (>= `earliest`): early enough that the workloads before the reader
  // cover the load's time, within head_limit_.
  int load_head(int core, int pos, int earliest, int64_t bytes, int64_t transfer);
  // From position `pos` of `core`, stepping by `step` (+1 or -1) but not
  // past `bound`, the position where the workloads stepped over cover a
  // DRAM transfer of `bytes` (their predicted compute against the bytes at
  // the DRAM rate): a store's tail, an early load's head.
  int covering(int core, int pos, int step, int bound, int64_t bytes);
  std::string place_error_;
  bool plan_weights();  // false when some weights find no room (assign_error_)
  void size_weight(WeightLoad& wt);
  bool reserve_weights_ = false;  // weights that must go through L2 are placed with the activations
  int assign(const std::vector<char>& direct, bool commit);
  int64_t estimate(const std::vector<char>& direct);
  // estimate()'s view of the workloads' inputs, the same for every candidate
  // of one plan_weights search: per workload its DRAM loads in order, and the
  // set of workloads it receives from (one set shared by every reader of the
  // same producers: on a 256-core mesh a layer's 256 workloads each receive
  // from the previous layer's 256, and walking every piece of every input was
  // most of irgen's time).
  struct EstimateLoad {
    bool graph_input = false;  // else stored by producer_wl and loaded back
    int producer_wl = -1, host_step = -1;
    int64_t bytes = 0;
  };
  struct EstimateInputs {
    std::vector<std::vector<EstimateLoad>> loads;  // per workload id
    std::vector<int> senders;                      // per workload id: its set in `sets`, -1: none
    std::vector<std::vector<int>> sets;            // producer workload ids, ascending
  };
  EstimateInputs estimate_inputs() const;
  EstimateInputs estimate_inputs_;
  std::string assign_error_;
  int assign_segment_ = 0;  // the segment of the weights assign_error_ names
  int64_t estimated_cycles_ = 0;
  bool strict_lw_ = true;
  // ---- tiles and output
  ConvShape conv_shape(const Wl& w, bool weights_in_l2) const;
  void tile_pe(Wl& w);
  void tile_vp(Wl& w);
  void tile_move(Wl& w);
  sir::Schedule emit();
  sir::BufferTensor buffer_entry(const L2Tensor& t, int pos, const Wl& w, int64_t id) const;

  // Transfer ids are numbered layer by layer, layer * stride + n, so an edit
  // of one layer's mapping renumbers only the transfers of the layers it
  // touches and the Scheduler IR diff stays local.
  int64_t new_transfer(int layer) {
    int64_t n = transfers_of_layer_[size_t(layer)]++;
    return int64_t(layer) * transfer_stride_ + n;
  }
  std::string where(const Wl& w) const {
    const auto& L = layers_[size_t(w.layer)];
    return "/segments/" + std::to_string(L.segment) + "/layers/" + std::to_string(L.position);
  }

  const fir::Graph& g_;
  const mapping::Mapping& m_;
  const arch::Architecture& a_;
  const Options& o_;
  Tiler tiler_;
  int64_t* estimate_out_ = nullptr;

  std::vector<LayerModel> layers_;
  std::map<std::string, int, std::less<>> layer_index_;
  std::vector<Wl> wls_;                            // by workload id
  std::map<int, std::vector<int>> per_core_;       // core -> workload ids in order
  std::vector<std::vector<int>> layer_wls_;        // layer -> workload ids
  std::vector<L2Tensor> tensors_;
  std::vector<WeightLoad> weights_;
  std::vector<sir::DramStore> dram_in_;
  std::vector<sir::DramLoad> dram_out_;            // weights first, then activations (sorted at the end)
  fir::HostPlan host_;                             // the host's layers: pass-throughs and steps
  // host step -> the loads of its results (transfer id, bytes the host writes for it)
  std::vector<std::vector<std::pair<int64_t, int64_t>>> host_loads_;
  std::map<int, Allocator> l2_;                     // core -> L2 blocks placed so far
  std::vector<int64_t> transfers_of_layer_;  // layer -> transfers numbered so far
  // Ids are drafted with a stride no layer reaches and renumbered once the
  // counts are known (run), so that connecting and placing run once.
  static constexpr int64_t kDraftStride = 1000000000;
  int64_t transfer_stride_ = kDraftStride;
  int64_t next_order_ = 1;
};

}  // namespace cct::irgen::detail
