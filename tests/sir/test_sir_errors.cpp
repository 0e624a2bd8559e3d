// Malformed Scheduler IR gives a clear error naming the file and JSON pointer;
// schedules built in code (several cores) write and read back unchanged.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>

#include "sir/sir.hpp"
#include "support/error.hpp"
#include "support/json.hpp"
#include "testing.hpp"

using namespace cct;

namespace {

Json reference_resnet50() {
  std::string path =
      cct::testing::reference_dir() + "/gemini-ir/scheduler/int8_resnet50.sim_quantized_b1_c1_bw16_stschedule.json";
  return parse_json(cct::testing::read_file(path), path);
}

Json& workload(Json& sir, size_t i) { return sir.find("0")->as_array().at(i); }

void erase_key(Json& obj, std::string_view key) {
  auto& o = obj.as_object();
  auto it = std::find_if(o.begin(), o.end(), [&](const auto& m) { return m.first == key; });
  REQUIRE(it != o.end());
  o.erase(it);
}

const sir::ReadOptions kNoSchema{false, true};

void expect_error(const std::string& text, std::initializer_list<std::string> fragments,
                  const sir::ReadOptions& opts = {}) {
  try {
    sir::parse_sir(text, "bad.sir.json", opts);
    FAIL("no error for input with expected fragments " << *fragments.begin());
  } catch (const Error& e) {
    std::string msg = e.what();
    CAPTURE(msg);
    CHECK(e.code() == kExitInvalidInput);
    CHECK(msg.rfind("bad.sir.json", 0) == 0);
    for (const auto& f : fragments) CHECK_MESSAGE(msg.find(f) != std::string::npos, "missing: " << f);
  }
}

// Structural problems: parsing fails and check() reports one with all fragments.
void expect_problem(const std::string& text, std::initializer_list<std::string> fragments) {
  CHECK_THROWS_AS(sir::parse_sir(text, "bad.sir.json"), Error);
  sir::Schedule s = sir::parse_sir(text, "bad.sir.json", {true, false});
  auto problems = sir::check(s, "bad.sir.json");
  bool found = false;
  for (const auto& p : problems) {
    bool all = p.rfind("bad.sir.json: /", 0) == 0;
    for (const auto& f : fragments) all = all && p.find(f) != std::string::npos;
    found = found || all;
  }
  CHECK_MESSAGE(found, "no problem with " << *fragments.begin() << " among " << problems.size()
                                          << (problems.empty() ? std::string() : ", first: " + problems[0]));
}

Json coord(int64_t n, int64_t c, int64_t h, int64_t w) { return Json::array({Json(n), Json(c), Json(h), Json(w)}); }

}  // namespace

TEST_CASE("malformed JSON names the line and column") {
  std::string text = format_json(reference_resnet50());
  expect_error(text.substr(0, text.size() / 3), {"bad.sir.json:", "invalid JSON"});
  expect_error("{\"-1\": ", {"bad.sir.json:1:", "invalid JSON"});
  expect_error("{\"-1\": ", {"bad.sir.json:1:", "invalid JSON"}, kNoSchema);
}

TEST_CASE("wrong types, missing and unknown keys, bad enums") {
  {
    Json s = reference_resnet50();
    s.set("buffersize", "8M");
    expect_error(format_json(s), {"/buffersize", "wrong type"});
    expect_error(format_json(s), {"/buffersize", "expected an integer"}, kNoSchema);
  }
  {
    Json s = reference_resnet50();
    erase_key(workload(s, 3), "layer_name");
    expect_error(format_json(s), {"/0/3", "missing required key \"layer_name\""});
    expect_error(format_json(s), {"/0/3", "missing key \"layer_name\""}, kNoSchema);
  }
  {
    Json s = reference_resnet50();
    workload(s, 3).set("colour", "blue");
    expect_error(format_json(s), {"/0/3/colour", "unknown key \"colour\""});
    expect_error(format_json(s), {"/0/3/colour", "unknown key \"colour\""}, kNoSchema);
  }
  {
    Json s = reference_resnet50();
    workload(s, 2).set("layer_type", "gpu");
    expect_error(format_json(s), {"/0/2/layer_type", "not one of"});
    expect_error(format_json(s), {"/0/2/layer_type", "expected \"pe\" or \"vp\", got \"gpu\""}, kNoSchema);
  }
  {
    Json s = reference_resnet50();
    workload(s, 1).find("tile_info")->find("tile_num_0")->set("ofmap_upper", Json::array({Json(0), Json(63)}));
    expect_error(format_json(s), {"/0/1/tile_info/tile_num_0/ofmap_upper"});
    expect_error(format_json(s), {"/0/1/tile_info/tile_num_0/ofmap_upper", "expected an array of 4 integers"},
                 kNoSchema);
  }
  {
    Json s = reference_resnet50();
    Json& buf = workload(s, 5).find("buffer")->as_array().at(0);
    buf.find("source")->as_array().at(0).set("type", "disk");
    expect_error(format_json(s), {"/0/5/buffer/0/source/0/type", "not one of"});
    expect_error(format_json(s), {"/0/5/buffer/0/source/0/type", "expected \"core\" or \"DRAM\""}, kNoSchema);
  }
  {
    // Tile keys must be tile_num_0..n-1.
    Json s = reference_resnet50();
    Json& tiles = *workload(s, 1).find("tile_info");
    tiles.as_object()[0].first = "tile_num_7";
    expect_error(format_json(s), {"/0/1/tile_info/tile_num_7", "numbered 0..0 without gaps"});
    tiles.as_object()[0].first = "first_tile";
    expect_error(format_json(s), {"/0/1/tile_info/first_tile", "tile keys are tile_num_<i>"});
  }
  {
    Json s = reference_resnet50();
    s.set("07", Json::array());
    expect_error(format_json(s), {"/07", "unknown key \"07\""});
  }
}

TEST_CASE("structural errors") {
  {
    Json s = reference_resnet50();
    workload(s, 4).set("workload_id", 3);
    expect_problem(format_json(s), {"/0/4/workload_id", "duplicate workload_id 3"});
  }
  {
    Json s = reference_resnet50();
    Json& w = workload(s, 0);
    w.find("tile_info")->find("tile_num_0")->set("ofmap_upper", coord(0, 2, 224, 223));
    expect_problem(format_json(s), {"/0/0/tile_info/tile_num_0/ofmap_lower", "outside the workload"});
  }
  {
    Json s = reference_resnet50();
    Json& w = workload(s, 0);
    w.find("ofmap")->as_array()[0].find("destination")->as_array()[0].set("workload_id", 999);
    expect_problem(format_json(s), {"/0/0/ofmap/0/destination/0/workload_id", "no workload 999"});
  }
  {
    Json s = reference_resnet50();
    Json& b = workload(s, 2).find("buffer")->as_array()[0];
    b.set("address", 8388608 - 16);
    expect_problem(format_json(s), {"/0/2/buffer/0/address", "outside the 8388608-byte buffer"});
  }
  {
    Json s = reference_resnet50();
    workload(s, 2).set("workload", Json::array({coord(0, 5, 0, 0), coord(0, 4, 55, 55)}));
    expect_problem(format_json(s), {"/0/2/workload", "upper [0, 4, 55, 55] below lower [0, 5, 0, 0]"});
  }
  {
    Json s = reference_resnet50();
    workload(s, 2).set("ofmap_size", 12);
    expect_problem(format_json(s), {"/0/2/ofmap_size", "the ofmaps add up to"});
  }
  {
    Json s = reference_resnet50();
    workload(s, 2).set("ring_buffer_info", Json::array({Json::array({Json(4096), Json(1024)})}));
    expect_problem(format_json(s), {"/0/2/ring_buffer_info/0", "not inside"});
  }
  {
    Json s = reference_resnet50();
    s.set("3", *s.find("0"));  // a second copy on core 3 of a 1 x 1 mesh: outside, and ids repeat
    expect_problem(format_json(s), {"/3", "outside the 1 x 1 mesh"});
    expect_problem(format_json(s), {"duplicate workload_id"});
  }
  {
    Json s = reference_resnet50();
    Json& load = s.find("-1")->find("out")->as_array()[0];
    load.find("destination")->as_array()[0].set("layer_name", "Conv_999");
    expect_problem(format_json(s), {"/-1/out/0/destination/0/layer_name", "runs \"Conv_0\", not \"Conv_999\""});
  }
}

TEST_CASE("huge numbers are rejected without overflowing") {
  const int64_t huge = INT64_MAX - 5;
  Json s = reference_resnet50();
  Json& b = workload(s, 2).find("buffer")->as_array()[0];
  b.set("address", huge);
  b.set("size", huge);
  Json& o = workload(s, 2).find("ofmap")->as_array()[0];
  o.set("size", huge);
  o.set("upper", coord(huge, huge, huge, huge));
  workload(s, 2).set("workload", Json::array({coord(0, 0, 0, 0), coord(huge, huge, huge, huge)}));
  s.set("xlen", huge);
  s.set("ylen", huge);
  expect_problem(format_json(s), {"/0/2/buffer/0/address", "outside"});
  expect_problem(format_json(s), {"/0/2/ofmap_size", "add up to 9223372036854775802"});
  workload(s, 2).find("ofmap")->push(o);  // two of them overflow int64
  expect_problem(format_json(s), {"/0/2/ofmap_size", "more than 2^63"});
  CHECK(sir::box_volume({0, 0, 0, 0}, {huge, huge, huge, huge}) == INT64_MAX);
}

TEST_CASE("a two-core schedule built in code writes, validates and reads back") {
  sir::Schedule s;
  s.buffersize = 1 << 20;
  s.xlen = 2;
  s.ylen = 1;
  auto box = [](int64_t c) { return std::pair<sir::Coord, sir::Coord>{{0, 0, 0, 0}, {0, c - 1, 7, 7}}; };
  for (int64_t core = 0; core < 2; ++core) {
    sir::Core c;
    c.id = core;
    sir::Workload w;
    w.workload_id = core;
    w.layer_name = core == 0 ? "conv_a" : "conv_b";
    w.layer_type = sir::LayerType::Pe;
    std::tie(w.lower, w.upper) = box(16);
    sir::Ifmap in;
    std::tie(in.lower, in.upper) = box(8);
    in.size = 8 * 8 * 8;
    in.transfer_id = {core == 0 ? 10 : 11};
    w.ifmap.push_back(in);
    sir::Ofmap out;
    std::tie(out.lower, out.upper) = box(16);
    out.size = 16 * 8 * 8;
    out.transfer_id = core == 0 ? 11 : 12;
    out.destination.push_back(core == 0 ? sir::Destination{1, std::nullopt, sir::Endpoint::Core, 1}
                                        : sir::Destination{sir::kDramCoreId, std::nullopt, sir::Endpoint::Dram, std::nullopt});
    w.ofmap.push_back(out);
    w.ofmap_size = out.size;
    w.weight = sir::Weight{{0, 0, 0, 0}, {0, 15, 7, 8}, 16 * (8 * 9 + 32), {core == 0 ? 1 : 2}};
    w.ring_buffer_info = {{0, s.buffersize}};
    sir::Tile t;
    t.ifmap_lower = in.lower;
    t.ifmap_upper = in.upper;
    t.ofmap_lower = w.lower;
    t.ofmap_upper = w.upper;
    t.single_tile_time_pred = 1234.5;
    t.cut_mode = "KC";
    t.loop_order = "KNHW";
    w.tile_info.push_back(t);
    w.time = 1234;
    w.wl0_buffer.when_empty = core == 0 ? sir::EmptyForm::Null : sir::EmptyForm::EmptyArray;
    sir::BufferTensor b;
    b.address = 4096;
    std::tie(b.lower, b.upper) = box(8);
    b.size = in.size;
    b.tensor_id = 0;
    b.tensor_order = 0;
    b.transfer_id = in.transfer_id;
    w.buffer.push_back(b);
    c.workloads.push_back(w);
    s.cores.push_back(c);
  }
  s.dram.out.push_back({{{0, std::string("conv_a"), sir::Endpoint::Core, 0}}, {0, 0, 0, 0}, {0, 7, 7, 7}, {}, 512, 10,
                        sir::DramLoadType::Fmap});
  s.dram.in.push_back({1, "conv_b", {0, 0, 0, 0}, {0, 15, 7, 7}, std::nullopt, 12, 1});

  CHECK(sir::check(s, "built").empty());
  std::string text = sir::format_sir(s);  // validates against the schema
  CHECK(text == format_json(sir::to_json(s)));
  CHECK(text.find("\"wl0_buffer\": null") != std::string::npos);
  CHECK(text.find("\"wl0_buffer\": []") != std::string::npos);
  sir::Schedule back = sir::parse_sir(text, "built");
  CHECK(back == s);

  sir::TransferIndex index(s);
  const auto& t11 = index.refs(11);
  REQUIRE(t11.size() == 2);  // produced on core 0, consumed on core 1
  CHECK(t11[0].kind == sir::TransferRef::Kind::OfmapOut);
  CHECK(t11[0].core_id == 0);
  CHECK(t11[1].kind == sir::TransferRef::Kind::IfmapIn);
  CHECK(t11[1].core_id == 1);
  const auto& t12 = index.refs(12);
  REQUIRE(t12.size() == 2);
  CHECK(t12[1].kind == sir::TransferRef::Kind::DramStore);
  CHECK(index.refs(999).empty());
  CHECK(s.find_workload(1)->layer_name == "conv_b");
  CHECK(s.workload_count() == 2);
  CHECK(sir::box_volume({0, 0, 0, 0}, {0, 15, 7, 7}) == 16 * 64);

  // A destination on a core that does not exist.
  s.cores[0].workloads[0].ofmap[0].destination[0].core_id = 5;
  auto problems = sir::check(s, "built");
  REQUIRE(!problems.empty());
  CHECK(problems[0] == "built: /0/0/ofmap/0/destination/0/core_id: no core 5 in this schedule");
}

TEST_CASE("reference transfer ids: every consumed id has a producer") {
  for (const auto& path : cct::testing::reference_files("gemini-ir/scheduler")) {
    CAPTURE(path);
    sir::Schedule s = sir::read_sir(path);
    sir::TransferIndex index(s);
    size_t consumed = 0;
    for (const auto& entry : index.all()) {
      const auto& id = entry.first;
      const auto& refs = entry.second;
      bool produced = false, used = false;
      for (const auto& r : refs) {
        produced |= r.kind == sir::TransferRef::Kind::OfmapOut || r.kind == sir::TransferRef::Kind::DramLoad;
        used |= r.kind == sir::TransferRef::Kind::IfmapIn || r.kind == sir::TransferRef::Kind::WeightIn;
      }
      if (used) {
        ++consumed;
        CHECK_MESSAGE(produced, "transfer " << id << " is consumed but never produced");
      }
    }
    CHECK(consumed > 50);
  }
}
