// asm's internals, shared by its files: the views of the Scheduler IR one
// core's assembly needs (TensorView, Load, Shared) and the CoreAssembler
// that walks a core's workloads in order, its work split by what it emits:
//
//   lookups.cpp     the buffers, weight-buffer entries and layers a workload refers to
//   compute.cpp     a tile's configuration and compute instruction (PE, vector, data movement)
//   transfers.cpp   loads, stores, sends, receives, copies and host steps
//   workloads.cpp   one workload: its loads, tiles, prefetches and stores, in order
//
// assemble.cpp lays out DRAM, runs one CoreAssembler per core and links the
// instructions with tokens (tokens.cpp). Not an installed header.
#pragma once

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

namespace cct::assembler::detail {

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

inline std::string ptr_workload(int64_t core, size_t k) { return "/" + std::to_string(core) + "/" + std::to_string(k); }

[[noreturn]] inline void fail(const Options& o, const std::string& pointer, const std::string& what) {
  throw Error(kExitInvalidInput, at_pointer(o.sir_file, pointer, what));
}

inline int32_t i32(int64_t v, const Options& o, const std::string& pointer, const char* what) {
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
    fail(o, pointer, std::string(what) + " " + std::to_string(v) + " does not fit the instruction field");
  return static_cast<int32_t>(v);
}

inline std::array<int64_t, 4> dims_of(const Coord& lo, const Coord& hi) {
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
inline std::string shape_text(const TensorView& t) {
  return "[" + std::to_string(t.d[1]) + ", " + std::to_string(t.d[2]) + ", " + std::to_string(t.d[3]) +
         "] (channels padded to " + std::to_string(t.cpad) + ")";
}

// The upper corner of a piece at its place in the tensor holding it.
inline Coord placed_upper(const sir::Source& s) {
  if (!s.place) return s.upper;
  Coord hi;
  for (int i = 0; i < 4; ++i) hi[i] = (*s.place)[i] + s.upper[i] - s.lower[i];
  return hi;
}

inline isa::DataFmt fmt_of_dtype(const std::string& dtype) {
  return dtype == "float16" ? isa::DataFmt::FP16 : isa::DataFmt::INT8;
}
inline isa::DataFmt fmt_of_bits(int64_t bits) { return bits == 16 ? isa::DataFmt::FP16 : isa::DataFmt::INT8; }

inline isa::YCutMode ycut_of(const std::string& cut_mode) {
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
inline void set_number(Instruction& in, Param p, const Json* v, double fallback, bool fallback_float) {
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

inline const Json* module_value(const fir::Layer& l, std::string_view group, std::string_view key) {
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

inline const fir::Layer& layer_of(const Shared& sh, const std::string& name, const std::string& pointer) {
  const fir::Layer* l = sh.g.find(name);
  if (!l) fail(sh.o, pointer, "layer \"" + name + "\" is not in the Frontend IR " + sh.o.fir_file);
  return *l;
}

// Whether tensor b holds transfer tid at the transfer's own coordinates: a
// data movement layer's output holds its pieces elsewhere (their `place`),
// so it is no tensor to read or copy the transfer from.
inline bool holds_here(const BufferTensor& b, int64_t tid) {
  if (!b.transfer_id || std::find(b.transfer_id->begin(), b.transfer_id->end(), tid) == b.transfer_id->end())
    return false;
  if (b.source)
    for (const auto& s : *b.source)
      if (s.transfer_id == tid && s.place) return false;
  return true;
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
  void pixel_receive(const isa::Mapping& m, int64_t address, int64_t writer, int64_t tag, std::optional<Range> stands_for);
  void sync_receive(const isa::Mapping& m, int64_t address, int64_t writer, int64_t tag);
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

}  // namespace cct::assembler::detail
