// Mapping reader (lib/mapping) and its checks against an architecture.
#include "arch/arch.hpp"
#include "fuzz_reader.hpp"
#include "mapping/mapping.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cct;
  static const arch::Architecture chip = arch::load_architecture("chip-64tops");
  std::string_view text = fuzz::text_of(data, size);
  for (bool schema : {true, false}) {
    fuzz::refuse_or_read([&] {
      mapping::Mapping m = mapping::parse_mapping(text, fuzz::kFile, schema);
      mapping::check_structure(m, fuzz::kFile);
      mapping::check_against_arch(m, chip, fuzz::kFile);
    });
  }
  return 0;
}
