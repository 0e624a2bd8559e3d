#include "dse/space.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "support/error.hpp"
#include "support/io.hpp"
#include "support/json_cursor.hpp"

namespace cct::dse {

std::string_view objective_name(Objective o) {
  switch (o) {
    case Objective::Latency: return "latency";
    case Objective::Energy: return "energy";
    case Objective::Edp: return "edp";
    case Objective::LatencyPerDollar: return "latency_per_dollar";
    case Objective::EnergyPerDollar: return "energy_per_dollar";
    case Objective::EdpPerDollar: return "edp_per_dollar";
  }
  return "?";
}

gemini::Objective mapping_objective(Objective o) {
  switch (o) {
    case Objective::Latency:
    case Objective::LatencyPerDollar: return gemini::Objective::Latency;
    case Objective::Energy:
    case Objective::EnergyPerDollar: return gemini::Objective::Energy;
    default: return gemini::Objective::Edp;
  }
}

std::string DesignPoint::key() const {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "dies=%d mesh=%dx%d pe=%dx%d l2_kib=%lld noc=%.17g d2d=%.17g io_links=%d dram=%s*%d package=%s",
                compute_dies, mesh_x, mesh_y, pe_rows, pe_cols, (long long)l2_kib, noc_bytes_per_cycle,
                d2d_bytes_per_cycle, io_links_per_die, dram_type.c_str(), dram_channels, package.c_str());
  // Only spaces that vary it name it (the keys of older journals stay valid).
  return std::string(buf) + (multicast ? (*multicast ? " multicast=1" : " multicast=0") : "");
}

namespace {

// A list of integers, or a range {"from", "to", "step"} / {"from", "to", "times"}.
std::vector<int64_t> int_values(const JsonCursor& c, int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  if (c.value().is_array()) {
    for (const JsonCursor& e : c.elements()) out.push_back(e.as_int());
  } else {
    c.expect_object();
    int64_t from = c.at("from").as_int(), to = c.at("to").as_int();
    if (to < from) c.at("to").fail("must be >= from");
    if (c.has("step") == c.has("times")) c.fail("a range has either \"step\" or \"times\"");
    if (c.has("step")) {
      int64_t step = c.at("step").as_int();
      if (step < 1) c.at("step").fail("must be >= 1");
      for (int64_t v = from; v <= to; v += step) out.push_back(v);
    } else {
      int64_t times = c.at("times").as_int();
      if (times < 2) c.at("times").fail("must be >= 2");
      if (from < 1) c.at("from").fail("a geometric range starts at >= 1");
      for (int64_t v = from; v <= to; v *= times) out.push_back(v);
    }
  }
  if (out.empty()) c.fail("no values");
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i] < lo || out[i] > hi)
      (c.value().is_array() ? c.at(i) : c)
          .fail("value " + std::to_string(out[i]) + " outside " + std::to_string(lo) + ".." + std::to_string(hi));
  return out;
}

std::vector<double> double_values(const JsonCursor& c) {
  std::vector<double> out;
  if (c.value().is_array()) {
    for (const JsonCursor& e : c.elements()) {
      double v = e.as_double();
      if (!std::isfinite(v) || v <= 0) e.fail("must be a positive number");
      out.push_back(v);
    }
  } else {
    for (int64_t v : int_values(c, 1, int64_t(1) << 30)) out.push_back(double(v));
  }
  if (out.empty()) c.fail("no values");
  return out;
}

std::vector<std::pair<int64_t, int64_t>> pair_values(const JsonCursor& c, int64_t hi) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const JsonCursor& e : c.elements()) {
    auto v = e.as_int_vector(2);
    if (v[0] < 1 || v[1] < 1 || v[0] > hi || v[1] > hi) e.fail("values must be in 1.." + std::to_string(hi));
    out.push_back({v[0], v[1]});
  }
  if (out.empty()) c.fail("no values");
  return out;
}

std::string dir_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

std::string resolve(const std::string& dir, const std::string& p) { return p.empty() || p[0] == '/' ? p : dir + p; }

}  // namespace

DesignSpace parse_design_space(std::string_view text, const std::string& file, bool validate_schema) {
  Json doc = parse_json_validated(text, file, validate_schema ? "dse" : "");
  JsonCursor root(doc, file);
  root.expect_object();
  if (root.at("format").as_string() != kSpaceFormatName)
    root.at("format").fail("expected \"" + std::string(kSpaceFormatName) + "\" (is this a DSE space file?)");
  if (root.at("version").as_int() != 1) root.at("version").fail("unsupported version (this build reads version 1)");
  for (const auto& [key, c] : root.members())
    if (key != "format" && key != "version" && key != "name" && key != "description" && key != "base_arch" &&
        key != "cost_model" && key != "objective" && key != "search" && key != "networks" && key != "parameters")
      c.fail("not a key of a space file (a cost table's?)");
  const std::string dir = file == "<stdin>" ? "" : dir_of(file);
  DesignSpace s;
  s.file = file;
  s.name = root.at("name").as_string();
  s.base_arch = root.at("base_arch").as_string();
  // A preset name stays a name; a path is relative to the space file.
  if (s.base_arch.find('/') != std::string::npos || s.base_arch.ends_with(".json"))
    s.base_arch = resolve(dir, s.base_arch);
  s.cost_model = resolve(dir, root.at("cost_model").as_string());
  const std::string obj = root.string_or("objective", "edp_per_dollar");
  bool found = false;
  for (Objective o : {Objective::Latency, Objective::Energy, Objective::Edp, Objective::LatencyPerDollar,
                      Objective::EnergyPerDollar, Objective::EdpPerDollar})
    if (objective_name(o) == obj) s.objective = o, found = true;
  if (!found) root.at("objective").fail("unknown objective \"" + obj + "\"");
  if (auto se = root.find("search")) {
    const std::string mode = se->string_or("mode", "quick");
    if (mode != "quick" && mode != "full") se->at("mode").fail("expected \"quick\" or \"full\"");
    s.quick_search = mode == "quick";
    s.effort = int(se->int_or("effort", 1));
    if (s.effort < 1) se->at("effort").fail("must be >= 1");
    s.seed = uint64_t(se->int_or("seed", 1));
  }
  if (auto nets = root.find("networks")) {
    for (const JsonCursor& n : nets->elements()) {
      NetworkSpec ns{n.at("name").as_string(), resolve(dir, n.at("fir").as_string())};
      for (const auto& other : s.networks)
        if (other.name == ns.name) n.at("name").fail("network \"" + ns.name + "\" is listed twice");
      s.networks.push_back(ns);
    }
  }
  JsonCursor p = root.at("parameters");
  s.compute_dies = int_values(p.at("compute_dies"), 1, 64);
  s.mesh = pair_values(p.at("mesh"), 64);
  s.pe_array = pair_values(p.at("pe_array"), 1024);
  s.l2_kib = int_values(p.at("l2_kib"), 1, int64_t(1) << 22);
  s.noc_bytes_per_cycle = double_values(p.at("noc_bytes_per_cycle"));
  s.d2d_bytes_per_cycle = double_values(p.at("d2d_bytes_per_cycle"));
  s.io_links_per_die = int_values(p.at("io_links_per_die"), 1, 16);
  s.dram_type = p.at("dram_type").as_string_vector();
  s.dram_channels = int_values(p.at("dram_channels"), 1, 256);
  s.package = p.at("package").as_string_vector();
  if (s.dram_type.empty()) p.at("dram_type").fail("no values");
  if (s.package.empty()) p.at("package").fail("no values");
  if (auto mc = p.find("multicast")) {
    for (const JsonCursor& e : mc->elements()) s.multicast.push_back(e.as_bool());
    if (s.multicast.empty()) mc->fail("no values");
  }
  return s;
}

DesignSpace load_design_space(const std::string& path, bool validate_schema) {
  return parse_design_space(read_input(path), display_name(path), validate_schema);
}

std::vector<DesignPoint> DesignSpace::points(const CostTable& table) const {
  for (const auto& d : dram_type) (void)table.dram_type(d);  // unknown names are errors
  for (const auto& k : package) (void)table.package(k);
  std::vector<DesignPoint> out;
  std::vector<std::optional<bool>> multicast_values(multicast.begin(), multicast.end());
  if (multicast_values.empty()) multicast_values.push_back(std::nullopt);  // the base architecture's
  for (int64_t dies : compute_dies)
    for (auto [mx, my] : mesh)
      for (auto [pr, pc] : pe_array)
        for (int64_t l2 : l2_kib)
          for (double noc : noc_bytes_per_cycle)
            for (double d2d : d2d_bytes_per_cycle)
              for (int64_t io_links : io_links_per_die)
                for (const auto& dt : dram_type)
                  for (int64_t ch : dram_channels)
                    for (const auto& pk : package)
                      for (std::optional<bool> mc : multicast_values) {
                      const auto& allowed = table.dram_type(dt).packages;
                      if (std::find(allowed.begin(), allowed.end(), pk) == allowed.end()) continue;
                      DesignPoint p;
                      p.index = int(out.size());
                      p.compute_dies = int(dies);
                      p.mesh_x = int(mx), p.mesh_y = int(my);
                      p.pe_rows = int(pr), p.pe_cols = int(pc);
                      p.l2_kib = l2;
                      p.noc_bytes_per_cycle = noc;
                      p.d2d_bytes_per_cycle = d2d;
                      p.io_links_per_die = int(io_links);
                      p.dram_type = dt;
                      p.dram_channels = int(ch);
                      p.package = pk;
                      p.multicast = mc;
                      out.push_back(std::move(p));
                    }
  return out;
}

namespace {

int die_columns(int n) { return int(std::ceil(std::sqrt(double(n)) - 1e-9)); }

}  // namespace

arch::Architecture point_architecture(const DesignPoint& p, const arch::Architecture& base, const CostTable& t) {
  arch::Architecture a = base;
  a.name = "dse-p" + std::to_string(p.index);
  a.description = "design point " + std::to_string(p.index) + " of a sweep over " + base.name + ": " + p.key();
  const int cols = die_columns(p.compute_dies);
  const int rows = (p.compute_dies + cols - 1) / cols;
  a.dies.clear();
  for (int i = 0; i < p.compute_dies; ++i) {
    arch::Die d;
    d.name = "compute" + std::to_string(i);
    d.kind = arch::DieKind::Compute;
    d.position_x = i % cols, d.position_y = i / cols;
    d.mesh_x = p.mesh_x, d.mesh_y = p.mesh_y;
    a.dies.push_back(d);
  }
  arch::Die io;
  io.name = "io";
  io.kind = arch::DieKind::Io;
  io.position_x = 0, io.position_y = rows;
  a.dies.push_back(io);
  const int io_die = p.compute_dies;

  a.core.pe_rows = p.pe_rows;
  a.core.pe_cols = p.pe_cols;
  a.core.l2_bytes = p.l2_kib * 1024;
  a.noc.link_bytes_per_cycle = p.noc_bytes_per_cycle;
  a.d2d.link_bytes_per_cycle = p.d2d_bytes_per_cycle;
  const DramType& dt = t.dram_type(p.dram_type);
  a.dram.channel_gib_per_s = dt.channel_gib_per_s;
  a.energy.dram_pj_per_bit = dt.pj_per_bit;
  a.energy.d2d_pj_per_bit = t.package(p.package).d2d_pj_per_bit;
  if (p.multicast) a.noc.multicast = *p.multicast;

  a.d2d_links.clear();
  auto die_at = [&](int x, int y) {
    int i = y * cols + x;
    return x < cols && i < p.compute_dies ? i : -1;
  };
  for (int i = 0; i < p.compute_dies; ++i) {
    const int x = i % cols, y = i / cols;
    if (int r = die_at(x + 1, y); r >= 0)  // right neighbour: one link per core row
      for (int k = 0; k < p.mesh_y; ++k) a.d2d_links.push_back({{{i, p.mesh_x - 1, k}, {r, 0, k}}});
    if (int b = die_at(x, y + 1); b >= 0)  // neighbour below: one link per core column
      for (int k = 0; k < p.mesh_x; ++k) a.d2d_links.push_back({{{i, k, p.mesh_y - 1}, {b, k, 0}}});
  }
  for (int i = 0; i < p.compute_dies; ++i)
    for (int k = 0; k < p.io_links_per_die; ++k)
      a.d2d_links.push_back({{{i, k % p.mesh_x, p.mesh_y - 1 - (k / p.mesh_x) % p.mesh_y}, {io_die, 0, 0}}});
  a.dram_channels.assign(size_t(p.dram_channels), arch::DramChannel{{io_die, 0, 0}});
  a.finalize(a.name);
  return a;
}

DesignFigures point_figures(const DesignPoint& p, const arch::Architecture& a, const CostTable& t) {
  CoreShape cs;
  cs.macs = a.core.macs_per_cycle();
  cs.sram_bytes = double(a.core.l2_bytes + a.core.wl0_bytes() + a.core.al1_bytes + a.core.ol1_bytes);
  cs.noc_bytes_per_cycle = a.noc.link_bytes_per_cycle;
  // Link ends per die; every compute die is the same design, so each carries
  // as many PHYs as the busiest one.
  std::vector<int> ends(a.dies.size(), 0);
  for (const auto& l : a.d2d_links) ++ends[size_t(l.end[0].die)], ++ends[size_t(l.end[1].die)];
  int compute_ends = 0, io_ends = 0;
  for (size_t d = 0; d < a.dies.size(); ++d) {
    int& e = a.dies[d].is_compute() ? compute_ends : io_ends;
    e = std::max(e, ends[d]);
  }
  const double link_gb_per_s = a.d2d.link_bytes_per_cycle * a.clock_ghz;
  const DramType& dt = t.dram_type(p.dram_type);
  DesignFigures f;
  f.compute_dies = p.compute_dies;
  f.compute_die_mm2 = p.mesh_x * p.mesh_y * core_mm2(cs, t.area) + compute_ends * d2d_phy_mm2(link_gb_per_s, t.area);
  f.io_die_mm2 = t.area.io_die_base_mm2 + p.dram_channels * dt.phy_mm2_per_channel + io_ends * d2d_phy_mm2(link_gb_per_s, t.area);
  f.dram_channels = p.dram_channels;
  f.dram_type = p.dram_type;
  f.package = p.package;
  return f;
}

}  // namespace cct::dse
