// Per-line JSON Schema validation of JSON Lines files (ISA programs, traces).
//
// The line schemas (schemas/isa.schema.json, schemas/trace.schema.json) are
// an "anyOf" with one branch per mnemonic. RapidJSON runs all branches in
// parallel, about five times slower than one (measured: 14 against 73 MB/s),
// so once the reader knows the
// mnemonic it validates against that mnemonic's branch merged into the root
// tuple; the branches are disjoint (each requires its own mnemonic), so the
// verdict is the same as for the whole schema. A line whose mnemonic is
// unknown is validated against the whole schema.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "isa/isa.hpp"

namespace cct::isa {

class LineSchemaValidator {
 public:
  explicit LineSchemaValidator(std::string_view schema_name);
  ~LineSchemaValidator();
  LineSchemaValidator(const LineSchemaValidator&) = delete;
  LineSchemaValidator& operator=(const LineSchemaValidator&) = delete;

  // Validates one JSON line whose mnemonic is `op` (nullopt: unknown). On
  // failure throws Error(kExitInvalidInput) as
  // "file:line: /json/pointer: what (schemas/<name>.schema.json)".
  void validate(std::string_view json_line, std::optional<Opcode> op, const std::string& file, long line_no);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// One JSON line to validate.
struct SchemaLine {
  std::string_view text;
  Opcode op;
  long line_no;
};

// The schema pass of a reader, run alongside it: add() lines as they are
// read; once a chunk of lines is complete it is validated on a worker thread
// (up to hardware_concurrency() - 1 of them, started only for inputs of more
// than one chunk) while the reader goes on; finish() validates the rest and
// throws the error of the first failing line, whatever the thread count.
// The texts passed to add() must stay alive until finish() or destruction.
// Destroying the pass without finish() (the reader threw) stops the workers.
class SchemaPass {
 public:
  SchemaPass(std::string_view schema_name, const std::string& file);
  ~SchemaPass();
  SchemaPass(const SchemaPass&) = delete;
  SchemaPass& operator=(const SchemaPass&) = delete;

  void add(std::string_view text, Opcode op, long line_no);
  void finish();

 private:
  struct Shared;
  void flush();
  void work();
  std::unique_ptr<Shared> shared_;
};

// Validates every line (a SchemaPass over `lines`).
void validate_lines(std::string_view schema_name, std::span<const SchemaLine> lines, const std::string& file);

}  // namespace cct::isa
