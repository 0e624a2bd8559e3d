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
// tensor, weights read in a shape other than the one loaded, an operation
// without its configuration or with parameters the model does not implement
// is an Error naming the program line. The planning is lib/footprint's,
// shared with asm --check and the timing run.
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
#include "footprint/footprint.hpp"
#include "footprint/layout.hpp"
#include "isa/program.hpp"

namespace cct::func {

// The layouts and the footprint planning live in lib/footprint.
using footprint::Block;
using footprint::blocks_overlap;
using footprint::Box;
using footprint::element_bytes;
using footprint::kBiasOffset;
using footprint::kChannelScaleOffset;
using footprint::make_box;
using footprint::pack_weights;
using footprint::Space;
using footprint::space_name;
using footprint::Step;
using footprint::weight_record;
using footprint::WeightRecord;

class Machine {
 public:
  // The slots of Step::cfg (footprint::Cfg).
  using Cfg = footprint::Cfg;
  using enum footprint::Cfg;

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
  const isa::Instruction& cfg(size_t i, Cfg c) const { return prog_.instructions[size_t(steps_[i].cfg[c])]; }
  uint8_t* mem(Space s, int32_t core);
  // `len` bytes of a core's L2 from `address` on, around the ring (footprint::l2_address):
  // a pointer into L2, or into `tmp` when the end of L2 splits them.
  const uint8_t* l2_run(int32_t core, int64_t address, int64_t len, std::vector<uint8_t>& tmp);

  void compute_conv(size_t i, Pending& p);
  void compute_vp_self(size_t i, Pending& p);
  void compute_vp_pool(size_t i, Pending& p);
  void compute_vp_resize(size_t i, Pending& p);

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
