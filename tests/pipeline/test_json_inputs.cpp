// Every tool's JSON input damaged the ways an outside fuzzing campaign found
// (issue 20): each of the six readers accepts a UTF-8 byte-order mark and
// refuses deep nesting, duplicate keys and out-of-range numbers as invalid
// input (exit 3) naming the file, instead of crashing (SIGSEGV), exiting 5
// ("a bug") or reading garbage.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "pipeline_util.hpp"
#include "testing.hpp"

using cct::testing::read_file;
using cct::testing::run;
using cct::testing::write_file;
using pipeline_test::bin;
using pipeline_test::must;

namespace {

struct Reader {
  std::string format;    // names the test files
  std::string good;      // a valid input
  std::string command;   // the tool reading it; INPUT stands for the file
  bool json_lines = false;
};

std::string with_input(std::string command, const std::string& input) {
  return command.replace(command.find("INPUT"), 5, input);
}

}  // namespace

TEST_CASE("every reader accepts a byte-order mark and refuses deep nesting, duplicate keys, huge numbers (exit 3)") {
  const std::string dir = cct::testing::temp_dir("json_inputs");
  const std::string fir = cct::testing::source_dir() + "/examples/mappings/tiny_cnn_b4.fir.json";
  const std::string arch = cct::testing::source_dir() + "/examples/arch/chip-64tops.json";
  must(run(bin("gemini") + " " + fir + " --arch chip-64tops --no-progress -o " + dir + "/t.map.json"), "gemini");
  must(run(bin("irgen") + " " + fir + " " + dir + "/t.map.json --arch chip-64tops -o " + dir + "/t.sir.json"), "irgen");
  must(run(bin("asm") + " " + dir + "/t.sir.json --fir " + fir + " --arch chip-64tops -o " + dir + "/t.asm.json"), "asm");
  must(run(bin("zebusim") + " " + dir + "/t.asm.json --arch chip-64tops -o " + dir + "/t.trace.json"), "zebusim");
  const std::vector<Reader> readers = {
      {"fir", fir, bin("gemini") + " INPUT --arch chip-64tops --no-progress -o " + dir + "/out.map.json"},
      {"arch", arch, bin("gemini") + " " + fir + " --arch INPUT --no-progress -o " + dir + "/out.map.json"},
      {"map", dir + "/t.map.json", bin("irgen") + " " + fir + " INPUT --arch chip-64tops -o " + dir + "/out.sir.json"},
      {"sir", dir + "/t.sir.json", bin("irgen") + " --check INPUT --arch chip-64tops"},
      {"asm", dir + "/t.asm.json", bin("asm") + " --check INPUT --arch chip-64tops", true},
      {"trace", dir + "/t.trace.json", bin("traceview") + " INPUT --summary --arch chip-64tops", true},
  };
  for (const Reader& r : readers) {
    CAPTURE(r.format);
    const std::string good = read_file(r.good);
    auto expect = [&](const std::string& name, const std::string& text, int code, const std::string& fragment) {
      const std::string path = dir + "/" + name + "." + r.format + ".json";
      write_file(path, text);
      // Bounded in time (no ulimit -v: the sanitizer build, where this runs
      // in CI, reserves terabytes of address space for its shadow memory).
      auto res = run("timeout 60 " + with_input(r.command, path));
      INFO(name << ": exit " << res.exit_code << "\nstderr: " << res.err);
      CHECK(res.exit_code == code);
      if (code != 0) {
        CHECK(res.err.find(path) != std::string::npos);
        CHECK(res.err.find(fragment) != std::string::npos);
      }
    };
    expect("bom", "\xEF\xBB\xBF" + good, 0, "");
    if (r.json_lines) {
      // The line reader is not recursive: a deep line is simply not an instruction.
      expect("deep", std::string(200000, '[') + "\n", 3, "");
      continue;
    }
    expect("deep", std::string(200000, '['), 3, ":1: column 257: invalid JSON: arrays and objects nested deeper than 256 levels");
    std::string dup = good;
    dup.insert(dup.find('{') + 1, "\"dup_key\": 0, \"dup_key\": 0, ");
    expect("dup", dup, 3, "invalid JSON: duplicate key \"dup_key\"");
    std::string big = good;
    big.insert(big.find('{') + 1, "\"big_number\": 581e308, ");
    expect("big", big, 3, "invalid JSON: number 581e308 is out of range");
  }
}
