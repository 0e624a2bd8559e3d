// The architecture sweep behind `gemini --dse`: every design point of a
// space (dse/space.hpp) is built as an architecture, gemini maps every
// network onto it, and the point records latency, energy, area, money cost
// and the resource that bound it. Outputs: a CSV with one row per point and
// network (sorted by point, then network), the Pareto front over (cost,
// latency, energy) marked in it, an SVG of cost against latency with the
// front, and a summary that explains the chosen design.
//
// Resumability: every finished point is appended (one JSON line, flushed) to
// a journal; a rerun reads it and evaluates only the points it lacks (a line
// counts only if the point's parameters, the networks and the search
// settings are the same). `--point I` evaluates one point and writes its
// journal line, so a workflow manager (examples/dse/Snakefile) can run the
// points as separate jobs and merge the lines into a journal.
//
// Search: "quick" (the default) is a segmentation by dynamic programming
// over gemini's first allocations (gemini::initial_segment) and, for single
// layers, the layer tuned alone (its core count and partition); the best of
// that plan, the layer-wise tuned plan and gemini's sequential baseline is
// kept. No annealing. "full" runs gemini::search. Both are deterministic.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dse/money.hpp"
#include "dse/space.hpp"
#include "fir/fir.hpp"
#include "gemini/cost.hpp"
#include "gemini/plan.hpp"

namespace cct::dse {

// The quick search: segmentation only (see above).
gemini::Plan quick_plan(const gemini::CostModel& model, gemini::Objective objective);

// One network mapped onto one point.
struct NetResult {
  std::string network;
  int64_t batch = 1;
  int64_t cycles = 0;
  double energy_pj = 0;
  int64_t overflow = 0;  // bytes beyond L2 (0: the mapping fits)
  int cores_used = 0;
  int segments = 0;
  // Summed over layers: compute, and waiting for DRAM, NoC, D2D (gemini::Binding order).
  int64_t busy_cycles = 0;
  int64_t wait_cycles[4] = {0, 0, 0, 0};
  gemini::Binding binding = gemini::Binding::Compute;  // the largest of those four
  bool feasible() const { return overflow == 0; }
};

struct PointResult {
  DesignPoint point;
  std::vector<NetResult> nets;  // in the order of the space's networks
};

struct SweepOptions {
  std::string space;               // the space file
  std::vector<std::string> nets;   // FIR paths replacing the space's networks (name = file name)
  std::string output = "-";        // CSV ("-": stdout, no SVG, summary, journal unless given)
  std::string journal;             // default: OUTPUT.journal when OUTPUT is a file
  int jobs = 1;
  int point = -1;                  // >= 0: evaluate only this point, write its journal line to OUTPUT
  bool count_points = false;       // print the number of points and stop
  bool validate = true;
  bool progress = true;            // progress lines on stderr
};

// Runs the sweep as the options say; returns the exit code.
int run_sweep(const SweepOptions& o);

// ---- Pieces, public for tests ----
struct Sweep {
  DesignSpace space;
  CostTable table;
  arch::Architecture base;
  std::vector<NetworkSpec> networks;
  std::vector<fir::Graph> graphs;
  std::vector<DesignPoint> points;
  std::string config;  // search settings and networks, part of every journal key
};
Sweep prepare_sweep(const std::string& space_path, const std::vector<std::string>& nets, bool validate);
PointResult evaluate_point(const Sweep& s, const DesignPoint& p);
std::string journal_line(const Sweep& s, const PointResult& r);
// Journal lines that match the sweep's points; other and broken lines are skipped.
std::vector<PointResult> read_journal(const Sweep& s, std::string_view text, const std::string& file,
                                      std::vector<std::string>* notes);

struct Ranked {
  std::vector<PointResult> results;  // by point index
  std::vector<DesignCost> costs;
  std::vector<double> area_mm2, latency_s, energy_j, objective;  // geometric means over networks
  std::vector<bool> feasible, pareto;
  int chosen = -1;  // index into results, -1 when no point is feasible
};
Ranked rank(const Sweep& s, std::vector<PointResult> results);
std::string format_csv(const Sweep& s, const Ranked& r);
std::string format_svg(const Sweep& s, const Ranked& r);
std::string format_summary(const Sweep& s, const Ranked& r);

}  // namespace cct::dse
