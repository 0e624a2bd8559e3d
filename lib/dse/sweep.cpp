#include "dse/sweep.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>

#include "gemini/network.hpp"
#include "gemini/search.hpp"
#include "support/error.hpp"
#include "support/io.hpp"
#include "support/json_cursor.hpp"

namespace cct::dse {

// ---- Quick search -----------------------------------------------------------

namespace {

// Core counts 1, 2, 4, ... (roughly doubling) among the feasible ones, and the largest.
std::vector<int> spread_counts(const std::vector<int>& feasible) {
  std::vector<int> out;
  for (int n : feasible)
    if (out.empty() || n >= 2 * out.back() || n == feasible.back()) out.push_back(n);
  return out;
}

// The best single-layer segment for each layer alone: its core count (from a
// doubling ladder, cores taken along `snake`) and partition, with the
// sequential baseline's DRAM channels.
std::vector<gemini::SegmentPlan> tuned_layers(const gemini::CostModel& model, gemini::Objective objective,
                                              const gemini::Plan& seq, const std::vector<int>& snake) {
  const gemini::Network& net = model.network();
  std::vector<gemini::SegmentPlan> out;
  for (size_t l = 0; l < net.layers.size(); ++l) {
    const gemini::Dims dims = gemini::group_dims(net.layers[l], 1);
    gemini::SegmentPlan best_seg = seq.segments[l];
    gemini::Plan one{{best_seg}};
    gemini::PlanCost c = model.evaluate(one, false);
    std::pair<bool, double> best{!c.feasible(), c.value(objective, model.arch())};
    for (int n : spread_counts(gemini::feasible_core_counts(dims, int(snake.size())))) {
      for (const mapping::Partition& part : gemini::partitions_of(dims, n)) {
        gemini::SegmentPlan sp = seq.segments[l];
        sp.layers[0].cores.assign(snake.begin(), snake.begin() + n);
        sp.layers[0].part = part;
        one.segments[0] = sp;
        c = model.evaluate(one, false);
        std::pair<bool, double> v{!c.feasible(), c.value(objective, model.arch())};
        if (v < best) best = v, best_seg = std::move(sp);  // plans that fit L2 first
      }
    }
    out.push_back(std::move(best_seg));
  }
  return out;
}

}  // namespace

gemini::Plan quick_plan(const gemini::CostModel& model, gemini::Objective objective) {
  const gemini::Network& net = model.network();
  const arch::Architecture& a = model.arch();
  const int C = a.core_count();
  if (C == 1) return gemini::single_core_plan(net);
  const int n = int(net.layers.size());
  const gemini::Plan seq = gemini::sequential_plan(model, objective);
  // The sequential baseline lays the widest layer along gemini's snake through the dies.
  std::vector<int> snake;
  for (const auto& sp : seq.segments)
    if (sp.layers[0].cores.size() > snake.size()) snake = sp.layers[0].cores;
  const std::vector<gemini::SegmentPlan> tuned = tuned_layers(model, objective, seq, snake);
  std::vector<int64_t> groups = gemini::divisors(net.batch);
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> best(size_t(n) + 1, inf);
  std::vector<int> from(size_t(n) + 1, -1);
  std::vector<gemini::SegmentPlan> choice(size_t(n) + 1);
  best[0] = 0;
  auto consider = [&](int i, int j, gemini::SegmentPlan&& sp, bool& fits) {
    gemini::Plan one;
    one.segments.push_back(std::move(sp));
    gemini::PlanCost c = model.evaluate(one, false);
    fits = fits || c.feasible();
    double v = best[size_t(i)] + c.value(objective, a);
    if (v < best[size_t(j) + 1]) {
      best[size_t(j) + 1] = v;
      from[size_t(j) + 1] = i;
      choice[size_t(j) + 1] = std::move(one.segments.back());
    }
  };
  // Segments of up to 16 layers, then in steps of an eighth (as gemini's own
  // segmentation), each priced alone; a segment stops growing once no batch
  // grouping fits the cores' L2. A single layer may also be its tuned segment.
  for (int j = 0; j < n; ++j) {
    for (int len = 1; len <= std::min(C, j + 1); len += len < 16 ? 1 : std::max(1, len / 8)) {
      const int i = j - len + 1;
      if (best[size_t(i)] == inf) continue;
      bool any_fits = false;
      for (int64_t G : groups) consider(i, j, gemini::initial_segment(model, i, j, G), any_fits);
      if (len == 1) consider(i, j, gemini::SegmentPlan(tuned[size_t(j)]), any_fits);
      if (!any_fits) break;
    }
  }
  gemini::Plan plan;
  for (int j = n; j > 0 && from[size_t(j)] >= 0; j = from[size_t(j)]) plan.segments.push_back(choice[size_t(j)]);
  std::reverse(plan.segments.begin(), plan.segments.end());
  // Keep the best whole plan that fits L2 (any, when none does): segmented,
  // layer by layer tuned, or sequential.
  gemini::Plan layerwise;
  layerwise.segments = tuned;
  auto rank = [&](const gemini::Plan& p) {
    gemini::PlanCost c = model.evaluate(p, false);
    return std::pair<bool, double>{!c.feasible(), c.value(objective, a)};
  };
  const gemini::Plan* pick = &seq;
  std::pair<bool, double> pick_v = rank(seq);
  for (const gemini::Plan* p : {&plan, &layerwise}) {
    if (p->segments.empty() || p->segments.front().first() != 0) continue;
    auto v = rank(*p);
    if (v < pick_v) pick_v = v, pick = p;
  }
  return *pick;
}

// ---- Preparing and evaluating ------------------------------------------------

namespace {

std::string file_stem(const std::string& path) {
  std::string s = path.substr(path.find_last_of('/') + 1);
  for (const char* ext : {".zst", ".json", ".fir"})
    if (s.size() > std::string(ext).size() && s.ends_with(ext)) s.resize(s.size() - std::string(ext).size());
  return s;
}

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string_view binding_word(gemini::Binding b) {
  switch (b) {
    case gemini::Binding::Compute: return "compute";
    case gemini::Binding::Dram: return "dram";
    case gemini::Binding::Noc: return "noc";
    case gemini::Binding::D2d: return "d2d";
  }
  return "?";
}

gemini::Binding parse_binding(const JsonCursor& c) {
  for (auto b : {gemini::Binding::Compute, gemini::Binding::Dram, gemini::Binding::Noc, gemini::Binding::D2d})
    if (binding_word(b) == c.as_string()) return b;
  c.fail("unknown binding");
}

}  // namespace

Sweep prepare_sweep(const std::string& space_path, const std::vector<std::string>& nets, bool validate) {
  Sweep s;
  s.space = load_design_space(space_path, validate);
  s.table = load_cost_table(s.space.cost_model, validate);
  s.base = arch::load_architecture(s.space.base_arch, validate);
  if (!nets.empty()) {
    for (const auto& path : nets) {
      NetworkSpec ns{file_stem(path), path};
      for (const auto& other : s.networks)
        if (other.name == ns.name) throw_usage_error("--nets: two networks are named \"" + ns.name + "\"");
      s.networks.push_back(ns);
    }
  } else {
    s.networks = s.space.networks;
  }
  if (s.networks.empty()) throw_usage_error(display_name(space_path) + ": no networks (list them in \"networks\" or give --nets)");
  // Deterministic order regardless of the command line: by name.
  std::sort(s.networks.begin(), s.networks.end(), [](const auto& x, const auto& y) { return x.name < y.name; });
  fir::ReadOptions fo;
  fo.validate_schema = validate;
  for (const auto& n : s.networks) s.graphs.push_back(fir::read_fir(n.fir, fo));
  s.points = s.space.points(s.table);
  if (s.points.empty()) throw_usage_error(display_name(space_path) + ": the space has no buildable point");
  s.config = std::string(s.space.quick_search ? "quick" : "full effort=" + std::to_string(s.space.effort)) +
             " seed=" + std::to_string(s.space.seed) + " objective=" + std::string(objective_name(s.space.objective)) +
             " cost_model=" + s.table.name + " base=" + s.base.name + " nets=";
  for (const auto& n : s.networks) s.config += n.name + ",";
  return s;
}

PointResult evaluate_point(const Sweep& s, const DesignPoint& p) {
  PointResult r;
  r.point = p;
  const arch::Architecture a = point_architecture(p, s.base, s.table);
  const gemini::Objective obj = mapping_objective(s.space.objective);
  for (size_t i = 0; i < s.networks.size(); ++i) {
    gemini::Network net = gemini::build_network(s.graphs[i], a, display_name(s.networks[i].fir));
    net.name = s.networks[i].name;
    gemini::CostModel model(net, a);
    gemini::Plan plan;
    if (s.space.quick_search) {
      plan = quick_plan(model, obj);
    } else {
      gemini::SearchOptions so;
      so.objective = obj;
      so.seed = s.space.seed;
      so.effort = s.space.effort;
      plan = gemini::search(model, so).plan;
    }
    gemini::PlanCost c = model.evaluate(plan, true);
    NetResult nr;
    nr.network = s.networks[i].name;
    nr.batch = net.batch;
    nr.cycles = c.cycles;
    nr.energy_pj = c.energy.total();
    nr.overflow = c.overflow;
    nr.cores_used = c.cores_used;
    nr.segments = int(plan.segments.size());
    for (const auto& seg : c.segments)
      for (const auto& l : seg.layers) {
        nr.busy_cycles += l.busy_cycles;
        for (int k = 0; k < 4; ++k) nr.wait_cycles[k] += l.wait_cycles[k];
      }
    // Compute binds unless a wait for data outweighs it.
    int64_t most = nr.busy_cycles;
    for (int k = 1; k < 4; ++k)
      if (nr.wait_cycles[k] > most) most = nr.wait_cycles[k], nr.binding = gemini::Binding(k);
    r.nets.push_back(std::move(nr));
  }
  return r;
}

// ---- Journal -----------------------------------------------------------------

std::string journal_line(const Sweep& s, const PointResult& r) {
  Json j = Json::object();
  j.set("point", r.point.index);
  j.set("key", r.point.key());
  j.set("config", s.config);
  Json nets = Json::array();
  for (const NetResult& n : r.nets) {
    Json o = Json::object();
    o.set("network", n.network);
    o.set("batch", n.batch);
    o.set("cycles", n.cycles);
    o.set("energy_pj", n.energy_pj);
    o.set("overflow", n.overflow);
    o.set("cores_used", n.cores_used);
    o.set("segments", n.segments);
    o.set("busy_cycles", n.busy_cycles);
    o.set("wait_cycles", Json::array({n.wait_cycles[0], n.wait_cycles[1], n.wait_cycles[2], n.wait_cycles[3]}));
    o.set("binding", std::string(binding_word(n.binding)));
    nets.push(std::move(o));
  }
  j.set("nets", std::move(nets));
  std::string out;
  append_json_compact(out, j);
  out += '\n';
  return out;
}

std::vector<PointResult> read_journal(const Sweep& s, std::string_view text, const std::string& file,
                                      std::vector<std::string>* notes) {
  std::vector<PointResult> out;
  std::vector<bool> seen(s.points.size(), false);
  size_t line_no = 0, pos = 0;
  int skipped = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    const bool complete = end != std::string_view::npos;
    std::string_view line = text.substr(pos, complete ? end - pos : std::string_view::npos);
    pos = complete ? end + 1 : text.size();
    ++line_no;
    if (line.empty()) continue;
    const std::string where = file + ":" + std::to_string(line_no);
    try {
      if (!complete) throw_input_error(where + ": unfinished line (the sweep was interrupted while writing it)");
      Json doc = parse_json(line, where);
      JsonCursor c(doc, where);
      int64_t idx = c.at("point").as_int();
      if (idx < 0 || size_t(idx) >= s.points.size() || c.at("key").as_string() != s.points[size_t(idx)].key() ||
          c.at("config").as_string() != s.config) {
        ++skipped;
        continue;
      }
      if (seen[size_t(idx)]) continue;
      PointResult r;
      r.point = s.points[size_t(idx)];
      auto nets = c.at("nets");
      if (nets.array_size() != s.networks.size()) nets.fail("expected one entry per network");
      for (size_t i = 0; i < nets.array_size(); ++i) {
        JsonCursor n = nets.at(i);
        NetResult nr;
        nr.network = n.at("network").as_string();
        if (nr.network != s.networks[i].name) n.at("network").fail("expected network \"" + s.networks[i].name + "\"");
        nr.batch = n.at("batch").as_int();
        nr.cycles = n.at("cycles").as_int();
        nr.energy_pj = n.at("energy_pj").as_double();
        nr.overflow = n.at("overflow").as_int();
        nr.cores_used = int(n.at("cores_used").as_int());
        nr.segments = int(n.at("segments").as_int());
        nr.busy_cycles = n.at("busy_cycles").as_int();
        auto w = n.at("wait_cycles").as_int_vector(4);
        for (int k = 0; k < 4; ++k) nr.wait_cycles[k] = w[size_t(k)];
        nr.binding = parse_binding(n.at("binding"));
        r.nets.push_back(std::move(nr));
      }
      seen[size_t(idx)] = true;
      out.push_back(std::move(r));
    } catch (const Error& e) {
      if (notes) notes->push_back(std::string(e.what()) + " (line ignored)");
    }
  }
  if (skipped && notes)
    notes->push_back(file + ": " + std::to_string(skipped) + " line(s) of other points or search settings ignored");
  return out;
}

// ---- Ranking -----------------------------------------------------------------

Ranked rank(const Sweep& s, std::vector<PointResult> results) {
  std::sort(results.begin(), results.end(), [](const auto& x, const auto& y) { return x.point.index < y.point.index; });
  Ranked r;
  const size_t n = results.size();
  r.costs.resize(n);
  r.area_mm2.resize(n), r.latency_s.resize(n), r.energy_j.resize(n), r.objective.resize(n);
  r.feasible.assign(n, true), r.pareto.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    const DesignPoint& p = results[i].point;
    const arch::Architecture a = point_architecture(p, s.base, s.table);
    const DesignFigures f = point_figures(p, a, s.table);
    r.costs[i] = price_design(f, s.table);
    r.area_mm2[i] = r.costs[i].silicon_mm2;
    double log_lat = 0, log_en = 0;
    for (const NetResult& nr : results[i].nets) {
      log_lat += std::log(double(nr.cycles) / a.clock_hz());
      log_en += std::log(nr.energy_pj * 1e-12);
      r.feasible[i] = r.feasible[i] && nr.feasible();
    }
    const double k = double(results[i].nets.size());
    r.latency_s[i] = std::exp(log_lat / k);
    r.energy_j[i] = std::exp(log_en / k);
    double v = 0;
    switch (s.space.objective) {
      case Objective::Latency: v = r.latency_s[i]; break;
      case Objective::Energy: v = r.energy_j[i]; break;
      case Objective::Edp: v = r.latency_s[i] * r.energy_j[i]; break;
      case Objective::LatencyPerDollar: v = r.latency_s[i] * r.costs[i].total_usd; break;
      case Objective::EnergyPerDollar: v = r.energy_j[i] * r.costs[i].total_usd; break;
      case Objective::EdpPerDollar: v = r.latency_s[i] * r.energy_j[i] * r.costs[i].total_usd; break;
    }
    r.objective[i] = v;
  }
  // Pareto front over (cost, latency, energy) among points whose mappings fit.
  for (size_t i = 0; i < n; ++i) {
    if (!r.feasible[i]) continue;
    bool dominated = false;
    for (size_t j = 0; j < n && !dominated; ++j) {
      if (j == i || !r.feasible[j]) continue;
      const double ci = r.costs[i].total_usd, cj = r.costs[j].total_usd;
      bool no_worse = cj <= ci && r.latency_s[j] <= r.latency_s[i] && r.energy_j[j] <= r.energy_j[i];
      bool better = cj < ci || r.latency_s[j] < r.latency_s[i] || r.energy_j[j] < r.energy_j[i];
      dominated = no_worse && better;
    }
    r.pareto[i] = !dominated;
  }
  for (size_t i = 0; i < n; ++i)
    if (r.feasible[i] && (r.chosen < 0 || r.objective[i] < r.objective[size_t(r.chosen)])) r.chosen = int(i);
  r.results = std::move(results);
  return r;
}

std::string format_csv(const Sweep& s, const Ranked& r) {
  std::string out =
      "point,network,batch,compute_dies,mesh_x,mesh_y,cores,pe_rows,pe_cols,l2_kib,noc_bytes_per_cycle,"
      "d2d_bytes_per_cycle,io_links_per_die,dram_type,dram_channels,package,multicast,peak_tops,feasible,cores_used,segments,latency_cycles,"
      "latency_us,energy_uj,edp_uj_us,binding,compute_die_mm2,io_die_mm2,silicon_mm2,compute_die_yield,package_usd,"
      "dram_usd,cost_usd,objective,pareto,chosen\n";
  for (size_t i = 0; i < r.results.size(); ++i) {
    const DesignPoint& p = r.results[i].point;
    const arch::Architecture a = point_architecture(p, s.base, s.table);
    const DesignFigures f = point_figures(p, a, s.table);
    const DesignCost& c = r.costs[i];
    for (const NetResult& n : r.results[i].nets) {
      const double us = double(n.cycles) / a.clock_hz() * 1e6, uj = n.energy_pj * 1e-6;
      std::ostringstream row;
      row << p.index << ',' << n.network << ',' << n.batch << ',' << p.compute_dies << ',' << p.mesh_x << ',' << p.mesh_y
          << ',' << p.cores() << ',' << p.pe_rows << ',' << p.pe_cols << ',' << p.l2_kib << ','
          << fmt(p.noc_bytes_per_cycle) << ',' << fmt(p.d2d_bytes_per_cycle) << ',' << p.io_links_per_die << ',' << p.dram_type << ','
          << p.dram_channels << ',' << p.package << ',' << (a.noc.multicast ? 1 : 0) << ',' << fmt(a.peak_tops()) << ',' << (n.feasible() ? 1 : 0) << ','
          << n.cores_used << ',' << n.segments << ',' << n.cycles << ',' << fmt(us) << ',' << fmt(uj) << ','
          << fmt(us * uj) << ',' << binding_word(n.binding) << ',' << fmt(f.compute_die_mm2) << ','
          << fmt(f.io_die_mm2) << ',' << fmt(c.silicon_mm2) << ',' << fmt(c.compute_die_yield) << ','
          << fmt(c.package_usd) << ',' << fmt(c.dram_usd) << ',' << fmt(c.total_usd) << ',' << fmt(r.objective[i])
          << ',' << (r.pareto[i] ? 1 : 0) << ',' << (int(i) == r.chosen ? 1 : 0) << '\n';
      out += row.str();
    }
  }
  return out;
}

// ---- SVG ---------------------------------------------------------------------

namespace {

// Ticks 1, 2, 5 x 10^k inside [lo, hi] (log axis).
std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> t;
  for (int e = int(std::floor(std::log10(lo))) - 1; e <= int(std::ceil(std::log10(hi))); ++e)
    for (double m : {1.0, 2.0, 5.0}) {
      double v = m * std::pow(10.0, e);
      if (v >= lo * 0.999 && v <= hi * 1.001) t.push_back(v);
    }
  return t;
}

std::string xml_escape(std::string_view s) {
  std::string o;
  for (char ch : s) {
    if (ch == '<') o += "&lt;";
    else if (ch == '>') o += "&gt;";
    else if (ch == '&') o += "&amp;";
    else o += ch;
  }
  return o;
}

}  // namespace

std::string format_svg(const Sweep& s, const Ranked& r) {
  const double W = 760, H = 520, L = 80, R = 200, T = 40, B = 60;
  double xlo = 1e300, xhi = 0, ylo = 1e300, yhi = 0;
  for (size_t i = 0; i < r.results.size(); ++i) {
    if (!r.feasible[i]) continue;
    xlo = std::min(xlo, r.costs[i].total_usd), xhi = std::max(xhi, r.costs[i].total_usd);
    ylo = std::min(ylo, r.latency_s[i] * 1e6), yhi = std::max(yhi, r.latency_s[i] * 1e6);
  }
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W
    << ' ' << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << L << "\" y=\"24\" font-size=\"15\">" << xml_escape(s.space.name)
    << ": cost against latency (geometric mean over " << s.networks.size() << " networks)</text>\n";
  if (r.chosen < 0) {
    o << "<text x=\"" << L << "\" y=\"" << H / 2 << "\">no design point maps every network into its L2</text>\n</svg>\n";
    return o.str();
  }
  // Pad the ranges by 10% on the log scale (and give single values a width).
  auto pad = [](double& lo, double& hi) {
    if (hi <= lo * 1.0001) lo /= 1.5, hi *= 1.5;
    double f = std::pow(hi / lo, 0.05);
    lo /= f, hi *= f;
  };
  pad(xlo, xhi), pad(ylo, yhi);
  auto X = [&](double v) { return L + (W - L - R) * std::log(v / xlo) / std::log(xhi / xlo); };
  auto Y = [&](double v) { return H - B - (H - T - B) * std::log(v / ylo) / std::log(yhi / ylo); };
  o << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - L - R << "\" height=\"" << H - T - B
    << "\" fill=\"none\" stroke=\"black\"/>\n";
  for (double t : log_ticks(xlo, xhi))
    o << "<line x1=\"" << fmt(X(t)) << "\" y1=\"" << T << "\" x2=\"" << fmt(X(t)) << "\" y2=\"" << H - B
      << "\" stroke=\"#ddd\"/><text x=\"" << fmt(X(t)) << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\">"
      << fmt(t) << "</text>\n";
  for (double t : log_ticks(ylo, yhi))
    o << "<line x1=\"" << L << "\" y1=\"" << fmt(Y(t)) << "\" x2=\"" << W - R << "\" y2=\"" << fmt(Y(t))
      << "\" stroke=\"#ddd\"/><text x=\"" << L - 6 << "\" y=\"" << fmt(Y(t) + 4) << "\" text-anchor=\"end\">" << fmt(t)
      << "</text>\n";
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 18 << "\" text-anchor=\"middle\">cost per chip (USD, log)</text>\n";
  o << "<text transform=\"translate(18," << (T + H - B) / 2
    << ") rotate(-90)\" text-anchor=\"middle\">latency (us, geometric mean, log)</text>\n";
  // The cost-latency front: the staircase of points no cheaper point beats in latency.
  std::vector<size_t> order;
  for (size_t i = 0; i < r.results.size(); ++i)
    if (r.feasible[i]) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return r.costs[a].total_usd != r.costs[b].total_usd ? r.costs[a].total_usd < r.costs[b].total_usd
                                                        : r.latency_s[a] < r.latency_s[b];
  });
  std::string path;
  double best = 1e300;
  for (size_t i : order)
    if (r.latency_s[i] < best) {
      best = r.latency_s[i];
      path += (path.empty() ? "M" : " L") + fmt(X(r.costs[i].total_usd)) + "," + fmt(Y(r.latency_s[i] * 1e6));
    }
  for (size_t i : order)
    if (!r.pareto[i])
      o << "<circle cx=\"" << fmt(X(r.costs[i].total_usd)) << "\" cy=\"" << fmt(Y(r.latency_s[i] * 1e6))
        << "\" r=\"2.5\" fill=\"#bbb\"><title>point " << r.results[i].point.index << "</title></circle>\n";
  o << "<path d=\"" << path << "\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\"/>\n";
  for (size_t i : order)
    if (r.pareto[i])
      o << "<circle cx=\"" << fmt(X(r.costs[i].total_usd)) << "\" cy=\"" << fmt(Y(r.latency_s[i] * 1e6))
        << "\" r=\"3.5\" fill=\"#1f77b4\"><title>point " << r.results[i].point.index << ": "
        << xml_escape(r.results[i].point.key()) << "</title></circle>\n";
  const size_t c = size_t(r.chosen);
  o << "<circle cx=\"" << fmt(X(r.costs[c].total_usd)) << "\" cy=\"" << fmt(Y(r.latency_s[c] * 1e6))
    << "\" r=\"7\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\"/>\n";
  const double lx = W - R + 12;
  o << "<circle cx=\"" << lx << "\" cy=\"" << T + 10 << "\" r=\"2.5\" fill=\"#bbb\"/><text x=\"" << lx + 10 << "\" y=\""
    << T + 14 << "\">design point</text>\n";
  o << "<circle cx=\"" << lx << "\" cy=\"" << T + 30 << "\" r=\"3.5\" fill=\"#1f77b4\"/><text x=\"" << lx + 10
    << "\" y=\"" << T + 34 << "\">Pareto (cost, latency, energy)</text>\n";
  o << "<line x1=\"" << lx - 6 << "\" y1=\"" << T + 50 << "\" x2=\"" << lx + 6 << "\" y2=\"" << T + 50
    << "\" stroke=\"#1f77b4\" stroke-width=\"1.5\"/><text x=\"" << lx + 10 << "\" y=\"" << T + 54
    << "\">cost-latency front</text>\n";
  o << "<circle cx=\"" << lx << "\" cy=\"" << T + 70 << "\" r=\"7\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\"/><text x=\""
    << lx + 10 << "\" y=\"" << T + 74 << "\">chosen (" << objective_name(s.space.objective) << ")</text>\n";
  o << "<text x=\"" << lx - 6 << "\" y=\"" << T + 100 << "\">chosen: point " << r.results[c].point.index << "</text>\n";
  o << "</svg>\n";
  return o.str();
}

// ---- Summary -----------------------------------------------------------------

namespace {

// The parameters in which two points differ, as "name a -> b".
std::vector<std::string> differences(const DesignPoint& a, const DesignPoint& b) {
  std::vector<std::string> d;
  auto add = [&](const char* name, const std::string& x, const std::string& y) {
    if (x != y) d.push_back(std::string(name) + " " + x + " -> " + y);
  };
  auto pair = [](int x, int y) { return std::to_string(x) + "x" + std::to_string(y); };
  add("compute dies", std::to_string(a.compute_dies), std::to_string(b.compute_dies));
  add("mesh", pair(a.mesh_x, a.mesh_y), pair(b.mesh_x, b.mesh_y));
  add("PE array", pair(a.pe_rows, a.pe_cols), pair(b.pe_rows, b.pe_cols));
  add("L2 KiB", std::to_string(a.l2_kib), std::to_string(b.l2_kib));
  add("NoC B/cycle", fmt(a.noc_bytes_per_cycle), fmt(b.noc_bytes_per_cycle));
  add("D2D B/cycle", fmt(a.d2d_bytes_per_cycle), fmt(b.d2d_bytes_per_cycle));
  add("IO links per die", std::to_string(a.io_links_per_die), std::to_string(b.io_links_per_die));
  add("DRAM type", a.dram_type, b.dram_type);
  add("DRAM channels", std::to_string(a.dram_channels), std::to_string(b.dram_channels));
  add("package", a.package, b.package);
  auto multicast = [](const DesignPoint& p) { return p.multicast ? (*p.multicast ? "yes" : "no") : "as the base"; };
  add("multicast", multicast(a), multicast(b));
  return d;
}

std::string pct(double now, double before) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", (now / before - 1) * 100);
  return buf;
}

}  // namespace

std::string format_summary(const Sweep& s, const Ranked& r) {
  std::ostringstream o;
  size_t feasible = 0, front = 0;
  for (size_t i = 0; i < r.results.size(); ++i) feasible += r.feasible[i], front += r.pareto[i];
  o << "dse: " << s.space.name << ": " << r.results.size() << " design points x " << s.networks.size()
    << " networks; " << feasible << " fit every network into L2; " << front
    << " on the Pareto front (cost, latency, energy)\n";
  if (r.chosen < 0) {
    o << "dse: no design point maps every network within its cores' L2; no design chosen\n";
    return o.str();
  }
  const size_t c = size_t(r.chosen);
  const PointResult& pr = r.results[c];
  const DesignCost& dc = r.costs[c];
  const arch::Architecture a = point_architecture(pr.point, s.base, s.table);
  o << "dse: chosen by " << objective_name(s.space.objective) << ": point " << pr.point.index << ": "
    << pr.point.key() << "\n";
  o << "  " << pr.point.cores() << " cores, " << fmt(a.peak_tops()) << " TOPS peak; silicon " << fmt(dc.silicon_mm2)
    << " mm2 (compute die yield " << fmt(dc.compute_die_yield) << "); cost $" << fmt(dc.total_usd) << " = package $"
    << fmt(dc.package_usd) << " + DRAM $" << fmt(dc.dram_usd) << "\n";
  o << "  latency " << fmt(r.latency_s[c] * 1e6) << " us, energy " << fmt(r.energy_j[c] * 1e6)
    << " uJ (geometric means); objective " << fmt(r.objective[c]) << "\n";
  o << "what bound it, per network (share of the layers' summed time: compute / waiting for DRAM, NoC, D2D):\n";
  for (const NetResult& n : pr.nets) {
    double total = double(n.busy_cycles + n.wait_cycles[1] + n.wait_cycles[2] + n.wait_cycles[3]);
    if (total <= 0) total = 1;
    char buf[256];
    std::snprintf(buf, sizeof buf, "  %-24s %10lld cycles, %s-bound: compute %.0f%% dram %.0f%% noc %.0f%% d2d %.0f%%, %d of %d cores, %d segments\n",
                  n.network.c_str(), (long long)n.cycles, std::string(binding_word(n.binding)).c_str(),
                  100 * double(n.busy_cycles) / total, 100 * double(n.wait_cycles[1]) / total,
                  100 * double(n.wait_cycles[2]) / total, 100 * double(n.wait_cycles[3]) / total, n.cores_used,
                  pr.point.cores(), n.segments);
    o << buf;
  }
  bool d2d_bound = false;
  for (const NetResult& n : pr.nets) d2d_bound = d2d_bound || n.binding == gemini::Binding::D2d;
  if (d2d_bound)
    o << "  (the DRAM channels sit on the IO die: waiting for DRAM data over the compute dies' links to it counts\n"
         "   as d2d; more IO links per die or wider D2D links relieve it, more DRAM channels only behind them)\n";
  o << "neighbours (one parameter changed; objective, latency, energy, cost relative to the chosen design):\n";
  int shown = 0;
  for (size_t i = 0; i < r.results.size(); ++i) {
    auto d = differences(pr.point, r.results[i].point);
    if (d.size() != 1) continue;
    ++shown;
    o << "  " << d[0] << ": ";
    if (!r.feasible[i]) {
      o << "does not fit L2\n";
      continue;
    }
    o << "objective " << pct(r.objective[i], r.objective[c]) << ", latency " << pct(r.latency_s[i], r.latency_s[c])
      << ", energy " << pct(r.energy_j[i], r.energy_j[c]) << ", cost " << pct(r.costs[i].total_usd, dc.total_usd)
      << "\n";
  }
  if (!shown) o << "  (none in the space)\n";
  return o.str();
}

// ---- Driver ------------------------------------------------------------------

int run_sweep(const SweepOptions& o) {
  using Clock = std::chrono::steady_clock;
  if (o.jobs < 1) throw_usage_error("--jobs must be at least 1");
  if (o.count_points) {
    DesignSpace space = load_design_space(o.space, o.validate);
    write_output(o.output, std::to_string(space.points(load_cost_table(space.cost_model, o.validate)).size()) + "\n");
    return kExitOk;
  }
  Sweep s = prepare_sweep(o.space, o.nets, o.validate);
  if (o.point >= 0) {
    if (size_t(o.point) >= s.points.size())
      throw_usage_error("--point " + std::to_string(o.point) + ": the space has points 0.." +
                        std::to_string(s.points.size() - 1));
    write_output(o.output, journal_line(s, evaluate_point(s, s.points[size_t(o.point)])));
    return kExitOk;
  }
  const bool to_file = o.output != "-";
  const std::string journal = !o.journal.empty() ? o.journal : to_file ? o.output + ".journal" : "";
  std::vector<PointResult> results;
  std::vector<bool> done(s.points.size(), false);
  if (!journal.empty()) {
    std::ifstream in(journal, std::ios::binary);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      std::vector<std::string> notes;
      results = read_journal(s, ss.str(), journal, &notes);
      for (const auto& n : notes) std::cerr << "dse: " << n << "\n";
      for (const auto& r : results) done[size_t(r.point.index)] = true;
      if (!results.empty())
        std::cerr << "dse: " << results.size() << " of " << s.points.size() << " points already in " << journal << "\n";
    }
  }
  std::vector<size_t> todo;
  for (size_t i = 0; i < s.points.size(); ++i)
    if (!done[i]) todo.push_back(i);

  std::FILE* jf = nullptr;
  if (!journal.empty() && !todo.empty()) {
    jf = std::fopen(journal.c_str(), "ab");
    if (!jf) throw Error(kExitIo, journal + ": cannot open the journal for appending");
  }
  std::mutex mu;
  std::atomic<size_t> next{0};
  size_t finished = 0;
  std::string failure;
  ExitCode failure_code = kExitInternal;
  const auto t0 = Clock::now();
  auto worker = [&] {
    for (;;) {
      size_t k = next.fetch_add(1);
      if (k >= todo.size()) return;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!failure.empty()) return;
      }
      const auto t1 = Clock::now();
      try {
        PointResult r = evaluate_point(s, s.points[todo[k]]);
        std::string line = journal_line(s, r);
        std::lock_guard<std::mutex> lock(mu);
        if (jf) {
          std::fwrite(line.data(), 1, line.size(), jf);
          std::fflush(jf);
        }
        ++finished;
        if (o.progress) {
          double dt = std::chrono::duration<double>(Clock::now() - t1).count();
          double all = std::chrono::duration<double>(Clock::now() - t0).count();
          std::fprintf(stderr, "dse: %zu/%zu points done (point %d: %.2f s), %.0f s elapsed, about %.0f s left\n",
                       finished, todo.size(), r.point.index, dt, all,
                       all / double(finished) * double(todo.size() - finished));
        }
        results.push_back(std::move(r));
      } catch (const Error& e) {
        std::lock_guard<std::mutex> lock(mu);
        if (failure.empty())
          failure = "design point " + std::to_string(todo[k]) + " (" + s.points[todo[k]].key() + "): " + e.what(),
          failure_code = e.code();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int j = 1; j < std::min<int>(o.jobs, int(todo.size())); ++j) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  if (jf) std::fclose(jf);
  if (!failure.empty()) throw Error(failure_code, failure);

  Ranked r = rank(s, std::move(results));
  write_output(o.output, format_csv(s, r));
  std::string summary = format_summary(s, r);
  std::cerr << summary;
  if (to_file) {
    std::string stem = o.output;
    if (stem.ends_with(".zst")) stem.resize(stem.size() - 4);
    if (stem.ends_with(".csv")) stem.resize(stem.size() - 4);
    write_output(stem + ".pareto.svg", format_svg(s, r));
    write_output(stem + ".summary.txt", summary);
  }
  return kExitOk;
}

}  // namespace cct::dse
