// The tool chain through its command lines, as a user or a Makefile runs it;
// shared by the fast (bundled model) and slow (torchvision ResNet-50) tests.
// Every tool validates its inputs and outputs against schemas/ by default, so
// a chain that finishes has checked each intermediate file twice: when it was
// written and when the next stage read it.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "testing.hpp"

namespace pipeline_test {

inline std::string bin(const std::string& tool) { return cct::testing::bin_dir() + "/" + tool; }

inline void must(const cct::testing::RunResult& r, const std::string& what) {
  INFO(what << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
}

// Runs model -> Frontend IR -> mapping (gemini) -> Scheduler IR -> program ->
// trace -> summary into dir, with irgen --check and asm --check; returns the
// stem of the per-architecture files (dir/NAME.ARCH).
inline std::string run_chain(const std::string& dir, const std::string& model, const std::string& name,
                             const std::string& arch, int batch) {
  const std::string fir = dir + "/" + name + ".fir.json", stem = dir + "/" + name + "." + arch;
  must(cct::testing::run(bin("onnx2fir") + " " + model + " --quiet --calib-random 4 --batch " + std::to_string(batch) +
                         " --data-dir " + dir + "/data -o " + fir),
       "onnx2fir");
  must(cct::testing::run(bin("gemini") + " " + fir + " --arch " + arch + " --no-progress -o " + stem + ".map.json"),
       "gemini");
  must(cct::testing::run(bin("irgen") + " " + fir + " " + stem + ".map.json --arch " + arch + " -o " + stem + ".sir.json"),
       "irgen");
  must(cct::testing::run(bin("irgen") + " --check " + stem + ".sir.json --arch " + arch + " --fir " + fir), "irgen --check");
  must(cct::testing::run(bin("asm") + " " + stem + ".sir.json --fir " + fir + " --arch " + arch + " -o " + stem + ".asm"),
       "asm");
  must(cct::testing::run(bin("asm") + " --check " + stem + ".asm --arch " + arch), "asm --check");
  must(cct::testing::run(bin("zebusim") + " " + stem + ".asm --arch " + arch + " -o " + stem + ".trace"), "zebusim");
  auto summary = cct::testing::run(bin("traceview") + " " + stem + ".trace --arch " + arch + " --fir " + fir + " --summary --html " +
                                   stem + ".html");
  must(summary, "traceview");
  cct::testing::write_file(stem + ".summary.txt", summary.out);
  CHECK(summary.out.find("total") != std::string::npos);
  CHECK(std::filesystem::file_size(stem + ".html") > 0);
  return stem;
}

// Runs the chain twice in fresh directories and checks every file is the same
// byte for byte (the summary names its trace file, so that is stripped).
inline void check_twice_identical(const std::string& tag, const std::string& model, const std::string& name,
                                  const std::string& arch, int batch) {
  namespace fs = std::filesystem;
  std::string a = cct::testing::temp_dir(tag + "_" + arch + "_a");
  std::string b = cct::testing::temp_dir(tag + "_" + arch + "_b");
  std::string sa = run_chain(a, model, name, arch, batch);
  std::string sb = run_chain(b, model, name, arch, batch);
  for (const std::string ext : {".map.json", ".sir.json", ".asm", ".trace", ".summary.txt", ".html"}) {
    CAPTURE(ext);
    std::string x = cct::testing::read_file(sa + ext), y = cct::testing::read_file(sb + ext);
    CHECK(!x.empty());
    if (ext == ".summary.txt" || ext == ".html") {
      auto strip = [](std::string s, const std::string& d) {
        for (size_t p; (p = s.find(d)) != std::string::npos;) s.erase(p, d.size());
        return s;
      };
      x = strip(x, a);
      y = strip(y, b);
    }
    CHECK(x == y);
  }
  CHECK(cct::testing::read_file(a + "/" + name + ".fir.json") == cct::testing::read_file(b + "/" + name + ".fir.json"));
  for (const auto& e : fs::directory_iterator(a + "/data"))
    CHECK(cct::testing::read_file(e.path().string()) == cct::testing::read_file(b + "/data/" + e.path().filename().string()));
}

}  // namespace pipeline_test
