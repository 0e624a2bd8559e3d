#include "arch/arch.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace cct::arch {

std::string number_text(double v) {
  char buf[40];
  if (v == std::floor(v) && std::fabs(v) < 9e15) {
    // Whole numbers in full ("65536", "1099511627776"), but powers of ten
    // from 1e9 on as the docs write them ("1e9").
    int64_t i = int64_t(v), p = 0;
    while (i != 0 && i % 10 == 0) i /= 10, ++p;
    if (i == 1 && p >= 9) return "1e" + std::to_string(p);
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    return buf;
  }
  for (int prec = 1; prec <= 17; ++prec) {  // shortest text that reads back the same
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string range_text(Range r) {
  return std::string(r.lo_open ? "in (" : "in [") + number_text(r.lo) + ", " + number_text(r.hi) + "]";
}

bool in_range(double v, Range r) {
  if (!std::isfinite(v)) return false;
  return (r.lo_open ? v > r.lo : v >= r.lo) && v <= r.hi;
}

// The key tables. Order = order in the files we write and in the docs.
namespace {

const Constant<CoreSpec> kCore[] = {
    {"pe_rows", &CoreSpec::pe_rows, kPeSide, "PEs"},
    {"pe_cols", &CoreSpec::pe_cols, kPeSide, "PEs"},
    {"vp_bytes_per_cycle", &CoreSpec::vp_bytes_per_cycle, kIntRate, "bytes/cycle"},
    {"l2_bytes", &CoreSpec::l2_bytes, kSize, "bytes"},
    {"wl0_rows", &CoreSpec::wl0_rows, kRows, "rows"},
    {"wl0_row_bytes", &CoreSpec::wl0_row_bytes, kSize, "bytes"},
    {"al1_bytes", &CoreSpec::al1_bytes, kSize, "bytes"},
    {"ol1_bytes", &CoreSpec::ol1_bytes, kSize, "bytes"},
    {"l2_channel_align_bytes", &CoreSpec::l2_channel_align_bytes, kAlign, "bytes"},
    {"weight_extra_bytes_per_out_channel", &CoreSpec::weight_extra_bytes_per_out_channel, kPerChannel, "bytes"},
};

const Constant<NocSpec> kNoc[] = {
    {"link_bytes_per_cycle", &NocSpec::link_bytes_per_cycle, kRate, "bytes/cycle"},
    {"hop_latency_cycles", &NocSpec::hop_latency_cycles, kCycles, "cycles"},
    {"multicast", &NocSpec::multicast, kFlag, "flag"},
};

const Constant<D2dSpec> kD2d[] = {
    {"link_bytes_per_cycle", &D2dSpec::link_bytes_per_cycle, kRate, "bytes/cycle"},
    {"latency_cycles", &D2dSpec::latency_cycles, kCycles, "cycles"},
};

const Constant<DramSpec> kDram[] = {
    {"channel_gib_per_s", &DramSpec::channel_gib_per_s, kGiBps, "GiB/s"},
    {"latency_cycles", &DramSpec::latency_cycles, kCycles, "cycles"},
};

const Constant<EnergySpec> kEnergy[] = {
    {"mac_pj", &EnergySpec::mac_pj, kEnergyPj, "pJ"},
    {"vp_op_pj", &EnergySpec::vp_op_pj, kEnergyPj, "pJ"},
    {"l1_pj_per_byte", &EnergySpec::l1_pj_per_byte, kEnergyPj, "pJ/byte"},
    {"l2_pj_per_byte", &EnergySpec::l2_pj_per_byte, kEnergyPj, "pJ/byte"},
    {"dram_pj_per_bit", &EnergySpec::dram_pj_per_bit, kEnergyPj, "pJ/bit"},
    {"noc_pj_per_bit_hop", &EnergySpec::noc_pj_per_bit_hop, kEnergyPj, "pJ/bit/hop"},
    {"d2d_pj_per_bit", &EnergySpec::d2d_pj_per_bit, kEnergyPj, "pJ/bit"},
    {"core_static_mw", &EnergySpec::core_static_mw, kPowerMw, "mW"},
    {"io_die_static_mw", &EnergySpec::io_die_static_mw, kPowerMw, "mW"},
};

const Constant<TimingSpec> kTiming[] = {
    {"config_cycles", &TimingSpec::config_cycles, kCycles, "cycles"},
    {"control_cycles", &TimingSpec::control_cycles, kCycles, "cycles"},
    {"ld_fixed_cycles", &TimingSpec::ld_fixed_cycles, kCycles, "cycles"},
    {"st_fixed_cycles", &TimingSpec::st_fixed_cycles, kCycles, "cycles"},
    {"lw_bytes_per_cycle", &TimingSpec::lw_bytes_per_cycle, kRate, "bytes/cycle"},
    {"lw_fixed_cycles", &TimingSpec::lw_fixed_cycles, kCycles, "cycles"},
    {"pe_fixed_cycles", &TimingSpec::pe_fixed_cycles, kCycles, "cycles"},
    {"pe_efficiency", &TimingSpec::pe_efficiency, kFraction, "fraction of peak"},
    {"vp_fixed_cycles", &TimingSpec::vp_fixed_cycles, kCycles, "cycles"},
    {"dt_fixed_cycles", &TimingSpec::dt_fixed_cycles, kCycles, "cycles"},
    {"pe_act_bytes_per_cycle", &TimingSpec::pe_act_bytes_per_cycle, kRate, "bytes/cycle"},
    {"pe_wl0_bytes_per_cycle", &TimingSpec::pe_wl0_bytes_per_cycle, kRate, "bytes/cycle"},
    {"pe_weight_cache_bytes", &TimingSpec::pe_weight_cache_bytes, kBytes, "bytes"},
    {"pe_weight_reload_bytes_per_cycle", &TimingSpec::pe_weight_reload_bytes_per_cycle, kRate, "bytes/cycle"},
    {"pe_output_cycles_int8", &TimingSpec::pe_output_cycles_int8, kCycles, "cycles"},
    {"pe_output_cycles_fp16", &TimingSpec::pe_output_cycles_fp16, kCycles, "cycles"},
    {"pe_setup_cycles", &TimingSpec::pe_setup_cycles, kCycles, "cycles"},
    {"pe_setup_cycles_per_act_line", &TimingSpec::pe_setup_cycles_per_act_line, kCycles, "cycles"},
    {"pe_channel_split_cycles", &TimingSpec::pe_channel_split_cycles, kCycles, "cycles"},
    {"pe_bank_conflict_efficiency", &TimingSpec::pe_bank_conflict_efficiency, kFraction, "fraction of peak"},
    {"pe_bank_conflict_pitch_bytes", &TimingSpec::pe_bank_conflict_pitch_bytes, kBytes, "bytes"},
    {"pe_l2_weight_overlap_loss", &TimingSpec::pe_l2_weight_overlap_loss, kShare, "fraction of the overlap"},
    {"vp_pipeline_cycles", &TimingSpec::vp_pipeline_cycles, kCycles, "cycles"},
    {"vp_second_input_cycles", &TimingSpec::vp_second_input_cycles, kCycles, "cycles"},
    {"vp_fp16_output_cycles", &TimingSpec::vp_fp16_output_cycles, kCycles, "cycles"},
    {"vp_pool_cycles_per_window", &TimingSpec::vp_pool_cycles_per_window, kCycles, "cycles"},
    {"host_latency_cycles", &TimingSpec::host_latency_cycles, kCycles, "cycles"},
    {"host_ops_per_cycle", &TimingSpec::host_ops_per_cycle, kRate, "operations/cycle"},
    {"host_bytes_per_cycle", &TimingSpec::host_bytes_per_cycle, kRate, "bytes/cycle"},
};

}  // namespace

const ConstantTable<CoreSpec>& core_constants() {
  static const ConstantTable<CoreSpec> t(kCore);
  return t;
}
const ConstantTable<NocSpec>& noc_constants() {
  static const ConstantTable<NocSpec> t(kNoc);
  return t;
}
const ConstantTable<D2dSpec>& d2d_constants() {
  static const ConstantTable<D2dSpec> t(kD2d);
  return t;
}
const ConstantTable<DramSpec>& dram_constants() {
  static const ConstantTable<DramSpec> t(kDram);
  return t;
}
const ConstantTable<EnergySpec>& energy_constants() {
  static const ConstantTable<EnergySpec> t(kEnergy);
  return t;
}
const ConstantTable<TimingSpec>& timing_constants() {
  static const ConstantTable<TimingSpec> t(kTiming);
  return t;
}

}  // namespace cct::arch
