// Trace reader (lib/trace): the program lines plus their timing dictionaries.
#include "fuzz_reader.hpp"
#include "trace/trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cct;
  std::string_view text = fuzz::text_of(data, size);
  for (bool validate : {true, false})
    fuzz::refuse_or_read([&] { trace::parse_trace(text, fuzz::kFile, validate); });
  return 0;
}
