// irgen: Frontend IR + mapping -> Scheduler IR; irgen --check validates a Scheduler IR.
#include <iostream>

#include "arch/arch.hpp"
#include "fir/fir.hpp"
#include "irgen/irgen.hpp"
#include "mapping/mapping.hpp"
#include "sir/sir.hpp"
#include "support/cli.hpp"
#include "support/error.hpp"
#include "support/io.hpp"

int main(int argc, char** argv) {
  using namespace cct;
  cli::ToolInfo info{
      "irgen", "expand a mapping into a Scheduler IR with addresses and intra-core tiling",
      "FRONTEND_IR MAPPING --arch NAME|FILE  |  --check SCHEDULER_IR --arch NAME|FILE [--fir FRONTEND_IR]",
      "FRONTEND_IR, MAPPING and SCHEDULER_IR are JSON files ('-' = stdin, .zst accepted).\n"
      "irgen writes per core the ordered workloads of every mapped layer with their\n"
      "transfers, the L2 and weight-buffer snapshots, weight prefetches and the tiles\n"
      "chosen to minimise the time the timing model predicts (formats/Scheduler_IR_Format.md).\n"
      "--stats prints a summary on stderr.\n"
      "--check SCHEDULER_IR validates any Scheduler IR across workloads: transfers\n"
      "produced once and delivered with matching regions, no overlapping live tensors\n"
      "in L2 or the weight buffer, capacities and ring-buffer regions, tiles and\n"
      "workloads covering their outputs exactly once (with --fir: layer shapes and\n"
      "every layer present). Problems are listed as file: /json/pointer: what; exit 1."};
  return cli::run_tool(
      argc, argv, info, {"input", "mapping"},
      [](cxxopts::Options& o) {
        o.add_options()("input", "the Frontend IR (with --check: the Scheduler IR)", cxxopts::value<std::string>());
        o.add_options()("mapping", "the mapping", cxxopts::value<std::string>());
        o.add_options()("fir", "with --check: the Frontend IR, for layer shapes and coverage", cxxopts::value<std::string>(),
                        "FILE");
        cli::add_arch_option(o);
        cli::add_output_option(o, "Scheduler IR");
        cli::add_validate_option(o);
        o.add_options()("check", "validate the Scheduler IR given as input instead of generating");
        o.add_options()("no-prefetch", "load weights only in the workload that needs them");
        o.add_options()("no-early-receives", "receive other cores' pieces in the workload that reads them");
        o.add_options()("no-store-overlap", "free a stored output's bytes in the workload that stores it");
        o.add_options()("no-load-overlap", "load activations from DRAM in the workload that reads them");
        o.add_options()("weights", "where weights go from DRAM: auto, wl0 or l2 (default: auto)",
                        cxxopts::value<std::string>(), "PATH");
        o.add_options()("stream-tolerance", "auto: stream weights from L2 unless that is this fraction slower (default: 0.05)",
                        cxxopts::value<double>(), "X");
        o.add_options()("no-wl0-split",
                        "stream from L2 the weights of a layer part that do not fit the weight buffer, instead of "
                        "computing the part in runs of output channels whose weights do");
        o.add_options()("stats", "print a summary of the generated schedule on stderr");
      },
      [](const cxxopts::ParseResult& r) {
        std::string input = cli::required(r, "input", "the input file");
        std::string arch_name = cli::required(r, "arch", "--arch NAME|FILE");
        bool validate = cli::validate_enabled(r);
        arch::Architecture arch = arch::load_architecture(arch_name, validate);
        fir::ReadOptions fo;
        fo.validate_schema = validate;
        if (r.count("check")) {
          if (r.count("mapping")) throw_usage_error("--check takes one Scheduler IR, not a mapping");
          sir::ReadOptions so;
          so.validate_schema = validate;
          sir::Schedule s = sir::read_sir(input, so);
          fir::Graph g;
          if (r.count("fir")) g = fir::read_fir(r["fir"].as<std::string>(), fo);
          auto problems = irgen::check(s, arch, r.count("fir") ? &g : nullptr, display_name(input));
          for (const auto& p : problems) std::cerr << p << "\n";
          if (!problems.empty()) return kExitCheckFailed;
          // Success says what was checked, so a silent pass is not mistaken for a skipped one.
          std::cerr << "irgen: " << display_name(input) << ": OK: " << s.workload_count() << " workloads on "
                    << s.cores.size() << " cores: transfers matched, no L2 / WL0 overlaps, capacities, coverage of each layer"
                    << (r.count("fir") ? ", shapes and weights against the Frontend IR" : " (no --fir: shapes from the schedule)")
                    << "\n";
          return kExitOk;
        }
        if (r.count("fir")) throw_usage_error("--fir goes with --check; give the Frontend IR as the first argument");
        std::string mapping_path = cli::required(r, "mapping", "the mapping");
        irgen::Options opt;
        if (r.count("weights")) {
          std::string w = r["weights"].as<std::string>();
          if (w == "auto") opt.weight_path = irgen::WeightPath::Auto;
          else if (w == "wl0") opt.weight_path = irgen::WeightPath::Wl0;
          else if (w == "l2") opt.weight_path = irgen::WeightPath::L2;
          else throw_usage_error("--weights is auto, wl0 or l2, not '" + w + "'");
        }
        if (r.count("stream-tolerance")) opt.stream_tolerance = r["stream-tolerance"].as<double>();
        fir::Graph g = fir::read_fir(input, fo);
        mapping::Mapping m = mapping::read_mapping(mapping_path, validate);
        opt.fir_file = display_name(input);
        opt.mapping_file = display_name(mapping_path);
        opt.prefetch = !r.count("no-prefetch");
        opt.early_receives = !r.count("no-early-receives");
        opt.store_overlap = !r.count("no-store-overlap");
        opt.load_overlap = !r.count("no-load-overlap");
        opt.split_for_wl0 = !r.count("no-wl0-split");
        int64_t estimate = 0;
        sir::Schedule s = irgen::generate(g, m, arch, opt, &estimate);
        sir::write_sir(cli::output_path(r), s, validate);
        if (r.count("stats")) {
          irgen::Summary sm = irgen::summarize(s);
          std::cerr << "workloads " << sm.workloads << ", tiles " << sm.tiles << ", predicted cycles (sum) "
                    << sm.predicted_cycles << ", weights " << sm.weight_bytes << " bytes, weights DRAM->WL0 in "
                    << sm.wl0_direct_layers << " workloads, streamed from L2 in " << sm.l2_stream_layers
                    << ", estimated end " << estimate << " cycles\n";
        }
        return kExitOk;
      });
}
