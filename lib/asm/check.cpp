// asm --check: static verification of a program against an architecture.
#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <string>

#include "asm/asm.hpp"

namespace cct::assembler {
namespace {

using isa::Instruction;
using isa::Opcode;
using isa::Param;
using isa::Queue;


class Checker {
 public:
  Checker(const isa::Program& p, const arch::Architecture& a, size_t max) : prog_(p), arch_(a), max_(max) {}

  isa::CheckReport run() {
    // Deadlocks and leftover tokens: the untimed run of lib/isa.
    report_ = isa::check_program(prog_, max_);
    pair_tokens();
    for (size_t i = 0; i < prog_.size(); ++i) check_instruction(i);
    std::stable_sort(report_.diagnostics.begin(), report_.diagnostics.end(),
                     [](const isa::Diagnostic& a, const isa::Diagnostic& b) { return a.index < b.index; });
    return std::move(report_);
  }

 private:
  void add(bool error, size_t index, std::string msg) {
    if (report_.diagnostics.size() < max_) report_.diagnostics.push_back({error, index, std::move(msg)});
  }
  static std::string line_of(size_t i) { return "line " + std::to_string(i + 1); }

  // FIFO pairing of pushes and pops per core and queue pair: every pop must
  // take a token pushed earlier in the program.
  void pair_tokens() {
    constexpr int kQ = isa::kQueueCount;
    struct Fifo {
      std::vector<size_t> pushes;
      size_t popped = 0;
    };
    std::map<int32_t, std::array<std::array<Fifo, kQ>, kQ>> cores;
    // Pushes are recorded in program order, so the k-th pop takes the k-th push.
    for (size_t i = 0; i < prog_.size(); ++i) {
      const Instruction& in = prog_.instructions[i];
      auto& c = cores[in.mapping.core];
      for (Queue y : in.next) c[static_cast<int>(in.queue())][static_cast<int>(y)].pushes.push_back(i);
    }
    for (size_t i = 0; i < prog_.size(); ++i) {
      const Instruction& in = prog_.instructions[i];
      auto& c = cores[in.mapping.core];
      for (Queue x : in.prev) {
        Fifo& f = c[static_cast<int>(x)][static_cast<int>(in.queue())];
        std::string pair = std::string(isa::queue_name(x)) + "->" + std::string(isa::queue_name(in.queue()));
        if (f.popped >= f.pushes.size()) {
          std::string last = f.pushes.empty() ? "no instruction pushes one"
                                              : "the last push is at " + line_of(f.pushes.back()) + " and is taken";
          add(true, i, std::string(in.mnemonic()) + " pops a " + pair + " token without a matching push (" + last + ")");
        } else {
          size_t p = f.pushes[f.popped];
          if (p > i)
            add(true, i, std::string(in.mnemonic()) + " pops the " + pair + " token pushed at " + line_of(p) +
                             ", which comes after it");
        }
        ++f.popped;
      }
    }
  }

  // Configuration registers in force, per core.
  struct State {
    std::array<std::optional<Instruction>, isa::kOpcodeCount> cfg;
  };

  const Instruction* cfg(int32_t core, Opcode op) {
    auto& s = state_[core].cfg[static_cast<int>(op)];
    return s ? &*s : nullptr;
  }

  int64_t bytes_of(const Instruction& c) {
    return c.get_enum<isa::DataFmt>(Param::DF) == isa::DataFmt::FP16 ? 2 : 1;
  }

  void range(size_t i, const char* what, int64_t lo, int64_t hi, int64_t limit, const char* space) {
    if (lo < 0 || hi > limit)
      add(true, i, std::string(prog_.instructions[i].mnemonic()) + ": " + what + " [" + std::to_string(lo) + ", " +
                       std::to_string(hi) + ") is outside " + space + " (" + std::to_string(limit) + ")");
  }

  void need(size_t i, const Instruction* c, Opcode op) {
    if (!c)
      add(true, i, std::string(prog_.instructions[i].mnemonic()) + " runs before any " + std::string(isa::mnemonic(op)));
  }

  void within(size_t i, const char* what, std::span<const int32_t> tile, std::span<const int32_t> cfgdims,
              const char* cfgname) {
    for (size_t k = 0; k < tile.size() && k < cfgdims.size(); ++k)
      if (tile[k] <= 0 || tile[k] > cfgdims[k]) {
        add(true, i, std::string(prog_.instructions[i].mnemonic()) + ": " + what + " does not fit " + cfgname);
        return;
      }
  }

  void check_instruction(size_t i) {
    const Instruction& in = prog_.instructions[i];
    const int32_t core = in.mapping.core;
    const int64_t l2 = arch_.core.l2_bytes;
    // WL0 sizes of the architecture are counted in the address unit of the
    // instruction set, as the reference schedules use them.
    const int64_t wl0 = arch_.core.wl0_rows;
    const int64_t align = std::max<int64_t>(1, arch_.core.l2_channel_align_bytes);
    const int64_t extra = arch_.core.weight_extra_bytes_per_out_channel;
    if (in.mapping.core != 0 && !arch_.valid_core(in.mapping.core))
      add(true, i, std::string(in.mnemonic()) + " runs on core " + std::to_string(core) + ", which " + arch_.name +
                       " does not have");
    if (in.is_config()) {
      state_[core].cfg[static_cast<int>(in.op())] = in;
      return;
    }
    auto wbytes = [&](std::span<const int32_t> w) {
      int64_t c = (w[1] + align - 1) / align * align;
      return int64_t(w[0]) * (c * w[2] * w[3] + extra);
    };
    switch (in.op()) {
      case Opcode::lda_mov: {
        const Instruction* c = cfg(core, Opcode::lda_cfg);
        need(i, c, Opcode::lda_cfg);
        auto t = in.list(Param::Tile);
        int64_t b = c ? bytes_of(*c) : 1;
        range(i, "destination", in.get(Param::DTaddr), in.get(Param::DTaddr) + int64_t(t[0]) * t[1] * t[2] * t[3] * b, l2,
              "L2");
        if (in.get(Param::STaddr) < 0) add(true, i, "lda_mov: negative DRAM address");
        if (c) within(i, "Tile", t.subspan(1), c->list(Param::DTile), "lda_cfg DTile");
        break;
      }
      case Opcode::sta_mov: {
        const Instruction* c = cfg(core, Opcode::sta_cfg);
        need(i, c, Opcode::sta_cfg);
        auto t = in.list(Param::Tile);
        int64_t b = c ? bytes_of(*c) : 1;
        range(i, "source", in.get(Param::STaddr), in.get(Param::STaddr) + int64_t(t[0]) * t[1] * t[2] * t[3] * b, l2, "L2");
        if (in.get(Param::DTaddr) < 0) add(true, i, "sta_mov: negative DRAM address");
        if (c) within(i, "Tile", t.subspan(1), c->list(Param::STile), "sta_cfg STile");
        break;
      }
      case Opcode::ldw_mov: {
        const Instruction* c = cfg(core, Opcode::ldw_cfg);
        need(i, c, Opcode::ldw_cfg);
        auto w = in.list(Param::Wsize);
        range(i, "destination", in.get(Param::DTaddr), in.get(Param::DTaddr) + wbytes(w), l2, "L2");
        if (in.get(Param::STaddr) < 0) add(true, i, "ldw_mov: negative DRAM address");
        if (c && !std::equal(w.begin() + 1, w.end(), c->list(Param::SWsize).begin()))
          add(true, i, "ldw_mov: Wsize does not match ldw_cfg SWsize");
        break;
      }
      case Opcode::lw_mov: {
        const Instruction* c = cfg(core, Opcode::lw_cfg);
        need(i, c, Opcode::lw_cfg);
        auto w = in.list(Param::Wsize);
        int64_t rows = (wbytes(w) + arch_.core.wl0_row_bytes - 1) / arch_.core.wl0_row_bytes;
        range(i, "WL0 destination", in.get(Param::DTaddr), in.get(Param::DTaddr) + rows, wl0, "WL0");
        if (in.get(Param::SS) == 0) range(i, "source", in.get(Param::STaddr), in.get(Param::STaddr) + wbytes(w), l2, "L2");
        else if (in.get(Param::STaddr) < 0) add(true, i, "lw_mov: negative DRAM address");
        if (c && !std::equal(w.begin() + 1, w.end(), c->list(Param::SWsize).begin()))
          add(true, i, "lw_mov: Wsize does not match lw_cfg SWsize");
        break;
      }
      case Opcode::pe_conv: {
        const Instruction* fm = cfg(core, Opcode::pe_cfg_fm);
        const Instruction* tp = cfg(core, Opcode::pe_cfg_tp);
        need(i, fm, Opcode::pe_cfg_fm);
        need(i, tp, Opcode::pe_cfg_tp);
        need(i, cfg(core, Opcode::pe_cfg_pm), Opcode::pe_cfg_pm);
        if (!fm || !tp) break;
        auto tile = tp->list(Param::Tile);  // N, K, C, H, W
        auto st = fm->list(Param::STile);
        auto dt = fm->list(Param::DTile);
        const int32_t kd[3] = {tile[1], tile[3], tile[4]};
        within(i, "Tile [K, H, W]", kd, dt, "pe_cfg_fm DTile");
        if (tile[2] <= 0 || tile[2] > st[0]) add(true, i, "pe_conv: Tile C does not fit pe_cfg_fm STile");
        int64_t ob = fm->get_enum<isa::DataFmt>(Param::DF) == isa::DataFmt::FP16 ? 2 : 1;
        int64_t d0 = in.get(Param::DTaddr);
        range(i, "destination", d0, d0 + int64_t(tile[0]) * tile[1] * tile[3] * tile[4] * ob, l2, "L2");
        // The source window may start inside the padding above and left of the tensor.
        int64_t s0 = in.get(Param::STaddr);
        int64_t sb = fm->get_enum<isa::DataFmt>(Param::SF) == isa::DataFmt::FP16 ? 2 : 1;
        int64_t pixel = (int64_t(st[0]) * sb + align - 1) / align * align;  // bytes per pixel, channels padded
        int64_t pad = (-in.get(Param::SPHI) * int64_t(st[2]) - in.get(Param::SPWI)) * pixel;
        range(i, "source origin", s0 + pad, s0 + pad, l2, "L2");
        if (in.get(Param::SWaddr) < 0 || in.get(Param::SWaddr) >= wl0)
          add(true, i, "pe_conv: SWaddr " + std::to_string(in.get(Param::SWaddr)) + " is outside WL0");
        break;
      }
      case Opcode::vp_self:
      case Opcode::vp_pool: {
        const Instruction* fm = cfg(core, Opcode::vp_cfg_fm);
        const Instruction* tp = cfg(core, Opcode::vp_cfg_tp);
        need(i, fm, Opcode::vp_cfg_fm);
        need(i, tp, Opcode::vp_cfg_tp);
        if (fm && tp) within(i, "Tile", tp->list(Param::Tile), fm->list(Param::DTile), "vp_cfg_fm DTile");
        int64_t d0 = in.get(Param::DTaddr);
        range(i, "destination", d0, d0, l2, "L2");
        if (in.op() == Opcode::vp_self) {
          range(i, "source", in.get(Param::STaddr), in.get(Param::STaddr), l2, "L2");
          range(i, "second source", in.get(Param::STaddr1), in.get(Param::STaddr1), l2, "L2");
        }
        break;
      }
      case Opcode::dt_cal: {
        const Instruction* c = cfg(core, Opcode::dt_cfg);
        need(i, c, Opcode::dt_cfg);
        auto t = in.list(Param::Tile);
        int64_t b = c ? bytes_of(*c) : 1;
        int64_t n = int64_t(t[0]) * t[1] * t[2] * t[3] * b;
        range(i, "source", in.get(Param::STaddr), in.get(Param::STaddr) + n, l2, "L2");
        range(i, "destination", in.get(Param::DTaddr), in.get(Param::DTaddr) + n, l2, "L2");
        break;
      }
      case Opcode::so_mov:
      case Opcode::si_mov: {
        bool send = in.op() == Opcode::so_mov;
        const Instruction* c = cfg(core, send ? Opcode::so_cfg : Opcode::si_cfg);
        need(i, c, send ? Opcode::so_cfg : Opcode::si_cfg);
        auto t = in.list(Param::Tile);
        int64_t b = c ? bytes_of(*c) : 1;
        int64_t a = in.get(send ? Param::STaddr : Param::DTaddr);
        range(i, send ? "source" : "destination", a, a + int64_t(t[0]) * t[1] * t[2] * t[3] * b, l2, "L2");
        break;
      }
      default: break;
    }
  }

  const isa::Program& prog_;
  const arch::Architecture& arch_;
  size_t max_;
  isa::CheckReport report_;
  std::map<int32_t, State> state_;
};

}  // namespace

isa::CheckReport check(const isa::Program& program, const arch::Architecture& arch, size_t max_diagnostics) {
  return Checker(program, arch, max_diagnostics).run();
}

}  // namespace cct::assembler
