#include "arch/arch.hpp"

#include <cmath>

namespace cct::arch {

std::string_view range_text(Range r) {
  switch (r) {
    case Range::Positive: return "> 0";
    case Range::NonNegative: return ">= 0";
    case Range::Fraction: return "in (0, 1]";
  }
  return "?";
}

bool in_range(double v, Range r) {
  if (!std::isfinite(v)) return false;
  switch (r) {
    case Range::Positive: return v > 0;
    case Range::NonNegative: return v >= 0;
    case Range::Fraction: return v > 0 && v <= 1;
  }
  return false;
}

// The key tables. Order = order in the files we write and in the docs.
namespace {

const Constant<CoreSpec> kCore[] = {
    {"pe_rows", &CoreSpec::pe_rows, Range::Positive, "PEs"},
    {"pe_cols", &CoreSpec::pe_cols, Range::Positive, "PEs"},
    {"vp_bytes_per_cycle", &CoreSpec::vp_bytes_per_cycle, Range::Positive, "bytes/cycle"},
    {"l2_bytes", &CoreSpec::l2_bytes, Range::Positive, "bytes"},
    {"wl0_rows", &CoreSpec::wl0_rows, Range::Positive, "rows"},
    {"wl0_row_bytes", &CoreSpec::wl0_row_bytes, Range::Positive, "bytes"},
    {"al1_bytes", &CoreSpec::al1_bytes, Range::Positive, "bytes"},
    {"ol1_bytes", &CoreSpec::ol1_bytes, Range::Positive, "bytes"},
    {"l2_channel_align_bytes", &CoreSpec::l2_channel_align_bytes, Range::Positive, "bytes"},
    {"weight_extra_bytes_per_out_channel", &CoreSpec::weight_extra_bytes_per_out_channel, Range::NonNegative, "bytes"},
};

const Constant<NocSpec> kNoc[] = {
    {"link_bytes_per_cycle", &NocSpec::link_bytes_per_cycle, Range::Positive, "bytes/cycle"},
    {"hop_latency_cycles", &NocSpec::hop_latency_cycles, Range::NonNegative, "cycles"},
};

const Constant<D2dSpec> kD2d[] = {
    {"link_bytes_per_cycle", &D2dSpec::link_bytes_per_cycle, Range::Positive, "bytes/cycle"},
    {"latency_cycles", &D2dSpec::latency_cycles, Range::NonNegative, "cycles"},
};

const Constant<DramSpec> kDram[] = {
    {"channel_gib_per_s", &DramSpec::channel_gib_per_s, Range::Positive, "GiB/s"},
    {"latency_cycles", &DramSpec::latency_cycles, Range::NonNegative, "cycles"},
};

const Constant<EnergySpec> kEnergy[] = {
    {"mac_pj", &EnergySpec::mac_pj, Range::NonNegative, "pJ"},
    {"vp_op_pj", &EnergySpec::vp_op_pj, Range::NonNegative, "pJ"},
    {"l1_pj_per_byte", &EnergySpec::l1_pj_per_byte, Range::NonNegative, "pJ/byte"},
    {"l2_pj_per_byte", &EnergySpec::l2_pj_per_byte, Range::NonNegative, "pJ/byte"},
    {"dram_pj_per_bit", &EnergySpec::dram_pj_per_bit, Range::NonNegative, "pJ/bit"},
    {"noc_pj_per_bit_hop", &EnergySpec::noc_pj_per_bit_hop, Range::NonNegative, "pJ/bit/hop"},
    {"d2d_pj_per_bit", &EnergySpec::d2d_pj_per_bit, Range::NonNegative, "pJ/bit"},
    {"core_static_mw", &EnergySpec::core_static_mw, Range::NonNegative, "mW"},
    {"io_die_static_mw", &EnergySpec::io_die_static_mw, Range::NonNegative, "mW"},
};

const Constant<TimingSpec> kTiming[] = {
    {"config_cycles", &TimingSpec::config_cycles, Range::NonNegative, "cycles"},
    {"control_cycles", &TimingSpec::control_cycles, Range::NonNegative, "cycles"},
    {"ld_fixed_cycles", &TimingSpec::ld_fixed_cycles, Range::NonNegative, "cycles"},
    {"st_fixed_cycles", &TimingSpec::st_fixed_cycles, Range::NonNegative, "cycles"},
    {"lw_bytes_per_cycle", &TimingSpec::lw_bytes_per_cycle, Range::Positive, "bytes/cycle"},
    {"lw_fixed_cycles", &TimingSpec::lw_fixed_cycles, Range::NonNegative, "cycles"},
    {"pe_fixed_cycles", &TimingSpec::pe_fixed_cycles, Range::NonNegative, "cycles"},
    {"pe_efficiency", &TimingSpec::pe_efficiency, Range::Fraction, "fraction of peak"},
    {"vp_fixed_cycles", &TimingSpec::vp_fixed_cycles, Range::NonNegative, "cycles"},
    {"dt_fixed_cycles", &TimingSpec::dt_fixed_cycles, Range::NonNegative, "cycles"},
    {"pe_act_bytes_per_cycle", &TimingSpec::pe_act_bytes_per_cycle, Range::Positive, "bytes/cycle"},
    {"pe_wl0_bytes_per_cycle", &TimingSpec::pe_wl0_bytes_per_cycle, Range::Positive, "bytes/cycle"},
    {"pe_weight_cache_bytes", &TimingSpec::pe_weight_cache_bytes, Range::NonNegative, "bytes"},
    {"pe_weight_reload_bytes_per_cycle", &TimingSpec::pe_weight_reload_bytes_per_cycle, Range::Positive, "bytes/cycle"},
    {"pe_output_cycles_int8", &TimingSpec::pe_output_cycles_int8, Range::NonNegative, "cycles"},
    {"pe_output_cycles_fp16", &TimingSpec::pe_output_cycles_fp16, Range::NonNegative, "cycles"},
    {"pe_setup_cycles", &TimingSpec::pe_setup_cycles, Range::NonNegative, "cycles"},
    {"pe_setup_cycles_per_act_line", &TimingSpec::pe_setup_cycles_per_act_line, Range::NonNegative, "cycles"},
    {"pe_channel_split_cycles", &TimingSpec::pe_channel_split_cycles, Range::NonNegative, "cycles"},
    {"pe_bank_conflict_cycles", &TimingSpec::pe_bank_conflict_cycles, Range::NonNegative, "cycles"},
    {"pe_bank_conflict_pitch_bytes", &TimingSpec::pe_bank_conflict_pitch_bytes, Range::NonNegative, "bytes"},
    {"vp_pipeline_cycles", &TimingSpec::vp_pipeline_cycles, Range::NonNegative, "cycles"},
    {"vp_second_input_cycles", &TimingSpec::vp_second_input_cycles, Range::NonNegative, "cycles"},
    {"vp_fp16_output_cycles", &TimingSpec::vp_fp16_output_cycles, Range::NonNegative, "cycles"},
    {"vp_pool_cycles_per_window", &TimingSpec::vp_pool_cycles_per_window, Range::NonNegative, "cycles"},
    {"host_latency_cycles", &TimingSpec::host_latency_cycles, Range::NonNegative, "cycles"},
    {"host_ops_per_cycle", &TimingSpec::host_ops_per_cycle, Range::Positive, "operations/cycle"},
    {"host_bytes_per_cycle", &TimingSpec::host_bytes_per_cycle, Range::Positive, "bytes/cycle"},
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
