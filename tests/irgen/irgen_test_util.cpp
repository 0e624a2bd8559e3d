#include "irgen_test_util.hpp"

#include <doctest/doctest.h>

#include <fstream>

#include "testing.hpp"

namespace irgen_test {

using namespace cct;

std::string fir_path(const std::string& net, int batch) {
  return testing::reference_dir() + "/gemini-ir/frontend/int8_" + net + ".sim_quantized_b" + std::to_string(batch) + ".json";
}
std::string sir_path(const std::string& net, int batch) {
  return testing::reference_dir() + "/gemini-ir/scheduler/int8_" + net + ".sim_quantized_b" + std::to_string(batch) +
         "_c1_bw16_stschedule.json";
}

long reference_end_cycle(const std::string& net, int batch) {
  std::string path = testing::reference_dir() + "/gemini-ir/trace/int8_" + net + ".sim_quantized_b" +
                     std::to_string(batch) + "_c1_bw16_sim.txt";
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  // ... 'time': [start, end] ...
  const size_t at = last.find("'time': [");
  REQUIRE_MESSAGE(at != std::string::npos, "no time in " << last);
  return long(testing::integer_after(last, ",", at));
}

}  // namespace irgen_test
