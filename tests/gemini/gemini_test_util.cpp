#include "gemini_test_util.hpp"

#include "mapping/mapping_fir.hpp"
#include "testing.hpp"

namespace gemini_test {

std::string reference_fir(const std::string& net, int batch) {
  return cct::testing::reference_dir() + "/gemini-ir/frontend/int8_" + net + ".sim_quantized_b" + std::to_string(batch) +
         ".json";
}

std::string tiny_fir() { return cct::testing::source_dir() + "/examples/mappings/tiny_cnn_b4.fir.json"; }
std::string tiny_mapping() { return cct::testing::source_dir() + "/examples/mappings/tiny_cnn_b4.chip-64tops.mapping.json"; }

std::unique_ptr<Setup> setup(const std::string& fir_path, const std::string& arch_name) {
  auto s = std::make_unique<Setup>();
  s->arch = cct::arch::load_architecture(arch_name);
  s->graph = cct::fir::read_fir(fir_path);
  s->net = cct::gemini::build_network(s->graph, s->arch, fir_path);
  s->net.name = "test";
  s->model = std::make_unique<cct::gemini::CostModel>(s->net, s->arch);
  return s;
}

std::string problems(const cct::mapping::Mapping& m, const Setup& s) {
  auto p = cct::mapping::check_structure(m, "m");
  auto q = cct::mapping::check_against_arch(m, s.arch, "m");
  p.insert(p.end(), q.begin(), q.end());
  q = cct::mapping::check_against_fir(m, s.graph, "m");
  p.insert(p.end(), q.begin(), q.end());
  std::string all;
  for (const auto& x : p) all += x + "\n";
  return all;
}

}  // namespace gemini_test
