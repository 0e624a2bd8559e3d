// Every reference Scheduler IR reads, validates, and survives read -> write -> read.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>

#include "sir/sir.hpp"
#include "support/error.hpp"
#include "support/json.hpp"
#include "testing.hpp"

using namespace cct;

namespace {

std::vector<std::string> reference_sirs() { return cct::testing::reference_files("gemini-ir/scheduler"); }

// The reference sorts keys alphabetically (tile_num_10 before tile_num_2); we
// write numbered keys in numeric order. Compare with object members sorted.
Json sorted(const Json& j) {
  if (j.is_array()) {
    Json::Array a;
    for (const auto& x : j.as_array()) a.push_back(sorted(x));
    return Json(std::move(a));
  }
  if (j.is_object()) {
    Json::Object o;
    for (const auto& [k, v] : j.as_object()) o.emplace_back(k, sorted(v));
    std::sort(o.begin(), o.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return Json(std::move(o));
  }
  return j;
}

}  // namespace

TEST_CASE("reference SIRs parse, pass the schema and the structural checks") {
  for (const auto& path : reference_sirs()) {
    CAPTURE(path);
    sir::Schedule s;
    REQUIRE_NOTHROW(s = sir::read_sir(path));
    auto problems = sir::check(s, path);
    CHECK_MESSAGE(problems.empty(), (problems.empty() ? "" : problems.front()));
    CHECK(s.buffersize == 8 * 1024 * 1024);
    REQUIRE(s.cores.size() == 1);
    CHECK(s.cores[0].id == 0);
    CHECK(s.cores[0].workloads.size() > 60);
    // Workloads are listed in workload_id order on the single core.
    for (size_t i = 0; i < s.cores[0].workloads.size(); ++i)
      CHECK(s.cores[0].workloads[i].workload_id == static_cast<int64_t>(i));
  }
}

TEST_CASE("reference SIRs round-trip: same JSON (modulo numbered-key order), same structure, deterministic") {
  for (const auto& path : reference_sirs()) {
    CAPTURE(path);
    std::string text = cct::testing::read_file(path);
    Json original = parse_json(text, path);
    sir::Schedule s = sir::parse_sir(text, path);
    std::string written = sir::format_sir(s);
    Json back = parse_json(written, "written");
    CHECK(sorted(back) == sorted(original));
    sir::Schedule s2 = sir::parse_sir(written, "written");
    CHECK(s2 == s);
    CHECK(sir::format_sir(s2) == written);
  }
}

TEST_CASE("the fast writer gives exactly format_json(to_json(s))") {
  for (const auto& path : reference_sirs()) {
    CAPTURE(path);
    sir::Schedule s = sir::read_sir(path);
    CHECK(sir::format_sir(s, false) == format_json(sir::to_json(s)));
  }
}

TEST_CASE("write_sir and read_sir: files, zstd, atomic output") {
  std::string dir = cct::testing::temp_dir("sir_io");
  sir::Schedule s = sir::read_sir(reference_sirs().front());
  sir::write_sir(dir + "/s.json.zst", s);
  std::string raw = cct::testing::read_file(dir + "/s.json.zst");
  REQUIRE(raw.size() > 4);
  CHECK(static_cast<unsigned char>(raw[0]) == 0x28);  // zstd magic
  CHECK(sir::read_sir(dir + "/s.json.zst") == s);
  sir::write_sir(dir + "/s.json", s);
  CHECK(cct::testing::read_file(dir + "/s.json") == sir::format_sir(s));
  CHECK_THROWS_AS(sir::read_sir(dir + "/missing.json"), Error);
}

namespace {

// Walks two JSON trees of the same shape: values under a transfer-id key
// ("transfer_id", "related_ifmap", "related_ofmap") must be `shift` apart,
// every other value equal. Returns the ids seen.
int64_t compare_shifted(const Json& a, const Json& b, int64_t shift, bool id) {
  REQUIRE(a.type() == b.type());
  if (a.is_array()) {
    REQUIRE(a.as_array().size() == b.as_array().size());
    int64_t n = 0;
    for (size_t i = 0; i < a.as_array().size(); ++i) n += compare_shifted(a.as_array()[i], b.as_array()[i], shift, id);
    return n;
  }
  if (a.is_object()) {
    REQUIRE(a.as_object().size() == b.as_object().size());
    int64_t n = 0;
    for (size_t i = 0; i < a.as_object().size(); ++i) {
      const auto& [ka, va] = a.as_object()[i];
      REQUIRE(ka == b.as_object()[i].first);
      const bool key_is_id = ka == "transfer_id" || ka == "related_ifmap" || ka == "related_ofmap";
      n += compare_shifted(va, b.as_object()[i].second, shift, key_is_id);
    }
    return n;
  }
  if (id && a.is_int() && a.as_int() >= 0) {
    CHECK(b.as_int() == a.as_int() + shift);
    return 1;
  }
  CHECK(a == b);
  return 0;
}

}  // namespace

TEST_CASE("renumber_transfers rewrites every transfer id and nothing else") {
  for (const auto& path : reference_sirs()) {
    CAPTURE(path);
    sir::Schedule s = sir::read_sir(path);
    sir::Schedule r = s;
    sir::renumber_transfers(r, [](int64_t id) { return id + 7; });
    const int64_t ids = compare_shifted(sir::to_json(s), sir::to_json(r), 7, false);
    CHECK(ids > 0);
    sir::renumber_transfers(r, [](int64_t id) { return id - 7; });
    CHECK(r == s);
  }
}
