#include "dse/money.hpp"

#include <cmath>
#include <numbers>

#include "arch/datapath.hpp"
#include "support/error.hpp"
#include "support/io.hpp"
#include "support/json_cursor.hpp"

namespace cct::dse {

namespace {

double positive(const JsonCursor& c, std::string_view key) {
  double v = c.at(key).as_double();
  if (!std::isfinite(v) || v <= 0) c.at(key).fail("must be a positive number");
  return v;
}

double non_negative(const JsonCursor& c, std::string_view key) {
  double v = c.at(key).as_double();
  if (!std::isfinite(v) || v < 0) c.at(key).fail("must be a number >= 0");
  return v;
}

double fraction(const JsonCursor& c, std::string_view key) {
  double v = positive(c, key);
  if (v > 1) c.at(key).fail("is a yield: must be in (0, 1]");
  return v;
}

Process read_process(const JsonCursor& c) {
  Process p;
  p.node = c.at("node").as_string();
  p.wafer_diameter_mm = positive(c, "wafer_diameter_mm");
  p.edge_exclusion_mm = non_negative(c, "edge_exclusion_mm");
  p.scribe_mm = non_negative(c, "scribe_mm");
  p.wafer_usd = positive(c, "wafer_usd");
  p.defect_density_per_cm2 = non_negative(c, "defect_density_per_cm2");
  p.cluster_alpha = positive(c, "cluster_alpha");
  if (2 * p.edge_exclusion_mm >= p.wafer_diameter_mm) c.at("edge_exclusion_mm").fail("leaves no usable wafer");
  return p;
}

}  // namespace

const DramType& CostTable::dram_type(const std::string& n) const {
  auto it = dram_types.find(n);
  if (it != dram_types.end()) return it->second;
  std::string known;
  for (const auto& [k, v] : dram_types) known += (known.empty() ? "" : ", ") + k;
  throw_usage_error("unknown DRAM type \"" + n + "\" (the cost table \"" + name + "\" has " + known + ")");
}

const Package& CostTable::package(const std::string& n) const {
  auto it = packages.find(n);
  if (it != packages.end()) return it->second;
  std::string known;
  for (const auto& [k, v] : packages) known += (known.empty() ? "" : ", ") + k;
  throw_usage_error("unknown package \"" + n + "\" (the cost table \"" + name + "\" has " + known + ")");
}

CostTable parse_cost_table(std::string_view text, const std::string& file, bool validate_schema) {
  Json doc = parse_json_validated(text, file, validate_schema ? "dse" : "");
  JsonCursor root(doc, file);
  root.expect_object();
  if (root.at("format").as_string() != kCostFormatName)
    root.at("format").fail("expected \"" + std::string(kCostFormatName) + "\" (is this a DSE cost table?)");
  if (root.at("version").as_int() != 1) root.at("version").fail("unsupported version (this build reads version 1)");
  for (const auto& [key, c] : root.members())
    if (key != "format" && key != "version" && key != "name" && key != "description" && key != "processes" &&
        key != "area" && key != "dram_types" && key != "packages")
      c.fail("not a key of a cost table (a space file's?)");
  CostTable t;
  t.name = root.at("name").as_string();
  JsonCursor pr = root.at("processes");
  t.compute_process = read_process(pr.at("compute"));
  t.io_process = read_process(pr.at("io"));
  t.interposer_process = read_process(pr.at("interposer"));
  JsonCursor ar = root.at("area");
  t.area.mm2_per_mac = positive(ar, "mm2_per_mac");
  t.area.sram_mm2_per_mib = positive(ar, "sram_mm2_per_mib");
  t.area.core_logic_mm2 = non_negative(ar, "core_logic_mm2");
  t.area.noc_router_mm2_per_byte_per_cycle = non_negative(ar, "noc_router_mm2_per_byte_per_cycle");
  t.area.d2d_phy_mm2_per_gb_per_s = positive(ar, "d2d_phy_mm2_per_gb_per_s");
  t.area.io_die_base_mm2 = positive(ar, "io_die_base_mm2");
  for (const auto& [name, c] : root.at("packages").members()) {
    Package p;
    p.substrate_usd_per_mm2 = positive(c, "substrate_usd_per_mm2");
    p.substrate_area_factor = positive(c, "substrate_area_factor");
    p.assembly_usd = positive(c, "assembly_usd");
    p.bond_yield_per_die = fraction(c, "bond_yield_per_die");
    p.d2d_pj_per_bit = positive(c, "d2d_pj_per_bit");
    p.interposer_area_factor = non_negative(c, "interposer_area_factor");
    // An interposer spans its dies: a factor below 1 would be a die-sized
    // (or free) interposer, the slip the original cost model made.
    if (p.interposer_area_factor != 0 && p.interposer_area_factor < 1)
      c.at("interposer_area_factor").fail("an interposer must be at least as large as its dies (>= 1), or 0 for none");
    if (name == "interposer" && p.interposer_area_factor == 0)
      c.at("interposer_area_factor").fail("the interposer package needs its interposer (a factor >= 1)");
    t.packages.emplace(name, p);
  }
  if (t.packages.empty()) root.at("packages").fail("at least one package is needed");
  for (const auto& [name, c] : root.at("dram_types").members()) {
    DramType d;
    d.channel_gib_per_s = positive(c, "channel_gib_per_s");
    d.pj_per_bit = positive(c, "pj_per_bit");  // no zero-energy DRAM
    d.usd_per_gb_per_s = positive(c, "usd_per_gb_per_s");
    d.phy_mm2_per_channel = positive(c, "phy_mm2_per_channel");
    JsonCursor pk = c.at("packages");
    d.packages = pk.as_string_vector();
    if (d.packages.empty()) pk.fail("at least one package is needed");
    for (size_t i = 0; i < d.packages.size(); ++i)
      if (!t.packages.count(d.packages[i])) pk.at(i).fail("no package \"" + d.packages[i] + "\" in /packages");
    t.dram_types.emplace(name, d);
  }
  if (t.dram_types.empty()) root.at("dram_types").fail("at least one DRAM type is needed");
  return t;
}

CostTable load_cost_table(const std::string& path, bool validate_schema) {
  return parse_cost_table(read_input(path), display_name(path), validate_schema);
}

double dies_per_wafer(const Process& p, double die_mm2) {
  const double side = std::sqrt(die_mm2) + p.scribe_mm;
  const double a = side * side;
  const double r = p.wafer_diameter_mm / 2 - p.edge_exclusion_mm;
  const double pi = std::numbers::pi;
  return std::max(0.0, std::floor(pi * r * r / a - 2 * pi * r / std::sqrt(2 * a)));
}

double die_yield(const Process& p, double die_mm2) {
  return std::pow(1 + die_mm2 / 100.0 * p.defect_density_per_cm2 / p.cluster_alpha, -p.cluster_alpha);
}

double known_good_die_usd(const Process& p, double die_mm2) {
  const double dpw = dies_per_wafer(p, die_mm2);
  if (dpw < 1) throw_usage_error("a die of " + std::to_string(die_mm2) + " mm2 does not fit a " + p.node + " wafer");
  return p.wafer_usd / dpw / die_yield(p, die_mm2);
}

DesignCost price_design(const DesignFigures& d, const CostTable& t) {
  const Package& pkg = t.package(d.package);
  const DramType& dram = t.dram_type(d.dram_type);
  DesignCost c;
  c.compute_dies_per_wafer = dies_per_wafer(t.compute_process, d.compute_die_mm2);
  c.compute_die_yield = die_yield(t.compute_process, d.compute_die_mm2);
  c.compute_die_usd = known_good_die_usd(t.compute_process, d.compute_die_mm2);
  c.io_dies_per_wafer = dies_per_wafer(t.io_process, d.io_die_mm2);
  c.io_die_yield = die_yield(t.io_process, d.io_die_mm2);
  c.io_die_usd = known_good_die_usd(t.io_process, d.io_die_mm2);
  c.silicon_mm2 = d.compute_dies * d.compute_die_mm2 + d.io_die_mm2;
  int bonds = d.compute_dies + 1;
  if (pkg.interposer_area_factor > 0) {
    c.interposer_mm2 = pkg.interposer_area_factor * c.silicon_mm2;
    c.interposer_dies_per_wafer = dies_per_wafer(t.interposer_process, c.interposer_mm2);
    c.interposer_yield = die_yield(t.interposer_process, c.interposer_mm2);
    c.interposer_usd = known_good_die_usd(t.interposer_process, c.interposer_mm2);
    bonds += 1;
  }
  c.substrate_usd = pkg.substrate_usd_per_mm2 * pkg.substrate_area_factor * c.silicon_mm2;
  c.assembly_usd = pkg.assembly_usd;
  c.assembly_yield = std::pow(pkg.bond_yield_per_die, bonds);
  c.package_usd = (d.compute_dies * c.compute_die_usd + c.io_die_usd + c.interposer_usd + c.substrate_usd + c.assembly_usd) /
                  c.assembly_yield;
  // GiB/s -> GB/s (10^9 bytes), the unit DRAM is priced in.
  const double gb_per_s = d.dram_channels * dram.channel_gib_per_s * (arch::kBytesPerGiB / 1e9);
  c.dram_usd = dram.usd_per_gb_per_s * gb_per_s;
  c.total_usd = c.package_usd + c.dram_usd;
  return c;
}

double core_mm2(const CoreShape& c, const AreaConstants& a) {
  return double(c.macs) * a.mm2_per_mac + c.sram_bytes / 1048576.0 * a.sram_mm2_per_mib + a.core_logic_mm2 +
         c.noc_bytes_per_cycle * a.noc_router_mm2_per_byte_per_cycle;
}

double d2d_phy_mm2(double gb_per_s, const AreaConstants& a) { return gb_per_s * a.d2d_phy_mm2_per_gb_per_s; }

}  // namespace cct::dse
