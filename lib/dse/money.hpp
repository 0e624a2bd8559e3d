// The money model of the design-space exploration: what a chip costs to
// make, from its dies' areas at a process node, their yield, dies per wafer
// and wafer price, the package (organic substrate, fan-out or silicon
// interposer) with its own cost and assembly yield, and the DRAM bought for
// its bandwidth. Every constant comes from a cost table (examples/dse/
// cost_model.json; formats/DSE_Format.md lists each value with its source).
//
// Formulas (all prices in double-precision US dollars; only the count of
// dies on a wafer is rounded down, because a wafer holds whole dies):
//   die side with scribe   s = sqrt(A) + scribe
//   dies per wafer         DPW = floor(pi r^2 / s^2 - 2 pi r / sqrt(2 s^2)),
//                          r = diameter / 2 - edge exclusion
//   yield (negative binomial, Stapper/Cunningham; alpha = defect clustering)
//                          Y = (1 + A[cm^2] * D0 / alpha)^-alpha
//   known-good die         KGD = wafer_usd / DPW / Y
//   interposer (if any)    a die of the interposer process, area =
//                          interposer_area_factor x sum of die areas
//   substrate              substrate_usd_per_mm2 x substrate_area_factor x sum of die areas
//   assembly yield         bond_yield_per_die ^ (dies bonded, +1 for the interposer)
//   package                (sum KGD + interposer KGD + substrate + assembly_usd) / assembly yield
//   DRAM                   usd_per_gb_per_s x channels x channel GB/s
//   total                  package + DRAM
#pragma once

#include <map>
#include <string>
#include <vector>

#include "support/json.hpp"

namespace cct::dse {

inline constexpr std::string_view kCostFormatName = "cct-dse-cost";

struct Process {
  std::string node;
  double wafer_diameter_mm = 0;
  double edge_exclusion_mm = 0;
  double scribe_mm = 0;
  double wafer_usd = 0;
  double defect_density_per_cm2 = 0;
  double cluster_alpha = 0;
};

struct AreaConstants {
  double mm2_per_mac = 0;
  double sram_mm2_per_mib = 0;
  double core_logic_mm2 = 0;                     // vector processor, control, DMA of one core
  double noc_router_mm2_per_byte_per_cycle = 0;  // router of one core per byte/cycle of link width
  double d2d_phy_mm2_per_gb_per_s = 0;           // one link end, per GB/s of link bandwidth
  double io_die_base_mm2 = 0;                    // IO die without its PHYs (controllers, host interface)
};

struct DramType {
  double channel_gib_per_s = 0;
  double pj_per_bit = 0;
  double usd_per_gb_per_s = 0;
  double phy_mm2_per_channel = 0;
  std::vector<std::string> packages;  // the packages it can be built with
};

struct Package {
  double substrate_usd_per_mm2 = 0;
  double substrate_area_factor = 0;
  double assembly_usd = 0;
  double bond_yield_per_die = 0;
  double d2d_pj_per_bit = 0;
  double interposer_area_factor = 0;  // 0: no interposer
};

struct CostTable {
  std::string name;
  Process compute_process, io_process, interposer_process;
  AreaConstants area;
  std::map<std::string, DramType> dram_types;
  std::map<std::string, Package> packages;

  const DramType& dram_type(const std::string& name) const;  // throws a usage error naming the known types
  const Package& package(const std::string& name) const;
};

// Reads and checks a cost table (schema dse, format cct-dse-cost). Errors
// carry the JSON pointer; zero prices, zero DRAM energy and an interposer
// package without interposer area are refused.
CostTable parse_cost_table(std::string_view text, const std::string& file, bool validate_schema = true);
CostTable load_cost_table(const std::string& path, bool validate_schema = true);

// ---- The pieces of the formula, public for tests ----
double dies_per_wafer(const Process& p, double die_mm2);
double die_yield(const Process& p, double die_mm2);
// Cost of one good die: wafer price / dies per wafer / yield.
double known_good_die_usd(const Process& p, double die_mm2);

// What a design is made of, in the terms of the money model.
struct DesignFigures {
  int compute_dies = 0;
  double compute_die_mm2 = 0;  // each
  double io_die_mm2 = 0;
  int dram_channels = 0;
  std::string dram_type;
  std::string package;
};

struct DesignCost {
  double compute_die_yield = 0, io_die_yield = 0, interposer_yield = 1;
  double compute_dies_per_wafer = 0, io_dies_per_wafer = 0, interposer_dies_per_wafer = 0;
  double compute_die_usd = 0;   // one known-good compute die
  double io_die_usd = 0;
  double interposer_mm2 = 0, interposer_usd = 0;
  double substrate_usd = 0, assembly_usd = 0, assembly_yield = 0;
  double package_usd = 0;       // the assembled, good package
  double dram_usd = 0;
  double total_usd = 0;
  double silicon_mm2 = 0;       // compute + IO dies
};

DesignCost price_design(const DesignFigures& d, const CostTable& t);

// Die areas of the parts (mm2), from the area constants.
struct CoreShape {
  long long macs = 0;
  double sram_bytes = 0;         // L2 + weight and activation buffers
  double noc_bytes_per_cycle = 0;
};
double core_mm2(const CoreShape& c, const AreaConstants& a);
// One D2D link end of `gb_per_s` per direction.
double d2d_phy_mm2(double gb_per_s, const AreaConstants& a);

}  // namespace cct::dse
