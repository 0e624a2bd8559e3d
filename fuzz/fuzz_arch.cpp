// Architecture reader (lib/arch).
#include "arch/arch.hpp"
#include "fuzz_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cct;
  std::string_view text = fuzz::text_of(data, size);
  for (bool schema : {true, false})
    fuzz::refuse_or_read([&] { arch::parse_architecture(text, fuzz::kFile, schema); });
  return 0;
}
