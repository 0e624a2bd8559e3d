#include "func_test_util.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <tuple>

#include "../testing/testing.hpp"
#include "asm/asm.hpp"
#include "frontend/pipeline.hpp"
#include "irgen/irgen.hpp"
#include "isa/program_io.hpp"
#include "sim/sim.hpp"
#include "support/io.hpp"
#include "support/npy.hpp"

namespace fs = std::filesystem;
using namespace cct;

namespace func_test {

const arch::Architecture& arch_named(const std::string& name) {
  static std::map<std::string, arch::Architecture> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, arch::load_architecture(name)).first;
  return it->second;
}

namespace {
std::map<std::string, Compiled>& compiled_cache() {
  static std::map<std::string, Compiled> cache;
  return cache;
}
std::string compiled_key(const std::string& tag, int batch) { return tag + "_b" + std::to_string(batch); }
}  // namespace

const Compiled& compile_model(const std::string& model_path, int batch, const std::string& tag,
                              const std::vector<std::pair<std::string, std::string>>& constant_inputs,
                              const std::string& calib_dir, bool cut_postprocess) {
  auto& cache = compiled_cache();
  std::string key = compiled_key(tag, batch);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Compiled c;
  c.dir = testing::temp_dir("func_models/" + key);
  frontend::ImportOptions io;
  io.batch = batch;
  io.constant_inputs = constant_inputs;
  frontend::CompileOptions o;
  o.import = io;
  if (calib_dir.empty()) o.calib_random = 8;
  else o.calib_dir = calib_dir;
  o.golden = true;
  o.cut_postprocess = cut_postprocess;
  frontend::CompileResult r = frontend::compile(frontend::load_model(model_path, io), o);
  for (const auto& [name, a] : r.files) write_npy((fs::path(c.dir) / name).string(), a);
  for (const auto& [name, a] : r.golden) write_npy((fs::path(c.dir) / name).string(), a);
  c.fir_path = (fs::path(c.dir) / (tag + ".fir.json")).string();
  write_output(c.fir_path, r.fir_text);
  c.graph = fir::read_fir(c.fir_path);
  const fir::Layer* first = c.graph.in_index_order().front();
  c.input_path = (fs::path(c.dir) / *first->file("input_activation1")).string();
  c.input = read_npy(c.input_path);
  c.outputs = std::move(r.golden_outputs);
  return cache.emplace(key, std::move(c)).first->second;
}

void forget_model(const std::string& tag, int batch) {
  auto& cache = compiled_cache();
  auto it = cache.find(compiled_key(tag, batch));
  if (it == cache.end()) return;
  testing::discard_temp_dir(it->second.dir);
  cache.erase(it);
}

const Compiled& tiny(int batch) {
  return compile_model(testing::source_dir() + "/examples/tiny_resnet/tiny_resnet.onnx", batch, "tiny");
}

std::vector<trace::Timing> retime(const isa::Program& p, const arch::Architecture& a) {
  sim::Options o;
  o.extras = false;
  return sim::simulate(p, a, o).timing;
}

Built build(const Compiled& c, const mapping::Mapping& m, const arch::Architecture& a, const std::string& dir,
            bool multicast) {
  Built b;
  b.sir = irgen::generate(c.graph, m, a);
  assembler::Options ao;
  ao.multicast = multicast;
  b.program = assembler::assemble(b.sir, c.graph, a, ao);
  b.timing = retime(b.program, a);
  b.sir_path = (fs::path(dir) / "model.sir.json").string();
  b.program_path = (fs::path(dir) / "model.asm").string();
  sir::write_sir(b.sir_path, b.sir);
  isa::write_program(b.program_path, b.program, isa::Syntax::JsonLines);
  return b;
}

func::Result run(const Compiled& c, const Built& b, const isa::Program& program, const std::vector<trace::Timing>& timing,
                 const arch::Architecture& a, bool golden) {
  func::Options o;
  o.program_file = "model.asm";
  if (golden) o.golden_dir = c.dir;
  return func::run(program, timing, a, c.graph, b.sir, func::directory_npy_loader(c.dir), {c.input}, o);
}

std::vector<interp::QTensor> interpret(const Compiled& c) { return interpret(c, c.input); }

std::vector<interp::QTensor> interpret(const Compiled& c, const NpyArray& input) {
  interp::FirExecutor ex(c.graph, interp::directory_loader(c.dir));
  return ex.run({interp::Tensor::floats(input.shape, input.to_float())});
}

std::vector<interp::QTensor> write_goldens(const fir::Graph& g, const interp::FirExecutor::Loader& load,
                                           const NpyArray& input, const std::string& dir) {
  interp::FirExecutor ex(g, load);
  interp::Tensor x = interp::Tensor::floats(input.shape, input.to_float());
  return ex.run({x}, [&](const fir::Layer& l, const std::vector<const interp::QTensor*>&, const interp::QTensor& out) {
    if (const std::string* f = l.file("output_activation1")) write_npy((fs::path(dir) / *f).string(), out.to_npy());
  });
}

void check_bit_exact(const Compiled& c, const func::Result& r) {
  auto want = interpret(c);
  REQUIRE(r.outputs.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(same_bits(r.outputs[i].tensor, want[i]));
  int64_t npu_layers = 0;
  for (const auto& l : c.graph.layers()) npu_layers += l.device == fir::Device::Npu;
  CHECK(r.layers_checked == npu_layers);
}

bool same_bits(const interp::QTensor& a, const interp::QTensor& b) {
  if (a.dtype != b.dtype || a.shape != b.shape) return false;
  NpyArray x = a.to_npy(), y = b.to_npy();
  return x.bytes == y.bytes;
}

}  // namespace func_test
