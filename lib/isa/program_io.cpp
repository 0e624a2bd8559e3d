#include "isa/program_io.hpp"

#include <vector>

#include "isa/line_schema.hpp"
#include "support/error.hpp"
#include "support/io.hpp"

namespace cct::isa {

void read_instruction_body(LineReader& r, Instruction& inst) {
  r.separator();
  r.mapping(inst.mapping);
  r.separator();
  r.params(inst);
  r.close_line();
}

Instruction parse_instruction(std::string_view line, Syntax syntax, const std::string& file, long line_no) {
  LineReader r(line, syntax, file, line_no);
  r.open_line();
  Instruction inst(r.mnemonic());
  read_instruction_body(r, inst);
  return inst;
}

Program parse_program(std::string_view text, const std::string& file, bool validate, Syntax* syntax) {
  Program prog;
  // Reference lines are 150-450 bytes; one reallocation at worst.
  prog.instructions.reserve(text.size() / 200 + 16);
  std::optional<SchemaPass> schema;  // JSON Lines input: the schema pass runs alongside the table checks
  std::optional<Syntax> found = for_each_line(text, file, [&](std::string_view line, long line_no, Syntax s) {
    LineReader r(line, s, file, line_no);
    r.open_line();
    Instruction& inst = prog.instructions.emplace_back(r.mnemonic());
    read_instruction_body(r, inst);
    if (validate && s == Syntax::JsonLines) {
      if (!schema) schema.emplace("isa", file);
      schema->add(line, inst.op(), line_no);
    }
  });
  if (!found) throw_input_error(at_line(file, 0, "no instructions (the program is empty)"));
  if (schema) schema->finish();
  if (syntax) *syntax = *found;
  return prog;
}

Program read_program(const std::string& path, bool validate, Syntax* syntax) {
  std::string text = read_input(path);
  return parse_program(text, display_name(path), validate, syntax);
}

std::string format_program(const Program& program, Syntax syntax) {
  std::string out;
  // Lines of the reference programs average under 300 bytes.
  out.reserve(program.instructions.size() * 320);
  for (const Instruction& inst : program.instructions) append_instruction(out, inst, syntax);
  return out;
}

void write_program(const std::string& path, const Program& program, Syntax syntax, bool validate) {
  std::string text = format_program(program, syntax);
  if (validate) {
    // Re-read what we are about to write: the same checks as for inputs
    // (the schema pass included for JSON Lines). A failure is a writer bug.
    try {
      parse_program(text, display_name(path), true);
    } catch (const Error& e) {
      throw Error(kExitInternal, std::string("output failed validation (a bug, please report): ") + e.what());
    }
  }
  write_output(path, text);
}

}  // namespace cct::isa
