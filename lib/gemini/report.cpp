#include <cmath>
#include "gemini/report.hpp"

#include "support/json.hpp"

#include <cstdio>
#include <sstream>

namespace cct::gemini {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string partition_text(const mapping::Partition& p) {
  std::string s;
  auto add = [&](char c, int64_t v) {
    if (v == 1) return;
    if (!s.empty()) s += ' ';
    s += c;
    s += std::to_string(v);
  };
  add('b', p.b), add('k', p.k), add('h', p.h), add('w', p.w);
  return s.empty() ? "-" : s;
}

std::string cores_text(const std::vector<int>& cores) {
  std::string s;
  for (size_t i = 0; i < cores.size(); ++i) {
    // Runs of consecutive ids as a-b.
    size_t j = i;
    while (j + 1 < cores.size() && cores[j + 1] == cores[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += std::to_string(cores[i]);
    if (j > i) {
      s += j > i + 1 ? '-' : ',';
      s += std::to_string(cores[j]);
    }
    i = j;
  }
  return s;
}

// Energy in microjoules.
std::string uj(double pj) { return fmt("%.3f", pj * 1e-6); }

}  // namespace

std::string format_report(const CostModel& model, const Plan& plan, const PlanCost& cost) {
  const auto& a = model.arch();
  const auto& net = model.network();
  std::ostringstream o;
  const double us = double(cost.cycles) / (a.clock_ghz * 1e3);
  const double peak = a.peak_macs_per_cycle() * double(cost.cycles);
  o << "gemini: " << net.name << " (batch " << net.batch << ") on " << a.name << " (" << a.core_count() << " cores, "
    << fmt("%.1f", a.peak_tops()) << " TOPS)\n";
  o << "predicted latency  " << cost.cycles << " cycles (" << fmt("%.3f", us) << " us), "
    << fmt("%.1f", us > 0 ? double(net.batch) * 1e6 / us : 0.0) << " samples/s\n";
  o << "MAC utilisation    " << fmt("%.2f", peak > 0 ? 100.0 * double(net.total_macs()) / peak : 0.0)
    << "% of the chip's peak\n";
  // What no mapping can beat: the MACs at the chip's peak, and the weights,
  // the network's inputs and outputs crossing DRAM once at every channel's
  // bandwidth.
  {
    int64_t dram_bytes = 0;
    for (const auto& L : net.layers) {
      if (L.pe()) dram_bytes += L.weight_bytes();
      for (const auto& in : L.inputs)
        if (in.producer < 0) dram_bytes += in.dims[0] * in.dims[1] * in.dims[2] * in.dims[3] * in.bytes;
      if (L.to_dram) dram_bytes += L.out[0] * L.out[1] * L.out[2] * L.out[3] * L.out_bytes;
    }
    const double mac_bound = double(net.total_macs()) / a.peak_macs_per_cycle();
    const double dram_bound =
        double(dram_bytes) / (a.dram_channel_bytes_per_cycle() * double(std::max<size_t>(1, a.dram_channels.size())));
    const double bound = std::max(mac_bound, dram_bound);
    o << "bounds             MAC " << fmt("%.0f", std::ceil(mac_bound)) << " cycles, DRAM " << fmt("%.0f", std::ceil(dram_bound))
      << " cycles (" << dram_bytes << " bytes), predicted " << fmt("%.2f", bound > 0 ? double(cost.cycles) / bound : 0.0)
      << "x the larger\n";
  }
  const auto& e = cost.energy;
  o << "energy             " << uj(e.total()) << " uJ: mac " << uj(e.mac) << " vp " << uj(e.vp) << " sram "
    << uj(e.l1 + e.l2) << " noc " << uj(e.noc) << " d2d " << uj(e.d2d) << " dram " << uj(e.dram) << " static "
    << uj(e.static_) << "\n";
  o << "segments           " << plan.segments.size() << ", cores used " << cost.cores_used << "\n";
  if (!cost.feasible())
    o << "WARNING            the plan does not fit L2 (" << cost.overflow << " bytes over): " << cost.problem << "\n";
  for (size_t s = 0; s < plan.segments.size(); ++s) {
    const SegmentPlan& sp = plan.segments[s];
    const SegmentCost* sc = s < cost.segments.size() ? &cost.segments[s] : nullptr;
    o << "\nsegment " << s << ": layers " << sp.layers.size() << ", batch groups " << sp.batch_groups;
    if (sp.row_groups > 1) o << ", row stripes " << sp.row_groups;
    if (sc) o << ", cycles " << sc->start << " .. " << sc->end << ", energy " << uj(sc->energy.total()) << " uJ";
    o << "\n";
    o << "  layer                            cores         partition   part-cycles        start          end   "
         "energy-uJ  mac     sram    noc     d2d     dram    binding\n";
    for (size_t p = 0; p < sp.layers.size(); ++p) {
      const LayerPlan& lp = sp.layers[p];
      const LayerCost* lc = sc && p < sc->layers.size() ? &sc->layers[p] : nullptr;
      char line[512];
      std::string name = net.layers[size_t(lp.layer)].name;
      if (name.size() > 32) name = name.substr(0, 29) + "...";
      std::snprintf(line, sizeof line, "  %-32s %-13s %-11s", name.c_str(), cores_text(lp.cores).c_str(),
                    partition_text(lp.part).c_str());
      o << line;
      if (lc) {
        const auto& le = lc->energy;
        std::snprintf(line, sizeof line, " %11lld %12lld %12lld %11s %-7s %-7s %-7s %-7s %-7s %s",
                      (long long)lc->part_cycles, (long long)lc->start, (long long)lc->end, uj(le.total()).c_str(),
                      uj(le.mac).c_str(), uj(le.l1 + le.l2).c_str(), uj(le.noc).c_str(), uj(le.d2d).c_str(),
                      uj(le.dram).c_str(), std::string(binding_name(lc->binding)).c_str());
        o << line;
      }
      o << "\n";
    }
  }
  return o.str();
}

std::string format_timeline(const CostModel& model, const PlanCost& cost) {
  std::string out;
  for (const TimelineStep& t : cost.timeline) {
    Json j = Json::object();
    j.set("step", std::string(step_name(t.kind)));
    j.set("core", t.core);
    j.set("layer", model.network().layers[size_t(t.layer)].name);
    j.set("segment", t.segment);
    j.set("group", t.group);
    j.set("part", t.part);
    if (t.kind != TimelineStep::Compute) j.set("bytes", t.bytes);
    if (t.peer >= 0) j.set("to_core", t.peer);
    j.set("start", t.start);
    j.set("end", t.end);
    append_json_compact(out, j);
    out += '\n';
  }
  return out;
}

}  // namespace cct::gemini
