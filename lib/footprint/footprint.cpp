#include "footprint/footprint.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <utility>

#include "interp/int8_ops.hpp"
#include "support/error.hpp"

namespace cct::footprint {

using isa::Instruction;
using isa::Opcode;
using isa::Param;

namespace {

// The most element operations one instruction may ask for: a guard against
// programs that would run for hours (about a minute of work here).
constexpr int64_t kMaxOperations = int64_t(1) << 38;

int64_t at(std::span<const int32_t> v, size_t i) { return i < v.size() ? v[i] : 1; }

// The group structure and tap spacing of a convolution (pe_cfg_gp).
struct Geometry {
  int64_t groups = 1, dh = 1, dw = 1;
};

std::string range_text(int64_t lo, int64_t hi) {
  std::string t = "[";  // appended piecewise: GCC 12 warns (-Wrestrict) on the operator+ chain
  t += std::to_string(lo);
  t += ", ";
  t += std::to_string(hi);
  t += ')';
  return t;
}

// Sizes read from a program are at most kMaxDim and addresses at most
// kMaxAddress in magnitude, so that block arithmetic never overflows; both
// are far beyond any memory.
constexpr int64_t kMaxDim = isa::kMaxDimension;
constexpr int64_t kMaxAddress = int64_t(1) << 50;

// A product of sizes, saturated at 2^62.
int64_t product(std::initializer_list<int64_t> xs) {
  __int128 p = 1;
  for (int64_t x : xs) p = std::min<__int128>(p * x, __int128(1) << 62);
  return int64_t(p);
}

}  // namespace

// Operations of two operands (A at STaddr1, B at STaddr).
bool two_operands(int64_t lut) {
  switch (isa::Lut(lut)) {
    case isa::Lut::Add: case isa::Lut::Sub: case isa::Lut::Mul: case isa::Lut::ReverseSub: case isa::Lut::PRelu:
      return true;
    default:
      return false;
  }
}

// The LUTs of lib/func's activations (its lut_activation maps them to int8::activate's functions).
bool activation_lut(int64_t lut) {
  switch (isa::Lut(lut)) {
    case isa::Lut::Relu: case isa::Lut::Clip: case isa::Lut::LeakyRelu: case isa::Lut::Elu: case isa::Lut::HardSigmoid:
    case isa::Lut::HardSwish: case isa::Lut::Sigmoid: case isa::Lut::Silu: case isa::Lut::Tanh: case isa::Lut::Gelu:
    case isa::Lut::PRelu:
      return true;
    default:
      return false;
  }
}

// Activation LUTs whose function takes vp_cfg_act parameters.
bool takes_act_params(int64_t lut) {
  auto l = isa::Lut(lut);
  return l == isa::Lut::Clip || l == isa::Lut::LeakyRelu || l == isa::Lut::Elu || l == isa::Lut::HardSigmoid;
}

std::string_view space_name(Space s) {
  switch (s) {
    case Space::L2: return "L2";
    case Space::Wl0: return "WL0";
    case Space::DramWeights: return "DRAM (weights)";
    case Space::DramActivations: return "DRAM (activations)";
  }
  return "?";
}

bool blocks_overlap(const Block& x, const Block& y) {
  if (x.space != y.space || x.core != y.core || x.empty() || y.empty()) return false;
  if (x.wrap <= 0 && y.wrap <= 0 && (x.hi() <= y.lo() || y.hi() <= x.lo())) return false;
  // Extents overlap: compare the byte runs exactly (pixels are visited in
  // increasing address order, runs merged when adjacent).
  auto runs = [](const Block& b) {
    std::vector<std::pair<int64_t, int64_t>> r;
    r.reserve(static_cast<size_t>(std::min<int64_t>(b.pixels(), 1 << 16)));
    b.for_each([&](int64_t addr, int64_t, int64_t len) {
      if (!r.empty() && r.back().second == addr) r.back().second = addr + len;
      else r.push_back({addr, addr + len});
    });
    std::sort(r.begin(), r.end());
    return r;
  };
  auto rx = runs(x), ry = runs(y);
  size_t i = 0, j = 0;
  while (i < rx.size() && j < ry.size()) {
    if (rx[i].second <= ry[j].first) ++i;
    else if (ry[j].second <= rx[i].first) ++j;
    else return true;
  }
  return false;
}

// ---- weight records --------------------------------------------------------------

// The weight records in each core's L2 and WL0 as the weight loads before the
// current instruction left them, in program order. Program order is the
// order that matters: an instruction can only wait for tokens pushed before it
// (asm --check refuses anything else), so a load a convolution depends on
// comes before it, and a write between the two that the convolution does not
// wait for would be a race.
//
// Records an lw_mov streams from L2 (SS = 0) are kept apart from those loaded
// from DRAM and do not end them: the PE streams such weights from L2 (the
// timing model prices them so), and the reference programs rely on it (the
// ResNet-50 batch-4 program streams a layer's tiles through WL0 rows that
// hold a later layer's weights, which that layer then reads without a reload).
// A pe_conv is satisfied by either kind.
class Planner::Records {
 public:
  explicit Records(const Planner& p) : p_(p), maps_(size_t(std::max(p.a_.core_count(), 0))) {}

  void follow(size_t i, const Step& s) {
    // A multicast member loads its core's records as its unicast load does.
    const Opcode op = isa::unicast_load_of(p_.prog_.instructions[i].op());
    // Weight record runs are followed unwrapped: no program has weights
    // around the end of L2 (the ring rule is read off an activation store).
    if (op == Opcode::ldw_mov || op == Opcode::lw_mov)
      for (const auto* blocks : {&s.reads, &s.writes})
        for (const Block& b : *blocks)
          if (b.wrap > 0) p_.fail(i, "weight records that wrap around the end of L2 are not supported");
    switch (op) {
      case Opcode::ldw_mov:
        load(i, map(s.writes[0], kL2), s.writes[0], s.records);
        return;
      case Opcode::lw_mov: {
        const Block& to = s.writes[0];
        if (s.reads[0].space == Space::L2) {
          // The records an ldw_mov left in L2, of this load's shape.
          if (!holds(map(s.reads[0], kL2), s.reads[0], s.records))
            p_.fail(i, why(map(s.reads[0], kL2), s.reads[0], s.records, "ldw_mov"));
          load(i, map(to, kStreamed), to, s.records);
        } else {
          load(i, map(to, kLoaded), to, s.records);
          erase(map(to, kStreamed), to.lo(), to.hi());
        }
        return;
      }
      case Opcode::pe_conv: {
        const Block& w = s.reads.back();  // the WL0 read is the last
        if (holds(map(w, kLoaded), w, s.records) || holds(map(w, kStreamed), w, s.records)) break;
        // Neither kind: name the records the program most likely meant, the latest written at the first byte.
        Kind k = latest(map(w, kStreamed), w.lo()) > latest(map(w, kLoaded), w.lo()) ? kStreamed : kLoaded;
        p_.fail(i, why(map(w, k), w, s.records, "lw_mov"));
      }
      default:
        break;
    }
    for (const Block& b : s.writes)
      if (b.space == Space::L2) clobber(b);
  }

 private:
  // [start, end) of the records a load wrote starting at `base`.
  struct Run {
    int64_t start = 0, end = 0, base = 0;
    WeightRecord rec;
    size_t line = 0;  // the load's instruction index
  };
  // Disjoint runs by address: a sorted vector (a memory holds few runs at a time).
  using Map = std::vector<Run>;
  enum Kind { kL2, kLoaded, kStreamed };  // L2 (ldw_mov), WL0 from DRAM, WL0 streamed from L2

  Map& map(const Block& b, Kind k) { return maps_[size_t(b.core)][k]; }

  static bool same_shape(const WeightRecord& a, const WeightRecord& b) {
    return a.c == b.c && a.kh == b.kh && a.kw == b.kw && a.elem == b.elem;
  }
  static std::string shape_text(const WeightRecord& r) {
    std::string t = "[";  // appended piecewise: GCC 12 warns (-Wrestrict) on the operator+ chain
    for (int64_t x : {r.c, r.kh, r.kw}) {
      if (t.size() > 1) t += ", ";
      t += std::to_string(x);
    }
    t += r.elem == 1 ? "] (" : "] FP16 (";
    t += std::to_string(r.bytes());
    t += " bytes each)";
    return t;
  }
  std::string load_text(size_t line) const {
    return "line " + std::to_string(line + 1) + " (" + std::string(p_.prog_.instructions[line].mnemonic()) + ")";
  }

  // The first run ending after `lo`.
  static Map::iterator first_after(Map& m, int64_t lo) {
    return std::partition_point(m.begin(), m.end(), [lo](const Run& r) { return r.end <= lo; });
  }
  // The index + 1 of the load that wrote byte `at` last; 0 if none did.
  static size_t latest(Map& m, int64_t at) {
    auto it = first_after(m, at);
    return it != m.end() && it->start <= at ? it->line + 1 : 0;
  }

  // Forgets bytes [lo, hi): the runs around keep their records and bases.
  // Returns where a run starting at lo belongs.
  static Map::iterator erase(Map& m, int64_t lo, int64_t hi) {
    auto first = first_after(m, lo), last = first;
    while (last != m.end() && last->start < hi) ++last;
    if (first == last) return first;
    Run left = *first, right = *std::prev(last);
    left.end = lo, right.start = hi;
    const bool keep_left = left.start < lo, keep_right = right.end > hi;
    auto it = m.erase(first, last);
    if (keep_right) it = m.insert(it, right);
    if (keep_left) it = std::next(m.insert(it, left));
    return it;
  }

  static void load(size_t i, Map& m, const Block& b, const WeightRecord& rec) {
    if (b.empty()) return;
    m.insert(erase(m, b.lo(), b.hi()), Run{b.lo(), b.hi(), b.lo(), rec, i});
  }

  // Any other write to L2 ends the records within its extent. (The bytes a
  // strided block skips belong to the same tensor, never to weights; erasing
  // only the bytes written would split runs into a fragment per pixel.)
  void clobber(const Block& b) {
    if (b.empty()) return;
    if (b.wrap > 0 && b.hi() > b.wrap) {  // the two ends of the ring
      Block head = b, tail = b;
      head.n = head.h = head.w = 1, head.bytes = b.wrap - b.lo(), head.wrap = 0;
      tail.base = 0, tail.n = tail.h = tail.w = 1, tail.bytes = b.hi() - b.wrap, tail.wrap = 0;
      clobber(head);
      clobber(tail);
      return;
    }
    Map& m = map(b, kL2);
    // Most writes miss every run: decided from the first and last run alone.
    if (m.empty() || b.hi() <= m.front().start || m.back().end <= b.lo()) return;
    erase(m, b.lo(), b.hi());
  }

  // Whether block b holds records of `rec`'s shape written by earlier loads,
  // on their record boundaries; if not and `why` is given, the reason.
  bool holds(Map& m, const Block& b, const WeightRecord& rec, const char* loader = nullptr,
             std::string* why = nullptr) const {
    if (b.empty()) return true;
    const int64_t lo = b.lo(), hi = b.hi(), size = rec.bytes();
    auto what = [&] {
      return "reads " + std::string(space_name(b.space)) + " of core " + std::to_string(b.core) + " bytes " +
             range_text(lo, hi) + " as " + std::to_string(b.size() / size) + " weight records of " + shape_text(rec) +
             ", but ";
    };
    int64_t pos = lo;
    for (auto it = first_after(m, lo); pos < hi; ++it) {
      if (it == m.end() || it->start > pos) {
        if (why)
          *why = what() + "no " + loader + " before it on the core loaded bytes " +
                 range_text(pos, it == m.end() ? hi : std::min(hi, it->start));
        return false;
      }
      const Run& r = *it;
      if (!same_shape(r.rec, rec)) {
        if (why)
          *why = what() + "bytes " + range_text(std::max(lo, r.start), std::min(hi, r.end)) + " hold records of " +
                 shape_text(r.rec) + " that " + load_text(r.line) + " loaded";
        return false;
      }
      if (((lo - r.base) % size + size) % size != 0) {
        if (why)
          *why = what() + "its first record starts " + std::to_string(((lo - r.base) % size + size) % size) +
                 " bytes into a record of those " + load_text(r.line) + " loaded from byte " + std::to_string(r.base) +
                 " on";
        return false;
      }
      pos = r.end;
    }
    return true;
  }
  std::string why(Map& m, const Block& b, const WeightRecord& rec, const char* loader) const {
    std::string text;
    holds(m, b, rec, loader, &text);
    return text;
  }

  const Planner& p_;
  std::vector<std::array<Map, 3>> maps_;  // per core, by Kind
};

// ---- planning ------------------------------------------------------------------

Planner::Planner(const arch::Architecture& a, const isa::Program& p, Options o)
    : a_(a), prog_(p), o_(std::move(o)), records_(std::make_unique<Records>(*this)) {
  std::array<int32_t, isa::kOpcodeCount> none;
  none.fill(-1);
  last_.assign(size_t(std::max(a.core_count(), 0)), none);
}

Planner::~Planner() = default;

void Planner::fail(size_t i, const std::string& what) const {
  throw Error(kExitInvalidInput,
              at_line(o_.file, long(i) + 1, std::string(prog_.instructions[i].mnemonic()) + ": " + what));
}

int64_t Planner::memory_size(Space s) const {
  switch (s) {
    case Space::L2: return a_.core.l2_bytes;
    // The architecture's WL0 size is counted in the instruction set's address unit (rows).
    case Space::Wl0: return a_.core.wl0_bytes();
    case Space::DramWeights: return o_.dram_weight_bytes;
    case Space::DramActivations: return o_.dram_activation_bytes;
  }
  return 0;
}

void Planner::check_block(size_t i, Block& b, const char* what) const {
  if (b.empty()) return;
  int64_t size = memory_size(b.space);
  // L2 is a ring: a block starting inside it may run past its end and
  // continue at byte 0, as long as it does not come round onto itself.
  if (b.space == Space::L2 && b.lo() >= 0 && b.lo() < size && b.hi() > size && b.hi() - b.lo() <= size) {
    b.wrap = size;
    return;
  }
  if (b.lo() < 0 || (size >= 0 && b.hi() > size)) {
    if (size < 0)
      fail(i, std::string(what) + " " + std::string(space_name(b.space)) + " bytes " + range_text(b.lo(), b.hi()) +
                  ", below its first byte");
    std::string where = b.space == Space::L2 || b.space == Space::Wl0 ? " of core " + std::to_string(b.core) : "";
    fail(i, std::string(what) + " " + std::string(space_name(b.space)) + where + " bytes " + range_text(b.lo(), b.hi()) +
                ", outside the " + std::to_string(size) + " bytes there");
  }
}

void Planner::plan(size_t i, Step& s) {
  s.cfg.fill(-1);
  s.reads.clear(), s.writes.clear();
  s.macs = 0;
  s.records = WeightRecord{};
  int32_t core = prog_.instructions[i].mapping.core;
  if (!a_.valid_core(core)) fail(i, "core " + std::to_string(core) + " is not a core of " + a_.name);
  plan_one(i, s, last_[size_t(core)]);
  records_->follow(i, s);
}

void Planner::plan_one(size_t i, Step& s, std::array<int32_t, isa::kOpcodeCount>& last_cfg) {
  const Instruction& in = prog_.instructions[i];
  s.core = in.mapping.core;
  if (in.is_config()) {
    last_cfg[size_t(in.op())] = int32_t(i);
    return;
  }
  // Addresses and window origins far beyond any memory are refused before
  // any arithmetic on them can overflow.
  for (Param p : {Param::STaddr, Param::STaddr1, Param::DTaddr, Param::SWaddr})
    if (in.has(p) && (in.get(p) > kMaxAddress || in.get(p) < -kMaxAddress))
      fail(i, std::string(isa::param_name(p)) + " " + std::to_string(in.get(p)) + " is beyond any memory");
  for (Param p : {Param::SPHI, Param::SPWI, Param::IPH, Param::IPW})
    if (in.has(p) && (in.get(p) > kMaxDim || in.get(p) < -kMaxDim))
      fail(i, std::string(isa::param_name(p)) + " " + std::to_string(in.get(p)) + " is beyond any tensor");
  // pe_cfg_gp is optional: before any, convolutions are dense and undilated.
  auto geometry = [&](size_t, const std::array<int32_t, isa::kOpcodeCount>& cfgs) {
    Geometry g;
    int32_t k = cfgs[size_t(Opcode::pe_cfg_gp)];
    if (k < 0) return g;
    s.cfg[kGp] = k;
    const Instruction& gp = prog_.instructions[size_t(k)];
    auto dil = gp.list(Param::DILATION);
    g.groups = gp.get(Param::GROUPS), g.dh = at(dil, 0), g.dw = at(dil, 1);
    if (g.groups <= 0 || g.dh <= 0 || g.dw <= 0 || g.groups > kMaxDim || g.dh > kMaxDim || g.dw > kMaxDim)
      fail(i, "pe_cfg_gp GROUPS and DILATION must be positive (line " + std::to_string(k + 1) + ")");
    return g;
  };
  auto need = [&](Opcode c, Cfg slot) -> const Instruction& {
    int32_t k = last_cfg[size_t(c)];
    if (k < 0) fail(i, "no " + std::string(isa::mnemonic(c)) + " of core " + std::to_string(s.core) + " configured it");
    s.cfg[slot] = k;
    return prog_.instructions[size_t(k)];
  };
  auto fmt = [&](const Instruction& c, Param p) { return element_bytes(c.get_enum<isa::DataFmt>(p)); };
  auto positive = [&](std::span<const int32_t> v, const char* what) {
    for (int32_t x : v)
      if (x <= 0 || x > kMaxDim)
        fail(i, std::string(what) + " has a size " + std::to_string(x) + " (sizes must be positive, at most " +
                    std::to_string(kMaxDim) + ")");
  };
  auto fits = [&](std::span<const int32_t> tile, const Box& box, const char* tile_name, const char* box_name) {
    // tile [C, H, W] against box [C, H, W]
    if (at(tile, 0) > box.c || at(tile, 1) > box.h || at(tile, 2) > box.w)
      fail(i, std::string(tile_name) + " [" + std::to_string(at(tile, 0)) + ", " + std::to_string(at(tile, 1)) + ", " +
                  std::to_string(at(tile, 2)) + "] does not fit " + box_name + " [" + std::to_string(box.c) + ", " +
                  std::to_string(box.h) + ", " + std::to_string(box.w) + "]");
  };
  // A block reaching beyond any memory (sizes are bounded, the product may not be).
  auto far = [&](Space sp, int64_t base, __int128 extent) {
    if (__int128(base) + extent > kMaxAddress)
      fail(i, "a block of " + (extent > kMaxAddress ? std::string("more than ") + std::to_string(kMaxAddress)
                                                     : std::to_string(int64_t(extent))) +
                  " bytes at " + std::to_string(base) + " is beyond any memory (" + std::string(space_name(sp)) + ")");
  };
  auto block_in = [&](Space sp, int64_t base, const Box& b, int64_t n, int64_t h, int64_t w, int64_t bytes) {
    far(sp, base, __int128(n - 1) * b.sample() + __int128(h - 1) * b.row() + __int128(w - 1) * b.pixel + bytes);
    Block x;
    x.space = sp, x.core = (sp == Space::L2 || sp == Space::Wl0) ? s.core : 0;
    x.base = base, x.n = n, x.h = h, x.w = w, x.sn = b.sample(), x.sh = b.row(), x.sw = b.pixel, x.bytes = bytes;
    return x;
  };
  auto contiguous = [&](Space sp, int64_t base, __int128 bytes) {
    far(sp, base, bytes);
    Block x;
    x.space = sp, x.core = (sp == Space::L2 || sp == Space::Wl0) ? s.core : 0;
    x.base = base, x.bytes = int64_t(bytes);
    return x;
  };
  // A multicast member moves what its unicast load moves, on its own core.
  const Opcode op = isa::unicast_load_of(in.op());
  switch (op) {
    case Opcode::ct_st:
    case Opcode::ct_bc:
    case Opcode::ct_ed:
    case Opcode::ct_hs:  // the host's memory traffic is the functional run's (lib/func/functional.cpp)
    case Opcode::ct_hw:
      return;
    case Opcode::lda_mov:
    case Opcode::sta_mov:
    case Opcode::dt_cal: {
      const bool load = op == Opcode::lda_mov, store = op == Opcode::sta_mov;
      const Instruction& c = need(load ? Opcode::lda_cfg : store ? Opcode::sta_cfg : Opcode::dt_cfg, kFm);
      auto tile = in.list(Param::Tile);
      positive(tile, "Tile");
      int b = fmt(c, Param::DF);
      // DRAM tensors are packed, L2 tensors padded per pixel.
      Box src = make_box(a_, c.list(Param::STile), b, load), dst = make_box(a_, c.list(Param::DTile), b, store);
      positive(c.list(Param::STile), "STile");
      positive(c.list(Param::DTile), "DTile");
      fits(tile.subspan(1), src, "Tile", "STile");
      fits(tile.subspan(1), dst, "Tile", "DTile");
      Space from = load ? Space::DramActivations : Space::L2, to = store ? Space::DramActivations : Space::L2;
      s.reads.push_back(block_in(from, in.get(Param::STaddr), src, tile[0], tile[2], tile[3], int64_t(tile[1]) * b));
      s.writes.push_back(block_in(to, in.get(Param::DTaddr), dst, tile[0], tile[2], tile[3], int64_t(tile[1]) * b));
      break;
    }
    case Opcode::ldw_mov:
    case Opcode::lw_mov: {
      const bool lw = op == Opcode::lw_mov;
      const Instruction& c = need(lw ? Opcode::lw_cfg : Opcode::ldw_cfg, kFm);
      auto ws = in.list(Param::Wsize);
      positive(ws, "Wsize");
      if (o_.functional && c.get_enum<isa::DataFmt>(Param::DF) != isa::DataFmt::INT8)
        fail(i, "only INT8 weights are implemented");
      WeightRecord r = weight_record(a_, ws[1], ws[2], ws[3], fmt(c, Param::DF));
      const __int128 bytes = __int128(ws[0]) * r.bytes();
      s.records = r;
      Space from = (!lw || in.op() == Opcode::lw_mc || in.get(Param::SS) != 0) ? Space::DramWeights : Space::L2;
      s.reads.push_back(contiguous(from, in.get(Param::STaddr), bytes));
      s.writes.push_back(lw ? contiguous(Space::Wl0, in.get(Param::DTaddr) * a_.core.wl0_row_bytes, bytes)
                            : contiguous(Space::L2, in.get(Param::DTaddr), bytes));
      break;
    }
    case Opcode::so_mov:
    case Opcode::si_mov: {
      const bool send = in.op() == Opcode::so_mov;
      const Instruction& c = need(send ? Opcode::so_cfg : Opcode::si_cfg, kFm);
      auto tile = in.list(Param::Tile);
      positive(tile, "Tile");
      int b = fmt(c, Param::DF);
      Box box = make_box(a_, c.list(send ? Param::STile : Param::DTile), b);
      positive(c.list(send ? Param::STile : Param::DTile), send ? "STile" : "DTile");
      fits(tile.subspan(1), box, "Tile", send ? "STile" : "DTile");
      int64_t other = in.get(send ? Param::DCORE : Param::SCORE);
      if (!a_.valid_core(other) || other == s.core)
        fail(i, std::string(send ? "DCORE " : "SCORE ") + std::to_string(other) +
                    (other == s.core ? " is the core itself" : " is not another core of " + a_.name));
      Block x = block_in(Space::L2, in.get(send ? Param::STaddr : Param::DTaddr), box, tile[0], tile[2], tile[3],
                         int64_t(tile[1]) * b);
      (send ? s.reads : s.writes).push_back(x);
      break;
    }
    case Opcode::pe_conv: {
      const Instruction& fm = need(Opcode::pe_cfg_fm, kFm);
      const Instruction& pm = need(Opcode::pe_cfg_pm, kPm);
      const Instruction& tp = need(Opcode::pe_cfg_tp, kTp);
      if (o_.functional) {
        if (fm.get_enum<isa::DataFmt>(Param::SF) != isa::DataFmt::INT8 ||
            fm.get_enum<isa::DataFmt>(Param::WF) != isa::DataFmt::INT8)
          fail(i, "only INT8 inputs and weights are implemented (pe_cfg_fm SF/WF)");
        if (pm.get(Param::ADDEN) != 0) fail(i, "pe_cfg_pm ADDEN (fused addition) is not implemented");
        double padv = fm.number(Param::PADV);
        if (padv != std::round(padv) || padv < -128 || padv > 127)
          fail(i, "pe_cfg_fm PADV " + std::to_string(padv) + " is not an INT8 value");
      }
      auto tile = tp.list(Param::Tile), kernel = tp.list(Param::KERNEL), stride = pm.list(Param::STRIDE);
      positive(tile, "pe_cfg_tp Tile");
      positive(kernel, "pe_cfg_tp KERNEL");
      positive(stride, "pe_cfg_pm STRIDE");
      positive(fm.list(Param::STile), "pe_cfg_fm STile");
      positive(fm.list(Param::DTile), "pe_cfg_fm DTile");
      // The mini tile the array streams (MTI: rows and columns less one) and
      // the channel blocking (MTC0, MTK0) set the timing; in range, or no run prices them.
      auto mti = tp.list(Param::MTI);
      if (tp.get(Param::MTC0) < 0 || tp.get(Param::MTC0) > kMaxDim || tp.get(Param::MTK0) < 0 ||
          tp.get(Param::MTK0) > kMaxDim || mti[0] < 0 || mti[1] < 0 || mti[0] >= kMaxDim || mti[1] >= kMaxDim)
        fail(i, "pe_cfg_tp MTC0 " + std::to_string(tp.get(Param::MTC0)) + ", MTK0 " + std::to_string(tp.get(Param::MTK0)) +
                    ", MTI [" + std::to_string(mti[0]) + ", " + std::to_string(mti[1]) + "]: each must be in 0.." +
                    std::to_string(kMaxDim - 1) + " (line " + std::to_string(s.cfg[kTp] + 1) + ")");
      Box ib = make_box(a_, fm.list(Param::STile), fmt(fm, Param::SF)), ob = make_box(a_, fm.list(Param::DTile), fmt(fm, Param::DF));
      const int64_t N = tile[0], K = tile[1], C = tile[2], OH = tile[3], OW = tile[4];
      const int64_t kh = kernel[0], kw = kernel[1], sh = stride[0], sw = stride[1];
      if (C > ib.c) fail(i, "pe_cfg_tp Tile has " + std::to_string(C) + " input channels, pe_cfg_fm STile " + std::to_string(ib.c));
      const int32_t dt[3] = {int32_t(K), int32_t(OH), int32_t(OW)};
      fits(dt, ob, "pe_cfg_tp Tile [K, OH, OW]", "pe_cfg_fm DTile");
      const Geometry g = geometry(i, last_cfg);
      if (K % g.groups != 0 || C % g.groups != 0)
        fail(i, "pe_cfg_gp GROUPS " + std::to_string(g.groups) + " does not divide the tile's " + std::to_string(K) +
                    " output and " + std::to_string(C) + " input channels");
      // The window: box rows SPHI .. SPHI + (OH-1)*sh + (kh-1)*dh, the same for
      // columns; what lies outside the box is padding and is not read.
      const int64_t r0 = in.get(Param::SPHI), c0 = in.get(Param::SPWI);
      const int64_t r1 = r0 + (OH - 1) * sh + (kh - 1) * g.dh + 1, c1 = c0 + (OW - 1) * sw + (kw - 1) * g.dw + 1;
      const int64_t rr0 = std::max<int64_t>(r0, 0), rr1 = std::min(r1, ib.h);
      const int64_t cc0 = std::max<int64_t>(c0, 0), cc1 = std::min(c1, ib.w);
      if (rr1 > rr0 && cc1 > cc0)
        s.reads.push_back(block_in(Space::L2, in.get(Param::STaddr) + (rr0 - r0) * ib.row() + (cc0 - c0) * ib.pixel, ib,
                                   N, rr1 - rr0, cc1 - cc0, C * ib.elem));
      // Each output channel's record holds its group's C / GROUPS input channels.
      WeightRecord rec = weight_record(a_, C / g.groups, kh, kw, fmt(fm, Param::WF));
      if (o_.functional && rec.extra < kParameterBytes)
        fail(i, "the architecture's weight_extra_bytes_per_out_channel (" + std::to_string(rec.extra) +
                    ") cannot hold the bias and channel scale");
      s.reads.push_back(contiguous(Space::Wl0, in.get(Param::SWaddr) * a_.core.wl0_row_bytes, __int128(K) * rec.bytes()));
      s.records = rec;
      s.writes.push_back(block_in(Space::L2, in.get(Param::DTaddr), ob, N, OH, OW, K * ob.elem));
      s.macs = product({N, OH, OW, K, C / g.groups, kh, kw});
      if (o_.functional && s.macs > kMaxOperations)
        fail(i, std::to_string(s.macs) + " multiply-accumulates in one instruction is beyond the functional model's " +
                    std::to_string(kMaxOperations));
      break;
    }
    case Opcode::vp_self:
    case Opcode::vp_pool: {
      const bool pool = in.op() == Opcode::vp_pool;
      const Instruction& fm = need(Opcode::vp_cfg_fm, kFm);
      const Instruction& tp = need(Opcode::vp_cfg_tp, kTp);
      // The configurations an operation's values come from: the functional
      // run needs them, so every check and the timing run require them too.
      need(Opcode::vp_cfg_qp, kQp);
      const int64_t lut = in.get(Param::LUT);
      const bool known = pool ? (lut == kLutMaxPool || lut == kLutAvgPool || lut == kLutResize)
                              : (lut == kLutRequantize || two_operands(lut) || activation_lut(lut));
      // An operation the model does not know reads what both its operand addresses name.
      const bool two = !pool && (two_operands(lut) || (!known && in.get(Param::STaddr) != in.get(Param::STaddr1)));
      if (o_.functional && !known)
        fail(i, "LUT " + std::to_string(lut) + " is not an operation the functional model implements (" +
                    (pool ? "17 max pool, 56 average pool, 57 resize" : "16 requantize, 18-21 add, subtract, multiply, reverse subtract, 32-42 activations") + ")");
      if (in.get(Param::IQEN) != 0) need(Opcode::vp_cfg_iq, kIq);
      if (two && in.get(Param::IQEN) != 0) need(Opcode::vp_cfg_iq1, kIq1);
      if (pool && lut == kLutAvgPool) need(Opcode::vp_cfg_gms, kGms);
      if (!pool && activation_lut(lut)) need(Opcode::vp_cfg_gms, kGms);
      if (!pool && takes_act_params(lut)) need(Opcode::vp_cfg_act, kAct);
      // Operand B's box: vp_cfg_fm1 once one was given on this core, else A's (the reference programs).
      if (two && last_cfg[size_t(Opcode::vp_cfg_fm1)] >= 0) need(Opcode::vp_cfg_fm1, kFm1);
      auto tile = tp.list(Param::Tile);
      positive(tile, "vp_cfg_tp Tile");
      positive(fm.list(Param::STile), "vp_cfg_fm STile");
      positive(fm.list(Param::DTile), "vp_cfg_fm DTile");
      Box ib = make_box(a_, fm.list(Param::STile), fmt(fm, Param::IDF)), ob = make_box(a_, fm.list(Param::DTile), fmt(fm, Param::ODF));
      fits(tile, ob, "vp_cfg_tp Tile", "vp_cfg_fm DTile");
      if (tile[0] > ib.c) fail(i, "vp_cfg_tp Tile has more channels than vp_cfg_fm STile");
      const int64_t C = tile[0], H = tile[1], W = tile[2];
      if (pool && lut == kLutResize) {
        const Instruction& rs = need(Opcode::vp_cfg_rs, kRs);
        const auto mode = int8::ResizeMode(rs.get(Param::RSMD));
        if (rs.get(Param::RSMD) < 0 || rs.get(Param::RSMD) >= int8::kResizeModeCount)
          fail(i, "vp_cfg_rs RSMD " + std::to_string(rs.get(Param::RSMD)) + " is no resize mode (0-" +
                      std::to_string(int8::kResizeModeCount - 1) + ")");
        if (int8::resize_pads(mode)) {
          // The padding modes take integers: the stride (1 but for zero
          // insertion) and the output index of the input's first row/column.
          for (Param k : {Param::RSKH, Param::RSKW, Param::RSBH, Param::RSBW}) {
            double v = rs.number(k);
            if (v != std::floor(v) || std::fabs(v) > double(1 << 24))
              fail(i, "vp_cfg_rs " + std::string(isa::param_name(k)) + " " + std::to_string(v) + " is not an integer (resize mode " +
                          std::to_string(rs.get(Param::RSMD)) + " places the input with integer strides and offsets)");
          }
          const double sh = rs.number(Param::RSKH), sw = rs.number(Param::RSKW);
          if (sh < 1 || sw < 1 || (mode != int8::ResizeMode::Zeros && (sh != 1 || sw != 1)))
            fail(i, "vp_cfg_rs RSKH/RSKW " + std::to_string(int64_t(sh)) + ", " + std::to_string(int64_t(sw)) +
                        ": resize mode " + std::to_string(rs.get(Param::RSMD)) + " takes " +
                        (mode == int8::ResizeMode::Zeros ? "strides of at least 1" : "stride 1"));
        }
        auto insz = rs.list(Param::RSIN), oo = rs.list(Param::RSOO), io = rs.list(Param::RSIO);
        positive(insz, "vp_cfg_rs RSIN");
        positive(tp.list(Param::KERNEL), "vp_cfg_tp KERNEL");  // the taps each output blends
        if (o_.functional && product({C, H, W, 4}) > kMaxOperations)
          fail(i, "the resize reads more elements than the functional model's " + std::to_string(kMaxOperations));
        // The rows and columns the tile's outputs read (int8::resize_span: the interpreter's taps).
        auto [r0, r1] = int8::resize_span(mode, oo[0], oo[0] + H - 1, int8::param(rs.number(Param::RSKH)),
                                          int8::param(rs.number(Param::RSBH)), insz[0]);
        auto [c0, c1] = int8::resize_span(mode, oo[1], oo[1] + W - 1, int8::param(rs.number(Param::RSKW)),
                                          int8::param(rs.number(Param::RSBW)), insz[1]);
        // The rows and columns read, in the box from STaddr (layer row RSIO[0], column RSIO[1]).
        if (r0 < io[0] || c0 < io[1])
          fail(i, "the resize reads input row " + std::to_string(r0) + ", column " + std::to_string(c0) +
                      ", before the box's first at STaddr (vp_cfg_rs RSIO " + std::to_string(io[0]) + ", " + std::to_string(io[1]) + ")");
        const int32_t span[3] = {int32_t(C), int32_t(r1 - io[0] + 1), int32_t(c1 - io[1] + 1)};
        fits(span, ib, "the rows and columns the resize reads", "vp_cfg_fm STile");
        s.reads.push_back(block_in(Space::L2, in.get(Param::STaddr) + (r0 - io[0]) * ib.row() + (c0 - io[1]) * ib.pixel, ib,
                                   1, r1 - r0 + 1, c1 - c0 + 1, C * ib.elem));
      } else if (pool) {
        auto kernel = tp.list(Param::KERNEL), stride = tp.list(Param::STRIDE);
        positive(kernel, "vp_cfg_tp KERNEL");
        positive(stride, "vp_cfg_tp STRIDE");
        if (o_.functional && product({C, H, W, kernel[0], kernel[1]}) > kMaxOperations)
          fail(i, "the pooling windows hold more elements than the functional model's " + std::to_string(kMaxOperations));
        // vp_cfg_pl is optional: before any, windows are undilated.
        int64_t dh = 1, dw = 1;
        if (last_cfg[size_t(Opcode::vp_cfg_pl)] >= 0) {
          const Instruction& pl = need(Opcode::vp_cfg_pl, kPl);
          positive(pl.list(Param::DILATION), "vp_cfg_pl DILATION");
          dh = pl.list(Param::DILATION)[0], dw = pl.list(Param::DILATION)[1];
          if (pl.get(Param::PLDIV) != 0 && (pl.get(Param::PLDIV) != 1 || lut != kLutAvgPool))
            fail(i, "vp_cfg_pl PLDIV " + std::to_string(pl.get(Param::PLDIV)) + " (0 constant, 1 inside the box: average pools only)");
        }
        const int64_t r0 = in.get(Param::IPH), c0 = in.get(Param::IPW);
        const int64_t r1 = r0 + (H - 1) * stride[0] + (kernel[0] - 1) * dh + 1, c1 = c0 + (W - 1) * stride[1] + (kernel[1] - 1) * dw + 1;
        const int64_t rr0 = std::max<int64_t>(r0, 0), rr1 = std::min(r1, ib.h);
        const int64_t cc0 = std::max<int64_t>(c0, 0), cc1 = std::min(c1, ib.w);
        if (rr1 > rr0 && cc1 > cc0)
          s.reads.push_back(block_in(Space::L2, in.get(Param::STaddr) + (rr0 - r0) * ib.row() + (cc0 - c0) * ib.pixel, ib,
                                     1, rr1 - rr0, cc1 - cc0, C * ib.elem));
      } else {
        fits(tile, ib, "vp_cfg_tp Tile", "vp_cfg_fm STile");
        // The first operand (dequantized with IQK0/IQB0) is at STaddr1, the
        // second (IQK1/IQB1) at STaddr: the reference programs pair them so.
        s.reads.push_back(block_in(Space::L2, in.get(Param::STaddr1), ib, 1, H, W, C * ib.elem));
        if (two) {
          // B: a size of 1 in its box broadcasts along that axis.
          Box bb = ib;
          if (s.cfg[kFm1] >= 0) {
            const Instruction& fm1 = prog_.instructions[size_t(s.cfg[kFm1])];
            positive(fm1.list(Param::STile), "vp_cfg_fm1 STile");
            bb = make_box(a_, fm1.list(Param::STile), fmt(fm1, Param::IDF));
          }
          const int64_t cb = bb.c == 1 ? 1 : C, hb = bb.h == 1 ? 1 : H, wb = bb.w == 1 ? 1 : W;
          const int32_t tb[3] = {int32_t(cb), int32_t(hb), int32_t(wb)};
          fits(tb, bb, "vp_cfg_tp Tile (operand B)", s.cfg[kFm1] >= 0 ? "vp_cfg_fm1 STile" : "vp_cfg_fm STile");
          s.reads.push_back(block_in(Space::L2, in.get(Param::STaddr), bb, 1, hb, wb, cb * bb.elem));
        }
      }
      s.writes.push_back(block_in(Space::L2, in.get(Param::DTaddr), ob, 1, H, W, C * ob.elem));
      break;
    }
    default:
      fail(i, "the footprint of this instruction is not known");
  }
  for (Block& b : s.reads) check_block(i, b, "reads");
  for (Block& b : s.writes) check_block(i, b, "writes");
}

std::vector<Step> plan_program(const arch::Architecture& a, const isa::Program& p, const Options& o) {
  std::vector<Step> steps(p.size());
  Planner planner(a, p, o);
  for (size_t i = 0; i < p.size(); ++i) planner.plan(i, steps[i]);
  return steps;
}

void check_program(const arch::Architecture& a, const isa::Program& p, const Options& o) {
  Planner planner(a, p, o);
  Step s;  // reused: no allocation per instruction
  for (size_t i = 0; i < p.size(); ++i) planner.plan(i, s);
}

}  // namespace cct::footprint
