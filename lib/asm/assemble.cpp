// Scheduler IR -> instruction stream. See asm.hpp and docs in formats/.
//
// One Assembler per core walks the workloads in order and emits, per
// workload: the loads first needed by it (DRAM -> L2 activations and weights,
// DRAM -> WL0 weights), the tiles (configuration registers that changed, the
// compute instruction, and for weights kept in L2 the per-tile L2 -> WL0
// loads through two alternating slots), the loads of later workloads
// (prefetch) and the stores of its output. assign_tokens() then links the
// instructions with queue tokens.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "asm/asm.hpp"
#include "asm/builder.hpp"
#include "asm/dram_layout.hpp"
#include "fir/host_graph.hpp"
#include "fir/resize.hpp"
#include "support/error.hpp"
#include "support/int_math.hpp"

namespace cct::assembler {
namespace {

using isa::Instruction;
using isa::Opcode;
using isa::Param;
using sir::BufferTensor;
using sir::Coord;
using sir::Workload;

// WL0 addresses and sizes in the instruction set count 64-byte rows
// (formats/ISA_Format.md section 4): an encoding of the address field.
// ring_buffer_info byte bounds are written to ct_bc in KiB (ISA_Format.md, ct_bc).
constexpr int64_t kBufCutUnit = 1024;

std::string ptr_workload(int64_t core, size_t k) { return "/" + std::to_string(core) + "/" + std::to_string(k); }

[[noreturn]] void fail(const Options& o, const std::string& pointer, const std::string& what) {
  throw Error(kExitInvalidInput, at_pointer(o.sir_file, pointer, what));
}

int32_t i32(int64_t v, const Options& o, const std::string& pointer, const char* what) {
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
    fail(o, pointer, std::string(what) + " " + std::to_string(v) + " does not fit the instruction field");
  return static_cast<int32_t>(v);
}

std::array<int64_t, 4> dims_of(const Coord& lo, const Coord& hi) {
  return {hi[0] - lo[0] + 1, hi[1] - lo[1] + 1, hi[2] - lo[2] + 1, hi[3] - lo[3] + 1};
}


// A tensor region in an L2 buffer: NHWC, channels padded to the buffer's
// align, elements of bitwidth/8 bytes.
struct TensorView {
  int64_t base = 0, size = 0, bytes = 1, cpad = 0;
  Coord lo{}, hi{}, org{};
  std::array<int64_t, 4> d{};  // n, c, h, w

  static TensorView of(const BufferTensor& b) {
    TensorView t;
    t.base = b.address;
    t.size = b.size;
    t.bytes = std::max<int64_t>(1, b.bitwidth / 8);
    t.lo = b.lower;
    t.hi = b.upper;
    t.d = dims_of(b.lower, b.upper);
    t.cpad = round_up(t.d[1], b.align);
    t.org = b.lower;
    return t;
  }
  // Coordinates are the buffer's own when the region's corner lies in the
  // buffer box; otherwise the buffer holds exactly that region.
  TensorView& place(const Coord& region) {
    bool inside = true;
    for (int i = 0; i < 4; ++i) inside = inside && lo[i] <= region[i] && region[i] <= hi[i];
    org = inside ? lo : Coord{region[0], lo[1], region[2], region[3]};
    return *this;
  }
  int64_t addr(int64_t n, int64_t c, int64_t h, int64_t w) const {
    return base + (((n - org[0]) * d[2] + (h - org[2])) * d[3] + (w - org[3])) * cpad * bytes + (c - org[1]) * bytes;
  }
  std::array<int32_t, 3> dims() const {
    return {static_cast<int32_t>(d[1]), static_cast<int32_t>(d[2]), static_cast<int32_t>(d[3])};
  }
  Range range() const { return {Space::L2, base, base + size}; }
  // The bytes from a region's first element to its last (the region may be
  // strided inside the tensor; the range covers the gaps).
  Range span(const Coord& lo, const Coord& hi) const {
    return {Space::L2, addr(lo[0], lo[1], lo[2], lo[3]), addr(hi[0], hi[1], hi[2], hi[3]) + bytes};
  }
  bool holds(const Coord& lo, const Coord& hi) const {
    for (int i = 0; i < 4; ++i)
      if (lo[i] < this->lo[i] || hi[i] > this->hi[i]) return false;
    return true;
  }
};

// "[C, H, W] (channels padded to P)" of a buffer, for error messages.
std::string shape_text(const TensorView& t) {
  return "[" + std::to_string(t.d[1]) + ", " + std::to_string(t.d[2]) + ", " + std::to_string(t.d[3]) +
         "] (channels padded to " + std::to_string(t.cpad) + ")";
}

// The upper corner of a piece at its place in the tensor holding it.
Coord placed_upper(const sir::Source& s) {
  if (!s.place) return s.upper;
  Coord hi;
  for (int i = 0; i < 4; ++i) hi[i] = (*s.place)[i] + s.upper[i] - s.lower[i];
  return hi;
}

isa::DataFmt fmt_of_dtype(const std::string& dtype) {
  return dtype == "float16" ? isa::DataFmt::FP16 : isa::DataFmt::INT8;
}
isa::DataFmt fmt_of_bits(int64_t bits) { return bits == 16 ? isa::DataFmt::FP16 : isa::DataFmt::INT8; }

isa::YCutMode ycut_of(const std::string& cut_mode) {
  char c = cut_mode.size() >= 2 ? cut_mode[1] : 'K';
  switch (c) {
    case 'W': return isa::YCutMode::CUT_W;
    case 'H': return isa::YCutMode::CUT_H;
    case 'N': return isa::YCutMode::CUT_N;  // the batch axis (the original's "KN" at batch 16 and 64)
    case 'C': return isa::YCutMode::CUT_C;
    default: return isa::YCutMode::CUT_K;
  }
}

// Sets a number parameter from a JSON value, keeping integer vs float.
void set_number(Instruction& in, Param p, const Json* v, double fallback, bool fallback_float) {
  if (v && v->is_int()) {
    in.set(p, v->as_int());
  } else if (v && v->is_double()) {
    in.set_float(p, v->as_double());
  } else if (fallback_float) {
    in.set_float(p, fallback);
  } else {
    in.set(p, static_cast<int64_t>(fallback));
  }
}

const Json* module_value(const fir::Layer& l, std::string_view group, std::string_view key) {
  const fir::Module* m = l.module(group);
  return m ? m->params.find(key) : nullptr;
}

struct Load {
  enum Type { Act, Weights, Wl0Dram, Receive, Copy } type;
  const BufferTensor* buffer = nullptr;               // Act, Weights, Receive
  const sir::WeightBufferEntry* entry = nullptr;      // Wl0Dram
  int64_t order = 0;                                  // tensor_order (prefetch order)
  bool has_order = false;
  size_t source = 0;                                  // Act, Receive, Copy: which piece of the buffer (its source entry)
};

// Per-program state shared by the cores.
struct Shared {
  // A constructor, not an aggregate: the tables below start empty however
  // many are added (a brace list had to name each, or warn).
  Shared(const sir::Schedule& s_, const fir::Graph& g_, const arch::Architecture& a_, const Options& o_)
      : s(s_), g(g_), a(a_), o(o_), dialect(o_.dialect) {}
  const sir::Schedule& s;
  const fir::Graph& g;
  const arch::Architecture& a;
  const Options& o;
  Dialect dialect;
  std::map<int64_t, DramWeightSlice> weight_dram;  // weight transfer id -> its output channels in DRAM
  std::map<std::string, int64_t> weight_per_k;      // layer -> bytes of one output channel's weights
  struct DramAct {
    int64_t address;
    std::array<int64_t, 4> dims;  // full tensor n, c, h, w
    int64_t bytes;
    std::array<int64_t, 4> origin;  // coordinates of its first element in the whole activation
  };
  std::map<int64_t, DramAct> act_dram;    // DRAM load transfer id -> location of the stored tensor
  std::map<int64_t, DramAct> store_dram;  // DRAM store transfer id -> where it goes
  std::map<int64_t, int> group_of;        // workload id -> fusion group
  // Cores share DRAM but no queue tokens: a store read back by another core
  // is followed by a one-pixel send to that core, and the reading core's
  // first load of it waits for the matching receive (tag: the load's id).
  struct SyncTarget {
    int64_t core;    // the core loading the data
    int64_t load;    // the "-1"/out load (the tag of the pair)
    int64_t reader;  // the workload on that core that first reads it
  };
  std::map<int64_t, std::vector<SyncTarget>> sync_out;  // store id -> who loads it back on other cores
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> sync_in;  // (core, load id) -> cores of the stores it reads (late receives)
  // Per core, two pixels of L2 no tensor of the schedule ever holds:
  // completion messages are sent from the first, so that they hold up no
  // later write of the stored tensor's bytes, and received into the second
  // (-1: none; then they are sent from the stored tensor and received into
  // the buffer the load fills).
  std::map<int64_t, int64_t> idle_byte;
  // Early receives: on a core with an idle pixel, a completion message is
  // received in the core's first workload of the reading layer after the
  // storing workload (not necessarily in the reader: a layer cut into row
  // stripes or batch groups takes all its messages in its first one), so
  // the storing core does not hold its later sends up until each stripe is
  // due. The receive "writes" the stored DRAM range, which orders the loads
  // after it.
  struct EarlyReceive {
    int64_t writer, tag, dram_lo, dram_hi;
  };
  std::map<std::pair<int64_t, int64_t>, std::vector<EarlyReceive>> early_receive;  // (core, workload id) -> receives
  // Host steps ("-1"/host): a store the host reads is followed by a ct_hs on
  // its core, a load of a host result preceded by a ct_hw; a step whose
  // results no load reads (graph outputs) is waited for after its last store.
  std::map<int64_t, const sir::HostStep*> host_of_store, host_of_load, host_tail_store;
  // Steps no transfer of the chip touches (graph inputs in, graph outputs
  // out): their ct_hw closes the program of `free_steps_core`, so that its
  // end waits for the host.
  std::vector<const sir::HostStep*> free_steps;
  int64_t free_steps_core = 0;
  std::map<int64_t, int32_t> host_slyr;  // step id -> layer_index of its first layer (the instructions' slyr)
};

const fir::Layer& layer_of(const Shared& sh, const std::string& name, const std::string& pointer) {
  const fir::Layer* l = sh.g.find(name);
  if (!l) fail(sh.o, pointer, "layer \"" + name + "\" is not in the Frontend IR " + sh.o.fir_file);
  return *l;
}

class CoreAssembler {
 public:
  CoreAssembler(const Shared& sh, const sir::Core& core) : sh_(sh), core_(core) {
    // Registers the reference programs never write hold their reset values.
    Instruction gp(Opcode::pe_cfg_gp);
    gp.set(Param::GROUPS, 1);
    gp.set_list(Param::DILATION, {1, 1});
    cfg_[static_cast<int>(Opcode::pe_cfg_gp)] = gp;
  }
  // WL0 addresses count rows of this many bytes.
  int64_t wl0_row_bytes() const { return sh_.a.core.wl0_row_bytes; }

  std::vector<Built> run();

 private:
  // ---- helpers
  std::string wptr(size_t k) const { return ptr_workload(core_.id, k); }
  const fir::Layer& layer(size_t k) const { return layer_of(sh_, W()[k].layer_name, wptr(k) + "/layer_name"); }
  const std::vector<Workload>& W() const { return core_.workloads; }
  const sir::WeightBuffer& wl0(const Workload& w) const {
    return sh_.dialect == Dialect::Wl1 ? w.wl1_buffer : w.wl0_buffer;
  }
  isa::Mapping mapping(size_t k, int32_t tile) const {
    isa::Mapping m;
    m.slyr = static_cast<int32_t>(layer(k).layer_index);
    m.s_flyr = flyr_;
    m.wkl = static_cast<int32_t>(W()[k].workload_id);
    m.tile = tile;
    m.core = static_cast<int32_t>(core_.id);
    return m;
  }
  Built& emit(Instruction in, Meta meta) {
    in.mapping.core = static_cast<int32_t>(core_.id);
    out_.push_back({std::move(in), std::move(meta)});
    return out_.back();
  }
  // The vector processor's source and destination boxes and formats (signed).
  void vp_cfg_fm(const isa::Mapping& mp, const std::string& in_dtype, const std::string& out_dtype,
                 const std::array<int32_t, 3>& stile, const std::array<int32_t, 3>& dtile) {
    Instruction fm(Opcode::vp_cfg_fm);
    fm.mapping = mp;
    fm.set_enum(Param::IF, isa::DataSign::SIGNED);
    fm.set_enum(Param::OF, isa::DataSign::SIGNED);
    fm.set_enum(Param::IDF, fmt_of_dtype(in_dtype));
    fm.set_enum(Param::ODF, fmt_of_dtype(out_dtype));
    fm.set(Param::VF32, 0);
    fm.set_list(Param::STile, stile);
    fm.set_list(Param::DTile, dtile);
    emit_cfg(fm);
  }
  // Configuration registers are written only when their values change.
  void emit_cfg(Instruction in) {
    auto& last = cfg_[static_cast<int>(in.op())];
    Instruction cmp = in;
    cmp.mapping = {};
    if (last && *last == cmp) return;
    last = cmp;
    Meta m;
    m.kind = Kind::Config;
    emit(std::move(in), std::move(m));
  }

  const BufferTensor& find_buffer(size_t k, int64_t tid, const std::string& what) const;
  const BufferTensor& ofmap_buffer(size_t k) const;
  Coord region_lower(size_t k, bool ofmap) const;
  std::vector<std::pair<size_t, const sir::Tile*>> tiles_in_order(size_t k) const;
  fir::PeConv pe_conv(const std::string& layer_name, const std::string& pointer) const;
  std::array<int32_t, 4> weight_shape(const std::string& layer_name, const std::string& pointer) const;
  int64_t weight_per_k(const std::string& layer_name, const std::string& pointer) const;
  const DramWeightSlice& weight_slice(int64_t transfer_id, const std::string& pointer) const;
  const BufferTensor& input_buffer(size_t k, size_t i) const;
  bool own_weights(size_t k, const std::optional<std::vector<int64_t>>& ids, const std::string& layer_name) const;
  const sir::WeightBufferEntry* own_entry(size_t k, const sir::Tile* t) const;
  int64_t wl0_address(size_t k, const sir::Tile& t) const;
  std::array<isa::YCutMode, 1> ycut_for(const std::string& layer_name) const;

  // ---- emitters
  void pe_tile(size_t k, size_t ti, const sir::Tile& t, int64_t swaddr);
  void vp_tile(size_t k, size_t ti, const sir::Tile& t);
  void move_tile(size_t k, size_t ti, const sir::Tile& t);
  void lw_cfg(const isa::Mapping& m, const std::array<int32_t, 4>& shape);
  void lw_dram(size_t k, const sir::WeightBufferEntry& e, isa::Mapping m);
  void lw_tile(size_t k, size_t ti, const sir::Tile& t, int64_t slot, const BufferTensor& l2);
  void ldw(size_t k, const BufferTensor& b, isa::Mapping m);
  void lda(size_t k, const BufferTensor& b, size_t source, isa::Mapping m);
  void sta(size_t k, const BufferTensor& b, int64_t store_tid);
  void host_signal(isa::Mapping m, const sir::HostStep& h, const Range& stored);
  void host_wait(isa::Mapping m, const sir::HostStep& h, std::optional<Range> result);
  void sync_send(const isa::Mapping& m, int64_t l2_address, const Range& stored, int64_t reader, int64_t tag);
  void emit_syncs(int64_t before);
  void flush_sends(int64_t before);
  void sync_receive(const isa::Mapping& m, const BufferTensor& b, int64_t address, int64_t writer, int64_t tag);
  void early_receive(const isa::Mapping& m, int64_t landing, const Shared::EarlyReceive& x);
  void dt(size_t k, const BufferTensor& src, const BufferTensor& dst, const std::vector<int32_t>& consumers);
  void so(size_t k, const BufferTensor& src, const Coord& lower, const Coord& upper, const sir::Destination& d,
          int64_t tid);
  void si(size_t k, const BufferTensor& b, size_t source, isa::Mapping m);
  size_t reader_of(size_t k, int64_t tid) const;
  void order_early_receives(size_t k, std::vector<Load>& loads) const;
  const BufferTensor* copy_source(size_t k, const BufferTensor& b, int64_t tid) const;
  void copy(size_t k, const BufferTensor& b, size_t source);

  // ---- workload structure
  std::vector<Load> new_loads(size_t k) const;
  bool early_buffer(const BufferTensor& b) const;
  bool is_own(size_t k, const Load& l) const;
  void emit_load(size_t k, const Load& l);
  void emit_own(size_t k, const std::vector<Load>& own);
  int64_t act_destination(const BufferTensor& b, size_t source) const;
  void workload(size_t k);
  void core_tiles(size_t k, const sir::WeightBufferEntry& core, const std::vector<Load>& own,
                  const std::vector<Load>& pre);
  bool block0_prefetch(size_t k, int64_t A, int64_t B, int64_t per) const;
  void stores(size_t k);
  void flush_stores();
  void link_clyr();

  const Shared& sh_;
  const sir::Core& core_;
  std::vector<Built> out_;
  std::array<std::optional<Instruction>, isa::kOpcodeCount> cfg_;
  int32_t flyr_ = 0;
  std::map<std::string, const Workload*> first_wkl_;  // layer -> first workload computing it
  std::map<int64_t, int64_t> core_slots_;             // weight transfer -> WL0 slot A of its tile weights
  struct PendingStore {
    size_t k;
    const BufferTensor* src;
    int64_t tid;
  };
  std::vector<PendingStore> pending_stores_;
  std::set<int64_t> loaded_;  // DRAM loads emitted on this core
  struct ReadySync {
    int64_t key;  // the reading workload's id
    int64_t core, tag, l2_address;
    Range stored;
    isa::Mapping mapping;
  };
  std::vector<ReadySync> ready_syncs_;  // stores made whose completion is not yet sent
  struct PendingSend {
    int64_t reader;  // the receiving workload's id
    size_t k;        // the sending workload
    const BufferTensor* src;
    Coord lo, hi;
    const sir::Destination* d;
    int64_t tid;
  };
  std::vector<PendingSend> pending_sends_;  // outputs computed whose sends are not yet due
};

// ------------------------------------------------------------------ lookups

// Whether tensor b holds transfer tid at the transfer's own coordinates: a
// data movement layer's output holds its pieces elsewhere (their `place`),
// so it is no tensor to read or copy the transfer from.
bool holds_here(const BufferTensor& b, int64_t tid) {
  if (!b.transfer_id || std::find(b.transfer_id->begin(), b.transfer_id->end(), tid) == b.transfer_id->end())
    return false;
  if (b.source)
    for (const auto& s : *b.source)
      if (s.transfer_id == tid && s.place) return false;
  return true;
}

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

// ------------------------------------------------------------------ compute

double attr_or(const fir::Layer& l, const char* key, double fallback) {
  const Json* a = l.activation_attr();
  const Json* v = a ? a->find(key) : nullptr;
  return v && v->is_number() ? v->as_double() : fallback;
}

// The fused activation of a conv2d / dense in the PE epilogue: ReLU, a clamp
// to [0, ACTPM] (relu6, clip with min 0) or a leaky ReLU of slope ACTPM.
void pm_activation(Instruction& pm, const fir::Layer& L, const Options& o, const std::string& p) {
  isa::ActMode mode = isa::ActMode::DISABLE;
  double param = 0.0;
  const std::string type = L.activation && L.activation->type ? *L.activation->type : "";
  if (type == "relu") {
    mode = isa::ActMode::RELU;
  } else if (type == "relu6") {
    mode = isa::ActMode::CLIP, param = 6.0;
  } else if (type == "clip") {
    // The interpreter's defaults (int8::Activation): min 0, max 6.
    if (attr_or(L, "min", 0.0) != 0.0)
      fail(o, p + "/layer_name", "layer \"" + L.name +
                                         "\": a fused clip with a lower bound other than 0 has no PE activation "
                                         "(ActMode CLIP clamps to [0, ACTPM]); run it as a clip layer on the vector processor");
    mode = isa::ActMode::CLIP, param = attr_or(L, "max", 6.0);
  } else if (type == "leaky_relu") {
    mode = isa::ActMode::LEAKY_RELU, param = attr_or(L, "alpha", 0.01);
  } else if (!type.empty()) {
    fail(o, p + "/layer_name", "layer \"" + L.name + "\": activation_type \"" + type +
                                       "\" has no PE activation mode");
  }
  pm.set_enum(Param::ACTMD, mode);
  pm.set_float(Param::ACTPM, param);
}

// The VP operation of an activation layer, from fp32_mul_group act_mode when
// there is one, else from the operation (as the interpreter chooses).
isa::Lut activation_lut(const fir::Layer& L, const Options& o, const std::string& p) {
  if (L.op == fir::Op::PRelu) return isa::Lut::PRelu;
  const Json* m = module_value(L, "fp32_mul_group", "act_mode");
  std::string mode = m && m->is_string() ? m->as_string() : std::string(fir::op_name(L.op));
  static const std::pair<const char*, isa::Lut> kModes[] = {
      {"relu", isa::Lut::Relu},           {"clip", isa::Lut::Clip},           {"leaky_relu", isa::Lut::LeakyRelu},
      {"elu", isa::Lut::Elu},             {"hard_sigmoid", isa::Lut::HardSigmoid}, {"hard_swish", isa::Lut::HardSwish},
      {"sigmoid", isa::Lut::Sigmoid},     {"silu", isa::Lut::Silu},           {"tanh", isa::Lut::Tanh},
      {"gelu", isa::Lut::Gelu},           {"others", isa::Lut::Requantize}};
  for (const auto& [name, lut] : kModes)
    if (mode == name) return lut;
  fail(o, p + "/layer_name", "layer \"" + L.name + "\": act_mode \"" + mode +
                                     "\" is no vector-processor operation");
}

std::string dims_text(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

void CoreAssembler::pe_tile(size_t k, size_t ti, const sir::Tile& t, int64_t swaddr) {
  const Workload& w = W()[k];
  const fir::Layer& L = layer(k);
  const std::string p = wptr(k);
  if (w.ifmap.empty() || w.ifmap[0].transfer_id.empty()) fail(sh_.o, p + "/ifmap", "the workload has no ifmap");
  TensorView ifm = TensorView::of(input_buffer(k, 0)).place(region_lower(k, false));
  TensorView ofm = TensorView::of(ofmap_buffer(k)).place(region_lower(k, true));
  if (L.input_dtype.size() < 2 || L.output_dtype.empty())
    fail(sh_.o, p + "/layer_name", "layer \"" + L.name + "\" needs an input, a weight and an output dtype");
  const auto mp = mapping(k, static_cast<int32_t>(ti));
  const bool int8_out = L.output_dtype[0] != "float16";

  Instruction fm(Opcode::pe_cfg_fm);
  fm.mapping = mp;
  fm.set_enum(Param::IF, isa::DataSign::SIGNED);
  fm.set_enum(Param::OF, isa::DataSign::SIGNED);
  fm.set_enum(Param::SF, fmt_of_dtype(L.input_dtype[0]));
  fm.set_enum(Param::WF, fmt_of_dtype(L.input_dtype[1]));
  fm.set_enum(Param::DF, fmt_of_dtype(L.output_dtype[0]));
  double zp = (L.quant_info && !L.quant_info->inputs.empty()) ? L.quant_info->inputs[0].zero_point : 0.0;
  fm.set_float(Param::PADV, -zp + 0.0);
  auto sd = ifm.dims(), dd = ofm.dims();
  fm.set_list(Param::STile, sd);
  fm.set_list(Param::DTile, dd);
  emit_cfg(fm);

  Instruction pm(Opcode::pe_cfg_pm);
  pm.mapping = mp;
  pm_activation(pm, L, sh_.o, p);
  pm.set_enum(Param::QC, isa::Float2Fixed::ROUND);
  if (int8_out) {
    if (!L.quant_info || !L.quant_info->output_scale || !L.quant_info->output_zero_point)
      fail(sh_.o, p + "/layer_name", "layer \"" + L.name + "\" has an INT8 output but no output quantisation");
    pm.set_float(Param::QB, *L.quant_info->output_zero_point);
    pm.set_float(Param::QK, *L.quant_info->output_scale);
  } else {
    pm.set(Param::QB, 0);
    pm.set(Param::QK, 0);
  }
  pm.set(Param::ADDEN, 0);
  const fir::PeConv pc = pe_conv(L.name, p + "/layer_name");
  auto st = pc.stride;
  pm.set_list(Param::STRIDE, {static_cast<int32_t>(st[0]), static_cast<int32_t>(st[1])});
  pm.set_list(Param::XYmode, {static_cast<int32_t>(isa::XCutMode::CUT_K),
                              static_cast<int32_t>(ycut_of(t.cut_mode.value_or("KK")))});
  emit_cfg(pm);

  Instruction dq(Opcode::pe_cfg_dq);
  dq.mapping = mp;
  emit_cfg(dq);

  auto od = dims_of(t.ofmap_lower, t.ofmap_upper);
  auto id = dims_of(t.ifmap_lower, t.ifmap_upper);
  Instruction tp(Opcode::pe_cfg_tp);
  tp.mapping = mp;
  auto win = pc.kernel;
  tp.set_list(Param::KERNEL, {static_cast<int32_t>(win[0]), static_cast<int32_t>(win[1])});
  tp.set_list(Param::Tile, {i32(od[0], sh_.o, p, "tile"), i32(od[1], sh_.o, p, "tile"), i32(id[1], sh_.o, p, "tile"),
                            i32(od[2], sh_.o, p, "tile"), i32(od[3], sh_.o, p, "tile")});
  auto mm = t.mtc0_mtk0.value_or(std::array<int64_t, 2>{1, 1});
  tp.set(Param::MTK0, mm[1]);
  tp.set(Param::MTC0, mm[0]);
  auto omt = t.out_mini_tile.value_or(Coord{1, 1, 1, 1});
  tp.set_list(Param::MTI, {static_cast<int32_t>(omt[2] - 1), static_cast<int32_t>(omt[3] - 1)});
  emit_cfg(tp);

  // Grouped and dilated convolutions: the tile holds whole groups.
  const int64_t groups = L.group_count();
  const int64_t out_c = L.output_shape.size() == 1 ? fir::chip_box(L.output_shape[0])[1] : 0;
  const int64_t kg = groups > 0 ? out_c / groups : 0;
  if (groups < 1 || kg < 1 || out_c % groups != 0)
    fail(sh_.o, p + "/layer_name", "layer \"" + L.name + "\": groups " + std::to_string(groups) +
                                       " do not divide its output channels");
  if (groups > 1 && (t.ofmap_lower[1] % kg != 0 || od[1] % kg != 0))
    fail(sh_.o, p + "/tile_info/tile_num_" + std::to_string(ti),
         "the tile's output channels " + std::to_string(t.ofmap_lower[1]) + ".." + std::to_string(t.ofmap_upper[1]) +
             " of layer \"" + L.name + "\" are not whole groups of " + std::to_string(kg));
  Instruction gp(Opcode::pe_cfg_gp);
  gp.mapping = mp;
  auto dil = L.dilations();
  gp.set(Param::GROUPS, groups > 1 ? od[1] / kg : 1);
  gp.set_list(Param::DILATION, {i32(dil[0], sh_.o, p, "dilation"), i32(dil[1], sh_.o, p, "dilation")});
  emit_cfg(gp);

  const auto& pad = t.tile_padding_tblr;
  Instruction cv(Opcode::pe_conv);
  cv.mapping = mp;
  cv.set(Param::PS, 0);
  const auto& il = t.ifmap_lower;
  // SPHI/SPWI: the row and column of the STile box where the window starts
  // (negative inside the top/left padding); the PE reads what lies outside
  // the box as padding. The original tool chain writes -padding, which is the
  // start for every tile that begins at the box's corner; a tile that starts
  // further in only needs its true start when it reaches past the box's
  // bottom (right) edge, so only then does it differ from the reference.
  cv.set(Param::SPHI, pad[1] > 0 ? il[2] - pad[0] - ifm.org[2] : -pad[0]);
  cv.set(Param::SPWI, pad[3] > 0 ? il[3] - pad[2] - ifm.org[3] : -pad[2]);
  cv.set(Param::SBSG, 0);
  cv.set(Param::DBSG, 0);
  const auto& ol = t.ofmap_lower;
  cv.set(Param::STaddr, ifm.addr(il[0], il[1], il[2] - pad[0], il[3] - pad[2]));
  cv.set(Param::SWaddr, swaddr);
  int64_t daddr = ofm.addr(ol[0], ol[1], ol[2], ol[3]);
  if (daddr < ofm.base || daddr >= ofm.base + ofm.size)
    fail(sh_.o, p + "/tile_info/tile_num_" + std::to_string(ti),
         "the tile's ofmap corner is outside its buffer [" + std::to_string(ofm.base) + ", " +
             std::to_string(ofm.base + ofm.size) + ")");
  cv.set(Param::DTaddr, daddr);
  Meta m;
  m.kind = Kind::Compute;
  int64_t wbytes = weight_per_k(w.layer_name, p + "/layer_name") * od[1];
  m.reads = {ifm.range(), {Space::Wl0, swaddr * wl0_row_bytes(), swaddr * wl0_row_bytes() + wbytes}};
  m.writes = {{Space::L2, daddr, ofm.base + ofm.size}};
  emit(std::move(cv), std::move(m));
}

void CoreAssembler::vp_tile(size_t k, size_t ti, const sir::Tile& t) {
  const Workload& w = W()[k];
  const fir::Layer& L = layer(k);
  const std::string p = wptr(k);
  if (w.ifmap.empty()) fail(sh_.o, p + "/ifmap", "the workload has no ifmap");
  if (L.input_dtype.empty() || L.output_dtype.empty())
    fail(sh_.o, p + "/layer_name", "layer \"" + L.name + "\" has no input or output dtype");
  const bool maxpool = L.op == fir::Op::MaxPool2d;
  const bool resize = L.op == fir::Op::Resize;
  // (a resize is a vp_pool too: it reads a window of its input box per output pixel)
  const bool pool = maxpool || L.op == fir::Op::AvgPool2d || resize;
  // The VP reads its operands from L2, where the schedule brings layer
  // outputs, graph inputs and the constant operands of PReLU and element-wise
  // layers (loaded from DRAM); the average pool's constant divisor is the
  // multiplier MG0V. Other constants have no way there.
  const bool loads_constant = L.op == fir::Op::PRelu || L.op == fir::Op::ElementWiseAdd ||
                              L.op == fir::Op::ElementWiseSub || L.op == fir::Op::ElementWiseMul;
  if (!pool && !loads_constant)
    for (const auto& prev : L.previous_layer)
      if (fir::is_constant_name(prev))
        fail(sh_.o, p + "/layer_name", "layer \"" + L.name + "\" (" + std::string(fir::op_name(L.op)) + ") reads the constant \"" + prev +
                                           "\": no transfer brings such constants into L2 for the vector processor");
  if (loads_constant && w.ifmap.size() != 2)
    fail(sh_.o, p + "/ifmap", "layer \"" + L.name + "\" (" + std::string(fir::op_name(L.op)) +
                                  ") needs both operands as ifmaps (a constant one loaded from DRAM)");
  Coord ril = region_lower(k, false), rol = region_lower(k, true);
  std::vector<TensorView> ifms;
  for (size_t i = 0; i < w.ifmap.size(); ++i) ifms.push_back(TensorView::of(input_buffer(k, i)));
  TensorView ofm = TensorView::of(ofmap_buffer(k)).place(rol);
  // The first operand of a two-input operation (dequantized with IQK0/IQB0,
  // the Frontend IR's first input) is read at STaddr1, the second at STaddr:
  // every residual addition of the reference programs pairs them so
  // (formats/ISA_Format.md, section 9.5). The first is the ifmap whose
  // producer is the layer's first input.
  size_t first = 0;
  if (ifms.size() > 1 && !L.previous_layer.empty()) {
    auto producer = [&](size_t i) -> std::string {
      const BufferTensor& b = input_buffer(k, i);
      return b.source && !b.source->empty() && (*b.source)[0].layer_name ? *(*b.source)[0].layer_name : "";
    };
    if (producer(0) != L.previous_layer[0] && producer(1) == L.previous_layer[0]) first = 1;
  }
  const bool two = ifms.size() > 1;
  // Numpy broadcast: operand A (STaddr1, box vp_cfg_fm STile) has the
  // output's shape, operand B (STaddr, box vp_cfg_fm1 STile) may have sizes
  // of 1 that broadcast. When the Frontend IR's first input is the smaller,
  // the operands trade places with their dequantization (exact for + and x;
  // a - b becomes LUT ReverseSub).
  bool swap = false;
  if (two && L.input_shape.size() > 1 && !L.output_shape.empty()) {
    bool full0 = L.input_shape[0] == L.output_shape[0], full1 = L.input_shape[1] == L.output_shape[0];
    if (!full0 && !full1)
      fail(sh_.o, p + "/layer_name", "layer \"" + L.name + "\": both inputs broadcast to the output (" +
                                         dims_text(L.input_shape[0]) + " and " + dims_text(L.input_shape[1]) +
                                         "); the vector processor broadcasts its second operand only");
    swap = !full0;
  }
  const size_t ia = swap ? 1 - first : first, ib = 1 - ia;
  const std::string& dtype_a = L.input_dtype[swap && L.input_dtype.size() > 1 ? 1 : 0];
  const std::string& dtype_b = L.input_dtype.size() > 1 ? L.input_dtype[swap ? 0 : 1] : dtype_a;
  // A is placed at the workload's input region (its output region when the
  // operands traded places); B at the same place except where its box has
  // size 1, at its only element.
  const Coord ra = swap ? rol : ril;
  ifms[ia].place(ra);
  // Both operands are read in boxes of one shape (B's sizes of 1 broadcast):
  // a window of a wider tensor is not read in place (irgen copies it out).
  // B of another element size (a float16 constant) has a box of its own
  // (vp_cfg_fm1, channels padded to the alignment in bytes for its format).
  if (two) {
    bool same = ifms[ib].cpad == ifms[ia].cpad || ifms[ib].dims() != ifms[ia].dims() || ifms[ib].bytes != ifms[ia].bytes;
    for (int i = 1; i < 4; ++i) same = same && (ifms[ib].d[i] == ifms[ia].d[i] || ifms[ib].d[i] == 1);
    if (!same)
      fail(sh_.o, p + "/ifmap", "the inputs of a two-input vector operation must be held in buffers of one shape (vp_cfg_fm STile), "
                                "or of size 1 along the axes the second broadcasts (vp_cfg_fm1 STile): input " +
                                    std::to_string(ib) + "'s buffer at " + std::to_string(ifms[ib].base) + " is " + shape_text(ifms[ib]) +
                                    ", input " + std::to_string(ia) + "'s at " + std::to_string(ifms[ia].base) + " is " + shape_text(ifms[ia]));
  }
  const bool fm1_needed = two && (ifms[ib].dims() != ifms[ia].dims() || dtype_b != dtype_a);
  Coord rb = ra;
  if (two) {
    if (fm1_needed)
      for (int i = 0; i < 4; ++i) rb[i] = ifms[ib].d[i] == 1 ? ifms[ib].lo[i] : ra[i];
    ifms[ib].place(rb);
  }
  const auto mp = mapping(k, static_cast<int32_t>(ti));
  isa::Lut lut = isa::Lut::Requantize;
  if (maxpool) lut = isa::Lut::MaxPool;
  else if (resize) lut = isa::Lut::Resize;
  else if (pool) lut = isa::Lut::AvgPool;
  else if (L.op == fir::Op::ElementWiseMul) lut = isa::Lut::Mul;
  else if (L.op == fir::Op::ElementWiseAdd || L.op == fir::Op::ElementWiseSub) {
    auto sg = L.fp32_sum_sub_group();
    bool sub = sg ? sg->sumsub_group_mode == "sub" : L.op == fir::Op::ElementWiseSub;
    lut = !sub ? isa::Lut::Add : swap ? isa::Lut::ReverseSub : isa::Lut::Sub;
  } else if (fir::is_activation_op(L.op)) {
    lut = activation_lut(L, sh_.o, p);
  }
  const bool act = lut >= isa::Lut::Relu && lut <= isa::Lut::PRelu;

  Instruction gcs(Opcode::vp_cfg_gcs);
  gcs.mapping = mp;
  gcs.set_enum(Param::CMPS, maxpool ? isa::CMPS::MAX : isa::CMPS::DEFAULT);
  emit_cfg(gcs);

  Instruction gms(Opcode::vp_cfg_gms);
  gms.mapping = mp;
  // Activations multiply by mul_group_k_scalar first (1 when absent, as the interpreter).
  set_number(gms, Param::MG0V, module_value(L, "fp32_mul_group", "mul_group_k_scalar"), act ? 1 : 0, false);
  emit_cfg(gms);

  Instruction sms(Opcode::vp_cfg_sms);
  sms.mapping = mp;
  emit_cfg(sms);

  Instruction qp(Opcode::vp_cfg_qp);
  qp.mapping = mp;
  const Json* carry = module_value(L, "post_cal", "carry_sel");
  bool round = carry && carry->is_string() && carry->as_string() == "round";
  qp.set_enum(Param::QCS, round ? isa::Float2Fixed::ROUND : isa::Float2Fixed::CEIL);
  set_number(qp, Param::QB, module_value(L, "post_cal", "sum_b"), 0, false);
  set_number(qp, Param::QK, module_value(L, "post_cal", "mul_k"), 1, false);
  emit_cfg(qp);

  Instruction iq(Opcode::vp_cfg_iq);
  iq.mapping = mp;
  set_number(iq, Param::IQB0, module_value(L, "pre_cal", swap ? "requan_zp_b" : "requan_zp_a"), 0, false);
  set_number(iq, Param::IQK0, module_value(L, "pre_cal", swap ? "requan_scale_b" : "requan_scale_a"), 1, false);
  emit_cfg(iq);

  Instruction iq1(Opcode::vp_cfg_iq1);
  iq1.mapping = mp;
  set_number(iq1, Param::IQB1, module_value(L, "pre_cal", swap ? "requan_zp_a" : "requan_zp_b"), 0.0, true);
  set_number(iq1, Param::IQK1, module_value(L, "pre_cal", swap ? "requan_scale_a" : "requan_scale_b"), 0.0, true);
  emit_cfg(iq1);

  vp_cfg_fm(mp, dtype_a, L.output_dtype[0], ifms[ia].dims(), ofm.dims());

  // B's own box and format, written when they differ from A's or when an
  // earlier one is in force on this core (programs without any keep the
  // reference's meaning: B in A's box).
  if (two && (fm1_needed || cfg_[static_cast<int>(Opcode::vp_cfg_fm1)])) {
    Instruction fm1(Opcode::vp_cfg_fm1);
    fm1.mapping = mp;
    fm1.set_enum(Param::IDF, fmt_of_dtype(dtype_b));
    fm1.set_list(Param::STile, ifms[ib].dims());
    emit_cfg(fm1);
  }

  // The parameters of the activation functions that take any (the
  // interpreter's defaults when the Frontend IR gives none).
  if (lut == isa::Lut::Clip || lut == isa::Lut::LeakyRelu || lut == isa::Lut::Elu || lut == isa::Lut::HardSigmoid) {
    Instruction ac(Opcode::vp_cfg_act);
    ac.mapping = mp;
    double a = 0.0, b = 0.0;
    if (lut == isa::Lut::Clip) a = attr_or(L, "min", 0.0), b = attr_or(L, "max", 6.0);
    if (lut == isa::Lut::LeakyRelu) a = attr_or(L, "alpha", 0.01);
    if (lut == isa::Lut::Elu) a = attr_or(L, "alpha", 1.0);
    if (lut == isa::Lut::HardSigmoid) a = attr_or(L, "alpha", double(1.0f / 6.0f)), b = attr_or(L, "beta", 0.5);
    ac.set_float(Param::ACTPM, a);
    ac.set_float(Param::ACTPM1, b);
    emit_cfg(ac);
  }

  auto od = dims_of(t.ofmap_lower, t.ofmap_upper);
  Instruction tp(Opcode::vp_cfg_tp);
  tp.mapping = mp;
  auto st = L.strides();
  auto win = L.pool_size.value_or(std::array<int64_t, 2>{1, 1});
  std::optional<fir::ResizeGeometry> rsg;
  if (resize) {
    std::string why;
    rsg = fir::resize_geometry(L, &why);
    if (!rsg) fail(sh_.o, p + "/layer_name", "layer \"" + L.name + "\" (resize): " + why);
    // KERNEL: the taps each output blends (priced per output pixel).
    win = rsg->mode == 0 ? std::array<int64_t, 2>{2, 2} : std::array<int64_t, 2>{1, 1};
  }
  tp.set_list(Param::STRIDE, {static_cast<int32_t>(st[0]), static_cast<int32_t>(st[1])});
  tp.set_list(Param::KERNEL, {static_cast<int32_t>(win[0]), static_cast<int32_t>(win[1])});
  tp.set_list(Param::Tile, {i32(od[1], sh_.o, p, "tile"), i32(od[2], sh_.o, p, "tile"), i32(od[3], sh_.o, p, "tile")});
  tp.set(Param::T1F, L.lut_code(1));
  tp.set(Param::T0F, L.lut_code(0));
  // Max pooling pads with the smallest 16-bit value.
  tp.set(Param::PADV_AREA, maxpool ? std::numeric_limits<int16_t>::min() : 0);
  emit_cfg(tp);

  if (pool && !resize) {
    // Dilated windows and averages over the elements inside the input: a
    // vp_cfg_pl, written back to its reset value before a plain pool after one.
    auto dil = L.dilations();
    const Json* cip = nullptr;
    if (const Json* a = L.activation_attr()) cip = a->find("count_include_pad");
    const bool inside = !maxpool && cip && cip->is_bool() && !cip->as_bool();
    if (dil[0] != 1 || dil[1] != 1 || inside || cfg_[static_cast<int>(Opcode::vp_cfg_pl)]) {
      Instruction pl(Opcode::vp_cfg_pl);
      pl.mapping = mp;
      pl.set_list(Param::DILATION, {i32(dil[0], sh_.o, p, "dilation"), i32(dil[1], sh_.o, p, "dilation")});
      pl.set(Param::PLDIV, inside ? 1 : 0);
      emit_cfg(pl);
    }
  }
  if (resize) {
    // The coordinate map of the layer and where this tile sits in it: its
    // first output pixel and the input pixel at STaddr, in layer coordinates.
    Instruction rs(Opcode::vp_cfg_rs);
    rs.mapping = mp;
    rs.set(Param::RSMD, rsg->mode);
    rs.set_float(Param::RSKH, rsg->axis[0].step);
    rs.set_float(Param::RSKW, rsg->axis[1].step);
    rs.set_float(Param::RSBH, rsg->axis[0].offset);
    rs.set_float(Param::RSBW, rsg->axis[1].offset);
    rs.set_list(Param::RSIN, {i32(rsg->axis[0].in, sh_.o, p, "resize"), i32(rsg->axis[1].in, sh_.o, p, "resize")});
    rs.set_list(Param::RSOO, {i32(t.ofmap_lower[2], sh_.o, p, "tile"), i32(t.ofmap_lower[3], sh_.o, p, "tile")});
    rs.set_list(Param::RSIO, {i32(t.ifmap_lower[2], sh_.o, p, "tile"), i32(t.ifmap_lower[3], sh_.o, p, "tile")});
    emit_cfg(rs);
  }

  const bool float_in = L.input_dtype[0] == "float16";
  const int64_t iqen = (sh_.dialect == Dialect::Wl0 && float_in) ? 0 : 1;
  const int64_t gpmd = L.has_relu_group() ? 69 : 4;
  // A VP instruction processes one sample ([C, H, W]): a tile of several
  // samples is one instruction per sample, each at that sample's addresses.
  for (int64_t n = 0; n < od[0]; ++n) {
    int64_t daddr = ofm.addr(rol[0] + n, rol[1], rol[2], rol[3]);
    if (daddr < ofm.base || daddr >= ofm.base + ofm.size)
      fail(sh_.o, p + "/tile_info/tile_num_" + std::to_string(ti),
           "the workload's ofmap corner is outside its buffer [" + std::to_string(ofm.base) + ", " +
               std::to_string(ofm.base + ofm.size) + ")");
    Meta m;
    m.kind = Kind::Compute;
    for (const auto& x : ifms) m.reads.push_back(x.range());
    m.writes = {{Space::L2, daddr, ofm.base + ofm.size}};
    if (pool) {
      const auto& pad = t.tile_padding_tblr;
      Instruction in(Opcode::vp_pool);
      in.mapping = mp;
      in.set(Param::IQEN, iqen);
      in.set(Param::QEN, 3);
      in.set(Param::SHMD, 0);
      in.set(Param::GPMD, gpmd);
      in.set(Param::LUT, static_cast<int64_t>(lut));
      in.set(Param::IPH, -pad[0]);
      in.set(Param::IPW, -pad[2]);
      in.set(Param::STaddr, ifms[0].addr(ril[0] + n, ril[1], ril[2] - pad[0], ril[3] - pad[2]));
      in.set(Param::DTaddr, daddr);
      emit(std::move(in), std::move(m));
    } else {
      Instruction in(Opcode::vp_self);
      in.mapping = mp;
      in.set(Param::IQEN, iqen);
      in.set(Param::QEN, 3);
      in.set(Param::SHMD, 0);
      in.set(Param::GPMD, gpmd);
      in.set(Param::TM, 0);
      in.set(Param::LUT, static_cast<int64_t>(lut));
      int64_t a_first = ifms[ia].addr(ra[0] + n, ra[1], ra[2], ra[3]);
      // (B of one sample, PReLU's slope, serves every sample)
      const int64_t nb = fm1_needed && ifms[ib].d[0] == 1 ? 0 : n;
      int64_t a_second = two ? ifms[ib].addr(rb[0] + nb, rb[1], rb[2], rb[3]) : a_first;
      in.set(Param::STaddr, a_second);
      in.set(Param::STaddr1, a_first);
      in.set(Param::DTaddr, daddr);
      emit(std::move(in), std::move(m));
    }
  }
}

// A tile of a data movement layer (concat, slice, gather): one piece of the
// output, from input `input` of the layer (fir::move_pieces, in the order
// irgen writes the tiles). A piece delivered straight into the output
// tensor (its source entry there has a `place`) needs nothing more; any
// other is read from the input's tensor on this core and copied (dt_cal),
// or requantized by the vector processor where the quantizations differ.
void CoreAssembler::move_tile(size_t k, size_t ti, const sir::Tile& t) {
  const Workload& w = W()[k];
  const fir::Layer& L = layer(k);
  const std::string p = wptr(k) + "/tile_info/tile_num_" + std::to_string(ti);
  std::string why;
  auto pieces = fir::move_pieces(L, w.lower, w.upper, &why);
  if (!pieces) fail(sh_.o, wptr(k) + "/layer_name", "layer \"" + L.name + "\" cannot be cut into moves: " + why);
  if (ti >= pieces->size() || (*pieces)[ti].in_lo != t.ifmap_lower || (*pieces)[ti].in_hi != t.ifmap_upper ||
      (*pieces)[ti].out_lo != t.ofmap_lower || (*pieces)[ti].out_hi() != t.ofmap_upper)
    fail(sh_.o, p, "the tile is not piece " + std::to_string(ti) + " of layer \"" + L.name + "\"'s output box");
  const fir::MovePiece& m = (*pieces)[ti];
  const BufferTensor& ob = ofmap_buffer(k);
  if (ob.source)
    for (const auto& s : *ob.source) {
      if (!s.place) continue;
      const Coord hi = placed_upper(s);
      bool inside = true;
      for (int i = 0; i < 4; ++i) inside = inside && (*s.place)[i] >= t.ofmap_lower[i] && hi[i] <= t.ofmap_upper[i];
      if (inside) return;  // delivered straight into the output
    }
  // The ifmaps are the inputs that give pieces to this box, in input order.
  size_t fi = 0;
  for (size_t i = 0; i < m.input; ++i)
    for (const auto& q : *pieces)
      if (q.input == i) {
        ++fi;
        break;
      }
  if (fi >= w.ifmap.size()) fail(sh_.o, wptr(k) + "/ifmap", "no ifmap for input " + std::to_string(m.input) + " of the tile");
  TensorView src = TensorView::of(input_buffer(k, fi)).place(m.in_lo);
  TensorView dst = TensorView::of(ob).place(m.out_lo);
  const Coord out_hi = m.out_hi();
  if (!src.holds(m.in_lo, m.in_hi) || !dst.holds(m.out_lo, out_hi))
    fail(sh_.o, p, "the piece does not lie inside the tensors it moves between");
  auto d = dims_of(m.in_lo, m.in_hi);
  const auto mp = mapping(k, static_cast<int32_t>(ti));
  const std::string& in_dtype = m.input < L.input_dtype.size() ? L.input_dtype[m.input] : L.input_dtype.at(0);
  if (!fir::move_requantizes(L, m.input)) {
    Instruction c(Opcode::dt_cfg);
    c.mapping = mp;
    c.set_enum(Param::DF, fmt_of_dtype(in_dtype));
    c.set_list(Param::STile, src.dims());
    c.set_list(Param::DTile, dst.dims());
    emit_cfg(c);
    Instruction in(Opcode::dt_cal);
    in.mapping = mp;
    in.set(Param::Order, 0);
    in.set(Param::STaddr, src.addr(m.in_lo[0], m.in_lo[1], m.in_lo[2], m.in_lo[3]));
    in.set(Param::DTaddr, dst.addr(m.out_lo[0], m.out_lo[1], m.out_lo[2], m.out_lo[3]));
    in.set_list(Param::Tile, {i32(d[0], sh_.o, p, "dim"), i32(d[1], sh_.o, p, "dim"), i32(d[2], sh_.o, p, "dim"),
                              i32(d[3], sh_.o, p, "dim")});
    Meta meta;
    meta.kind = Kind::Transform;
    meta.reads = {src.span(m.in_lo, m.in_hi)};
    meta.writes = {dst.span(m.out_lo, out_hi)};
    emit(std::move(in), std::move(meta));
    return;
  }
  // Requantization: real = q * scale + zero_point * scale, then the output's
  // quantization (the interpreter's arithmetic, int8_ops.hpp).
  const bool int8_in = in_dtype == "int8", int8_out = L.output_dtype.at(0) == "int8";
  const auto& qi = L.quant_info;
  if (int8_in && (!qi || m.input >= qi->inputs.size()))
    fail(sh_.o, wptr(k) + "/layer_name", "layer \"" + L.name + "\" lacks the quantization of input " + std::to_string(m.input + 1));
  if (int8_out && (!qi || !qi->output_scale || !qi->output_zero_point))
    fail(sh_.o, wptr(k) + "/layer_name", "layer \"" + L.name + "\" has an INT8 output but no output quantisation");
  Instruction gcs(Opcode::vp_cfg_gcs);
  gcs.mapping = mp;
  gcs.set_enum(Param::CMPS, isa::CMPS::DEFAULT);
  emit_cfg(gcs);
  Instruction gms(Opcode::vp_cfg_gms);
  gms.mapping = mp;
  gms.set(Param::MG0V, 0);
  emit_cfg(gms);
  Instruction sms(Opcode::vp_cfg_sms);
  sms.mapping = mp;
  emit_cfg(sms);
  Instruction qp(Opcode::vp_cfg_qp);
  qp.mapping = mp;
  qp.set_enum(Param::QCS, int8_out ? isa::Float2Fixed::ROUND : isa::Float2Fixed::CEIL);
  if (int8_out) {
    qp.set_float(Param::QB, *qi->output_zero_point);
    qp.set_float(Param::QK, *qi->output_scale);
  } else {
    qp.set(Param::QB, 0);
    qp.set(Param::QK, 1);
  }
  emit_cfg(qp);
  Instruction iq(Opcode::vp_cfg_iq);
  iq.mapping = mp;
  if (int8_in) {
    const auto& q = qi->inputs[m.input];
    iq.set_float(Param::IQB0, q.zero_point * q.scale);
    iq.set_float(Param::IQK0, q.scale);
  } else {
    iq.set(Param::IQB0, 0);
    iq.set(Param::IQK0, 1);
  }
  emit_cfg(iq);
  Instruction iq1(Opcode::vp_cfg_iq1);
  iq1.mapping = mp;
  iq1.set_float(Param::IQB1, 0.0);
  iq1.set_float(Param::IQK1, 0.0);
  emit_cfg(iq1);
  vp_cfg_fm(mp, in_dtype, L.output_dtype[0], src.dims(), dst.dims());
  Instruction tp(Opcode::vp_cfg_tp);
  tp.mapping = mp;
  tp.set_list(Param::STRIDE, {1, 1});
  tp.set_list(Param::KERNEL, {1, 1});
  tp.set_list(Param::Tile, {i32(d[1], sh_.o, p, "tile"), i32(d[2], sh_.o, p, "tile"), i32(d[3], sh_.o, p, "tile")});
  tp.set(Param::T1F, 0);
  tp.set(Param::T0F, 7);
  tp.set(Param::PADV_AREA, 0);
  emit_cfg(tp);
  // One instruction per sample, as every VP operation.
  for (int64_t n = 0; n < d[0]; ++n) {
    const int64_t sa = src.addr(m.in_lo[0] + n, m.in_lo[1], m.in_lo[2], m.in_lo[3]);
    const int64_t da = dst.addr(m.out_lo[0] + n, m.out_lo[1], m.out_lo[2], m.out_lo[3]);
    Coord slo = m.in_lo, shi = m.in_hi, dlo = m.out_lo, dhi = out_hi;
    slo[0] = shi[0] = m.in_lo[0] + n;
    dlo[0] = dhi[0] = m.out_lo[0] + n;
    Instruction in(Opcode::vp_self);
    in.mapping = mp;
    in.set(Param::IQEN, 1);
    in.set(Param::QEN, 3);
    in.set(Param::SHMD, 0);
    in.set(Param::GPMD, 4);
    in.set(Param::TM, 0);
    in.set(Param::LUT, static_cast<int64_t>(isa::Lut::Requantize));
    in.set(Param::STaddr, sa);
    in.set(Param::STaddr1, sa);
    in.set(Param::DTaddr, da);
    Meta meta;
    meta.kind = Kind::Compute;
    meta.reads = {src.span(slo, shi)};
    meta.writes = {dst.span(dlo, dhi)};
    emit(std::move(in), std::move(meta));
  }
}

// ------------------------------------------------------------------ data movement

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
        if (writer != core_.id) sync_receive(m, b, dst, writer, tid);
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

// The matching receive, into the first byte of the buffer the load fills
// next: it writes the buffer, so the load waits for it.
void CoreAssembler::sync_receive(const isa::Mapping& m, const BufferTensor& b, int64_t address, int64_t writer,
                                 int64_t tag) {
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
  emit(std::move(in), std::move(meta));
}

// An early receive (Shared::early_receive) lands in the idle pixel and
// stands for the stored range: the loads reading it wait for it.
void CoreAssembler::early_receive(const isa::Mapping& m, int64_t landing, const Shared::EarlyReceive& x) {
  Instruction c(Opcode::si_cfg);
  c.mapping = m;
  c.set_enum(Param::DF, isa::DataFmt::INT8);
  c.set_list(Param::DTile, {1, 1, 1});
  emit_cfg(c);
  Instruction in(Opcode::si_mov);
  in.mapping = m;
  in.set(Param::SCORE, x.writer);
  in.set(Param::TAG, x.tag);
  in.set(Param::DTaddr, landing);
  in.set_list(Param::Tile, {1, 1, 1, 1});
  Meta meta;
  meta.kind = Kind::Receive;
  meta.writes = {{Space::L2, landing, landing + 1}, {Space::DramActivations, x.dram_lo, x.dram_hi}};
  emit(std::move(in), std::move(meta));
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

// ------------------------------------------------------------------ workloads

// A tensor added before its reader that other cores fill (irgen's early
// receives): the pieces this core copies into it go in the reader, and until
// then it holds nothing to read or copy from.
bool CoreAssembler::early_buffer(const BufferTensor& b) const {
  if (b.cur_wl_ifmap.value_or(false) || b.type == sir::TensorType::Weight || !b.source) return false;
  for (const auto& s : *b.source)
    if (s.type != sir::Endpoint::Dram && s.core_id != core_.id) return true;
  return false;
}

// Loads first needed in workload k: L2 entries marked newly_added (weights,
// activations from DRAM or from another core) and WL0 entries loaded from
// DRAM that the previous workload did not hold.
std::vector<Load> CoreAssembler::new_loads(size_t k) const {
  const Workload& w = W()[k];
  std::vector<Load> out;
  for (const auto& b : w.buffer) {
    if (!b.newly_added || !*b.newly_added) continue;
    if (b.type == sir::TensorType::Weight) {
      out.push_back({Load::Weights, &b, nullptr, b.tensor_order, true});
    } else if (b.source) {
      // Every piece from DRAM or another core (pieces this core wrote are there).
      for (size_t i = 0; i < b.source->size(); ++i) {
        const sir::Source& s = (*b.source)[i];
        if (s.type == sir::Endpoint::Dram) out.push_back({Load::Act, &b, nullptr, b.tensor_order, true, i});
        else if (s.core_id != core_.id) out.push_back({Load::Receive, &b, nullptr, b.tensor_order, true, i});
        else if (!early_buffer(b) && copy_source(k, b, s.transfer_id))
          out.push_back({Load::Copy, &b, nullptr, b.tensor_order, true, i});
      }
    }
  }
  // A tensor added in the workload before its reader (its other pieces
  // arrive early) takes the pieces copied on this core in the reader, as its
  // own loads: the producer may be that earlier workload, whose later tiles
  // are still writing them there.
  if (k > 0)
    for (const auto& pb : W()[k - 1].buffer) {
      if (!pb.newly_added.value_or(false) || !early_buffer(pb)) continue;
      for (const auto& b : w.buffer) {
        if (!b.source || b.address != pb.address || b.transfer_id != pb.transfer_id || !b.cur_wl_ifmap.value_or(false) ||
            b.newly_added.value_or(false))
          continue;
        for (size_t i = 0; i < b.source->size(); ++i) {
          const sir::Source& s = (*b.source)[i];
          if (s.type != sir::Endpoint::Dram && s.core_id == core_.id && copy_source(k, b, s.transfer_id))
            out.push_back({Load::Copy, &b, nullptr, b.tensor_order, true, i});
        }
      }
    }
  // An entry is the same weights at the same place (several entries of one
  // layer: the runs of output channels of a part split to fit the buffer).
  using Key = std::tuple<std::string, std::vector<int64_t>, int64_t, sir::WeightSource>;
  std::set<Key> prev;
  if (k > 0)
    for (const auto& e : wl0(W()[k - 1]).entries) prev.insert({e.layer_name, e.transfer_id, e.address, e.source});
  for (const auto& e : wl0(w).entries) {
    if (e.source == sir::WeightSource::Ddr && !prev.count({e.layer_name, e.transfer_id, e.address, e.source}))
      out.push_back({Load::Wl0Dram, nullptr, &e, e.tensor_order.value_or(0), e.tensor_order.has_value()});
  }
  return out;
}

bool CoreAssembler::is_own(size_t k, const Load& l) const {
  switch (l.type) {
    case Load::Weights: return l.buffer->layer_name && own_weights(k, l.buffer->transfer_id, *l.buffer->layer_name);
    case Load::Wl0Dram: return own_weights(k, l.entry->transfer_id, l.entry->layer_name);
    case Load::Act:
    case Load::Receive:
    case Load::Copy: return l.buffer->cur_wl_ifmap.value_or(false);
  }
  return false;
}

void CoreAssembler::emit_load(size_t k, const Load& l) {
  const std::string p = wptr(k);
  switch (l.type) {
    case Load::Wl0Dram: {
      auto m = mapping(k, -1);
      const fir::Layer& L = layer_of(sh_, l.entry->layer_name, p);
      m.clyr.push_back(static_cast<int32_t>(L.layer_index));
      auto it = first_wkl_.find(l.entry->layer_name);
      m.c_flyr.push_back(it != first_wkl_.end() ? sh_.group_of.at(it->second->workload_id) : flyr_);
      lw_dram(k, *l.entry, m);
      break;
    }
    case Load::Weights: ldw(k, *l.buffer, mapping(k, -1)); break;
    case Load::Copy: copy(k, *l.buffer, l.source); break;
    case Load::Act:
    case Load::Receive: {
      auto m = mapping(k, -1);
      int64_t tid = (*l.buffer->source)[l.source].transfer_id;
      std::vector<int64_t> cons;
      if (l.type == Load::Act) {
        auto ot = std::find_if(sh_.s.dram.out.begin(), sh_.s.dram.out.end(),
                               [&](const sir::DramLoad& d) { return d.transfer_id == tid; });
        if (ot == sh_.s.dram.out.end())
          fail(sh_.o, p + "/buffer", "DRAM source transfer " + std::to_string(tid) + " is not in \"-1\"/out");
        for (const auto& d : ot->destination)
          if (d.workload_id) cons.push_back(*d.workload_id);
      } else {
        // The workload reading the piece: this one, or a later one for a
        // buffer filled ahead (irgen's early receives).
        cons.push_back(W()[reader_of(k, tid)].workload_id);
      }
      int g = flyr_;
      for (int64_t c : cons) {
        const Workload* cw = sh_.s.find_workload(c);
        if (!cw) fail(sh_.o, p + "/buffer", "transfer " + std::to_string(tid) + " goes to unknown workload " + std::to_string(c));
        m.clyr.push_back(static_cast<int32_t>(layer_of(sh_, cw->layer_name, p).layer_index));
      }
      if (!cons.empty()) g = sh_.group_of.count(*std::min_element(cons.begin(), cons.end()))
                                 ? sh_.group_of.at(*std::min_element(cons.begin(), cons.end()))
                                 : flyr_;
      m.c_flyr.push_back(g);
      if (l.type == Load::Act) lda(k, *l.buffer, l.source, m);
      else si(k, *l.buffer, l.source, m);
      break;
    }
  }
}

// A workload's own inputs: first the pieces other cores send, then the
// completion messages of other cores' stores it loads back, then the loads.
// A core sends its pieces for a workload before the completion messages
// that workload waits for (emit_syncs), so both cores meet them in one order.
void CoreAssembler::emit_own(size_t k, const std::vector<Load>& own) {
  // Pieces from other cores in tag order, the order their senders use for
  // one reader (flush_sends).
  std::vector<const Load*> receives;
  for (const auto& l : own)
    if (l.type == Load::Receive) receives.push_back(&l);
  auto tag = [](const Load* l) { return (*l->buffer->source)[l->source].transfer_id; };
  std::stable_sort(receives.begin(), receives.end(), [&](const Load* a, const Load* b) { return tag(a) < tag(b); });
  for (const Load* l : receives) emit_load(k, *l);
  struct Wait {
    int64_t writer, tag;
    const Load* load;
  };
  std::vector<Wait> waits;
  for (const auto& l : own) {
    if (l.type != Load::Act) continue;
    int64_t tid = (*l.buffer->source)[l.source].transfer_id;
    auto si = sh_.sync_in.find({core_.id, tid});
    if (si == sh_.sync_in.end() || !loaded_.insert(tid).second) continue;
    for (int64_t writer : si->second)
      if (writer != core_.id) waits.push_back({writer, tid, &l});
  }
  std::stable_sort(waits.begin(), waits.end(),
                   [](const Wait& a, const Wait& b) { return std::tie(a.writer, a.tag) < std::tie(b.writer, b.tag); });
  for (const auto& x : waits) {
    auto m = mapping(k, -1);
    const BufferTensor& b = *x.load->buffer;
    sync_receive(m, b, act_destination(b, x.load->source), x.writer, x.tag);
  }
  if (auto e = sh_.early_receive.find({core_.id, W()[k].workload_id}); e != sh_.early_receive.end()) {
    std::vector<Shared::EarlyReceive> list = e->second;
    std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
      return std::tie(a.writer, a.tag) < std::tie(b.writer, b.tag);
    });
    const int64_t landing = sh_.idle_byte.at(core_.id) + sh_.a.core.l2_channel_align_bytes;
    for (const auto& x : list) early_receive(mapping(k, -1), landing, x);
  }
  for (const auto& l : own)
    if (l.type != Load::Receive) emit_load(k, l);
}

// The workload that reads transfer `tid` received in workload k: k itself
// or a later one (irgen's early receives fill a buffer ahead of its reader).
size_t CoreAssembler::reader_of(size_t k, int64_t tid) const {
  for (size_t r = k; r < W().size(); ++r)
    for (const auto& f : W()[r].ifmap)
      if (std::find(f.transfer_id.begin(), f.transfer_id.end(), tid) != f.transfer_id.end()) return r;
  return k;
}

// Receives for later readers keep their places among workload k's other
// loads but take them in the order the senders send (flush_sends: by
// reader, then transfer id); in the SIR's tensor order two pieces one core
// sends to one reader could meet the sender's queue in the other order and
// wait for each other.
void CoreAssembler::order_early_receives(size_t k, std::vector<Load>& loads) const {
  std::vector<size_t> at;
  std::vector<std::pair<std::pair<int64_t, int64_t>, Load>> keyed;
  for (size_t i = 0; i < loads.size(); ++i) {
    if (loads[i].type != Load::Receive) continue;
    const int64_t tid = (*loads[i].buffer->source)[loads[i].source].transfer_id;
    at.push_back(i);
    keyed.push_back({{W()[reader_of(k, tid)].workload_id, tid}, loads[i]});
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t j = 0; j < at.size(); ++j) loads[at[j]] = keyed[j].second;
}

void CoreAssembler::workload(size_t k) {
  const Workload& w = W()[k];
  auto loads = new_loads(k);
  std::vector<Load> own, pre;
  for (const auto& l : loads) (is_own(k, l) ? own : pre).push_back(l);
  std::stable_sort(pre.begin(), pre.end(), [](const Load& a, const Load& b) {
    if (a.has_order != b.has_order) return a.has_order;
    return a.order < b.order;
  });
  order_early_receives(k, pre);
  std::vector<Load> own_rest;
  for (const auto& l : own) {
    if (l.type != Load::Weights) {
      own_rest.push_back(l);
      continue;
    }
    // Weights loaded into L2 go before the previous workload's stores (the
    // reference programs' order) unless they land on bytes a store still
    // reads: then the stores go first, or the load would overwrite them.
    for (const auto& ps : pending_stores_)
      if (l.buffer->address < ps.src->address + ps.src->size && ps.src->address < l.buffer->address + l.buffer->size) {
        flush_stores();
        break;
      }
    emit_load(k, l);
  }
  flush_stores();
  emit_syncs(w.workload_id);
  auto tiles = tiles_in_order(k);
  const sir::WeightBufferEntry* core_entry = nullptr;
  if (w.layer_type == sir::LayerType::Pe)
    for (const auto& e : wl0(w).entries)
      if (own_weights(k, e.transfer_id, e.layer_name) && e.source == sir::WeightSource::Core) core_entry = &e;
  if (core_entry) {
    core_tiles(k, *core_entry, own_rest, pre);
  } else {
    emit_own(k, own_rest);
    // Prefetch loads follow the first tile; in the Wl1 dialect a single-tile
    // workload stores its output first.
    const bool store_first = sh_.dialect == Dialect::Wl1 && tiles.size() == 1;
    for (size_t i = 0; i < tiles.size(); ++i) {
      if (w.layer_type == sir::LayerType::Pe) pe_tile(k, tiles[i].first, *tiles[i].second, wl0_address(k, *tiles[i].second));
      else if (fir::is_move_op(layer(k).op)) move_tile(k, tiles[i].first, *tiles[i].second);
      else vp_tile(k, tiles[i].first, *tiles[i].second);
      if (i == 0 && !store_first)
        for (const auto& l : pre) emit_load(k, l);
    }
    if (store_first) {
      stores(k);
      for (const auto& l : pre) emit_load(k, l);
      return;
    }
    if (tiles.empty())
      for (const auto& l : pre) emit_load(k, l);
  }
  stores(k);
}

// Weights kept in L2 stream into two WL0 slots tile by tile: before tile i
// the weights of tile i+1 go into the other slot, then (first tile only) tile
// i's own. The DRAM transfers of the workload go between the tile blocks.
void CoreAssembler::core_tiles(size_t k, const sir::WeightBufferEntry& entry, const std::vector<Load>& own,
                               const std::vector<Load>& pre) {
  const Workload& w = W()[k];
  const std::string p = wptr(k);
  const BufferTensor* l2 = nullptr;
  for (const auto& b : w.buffer)
    if (b.type == sir::TensorType::Weight && b.layer_name && own_weights(k, b.transfer_id, *b.layer_name)) l2 = &b;
  if (!l2) fail(sh_.o, p + "/buffer", "weights of \"" + w.layer_name + "\" come from L2 but no L2 buffer holds them");
  auto tiles = tiles_in_order(k);
  size_t n = tiles.size();
  if (n == 0) return;
  const sir::Tile& t0 = *tiles[0].second;
  int64_t kt = t0.ofmap_upper[1] - t0.ofmap_lower[1] + 1;
  int64_t per = kt * weight_per_k(w.layer_name, p) / wl0_row_bytes();
  // Weights that already had slots (another batch part) keep them.
  int64_t A = core_slots_.emplace(entry.transfer_id.empty() ? -1 : entry.transfer_id[0], entry.address).first->second;
  int64_t B = A + per;
  int64_t slots[2] = {A, B};
  bool prefetch_first = block0_prefetch(k, A, B, per);
  std::vector<bool> loaded(n, false);
  // The own loads go in block 0; then each tile block takes one prefetch, at
  // most one per DMA queue over the workload; the rest follow the last tile.
  std::vector<Load> queue = pre;
  size_t first_block = prefetch_first ? 0 : 1;
  std::set<int> used_queues;
  auto dma_queue = [](const Load& l) {
    return l.type == Load::Wl0Dram ? 0 : l.type == Load::Receive ? 2 : l.type == Load::Copy ? 3 : 1;
  };
  for (size_t i = 0; i < n; ++i) {
    if (i + 1 < n && (i > 0 || prefetch_first)) {
      lw_tile(k, tiles[i + 1].first, *tiles[i + 1].second, slots[(i + 1) % 2], *l2);
      loaded[i + 1] = true;
    }
    if (!loaded[i]) {
      lw_tile(k, tiles[i].first, *tiles[i].second, slots[i % 2], *l2);
      loaded[i] = true;
    }
    if (i == 0 && !own.empty()) {
      emit_own(k, own);
    } else if (i >= first_block) {
      for (size_t q = 0; q < queue.size(); ++q)
        if (used_queues.insert(dma_queue(queue[q])).second) {
          emit_load(k, queue[q]);
          queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(q));
          break;
        }
    }
    pe_tile(k, tiles[i].first, *tiles[i].second, slots[i % 2]);
  }
  for (const auto& l : queue) emit_load(k, l);
}

// Whether the second tile's weights are loaded before the first tile runs:
// not when the latest convolution whose weights overlap the two slots
// overlaps only the first slot.
bool CoreAssembler::block0_prefetch(size_t k, int64_t A, int64_t B, int64_t per) const {
  for (size_t j = k; j-- > 0;) {
    const Workload& pw = W()[j];
    if (pw.layer_type != sir::LayerType::Pe) continue;
    const sir::WeightBufferEntry* e = own_entry(j, nullptr);
    if (!e) continue;
    int64_t r0 = e->address, r1 = e->address + e->size;
    bool ova = r0 < A + per && A < r1;
    bool ovb = r0 < B + per && B < r1;
    if (ova || ovb) return !(ova && !ovb);
  }
  return true;
}

void CoreAssembler::stores(size_t k) {
  const Workload& w = W()[k];
  if (w.ofmap.empty()) return;
  const sir::Ofmap& o = w.ofmap[0];
  const BufferTensor& src = ofmap_buffer(k);
  bool to_dram = false;
  std::vector<int32_t> local;
  // Piece i of the output goes to its destinations: other cores get exactly
  // its region (ofmap coordinates are relative to the workload's corner).
  // Sends go in the global order of the workloads reading them, each after
  // the completion messages for earlier readers (emit_syncs), so that every
  // core meets its rendezvous in one order.
  struct Send {
    int64_t reader;
    const sir::Ofmap* piece;
    const sir::Destination* d;
  };
  std::vector<Send> sends;  // queued in pending_sends_, sent by flush_sends
  for (size_t i = 0; i < w.ofmap.size(); ++i)
    for (const auto& d : w.ofmap[i].destination) {
      if (d.type == sir::Endpoint::Dram) {
        to_dram = to_dram || i == 0;
      } else if (d.core_id != core_.id) {
        sends.push_back({d.workload_id.value_or(std::numeric_limits<int64_t>::max()), &w.ofmap[i], &d});
      } else if (d.workload_id && i == 0) {
        const Workload* cw = sh_.s.find_workload(*d.workload_id);
        if (!cw) fail(sh_.o, wptr(k) + "/ofmap/0/destination", "unknown workload " + std::to_string(*d.workload_id));
        local.push_back(static_cast<int32_t>(layer_of(sh_, cw->layer_name, wptr(k)).layer_index));
      }
    }
  for (const Send& x : sends) {
    const auto& p = *x.piece;
    Coord lo{w.lower[0] + p.lower[0], w.lower[1] + p.lower[1], w.lower[2] + p.lower[2], w.lower[3] + p.lower[3]};
    Coord hi{w.lower[0] + p.upper[0], w.lower[1] + p.upper[1], w.lower[2] + p.upper[2], w.lower[3] + p.upper[3]};
    pending_sends_.push_back({x.reader, k, &src, lo, hi, x.d, p.transfer_id});
  }
  // Later workloads of this core send only to readers after them, so what
  // reads before the next one is due now; a send to a later reader (the
  // halo of a row stripe) waits until this core has sent everything that
  // comes before it.
  flush_sends(k + 1 < W().size() ? W()[k + 1].workload_id : std::numeric_limits<int64_t>::max());
  if (!to_dram) return;
  int64_t store_tid = -1;
  for (const auto& x : sh_.s.dram.in)
    if (x.workload_id == w.workload_id) store_tid = x.transfer_id;
  if (store_tid < 0) fail(sh_.o, wptr(k) + "/ofmap/0/destination", "a DRAM destination without a \"-1\"/in store");
  // The copy kept on core, if the output lives in its own buffer (not a
  // reader's buffer that other cores fill early, which takes this output as
  // one of its pieces, copied in the reader).
  const BufferTensor* copy = nullptr;
  if (!local.empty())
    for (const auto& b : w.buffer)
      if (&b != &src && !early_buffer(b) && holds_here(b, o.transfer_id)) copy = &b;
  if (sh_.dialect == Dialect::Wl1) {
    sta(k, src, store_tid);
    if (copy) dt(k, src, *copy, local);
  } else {
    // Stores wait for the next workload's own weight loads.
    if (copy) dt(k, src, *copy, local);
    pending_stores_.push_back({k, &src, store_tid});
  }
}

void CoreAssembler::flush_stores() {
  int32_t keep = flyr_;
  for (const auto& ps : pending_stores_) {
    flyr_ = sh_.group_of.at(W()[ps.k].workload_id);
    sta(ps.k, *ps.src, ps.tid);
  }
  flyr_ = keep;
  pending_stores_.clear();
}

// A DRAM transfer followed by a DRAM -> WL0 weight load also names the
// layer of that load.
void CoreAssembler::link_clyr() {
  std::vector<size_t> dram;
  for (size_t i = 0; i < out_.size(); ++i) {
    Kind kd = out_[i].meta.kind;
    if (kd == Kind::LoadAct || kd == Kind::LoadWeights || kd == Kind::LoadWl0Dram || kd == Kind::Store) dram.push_back(i);
  }
  for (size_t a = 0; a + 1 < dram.size(); ++a) {
    Built& x = out_[dram[a]];
    const Built& y = out_[dram[a + 1]];
    if (x.meta.kind == Kind::Store || y.meta.kind != Kind::LoadWl0Dram || y.meta.own_layer) continue;
    int32_t lay = y.meta.dram_layer;
    if (!x.inst.mapping.clyr.contains(lay)) {
      x.inst.mapping.clyr.push_back(lay);
      if (x.inst.mapping.c_flyr.empty())
        for (int32_t g : y.inst.mapping.c_flyr) x.inst.mapping.c_flyr.push_back(g);
    }
  }
  // Configuration instructions share the mapping of the move they configure.
  for (size_t i = out_.size(); i-- > 1;) {
    Built& c = out_[i - 1];
    const Built& mv = out_[i];
    auto op = c.inst.op();
    bool pair = (op == Opcode::lw_cfg && mv.inst.op() == Opcode::lw_mov) ||
                (op == Opcode::ldw_cfg && mv.inst.op() == Opcode::ldw_mov) ||
                (op == Opcode::lda_cfg && mv.inst.op() == Opcode::lda_mov) ||
                (op == Opcode::sta_cfg && mv.inst.op() == Opcode::sta_mov) ||
                (op == Opcode::dt_cfg && mv.inst.op() == Opcode::dt_cal);
    if (pair) c.inst.mapping = mv.inst.mapping;
  }
}

std::vector<Built> CoreAssembler::run() {
  const bool host_only = core_.id == sh_.free_steps_core && !sh_.free_steps.empty();
  if (W().empty()) {
    if (core_.id != sh_.free_steps_core) return {};
    // A network all on the host: the program starts, waits for the host, ends
    // (no wait when the host only reads through: an identity).
    isa::Mapping m;
    m.core = static_cast<int32_t>(core_.id);
    if (host_only) m.slyr = sh_.host_slyr.at(sh_.free_steps.front()->transfer_id);
    emit(Instruction(Opcode::ct_st), Meta{Kind::Control, {}, {}, -1}).inst.mapping = m;
    for (const sir::HostStep* h : sh_.free_steps) host_wait(m, *h, std::nullopt);
    emit(Instruction(Opcode::ct_ed), Meta{Kind::Control, {}, {}, -1}).inst.mapping = m;
    return std::move(out_);
  }
  for (const auto& w : W()) first_wkl_.emplace(w.layer_name, &w);
  const auto& rb = W()[0].ring_buffer_info;
  flyr_ = 0;
  auto m0 = mapping(0, -1);
  emit(Instruction(Opcode::ct_st), Meta{Kind::Control, {}, {}, -1}).inst.mapping = m0;
  for (int i = 0; i < isa::kBufferCutRegisters; ++i) {
    Instruction in(Opcode::ct_bc);
    in.mapping = m0;
    in.set(Param::BCS, i);
    std::array<int32_t, 8> cut{};
    if (static_cast<size_t>(i) < rb.size()) {
      cut[0] = i32(rb[i][0] / kBufCutUnit, sh_.o, wptr(0) + "/ring_buffer_info", "buffer cut");
      cut[1] = i32(rb[i][1] / kBufCutUnit - 1, sh_.o, wptr(0) + "/ring_buffer_info", "buffer cut");
    }
    in.set_list(Param::BufCut, cut);
    emit(std::move(in), Meta{Kind::Control, {}, {}, -1});
  }
  for (size_t k = 0; k < W().size(); ++k) {
    flyr_ = sh_.group_of.at(W()[k].workload_id);
    workload(k);
  }
  flush_stores();
  flush_sends(std::numeric_limits<int64_t>::max());
  emit_syncs(std::numeric_limits<int64_t>::max());
  if (host_only)
    for (const sir::HostStep* h : sh_.free_steps) host_wait(mapping(W().size() - 1, -1), *h, std::nullopt);
  Instruction ed(Opcode::ct_ed);
  ed.mapping = mapping(W().size() - 1, -1);
  emit(std::move(ed), Meta{Kind::Control, {}, {}, -1});
  link_clyr();
  return std::move(out_);
}

// ------------------------------------------------------------------ whole program

void layout_dram(Shared& sh) {
  DramLayout lay = assembler::layout_dram(sh.s, sh.g, sh.o);
  for (const auto& w : lay.weights) {
    sh.weight_dram.emplace(w.transfer_id, w);
    sh.weight_per_k.emplace(w.layer, w.size / (w.k_hi - w.k_lo + 1));
  }
  auto act = [](const DramRegion& r) {
    auto d = r.dims();
    return Shared::DramAct{r.address, d, r.element_bytes, {r.lower[0], r.lower[1], r.lower[2], r.lower[3]}};
  };
  for (const auto& r : lay.inputs) sh.act_dram[r.transfer_id] = act(r);
  if (sh.s.dram.host)
    for (const auto& h : *sh.s.dram.host) {
      for (int64_t t : h.related_ifmap) sh.host_of_store[t] = &h;
      for (int64_t t : h.related_ofmap) sh.host_of_load[t] = &h;
      if (h.related_ofmap.empty() && !h.related_ifmap.empty()) sh.host_tail_store[h.related_ifmap.back()] = &h;
      if (h.related_ofmap.empty() && h.related_ifmap.empty()) sh.free_steps.push_back(&h);
      // The step's slyr: its first layer's, or, for the host graph alone,
      // one past the last layer (formats/ISA_Format.md, 5a).
      const fir::Layer* first = h.layers.empty() ? nullptr : sh.g.find(h.layers[0]);
      const bool graph_only = h.layers.size() == 1 && h.layers[0] == fir::kHostGraphKey && sh.g.host_graph();
      if (!first && !graph_only)
        fail(sh.o, "/-1/host", "host step " + std::to_string(h.transfer_id) + " names no layer of the Frontend IR");
      sh.host_slyr[h.transfer_id] = first ? int32_t(first->layer_index) : int32_t(sh.g.size());
    }
  for (const auto& r : lay.stores) {
    sh.store_dram[r.transfer_id] = act(r);
    for (int64_t t : r.reloads) sh.act_dram[t] = act(r);
  }
}

// Cross-core DRAM dependencies: the cores that load each stored region back.
void plan_dram_sync(Shared& sh) {
  for (const auto& core : sh.s.cores) {
    int64_t top = 0;
    for (const auto& w : core.workloads)
      for (const auto& b : w.buffer) top = std::max(top, b.address + b.size);
    // A one-pixel block: one padded pixel of L2.
    const int64_t pixel = sh.a.core.l2_channel_align_bytes;
    sh.idle_byte[core.id] = top <= sh.a.core.l2_bytes - 2 * pixel ? sh.a.core.l2_bytes - 2 * pixel : -1;
  }
  // (core, layer) -> its workload ids of that layer, in program order
  std::map<std::pair<int64_t, std::string>, std::vector<int64_t>> ids_of;
  std::map<int64_t, const std::string*> layer_of_wl;
  for (const auto& core : sh.s.cores)
    for (const auto& w : core.workloads) {
      ids_of[{core.id, w.layer_name}].push_back(w.workload_id);
      layer_of_wl[w.workload_id] = &w.layer_name;
    }
  std::map<int64_t, std::set<int64_t>> loaders;  // DRAM load id -> cores loading it
  std::map<std::pair<int64_t, int64_t>, int64_t> reader;  // (core, load id) -> first workload reading it
  for (const auto& core : sh.s.cores)
    for (const auto& w : core.workloads) {
      for (const auto& b : w.buffer)
        if (b.newly_added && *b.newly_added && b.type != sir::TensorType::Weight && b.source)
          for (const auto& src : *b.source)
            if (src.type == sir::Endpoint::Dram) loaders[src.transfer_id].insert(core.id);
      for (const auto& f : w.ifmap)
        for (int64_t t : f.transfer_id) reader.emplace(std::make_pair(core.id, t), w.workload_id);
    }
  for (const auto& x : sh.s.dram.in) {
    if (!x.related_ofmap) continue;
    for (int64_t r : *x.related_ofmap) {
      auto it = loaders.find(r);
      if (it == loaders.end()) continue;
      for (int64_t c : it->second)
        if (c != x.core_id) {
          auto rd = reader.find({c, r});
          int64_t key = rd != reader.end() ? rd->second : x.workload_id;
          if (rd != reader.end() && sh.idle_byte[c] >= 0) {
            for (int64_t id : ids_of[{c, *layer_of_wl.at(key)}])
              if (id > x.workload_id) {
                key = std::min(key, id);
                break;
              }
            auto st = sh.store_dram.find(x.transfer_id);
            if (st == sh.store_dram.end()) continue;
            const auto& d = st->second.dims;
            int64_t hi = st->second.address + d[0] * d[1] * d[2] * d[3] * st->second.bytes;
            sh.early_receive[{c, key}].push_back({x.core_id, r, st->second.address, hi});
          } else {
            sh.sync_in[{c, r}].push_back(x.core_id);
          }
          sh.sync_out[x.transfer_id].push_back({c, r, key});
        }
    }
  }
}

// Fusion groups: a workload storing a tensor that is read back registers the
// first reader; the group number grows at the first workload reaching a
// registered reader.
void compute_groups(Shared& sh, const sir::Core& core) {
  std::map<int64_t, std::vector<int64_t>> spill_reader;
  for (const auto& x : sh.s.dram.in) {
    if (!x.related_ofmap) continue;
    int64_t first = std::numeric_limits<int64_t>::max();
    for (int64_t t : *x.related_ofmap)
      for (const auto& o : sh.s.dram.out)
        if (o.transfer_id == t)
          for (const auto& d : o.destination)
            if (d.workload_id) first = std::min(first, *d.workload_id);
    if (first != std::numeric_limits<int64_t>::max()) spill_reader[x.workload_id].push_back(first);
  }
  int g = 0;
  std::vector<int64_t> pending;
  for (const auto& w : core.workloads) {
    if (!pending.empty() && w.workload_id >= *std::min_element(pending.begin(), pending.end())) {
      ++g;
      pending.clear();
    }
    sh.group_of[w.workload_id] = g;
    auto it = spill_reader.find(w.workload_id);
    if (it != spill_reader.end()) pending.insert(pending.end(), it->second.begin(), it->second.end());
  }
}

TokenRules rules_for(Dialect d) {
  TokenRules r;
  if (d == Dialect::Wl1) {
    r.same_queue_tokens = true;
    r.control_to_all = true;
    r.descending_order = true;
    r.pairwise_only = true;
    r.tile_weight_reads_untracked = true;
  }
  return r;
}

}  // namespace

TileOrder detect_tile_order(std::string_view text) {
  // Among the tile keys in document order, "tile_num_10" right after
  // "tile_num_1" means string order, right after "tile_num_9" numeric.
  constexpr std::string_view key = "\"tile_num_";
  int64_t prev = -1;
  for (size_t at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
    size_t i = at + key.size();
    int64_t n = 0;
    size_t digits = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && digits < 9) n = n * 10 + (text[i++] - '0'), ++digits;
    if (digits == 0 || i >= text.size() || text[i] != '"') continue;
    if (prev == 1 && n == 10) return TileOrder::KeyString;
    if (prev == 9 && n == 10) return TileOrder::Numeric;
    prev = n;
  }
  return TileOrder::Numeric;
}

Dialect detect_dialect(const sir::Schedule& s) {
  for (const auto& c : s.cores)
    for (const auto& w : c.workloads)
      if (w.wl1_buffer.present()) return Dialect::Wl1;
  return Dialect::Wl0;
}

isa::Program assemble(const sir::Schedule& schedule, const fir::Graph& graph, const arch::Architecture& arch,
                      const Options& options) {
  Shared sh(schedule, graph, arch, options);
  if (sh.dialect == Dialect::Auto) sh.dialect = detect_dialect(schedule);
  for (size_t c = 0; c < schedule.cores.size(); ++c) {
    const auto& core = schedule.cores[c];
    if (!arch.valid_core(core.id))
      fail(options, "/" + std::to_string(core.id), "core " + std::to_string(core.id) + " is not a core of " + arch.name);
    for (size_t k = 0; k < core.workloads.size(); ++k) {
      const Workload& w = core.workloads[k];
      layer_of(sh, w.layer_name, ptr_workload(core.id, k) + "/layer_name");
      for (size_t i = 0; i < w.buffer.size(); ++i) {
        const BufferTensor& b = w.buffer[i];
        if (b.address < 0 || b.size < 0 || b.address > arch.core.l2_bytes - b.size)
          fail(options, ptr_workload(core.id, k) + "/buffer/" + std::to_string(i) + "/address",
               "tensor [" + std::to_string(b.address) + ", " + std::to_string(b.address + b.size) + ") is outside L2 (" +
                   std::to_string(arch.core.l2_bytes) + " bytes of " + arch.name + ")");
      }
    }
  }
  layout_dram(sh);
  plan_dram_sync(sh);
  for (const auto& core : schedule.cores) compute_groups(sh, core);
  isa::Program prog;
  TokenRules rules = rules_for(sh.dialect);
  // Free host steps close the first core's program; a network all on the
  // host has no core in its schedule, so core 0 runs just that.
  sir::Core host_core;
  std::vector<const sir::Core*> cores;
  for (const auto& core : schedule.cores) cores.push_back(&core);
  if (cores.empty()) cores.push_back(&host_core);
  if (!cores.empty()) sh.free_steps_core = cores.front()->id;
  for (const sir::Core* cp : cores) {
    const auto& core = *cp;
    CoreAssembler ca(sh, core);
    auto built = ca.run();
    assign_tokens(built, rules);
    for (auto& b : built) {
      if (schedule.cores.size() > 1) b.inst.mapping.core_written = true;
      prog.instructions.push_back(std::move(b.inst));
    }
  }
  if (options.multicast && arch.noc.multicast) {
    MulticastMerge mm = merge_multicast_loads(prog, arch);
    if (options.multicast_result) *options.multicast_result = mm;
  }
  return prog;
}

}  // namespace cct::assembler
