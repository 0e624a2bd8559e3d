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

std::string_view objective_name(Objective o) {
  switch (o) {
    case Objective::Latency: return "latency";
    case Objective::Energy: return "energy";
    case Objective::Edp: return "edp";
  }
  return "?";
}

std::string_view binding_name(Binding b) {
  switch (b) {
    case Binding::Compute: return "compute";
    case Binding::Dram: return "DRAM";
    case Binding::Noc: return "NoC";
    case Binding::D2d: return "D2D";
  }
  return "?";
}

std::string_view step_name(TimelineStep::Kind k) {
  switch (k) {
    case TimelineStep::Compute: return "compute";
    case TimelineStep::Load: return "load";
    case TimelineStep::Store: return "store";
    case TimelineStep::Send: return "send";
  }
  return "?";
}

double PlanCost::value(Objective o, const arch::Architecture& a) const {
  double v = 0;
  switch (o) {
    case Objective::Latency: v = double(cycles); break;
    case Objective::Energy: v = energy.total(); break;
    case Objective::Edp: v = double(cycles) * energy.total(); break;
  }
  if (overflow > 0) v *= 4.0 + 4.0 * double(overflow) / double(std::max<int64_t>(1, a.core.l2_bytes));
  return v;
}

namespace {

struct Route {
  std::vector<int> resources;
  int64_t latency = 0;
  int hops = 0, crossings = 0;
  Binding bound = Binding::Noc;  // class of the narrowest resource
  double bytes_per_cycle = 0;    // of the narrowest resource
};

mapping::Box shifted(mapping::Box b, int64_t n0) {
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

}  // namespace

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

CostModel::CostModel(const Network& net, const arch::Architecture& a)
    : net_(net), arch_(a), impl_(std::make_unique<Impl>(net, a)) {}
CostModel::~CostModel() = default;

int64_t CostModel::part_cycles(int layer, const mapping::Partition& p, int64_t batch_groups) const {
  return impl_->part_cycles(layer, p, batch_groups, true);
}

int64_t CostModel::part_weight_bytes(int layer, const mapping::Partition& p) const {
  const Layer& L = net_.layers[size_t(layer)];
  return L.pe() ? L.weight_bytes_per_k * (L.out[1] / std::max<int64_t>(1, p.k)) : 0;
}

int64_t CostModel::work() const { return impl_->work; }

double CostModel::dram_stream_bytes_per_cycle() const {
  double bw = arch_.dram_channel_bytes_per_cycle();
  if (!arch_.d2d_links.empty()) bw = std::min(bw, arch_.d2d.link_bytes_per_cycle);
  if (arch_.core_count() > 1) bw = std::min(bw, arch_.noc.link_bytes_per_cycle);
  return bw;
}

PlanCost CostModel::evaluate(const Plan& plan, bool detail, bool program_frame, const BuiltPlan* built) const {
  return impl_->evaluate(plan, detail, program_frame, built);
}

// The inputs of every workload (local, received, or loaded from DRAM), its
// L2 footprint and what it keeps for later readers, with the outputs in
// `spilled` (by their first run) going through DRAM to later segments.
void CostModel::Impl::connect_inputs(const std::vector<int>& seg_of, const std::vector<std::vector<int>>& per_core,
                                     const std::vector<std::vector<int>>& layer_wls, const std::vector<char>& spilled,
                                     bool fresh) const {
  needs.clear();
  syncs.clear();
  if (fresh) read_region.clear(), read_pieces.clear(), pieces.clear();
  needed_by.assign(wls.size(), -1);
  size_t read = 0;  // the next input read, in the order of read_region
  // Host steps: bytes read (their inputs, stored whole) and written (the
  // regions loaded back, results that are graph outputs), as irgen counts them.
  host_bytes.assign(net.host_steps.size(), 0);
  host_inputs.assign(net.host_steps.size(), {});
  for (size_t k = 0; k < net.host_steps.size(); ++k) {
    host_bytes[k] = net.host_steps[k].graph_io_bytes;
    for (int li : net.host_steps[k].inputs)
      for (int pid : layer_wls[size_t(li)]) {
        host_inputs[k].push_back(pid);
        mapping::Dims e = extent(wls[size_t(pid)].box);
        host_bytes[k] += e[0] * e[1] * e[2] * e[3] * net.layers[size_t(li)].out_bytes;
      }
  }
  sample_hi_upto.resize(layer_wls.size());
  sample_lo_from.resize(layer_wls.size());
  for (size_t l = 0; fresh && l < layer_wls.size(); ++l) {
    const std::vector<int>& ids = layer_wls[l];
    auto& hi = sample_hi_upto[l];
    auto& lo = sample_lo_from[l];
    hi.resize(ids.size());
    lo.resize(ids.size());
    for (size_t k = 0; k < ids.size(); ++k)
      hi[k] = std::max(k ? hi[k - 1] : std::numeric_limits<int64_t>::min(), wls[size_t(ids[k])].box.upper[0]);
    for (size_t k = ids.size(); k-- > 0;)
      lo[k] = std::min(k + 1 < ids.size() ? lo[k + 1] : std::numeric_limits<int64_t>::max(), wls[size_t(ids[k])].box.lower[0]);
  }
  for (Wl& w : wls) {
    w.host_steps.clear();
    w.keep_until = -1;
    w.kept = false;
    w.dram_bytes = 0;
    w.dram_pieces = 0;
    w.early_bytes = 0;
    w.early_pieces = 0;
    w.early_from = 0;
    w.stored = false;
    w.overwrite = false;
    w.copies = 0;
  }
  for (size_t id = 0; id < wls.size(); ++id) {
    Wl& w = wls[id];
    const Layer& L = net.layers[size_t(w.layer)];
    w.need_begin = int(needs.size());
    w.sync_begin = int(syncs.size());
    int64_t foot = w.out_bytes;
    std::vector<int>& own_reads = own_scratch;
    own_reads.clear();
    bool loaded_over = false;
    // A later run of a part reads the inputs its first run loaded or
    // received (irgen keeps them in L2 for it) and writes the same output
    // tensor: the earlier runs' outputs stay.
    const bool sibling = w.leader != int(id);
    if (sibling) {
      const Wl& first = wls[size_t(w.leader)];
      foot += first.foot - first.out_bytes;
      for (int k = w.leader; k < int(id); ++k) wls[size_t(k)].keep_until = std::max(wls[size_t(k)].keep_until, w.q);
    }
    const MoveInfo* mi = L.move ? &move_info(w.layer, w.box) : nullptr;
    for (size_t in = 0; in < L.inputs.size(); ++in) {
      const LayerInput& li = L.inputs[in];
      if (mi && !mi->reads[in]) continue;  // gives this box no piece
      const size_t r = read++;
      if (fresh) {
        read_region.push_back(mi ? mi->region[in] : input_region(net, L, in, w.box));
        read_pieces.push_back({0, 0});
      }
      const mapping::Box reg = read_region[r];
      // A piece delivered straight into a data movement's output takes no
      // buffer of its own (the output's bytes are counted once).
      const bool direct = mi && mi->direct[in];
      if (li.producer < 0 || seg_of[size_t(li.producer)] < 0) {
        if (sibling) continue;
        int64_t b = act_bytes(reg, li.bytes);
        w.dram_bytes += b, ++w.dram_pieces, foot += direct ? 0 : b;
        if (li.producer < 0 && li.host_step < 0) w.early_bytes += b, ++w.early_pieces;  // the network's input
        if (li.host_step >= 0) {
          // A host result: the host writes the region this workload loads (unpadded).
          mapping::Dims e = extent(reg);
          host_bytes[size_t(li.host_step)] += e[0] * e[1] * e[2] * e[3] * li.bytes;
          w.host_steps.push_back(li.host_step);
        }
        continue;
      }
      const Layer& P = net.layers[size_t(li.producer)];
      // irgen reads an input in place only when all of it is in one tensor
      // on this core (one producer part, or its runs); otherwise it gives the
      // region a buffer of its own and copies the local pieces into it.
      int local_leader = -1, local_pieces = 0;
      bool several = false;
      int64_t other_bytes = 0;  // counted in foot already: loaded and received pieces
      if (fresh) {
        // The producer parts whose samples can meet the region, then those it meets.
        const std::vector<int>& producers = layer_wls[size_t(li.producer)];
        const auto& hi = sample_hi_upto[size_t(li.producer)];
        const auto& lo = sample_lo_from[size_t(li.producer)];
        const size_t first = size_t(std::lower_bound(hi.begin(), hi.end(), reg.lower[0]) - hi.begin());
        const size_t last = size_t(std::upper_bound(lo.begin(), lo.end(), reg.upper[0]) - lo.begin());
        read_pieces[r].first = int(pieces.size());
        for (size_t k = first; k < last; ++k) {
          const Wl& pw = wls[size_t(producers[k])];
          mapping::Box x;
          if (!intersect(pw.box, reg, &x)) continue;
          int before = -1;
          if (pw.core != w.core) {
            const auto& ids = per_core[size_t(pw.core)];
            before = int(std::lower_bound(ids.begin(), ids.end(), int(id)) - ids.begin()) - 1;
          }
          pieces.push_back({producers[k], before, act_bytes(x, P.out_bytes), x == w.box && reg == w.box ? 1u : 0u});
        }
        read_pieces[r].second = int(pieces.size());
      }
      // Loaded ahead when every piece is reloaded from this core's store
      // in an earlier segment (irgen's reload; another core's store waits
      // for that core's message, kept in the reader's block here).
      bool reload = !sibling && w.q > 0;
      int64_t reload_bytes = 0;
      int reload_pieces = 0;
      for (int k = read_pieces[r].first; k < read_pieces[r].second; ++k) {
        const ReadPiece& piece = pieces[size_t(k)];
        const int pid = piece.producer;
        Wl& pw = wls[size_t(pid)];
        if (pw.seg != w.seg && spilled[size_t(pw.leader)]) {
          // Spilled: stored by its producer, this piece loaded back (after
          // the storing core's message when that is another core).
          pw.stored = true;
          if (sibling) continue;
          const int64_t b = piece.bytes;
          w.dram_bytes += b, ++w.dram_pieces, foot += direct ? 0 : b;
          reload = reload && pw.core == w.core, reload_bytes += b, ++reload_pieces;
          other_bytes += direct ? 0 : b;
          if (pw.core != w.core) syncs.push_back(pid);
          // irgen writes an element-wise add over the buffer an input is loaded into, too.
          loaded_over = loaded_over || (L.fir->op == fir::Op::ElementWiseAdd && piece.whole);
        } else if (pw.core == w.core) {
          // Stays in this core's L2 until here.
          reload = false;
          own_reads.push_back(pid);
          if (local_leader >= 0 && pw.leader != local_leader) several = true;
          local_leader = pw.leader, ++local_pieces;
          pw.keep_until = std::max(pw.keep_until, w.q);
          pw.kept = pw.kept || pw.seg != w.seg;
        } else if (!sibling) {
          // Another core, in this segment or an earlier one: sent core to core.
          reload = false;
          if (needed_by[size_t(pid)] != int(id)) {
            needed_by[size_t(pid)] = int(id);
            // asm sends each consumer only the region it reads.
            const int64_t b = piece.bytes;
            needs.push_back({int(id), uint32_t(k), direct ? 1u : 0u});
            foot += direct ? 0 : b;
            other_bytes += direct ? 0 : b;
          }
          // For a later segment the sender keeps it until the reader comes
          // (irgen: live through its core's workloads before the reader).
          if (pw.seg != w.seg) {
            pw.keep_until = std::max(pw.keep_until, piece.before_reader);
            pw.kept = true;
          }
        }
      }
      if (reload && reload_pieces > 0) {
        int from = w.q;  // the first position of this segment on the core
        const auto& ids = per_core[size_t(w.core)];
        while (from > 0 && wls[size_t(ids[size_t(from - 1)])].seg == w.seg) --from;
        w.early_from = w.early_bytes > 0 ? std::min(w.early_from, from) : from;
        w.early_bytes += reload_bytes, w.early_pieces += reload_pieces;
      }
      if (!mi && !sibling && local_pieces > 0 && (several || other_bytes > 0)) {
        foot += act_bytes(reg, P.out_bytes) - other_bytes;  // the assembled buffer (its other pieces counted above)
        w.copies += local_pieces;
      }
    }
    w.need_end = int(needs.size());
    // Received in transfer order, the order each sending core uses for one
    // reader too (asm sorts both by transfer id): irgen numbers a reader's
    // transfers input by input, each input's producers in workload order,
    // which is the order they were pushed here.
    // One message per producer, however many pieces of its output are loaded.
    std::sort(syncs.begin() + w.sync_begin, syncs.end());
    syncs.erase(std::unique(syncs.begin() + w.sync_begin, syncs.end()), syncs.end());
    w.sync_end = int(syncs.size());
    w.foot = foot;
    std::sort(own_reads.begin(), own_reads.end());
    own_reads.erase(std::unique(own_reads.begin(), own_reads.end()), own_reads.end());
    w.own = foot;
    bool overwrite = loaded_over;  // irgen writes an element-wise add over an input of its box that dies with it
    for (int pid : own_reads) {
      w.own += wls[size_t(pid)].out_bytes;
      overwrite = overwrite || (L.fir->op == fir::Op::ElementWiseAdd && wls[size_t(pid)].box == w.box);
    }
    if (overwrite) w.own -= w.out_bytes;
    w.overwrite = overwrite;
    if (L.to_dram) w.stored = true;
    // Outputs read by layers outside the plan go to DRAM too.
    for (int c : L.consumers)
      if (seg_of[size_t(c)] < 0) w.stored = true;
  }
}

// Where the inputs a workload loads ahead (Wl::early_bytes) are issued, as
// irgen places their buffers (load_head): far enough back that the PE
// compute up to the reader covers the load at one channel's rate, no
// earlier than early_from, and only over positions whose L2 has room for
// the bytes next to what is live there (irgen shrinks a head that does not
// fit); the bytes then count there for the next.
void CostModel::Impl::place_early_loads(const std::vector<std::vector<int>>& per_core,
                                        std::vector<std::vector<int64_t>>& l2) const {
  for (int c = 0; c < C; ++c) {
    const auto& mine = per_core[size_t(c)];
    auto& used = l2[size_t(c)];
    for (size_t qi = 0; qi < mine.size(); ++qi) {
      Wl& w = wls[size_t(mine[qi])];
      w.early_head = -1;
      if (w.early_bytes <= 0) continue;
      const int pos = irgen::covering(
          a, int(qi), -1, w.early_from, w.early_bytes,
          [&](int p) {
            const Wl& x = wls[size_t(mine[size_t(p)])];
            return net.layers[size_t(x.layer)].pe() ? x.cycles : int64_t(0);
          },
          [&](int p) { return used[size_t(p)] + w.early_bytes <= a.core.l2_bytes; });
      if (pos == int(qi)) continue;
      w.early_head = pos;
      for (int q = pos; q < int(qi); ++q) used[size_t(q)] += w.early_bytes;
    }
  }
}

PlanCost CostModel::Impl::evaluate(const Plan& plan, bool detail, bool program_frame, const BuiltPlan* built) const {
  PlanCost pc;
  const int nlayers = int(net.layers.size());
  // Where each layer is: segment and position, -1 when not in the plan.
  std::vector<int> seg_of(static_cast<size_t>(nlayers), -1), pos_of(size_t(nlayers), -1);
  for (size_t s = 0; s < plan.segments.size(); ++s)
    for (size_t p = 0; p < plan.segments[s].layers.size(); ++p) {
      int l = plan.segments[s].layers[p].layer;
      seg_of[size_t(l)] = int(s), pos_of[size_t(l)] = int(p);
    }

  // ---- workloads, in irgen's order
  wls.clear();
  needs.clear();
  sends.clear();
  syncs.clear();
  wts.clear();
  std::vector<std::vector<int>> layer_wls(static_cast<size_t>(nlayers));
  std::vector<std::vector<int>> per_core(static_cast<size_t>(C));
  int too_large = -1;  // a layer not even one output channel of which fits half the weight buffer
  for (size_t s = 0; s < plan.segments.size(); ++s) {
    const SegmentPlan& sp = plan.segments[s];
    const int64_t G = std::max<int64_t>(1, sp.batch_groups), R = std::max<int64_t>(1, sp.row_groups);
    const std::vector<std::vector<int64_t>> ends = R > 1 ? row_stripes(sp) : std::vector<std::vector<int64_t>>{};
    for (int64_t g = 0; g < G * R; ++g)
      for (size_t p = 0; p < sp.layers.size(); ++p) {
        const LayerPlan& lp = sp.layers[p];
        const Layer& L = net.layers[size_t(lp.layer)];
        Dims gd = group_dims(L, G);
        const int64_t bg = g / R, r = g % R;
        int64_t row0 = 0;
        if (R > 1) {
          row0 = r > 0 ? ends[p][size_t(r - 1)] : 0;
          gd[2] = ends[p][size_t(r)] - row0;
          if (gd[2] == 0) continue;  // an empty stripe
        }
        for (size_t i = 0; i < lp.cores.size(); ++i) {
          Wl w;
          w.core = lp.cores[i];
          w.seg = int(s), w.group = int(g), w.pos = int(p), w.part = int(i), w.layer = lp.layer;
          w.box = shifted(mapping::part_box(lp.part, gd, int64_t(i)), bg * gd[0]);
          w.box.lower[2] += row0;
          w.box.upper[2] += row0;
          w.in_channel = int(lp.dram.ifmap), w.out_channel = int(lp.dram.ofmap);
          // One workload per run of output channels, as irgen cuts the part.
          const mapping::Box part = w.box;
          const int64_t k = extent(part)[1];
          const irgen::WeightRuns wr = runs(L, k, G * R == 1);
          if (wr.kind == irgen::WeightRuns::TooLarge && too_large < 0) too_large = lp.layer;
          w.run = wr.kind == irgen::WeightRuns::Runs;
          w.group_weights = w.run && G * R > 1;
          w.part_k = k;
          w.leader = int(wls.size());
          const int64_t step = w.run ? wr.run : k;
          for (int64_t k0 = part.lower[1]; k0 <= part.upper[1]; k0 += step) {
            w.box.lower[1] = k0;
            w.box.upper[1] = std::min(part.upper[1], k0 + step - 1);
            w.out_bytes = act_bytes(w.box, L.out_bytes);
            w.q = int(per_core[size_t(w.core)].size());
            per_core[size_t(w.core)].push_back(int(wls.size()));
            layer_wls[size_t(lp.layer)].push_back(int(wls.size()));
            wls.push_back(w);
          }
        }
      }
  }

  // ---- inputs: local, received, or from DRAM; spills; weights
  // An output kept in its core's L2 for a later segment goes through DRAM
  // when L2 runs out, as irgen decides it (spill_kept). Weights that cannot
  // sit in the weight buffer whole stream from an L2 copy: as irgen does
  // (connect_and_place), a first placement leaves them out of the
  // activations' room; when one then finds none, they are given their bytes
  // with the activations, which spills kept tensors for them, and all
  // starts again.
  std::vector<std::vector<int64_t>> l2(static_cast<size_t>(C));
  std::vector<ReservedWeight> reserved;
  Overflow overflow;
  for (int attempt = 0;; ++attempt) {
    overflow = Overflow{};
    spill_kept(seg_of, per_core, layer_wls, reserved, l2, built);
    group_sends();
    for (const Wl& w : wls)
      if (w.own - a.core.l2_bytes > pc.own_overflow) pc.own_overflow = w.own - a.core.l2_bytes, pc.own_overflow_segment = w.seg;
    pc.uncomputable = too_large;
    if (too_large >= 0) {
      const Layer& L = net.layers[size_t(too_large)];
      overflow.note(weight_rows(L, 1) * a.core.wl0_row_bytes - a.core.wl0_rows / 2 * a.core.wl0_row_bytes,
                    "one output channel's weights of \"" + L.name + "\" do not fit half of the weight buffer", -1);
    }
    for (int c = 0; c < C; ++c)
      for (size_t q = 0; q < l2[size_t(c)].size(); ++q)
        if (l2[size_t(c)][q] > a.core.l2_bytes)
          overflow.note(l2[size_t(c)][q] - a.core.l2_bytes,
                        "the activations of workload " + std::to_string(q) + " on core " + std::to_string(c) + " need " +
                            std::to_string(l2[size_t(c)][q]) + " bytes of L2",
                        wls[size_t(per_core[size_t(c)][q])].seg);
    const bool weights_short = place_weights(plan, per_core, l2, built, attempt > 0, overflow);
    if (!weights_short || attempt > 0) break;
    reserved.clear();
    for (const Wt& t : wts)
      if (t.rows > a.core.wl0_rows) reserved.push_back({t.core, t.first, t.last, t.bytes});
    if (reserved.empty()) break;
  }

  // ---- timeline
  for (Wl& w : wls) {
    const SegmentPlan& sp = plan.segments[size_t(w.seg)];
    bool direct = w.weight < 0;
    if (!direct) {
      const Wt& t = wts[size_t(w.weight)];
      direct = t.built_issue >= 0 ? t.built_whole : t.direct || (w.run && !w.group_weights);
    }
    w.cycles = sp.row_groups > 1 || w.run || net.layers[size_t(w.layer)].move
                   ? box_cycles(w.layer, w.box, direct)
                                          : part_cycles(w.layer, sp.layers[size_t(w.pos)].part, sp.batch_groups, direct);
    w.cycles += int64_t(w.copies) * std::llround(a.timing.dt_fixed_cycles);
  }
  place_early_loads(per_core, l2);
  if (built)  // (workloads are made afresh per evaluation, with the model's rule)
    for (Wl& w : wls) {
      if (auto r = built->receive_after.find({w.core, w.q}); r != built->receive_after.end() && r->second < w.q)
        w.receive_after = r->second;
      if (auto r = built->store_before.find({w.core, w.q}); r != built->store_before.end() && r->second < w.q)
        w.store_before = r->second;
    }
  for (int c = 0; c < C; ++c) pc.cores_used += per_core[size_t(c)].empty() ? 0 : 1;
  simulate(plan, per_core, pc, lcost_scratch, detail, program_frame);
  std::vector<LayerCost>& lcost = lcost_scratch;
  timing::Energy total;

  // Compute energy and the per-layer binding.
  for (const SegmentPlan& sp : plan.segments)
    for (const LayerPlan& lp : sp.layers) {
      LayerCost& lc = lcost[size_t(lp.layer)];
      timing::Energy e = part_energy(lp.layer, lp.part, sp.batch_groups);
      double n = double(lp.cores.size()) * double(std::max<int64_t>(1, sp.batch_groups));
      e.mac *= n, e.vp *= n, e.l1 *= n, e.l2 *= n;
      e.dram = e.noc = e.d2d = e.static_ = 0;
      lc.energy += e;
      int64_t best = lc.busy_cycles;
      lc.binding = Binding::Compute;
      for (int b = 1; b < 4; ++b)
        if (lc.wait_cycles[b] > best) best = lc.wait_cycles[b], lc.binding = Binding(b);
      total += lc.energy;
    }
  pc.energy = total;
  pc.energy += timing::static_energy(a, pc.cores_used, pc.cycles);
  if (overflow.bytes > pc.overflow) pc.overflow = overflow.bytes, pc.problem = overflow.problem, pc.overflow_segment = overflow.segment;
  if (detail) {
    for (const SegmentPlan& sp : plan.segments) {
      SegmentCost sc;
      sc.start = std::numeric_limits<int64_t>::max();
      for (const LayerPlan& lp : sp.layers) {
        const LayerCost& lc = lcost[size_t(lp.layer)];
        sc.start = std::min(sc.start, lc.start);
        sc.end = std::max(sc.end, lc.end);
        sc.energy += lc.energy;
        sc.layers.push_back(lc);
      }
      if (sp.layers.empty()) sc.start = 0;
      pc.segments.push_back(std::move(sc));
    }
  }
  release_unused_scratch();
  return pc;
}

void CostModel::Impl::spill_kept(const std::vector<int>& seg_of, const std::vector<std::vector<int>>& per_core,
                                  const std::vector<std::vector<int>>& layer_wls,
                                  const std::vector<ReservedWeight>& reserved, std::vector<std::vector<int64_t>>& l2,
                                  const BuiltPlan* built) const {
  std::vector<char>& spilled = spilled_scratch;
  std::vector<irgen::KeptTensor>& kept = kept_scratch;
  spilled.assign(wls.size(), 0);
  if (built)
    for (auto [id, layer] : built->spilled)
      if (id >= 0 && size_t(id) < wls.size() && wls[size_t(id)].layer == layer) spilled[size_t(wls[size_t(id)].leader)] = 1;
  for (bool fresh = true;; fresh = false) {
    connect_inputs(seg_of, per_core, layer_wls, spilled, fresh);
    for (int c = 0; c < C; ++c) l2[size_t(c)].assign(per_core[size_t(c)].size(), 0);
    for (const Wl& w : wls) {
      auto& u = l2[size_t(w.core)];
      u[size_t(w.q)] += w.foot - (w.overwrite ? w.out_bytes : 0);
      // Received inputs are live from the workload before (irgen gives them
      // their own bytes there, so the receives overlap its compute).
      if (w.q > 0)
        for (int k = w.need_begin; k < w.need_end; ++k)
          if (!needs[size_t(k)].direct) u[size_t(w.q) - 1] += need_bytes(k);
    }
    // Kept for a later consumer (on this core, or sent when it comes): live
    // in between too, added as differences at both ends.
    std::vector<int64_t>& kept_from = kept_bytes_scratch;
    for (int c = 0; c < C; ++c) {
      kept_from.assign(per_core[size_t(c)].size() + 1, 0);
      for (int id : per_core[size_t(c)]) {
        const Wl& w = wls[size_t(id)];
        if (w.keep_until <= w.q) continue;
        kept_from[size_t(w.q) + 1] += w.out_bytes;
        kept_from[size_t(w.keep_until) + 1] -= w.out_bytes;
      }
      auto& u = l2[size_t(c)];
      int64_t live = 0;
      for (size_t q = 0; q < u.size(); ++q) live += kept_from[q], u[q] += live;
    }
    for (const ReservedWeight& r : reserved)
      for (int q = r.first; q <= r.last; ++q) l2[size_t(r.core)][size_t(q)] += r.bytes;
    bool more = false;
    for (int c = 0; c < C; ++c) {
      const auto& u = l2[size_t(c)];
      size_t q = 0;
      while (q < u.size() && u[q] <= a.core.l2_bytes) ++q;
      if (q == u.size()) continue;
      kept.clear();
      for (int id : per_core[size_t(c)]) {
        const Wl& w = wls[size_t(id)];
        if (w.kept && !spilled[size_t(w.leader)]) kept.push_back({wls[size_t(w.leader)].q, w.keep_until, w.leader});
      }
      const int victim = irgen::spill_choice(kept, int(q), int(q));
      if (victim >= 0) spilled[size_t(victim)] = 1, more = true;
    }
    if (!more) break;
  }
}

void CostModel::Impl::group_sends() const {
  std::vector<int> count(wls.size(), 0);
  for (size_t k = 0; k < needs.size(); ++k) ++count[size_t(need_producer(int(k)))];
  int at = 0;
  for (size_t id = 0; id < wls.size(); ++id) {
    wls[id].send_begin = wls[id].send_end = at;
    at += count[id];
  }
  sends.resize(size_t(at));
  for (size_t k = 0; k < needs.size(); ++k) sends[size_t(wls[size_t(need_producer(int(k)))].send_end++)] = int(k);
}

bool CostModel::Impl::place_weights(const Plan& plan, const std::vector<std::vector<int>>& per_core,
                                    std::vector<std::vector<int64_t>>& l2, const BuiltPlan* built, bool reserved,
                                    Overflow& overflow) const {
  bool weights_short = false;  // a weight streamed from L2 found no room next to the activations
  wts.clear();
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(C));  // weight-buffer rows in use per position
  for (int c = 0; c < C; ++c) rows[size_t(c)].assign(per_core[size_t(c)].size(), 0);
  std::map<std::tuple<int, int, int64_t, int>, int> wt_of;  // (core, layer, k_lo, group of its own) -> weight
  for (size_t id = 0; id < wls.size(); ++id) {
    Wl& w = wls[id];
    const Layer& L = net.layers[size_t(w.layer)];
    if (!L.pe()) continue;
    auto key = std::make_tuple(w.core, w.layer, w.box.lower[1], w.group_weights ? w.group : -1);
    auto it = wt_of.find(key);
    if (it == wt_of.end()) {
      Wt t;
      t.core = w.core, t.layer = w.layer;
      t.k_lo = w.box.lower[1], t.k_hi = w.box.upper[1];
      t.first = t.last = w.q;
      int64_t k = t.k_hi - t.k_lo + 1;
      t.bytes = L.weight_bytes_per_k * k;
      t.rows = weight_rows(L, k);
      // How irgen's weight-path search mostly treats a part cut into runs:
      // a whole layer on its core whose weights fit comfortably in L2
      // streams from an L2 copy loaded far ahead (the LW queue then copies
      // each run into WL0 as it is due; its runs still compute at
      // weight-buffer speed, see the timeline below); a share of a layer
      // split over cores, or weights L2 cannot hold, loads each run into
      // WL0. (Measured on ResNet-50 on one core, VGG-11 and AlexNet on
      // both presets; a shared schedule model would not need the rule.)
      const bool streamed_runs = w.run && !w.group_weights && w.part_k == L.out[1] &&
                                 L.weight_bytes_per_k * w.part_k <= a.core.l2_bytes / 2;
      t.direct = t.rows <= a.core.wl0_rows && !streamed_runs;
      if (built)
        if (auto b = built->weights.find(std::make_tuple(t.core, t.layer, t.k_lo)); b != built->weights.end()) {
          t.direct = b->second.direct && t.rows <= a.core.wl0_rows;
          t.built_issue = b->second.issue;
          t.built_whole = b->second.whole_in_wl0;
        }
      int64_t tk = std::min(tile_k(L), k);
      t.tile_rows = (tk < k ? 2 : 1) * ceil_div(tk * L.weight_bytes_per_k, a.core.wl0_row_bytes);
      t.channel = int(plan.segments[size_t(w.seg)].layers[size_t(w.pos)].dram.weights);
      t.batch_group = std::get<3>(key);
      it = wt_of.emplace(key, int(wts.size())).first;
      wts.push_back(t);
    }
    Wt& t = wts[size_t(it->second)];
    t.last = std::max(t.last, w.q);
    w.weight = it->second;
  }
  // Per core in first-use order: the earliest position from the previous
  // issue on that buffer's queue where the buffer has room until last use.
  std::vector<std::vector<int>> by_core(static_cast<size_t>(C));
  for (size_t i = 0; i < wts.size(); ++i) by_core[size_t(wts[i].core)].push_back(int(i));
  const int64_t wl0_cap = a.core.wl0_rows;
  for (int c = 0; c < C; ++c) {
    auto& list = by_core[size_t(c)];
    std::stable_sort(list.begin(), list.end(), [&](int x, int y) { return wts[size_t(x)].first < wts[size_t(y)].first; });
    auto& r = rows[size_t(c)];
    auto& u = l2[size_t(c)];
    int prev_lw = 0, prev_ld = 0, after_streamed = 0;
    auto peak = [](const std::vector<int64_t>& used, int from, int to) {
      int64_t most = 0;
      for (int q = from; q <= to; ++q) most = std::max(most, used[size_t(q)]);
      return most;
    };
    auto fits = [](const std::vector<int64_t>& used, int from, int to, int64_t size, int64_t cap) {
      for (int q = from; q <= to; ++q)
        if (used[size_t(q)] + size > cap) return false;
      return true;
    };
    for (int wi : list) {
      Wt& t = wts[size_t(wi)];
      if (t.direct) {
        int lb = std::min(std::max(prev_lw, after_streamed), t.first);
        int j = t.built_issue >= 0 ? std::min(t.built_issue, t.first) : lb;
        while (j < t.first && !fits(r, j, t.last, t.rows, wl0_cap)) ++j;
        if (!fits(r, j, t.last, t.rows, wl0_cap)) {
          // No room even at first use: stream it from L2 instead.
          t.direct = false;
        } else {
          t.issue = j;
          for (int q = j; q <= t.last; ++q) r[size_t(q)] += t.rows;
          prev_lw = j;
          continue;
        }
      }
      if (!fits(r, t.first, t.last, t.tile_rows, wl0_cap)) {
        // irgen refuses this: the tile slots of a streamed layer are held
        // from its first use to its last (on one core, layers sharing it
        // hold theirs through every batch group).
        overflow.note((peak(r, t.first, t.last) + t.tile_rows - wl0_cap) * a.core.wl0_row_bytes,
             "one tile of the weights of \"" + net.layers[size_t(t.layer)].name + "\" on core " + std::to_string(c) +
                 " does not fit the weight buffer twice",
             wls[size_t(per_core[size_t(c)][size_t(t.first)])].seg);
      }
      for (int q = t.first; q <= t.last; ++q) r[size_t(q)] += t.tile_rows;
      if (reserved && t.rows > wl0_cap) {
        // Placed with the activations: its room is counted from its first use.
        t.issue = t.first;
        after_streamed = std::max(after_streamed, t.last + 1);
        prev_ld = t.first;
        continue;
      }
      int lb = std::min(prev_ld, t.first);
      int j = t.built_issue >= 0 && !t.direct ? std::min(t.built_issue, t.first) : lb;
      while (j < t.first && !fits(u, j, t.last, t.bytes, a.core.l2_bytes)) ++j;
      if (!fits(u, j, t.last, t.bytes, a.core.l2_bytes)) {
        weights_short = true;
        overflow.note(peak(u, j, t.last) + t.bytes - a.core.l2_bytes,
             "the weights of \"" + net.layers[size_t(t.layer)].name + "\" on core " + std::to_string(c) +
                 " do not fit in L2 next to the activations",
             wls[size_t(per_core[size_t(c)][size_t(t.first)])].seg);
      }
      t.issue = j;
      for (int q = j; q <= t.last; ++q) u[size_t(q)] += t.bytes;
      after_streamed = std::max(after_streamed, t.last + 1);
      prev_ld = j;
    }
  }
  return weights_short;
}

// ---- The timeline: per-core queues in asm's order, events, shared links -------

void CostModel::Impl::simulate(const Plan& plan, const std::vector<std::vector<int>>& per_core, PlanCost& pc,
                               std::vector<LayerCost>& lcost, bool detail, bool program_frame, bool multicast) const {
  const int64_t load_fixed = std::llround(a.dram.latency_cycles + a.timing.ld_fixed_cycles);
  const int64_t store_fixed = std::llround(a.dram.latency_cycles + a.timing.st_fixed_cycles);
  lcost.assign(net.layers.size(), LayerCost{});
  ops.clear();
  edges.clear();
  send_chain.clear();
  send_begin.assign(size_t(C) + 1, 0);
  send_feeds.clear();
  wl_ops.assign(wls.size(), WlOps{});
  need_flags.assign(needs.size(), 0);
  sync_flags.assign(syncs.size(), 0);
  send_runs.clear();
  send_chain.reserve(needs.size() + syncs.size());
  Stamp clock = 0;
  Stamp run_end = 0;  // the clock after the last send
  size_t recvs = needs.size();  // receives: of every need, and of the messages of workloads that load
  auto op = [&](Op::Kind k, int core, int wl) {
    Op o;
    o.kind = k, o.core = core, o.wl = wl;
    o.stamp = clock++;
    ops.push_back(o);
    return int(ops.size()) - 1;
  };
  auto edge = [&](int from, int to) {
    if (from >= 0 && to >= 0) edges.push_back({from, to, clock++});
  };
  std::vector<int> weight_op(wts.size(), -1);
  // Weights by the workload that issues them.
  std::vector<std::vector<int>> issued(wls.size());
  for (size_t i = 0; i < wts.size(); ++i) issued[size_t(per_core[size_t(wts[i].core)][size_t(wts[i].issue)])].push_back(int(i));

  // Stores another core loads back: the storing core sends that core a
  // one-pixel message once the store is done, in global workload order, and
  // the loading core's load waits for it (asm's cross-core synchronisation).
  // Message k (an entry of `syncs`) goes from the producer syncs[k] to the
  // workload whose sync range holds k.
  std::vector<std::vector<std::pair<int, int>>> readers_of(wls.size());  // producer -> (reader, k)
  sync_reader.assign(syncs.size(), -1);
  for (size_t id = 0; id < wls.size(); ++id)
    for (int k = wls[id].sync_begin; k < wls[id].sync_end; ++k) {
      readers_of[size_t(syncs[size_t(k)])].emplace_back(int(id), k);
      sync_reader[size_t(k)] = int(id);
    }
  const int64_t sync_bytes = timing::activation_bytes(a, 1, 1, 1, 1, 1);
  // Inputs loaded ahead (Wl::early_head): issued_early: workload -> readers
  // whose loads it issues, early_load: reader -> that load.
  std::vector<std::vector<int>> issued_early(wls.size());
  std::vector<int> early_load(wls.size(), -1);
  for (size_t id = 0; id < wls.size(); ++id)
    if (wls[id].early_head >= 0)
      issued_early[size_t(per_core[size_t(wls[id].core)][size_t(wls[id].early_head)])].push_back(int(id));

  for (int c = 0; c < C; ++c) {
    send_begin[size_t(c)] = int(send_chain.size());
    int prev_compute = -1, prev_dram = -1;
    int prev2_compute = -1;  // the compute before prev_compute
    int prev_so_first = -1, prev_so_last = -1;  // the previous workload's own sends (chain positions)
    // Per unit (PE, VP): its last compute, layer and configuration.
    std::array<int, 2> unit_compute{-1, -1}, unit_layer{-1, -1};
    std::array<std::optional<timing::UnitConfig>, 2> unit_config;
    int pending_store = -1;  // workload whose store goes in the next block
    // (reader, k) whose store is made; a reader's messages are sorted by producer, so this is reader, producer order.
    std::vector<std::pair<int, int>> ready_syncs;
    // A send (after the previous send of this core and what it reads): its
    // place in the core's chain.
    auto send = [&](Xfer t, int k) {
      const int pos = int(send_chain.size());
      if (send_runs.empty() || clock != run_end) send_runs.push_back({pos, clock});
      clock += 3;
      run_end = clock;
      send_chain.push_back(xfer_handle(t, k));
      return pos;
    };
    auto emit_syncs = [&](int before) {
      std::stable_sort(ready_syncs.begin(), ready_syncs.end());
      size_t n = 0;
      while (n < ready_syncs.size() && ready_syncs[n].first < before) ++n;
      for (size_t i = 0; i < n; ++i) send(Xfer::SyncSend, ready_syncs[i].second);
      ready_syncs.erase(ready_syncs.begin(), ready_syncs.begin() + std::ptrdiff_t(n));
    };

    auto dram = [&](Op::Kind k, int wl, int weight, int64_t bytes, int pieces, int channel) {
      int o = op(k, c, wl);
      Op& x = ops[size_t(o)];
      x.weight = weight;
      x.bytes = bytes;
      x.route = &dram_route(channel, c, k == Op::Store);
      x.fixed = double(pieces * ((k == Op::Store ? store_fixed : load_fixed) + x.route->latency));
      edge(prev_dram, o);
      edge(prev_compute, o);  // a block's DRAM transfers wait for the previous compute
      prev_dram = o;
      return o;
    };
    // Sends wait until everything this core sends to earlier readers has
    // gone (asm keeps one global order of readers, and for one reader the
    // order of its receives): after each workload, those whose reader comes
    // before the core's next workload go.
    using PendingSend = std::pair<int, int>;  // (consumer, need), sent in this order
    std::priority_queue<PendingSend, std::vector<PendingSend>, std::greater<>> pending_sends;
    // The LW queue issues in order: a streamed workload's tile loads (L2 ->
    // weight buffer) wait behind the DRAM -> weight buffer loads issued in
    // earlier workloads (irgen's estimate charges the same), e.g. a multicast
    // load issued far ahead whose group fires late.
    int lw_tail = -1;
    const auto& mine = per_core[size_t(c)];
    for (size_t qi = 0; qi < mine.size(); ++qi) {
      const int id = mine[qi];
      const Wl& w = wls[size_t(id)];
      WlOps& wo = wl_ops[size_t(id)];
      const int lw_before = lw_tail;
      std::vector<int> own;
      for (int wi : issued[size_t(id)])
        if (wts[size_t(wi)].first == w.q && !wts[size_t(wi)].direct)
          own.push_back(weight_op[size_t(wi)] = dram(Op::Load, id, wi, wts[size_t(wi)].bytes, 1, wts[size_t(wi)].channel));
      if (pending_store >= 0) {
        const Wl& pw = wls[size_t(pending_store)];
        wl_ops[size_t(pending_store)].store = dram(Op::Store, pending_store, -1, pw.out_bytes, 1, pw.out_channel);
        for (const auto& rk : readers_of[size_t(pending_store)]) ready_syncs.push_back(rk);
        pending_store = -1;
      }
      emit_syncs(id);
      // Receives, in order, into buffers of their own from the previous
      // workload on (irgen), so once the one before it no longer reads the
      // bytes; asm queues them before the messages of stores this workload
      // loads back (a producer sends its data before such a message, so the
      // other order could wait in a cycle).
      // (A data movement's piece lands in its output tensor, which irgen
      // places from this workload on; asm's receive still runs ahead of
      // the previous compute as far as its L2 bytes allow, measured as
      // for the other receives.) Where irgen placed the buffers, after
      // what last used their bytes.
      wo.recv_after = w.receive_after == -2   ? prev2_compute
                      : w.receive_after >= 0 ? wl_ops[size_t(mine[size_t(w.receive_after)])].compute
                                             : -1;
      wo.recvs = clock;
      clock += 3 * Stamp(w.need_end - w.need_begin);  // each after the previous receive and what it waits for
      const bool loaded_ahead = early_load[size_t(id)] >= 0;
      const int64_t own_bytes = w.dram_bytes - (loaded_ahead ? w.early_bytes : 0);
      if (own_bytes > 0) {
        // Waits for the storing cores' messages first.
        wo.sync_after = prev_compute;
        wo.syncs = clock;
        clock += 3 * Stamp(w.sync_end - w.sync_begin);
        recvs += size_t(w.sync_end - w.sync_begin);
        int ld = dram(Op::Load, id, -1, own_bytes, w.dram_pieces - (loaded_ahead ? w.early_pieces : 0), w.in_channel);
        wo.load = ld;
        ops[size_t(ld)].deps += w.sync_end - w.sync_begin;
        wo.sync_edges = clock;
        clock += Stamp(w.sync_end - w.sync_begin);
        own.push_back(ld);
      } else {
        for (int k = w.sync_begin; k < w.sync_end; ++k) sync_flags[size_t(k)] |= kUnpaired;
      }
      if (loaded_ahead) own.push_back(early_load[size_t(id)]);
      for (int wi : issued[size_t(id)])
        if (wts[size_t(wi)].first == w.q && wts[size_t(wi)].direct)
          own.push_back(lw_tail = weight_op[size_t(wi)] =
                            dram(Op::Load, id, wi, wts[size_t(wi)].bytes, 1, wts[size_t(wi)].channel));
      int cmp = op(Op::Compute, c, id);
      ops[size_t(cmp)].cycles = w.cycles;
      wo.compute = cmp;
      edge(prev_compute, cmp);
      if (w.weight >= 0 && !wts[size_t(w.weight)].direct) edge(lw_before, cmp);
      if (w.store_before >= 0) edge(wl_ops[size_t(mine[size_t(w.store_before)])].store, cmp);
      if (program_frame) {
        // A layer's configuration instructions run in its unit's queue as soon
        // as the unit's previous instruction is done, before its inputs come.
        const Layer& L = net.layers[size_t(w.layer)];
        const size_t unit = L.pe() ? 0 : 1;
        if (!L.move && unit_layer[unit] != w.layer) {
          timing::UnitConfig uc = unit_config_of(L, w.box);
          int cfg = op(Op::Config, c, id);
          ops[size_t(cfg)].cycles = timing::layer_change_config_cycles(a, unit_config[unit] ? &*unit_config[unit] : nullptr, uc);
          edge(unit_compute[unit], cfg);
          edge(cfg, cmp);
          unit_config[unit] = uc;
        }
        unit_compute[unit] = cmp, unit_layer[unit] = w.layer;
      }
      for (int o : own) edge(o, cmp);
      ops[size_t(cmp)].deps += w.need_end - w.need_begin;
      wo.recv_edges = clock;
      clock += Stamp(w.need_end - w.need_begin);
      // The previous workload's sends still read the buffer this one writes.
      if (prev_so_first >= 0) {
        ops[size_t(cmp)].deps += prev_so_last - prev_so_first + 1;
        send_feeds.push_back({prev_so_first, prev_so_last, cmp, clock});
        clock += Stamp(prev_so_last - prev_so_first + 1);
      }
      prev_so_first = prev_so_last = -1;
      // Inputs of later workloads loaded ahead here, then weights issued
      // here for later workloads.
      for (int r : issued_early[size_t(id)]) {
        const Wl& rw = wls[size_t(r)];
        early_load[size_t(r)] = dram(Op::Load, r, -1, rw.early_bytes, rw.early_pieces, rw.in_channel);
      }
      for (int wi : issued[size_t(id)])
        if (wts[size_t(wi)].first != w.q) {
          weight_op[size_t(wi)] = dram(Op::Load, id, wi, wts[size_t(wi)].bytes, 1, wts[size_t(wi)].channel);
          if (wts[size_t(wi)].direct) lw_tail = weight_op[size_t(wi)];
        }
      for (int si = w.send_begin; si < w.send_end; ++si) {
        const int k = sends[size_t(si)];
        pending_sends.emplace(needs[size_t(k)].consumer, k);
      }
      const int next = qi + 1 < mine.size() ? mine[qi + 1] : std::numeric_limits<int>::max();
      while (!pending_sends.empty() && pending_sends.top().first < next) {
        const auto [consumer, k] = pending_sends.top();
        pending_sends.pop();
        emit_syncs(consumer);
        const int o = send(Xfer::NeedSend, k);
        // Only this workload's own sends read a buffer the next one may reuse.
        if (need_producer(k) != id) continue;
        if (prev_so_first < 0) prev_so_first = o;
        prev_so_last = o;
      }
      prev2_compute = prev_compute;
      prev_compute = cmp;
      if (w.stored) pending_store = id;
    }
    if (pending_store >= 0) {
      const Wl& pw = wls[size_t(pending_store)];
      wl_ops[size_t(pending_store)].store = dram(Op::Store, pending_store, -1, pw.out_bytes, 1, pw.out_channel);
      for (const auto& rk : readers_of[size_t(pending_store)]) ready_syncs.push_back(rk);
    }
    emit_syncs(std::numeric_limits<int>::max());
  }
  send_begin[size_t(C)] = int(send_chain.size());
  // Host steps: after the stores of their inputs, one at a time (one host),
  // before the loads of their results (the ct_hs / ct_hw round trip).
  {
    int prev_host = -1;
    std::vector<int> host_op(net.host_steps.size(), -1);
    for (size_t k = 0; k < net.host_steps.size(); ++k) {
      int o = op(Op::Host, 0, -1);
      ops[size_t(o)].cycles = timing::host_cycles(a, net.host_steps[k].ops, host_bytes[k]);
      ops[size_t(o)].bytes = host_bytes[k];
      for (int pid : host_inputs[k]) edge(wl_ops[size_t(pid)].store, o);
      edge(prev_host, o);
      prev_host = host_op[k] = o;
    }
    for (size_t id = 0; id < wls.size(); ++id)
      for (int k : wls[id].host_steps) edge(host_op[size_t(k)], wl_ops[id].load);
  }
  // Compute waits for its weights wherever they were issued.
  for (size_t id = 0; id < wls.size(); ++id)
    if (wls[id].weight >= 0) {
      int wo = weight_op[size_t(wls[id].weight)];
      // Issued in the same workload or earlier: the edge may already exist (harmless).
      edge(wo, wl_ops[id].compute);
    }
  // Multicast: the loads several cores make of the same weights are one
  // group (asm's multicast pass merges them): it starts when its last member
  // is ready, one stream over the tree (mc_groups).
  mc_groups.clear();
  if (a.noc.multicast && multicast) {
    // The weight slices by (layer, k range, batch group), then index: runs
    // of equal keys are the groups (a sort of scratch, not a map per
    // evaluation: this runs for every plan the search prices).
    auto slice = [&](int i) {
      const Wt& t = wts[size_t(i)];
      return std::make_tuple(t.layer, t.k_lo, t.k_hi, t.batch_group);
    };
    std::vector<int>& same = mc_scratch;
    same.clear();
    for (size_t i = 0; i < wts.size(); ++i)
      if (weight_op[i] >= 0) same.push_back(int(i));
    std::sort(same.begin(), same.end(), [&](int x, int y) { return std::make_pair(slice(x), x) < std::make_pair(slice(y), y); });
    std::vector<int>& cores = mc_cores;
    for (size_t b = 0, e; b < same.size(); b = e) {
      e = b + 1;
      while (e < same.size() && slice(same[e]) == slice(same[b])) ++e;
      if (e - b < 2) continue;
      McGroup g;
      cores.clear();
      for (size_t j = b; j < e; ++j) {
        const int wi = same[j];
        g.ops.push_back(weight_op[size_t(wi)]);
        cores.push_back(wts[size_t(wi)].core);
        ops[size_t(weight_op[size_t(wi)])].group = int(mc_groups.size());
      }
      std::sort(cores.begin(), cores.end());
      g.tree = &tree_route(wts[size_t(same[b])].channel, cores);
      mc_groups.push_back(std::move(g));
    }
  }
  // Successor lists (in the order the dependencies were made).
  {
    std::vector<int> count(ops.size() + 1, 0);
    for (const Edge& e : edges) ++count[size_t(e.from)], ++ops[size_t(e.to)].deps;
    int at = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      ops[i].succ_begin = ops[i].succ_end = at;
      at += count[i];
    }
    succ.resize(size_t(at));
    succ_stamp.resize(size_t(at));
    for (const Edge& e : edges) {
      const int k = ops[size_t(e.from)].succ_end++;
      succ[size_t(k)] = e.to, succ_stamp[size_t(k)] = e.stamp;
    }
  }

  // ---- the transfers
  // Either side of a transfer: its core, bytes, workload, partner, stamp,
  // and what it waits for besides the one before it in its core's chain.
  auto xfer_core = [&](Handle h) {
    const int k = xfer_index(h);
    switch (xfer_of(h)) {
      case Xfer::NeedSend: return wls[size_t(need_producer(k))].core;
      case Xfer::NeedRecv: return wls[size_t(needs[size_t(k)].consumer)].core;
      case Xfer::SyncSend: return wls[size_t(syncs[size_t(k)])].core;
      case Xfer::SyncRecv: break;
    }
    return wls[size_t(sync_reader[size_t(k)])].core;
  };
  auto xfer_bytes = [&](Handle h) {
    const Xfer t = xfer_of(h);
    return t == Xfer::NeedSend || t == Xfer::NeedRecv ? need_bytes(xfer_index(h)) : sync_bytes;
  };
  auto xfer_wl = [&](Handle h) {
    const int k = xfer_index(h);
    switch (xfer_of(h)) {
      case Xfer::NeedSend: return need_producer(k);
      case Xfer::NeedRecv: return needs[size_t(k)].consumer;
      case Xfer::SyncSend: return syncs[size_t(k)];
      case Xfer::SyncRecv: break;
    }
    return sync_reader[size_t(k)];
  };
  auto flags = [&](Handle h) -> uint8_t& {
    const Xfer t = xfer_of(h);
    return (t == Xfer::NeedSend || t == Xfer::NeedRecv ? need_flags : sync_flags)[size_t(xfer_index(h))];
  };
  // The receive's side of a pair, or the send's; -1: a message no receive waits for.
  auto partner = [&](Handle h) -> Handle {
    const int k = xfer_index(h);
    switch (xfer_of(h)) {
      case Xfer::NeedSend: return xfer_handle(Xfer::NeedRecv, k);
      case Xfer::NeedRecv: return xfer_handle(Xfer::NeedSend, k);
      case Xfer::SyncSend: return sync_flags[size_t(k)] & kUnpaired ? -1 : xfer_handle(Xfer::SyncRecv, k);
      case Xfer::SyncRecv: break;
    }
    return xfer_handle(Xfer::SyncSend, k);
  };
  // When the send at a chain position was made, and an op or receive.
  auto send_stamp = [&](int pos) {
    const auto run = std::upper_bound(send_runs.begin(), send_runs.end(), pos,
                                      [](int p, const SendRun& r) { return p < r.lo; }) - 1;
    return run->stamp + 3 * Stamp(pos - run->lo);
  };
  auto stamp_of = [&](Handle h) {
    if (h >= 0) return ops[size_t(h)].stamp;
    const int k = xfer_index(h);
    if (xfer_of(h) == Xfer::NeedRecv) {
      const int w = needs[size_t(k)].consumer;
      return wl_ops[size_t(w)].recvs + 3 * Stamp(k - wls[size_t(w)].need_begin);
    }
    const int w = sync_reader[size_t(k)];
    return wl_ops[size_t(w)].syncs + 3 * Stamp(k - wls[size_t(w)].sync_begin);
  };
  // A pair's route: from the sender's core to the receiver's.
  auto xfer_route = [&](Handle h) -> const Route& {
    const Handle s = is_send(xfer_of(h)) ? h : partner(h);
    const int k = xfer_index(s);
    const int to = xfer_of(s) == Xfer::NeedSend ? needs[size_t(k)].consumer : sync_reader[size_t(k)];
    return core_route(xfer_core(s), wls[size_t(to)].core);
  };
  auto route_of = [&](Handle h) -> const Route* { return h >= 0 ? ops[size_t(h)].route : &xfer_route(h); };
  // What a side waits for besides the one before it in its core's chain (an
  // op; -1: nothing): the producer's compute, the op a workload's receives
  // wait for (Wl::receive_after), the store a message reports, the compute
  // before a workload that loads.
  auto trigger = [&](Handle h) {
    const int k = xfer_index(h);
    switch (xfer_of(h)) {
      case Xfer::NeedSend: return wl_ops[size_t(need_producer(k))].compute;
      case Xfer::NeedRecv: return wl_ops[size_t(needs[size_t(k)].consumer)].recv_after;
      case Xfer::SyncSend: return wl_ops[size_t(syncs[size_t(k)])].store;
      case Xfer::SyncRecv: break;
    }
    return wl_ops[size_t(sync_reader[size_t(k)])].sync_after;
  };
  auto trigger_done = [&](Handle h) {
    const int t = trigger(h);
    return t < 0 || ops[size_t(t)].end >= 0;
  };
  // A core's receive at or after `at` (its position on the core, and among
  // that workload's receives), -1 when none is left.
  struct RecvAt {
    int q = 0, j = 0;
  };
  auto recv_at = [&](int c, RecvAt& at) -> Handle {
    const auto& mine = per_core[size_t(c)];
    for (; at.q < int(mine.size()); ++at.q, at.j = 0) {
      const int id = mine[size_t(at.q)];
      const Wl& w = wls[size_t(id)];
      const int n = w.need_end - w.need_begin;
      if (at.j < n) return xfer_handle(Xfer::NeedRecv, w.need_begin + at.j);
      if (wl_ops[size_t(id)].load >= 0 && at.j - n < w.sync_end - w.sync_begin)
        return xfer_handle(Xfer::SyncRecv, w.sync_begin + at.j - n);
    }
    return -1;
  };
  // Per core and chain (sends, receives): the next to begin, and whether the
  // one before it is still running.
  std::vector<int> send_next(send_begin.begin(), send_begin.end() - 1);
  std::vector<RecvAt> recv_next(static_cast<size_t>(C));
  std::vector<char> send_busy(size_t(C), 0), recv_busy(size_t(C), 0);
  // Sends' times, for the timeline (detail).
  std::vector<std::pair<double, double>> need_send_time, sync_send_time;
  if (detail) {
    need_send_time.assign(needs.size(), {-1.0, -1.0});
    sync_send_time.assign(syncs.size(), {-1.0, -1.0});
  }
  auto send_time = [&](Handle h) -> std::pair<double, double>& {
    return (xfer_of(h) == Xfer::NeedSend ? need_send_time : sync_send_time)[size_t(xfer_index(h))];
  };
  double xfer_end = -1;  // the latest end of a transfer (-1: none ended)

  // ---- run
  active.clear();
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;
  uint64_t seq = 0;
  double now = 0;
  auto push = [&](double t, int kind, Handle id) { events.push(Event{t, seq++, kind, id}); };
  // The earliest end of a flow, as the shares stand (kept apart: each change
  // of the shares replaces it).
  std::optional<Event> flow_done;
  auto advance = [&]() {
    for (Flow& x : active) {
      x.remaining = std::max(0.0, x.remaining - x.rate * (now - x.last));
      x.last = now;
    }
  };
  // Each active flow gets its fair share of its narrowest resource (the
  // bandwidth divided by the flows using it); one pending event stands for
  // the earliest completion.
  users.assign(capacity.size(), 0);
  share.assign(capacity.size(), std::numeric_limits<double>::infinity());
  auto use = [&](int r, int delta) {
    users[size_t(r)] += delta;
    share[size_t(r)] = users[size_t(r)] > 0 ? capacity[size_t(r)] / double(users[size_t(r)])
                                            : std::numeric_limits<double>::infinity();
  };
  auto reallocate = [&]() {
    work += int64_t(active.size()) + 1;
    double first = std::numeric_limits<double>::infinity();
    for (Flow& x : active) {
      double rate = std::numeric_limits<double>::infinity();
      for (int r : x.route->resources) rate = std::min(rate, share[size_t(r)]);
      x.rate = std::isfinite(rate) ? rate : a.noc.link_bytes_per_cycle;
      first = std::min(first, now + x.remaining / x.rate);
    }
    flow_done.reset();
    if (std::isfinite(first)) flow_done = Event{first, seq++, 2, -1};
  };
  auto start_stream = [&](Handle o, int64_t bytes, const Route* route) {
    advance();
    Flow fl;
    fl.op = o;
    // (A send streams while it runs, the last begun on its core.)
    fl.stamp = o >= 0 ? ops[size_t(o)].stamp : send_stamp(send_next[size_t(xfer_core(o))] - 1);
    fl.route = route;
    fl.remaining = double(bytes);
    fl.last = now;
    active.push_back(fl);
    for (int r : route->resources) use(r, +1);
    reallocate();
  };
  // A transfer's side begins (it heads its core's chain): the pair streams
  // once both sides have begun.
  auto begin_xfer = [&](Handle h) {
    const Xfer t = xfer_of(h);
    const int c = xfer_core(h);
    uint8_t& st = flags(h);
    if (is_send(t)) {
      st |= kSendBegun, ++send_next[size_t(c)], send_busy[size_t(c)] = 1;
      if (detail) send_time(h).first = now;
    } else {
      st |= kRecvBegun, ++recv_next[size_t(c)].j, recv_busy[size_t(c)] = 1;  // (it heads the chain)
    }
    const Handle p = partner(h);
    if (p == -1) {  // a message no receive waits for: done at once
      push(now, 0, h);
      return;
    }
    if (!(st & (is_send(t) ? kRecvBegun : kSendBegun))) return;  // waits for its partner
    // As zebusim: the bytes stream at once; the sender is done with the
    // last byte, the receiver the route's latency later.
    push(now, 1, is_send(t) ? h : p);
  };
  auto begin = [&](Handle o) {
    if (o < 0) return begin_xfer(o);
    Op& x = ops[size_t(o)];
    x.start = now;
    switch (x.kind) {
      case Op::Compute:
      case Op::Config:
      case Op::Host: push(now + double(x.cycles), 0, o); break;
      case Op::Load:
        if (x.group >= 0) {
          McGroup& g = mc_groups[size_t(x.group)];
          if (++g.ready < g.ops.size()) break;
          for (int m : g.ops) ops[size_t(m)].start = now;
          Op& lead = ops[size_t(g.ops.front())];
          lead.route = g.tree;
          push(now + double(load_fixed + g.tree->latency), 1, g.ops.front());
          break;
        }
        push(now + x.fixed, 1, o);
        break;
      case Op::Store: push(now + x.fixed, 1, o); break;
    }
  };
  // A send's bytes are all out: its receive ends the route's latency later.
  auto receive_after_latency = [&](Handle snd) { push(now + double(xfer_route(snd).latency), 0, partner(snd)); };
  // An op that `from` was the last to wait for begins.
  auto dependency_done = [&](Handle from, int to) {
    Op& y = ops[size_t(to)];
    y.last_dep = from;
    if (--y.deps == 0) begin(to);
  };
  // What waits for `h`, in the order the dependencies were made: the next
  // in its chain (made with it) and the op it feeds.
  auto finish_xfer = [&](Handle h) {
    const Xfer t = xfer_of(h);
    const int c = xfer_core(h);
    xfer_end = std::max(xfer_end, now);
    if (detail && is_send(t)) send_time(h).second = now;
    int feeds = -1;
    Stamp feed_stamp = 0;
    Handle next = -1;
    Stamp next_stamp = 0;
    if (is_send(t)) {
      send_busy[size_t(c)] = 0;
      const int pos = send_next[size_t(c)] - 1;
      auto f = std::upper_bound(send_feeds.begin(), send_feeds.end(), pos,
                                [](int p, const SendFeed& s) { return p < s.lo; });
      if (f != send_feeds.begin() && (f - 1)->hi >= pos) feeds = (f - 1)->compute, feed_stamp = (f - 1)->stamp;
      if (send_next[size_t(c)] < send_begin[size_t(c) + 1])
        next = send_chain[size_t(send_next[size_t(c)])], next_stamp = send_stamp(send_next[size_t(c)]);
    } else {
      recv_busy[size_t(c)] = 0;
      const WlOps& wo = wl_ops[size_t(xfer_wl(h))];
      if (t == Xfer::NeedRecv)
        feeds = wo.compute, feed_stamp = wo.recv_edges;
      else
        feeds = wo.load, feed_stamp = wo.sync_edges;
      next = recv_at(c, recv_next[size_t(c)]);
      if (next != -1) next_stamp = stamp_of(next);
    }
    const bool next_first = next != -1 && (feeds < 0 || next_stamp < feed_stamp);
    if (next_first && trigger_done(next)) begin_xfer(next);
    if (feeds >= 0) dependency_done(h, feeds);
    if (!next_first && next != -1 && trigger_done(next)) begin_xfer(next);
  };
  // What waits for op `o`: its successors, and the heads of its core's
  // chains that wait for it last, in the order the dependencies were made.
  auto finish = [&](Handle o) {
    if (o < 0) return finish_xfer(o);
    Op& x = ops[size_t(o)];
    x.end = now;
    std::array<std::pair<Stamp, Handle>, 2> heads;
    size_t n = 0;
    if (x.kind == Op::Compute || x.kind == Op::Store) {
      const size_t c = size_t(x.core);
      if (!send_busy[c] && send_next[c] < send_begin[c + 1] && trigger(send_chain[size_t(send_next[c])]) == o)
        heads[n++] = {send_stamp(send_next[c]), send_chain[size_t(send_next[c])]};
      if (const Handle h = recv_busy[c] ? -1 : recv_at(int(c), recv_next[c]); h != -1 && trigger(h) == o)
        heads[n++] = {stamp_of(h), h};
      if (n == 2 && heads[1].first < heads[0].first) std::swap(heads[0], heads[1]);
    }
    size_t hi = 0;
    for (int k = x.succ_begin; k < x.succ_end; ++k) {
      while (hi < n && heads[hi].first < succ_stamp[size_t(k)]) begin_xfer(heads[hi++].second);
      dependency_done(o, succ[size_t(k)]);
    }
    while (hi < n) begin_xfer(heads[hi++].second);
  };
  // The load queue of every core waits for its control prologue (ct_st,
  // ct_bc); weights loaded straight into the weight buffer do not (asm's
  // tokens), so a weight-bound start overlaps it. A core's first receive
  // may wait for nothing.
  const double prologue = program_frame ? double(timing::program_prologue_cycles(a)) : 0.0;
  {
    std::vector<Handle> first_recvs;
    for (int c = 0; c < C; ++c)
      if (const Handle h = recv_at(c, recv_next[size_t(c)]); h != -1 && trigger(h) < 0) first_recvs.push_back(h);
    size_t r = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      while (r < first_recvs.size() && stamp_of(first_recvs[r]) < ops[i].stamp) begin_xfer(first_recvs[r++]);
      if (ops[i].deps != 0) continue;
      const bool direct_weight = ops[i].weight >= 0 && wts[size_t(ops[i].weight)].direct;
      if (ops[i].kind == Op::Load && !direct_weight)
        push(prologue, 3, int(i));
      else
        begin(int(i));
    }
    while (r < first_recvs.size()) begin_xfer(first_recvs[r++]);
  }
  // A send's stream, or a DRAM transfer's.
  auto stream = [&](Handle h) {
    if (h >= 0) return std::make_pair(ops[size_t(h)].bytes, ops[size_t(h)].route);
    return std::make_pair(xfer_bytes(h), &xfer_route(h));
  };
  size_t done = 0;
  while (!events.empty() || flow_done) {
    Event e;
    if (flow_done && (events.empty() || events.top() > *flow_done)) {
      e = *flow_done;
      flow_done.reset();
    } else {
      e = events.top();
      events.pop();
    }
    now = e.time;
    switch (e.kind) {
      case 0:
        finish(e.id), ++done;
        break;
      case 3:
        begin(e.id);
        break;
      case 1: {
        const auto [bytes, route] = stream(e.id);
        if (bytes <= 0 || !route) {
          finish(e.id), ++done;
          if (e.id < 0 && partner(e.id) != -1) receive_after_latency(e.id);
        } else {
          start_stream(e.id, bytes, route);
        }
        break;
      }
      case 2: {
        advance();
        // Every flow done by now (within a byte) ends; so does one whose end
        // rounds to now (late in a long run a double cannot step by its
        // last bytes' time, and waiting for it would never end).
        std::vector<std::pair<Stamp, Handle>> ended;
        for (size_t k = 0; k < active.size();) {
          Flow& f = active[k];
          if (f.remaining <= 0.5 || now + f.remaining / f.rate <= now) {
            ended.emplace_back(f.stamp, f.op);
            for (int r : f.route->resources) use(r, -1);
            active[k] = active.back();
            active.pop_back();
          } else {
            ++k;
          }
        }
        std::sort(ended.begin(), ended.end());  // in the order they were made
        for (const auto& [stamp, o] : ended) {
          if (o >= 0 && ops[size_t(o)].group >= 0) {
            // Each member ends when the bytes have come its own way.
            const McGroup& g = mc_groups[size_t(ops[size_t(o)].group)];
            for (int m : g.ops) {
              const Op& y = ops[size_t(m)];
              push(now + double(dram_route(wts[size_t(y.weight)].channel, y.core, false).latency - g.tree->latency), 0, m);
            }
            continue;
          }
          finish(o), ++done;
          if (o < 0 && partner(o) != -1) receive_after_latency(o);
        }
        reallocate();
        break;
      }
    }
  }
  const size_t total = ops.size() + send_chain.size() + recvs;
  if (done < total && !mc_groups.empty()) {
    // Groups met in opposite orders on two cores wait for each other: asm's
    // multicast pass then keeps the unicast loads (its check finds the
    // deadlock), so the plan is priced as that program.
    simulate(plan, per_core, pc, lcost, detail, program_frame, false);
    return;
  }
  if (done < total) {
    // A cycle of waits (cannot happen with irgen's order); price it as hopeless.
    pc.overflow = std::max<int64_t>(pc.overflow, a.core.l2_bytes);
    pc.problem = "the transfers of this plan wait on each other in a cycle";
  }

  // ---- figures (ops and transfers in the order they were made)
  if (detail) {
    size_t si = 0;
    auto sends_before = [&](Stamp before) {
      for (; si < send_chain.size() && send_stamp(int(si)) < before; ++si) {
        const Handle h = send_chain[si];
        const Wl& w = wls[size_t(xfer_wl(h))];
        TimelineStep t;
        t.kind = TimelineStep::Send;
        t.core = xfer_core(h);
        t.layer = w.layer;
        t.segment = w.seg, t.group = w.group, t.part = w.part;
        t.bytes = xfer_bytes(h);
        if (const Handle p = partner(h); p != -1) t.peer = xfer_core(p);
        t.start = timing::saturate_cycles(send_time(h).first);
        t.end = timing::saturate_cycles(send_time(h).second);
        pc.timeline.push_back(t);
      }
    };
    for (const Op& x : ops) {
      sends_before(x.stamp);
      if (x.kind == Op::Host || x.kind == Op::Config) continue;
      TimelineStep t;
      t.kind = x.kind == Op::Compute ? TimelineStep::Compute
               : x.kind == Op::Load  ? TimelineStep::Load
                                     : TimelineStep::Store;
      const Wl& w = wls[size_t(x.wl)];
      t.core = x.core;
      t.layer = x.weight >= 0 ? wts[size_t(x.weight)].layer : w.layer;
      t.segment = w.seg, t.group = w.group, t.part = w.part;
      t.bytes = x.kind == Op::Compute ? 0 : x.bytes;
      t.start = timing::saturate_cycles(x.start);
      t.end = timing::saturate_cycles(x.end);
      pc.timeline.push_back(t);
    }
    sends_before(std::numeric_limits<Stamp>::max());
  }
  std::vector<int> first_part(lcost.size(), -1);  // per layer: the leader of its first part
  // A program without workloads (a network all on the host) still starts and ends.
  if (program_frame) pc.cycles = std::llround(a.timing.control_cycles) + timing::program_epilogue_cycles(a);
  auto end_cycles = [&](double end) {
    return timing::add_cycles(timing::saturate_cycles(std::ceil(end - 1e-9)), program_frame ? timing::program_epilogue_cycles(a) : 0);
  };
  if (!send_chain.empty() || recvs > 0) pc.cycles = std::max(pc.cycles, end_cycles(xfer_end));
  int rc = 0;
  RecvAt ra;
  // The bytes each receive brought and their energy, charged to its layer.
  auto recvs_before = [&](Stamp before) {
    for (; rc < C; ++rc, ra = RecvAt{})
      for (Handle h; (h = recv_at(rc, ra)) != -1; ++ra.j) {
        if (stamp_of(h) >= before) return;
        LayerCost& lc = lcost[size_t(wls[size_t(xfer_wl(h))].layer)];
        const int64_t bytes = xfer_bytes(h);
        lc.transfer_bytes += bytes;
        lc.energy += link_energy(xfer_route(h), bytes);
      }
  };
  for (const Op& x : ops) {
    recvs_before(x.stamp);
    pc.cycles = std::max(pc.cycles, end_cycles(x.end));
    if (x.kind == Op::Compute) {
      const Wl& w = wls[size_t(x.wl)];
      LayerCost& lc = lcost[size_t(w.layer)];
      int64_t s = timing::saturate_cycles(x.start), e = timing::saturate_cycles(x.end);
      if (lc.busy_cycles == 0 && lc.end == 0) {
        lc.start = s, lc.part_cycles = 0, lc.layer = w.layer;
        first_part[size_t(w.layer)] = w.leader;
      }
      if (w.leader == first_part[size_t(w.layer)]) lc.part_cycles += x.cycles;  // every run of the first part
      lc.start = std::min(lc.start, s);
      lc.end = std::max(lc.end, e);
      lc.busy_cycles += x.cycles;
      lc.l2_peak = std::max(lc.l2_peak, w.foot);
      // Waiting time, charged to what came last.
      double prev_end = 0;
      if (w.q > 0) prev_end = ops[size_t(wl_ops[size_t(per_core[size_t(w.core)][size_t(w.q - 1)])].compute)].end;
      if (x.start > prev_end + 0.5 && x.last_dep != -1) {
        const Route* route = route_of(x.last_dep);
        Binding b = route ? route->bound : Binding::Compute;
        if (x.last_dep >= 0 && ops[size_t(x.last_dep)].kind == Op::Load && route && route->bound == Binding::Noc) b = Binding::Dram;
        lc.wait_cycles[int(b)] += int64_t(x.start - prev_end);
      }
    } else if (x.kind == Op::Load || x.kind == Op::Store) {
      // A multicast group's DRAM read and tree are charged once, to its first member.
      if (x.group >= 0 && mc_groups[size_t(x.group)].ops.front() != int(&x - ops.data())) continue;
      int layer = x.weight >= 0 ? wts[size_t(x.weight)].layer : wls[size_t(x.wl)].layer;
      LayerCost& lc = lcost[size_t(layer)];
      timing::Energy e = timing::dram_transfer_energy(a, x.bytes);
      e += link_energy(*x.route, x.bytes);
      lc.energy += e;
      lc.dram_bytes += x.bytes;
    }
  }
  recvs_before(std::numeric_limits<Stamp>::max());
  (void)plan;
}

}  // namespace cct::gemini
