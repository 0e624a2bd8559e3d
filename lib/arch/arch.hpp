// The architecture description every tool reads (formats/Architecture_Format.md).
//
// An Architecture is the whole chip: clock, dies (an optional IO die holding
// DRAM, compute dies each with a mesh of identical cores), the per-core
// resources, the NoC, die-to-die links, DRAM channels, energy constants and
// the instruction timing model. Every hardware constant the toolkit uses comes
// from here; none is a literal in code.
//
// Loading: load_architecture("zebu-1core") finds a preset embedded in the
// binary; load_architecture("my-chip.json") reads a file. Both validate.
//
// Topology: cores are numbered globally, compute die by compute die in file
// order, row-major inside each die's mesh (id = first_core + y * mesh_x + x).
// Routes use XY mesh routing inside a die and the fewest D2D crossings
// between dies (see route()).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "arch/constants.hpp"
#include "support/json.hpp"

namespace cct::arch {

inline constexpr std::string_view kFormatName = "cct-arch";
inline constexpr int64_t kFormatVersion = 1;

// ---- Scalar sections --------------------------------------------------------
// Each section is a plain struct plus a table of its keys (in constants.cpp).
// Adding a constant: one member here, one table row, one schema property, and
// its value in each preset.

// One core (all cores of a chip are identical).
struct CoreSpec {
  int64_t pe_rows = 0;                             // PE array rows (input channels per cycle)
  int64_t pe_cols = 0;                             // PE array columns (output channels per cycle)
  int64_t vp_bytes_per_cycle = 0;                  // vector processor input throughput
  int64_t l2_bytes = 0;                            // shared on-core SRAM (activations, weights)
  int64_t wl0_rows = 0;                            // weight buffer next to the PE array, in rows
  int64_t wl0_row_bytes = 0;                       // bytes of one WL0 row (the WL0 address unit)
  int64_t al1_bytes = 0;                           // activation L1 feeding the PE array
  int64_t ol1_bytes = 0;                           // output/partial-sum L1 of the PE array
  int64_t l2_channel_align_bytes = 0;              // NHWC channel padding in L2
  int64_t weight_extra_bytes_per_out_channel = 0;  // bias/requant parameters stored with weights

  int64_t macs_per_cycle() const { return pe_rows * pe_cols; }
  int64_t wl0_bytes() const { return wl0_rows * wl0_row_bytes; }
};

// On-die mesh network.
struct NocSpec {
  double link_bytes_per_cycle = 0;  // per direction, per link
  double hop_latency_cycles = 0;    // router + link traversal
  // Routers and the IO die copy a DRAM read to several cores: DRAM is read
  // once and each link of the tree (LinkResources::append_multicast_route)
  // carries the bytes once.
  bool multicast = false;
};

// Die-to-die link parameters (all links alike).
struct D2dSpec {
  double link_bytes_per_cycle = 0;  // per direction, per link
  double latency_cycles = 0;        // added per crossing
};

// DRAM channel parameters (all channels alike).
struct DramSpec {
  double channel_gib_per_s = 0;  // bandwidth of one channel, GiB/s (2^30 bytes)
  double latency_cycles = 0;     // read latency of a request
};

// Energy per operation and per byte/bit moved; static power.
struct EnergySpec {
  double mac_pj = 0;              // one INT8 multiply-accumulate
  double vp_op_pj = 0;            // one vector-processor element operation
  double l1_pj_per_byte = 0;      // WL0/AL1/OL1 access
  double l2_pj_per_byte = 0;      // L2 SRAM access
  double dram_pj_per_bit = 0;     // DRAM access (device + PHY)
  double noc_pj_per_bit_hop = 0;  // one mesh hop
  double d2d_pj_per_bit = 0;      // one die-to-die crossing
  double core_static_mw = 0;      // leakage + clock tree per core
  double io_die_static_mw = 0;    // per IO die (controllers, PHYs)
};

// The instruction timing model: cycle costs by instruction class, fitted to
// the ZeBu traces by zebusim (lib/timing implements the formulas; irgen and
// gemini predict with the same numbers). formats/Architecture_Format.md
// explains every key.
struct TimingSpec {
  double config_cycles = 0;        // any *_cfg* instruction
  double control_cycles = 0;       // ct_st, ct_bc, ct_ed
  double ld_fixed_cycles = 0;      // lda_mov/ldw_mov/lw_mov from DRAM, on top of DRAM latency + bytes/bandwidth
  double st_fixed_cycles = 0;      // sta_mov, on top of DRAM latency + bytes/bandwidth
  double lw_bytes_per_cycle = 0;   // weights left in L2 (lw_mov SS=0) stream into the PE array at this rate
  double lw_fixed_cycles = 0;      // lw_mov SS=0 (the weights stay in L2; nothing is copied)
  double pe_fixed_cycles = 0;      // pe_* fixed part per instruction (issue and drain)
  double pe_efficiency = 0;        // PE cycles = modelled cycles / efficiency
  double vp_fixed_cycles = 0;      // vp_* fixed part per instruction
  double dt_fixed_cycles = 0;      // dt_cal
  double pe_act_bytes_per_cycle = 0;           // activation mini tile fill rate (L2 -> AL1)
  double pe_wl0_bytes_per_cycle = 0;           // weights read from WL0 into the array
  double pe_weight_cache_bytes = 0;            // 1x1 mini tiles with more weights than this reload them
  double pe_weight_reload_bytes_per_cycle = 0;  // rate of those reloads
  double pe_output_cycles_int8 = 0;            // minimum cycles per output pixel and 64 channels, INT8 out
  double pe_output_cycles_fp16 = 0;            // the same for FP16 out
  double pe_setup_cycles = 0;                  // per pe_conv: pipeline fill
  double pe_setup_cycles_per_act_line = 0;     // per 64 bytes of the first activation mini tile
  double pe_channel_split_cycles = 0;          // when the input channels span several mini tiles
  double pe_bank_conflict_efficiency = 1;      // MAC rate of a 1x1 tile whose input pixels lie pe_bank_conflict_pitch_bytes apart
  double pe_bank_conflict_pitch_bytes = 0;     // that pitch (padded channels x stride)
  double pe_l2_weight_overlap_loss = 0;        // share of the compute lost under a 1x1 tile's weight stream from L2
  double vp_pipeline_cycles = 0;               // per VP layer: pipeline depth
  double vp_second_input_cycles = 0;           // extra depth of two-input operations
  double vp_fp16_output_cycles = 0;            // extra depth when writing FP16
  double vp_pool_cycles_per_window = 0;        // extra depth per pooling-window element
  double host_latency_cycles = 0;              // a host step's fixed cost (signal, wake-up, launch, completion)
  double host_ops_per_cycle = 0;               // the host's compute rate, element operations per chip cycle
  double host_bytes_per_cycle = 0;             // the host's DRAM rate when it reads inputs and writes results
};

const ConstantTable<CoreSpec>& core_constants();
const ConstantTable<NocSpec>& noc_constants();
const ConstantTable<D2dSpec>& d2d_constants();
const ConstantTable<DramSpec>& dram_constants();
const ConstantTable<EnergySpec>& energy_constants();
const ConstantTable<TimingSpec>& timing_constants();

// ---- Structure --------------------------------------------------------------

enum class DieKind : uint8_t { Io, Compute };

struct Die {
  std::string name;
  DieKind kind = DieKind::Compute;
  int position_x = 0, position_y = 0;  // place in the package (drawing, documentation)
  int mesh_x = 0, mesh_y = 0;          // compute dies: mesh columns and rows; 0 for IO dies
  int first_core = 0;                  // global id of core (0, 0); compute dies only

  bool is_compute() const { return kind == DieKind::Compute; }
  int core_count() const { return mesh_x * mesh_y; }
};

// A place a transfer starts or ends: a core position on a compute die, or an
// IO die (x = y = 0; an IO die has no mesh).
struct Site {
  int die = 0;
  int x = 0, y = 0;
  bool operator==(const Site&) const = default;
};

struct D2dLink {
  Site end[2];  // a compute-die end is the core holding the port
};

struct DramChannel {
  Site attach;  // an IO die, or the core a channel is wired to on a compute die
};

// Global core id <-> (die, x, y).
struct CoreLocation {
  int die = 0;
  int x = 0, y = 0;
};

// Summary of a route: mesh hops (over all dies) and D2D crossings.
struct RouteSummary {
  int mesh_hops = 0;
  int d2d_crossings = 0;
};

// One leg of a detailed route: an XY mesh walk inside one die from (from_x,
// from_y) to (to_x, to_y), then the D2D link `link` (-1 on the last leg).
struct RouteLeg {
  int die = 0;
  int from_x = 0, from_y = 0, to_x = 0, to_y = 0;
  int link = -1;
  int hops() const;
};

class Architecture {
 public:
  std::string name;
  std::string description;
  double clock_ghz = 0;
  std::vector<Die> dies;
  CoreSpec core;
  NocSpec noc;
  D2dSpec d2d;
  std::vector<D2dLink> d2d_links;
  DramSpec dram;
  std::vector<DramChannel> dram_channels;
  EnergySpec energy;
  TimingSpec timing;

  // Checks the structure (names, counts, positions, connectivity) and the
  // constants' ranges, then derives the topology tables. Readers call it;
  // code that builds an Architecture by hand must too. `file` names the
  // source in errors, which carry the JSON pointer of the offending value.
  void finalize(const std::string& file = "<arch>");

  // ---- Derived figures
  int core_count() const { return core_count_; }
  int die_index(std::string_view die_name) const;  // -1 when absent
  double clock_hz() const { return clock_ghz * 1e9; }
  double dram_channel_bytes_per_cycle() const;
  double peak_macs_per_cycle() const { return double(core.macs_per_cycle()) * core_count_; }
  double peak_tops() const { return 2.0 * peak_macs_per_cycle() * clock_ghz / 1000.0; }

  // ---- Topology
  bool valid_core(int64_t core_id) const { return core_id >= 0 && core_id < core_count_; }
  CoreLocation core_location(int core_id) const;           // throws on an invalid id
  int core_id(int die, int x, int y) const;                // -1 when not a core
  Site core_site(int core_id) const;
  Site dram_site(int channel) const;                       // the channel's attach point
  bool different_dies(int core_a, int core_b) const;
  RouteSummary route(const Site& from, const Site& to) const;
  RouteSummary core_route(int core_a, int core_b) const { return route(core_site(core_a), core_site(core_b)); }
  RouteSummary dram_route(int core, int channel) const { return route(core_site(core), dram_site(channel)); }
  int hops(int core_a, int core_b) const { return core_route(core_a, core_b).mesh_hops; }
  int d2d_crossings(int core_a, int core_b) const { return core_route(core_a, core_b).d2d_crossings; }
  // Latency of a route ignoring bandwidth: hops x NoC hop latency + crossings x D2D latency.
  double route_latency_cycles(const RouteSummary& r) const;
  // The legs of a route, for models that charge individual links (contention).
  void route_legs(const Site& from, const Site& to, std::vector<RouteLeg>& legs) const;

 private:
  int core_count_ = 0;
  std::vector<int> core_die_;        // per global core id
  std::vector<int> next_die_;        // [from * dies + to]: next die on the fewest-crossings path, -1 if none
  std::vector<std::vector<int>> links_between_;  // [from * dies + to]: link ids joining the two dies
  // Picks the link from die `from` to the next die `to` closest to (x, y)
  // (and to `target` when `to` is its die); returns its id and both ports.
  int nearest_link(int from, int to, int x, int y, const Site& target, Site& near_end, Site& far_end) const;
};

// The chip's links as numbered resources, for models that charge individual
// links (zebusim's network and gemini's cost model share it, so both see the
// same links): the directed NoC links of every compute die (4 per core: +x,
// -x, +y, -y), then both directions of every D2D link, numbered from `first`
// (the caller's own resources, e.g. DRAM channels, come before).
class LinkResources {
 public:
  LinkResources(const Architecture& a, int first);
  // Bytes per cycle of each link, in resource order, appended to `capacity`.
  void append_capacities(std::vector<double>& capacity) const;
  int d2d_base() const { return d2d_base_; }  // the first D2D resource
  int end() const { return end_; }            // one past the last resource
  // Appends the links a transfer from `from` to `to` occupies to `resources`
  // and adds its mesh hops and D2D crossings to `summary`.
  void append_route(const Site& from, const Site& to, std::vector<int>& resources, RouteSummary& summary,
                    std::vector<RouteLeg>& scratch) const;
  // The same for one transfer from `from` to every site of `to` at once
  // (NocSpec::multicast): the union of the unicast routes, each link once
  // (XY routes from one entry port form a tree), and its distinct mesh hops
  // and D2D crossings. One site is append_route.
  void append_multicast_route(const Site& from, std::span<const Site> to, std::vector<int>& resources,
                              RouteSummary& summary, std::vector<RouteLeg>& scratch) const;

 private:
  const Architecture& a_;
  std::vector<int> mesh_base_;  // per die
  int d2d_base_ = 0, end_ = 0;
};

// ---- Reading and writing ----------------------------------------------------

// Parses and checks architecture JSON text. `file` names it in errors;
// `validate_schema` = false skips the JSON Schema (semantic checks always run).
Architecture parse_architecture(std::string_view text, const std::string& file, bool validate_schema = true);
// A preset name (see preset_names()) or a path to a JSON file ('-' = stdin).
Architecture load_architecture(const std::string& name_or_path, bool validate_schema = true);

// The architecture as JSON (keys in the documented order) and as text.
Json architecture_to_json(const Architecture& a);
std::string format_architecture(const Architecture& a);

// Embedded presets (examples/arch/*.json), by name without ".json", sorted.
std::vector<std::string> preset_names();
// The preset's JSON text; empty when there is no such preset.
std::string_view preset_text(std::string_view name);

}  // namespace cct::arch
