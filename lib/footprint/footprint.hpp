// The memory footprint of every instruction: one definition shared by the
// functional model (zebusim --functional, lib/func), asm --check and
// zebusim's timing run.
//
// Planning follows a program in program order, keeps the configuration
// registers of each core (an operation uses the latest *_cfg* of its core
// before it, as the in-order queues guarantee) and computes, without touching
// data, the memory blocks each instruction reads and writes, with the layouts
// of layout.hpp. Each block is checked against its memory: an address outside
// L2 or WL0 (or DRAM, when its size is known), a tile that does not fit its
// configured tensor, or an operation without its configuration is an Error
// (kExitInvalidInput) naming the program line.
//
// Planning also follows the weight records (formats/ISA_Format.md 9.7): a pe_conv
// must read, at its WL0 address, records of the shape its configuration
// implies ([C / GROUPS, kh, kw]) that a weight load of that core wrote before
// it, on their record boundaries; an lw_mov from L2 must read records an
// ldw_mov left there, of its own shape.
//
// The functional model runs programs on data, so it also refuses what it does
// not implement (Options::functional): FP16 convolution operands, fused
// additions, VP operations other than those of formats/ISA_Format.md 9.5, and
// single instructions of more than 2^38 operations.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "arch/arch.hpp"
#include "footprint/layout.hpp"
#include "isa/program.hpp"

namespace cct::footprint {

enum class Space : uint8_t { L2, Wl0, DramWeights, DramActivations };
std::string_view space_name(Space s);  // "L2", "WL0", "DRAM (weights)", "DRAM (activations)"

// A grid of n x h x w pixels in one memory, `bytes` contiguous bytes each,
// pixel (a, b, c) at base + a*sn + b*sh + c*sw. Data moved for a block is
// ordered pixel by pixel in that order.
//
// L2 is a ring (formats/ISA_Format.md 9.1): a block that starts inside L2 and
// runs past its end continues at byte 0. The planner marks such a block with
// `wrap` = the L2 size; lo() and hi() stay the unwrapped extent.
struct Block {
  Space space = Space::L2;
  int32_t core = 0;  // L2 / WL0: the core; DRAM: 0
  int64_t base = 0;
  int64_t n = 1, h = 1, w = 1;
  int64_t sn = 0, sh = 0, sw = 0;
  int64_t bytes = 0;
  int64_t wrap = 0;  // > 0: addresses are taken modulo wrap (an L2 block past the end of L2)

  int64_t pixels() const { return n * h * w; }
  int64_t size() const { return pixels() * bytes; }
  int64_t lo() const { return base; }  // strides are never negative
  int64_t hi() const { return base + (n - 1) * sn + (h - 1) * sh + (w - 1) * sw + bytes; }
  bool empty() const { return n <= 0 || h <= 0 || w <= 0 || bytes <= 0; }
  // Calls f(address, offset_in_data, length) for every pixel, in two runs
  // for a pixel that a wrapping block splits at the end of its memory.
  template <class F>
  void for_each(F&& f) const {
    int64_t off = 0;
    for (int64_t a = 0; a < n; ++a)
      for (int64_t b = 0; b < h; ++b)
        for (int64_t c = 0; c < w; ++c, off += bytes) {
          int64_t addr = base + a * sn + b * sh + c * sw;
          if (wrap <= 0) {
            f(addr, off, bytes);
            continue;
          }
          addr %= wrap;
          const int64_t first = std::min(bytes, wrap - addr);
          f(addr, off, first);
          if (first < bytes) f(int64_t(0), off + first, bytes - first);
        }
  }
};

// The ring rule of L2 (formats/ISA_Format.md 9.1), for an address of a block
// the planner accepted (0 <= address < 2 * l2_bytes).
inline int64_t l2_address(int64_t address, int64_t l2_bytes) {
  return address < l2_bytes ? address : address - l2_bytes;
}

// Whether two blocks of the same memory share a byte.
bool blocks_overlap(const Block& x, const Block& y);

// VP operations (vp_self / vp_pool LUT) the functional model implements.
inline constexpr int64_t kLutRequantize = int64_t(isa::Lut::Requantize);  // one operand: dequantize, requantize
inline constexpr int64_t kLutMaxPool = int64_t(isa::Lut::MaxPool);
inline constexpr int64_t kLutAdd = int64_t(isa::Lut::Add);                // two operands: element-wise sum
inline constexpr int64_t kLutAvgPool = int64_t(isa::Lut::AvgPool);
inline constexpr int64_t kLutResize = int64_t(isa::Lut::Resize);
// Operations of two operands (A at STaddr1, B at STaddr).
bool two_operands(int64_t lut);
// The activation LUTs (of one operand, or PReLU's two).
bool activation_lut(int64_t lut);
// Activation LUTs whose function takes vp_cfg_act parameters.
bool takes_act_params(int64_t lut);

// The configuration instructions an operation uses (slots of Step::cfg).
enum Cfg { kFm, kPm, kTp, kQp, kIq, kIq1, kGms, kFm1, kAct, kGp, kRs, kPl };

// The statically known part of an instruction.
struct Step {
  int32_t core = 0;
  std::array<int32_t, 12> cfg{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};  // indices of the configuration instructions used
  std::vector<Block> reads, writes;
  int64_t macs = 0;  // pe_conv
  // ldw_mov / lw_mov: the records moved; pe_conv: the records read (c = 0: none).
  WeightRecord records;
};

struct Options {
  std::string file = "<program>";  // names the program in errors
  // The sizes of the two DRAM spaces; negative: unknown (only negative
  // addresses are refused there).
  int64_t dram_weight_bytes = -1, dram_activation_bytes = -1;
  // Also refuse what the functional model does not implement.
  bool functional = false;
};

class Planner {
 public:
  Planner(const arch::Architecture& a, const isa::Program& p, Options o);
  ~Planner();

  // Plans instruction i into s (cleared first). Instructions must come in
  // program order, each once. Throws Error(kExitInvalidInput) "file:line: ...".
  void plan(size_t i, Step& s);

 private:
  class Records;
  [[noreturn]] void fail(size_t i, const std::string& what) const;
  void check_block(size_t i, Block& b, const char* what) const;
  int64_t memory_size(Space s) const;
  void plan_one(size_t i, Step& s, std::array<int32_t, isa::kOpcodeCount>& last_cfg);

  const arch::Architecture& a_;
  const isa::Program& prog_;
  Options o_;
  std::vector<std::array<int32_t, isa::kOpcodeCount>> last_;  // per core: latest *_cfg* of each opcode
  std::unique_ptr<Records> records_;
};

// Every instruction's step, in program order (the functional model).
std::vector<Step> plan_program(const arch::Architecture& a, const isa::Program& p, const Options& o);
// The same checks without keeping the steps (asm --check, the timing run).
void check_program(const arch::Architecture& a, const isa::Program& p, const Options& o);

}  // namespace cct::footprint
