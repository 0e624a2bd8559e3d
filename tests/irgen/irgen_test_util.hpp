// Shared helpers of the irgen tests: reference file paths and mappings built in code.
#pragma once

#include <string>

#include "fir/fir.hpp"
#include "mapping/mapping.hpp"
#include "mapping/mapping_fir.hpp"

namespace irgen_test {

// gemini-ir/frontend/int8_<net>.sim_quantized_b<batch>.json
std::string fir_path(const std::string& net, int batch);
// gemini-ir/scheduler/int8_<net>.sim_quantized_b<batch>_c1_bw16_stschedule.json
std::string sir_path(const std::string& net, int batch);
// The end cycle of the ZeBu trace of the reference program.
long reference_end_cycle(const std::string& net, int batch);

// Every accelerator layer on core 0, one layer per segment (what
// examples/mappings/single_core_mapping.py writes).
inline cct::mapping::Mapping single_core(const cct::fir::Graph& g, const std::string& arch) {
  return cct::mapping::single_core_mapping(g, arch);
}
// A layer pipeline: consecutive layers on cores 0..cores-1, segments of
// `cores` layers, `groups` batch groups per segment.
inline cct::mapping::Mapping pipeline(const cct::fir::Graph& g, const std::string& arch, int cores, int groups) {
  return cct::mapping::one_layer_per_core_mapping(g, arch, cores, groups);
}

}  // namespace irgen_test
