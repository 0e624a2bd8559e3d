// Pricing ISA instructions: the configuration state of one core followed in
// program order, and what each operation instruction costs under it.
//
// The cost of an instruction never depends on when it runs, only on its
// parameters and the configuration before it, except for data movements
// (DRAM loads and stores, core-to-core transfers) whose duration depends on
// the traffic they share links with: those come back as bytes to move, and
// the simulator (lib/sim) times them.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "arch/arch.hpp"
#include "isa/program.hpp"
#include "timing/timing.hpp"

namespace cct::timing {

enum class WorkKind : uint8_t {
  Fixed,      // a known number of cycles
  DramLoad,   // DRAM -> L2 (or WL0): `bytes`
  DramStore,  // L2 -> DRAM: `bytes`
  Send,       // so_mov: `bytes` to another core
  Receive,    // si_mov: `bytes` from another core
  HostWait,   // ct_hw: ends when the host has run step TAG (`cycles` of host work, `bytes`, `ops`)
};

struct Work {
  WorkKind kind = WorkKind::Fixed;
  int64_t cycles = 0;  // Fixed: the duration
  int64_t bytes = 0;   // data moved (movements) or read and written (compute)
  int64_t ops = 0;     // MACs (PE), element operations (VP, DT)
  Energy energy;       // compute and SRAM energy; DRAM energy for DRAM movements (links are priced by the simulator)
};

// Bytes per element of a DataFmt value (INT8 1, FP16 2).
int format_bytes(int64_t data_fmt);

class CoreModel {
 public:
  explicit CoreModel(const arch::Architecture& a) : arch_(&a) {}

  // Prices `inst`, updating the configuration state when it is a *_cfg*.
  // `vp_parts`: how many VP operation instructions its layer has (the
  // reference splits a layer's VP time evenly over them). Errors (e.g. an
  // operation whose configuration never came) start with "file:line".
  Work price(const isa::Instruction& inst, int64_t vp_parts, const std::string& file, long line);

 private:
  const isa::Instruction& config(isa::Opcode cfg, const isa::Instruction& user, const std::string& file, long line) const;

  const arch::Architecture* arch_;
  std::array<isa::Instruction, isa::kOpcodeCount> cfg_;  // latest *_cfg* of each opcode
  std::array<bool, isa::kOpcodeCount> have_cfg_{};  // which of cfg_ are set
  std::map<int64_t, bool> wl0_in_l2_;  // WL0 address -> weights there are left in L2 (lw_mov SS=0)
};

}  // namespace cct::timing
