// Parsing and schema validation in one pass over the text, for large inputs.
//
// Equivalent to parse_rapidjson() followed by validate_against_schema(), with
// the same error messages (on failure the two-step path runs again to word
// them), but the document is validated while it is being built instead of
// being walked a second time.
#pragma once

#include <rapidjson/document.h>

#include <string>
#include <string_view>

namespace cct {

// Parses `text` into `doc` and validates it against schemas/<schema>.schema.json.
// Throws Error(kExitInvalidInput) naming file:line or file: /pointer.
void parse_validated_rapidjson(rapidjson::Document& doc, std::string_view text, const std::string& file,
                               std::string_view schema);

// Checks text we are about to write against schemas/<schema>.schema.json in one
// streaming pass, without building a document. Same contract as
// validate_output_text(): a failure is a bug in the writer, Error(kExitInternal).
void validate_output_text_streaming(std::string_view text, std::string_view schema, const std::string& file);

}  // namespace cct
