// zebusim: executes an ISA program on an architecture and writes its trace;
// with --functional it also carries the program out on real data.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "arch/arch.hpp"
#include "fir/fir.hpp"
#include "fir/host_graph.hpp"
#include "interp/tensor.hpp"
#include "func/functional.hpp"
#include "isa/program_io.hpp"
#include "sim/sim.hpp"
#include "sir/sir.hpp"
#include "support/cli.hpp"
#include "support/error.hpp"
#include "support/io.hpp"
#include "support/json.hpp"
#include "support/npy.hpp"
#include "support/schema.hpp"
#include "trace/trace.hpp"

namespace {

using namespace cct;

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// A rate with an SI prefix and three significant digits ("1.72 M MAC/s"),
// not the stream's default "1.72129e+06".
std::string rate(double v, const char* unit) {
  static constexpr const char* kPrefix[] = {"", "k ", "M ", "G ", "T ", "P "};
  int k = 0;
  while (v >= 999.5 && k < 5) v /= 1000, ++k;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g %s%s", v, kPrefix[k], unit);
  return buf;
}

std::vector<std::string> strings(const cxxopts::ParseResult& r, const std::string& name) {
  return r.count(name) ? r[name].as<std::vector<std::string>>() : std::vector<std::string>{};
}

// --functional: reads the Frontend IR, its .npy files, the Scheduler IR and
// the inputs, runs the program on them and writes outputs and dumps.
void run_functional(const cxxopts::ParseResult& r, const isa::Program& program, const std::vector<trace::Timing>& timing,
                    const arch::Architecture& arch, const std::string& program_path, bool validate, OutputSet& out) {
  std::string fir_path = cli::required(r, "fir", "--fir FRONTEND_IR (needed by --functional)");
  std::string sir_path = cli::required(r, "sir", "--sir SCHEDULER_IR (needed by --functional)");
  std::vector<std::string> input_paths = strings(r, "input");
  if (input_paths.empty()) throw_usage_error("missing --input INPUT.npy (needed by --functional)");
  std::vector<std::string> dumps = strings(r, "dump-layer");
  std::string outputs = r.count("outputs") ? r["outputs"].as<std::string>() : "";
  if (!dumps.empty() && outputs.empty()) throw_usage_error("--dump-layer writes into --outputs DIR; give it");

  fir::ReadOptions fo;
  fo.validate_schema = validate;
  fir::Graph graph = fir::read_fir(fir_path, fo);
  sir::ReadOptions so;
  so.validate_schema = validate;
  sir::Schedule sched = sir::read_sir(sir_path, so);
  std::string data_dir = r.count("fir-data") ? r["fir-data"].as<std::string>()
                                             : std::filesystem::path(fir_path == "-" ? "." : fir_path).parent_path().string();
  if (data_dir.empty()) data_dir = ".";
  std::vector<NpyArray> inputs;
  std::vector<std::string> names;
  for (const auto& p : input_paths) {
    inputs.push_back(read_npy(p));
    names.push_back(display_name(p));
  }
  func::check_inputs(graph, inputs, names);

  func::Options opt;
  opt.program_file = display_name(program_path);
  opt.sir_file = display_name(sir_path);
  opt.fir_file = display_name(fir_path);
  opt.golden_dir = r.count("golden") ? r["golden"].as<std::string>() : "";
  opt.dump_layers = dumps;
  opt.check_races = r.count("no-race-check") == 0;
  auto t0 = std::chrono::steady_clock::now();
  func::Result res = func::run(program, timing, arch, graph, sched, func::directory_npy_loader(data_dir), inputs, opt);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (!outputs.empty()) {
    std::filesystem::create_directories(outputs);
    auto path = [&](const std::string& name) { return (std::filesystem::path(outputs) / (name + ".npy")).string(); };
    for (const auto& t : res.outputs) out.add(path(t.name), serialize_npy(t.tensor.to_npy()));
    for (const auto& t : res.dumps) out.add(path(t.name), serialize_npy(t.tensor.to_npy()));
    for (const auto& t : res.host_graph_outputs) out.add(path(t.name), serialize_npy(t.array));
  }
  if (r.count("stats") || !opt.golden_dir.empty()) {
    std::ostringstream s;
    s << "zebusim: functional: " << program.size() << " instructions, " << res.macs << " MACs in " << fixed(seconds, 2)
      << " s (" << rate(seconds > 0 ? double(res.macs) / seconds : 0.0, "MAC/s") << ")";
    if (!opt.golden_dir.empty()) {
      s << "; golden: " << res.layers_checked << " layers match";
      if (!res.host_layers.empty())
        s << ", and " << res.host_layers_checked << " host layer" << (res.host_layers_checked == 1 ? "" : "s");
      if (!res.host_graph_outputs.empty())
        s << ", and the host graph's " << res.host_graph_outputs_checked << " output"
          << (res.host_graph_outputs_checked == 1 ? "" : "s");
      s << " (" << res.elements_checked << " elements compared)";
    }
    std::cerr << s.str() << "\n";
  }
  // The graph outputs are the host's when host layers ran: say which.
  if (!res.host_layers.empty()) {
    std::ostringstream s;
    s << "zebusim: functional: " << res.host_layers.size() << " host (cpu) layer"
      << (res.host_layers.size() == 1 ? "" : "s") << " run by the reference interpreter on the accelerator's outputs:";
    for (const auto& name : res.host_layers) s << " " << name << " (" << graph.find(name)->operation << ")";
    std::cerr << s.str() << "\n";
  }
  if (const fir::HostGraph* hg = graph.host_graph()) {
    std::ostringstream s;
    s << "zebusim: functional: the host graph (" << hg->nodes.size()
      << " nodes, data-dependent shapes) run by the reference interpreter on the FIR's outputs; the model's outputs:";
    for (size_t k = 0; k < hg->outputs.size() && k < res.host_graph_outputs.size(); ++k)
      s << " " << res.host_graph_outputs[k].name << " ('" << hg->outputs[k].name << "', "
        << interp::shape_str(res.host_graph_outputs[k].array.shape) << ")";
    std::cerr << s.str() << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cct;
  cli::ToolInfo info{"zebusim", "emulate the chiplet accelerator: time every instruction of an ISA program",
                     "PROGRAM --arch NAME|FILE [--functional --fir FIR --sir SIR --input INPUT.npy]",
                     "PROGRAM is an ISA program (legacy or JSON Lines, '-' = stdin, .zst accepted).\n"
                     "The trace has one line per instruction in program order with its start and end\n"
                     "cycle; JSON Lines traces also carry issue, energy, bytes and ops (--legacy writes\n"
                     "the ZeBu syntax with times only). Models: formats/Architecture_Format.md (timing).\n"
                     "--functional also executes the program on data: the DRAM image is built from the\n"
                     "Frontend IR's weight .npy files (--fir-data, default: the FIR's directory) where the\n"
                     "assembler placed them for the Scheduler IR (--sir), plus the network inputs\n"
                     "(--input, once per graph input); every instruction reads its operands when it starts\n"
                     "and writes when it ends, in the timed order (the trace is the same). --outputs DIR\n"
                     "receives output1.npy, ..., the host graph's outputs (host_graph_output1.npy, ...) and the\n"
                     "--dump-layer tensors (<layer>.npy). --golden DIR\n"
                     "compares each compute instruction's operands and results with onnx2fir's golden\n"
                     "activations and stops at the first difference (exit 1). Layers on the host (device\n"
                     "cpu) between the accelerator's outputs and the graph outputs run on the reference\n"
                     "interpreter after the program, on the data it stored in DRAM (named on stderr); the FIR's\n"
                     "host graph (a post-processing of data-dependent shapes) in its host step, each output\n"
                     "compared with its golden exactly.\n"
                     "Semantics and layouts: formats/ISA_Format.md, section 9."};
  return cli::run_tool(
      argc, argv, info, {"program"},
      [](cxxopts::Options& o) {
        o.add_options()("program", "the ISA program", cxxopts::value<std::string>());
        cli::add_arch_option(o);
        cli::add_output_option(o, "trace");
        cli::add_validate_option(o);
        o.add_options()("legacy", "write the trace in the legacy (ZeBu) syntax");
        o.add_options()("stats", "print a summary (cycles, busy queues, layers, MAC use, bytes, energy) on stderr");
        o.add_options()("stats-json", "write the summary as JSON to FILE", cxxopts::value<std::string>(), "FILE");
        o.add_options("functional")("functional", "also execute the program on data (bit-accurate INT8)")(
            "fir", "the Frontend IR the program was compiled from", cxxopts::value<std::string>(), "FILE")(
            "sir", "the Scheduler IR the program was assembled from", cxxopts::value<std::string>(), "FILE")(
            "fir-data", "directory of the Frontend IR's .npy files (default: the FIR's directory)",
            cxxopts::value<std::string>(), "DIR")(
            "input", "a network input (.npy, [N, C, H, W]); once per graph input, in order",
            cxxopts::value<std::vector<std::string>>(), "FILE")(
            "golden", "compare with the golden activations in DIR; stop at the first difference",
            cxxopts::value<std::string>(), "DIR")(
            "dump-layer", "write this layer's output tensor to --outputs DIR (repeatable)",
            cxxopts::value<std::vector<std::string>>(), "NAME")(
            "outputs", "write the network outputs (output1.npy, ...) to DIR", cxxopts::value<std::string>(), "DIR")(
            "no-race-check", "do not stop at two unordered instructions touching the same bytes");
      },
      [](const cxxopts::ParseResult& r) {
        std::string program_path = cli::required(r, "program", "PROGRAM");
        std::string arch_name = cli::required(r, "arch", "--arch NAME|FILE");
        bool validate = cli::validate_enabled(r);
        bool legacy = r.count("legacy") > 0;
        bool functional = r.count("functional") > 0;
        if (!functional)
          for (const char* k : {"fir", "sir", "fir-data", "input", "golden", "dump-layer", "outputs", "no-race-check"})
            if (r.count(k)) throw_usage_error(std::string("--") + k + " needs --functional");
        arch::Architecture arch = arch::load_architecture(arch_name, validate);
        trace::Trace t;
        t.program = isa::read_program(program_path, validate);
        sim::Options opt;
        opt.file = display_name(program_path);
        opt.extras = !legacy;
        sim::Result res = sim::simulate(t.program, arch, opt);
        t.timing = std::move(res.timing);
        // Every output of the run is one unit: all written, or none.
        OutputSet out;
        if (functional) run_functional(r, t.program, t.timing, arch, program_path, validate, out);
        if (r.count("stats-json")) {
          std::string text = format_json(sim::stats_to_json(res.stats, arch)) + "\n";
          std::string path = r["stats-json"].as<std::string>();
          if (validate) validate_output_text(text, "zebusim_stats", display_name(path));
          out.add(path, std::move(text));
        }
        const std::string trace_path = cli::output_path(r);
        out.add(trace_path, trace::checked_trace_text(trace_path, t, legacy ? isa::Syntax::Legacy : isa::Syntax::JsonLines, validate));
        out.commit();
        if (r.count("stats")) std::cerr << sim::format_stats(res.stats, arch);
        return kExitOk;
      });
}
