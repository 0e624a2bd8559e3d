// Every tool through lib/support/cli: --help states each default once, a bad
// option value names the option, irgen --check and asm --check say what they
// checked, zebusim prints rates as plain numbers.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "support/error.hpp"
#include "testing.hpp"

using cct::testing::run;
using cct::testing::run_tool;

namespace {

const std::vector<std::string> kTools = {"onnx2fir", "gemini", "irgen", "asm", "zebusim", "traceview"};

// The option entries of a --help text, each with its wrapped lines joined.
std::vector<std::string> option_entries(const std::string& help) {
  std::vector<std::string> entries;
  bool in_options = false;
  size_t p = 0;
  while (p < help.size()) {
    size_t e = help.find('\n', p);
    if (e == std::string::npos) e = help.size();
    std::string line = help.substr(p, e - p);
    p = e + 1;
    if (line.rfind("  -", 0) == 0 || line.rfind("      --", 0) == 0) {
      entries.push_back(line);
      in_options = true;
    } else if (in_options && line.size() > 20 && line.find_first_not_of(' ') >= 20) {
      entries.back() += " " + line.substr(line.find_first_not_of(' '));
    } else {
      in_options = false;
    }
  }
  return entries;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("--help of every tool states each default once") {
  for (const auto& tool : kTools) {
    CAPTURE(tool);
    auto r = run_tool(tool, "--help");
    REQUIRE(r.exit_code == 0);
    auto entries = option_entries(r.out);
    CHECK(entries.size() > 3);
    for (const auto& e : entries) {
      CAPTURE(e);
      CHECK(count(e, "default") <= 1 + count(e, "the default"));  // "in multiples of the default (default: 1)"
      CHECK(count(e, "(default") <= 1);
    }
  }
  // The case that was repeated: cxxopts adds "(default: latency)" to the description.
  auto gemini = run_tool("gemini", "--help");
  CHECK(gemini.out.find("(default latency)") == std::string::npos);
  CHECK(gemini.out.find("(default: latency)") != std::string::npos);
}

TEST_CASE("a value that does not parse is refused naming its option") {
  struct Case {
    std::string tool, args, option, value;
  };
  for (const Case& c : std::vector<Case>{{"gemini", "x.fir.json --arch chip-64tops --seed abc", "--seed", "abc"},
                                         {"gemini", "x.fir.json --arch chip-64tops --effort=2x", "--effort", "2x"},
                                         {"irgen", "a b --arch zebu-1core --stream-tolerance much", "--stream-tolerance", "much"},
                                         {"traceview", "t.trace --top=3x", "--top", "3x"}}) {
    CAPTURE(c.args);
    auto r = run_tool(c.tool, c.args);
    CHECK(r.exit_code == cct::kExitUsage);
    CHECK(r.err.find("option " + c.option + ": cannot read '" + c.value + "'") != std::string::npos);
    CHECK(r.err.find("(see --help)") != std::string::npos);
    CHECK(count(r.err, "\n") == 1);
  }
}

TEST_CASE("irgen --check and asm --check say what they checked; zebusim's rates are plain numbers") {
  const std::string dir = cct::testing::temp_dir("cli_checks"), fir = dir + "/t.fir.json", arch = " --arch chip-64tops";
  auto must = [](const cct::testing::RunResult& r) {
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return r;
  };
  must(run_tool("onnx2fir", cct::testing::source_dir() + "/examples/tiny_resnet/tiny_resnet.onnx --quiet --calib-random 1 --data-dir " +
                                dir + "/data -o " + fir));
  must(run_tool("gemini", fir + arch + " --no-progress -o " + dir + "/t.map.json"));
  must(run_tool("irgen", fir + " " + dir + "/t.map.json" + arch + " -o " + dir + "/t.sir.json"));
  must(run_tool("asm", dir + "/t.sir.json --fir " + fir + arch + " -o " + dir + "/t.asm"));

  auto irgen = must(run_tool("irgen", "--check " + dir + "/t.sir.json" + arch + " --fir " + fir));
  CHECK(irgen.out == "");
  CHECK(count(irgen.err, "\n") == 1);
  CHECK(irgen.err.rfind("irgen: " + dir + "/t.sir.json: OK: ", 0) == 0);
  CHECK(irgen.err.find(" workloads on 8 cores: ") != std::string::npos);
  CHECK(irgen.err.find("against the Frontend IR") != std::string::npos);
  auto no_fir = must(run_tool("irgen", "--check " + dir + "/t.sir.json" + arch));
  CHECK(no_fir.err.find("no --fir") != std::string::npos);

  auto asm_check = must(run_tool("asm", "--check " + dir + "/t.asm" + arch));
  CHECK(asm_check.out == "");
  CHECK(count(asm_check.err, "\n") == 1);
  CHECK(asm_check.err.rfind("asm: " + dir + "/t.asm: OK: ", 0) == 0);
  CHECK(asm_check.err.find(" instructions on 8 cores: ") != std::string::npos);
  // A failing check still fails, and says nothing of success.
  auto bad = run("sed '0,/\"Prev_Insts\": \\[\\]/s//\"Prev_Insts\": [\"LD\"]/' " + dir + "/t.asm > " + dir + "/bad.asm");
  REQUIRE(bad.exit_code == 0);
  auto failed = run_tool("asm", "--check " + dir + "/bad.asm" + arch);
  CHECK(failed.exit_code == cct::kExitCheckFailed);
  CHECK(failed.err.find(": OK: ") == std::string::npos);

  auto sim = must(run_tool("zebusim", dir + "/t.asm" + arch + " --functional --fir " + fir + " --fir-data " + dir +
                                          "/data --sir " + dir + "/t.sir.json --input " + dir +
                                          "/data/src_quantize_1_1_input_activation1.npy --golden " + dir + "/data --stats -o /dev/null"));
  CAPTURE(sim.err);
  auto at = sim.err.find("zebusim: functional: ");
  REQUIRE(at != std::string::npos);
  const std::string line = sim.err.substr(at, sim.err.find('\n', at) - at);
  CHECK(line.find("MAC/s") != std::string::npos);
  CHECK(line.find("e+") == std::string::npos);
  CHECK(line.find("e-") == std::string::npos);
}

TEST_CASE("the README's walk-through excerpts are what the tools write") {
  const std::string script = "/usr/bin/python3 " + cct::testing::source_dir() + "/scripts/readme_excerpts.py --bin " +
                             cct::testing::bin_dir();
  auto r = run(script + " --check");
  CAPTURE(r.out);
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("4 excerpts match the run") != std::string::npos);
  // The check can fail: a stale excerpt (the FIR's old "module_list") is reported with its diff.
  const std::string dir = cct::testing::temp_dir("cli_readme");
  std::string readme = cct::testing::read_file(cct::testing::source_dir() + "/README.md");
  auto at = readme.find("\"file_list\": {");
  REQUIRE(at != std::string::npos);
  readme.replace(at, 12, "\"module_list\"");
  cct::testing::write_file(dir + "/README.md", readme);
  auto stale = run(script + " --check --readme " + dir + "/README.md");
  CHECK(stale.exit_code == 1);
  CHECK(stale.out.find("+      \"file_list\"") != std::string::npos);
  CHECK(stale.err.find("stale") != std::string::npos);
}
