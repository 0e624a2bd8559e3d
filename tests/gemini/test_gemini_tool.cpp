// gemini as a user runs it: help, errors and exit codes, outputs, invalid
// mappings rejected by --evaluate.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>

#include "gemini_test_util.hpp"
#include "mapping/mapping.hpp"
#include "support/error.hpp"
#include "support/io.hpp"
#include "testing.hpp"

using namespace cct;

namespace {

std::string tiny() { return gemini_test::tiny_fir(); }

// The hand-written example mapping with one change.
std::string edited_mapping(const std::string& dir, const std::string& name,
                           const std::function<void(mapping::Mapping&)>& edit) {
  mapping::Mapping m = mapping::read_mapping(gemini_test::tiny_mapping());
  edit(m);
  std::string path = dir + "/" + name;
  // Written without the checks: it is meant to be wrong.
  cct::testing::write_file(path, format_json(mapping::to_json(m)) + "\n");
  return path;
}

}  // namespace

TEST_CASE("--help and --version") {
  auto r = cct::testing::run_tool("gemini", "--help");
  CHECK(r.exit_code == 0);
  for (const char* opt : {"--arch", "--objective", "--seed", "--effort", "--time-limit", "--baseline", "--report",
                          "--evaluate", "-o", "--no-validate"})
    CHECK_MESSAGE(r.out.find(opt) != std::string::npos, opt);
  r = cct::testing::run_tool("gemini", "--version");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("gemini") == 0);
}

TEST_CASE("usage, input and I/O errors have distinct exit codes and say what is wrong") {
  std::string dir = cct::testing::temp_dir("gemini_errors");
  auto r = cct::testing::run_tool("gemini", "");
  CHECK(r.exit_code == kExitUsage);
  r = cct::testing::run_tool("gemini", tiny());
  CHECK(r.exit_code == kExitUsage);
  CHECK(r.err.find("--arch") != std::string::npos);
  r = cct::testing::run_tool("gemini", tiny() + " --arch chip-64tops --objective speed");
  CHECK(r.exit_code == kExitUsage);
  CHECK(r.err.find("latency, energy or edp") != std::string::npos);
  r = cct::testing::run_tool("gemini", tiny() + " --arch chip-64tops --effort 0");
  CHECK(r.exit_code == kExitUsage);
  r = cct::testing::run_tool("gemini", tiny() + " --arch chip-64tops --time-limit -1");
  CHECK(r.exit_code == kExitUsage);
  r = cct::testing::run_tool("gemini", tiny() + " --arch chip-64tops --baseline parallel");
  CHECK(r.exit_code == kExitUsage);
  r = cct::testing::run_tool("gemini", dir + "/missing.json --arch chip-64tops");
  CHECK(r.exit_code == kExitIo);
  cct::testing::write_file(dir + "/bad.json", "{\"conv\": {\"layer_index\": 0}");
  r = cct::testing::run_tool("gemini", dir + "/bad.json --arch chip-64tops");
  CHECK(r.exit_code == kExitInvalidInput);
  CHECK(r.err.find("bad.json") != std::string::npos);
  r = cct::testing::run_tool("gemini", tiny() + " --arch no-such-chip");
  CHECK(r.exit_code == kExitUsage);
}

TEST_CASE("outputs: stdout by default, -o FILE, .zst, stdin, byte-identical reruns") {
  std::string dir = cct::testing::temp_dir("gemini_outputs");
  auto a = cct::testing::run_tool("gemini", tiny() + " --arch chip-64tops --seed 5");
  REQUIRE(a.exit_code == 0);
  auto b = cct::testing::run_tool("gemini", tiny() + " --arch chip-64tops --seed 5 -o " + dir + "/m.json.zst");
  REQUIRE(b.exit_code == 0);
  CHECK(b.out.empty());
  CHECK(read_input(dir + "/m.json.zst") == a.out);
  // From stdin the mapping names the FIR "stdin"; otherwise the same.
  auto c = cct::testing::run_tool("gemini", "- --arch chip-64tops --seed 5", cct::testing::read_file(tiny()));
  REQUIRE(c.exit_code == 0);
  mapping::Mapping from_stdin = mapping::parse_mapping(c.out, "stdin");
  CHECK(from_stdin.fir == "stdin");
  mapping::Mapping m = mapping::parse_mapping(a.out, "out");
  CHECK(from_stdin.segments == m.segments);
  CHECK(m.arch == "chip-64tops");
  CHECK(m.fir == "tiny_cnn_b4");
  auto again = cct::testing::run_tool("gemini", tiny() + " --arch chip-64tops --seed 5");
  CHECK(again.out == a.out);
  // The baseline and the single-core mapping.
  auto seq = cct::testing::run_tool("gemini", tiny() + " --arch chip-64tops --baseline sequential");
  REQUIRE(seq.exit_code == 0);
  mapping::Mapping s = mapping::parse_mapping(seq.out, "seq");
  for (const auto& sg : s.segments) CHECK(sg.layers.size() == 1);
  auto one = cct::testing::run_tool("gemini", tiny() + " --arch zebu-1core");
  REQUIRE(one.exit_code == 0);
  for (const auto& sg : mapping::parse_mapping(one.out, "one").segments) CHECK(sg.layers[0].cores == std::vector<int64_t>{0});
}

// Issue 20: --timeline /dev/full exited 4 after writing the mapping.
TEST_CASE("the mapping and its timeline are one unit: a failed write leaves neither") {
  std::string dir = cct::testing::temp_dir("gemini_unit");
  auto r = cct::testing::run_tool("gemini", tiny() + " --arch chip-64tops --timeline /dev/full -o " + dir + "/m.json");
  CHECK(r.exit_code == kExitIo);
  CHECK(r.err.find("/dev/full") != std::string::npos);
  CHECK(std::filesystem::is_empty(dir));  // no mapping, no temporary
  r = cct::testing::run_tool("gemini", tiny() + " --arch chip-64tops --timeline " + dir + "/t.json -o /dev/full");
  CHECK(r.exit_code == kExitIo);
  CHECK(std::filesystem::is_empty(dir));
  r = cct::testing::run_tool("gemini", tiny() + " --arch chip-64tops --timeline " + dir + "/t.json -o " + dir + "/m.json");
  CHECK(r.exit_code == 0);
  CHECK(std::filesystem::exists(dir + "/t.json"));
  CHECK(std::filesystem::exists(dir + "/m.json"));
}

TEST_CASE("--report: per segment and layer the cores, partition, cycles, energy and binding resource") {
  auto r = cct::testing::run_tool("gemini", tiny() + " --arch chip-64tops --report -o /dev/null");
  REQUIRE(r.exit_code == 0);
  for (const char* s : {"predicted latency", "MAC utilisation", "energy", "segment 0", "conv1", "binding", "search"})
    CHECK_MESSAGE(r.err.find(s) != std::string::npos, s);
  r = cct::testing::run_tool("gemini", tiny() + " --arch chip-64tops --evaluate " + gemini_test::tiny_mapping());
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("predicted latency") != std::string::npos);
  CHECK(r.out.empty());
}

TEST_CASE("invalid mappings are rejected with the JSON pointer and the reason") {
  std::string dir = cct::testing::temp_dir("gemini_invalid");
  // gemini --evaluate and irgen run the same checks and refuse the same way.
  auto check = [&](const std::string& path, const std::string& what) {
    auto r = cct::testing::run_tool("gemini", tiny() + " --arch chip-64tops --evaluate " + path);
    CHECK(r.exit_code == kExitInvalidInput);
    CHECK_MESSAGE(r.err.find(what) != std::string::npos, r.err);
    r = cct::testing::run_tool("irgen", tiny() + " " + path + " --arch chip-64tops -o /dev/null");
    CHECK(r.exit_code == kExitInvalidInput);
    CHECK_MESSAGE(r.err.find(what) != std::string::npos, r.err);
  };
  check(edited_mapping(dir, "twice.json",
                       [](mapping::Mapping& m) {
                         REQUIRE(m.segments[0].layers[1].cores.size() > 1);
                         m.segments[0].layers[1].cores[1] = m.segments[0].layers[1].cores[0];
                       }),
        "/segments/0/layers/1/cores/1: core 1 is used twice by layer \"conv1\"");
  {
    // Layers sharing a core are valid: irgen builds it and gemini's model prices it.
    const std::string shared = edited_mapping(dir, "shared.json", [](mapping::Mapping& m) { m.segments[0].layers[1].cores[0] = 0; });
    auto r = cct::testing::run_tool("gemini", tiny() + " --arch chip-64tops --evaluate " + shared);
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    CHECK_MESSAGE(r.err.find("predicted latency") != std::string::npos, r.err);
    r = cct::testing::run_tool("irgen", tiny() + " " + shared + " --arch chip-64tops -o /dev/null");
    CHECK_MESSAGE(r.exit_code == 0, r.err);
  }
  check(edited_mapping(dir, "missing.json", [](mapping::Mapping& m) { m.segments[1].layers.pop_back(); }),
        "layer \"gap\" is not mapped");
  check(edited_mapping(dir, "divide.json",
                       [](mapping::Mapping& m) {
                         auto& l = m.segments[2].layers[0];  // fc: 10 output channels
                         l.partition = {1, 3, 1, 1};
                         l.cores = {0, 1, 2};
                       }),
        "3 does not divide the 10 output channels of \"fc\"");
  check(edited_mapping(dir, "arch.json", [](mapping::Mapping& m) { m.segments[0].layers[0].cores[0] = 8; }),
        "core 8");
}
