// traceview: where the cycles and the energy of a trace go.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "arch/arch.hpp"
#include "fir/fir.hpp"
#include "support/cli.hpp"
#include "support/io.hpp"
#include "trace/trace.hpp"
#include "traceview/analysis.hpp"
#include "traceview/compare.hpp"
#include "traceview/views.hpp"

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
      "timing model (lib/timing) on --arch; energy only from the trace, split by component with the model.\n"
      "\n"
      "--html writes one self-contained page (no network): a zoomable Gantt chart, one lane per core and queue\n"
      "plus the critical path, hover for an instruction's parameters, the layer table beside it. --chrome\n"
      "writes Chrome Trace Event JSON (Perfetto, chrome://tracing): one complete event per instruction,\n"
      "pid = core, tid = queue. --svg writes a static Gantt chart.\n"
      "\n"
      "--compare OTHER: TRACE is 'ours', OTHER the reference (same program). Prints the totals and their\n"
      "difference, duration errors per instruction class and per layer, the --top N instructions that differ\n"
      "most and the first divergence; the last lines are the figures of isa_compare.py trace TRACE OTHER\n"
      "(total error, MAPE/MdAPE/P90 over non-configuration, non-control instructions). Exit 1 when the two\n"
      "are not the same program.\n"};
  return cli::run_tool(
      argc, argv, info, {"trace"},
      [](cxxopts::Options& o) {
        o.add_options()("trace", "the trace", cxxopts::value<std::string>());
        o.add_options()("arch", "architecture: a preset name or a JSON file (zebu-1core is the chip of the ZeBu "
                                "reference traces)",
                        cxxopts::value<std::string>()->default_value("zebu-1core"), "NAME|FILE");
        o.add_options()("fir", "the Frontend IR of the program: layer names and MACs per layer",
                        cxxopts::value<std::string>(), "FIR");
        o.add_options()("summary", "print the summary (the default when no other output is asked for)");
        cli::add_output_option(o, "summary or comparison");
        o.add_options()("path-runs", "critical-path runs listed in the summary (0 = all)",
                        cxxopts::value<size_t>()->default_value("40"), "N");
        o.add_options()("html", "write the interactive HTML view to FILE", cxxopts::value<std::string>(), "FILE");
        o.add_options()("html-param-limit", "embed instruction parameters in the HTML up to N instructions",
                        cxxopts::value<size_t>()->default_value("2000000"), "N");
        o.add_options()("chrome", "write Chrome Trace Event JSON to FILE", cxxopts::value<std::string>(), "FILE");
        o.add_options()("svg", "write a static SVG Gantt chart to FILE", cxxopts::value<std::string>(), "FILE");
        o.add_options()("svg-width", "width of the SVG in pixels", cxxopts::value<int>()->default_value("1600"), "PX");
        o.add_options()("compare", "compare TRACE (ours) with OTHER (the reference)", cxxopts::value<std::string>(), "OTHER");
        o.add_options()("top", "--compare: instructions listed that differ most", cxxopts::value<size_t>()->default_value("10"), "N");
        cli::add_validate_option(o);
      },
      [](const cxxopts::ParseResult& r) {
        std::string trace_path = cli::required(r, "trace", "TRACE");
        bool validate = cli::validate_enabled(r);
        arch::Architecture arch = arch::load_architecture(r["arch"].as<std::string>(), validate);
        trace::Trace t = trace::read_trace(trace_path, validate);
        // A trace does not name its architecture: catch the common slip of
        // summarising a whole-chip trace against the single-core default.
        int32_t top_core = 0;
        for (const auto& in : t.program.instructions) top_core = std::max(top_core, in.mapping.core);
        if (top_core >= arch.core_count())
          throw Error(kExitInvalidInput, display_name(trace_path) + ": the trace runs on core " + std::to_string(top_core) +
                                             " but architecture " + arch.name + " has " +
                                             std::to_string(arch.core_count()) + " core(s): give --arch");
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
        std::string name = display_name(trace_path);

        if (r.count("compare")) {
          for (const char* other : {"html", "chrome", "svg", "summary"})
            if (r.count(other)) throw_usage_error(std::string("--compare cannot be combined with --") + other);
          std::string ref_path = r["compare"].as<std::string>();
          trace::Trace ref = trace::read_trace(ref_path, validate);
          traceview::Options ref_opt = opt;
          ref_opt.file = display_name(ref_path);
          traceview::Analysis ra = traceview::analyze(ref, ref_opt);
          traceview::Comparison c = traceview::compare_traces(t, ref, a, ra, r["top"].as<size_t>());
          write_output(cli::output_path(r), traceview::format_comparison(c, t, ref, ra, name, display_name(ref_path)));
          return c.comparable ? kExitOk : kExitCheckFailed;
        }

        // Every output is built before any is written, so a failure leaves none half done.
        std::vector<std::pair<std::string, std::string>> outputs;
        if (r.count("html")) {
          traceview::HtmlOptions ho;
          ho.title = "traceview: " + name;
          ho.param_limit = r["html-param-limit"].as<size_t>();
          outputs.emplace_back(r["html"].as<std::string>(), traceview::format_html(t, a, ho));
        }
        if (r.count("chrome")) {
          std::string path = r["chrome"].as<std::string>();
          outputs.emplace_back(path, traceview::format_chrome_trace(t, a, validate, name, display_name(path)));
        }
        if (r.count("svg")) {
          traceview::SvgOptions so;
          so.title = "traceview: " + name;
          so.width = r["svg-width"].as<int>();
          if (so.width < 200 || so.width > 100000) throw_usage_error("--svg-width must be between 200 and 100000 pixels");
          outputs.emplace_back(r["svg"].as<std::string>(), traceview::format_svg(t, a, so));
        }
        if (r.count("summary") || outputs.empty() || r.count("output"))
          outputs.emplace_back(cli::output_path(r), traceview::format_summary(a, name, r["path-runs"].as<size_t>()));
        OutputSet out;  // all written, or none
        for (auto& [path, text] : outputs) out.add(path, std::move(text));
        out.commit();
        return kExitOk;
      });
}
