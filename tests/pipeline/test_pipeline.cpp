// The whole tool chain through its command lines, as a user or a Makefile runs
// it: determinism, checks of every intermediate file, and the size of the diff
// a one-line change upstream causes downstream.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "testing.hpp"

namespace fs = std::filesystem;
using cct::testing::read_file;
using cct::testing::run;
using cct::testing::run_tool;

namespace {

std::string bin(const std::string& tool) { return cct::testing::bin_dir() + "/" + tool; }

void must(const cct::testing::RunResult& r, const std::string& what) {
  INFO(what << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
}

// Runs model -> trace for one architecture into dir; returns the file stem.
std::string run_chain(const std::string& dir, const std::string& arch, int batch) {
  const std::string src = cct::testing::source_dir();
  const std::string fir = dir + "/tiny.fir.json", stem = dir + "/tiny." + arch;
  must(run(bin("onnx2fir") + " " + src + "/examples/tiny_resnet/tiny_resnet.onnx --quiet --calib-random 4 --batch " +
           std::to_string(batch) + " --data-dir " + dir + "/data -o " + fir),
       "onnx2fir");
  must(run(bin("gemini") + " " + fir + " --arch " + arch + " -o " + stem + ".map.json"), "gemini");
  must(run(bin("irgen") + " " + fir + " " + stem + ".map.json --arch " + arch + " -o " + stem + ".sir.json"), "irgen");
  must(run(bin("irgen") + " --check " + stem + ".sir.json --arch " + arch + " --fir " + fir), "irgen --check");
  must(run(bin("asm") + " " + stem + ".sir.json --fir " + fir + " --arch " + arch + " -o " + stem + ".asm"), "asm");
  must(run(bin("asm") + " --check " + stem + ".asm --arch " + arch), "asm --check");
  must(run(bin("zebusim") + " " + stem + ".asm --arch " + arch + " -o " + stem + ".trace"), "zebusim");
  auto summary = run(bin("traceview") + " " + stem + ".trace --arch " + arch + " --fir " + fir);
  must(summary, "traceview");
  cct::testing::write_file(stem + ".summary.txt", summary.out);
  CHECK(summary.out.find("total") != std::string::npos);
  return stem;
}

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
  for (const std::string arch : {"zebu-1core", "chip-64tops"}) {
    CAPTURE(arch);
    std::string a = cct::testing::temp_dir("pipeline_" + arch + "_a");
    std::string b = cct::testing::temp_dir("pipeline_" + arch + "_b");
    std::string sa = run_chain(a, arch, 1);
    std::string sb = run_chain(b, arch, 1);
    for (const std::string ext : {".map.json", ".sir.json", ".asm", ".trace", ".summary.txt"}) {
      CAPTURE(ext);
      std::string x = read_file(sa + ext), y = read_file(sb + ext);
      CHECK(!x.empty());
      // The summary names its trace file; everything else must be identical.
      if (ext == ".summary.txt") {
        auto strip = [](std::string s, const std::string& d) {
          for (size_t p; (p = s.find(d)) != std::string::npos;) s.erase(p, d.size());
          return s;
        };
        x = strip(x, a);
        y = strip(y, b);
      }
      CHECK(x == y);
    }
    CHECK(read_file(a + "/tiny.fir.json") == read_file(b + "/tiny.fir.json"));
    for (const auto& e : fs::directory_iterator(a + "/data"))
      CHECK(read_file(e.path().string()) == read_file(b + "/data/" + e.path().filename().string()));
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
