#include "func/functional.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <queue>
#include <set>
#include <limits>
#include <sstream>

#include "asm/dram_layout.hpp"
#include "fir/host.hpp"
#include "fir/host_graph.hpp"
#include "interp/host_graph.hpp"
#include "func/machine.hpp"
#include "interp/int8_ops.hpp"
#include "support/error.hpp"

namespace cct::func {

using isa::Instruction;
using isa::Opcode;
using isa::Param;

namespace {

std::string coord_text(int64_t n, int64_t c, int64_t h, int64_t w) {
  return "[" + std::to_string(n) + ", " + std::to_string(c) + ", " + std::to_string(h) + ", " + std::to_string(w) + "]";
}

bool is_compute(Opcode op) { return op == Opcode::pe_conv || op == Opcode::vp_self || op == Opcode::vp_pool; }

// A tensor with its values as the chip stores them: int8 codes or float16 bits.
struct Golden {
  fir::Shape shape;  // NCHW
  int elem = 1;
  std::vector<uint8_t> bytes;  // NCHW, elem bytes each
  int64_t index(int64_t n, int64_t c, int64_t h, int64_t w) const {
    return ((n * shape[1] + c) * shape[2] + h) * shape[3] + w;
  }
  // The element at `index` equals the `elem` bytes at `p` (byte by byte:
  // the checks compare every element of every tile, and memcmp, called per
  // one- or two-byte element, was 8% of the ResNet b16/b64 test's profile).
  bool matches(const uint8_t* p, int64_t index) const {
    const uint8_t* g = bytes.data() + index * elem;
    for (int k = 0; k < elem; ++k)
      if (p[k] != g[k]) return false;
    return true;
  }
  std::string value_text(const uint8_t* p) const {
    if (elem == 1) return std::to_string(int(int8_t(*p)));
    uint16_t hb;
    std::memcpy(&hb, p, 2);
    std::ostringstream s;
    s << half_to_float(hb);
    return s.str();
  }
};

fir::Shape as4(const fir::Shape& s) {
  // The box the chip holds the tensor in ([N, C] as [N, C, 1, 1], a token
  // tensor [N, T, D] as [N, D, T, 1]).
  auto b = fir::chip_box(s);
  return fir::Shape(b.begin(), b.end());
}

// Elements of `elem` bytes from the FIR's row-major order to the box's, or back.
std::vector<uint8_t> box_order(const std::vector<uint8_t>& bytes, const fir::Shape& s, int elem, bool back) {
  if (s.size() != 3) return bytes;
  std::vector<uint8_t> out(bytes.size());
  const int64_t n = int64_t(bytes.size()) / elem;
  for (int64_t f = 0; f < n; ++f) {
    int64_t b = fir::chip_index(s, f);
    int64_t from = back ? b : f, to = back ? f : b;
    std::memcpy(out.data() + to * elem, bytes.data() + from * elem, size_t(elem));
  }
  return out;
}

Golden golden_of(const NpyArray& a, const std::string& where) {
  Golden g;
  if (a.shape.size() > 4) throw_input_error(where + ": expected at most 4 dimensions");
  g.shape = as4(a.shape);
  if (a.type == NpyType::I8) {
    g.elem = 1;
    g.bytes = a.bytes;
  } else if (a.type == NpyType::F16 || a.type == NpyType::F32 || a.type == NpyType::F64) {
    g.elem = 2;
    auto f = a.to_float();
    g.bytes.resize(f.size() * 2);
    for (size_t k = 0; k < f.size(); ++k) {
      uint16_t h = float_to_half(int8::to_float16(f[k]));
      std::memcpy(g.bytes.data() + 2 * k, &h, 2);
    }
  } else {
    throw_input_error(where + ": expected an int8 or floating-point array");
  }
  g.bytes = box_order(g.bytes, a.shape, g.elem, false);
  return g;
}

// Where an instruction's operand or result lies: the tensor box in L2 and the
// address of the tile's corner `lo` (coordinates of the whole tensor).
struct Placement {
  int32_t core = 0;
  int64_t origin = 0;  // address of element lo (may lie in the padding: negative)
  sir::Coord lo{}, hi{};  // inclusive, the elements to compare
  int64_t sample = 0, row = 0, pixel = 0, elem = 1;
  int64_t l2_bytes = 0;  // L2 is a ring: addresses past its end continue at 0 (footprint::l2_address)
  int64_t address(int64_t n, int64_t c, int64_t h, int64_t w) const {
    const int64_t a = origin + (n - lo[0]) * sample + (h - lo[2]) * row + (w - lo[3]) * pixel + (c - lo[1]) * elem;
    return a >= 0 ? footprint::l2_address(a, l2_bytes) : a;
  }
};

// What the divergence finder knows about one compute instruction.
struct Check {
  const fir::Layer* layer = nullptr;
  Placement out;
  std::vector<std::pair<std::string, Placement>> operands;  // producer (layer or graph input) and where it is read
};

class Runner {
 public:
  Runner(const isa::Program& p, const std::vector<trace::Timing>& t, const arch::Architecture& a, const fir::Graph& g,
         const sir::Schedule& s, const Options& o)
      : p_(p), t_(t), a_(a), g_(g), s_(s), o_(o) {
    for (const auto& l : g.layers()) by_index_[l.layer_index] = &l;
  }

  Result run(const NpyLoader& weights, const std::vector<NpyArray>& inputs);

 private:
  [[noreturn]] void diverge(const std::string& what) const { throw Error(kExitCheckFailed, what); }
  std::string line(size_t i) const { return o_.program_file + ":" + std::to_string(i + 1); }
  std::string describe(size_t i) const;
  std::vector<size_t> dependency_order() const;
  void check_race(size_t i, const std::vector<size_t>& active) const;
  void build_checks();
  const Golden& golden(const std::string& producer);
  void check_operands(size_t i);
  void check_output(size_t i);
  void note_writes(size_t i);
  std::string writer_story(size_t reader, const Block& byte, const std::string& producer) const;
  void capture(size_t i);
  void plan_host(const assembler::DramLayout& layout);
  interp::QTensor stored_output(const assembler::DramLayout& layout, const fir::Layer& l) const;
  void run_host(const assembler::DramLayout& layout, const NpyLoader& weights, const std::vector<NpyArray>& inputs);
  void run_step(int64_t tag, const assembler::DramLayout& layout, const NpyLoader& weights,
                const std::vector<NpyArray>& inputs);
  interp::QTensor host_input(const assembler::DramLayout& layout, const fir::Layer& l) const;
  void run_step_layers(std::set<std::string> sel, const assembler::DramLayout& layout, const NpyLoader& weights,
                       const std::vector<NpyArray>& inputs);
  void write_step_results(int64_t tag, const assembler::DramLayout& layout);
  void run_host_graph(const assembler::DramLayout& layout);
  interp::QTensor host_golden(const fir::Layer& l) const;
  void check_host(const fir::Layer& l, const std::vector<const interp::QTensor*>& in, const interp::QTensor& out);
  void check_host_order(const assembler::DramLayout& layout) const;

  const isa::Program& p_;
  const std::vector<trace::Timing>& t_;
  const arch::Architecture& a_;
  const fir::Graph& g_;
  const sir::Schedule& s_;
  const Options& o_;
  std::map<int64_t, const fir::Layer*> by_index_;
  std::unique_ptr<Machine> m_;
  bool golden_on_ = false;
  std::vector<Check> checks_;         // per instruction (compute instructions only)
  std::map<std::string, Golden> goldens_;
  std::vector<Golden> graph_inputs_;  // input1, ... as the chip holds them
  std::map<std::string, int64_t> remaining_;  // layer -> compute instructions not yet finished
  // Last writer of each 4-byte granule of every L2 and of the DRAM activations (-1: none).
  static constexpr int64_t kGranule = 4;
  std::vector<std::vector<int32_t>> l2_writer_;
  std::vector<int32_t> dram_writer_;
  std::map<std::string, std::pair<Golden, std::vector<bool>>> dumps_;
  std::set<std::string> host_;                      // the host layers the run computes
  std::map<std::string, std::string> host_reads_;   // accelerator layer read from DRAM -> by whom (messages)
  std::map<std::string, interp::QTensor> host_dumps_;
  fir::HostPlan plan_;
  std::map<int64_t, const sir::HostStep*> steps_;         // the Scheduler IR's host steps by id
  std::set<int64_t> steps_run_;
  std::map<std::string, interp::QTensor> host_results_;  // results of the host steps run so far
  std::unique_ptr<interp::HostGraphRunner> host_graph_;   // the FIR's host graph, when it has one
  Result r_;
};

std::string Runner::describe(size_t i) const {
  const Instruction& in = p_.instructions[i];
  std::string s = line(i) + " (" + std::string(in.mnemonic());
  auto it = by_index_.find(in.mapping.slyr);
  if (it != by_index_.end()) s += ", layer '" + it->second->name + "'";
  s += ", core " + std::to_string(in.mapping.core) + ", cycles " + std::to_string(t_[i].start) + "-" +
       std::to_string(t_[i].end) + ")";
  return s;
}

// A topological order of the instructions under queue order and tokens, used
// to order instructions that start at the same cycle.
std::vector<size_t> Runner::dependency_order() const {
  const size_t n = p_.size();
  std::vector<std::vector<size_t>> succ(n);
  std::vector<int> indeg(n, 0);
  auto edge = [&](size_t a, size_t b) {
    succ[a].push_back(b);
    ++indeg[b];
  };
  std::map<std::pair<int32_t, int>, size_t> last_in_queue;
  // Per core and ordered queue pair: pushers and poppers in program order.
  std::map<std::tuple<int32_t, int, int>, std::pair<std::vector<size_t>, std::vector<size_t>>> tokens;
  for (size_t i = 0; i < n; ++i) {
    const Instruction& in = p_.instructions[i];
    const int32_t core = in.mapping.core;
    const int q = int(in.queue());
    auto key = std::make_pair(core, q);
    if (auto it = last_in_queue.find(key); it != last_in_queue.end()) edge(it->second, i);
    last_in_queue[key] = i;
    for (isa::Queue y : in.next) tokens[{core, q, int(y)}].first.push_back(i);
    for (isa::Queue x : in.prev) tokens[{core, int(x), q}].second.push_back(i);
  }
  for (const auto& [k, v] : tokens)
    for (size_t j = 0; j < v.first.size() && j < v.second.size(); ++j) edge(v.first[j], v.second[j]);
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i)
    if (indeg[i] == 0) ready.push(i);
  std::vector<size_t> rank(n, n);
  size_t next = 0;
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    rank[i] = next++;
    for (size_t j : succ[i])
      if (--indeg[j] == 0) ready.push(j);
  }
  for (size_t i = 0; i < n; ++i)
    if (rank[i] == n) rank[i] = next++;  // unreachable in a program the timing model ran
  return rank;
}

// Host steps in time: the host reads a step's inputs when its first ct_hw
// starts (every ct_hs has ended) and its results are there once the ct_hw
// end. A store of an input still running then, or a load of a result
// starting before, is a missing token (ct_hs after the store, the load after
// ct_hw) that no other check sees: it would run on stale data.
void Runner::check_host_order(const assembler::DramLayout& layout) const {
  struct When {
    int64_t start = std::numeric_limits<int64_t>::max(), done = std::numeric_limits<int64_t>::max();
    size_t first = 0;
  };
  std::map<int64_t, When> when;
  for (size_t i = 0; i < p_.size(); ++i) {
    if (p_.instructions[i].op() != Opcode::ct_hw) continue;
    When& w = when[p_.instructions[i].get(Param::TAG)];
    if (t_[i].start < w.start) w.start = t_[i].start, w.first = i;
    w.done = std::min(w.done, t_[i].end);
  }
  using Span = std::pair<int64_t, int64_t>;
  auto hits = [](const Block& b, const std::vector<Span>& spans) {
    if (b.space != Space::DramActivations || b.empty()) return false;
    for (const auto& [lo, hi] : spans)
      if (b.lo() < hi && lo < b.hi()) return true;
    return false;
  };
  for (const auto& [tag, w] : when) {
    auto st = steps_.find(tag);
    if (st == steps_.end()) continue;  // run_step names it
    std::vector<Span> read, written;
    for (const auto& r : layout.stores)
      for (int64_t id : st->second->related_ifmap)
        if (r.transfer_id == id) read.emplace_back(r.address, r.address + r.bytes());
    for (const auto& r : layout.inputs)
      if (r.host_step == tag) written.emplace_back(r.address, r.address + r.bytes());
    const std::string step = "host step " + std::to_string(tag);
    for (size_t i = 0; i < p_.size(); ++i) {
      const Opcode op = p_.instructions[i].op();
      if (op == Opcode::sta_mov && t_[i].end > w.start)
        for (const Block& b : m_->step(i).writes)
          if (hits(b, read))
            throw_input_error(line(i) + ": " + describe(i) + " stores an input of " + step + " until cycle " +
                              std::to_string(t_[i].end) + ", but the host reads it at cycle " + std::to_string(w.start) +
                              " (" + line(w.first) + ", ct_hw): no ct_hs waits for this store");
      if (isa::unicast_load_of(op) == Opcode::lda_mov && t_[i].start < w.done)
        for (const Block& b : m_->step(i).reads)
          if (hits(b, written))
            throw_input_error(line(i) + ": " + describe(i) + " loads a result of " + step + " at cycle " +
                              std::to_string(t_[i].start) + ", before the host has written it (cycle " +
                              std::to_string(w.done) + ", " + line(w.first) + "): it does not wait for a ct_hw");
    }
  }
}

void Runner::check_race(size_t i, const std::vector<size_t>& active) const {
  const Step& a = m_->step(i);
  for (size_t j : active) {
    const Step& b = m_->step(j);
    auto clash = [&](const std::vector<Block>& x, const std::vector<Block>& y, const char* xv, const char* yv) {
      for (const Block& u : x)
        for (const Block& v : y)
          if (blocks_overlap(u, v)) {
            std::string where = std::string(space_name(u.space)) +
                                (u.space == Space::L2 || u.space == Space::Wl0 ? " of core " + std::to_string(u.core) : "");
            throw Error(kExitInvalidInput,
                        line(i) + ": race: " + describe(i) + " " + xv + " " + where + " bytes [" +
                            std::to_string(std::max(u.lo(), v.lo())) + ", " + std::to_string(std::min(u.hi(), v.hi())) +
                            ") while " + describe(j) + " " + yv + " them; no token orders the two");
          }
    };
    clash(a.reads, b.writes, "reads", "writes");
    clash(a.writes, b.reads, "writes", "reads");
    clash(a.writes, b.writes, "writes", "also writes");
  }
}

const Golden& Runner::golden(const std::string& producer) {
  if (fir::is_graph_input_name(producer)) {
    size_t k = size_t(std::stoi(producer.substr(5)) - 1);
    if (k >= graph_inputs_.size()) throw_input_error("no tensor given for graph input " + producer);
    return graph_inputs_[k];
  }
  auto it = goldens_.find(producer);
  if (it != goldens_.end()) return it->second;
  const fir::Layer* l = g_.find(producer);
  if (!l) throw_input_error("golden: '" + producer + "' is neither a layer nor a graph input");
  const std::string* f = l->file("output_activation1");
  if (!f) throw_input_error("golden: layer '" + producer + "' has no output_activation1 in its file_list");
  std::string path = (std::filesystem::path(o_.golden_dir) / *f).string();
  if (!std::filesystem::exists(path)) throw Error(kExitIo, path + ": no such file (golden output of layer '" + producer + "')");
  Golden gd = golden_of(read_npy(path), path);
  if (!l->output_shape.empty() && as4(l->output_shape[0]) != gd.shape)
    throw_input_error(path + ": its shape differs from layer '" + producer + "' output_shape");
  return goldens_.emplace(producer, std::move(gd)).first->second;
}

// Maps every compute instruction to its workload tile in the Scheduler IR.
void Runner::build_checks() {
  checks_.assign(p_.size(), Check{});
  std::map<std::tuple<int32_t, int64_t, int64_t>, int64_t> vp_seen;  // (core, workload, tile) -> VP instructions so far
  for (size_t i = 0; i < p_.size(); ++i) {
    const Instruction& in = p_.instructions[i];
    if (!is_compute(in.op())) continue;
    const sir::Workload* w = s_.find_workload(in.mapping.wkl);
    if (!w) throw_input_error(line(i) + ": workload " + std::to_string(in.mapping.wkl) + " is not in the Scheduler IR " + o_.sir_file);
    if (in.mapping.tile < 0 || size_t(in.mapping.tile) >= w->tile_info.size())
      throw_input_error(line(i) + ": workload " + std::to_string(w->workload_id) + " has no tile " + std::to_string(in.mapping.tile));
    const sir::Tile& t = w->tile_info[size_t(in.mapping.tile)];
    const fir::Layer* L = g_.find(w->layer_name);
    if (!L) throw_input_error(o_.sir_file + ": layer '" + w->layer_name + "' is not in the Frontend IR " + o_.fir_file);
    Check& c = checks_[i];
    c.layer = L;
    ++remaining_[L->name];
    const Step& st = m_->step(i);
    // The instruction's own view of its tile, from its configuration.
    sir::Coord olo = t.ofmap_lower, ohi = t.ofmap_upper, ilo = t.ifmap_lower, ihi = t.ifmap_upper;
    sir::Coord ilo2 = t.ifmap_lower2.value_or(ilo), ihi2 = t.ifmap_upper2.value_or(ihi);
    if (in.op() != Opcode::pe_conv) {
      // A VP instruction processes one sample: the k-th of a tile, sample lower + k.
      int64_t k = vp_seen[{in.mapping.core, w->workload_id, in.mapping.tile}]++;
      olo[0] = ohi[0] = t.ofmap_lower[0] + k;
      ilo[0] = ihi[0] = t.ifmap_lower[0] + k;
      ilo2[0] = ihi2[0] = ilo2[0] + k;
    }
    const Block& wb = st.writes[0];
    c.out.core = wb.core;
    c.out.origin = wb.base;
    c.out.lo = olo, c.out.hi = ohi;
    c.out.sample = wb.sn, c.out.row = wb.sh, c.out.pixel = wb.sw;
    c.out.l2_bytes = m_->memory_size(Space::L2);
    const int64_t oc = ohi[1] - olo[1] + 1;
    c.out.elem = wb.bytes / std::max<int64_t>(1, oc);
    // The instruction's tile must be the Scheduler IR's.
    int64_t dims[4] = {ohi[0] - olo[0] + 1, oc, ohi[2] - olo[2] + 1, ohi[3] - olo[3] + 1};
    int64_t mine[4] = {wb.n, wb.bytes, wb.h, wb.w};
    bool same = mine[0] == dims[0] && mine[2] == dims[2] && mine[3] == dims[3] && wb.bytes == oc * c.out.elem &&
                (c.out.elem == 1 || c.out.elem == 2);
    if (!same)
      diverge(line(i) + ": " + describe(i) + " computes a tile of " + std::to_string(wb.n) + " x " + std::to_string(wb.h) +
              " x " + std::to_string(wb.w) + " pixels of " + std::to_string(wb.bytes) + " bytes, but its Scheduler IR tile " +
              coord_text(olo[0], olo[1], olo[2], olo[3]) + "-" + coord_text(ohi[0], ohi[1], ohi[2], ohi[3]) + " of layer '" +
              L->name + "' differs");
    // Operands: the first input of a PE layer (the weights are checked through its output), both of an add.
    const isa::Instruction& cfgfm = p_.instructions[size_t(st.cfg[0])];
    Box ib;
    int64_t pad_top = 0, pad_left = 0;
    if (in.op() == Opcode::pe_conv) {
      ib = make_box(a_, cfgfm.list(Param::STile), 1);
      pad_top = t.tile_padding_tblr[0], pad_left = t.tile_padding_tblr[2];
    } else {
      ib = make_box(a_, cfgfm.list(Param::STile), element_bytes(cfgfm.get_enum<isa::DataFmt>(Param::IDF)));
      if (in.op() == Opcode::vp_pool) pad_top = t.tile_padding_tblr[0], pad_left = t.tile_padding_tblr[2];
    }
    const int64_t lut = in.op() == Opcode::vp_self ? in.get(Param::LUT) : 0;
    const bool two = lut == int64_t(isa::Lut::Add) || lut == int64_t(isa::Lut::Sub) || lut == int64_t(isa::Lut::Mul) ||
                     lut == int64_t(isa::Lut::ReverseSub);
    size_t n_ops = two ? 2 : 1;
    // Operand B (at STaddr) has a box of its own after a vp_cfg_fm1. The
    // assembler puts the Frontend IR's first input in B when it is the one
    // that broadcasts (its shape is not the output's).
    Box bb = ib;
    if (two && st.cfg[Machine::kFm1] >= 0) {
      const isa::Instruction& fm1 = p_.instructions[size_t(st.cfg[Machine::kFm1])];
      bb = make_box(a_, fm1.list(Param::STile), element_bytes(fm1.get_enum<isa::DataFmt>(Param::IDF)));
    }
    const bool swapped = two && !L->input_shape.empty() && !L->output_shape.empty() && L->input_shape[0] != L->output_shape[0];
    // A data movement layer's tile is one piece of its box, from one input
    // (fir::move_pieces): the operand is that input.
    size_t first_input = 0;
    if (fir::is_move_op(L->op)) {
      auto pieces = fir::move_pieces(*L, w->lower, w->upper);
      if (!pieces || size_t(in.mapping.tile) >= pieces->size())
        throw_input_error(line(i) + ": tile " + std::to_string(in.mapping.tile) + " of workload " +
                          std::to_string(w->workload_id) + " is no piece of layer '" + L->name + "'");
      first_input = (*pieces)[size_t(in.mapping.tile)].input;
    }
    for (size_t k = first_input; k < first_input + n_ops && k < L->previous_layer.size(); ++k) {
      if (fir::is_constant_name(L->previous_layer[k])) continue;  // a constant operand has no golden (its output is checked)
      Placement pl;
      pl.core = st.core;
      pl.lo = k == first_input ? ilo : ilo2;
      pl.hi = k == first_input ? ihi : ihi2;
      // The address parameter is the window origin, pad rows above and pad columns left of the tile's corner.
      // vp_self reads operand A at STaddr1, B at STaddr (machine.hpp).
      const bool b_operand = in.op() == Opcode::vp_self && ((k - first_input == 1) != swapped);
      Param at = in.op() != Opcode::vp_self ? Param::STaddr : b_operand ? Param::STaddr : Param::STaddr1;
      int64_t base = in.get(at);
      const Box& box = b_operand ? bb : ib;
      pl.sample = box.sample(), pl.row = box.row(), pl.pixel = box.pixel, pl.elem = box.elem;
      pl.origin = base + pad_top * pl.row + pad_left * pl.pixel;
      pl.l2_bytes = m_->memory_size(Space::L2);
      c.operands.push_back({L->previous_layer[k], pl});
    }
  }
}

std::string Runner::writer_story(size_t reader, const Block& byte, const std::string& producer) const {
  std::string s;
  int32_t w = -1;
  if (byte.space == Space::L2) {
    const auto& v = l2_writer_[size_t(byte.core)];
    if (!v.empty()) w = v[size_t(byte.base / kGranule)];
  }
  if (w >= 0) s += "; it was last written by " + describe(size_t(w));
  else s += "; the program never wrote it before";
  // A writer of the byte that ended only after the reader started: the
  // producer's own instruction, or a move bringing data for the reader's layer.
  const fir::Layer* prod = g_.find(producer);
  const int32_t reader_layer = p_.instructions[reader].mapping.slyr;
  for (size_t j = 0; j < p_.size(); ++j) {
    const Instruction& wj = p_.instructions[j];
    if (j == reader || t_[j].end <= t_[reader].start || wj.mapping.core != byte.core) continue;
    bool relevant = is_compute(wj.op()) ? (prod && wj.mapping.slyr == prod->layer_index)
                                        : wj.mapping.clyr.contains(reader_layer);
    if (!relevant) continue;
    for (const Block& b : m_->step(j).writes)
      if (blocks_overlap(b, byte)) {
        return s + "; " + describe(j) + " writes it and ended only after this instruction started: a missing dependency?";
      }
  }
  return s;
}

void Runner::check_operands(size_t i) {
  const Check& c = checks_[i];
  const uint8_t* mem = m_->memory(Space::L2, c.out.core);
  const int64_t size = m_->memory_size(Space::L2);
  for (size_t k = 0; k < c.operands.size(); ++k) {
    const auto& [producer, pl] = c.operands[k];
    const Golden& gd = golden(producer);
    if (gd.elem != pl.elem)
      diverge(line(i) + ": " + describe(i) + " reads operand " + std::to_string(k) + " ('" + producer + "') as " +
              std::to_string(pl.elem) + "-byte elements; the golden has " + std::to_string(gd.elem));
    for (int64_t n = pl.lo[0]; n <= pl.hi[0]; ++n)
      for (int64_t h = pl.lo[2]; h <= pl.hi[2]; ++h)
        for (int64_t w = pl.lo[3]; w <= pl.hi[3]; ++w)
          for (int64_t ch = pl.lo[1]; ch <= pl.hi[1]; ++ch) {
            if (n >= gd.shape[0] || ch >= gd.shape[1] || h >= gd.shape[2] || w >= gd.shape[3])
              diverge(line(i) + ": the Scheduler IR tile of " + describe(i) + " reads " + coord_text(n, ch, h, w) +
                      " outside '" + producer + "'");
            int64_t addr = pl.address(n, ch, h, w);
            if (addr < 0 || addr + gd.elem > size) continue;  // reported by plan() as an address error
            ++r_.elements_checked;
            if (gd.matches(mem + addr, gd.index(n, ch, h, w))) continue;
            const uint8_t* want = gd.bytes.data() + gd.index(n, ch, h, w) * gd.elem;
            Block byte{Space::L2, c.out.core, addr, 1, 1, 1, 0, 0, 0, gd.elem};
            diverge("divergence in layer '" + c.layer->name + "': " + describe(i) + " reads operand " + std::to_string(k) +
                    " (the output of '" + producer + "') at " + coord_text(n, ch, h, w) + " = " + gd.value_text(mem + addr) +
                    " from L2 of core " + std::to_string(c.out.core) + " byte " + std::to_string(addr) + ", golden " +
                    gd.value_text(want) + writer_story(i, byte, producer));
          }
  }
}

void Runner::check_output(size_t i) {
  const Check& c = checks_[i];
  const Golden& gd = golden(c.layer->name);
  const uint8_t* mem = m_->memory(Space::L2, c.out.core);
  const int64_t size = m_->memory_size(Space::L2);
  const Placement& pl = c.out;
  if (gd.elem != pl.elem)
    diverge(line(i) + ": " + describe(i) + " writes " + std::to_string(pl.elem) + "-byte elements; the golden of '" +
            c.layer->name + "' has " + std::to_string(gd.elem));
  int64_t bad = 0;
  int64_t first[4] = {0, 0, 0, 0};
  for (int64_t n = pl.lo[0]; n <= pl.hi[0]; ++n)
    for (int64_t h = pl.lo[2]; h <= pl.hi[2]; ++h)
      for (int64_t w = pl.lo[3]; w <= pl.hi[3]; ++w)
        for (int64_t ch = pl.lo[1]; ch <= pl.hi[1]; ++ch) {
          if (n >= gd.shape[0] || ch >= gd.shape[1] || h >= gd.shape[2] || w >= gd.shape[3])
            diverge(line(i) + ": the Scheduler IR tile of " + describe(i) + " lies outside layer '" + c.layer->name + "'");
          int64_t addr = pl.address(n, ch, h, w);
          if (addr < 0 || addr + gd.elem > size) continue;  // an element the end of the L2 ring splits: not compared
          ++r_.elements_checked;
          if (gd.matches(mem + addr, gd.index(n, ch, h, w))) continue;
          if (bad++ == 0) first[0] = n, first[1] = ch, first[2] = h, first[3] = w;
        }
  if (bad == 0) return;
  int64_t addr = pl.address(first[0], first[1], first[2], first[3]);
  diverge("divergence in layer '" + c.layer->name + "' (" + c.layer->operation + "): " + describe(i) + " wrote " +
          coord_text(first[0], first[1], first[2], first[3]) + " = " + gd.value_text(mem + addr) + " (L2 of core " +
          std::to_string(pl.core) + " byte " + std::to_string(addr) + "), golden " +
          gd.value_text(gd.bytes.data() + gd.index(first[0], first[1], first[2], first[3]) * gd.elem) + "; " +
          std::to_string(bad) + " of its tile's elements differ while its operands matched the golden");
}

void Runner::note_writes(size_t i) {
  for (const Block& b : m_->step(i).writes) {
    if (b.empty()) continue;
    std::vector<int32_t>* v = nullptr;
    if (b.space == Space::L2) {
      v = &l2_writer_[size_t(b.core)];
      if (v->empty()) v->assign(size_t(m_->memory_size(Space::L2) / kGranule + 1), -1);
    } else if (b.space == Space::DramActivations) {
      v = &dram_writer_;
      if (v->empty()) v->assign(size_t(m_->memory_size(Space::DramActivations) / kGranule + 1), -1);
    } else {
      continue;
    }
    b.for_each([&](int64_t addr, int64_t, int64_t len) {
      for (int64_t g = addr / kGranule; g <= (addr + len - 1) / kGranule; ++g) (*v)[size_t(g)] = int32_t(i);
    });
  }
}

void Runner::capture(size_t i) {
  const Check& c = checks_[i];
  auto it = dumps_.find(c.layer->name);
  if (it == dumps_.end()) return;
  Golden& d = it->second.first;
  auto& seen = it->second.second;
  const uint8_t* mem = m_->memory(Space::L2, c.out.core);
  const Placement& pl = c.out;
  if (pl.elem != d.elem) return;
  for (int64_t n = pl.lo[0]; n <= pl.hi[0] && n < d.shape[0]; ++n)
    for (int64_t h = pl.lo[2]; h <= pl.hi[2] && h < d.shape[2]; ++h)
      for (int64_t w = pl.lo[3]; w <= pl.hi[3] && w < d.shape[3]; ++w)
        for (int64_t ch = pl.lo[1]; ch <= pl.hi[1] && ch < d.shape[1]; ++ch) {
          int64_t k = d.index(n, ch, h, w), addr = pl.address(n, ch, h, w);
          if (addr < 0 || addr + d.elem > m_->memory_size(Space::L2)) continue;  // split by the end of the L2 ring
          std::memcpy(d.bytes.data() + k * d.elem, mem + addr, size_t(d.elem));
          seen[size_t(k)] = true;
        }
}

interp::QTensor to_qtensor(const Golden& t, const fir::Shape& shape) {
  interp::QTensor q;
  q.shape = shape;
  const std::vector<uint8_t> bytes = box_order(t.bytes, shape, t.elem, true);
  if (t.elem == 1) {
    q.dtype = "int8";
    q.q.resize(bytes.size());
    std::memcpy(q.q.data(), bytes.data(), bytes.size());
  } else {
    q.dtype = "float16";
    q.f.resize(bytes.size() / 2);
    for (size_t k = 0; k < q.f.size(); ++k) {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * k, 2);
      q.f[k] = half_to_float(h);
    }
  }
  return q;
}

// Coordinates of element k of a tensor of any rank.
std::string index_text(int64_t k, const fir::Shape& shape) {
  std::vector<int64_t> c(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 0) c[d] = k % shape[d], k /= shape[d];
  }
  std::string s = "[";
  for (size_t d = 0; d < c.size(); ++d) s += (d ? ", " : "") + std::to_string(c[d]);
  return s + "]";
}

std::string element_text(const interp::QTensor& t, int64_t k) {
  if (t.is_int8()) return std::to_string(int(t.q[size_t(k)]));
  std::ostringstream s;
  s << t.f[size_t(k)];
  return s.str();
}

// The first element where two tensors of one dtype and shape differ (float
// values compared by their bits), or -1.
int64_t first_difference(const interp::QTensor& a, const interp::QTensor& b) {
  for (int64_t k = 0; k < a.numel(); ++k) {
    bool same = a.is_int8() ? a.q[size_t(k)] == b.q[size_t(k)]
                            : std::memcmp(&a.f[size_t(k)], &b.f[size_t(k)], sizeof(float)) == 0;
    if (!same) return k;
  }
  return -1;
}

// The host's share of the network: the cpu layers whose results reach a graph
// output, directly or through other host layers. They run after the program,
// on the reference interpreter (the code that made the goldens), reading the
// accelerator layers' outputs where the program stored them in DRAM, as the
// host would. What the chain cannot do is refused here, before the run.
void Runner::plan_host(const assembler::DramLayout& layout) {
  const std::vector<const fir::Layer*> order = g_.in_index_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const fir::Layer& l = **it;
    if (l.device != fir::Device::Cpu) continue;
    bool runs = false;
    for (const auto& n : l.next_layer) runs = runs || fir::is_graph_output_name(n) || host_.count(n) > 0;
    if (runs) host_.insert(l.name);
  }
  // The accelerator reads host layers as irgen does: through pass-through
  // reshapes, and a host step's result from DRAM, where the step (a ct_hw of
  // the program, "-1"/host of the Scheduler IR) wrote it.
  plan_ = fir::host_plan(g_, o_.fir_file);
  if (s_.dram.host)
    for (const auto& h : *s_.dram.host) steps_[h.transfer_id] = &h;
  std::set<std::string> in_steps;
  for (const auto& [tag, h] : steps_) in_steps.insert(h->layers.begin(), h->layers.end());
  if (g_.host_graph() && !in_steps.count(std::string(fir::kHostGraphKey)))
    throw_input_error(o_.sir_file + ": the Frontend IR has a host graph, but no host step of the Scheduler IR (\"-1\"/host) "
                      "runs it (\"" + std::string(fir::kHostGraphKey) + "\" among its layers)");
  for (const fir::Layer* l : order) {
    if (l->device != fir::Device::Npu) continue;
    for (const auto& name : l->previous_layer) {
      const std::string src = fir::resolve_through(g_, plan_, name);
      const fir::Layer* p = g_.find(src);
      if (p && p->device == fir::Device::Cpu && !in_steps.count(src))
        throw_input_error(o_.sir_file + ": layer '" + l->name + "' (" + l->operation +
                          ", on the accelerator) reads the result of host layer '" + p->name + "' (" + p->operation +
                          "), but no host step of the Scheduler IR (\"-1\"/host) computes it");
    }
  }
  // What the host reads from DRAM: accelerator outputs feeding host steps, host layers or graph outputs.
  for (const auto& [tag, h] : steps_)
    for (const auto& name : h->layers)
      if (const fir::Layer* l = g_.find(name))
        for (const auto& q : l->previous_layer) {
          const fir::Layer* p = g_.find(fir::resolve_through(g_, plan_, q));
          if (p && p->device == fir::Device::Npu)
            host_reads_.emplace(p->name, "host layer '" + l->name + "' (" + l->operation + ")");
        }
  for (const fir::Layer* l : order) {
    if (host_.count(l->name)) {
      for (const auto& name : l->previous_layer) {
        const fir::Layer* p = g_.find(name);
        if (p && p->device == fir::Device::Npu)
          host_reads_.emplace(p->name, "host layer '" + l->name + "' (" + l->operation + ")");
      }
    } else if (l->device == fir::Device::Npu) {
      for (const auto& n : l->next_layer)
        if (fir::is_graph_output_name(n)) host_reads_.emplace(l->name, n);
    }
  }
  for (const auto& [name, who] : host_reads_) {
    bool stored = false;
    for (const auto& r : layout.stores) stored = stored || r.layer == name;
    if (!stored)
      throw_input_error(o_.sir_file + ": layer '" + name + "' feeds " + who +
                        ", but the program never stores it to DRAM, where the host reads it (irgen stores a layer's "
                        "output when it is a graph output or no accelerator layer reads it)");
  }
}

// An accelerator layer's output as the program stored it in DRAM.
interp::QTensor Runner::stored_output(const assembler::DramLayout& layout, const fir::Layer& l) const {
  if (l.output_shape.empty() || l.output_dtype.empty()) throw_input_error("layer '" + l.name + "' has no output shape or dtype");
  const uint8_t* dram = m_->memory(Space::DramActivations, 0);
  Golden t;
  t.shape = as4(l.output_shape[0]);
  t.elem = l.output_dtype[0] == "int8" ? 1 : 2;
  t.bytes.assign(size_t(t.shape[0] * t.shape[1] * t.shape[2] * t.shape[3] * t.elem), 0);
  std::vector<bool> seen(t.bytes.size() / size_t(t.elem), false);
  for (const auto& r : layout.stores) {
    if (r.layer != l.name) continue;
    if (r.element_bytes != t.elem) throw_input_error("layer '" + l.name + "' is stored with a different element size");
    auto d = r.dims();
    for (int64_t n = 0; n < d[0]; ++n)
      for (int64_t h = 0; h < d[2]; ++h)
        for (int64_t w = 0; w < d[3]; ++w)
          for (int64_t c = 0; c < d[1]; ++c) {
            int64_t N = r.lower[0] + n, C = r.lower[1] + c, H = r.lower[2] + h, W = r.lower[3] + w;
            if (N >= t.shape[0] || C >= t.shape[1] || H >= t.shape[2] || W >= t.shape[3]) continue;
            int64_t k = t.index(N, C, H, W);
            std::memcpy(t.bytes.data() + k * t.elem, dram + r.address + (((n * d[2] + h) * d[3] + w) * d[1] + c) * t.elem,
                        size_t(t.elem));
            seen[size_t(k)] = true;
          }
  }
  if (std::find(seen.begin(), seen.end(), false) != seen.end()) {
    auto who = host_reads_.find(l.name);
    throw_input_error("the program does not store all of layer '" + l.name + "' (read by " +
                      (who == host_reads_.end() ? std::string("the host") : who->second) + ") to DRAM; the Scheduler IR " +
                      o_.sir_file + " has no store for part of it");
  }
  interp::QTensor q = to_qtensor(t, l.output_shape[0]);
  // The chip stores floating point as float16; a float32 output gets those values, widened.
  if (!q.is_int8() && l.output_dtype[0] == "float32") q.dtype = "float32";
  return q;
}

interp::QTensor Runner::host_golden(const fir::Layer& l) const {
  const std::string* f = l.file("output_activation1");
  if (!f) throw_input_error("golden: layer '" + l.name + "' has no output_activation1 in its file_list");
  std::string path = (std::filesystem::path(o_.golden_dir) / *f).string();
  if (!std::filesystem::exists(path)) throw Error(kExitIo, path + ": no such file (golden output of layer '" + l.name + "')");
  return interp::QTensor::from_npy(read_npy(path), path);
}

// A host layer's accelerator operands (as stored in DRAM) and its result
// against the goldens; its host operands were checked as results before.
void Runner::check_host(const fir::Layer& l, const std::vector<const interp::QTensor*>& in, const interp::QTensor& out) {
  auto compare = [&](const interp::QTensor& got, const fir::Layer& of, const std::string& what) {
    interp::QTensor want = host_golden(of);
    if (got.dtype != want.dtype || got.shape != want.shape)
      diverge("host layer '" + l.name + "' (" + l.operation + "): " + what + " is " + got.dtype + " " +
              interp::shape_str(got.shape) + ", the golden of '" + of.name + "' " + want.dtype + " " +
              interp::shape_str(want.shape));
    r_.elements_checked += got.numel();
    int64_t k = first_difference(got, want);
    if (k >= 0)
      diverge("divergence at host layer '" + l.name + "' (" + l.operation + ", run by the reference interpreter): " + what +
              " has " + index_text(k, got.shape) + " = " + element_text(got, k) + ", golden " + element_text(want, k));
  };
  for (size_t i = 0; i < in.size() && i < l.previous_layer.size(); ++i) {
    const fir::Layer* p = g_.find(l.previous_layer[i]);
    if (p && p->device == fir::Device::Npu)
      compare(*in[i], *p, "its input " + std::to_string(i + 1) + ", the output of '" + p->name + "' as the program stored it in DRAM,");
  }
  compare(out, l, "its result");
  ++r_.host_layers_checked;
}

void Runner::run_host(const assembler::DramLayout& layout, const NpyLoader& weights, const std::vector<NpyArray>& inputs) {
  // The host layers not computed by a host step during the program.
  interp::FirExecutor exec(g_, weights,
                           [&](const fir::Layer& l) { return host_.count(l.name) > 0 && !host_results_.count(l.name); });
  std::vector<interp::Tensor> xs;
  for (const auto& a : inputs) xs.push_back(interp::Tensor::floats(a.shape, a.to_float()));
  auto results = exec.run(
      xs,
      [&](const fir::Layer& l, const std::vector<const interp::QTensor*>& in, const interp::QTensor& out) {
        r_.host_layers.push_back(l.name);
        if (golden_on_) check_host(l, in, out);
        if (dumps_.count(l.name)) host_dumps_[l.name] = out;
      },
      [&](const fir::Layer& l) { return host_input(layout, l); });
  std::set<int> indices;
  for (const auto& l : g_.layers())
    for (const auto& n : l.next_layer)
      if (fir::is_graph_output_name(n)) indices.insert(std::stoi(n.substr(6)));
  for (int index : indices)
    if (index >= 1 && size_t(index) <= results.size())
      r_.outputs.push_back({"output" + std::to_string(index), results[size_t(index) - 1]});
}

// What the host reads of a layer it does not compute: a host step's result,
// or an accelerator output where the program stored it.
interp::QTensor Runner::host_input(const assembler::DramLayout& layout, const fir::Layer& l) const {
  if (auto it = host_results_.find(l.name); it != host_results_.end()) return it->second;
  if (l.device == fir::Device::Npu) return stored_output(layout, l);
  throw_input_error("host layer '" + l.name + "' (" + l.operation + ") is read before any host step computed it");
}

// Host step `tag` (at its first ct_hw): the reference interpreter runs its
// layers (and the pass-through reshapes they read) on what the program
// stored, and the results go where the program loads them from.
void Runner::run_step(int64_t tag, const assembler::DramLayout& layout, const NpyLoader& weights,
                      const std::vector<NpyArray>& inputs) {
  auto st = steps_.find(tag);
  if (st == steps_.end())
    throw_input_error(o_.sir_file + ": the program waits for host step " + std::to_string(tag) +
                      ", which the Scheduler IR (\"-1\"/host) does not describe");
  std::set<std::string> sel(st->second->layers.begin(), st->second->layers.end());
  const bool graph = sel.erase(std::string(fir::kHostGraphKey)) > 0;
  if (graph && !host_graph_)
    throw_input_error(o_.sir_file + ": host step " + std::to_string(tag) + " runs the host graph, which the Frontend IR lacks");
  if (!sel.empty()) run_step_layers(sel, layout, weights, inputs);
  if (graph) run_host_graph(layout);
  write_step_results(tag, layout);
}

// A host step's FIR layers (and the pass-through reshapes they read).
void Runner::run_step_layers(std::set<std::string> sel, const assembler::DramLayout& layout, const NpyLoader& weights,
                             const std::vector<NpyArray>& inputs) {
  std::vector<std::string> todo(sel.begin(), sel.end());
  while (!todo.empty()) {
    const std::string todo_name = todo.back();
    const fir::Layer* l = g_.find(todo_name);
    todo.pop_back();
    if (!l) throw_input_error(o_.sir_file + ": a host step names '" + todo_name + "', a layer the Frontend IR lacks");
    for (const auto& p : l->previous_layer)
      if (plan_.is_pass_through(p) && sel.insert(p).second) todo.push_back(p);
  }
  std::set<std::string> wanted;  // what the step reads of other layers
  for (const auto& name : sel)
    for (const auto& p : g_.find(name)->previous_layer)
      if (!sel.count(p)) wanted.insert(p);
  interp::FirExecutor exec(g_, weights, [&](const fir::Layer& l) { return sel.count(l.name) > 0; });
  std::vector<interp::Tensor> xs;
  for (const auto& a : inputs) xs.push_back(interp::Tensor::floats(a.shape, a.to_float()));
  exec.run(
      xs,
      [&](const fir::Layer& l, const std::vector<const interp::QTensor*>& in, const interp::QTensor& out) {
        r_.host_layers.push_back(l.name);
        host_results_[l.name] = out;
        if (golden_on_) check_host(l, in, out);
        if (dumps_.count(l.name)) host_dumps_[l.name] = out;
      },
      [&](const fir::Layer& l) {
        if (wanted.count(l.name)) return host_input(layout, l);
        // A graph output the step does not read (the executor asks for all of them).
        interp::QTensor z;
        z.shape = l.output_shape.empty() ? fir::Shape{} : l.output_shape[0];
        z.dtype = l.output_dtype.empty() ? "int8" : l.output_dtype[0];
        int64_t n = 1;
        for (int64_t d : z.shape) n *= d;
        if (z.is_int8()) z.q.assign(size_t(n), 0);
        else z.f.assign(size_t(n), 0.0f);
        return z;
      });
}

// A host step's results, where the program loads them: NHWC, as the chip holds them.
void Runner::write_step_results(int64_t tag, const assembler::DramLayout& layout) {
  for (const auto& r : layout.inputs) {
    if (r.host_step != tag) continue;
    auto res = host_results_.find(r.source);
    if (res == host_results_.end())
      throw_input_error(o_.sir_file + ": load " + std::to_string(r.transfer_id) + " reads '" + r.source +
                        "', which host step " + std::to_string(tag) + " does not compute");
    const interp::QTensor& t = res->second;
    const fir::Shape S = as4(t.shape);
    const int64_t elem = t.is_int8() ? 1 : 2;
    if (elem != r.element_bytes)
      throw_input_error(o_.sir_file + ": load " + std::to_string(r.transfer_id) + " reads '" + r.source + "' as " +
                        std::to_string(r.element_bytes) + "-byte elements, but it is " + t.dtype);
    auto d = r.dims();
    for (int q = 0; q < 4; ++q)
      if (r.lower[q] < 0 || r.upper[q] >= S[size_t(q)])
        throw_input_error(o_.sir_file + ": load " + std::to_string(r.transfer_id) + " reads outside '" + r.source + "'");
    std::vector<uint8_t> bytes(size_t(r.bytes()));
    for (int64_t n = 0; n < d[0]; ++n)
      for (int64_t h = 0; h < d[2]; ++h)
        for (int64_t w = 0; w < d[3]; ++w)
          for (int64_t c = 0; c < d[1]; ++c) {
            // The box [N, C, H, W]'s element in the result, held in the FIR's
            // row-major order (another for a token tensor, [N, T, D] as [N, D, T, 1]).
            const int64_t k = fir::fir_index(
                t.shape, (((r.lower[0] + n) * S[1] + r.lower[1] + c) * S[2] + r.lower[2] + h) * S[3] + r.lower[3] + w);
            uint8_t* o = bytes.data() + (((n * d[2] + h) * d[3] + w) * d[1] + c) * elem;
            if (elem == 1) {
              *o = uint8_t(t.q[size_t(k)]);
            } else {
              uint16_t hb = float_to_half(int8::to_float16(t.f[size_t(k)]));
              std::memcpy(o, &hb, 2);
            }
          }
    m_->write_dram(r.address, bytes);
  }
}

// The host graph, in its step: on the FIR outputs it reads, as the program
// stored them (or the host computed them); each output against its golden.
void Runner::run_host_graph(const assembler::DramLayout& layout) {
  auto outputs = host_graph_->run([&](const fir::Layer& l, const std::string&) {
    const std::string src = fir::resolve_through(g_, plan_, l.name);  // a pass-through reshape reads its input
    const fir::Layer* p = g_.find(src);
    if (!p) throw_input_error(o_.fir_file + ": the host graph reads '" + l.name + "', which no layer computes");
    interp::QTensor t = host_input(layout, *p);
    t.shape = l.output_shape.at(0);
    return t;
  });
  const fir::HostGraph& hg = *g_.host_graph();
  for (size_t k = 0; k < outputs.size(); ++k) {
    const fir::HostOutput& o = hg.outputs[k];
    const std::string what = "the host graph's output " + std::to_string(k + 1) + " '" + o.name + "'";
    NpyArray got = interp::tensor_to_npy(outputs[k], what);
    if (golden_on_) {
      const std::string path = (std::filesystem::path(o_.golden_dir) / o.file).string();
      if (!std::filesystem::exists(path)) throw Error(kExitIo, path + ": no such file (golden of " + what + ")");
      const NpyArray want = read_npy(path);
      const interp::Tensor g = outputs[k], w = interp::tensor_from_npy(want);
      if (got.type != want.type || got.shape != want.shape)
        diverge("divergence at " + what + " (run by the reference interpreter): it is " +
                std::string(interp::dtype_name(g.dtype)) + " " + interp::shape_str(got.shape) + ", the golden " + path +
                " " + std::string(interp::dtype_name(w.dtype)) + " " + interp::shape_str(want.shape));
      r_.elements_checked += int64_t(got.count());
      if (got.bytes != want.bytes) {
        size_t e = 0;
        const size_t item = got.item_size();
        while (std::memcmp(got.bytes.data() + e * item, want.bytes.data() + e * item, item) == 0) ++e;
        diverge("divergence at " + what + " (run by the reference interpreter): element " + std::to_string(e) + " is " +
                std::to_string(g.at_double(int64_t(e))) + ", golden " + std::to_string(w.at_double(int64_t(e))));
      }
      ++r_.host_graph_outputs_checked;
    }
    r_.host_graph_outputs.push_back({std::filesystem::path(o.file).stem().string(), std::move(got)});
  }
}

Result Runner::run(const NpyLoader& weights, const std::vector<NpyArray>& inputs) {
  if (t_.size() != p_.size()) throw Error(kExitInternal, "functional run: one timing per instruction expected");
  assembler::Options ao;
  ao.sir_file = o_.sir_file;
  ao.fir_file = o_.fir_file;
  assembler::DramLayout layout = assembler::layout_dram(s_, g_, ao);
  plan_host(layout);
  // Before the run: a host graph the interpreter cannot run is refused.
  if (g_.host_graph()) host_graph_ = std::make_unique<interp::HostGraphRunner>(g_, weights, o_.fir_file);
  DramImage img = build_dram_image(layout, g_, a_, weights, inputs);
  m_ = std::make_unique<Machine>(a_, p_, o_.program_file, std::move(img.weights), std::move(img.activations));
  m_->plan();
  check_host_order(layout);
  golden_on_ = !o_.golden_dir.empty();
  const bool need_checks = golden_on_ || !o_.dump_layers.empty();
  if (need_checks) build_checks();
  if (golden_on_) {
    for (const auto& x : inputs) graph_inputs_.push_back(golden_of(x, "input"));
    l2_writer_.resize(size_t(a_.core_count()));
  }
  for (const auto& name : o_.dump_layers) {
    const fir::Layer* l = g_.find(name);
    if (!l) throw_usage_error("--dump-layer: no layer '" + name + "' in the Frontend IR");
    if (l->output_shape.empty() || l->output_dtype.empty()) throw_input_error("layer '" + name + "' has no output shape");
    Golden d;
    d.shape = as4(l->output_shape[0]);
    d.elem = l->output_dtype[0] == "int8" ? 1 : 2;
    d.bytes.assign(size_t(d.shape[0] * d.shape[1] * d.shape[2] * d.shape[3] * d.elem), 0);
    size_t elements = d.bytes.size() / size_t(d.elem);
    dumps_[name] = {std::move(d), std::vector<bool>(elements, false)};
  }

  // Events: ends before starts at the same cycle; starts in dependency order.
  std::vector<size_t> rank = dependency_order();
  struct Event {
    int64_t time;
    int phase;  // 0 end, 1 start
    size_t rank, index;
  };
  std::vector<Event> events;
  events.reserve(2 * p_.size());
  for (size_t i = 0; i < p_.size(); ++i) {
    if (p_.instructions[i].is_config()) continue;
    events.push_back({t_[i].start, 1, rank[i], i});
    if (t_[i].end > t_[i].start) events.push_back({t_[i].end, 0, rank[i], i});
  }
  std::sort(events.begin(), events.end(), [](const Event& x, const Event& y) {
    if (x.time != y.time) return x.time < y.time;
    if (x.phase != y.phase) return x.phase < y.phase;
    return x.rank < y.rank;
  });
  std::vector<size_t> active;
  auto finish = [&](size_t i) {
    m_->finish(i);
    if (golden_on_) note_writes(i);
    if (!checks_.empty() && checks_[i].layer) {
      if (golden_on_) check_output(i);
      capture(i);
      if (--remaining_[checks_[i].layer->name] == 0 && golden_on_) ++r_.layers_checked;
    }
  };
  for (const Event& e : events) {
    const size_t i = e.index;
    if (e.phase == 0) {
      active.erase(std::find(active.begin(), active.end(), i));
      finish(i);
      continue;
    }
    if (p_.instructions[i].op() == Opcode::ct_hw && !steps_run_.count(p_.instructions[i].get(Param::TAG))) {
      steps_run_.insert(p_.instructions[i].get(Param::TAG));
      run_step(p_.instructions[i].get(Param::TAG), layout, weights, inputs);
    }
    if (o_.check_races) check_race(i, active);
    if (golden_on_ && checks_[i].layer) check_operands(i);
    m_->start(i);
    if (t_[i].end > t_[i].start) active.push_back(i);
    else finish(i);
  }
  r_.macs = m_->macs_done();
  run_host(layout, weights, inputs);
  for (const auto& name : o_.dump_layers) {
    if (auto h = host_dumps_.find(name); h != host_dumps_.end()) {
      r_.dumps.push_back({name, h->second});
      continue;
    }
    const auto& [d, seen] = dumps_.at(name);
    if (std::find(seen.begin(), seen.end(), false) != seen.end() && !seen.empty())
      throw_input_error("--dump-layer " + name + ": the program does not compute all of its output");
    r_.dumps.push_back({name, to_qtensor(d, g_.find(name)->output_shape[0])});
  }
  return std::move(r_);
}

}  // namespace

Result run(const isa::Program& program, const std::vector<trace::Timing>& timing, const arch::Architecture& a,
           const fir::Graph& g, const sir::Schedule& s, const NpyLoader& weights, const std::vector<NpyArray>& inputs,
           const Options& o) {
  Runner r(program, timing, a, g, s, o);
  return r.run(weights, inputs);
}

}  // namespace cct::func
