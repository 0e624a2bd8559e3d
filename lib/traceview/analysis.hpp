// What happened in a trace: per core and queue occupancy, per layer cycles,
// MACs and DRAM traffic, the critical path through the dependency tokens and
// the energy, computed once and shared by every view of traceview (text
// summary, HTML, Chrome JSON, SVG).
//
// Figures come from the trace when it carries them (ops, bytes, energy, as
// zebusim writes them) and otherwise from the timing model of lib/timing
// priced on the given architecture (the ZeBu reference traces hold times
// only), so a reference trace and our simulator's trace of the same program
// report the same MACs and bytes.
//
// Per-layer cycles follow the critical path: walking back from the
// instruction that ends last, each instruction on the path is charged the
// cycles from the end of the instruction it waited for (its binding
// predecessor) to its own end, so waiting counts for the layer that waited.
// The path covers [0, total) without overlap, so the per-layer cycles add up
// to the total exactly.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "fir/fir.hpp"
#include "isa/isa.hpp"
#include "timing/timing.hpp"
#include "trace/trace.hpp"

namespace cct::traceview {

// a + b for counts that cannot be negative, held at INT64_MAX instead of
// overflowing (sums of durations or bytes from hostile traces).
inline int64_t saturating_add(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}
inline void add_to(int64_t& sum, int64_t v) { sum = saturating_add(sum, v); }

// Why an instruction could not start earlier than it did.
enum class EdgeKind : uint8_t {
  None,        // nothing recorded it had to wait for (the chain starts here)
  QueueOrder,  // its predecessor in the same queue had to end
  Token,       // a Prev_Insts token pushed by another instruction
  Transfer,    // its transfer partner (so_mov/si_mov) waited for that instruction
};
std::string_view edge_kind_name(EdgeKind k);

struct Dependence {
  int64_t pred = -1;  // binding predecessor (instruction index), -1 for none
  EdgeKind kind = EdgeKind::None;
  isa::Queue token_from = isa::Queue::CT;  // Token: the queue that pushed it (the predecessor's queue)
};

// One (core, queue) pair that has instructions.
struct Lane {
  int32_t core = 0;
  isa::Queue queue = isa::Queue::CT;
  int64_t instructions = 0;
  int64_t busy_cycles = 0;  // sum of durations (a queue runs one instruction at a time)
  double energy_pj = 0;
};

struct LayerRow {
  int32_t layer = 0;           // mapping slyr
  std::string name;            // Frontend IR layer name when --fir was given
  std::string op;              // Frontend IR operation ("conv2d")
  int64_t instructions = 0;    // non-configuration instructions
  int64_t cycles = 0;          // critical-path cycles charged to the layer (add up to the total)
  int64_t path_instructions = 0;  // of its instructions on the critical path
  int64_t first_start = 0, last_end = 0;  // span of its non-configuration instructions
  int64_t pe_busy_cycles = 0;  // summed durations of its pe_conv instructions
  int64_t macs = 0;            // executed MACs (trace ops, or the timing model)
  int64_t fir_macs = -1;       // MACs of the Frontend IR layer (-1: no FIR)
  int64_t dram_read = 0, dram_write = 0;
  double energy_pj = 0;
  int64_t span() const { return last_end - first_start; }
};

// A run of consecutive critical-path instructions on one core, queue and layer.
struct PathRun {
  int64_t first = 0, last = 0;  // instruction indices (program order), first is the earliest
  int32_t core = 0;
  isa::Queue queue = isa::Queue::CT;
  int32_t layer = 0;
  int64_t instructions = 0;
  int64_t begin = 0, end = 0;   // cycles charged: [begin, end)
  int64_t wait_cycles = 0;      // of which waiting (gap before a start)
  EdgeKind entry = EdgeKind::None;  // how the run's first instruction was bound to what came before
  isa::Queue entry_from = isa::Queue::CT;
};

// Energy split by component (pJ), when the trace carries energy.
struct EnergyBreakdown {
  bool available = false;    // the trace has per-instruction energy
  double instructions_pj = 0;  // sum of the trace's per-instruction energies
  bool components = false;     // the model's split is consistent with the trace
  timing::Energy split;        // mac, vp, l1, l2, dram from the model; noc+d2d the remainder; static over the run
  std::array<double, isa::kQueueCount> by_queue{};
};

// A host step as the run placed it: the host computes in [start, end), end
// being when its ct_hw end (the host's cycles by the timing model before it).
struct HostStepRun {
  int64_t tag = 0, ops = 0, bytes = 0;  // TAG, HOPS, HBYTES
  int64_t cycles = 0, start = 0, end = 0;
};

// The host's share of a run (host steps, ct_hw).
struct HostShare {
  std::vector<HostStepRun> runs;  // by TAG
  int64_t steps = 0;        // distinct ct_hw TAGs
  int64_t cycles = 0;       // the host's cycles for them (timing::host_cycles of each step)
  int64_t wait_cycles = 0;  // cycles in which at least one core waited in a ct_hw
  int64_t path_cycles = 0;  // critical-path cycles charged to ct_hw while the host computes
};

struct Options {
  const arch::Architecture* arch = nullptr;  // required: clock, peak, the timing model
  const fir::Graph* fir = nullptr;           // optional: layer names and FIR MACs
  std::string file = "<trace>";              // names the trace in warnings
};

struct Analysis {
  std::string arch_name;
  double clock_ghz = 0;
  int64_t macs_per_cycle_per_core = 0;
  int64_t instructions = 0;
  int64_t total_cycles = 0;  // end of the last instruction
  std::vector<int32_t> cores;  // distinct core ids, ascending
  std::array<int64_t, isa::kOpcodeCount> count_by_opcode{};
  std::array<int64_t, isa::kOpcodeCount> cycles_by_opcode{};
  std::array<int64_t, isa::kQueueCount> count_by_queue{};
  std::vector<Lane> lanes;          // by core, then queue order
  std::vector<LayerRow> layers;     // by slyr ascending
  int64_t macs = 0, dram_read = 0, dram_write = 0;
  bool model_priced = false;        // the timing model priced every instruction
  std::string model_problem;        // why not, when it did not
  bool trace_has_ops = false, trace_has_bytes = false;

  // Per instruction (program order).
  std::vector<int32_t> lane_of;       // index into lanes
  std::vector<int64_t> macs_of;       // MACs (pe_conv), else 0
  std::vector<int64_t> dram_read_of, dram_write_of;
  std::vector<Dependence> dep_of;     // binding predecessor
  std::vector<int64_t> transfer_partner;  // so_mov <-> si_mov, -1 otherwise

  // Critical path, earliest first.
  std::vector<int64_t> critical;      // instruction indices
  std::vector<PathRun> path_runs;
  std::array<int64_t, isa::kQueueCount> path_cycles_by_queue{};  // cycles charged per queue
  int64_t path_wait_cycles = 0;       // of the total, cycles the path spent waiting (gaps)

  EnergyBreakdown energy;
  HostShare host;

  double peak_macs_per_cycle() const { return double(macs_per_cycle_per_core) * double(std::max<size_t>(cores.size(), 1)); }
  double seconds() const { return clock_ghz > 0 ? double(total_cycles) / (clock_ghz * 1e9) : 0.0; }
  // Name of slyr (the FIR name when known, else "layer N").
  std::string layer_label(int32_t slyr) const;
  const LayerRow* layer(int32_t slyr) const;
};

// Analyses a trace. Warnings (a trace the model cannot price, a FIR that does
// not match) go through cct::cli::warn.
Analysis analyze(const trace::Trace& trace, const Options& options);

// The binding dependences alone (used by analyze): for every instruction the
// latest-ending of its queue predecessor, the producers of the tokens it pops
// (FIFO per core and queue pair) and, for a transfer, its partner's.
std::vector<Dependence> binding_dependences(const trace::Trace& trace, std::vector<int64_t>* partners = nullptr);

// The plain-text summary (--summary). `path_runs_shown` caps the critical-path
// listing (0 = all runs).
std::string format_summary(const Analysis& a, const std::string& trace_name, size_t path_runs_shown = 40);

}  // namespace cct::traceview
