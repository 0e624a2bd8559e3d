// Structure checks and topology of an Architecture.
#include "arch/arch.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>

#include "arch/datapath.hpp"
#include "support/error.hpp"
#include "support/json_cursor.hpp"

namespace cct::arch {

namespace {

// Bounds that keep every derived table small and every int computation exact.
constexpr int kMaxMeshSide = 1024;
constexpr int kMaxCores = 1 << 20;

int manhattan(int ax, int ay, int bx, int by) { return std::abs(ax - bx) + std::abs(ay - by); }

std::string ptr(std::initializer_list<std::string> tokens) {
  std::string p;
  for (const auto& t : tokens) append_pointer_token(p, t);
  return p;
}

[[noreturn]] void fail_at(const std::string& file, const std::string& pointer, const std::string& what) {
  throw_input_error(at_pointer(file, pointer, what));
}

}  // namespace

int RouteLeg::hops() const { return manhattan(from_x, from_y, to_x, to_y); }

int Architecture::die_index(std::string_view die_name) const {
  for (size_t i = 0; i < dies.size(); ++i)
    if (dies[i].name == die_name) return int(i);
  return -1;
}

double Architecture::dram_channel_bytes_per_cycle() const {
  return dram.channel_gib_per_s * kBytesPerGiB / clock_hz();
}

void Architecture::finalize(const std::string& file) {
  if (name.empty()) fail_at(file, "/name", "the architecture needs a name");
  if (!in_range(clock_ghz, kClockGhz)) fail_at(file, "/clock_ghz", "clock_ghz must be " + range_text(kClockGhz) + " (GHz)");

  check_constants(core, core_constants(), file, "/core");
  check_constants(noc, noc_constants(), file, "/noc");
  check_constants(d2d, d2d_constants(), file, "/d2d");
  check_constants(dram, dram_constants(), file, "/dram");
  check_constants(energy, energy_constants(), file, "/energy");
  check_constants(timing, timing_constants(), file, "/timing");
  // The clock turns GiB/s into bytes per cycle: that must be a physical rate too.
  if (!in_range(dram_channel_bytes_per_cycle(), kRate))
    fail_at(file, "/dram/channel_gib_per_s",
            "channel_gib_per_s at clock_ghz " + number_text(clock_ghz) + " gives " +
                number_text(dram_channel_bytes_per_cycle()) + " bytes per cycle, which must be " + range_text(kRate));

  // Dies and core numbering.
  if (dies.empty()) fail_at(file, "/dies", "at least one die is needed");
  int64_t cores = 0;
  for (size_t i = 0; i < dies.size(); ++i) {
    Die& d = dies[i];
    const std::string at = ptr({"dies", std::to_string(i)});
    if (d.name.empty()) fail_at(file, at + "/name", "a die needs a name");
    for (size_t j = 0; j < i; ++j)
      if (dies[j].name == d.name)
        fail_at(file, at + "/name", "die name \"" + d.name + "\" is also used by /dies/" + std::to_string(j));
    if (d.is_compute()) {
      if (d.mesh_x < 1 || d.mesh_y < 1 || d.mesh_x > kMaxMeshSide || d.mesh_y > kMaxMeshSide)
        fail_at(file, at + "/mesh",
                "a compute die's mesh must be [columns, rows], each in 1.." + std::to_string(kMaxMeshSide));
      d.first_core = int(cores);
      cores += int64_t(d.mesh_x) * d.mesh_y;
      if (cores > kMaxCores) fail_at(file, at + "/mesh", "more than " + std::to_string(kMaxCores) + " cores in all");
    } else {
      if (d.mesh_x != 0 || d.mesh_y != 0) fail_at(file, at + "/mesh", "an IO die has no cores, so no mesh");
      d.first_core = int(cores);
    }
  }
  if (cores == 0) fail_at(file, "/dies", "at least one compute die is needed");
  core_count_ = int(cores);
  core_die_.assign(size_t(cores), 0);
  for (size_t i = 0; i < dies.size(); ++i)
    if (dies[i].is_compute())
      for (int k = 0; k < dies[i].core_count(); ++k) core_die_[size_t(dies[i].first_core + k)] = int(i);

  auto check_site = [&](const Site& s, const std::string& at) {
    if (s.die < 0 || size_t(s.die) >= dies.size()) fail_at(file, at + "/die", "no such die");
    const Die& d = dies[size_t(s.die)];
    if (d.is_compute()) {
      if (s.x < 0 || s.y < 0 || s.x >= d.mesh_x || s.y >= d.mesh_y)
        fail_at(file, at + "/core",
                "core [" + std::to_string(s.x) + ", " + std::to_string(s.y) + "] is outside die \"" + d.name +
                    "\"'s " + std::to_string(d.mesh_x) + "x" + std::to_string(d.mesh_y) + " mesh");
    } else if (s.x != 0 || s.y != 0) {
      fail_at(file, at + "/core", "die \"" + d.name + "\" is an IO die: it has no core positions");
    }
  };

  // D2D links.
  const size_t nd = dies.size();
  links_between_.assign(nd * nd, {});
  for (size_t i = 0; i < d2d_links.size(); ++i) {
    const std::string at = ptr({"d2d", "links", std::to_string(i)});
    const D2dLink& l = d2d_links[i];
    check_site(l.end[0], at + "/0");
    check_site(l.end[1], at + "/1");
    if (l.end[0].die == l.end[1].die) fail_at(file, at, "a D2D link joins two different dies");
    links_between_[size_t(l.end[0].die) * nd + size_t(l.end[1].die)].push_back(int(i));
    links_between_[size_t(l.end[1].die) * nd + size_t(l.end[0].die)].push_back(int(i));
  }

  // DRAM channels.
  if (dram_channels.empty()) fail_at(file, "/dram/channels", "at least one DRAM channel is needed");
  for (size_t i = 0; i < dram_channels.size(); ++i)
    check_site(dram_channels[i].attach, ptr({"dram", "channels", std::to_string(i)}));

  // Fewest-crossings next hop between dies: BFS from each die, neighbours in link order.
  next_die_.assign(nd * nd, -1);
  for (size_t s = 0; s < nd; ++s) {
    std::vector<int> parent(nd, -1);
    std::vector<bool> seen(nd, false);
    std::deque<size_t> queue{s};
    seen[s] = true;
    while (!queue.empty()) {
      size_t d = queue.front();
      queue.pop_front();
      for (const D2dLink& l : d2d_links) {
        int other = l.end[0].die == int(d) ? l.end[1].die : l.end[1].die == int(d) ? l.end[0].die : -1;
        if (other < 0 || seen[size_t(other)]) continue;
        seen[size_t(other)] = true;
        parent[size_t(other)] = int(d);
        queue.push_back(size_t(other));
      }
    }
    for (size_t t = 0; t < nd; ++t) {
      if (t == s) {
        next_die_[s * nd + t] = int(s);
        continue;
      }
      if (!seen[t])
        fail_at(file, "/d2d/links",
                "die \"" + dies[t].name + "\" cannot be reached from die \"" + dies[s].name + "\" over D2D links");
      size_t step = t;
      while (parent[step] != int(s)) step = size_t(parent[step]);
      next_die_[s * nd + t] = int(step);
    }
  }
}

CoreLocation Architecture::core_location(int id) const {
  if (!valid_core(id))
    throw_input_error("core " + std::to_string(id) + " does not exist (architecture \"" + name + "\" has cores 0.." +
                      std::to_string(core_count_ - 1) + ")");
  int die = core_die_[size_t(id)];
  const Die& d = dies[size_t(die)];
  int local = id - d.first_core;
  return {die, local % d.mesh_x, local / d.mesh_x};
}

int Architecture::core_id(int die, int x, int y) const {
  if (die < 0 || size_t(die) >= dies.size()) return -1;
  const Die& d = dies[size_t(die)];
  if (!d.is_compute() || x < 0 || y < 0 || x >= d.mesh_x || y >= d.mesh_y) return -1;
  return d.first_core + y * d.mesh_x + x;
}

Site Architecture::core_site(int id) const {
  CoreLocation l = core_location(id);
  return {l.die, l.x, l.y};
}

Site Architecture::dram_site(int channel) const {
  if (channel < 0 || size_t(channel) >= dram_channels.size())
    throw_input_error("DRAM channel " + std::to_string(channel) + " does not exist (architecture \"" + name +
                      "\" has channels 0.." + std::to_string(int(dram_channels.size()) - 1) + ")");
  return dram_channels[size_t(channel)].attach;
}

bool Architecture::different_dies(int a, int b) const { return core_location(a).die != core_location(b).die; }

int Architecture::nearest_link(int from, int to, int x, int y, const Site& target, Site& near_end,
                               Site& far_end) const {
  const auto& candidates = links_between_[size_t(from) * dies.size() + size_t(to)];
  int best = -1, best_cost = 0;
  for (int id : candidates) {
    const D2dLink& l = d2d_links[size_t(id)];
    const Site& n = l.end[0].die == from ? l.end[0] : l.end[1];
    const Site& f = l.end[0].die == from ? l.end[1] : l.end[0];
    // Hops to the port here, plus hops from the far port to the target when
    // the next die is the last one (looking one die ahead keeps it simple).
    int cost = manhattan(x, y, n.x, n.y) + (to == target.die ? manhattan(f.x, f.y, target.x, target.y) : 0);
    if (best < 0 || cost < best_cost) {
      best = id;
      best_cost = cost;
      near_end = n;
      far_end = f;
    }
  }
  return best;
}

RouteSummary Architecture::route(const Site& from, const Site& to) const {
  RouteSummary r;
  int die = from.die, x = from.x, y = from.y;
  const size_t nd = dies.size();
  while (die != to.die) {
    int next = next_die_[size_t(die) * nd + size_t(to.die)];
    Site near_end, far_end;
    nearest_link(die, next, x, y, to, near_end, far_end);
    r.mesh_hops += manhattan(x, y, near_end.x, near_end.y);
    r.d2d_crossings += 1;
    die = next;
    x = far_end.x;
    y = far_end.y;
  }
  r.mesh_hops += manhattan(x, y, to.x, to.y);
  return r;
}

LinkResources::LinkResources(const Architecture& a, int first) : a_(a) {
  int next = first;
  for (const auto& d : a.dies) {
    mesh_base_.push_back(next);
    if (d.is_compute()) next += d.core_count() * 4;
  }
  d2d_base_ = next;
  end_ = d2d_base_ + int(a.d2d_links.size()) * 2;
}

void LinkResources::append_capacities(std::vector<double>& capacity) const {
  for (const auto& d : a_.dies)
    if (d.is_compute()) capacity.resize(capacity.size() + size_t(d.core_count()) * 4, a_.noc.link_bytes_per_cycle);
  capacity.resize(capacity.size() + a_.d2d_links.size() * 2, a_.d2d.link_bytes_per_cycle);
}

void LinkResources::append_route(const Site& from, const Site& to, std::vector<int>& resources, RouteSummary& summary,
                                 std::vector<RouteLeg>& scratch) const {
  a_.route_legs(from, to, scratch);
  for (const auto& leg : scratch) {
    const auto& die = a_.dies[size_t(leg.die)];
    int x = leg.from_x, y = leg.from_y;
    auto step = [&](int dir, int nx, int ny) {
      if (die.is_compute()) resources.push_back(mesh_base_[size_t(leg.die)] + (y * die.mesh_x + x) * 4 + dir);
      x = nx, y = ny;
      ++summary.mesh_hops;
    };
    while (x != leg.to_x) leg.to_x > x ? step(0, x + 1, y) : step(1, x - 1, y);
    while (y != leg.to_y) leg.to_y > y ? step(2, x, y + 1) : step(3, x, y - 1);
    if (leg.link >= 0) {
      const auto& link = a_.d2d_links[size_t(leg.link)];
      resources.push_back(d2d_base_ + leg.link * 2 + (link.end[0].die == leg.die ? 0 : 1));
      ++summary.d2d_crossings;
    }
  }
}

void LinkResources::append_multicast_route(const Site& from, std::span<const Site> to, std::vector<int>& resources,
                                           RouteSummary& summary, std::vector<RouteLeg>& scratch) const {
  std::vector<int> tree;
  RouteSummary unused;
  for (const Site& s : to) append_route(from, s, tree, unused, scratch);
  std::sort(tree.begin(), tree.end());
  tree.erase(std::unique(tree.begin(), tree.end()), tree.end());
  for (int r : tree) ++(r < d2d_base_ ? summary.mesh_hops : summary.d2d_crossings);
  resources.insert(resources.end(), tree.begin(), tree.end());
}

void Architecture::route_legs(const Site& from, const Site& to, std::vector<RouteLeg>& legs) const {
  legs.clear();
  int die = from.die, x = from.x, y = from.y;
  const size_t nd = dies.size();
  while (die != to.die) {
    int next = next_die_[size_t(die) * nd + size_t(to.die)];
    Site near_end, far_end;
    int link = nearest_link(die, next, x, y, to, near_end, far_end);
    legs.push_back({die, x, y, near_end.x, near_end.y, link});
    die = next;
    x = far_end.x;
    y = far_end.y;
  }
  legs.push_back({die, x, y, to.x, to.y, -1});
}

double Architecture::route_latency_cycles(const RouteSummary& r) const {
  return r.mesh_hops * noc.hop_latency_cycles + r.d2d_crossings * d2d.latency_cycles;
}

}  // namespace cct::arch
