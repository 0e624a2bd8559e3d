// The tool chain on damaged Frontend IRs: numbers of a valid FIR changed at
// random (shapes, channels, strides, quantization), as a hand edit gone
// wrong would. Each stage either does its job or refuses its input with the
// invalid-input exit code and the file's name; none crashes, runs out of
// memory (4 GB) or hangs (60 s). Release only (heavy): the sanitizer build
// would take minutes.
#include <doctest/doctest.h>

#include <random>
#include <string>

#include "testing.hpp"

using cct::testing::read_file;
using cct::testing::run;

namespace {

// Digits replaced and digit runs inserted: the JSON stays valid.
std::string mutate_numbers(const std::string& in, std::mt19937_64& rng) {
  std::string t = in;
  for (int n = 1 + int(rng() % 6); n > 0; --n) {
    size_t p = rng() % t.size();
    if (t[p] >= '0' && t[p] <= '9') t[p] = char('0' + rng() % 10);
    else if (rng() % 3 == 0) t.insert(p, std::string(1 + rng() % 8, char('1' + rng() % 9)));
  }
  return t;
}

// Runs one stage; returns true if it succeeded.
bool stage(const std::string& command, const std::string& names) {
  auto r = run("ulimit -v 4000000; timeout 60 " + command);
  INFO(command << "\nexit " << r.exit_code << "\nstderr: " << r.err);
  if (r.exit_code == 0) return true;
  CHECK(r.exit_code == 3);  // not a crash (>= 128), a timeout (124) or an internal error
  CHECK(r.err.find(names) != std::string::npos);
  return false;
}

}  // namespace

TEST_CASE("damaged Frontend IRs go through the chain or are refused by name" * doctest::test_suite("heavy")) {
  const std::string dir = cct::testing::temp_dir("pipeline_fuzz");
  const std::string fir = dir + "/fz.fir.json", bin = cct::testing::bin_dir() + "/";
  const std::string good = read_file(cct::testing::source_dir() + "/examples/mappings/tiny_cnn_b4.fir.json");
  std::mt19937_64 rng(11);
  int refused = 0, compiled = 0;
  for (int i = 0; i < 60; ++i) {
    CAPTURE(i);
    cct::testing::write_file(fir, mutate_numbers(good, rng));
    if (!stage(bin + "gemini " + fir + " --arch chip-64tops --no-progress -o " + dir + "/fz.map.json", "fz.fir.json")) {
      ++refused;
      continue;
    }
    bool ok = stage(bin + "irgen " + fir + " " + dir + "/fz.map.json --arch chip-64tops -o " + dir + "/fz.sir.json",
                    "fz.") &&
              stage(bin + "asm " + dir + "/fz.sir.json --fir " + fir + " --arch chip-64tops -o " + dir + "/fz.asm.json",
                    "fz.") &&
              stage(bin + "zebusim " + dir + "/fz.asm.json --arch chip-64tops -o " + dir + "/fz.trace.json", "fz.");
    (ok ? compiled : refused) += 1;
  }
  MESSAGE(compiled << " damaged FIRs compiled and ran, " << refused << " refused");
  CHECK(refused > 10);
  CHECK(compiled > 10);
}
