// Corrupted inputs never crash: every mutation either reads or throws cct::Error.
#include <doctest/doctest.h>

#include "sir/sir.hpp"
#include "support/error.hpp"
#include "mutations.hpp"
#include "testing.hpp"

TEST_CASE("mutated SIR files give errors, not crashes") {
  std::string path = cct::testing::reference_dir() + "/gemini-ir/scheduler/int8_resnet34.sim_quantized_b1_c1_bw16_stschedule.json";
  cct::testing::survive_mutations(cct::testing::read_file(path), 1, 60, [](const std::string& t, bool schema) {
    cct::sir::parse_sir(t, "mutated", {schema, true});
  });
}
