// traceview: where the cycles and the energy of a trace go.
#include "arch/arch.hpp"
#include "fir/fir.hpp"
#include "support/cli.hpp"
#include "support/io.hpp"
#include "trace/trace.hpp"
#include "traceview/analysis.hpp"

int main(int argc, char** argv) {
  using namespace cct;
  cli::ToolInfo info{
      "traceview", "summarise and draw an accelerator trace, or compare two traces of one program",
      "TRACE [--arch ARCH] [--fir FIR] [--summary] [--html OUT.html] [--chrome OUT.json] [--svg OUT.svg]\n"
      "       traceview TRACE --compare OTHER_TRACE [--top N]",
      "TRACE is a trace in either syntax ('-' = stdin, .zst accepted): a ZeBu reference trace or zebusim's.\n"
      "\n"
      "Summary (default, or --summary; plain text to stdout or -o FILE): total cycles and time at the clock;\n"
      "instruction counts and cycles per class; busy fraction per core and queue (summed durations / total\n"
      "cycles); per layer (slyr; names and FIR MACs with --fir): cycles, share, span, MACs, MACs per cycle\n"
      "against the peak, PE efficiency, DRAM bytes, energy; the critical path; energy by queue and component.\n"
      "\n"
      "Per-layer cycles add up to the total. Rule: the critical path is rebuilt from the dependency tokens\n"
      "(for each instruction, the latest-ending of its queue predecessor, the producers of the Prev_Insts\n"
      "tokens it pops, FIFO per core and queue pair, and for a transfer whatever held its partner back) and\n"
      "walked back from the instruction that ends last; every instruction on it is charged the cycles from\n"
      "the end of the instruction it waited for to its own end (the first from cycle 0), and those cycles\n"
      "go to its layer. Waiting is thus charged to the layer that waited.\n"
      "\n"
      "MACs and DRAM bytes come from the trace when it carries ops/bytes (zebusim), otherwise from the\n"
      "timing model (lib/timing) on --arch; energy only from the trace, split by component with the model.\n"};
  return cli::run_tool(
      argc, argv, info, {"trace"},
      [](cxxopts::Options& o) {
        o.add_options()("trace", "the trace", cxxopts::value<std::string>());
        o.add_options()("arch", "architecture: a preset name or a JSON file (default zebu-1core, the chip of the "
                                "ZeBu reference traces)",
                        cxxopts::value<std::string>()->default_value("zebu-1core"), "NAME|FILE");
        o.add_options()("fir", "the Frontend IR of the program: layer names and MACs per layer",
                        cxxopts::value<std::string>(), "FIR");
        o.add_options()("summary", "print the summary (the default when no other output is asked for)");
        cli::add_output_option(o, "summary or comparison");
        o.add_options()("path-runs", "critical-path runs listed in the summary (0 = all)",
                        cxxopts::value<size_t>()->default_value("40"), "N");
        cli::add_validate_option(o);
      },
      [](const cxxopts::ParseResult& r) {
        std::string trace_path = cli::required(r, "trace", "TRACE");
        bool validate = cli::validate_enabled(r);
        arch::Architecture arch = arch::load_architecture(r["arch"].as<std::string>(), validate);
        trace::Trace t = trace::read_trace(trace_path, validate);
        std::optional<fir::Graph> graph;
        if (r.count("fir")) {
          fir::ReadOptions ro;
          ro.validate_schema = validate;
          graph = fir::read_fir(r["fir"].as<std::string>(), ro);
        }
        traceview::Options opt;
        opt.arch = &arch;
        opt.fir = graph ? &*graph : nullptr;
        opt.file = display_name(trace_path);
        traceview::Analysis a = traceview::analyze(t, opt);
        write_output(cli::output_path(r), traceview::format_summary(a, display_name(trace_path), r["path-runs"].as<size_t>()));
        return kExitOk;
      });
}
