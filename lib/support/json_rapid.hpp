// RapidJSON entry points for readers that work on the raw document (fast paths
// such as per-line JSON Lines parsing).
#pragma once

#include <rapidjson/document.h>

#include <string>
#include <string_view>

#include "support/json.hpp"

namespace cct {

// Parses text into doc; malformed text throws Error naming file:line, column.
void parse_rapidjson(rapidjson::Document& doc, std::string_view text, const std::string& file);
Json json_from_rapidjson(const rapidjson::Value& v);

}  // namespace cct
