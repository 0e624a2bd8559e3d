// Reading, writing and the embedded presets of the architecture format.
#include <algorithm>
#include <tuple>

#include "arch/arch.hpp"
#include "support/embedded.hpp"
#include "support/error.hpp"
#include "support/io.hpp"
#include "support/json_cursor.hpp"
#include "support/schema.hpp"

namespace cct {
extern const EmbeddedFile arch_preset_files[];
extern const std::size_t arch_preset_count;
}  // namespace cct

namespace cct::arch {

namespace {

void reject_unknown_keys(const JsonCursor& c, std::initializer_list<std::string_view> known) {
  for (const auto& [key, member] : c.members())
    if (std::find(known.begin(), known.end(), key) == known.end()) member.fail("unknown key \"" + key + "\"");
}

int read_small_int(const JsonCursor& c, int64_t lo, int64_t hi) {
  int64_t v = c.as_int();
  if (v < lo || v > hi) c.fail("expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  return int(v);
}

std::pair<int, int> read_pair(const JsonCursor& c, int64_t lo, int64_t hi) {
  c.as_int_vector(2);  // shape and type check with a clear message
  return {read_small_int(c.at(size_t(0)), lo, hi), read_small_int(c.at(size_t(1)), lo, hi)};
}

int die_by_name(const Architecture& a, const JsonCursor& c) {
  int d = a.die_index(c.as_string());
  if (d < 0) {
    std::string names;
    for (const auto& die : a.dies) names += (names.empty() ? "" : ", ") + die.name;
    c.fail("no die named \"" + c.as_string() + "\" (dies: " + names + ")");
  }
  return d;
}

// {"die": NAME, "core": [x, y]}; "core" only on compute dies (checked in finalize).
Site read_site(const Architecture& a, const JsonCursor& c) {
  c.expect_object();
  reject_unknown_keys(c, {"die", "core"});
  Site s;
  s.die = die_by_name(a, c.at("die"));
  if (auto core = c.find("core")) {
    auto [x, y] = read_pair(*core, 0, 1 << 20);
    s.x = x;
    s.y = y;
    if (!a.dies[size_t(s.die)].is_compute()) core->fail("die \"" + a.dies[size_t(s.die)].name + "\" is an IO die: it has no core positions");
  } else if (a.dies[size_t(s.die)].is_compute()) {
    c.fail("a site on compute die \"" + a.dies[size_t(s.die)].name + "\" needs \"core\": [x, y]");
  }
  return s;
}

Json site_json(const Architecture& a, const Site& s) {
  Json j = Json::object();
  j.set("die", a.dies[size_t(s.die)].name);
  if (a.dies[size_t(s.die)].is_compute()) j.set("core", Json::array({s.x, s.y}));
  return j;
}

}  // namespace

Architecture parse_architecture(std::string_view text, const std::string& file, bool validate_schema) {
  Json doc = parse_json_validated(text, file, validate_schema ? "arch" : "");
  JsonCursor root(doc, file);
  root.expect_object();
  reject_unknown_keys(root, {"format", "version", "name", "description", "clock_ghz", "dies", "core", "noc", "d2d",
                             "dram", "energy", "timing"});
  if (root.at("format").as_string() != kFormatName)
    root.at("format").fail("expected \"" + std::string(kFormatName) + "\" (is this an architecture file?)");
  if (root.at("version").as_int() != kFormatVersion)
    root.at("version").fail("unsupported version (this build reads version " + std::to_string(kFormatVersion) + ")");

  Architecture a;
  a.name = root.at("name").as_string();
  a.description = root.string_or("description", "");
  a.clock_ghz = root.at("clock_ghz").as_double();

  for (const JsonCursor& d : root.at("dies").elements()) {
    d.expect_object();
    reject_unknown_keys(d, {"name", "kind", "position", "mesh"});
    Die die;
    die.name = d.at("name").as_string();
    if (int other = a.die_index(die.name); other >= 0)
      d.at("name").fail("die name \"" + die.name + "\" is also used by /dies/" + std::to_string(other));
    const std::string& kind = d.at("kind").as_string();
    if (kind == "compute") die.kind = DieKind::Compute;
    else if (kind == "io") die.kind = DieKind::Io;
    else d.at("kind").fail("expected \"io\" or \"compute\"");
    std::tie(die.position_x, die.position_y) = read_pair(d.at("position"), -1024, 1024);
    if (auto mesh = d.find("mesh")) {
      if (die.kind == DieKind::Io) mesh->fail("an IO die has no cores, so no mesh");
      std::tie(die.mesh_x, die.mesh_y) = read_pair(*mesh, 1, 1024);
    } else if (die.kind == DieKind::Compute) {
      d.fail("a compute die needs \"mesh\": [columns, rows]");
    }
    a.dies.push_back(std::move(die));
  }
  if (a.dies.empty()) root.at("dies").fail("at least one die is needed");

  read_constants(root.at("core"), a.core, core_constants());
  read_constants(root.at("noc"), a.noc, noc_constants());
  JsonCursor d2d = root.at("d2d");
  read_constants(d2d, a.d2d, d2d_constants(), {"links"});
  for (const JsonCursor& l : d2d.at("links").elements()) {
    if (l.array_size() != 2) l.fail("a D2D link is a pair of ends: [{\"die\": ...}, {\"die\": ...}]");
    D2dLink link;
    link.end[0] = read_site(a, l.at(size_t(0)));
    link.end[1] = read_site(a, l.at(size_t(1)));
    a.d2d_links.push_back(link);
  }
  JsonCursor dram = root.at("dram");
  read_constants(dram, a.dram, dram_constants(), {"channels"});
  for (const JsonCursor& ch : dram.at("channels").elements()) a.dram_channels.push_back({read_site(a, ch)});
  read_constants(root.at("energy"), a.energy, energy_constants());
  read_constants(root.at("timing"), a.timing, timing_constants());

  a.finalize(file);
  return a;
}

Json architecture_to_json(const Architecture& a) {
  Json j = Json::object();
  j.set("format", std::string(kFormatName));
  j.set("version", kFormatVersion);
  j.set("name", a.name);
  if (!a.description.empty()) j.set("description", a.description);
  j.set("clock_ghz", a.clock_ghz);
  Json dies = Json::array();
  for (const Die& d : a.dies) {
    Json dj = Json::object();
    dj.set("name", d.name);
    dj.set("kind", d.is_compute() ? "compute" : "io");
    dj.set("position", Json::array({d.position_x, d.position_y}));
    if (d.is_compute()) dj.set("mesh", Json::array({d.mesh_x, d.mesh_y}));
    dies.push(std::move(dj));
  }
  j.set("dies", std::move(dies));
  Json core = Json::object();
  write_constants(core, a.core, core_constants());
  j.set("core", std::move(core));
  Json noc = Json::object();
  write_constants(noc, a.noc, noc_constants());
  j.set("noc", std::move(noc));
  Json d2d = Json::object();
  write_constants(d2d, a.d2d, d2d_constants());
  Json links = Json::array();
  for (const D2dLink& l : a.d2d_links) links.push(Json::array({site_json(a, l.end[0]), site_json(a, l.end[1])}));
  d2d.set("links", std::move(links));
  j.set("d2d", std::move(d2d));
  Json dram = Json::object();
  write_constants(dram, a.dram, dram_constants());
  Json channels = Json::array();
  for (const DramChannel& c : a.dram_channels) channels.push(site_json(a, c.attach));
  dram.set("channels", std::move(channels));
  j.set("dram", std::move(dram));
  Json energy = Json::object();
  write_constants(energy, a.energy, energy_constants());
  j.set("energy", std::move(energy));
  Json timing = Json::object();
  write_constants(timing, a.timing, timing_constants());
  j.set("timing", std::move(timing));
  return j;
}

std::string format_architecture(const Architecture& a) { return format_json(architecture_to_json(a)); }

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < arch_preset_count; ++i) {
    std::string_view n = arch_preset_files[i].name;
    if (n.size() > 5 && n.substr(n.size() - 5) == ".json") n.remove_suffix(5);
    names.emplace_back(n);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string_view preset_text(std::string_view name) {
  for (std::size_t i = 0; i < arch_preset_count; ++i) {
    std::string_view n = arch_preset_files[i].name;
    if (n.size() == name.size() + 5 && n.substr(0, name.size()) == name && n.substr(name.size()) == ".json")
      return arch_preset_files[i].data;
  }
  return {};
}

Architecture load_architecture(const std::string& spec, bool validate_schema) {
  // A bare name is a preset; anything that looks like a path is a file.
  bool looks_like_path = spec == "-" || spec.find('/') != std::string::npos || spec.find('.') != std::string::npos;
  if (!looks_like_path) {
    std::string_view text = preset_text(spec);
    if (text.empty()) {
      std::string names;
      for (const auto& n : preset_names()) names += (names.empty() ? "" : ", ") + n;
      throw_usage_error("unknown architecture '" + spec + "': not a preset (" + names +
                        ") and not a file path (a file needs a '/' or an extension, e.g. ./" + spec + ".json)");
    }
    return parse_architecture(text, "preset " + spec, validate_schema);
  }
  return parse_architecture(read_input(spec), display_name(spec), validate_schema);
}

}  // namespace cct::arch
