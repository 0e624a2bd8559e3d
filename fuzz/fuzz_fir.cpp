// Frontend IR reader (lib/fir): schema, structure and semantic checks.
#include "fir/fir.hpp"
#include "fuzz_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cct;
  std::string_view text = fuzz::text_of(data, size);
  fuzz::refuse_or_read([&] { fir::parse_fir(text, fuzz::kFile); });
  // Without the schema the typed reader alone faces any structure.
  fuzz::refuse_or_read([&] { fir::parse_fir(text, fuzz::kFile, {false, true}); });
  return 0;
}
