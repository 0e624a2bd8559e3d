// gemini: search a layer-pipeline spatial mapping of a network onto a chip.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>

#include "arch/arch.hpp"
#include "dse/sweep.hpp"
#include "fir/fir.hpp"
#include "gemini/cost.hpp"
#include "gemini/network.hpp"
#include "gemini/plan.hpp"
#include "gemini/report.hpp"
#include "gemini/search.hpp"
#include "mapping/mapping.hpp"
#include "mapping/mapping_fir.hpp"
#include "support/cli.hpp"
#include "support/error.hpp"
#include "support/io.hpp"

namespace {

using namespace cct;

std::string base_name(const std::string& path) {
  if (path == "-") return "stdin";
  std::string s = path.substr(path.find_last_of('/') + 1);
  for (const char* ext : {".zst", ".json", ".fir"})
    if (s.size() > std::string(ext).size() && s.ends_with(ext)) s.resize(s.size() - std::string(ext).size());
  return s;
}

gemini::Objective parse_objective(const std::string& s) {
  if (s == "latency") return gemini::Objective::Latency;
  if (s == "energy") return gemini::Objective::Energy;
  if (s == "edp") return gemini::Objective::Edp;
  throw_usage_error("--objective must be latency, energy or edp, not \"" + s + "\"");
}

// A one-line progress bar on stderr, redrawn when the percentage changes.
class ProgressBar {
 public:
  void operator()(double f) {
    int pct = int(std::floor(std::min(1.0, std::max(0.0, f)) * 100.0));
    if (pct == last_) return;
    last_ = pct;
    const int width = 40;
    int filled = pct * width / 100;
    std::fprintf(stderr, "\rgemini [%.*s%*s] %3d%%", filled, "########################################", width - filled,
                 "", pct);
    if (pct == 100) std::fputc('\n', stderr);
    std::fflush(stderr);
  }

 private:
  int last_ = -1;
};

}  // namespace

int main(int argc, char** argv) {
  cli::ToolInfo info{
      "gemini", "search a layer-pipeline spatial mapping of a network onto a chiplet accelerator",
      "FRONTEND_IR --arch NAME|FILE",
      "FRONTEND_IR is a JSON file ('-' = stdin, .zst accepted). The mapping (formats/Mapping_Format.md)\n"
      "cuts the network into segments of consecutive layers that run one after another;\n"
      "inside a segment every layer has its own cores, a partition of its output over them\n"
      "and DRAM channels, and batch groups pipeline through the layers. gemini finds the\n"
      "segments by dynamic programming and the placement inside each by simulated annealing\n"
      "over its cost model (latency and energy as irgen, asm and zebusim would give them).\n"
      "The same seed and effort give the same mapping; --time-limit returns the best mapping\n"
      "found when the time is up (then the result depends on the machine's speed).\n"
      "--baseline sequential maps every layer in turn onto all cores, one layer per segment.\n"
      "Every mapping written fits the cores' L2 and weight buffers: irgen builds it first, and what\n"
      "does not fit even with tensors spilled to DRAM is split (more batch groups or row stripes).\n"
      "--evaluate MAPPING predicts the cost of a given mapping instead of searching.\n"
      "--timeline FILE writes the model's timeline: one JSON line per step (compute, DRAM load or\n"
      "store, send to another core) with core, layer, segment, batch group, part, bytes, start, end.\n"
      "--report prints per segment and layer the cores, partition, predicted cycles, energy\n"
      "by component and the binding resource on stderr. On a single-core architecture the\n"
      "mapping is every layer on core 0, one per segment.\n"
      "--dse SPACE --nets FIR,... [-o RESULTS.csv] [--jobs N] sweeps chip designs (lib/dse, formats/DSE_Format.md):\n"
      "one CSV row per design point and network, the Pareto front, RESULTS.pareto.svg, RESULTS.summary.txt\n"
      "and a journal RESULTS.csv.journal from which an interrupted sweep resumes."};
  return cli::run_tool(
      argc, argv, info, {"input"},
      [](cxxopts::Options& o) {
        o.add_options()("input", "the Frontend IR", cxxopts::value<std::string>());
        cli::add_arch_option(o);
        cli::add_output_option(o, "mapping");
        cli::add_validate_option(o);
        o.add_options()("objective", "what to minimise: latency, energy or edp",
                        cxxopts::value<std::string>()->default_value("latency"), "WHAT");
        o.add_options()("seed", "seed of the annealing", cxxopts::value<uint64_t>()->default_value("1"), "S");
        o.add_options()("effort", "annealing iterations, in multiples of the default",
                        cxxopts::value<int>()->default_value("1"), "N");
        o.add_options()("time-limit", "stop searching after SEC seconds and keep the best mapping so far",
                        cxxopts::value<double>(), "SEC");
        o.add_options()("baseline", "write a baseline mapping instead of searching: sequential",
                        cxxopts::value<std::string>(), "KIND");
        o.add_options()("evaluate", "predict the cost of MAPPING instead of searching (with --report)",
                        cxxopts::value<std::string>(), "MAPPING");
        o.add_options()("no-multicast",
                        "price unicast DRAM loads only, as asm --no-multicast builds the program "
                        "(by default loads of the same bytes by several cores are one multicast where the "
                        "architecture has noc.multicast, as asm merges them)");
        o.add_options()("report", "print the plan and its predicted cost per segment and layer on stderr");
        o.add_options()("timeline", "write the predicted timeline (one JSON line per compute, load, store and send) to FILE",
                        cxxopts::value<std::string>(), "FILE");
        o.add_options()("no-progress", "never draw the progress bar (drawn only when stderr is a terminal)");
        o.add_options()("dse", "sweep the architectures of SPACE instead of mapping one network (formats/DSE_Format.md)",
                        cxxopts::value<std::string>(), "SPACE");
        o.add_options()("nets", "--dse: the networks (FIR files, comma-separated or repeated) instead of SPACE's",
                        cxxopts::value<std::vector<std::string>>(), "FIR,...");
        o.add_options()("jobs", "--dse: design points evaluated in parallel",
                        cxxopts::value<int>()->default_value("1"), "N");
        o.add_options()("point", "--dse: evaluate design point I only and write its journal line", cxxopts::value<int>(), "I");
        o.add_options()("journal", "--dse: the journal of finished points (default: OUTPUT.journal)",
                        cxxopts::value<std::string>(), "FILE");
        o.add_options()("count-points", "--dse: print the number of design points of SPACE");
      },
      [](const cxxopts::ParseResult& r) {
        if (r.count("dse")) {
          dse::SweepOptions d;
          d.space = r["dse"].as<std::string>();
          if (r.count("nets")) d.nets = r["nets"].as<std::vector<std::string>>();
          if (r.count("input")) d.nets.push_back(r["input"].as<std::string>());
          d.output = cli::output_path(r);
          if (r.count("journal")) d.journal = r["journal"].as<std::string>();
          d.jobs = r["jobs"].as<int>();
          d.point = r.count("point") ? r["point"].as<int>() : -1;
          if (d.point < -1 || (r.count("point") && d.point < 0)) throw_usage_error("--point must be >= 0");
          d.count_points = r.count("count-points") > 0;
          d.validate = cli::validate_enabled(r);
          d.progress = !r.count("no-progress");
          return ExitCode(dse::run_sweep(d));
        }
        std::string input = cli::required(r, "input", "the Frontend IR");
        std::string arch_name = cli::required(r, "arch", "--arch NAME|FILE");
        bool validate = cli::validate_enabled(r);
        gemini::Objective objective = parse_objective(r["objective"].as<std::string>());
        int effort = r["effort"].as<int>();
        if (effort < 1) throw_usage_error("--effort must be at least 1");
        double time_limit = 0;
        if (r.count("time-limit")) {
          time_limit = r["time-limit"].as<double>();
          if (!(time_limit > 0)) throw_usage_error("--time-limit must be a positive number of seconds");
        }
        if (r.count("baseline") && r.count("evaluate")) throw_usage_error("--baseline and --evaluate exclude each other");
        if (r.count("baseline") && r["baseline"].as<std::string>() != "sequential")
          throw_usage_error("--baseline must be \"sequential\", not \"" + r["baseline"].as<std::string>() + "\"");

        arch::Architecture arch = arch::load_architecture(arch_name, validate);
        if (r.count("no-multicast")) arch.noc.multicast = false;  // the model prices what the NoC is used for
        fir::ReadOptions fo;
        fo.validate_schema = validate;
        fir::Graph graph = fir::read_fir(input, fo);
        const std::string fir_file = display_name(input);
        gemini::Network net = gemini::build_network(graph, arch, fir_file);
        net.name = base_name(input);
        gemini::CostModel model(net, arch);

        gemini::Plan plan;
        gemini::PlanCost cost;
        std::string search_note;
        if (r.count("evaluate")) {
          std::string path = r["evaluate"].as<std::string>();
          mapping::Mapping m = mapping::read_mapping(path, validate);
          auto problems = mapping::check_against_arch(m, arch, display_name(path));
          auto more = mapping::check_against_fir(m, graph, display_name(path));
          problems.insert(problems.end(), more.begin(), more.end());
          mapping::throw_if_problems(problems);
          plan = gemini::from_mapping(m, net);
          // Priced as irgen builds it, when it does (else by the model's rules).
          gemini::BuiltPlan built;
          try {
            built = gemini::built_plan(model, graph, plan, fir_file);
          } catch (const Error& e) {
            std::cerr << "gemini: note: irgen does not build this mapping (" << e.what()
                      << "); its weight paths are the model's estimate\n";
          }
          cost = model.evaluate(plan, true, true, &built);
          std::cerr << gemini::format_report(model, plan, cost);
          if (r.count("timeline")) write_output(r["timeline"].as<std::string>(), gemini::format_timeline(model, cost));
          return kExitOk;
        }
        if (r.count("baseline")) {
          plan = arch.core_count() == 1 ? gemini::single_core_plan(net) : gemini::sequential_plan(model, objective);
          gemini::relieve(model, plan);  // split what irgen could not build
          cost = model.evaluate(plan, true);
        } else {
          gemini::SearchOptions so;
          so.objective = objective;
          so.seed = r["seed"].as<uint64_t>();
          so.effort = effort;
          so.time_limit = time_limit;
          ProgressBar bar;
          if (!r.count("no-progress") && isatty(STDERR_FILENO)) so.progress = [&bar](double f) { bar(f); };
          gemini::SearchResult res = gemini::search(model, so);
          plan = std::move(res.plan);
          cost = std::move(res.cost);
          char buf[300];
          std::snprintf(buf, sizeof buf,
                        "search             %lld evaluations (%lld DP), %lld moves accepted, work %.1fM (%.1fM DP), "
                        "%.2f s (%.2f s DP)%s\n",
                        (long long)res.stats.evaluations, (long long)res.stats.dp_evaluations, (long long)res.stats.accepted,
                        double(res.stats.work) / 1e6, double(res.stats.dp_work) / 1e6, res.stats.seconds,
                        res.stats.dp_seconds, res.stats.timed_out ? ", stopped by --time-limit" : "");
          search_note = buf;
        }

        // Our own output must pass every check irgen runs; a failure is a bug.
        mapping::Mapping m = gemini::to_mapping(plan, net, arch);
        auto problems = mapping::check_structure(m, "<gemini output>");
        auto more = mapping::check_against_arch(m, arch, "<gemini output>");
        problems.insert(problems.end(), more.begin(), more.end());
        more = mapping::check_against_fir(m, graph, "<gemini output>");
        problems.insert(problems.end(), more.begin(), more.end());
        if (!problems.empty()) {
          std::string all;
          for (const auto& p : problems) all += (all.empty() ? "" : "\n") + p;
          throw Error(kExitInternal, "gemini produced an invalid mapping (a bug):\n" + all);
        }
        // A layer irgen would refuse whatever the mapping does around it.
        if (cost.uncomputable >= 0) {
          const gemini::Layer& L = net.layers[size_t(cost.uncomputable)];
          throw_input_error(at_pointer(fir_file, "/" + L.name,
                                       "one output channel's weights (" + std::to_string(L.weight_bytes_per_k) +
                                           " bytes) do not fit half of the weight buffer (" +
                                           std::to_string(arch.core.wl0_bytes() / 2) + " bytes of " + arch.name +
                                           "): irgen cannot compute the layer"));
        }
        // The model sums what is live in L2; irgen places it first fit and
        // may spill more, or differently. So irgen builds the mapping here,
        // and a segment it refuses for capacity is split further; gemini
        // never writes a mapping irgen refuses.
        // The figures reported are those of the plan as irgen built it,
        // with the weight paths it chose.
        gemini::BuiltPlan built;
        if (gemini::make_buildable(model, graph, plan, fir_file, &built) > 0) m = gemini::to_mapping(plan, net, arch);
        cost = model.evaluate(plan, true, true, &built);
        // The mapping and its timeline are one unit: both written, or neither.
        OutputSet out;
        out.add(cli::output_path(r), mapping::format_mapping(m, validate));
        if (r.count("timeline")) out.add(r["timeline"].as<std::string>(), gemini::format_timeline(model, cost));
        out.commit();
        if (r.count("report")) std::cerr << search_note << gemini::format_report(model, plan, cost);
        return kExitOk;
      });
}
