// Shared helpers of the gemini tests.
#pragma once

#include <memory>
#include <string>

#include "arch/arch.hpp"
#include "fir/fir.hpp"
#include "gemini/cost.hpp"
#include "gemini/network.hpp"
#include "mapping/mapping.hpp"

namespace gemini_test {

// Reference FIR of a network ("resnet50", "resnet34") at a batch.
std::string reference_fir(const std::string& net, int batch);
// examples/mappings/tiny_cnn_b4.fir.json and its hand-written mapping.
std::string tiny_fir();
std::string tiny_mapping();

// A FIR with its network model and cost model on an architecture.
struct Setup {
  cct::arch::Architecture arch;
  cct::fir::Graph graph;
  cct::gemini::Network net;
  std::unique_ptr<cct::gemini::CostModel> model;
};
std::unique_ptr<Setup> setup(const std::string& fir_path, const std::string& arch_name);

// Every problem the mapping checks (structure, architecture, FIR) report.
std::string problems(const cct::mapping::Mapping& m, const Setup& s);

}  // namespace gemini_test
