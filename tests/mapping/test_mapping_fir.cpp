// Mappings against Frontend IRs: the examples, the single-core script on the
// reference networks, and every network error.
#include <doctest/doctest.h>

#include <functional>

#include "arch/arch.hpp"
#include "fir/fir.hpp"
#include "mapping/mapping.hpp"
#include "mapping/mapping_fir.hpp"
#include "support/error.hpp"
#include "testing.hpp"

using namespace cct::mapping;

namespace {

std::string examples() { return cct::testing::source_dir() + "/examples/mappings"; }

const cct::fir::Graph& tiny_fir() {
  static const cct::fir::Graph g = cct::fir::read_fir(examples() + "/tiny_cnn_b4.fir.json");
  return g;
}

Mapping tiny_mapping() { return read_mapping(examples() + "/tiny_cnn_b4.chip-64tops.mapping.json"); }

using cct::testing::joined;

// Runs examples/mappings/single_core_mapping.py on a FIR and parses its output.
Mapping script_mapping(const std::string& fir_path, const std::string& extra = "") {
  auto r = cct::testing::run("/usr/bin/python3 " + examples() + "/single_core_mapping.py '" + fir_path + "' " + extra);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return parse_mapping(r.out, "script output");
}

}  // namespace

TEST_CASE("the hand-written example fits its FIR and chip-64tops") {
  Mapping m = tiny_mapping();
  CHECK(m.batch == 4);
  CHECK(m.segments.size() == 3);
  auto problems = check_against_fir(m, tiny_fir(), "example");
  CHECK_MESSAGE(problems.empty(), joined(problems));
  problems = check_against_arch(m, cct::arch::load_architecture("chip-64tops"), "example");
  CHECK_MESSAGE(problems.empty(), joined(problems));
  // Reshape runs on the cpu and is not mapped.
  CHECK(m.find("fc_reshape") == nullptr);
}

TEST_CASE("network view of a FIR") {
  Network net = network_of(tiny_fir());
  CHECK(net.batch == 4);
  REQUIRE(net.layers.size() == 9);
  CHECK(net.layers[2].name == "conv2");
  CHECK(net.layers[2].dims == Dims{4, 32, 16, 16});
  CHECK(net.layers[2].producers == std::vector<std::string>{"conv1"});
  CHECK(net.layers[8].name == "fc_reshape");
  CHECK(!net.layers[8].on_npu);
  CHECK(net.layers[8].rank == 2);
  CHECK(net.layers[8].dims == Dims{4, 10, 1, 1});
}

TEST_CASE("the single-core script maps every reference network") {
  Mapping tiny = script_mapping(examples() + "/tiny_cnn_b4.fir.json");
  CHECK(tiny.arch == "zebu-1core");
  CHECK(tiny.fir == "tiny_cnn_b4");
  CHECK(check_against_fir(tiny, tiny_fir(), "tiny").empty());
  cct::arch::Architecture one = cct::arch::load_architecture("zebu-1core");
  for (const std::string& path : cct::testing::reference_files("gemini-ir/frontend")) {
    INFO(path);
    cct::fir::Graph g = cct::fir::read_fir(path);
    Mapping m = script_mapping(path);
    auto problems = check_against_fir(m, g, path);
    CHECK_MESSAGE(problems.empty(), joined(problems));
    problems = check_against_arch(m, one, path);
    CHECK_MESSAGE(problems.empty(), joined(problems));
    // One segment per accelerator layer, all on core 0.
    size_t npu = 0;
    for (const auto& l : g.layers()) npu += l.device == cct::fir::Device::Npu;
    CHECK(m.segments.size() == npu);
    CHECK(m.batch == network_of(g).batch);
    // The library's single-core mapping is the script's, but for the FIR name the script records.
    Mapping lib = single_core_mapping(g, "zebu-1core");
    lib.fir = m.fir;
    CHECK(format_mapping(lib) == format_mapping(m));
    // The layer pipeline: segments of 8 layers on cores 0..7, every layer once.
    Mapping p = one_layer_per_core_mapping(g, "chip-64tops", 8, 2);
    CHECK(p.segments.size() == (npu + 7) / 8);
    CHECK(p.segments.front().layers.size() == std::min<size_t>(8, npu));
    CHECK(p.segments.front().batch_groups == 2);
    CHECK(p.segments.back().layers.back().cores == std::vector<int64_t>{int64_t((npu - 1) % 8)});
    if (m.batch % 2 == 0) {
      problems = check_against_fir(p, g, path);
      CHECK_MESSAGE(problems.empty(), joined(problems));
    }
  }
}

TEST_CASE("errors against the network") {
  struct Case {
    std::function<void(Mapping&)> edit;
    std::vector<const char*> expect;
  };
  const Case cases[] = {
      {[](Mapping& m) { m.segments[1].layers.erase(m.segments[1].layers.begin() + 2); },  // drop "add"
       {"m.json: /segments: layer \"add\" is not mapped"}},
      // No segment at all is a mapping only for a network all on the host.
      {[](Mapping& m) { m.segments.clear(); }, {"m.json: /segments: layer \"conv1\" is not mapped"}},
      {[](Mapping& m) { m.segments[2].layers.push_back({"fc_reshape", {2}, {}, {}}); },
       {"m.json: /segments/2/layers/1/layer: layer \"fc_reshape\" runs on the cpu and is not mapped"}},
      {[](Mapping& m) { m.segments[2].layers.push_back({"softmax", {2}, {}, {}}); },
       {"m.json: /segments/2/layers/1/layer: the network has no layer \"softmax\""}},
      {[](Mapping& m) { m.segments[2].layers[0].partition.k = 1, m.segments[2].layers[0].partition.h = 2; },
       {"/segments/2/layers/0/partition/h: 2 does not divide the 1 output rows of \"fc\""}},
      {[](Mapping& m) {
         m.segments[2].layers[0].cores = {0, 1, 2};
         m.segments[2].layers[0].partition.k = 3;
       },
       {"/segments/2/layers/0/partition/k: 3 does not divide the 10 output channels of \"fc\""}},
      {[](Mapping& m) {
         m.segments[0].layers[1].cores = {1, 2, 3};
         m.segments[0].layers[1].partition.h = 3;
       },
       {"/segments/0/layers/1/partition/h: 3 does not divide the 32 output rows of \"conv1\""}},
      {[](Mapping& m) { std::swap(m.segments[1].layers[1], m.segments[1].layers[2]); },  // add before conv3
       {"/segments/1/layers/1/layer: layer \"add\" is mapped before (or with) its producer \"conv3\""}},
      {[](Mapping& m) { std::swap(m.segments[0], m.segments[2]); },
       {"layer \"skip_dq\" is mapped before (or with) its producer \"conv2\"", "layer \"fc\" is mapped before (or with) its producer \"gap\""}},
      {[](Mapping& m) {
         m.batch = 2;
         m.segments[0].batch_groups = 1;
         m.segments[1].layers[1].partition = {1, 2, 2, 1};
         m.segments[1].layers[2].partition = {1, 1, 2, 1};
       },
       {"m.json: /batch: the mapping is for batch 2 but the network's batch is 4"}},
  };
  for (const auto& c : cases) {
    Mapping m = tiny_mapping();
    c.edit(m);
    std::vector<std::string> problems = check_structure(m, "m.json");
    for (const auto& p : check_against_fir(m, tiny_fir(), "m.json")) problems.push_back(p);
    INFO(joined(problems));
    CHECK(!problems.empty());
    for (const char* e : c.expect) {
      bool found = false;
      for (const auto& p : problems) found = found || p.find(e) != std::string::npos;
      CHECK_MESSAGE(found, "expected: " << std::string(e));
    }
  }
}

TEST_CASE("rank and batch-group checks on a hand-built network") {
  Network net;
  net.batch = 6;
  net.layers.push_back({"in", true, {6, 8, 4, 4}, 4, {}});
  net.layers.push_back({"flat", false, {6, 128, 1, 1}, 2, {"in"}});
  net.layers.push_back({"fc", true, {6, 10, 1, 1}, 2, {"flat"}});
  net.layers.push_back({"t5", true, {6, 2, 2, 2}, 5, {"fc"}});
  Mapping m;
  m.arch = "x";
  m.batch = 6;
  m.segments.push_back({3, {{"in", {0, 1}, {2, 1, 1, 1}, {}}}});
  m.segments.push_back({1, {{"fc", {0}, {}, {}}, {"t5", {1, 2}, {1, 2, 1, 1}, {}}}});
  CHECK(check_structure(m, "m").empty());
  auto problems = check_against_network(m, net, "m");
  INFO(joined(problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0] == "m: /segments/1/layers/1/partition: the rank-5 output of \"t5\" cannot be partitioned (only N, C, H, W outputs can)");
  // Order flows through cpu layers: fc must come after in.
  std::swap(m.segments[0], m.segments[1]);
  m.segments[0].batch_groups = 1;
  problems = check_against_network(m, net, "m");
  bool found = false;
  for (const auto& p : problems) found = found || p.find("layer \"fc\" is mapped before (or with) its producer \"flat\"") != std::string::npos;
  CHECK_MESSAGE(found, joined(problems));
}

TEST_CASE("a grouped convolution's k parts hold whole groups") {
  Network net;
  net.batch = 1;
  net.layers.push_back({"dw", true, {1, 48, 8, 8}, 4, {}, 3});  // 16 groups of 3 output channels
  Mapping m;
  m.arch = "x";
  m.batch = 1;
  m.segments.push_back({1, {{"dw", {0, 1, 2, 3}, {1, 4, 1, 1}, {}}}});
  CHECK(check_against_network(m, net, "m").empty());  // 12 channels: 4 groups each
  m.segments[0].layers[0].cores = {0, 1, 2, 3, 4, 5, 6, 7};
  m.segments[0].layers[0].partition.k = 8;  // 6 channels: 2 groups each
  CHECK(check_against_network(m, net, "m").empty());
  m.segments[0].layers[0].cores = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  m.segments[0].layers[0].partition.k = 16;
  CHECK(check_against_network(m, net, "m").empty());
  m.segments[0].layers[0].cores = {0, 1, 2, 3, 4, 5};
  m.segments[0].layers[0].partition.k = 6;  // 8 channels: 2 groups and 2 thirds
  auto problems = check_against_network(m, net, "m");
  REQUIRE(problems.size() == 1);
  CHECK(problems[0] == "m: /segments/0/layers/0/partition/k: 6 parts of the 16 groups of \"dw\" would split a group");
}

TEST_CASE("the example in the format doc is the example file") {
  std::string doc = cct::testing::read_file(cct::testing::source_dir() + "/formats/Mapping_Format.md");
  size_t at = doc.find("## Example");
  REQUIRE(at != std::string::npos);
  size_t begin = doc.find("```json\n", at);
  REQUIRE(begin != std::string::npos);
  begin += 8;
  size_t end = doc.find("```", begin);
  REQUIRE(end != std::string::npos);
  CHECK(parse_mapping(doc.substr(begin, end - begin), "Mapping_Format.md") == tiny_mapping());
}
