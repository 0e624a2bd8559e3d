// Execution traces: an ISA program plus, per instruction, when it ran.
//
// A trace line is a program line with one more dictionary in third place:
//   legacy      [pe_conv, {mapping}, {'inst_idx': 12, 'time': [150, 8311]}, {params}]
//   JSON Lines  ["pe_conv", {mapping}, {"inst_idx": 12, "time": [150, 8311]}, {params}]
// Our simulator may add optional fields to that dictionary (see Timing and
// formats/Trace_Format.md). Lines are read and written with the line
// machinery of lib/isa, so the same checks and messages apply; the timing
// dictionary is checked here (inst_idx strictly increasing from 1,
// 0 <= start <= end, extras non-negative, issue <= start).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "isa/check.hpp"
#include "isa/line_syntax.hpp"
#include "isa/program.hpp"

namespace cct::trace {

using isa::Instruction;
using isa::Program;
using isa::Syntax;

struct Timing {
  int64_t inst_idx = 0;  // 1-based position of the instruction in the program that ran
  int64_t start = 0;     // cycle the instruction started executing
  int64_t end = 0;       // cycle it finished; end >= start

  // Optional fields, written only when set (present bit on).
  enum Field : uint8_t { kIssue = 1, kEnergy = 2, kBytes = 4, kOps = 8 };
  uint8_t present = 0;
  int64_t issue = 0;     // cycle it reached the head of its queue; start - issue = wait for tokens
  double energy = 0.0;   // energy of the instruction in pJ
  int64_t bytes = 0;     // bytes moved (loads, stores, transfers) or read and written (compute)
  int64_t ops = 0;       // operations done: MACs (PE), element operations (VP, DT)

  bool has(Field f) const { return (present & f) != 0; }
  void set_issue(int64_t v) { issue = v, present |= kIssue; }
  void set_energy(double v) { energy = v, present |= kEnergy; }
  void set_bytes(int64_t v) { bytes = v, present |= kBytes; }
  void set_ops(int64_t v) { ops = v, present |= kOps; }
  int64_t duration() const { return end - start; }

  bool operator==(const Timing&) const = default;
};

struct Trace {
  Program program;
  std::vector<Timing> timing;  // timing[i] belongs to program.instructions[i]

  size_t size() const { return timing.size(); }
  // The last end cycle (0 for an empty trace).
  int64_t total_cycles() const;
  bool operator==(const Trace&) const = default;
};

// Parses a whole trace (syntax detected from the first line). With
// validation on, JSON Lines input is also checked line by line against
// schemas/trace.schema.json; legacy input is checked by the same C++ rules
// the schema is generated from. An input without lines is an error.
Trace parse_trace(std::string_view text, const std::string& file, bool validate = true, Syntax* syntax = nullptr);
Trace read_trace(const std::string& path, bool validate = true, Syntax* syntax = nullptr);

// One trace line with its newline.
void append_trace_line(std::string& out, const Instruction& inst, const Timing& t, Syntax s);
// The timing dictionary alone: {'inst_idx': 1, 'time': [0, 33]}.
void append_timing(std::string& out, const Timing& t, Syntax s);

std::string format_trace(const Trace& trace, Syntax syntax = Syntax::JsonLines);
// format_trace, validated when asked (a failure is a bug; `path` names it).
std::string checked_trace_text(const std::string& path, const Trace& trace, Syntax syntax = Syntax::JsonLines,
                               bool validate = true);
// checked_trace_text, written atomically.
void write_trace(const std::string& path, const Trace& trace, Syntax syntax = Syntax::JsonLines,
                 bool validate = true);

// Whether the times obey the execution rules of formats/ISA_Format.md:
// per core, the instructions of one queue run one at a time in program order
// (each starts no earlier than its predecessor ended); the k-th token pushed
// from queue X to queue Y is popped by the k-th instruction of Y naming X, no
// earlier than the end of the instruction that pushed it; a receive (si_mov)
// ends no earlier than its matching send (so_mov) started.
isa::CheckReport check_trace(const Trace& trace, size_t max_diagnostics = 50);

// The text of schemas/trace.schema.json, generated from the ISA table.
std::string trace_schema_text();

}  // namespace cct::trace
