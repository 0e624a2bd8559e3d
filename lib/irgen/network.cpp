// irgen pass 1, network: the Frontend IR's accelerator layers as the
// mapping places them (LayerModel: PE convolution, output box, inputs read
// through host pass-throughs to their producers), graph outputs marked.
#include "irgen/generator.hpp"

namespace cct::irgen::detail {

// A pass-through reshape on the host is read through, to the accelerator
// layer or graph input behind it; a host step's result is loaded from DRAM
// like a graph input, once the host has written it.
int Generator::resolve_producer(const std::string& name, std::string* graph_input, int* host_step) const {
  const std::string src = fir::resolve_through(g_, host_, name);
  if (fir::is_graph_input_name(src)) {
    *graph_input = src;
    return -1;
  }
  const fir::Layer* l = g_.find(src);
  if (!l) return -2;
  if (l->device == fir::Device::Npu) {
    auto it = layer_index_.find(src);
    return it == layer_index_.end() ? -2 : it->second;
  }
  *host_step = host_.step(src);
  if (*host_step < 0) return -2;
  *graph_input = src;
  return -1;
}

void Generator::build_network() {
  host_ = fir::host_plan(g_, o_.fir_file);
  std::set<std::string> host_inputs;  // accelerator layers a host step reads
  for (const auto& st : host_.steps) host_inputs.insert(st.inputs.begin(), st.inputs.end());
  for (const fir::Layer* l : g_.in_index_order()) {
    if (l->device != fir::Device::Npu) continue;
    LayerModel lm;
    lm.fir = l;
    lm.pe = is_pe_op(l->op);
    lm.move = fir::is_move_op(l->op);
    if (lm.pe) {
      std::string why;
      auto pc = fir::pe_conv(*l, &why);
      if (!pc) fail_fir(l->name, "does not run on the PE array: " + why);
      lm.conv = *pc;
    }
    if (l->output_shape.empty()) fail_fir(l->name, "layer has no output shape");
    lm.out = dims4(l->output_shape[0]);
    lm.out_bytes = dtype_size(l->output_dtype, 0);
    layer_index_[l->name] = int(layers_.size());
    layers_.push_back(std::move(lm));
  }
  for (auto& lm : layers_) {
    const fir::Layer& l = *lm.fir;
    for (size_t i = 0; i < l.previous_layer.size(); ++i) {
      const std::string& p = l.previous_layer[i];
      // The constant operand of PReLU and element-wise layers is loaded from
      // DRAM as a network input is; others are configuration (the average
      // pool's divisor).
      const bool loaded = (l.op == fir::Op::PRelu || l.op == fir::Op::ElementWiseAdd || l.op == fir::Op::ElementWiseSub ||
                           l.op == fir::Op::ElementWiseMul) &&
                          fir::is_constant_name(p);
      if (fir::is_constant_name(p) && lm.move)
        fail_fir(l.name, "moves the constant \"" + p + "\": no transfer brings constants into L2 for data movement");
      if (fir::is_constant_name(p) && !loaded) continue;
      InputRef in;
      if (loaded) in.producer = -1, in.graph_input = p;
      else in.producer = resolve_producer(p, &in.graph_input, &in.host_step);
      if (in.producer == -2) fail_fir(l.name, "input \"" + p + "\" is neither a layer nor a graph input");
      in.fir_index = i;
      if (i >= l.input_shape.size()) fail_fir(l.name, "no input_shape for input " + std::to_string(i));
      in.dims = dims4(l.input_shape[i]);
      if (loaded && !l.output_shape.empty()) {
        // A constant broadcasts against the output (numpy: on the last axes).
        auto b = fir::chip_box_broadcast(l.input_shape[i], l.output_shape[0].size());
        in.dims = Dims{b[0], b[1], b[2], b[3]};
      }
      in.bytes = dtype_size(l.input_dtype, i);
      if (lm.pe && !lm.inputs.empty()) break;  // the weights are not an activation
      lm.inputs.push_back(in);
    }
    if (lm.move) {
      // The batch is cut into groups and parts: a movement must keep each
      // sample where it is, in tensors of at most four axes.
      std::string why;
      const Dims& o = lm.out;
      Box whole;
      whole.hi = {o[0] - 1, o[1] - 1, o[2] - 1, o[3] - 1};
      auto pieces = fir::move_pieces(l, whole.lo, whole.hi, &why);
      if (!pieces) fail_fir(l.name, "cannot be cut into moves: " + why);
      for (const auto& m : *pieces)
        if (m.in_lo[0] != m.out_lo[0] || m.in_hi[0] - m.in_lo[0] != o[0] - 1)
          fail_fir(l.name, std::string(fir::op_name(l.op)) +
                               " moves data along the batch axis (axis 0), which the mapping cuts into groups and parts");
      for (size_t i = 0; i < l.input_shape.size(); ++i)
        if (l.input_shape[i].size() > 4) fail_fir(l.name, "input " + std::to_string(i) + " has more than four axes");
    }
    for (const auto& nx : l.next_layer)
      if (fir::is_graph_output_name(nx)) lm.graph_output = true;
    // A layer whose output only reaches host layers writes it out too.
    bool npu_consumer = false;
    for (const fir::Layer* c : g_.consumers(l)) npu_consumer = npu_consumer || c->device == fir::Device::Npu;
    if (!npu_consumer) lm.graph_output = true;
    // The host reads it from DRAM.
    if (host_inputs.count(l.name)) lm.graph_output = true;
  }
}

}  // namespace cct::irgen::detail
