// Program-level checks that no single line can show: whether the queue
// tokens let every instruction run (no deadlock, nothing left over) and
// whether core-to-core sends and receives pair up and multicast loads group up.
//
// check_program() runs the program without timing: each core's queues issue
// in order, an instruction fires once the tokens named by its Prev_Insts are
// available, an so_mov fires together with the si_mov it meets, and the
// members of a multicast load together (see formats/ISA_Format.md). Reading a program does not run these checks; the
// assembler calls them on what it generates, the simulator before it runs.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "isa/program.hpp"

namespace cct::isa {

struct Diagnostic {
  bool error = true;   // false: a warning
  size_t index = 0;    // the instruction concerned (0-based; its line is index + 1)
  std::string message;
};

struct CheckReport {
  std::vector<Diagnostic> diagnostics;

  size_t error_count() const;
  bool ok() const { return error_count() == 0; }
  // One "file:line: error: message" (or "warning:") per diagnostic.
  std::string text(const std::string& file) const;
};

// At most `max_diagnostics` diagnostics are collected.
CheckReport check_program(const Program& program, size_t max_diagnostics = 50);

}  // namespace cct::isa
