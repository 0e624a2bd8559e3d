// The irgen tool: command-line conventions, errors, and the acceptance loop
// irgen | asm | zebusim against the reference programs' ZeBu cycles.
#include <doctest/doctest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <vector>
#include <string>

#include "fir/fir.hpp"
#include "irgen_test_util.hpp"
#include "mapping/mapping.hpp"
#include "sir/sir.hpp"
#include "testing.hpp"

namespace {

using namespace cct;

std::string q(const std::string& s) { return "'" + s + "'"; }

// Writes the single-core mapping of a reference FIR into `dir`.
std::string mapping_file(const std::string& dir, const std::string& net, int batch) {
  auto g = fir::read_fir(irgen_test::fir_path(net, batch));
  std::string path = dir + "/" + net + "_b" + std::to_string(batch) + ".mapping.json";
  testing::write_file(path, mapping::format_mapping(irgen_test::single_core(g, "zebu-1core")));
  return path;
}

long total_cycles(const std::string& stats) { return long(testing::integer_after(stats, "total cycles")); }

}  // namespace

TEST_CASE("irgen tool: --help, --version, usage errors") {
  auto r = testing::run_tool("irgen", "--help");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("--check") != std::string::npos);
  r = testing::run_tool("irgen", "--version");
  CHECK(r.exit_code == 0);
  r = testing::run_tool("irgen", "--arch zebu-1core");
  CHECK(r.exit_code == 2);
  r = testing::run_tool("irgen", q(irgen_test::fir_path("resnet34", 1)) + " m.json --arch zebu-1core --weights fast");
  CHECK(r.exit_code == 2);
  r = testing::run_tool("irgen", q(irgen_test::fir_path("resnet34", 1)) + " /nonexistent/m.json --arch zebu-1core");
  CHECK(r.exit_code == 4);
  CHECK(r.err.find("/nonexistent/m.json") != std::string::npos);
}

TEST_CASE("irgen tool: stdin, -o, .zst and --check on its own output; byte-identical reruns") {
  std::string dir = testing::temp_dir("irgen_tool_io");
  std::string fir = irgen_test::fir_path("resnet34", 1);
  std::string map = mapping_file(dir, "resnet34", 1);
  auto a = testing::run_tool("irgen", q(fir) + " " + q(map) + " --arch zebu-1core");
  REQUIRE_MESSAGE(a.exit_code == 0, a.err);
  auto b = testing::run_tool("irgen", "- " + q(map) + " --arch zebu-1core", testing::read_file(fir));
  REQUIRE_MESSAGE(b.exit_code == 0, b.err);
  CHECK(a.out == b.out);
  auto c = testing::run_tool("irgen", q(fir) + " " + q(map) + " --arch zebu-1core -o " + q(dir + "/s.sir.json.zst"));
  REQUIRE_MESSAGE(c.exit_code == 0, c.err);
  auto d = testing::run_tool("irgen", "--check " + q(dir + "/s.sir.json.zst") + " --arch zebu-1core --fir " + q(fir));
  CHECK_MESSAGE(d.exit_code == 0, d.err);
  // One line saying what passed, nothing else.
  CHECK(d.err.rfind("irgen: ", 0) == 0);
  CHECK(d.err.find(": OK: ") != std::string::npos);
  CHECK(std::count(d.err.begin(), d.err.end(), '\n') == 1);
}

TEST_CASE("irgen tool: --check reports a corrupted schedule with its pointer and exit 1") {
  std::string dir = testing::temp_dir("irgen_tool_check");
  std::string text = testing::read_file(irgen_test::sir_path("resnet50", 1));
  // The lists naming transfer 55 (the quantized image) now name a transfer nobody produces.
  std::string bad = text;
  const std::string from = "\"transfer_id\" : [ 55 ]";  // the reference file's spacing
  for (size_t at; (at = bad.find(from)) != std::string::npos;) bad.replace(at, from.size(), "\"transfer_id\": [99999]");
  REQUIRE(bad != text);
  testing::write_file(dir + "/bad.json", bad);
  auto r = testing::run_tool("irgen", "--check " + q(dir + "/bad.json") + " --arch zebu-1core");
  CHECK(r.exit_code == 1);
  CHECK_MESSAGE(r.err.find("bad.json: /0/") != std::string::npos, r.err);
  CHECK_MESSAGE(r.err.find("99999") != std::string::npos, r.err);
}

// The acceptance loop: the single-core schedule of each reference network,
// assembled and run on the emulated core, takes fewer cycles than the
// reference program did on ZeBu.
TEST_CASE("irgen | asm | zebusim beats the reference programs' ZeBu cycles") {
  std::string dir = testing::temp_dir("irgen_e2e");
  for (std::string net : {"resnet34", "resnet50"})
    for (int b : {1, 4}) {
      CAPTURE(net);
      CAPTURE(b);
      std::string fir = irgen_test::fir_path(net, b);
      std::string base = dir + "/" + net + "_b" + std::to_string(b);
      std::string map = mapping_file(dir, net, b);
      auto g = testing::run_tool("irgen", q(fir) + " " + q(map) + " --arch zebu-1core -o " + q(base + ".sir.json"));
      REQUIRE_MESSAGE(g.exit_code == 0, g.err);
      auto a = testing::run_tool("asm", q(base + ".sir.json") + " --fir " + q(fir) + " --arch zebu-1core -o " +
                                            q(base + ".asm.jsonl"));
      REQUIRE_MESSAGE(a.exit_code == 0, a.err);
      auto z = testing::run_tool("zebusim", q(base + ".asm.jsonl") + " --arch zebu-1core --stats -o " +
                                                q(base + ".trace.jsonl"));
      REQUIRE_MESSAGE(z.exit_code == 0, z.err);
      long ours = total_cycles(z.out + z.err);
      long ref = irgen_test::reference_end_cycle(net, b);
      MESSAGE(net << " b" << b << ": " << ours << " cycles, reference " << ref << " (" << double(ours) / double(ref) << ")");
      CHECK(ours < ref);
    }
}

// Multi-core: the hand-written example mapping and a ResNet-50 layer
// pipeline on chip-64tops assemble and run in zebusim.
TEST_CASE("irgen | asm | zebusim on chip-64tops" * doctest::test_suite("heavy")) {
  std::string dir = testing::temp_dir("irgen_chip");
  std::string ex = testing::source_dir() + "/examples/mappings/";
  auto g = fir::read_fir(irgen_test::fir_path("resnet50", 4));
  testing::write_file(dir + "/r50_b4.mapping.json", mapping::format_mapping(irgen_test::pipeline(g, "chip-64tops", 8, 4)));
  struct Case {
    std::string fir, map;
  } cases[] = {{ex + "tiny_cnn_b4.fir.json", ex + "tiny_cnn_b4.chip-64tops.mapping.json"},
               {irgen_test::fir_path("resnet50", 4), dir + "/r50_b4.mapping.json"}};
  std::vector<Case> all(std::begin(cases), std::end(cases));
  // gemini's own mappings (partitions, batch groups, in-place adds whose
  // output crosses cores) at batch 1 and 4; batch 16 takes ~30 s, see the report.
  for (int b : {1, 4}) {
    std::string map = dir + "/gemini_b" + std::to_string(b) + ".mapping.json";
    auto r = testing::run_tool("gemini", q(irgen_test::fir_path("resnet50", b)) + " --arch chip-64tops --no-progress -o " + q(map));
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    all.push_back({irgen_test::fir_path("resnet50", b), map});
  }
  for (const auto& c : all) {
    CAPTURE(c.map);
    auto r = testing::run_tool("irgen", q(c.fir) + " " + q(c.map) + " --arch chip-64tops -o " + q(dir + "/s.json"));
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    r = testing::run_tool("irgen", "--check " + q(dir + "/s.json") + " --arch chip-64tops --fir " + q(c.fir));
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    r = testing::run_tool("asm", q(dir + "/s.json") + " --fir " + q(c.fir) + " --arch chip-64tops -o " + q(dir + "/p.jsonl"));
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    r = testing::run_tool("asm", "--check " + q(dir + "/p.jsonl") + " --arch chip-64tops");
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    r = testing::run_tool("zebusim", q(dir + "/p.jsonl") + " --arch chip-64tops --stats -o " + q(dir + "/t.jsonl"));
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    MESSAGE(c.map << ": " << total_cycles(r.out + r.err) << " cycles");
    CHECK(total_cycles(r.out + r.err) > 0);
  }
}

// The numbers: the tiny ResNet (examples/tiny_resnet), compiled for one core
// whose weight buffer is too small for its layers (parts computed in runs of
// output channels) and for chip-64tops with gemini's mapping and the
// sequential baseline (inputs in pieces from several cores, channel pieces,
// halos, reloads of other cores' stores), computes bit for bit what the
// quantized interpreter computes, layer by layer (zebusim --functional --golden).
TEST_CASE("irgen | asm | zebusim --functional: split parts and multi-core dataflow compute the golden activations") {
  std::string dir = testing::temp_dir("irgen_functional");
  std::string onnx = testing::source_dir() + "/examples/tiny_resnet/tiny_resnet.onnx";
  // A core with 8 PE columns and a 96-row weight buffer: 32-channel layers do not fit.
  std::string small = dir + "/small-wl0.json";
  {
    auto a = testing::read_file(testing::source_dir() + "/examples/arch/zebu-1core.json");
    a = testing::replace_first(a, "\"name\": \"zebu-1core\"", "\"name\": \"small-wl0\"");
    a = testing::with_json_integer(a, "wl0_rows", 96);
    a = testing::with_json_integer(a, "pe_cols", 8);
    testing::write_file(small, a);
  }
  for (int b : {1, 4}) {
    CAPTURE(b);
    std::string d = dir + "/b" + std::to_string(b), fir = d + "/t.fir.json";
    auto r = testing::run_tool("onnx2fir", q(onnx) + " --batch " + std::to_string(b) + " --calib-random 2 --quiet --data-dir " +
                                               q(d) + " -o " + q(fir));
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    struct Case {
      std::string arch, map;
    };
    std::vector<Case> cases;
    testing::write_file(d + "/single.json",
                        mapping::format_mapping([&] {
                          auto m = irgen_test::single_core(fir::read_fir(fir), "small-wl0");
                          return m;
                        }()));
    cases.push_back({small, d + "/single.json"});
    r = testing::run_tool("gemini", q(fir) + " --arch chip-64tops --no-progress -o " + q(d + "/gemini.json"));
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    cases.push_back({"chip-64tops", d + "/gemini.json"});
    r = testing::run_tool("gemini", q(fir) + " --arch chip-64tops --baseline sequential -o " + q(d + "/seq.json"));
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    cases.push_back({"chip-64tops", d + "/seq.json"});
    for (const auto& c : cases) {
      CAPTURE(c.map);
      std::string sir = d + "/s.json", prog = d + "/p.jsonl";
      r = testing::run_tool("irgen", q(fir) + " " + q(c.map) + " --arch " + q(c.arch) + " -o " + q(sir));
      REQUIRE_MESSAGE(r.exit_code == 0, r.err);
      if (c.arch == small) {  // the split really happens: some layer in several workloads
        std::map<std::string, int> per_layer;
        int most = 0;
        const sir::Schedule sched = sir::read_sir(sir);
        for (const auto& w : sched.cores.at(0).workloads) most = std::max(most, ++per_layer[w.layer_name]);
        CHECK(most > 1);
      }
      r = testing::run_tool("irgen", "--check " + q(sir) + " --arch " + q(c.arch) + " --fir " + q(fir));
      CHECK_MESSAGE(r.exit_code == 0, r.err);
      r = testing::run_tool("asm", q(sir) + " --fir " + q(fir) + " --arch " + q(c.arch) + " -o " + q(prog));
      REQUIRE_MESSAGE(r.exit_code == 0, r.err);
      r = testing::run_tool("asm", "--check " + q(prog) + " --arch " + q(c.arch));
      CHECK_MESSAGE(r.exit_code == 0, r.err);
      r = testing::run_tool("zebusim", q(prog) + " --arch " + q(c.arch) + " --functional --fir " + q(fir) + " --sir " + q(sir) +
                                           " --input " + q(d + "/src_quantize_1_1_input_activation1.npy") + " --golden " + q(d) +
                                           " -o /dev/null");
      CHECK_MESSAGE(r.exit_code == 0, r.err);
    }
  }
}
