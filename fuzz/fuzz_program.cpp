// ISA program reader (lib/isa): both line syntaxes, the JSON Lines schema pass.
#include "fuzz_reader.hpp"
#include "isa/program_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cct;
  std::string_view text = fuzz::text_of(data, size);
  for (bool validate : {true, false})
    fuzz::refuse_or_read([&] { isa::parse_program(text, fuzz::kFile, validate); });
  return 0;
}
