// Two traces of the same program side by side (traceview --compare): zebusim
// against ZeBu, or a program before and after a compiler change.
//
// The headline figures use the definitions of ../shared/tools/isa_compare.py
// ("trace OURS REF"), so both print the same numbers:
//  - total error = (total_ours - total_ref) / total_ref, totals being the last end;
//  - duration errors |d_ours - d_ref| / d_ref over the instructions that are
//    neither configuration (*_cfg*) nor control (ct_*) and last at least one
//    cycle in the reference: MAPE (mean), MdAPE (median, the mean of the two
//    middle values for an even count), P90 (element int(0.9 (n-1)) sorted);
//  - end-time error: median of |end_ours - end_ref| / max(end_ref, 1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traceview/analysis.hpp"

namespace cct::traceview {

struct DurationErrors {
  int64_t instructions = 0;
  int64_t cycles_ours = 0, cycles_ref = 0;  // summed durations
  size_t timed = 0;                         // with a reference duration > 0
  double mape_pct = 0, mdape_pct = 0, p90_pct = 0;
  double sum_error_pct() const { return cycles_ref > 0 ? 100.0 * double(cycles_ours - cycles_ref) / double(cycles_ref) : 0.0; }
};

struct ClassRow {
  isa::Opcode op;
  DurationErrors err;  // over every instruction of the class (configuration included)
};

struct LayerCompareRow {
  int32_t layer = 0;
  std::string label;
  DurationErrors err;        // non-configuration, non-control instructions of the layer
  int64_t path_ours = 0, path_ref = 0;  // critical-path cycles charged to the layer in each trace
};

struct Comparison {
  bool comparable = false;
  std::string why_not;       // when not: which instruction differs
  int64_t instructions = 0;
  int64_t total_ours = 0, total_ref = 0;
  DurationErrors overall;    // the isa_compare population
  double end_median_pct = 0;
  std::vector<ClassRow> classes;        // opcodes present, table order
  std::vector<LayerCompareRow> layers;  // by slyr
  std::vector<int64_t> top;             // instruction indices, largest |duration difference| first
  size_t top_requested = 0;
  int64_t first_divergence = -1;        // earliest instruction whose start or end differs, -1 if none

  bool has_total_error() const { return total_ref > 0; }
  double total_error_pct() const { return has_total_error() ? 100.0 * double(total_ours - total_ref) / double(total_ref) : 0.0; }
};

// Whether two instructions are the same for comparison: mnemonic, mapping,
// tokens and parameters equal (numbers within 1e-9 relative, integer and
// float spellings alike).
bool same_instruction(const isa::Instruction& a, const isa::Instruction& b);

// `ours` and `ref` are the analyses of the two traces (for per-layer
// critical-path cycles and names).
Comparison compare_traces(const trace::Trace& ours, const trace::Trace& ref, const Analysis& ours_analysis,
                          const Analysis& ref_analysis, size_t top);

std::string format_comparison(const Comparison& c, const trace::Trace& ours, const trace::Trace& ref,
                              const Analysis& ref_analysis, const std::string& ours_name, const std::string& ref_name);

}  // namespace cct::traceview
