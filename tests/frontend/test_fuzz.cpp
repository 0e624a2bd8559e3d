// Fuzzing the binary model readers by mutation: corrupted ONNX and TFLite
// files never crash, hang or throw anything but cct::Error naming the file,
// whether the damage is caught while reading or only when the graph is
// compiled (shapes, weights and quantization that no longer fit together).
// Run under AddressSanitizer in CI, where a bad read is a failure too.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <random>

#include "frontend/onnx_import.hpp"
#include "frontend/pipeline.hpp"
#include "frontend/tflite_import.hpp"
#include "onnx_builder.hpp"
#include "support/error.hpp"
#include "testing.hpp"

using namespace cct;
using cct::testing::OnnxBuilder;

namespace {

// Binary mutations: truncation, a few random bytes, and 32-bit words set to
// values that break lengths and offsets (flatbuffers and protobuf both keep
// them as little-endian integers).
std::string mutate_bytes(const std::string& in, std::mt19937_64& rng) {
  std::string t = in;
  auto pos = [&] { return static_cast<size_t>(rng() % t.size()); };
  switch (rng() % 4) {
    case 0: t.resize(pos()); break;
    case 1:
      for (int i = 0, n = 1 + int(rng() % 8); i < n; ++i) t[pos()] = static_cast<char>(rng());
      break;
    case 2: {
      static constexpr uint32_t kWords[] = {0, 1, 0x7fffffffu, 0x80000000u, 0xffffffffu, 0x10000u, 0xfffffff0u};
      size_t p = pos() & ~size_t{3};
      uint32_t v = kWords[rng() % (sizeof kWords / sizeof kWords[0])];
      for (int b = 0; b < 4 && p + size_t(b) < t.size(); ++b) t[p + size_t(b)] = static_cast<char>(v >> (8 * b));
      break;
    }
    default: {
      size_t p = pos();
      t.erase(p, std::min<size_t>(t.size() - p, 1 + rng() % 32));
      break;
    }
  }
  return t;
}

enum class Format { Onnx, Tflite };

// A failing input, kept for reproduction with onnx2fir.
std::string save(const std::string& bytes, const std::string& name, uint64_t seed, int round) {
  std::string path = cct::testing::temp_dir("frontend_fuzz_" + std::to_string(seed) + "_" + std::to_string(round)) + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// Reads (and with `compile`, compiles) `rounds` mutations of `bytes`; returns
// how many were rejected. Anything but cct::Error naming `name` fails.
int fuzz(Format f, const std::string& bytes, const std::string& name, int rounds, bool compile, uint64_t seed,
         const frontend::ImportOptions& options = {}) {
  // CCT_FUZZ_SCALE=N runs N times the rounds from seeds N times further on
  // (a deeper search by hand; the thresholds below scale with it).
  const int scale = std::max(1, std::atoi(std::getenv("CCT_FUZZ_SCALE") ? std::getenv("CCT_FUZZ_SCALE") : "1"));
  rounds *= scale;
  seed *= uint64_t(scale);
  std::mt19937_64 rng(seed);
  int rejected = 0;
  for (int i = 0; i < rounds; ++i) {
    const std::string m = mutate_bytes(bytes, rng);
    CAPTURE(i);
    try {
      interp::Graph g = f == Format::Onnx ? frontend::import_onnx_bytes(m, name, ".", options)
                                             : frontend::import_tflite_bytes(m, name, options);
      if (compile) {
        frontend::CompileOptions o;
        o.calib_random = 1;
        frontend::compile(std::move(g), o);
      }
    } catch (const Error& e) {
      ++rejected;
      const std::string what = e.what();
      if (what.rfind(name, 0) != 0 || e.code() == kExitOk)
        FAIL_CHECK("round " << i << " (input saved as " << save(m, name, seed, i) << "): " << what);
    } catch (const std::exception& e) {
      FAIL_CHECK("round " << i << " (input saved as " << save(m, name, seed, i) << "): not a cct::Error: " << std::string(e.what()));
    }
  }
  return rejected;
}

OnnxBuilder small_cnn() {
  OnnxBuilder b;
  b.input("x", {1, 3, 8, 8}).output("y", {1, 4});
  cct::testing::add_conv_bn(b, "x", "bn");
  b.node("Relu", {"bn"}, {"r"});
  b.node("GlobalAveragePool", {"r"}, {"p"});
  b.node("Flatten", {"p"}, {"y"});
  return b;
}

}  // namespace

TEST_CASE("mutated ONNX models are read or rejected with the file's name") {
  const std::string bytes = small_cnn().bytes();
  int rejected = fuzz(Format::Onnx, bytes, "mutated.onnx", 400, true, 1);
  MESSAGE(rejected << " mutated ONNX models rejected");
  CHECK(rejected > 100);  // the mutations do reach the checks
}

TEST_CASE("mutated TFLite models are read or rejected with the file's name") {
  const std::string dir = cct::testing::reference_dir() + "/tflite/";
  for (std::string file : {"hello_world_int8.tflite", "hello_world_float.tflite"}) {
    CAPTURE(file);
    int rejected = fuzz(Format::Tflite, cct::testing::read_file(dir + file), "mutated.tflite", 300, true, 2);
    MESSAGE(rejected << " mutations of " << file << " rejected");
    CHECK(rejected > 50);
  }
  // A larger model (31 operators).
  int rejected = fuzz(Format::Tflite, cct::testing::read_file(dir + "person_detect.tflite"), "mutated.tflite", 150, true, 3);
  MESSAGE(rejected << " mutations of person_detect.tflite rejected");
  CHECK(rejected > 30);
}

TEST_CASE("mutated TFLite models re-batched (--batch 3) are read or rejected with the file's name") {
  const std::string dir = cct::testing::reference_dir() + "/tflite/";
  frontend::ImportOptions o;
  o.batch = 3;
  int rejected = fuzz(Format::Tflite, cct::testing::read_file(dir + "hello_world_int8.tflite"), "mutated.tflite", 200, true, 4, o);
  MESSAGE(rejected << " re-batched mutations of hello_world_int8.tflite rejected");
  CHECK(rejected > 30);
  rejected = fuzz(Format::Tflite, cct::testing::read_file(dir + "person_detect.tflite"), "mutated.tflite", 100, true, 5, o);
  MESSAGE(rejected << " re-batched mutations of person_detect.tflite rejected");
  CHECK(rejected > 20);
}
