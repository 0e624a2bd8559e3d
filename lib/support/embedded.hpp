// Files compiled into the binaries (JSON schemas, architecture presets), so a
// tool works wherever it is copied.
#pragma once

#include <cstddef>
#include <string_view>

namespace cct {

struct EmbeddedFile {
  const char* name;       // file name without directory, e.g. "sir.schema.json"
  std::string_view data;  // file contents
};

// The embedded JSON schemas (schemas/*.schema.json).
const EmbeddedFile* find_embedded_schema(std::string_view file_name);
std::size_t embedded_schema_count();
const EmbeddedFile& embedded_schema(std::size_t i);

}  // namespace cct
