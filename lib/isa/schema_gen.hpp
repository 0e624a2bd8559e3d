// JSON Schemas of instruction lines, generated from the opcode table so the
// schema files in schemas/ can never drift from the C++ reader: a test
// compares schemas/isa.schema.json (and trace.schema.json) with this output.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "support/json.hpp"

namespace cct::isa {

// One extra element of a line between the mapping and the parameters (the
// trace's timing dictionary): its definition name and schema.
struct ExtraElement {
  std::string name;
  Json schema;
};

// The schema (as a Json value) of one JSON Lines instruction line
// ["mnemonic", {mapping}, <extras...>, {parameters}].
Json instruction_line_schema(std::string_view title, std::string_view description,
                             const std::vector<ExtraElement>& extras = {});

// The text of schemas/isa.schema.json.
std::string isa_schema_text();

}  // namespace cct::isa
