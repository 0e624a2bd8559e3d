// Internal to lib/asm: the instruction list under construction, with what
// each instruction reads and writes, which the token pass needs.
#pragma once

#include <cstdint>
#include <vector>

#include "isa/program.hpp"

namespace cct::assembler {

// Address spaces the dependency analysis distinguishes.
enum class Space : uint8_t { L2, Wl0, DramWeights, DramActivations, Count };

// A half-open byte range [lo, hi) of one space.
struct Range {
  Space space;
  int64_t lo;
  int64_t hi;
};

// What an instruction is, for the rules that are not about memory.
enum class Kind : uint8_t {
  Control,       // ct_*
  Config,        // *_cfg*
  Compute,       // pe_conv, vp_self, vp_pool
  LoadAct,       // lda_mov
  LoadWeights,   // ldw_mov (DRAM -> L2)
  LoadWl0Dram,   // lw_mov SS=1 (DRAM -> WL0)
  LoadWl0Tile,   // lw_mov SS=0 (L2 -> WL0, one tile's weights)
  Store,         // sta_mov
  Transform,     // dt_cal
  Send,          // so_mov
  Receive,       // si_mov
};

struct Meta {
  Kind kind = Kind::Config;
  std::vector<Range> reads, writes;
  int32_t dram_layer = -1;  // LoadWl0Dram: the layer whose weights it loads
  bool own_layer = false;   // LoadWl0Dram: that layer is the layer of the workload it is placed in
};

struct Built {
  isa::Instruction inst;
  Meta meta;
};

// A token between two instructions of one core (indices into the list).
struct Token {
  size_t producer;
  size_t consumer;
  enum Why : uint8_t { Raw, War, Waw, PrevWorkload, Channel, Control } why;
};

struct TokenRules {
  bool same_queue_tokens = false;  // PE->PE and VP->VP tokens exist (Wl1)
  bool control_to_all = false;     // ct_st/ct_bc release the first LW, LD, VP and PE (Wl1); else only LD
  bool descending_order = false;   // Prev_Insts order: producer workload descending (Wl1) / ascending (Wl0)
  bool pairwise_only = false;      // a dependency is dropped only when the same producer queue already
                                   // released a later-or-equal instruction to this queue (Wl1); else
                                   // also when it is known complete transitively
  bool tile_weight_reads_untracked = false;  // lw_mov L2->WL0 reads do not order later L2 writes (Wl1)
};

// Fills Prev_Insts / Next_Insts of the instructions of one core.
std::vector<Token> assign_tokens(std::vector<Built>& core_program, const TokenRules& rules);

}  // namespace cct::assembler
