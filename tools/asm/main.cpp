// asm: Scheduler IR + Frontend IR -> ISA program; asm --check verifies a program.
#include <iostream>
#include <optional>
#include <set>

#include "arch/arch.hpp"
#include "asm/asm.hpp"
#include "asm/dram_layout.hpp"
#include "fir/fir.hpp"
#include "isa/program_io.hpp"
#include "sir/sir.hpp"
#include "support/cli.hpp"
#include "support/error.hpp"
#include "support/io.hpp"

int main(int argc, char** argv) {
  using namespace cct;
  cli::ToolInfo info{
      "asm", "assemble a Scheduler IR into the accelerator's instruction stream",
      "SCHEDULER_IR --fir FRONTEND_IR --arch NAME|FILE  |  --check PROGRAM --arch NAME|FILE",
      "SCHEDULER_IR and FRONTEND_IR are JSON files ('-' = stdin, .zst accepted) of the same\n"
      "network and batch. The program is written as JSON Lines (--legacy: the original\n"
      "tool chain's syntax); a Scheduler IR with several cores gives one stream per core\n"
      "(mapping key \"core\") with so_mov/si_mov for core-to-core transfers. A workload's\n"
      "tiles go out in the order the Scheduler IR lists their keys (--tile-order to force).\n"
      "--check PROGRAM verifies a program without running it: what every instruction\n"
      "reads and writes lies inside L2/WL0, tiles fit their configuration and each\n"
      "pe_conv reads weight records of its own shape loaded before it (the functional\n"
      "model's rules; the first violation is reported as file:line, exit code 3), then\n"
      "token balance and deadlocks per core (problems listed as file:line, exit code 1).\n"
      "With --sir and --fir (the schedule and graph it was assembled from), DRAM\n"
      "accesses must also lie inside the DRAM layout the functional run builds.\n"
      "Rules and evidence: formats/ISA_Format.md, docs in lib/asm."};
  return cli::run_tool(
      argc, argv, info, {"input"},
      [](cxxopts::Options& o) {
        o.add_options()("input", "the Scheduler IR (or, with --check, the program)", cxxopts::value<std::string>());
        o.add_options()("fir", "the Frontend IR of the same network", cxxopts::value<std::string>(), "FILE");
        cli::add_arch_option(o);
        cli::add_output_option(o, "program");
        cli::add_validate_option(o);
        o.add_options()("legacy", "write the program in the legacy syntax");
        o.add_options()("check", "verify the program given as input instead of assembling");
        o.add_options()("sir", "--check: the Scheduler IR the program was assembled from (with --fir: DRAM bounds)",
                        cxxopts::value<std::string>(), "FILE");
        o.add_options()("dialect", "force the tool-chain generation: wl0 or wl1 (default: from the Scheduler IR)",
                        cxxopts::value<std::string>(), "NAME");
        o.add_options()("multicast",
                        "merge the DRAM loads several cores make of the same bytes into multicast loads, "
                        "left out if they would deadlock (the default on architectures with noc.multicast; "
                        "an error on others)");
        o.add_options()("no-multicast", "unicast loads only, also where the architecture multicasts");
        o.add_options()("tile-order",
                        "order of a workload's tiles: numeric or key (tile_num_10 before tile_num_2) "
                        "(default: the order the Scheduler IR lists them in)",
                        cxxopts::value<std::string>(), "ORDER");
      },
      [](const cxxopts::ParseResult& r) {
        std::string input = cli::required(r, "input", "the input file");
        std::string arch_name = cli::required(r, "arch", "--arch NAME|FILE");
        bool validate = cli::validate_enabled(r);
        arch::Architecture arch = arch::load_architecture(arch_name, validate);
        if (r.count("check")) {
          if (r.count("fir") != r.count("sir")) throw_usage_error("--check takes --sir and --fir together (for DRAM bounds), or neither");
          isa::Program prog = isa::read_program(input, validate);
          std::optional<assembler::DramLayout> dram;
          if (r.count("sir")) {
            const std::string sir_path = r["sir"].as<std::string>(), fir_path = r["fir"].as<std::string>();
            sir::ReadOptions so;
            so.validate_schema = validate;
            fir::ReadOptions fo;
            fo.validate_schema = validate;
            assembler::Options ao;
            ao.sir_file = display_name(sir_path);
            ao.fir_file = display_name(fir_path);
            dram = assembler::layout_dram(sir::read_sir(sir_path, so), fir::read_fir(fir_path, fo), ao);
          }
          isa::CheckReport rep = assembler::check(prog, arch, display_name(input), 50, dram ? &*dram : nullptr);
          std::cerr << rep.text(display_name(input));
          if (!rep.ok()) return kExitCheckFailed;
          // Success says what was checked, so a silent pass is not mistaken for a skipped one.
          std::set<int32_t> cores;
          for (const auto& inst : prog.instructions) cores.insert(inst.mapping.core);
          std::cerr << "asm: " << display_name(input) << ": OK: " << prog.size() << " instructions on " << cores.size()
                    << " cores: footprints inside L2 / WL0, tiles fit their configuration, weights read as loaded, "
                       "tokens balance, no deadlock"
                    << (dram ? "; DRAM accesses inside the schedule's layout\n" : " (DRAM extents unchecked: give --sir and --fir)\n");
          return kExitOk;
        }
        std::string fir_path = cli::required(r, "fir", "--fir FRONTEND_IR");
        sir::ReadOptions so;
        so.validate_schema = validate;
        fir::ReadOptions fo;
        fo.validate_schema = validate;
        const std::string text = read_input(input);
        sir::Schedule sched = sir::parse_sir(text, display_name(input), so);
        fir::Graph graph = fir::read_fir(fir_path, fo);
        assembler::Options opt;
        opt.sir_file = display_name(input);
        opt.fir_file = display_name(fir_path);
        if (r.count("dialect")) {
          std::string d = r["dialect"].as<std::string>();
          if (d == "wl0") opt.dialect = assembler::Dialect::Wl0;
          else if (d == "wl1") opt.dialect = assembler::Dialect::Wl1;
          else throw_usage_error("--dialect is wl0 or wl1, not '" + d + "'");
        }
        opt.tile_order = assembler::detect_tile_order(text);
        if (r.count("tile-order")) {
          std::string t = r["tile-order"].as<std::string>();
          if (t == "numeric") opt.tile_order = assembler::TileOrder::Numeric;
          else if (t == "key") opt.tile_order = assembler::TileOrder::KeyString;
          else throw_usage_error("--tile-order is numeric or key, not '" + t + "'");
        }
        if (r.count("multicast") && r.count("no-multicast")) throw_usage_error("--multicast and --no-multicast exclude each other");
        if (r.count("multicast") && !arch.noc.multicast)
          throw_usage_error("--multicast: architecture \"" + arch.name + "\" has no multicast (noc.multicast is false)");
        opt.multicast = !r.count("no-multicast");
        assembler::MulticastMerge mm;
        opt.multicast_result = &mm;
        isa::Program prog = assembler::assemble(sched, graph, arch, opt);
        if (!mm.refused.empty())
          cli::warn("no multicast loads: the merged program would deadlock (" + mm.refused + ")");
        else if (mm.groups > 0 || r.count("multicast"))
          std::cerr << "asm: " << mm.groups << " multicast loads replace " << mm.members << " loads\n";
        isa::write_program(cli::output_path(r), prog, r.count("legacy") ? isa::Syntax::Legacy : isa::Syntax::JsonLines,
                           validate);
        return kExitOk;
      });
}
