// The design space of an architecture sweep (formats/DSE_Format.md): a base
// architecture preset, lists or ranges of the parameters to vary, the
// networks, the objective and the search effort. A design point is the base
// architecture with one value of every parameter; points are numbered in a
// fixed order (the cartesian product, last parameter fastest, points whose
// DRAM type cannot be built in their package left out).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "dse/money.hpp"
#include "gemini/cost.hpp"

namespace cct::dse {

inline constexpr std::string_view kSpaceFormatName = "cct-dse-space";

// What the sweep ranks designs by; the *PerDollar ones multiply the figure by
// the design's cost (lower is better: latency x $ is the inverse of
// performance per dollar).
enum class Objective { Latency, Energy, Edp, LatencyPerDollar, EnergyPerDollar, EdpPerDollar };
std::string_view objective_name(Objective o);
// The objective gemini maps each network with (the figure without the dollars).
gemini::Objective mapping_objective(Objective o);

struct NetworkSpec {
  std::string name;  // CSV column "network"
  std::string fir;   // path (relative paths are relative to the space file)
};

struct DesignPoint {
  int index = 0;
  int compute_dies = 1;
  int mesh_x = 1, mesh_y = 1;
  int pe_rows = 1, pe_cols = 1;
  int64_t l2_kib = 0;
  double noc_bytes_per_cycle = 0;
  double d2d_bytes_per_cycle = 0;
  int io_links_per_die = 1;  // D2D links from each compute die to the IO die
  std::string dram_type;
  int dram_channels = 1;
  std::string package;
  std::optional<bool> multicast;  // noc.multicast (one DRAM read reaching several cores); none: the base's

  int cores() const { return compute_dies * mesh_x * mesh_y; }
  // The parameter values as one string (journal key; changes when the point does).
  std::string key() const;
};

struct DesignSpace {
  std::string file;  // where it was read from (messages, relative paths)
  std::string name;
  std::string base_arch;  // preset name or path
  std::string cost_model;  // path, resolved against the space file's directory
  Objective objective = Objective::EdpPerDollar;
  bool quick_search = true;  // segmentation only (see sweep.hpp); false: gemini's full search
  int effort = 1;            // full search effort
  uint64_t seed = 1;
  std::vector<NetworkSpec> networks;

  std::vector<int64_t> compute_dies;
  std::vector<std::pair<int64_t, int64_t>> mesh;
  std::vector<std::pair<int64_t, int64_t>> pe_array;
  std::vector<int64_t> l2_kib;
  std::vector<double> noc_bytes_per_cycle;
  std::vector<double> d2d_bytes_per_cycle;
  std::vector<int64_t> io_links_per_die;
  std::vector<std::string> dram_type;
  std::vector<int64_t> dram_channels;
  std::vector<std::string> package;
  std::vector<bool> multicast;  // optional in the file; empty: the base architecture's value

  // Every buildable point, numbered from 0.
  std::vector<DesignPoint> points(const CostTable& table) const;
};

DesignSpace parse_design_space(std::string_view text, const std::string& file, bool validate_schema = true);
DesignSpace load_design_space(const std::string& path, bool validate_schema = true);

// The architecture of a point: the base with the point's dies (a grid of
// compute dies, ceil(sqrt(n)) columns, and the IO die below them), meshes,
// PE array, L2, NoC and D2D link widths, DRAM channels on the IO die at the
// DRAM type's bandwidth and energy, and the package's D2D energy. D2D links
// join neighbouring compute dies, one per core along the shared edge; each
// compute die has io_links_per_die links to the IO die, from the cores of its
// bottom row (then the rows above, when there are more links than columns).
arch::Architecture point_architecture(const DesignPoint& p, const arch::Architecture& base, const CostTable& t);

// Areas of the point's dies (mm2) and the figures the money model prices.
DesignFigures point_figures(const DesignPoint& p, const arch::Architecture& a, const CostTable& t);

}  // namespace cct::dse
