// gemini's cost model, inside: the engine's types and CostModel::Impl, shared
// by the model's passes (cost.cpp: expanding a plan into workloads, their
// inputs, spills and weight loads, and the figures; timeline.cpp: the event
// simulation of the workloads in asm's queue order). Not a public header:
// only those two files include it.
#pragma once

#include "gemini/cost.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <functional>
#include <queue>
#include <tuple>

#include "irgen/spill.hpp"
#include "irgen/overlap.hpp"
#include "irgen/tiling.hpp"
#include "irgen/weight_runs.hpp"
#include "support/error.hpp"
#include "support/int_math.hpp"

namespace cct::gemini {
namespace detail {

struct Route {
  std::vector<int> resources;
  int64_t latency = 0;
  int hops = 0, crossings = 0;
  Binding bound = Binding::Noc;  // class of the narrowest resource
  double bytes_per_cycle = 0;    // of the narrowest resource
};

inline mapping::Box shifted(mapping::Box b, int64_t n0) {
  b.lower[0] += n0;
  b.upper[0] += n0;
  return b;
}

// ---- The expanded plan ---------------------------------------------------------

struct Wl {
  int core = 0, seg = 0, group = 0, pos = 0, part = 0, layer = 0;
  int q = 0;                  // position on its core
  // A part computed in runs of output channels (irgen::weight_runs) is one
  // workload per run, consecutive on its core: `leader` is the first (the
  // workload itself otherwise); `group_weights`: the run's weights are
  // loaded for its batch group alone (a part computed for several groups).
  int leader = 0;
  bool run = false, group_weights = false;
  int64_t part_k = 0;         // output channels of the whole part (runs: all of them)
  int64_t cycles = 0;
  int64_t out_bytes = 0;
  mapping::Box box;           // output, whole-batch coordinates
  int64_t dram_bytes = 0;     // inputs loaded from DRAM
  int dram_pieces = 0;
  // Of those, what irgen loads ahead (an input whose every piece is the
  // network's input, or an earlier segment's store on this core): issued
  // with an earlier workload, no earlier than position `early_from`, far
  // enough back that the compute in between covers the load (irgen's
  // load_head), while that compute runs.
  int64_t early_bytes = 0;
  int early_pieces = 0;
  int early_from = 0;
  int early_head = -1;  // the position that issues them (CostModel::Impl::place_early_loads), -1: its own
  // Its receives start after the compute at this position (-1: at once;
  // -2: the model's rule, two workloads back); BuiltPlan::receive_after.
  int receive_after = -2;
  // Its compute waits for the store of the output at this position (-1: none;
  // BuiltPlan::store_before).
  int store_before = -1;
  std::vector<int> host_steps;  // host steps whose results it loads (its load waits for them)
  int in_channel = 0, out_channel = 0;
  int need_begin = 0, need_end = 0;   // into Engine::needs
  int send_begin = 0, send_end = 0;   // into Engine::sends (filled after all needs)
  int sync_begin = 0, sync_end = 0;   // into Engine::syncs: producers on other cores whose stores it loads
  int weight = -1;
  bool stored = false;
  int keep_until = -1;        // last position on its core that still holds its output (local consumers)
  bool kept = false;          // held there for a reader in a later segment (a candidate to spill)
  bool overwrite = false;     // an element-wise add written over an input of its box that dies with it
  int64_t foot = 0;           // L2 bytes of its inputs and output
  int copies = 0;             // pieces irgen copies (dt_cal) into an assembled input buffer
  int64_t own = 0;            // foot plus the tensors of its core it reads (kept there by their producers)
  int64_t end = 0;            // compute end
  int64_t arrival = 0;        // latest arrival of its received inputs
  Binding arrival_by = Binding::Noc;
};

// A piece a workload receives from another core (its producer and bytes:
// the piece, CostModel::Impl::pieces).
struct Need {
  int consumer = 0;  // workload
  uint32_t piece : 31;
  uint32_t direct : 1;  // a data movement's piece received straight into its output tensor
};

struct Wt {
  int core = 0, layer = 0;
  int64_t k_lo = 0, k_hi = 0;
  int first = 0, last = 0;  // positions on the core
  int64_t bytes = 0, rows = 0, tile_rows = 0;
  bool direct = true;       // DRAM -> weight buffer; else DRAM -> L2, streamed
  int issue = 0;
  int built_issue = -1;     // where irgen issued it (BuiltPlan), -1: the model places it
  bool built_whole = true;  // irgen's workloads compute from it whole in the weight buffer
  int channel = 0;
  int batch_group = -1;     // the batch group it is loaded for alone (a run's weights), -1: every group
  int64_t done = 0;
  Binding bound = Binding::Dram;
};

// A weight slice given its L2 bytes with the activations (irgen's second
// placement), from its first use on its core to its last.
struct ReservedWeight {
  int core = 0, first = 0, last = 0;
  int64_t bytes = 0;
};

// Scratch kept from one evaluation to the next (the next usually needs as
// much) is given back when the last one used less than a quarter of it: one
// much larger plan (a whole-plan baseline on a big chip) would otherwise
// hold its peak through the rest of the search and irgen's build.
constexpr size_t kScratchSlack = 4;
constexpr size_t kScratchKeptBytes = size_t(1) << 20;  // below this, kept whatever the use
template <class T>
void trim_scratch(std::vector<T>& v) {
  if (v.capacity() * sizeof(T) > kScratchKeptBytes && v.capacity() > kScratchSlack * v.size()) std::vector<T>().swap(v);
}

// An array that grows by blocks of a fixed size: appending never moves what
// it holds (a vector's growth holds the old copy and the new at once, and
// the pieces of a 256-core whole-plan baseline pass 16 MB), and indexing is
// a shift and a mask. Clearing keeps the blocks (scratch).
template <class T>
class BlockArray {
 public:
  size_t size() const { return size_; }
  T& operator[](size_t i) { return blocks_[i >> kShift][i & kMask]; }
  const T& operator[](size_t i) const { return blocks_[i >> kShift][i & kMask]; }
  void push_back(const T& x) {
    if (size_ >> kShift == blocks_.size()) blocks_.push_back(std::make_unique<T[]>(kBlock));
    (*this)[size_++] = x;
  }
  void clear() { size_ = 0; }
  // Gives back the blocks past those in use when they are most of them (trim_scratch).
  void trim() {
    const size_t used = (size_ + kMask) >> kShift;
    if (blocks_.size() * kBlock * sizeof(T) > kScratchKeptBytes && blocks_.size() > kScratchSlack * used) blocks_.resize(used);
  }

 private:
  static constexpr size_t kShift = 12, kBlock = size_t(1) << kShift, kMask = kBlock - 1;
  std::vector<std::unique_ptr<T[]>> blocks_;
  size_t size_ = 0;
};

// The largest capacity problem of a plan: bytes over, what, and its segment.
struct Overflow {
  int64_t bytes = 0;
  std::string problem;
  int segment = -1;
  void note(int64_t over, const std::string& what, int seg) {
    if (over > bytes) bytes = over, problem = what, segment = seg;
  }
};

}  // namespace detail

using detail::Route;
using detail::Wl;
using detail::Need;
using detail::Wt;
using detail::ReservedWeight;
using detail::kScratchSlack;
using detail::kScratchKeptBytes;
using detail::trim_scratch;
using detail::BlockArray;
using detail::Overflow;
using detail::shifted;

// ---- Implementation -----------------------------------------------------------

struct CostModel::Impl {
  const Network& net;
  const arch::Architecture& a;
  mutable irgen::Tiler tiler;
  mutable std::map<std::tuple<int, int64_t, int64_t, int64_t, int64_t, bool>, int64_t> cycles_memo;  // by output extent
  mutable std::map<std::tuple<int, int64_t, int64_t, int64_t, int64_t>, timing::Energy> energy_memo;
  // A data movement workload as irgen builds it (tile_move, connect_direct):
  // per input, the region it reads (the hull of its pieces, fir::move_pieces)
  // and whether its piece goes straight into the output tensor (one block,
  // no requantization: sent, loaded or copied there, no compute); the others
  // are read as any input and each piece copied (dt_cal) or requantized on
  // the vector processor.
  struct MoveInfo {
    std::vector<mapping::Box> region;
    std::vector<char> reads, direct;
    int64_t cycles = 0;
    timing::Energy energy;
  };
  mutable std::map<std::pair<int, std::array<int64_t, 8>>, MoveInfo> move_memo;
  std::vector<double> capacity;  // per resource, bytes per cycle
  int nch = 0, npools = 0, C = 0;
  std::vector<int> channel_pool;  // DRAM channel -> its pooled resource
  std::optional<arch::LinkResources> links;  // NoC and D2D links, after the DRAM pools
  mutable std::vector<std::unique_ptr<Route>> routes;  // [kind][a][b]
  mutable std::vector<arch::RouteLeg> legs;

  // Engine scratch, reused between evaluations.
  mutable std::vector<Wl> wls;
  mutable BlockArray<Need> needs;
  mutable std::vector<int> own_scratch;  // one workload's producers on its own core
  // Per layer, over its workloads in order: the running maximum of their last
  // sample and the minimum of the first sample from each on, so a reader
  // visits only the workloads whose samples can meet its region (at large
  // batch a layer has hundreds of workloads, one batch group after another).
  mutable std::vector<std::vector<int64_t>> sample_hi_upto, sample_lo_from;
  mutable std::vector<char> spilled_scratch;  // per workload: its output reaches later segments through DRAM
  // What connect_inputs finds the same on every spill round of one
  // evaluation: per input read (in workload and input order) its region and
  // the producer parts it meets, with the piece each gives (its bytes, not
  // its box: a 256-core plan has millions).
  struct ReadPiece {
    int producer;
    int before_reader;  // on the producer's core, the position before the reader (another core's producer)
    int64_t bytes : 63;     // act_bytes of the piece
    uint64_t whole : 1;     // the piece, the region and the reader's box are one box
  };
  mutable std::vector<mapping::Box> read_region;
  mutable std::vector<std::pair<int, int>> read_pieces;  // [begin, end) in `pieces`
  mutable BlockArray<ReadPiece> pieces;
  int need_producer(int k) const { return pieces[needs[size_t(k)].piece].producer; }
  int64_t need_bytes(int k) const { return pieces[needs[size_t(k)].piece].bytes; }
  mutable std::vector<int> needed_by;  // producer -> the last workload that pushed a need on it
  mutable std::vector<int64_t> kept_bytes_scratch;  // spill_kept: per position, kept bytes starting minus ending
  mutable std::vector<irgen::KeptTensor> kept_scratch;
  mutable std::vector<int> sends;  // needs, by producer (Wl::send_begin..send_end), in consumer order
  mutable std::vector<int> syncs;  // per workload (sync_begin..end): producer workloads it waits for
  mutable std::vector<Wt> wts;
  mutable std::vector<LayerCost> lcost_scratch;

  // Event engine scratch.
  // An op of the timeline other than a transfer between cores: a compute, a
  // DRAM load or store, a host step, a unit's configuration. Transfers
  // between cores (a send and its receive) are kept apart (Xfer): a 256-core
  // plan moves over a million of them, and each core sends one after another
  // and receives one after another, so they are chains per core, not ops
  // with edges of their own.
  struct Op {
    enum Kind : uint8_t { Compute, Load, Store, Host, Config } kind = Compute;
    int core = 0, wl = -1, weight = -1;
    int64_t bytes = 0, cycles = 0;
    double fixed = 0;            // latency before the data moves
    const Route* route = nullptr;
    int deps = 0;
    int group = -1;              // a multicast weight load's group (mc_groups)
    int succ_begin = 0, succ_end = 0;
    uint32_t stamp = 0;          // when it was made (Stamp)
    double start = -1, end = -1;
    int last_dep = -1;           // the dependency that ended last (a Handle)
  };
  // Ops and transfers are numbered by one clock as they are made, and so is
  // each dependency: the engine begins what became ready in that order (as
  // the queues of asm's program would), which fixes the order of events at
  // equal times.
  using Stamp = uint32_t;
  // An op (>= 0) or one side of a transfer (<= -2): a need's send or
  // receive (`needs`), or a synchronisation message's (`syncs`).
  using Handle = int;
  enum class Xfer : uint8_t { NeedSend, NeedRecv, SyncSend, SyncRecv };
  static Handle xfer_handle(Xfer t, int k) { return -2 - (k * 4 + int(t)); }
  static Xfer xfer_of(Handle h) { return Xfer((-2 - h) & 3); }
  static int xfer_index(Handle h) { return (-2 - h) >> 2; }
  static bool is_send(Xfer t) { return t == Xfer::NeedSend || t == Xfer::SyncSend; }
  // Per need or synchronisation message: whether its send and receive have
  // begun (a pair streams once both have), and a message no receive waits
  // for (its reader loads nothing of its own).
  enum XferFlag : uint8_t { kSendBegun = 1, kRecvBegun = 2, kUnpaired = 4 };
  // Sends made one after another, from chain position `lo` on: each takes
  // three ticks of the clock (itself and its two dependences).
  struct SendRun {
    int lo;
    Stamp stamp;
  };
  // A general dependency between ops, made at `stamp`.
  struct Edge {
    int from, to;
    Stamp stamp;
  };
  // Per workload: its ops, what its receives wait for besides the previous
  // receive, and when the edges from its transfers to its ops were made.
  struct WlOps {
    int compute = -1, load = -1, store = -1;
    int recv_after = -1;   // op its receives of needs wait for (-1: none)
    int sync_after = -1;   // op its receives of messages wait for
    Stamp recvs = 0;       // its first receive of a need (three ticks each, as sends)
    Stamp syncs = 0;       // its first receive of a message
    Stamp recv_edges = 0;  // its needs' receives -> its compute
    Stamp sync_edges = 0;  // its messages' receives -> its load
  };
  // Sends made with a core's workload (chain positions lo..hi) that its
  // next compute waits for (it writes the buffer they read).
  struct SendFeed {
    int lo, hi, compute;
    Stamp stamp;
  };
  struct Flow {
    Handle op = 0;
    Stamp stamp = 0;
    const Route* route = nullptr;
    double remaining = 0, rate = 0, last = 0;
  };
  struct Event {
    double time;
    uint64_t seq;
    int kind;  // 0: op ends, 1: stream starts, 2: flow done, 3: op begins (after the prologue)
    Handle id;
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  struct McGroup {
    std::vector<int> ops;  // member loads; the first carries the stream
    const Route* tree = nullptr;
    size_t ready = 0;      // members whose dependences are met
  };
  mutable std::vector<McGroup> mc_groups;
  mutable std::vector<int> mc_scratch, mc_cores;
  mutable std::vector<Op> ops;
  mutable std::vector<int64_t> host_bytes;            // per host step: bytes it reads and writes
  mutable std::vector<std::vector<int>> host_inputs;  // per host step: the workloads whose stores it reads
  mutable std::vector<Edge> edges;
  mutable std::vector<int> succ;
  mutable std::vector<Stamp> succ_stamp;
  mutable std::vector<WlOps> wl_ops;
  mutable std::vector<uint8_t> need_flags, sync_flags;  // XferFlag
  // Sends per core in program order: chains [send_begin[c], send_begin[c +
  // 1]). (A core's receives need no list: they are its workloads' needs,
  // then the messages of those that load, in order.)
  mutable std::vector<Handle> send_chain;
  mutable std::vector<int> send_begin;
  mutable std::vector<SendFeed> send_feeds;
  mutable std::vector<SendRun> send_runs;
  mutable std::vector<int> sync_reader;  // per message: the workload loading the store
  mutable std::vector<Flow> active;
  mutable std::vector<int> users;
  mutable int64_t work = 0;  // flow updates over all evaluations (CostModel::work)
  mutable std::vector<double> share;  // capacity / users of each resource, kept as flows start and end

  // `fresh`: the workloads changed since the last call (a new evaluation),
  // so the regions and pieces are found again.
  void connect_inputs(const std::vector<int>& seg_of, const std::vector<std::vector<int>>& per_core,
                      const std::vector<std::vector<int>>& layer_wls, const std::vector<char>& spilled,
                      bool fresh) const;
  // Connects the inputs and sends kept tensors through DRAM until every
  // core's L2 fits or none is left to spill (irgen::spill_choice); `l2`: the
  // bytes live at each position of each core, `reserved` weights included.
  // `built`: irgen's spills of a plan it built, taken first.
  void spill_kept(const std::vector<int>& seg_of, const std::vector<std::vector<int>>& per_core,
                  const std::vector<std::vector<int>>& layer_wls, const std::vector<ReservedWeight>& reserved,
                  std::vector<std::vector<int64_t>>& l2, const BuiltPlan* built) const;
  // Sends, grouped by producer in consumer order.
  void group_sends() const;
  // Where loads ahead are issued (Wl::early_head), their bytes added to `l2`.
  void place_early_loads(const std::vector<std::vector<int>>& per_core, std::vector<std::vector<int64_t>>& l2) const;
  // The weight slices (wts) of the workloads, their paths and issue
  // positions, their bytes added to `l2` and the weight buffer's rows;
  // `reserved`: those that cannot sit in the weight buffer whole already
  // have their L2 bytes. True when one streamed from L2 found no room there.
  bool place_weights(const Plan& plan, const std::vector<std::vector<int>>& per_core,
                     std::vector<std::vector<int64_t>>& l2, const BuiltPlan* built, bool reserved,
                     Overflow& overflow) const;
  // multicast: group the loads of one weight slice (on a multicast architecture).
  void simulate(const Plan& plan, const std::vector<std::vector<int>>& per_core, PlanCost& pc,
                std::vector<LayerCost>& lcost, bool detail, bool program_frame, bool multicast = true) const;

  // The scratch that grows with a plan's workloads and transfers, given back
  // where the last evaluation used little of it (trim_scratch).
  void release_unused_scratch() const {
    trim_scratch(wls), trim_scratch(sends), trim_scratch(syncs), trim_scratch(read_region), trim_scratch(read_pieces);
    trim_scratch(needed_by), trim_scratch(spilled_scratch), trim_scratch(ops), trim_scratch(edges), trim_scratch(succ);
    trim_scratch(succ_stamp), trim_scratch(wl_ops), trim_scratch(need_flags), trim_scratch(sync_flags);
    trim_scratch(send_chain), trim_scratch(send_feeds), trim_scratch(send_runs), trim_scratch(sync_reader);
    needs.trim(), pieces.trim();
  }

  Impl(const Network& n, const arch::Architecture& arch) : net(n), a(arch), tiler(arch) {
    C = a.core_count();
    nch = std::max(1, int(a.dram_channels.size()));
    // Channels attached at the same place interleave addresses (zebusim
    // spreads every transfer over them): one pooled resource per place.
    for (size_t c = 0; c < a.dram_channels.size(); ++c) {
      const arch::Site& s = a.dram_channels[c].attach;
      int pool = -1;
      for (size_t d = 0; d < c; ++d)
        if (a.dram_channels[d].attach == s) pool = channel_pool[d];
      if (pool < 0) {
        pool = int(capacity.size());
        capacity.push_back(0);
      }
      channel_pool.push_back(pool);
      capacity[size_t(pool)] += a.dram_channel_bytes_per_cycle();
    }
    if (capacity.empty()) capacity.push_back(a.dram_channel_bytes_per_cycle()), channel_pool.push_back(0);
    npools = int(capacity.size());
    links.emplace(a, npools);
    links->append_capacities(capacity);
    routes.resize(size_t(C) * size_t(C) + 2 * size_t(nch) * size_t(C));
  }

  Route make_route(const arch::Site& from, const arch::Site& to, int channel) const {
    Route r;
    if (channel >= 0) r.resources.push_back(channel_pool[size_t(channel)]);
    arch::RouteSummary sum;
    links->append_route(from, to, r.resources, sum, legs);
    r.hops = sum.mesh_hops, r.crossings = sum.d2d_crossings;
    r.latency = std::llround(a.route_latency_cycles(sum));
    set_narrowest(r);
    return r;
  }
  // The route's narrowest resource: its bandwidth and class.
  void set_narrowest(Route& r) const {
    r.bytes_per_cycle = std::numeric_limits<double>::infinity();
    for (int res : r.resources)
      if (capacity[size_t(res)] < r.bytes_per_cycle) {
        r.bytes_per_cycle = capacity[size_t(res)];
        r.bound = res < npools ? Binding::Dram : res >= links->d2d_base() ? Binding::D2d : Binding::Noc;
      }
    if (!std::isfinite(r.bytes_per_cycle)) r.bytes_per_cycle = a.noc.link_bytes_per_cycle, r.bound = Binding::Noc;
  }

  const Route& core_route(int from, int to) const {
    auto& slot = routes[size_t(from) * size_t(C) + size_t(to)];
    if (!slot) slot = std::make_unique<Route>(make_route(a.core_site(from), a.core_site(to), -1));
    return *slot;
  }
  // The tree a multicast load of DRAM channel `channel` takes to `cores`
  // (sorted): the channel's pool and each link of the union of the unicast
  // routes once (arch::LinkResources::append_multicast_route, as zebusim).
  mutable std::map<std::pair<int, std::vector<int>>, std::unique_ptr<Route>> tree_routes;
  const Route& tree_route(int channel, const std::vector<int>& cores) const {
    auto& slot = tree_routes[{channel, cores}];
    if (!slot) {
      std::vector<arch::Site> to;
      for (int c : cores) to.push_back(a.core_site(c));
      arch::Site dram = a.dram_channels.empty() ? a.core_site(cores.front()) : a.dram_site(channel);
      Route r;
      r.resources.push_back(channel_pool[size_t(channel)]);
      arch::RouteSummary sum;
      links->append_multicast_route(dram, to, r.resources, sum, legs);
      r.hops = sum.mesh_hops, r.crossings = sum.d2d_crossings;
      // The stream starts once the nearest member's route is crossed; each
      // member ends its own route's latency after that (as zebusim).
      r.latency = std::numeric_limits<int64_t>::max();
      for (int c : cores) r.latency = std::min(r.latency, dram_route(channel, c, false).latency);
      set_narrowest(r);
      slot = std::make_unique<Route>(std::move(r));
    }
    return *slot;
  }
  const Route& dram_route(int channel, int core, bool store) const {
    size_t base = size_t(C) * size_t(C) + (store ? size_t(nch) * size_t(C) : 0);
    auto& slot = routes[base + size_t(channel) * size_t(C) + size_t(core)];
    if (!slot) {
      arch::Site dram = a.dram_channels.empty() ? a.core_site(core) : a.dram_site(channel);
      slot = std::make_unique<Route>(store ? make_route(a.core_site(core), dram, channel)
                                           : make_route(dram, a.core_site(core), channel));
    }
    return *slot;
  }

  // ---- compute of one part

  irgen::ConvShape conv_shape(const Layer& L, const Dims& e, int64_t c) const {
    irgen::ConvShape cs;
    cs.n = e[0], cs.k = e[1], cs.h = e[2], cs.w = e[3];
    cs.c = c;
    if (L.pe()) {
      cs.r = L.kernel_h, cs.s = L.kernel_w, cs.stride_h = L.stride_h, cs.stride_w = L.stride_w;
      cs.dilation_h = L.dilation_h, cs.dilation_w = L.dilation_w;
      if (L.groups > 1) cs.group_out = L.out[1] / L.groups, cs.group_in = L.weight_c;
    }
    cs.in_bytes = L.inputs.empty() ? 1 : L.inputs[0].bytes;
    cs.out_bytes = L.out_bytes;
    return cs;
  }

  // The weight buffer as irgen lays it out: addressed in rows, each output
  // channel's weights on whole bursts; a streamed layer's tiles take two
  // slots of half the buffer.
  int64_t weight_rows(const Layer& L, int64_t k) const { return irgen::wl0_rows(a, k, L.weight_bytes_per_k); }
  // Output channels are cut in multiples of this (irgen's k_block): whole
  // array column blocks, and whole groups of a grouped convolution.
  int64_t k_block(const Layer& L) const { return std::lcm(a.core.pe_cols, k_unit(L)); }
  int64_t tile_k(const Layer& L) const {
    const int64_t cols = k_block(L);
    return std::max(cols, a.core.wl0_rows / 2 * a.core.wl0_row_bytes / std::max<int64_t>(1, L.weight_bytes_per_k) / cols * cols);
  }
  bool fits_wl0(const Layer& L, int64_t k) const { return weight_rows(L, k) <= a.core.wl0_rows; }
  // How irgen computes a part of k output channels (irgen::weight_runs):
  // `once` when it is computed once on its core (one batch group and row
  // stripe in its segment).
  irgen::WeightRuns runs(const Layer& L, int64_t k, bool once) const {
    if (!L.pe()) return {};
    return irgen::weight_runs(a, k, L.weight_bytes_per_k, L.out_bytes, once, k_unit(L));
  }
  // The channels of one run of a part computed once, 0 when it is not cut.
  int64_t run_k(const Layer& L, int64_t k) const {
    irgen::WeightRuns r = runs(L, k, true);
    return r.kind == irgen::WeightRuns::Runs ? r.run : 0;
  }

  const MoveInfo& move_info(int li, const mapping::Box& box) const {
    std::array<int64_t, 8> k{};
    for (size_t i = 0; i < 4; ++i) k[i] = box.lower[i], k[4 + i] = box.upper[i];
    auto key = std::make_pair(li, k);
    if (auto it = move_memo.find(key); it != move_memo.end()) return it->second;
    const Layer& L = net.layers[size_t(li)];
    MoveInfo mi;
    const size_t n = L.inputs.size();
    mi.region.assign(n, mapping::Box{});
    mi.reads.assign(n, 0);
    mi.direct.assign(n, 0);
    std::vector<int> count(n, 0);
    auto pieces = fir::move_pieces(*L.fir, box.lower, box.upper);
    if (!pieces) {
      // (irgen refuses such a layer; priced as reading every input whole)
      for (size_t i = 0; i < n; ++i) mi.region[i] = input_region(net, L, i, box), mi.reads[i] = 1;
      return move_memo.emplace(key, std::move(mi)).first->second;
    }
    for (size_t i = 0; i < n; ++i) {
      mi.region[i] = input_region(net, L, i, box);
      for (const auto& m : *pieces) count[i] += m.input == L.inputs[i].fir_index;
      mi.reads[i] = count[i] > 0;
      mi.direct[i] = count[i] == 1 && !L.inputs[i].requant;
    }
    for (const auto& m : *pieces) {
      size_t i = 0;
      while (i < n && L.inputs[i].fir_index != m.input) ++i;
      if (i == n || mi.direct[i]) continue;  // delivered by its transfer
      if (!L.inputs[i].requant) {
        mi.cycles += std::llround(a.timing.dt_fixed_cycles);  // a copy (dt_cal)
        continue;
      }
      // Requantized by the vector processor, one instruction per sample (as
      // a vector layer's workload is priced below).
      timing::VpOp op;
      op.c = m.in_hi[1] - m.in_lo[1] + 1, op.h = m.in_hi[2] - m.in_lo[2] + 1, op.w = m.in_hi[3] - m.in_lo[3] + 1;
      op.out_pixels = op.h * op.w;
      op.in_bytes = L.inputs[i].bytes;
      op.out_bytes = L.out_bytes;
      const int64_t samples = m.in_hi[0] - m.in_lo[0] + 1;
      mi.cycles += tiler.vp_cycles(op) + (samples - 1) * std::llround(a.timing.vp_fixed_cycles);
      op.h *= samples;
      mi.energy += timing::vp_cost(a, op).energy;
    }
    return move_memo.emplace(key, std::move(mi)).first->second;
  }

  int64_t part_cycles(int li, const mapping::Partition& p, int64_t G, bool direct) const {
    return box_cycles(li, mapping::part_box(p, group_dims(net.layers[size_t(li)], G), 0), direct);
  }

  // Cycles of one workload computing `box` of layer li (memoised by its extent).
  int64_t box_cycles(int li, const mapping::Box& box, bool direct) const {
    const Layer& L = net.layers[size_t(li)];
    if (L.move) return move_info(li, box).cycles;  // by position: its pieces depend on where the box is
    Dims e = extent(box);
    auto key = std::make_tuple(li, e[0], e[1], e[2], e[3], direct);
    if (auto it = cycles_memo.find(key); it != cycles_memo.end()) return it->second;
    int64_t cycles = 0;
    if (L.pe()) {
      int64_t c = L.inputs.empty() ? 1 : extent(input_region(net, L, 0, box))[1];
      irgen::ConvShape cs = conv_shape(L, e, c);
      // A part cut into runs (priced whole for the search's quick scores;
      // the plan's workloads are its runs) computes each at weight-buffer speed.
      const int64_t run = direct ? run_k(L, e[1]) : 0;
      if (direct && fits_wl0(L, e[1])) {
        cycles = tiler.plan(cs, 0).cycles;
      } else if (run > 0) {
        for (int64_t k = 0; k < e[1]; k += run) {
          Dims re = e;
          re[1] = std::min(run, e[1] - k);
          cycles += tiler.plan(conv_shape(L, re, c), 0).cycles;
        }
      } else {
        cs.weights_in_l2 = true;
        cycles = tiler.plan(cs, tile_k(L)).cycles;
      }
    } else {
      // Priced as irgen prices the workload.
      const bool pool = L.kind == LayerKind::Pool && !L.inputs.empty();
      timing::VpOp op = timing::vp_workload(pool ? extent(input_region(net, L, 0, box)) : e, e,
                                            L.inputs.empty() ? 1 : L.inputs[0].bytes, L.out_bytes);
      op.two_inputs = L.kind != LayerKind::Pool && L.two_input_vp;
      if (op.two_inputs && L.inputs.size() > 1)
        timing::set_second_operand(op, extent(input_region(net, L, 1, box)), L.inputs[1].bytes);
      op.window = L.pool_window;  // 1 but for pools and resizes
      // asm issues one VP instruction per sample; zebusim splits the time of
      // one sample's tile over them, so each further sample adds its fixed part.
      cycles = tiler.vp_cycles(op) + (e[0] - 1) * std::llround(a.timing.vp_fixed_cycles);
    }
    cycles_memo.emplace(key, cycles);
    return cycles;
  }

  timing::Energy part_energy(int li, const mapping::Partition& p, int64_t G) const {
    auto key = std::make_tuple(li, p.b * G, p.k, p.h, p.w);
    if (auto it = energy_memo.find(key); it != energy_memo.end()) return it->second;
    const Layer& L = net.layers[size_t(li)];
    Dims gd = group_dims(L, G);
    mapping::Box box = mapping::part_box(p, gd, 0);
    Dims e = extent(box);
    timing::Energy en;
    if (L.move) {
      en = move_info(li, box).energy;
    } else if (L.pe()) {
      timing::ConvTile t;
      t.n = e[0], t.k = e[1], t.h = e[2], t.w = e[3];
      t.c = L.inputs.empty() ? 1 : extent(input_region(net, L, 0, box))[1];
      if (L.pe()) {
        t.r = L.kernel_h, t.s = L.kernel_w, t.stride_h = L.stride_h, t.stride_w = L.stride_w;
        t.dilation_h = L.dilation_h, t.dilation_w = L.dilation_w;
        if (L.groups > 1) t.groups = e[1] / k_unit(L);
      }
      t.in_bytes = L.inputs.empty() ? 1 : L.inputs[0].bytes;
      t.out_bytes = L.out_bytes;
      en = timing::conv_cost(a, timing::with_default_mini_tiles(t), "gemini").energy;
    } else {
      timing::VpOp op;
      op.c = e[1], op.h = e[2] * e[0], op.w = e[3];
      op.in_bytes = L.inputs.empty() ? 1 : L.inputs[0].bytes;
      op.out_bytes = L.out_bytes;
      op.two_inputs = L.two_input_vp;
      if (op.two_inputs && L.inputs.size() > 1) {
        Dims se = extent(input_region(net, L, 1, box));
        op.second_elements = se[0] * se[1] * se[2] * se[3];
        op.second_bytes = L.inputs[1].bytes;
      }
      en = timing::vp_cost(a, op).energy;
    }
    energy_memo.emplace(key, en);
    return en;
  }

  // The configuration a workload of layer L computing `box` writes (timing::layer_change_config_cycles).
  timing::UnitConfig unit_config_of(const Layer& L, const mapping::Box& box) const {
    timing::UnitConfig u;
    u.pe = L.pe();
    u.out = extent(box);
    u.in = L.inputs.empty() ? u.out : extent(input_region(net, L, 0, box));
    u.kernel_h = L.kernel_h, u.kernel_w = L.kernel_w, u.stride_h = L.stride_h, u.stride_w = L.stride_w;
    u.in_bytes = L.inputs.empty() ? 1 : L.inputs[0].bytes;
    u.out_bytes = L.out_bytes;
    if (L.pe()) {
      pe_register_values(*L.fir, u);
      // asm's pe_cfg_gp: the groups the box's output channels hold.
      const int64_t groups = L.fir->group_count();
      const int64_t per_group = groups > 1 ? fir::chip_box(L.fir->output_shape[0])[1] / groups : 0;
      if (per_group > 0) u.groups = u.out[1] / per_group;
      const auto d = L.fir->dilations();
      u.dilation = {d[0], d[1]};
    } else {
      vp_register_values(*L.fir, u);
    }
    return u;
  }

  // A number of the layer's activation_attr, -1 when absent (register values compared, not used).
  static double act_number(const fir::Layer& f, const char* key) {
    const Json* attr = f.activation_attr();
    const Json* v = attr ? attr->find(key) : nullptr;
    return v && v->is_number() ? v->as_double() : -1.0;
  }

  // The values asm writes into pe_cfg_pm besides the stride: the output's
  // quantisation (INT8 outputs) and the fused activation.
  static void pe_register_values(const fir::Layer& f, timing::UnitConfig& u) {
    const bool int8_out = !f.output_dtype.empty() && f.output_dtype[0] == "int8";
    if (int8_out && f.quant_info && f.quant_info->output_scale && f.quant_info->output_zero_point)
      u.requantize = {*f.quant_info->output_scale, *f.quant_info->output_zero_point, 1.0};
    if (f.activation && f.activation->type) {
      static const char* const kTypes[] = {"relu", "relu6", "clip", "leaky_relu"};
      double code = 9;
      for (size_t i = 0; i < std::size(kTypes); ++i)
        if (*f.activation->type == kTypes[i]) code = double(i + 1);
      u.act = {code, act_number(f, "max") + act_number(f, "alpha")};
    }
  }

  // The values asm writes into the vector processor's per-layer registers,
  // from the layer's module_list (lib/asm: the VP layer's configuration).
  static void vp_register_values(const fir::Layer& f, timing::UnitConfig& u) {
    u.max_pool = f.op == fir::Op::MaxPool2d;
    const auto mul = f.fp32_mul_group();
    const bool act = fir::is_activation_op(f.op) || (mul && mul->act_mode != "others");
    u.multiplier = mul && mul->mul_group_k_scalar ? *mul->mul_group_k_scalar : act ? 1.0 : 0.0;
    if (const auto post = f.post_cal()) u.requantize = {post->mul_k, post->sum_b, post->carry_sel ? 1.0 : 0.0};
    else u.requantize = {1.0, 0.0, 0.0};
    if (const auto pre = f.pre_cal()) {
      u.dequantize_a = {pre->requan_scale_a, pre->requan_zp_a};
      u.dequantize_b = {pre->requan_scale_b.value_or(0.0), pre->requan_zp_b.value_or(0.0)};
    } else {
      u.dequantize_a = {1.0, 0.0};
    }
    // vp_cfg_act: clip, leaky_relu, elu and hard_sigmoid take parameters.
    u.has_act = f.op == fir::Op::Clip || f.op == fir::Op::LeakyRelu || f.op == fir::Op::Elu || f.op == fir::Op::HardSigmoid;
    if (u.has_act) {
      u.act = {double(int(f.op)) + act_number(f, "min") + act_number(f, "alpha"),
               act_number(f, "max") + act_number(f, "beta")};
    }
  }

  int64_t act_bytes(const mapping::Box& b, int bytes) const {
    Dims e = extent(b);
    return timing::activation_bytes(a, e[0], e[1], e[2], e[3], bytes);
  }

  timing::Energy link_energy(const Route& r, int64_t bytes) const {
    timing::Energy e;
    double bits = double(bytes) * 8.0;
    e.noc = bits * double(r.hops) * a.energy.noc_pj_per_bit_hop;
    e.d2d = bits * double(r.crossings) * a.energy.d2d_pj_per_bit;
    return e;
  }

  // The row stripes of a segment's layers, as irgen cuts them.
  std::vector<std::vector<int64_t>> row_stripes(const SegmentPlan& sp) const {
    const size_t n = sp.layers.size();
    std::vector<int64_t> rows(n);
    std::vector<std::vector<size_t>> consumers(n);
    for (size_t c = 0; c < n; ++c) {
      const Layer& L = net.layers[size_t(sp.layers[c].layer)];
      rows[c] = L.out[2];
      for (const auto& in : L.inputs)
        for (size_t p = 0; p < c; ++p)
          if (in.producer == sp.layers[p].layer && (consumers[p].empty() || consumers[p].back() != c))
            consumers[p].push_back(c);
    }
    auto rows_read = [&](size_t c, size_t p, int64_t m) -> int64_t {
      if (m == 0) return 0;
      const Layer& L = net.layers[size_t(sp.layers[c].layer)];
      mapping::Box out;
      out.upper = {L.out[0] - 1, L.out[1] - 1, m - 1, L.out[3] - 1};
      int64_t end = 0;
      for (size_t i = 0; i < L.inputs.size(); ++i)
        if (L.inputs[i].producer == sp.layers[p].layer) end = std::max(end, input_region(net, L, i, out).upper[2] + 1);
      return end;
    };
    return mapping::row_stripes(rows, consumers, sp.row_groups, rows_read);
  }

  PlanCost evaluate(const Plan& plan, bool detail, bool program_frame, const BuiltPlan* built) const;
};

}  // namespace cct::gemini
