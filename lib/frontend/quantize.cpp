#include "frontend/quantize.hpp"

#include <algorithm>
#include <cmath>

#include "support/error.hpp"

namespace cct::frontend {

using fir::Op;
using interp::Shape;

std::string file_name(const std::string& layer, const std::string& role) { return layer + "_" + role + ".npy"; }

namespace {

template <class G>
G with_shapes(G g, const std::vector<Shape>& in, const std::vector<Shape>& out) {
  g.input_shape = in;
  g.output_shape = out;
  return g;
}

}  // namespace

QuantizedModel quantize(const LoweredModel& m, const std::vector<RangeStats>& stats, const QuantizeOptions& options,
                        const interp::Graph* graph) {
  QuantizedModel out;
  // Class parameters: the quantization the source model gives (TFLite), else
  // the union of the member values' calibrated ranges.
  for (const auto& values : m.qclass_values) {
    const interp::PresetQuant* preset = nullptr;
    if (graph)
      for (int v : values)
        if (const auto& p = graph->value(v).preset; p && p->scale.size() == 1 && p->scale[0] > 0.0) preset = p.get();
    if (preset) {
      out.class_quant.push_back(int8::TensorQuant{preset->scale[0], -static_cast<double>(preset->zero_point[0])});
      continue;
    }
    double lo = 0.0, hi = 0.0;
    for (int v : values) {
      if (v < 0 || static_cast<size_t>(v) >= stats.size() || stats[v].empty()) continue;
      auto [a, b] = stats[v].range(options.calibrator, options.percentile);
      lo = std::min(lo, a);
      hi = std::max(hi, b);
    }
    out.class_quant.push_back(int8::choose_tensor_quant(lo, hi));
  }
  out.fir = structure_of(m);
  auto& layers = out.fir.mutable_layers();

  // Quantization of operand i of layer k, when it is int8.
  auto operand_quant = [&](const LLayer& l, size_t i) -> std::optional<int8::TensorQuant> {
    const Operand& o = l.inputs[i];
    if (o.kind != Operand::Kind::Layer) return std::nullopt;
    const LLayer& p = m.layers[static_cast<size_t>(o.index)];
    if (p.out_dtype != "int8" || p.qclass < 0) return std::nullopt;
    return out.class_quant[static_cast<size_t>(p.qclass)];
  };
  auto add_file = [&](fir::Layer& f, const std::string& role, NpyArray a) {
    std::string name = file_name(f.name, role);
    f.file_list.push_back({role, name});
    out.files.push_back({name, std::move(a)});
  };

  for (size_t k = 0; k < m.layers.size(); ++k) {
    const LLayer& l = m.layers[k];
    fir::Layer& f = layers[k];
    std::optional<int8::TensorQuant> oq;
    if (l.out_dtype == "int8") oq = out.class_quant.at(static_cast<size_t>(l.qclass));
    std::vector<Shape> ins;
    for (size_t i = 0; i < l.inputs.size(); ++i) ins.push_back(f.input_shape[i]);
    std::vector<Shape> outs = {l.out_shape};

    auto pre_cal = [&](size_t n_inputs) {
      fir::PreCal p;
      for (size_t i = 0; i < n_inputs && i < 2; ++i) {
        auto q = operand_quant(l, i);
        double s = q ? q->scale : 1.0, z = q ? q->zero_point * q->scale : 0.0;
        if (i == 0) { p.requan_scale_a = s; p.requan_zp_a = z; }
        else { p.requan_scale_b = s; p.requan_zp_b = z; }
      }
      return fir::make_module(with_shapes(p, ins, ins));
    };
    auto post_cal = [&](const std::vector<Shape>& in_shapes) {
      fir::PostCal p;
      if (oq) {
        p.mul_k = 1.0 / oq->scale;
        p.sum_b = -oq->zero_point;
        p.carry_sel = "round";
      }
      return fir::make_module(with_shapes(p, in_shapes, outs));
    };
    auto luts = [&] {
      for (size_t i = 0; i < l.inputs.size(); ++i)
        f.tensor_lut.push_back(l.inputs[i].kind == Operand::Kind::Constant ? std::vector<int64_t>{0, 0, 0}
                                                                           : std::vector<int64_t>{1, 1, 1});
    };
    auto activation_files = [&] {
      for (size_t i = 0; i < l.inputs.size(); ++i) {
        std::string role = "input_activation" + std::to_string(i + 1);
        if (l.inputs[i].kind == Operand::Kind::Constant) {
          const auto& c = m.constants[static_cast<size_t>(l.inputs[i].index)];
          interp::Shape s = c.tensor.shape;
          add_file(f, role, NpyArray::from_float(c.tensor.f, s));
        } else {
          f.file_list.push_back({role, file_name(f.name, role)});
        }
      }
    };
    auto output_file = [&] { f.file_list.push_back({"output_activation1", file_name(f.name, "output_activation1")}); };

    switch (l.op) {
      case Op::Quantize: {
        activation_files();
        output_file();
        luts();
        f.tensor_mode = 0;
        f.module_list = std::vector<fir::Module>{pre_cal(1), post_cal(ins)};
        break;
      }
      case Op::Conv2d:
      case Op::Dense: {
        auto iq = operand_quant(l, 0);
        if (!iq) throw Error(kExitInternal, "layer " + l.name + ": its input is not int8");
        fir::QuantInfo qi;
        qi.inputs.push_back({iq->scale, iq->zero_point});
        if (oq) {
          qi.output_scale = 1.0 / oq->scale;
          qi.output_zero_point = -oq->zero_point;
          qi.round_type = "round";
        }
        f.quant_info = qi;
        const interp::Tensor& w = *l.weight;
        int64_t K = w.shape[0], per = w.numel() / K;
        std::vector<int8_t> kq(static_cast<size_t>(w.numel()));
        std::vector<float> bf(static_cast<size_t>(K));
        std::vector<float> ks(static_cast<size_t>(K));
        for (int64_t c = 0; c < K; ++c) {
          double s = l.weight_scales.empty() ? int8::weight_scale(w.f.data() + c * per, per) : l.weight_scales[c];
          ks[c] = static_cast<float>(s);
          for (int64_t i = 0; i < per; ++i) kq[c * per + i] = int8::quantize_weight(w.f[c * per + i], s);
          bf[c] = l.bias->f[c];
        }
        f.file_list.push_back({"input_activation1", file_name(f.name, "input_activation1")});
        f.file_list.push_back({"input_activation2", file_name(f.name, "k")});
        output_file();
        add_file(f, "k", NpyArray::from_int8(kq, w.shape));
        add_file(f, "b", NpyArray::from_float(bf, {K}));
        add_file(f, "k_scale", NpyArray::from_float(ks, {K}));
        break;
      }
      case Op::MatMul: {
        activation_files();
        output_file();
        if (l.device == fir::Device::Npu) {
          fir::QuantInfo qi;
          for (size_t i = 0; i < 2; ++i) {
            auto q = operand_quant(l, i);
            if (!q) throw Error(kExitInternal, "layer " + l.name + ": matmul input " + std::to_string(i) + " is not int8");
            qi.inputs.push_back({q->scale, q->zero_point});
          }
          if (oq) {
            qi.output_scale = 1.0 / oq->scale;
            qi.output_zero_point = -oq->zero_point;
            qi.round_type = "round";
          }
          f.quant_info = qi;
        }
        break;
      }
      case Op::MaxPool2d: {
        activation_files();
        output_file();
        luts();
        fir::CompareGroup cg;
        f.module_list = std::vector<fir::Module>{pre_cal(1), fir::make_module(with_shapes(cg, ins, outs)), post_cal(outs)};
        break;
      }
      case Op::AvgPool2d: {
        activation_files();
        output_file();
        luts();
        fir::Fp32MulGroup mg;
        mg.mul_group_k_mux = "scalar";
        mg.act_mode = "others";
        mg.mul_group_k_scalar = static_cast<double>(static_cast<float>(l.pool_divisor));
        fir::AccTreeGroup at;
        std::vector<Shape> first = {ins[0]};
        f.module_list = std::vector<fir::Module>{pre_cal(2), fir::make_module(with_shapes(mg, ins, first)),
                                                 fir::make_module(with_shapes(at, first, outs)), post_cal(outs)};
        break;
      }
      case Op::ElementWiseAdd:
      case Op::ElementWiseSub:
      case Op::ElementWiseMul: {
        activation_files();
        output_file();
        luts();
        f.tensor_mode = 0;
        std::vector<fir::Module> mods = {pre_cal(2)};
        if (l.op == Op::ElementWiseMul) {
          fir::Fp32MulGroup mg;
          mg.mul_group_k_mux = "vector";
          mg.act_mode = "others";
          mods.push_back(fir::make_module(with_shapes(mg, ins, outs)));
        } else {
          fir::Fp32SumSubGroup sg;
          sg.sumsub_group_mode = l.sumsub_mode;
          sg.sumsub_group_b_mux = "vector";
          mods.push_back(fir::make_module(with_shapes(sg, ins, outs)));
        }
        if (l.relu_group) mods.push_back(fir::make_module(with_shapes(fir::ReluGroup{}, outs, outs)));
        mods.push_back(post_cal(outs));
        f.module_list = std::move(mods);
        break;
      }
      case Op::Relu: case Op::Sigmoid: case Op::HardSigmoid: case Op::HardSwish:
      case Op::Silu: case Op::Gelu: case Op::Tanh: case Op::Clip: case Op::LeakyRelu: case Op::Elu:
      case Op::PRelu: {
        activation_files();
        output_file();
        luts();
        fir::Fp32MulGroup mg;
        mg.mul_group_k_mux = "scalar";
        mg.act_mode = l.act_mode;
        mg.mul_group_k_scalar = 1.0;
        // prelu's slope is its second (constant) input, in float.
        size_t n_in = l.op == Op::PRelu ? 2 : 1;
        f.module_list = std::vector<fir::Module>{pre_cal(n_in), fir::make_module(with_shapes(mg, ins, outs)), post_cal(outs)};
        break;
      }
      case Op::Slice:
      case Op::Gather:
      case Op::Concat: {
        activation_files();
        output_file();
        fir::QuantInfo qi;
        for (size_t i = 0; i < l.inputs.size(); ++i) {
          auto q = operand_quant(l, i);
          qi.inputs.push_back({q ? q->scale : 1.0, q ? q->zero_point : 0.0});
        }
        if (oq) {
          qi.output_scale = 1.0 / oq->scale;
          qi.output_zero_point = -oq->zero_point;
          qi.round_type = "round";
        }
        f.quant_info = qi;
        break;
      }
      case Op::Resize: {
        // Dequantize, resample, requantize (to the input's own scale).
        activation_files();
        output_file();
        luts();
        f.module_list = std::vector<fir::Module>{pre_cal(1), post_cal(outs)};
        break;
      }
      case Op::ReduceSum: {
        // The factor of each element (1, or 1/n for a mean), as average
        // pooling carries its divisor.
        activation_files();
        output_file();
        fir::Fp32MulGroup mg;
        mg.mul_group_k_mux = "scalar";
        mg.act_mode = "others";
        mg.mul_group_k_scalar = static_cast<double>(static_cast<float>(l.pool_divisor));
        f.module_list = std::vector<fir::Module>{fir::make_module(with_shapes(mg, ins, outs))};
        break;
      }
      case Op::LayerNorm: {
        activation_files();
        output_file();
        add_file(f, "k", NpyArray::from_float(l.weight->f, l.weight->shape));
        add_file(f, "b", NpyArray::from_float(l.bias->f, l.bias->shape));
        break;
      }
      default:
        activation_files();
        output_file();
        break;
    }
  }
  return out;
}

}  // namespace cct::frontend
