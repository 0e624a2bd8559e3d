// Corrupted inputs never crash: every mutation either reads or throws cct::Error.
#include <doctest/doctest.h>

#include "fir/fir.hpp"
#include "support/error.hpp"
#include "mutations.hpp"
#include "testing.hpp"

TEST_CASE("mutated FIR files give errors, not crashes") {
  std::string path = cct::testing::reference_dir() + "/gemini-ir/frontend/int8_resnet34.sim_quantized_b1.json";
  cct::testing::survive_mutations(cct::testing::read_file(path), 2, 60, [](const std::string& t, bool schema) {
    cct::fir::parse_fir(t, "mutated", {schema, true});
  });
}
