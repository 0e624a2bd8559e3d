// The functional model of the chip: the memories of every core (L2, WL0),
// the DRAM image, and what each instruction does to them, bit for bit.
//
// An instruction is carried out in two halves, so that a run ordered by the
// timing model behaves as the hardware would: start() reads its operands and
// computes its result, finish() writes the result. The arithmetic is the one
// of interp/int8_ops.hpp (the quantized FIR interpreter uses the same
// functions). Configuration instructions (*_cfg*) are resolved statically:
// each operation uses the latest configuration of its core before it in
// program order, as the in-order queues guarantee.
//
// plan() computes, for every instruction and without touching data, the
// memory blocks it reads and writes, and checks them against the memories:
// an address outside L2/WL0/DRAM, a tile that does not fit its configured
// tensor, an operation without its configuration or with parameters the
// model does not implement is an Error naming the program line.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "arch/arch.hpp"
#include "func/layout.hpp"
#include "isa/program.hpp"

namespace cct::func {

enum class Space : uint8_t { L2, Wl0, DramWeights, DramActivations };
std::string_view space_name(Space s);  // "L2", "WL0", "DRAM (weights)", "DRAM (activations)"

// A grid of n x h x w pixels in one memory, `bytes` contiguous bytes each,
// pixel (a, b, c) at base + a*sn + b*sh + c*sw. Data moved for a block is
// ordered pixel by pixel in that order.
struct Block {
  Space space = Space::L2;
  int32_t core = 0;  // L2 / WL0: the core; DRAM: 0
  int64_t base = 0;
  int64_t n = 1, h = 1, w = 1;
  int64_t sn = 0, sh = 0, sw = 0;
  int64_t bytes = 0;

  int64_t pixels() const { return n * h * w; }
  int64_t size() const { return pixels() * bytes; }
  int64_t lo() const { return base; }  // strides are never negative
  int64_t hi() const { return base + (n - 1) * sn + (h - 1) * sh + (w - 1) * sw + bytes; }
  bool empty() const { return n <= 0 || h <= 0 || w <= 0 || bytes <= 0; }
  // Calls f(address, offset_in_data) for every pixel.
  template <class F>
  void for_each(F&& f) const {
    int64_t off = 0;
    for (int64_t a = 0; a < n; ++a)
      for (int64_t b = 0; b < h; ++b)
        for (int64_t c = 0; c < w; ++c, off += bytes) f(base + a * sn + b * sh + c * sw, off);
  }
};

// Whether two blocks of the same memory share a byte.
bool blocks_overlap(const Block& x, const Block& y);

// The statically known part of an instruction.
struct Step {
  int32_t core = 0;
  std::array<int32_t, 10> cfg{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1};  // indices of the configuration instructions used
  std::vector<Block> reads, writes;
  int64_t macs = 0;  // pe_conv
};

class Machine {
 public:
  // The slots of Step::cfg.
  enum Cfg { kFm, kPm, kTp, kQp, kIq, kIq1, kGms, kFm1, kAct, kGp };

  // `weights` and `activations` are the two DRAM spaces (see asm/dram_layout.hpp).
  Machine(const arch::Architecture& a, const isa::Program& p, std::string file, std::vector<uint8_t> weights,
          std::vector<uint8_t> activations);
  ~Machine();

  // Resolves configurations and blocks of every instruction; throws on the first problem.
  void plan();
  const Step& step(size_t i) const { return steps_[i]; }

  // The two halves of instruction i (start() then finish(); configuration
  // and control instructions do nothing).
  void start(size_t i);
  void finish(size_t i);

  // Read access for checks and outputs.
  const uint8_t* memory(Space s, int32_t core) const;
  int64_t memory_size(Space s) const;
  // The host writes a step's results into DRAM activations (bounds checked).
  void write_dram(int64_t address, const std::vector<uint8_t>& bytes);
  // Copies a block's bytes out, pixel by pixel.
  void read_block(const Block& b, std::vector<uint8_t>& out) const;

  int64_t macs_done() const { return macs_done_; }

 private:
  struct Pending;

  [[noreturn]] void fail(size_t i, const std::string& what) const;
  void check_block(size_t i, const Block& b, const char* what) const;
  const isa::Instruction& cfg(size_t i, Cfg c) const { return prog_.instructions[size_t(steps_[i].cfg[c])]; }
  uint8_t* mem(Space s, int32_t core);

  void plan_one(size_t i, std::array<int32_t, isa::kOpcodeCount>& last_cfg);
  void compute_conv(size_t i, Pending& p);
  void compute_vp_self(size_t i, Pending& p);
  void compute_vp_pool(size_t i, Pending& p);

  const arch::Architecture& a_;
  const isa::Program& prog_;
  std::string file_;
  std::vector<Step> steps_;
  std::vector<std::vector<uint8_t>> l2_, wl0_;  // per core, allocated on first use
  std::vector<uint8_t> dram_w_, dram_a_;
  int64_t l2_bytes_ = 0, wl0_bytes_ = 0;
  std::map<size_t, std::unique_ptr<Pending>> pending_;
  // Core-to-core transfers in flight: (source core, destination core, tag) -> sent data, oldest first.
  std::map<std::tuple<int32_t, int32_t, int64_t>, std::deque<std::vector<uint8_t>>> channels_;
  int64_t macs_done_ = 0;
};

}  // namespace cct::func
