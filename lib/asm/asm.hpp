// The assembler: Scheduler IR + Frontend IR + architecture -> ISA program.
//
// assemble() turns every workload of every core into its configuration,
// data-movement and compute instructions and links them with queue tokens
// (Prev_Insts / Next_Insts). The rules reproduce the programs of the original
// tool chain; docs/asm_rules.md (generated from the reverse-engineering
// notes) lists them with the evidence.
//
// check() verifies a program without running it: known mnemonics and
// parameters (the line reader already guarantees them), token balance and
// deadlock freedom per core (isa::check_program), and weight loads whose
// Wsize matches their configuration. First, the footprint of every
// instruction (lib/footprint, the functional model's rules): what it reads
// and writes lies inside L2 / WL0 of the architecture (DRAM sizes are not
// known here), tiles fit the configuration registers in force, and every
// pe_conv reads weight records of the shape it computes with, loaded before
// it; a violation is thrown as Error(kExitInvalidInput) naming file:line.
#pragma once

#include <string>
#include <string_view>

#include "arch/arch.hpp"
#include "fir/fir.hpp"
#include "isa/check.hpp"
#include "isa/program.hpp"
#include "sir/sir.hpp"

namespace cct::assembler {

// The original tool chain exists in two generations, recognisable from the
// Scheduler IR: files listing the weight buffer as `wl1_buffer` and files
// listing it as `wl0_buffer`. Their programs differ in a few conventions
// (same-queue tokens, token order, store placement, a few register values).
enum class Dialect { Auto, Wl1, Wl0 };

// The order tiles of a workload are emitted in: by number, or by their keys
// compared as strings (tile_num_10 before tile_num_2), the order the original
// tool read them from files whose keys were sorted.
enum class TileOrder { Numeric, KeyString };

struct MulticastMerge;
struct Options {
  Dialect dialect = Dialect::Auto;
  TileOrder tile_order = TileOrder::Numeric;
  std::string sir_file = "<sir>";  // names the Scheduler IR in error messages
  std::string fir_file = "<fir>";
  // The multicast pass (merge_multicast_loads) on an architecture with
  // noc.multicast, as gemini's cost model prices it; false: unicast loads
  // only. What the pass did goes to *multicast_result when given.
  bool multicast = true;
  MulticastMerge* multicast_result = nullptr;
};

// Throws Error(kExitInvalidInput) naming the Scheduler IR (file: /json/pointer)
// for inconsistent input: a transfer id that no buffer holds, a tensor outside
// its buffer or outside L2, a layer missing from the Frontend IR, ...
isa::Program assemble(const sir::Schedule& schedule, const fir::Graph& graph, const arch::Architecture& arch,
                      const Options& options = {});

// The multicast pass (assemble's last step): on an architecture with
// noc.multicast, the DRAM loads several cores make of the same bytes become
// multicast groups (formats/ISA_Format.md 5b; the k-th such load of each
// core joins group k). Groups make cores wait for each other: when the
// merged program would deadlock, `program` is left unchanged and `refused`
// says why.
struct MulticastMerge {
  int groups = 0;   // groups made
  int members = 0;  // loads they replaced
  std::string refused;
};
MulticastMerge merge_multicast_loads(isa::Program& program, const arch::Architecture& arch);

// The dialect assemble() would use for this schedule.
Dialect detect_dialect(const sir::Schedule& schedule);
// The order the Scheduler IR text lists tile keys in (Numeric when no
// workload has more than ten tiles, where both orders agree).
TileOrder detect_tile_order(std::string_view sir_text);

struct DramLayout;
// Static checks of a program against an architecture (see the header comment);
// `file` names the program in errors. With the DRAM layout of the schedule the
// program was assembled from (layout_dram), DRAM accesses are bounded by its
// weight and activation spaces, as in the functional run; without, only their
// first byte is checked.
isa::CheckReport check(const isa::Program& program, const arch::Architecture& arch, const std::string& file = "<program>",
                       size_t max_diagnostics = 50, const DramLayout* dram = nullptr);

}  // namespace cct::assembler
