// Mapping format: round trip, defaults, work split, and every structural
// and architecture error.
#include <doctest/doctest.h>

#include <functional>
#include <random>
#include <set>

#include "arch/arch.hpp"
#include "mapping/mapping.hpp"
#include "support/error.hpp"
#include "support/schema.hpp"
#include "testing.hpp"

using namespace cct::mapping;

namespace {

Mapping sample() {
  Mapping m;
  m.arch = "chip-64tops";
  m.fir = "sample";
  m.batch = 4;
  Segment s0;
  s0.batch_groups = 2;
  s0.layers.push_back({"a", {0, 1}, {1, 2, 1, 1}, {0, 1, 2}});
  s0.layers.push_back({"b", {4, 5, 6, 7}, {2, 1, 2, 1}, {3, 3, 3}});
  Segment s1;
  s1.layers.push_back({"c", {0}, {}, {}});
  s1.row_groups = 3;
  m.segments = {s0, s1};
  return m;
}

// The problems of a mapping given as text (structure only).
std::string parse_error(const std::string& text, bool schema = false) {
  try {
    parse_mapping(text, "m.json", schema);
  } catch (const cct::Error& e) {
    CHECK(e.code() == cct::kExitInvalidInput);
    return e.what();
  }
  return "";
}

bool has(const std::vector<std::string>& problems, const std::string& text) {
  for (const auto& p : problems)
    if (p.find(text) != std::string::npos) return true;
  return false;
}

using cct::testing::joined;

}  // namespace

TEST_CASE("a mapping round-trips through its text") {
  Mapping m = sample();
  std::string text = format_mapping(m);
  Mapping back = parse_mapping(text, "m.json");
  CHECK(back == m);
  CHECK(format_mapping(back) == text);
  cct::validate_output_text(text, "mapping", "m.json");
  // Layers are written one key per line with small objects inline.
  CHECK(text.find("\"partition\": {\"b\": 1, \"k\": 2, \"h\": 1, \"w\": 1}") != std::string::npos);
}

TEST_CASE("omitted partition, DRAM channels and batch groups default to 1, 0 and 1") {
  Mapping m = parse_mapping(R"({"format": "cct-mapping", "version": 1, "arch": "zebu-1core", "batch": 1,
    "segments": [{"layers": [{"layer": "x", "cores": [0]}]},
                 {"layers": [{"layer": "y", "cores": [0], "partition": {}, "dram": {"weights": 0}}]}]})",
                            "m.json");
  REQUIRE(m.segments.size() == 2);
  CHECK(m.fir.empty());
  CHECK(m.segments[0].batch_groups == 1);
  CHECK(m.segments[0].layers[0].partition == Partition{});
  CHECK(m.segments[0].layers[0].dram == DramChannels{});
  const LayerMapping* y = m.find("y");
  REQUIRE(y != nullptr);
  CHECK(y->cores == std::vector<int64_t>{0});
  Mapping::Place where;
  CHECK(m.find("y", &where) == y);
  CHECK(where.segment == 1);
  CHECK(where.index == 0);
  CHECK(m.find("z") == nullptr);
  CHECK(m.layer_count() == 2);
}

TEST_CASE("part boxes tile the output exactly once") {
  Partition p{2, 2, 3, 1};
  Dims dims{4, 64, 9, 7};
  std::set<std::array<int64_t, 4>> covered;
  for (int64_t i = 0; i < p.product(); ++i) {
    Box b = part_box(p, dims, i);
    for (int64_t n = b.lower[0]; n <= b.upper[0]; ++n)
      for (int64_t k = b.lower[1]; k <= b.upper[1]; ++k)
        for (int64_t h = b.lower[2]; h <= b.upper[2]; ++h)
          for (int64_t w = b.lower[3]; w <= b.upper[3]; ++w) CHECK(covered.insert({n, k, h, w}).second);
  }
  CHECK(covered.size() == size_t(4 * 64 * 9 * 7));
  // Row-major part order, w fastest.
  CHECK(part_coords(p, 0) == std::array<int64_t, 4>{0, 0, 0, 0});
  CHECK(part_coords(p, 1) == std::array<int64_t, 4>{0, 0, 1, 0});
  CHECK(part_coords(p, 3) == std::array<int64_t, 4>{0, 1, 0, 0});
  CHECK(part_coords(p, 6) == std::array<int64_t, 4>{1, 0, 0, 0});
  CHECK(part_box(p, dims, 11) == Box{{2, 32, 6, 0}, {3, 63, 8, 6}});
  CHECK_THROWS_AS(part_coords(p, 12), cct::Error);
  CHECK_THROWS_AS(part_box(Partition{1, 3, 1, 1}, dims, 0), cct::Error);
}

TEST_CASE("structural errors name the JSON pointer") {
  auto text_of = [](const std::function<void(Mapping&)>& edit) {
    Mapping m = sample();
    edit(m);
    return cct::format_json(to_json(m));
  };
  struct Case {
    std::function<void(Mapping&)> edit;
    const char* expect;
  };
  const Case cases[] = {
      {[](Mapping& m) { m.segments[0].layers[1].cores[3] = 4; },
       "m.json: /segments/0/layers/1/cores/3: core 4 is used twice by layer \"b\" (also at /segments/0/layers/1/cores/0): each part of a layer needs its own core"},
      {[](Mapping& m) { m.segments[1].layers[0].layer = "a"; },
       "/segments/1/layers/0/layer: layer \"a\" is mapped twice (also at /segments/0/layers/0)"},
      {[](Mapping& m) { m.segments[0].layers[0].partition.k = 3; },
       "/segments/0/layers/0/partition: factors b*k*h*w = 1*3*1*1 = 3 but the layer has 2 cores"},
      {[](Mapping& m) { m.segments[0].layers[0].partition = {1, int64_t(1) << 40, int64_t(1) << 40, 1}; },
       "/segments/0/layers/0/partition: factors b*k*h*w = 1*1099511627776*1099511627776*1 = 9223372036854775807 but the layer has 2 cores"},
      {[](Mapping& m) { m.segments[0].layers[0].partition = {0, 2, 1, 1}; },
       "/segments/0/layers/0/partition/b: partition factors must be >= 1, got 0"},
      {[](Mapping& m) { m.segments[0].layers[1].partition = {4, 1, 1, 1}; },
       "/segments/0/layers/1/partition/b: 4 does not divide the 2 samples of a batch group"},
      {[](Mapping& m) { m.segments[0].batch_groups = 3; },
       "/segments/0/batch_groups: batch_groups must be >= 1 and divide the batch of 4, got 3"},
      {[](Mapping& m) { m.segments[1].layers[0].cores = {}; }, "/segments/1/layers/0/cores: a layer needs at least one core"},
      {[](Mapping& m) { m.segments[1].layers[0].cores = {-2}; }, "/segments/1/layers/0/cores/0: core ids are >= 0, got -2"},
      {[](Mapping& m) { m.segments[1].layers[0].dram.weights = -1; },
       "/segments/1/layers/0/dram/weights: DRAM channels are >= 0, got -1"},
      {[](Mapping& m) { m.segments[1].layers.clear(); }, "/segments/1/layers: a segment needs at least one layer"},
      {[](Mapping& m) { m.segments[1].row_groups = 0; }, "/segments/1/row_groups: row_groups must be >= 1, got 0"},
      {[](Mapping& m) { m.segments[0].row_groups = 2; },
       "/segments/0/layers/1/partition/h: a segment with row_groups cuts the rows itself: h must be 1, got 2"},
      {[](Mapping& m) { m.batch = 0; }, "m.json: /batch: the batch must be >= 1, got 0"},
  };
  for (const auto& c : cases) {
    std::string text = text_of(c.edit);
    std::string msg = parse_error(text);
    INFO("expected: " << c.expect << "\ngot: " << msg);
    CHECK(msg.find(c.expect) != std::string::npos);
    // The schema rejects what it can express; the rest reaches the same checks.
    CHECK(!parse_error(text, true).empty());
    // Writing such a mapping is a bug in the writer's caller.
    Mapping m = sample();
    c.edit(m);
    CHECK_THROWS_AS(format_mapping(m), cct::Error);
  }
}

TEST_CASE("layers of one segment may share a core (it runs them in turn for each batch group)") {
  Mapping m = sample();
  m.segments[0].layers[1].cores[2] = 1;  // "b" part 2 on core 1, which also runs "a" part 1
  const std::string text = cct::format_json(to_json(m));
  CHECK(parse_error(text).empty());
  CHECK(parse_error(text, true).empty());
  CHECK(parse_mapping(text, "m.json") == m);
}

TEST_CASE("row stripes: even for the last layer, producers end where their readers' rows end") {
  // a -> b -> c, 3x3 convolutions (stride 1, padding 1) on 8 rows: the
  // first n rows of a reader read n + 1 rows; d reads all of c at once.
  auto conv = [](size_t, size_t, int64_t n) { return n == 0 ? 0 : std::min<int64_t>(8, n + 1); };
  auto ends = row_stripes({8, 8, 8}, {{1}, {2}, {}}, 4, conv);
  CHECK(ends[2] == std::vector<int64_t>{2, 4, 6, 8});
  CHECK(ends[1] == std::vector<int64_t>{3, 5, 7, 8});
  CHECK(ends[0] == std::vector<int64_t>{4, 6, 8, 8});  // the last stripe of a may be empty
  // A reader that needs every row: its producer does all of it in stripe 0.
  auto all = [](size_t, size_t, int64_t n) { return n == 0 ? 0 : int64_t(8); };
  CHECK(row_stripes({8, 1}, {{1}, {}}, 3, all)[0] == std::vector<int64_t>{8, 8, 8});
  // More stripes than rows: empty stripes, the rows still covered once.
  auto few = row_stripes({2}, {{}}, 4, conv);
  CHECK(few[0] == std::vector<int64_t>{1, 1, 2, 2});
  CHECK(row_stripes({5}, {{}}, 1, conv)[0] == std::vector<int64_t>{5});
}

TEST_CASE("malformed mapping files") {
  CHECK(parse_error("{\"format\": \"cct-mapping\",\n\"version\": 1,\n}").find("m.json:3") != std::string::npos);
  CHECK(parse_error(R"({"format": "cct-arch", "version": 1, "arch": "x", "batch": 1, "segments": []})")
            .find("/format: expected \"cct-mapping\"") != std::string::npos);
  CHECK(parse_error(R"({"format": "cct-mapping", "version": 2, "arch": "x", "batch": 1, "segments": []})")
            .find("/version: unsupported version") != std::string::npos);
  CHECK(parse_error(R"({"format": "cct-mapping", "version": 1, "arch": "x", "batch": 1, "segments": [], "extra": 1})")
            .find("/extra: unknown key") != std::string::npos);
  CHECK(parse_error(R"({"format": "cct-mapping", "version": 1, "arch": "x", "batch": 1,
      "segments": [{"layers": [{"layer": "a", "cores": [0], "partition": {"c": 2}}]}]})")
            .find("/segments/0/layers/0/partition/c: unknown key") != std::string::npos);
  CHECK(parse_error(R"({"format": "cct-mapping", "version": 1, "arch": "x", "batch": 1,
      "segments": [{"layers": [{"layer": "a", "cores": "0"}]}]})")
            .find("/segments/0/layers/0/cores: expected an array of integers") != std::string::npos);
  CHECK(parse_error(R"({"format": "cct-mapping", "version": 1, "arch": "x", "batch": 1,
      "segments": [{"layers": [{"layer": "a", "cores": [0]}]}]})", true).empty());
  std::string schema_msg = parse_error(R"({"format": "cct-mapping", "version": 1, "arch": "x", "batch": 1,
      "segments": [{"layers": [{"layer": "a", "cores": [0], "dram": {"ifmap": -1}}]}]})", true);
  CHECK(schema_msg.find("/segments/0/layers/0/dram/ifmap") != std::string::npos);
  CHECK(!parse_error("").empty());
  CHECK(!parse_error("[1, 2]").empty());
}

TEST_CASE("checks against the architecture") {
  cct::arch::Architecture chip = cct::arch::load_architecture("chip-64tops");
  Mapping m = sample();
  CHECK(check_against_arch(m, chip, "m.json").empty());

  m.segments[0].layers[1].cores[3] = 8;
  m.segments[1].layers[0].dram.ofmap = 4;
  auto problems = check_against_arch(m, chip, "m.json");
  INFO(joined(problems));
  CHECK(problems.size() == 2);
  CHECK(has(problems, "m.json: /segments/0/layers/1/cores/3: core 8 does not exist (chip-64tops has cores 0..7)"));
  CHECK(has(problems, "m.json: /segments/1/layers/0/dram/ofmap: DRAM channel 4 does not exist (chip-64tops has channels 0..3)"));

  cct::arch::Architecture one = cct::arch::load_architecture("zebu-1core");
  problems = check_against_arch(sample(), one, "m.json");
  CHECK(has(problems, "m.json: /arch: the mapping was made for architecture \"chip-64tops\", not \"zebu-1core\""));
  CHECK(has(problems, "/segments/0/layers/0/cores/1: core 1 does not exist (zebu-1core has cores 0..0)"));
  CHECK(has(problems, "/segments/0/layers/0/dram/weights: DRAM channel 1 does not exist (zebu-1core has channels 0..0)"));

  try {
    throw_if_problems(problems);
    FAIL("no error");
  } catch (const cct::Error& e) {
    CHECK(e.code() == cct::kExitInvalidInput);
    CHECK(std::string(e.what()).find('\n') != std::string::npos);  // every problem, one per line
  }
  CHECK_NOTHROW(throw_if_problems({}));
}

TEST_CASE("schema and docs cover every key") {
  std::string doc = cct::testing::read_file(cct::testing::source_dir() + "/formats/Mapping_Format.md");
  for (const char* key : {"format", "version", "arch", "fir", "batch", "segments", "batch_groups", "row_groups", "layers", "layer",
                          "cores", "partition", "dram", "ifmap", "weights", "ofmap"}) {
    CHECK_MESSAGE(doc.find(std::string("`") + key + "`") != std::string::npos, "undocumented " << std::string(key));
    CHECK_MESSAGE(std::string(cct::schema_text("mapping")).find(std::string("\"") + key + "\"") != std::string::npos,
                  "not in the schema: " << std::string(key));
  }
}

TEST_CASE("corrupted mapping files give errors, never crashes") {
  std::mt19937_64 rng(7);
  const std::string base = format_mapping(sample());
  const std::string alphabet = "{}[],:\"-0123456789 abkhw";
  cct::arch::Architecture chip = cct::arch::load_architecture("chip-64tops");
  int rejected = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::string text = base;
    int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t pos = size_t(rng() % text.size());
      switch (rng() % 3) {
        case 0: text[pos] = alphabet[rng() % alphabet.size()]; break;
        case 1: text.erase(pos, 1 + rng() % 8); break;
        default: text.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
      }
      if (text.empty()) text.push_back('[');
    }
    for (bool schema : {false, true}) {
      try {
        Mapping m = parse_mapping(text, "fuzz.json", schema);
        (void)check_against_arch(m, chip, "fuzz.json");
      } catch (const cct::Error& e) {
        ++rejected;
        CHECK(std::string(e.what()).rfind("fuzz.json", 0) == 0);  // every message says where
      }
    }
  }
  CHECK(rejected > 0);
}
