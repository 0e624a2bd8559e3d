// Scheduler IR reader (lib/sir): schema and structural checks.
#include "fuzz_reader.hpp"
#include "sir/sir.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cct;
  std::string_view text = fuzz::text_of(data, size);
  fuzz::refuse_or_read([&] { sir::parse_sir(text, fuzz::kFile); });
  fuzz::refuse_or_read([&] { sir::parse_sir(text, fuzz::kFile, {false, true}); });
  return 0;
}
