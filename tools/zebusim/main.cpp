// zebusim: executes an ISA program on an architecture and writes its trace.
#include <iostream>

#include "arch/arch.hpp"
#include "isa/program_io.hpp"
#include "sim/sim.hpp"
#include "support/cli.hpp"
#include "support/io.hpp"
#include "support/json.hpp"
#include "support/schema.hpp"
#include "trace/trace.hpp"

int main(int argc, char** argv) {
  using namespace cct;
  cli::ToolInfo info{"zebusim", "emulate the chiplet accelerator: time every instruction of an ISA program",
                     "PROGRAM --arch NAME|FILE",
                     "PROGRAM is an ISA program (legacy or JSON Lines, '-' = stdin, .zst accepted).\n"
                     "The trace has one line per instruction in program order with its start and end\n"
                     "cycle; JSON Lines traces also carry issue, energy, bytes and ops (--legacy writes\n"
                     "the ZeBu syntax with times only). Models: formats/Architecture_Format.md (timing)."};
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
      },
      [](const cxxopts::ParseResult& r) {
        std::string program_path = cli::required(r, "program", "PROGRAM");
        std::string arch_name = cli::required(r, "arch", "--arch NAME|FILE");
        bool validate = cli::validate_enabled(r);
        bool legacy = r.count("legacy") > 0;
        arch::Architecture arch = arch::load_architecture(arch_name, validate);
        trace::Trace t;
        t.program = isa::read_program(program_path, validate);
        sim::Options opt;
        opt.file = display_name(program_path);
        opt.extras = !legacy;
        sim::Result res = sim::simulate(t.program, arch, opt);
        t.timing = std::move(res.timing);
        if (r.count("stats-json")) {
          std::string text = format_json(sim::stats_to_json(res.stats, arch)) + "\n";
          std::string path = r["stats-json"].as<std::string>();
          if (validate) validate_output_text(text, "zebusim_stats", display_name(path));
          write_output(path, text);
        }
        trace::write_trace(cli::output_path(r), t, legacy ? isa::Syntax::Legacy : isa::Syntax::JsonLines, validate);
        if (r.count("stats")) std::cerr << sim::format_stats(res.stats, arch);
        return kExitOk;
      });
}
