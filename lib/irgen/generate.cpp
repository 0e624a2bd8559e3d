// Mapping -> Scheduler IR, as a sequence of passes over one Generator
// (generator.hpp names them and their files). The conventions follow the
// reference schedules (formats/Scheduler_IR_Format.md): whole tensors keep
// their layer coordinates in L2, channels padded to the L2 alignment,
// weights as [0, k, c, kh*kw] with per-output-channel extras, one ofmap
// piece per workload naming every consumer, DRAM traffic in "-1".
#include "irgen/generator.hpp"

namespace cct::irgen {
namespace detail {

// The passes, in order; connecting and placing is retried until memory fits.
sir::Schedule Generator::run() {
  build_network();
  build_workloads();
  connect_and_place();
  for (auto& w : wls_)
    if (layers_[size_t(w.layer)].pe) tile_pe(w);
  if (estimate_out_) *estimate_out_ = estimated_cycles_;
  sir::Schedule s = emit();
  // Transfer ids as the Scheduler IR numbers them: layer * stride + n, the
  // stride the least power of ten (at least 100) above every layer's count.
  int64_t stride = 100;
  for (int64_t n : transfers_of_layer_)
    while (n >= stride) stride *= 10;
  if (stride >= transfer_stride_)
    throw Error(kExitInternal, "irgen: a layer with over " + std::to_string(transfer_stride_) + " transfers");
  sir::renumber_transfers(s, [&](int64_t id) { return id / transfer_stride_ * stride + id % transfer_stride_; });
  return s;
}

// Transfers, L2 placement, VP tiles and weight loads (retried with spills
// and with weights streamed from L2 when memory runs out).
void Generator::connect_and_place() {
  // Tensors kept in a core's L2 across segments go through DRAM instead
  // when L2 runs out: spill the longest-lived one in the way and retry.
  // When the weights then find no room, place the ones that must stream
  // from L2 together with the activations and start again.
  for (int attempt = 0;; ++attempt) {
    reserve_weights_ = attempt == 1;
    spill_.clear();
    tail_limit_.clear();
    head_limit_.clear();
    for (;;) {
      reset_connections();
      connect();
      const std::vector<int> failed = place_activations();
      if (failed.empty()) break;
      remedy(failed);
    }
    for (auto& w : wls_)
      if (layers_[size_t(w.layer)].move) tile_move(w);
      else if (!layers_[size_t(w.layer)].pe) tile_vp(w);
    if (plan_weights()) break;
    if (attempt == 1)
      throw CapacityError(at_pointer(o_.mapping_file, "/segments/" + std::to_string(assign_segment_), assign_error_),
                          assign_segment_);
  }
}

}  // namespace detail

using detail::dtype_size;
using detail::Generator;

sir::Schedule generate(const fir::Graph& graph, const mapping::Mapping& mapping, const arch::Architecture& arch,
                       const Options& options, int64_t* estimated_cycles) {
  auto problems = mapping::check_against_arch(mapping, arch, options.mapping_file);
  auto more = mapping::check_against_fir(mapping, graph, options.mapping_file);
  problems.insert(problems.end(), more.begin(), more.end());
  mapping::throw_if_problems(problems);
  Generator gen(graph, mapping, arch, options, estimated_cycles);
  return gen.run();
}

Summary summarize(const sir::Schedule& s) {
  Summary r;
  for (const auto& c : s.cores)
    for (const auto& w : c.workloads) {
      ++r.workloads;
      r.tiles += w.tile_info.size();
      r.predicted_cycles += w.time;
      for (const auto& e : w.wl0_buffer.entries)
        if (e.layer_name == w.layer_name) {
          if (e.source == sir::WeightSource::Ddr) ++r.wl0_direct_layers;
          else ++r.l2_stream_layers;
        }
    }
  for (const auto& d : s.dram.out)
    if (d.type == sir::DramLoadType::Weight) r.weight_bytes += d.size;
  return r;
}

footprint::WeightRecord layer_weight_record(const arch::Architecture& a, const fir::Layer& l) {
  auto pc = fir::pe_conv(l);
  if (!pc) return {};
  const int elem = dtype_size(l.input_dtype, 1);
  if (l.op == fir::Op::Conv2d) {
    // Each output channel reads its group's channels of the input.
    const int64_t groups = pc->groups;
    const int64_t c = fir::chip_box(l.input_shape[0])[1];
    if (groups < 1 || c % groups != 0) return {};
    return footprint::weight_record(a, c / groups, pc->kernel[0], pc->kernel[1], elem);
  }
  // A dense layer: the convolution of its whole sample, [C, H, W] of its input.
  return footprint::weight_record(a, pc->weight[1], pc->weight[2], pc->weight[3], elem);
}

}  // namespace cct::irgen
