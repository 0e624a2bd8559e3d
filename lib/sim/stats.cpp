// --stats text and --stats-json for a simulation.
#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>

#include "sim/sim.hpp"

namespace cct::sim {
namespace {

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

double peak_macs(const Stats& s, const arch::Architecture& a) {
  return double(a.core.macs_per_cycle()) * double(std::max(s.cores_used, 1)) * double(std::max<int64_t>(s.total_cycles, 1));
}

// Busy fraction of a queue: busy cycles summed over the cores used, over the run.
double busy_fraction(const Stats& s, int q) {
  double denom = double(std::max<int64_t>(s.total_cycles, 1)) * double(std::max(s.cores_used, 1));
  return double(s.queues[size_t(q)].busy_cycles) / denom;
}

struct Component {
  const char* name;
  double value;
};

std::vector<Component> components(const timing::Energy& e) {
  return {{"mac", e.mac}, {"vp", e.vp}, {"l1", e.l1}, {"l2", e.l2}, {"dram", e.dram},
          {"noc", e.noc}, {"d2d", e.d2d}, {"static", e.static_}};
}

}  // namespace

std::string format_stats(const Stats& s, const arch::Architecture& a) {
  double seconds = double(s.total_cycles) / a.clock_hz();
  std::string out;
  out += fmt("architecture      %s (%d of %d cores used, %.3g GHz)\n", a.name.c_str(), s.cores_used, a.core_count(),
             a.clock_ghz);
  out += fmt("instructions      %" PRId64 "\n", s.instructions);
  out += fmt("total cycles      %" PRId64 "\n", s.total_cycles);
  out += fmt("time              %.3f us (%.1f runs/s)\n", seconds * 1e6, seconds > 0 ? 1.0 / seconds : 0.0);
  out += fmt("MACs              %" PRId64 " (%.2f%% of the used cores' peak)\n", s.macs, 100.0 * double(s.macs) / peak_macs(s, a));
  out += fmt("DRAM bytes        read %" PRId64 ", written %" PRId64 "\n", s.dram_read_bytes, s.dram_write_bytes);
  out += fmt("transfers         %" PRId64 " bytes core to core, %" PRId64 " byte-hops on the NoC, %" PRId64 " D2D bytes\n",
             s.transfer_bytes, s.noc_byte_hops, s.d2d_bytes);
  if (s.host_steps > 0)
    out += fmt("host              %" PRId64 " steps, %" PRId64 " cycles (%.1f%% of the run)\n", s.host_steps, s.host_cycles,
               100.0 * double(s.host_cycles) / double(std::max<int64_t>(s.total_cycles, 1)));
  out += "queue busy        ";
  for (int q = 0; q < isa::kQueueCount; ++q)
    if (s.queues[size_t(q)].instructions > 0)
      out += fmt("%s %.1f%%  ", std::string(isa::queue_name(isa::Queue(q))).c_str(), 100.0 * busy_fraction(s, q));
  out += "\n";
  out += fmt("energy            %.3f uJ:", s.energy.total() * 1e-6);
  for (const auto& c : components(s.energy)) out += fmt(" %s %.3f", c.name, c.value * 1e-6);
  out += "\nlayers (slyr: cycles from first start to last end, MACs, energy uJ)\n";
  for (const auto& l : s.layers)
    out += fmt("  %4d %10" PRId64 " %14" PRId64 " %10.3f\n", l.layer, l.cycles(), l.macs, l.energy_pj * 1e-6);
  return out;
}

Json stats_to_json(const Stats& s, const arch::Architecture& a) {
  double seconds = double(s.total_cycles) / a.clock_hz();
  Json j = Json::object();
  j.set("format", "zebusim-stats");
  j.set("version", 1);
  j.set("architecture", a.name);
  j.set("cores_used", s.cores_used);
  j.set("instructions", s.instructions);
  j.set("total_cycles", s.total_cycles);
  j.set("seconds", seconds);
  j.set("runs_per_second", seconds > 0 ? 1.0 / seconds : 0.0);
  j.set("macs", s.macs);
  j.set("mac_utilization", double(s.macs) / peak_macs(s, a));
  j.set("vp_ops", s.vp_ops);
  Json bytes = Json::object();
  bytes.set("dram_read", s.dram_read_bytes);
  bytes.set("dram_write", s.dram_write_bytes);
  bytes.set("core_to_core", s.transfer_bytes);
  bytes.set("noc_byte_hops", s.noc_byte_hops);
  bytes.set("d2d", s.d2d_bytes);
  j.set("bytes", std::move(bytes));
  Json queues = Json::object();
  for (int q = 0; q < isa::kQueueCount; ++q) {
    Json e = Json::object();
    e.set("instructions", s.queues[size_t(q)].instructions);
    e.set("busy_cycles", s.queues[size_t(q)].busy_cycles);
    e.set("busy_fraction", busy_fraction(s, q));
    queues.set(isa::queue_name(isa::Queue(q)), std::move(e));
  }
  j.set("queues", std::move(queues));
  Json host = Json::object();
  host.set("steps", s.host_steps);
  host.set("cycles", s.host_cycles);
  j.set("host", std::move(host));
  Json energy = Json::object();
  energy.set("total_pj", s.energy.total());
  for (const auto& c : components(s.energy)) energy.set(std::string(c.name) + "_pj", c.value);
  j.set("energy", std::move(energy));
  Json layers = Json::array();
  for (const auto& l : s.layers) {
    Json e = Json::object();
    e.set("layer", l.layer);
    e.set("first_start", l.first_start);
    e.set("last_end", l.last_end);
    e.set("cycles", l.cycles());
    e.set("instructions", l.instructions);
    e.set("macs", l.macs);
    e.set("energy_pj", l.energy_pj);
    layers.push(std::move(e));
  }
  j.set("layers", std::move(layers));
  return j;
}

}  // namespace cct::sim
