// libFuzzer targets for the readers (issue 20): each feeds the input to one
// format's reader as a user's file, with and without schema validation. A
// reader may only refuse its input with cct::Error of the invalid-input (or
// I/O) class; any other exception, an internal-error class, a crash or a
// sanitizer report is a finding. Built with -DCCT_FUZZ=ON (clang), run by
// scripts/fuzz.sh.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "support/error.hpp"

namespace cct::fuzz {

inline const std::string kFile = "fuzz.input";

// Runs f, accepting only a refusal of the input.
template <class F>
void refuse_or_read(F&& f) {
  try {
    f();
  } catch (const cct::Error& e) {
    if (e.code() == kExitInvalidInput || e.code() == kExitIo) return;
    std::fprintf(stderr, "fuzz: reader threw exit code %d: %s\n", static_cast<int>(e.code()), e.what());
    std::abort();
  }
}

inline std::string_view text_of(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

}  // namespace cct::fuzz
