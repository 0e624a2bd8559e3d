// The whole tool chain through its command lines, as a user or a Makefile runs
// it: determinism, checks of every intermediate file, and the size of the diff
// a one-line change upstream causes downstream.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "pipeline_util.hpp"
#include "testing.hpp"

namespace fs = std::filesystem;
using cct::testing::read_file;
using cct::testing::run;
using cct::testing::run_tool;

using pipeline_test::bin;
using pipeline_test::must;

namespace {

// Number of lines that differ between two files (diff's < and > lines).
int diff_lines(const std::string& a, const std::string& b) {
  auto r = run("diff " + a + " " + b + " | grep -c '^[<>]' || true");
  return std::stoi(r.out.empty() ? "0" : r.out);
}

int line_count(const std::string& path) {
  std::string s = read_file(path);
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace

TEST_CASE("the bundled model runs through every stage, byte-identically twice, on both architectures") {
  const std::string model = cct::testing::source_dir() + "/examples/tiny_resnet/tiny_resnet.onnx";
  for (const std::string arch : {"zebu-1core", "chip-64tops"}) {
    CAPTURE(arch);
    pipeline_test::check_twice_identical("pipeline", model, "tiny", arch, 1);
  }
}

TEST_CASE("changing the batch changes only the shapes of the Frontend IR") {
  std::string d1 = cct::testing::temp_dir("pipeline_batch1"), d4 = cct::testing::temp_dir("pipeline_batch4");
  const std::string model = cct::testing::source_dir() + "/examples/tiny_resnet/tiny_resnet.onnx";
  must(run(bin("onnx2fir") + " " + model + " --quiet --calib-random 4 --batch 1 -o " + d1 + "/t.fir.json"), "b1");
  must(run(bin("onnx2fir") + " " + model + " --quiet --calib-random 4 --batch 4 -o " + d4 + "/t.fir.json"), "b4");
  auto r = run("diff " + d1 + "/t.fir.json " + d4 + "/t.fir.json | grep '^[<>]'");
  REQUIRE(!r.out.empty());
  size_t changed = 0;
  for (size_t start = 0, end; (end = r.out.find('\n', start)) != std::string::npos; start = end + 1) {
    std::string line = r.out.substr(start, end - start);
    CAPTURE(line);
    CHECK(line.find("_shape\": [[") != std::string::npos);
    ++changed;
  }
  // Exactly the shape lines whose first tensor carries the batch change, once on each side.
  auto batch1_shapes = run("grep -c '_shape\": \\[\\[1,' " + d1 + "/t.fir.json");
  CHECK(changed == 2 * static_cast<size_t>(std::stoi(batch1_shapes.out)));
}

TEST_CASE("a one-line edit of a hand-written mapping gives a small downstream diff") {
  const std::string ex = cct::testing::source_dir() + "/examples/mappings";
  const std::string fir = ex + "/tiny_cnn_b4.fir.json";
  const std::string map = ex + "/tiny_cnn_b4.chip-64tops.mapping.json";
  std::string d = cct::testing::temp_dir("pipeline_mapping_edit");
  std::string text = read_file(map);
  const std::string from = "\"partition\": {\"h\": 2}", to = "\"partition\": {\"w\": 2}";
  REQUIRE(text.find(from) != std::string::npos);
  text.replace(text.find(from), from.size(), to);
  cct::testing::write_file(d + "/edited.map.json", text);
  for (const std::string v : {"orig", "edited"}) {
    std::string m = v == "orig" ? map : d + "/edited.map.json";
    must(run(bin("irgen") + " " + fir + " " + m + " --arch chip-64tops -o " + d + "/" + v + ".sir.json"), "irgen " + v);
    must(run(bin("asm") + " " + d + "/" + v + ".sir.json --fir " + fir + " --arch chip-64tops -o " + d + "/" + v + ".asm"),
         "asm " + v);
  }
  CHECK(diff_lines(map, d + "/edited.map.json") == 2);
  int sir_diff = diff_lines(d + "/orig.sir.json", d + "/edited.sir.json");
  int asm_diff = diff_lines(d + "/orig.asm", d + "/edited.asm");
  int sir_lines = line_count(d + "/orig.sir.json"), asm_lines = line_count(d + "/orig.asm");
  MESSAGE("mapping edit: SIR diff " << sir_diff << " of " << sir_lines << " lines, asm diff " << asm_diff << " of "
                                    << asm_lines << " lines");
  CHECK(sir_diff > 0);
  CHECK(sir_diff * 10 < sir_lines);  // under 10% of the Scheduler IR
  CHECK(asm_diff > 0);
  // The change stays local: changed instructions belong to the edited layer
  // (conv1, layer index 1), the layer feeding it (index 0: it sends conv1's
  // cores the regions they now read) or the layer reading its output (conv2,
  // index 2); transfer ids and tags elsewhere keep their numbers.
  auto slyrs = run("diff " + d + "/orig.asm " + d + "/edited.asm | grep '^[<>]' | grep -o '\"slyr\": *[0-9]*' | "
                   "grep -o '[0-9]*$' | sort | uniq -c");
  MESSAGE("changed instructions by slyr:\n" << slyrs.out);
  auto local = run("diff " + d + "/orig.asm " + d + "/edited.asm | grep '^[<>]' | grep -c '\"slyr\": *[012],' || true");
  CHECK(std::stoi(local.out) == asm_diff);
}
