// Validation against the JSON Schemas in schemas/ (draft-04, as RapidJSON
// implements it). Schemas are embedded in the binary and compiled once.
#pragma once

#include <rapidjson/document.h>

#include <string>
#include <string_view>

namespace cct {

// Validates a parsed document against schemas/<name>.schema.json.
// Throws Error(kExitInvalidInput) naming the file, the JSON pointer of the
// offending value and what the schema expected.
void validate_against_schema(const rapidjson::Value& doc, std::string_view name, const std::string& file);

// Parses `text` and validates it; used to check outputs before they are written.
// An output that fails is a bug in the writer: Error(kExitInternal).
void validate_output_text(std::string_view text, std::string_view name, const std::string& file);

// The schema source, for tools that print or export it.
std::string_view schema_text(std::string_view name);

}  // namespace cct
