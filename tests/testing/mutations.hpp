// Fuzzing by mutation for the format readers' tests: corrupted inputs never
// crash; every mutation either reads or throws cct::Error naming the file.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>

#include "support/error.hpp"

namespace cct::testing {

// Deterministic mutations: truncation, byte flips into JSON-significant
// characters, and digit changes (which keep the JSON valid but break meaning).
inline std::string mutate(const std::string& text, std::mt19937_64& rng) {
  std::string t = text;
  auto pos = [&] { return static_cast<size_t>(rng() % t.size()); };
  static const char kChars[] = "{}[]\",:-0123456789 \ntfn";
  switch (rng() % 4) {
    case 0: t.resize(pos()); break;
    case 1: t[pos()] = kChars[rng() % (sizeof kChars - 1)]; break;
    case 2:
      for (int i = 0; i < 8; ++i) {
        size_t p = pos();
        if (t[p] >= '0' && t[p] <= '9') t[p] = static_cast<char>('0' + rng() % 10);
      }
      break;
    default: {
      size_t p = pos();
      t.erase(p, std::min<size_t>(t.size() - p, rng() % 64));
      break;
    }
  }
  return t;
}

// Reads `rounds` mutations of `text` with and without schema validation
// (`read(text, schema)` must parse it under the file name "mutated"): any
// error is a cct::Error naming the file, and most mutations are caught.
template <class Read>
void survive_mutations(const std::string& text, uint64_t seed, int rounds, Read read) {
  std::mt19937_64 rng(seed);
  int errors = 0;
  for (int i = 0; i < rounds; ++i) {
    std::string bad = mutate(text, rng);
    for (bool schema : {true, false}) {
      try {
        read(bad, schema);
      } catch (const cct::Error& e) {
        ++errors;
        CHECK(std::string(e.what()).rfind("mutated", 0) == 0);
      }
    }
  }
  CHECK(errors > rounds / 2);
}

}  // namespace cct::testing
