// Mapping -> Scheduler IR. See irgen.hpp for the outline; the conventions
// follow the reference schedules (formats/Scheduler_IR_Format.md): whole
// tensors keep their layer coordinates in L2, channels padded to the L2
// alignment, weights as [0, k, c, kh*kw] with per-output-channel extras,
// one ofmap piece per workload naming every consumer, DRAM traffic in "-1".
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

namespace cct::irgen {
namespace {

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
Box intersect(const Box& a, const Box& b) {
  Box r;
  for (int i = 0; i < 4; ++i) r.lo[i] = std::max(a.lo[i], b.lo[i]), r.hi[i] = std::min(a.hi[i], b.hi[i]);
  return r;
}
Coord relative(const Coord& c, const Coord& origin) {
  return {c[0] - origin[0], c[1] - origin[1], c[2] - origin[2], c[3] - origin[3]};
}
// The box the chip holds a tensor in (token tensors: tokens are pixels).
Dims dims4(const fir::Shape& s) {
  auto b = fir::chip_box(s);
  return Dims{b[0], b[1], b[2], b[3]};
}
int dtype_size(const std::vector<std::string>& v, size_t i) {
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

bool is_pe_op(fir::Op op) { return op == fir::Op::Conv2d || op == fir::Op::Dense || op == fir::Op::MatMul; }
bool is_pool_op(fir::Op op) { return op == fir::Op::MaxPool2d || op == fir::Op::AvgPool2d; }

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
  }
  // Drops the blocks that end before `t` when no later find() starts before
  // it (find() skips them anyway; at large batch a core holds thousands).
  void forget_before(int t) {
    if (t <= forgotten_) return;
    forgotten_ = t;
    blocks_.erase(std::remove_if(blocks_.begin(), blocks_.end(), [t](const Block& b) { return b.end < t; }),
                  blocks_.end());
  }

 private:
  struct Block {
    int start, end;
    int64_t address, size;
  };
  int64_t capacity_;
  int forgotten_ = 0;
  std::vector<Block> blocks_;  // by address
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

  sir::Schedule run() {
    build_network();
    build_workloads();
    for (;;) {
      connect_and_place();
      int64_t most = 0;
      for (int64_t n : transfers_of_layer_) most = std::max(most, n);
      if (most < transfer_stride_) break;
      transfer_stride_ *= 10;  // rare: a layer with that many transfers; number again
    }
    for (auto& w : wls_)
      if (layers_[size_t(w.layer)].pe) tile_pe(w);
    if (estimate_out_) *estimate_out_ = estimated_cycles_;
    return emit();
  }

 private:
  // Transfers, L2 placement, VP tiles and weight loads (retried with spills
  // and with weights streamed from L2 when memory runs out).
  void connect_and_place() {
    // Tensors kept in a core's L2 across segments go through DRAM instead
    // when L2 runs out: spill the longest-lived one in the way and retry.
    // When the weights then find no room, place the ones that must stream
    // from L2 together with the activations and start again.
    for (int attempt = 0;; ++attempt) {
      reserve_weights_ = attempt == 1;
      spill_.clear();
      tail_limit_.clear();
      head_limit_.clear();
      for (;;) {
        reset_connections();
        connect();
        const std::vector<int> failed = place_activations();
        if (failed.empty()) break;
        remedy(failed);
      }
      for (auto& w : wls_)
        if (layers_[size_t(w.layer)].move) tile_move(w);
        else if (!layers_[size_t(w.layer)].pe) tile_vp(w);
      if (plan_weights()) break;
      if (attempt == 1)
        throw CapacityError(at_pointer(o_.mapping_file, "/segments/" + std::to_string(assign_segment_), assign_error_),
                            assign_segment_);
    }
  }

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
  int64_t transfer_stride_ = 100;            // a power of ten above every layer's count
  int64_t next_order_ = 1;
};

// ------------------------------------------------------------------ network

// A pass-through reshape on the host is read through, to the accelerator
// layer or graph input behind it; a host step's result is loaded from DRAM
// like a graph input, once the host has written it.
int Generator::resolve_producer(const std::string& name, std::string* graph_input, int* host_step) const {
  const std::string src = fir::resolve_through(g_, host_, name);
  if (fir::is_graph_input_name(src)) {
    *graph_input = src;
    return -1;
  }
  const fir::Layer* l = g_.find(src);
  if (!l) return -2;
  if (l->device == fir::Device::Npu) {
    auto it = layer_index_.find(src);
    return it == layer_index_.end() ? -2 : it->second;
  }
  *host_step = host_.step(src);
  if (*host_step < 0) return -2;
  *graph_input = src;
  return -1;
}

void Generator::build_network() {
  host_ = fir::host_plan(g_, o_.fir_file);
  std::set<std::string> host_inputs;  // accelerator layers a host step reads
  for (const auto& st : host_.steps) host_inputs.insert(st.inputs.begin(), st.inputs.end());
  for (const fir::Layer* l : g_.in_index_order()) {
    if (l->device != fir::Device::Npu) continue;
    LayerModel lm;
    lm.fir = l;
    lm.pe = is_pe_op(l->op);
    lm.move = fir::is_move_op(l->op);
    if (lm.pe) {
      std::string why;
      auto pc = fir::pe_conv(*l, &why);
      if (!pc) fail_fir(l->name, "does not run on the PE array: " + why);
      lm.conv = *pc;
    }
    if (l->output_shape.empty()) fail_fir(l->name, "layer has no output shape");
    lm.out = dims4(l->output_shape[0]);
    lm.out_bytes = dtype_size(l->output_dtype, 0);
    layer_index_[l->name] = int(layers_.size());
    layers_.push_back(std::move(lm));
  }
  for (auto& lm : layers_) {
    const fir::Layer& l = *lm.fir;
    for (size_t i = 0; i < l.previous_layer.size(); ++i) {
      const std::string& p = l.previous_layer[i];
      // The constant operand of PReLU and element-wise layers is loaded from
      // DRAM as a network input is; others are configuration (the average
      // pool's divisor).
      const bool loaded = (l.op == fir::Op::PRelu || l.op == fir::Op::ElementWiseAdd || l.op == fir::Op::ElementWiseSub ||
                           l.op == fir::Op::ElementWiseMul) &&
                          fir::is_constant_name(p);
      if (fir::is_constant_name(p) && lm.move)
        fail_fir(l.name, "moves the constant \"" + p + "\": no transfer brings constants into L2 for data movement");
      if (fir::is_constant_name(p) && !loaded) continue;
      InputRef in;
      if (loaded) in.producer = -1, in.graph_input = p;
      else in.producer = resolve_producer(p, &in.graph_input, &in.host_step);
      if (in.producer == -2) fail_fir(l.name, "input \"" + p + "\" is neither a layer nor a graph input");
      in.fir_index = i;
      if (i >= l.input_shape.size()) fail_fir(l.name, "no input_shape for input " + std::to_string(i));
      in.dims = dims4(l.input_shape[i]);
      if (loaded && !l.output_shape.empty()) {
        // A constant broadcasts against the output (numpy: on the last axes).
        auto b = fir::chip_box_broadcast(l.input_shape[i], l.output_shape[0].size());
        in.dims = Dims{b[0], b[1], b[2], b[3]};
      }
      in.bytes = dtype_size(l.input_dtype, i);
      if (lm.pe && !lm.inputs.empty()) break;  // the weights are not an activation
      lm.inputs.push_back(in);
    }
    if (lm.move) {
      // The batch is cut into groups and parts: a movement must keep each
      // sample where it is, in tensors of at most four axes.
      std::string why;
      const Dims& o = lm.out;
      Box whole;
      whole.hi = {o[0] - 1, o[1] - 1, o[2] - 1, o[3] - 1};
      auto pieces = fir::move_pieces(l, whole.lo, whole.hi, &why);
      if (!pieces) fail_fir(l.name, "cannot be cut into moves: " + why);
      for (const auto& m : *pieces)
        if (m.in_lo[0] != m.out_lo[0] || m.in_hi[0] - m.in_lo[0] != o[0] - 1)
          fail_fir(l.name, std::string(fir::op_name(l.op)) +
                               " moves data along the batch axis (axis 0), which the mapping cuts into groups and parts");
      for (size_t i = 0; i < l.input_shape.size(); ++i)
        if (l.input_shape[i].size() > 4) fail_fir(l.name, "input " + std::to_string(i) + " has more than four axes");
    }
    for (const auto& nx : l.next_layer)
      if (fir::is_graph_output_name(nx)) lm.graph_output = true;
    // A layer whose output only reaches host layers writes it out too.
    bool npu_consumer = false;
    for (const fir::Layer* c : g_.consumers(l)) npu_consumer = npu_consumer || c->device == fir::Device::Npu;
    if (!npu_consumer) lm.graph_output = true;
    // The host reads it from DRAM.
    if (host_inputs.count(l.name)) lm.graph_output = true;
  }
}

// ------------------------------------------------------------------ workloads

InputUse Generator::input_use(const LayerModel& L, const InputRef& in, const Box& out) const {
  const fir::Layer& l = *L.fir;
  InputUse u;
  Dims d = in.dims;
  Box r;
  r.lo[0] = out.lo[0], r.hi[0] = out.hi[0];
  // The rows (columns) [first, last] of the windows: the region is their
  // part inside the input, the padding what lies before and after it. Windows
  // wholly in the padding (a convolution padded by more than its kernel, as a
  // constant Pad is: a part of its output may read no input) read the
  // input's nearest edge row (column), as gemini's input_region clamps; the
  // padding on the region's other side is then negative, so that region and
  // padding still span the windows (formats/Scheduler_IR_Format.md).
  auto spatial = [&](int axis, int64_t stride, int64_t kernel, int64_t dil, int64_t pad_before, int64_t* pb,
                     int64_t* pa) {
    int64_t first = out.lo[axis] * stride - pad_before;
    int64_t last = out.hi[axis] * stride - pad_before + (kernel - 1) * dil;
    r.lo[axis] = std::max<int64_t>(0, first);
    r.hi[axis] = std::min<int64_t>(d[axis] - 1, last);
    if (r.lo[axis] > r.hi[axis]) r.lo[axis] = r.hi[axis] = std::clamp<int64_t>(first, 0, d[axis] - 1);
    *pb = r.lo[axis] - first;
    *pa = last - r.hi[axis];
  };
  if (L.move) {
    // The hull of the pieces this input gives (empty: none).
    r.lo = {0, 0, 0, 0};
    r.hi = {-1, -1, -1, -1};
    bool any = false;
    // (A named copy: a range-for over *optional-temporary would dangle.)
    const std::vector<fir::MovePiece> pieces = fir::move_pieces(l, out.lo, out.hi).value();
    for (const auto& m : pieces) {
      if (m.input != in.fir_index) continue;
      for (int a = 0; a < 4; ++a) {
        r.lo[a] = any ? std::min(r.lo[a], m.in_lo[a]) : m.in_lo[a];
        r.hi[a] = any ? std::max(r.hi[a], m.in_hi[a]) : m.in_hi[a];
      }
      any = true;
    }
    u.region = r;
    return u;
  }
  if (l.op == fir::Op::Conv2d || is_pool_op(l.op)) {
    auto win = l.window();
    auto st = l.strides();
    auto dil = l.dilations();
    auto pads = l.pads();
    spatial(2, st[0], win[0], dil[0], pads[0], &u.pad[0], &u.pad[1]);
    spatial(3, st[1], win[1], dil[1], pads[2], &u.pad[2], &u.pad[3]);
    if (is_pool_op(l.op)) {
      r.lo[1] = out.lo[1], r.hi[1] = out.hi[1];
    } else {
      int64_t groups = l.group_count();
      int64_t cg = std::max<int64_t>(1, d[1] / std::max<int64_t>(1, groups));
      int64_t kg = std::max<int64_t>(1, L.out[1] / std::max<int64_t>(1, groups));
      r.lo[1] = out.lo[1] / kg * cg;
      r.hi[1] = std::min<int64_t>(d[1] - 1, (out.hi[1] / kg + 1) * cg - 1);
    }
  } else if (l.op == fir::Op::Resize) {
    // The rows and columns the taps of the output's pixels reach
    // (int8::resize_span); no padding: the border repeats, the holes of zero
    // insertion read nothing.
    std::string why;
    auto g = fir::resize_geometry(l, &why);
    if (!g) fail_fir(l.name, why);
    const auto mode = static_cast<int8::ResizeMode>(g->mode);
    for (int a = 0; a < 2; ++a) {
      const auto& ax = g->axis[size_t(a)];
      float step = int8::param(ax.step), off = int8::param(ax.offset);
      std::tie(r.lo[2 + a], r.hi[2 + a]) = int8::resize_span(mode, out.lo[2 + a], out.hi[2 + a], step, off, ax.in);
    }
    r.lo[1] = out.lo[1], r.hi[1] = out.hi[1];
  } else if (is_pe_op(l.op)) {
    r.lo[1] = 0, r.hi[1] = d[1] - 1;
    r.lo[2] = 0, r.hi[2] = d[2] - 1;
    r.lo[3] = 0, r.hi[3] = d[3] - 1;
    // A dense layer is the convolution fir::pe_conv gives: over a flattened
    // sample its window is the whole input; over a token tensor it is 1 x 1,
    // so a part of the tokens reads those tokens only.
    if (auto pc = fir::pe_conv(l); pc && l.op == fir::Op::Dense) {
      spatial(2, 1, pc->kernel[0], 1, 0, &u.pad[0], &u.pad[1]);
      spatial(3, 1, pc->kernel[1], 1, 0, &u.pad[2], &u.pad[3]);
    }
  } else {
    for (int i = 0; i < 4; ++i) {
      // Broadcast axes of size 1 read their only element (the batch too: a constant).
      r.lo[i] = d[i] == 1 ? 0 : out.lo[i];
      r.hi[i] = d[i] == 1 ? 0 : std::min<int64_t>(d[i] - 1, out.hi[i]);
    }
  }
  u.region = r;
  // A host reshape between producer and consumer that changes the shape:
  // the consumer reads the producer's whole output.
  if (in.producer >= 0 && layers_[size_t(in.producer)].out != d) {
    const Dims& pd = layers_[size_t(in.producer)].out;
    u.region.lo = {out.lo[0], 0, 0, 0};
    u.region.hi = {out.hi[0], pd[1] - 1, pd[2] - 1, pd[3] - 1};
  }
  return u;
}

void Generator::build_workloads() {
  for (size_t s = 0; s < m_.segments.size(); ++s)
    for (size_t i = 0; i < m_.segments[s].layers.size(); ++i) {
      const auto& lm = m_.segments[s].layers[i];
      auto it = layer_index_.find(lm.layer);
      std::string p = "/segments/" + std::to_string(s) + "/layers/" + std::to_string(i) + "/layer";
      if (it == layer_index_.end()) fail_mapping(p, "layer \"" + lm.layer + "\" is not an accelerator layer of the FIR");
      LayerModel& L = layers_[size_t(it->second)];
      if (L.map) fail_mapping(p, "layer \"" + lm.layer + "\" is mapped twice");
      L.map = &lm;
      L.segment = int(s), L.position = int(i);
    }
  for (const auto& L : layers_)
    if (!L.map) fail_mapping("/segments", "layer \"" + L.fir->name + "\" is not mapped");
  layer_wls_.assign(layers_.size(), {});
  // Ids in (segment, batch group, layer, part) order: a topological order.
  int id = 0;
  for (size_t s = 0; s < m_.segments.size(); ++s) {
    const auto& seg = m_.segments[s];
    const int64_t groups = seg.batch_groups, stripes = std::max<int64_t>(1, seg.row_groups);
    const std::vector<std::vector<int64_t>> ends = row_stripes(seg);
    for (int64_t g = 0; g < groups * stripes; ++g)
      for (size_t i = 0; i < seg.layers.size(); ++i) {
        const auto& lm = seg.layers[i];
        int li = layer_index_.at(lm.layer);
        LayerModel& L = layers_[size_t(li)];
        mapping::Dims dims = L.out;
        if (dims[0] % groups != 0)
          fail_mapping("/segments/" + std::to_string(s) + "/batch_groups",
                       std::to_string(groups) + " batch groups do not divide the batch " + std::to_string(dims[0]));
        dims[0] /= groups;
        const int64_t bg = g / stripes, r = g % stripes;
        const int64_t row0 = r > 0 ? ends[i][size_t(r - 1)] : 0;
        dims[2] = ends[i][size_t(r)] - row0;
        if (dims[2] == 0) continue;  // an empty stripe
        for (int64_t part = 0; part < lm.partition.product(); ++part) {
          mapping::Box b = mapping::part_box(lm.partition, dims, part);
          b.lower[0] += bg * dims[0];
          b.upper[0] += bg * dims[0];
          b.lower[2] += row0;
          b.upper[2] += row0;
          const int leader = id;
          // A part computed once on its core goes in runs of output channels
          // when its weights do not fit WL0; one computed for every group
          // (or stripe) streams them from L2 if it can (weight_runs).
          const bool once = groups * stripes == 1;
          auto runs = wl0_chunks(L, b.lower[1], b.upper[1], once);
          for (auto [k_lo, k_hi] : runs) {
            Wl w;
            w.id = id++;
            w.leader = leader;
            w.group_weights = !once && runs.size() > 1;
            w.layer = li;
            w.core = int(lm.cores[size_t(part)]);
            w.segment = int(s);
            w.group = int(g);
            w.out.lo = b.lower;
            w.out.hi = b.upper;
            w.out.lo[1] = k_lo;
            w.out.hi[1] = k_hi;
            for (const auto& in : L.inputs) w.inputs.push_back(input_use(L, in, w.out));
            if (L.move) w.moves = *fir::move_pieces(*L.fir, w.out.lo, w.out.hi);
            per_core_[w.core].push_back(w.id);
            w.pos = int(per_core_[w.core].size()) - 1;
            layer_wls_[size_t(li)].push_back(w.id);
            wls_.push_back(std::move(w));
          }
        }
      }
  }
}

// The row stripes of a segment's layers (mapping::row_stripes), from the
// rows each input of a consumer reads.
std::vector<std::vector<int64_t>> Generator::row_stripes(const mapping::Segment& seg) const {
  std::vector<int> lis;
  std::vector<int64_t> rows;
  for (const auto& lm : seg.layers) {
    lis.push_back(layer_index_.at(lm.layer));
    rows.push_back(layers_[size_t(lis.back())].out[2]);
  }
  std::vector<std::vector<size_t>> consumers(lis.size());
  for (size_t c = 0; c < lis.size(); ++c)
    for (const auto& in : layers_[size_t(lis[c])].inputs)
      for (size_t p = 0; p < c; ++p)
        if (in.producer == lis[p] && (consumers[p].empty() || consumers[p].back() != c)) consumers[p].push_back(c);
  auto rows_read = [&](size_t c, size_t p, int64_t n) -> int64_t {
    if (n == 0) return 0;
    const LayerModel& C = layers_[size_t(lis[c])];
    Box out;
    out.lo = {0, 0, 0, 0};
    out.hi = {C.out[0] - 1, C.out[1] - 1, n - 1, C.out[3] - 1};
    int64_t end = 0;
    for (const auto& in : C.inputs)
      if (in.producer == lis[p]) end = std::max(end, input_use(C, in, out).region.hi[2] + 1);
    return end;
  };
  return mapping::row_stripes(rows, consumers, seg.row_groups, rows_read);
}

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

// ------------------------------------------------------------------ memory

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
  double left = double(bytes) / timing::dram_channel_bytes_per_cycle(a_);
  while (left > 0 && (step > 0 ? pos < bound : pos > bound)) {
    pos += step;
    left -= double(compute_cycles(order[size_t(pos)]));
  }
  return pos;
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

// Weights: DRAM -> WL0 when the slice fits the weight buffer whole (the PE
// reads it at WL0 speed), otherwise DRAM -> L2 and streamed tile by tile
// through two WL0 slots. Each load is issued as early as its buffer has
// room until its last use, in the order the workloads need them.
//
// Which path each layer takes is a trade: WL0 makes the layer compute
// faster, but the buffer is small, so few loads can run ahead; L2 holds
// weights many layers ahead, so DRAM keeps streaming while compute-heavy
// layers run. Loads into WL0 also share the in-order LW queue with the tile
// loads of streamed layers, so they are never issued at or before a
// streamed workload that precedes their own. The choice is searched: a
// split point (WL0 before it, L2 after), then single-layer flips, each
// candidate priced by estimate() on a timeline of compute and DRAM.
int64_t Generator::weight_bytes_per_k(const LayerModel& L) const {
  const footprint::WeightRecord r = layer_weight_record(a_, *L.fir);
  if (r.c <= 0) fail_fir(L.fir->name, "a PE layer without a [K, C, kh, kw] weight shape");
  return r.bytes();
}

// WL0 rows (64-byte units) of `kcount` output channels loaded whole
// (irgen::wl0_rows: blocks of pe_cols channels, each channel's weights on
// whole 32-byte bursts).
int64_t Generator::wl0_rows(int64_t kcount, int64_t per_k) const { return irgen::wl0_rows(a_, kcount, per_k); }

// The output-channel runs a PE part is computed in (weight_runs): the whole
// part when its weights fit the weight buffer, when weights stream from L2
// anyway, or when a part computed for several groups streams them; otherwise
// runs of output channels whose weights fit half the buffer, so that one
// run's weights load while the previous run computes.
std::vector<std::pair<int64_t, int64_t>> Generator::wl0_chunks(const LayerModel& L, int64_t k_lo, int64_t k_hi,
                                                               bool once) const {
  const int64_t kcount = k_hi - k_lo + 1;
  if (!L.pe || !o_.split_for_wl0 || o_.weight_path == WeightPath::L2) return {{k_lo, k_hi}};
  const int64_t per_k = weight_bytes_per_k(L);
  const WeightRuns wr = weight_runs(a_, kcount, per_k, L.out_bytes, once, L.conv.k_per_group());
  if (wr.kind == WeightRuns::TooLarge)
    fail_fir(L.fir->name, over_capacity("one output channel's weights (" + std::to_string(per_k) + " bytes, " +
                                            std::to_string(wl0_rows(1, per_k)) + " rows of " +
                                            std::to_string(a_.core.wl0_row_bytes) + " bytes)",
                                        wl0_rows(1, per_k) * a_.core.wl0_row_bytes,
                                        a_.core.wl0_rows / 2 * a_.core.wl0_row_bytes,
                                        "half of the weight buffer (a run's weights load while the previous run computes)",
                                        a_) +
                              ": the layer cannot be computed on this architecture");
  if (wr.kind != WeightRuns::Runs) return {{k_lo, k_hi}};
  const int64_t size = wr.run;
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t k = k_lo; k <= k_hi; k += size) out.push_back({k, std::min(k_hi, k + size - 1)});
  return out;
}

// Output channels are cut (runs, streamed tiles) in multiples of this: whole
// array column blocks, and whole groups of a grouped convolution.
int64_t Generator::k_block(const LayerModel& L) const { return std::lcm(a_.core.pe_cols, L.conv.k_per_group()); }

void Generator::size_weight(WeightLoad& wt) {
  const int64_t cols = k_block(layers_[size_t(wt.layer)]);
  const int64_t wl0_capacity = a_.core.wl0_rows;
  const LayerModel& L = layers_[size_t(wt.layer)];
  const Dims& wd = L.conv.weight;
  int wbytes = dtype_size(L.fir->input_dtype, 1);
  wt.per_k = weight_bytes_per_k(L);
  int64_t kcount = wt.k_hi - wt.k_lo + 1;
  wt.bytes = kcount * wt.per_k;
  wt.footprint = std::max(wt.bytes, timing::weight_bytes(a_, kcount, wd[1], wd[2], wd[3], wbytes));
  wt.rows = wl0_rows(kcount, wt.per_k);
  // Tiles of a streamed layer: two WL0 slots sharing the whole buffer
  // (no DRAM -> WL0 load is live during a streamed workload).
  wt.tile_k = std::max(cols, wl0_capacity / 2 * a_.core.wl0_row_bytes / wt.per_k / cols * cols);
  wt.slots = 2;
  if (wt.tile_k >= kcount) wt.tile_k = kcount, wt.slots = 1;
  wt.fits_wl0 = wt.rows <= wl0_capacity && o_.weight_path != WeightPath::L2;
}

// Weight slices above which plan_weights moves whole layers (ResNet-50 on
// chip-64tops has about 450, on 36 cores about 2,000).
constexpr size_t kSliceSearchLimit = 4096;

bool Generator::plan_weights() {
  for (auto& wt : weights_) {
    wt.direct_time = wt.stream_time = 0;
    for (int id : wt.workloads) {
      wt.direct_time += tiler_.plan(conv_shape(wls_[size_t(id)], false), 0).cycles;
      wt.stream_time += tiler_.plan(conv_shape(wls_[size_t(id)], true), wt.tile_k).cycles;
    }
  }
  std::vector<char> direct(weights_.size());
  for (size_t i = 0; i < weights_.size(); ++i)
    direct[i] = o_.weight_path != WeightPath::L2 && weights_[i].fits_wl0;
  if (o_.weight_path == WeightPath::Auto && !weights_.empty()) {
    // Weights in the order they are needed (workload ids are topological).
    std::vector<size_t> order(weights_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return wls_[size_t(weights_[x].workloads[0])].id < wls_[size_t(weights_[y].workloads[0])].id;
    });
    // Two policies for the LW queue: DRAM -> WL0 loads never issued before
    // a streamed workload that precedes their own (strict), or issued
    // freely, the streamed workload then waiting for them (the estimate
    // charges it). The search runs for both.
    // Each candidate prices a whole timeline, so the search costs slices x
    // workloads: on a big chip, where every core holds its own slice of
    // every layer, it moves whole layers instead (split points at layer
    // changes, one flip per layer). ResNet-50 b1 on 256 cores took over ten
    // minutes slice by slice.
    const bool by_layer = order.size() > kSliceSearchLimit;
    std::vector<std::vector<size_t>> moves;  // the slices one flip turns
    for (size_t i : order) {
      if (!weights_[i].fits_wl0) continue;
      auto same = by_layer ? std::find_if(moves.begin(), moves.end(),
                                          [&](const auto& mv) { return weights_[mv.front()].layer == weights_[i].layer; })
                           : moves.end();
      if (same != moves.end()) same->push_back(i);
      else moves.push_back({i});
    }
    int64_t best = std::numeric_limits<int64_t>::max();
    std::vector<char> best_modes = direct;
    bool best_strict = true;
    for (bool strict : {true, false}) {
      strict_lw_ = strict;
      int64_t b = estimate(direct);
      std::vector<char> modes = direct;
      for (size_t split = 0; split < order.size(); ++split) {
        if (by_layer && split > 0 && weights_[order[split - 1]].layer == weights_[order[split]].layer) continue;
        std::vector<char> m(weights_.size(), 0);
        for (size_t i = 0; i < split; ++i) m[order[i]] = weights_[order[i]].fits_wl0;
        int64_t t = estimate(m);
        if (t < b) b = t, modes = m;
      }
      for (int pass = 0; pass < 2; ++pass) {
        bool improved = false;
        for (const auto& mv : moves) {
          std::vector<char> m = modes;
          for (size_t i : mv) m[i] = !modes[mv.front()];
          int64_t t = estimate(m);
          if (t < b) b = t, modes = m, improved = true;
        }
        if (!improved) break;
      }
      if (b < best) best = b, best_modes = modes, best_strict = strict;
    }
    strict_lw_ = best_strict;
    direct = best_modes;
  }
  estimated_cycles_ = estimate(direct);
  return assign(direct, true) >= 0;
}

// Places every weight load for the given paths: WL0 entries, tile slots, L2
// copies and issue positions. Returns -1 (assign_error_ says why) when some
// load finds no room. With `commit` the L2 copies become L2 tensors.
int Generator::assign(const std::vector<char>& direct, bool commit) {
  const int64_t wl0_capacity = a_.core.wl0_rows;
  std::map<int, std::vector<int>> by_core;
  for (size_t i = 0; i < weights_.size(); ++i) by_core[weights_[i].core].push_back(int(i));
  for (auto& [core, list] : by_core) {
    std::stable_sort(list.begin(), list.end(), [&](int x, int y) { return weights_[size_t(x)].first < weights_[size_t(y)].first; });
    Allocator wl0(wl0_capacity);
    Allocator l2 = l2_.try_emplace(core, a_.core.l2_bytes).first->second;
    int prev_issue_lw = 0, prev_issue_ld = 0;
    int after_streamed = 0;  // strict: DRAM -> WL0 loads wait behind the LW queue's tile loads of streamed layers
    std::set<int> many_tiles;  // positions of streamed workloads with more than two tiles
    for (int wi : list) {
      WeightLoad& wt = weights_[size_t(wi)];
      const LayerModel& L = layers_[size_t(wt.layer)];
      wt.direct = direct[size_t(wi)] && wt.fits_wl0;
      // Loads come in order of first use and each queue issues in order, so
      // no later search starts before these.
      wl0.forget_before(std::min(wt.first, prev_issue_lw));
      l2.forget_before(std::min(wt.first, prev_issue_ld));
      // Named only in an error (the weight-path search calls this per candidate).
      auto who = [&, c = core] { return "weights of \"" + L.fir->name + "\" on core " + std::to_string(c); };
      if (wt.direct) {
        int lb = o_.prefetch ? std::min(std::max(prev_issue_lw, strict_lw_ ? after_streamed : 0), wt.first) : wt.first;
        // The earliest issue position with room until the last use (room
        // at j means room at every later j: fewer blocks live), not inside
        // a streamed workload whose later tile loads would queue behind it.
        int j = earliest_room(lb, wt.first, [&](int p) { return wl0.find(p, wt.last, wt.rows, 1) >= 0; });
        while (j <= wt.first && many_tiles.count(j)) ++j;
        const int64_t addr = j <= wt.first ? wl0.find(j, wt.last, wt.rows, 1) : -1;
        if (addr < 0) {
          assign_segment_ = L.segment;
          assign_error_ = "no room in the weight buffer for the " + who();
          return -1;
        }
        wt.issue = j;
        wt.wl0_address = addr;
        wt.wl0_rows = wt.rows;
        wl0.add(j, wt.last, addr, wt.rows);
        prev_issue_lw = j;
      } else {
        wt.wl0_rows = wt.slots * ceil_div(wt.tile_k * wt.per_k, a_.core.wl0_row_bytes);
        const bool reserved = wt.l2_tensor >= 0;
        int64_t waddr = wl0.find(wt.first, wt.last, wt.wl0_rows, 1);
        if (waddr < 0) {
          assign_segment_ = L.segment;
          assign_error_ = "one tile of the " + who() + " does not fit the weight buffer twice";
          return -1;
        }
        wt.wl0_address = waddr;
        wl0.add(wt.first, wt.last, waddr, wt.wl0_rows);
        int lb = o_.prefetch && !reserved ? std::min(prev_issue_ld, wt.first) : wt.first;
        int64_t addr = reserved ? tensors_[size_t(wt.l2_tensor)].address : -1;
        int j = lb;
        if (!reserved) {
          j = earliest_room(lb, wt.first, [&](int p) { return l2.find(p, wt.last, wt.footprint, arch::kL2AllocationAlignBytes) >= 0; });
          if (j <= wt.first) addr = l2.find(j, wt.last, wt.footprint, arch::kL2AllocationAlignBytes);
        }
        if (addr < 0) {
          assign_segment_ = L.segment;
          assign_error_ = "the " + who() + " (" + std::to_string(wt.bytes) +
                          " bytes) do not fit in L2 next to the activations live with them";
          return -1;
        }
        wt.issue = j;
        wt.l2_address = addr;
        if (!reserved) l2.add(j, wt.last, addr, wt.footprint);
        after_streamed = std::max(after_streamed, wt.last + 1);
        if (ceil_div(wt.k_hi - wt.k_lo + 1, wt.tile_k) > 2)
          for (int p = wt.first; p <= wt.last; ++p) many_tiles.insert(p);
        prev_issue_ld = j;
      }
    }
  }
  if (!commit) return 0;
  for (size_t wi = 0; wi < weights_.size(); ++wi) {
    WeightLoad& wt = weights_[wi];
    wt.order = next_order_++;
    if (wt.direct) continue;
    const LayerModel& L = layers_[size_t(wt.layer)];
    const Dims& wd = L.conv.weight;
    const bool reserved = wt.l2_tensor >= 0;
    L2Tensor fresh;
    L2Tensor& t = reserved ? tensors_[size_t(wt.l2_tensor)] : fresh;
    t.core = wt.core;
    t.start = wt.issue;
    t.end = wt.last;
    t.size = wt.bytes;
    t.address = wt.l2_address;
    t.box.lo = {0, wt.k_lo, 0, 0};
    t.box.hi = {0, wt.k_hi, wd[1] - 1, wd[2] * wd[3] - 1};
    t.type = sir::TensorType::Weight;
    t.layer_name = L.fir->name;
    sir::Source src;
    src.core_id = sir::kDramCoreId;
    src.lower = t.box.lo;
    src.upper = t.box.hi;
    src.size = wt.bytes;
    src.transfer_id = wt.transfer;
    src.type = sir::Endpoint::Dram;
    t.source.push_back(src);
    t.transfers.push_back(wt.transfer);
    t.weight = int(wi);
    t.order = wt.order;
    if (reserved) continue;
    wt.l2_tensor = int(tensors_.size());
    tensors_.push_back(std::move(t));
  }
  return 0;
}

// Predicted end of the program for the given weight paths. Workloads run
// one after another on their core, each waiting for its weights and inputs;
// each core's DRAM transfers are served in the order asm issues them (a
// transfer issued in workload j starts once workload j-1 has finished) at
// one channel's bandwidth. An output read back by another core is stored
// behind the transfers its core issued before it (the loads issued ahead in
// its own workload), and the load reading it waits for that store: a burst
// of weights issued ahead of a store delays every core that needs it.
// Workload ids are topological, so one pass in id order sees every
// producer before its consumers.
int64_t Generator::estimate(const std::vector<char>& direct) {
  if (assign(direct, false) < 0) return std::numeric_limits<int64_t>::max();
  const double bw = timing::dram_channel_bytes_per_cycle(a_);
  struct CoreState {
    double t = 0, dram_free = 0, lw_tail = 0;
  };
  std::map<int, CoreState> cores;
  std::vector<std::vector<int>> issued(wls_.size());  // workload id -> weights issued in it
  for (size_t wi = 0; wi < weights_.size(); ++wi) {
    const auto& ids = per_core_.at(weights_[wi].core);
    issued[size_t(ids[size_t(weights_[wi].issue)])].push_back(int(wi));
  }
  std::vector<double> ready(weights_.size(), 0.0);
  std::vector<double> done(wls_.size(), 0.0);    // compute end
  std::vector<double> stored(wls_.size(), 0.0);  // end of the output's store, when stored
  // A host step starts when the last of its inputs is stored (their producers
  // come first in id order) and takes timing::host_cycles.
  std::vector<double> host_end(host_.steps.size(), -1.0);
  const std::vector<sir::HostStep> steps = host_steps();
  auto host_done = [&](int k) {
    if (host_end[size_t(k)] >= 0) return host_end[size_t(k)];
    double start = 0;
    for (const std::string& name : host_.steps[size_t(k)].inputs) {
      auto it = layer_index_.find(name);
      if (it == layer_index_.end()) continue;
      for (int id : layer_wls_[size_t(it->second)]) start = std::max(start, stored[size_t(id)]);
    }
    host_end[size_t(k)] = start + double(steps[size_t(k)].time);
    return host_end[size_t(k)];
  };
  double worst = 0;
  for (const Wl& w : wls_) {
    CoreState& c = cores[w.core];
    auto load = [&](int64_t bytes, double not_before) {
      double start = std::max({c.t, c.dram_free, not_before});
      c.dram_free = start + double(bytes) / bw;
      return c.dram_free;
    };
    // The workload's own loads go first, then the loads it issues ahead.
    double inputs_ready = c.t;
    for (const auto& u : w.inputs)
      for (const auto& pc : u.pieces) {
        if (pc.kind == Piece::GraphInput)
          inputs_ready = std::max(inputs_ready, load(pc.bytes, pc.host_step >= 0 ? host_done(pc.host_step) : 0));
        if (pc.kind == Piece::Dram) inputs_ready = std::max(inputs_ready, load(pc.bytes, stored[size_t(pc.producer_wl)]));
        if (pc.kind == Piece::Remote) inputs_ready = std::max(inputs_ready, done[size_t(pc.producer_wl)]);
      }
    for (int wi : issued[size_t(w.id)])
      if (weights_[size_t(wi)].first == w.pos) ready[size_t(wi)] = load(weights_[size_t(wi)].bytes, 0);
    for (int wi : issued[size_t(w.id)])
      if (weights_[size_t(wi)].first != w.pos) ready[size_t(wi)] = load(weights_[size_t(wi)].bytes, 0);
    c.t = inputs_ready;
    // A streamed workload's tile loads queue behind the DRAM -> WL0 loads
    // issued before it.
    const double lw_before = c.lw_tail;
    for (int wi : issued[size_t(w.id)])
      if (weights_[size_t(wi)].direct) c.lw_tail = std::max(c.lw_tail, ready[size_t(wi)]);
    double dur = double(w.vp_time);
    if (w.weight >= 0) {
      const WeightLoad& wt = weights_[size_t(w.weight)];
      c.t = std::max(c.t, ready[size_t(w.weight)]);
      if (!wt.direct) c.t = std::max(c.t, lw_before);
      dur = double(wt.direct ? wt.direct_time : wt.stream_time) / double(wt.workloads.size());
    }
    c.t += dur;
    done[size_t(w.id)] = c.t;
    if (w.to_dram) {
      Dims e = w.out.extent();
      int64_t bytes = timing::activation_bytes(a_, e[0], e[1], e[2], e[3], layers_[size_t(w.layer)].out_bytes);
      stored[size_t(w.id)] = load(bytes, c.t);
      worst = std::max(worst, stored[size_t(w.id)]);
    }
    worst = std::max(worst, c.t);
  }
  return int64_t(worst);
}

// ------------------------------------------------------------------ tiles

ConvShape Generator::conv_shape(const Wl& w, bool weights_in_l2) const {
  const LayerModel& L = layers_[size_t(w.layer)];
  const InputRef& in = L.inputs.at(0);
  Dims e = w.out.extent();
  ConvShape cs;
  cs.n = e[0], cs.k = e[1], cs.h = e[2], cs.w = e[3];
  cs.c = w.inputs[0].region.extent()[1];
  auto win = L.conv.kernel;
  auto st = L.conv.stride;
  auto dil = L.conv.dilation;
  cs.r = win[0], cs.s = win[1], cs.stride_h = st[0], cs.stride_w = st[1];
  cs.dilation_h = dil[0], cs.dilation_w = dil[1];
  if (L.conv.groups > 1) cs.group_out = L.conv.k_per_group(), cs.group_in = L.conv.weight[1];
  cs.in_bytes = in.bytes;
  cs.out_bytes = L.out_bytes;
  cs.weights_in_l2 = weights_in_l2;
  return cs;
}

void Generator::tile_pe(Wl& w) {
  const LayerModel& L = layers_[size_t(w.layer)];
  const WeightLoad& wt = weights_[size_t(w.weight)];
  const InputRef& in = L.inputs.at(0);
  ConvShape cs = conv_shape(w, !wt.direct);
  TilePlan plan = tiler_.plan(cs, wt.direct ? 0 : wt.tile_k);
  const std::string mode = plan.cut_mode();
  int64_t total = 0;
  w.sir.tile_info.clear();
  for (const auto& pt : plan.tiles) {
    Box tb;
    for (int i = 0; i < 4; ++i) tb.lo[i] = w.out.lo[i] + pt.offset[i], tb.hi[i] = tb.lo[i] + pt.extent[i] - 1;
    InputUse u = input_use(L, in, tb);
    sir::Tile t;
    const MiniTile& m = pt.mini;
    int64_t wh = (std::min(m.mini_h, pt.extent[2]) - 1) * cs.stride_h + (cs.r - 1) * cs.dilation_h + 1;
    int64_t ww = (std::min(m.mini_w, pt.extent[3]) - 1) * cs.stride_w + (cs.s - 1) * cs.dilation_w + 1;
    t.act_mini_tile = Coord{1, m.mtc0, wh, ww};
    t.ci_cut_num = 1;
    t.cut_mode = mode;
    t.ifmap_lower = u.region.lo;
    t.ifmap_upper = u.region.hi;
    t.layer_name = L.fir->name;
    t.loop_order = "KNHW";
    t.mtc0_mtk0 = std::array<int64_t, 2>{m.mtc0, m.mtk0};
    t.ofmap_lower = tb.lo;
    t.ofmap_upper = tb.hi;
    // The output mini tile counts channel groups: mtk0 blocks of pe_cols channels.
    t.out_mini_tile = Coord{1, m.mtk0 * a_.core.pe_cols / arch::kChannelGroup, m.mini_h, m.mini_w};
    t.single_tile_time_pred = double(m.cycles);
    t.tile_padding_tblr = u.pad;
    total += m.cycles;
    w.sir.tile_info.push_back(std::move(t));
  }
  w.sir.time = total;
}

void Generator::tile_vp(Wl& w) {
  const LayerModel& L = layers_[size_t(w.layer)];
  const fir::Layer& l = *L.fir;
  Dims e = w.out.extent();
  const bool pool = is_pool_op(l.op);
  // Pools read their window over the whole input buffer.
  const bool pool_input = pool && !w.inputs.empty() && !w.inputs[0].pieces.empty();
  const Dims over = pool_input ? tensors_[size_t(w.inputs[0].pieces[0].buffer)].box.extent() : e;
  timing::VpOp op = timing::vp_workload(over, e, L.inputs.empty() ? 1 : L.inputs[0].bytes, L.out_bytes);
  op.two_inputs = !pool && l.lut_code(1) != 0;
  if (op.two_inputs && w.inputs.size() > 1)
    timing::set_second_operand(op, w.inputs[1].region.extent(), L.inputs.size() > 1 ? L.inputs[1].bytes : op.in_bytes);
  auto ps = l.pool_size.value_or(std::array<int64_t, 2>{1, 1});
  op.window = pool ? ps[0] * ps[1] : 1;
  // A resize works per output pixel, blending 4 taps (linear) or taking 1.
  if (l.op == fir::Op::Resize) {
    auto g = fir::resize_geometry(l);
    op.window = g && g->mode == 0 ? 4 : 1;
  }
  int64_t cycles = tiler_.vp_cycles(op);
  w.sir.tile_info.clear();
  sir::Tile t;
  if (!w.inputs.empty()) {
    t.ifmap_lower = w.inputs[0].region.lo;
    t.ifmap_upper = w.inputs[0].region.hi;
    t.tile_padding_tblr = w.inputs[0].pad;
  }
  if (w.inputs.size() > 1) {
    t.ifmap_lower2 = w.inputs[1].region.lo;
    t.ifmap_upper2 = w.inputs[1].region.hi;
  }
  t.ofmap_lower = w.out.lo;
  t.ofmap_upper = w.out.hi;
  t.single_tile_time_pred = double(cycles);
  w.sir.tile_info.push_back(std::move(t));
  w.sir.time = cycles;
  w.vp_time = cycles;
}

// A data movement workload: one tile per piece of its output (ifmap in the
// input's coordinates, ofmap in the layer's). A piece delivered straight
// into the output tensor costs nothing here (its transfer does); one read
// from an input tensor on this core is a copy (dt_cal) or, where the
// quantizations differ, a requantization on the vector processor.
void Generator::tile_move(Wl& w) {
  const LayerModel& L = layers_[size_t(w.layer)];
  w.sir.tile_info.clear();
  int64_t total = 0;
  for (const auto& m : w.moves) {
    size_t i = 0;
    while (i < L.inputs.size() && L.inputs[i].fir_index != m.input) ++i;
    const bool direct = i < w.direct.size() && w.direct[i];
    sir::Tile t;
    t.ifmap_lower = m.in_lo;
    t.ifmap_upper = m.in_hi;
    t.ofmap_lower = m.out_lo;
    t.ofmap_upper = m.out_hi();
    t.tile_padding_tblr = {0, 0, 0, 0};
    int64_t cycles = 0;
    if (!direct) {
      Dims e = {m.in_hi[0] - m.in_lo[0] + 1, m.in_hi[1] - m.in_lo[1] + 1, m.in_hi[2] - m.in_lo[2] + 1,
                m.in_hi[3] - m.in_lo[3] + 1};
      if (fir::move_requantizes(*L.fir, m.input)) {
        timing::VpOp op;
        op.c = e[1], op.h = e[2], op.w = e[3];
        op.out_pixels = e[2] * e[3];
        op.in_bytes = i < L.inputs.size() ? L.inputs[i].bytes : 1;
        op.out_bytes = L.out_bytes;
        cycles = e[0] * tiler_.vp_cycles(op);  // one instruction per sample
      } else {
        cycles = int64_t(a_.timing.dt_fixed_cycles);
      }
    }
    t.single_tile_time_pred = double(cycles);
    total += cycles;
    w.sir.tile_info.push_back(std::move(t));
  }
  w.sir.time = total;
  w.vp_time = total;
}

// ------------------------------------------------------------------ output

sir::BufferTensor Generator::buffer_entry(const L2Tensor& t, int pos, const Wl& w, int64_t id) const {
  sir::BufferTensor b;
  b.address = t.address;
  b.bitwidth = 8 * t.bytes;
  b.align = std::max<int64_t>(1, a_.core.l2_channel_align_bytes / t.bytes);
  bool cur = false;
  for (const auto& u : w.inputs)
    for (const auto& pc : u.pieces)
      cur = cur || std::find(t.transfers.begin(), t.transfers.end(), pc.transfer) != t.transfers.end();
  if (cur && pos >= t.reader) b.cur_wl_ifmap = true;
  b.layer_name = t.layer_name;
  b.lower = t.box.lo;
  b.upper = t.box.hi;
  b.newly_added = t.start == pos;
  b.size = t.size;
  b.source = t.source;
  b.tensor_id = id;
  b.tensor_order = t.order;
  b.transfer_id = t.transfers;
  b.type = t.type;
  return b;
}

sir::Schedule Generator::emit() {
  const int64_t align = a_.core.l2_channel_align_bytes;
  sir::Schedule s;
  s.buffersize = a_.core.l2_bytes;
  s.top_batch_cut = 1;
  s.xlen = a_.core_count();
  s.ylen = 1;
  // Tensors live at each position of each core.
  std::map<int, std::vector<int>> core_tensors;
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i].size > 0) core_tensors[tensors_[i].core].push_back(int(i));
  std::map<int, std::vector<const WeightLoad*>> core_weights;  // in weights_ order
  for (const auto& wt : weights_) core_weights[wt.core].push_back(&wt);
  for (auto& [core, ids] : per_core_) {
    sir::Core c;
    c.id = core;
    c.workloads.reserve(ids.size());
    const auto& mine = core_tensors[core];
    const auto& my_weights = core_weights[core];
    for (int id : ids) {
      Wl& w = wls_[size_t(id)];
      const LayerModel& L = layers_[size_t(w.layer)];
      sir::Workload& x = w.sir;
      x.workload_id = w.id;
      x.layer_name = L.fir->name;
      x.layer_type = L.pe ? sir::LayerType::Pe : sir::LayerType::Vp;
      x.lower = w.out.lo;
      x.upper = w.out.hi;
      x.ring_buffer_info = {{0, a_.core.l2_bytes}};
      if (!w.inputs.empty()) x.tile_padding_tblr = w.inputs[0].pad;
      for (size_t i = 0; i < w.inputs.size(); ++i) {
        const InputUse& u = w.inputs[i];
        const InputRef& in = L.inputs[i];
        if (L.move && u.pieces.empty()) continue;  // an input this part of the output does not read
        sir::Ifmap f;
        f.bitwidth = 8 * in.bytes;
        f.align = std::max<int64_t>(1, align / in.bytes);
        f.lower = {0, 0, 0, 0};
        f.upper = relative(u.region.hi, u.region.lo);
        Dims e = u.region.extent();
        f.size = timing::activation_bytes(a_, e[0], e[1], e[2], e[3], in.bytes);
        for (const auto& pc : u.pieces)
          if (std::find(f.transfer_id.begin(), f.transfer_id.end(), pc.transfer) == f.transfer_id.end())
            f.transfer_id.push_back(pc.transfer);
        x.ifmap.push_back(std::move(f));
      }
      // The whole output for this core and DRAM, then each region sent to
      // another core.
      sir::Ofmap of;
      of.destination = w.destinations;
      of.lower = {0, 0, 0, 0};
      of.upper = relative(w.out.hi, w.out.lo);
      Dims e = w.out.extent();
      of.size = timing::activation_bytes(a_, e[0], e[1], e[2], e[3], L.out_bytes);
      of.transfer_id = w.out_transfer;
      x.ofmap_size = of.size;
      x.ofmap.push_back(std::move(of));
      for (const auto& sd : w.sends) {
        sir::Ofmap piece;
        piece.destination = {sd.destination};
        piece.lower = relative(sd.region.lo, w.out.lo);
        piece.upper = relative(sd.region.hi, w.out.lo);
        Dims se = sd.region.extent();
        piece.size = timing::activation_bytes(a_, se[0], se[1], se[2], se[3], L.out_bytes);
        piece.transfer_id = sd.transfer;
        x.ofmap_size += piece.size;
        x.ofmap.push_back(std::move(piece));
      }
      if (w.weight >= 0) {
        const WeightLoad& wt = weights_[size_t(w.weight)];
        const Dims& shape = L.conv.weight;
        sir::Weight wg;
        wg.lower = {0, wt.k_lo, 0, 0};
        wg.upper = {0, wt.k_hi, shape[1] - 1, shape[2] * shape[3] - 1};
        wg.size = wt.bytes;
        wg.transfer_id = {wt.transfer};
        x.weight = wg;
      }
      // L2 snapshot: weights first, then activations, each by address.
      std::vector<int> live;
      for (int t : mine)
        if (tensors_[size_t(t)].start <= w.pos && w.pos <= tensors_[size_t(t)].end) live.push_back(t);
      std::stable_sort(live.begin(), live.end(), [&](int p, int q) {
        const auto &a = tensors_[size_t(p)], &b = tensors_[size_t(q)];
        bool wa = a.type == sir::TensorType::Weight, wb = b.type == sir::TensorType::Weight;
        return std::tie(wb, a.address) < std::tie(wa, b.address);
      });
      for (int t : live) x.buffer.push_back(buffer_entry(tensors_[size_t(t)], w.pos, w, t));
      // WL0 snapshot: every weight slice resident before the workload.
      std::vector<const WeightLoad*> wl0;
      for (const WeightLoad* wt : my_weights) {
        bool resident = wt->direct ? (wt->issue <= w.pos && w.pos <= wt->last)
                                   : (std::find(wt->workloads.begin(), wt->workloads.end(), w.id) != wt->workloads.end());
        if (resident) wl0.push_back(wt);
      }
      std::stable_sort(wl0.begin(), wl0.end(), [](const WeightLoad* p, const WeightLoad* q) { return p->order < q->order; });
      for (const WeightLoad* wt : wl0) {
        const LayerModel& WL = layers_[size_t(wt->layer)];
        const Dims& shape = WL.conv.weight;
        sir::WeightBufferEntry en;
        en.address = wt->wl0_address;
        en.align = align;
        en.bitwidth = 8;
        en.layer_name = WL.fir->name;
        en.size = wt->wl0_rows;
        en.transfer_id = {wt->transfer};
        if (wt->direct) {
          en.source = sir::WeightSource::Ddr;
          en.lower = Coord{0, wt->k_lo, 0, 0};
          en.upper = Coord{0, wt->k_hi, shape[1] - 1, shape[2] * shape[3] - 1};
          en.tensor_order = wt->order;
        } else {
          en.source = sir::WeightSource::Core;
        }
        x.wl0_buffer.entries.push_back(std::move(en));
      }
      x.wl0_buffer.when_empty = sir::EmptyForm::Null;
      c.workloads.push_back(std::move(x));  // the generator ends with emit()
    }
    s.cores.push_back(std::move(c));
  }
  // DRAM: weight loads, then activation loads, by transfer id.
  for (const auto& wt : weights_) {
    const LayerModel& L = layers_[size_t(wt.layer)];
    const Dims& shape = L.conv.weight;
    sir::DramLoad ld;
    for (int id : wt.workloads) ld.destination.push_back({wt.core, L.fir->name, sir::Endpoint::Core, id});
    ld.lower = {0, wt.k_lo, 0, 0};
    ld.upper = {0, wt.k_hi, shape[1] - 1, shape[2] * shape[3] - 1};
    ld.size = wt.bytes;
    ld.transfer_id = wt.transfer;
    ld.type = sir::DramLoadType::Weight;
    s.dram.out.push_back(ld);
  }
  for (const auto& ld : dram_out_) s.dram.out.push_back(ld);
  std::stable_sort(s.dram.out.begin(), s.dram.out.end(),
                   [](const sir::DramLoad& a, const sir::DramLoad& b) { return a.transfer_id < b.transfer_id; });
  s.dram.in = dram_in_;
  if (!host_.steps.empty()) s.dram.host = host_steps();
  return s;
}

// The host steps as the Scheduler IR gives them: the stores of their inputs,
// the loads of their results, their work and predicted time.
std::vector<sir::HostStep> Generator::host_steps() const {
  std::vector<sir::HostStep> out;
  for (size_t k = 0; k < host_.steps.size(); ++k) {
    const fir::HostStep& st = host_.steps[k];
    sir::HostStep h;
    h.layers = st.names();
    h.ops = st.ops;
    for (const auto& d : dram_in_)
      if (std::find(st.inputs.begin(), st.inputs.end(), d.layer_name) != st.inputs.end()) {
        h.related_ifmap.push_back(d.transfer_id);
        auto li = layer_index_.find(d.layer_name);
        Dims e = Box{d.lower, d.upper}.extent();
        h.size += e[0] * e[1] * e[2] * e[3] * layers_[size_t(li->second)].out_bytes;
      }
    for (const auto& [id, bytes] : host_loads_[k]) {
      h.related_ofmap.push_back(id);
      h.size += bytes;
    }
    std::sort(h.related_ofmap.begin(), h.related_ofmap.end());
    h.size += st.graph_io_bytes;  // graph inputs it reads, what it writes whole for the graph outputs
    h.time = timing::host_cycles(a_, h.ops, h.size);
    h.transfer_id = host_step_id(int(k));
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace

sir::Schedule generate(const fir::Graph& graph, const mapping::Mapping& mapping, const arch::Architecture& arch,
                       const Options& options, int64_t* estimated_cycles) {
  auto problems = mapping::check_against_arch(mapping, arch, options.mapping_file);
  auto more = mapping::check_against_fir(mapping, graph, options.mapping_file);
  problems.insert(problems.end(), more.begin(), more.end());
  mapping::throw_if_problems(problems);
  Generator gen(graph, mapping, arch, options, estimated_cycles);
  return gen.run();
}

Summary summarize(const sir::Schedule& s) {
  Summary r;
  for (const auto& c : s.cores)
    for (const auto& w : c.workloads) {
      ++r.workloads;
      r.tiles += w.tile_info.size();
      r.predicted_cycles += w.time;
      for (const auto& e : w.wl0_buffer.entries)
        if (e.layer_name == w.layer_name) {
          if (e.source == sir::WeightSource::Ddr) ++r.wl0_direct_layers;
          else ++r.l2_stream_layers;
        }
    }
  for (const auto& d : s.dram.out)
    if (d.type == sir::DramLoadType::Weight) r.weight_bytes += d.size;
  return r;
}

footprint::WeightRecord layer_weight_record(const arch::Architecture& a, const fir::Layer& l) {
  auto pc = fir::pe_conv(l);
  if (!pc) return {};
  const int elem = dtype_size(l.input_dtype, 1);
  if (l.op == fir::Op::Conv2d) {
    // Each output channel reads its group's channels of the input.
    const int64_t groups = pc->groups;
    const int64_t c = fir::chip_box(l.input_shape[0])[1];
    if (groups < 1 || c % groups != 0) return {};
    return footprint::weight_record(a, c / groups, pc->kernel[0], pc->kernel[1], elem);
  }
  // A dense layer: the convolution of its whole sample, [C, H, W] of its input.
  return footprint::weight_record(a, pc->weight[1], pc->weight[2], pc->weight[3], elem);
}

}  // namespace cct::irgen
