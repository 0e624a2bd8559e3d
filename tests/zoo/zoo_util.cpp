#include "zoo_util.hpp"

#include <algorithm>
#include <chrono>
#include <sstream>

#include "../testing/testing.hpp"
#include "asm/asm.hpp"
#include "fir/host_graph.hpp"
#include "irgen/irgen.hpp"
#include "isa/program_io.hpp"
#include "mapping/mapping.hpp"
#include "sim/sim.hpp"
#include "support/error.hpp"

using namespace cct;

namespace zoo {

namespace {

int64_t product(const std::vector<int64_t>& s, size_t from = 0) {
  int64_t p = 1;
  for (size_t k = from; k < s.size(); ++k) p *= s[k];
  return p;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

}  // namespace

int64_t real_macs(const fir::Graph& g) {
  int64_t total = 0;
  for (const auto& l : g.layers()) {
    if (l.device != fir::Device::Npu || l.output_shape.empty() || l.input_shape.empty()) continue;
    const auto& out = l.output_shape[0];
    const auto& x = l.input_shape[0];
    if (l.op == fir::Op::Conv2d) {
      auto k = l.kernel_size ? *l.kernel_size : std::array<int64_t, 2>{l.input_shape.at(1).at(2), l.input_shape.at(1).at(3)};
      int64_t groups = l.groups.value_or(1);
      total += product(out) * (x.at(1) / groups) * k[0] * k[1];
    } else if (l.op == fir::Op::Dense) {
      total += product(out) * (x.size() == 4 ? product(x, 1) : x.back());
    } else if (l.op == fir::Op::MatMul) {
      total += product(out) * x.back();
    }
  }
  return total;
}

int64_t npu_layers(const fir::Graph& g) {
  return std::count_if(g.layers().begin(), g.layers().end(), [](const fir::Layer& l) { return l.device == fir::Device::Npu; });
}

int64_t npu_move_layers(const fir::Graph& g) {
  return std::count_if(g.layers().begin(), g.layers().end(),
                       [](const fir::Layer& l) { return l.device == fir::Device::Npu && fir::is_move_op(l.op); });
}

Build build(const func_test::Compiled& c, const std::string& arch_name, const std::string& dir) {
  Build b;
  Case& k = b.k;
  std::string stage = "gemini";
  try {
    b.arch = arch::load_architecture(arch_name);
    std::string map_path = dir + "/model.map.json";
    auto r = testing::run_tool("gemini", quoted(c.fir_path) + " --arch " + arch_name + " --report --no-progress -o " +
                                             quoted(map_path));
    if (r.exit_code != 0) {
      k.stage = stage;
      k.error = first_line(r.err);
      return b;
    }
    std::istringstream rep(r.err);
    for (std::string line; std::getline(rep, line);)
      if (line.rfind("predicted latency", 0) == 0) k.gemini_cycles = std::stoll(line.substr(std::string("predicted latency").size()));
    mapping::Mapping m = mapping::read_mapping(map_path);

    stage = "irgen";
    irgen::Options io;
    io.fir_file = c.fir_path;
    io.mapping_file = "model.map.json";
    b.sir = irgen::generate(c.graph, m, b.arch, io);
    sir::write_sir(dir + "/model.sir.json", b.sir);

    stage = "asm";
    assembler::Options ao;
    ao.sir_file = "model.sir.json";
    ao.fir_file = c.fir_path;
    b.program = assembler::assemble(b.sir, c.graph, b.arch, ao);
    isa::write_program(dir + "/model.asm", b.program, isa::Syntax::JsonLines);

    stage = "zebusim";
    sim::Options so;
    so.file = "model.asm";
    sim::Result timed = sim::simulate(b.program, b.arch, so);
    k.cycles = timed.stats.total_cycles;
    k.sim_macs = timed.stats.macs;
    b.timing = std::move(timed.timing);
  } catch (const Error& e) {
    k.stage = stage;
    k.error = first_line(e.what());
  } catch (const std::exception& e) {
    k.stage = stage;
    k.error = std::string("unexpected exception: ") + first_line(e.what());
  }
  return b;
}

Case run(const Build& b, const func_test::Compiled& c, const NpyArray& input, const std::string& golden_dir) {
  Case k = b.k;
  if (!k.ok()) return k;
  try {
    func::Options fo;
    fo.program_file = "model.asm";
    fo.sir_file = "model.sir.json";
    fo.fir_file = c.fir_path;
    fo.golden_dir = golden_dir;
    auto t0 = std::chrono::steady_clock::now();
    func::Result fr = func::run(b.program, b.timing, b.arch, c.graph, b.sir, func::directory_npy_loader(c.dir), {input}, fo);
    k.functional_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    k.func_macs = fr.macs;
    k.layers_checked = fr.layers_checked;
    k.outputs = std::move(fr.outputs);
    k.host_graph_outputs = std::move(fr.host_graph_outputs);
    k.host_graph_checked = fr.host_graph_outputs_checked;
    if (!fr.host_layers.empty()) {
      k.note = "host layers";
      for (const auto& n : fr.host_layers) k.note += " " + n;
    }
    if (const fir::HostGraph* hg = c.graph.host_graph())
      k.note += std::string(k.note.empty() ? "" : "; ") + "host graph (" + std::to_string(hg->nodes.size()) + " nodes), " +
                std::to_string(k.host_graph_checked) + " of " + std::to_string(hg->outputs.size()) + " outputs golden";
  } catch (const Error& e) {
    k.stage = "functional";
    k.error = first_line(e.what());
  } catch (const std::exception& e) {
    k.stage = "functional";
    k.error = std::string("unexpected exception: ") + first_line(e.what());
  }
  return k;
}

std::pair<int64_t, int64_t> top1(const interp::QTensor& t) {
  auto value = [&](int64_t k) { return t.is_int8() ? double(t.q[size_t(k)]) : double(t.f[size_t(k)]); };
  int64_t best = 0, ties = 0;
  for (int64_t k = 0; k < t.numel(); ++k) {
    if (value(k) > value(best)) best = k, ties = 1;
    else if (value(k) == value(best)) ++ties;
  }
  return {best, ties};
}

std::string first_line(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line.find(": warning: ") == std::string::npos) return line;
  return text.empty() ? "(no message)" : text;
}

}  // namespace zoo
