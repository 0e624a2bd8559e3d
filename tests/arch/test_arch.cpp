// Architecture format: presets, round trip, schema/table/doc agreement, and
// every validator error.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>

#include "arch/arch.hpp"
#include "support/error.hpp"
#include "support/json.hpp"
#include "support/schema.hpp"
#include "testing.hpp"

using cct::Json;
using namespace cct::arch;

namespace {

std::string preset_path(const std::string& name) {
  return cct::testing::source_dir() + "/examples/arch/" + name + ".json";
}

// Parses `text` and returns the error message (empty when it parsed).
std::string error_of(const std::string& text, bool schema) {
  try {
    parse_architecture(text, "t.json", schema);
  } catch (const cct::Error& e) {
    CHECK(e.code() == cct::kExitInvalidInput);
    return e.what();
  }
  return "";
}

// Applies `edit` to a preset's JSON and checks both the schema and the
// semantic reader reject it with a message containing each of `expect`.
void check_rejects(const std::string& preset, const std::function<void(Json&)>& edit,
                   std::initializer_list<const char*> expect, bool schema_too = true) {
  Json j = cct::parse_json(preset_text(preset), preset);
  edit(j);
  std::string text = cct::format_json(j);
  for (bool schema : {false, true}) {
    if (schema && !schema_too) continue;
    std::string msg = error_of(text, schema);
    INFO("schema=" << schema << " message: " << msg);
    CHECK(!msg.empty());
    if (schema) continue;  // the schema's wording differs; the pointer is checked below
    for (const char* e : expect) CHECK(msg.find(e) != std::string::npos);
  }
}

Json& member(Json& j, std::initializer_list<std::string_view> path) {
  Json* p = &j;
  for (auto k : path) {
    if (p->is_array()) p = &p->as_array()[std::stoul(std::string(k))];
    else p = p->find(k);
    REQUIRE(p != nullptr);
  }
  return *p;
}

void erase_key(Json& obj, std::string_view key) {
  auto& o = obj.as_object();
  for (auto it = o.begin(); it != o.end(); ++it)
    if (it->first == key) {
      o.erase(it);
      return;
    }
  FAIL("no key " << key);
}

}  // namespace

TEST_CASE("presets are embedded and load by name and by file") {
  auto names = preset_names();
  REQUIRE(names.size() >= 2);
  CHECK(std::find(names.begin(), names.end(), "zebu-1core") != names.end());
  CHECK(std::find(names.begin(), names.end(), "chip-64tops") != names.end());

  Architecture z = load_architecture("zebu-1core");
  CHECK(z.name == "zebu-1core");
  CHECK(z.core_count() == 1);
  CHECK(z.core.macs_per_cycle() == 4096);
  CHECK(z.core.l2_bytes == 8 * 1024 * 1024);
  CHECK(z.clock_ghz == 1.0);
  CHECK(z.dram_channels.size() == 1);
  // 16 GiB/s at 1 GHz.
  CHECK(z.dram_channel_bytes_per_cycle() == doctest::Approx(17.179869184));

  Architecture c = load_architecture(preset_path("chip-64tops"));
  CHECK(c.name == "chip-64tops");
  CHECK(c.core_count() == 8);
  CHECK(c.dies.size() == 3);
  CHECK(c.peak_tops() == doctest::Approx(65.536));
  int io_dies = 0;
  for (const auto& d : c.dies) io_dies += !d.is_compute();
  CHECK(io_dies == 1);
  for (const auto& ch : c.dram_channels) CHECK(!c.dies[size_t(ch.attach.die)].is_compute());

  // The embedded copy is the file in examples/arch.
  for (const auto& n : names) CHECK(preset_text(n) == cct::testing::read_file(preset_path(n)));
}

TEST_CASE("unknown preset names are usage errors that list the presets") {
  try {
    load_architecture("zebu-2core");
    FAIL("no error");
  } catch (const cct::Error& e) {
    CHECK(e.code() == cct::kExitUsage);
    CHECK(std::string(e.what()).find("zebu-1core") != std::string::npos);
  }
  CHECK_THROWS_AS(load_architecture("/nonexistent/arch.json"), cct::Error);
}

TEST_CASE("presets round-trip byte for byte and pass the schema") {
  for (const auto& n : preset_names()) {
    std::string text(preset_text(n));
    Architecture a = parse_architecture(text, n);
    std::string out = format_architecture(a);
    CHECK_MESSAGE(out == text, "preset " << n << " is not in canonical form; writer gives:\n" << out);
    cct::validate_output_text(out, "arch", n);
  }
}

// The keys of a table the schema must require (all but the flags).
template <class S>
std::vector<std::string> required_keys(ConstantTable<S> table) {
  std::vector<std::string> out;
  for (const auto& k : table)
    if (!is_optional(k)) out.emplace_back(k.key);
  return out;
}

TEST_CASE("constant tables, schema and docs list the same keys") {
  Json schema = cct::parse_json(cct::schema_text("arch"), "arch.schema.json");
  std::string doc = cct::testing::read_file(cct::testing::source_dir() + "/formats/Architecture_Format.md");
  auto check_section = [&](const char* section, std::vector<std::string> keys, std::vector<std::string> required_keys,
                           std::initializer_list<const char*> structural) {
    const Json* props = schema.find("properties")->find(section)->find("properties");
    REQUIRE(props != nullptr);
    std::vector<std::string> schema_keys, schema_required;
    for (const auto& m : props->as_object()) schema_keys.push_back(m.first);
    for (const char* s : structural) keys.push_back(s), required_keys.push_back(s);
    std::sort(keys.begin(), keys.end());
    std::sort(schema_keys.begin(), schema_keys.end());
    CHECK_MESSAGE(keys == schema_keys, "section " << section);
    const Json* required = schema.find("properties")->find(section)->find("required");
    for (const auto& r : required->as_array()) schema_required.push_back(r.as_string());
    std::sort(required_keys.begin(), required_keys.end());
    std::sort(schema_required.begin(), schema_required.end());
    CHECK_MESSAGE(required_keys == schema_required, "section " << section << ": required keys");
    for (const auto& k : keys) CHECK_MESSAGE(doc.find("`" + k + "`") != std::string::npos, "undocumented " << k);
  };
  check_section("core", constant_keys(core_constants()), required_keys(core_constants()), {});
  check_section("noc", constant_keys(noc_constants()), required_keys(noc_constants()), {});
  check_section("d2d", constant_keys(d2d_constants()), required_keys(d2d_constants()), {"links"});
  check_section("dram", constant_keys(dram_constants()), required_keys(dram_constants()), {"channels"});
  check_section("energy", constant_keys(energy_constants()), required_keys(energy_constants()), {});
  check_section("timing", constant_keys(timing_constants()), required_keys(timing_constants()), {});
}

// Each table row's range is the schema's: same bounds, integer keys integers.
template <class S>
void check_schema_ranges(const Json& schema, const char* section, ConstantTable<S> table) {
  const Json* props = schema.find("properties")->find(section)->find("properties");
  REQUIRE(props != nullptr);
  for (const auto& k : table) {
    INFO(section << "/" << k.key);
    const Json* p = props->find(k.key);
    REQUIRE(p != nullptr);
    if (is_optional(k)) {  // a flag: true or false, no range
      CHECK(p->find("type")->as_string() == "boolean");
      continue;
    }
    if (const Json* ref = p->find("$ref")) {
      std::string name = ref->as_string().substr(std::string("#/definitions/").size());
      p = schema.find("definitions")->find(name);
      REQUIRE(p != nullptr);
    }
    REQUIRE(p->find("minimum") != nullptr);
    REQUIRE(p->find("maximum") != nullptr);
    CHECK(p->find("minimum")->as_double() == k.range.lo);
    CHECK(p->find("maximum")->as_double() == k.range.hi);
    const Json* excl = p->find("exclusiveMinimum");
    CHECK((excl != nullptr && excl->as_bool()) == k.range.lo_open);
    const bool is_int = std::holds_alternative<int64_t S::*>(k.member);
    CHECK(p->find("type")->as_string() == (is_int ? "integer" : "number"));
  }
}

TEST_CASE("every constant has a physical range, the same in the reader and the schema") {
  Json schema = cct::parse_json(cct::schema_text("arch"), "arch.schema.json");
  check_schema_ranges(schema, "core", core_constants());
  check_schema_ranges(schema, "noc", noc_constants());
  check_schema_ranges(schema, "d2d", d2d_constants());
  check_schema_ranges(schema, "dram", dram_constants());
  check_schema_ranges(schema, "energy", energy_constants());
  check_schema_ranges(schema, "timing", timing_constants());
  const Json* clock = schema.find("properties")->find("clock_ghz");
  CHECK(clock->find("minimum")->as_double() == kClockGhz.lo);
  CHECK(clock->find("maximum")->as_double() == kClockGhz.hi);
}

// Absurd constants (issue 20) stalled gemini's cost model and overflowed
// zebusim's clock; both readers refuse them now.
TEST_CASE("absurd constants are refused") {
  check_rejects("chip-64tops", [](Json& j) { member(j, {"timing", "st_fixed_cycles"}) = 1e19; },
                {"/timing/st_fixed_cycles: st_fixed_cycles must be in [0, 1e9] (cycles)"});
  check_rejects("chip-64tops", [](Json& j) { member(j, {"timing", "st_fixed_cycles"}) = 3e16; }, {"/timing/st_fixed_cycles"});
  check_rejects("chip-64tops", [](Json& j) { member(j, {"dram", "latency_cycles"}) = 1e308; }, {"/dram/latency_cycles"});
  check_rejects("chip-64tops", [](Json& j) { member(j, {"timing", "pe_channel_split_cycles"}) = 1e20; },
                {"/timing/pe_channel_split_cycles"});
  check_rejects("chip-64tops", [](Json& j) { member(j, {"noc", "link_bytes_per_cycle"}) = 1e-300; },
                {"/noc/link_bytes_per_cycle: link_bytes_per_cycle must be in [0.001, 1000000]"});
  check_rejects("chip-64tops", [](Json& j) { member(j, {"core", "l2_bytes"}) = int64_t(1) << 50; }, {"/core/l2_bytes"});
  check_rejects("chip-64tops", [](Json& j) { member(j, {"core", "pe_rows"}) = int64_t(1) << 40; }, {"/core/pe_rows"});
  check_rejects("chip-64tops", [](Json& j) { member(j, {"energy", "mac_pj"}) = 1e300; }, {"/energy/mac_pj"});
  check_rejects("chip-64tops", [](Json& j) { member(j, {"clock_ghz"}) = 1e12; }, {"/clock_ghz"});
  // Each in range, but together a DRAM channel moving 1e-6 bytes per cycle.
  check_rejects("chip-64tops", [](Json& j) {
    member(j, {"clock_ghz"}) = 1000.0;
    member(j, {"dram", "channel_gib_per_s"}) = 0.001;
  }, {"/dram/channel_gib_per_s: channel_gib_per_s at clock_ghz", "bytes per cycle, which must be in [0.001, 1000000]"},
                /*schema_too=*/false);
  // The bounds themselves are accepted.
  Json j = cct::parse_json(preset_text("chip-64tops"), "p");
  member(j, {"timing", "st_fixed_cycles"}) = 1e9;
  member(j, {"dram", "latency_cycles"}) = 1e9;
  CHECK(error_of(cct::format_json(j), true).empty());
}

TEST_CASE("validator errors name the JSON pointer") {
  check_rejects("zebu-1core", [](Json& j) { j.set("bogus", 1); }, {"t.json: /bogus: unknown key"});
  check_rejects("zebu-1core", [](Json& j) { member(j, {"core"}).set("l3_bytes", 1); }, {"/core/l3_bytes: unknown key"});
  check_rejects("zebu-1core", [](Json& j) { member(j, {"format"}) = "cct-mapping"; }, {"/format:"});
  check_rejects("zebu-1core", [](Json& j) { member(j, {"version"}) = 7; }, {"/version: unsupported version"});
  check_rejects("zebu-1core", [](Json& j) { member(j, {"core", "l2_bytes"}) = 0; }, {"/core/l2_bytes: l2_bytes must be in [1, 1099511627776] (bytes)"});
  check_rejects("zebu-1core", [](Json& j) { member(j, {"core", "pe_rows"}) = 64.5; }, {"/core/pe_rows: expected an integer"});
  check_rejects("zebu-1core", [](Json& j) { erase_key(member(j, {"core"}), "wl0_rows"); }, {"/core: missing key \"wl0_rows\""});
  check_rejects("zebu-1core", [](Json& j) { member(j, {"timing", "pe_efficiency"}) = 1.5; }, {"/timing/pe_efficiency: pe_efficiency must be in (0, 1]"});
  check_rejects("zebu-1core", [](Json& j) { member(j, {"noc", "hop_latency_cycles"}) = -1.0; }, {"/noc/hop_latency_cycles: hop_latency_cycles must be in [0, 1e9]"});
  check_rejects("zebu-1core", [](Json& j) { member(j, {"dram", "channel_gib_per_s"}) = 0.0; }, {"/dram/channel_gib_per_s"});
  check_rejects("zebu-1core", [](Json& j) { member(j, {"energy", "mac_pj"}) = "cheap"; }, {"/energy/mac_pj: expected a number"});
  check_rejects("zebu-1core", [](Json& j) { member(j, {"clock_ghz"}) = 0.0; }, {"/clock_ghz: clock_ghz must be in [0.001, 1000]"});
  // Dies.
  check_rejects("chip-64tops", [](Json& j) { member(j, {"dies", "2", "name"}) = "compute0"; },
                {"/dies/2/name: die name \"compute0\" is also used by /dies/1"});
  check_rejects("chip-64tops", [](Json& j) { erase_key(member(j, {"dies", "1"}), "mesh"); }, {"/dies/1: a compute die needs \"mesh\""});
  check_rejects("chip-64tops", [](Json& j) { member(j, {"dies", "0"}).set("mesh", Json::array({1, 1})); }, {"/dies/0/mesh: an IO die has no cores"});
  check_rejects("chip-64tops", [](Json& j) { member(j, {"dies", "1", "mesh"}) = Json::array({0, 2}); }, {"/dies/1/mesh/0: expected an integer in 1..1024"});
  check_rejects("chip-64tops", [](Json& j) { member(j, {"dies", "1", "kind"}) = "memory"; }, {"/dies/1/kind: expected \"io\" or \"compute\""});
  check_rejects("zebu-1core", [](Json& j) { member(j, {"dies"}) = Json::array(); }, {"/dies: at least one die is needed"});
  check_rejects("chip-64tops", [](Json& j) {
    Json& dies = member(j, {"dies"});
    dies = Json::array({dies.as_array()[0]});
    member(j, {"d2d", "links"}) = Json::array();
  }, {"/dies: at least one compute die is needed"});
  // D2D links.
  check_rejects("chip-64tops", [](Json& j) { member(j, {"d2d", "links", "0", "0", "die"}) = "compute9"; },
                {"/d2d/links/0/0/die: no die named \"compute9\""});
  check_rejects("chip-64tops", [](Json& j) { member(j, {"d2d", "links", "0", "0", "core"}) = Json::array({2, 0}); },
                {"/d2d/links/0/0/core: core [2, 0] is outside die \"compute0\"'s 2x2 mesh"});
  check_rejects("chip-64tops", [](Json& j) { erase_key(member(j, {"d2d", "links", "0", "0"}), "core"); },
                {"/d2d/links/0/0: a site on compute die \"compute0\" needs \"core\""});
  check_rejects("chip-64tops", [](Json& j) { member(j, {"d2d", "links", "2", "1"}).set("core", Json::array({0, 0})); },
                {"/d2d/links/2/1/core: die \"io\" is an IO die"});
  check_rejects("chip-64tops", [](Json& j) { member(j, {"d2d", "links", "0", "1"}) = member(j, {"d2d", "links", "0", "0"}); },
                {"/d2d/links/0: a D2D link joins two different dies"});
  check_rejects("chip-64tops", [](Json& j) {
    auto& links = member(j, {"d2d", "links"}).as_array();
    links.resize(2);  // only the compute0-compute1 links remain: io is cut off
  }, {"/d2d/links: die", "cannot be reached"});
  // DRAM channels.
  check_rejects("chip-64tops", [](Json& j) { member(j, {"dram", "channels"}) = Json::array(); }, {"/dram/channels: at least one DRAM channel"});
  check_rejects("chip-64tops", [](Json& j) { member(j, {"dram", "channels", "3", "die"}) = "hbm"; }, {"/dram/channels/3/die: no die named \"hbm\""});
  check_rejects("zebu-1core", [](Json& j) { member(j, {"dram", "channels", "0", "core"}) = Json::array({0, 1}); },
                {"/dram/channels/0/core: core [0, 1] is outside"});
}

TEST_CASE("schema rejections name the pointer too") {
  Json j = cct::parse_json(preset_text("zebu-1core"), "z");
  member(j, {"core", "l2_bytes"}) = -8;
  std::string msg = error_of(cct::format_json(j), true);
  CHECK(msg.find("t.json: /core/l2_bytes:") != std::string::npos);
  CHECK(msg.find("arch.schema.json") != std::string::npos);
}

TEST_CASE("malformed text is reported with a line") {
  std::string msg = error_of("{\n  \"format\": \"cct-arch\",\n  \"version\": 1,\n  oops\n}\n", false);
  CHECK(msg.find("t.json:4") != std::string::npos);
  CHECK(!error_of("", true).empty());
  CHECK(!error_of("[]", false).empty());
  CHECK(!error_of("{\"format\": \"cct-arch\"}", false).empty());
}

TEST_CASE("finalize checks architectures built in code") {
  Architecture a = load_architecture("zebu-1core");
  a.timing.lw_bytes_per_cycle = 0;
  try {
    a.finalize("built");
    FAIL("no error");
  } catch (const cct::Error& e) {
    CHECK(std::string(e.what()) == "built: /timing/lw_bytes_per_cycle: lw_bytes_per_cycle must be in [0.001, 1000000] (bytes/cycle)");
  }
  a = load_architecture("zebu-1core");
  a.core.pe_cols = 128;
  a.finalize("built");
  CHECK(a.core.macs_per_cycle() == 8192);
}

TEST_CASE("corrupted architecture files give errors, never crashes") {
  std::mt19937_64 rng(20240611);
  const std::string base(preset_text("chip-64tops"));
  const std::string alphabet = "{}[],:\"-0123456789.eE xyzio";
  int accepted = 0, rejected = 0;
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
      if (text.empty()) text.push_back('{');
    }
    for (bool schema : {false, true}) {
      try {
        Architecture a = parse_architecture(text, "fuzz.json", schema);
        ++accepted;
        for (int c = 0; c < a.core_count(); ++c) (void)a.dram_route(c, 0);
      } catch (const cct::Error& e) {
        ++rejected;
        CHECK(std::string(e.what()).rfind("fuzz.json", 0) == 0);  // every message says where
      }
    }
  }
  CHECK(rejected > 0);
  MESSAGE(accepted << " corrupted variants were still valid");
}

TEST_CASE("a key given twice is refused, not read as its first value") {
  std::string text(preset_text("chip-64tops"));
  const std::string clock = "\"clock_ghz\": 1.0,";
  size_t at = text.find(clock);
  REQUIRE(at != std::string::npos);
  text.insert(at + clock.size(), " \"clock_ghz\": 2.0,");
  for (bool schema : {false, true}) {
    CAPTURE(schema);
    CHECK(error_of(text, schema) == "t.json:6: column 21: invalid JSON: duplicate key \"clock_ghz\"");
  }
}

TEST_CASE("multicast is a flag: true or false, left out it is false, anything else is refused") {
  std::string text(preset_text("chip-64tops"));
  CHECK(parse_architecture(text, "chip").noc.multicast);
  CHECK_FALSE(load_architecture("zebu-1core").noc.multicast);
  auto with = [&](const std::string& noc) {
    std::string t = text;
    const std::string from = "\"noc\": {", to = "},";
    size_t a = t.find(from), b = t.find(to, a);
    REQUIRE(a != std::string::npos);
    return t.substr(0, a) + "\"noc\": {" + noc + t.substr(b);
  };
  // Files written before the flag describe chips without it.
  Architecture old = parse_architecture(with("\"link_bytes_per_cycle\": 32.0, \"hop_latency_cycles\": 2.0"), "old");
  CHECK_FALSE(old.noc.multicast);
  // The writer always writes it.
  CHECK(format_architecture(old).find("\"multicast\": false") != std::string::npos);
  for (const char* bad : {"1", "\"yes\"", "null"}) {
    CAPTURE(bad);
    const std::string noc = std::string("\"link_bytes_per_cycle\": 32.0, \"hop_latency_cycles\": 2.0, \"multicast\": ") + bad;
    try {
      parse_architecture(with(noc), "bad.json");
      FAIL("accepted multicast = " << bad);
    } catch (const cct::Error& e) {
      CHECK(std::string(e.what()).find("/noc/multicast") != std::string::npos);
    }
    try {  // the reader alone, without the schema
      parse_architecture(with(noc), "bad.json", false);
      FAIL("accepted multicast = " << bad);
    } catch (const cct::Error& e) {
      CHECK(std::string(e.what()).find("/noc/multicast") != std::string::npos);
    }
  }
}
