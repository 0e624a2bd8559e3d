// The plain-text summary of a trace (traceview --summary).
#include <algorithm>
#include <cinttypes>
#include <map>

#include "traceview/analysis.hpp"
#include "traceview/text_table.hpp"

namespace cct::traceview {
namespace {

std::string num(int64_t v) { return strf("%" PRId64, v); }
std::string pct(double part, double whole) { return whole > 0 ? strf("%.1f%%", 100.0 * part / whole) : "-"; }
std::string qname(isa::Queue q) { return std::string(isa::queue_name(q)); }
std::string uj(double pj) { return strf("%.3f", pj * 1e-6); }

std::string source_note(const Analysis& a, bool from_trace) {
  if (from_trace) return "from the trace";
  return a.model_priced ? "timing model on " + a.arch_name : "unavailable: the timing model could not price the trace";
}

}  // namespace

std::string format_summary(const Analysis& a, const std::string& trace_name, size_t path_runs_shown) {
  std::string out;
  double peak = a.peak_macs_per_cycle();
  double total = double(a.total_cycles);
  out += "trace         " + trace_name + "\n";
  out += strf("architecture  %s: %.3g GHz, %" PRId64 " MACs/cycle per core, %zu core%s used\n", a.arch_name.c_str(),
              a.clock_ghz, a.macs_per_cycle_per_core, a.cores.size(), a.cores.size() == 1 ? "" : "s");
  out += strf("total         %" PRId64 " cycles = %.3f us at %.3g GHz (end of the last instruction)\n", a.total_cycles,
              a.seconds() * 1e6, a.clock_ghz);
  out += strf("instructions  %" PRId64 "\n", a.instructions);
  out += strf("MACs          %" PRId64 ": %.1f per cycle, %.2f%% of the peak of the cores used (%s)\n", a.macs,
              total > 0 ? double(a.macs) / total : 0.0, total > 0 && peak > 0 ? 100.0 * double(a.macs) / (total * peak) : 0.0,
              source_note(a, a.trace_has_ops).c_str());
  out += strf("DRAM          read %" PRId64 " bytes, written %" PRId64 " bytes (%s)\n", a.dram_read, a.dram_write,
              source_note(a, a.trace_has_bytes).c_str());

  if (a.host.steps > 0)
    out += strf("host          %" PRId64 " step%s, %" PRId64 " host cycles (%s of the run); chips waiting on it %" PRId64
                " cycles, %" PRId64 " on the critical path (%s)\n",
                a.host.steps, a.host.steps == 1 ? "" : "s", a.host.cycles, pct(double(a.host.cycles), total).c_str(),
                a.host.wait_cycles, a.host.path_cycles, pct(double(a.host.path_cycles), total).c_str());

  // ---- Instruction classes.
  out += "\ninstructions by class\n";
  {
    TextTable tt({"class", "queue", "count", "cycles", "mean"}, {false, false, true, true, true});
    for (int op = 0; op < isa::kOpcodeCount; ++op) {
      int64_t c = a.count_by_opcode[size_t(op)];
      if (!c) continue;
      const auto& info = isa::opcode_info(isa::Opcode(op));
      int64_t cyc = a.cycles_by_opcode[size_t(op)];
      tt.add({std::string(info.mnemonic), qname(info.queue), num(c), num(cyc), strf("%.1f", double(cyc) / double(c))});
    }
    out += tt.format();
  }

  // ---- Lanes.
  out += "\nbusy per core and queue (busy = summed instruction durations / total cycles)\n";
  {
    TextTable tt({"core", "queue", "instructions", "busy cycles", "busy"}, {true, false, true, true, true});
    for (const auto& l : a.lanes)
      tt.add({num(l.core), qname(l.queue), num(l.instructions), num(l.busy_cycles), pct(double(l.busy_cycles), total)});
    out += tt.format();
  }

  // ---- Layers.
  out += "\nlayers: 'cycles' are the critical-path cycles charged to the layer (each instruction on the\n"
         "critical path is charged from the end of what it waited for to its own end), so they add up\n"
         "to the total; 'span' is first start to last end of its instructions (spans overlap);\n"
         "'MAC/cyc' = MACs / cycles (can exceed the peak when work is hidden under other layers);\n"
         "'PE eff' = MACs / (PE busy cycles x MACs/cycle of a core)\n";
  {
    bool fir = !a.layers.empty() && a.layers.front().fir_macs >= 0;
    std::vector<std::string> head = {"slyr"};
    std::vector<bool> right = {true};
    if (fir) head.insert(head.end(), {"name", "op"}), right.insert(right.end(), {false, false});
    std::vector<std::string> rest = {"instrs", "cycles", "share", "span", "MACs", "MAC/cyc", "of peak", "PE busy", "PE eff",
                                     "DRAM read", "DRAM write"};
    head.insert(head.end(), rest.begin(), rest.end());
    right.insert(right.end(), rest.size(), true);
    if (fir) head.push_back("FIR MACs"), right.push_back(true);
    if (a.energy.available) head.push_back("energy uJ"), right.push_back(true);
    TextTable tt(head, right);
    int64_t sum_cycles = 0, sum_instr = 0, sum_pe = 0;
    double sum_energy = 0;
    for (const auto& l : a.layers) {
      sum_cycles += l.cycles;  // critical-path cycles: they partition the total
      sum_instr += l.instructions;
      add_to(sum_pe, l.pe_busy_cycles);
      sum_energy += l.energy_pj;
      std::vector<std::string> row = {num(l.layer)};
      if (fir) row.insert(row.end(), {l.name.empty() ? "?" : l.name, l.op});
      double rate = l.cycles > 0 ? double(l.macs) / double(l.cycles) : 0.0;
      bool has_macs = l.macs > 0;
      row.insert(row.end(), {num(l.instructions), num(l.cycles), pct(double(l.cycles), total), num(l.span()), num(l.macs),
                             has_macs && l.cycles > 0 ? strf("%.1f", rate) : "-",
                             has_macs && l.cycles > 0 ? pct(rate, peak) : "-", num(l.pe_busy_cycles),
                             has_macs && l.pe_busy_cycles > 0
                                 ? pct(double(l.macs), double(l.pe_busy_cycles) * double(a.macs_per_cycle_per_core))
                                 : "-",
                             num(l.dram_read), num(l.dram_write)});
      if (fir) row.push_back(l.fir_macs >= 0 ? num(l.fir_macs) : "-");
      if (a.energy.available) row.push_back(uj(l.energy_pj));
      tt.add(std::move(row));
    }
    std::vector<std::string> row = {"total"};
    if (fir) row.insert(row.end(), {"", ""});
    double rate = total > 0 ? double(a.macs) / total : 0.0;
    row.insert(row.end(), {num(sum_instr), num(sum_cycles), pct(double(sum_cycles), total), num(a.total_cycles), num(a.macs),
                           strf("%.1f", rate), pct(rate, peak), num(sum_pe),
                           sum_pe > 0 ? pct(double(a.macs), double(sum_pe) * double(a.macs_per_cycle_per_core)) : "-",
                           num(a.dram_read), num(a.dram_write)});
    if (fir) {
      int64_t fm = 0;
      for (const auto& l : a.layers) add_to(fm, std::max<int64_t>(l.fir_macs, 0));
      row.push_back(num(fm));
    }
    if (a.energy.available) row.push_back(uj(sum_energy));
    tt.add(std::move(row));
    out += tt.format();
  }

  // ---- Critical path.
  out += strf("\ncritical path: %zu instructions from cycle 0 to %" PRId64 ", %" PRId64 " cycles (%s) waiting between them\n",
              a.critical.size(), a.total_cycles, a.path_wait_cycles, pct(double(a.path_wait_cycles), total).c_str());
  out += "  by queue:";
  for (int q = 0; q < isa::kQueueCount; ++q)
    if (a.path_cycles_by_queue[size_t(q)] > 0)
      out += " " + qname(isa::Queue(q)) + " " + pct(double(a.path_cycles_by_queue[size_t(q)]), total);
  out += "\n";
  {
    // Which edges carried the path: queue order inside a queue, or tokens between queues.
    std::map<std::string, int64_t> edges;
    for (size_t k = 1; k < a.critical.size(); ++k) {
      const Dependence& d = a.dep_of[size_t(a.critical[k])];
      std::string key = d.kind == EdgeKind::QueueOrder ? "queue order"
                        : d.kind == EdgeKind::Token    ? "token " + qname(d.token_from) + "->" +
                                                          qname(isa::Queue(a.lanes[size_t(a.lane_of[size_t(a.critical[k])])].queue))
                                                       : std::string(edge_kind_name(d.kind));
      ++edges[key];
    }
    if (!edges.empty()) {
      out += "  edges:";
      for (const auto& [k, v] : edges) out += " " + k + " x" + num(v) + ";";
      out.back() = '\n';
    }
  }
  size_t shown = path_runs_shown == 0 ? a.path_runs.size() : std::min(path_runs_shown, a.path_runs.size());
  out += strf("  runs of consecutive path instructions on one queue and layer (%zu run%s", a.path_runs.size(),
              a.path_runs.size() == 1 ? "" : "s");
  out += shown < a.path_runs.size() ? strf(", the %zu longest shown in time order):\n", shown) : "):\n";
  {
    // The longest runs, listed in time order.
    std::vector<size_t> idx(a.path_runs.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    if (shown < idx.size()) {
      std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) {
        return a.path_runs[x].end - a.path_runs[x].begin > a.path_runs[y].end - a.path_runs[y].begin;
      });
      idx.resize(shown);
      std::sort(idx.begin(), idx.end());
    }
    TextTable tt({"from", "to", "cycles", "share", "core", "queue", "layer", "instrs", "waited", "reached by"},
                 {true, true, true, true, true, false, false, true, true, false});
    for (size_t k : idx) {
      const PathRun& r = a.path_runs[k];
      std::string by = r.entry == EdgeKind::Token ? "token from " + qname(r.entry_from) : std::string(edge_kind_name(r.entry));
      tt.add({num(r.begin), num(r.end), num(r.end - r.begin), pct(double(r.end - r.begin), total), num(r.core), qname(r.queue),
              a.layer_label(r.layer), num(r.instructions), num(r.wait_cycles), by});
    }
    out += tt.format("    ");
  }

  // ---- Energy.
  if (a.energy.available) {
    const EnergyBreakdown& e = a.energy;
    out += strf("\nenergy: %.3f uJ in the instructions (from the trace)", e.instructions_pj * 1e-6);
    if (e.components)
      out += strf(", %.3f uJ with static energy over the run", (e.instructions_pj + e.split.static_) * 1e-6);
    out += "\n  by queue:";
    for (int q = 0; q < isa::kQueueCount; ++q)
      if (e.by_queue[size_t(q)] > 0) out += " " + qname(isa::Queue(q)) + " " + uj(e.by_queue[size_t(q)]);
    out += " (uJ)\n";
    if (e.components) {
      const timing::Energy& s = e.split;
      out += strf("  by component (uJ; timing model on %s, links = trace minus model): mac %s  vp %s  l1 %s  l2 %s  "
                  "dram %s  links %s  static %s\n",
                  a.arch_name.c_str(), uj(s.mac).c_str(), uj(s.vp).c_str(), uj(s.l1).c_str(), uj(s.l2).c_str(),
                  uj(s.dram).c_str(), uj(s.noc + s.d2d).c_str(), uj(s.static_).c_str());
    } else if (a.model_priced) {
      out += "  (no split by component: the trace's energies do not follow the timing model of " + a.arch_name + ")\n";
    }
  } else {
    out += "\nenergy: the trace carries no per-instruction energy\n";
  }
  return out;
}

}  // namespace cct::traceview
