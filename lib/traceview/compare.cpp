#include "traceview/compare.hpp"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <map>

#include "traceview/text_table.hpp"

namespace cct::traceview {

using isa::Opcode;
using isa::ParamKind;

namespace {

bool close(double x, double y) { return x == y || std::fabs(x - y) <= 1e-9 * std::max(std::fabs(x), std::fabs(y)); }

// Accumulates relative duration errors and summed durations.
struct ErrorSet {
  DurationErrors e;
  std::vector<double> rel;
  void add(int64_t d_ours, int64_t d_ref, bool timed_population) {
    ++e.instructions;
    add_to(e.cycles_ours, d_ours);
    add_to(e.cycles_ref, d_ref);
    if (timed_population && d_ref > 0) rel.push_back(std::fabs(double(d_ours - d_ref)) / double(d_ref));
  }
  DurationErrors finish() {
    e.timed = rel.size();
    if (!rel.empty()) {
      double sum = 0;
      for (double r : rel) sum += r;
      e.mape_pct = 100.0 * sum / double(rel.size());
      std::sort(rel.begin(), rel.end());
      size_t n = rel.size();
      e.mdape_pct = 100.0 * (n % 2 ? rel[n / 2] : 0.5 * (rel[n / 2 - 1] + rel[n / 2]));
      e.p90_pct = 100.0 * rel[size_t(0.9 * double(n - 1))];
    }
    return e;
  }
};

// isa_compare's population: neither configuration nor control.
bool timed_kind(const isa::Instruction& inst) { return !inst.is_config() && inst.queue() != isa::Queue::CT; }

std::string num(int64_t v) { return strf("%" PRId64, v); }
std::string signed_pct(double v) { return strf("%+.2f%%", v); }

}  // namespace

bool same_instruction(const isa::Instruction& a, const isa::Instruction& b) {
  if (a.op() != b.op() || !(a.mapping == b.mapping) || !(a.prev == b.prev) || !(a.next == b.next)) return false;
  const auto& params = a.info().params;
  for (size_t i = 0; i < params.size(); ++i) {
    const isa::ParamSpec& p = params[i];
    switch (p.kind) {
      case ParamKind::Number:
        if (!close(a.number(p.id), b.number(p.id))) return false;
        break;
      case ParamKind::Int:
      case ParamKind::Bool:
      case ParamKind::Enum:
        if (a.get(p.id) != b.get(p.id)) return false;
        break;
      case ParamKind::IntList:
      case ParamKind::EnumList:
        for (int k = 0; k < p.length; ++k)
          if (a.raw_cell(int(i), k) != b.raw_cell(int(i), k)) return false;
        break;
      case ParamKind::QueueList: break;  // compared as prev / next
    }
  }
  return true;
}

Comparison compare_traces(const trace::Trace& ours, const trace::Trace& ref, const Analysis& ao, const Analysis& ar,
                          size_t top) {
  Comparison c;
  const size_t n = std::min(ours.size(), ref.size());
  for (size_t i = 0; i < n; ++i)
    if (!same_instruction(ours.program.instructions[i], ref.program.instructions[i])) {
      c.why_not = strf("instruction streams differ at instruction %zu (ours %zu, ref %zu): %s vs %s", i + 1, ours.size(),
                       ref.size(), std::string(ours.program.instructions[i].mnemonic()).c_str(),
                       std::string(ref.program.instructions[i].mnemonic()).c_str());
      return c;
    }
  if (ours.size() != ref.size()) {
    c.why_not = strf("instruction streams differ at instruction %zu (ours %zu, ref %zu): one trace is longer", n + 1,
                     ours.size(), ref.size());
    return c;
  }
  c.comparable = true;
  c.instructions = int64_t(n);
  c.total_ours = ours.total_cycles();
  c.total_ref = ref.total_cycles();

  ErrorSet overall;
  std::vector<double> end_errs;
  end_errs.reserve(n);
  std::map<int, ErrorSet> by_class;
  std::map<int32_t, ErrorSet> by_layer;
  for (size_t i = 0; i < n; ++i) {
    const auto& inst = ref.program.instructions[i];
    const auto& to = ours.timing[i];
    const auto& tr = ref.timing[i];
    bool timed = timed_kind(inst);
    if (timed) overall.add(to.duration(), tr.duration(), true);
    end_errs.push_back(std::fabs(double(to.end - tr.end)) / double(std::max<int64_t>(tr.end, 1)));
    by_class[int(inst.op())].add(to.duration(), tr.duration(), true);
    if (timed) by_layer[inst.mapping.slyr].add(to.duration(), tr.duration(), true);
    if (to.start != tr.start || to.end != tr.end) {
      auto key = [&](size_t k) {
        return std::pair(std::min(ours.timing[k].start, ref.timing[k].start), k);
      };
      if (c.first_divergence < 0 || key(i) < key(size_t(c.first_divergence))) c.first_divergence = int64_t(i);
    }
  }
  c.overall = overall.finish();
  if (!end_errs.empty()) {
    std::sort(end_errs.begin(), end_errs.end());
    size_t m = end_errs.size();
    c.end_median_pct = 100.0 * (m % 2 ? end_errs[m / 2] : 0.5 * (end_errs[m / 2 - 1] + end_errs[m / 2]));
  }
  for (auto& [op, set] : by_class) c.classes.push_back({Opcode(op), set.finish()});
  // Layers: every slyr of either analysis (identical programs: the same set).
  for (const auto& l : ar.layers) {
    LayerCompareRow row;
    row.layer = l.layer;
    row.label = ar.layer_label(l.layer);
    auto it = by_layer.find(l.layer);
    if (it != by_layer.end()) row.err = it->second.finish();
    row.path_ref = l.cycles;
    if (const LayerRow* lo = ao.layer(l.layer)) row.path_ours = lo->cycles;
    c.layers.push_back(std::move(row));
  }
  std::vector<int64_t> idx(n);
  for (size_t i = 0; i < n; ++i) idx[i] = int64_t(i);
  auto diff = [&](int64_t i) { return std::llabs(ours.timing[size_t(i)].duration() - ref.timing[size_t(i)].duration()); };
  size_t k = std::min(top, n);
  std::partial_sort(idx.begin(), idx.begin() + std::ptrdiff_t(k), idx.end(), [&](int64_t x, int64_t y) {
    int64_t dx = diff(x), dy = diff(y);
    return dx != dy ? dx > dy : x < y;
  });
  idx.resize(k);
  while (!idx.empty() && diff(idx.back()) == 0) idx.pop_back();
  c.top = std::move(idx);
  c.top_requested = top;
  return c;
}

std::string format_comparison(const Comparison& c, const trace::Trace& ours, const trace::Trace& ref, const Analysis& ar,
                              const std::string& ours_name, const std::string& ref_name) {
  std::string out;
  out += "ours       " + ours_name + "\n";
  out += "reference  " + ref_name + "\n";
  if (!c.comparable) {
    out += c.why_not + "\ntrace fidelity: not comparable\n";
    return out;
  }
  const DurationErrors& e = c.overall;
  out += strf("instructions %" PRId64 ", timed non-config %zu\n", c.instructions, e.timed);
  out += strf("total cycles: ours %" PRId64 " reference %" PRId64 " difference %+" PRId64 " cycles\n", c.total_ours, c.total_ref,
              c.total_ours - c.total_ref);

  // ---- Per class.
  out += "\nduration by instruction class (err = summed durations, ours vs reference; MAPE/MdAPE over\n"
         "instructions lasting at least one cycle in the reference)\n";
  {
    TextTable tt({"class", "count", "ours", "reference", "err", "MAPE", "MdAPE"}, {false, true, true, true, true, true, true});
    for (const auto& r : c.classes)
      tt.add({std::string(isa::mnemonic(r.op)), num(r.err.instructions), num(r.err.cycles_ours), num(r.err.cycles_ref),
              r.err.cycles_ref > 0 ? signed_pct(r.err.sum_error_pct()) : "-",
              r.err.timed ? strf("%.2f%%", r.err.mape_pct) : "-", r.err.timed ? strf("%.2f%%", r.err.mdape_pct) : "-"});
    out += tt.format();
  }

  // ---- Per layer.
  out += "\nper layer (durations of its non-configuration instructions; 'path' = critical-path cycles charged\n"
         "to the layer, which add up to each trace's total)\n";
  {
    TextTable tt({"slyr", "layer", "instrs", "ours", "reference", "err", "MAPE", "path ours", "path ref", "path diff"},
                 {true, false, true, true, true, true, true, true, true, true});
    for (const auto& r : c.layers)
      tt.add({num(r.layer), r.label, num(r.err.instructions), num(r.err.cycles_ours), num(r.err.cycles_ref),
              r.err.cycles_ref > 0 ? signed_pct(r.err.sum_error_pct()) : "-", r.err.timed ? strf("%.2f%%", r.err.mape_pct) : "-",
              num(r.path_ours), num(r.path_ref), strf("%+" PRId64, r.path_ours - r.path_ref)});
    out += tt.format();
  }

  // ---- Largest differences.
  out += strf("\ninstructions that differ most (|duration difference|, top %zu)\n", c.top.size());
  if (c.top.empty()) {
    out += c.top_requested == 0 ? "  (none asked for: --top 0)\n" : "  (none: every duration is equal)\n";
  } else {
    TextTable tt({"line", "class", "core", "layer", "tile", "ours [start, end]", "reference [start, end]", "ours", "ref", "diff", "err"},
                 {true, false, true, false, true, false, false, true, true, true, true});
    for (int64_t i : c.top) {
      const auto& inst = ref.program.instructions[size_t(i)];
      const auto& to = ours.timing[size_t(i)];
      const auto& tr = ref.timing[size_t(i)];
      tt.add({num(i + 1), std::string(inst.mnemonic()), num(inst.mapping.core), ar.layer_label(inst.mapping.slyr),
              num(inst.mapping.tile), strf("[%" PRId64 ", %" PRId64 "]", to.start, to.end),
              strf("[%" PRId64 ", %" PRId64 "]", tr.start, tr.end), num(to.duration()), num(tr.duration()),
              strf("%+" PRId64, to.duration() - tr.duration()),
              tr.duration() > 0 ? signed_pct(100.0 * double(to.duration() - tr.duration()) / double(tr.duration())) : "-"});
    }
    out += tt.format();
  }

  // ---- First divergence.
  out += "\nfirst divergence: ";
  if (c.first_divergence < 0) {
    out += "none, every instruction has the same start and end\n";
  } else {
    size_t i = size_t(c.first_divergence);
    const auto& inst = ref.program.instructions[i];
    const auto& to = ours.timing[i];
    const auto& tr = ref.timing[i];
    out += strf("cycle %" PRId64 ", line %zu %s (core %d, %s, tile %d): ours [%" PRId64 ", %" PRId64 "], reference [%" PRId64
                ", %" PRId64 "]",
                std::min(to.start, tr.start), i + 1, std::string(inst.mnemonic()).c_str(), inst.mapping.core,
                ar.layer_label(inst.mapping.slyr).c_str(), inst.mapping.tile, to.start, to.end, tr.start, tr.end);
    if (to.start == tr.start)
      out += strf(": same start, duration %+" PRId64 " cycles\n", to.duration() - tr.duration());
    else
      out += strf(": start %+" PRId64 " cycles\n", to.start - tr.start);
  }

  // ---- Headline, worded as isa_compare.py prints it (last line).
  out += "\n";
  out += strf("duration error: MAPE %.2f%%  MdAPE %.2f%%  P90 %.2f%%\n", e.mape_pct, e.mdape_pct, e.p90_pct);
  out += strf("end-time error: median %.3f%% of reference end time\n", c.end_median_pct);
  if (c.has_total_error())
    out += strf("total cycles: ours %" PRId64 " reference %" PRId64 " error %+.3f%%\n", c.total_ours, c.total_ref,
                c.total_error_pct());
  else
    out += strf("total cycles: ours %" PRId64 " reference %" PRId64 " error n/a (the reference lasts 0 cycles)\n", c.total_ours,
                c.total_ref);
  return out;
}

}  // namespace cct::traceview
