// Reading and writing ISA programs in both syntaxes.
//
// Reading detects the syntax from the first line (legacy Python-literal lines
// or JSON Lines) and builds the program through the table-driven line reader
// (line_syntax.hpp), which rejects unknown mnemonics, missing, duplicate or
// unknown keys, wrong kinds, bad enum members and wrong list lengths with
// "file:line: mnemonic: what". With validation on, every line is in addition
// checked against schemas/isa.schema.json (JSON Lines input). Legacy input is
// checked by the C++ rules alone; the schema is generated from the same table
// (schema_gen.hpp) and the tests check that every line the reader accepts
// passes the schema.
//
// Writing is canonical: the legacy writer reproduces the reference files byte
// for byte, and legacy -> JSON Lines -> legacy is the identity.
#pragma once

#include <string>
#include <string_view>

#include "isa/line_syntax.hpp"
#include "isa/program.hpp"

namespace cct::isa {

// Parses a whole program. `file` names the source in messages. An input
// without any instruction is an error. When `syntax` is given it receives the
// detected syntax.
Program parse_program(std::string_view text, const std::string& file, bool validate = true,
                      Syntax* syntax = nullptr);
// read_input (stdin for "-", zstd transparent) + parse_program.
Program read_program(const std::string& path, bool validate = true, Syntax* syntax = nullptr);

// Parses one instruction line in the given syntax (no schema pass).
Instruction parse_instruction(std::string_view line, Syntax syntax, const std::string& file, long line_no);
// Reads the elements of an instruction line after its mnemonic: ", {mapping}, {params}]".
void read_instruction_body(LineReader& r, Instruction& inst);

// The program as text, one line per instruction.
std::string format_program(const Program& program, Syntax syntax = Syntax::JsonLines);
// format_program, validated when asked by reading the text back with the
// input checks (a failure is a bug: Error(kExitInternal)), then written
// atomically ("-" = stdout, .zst compressed).
void write_program(const std::string& path, const Program& program, Syntax syntax = Syntax::JsonLines,
                   bool validate = true);

}  // namespace cct::isa
