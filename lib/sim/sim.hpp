// The execution engine behind zebusim: runs an ISA program on an
// architecture, cycle by cycle in the sense of events, and times every
// instruction.
//
// Per core, each of the nine queues executes its instructions in program
// order, one at a time; an instruction starts once its queue predecessor has
// ended and one token from each queue in its Prev_Insts is available (tokens
// between an ordered pair of queues form a FIFO counter); when it ends it
// pushes one token to each queue in its Next_Insts (formats/ISA_Format.md).
// Compute and configuration instructions take the time lib/timing gives them.
// Data movements are flows over shared resources: the DRAM channels of the
// chip (one pool all cores draw from), every directed NoC link and every
// direction of every D2D link. Concurrent flows share each resource max-min
// fairly; a flow's latency (DRAM latency, hops, D2D crossings) comes before
// its bytes. A core-to-core transfer (so_mov / si_mov pair) starts when both
// ends are ready; the send ends when the last byte has left, the receive when
// it has arrived.
//
// Errors (cct::Error, kExitInvalidInput) name the file and line: an
// instruction for a core the architecture lacks, an operation without its
// configuration, a footprint the functional model would refuse (a block
// outside L2 or WL0, a tile beyond its configured tensor, a pe_conv reading
// weight records other than the ones loaded for it: lib/footprint), unpaired
// or malformed transfers, and a deadlock (tokens consumed but never
// produced), which lists the instructions left waiting. The engine never loops forever: every event
// is processed once and every flow progresses.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "isa/program.hpp"
#include "support/json.hpp"
#include "timing/timing.hpp"
#include "trace/trace.hpp"

namespace cct::sim {

struct QueueStats {
  int64_t instructions = 0;
  int64_t busy_cycles = 0;  // summed over cores
};

struct LayerStats {
  int32_t layer = 0;       // mapping slyr
  int64_t first_start = 0;
  int64_t last_end = 0;
  int64_t instructions = 0;
  int64_t macs = 0;
  double energy_pj = 0;
  int64_t cycles() const { return last_end - first_start; }
};

struct Stats {
  int64_t instructions = 0;
  int64_t total_cycles = 0;
  int cores_used = 0;                                   // cores with at least one instruction
  std::array<QueueStats, isa::kQueueCount> queues{};    // by isa::Queue
  std::vector<LayerStats> layers;                       // by layer id
  int64_t macs = 0;
  int64_t vp_ops = 0;
  int64_t dram_read_bytes = 0;
  int64_t dram_write_bytes = 0;
  int64_t transfer_bytes = 0;    // core to core
  int64_t noc_byte_hops = 0;     // bytes x mesh hops, all flows
  int64_t d2d_bytes = 0;         // bytes x D2D crossings, all flows
  timing::Energy energy;         // including static energy over the run
  int64_t host_steps = 0;        // ct_hw steps the host ran
  int64_t host_cycles = 0;       // cycles the host spent running them
};

struct Result {
  std::vector<trace::Timing> timing;  // per instruction, program order
  Stats stats;
};

struct Options {
  std::string file = "<program>";  // names the program in errors
  bool extras = true;              // fill issue / energy / bytes / ops in the timings
};

Result simulate(const isa::Program& program, const arch::Architecture& arch, const Options& options = {});

// --stats: a human-readable summary.
std::string format_stats(const Stats& s, const arch::Architecture& arch);
// --stats-json: the same figures for scripts (schemas/zebusim_stats.schema.json).
Json stats_to_json(const Stats& s, const arch::Architecture& arch);

}  // namespace cct::sim
