#include "support/embedded.hpp"

namespace cct {

extern const EmbeddedFile schema_files[];
extern const std::size_t schema_count;

const EmbeddedFile* find_embedded_schema(std::string_view name) {
  for (std::size_t i = 0; i < schema_count; ++i)
    if (name == schema_files[i].name) return &schema_files[i];
  return nullptr;
}

std::size_t embedded_schema_count() { return schema_count; }
const EmbeddedFile& embedded_schema(std::size_t i) { return schema_files[i]; }

}  // namespace cct
