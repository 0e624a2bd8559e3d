// asm, compute: one tile's instructions. The configuration registers whose
// values changed since the unit's last tile, then the compute instruction:
// pe_conv (with its activation and requantisation), the vector unit's
// element-wise, pooling and table operations, or a data movement piece.
#include "asm/core_assembler.hpp"

namespace cct::assembler::detail {

double attr_or(const fir::Layer& l, const char* key, double fallback) {
  const Json* a = l.activation_attr();
  const Json* v = a ? a->find(key) : nullptr;
  return v && v->is_number() ? v->as_double() : fallback;
}

// The fused activation of a conv2d / dense in the PE epilogue: ReLU, a clamp
// to [0, ACTPM] (relu6, clip with min 0) or a leaky ReLU of slope ACTPM.
void pm_activation(Instruction& pm, const fir::Layer& L, const Options& o, const std::string& p) {
  isa::ActMode mode = isa::ActMode::DISABLE;
  double param = 0.0;
  const std::string type = L.activation && L.activation->type ? *L.activation->type : "";
  if (type == "relu") {
    mode = isa::ActMode::RELU;
  } else if (type == "relu6") {
    mode = isa::ActMode::CLIP, param = 6.0;
  } else if (type == "clip") {
    // The interpreter's defaults (int8::Activation): min 0, max 6.
    if (attr_or(L, "min", 0.0) != 0.0)
      fail(o, p + "/layer_name", "layer \"" + L.name +
                                         "\": a fused clip with a lower bound other than 0 has no PE activation "
                                         "(ActMode CLIP clamps to [0, ACTPM]); run it as a clip layer on the vector processor");
    mode = isa::ActMode::CLIP, param = attr_or(L, "max", 6.0);
  } else if (type == "leaky_relu") {
    mode = isa::ActMode::LEAKY_RELU, param = attr_or(L, "alpha", 0.01);
  } else if (!type.empty()) {
    fail(o, p + "/layer_name", "layer \"" + L.name + "\": activation_type \"" + type +
                                       "\" has no PE activation mode");
  }
  pm.set_enum(Param::ACTMD, mode);
  pm.set_float(Param::ACTPM, param);
}

// The VP operation of an activation layer, from fp32_mul_group act_mode when
// there is one, else from the operation (as the interpreter chooses).
isa::Lut activation_lut(const fir::Layer& L, const Options& o, const std::string& p) {
  if (L.op == fir::Op::PRelu) return isa::Lut::PRelu;
  const Json* m = module_value(L, "fp32_mul_group", "act_mode");
  std::string mode = m && m->is_string() ? m->as_string() : std::string(fir::op_name(L.op));
  static const std::pair<const char*, isa::Lut> kModes[] = {
      {"relu", isa::Lut::Relu},           {"clip", isa::Lut::Clip},           {"leaky_relu", isa::Lut::LeakyRelu},
      {"elu", isa::Lut::Elu},             {"hard_sigmoid", isa::Lut::HardSigmoid}, {"hard_swish", isa::Lut::HardSwish},
      {"sigmoid", isa::Lut::Sigmoid},     {"silu", isa::Lut::Silu},           {"tanh", isa::Lut::Tanh},
      {"gelu", isa::Lut::Gelu},           {"others", isa::Lut::Requantize}};
  for (const auto& [name, lut] : kModes)
    if (mode == name) return lut;
  fail(o, p + "/layer_name", "layer \"" + L.name + "\": act_mode \"" + mode +
                                     "\" is no vector-processor operation");
}

std::string dims_text(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

void CoreAssembler::pe_tile(size_t k, size_t ti, const sir::Tile& t, int64_t swaddr) {
  const Workload& w = W()[k];
  const fir::Layer& L = layer(k);
  const std::string p = wptr(k);
  if (w.ifmap.empty() || w.ifmap[0].transfer_id.empty()) fail(sh_.o, p + "/ifmap", "the workload has no ifmap");
  TensorView ifm = TensorView::of(input_buffer(k, 0)).place(region_lower(k, false));
  TensorView ofm = TensorView::of(ofmap_buffer(k)).place(region_lower(k, true));
  if (L.input_dtype.size() < 2 || L.output_dtype.empty())
    fail(sh_.o, p + "/layer_name", "layer \"" + L.name + "\" needs an input, a weight and an output dtype");
  const auto mp = mapping(k, static_cast<int32_t>(ti));
  const bool int8_out = L.output_dtype[0] != "float16";

  Instruction fm(Opcode::pe_cfg_fm);
  fm.mapping = mp;
  fm.set_enum(Param::IF, isa::DataSign::SIGNED);
  fm.set_enum(Param::OF, isa::DataSign::SIGNED);
  fm.set_enum(Param::SF, fmt_of_dtype(L.input_dtype[0]));
  fm.set_enum(Param::WF, fmt_of_dtype(L.input_dtype[1]));
  fm.set_enum(Param::DF, fmt_of_dtype(L.output_dtype[0]));
  double zp = (L.quant_info && !L.quant_info->inputs.empty()) ? L.quant_info->inputs[0].zero_point : 0.0;
  fm.set_float(Param::PADV, -zp + 0.0);
  auto sd = ifm.dims(), dd = ofm.dims();
  fm.set_list(Param::STile, sd);
  fm.set_list(Param::DTile, dd);
  emit_cfg(fm);

  Instruction pm(Opcode::pe_cfg_pm);
  pm.mapping = mp;
  pm_activation(pm, L, sh_.o, p);
  pm.set_enum(Param::QC, isa::Float2Fixed::ROUND);
  if (int8_out) {
    if (!L.quant_info || !L.quant_info->output_scale || !L.quant_info->output_zero_point)
      fail(sh_.o, p + "/layer_name", "layer \"" + L.name + "\" has an INT8 output but no output quantisation");
    pm.set_float(Param::QB, *L.quant_info->output_zero_point);
    pm.set_float(Param::QK, *L.quant_info->output_scale);
  } else {
    pm.set(Param::QB, 0);
    pm.set(Param::QK, 0);
  }
  pm.set(Param::ADDEN, 0);
  const fir::PeConv pc = pe_conv(L.name, p + "/layer_name");
  auto st = pc.stride;
  pm.set_list(Param::STRIDE, {static_cast<int32_t>(st[0]), static_cast<int32_t>(st[1])});
  pm.set_list(Param::XYmode, {static_cast<int32_t>(isa::XCutMode::CUT_K),
                              static_cast<int32_t>(ycut_of(t.cut_mode.value_or("KK")))});
  emit_cfg(pm);

  Instruction dq(Opcode::pe_cfg_dq);
  dq.mapping = mp;
  emit_cfg(dq);

  auto od = dims_of(t.ofmap_lower, t.ofmap_upper);
  auto id = dims_of(t.ifmap_lower, t.ifmap_upper);
  Instruction tp(Opcode::pe_cfg_tp);
  tp.mapping = mp;
  auto win = pc.kernel;
  tp.set_list(Param::KERNEL, {static_cast<int32_t>(win[0]), static_cast<int32_t>(win[1])});
  tp.set_list(Param::Tile, {i32(od[0], sh_.o, p, "tile"), i32(od[1], sh_.o, p, "tile"), i32(id[1], sh_.o, p, "tile"),
                            i32(od[2], sh_.o, p, "tile"), i32(od[3], sh_.o, p, "tile")});
  auto mm = t.mtc0_mtk0.value_or(std::array<int64_t, 2>{1, 1});
  tp.set(Param::MTK0, mm[1]);
  tp.set(Param::MTC0, mm[0]);
  auto omt = t.out_mini_tile.value_or(Coord{1, 1, 1, 1});
  tp.set_list(Param::MTI, {static_cast<int32_t>(omt[2] - 1), static_cast<int32_t>(omt[3] - 1)});
  emit_cfg(tp);

  // Grouped and dilated convolutions: the tile holds whole groups.
  const int64_t groups = L.group_count();
  const int64_t out_c = L.output_shape.size() == 1 ? fir::chip_box(L.output_shape[0])[1] : 0;
  const int64_t kg = groups > 0 ? out_c / groups : 0;
  if (groups < 1 || kg < 1 || out_c % groups != 0)
    fail(sh_.o, p + "/layer_name", "layer \"" + L.name + "\": groups " + std::to_string(groups) +
                                       " do not divide its output channels");
  if (groups > 1 && (t.ofmap_lower[1] % kg != 0 || od[1] % kg != 0))
    fail(sh_.o, p + "/tile_info/tile_num_" + std::to_string(ti),
         "the tile's output channels " + std::to_string(t.ofmap_lower[1]) + ".." + std::to_string(t.ofmap_upper[1]) +
             " of layer \"" + L.name + "\" are not whole groups of " + std::to_string(kg));
  Instruction gp(Opcode::pe_cfg_gp);
  gp.mapping = mp;
  auto dil = L.dilations();
  gp.set(Param::GROUPS, groups > 1 ? od[1] / kg : 1);
  gp.set_list(Param::DILATION, {i32(dil[0], sh_.o, p, "dilation"), i32(dil[1], sh_.o, p, "dilation")});
  emit_cfg(gp);

  const auto& pad = t.tile_padding_tblr;
  Instruction cv(Opcode::pe_conv);
  cv.mapping = mp;
  cv.set(Param::PS, 0);
  const auto& il = t.ifmap_lower;
  // SPHI/SPWI: the row and column of the STile box where the window starts
  // (negative inside the top/left padding); the PE reads what lies outside
  // the box as padding. The original tool chain writes -padding, which is the
  // start for every tile that begins at the box's corner; a tile that starts
  // further in only needs its true start when it reaches past the box's
  // bottom (right) edge, so only then does it differ from the reference.
  cv.set(Param::SPHI, pad[1] > 0 ? il[2] - pad[0] - ifm.org[2] : -pad[0]);
  cv.set(Param::SPWI, pad[3] > 0 ? il[3] - pad[2] - ifm.org[3] : -pad[2]);
  cv.set(Param::SBSG, 0);
  cv.set(Param::DBSG, 0);
  const auto& ol = t.ofmap_lower;
  cv.set(Param::STaddr, ifm.addr(il[0], il[1], il[2] - pad[0], il[3] - pad[2]));
  cv.set(Param::SWaddr, swaddr);
  int64_t daddr = ofm.addr(ol[0], ol[1], ol[2], ol[3]);
  if (daddr < ofm.base || daddr >= ofm.base + ofm.size)
    fail(sh_.o, p + "/tile_info/tile_num_" + std::to_string(ti),
         "the tile's ofmap corner is outside its buffer [" + std::to_string(ofm.base) + ", " +
             std::to_string(ofm.base + ofm.size) + ")");
  cv.set(Param::DTaddr, daddr);
  Meta m;
  m.kind = Kind::Compute;
  int64_t wbytes = weight_per_k(w.layer_name, p + "/layer_name") * od[1];
  m.reads = {ifm.range(), {Space::Wl0, swaddr * wl0_row_bytes(), swaddr * wl0_row_bytes() + wbytes}};
  m.writes = {{Space::L2, daddr, ofm.base + ofm.size}};
  emit(std::move(cv), std::move(m));
}

void CoreAssembler::vp_tile(size_t k, size_t ti, const sir::Tile& t) {
  const Workload& w = W()[k];
  const fir::Layer& L = layer(k);
  const std::string p = wptr(k);
  if (w.ifmap.empty()) fail(sh_.o, p + "/ifmap", "the workload has no ifmap");
  if (L.input_dtype.empty() || L.output_dtype.empty())
    fail(sh_.o, p + "/layer_name", "layer \"" + L.name + "\" has no input or output dtype");
  const bool maxpool = L.op == fir::Op::MaxPool2d;
  const bool resize = L.op == fir::Op::Resize;
  // (a resize is a vp_pool too: it reads a window of its input box per output pixel)
  const bool pool = maxpool || L.op == fir::Op::AvgPool2d || resize;
  // The VP reads its operands from L2, where the schedule brings layer
  // outputs, graph inputs and the constant operands of PReLU and element-wise
  // layers (loaded from DRAM); the average pool's constant divisor is the
  // multiplier MG0V. Other constants have no way there.
  const bool loads_constant = L.op == fir::Op::PRelu || L.op == fir::Op::ElementWiseAdd ||
                              L.op == fir::Op::ElementWiseSub || L.op == fir::Op::ElementWiseMul;
  if (!pool && !loads_constant)
    for (const auto& prev : L.previous_layer)
      if (fir::is_constant_name(prev))
        fail(sh_.o, p + "/layer_name", "layer \"" + L.name + "\" (" + std::string(fir::op_name(L.op)) + ") reads the constant \"" + prev +
                                           "\": no transfer brings such constants into L2 for the vector processor");
  if (loads_constant && w.ifmap.size() != 2)
    fail(sh_.o, p + "/ifmap", "layer \"" + L.name + "\" (" + std::string(fir::op_name(L.op)) +
                                  ") needs both operands as ifmaps (a constant one loaded from DRAM)");
  Coord ril = region_lower(k, false), rol = region_lower(k, true);
  std::vector<TensorView> ifms;
  for (size_t i = 0; i < w.ifmap.size(); ++i) ifms.push_back(TensorView::of(input_buffer(k, i)));
  TensorView ofm = TensorView::of(ofmap_buffer(k)).place(rol);
  // The first operand of a two-input operation (dequantized with IQK0/IQB0,
  // the Frontend IR's first input) is read at STaddr1, the second at STaddr:
  // every residual addition of the reference programs pairs them so
  // (formats/ISA_Format.md, section 9.5). The first is the ifmap whose
  // producer is the layer's first input.
  size_t first = 0;
  if (ifms.size() > 1 && !L.previous_layer.empty()) {
    auto producer = [&](size_t i) -> std::string {
      const BufferTensor& b = input_buffer(k, i);
      return b.source && !b.source->empty() && (*b.source)[0].layer_name ? *(*b.source)[0].layer_name : "";
    };
    if (producer(0) != L.previous_layer[0] && producer(1) == L.previous_layer[0]) first = 1;
  }
  const bool two = ifms.size() > 1;
  // Numpy broadcast: operand A (STaddr1, box vp_cfg_fm STile) has the
  // output's shape, operand B (STaddr, box vp_cfg_fm1 STile) may have sizes
  // of 1 that broadcast. When the Frontend IR's first input is the smaller,
  // the operands trade places with their dequantization (exact for + and x;
  // a - b becomes LUT ReverseSub).
  bool swap = false;
  if (two && L.input_shape.size() > 1 && !L.output_shape.empty()) {
    bool full0 = L.input_shape[0] == L.output_shape[0], full1 = L.input_shape[1] == L.output_shape[0];
    if (!full0 && !full1)
      fail(sh_.o, p + "/layer_name", "layer \"" + L.name + "\": both inputs broadcast to the output (" +
                                         dims_text(L.input_shape[0]) + " and " + dims_text(L.input_shape[1]) +
                                         "); the vector processor broadcasts its second operand only");
    swap = !full0;
  }
  const size_t ia = swap ? 1 - first : first, ib = 1 - ia;
  const std::string& dtype_a = L.input_dtype[swap && L.input_dtype.size() > 1 ? 1 : 0];
  const std::string& dtype_b = L.input_dtype.size() > 1 ? L.input_dtype[swap ? 0 : 1] : dtype_a;
  // A is placed at the workload's input region (its output region when the
  // operands traded places); B at the same place except where its box has
  // size 1, at its only element.
  const Coord ra = swap ? rol : ril;
  ifms[ia].place(ra);
  // Both operands are read in boxes of one shape (B's sizes of 1 broadcast):
  // a window of a wider tensor is not read in place (irgen copies it out).
  // B of another element size (a float16 constant) has a box of its own
  // (vp_cfg_fm1, channels padded to the alignment in bytes for its format).
  if (two) {
    bool same = ifms[ib].cpad == ifms[ia].cpad || ifms[ib].dims() != ifms[ia].dims() || ifms[ib].bytes != ifms[ia].bytes;
    for (int i = 1; i < 4; ++i) same = same && (ifms[ib].d[i] == ifms[ia].d[i] || ifms[ib].d[i] == 1);
    if (!same)
      fail(sh_.o, p + "/ifmap", "the inputs of a two-input vector operation must be held in buffers of one shape (vp_cfg_fm STile), "
                                "or of size 1 along the axes the second broadcasts (vp_cfg_fm1 STile): input " +
                                    std::to_string(ib) + "'s buffer at " + std::to_string(ifms[ib].base) + " is " + shape_text(ifms[ib]) +
                                    ", input " + std::to_string(ia) + "'s at " + std::to_string(ifms[ia].base) + " is " + shape_text(ifms[ia]));
  }
  const bool fm1_needed = two && (ifms[ib].dims() != ifms[ia].dims() || dtype_b != dtype_a);
  Coord rb = ra;
  if (two) {
    if (fm1_needed)
      for (int i = 0; i < 4; ++i) rb[i] = ifms[ib].d[i] == 1 ? ifms[ib].lo[i] : ra[i];
    ifms[ib].place(rb);
  }
  const auto mp = mapping(k, static_cast<int32_t>(ti));
  isa::Lut lut = isa::Lut::Requantize;
  if (maxpool) lut = isa::Lut::MaxPool;
  else if (resize) lut = isa::Lut::Resize;
  else if (pool) lut = isa::Lut::AvgPool;
  else if (L.op == fir::Op::ElementWiseMul) lut = isa::Lut::Mul;
  else if (L.op == fir::Op::ElementWiseAdd || L.op == fir::Op::ElementWiseSub) {
    auto sg = L.fp32_sum_sub_group();
    bool sub = sg ? sg->sumsub_group_mode == "sub" : L.op == fir::Op::ElementWiseSub;
    lut = !sub ? isa::Lut::Add : swap ? isa::Lut::ReverseSub : isa::Lut::Sub;
  } else if (fir::is_activation_op(L.op)) {
    lut = activation_lut(L, sh_.o, p);
  }
  const bool act = lut >= isa::Lut::Relu && lut <= isa::Lut::PRelu;

  Instruction gcs(Opcode::vp_cfg_gcs);
  gcs.mapping = mp;
  gcs.set_enum(Param::CMPS, maxpool ? isa::CMPS::MAX : isa::CMPS::DEFAULT);
  emit_cfg(gcs);

  Instruction gms(Opcode::vp_cfg_gms);
  gms.mapping = mp;
  // Activations multiply by mul_group_k_scalar first (1 when absent, as the interpreter).
  set_number(gms, Param::MG0V, module_value(L, "fp32_mul_group", "mul_group_k_scalar"), act ? 1 : 0, false);
  emit_cfg(gms);

  Instruction sms(Opcode::vp_cfg_sms);
  sms.mapping = mp;
  emit_cfg(sms);

  Instruction qp(Opcode::vp_cfg_qp);
  qp.mapping = mp;
  const Json* carry = module_value(L, "post_cal", "carry_sel");
  bool round = carry && carry->is_string() && carry->as_string() == "round";
  qp.set_enum(Param::QCS, round ? isa::Float2Fixed::ROUND : isa::Float2Fixed::CEIL);
  set_number(qp, Param::QB, module_value(L, "post_cal", "sum_b"), 0, false);
  set_number(qp, Param::QK, module_value(L, "post_cal", "mul_k"), 1, false);
  emit_cfg(qp);

  Instruction iq(Opcode::vp_cfg_iq);
  iq.mapping = mp;
  set_number(iq, Param::IQB0, module_value(L, "pre_cal", swap ? "requan_zp_b" : "requan_zp_a"), 0, false);
  set_number(iq, Param::IQK0, module_value(L, "pre_cal", swap ? "requan_scale_b" : "requan_scale_a"), 1, false);
  emit_cfg(iq);

  Instruction iq1(Opcode::vp_cfg_iq1);
  iq1.mapping = mp;
  set_number(iq1, Param::IQB1, module_value(L, "pre_cal", swap ? "requan_zp_a" : "requan_zp_b"), 0.0, true);
  set_number(iq1, Param::IQK1, module_value(L, "pre_cal", swap ? "requan_scale_a" : "requan_scale_b"), 0.0, true);
  emit_cfg(iq1);

  vp_cfg_fm(mp, dtype_a, L.output_dtype[0], ifms[ia].dims(), ofm.dims());

  // B's own box and format, written when they differ from A's or when an
  // earlier one is in force on this core (programs without any keep the
  // reference's meaning: B in A's box).
  if (two && (fm1_needed || cfg_[static_cast<int>(Opcode::vp_cfg_fm1)])) {
    Instruction fm1(Opcode::vp_cfg_fm1);
    fm1.mapping = mp;
    fm1.set_enum(Param::IDF, fmt_of_dtype(dtype_b));
    fm1.set_list(Param::STile, ifms[ib].dims());
    emit_cfg(fm1);
  }

  // The parameters of the activation functions that take any (the
  // interpreter's defaults when the Frontend IR gives none).
  if (lut == isa::Lut::Clip || lut == isa::Lut::LeakyRelu || lut == isa::Lut::Elu || lut == isa::Lut::HardSigmoid) {
    Instruction ac(Opcode::vp_cfg_act);
    ac.mapping = mp;
    double a = 0.0, b = 0.0;
    if (lut == isa::Lut::Clip) a = attr_or(L, "min", 0.0), b = attr_or(L, "max", 6.0);
    if (lut == isa::Lut::LeakyRelu) a = attr_or(L, "alpha", 0.01);
    if (lut == isa::Lut::Elu) a = attr_or(L, "alpha", 1.0);
    if (lut == isa::Lut::HardSigmoid) a = attr_or(L, "alpha", double(1.0f / 6.0f)), b = attr_or(L, "beta", 0.5);
    ac.set_float(Param::ACTPM, a);
    ac.set_float(Param::ACTPM1, b);
    emit_cfg(ac);
  }

  auto od = dims_of(t.ofmap_lower, t.ofmap_upper);
  Instruction tp(Opcode::vp_cfg_tp);
  tp.mapping = mp;
  auto st = L.strides();
  auto win = L.pool_size.value_or(std::array<int64_t, 2>{1, 1});
  std::optional<fir::ResizeGeometry> rsg;
  if (resize) {
    std::string why;
    rsg = fir::resize_geometry(L, &why);
    if (!rsg) fail(sh_.o, p + "/layer_name", "layer \"" + L.name + "\" (resize): " + why);
    // KERNEL: the taps each output blends (priced per output pixel).
    win = rsg->mode == 0 ? std::array<int64_t, 2>{2, 2} : std::array<int64_t, 2>{1, 1};
  }
  tp.set_list(Param::STRIDE, {static_cast<int32_t>(st[0]), static_cast<int32_t>(st[1])});
  tp.set_list(Param::KERNEL, {static_cast<int32_t>(win[0]), static_cast<int32_t>(win[1])});
  tp.set_list(Param::Tile, {i32(od[1], sh_.o, p, "tile"), i32(od[2], sh_.o, p, "tile"), i32(od[3], sh_.o, p, "tile")});
  tp.set(Param::T1F, L.lut_code(1));
  tp.set(Param::T0F, L.lut_code(0));
  // Max pooling pads with the smallest 16-bit value.
  tp.set(Param::PADV_AREA, maxpool ? std::numeric_limits<int16_t>::min() : 0);
  emit_cfg(tp);

  if (pool && !resize) {
    // Dilated windows and averages over the elements inside the input: a
    // vp_cfg_pl, written back to its reset value before a plain pool after one.
    auto dil = L.dilations();
    const Json* cip = nullptr;
    if (const Json* a = L.activation_attr()) cip = a->find("count_include_pad");
    const bool inside = !maxpool && cip && cip->is_bool() && !cip->as_bool();
    if (dil[0] != 1 || dil[1] != 1 || inside || cfg_[static_cast<int>(Opcode::vp_cfg_pl)]) {
      Instruction pl(Opcode::vp_cfg_pl);
      pl.mapping = mp;
      pl.set_list(Param::DILATION, {i32(dil[0], sh_.o, p, "dilation"), i32(dil[1], sh_.o, p, "dilation")});
      pl.set(Param::PLDIV, inside ? 1 : 0);
      emit_cfg(pl);
    }
  }
  if (resize) {
    // The coordinate map of the layer and where this tile sits in it: its
    // first output pixel and the input pixel at STaddr, in layer coordinates.
    Instruction rs(Opcode::vp_cfg_rs);
    rs.mapping = mp;
    rs.set(Param::RSMD, rsg->mode);
    rs.set_float(Param::RSKH, rsg->axis[0].step);
    rs.set_float(Param::RSKW, rsg->axis[1].step);
    rs.set_float(Param::RSBH, rsg->axis[0].offset);
    rs.set_float(Param::RSBW, rsg->axis[1].offset);
    rs.set_list(Param::RSIN, {i32(rsg->axis[0].in, sh_.o, p, "resize"), i32(rsg->axis[1].in, sh_.o, p, "resize")});
    rs.set_list(Param::RSOO, {i32(t.ofmap_lower[2], sh_.o, p, "tile"), i32(t.ofmap_lower[3], sh_.o, p, "tile")});
    rs.set_list(Param::RSIO, {i32(t.ifmap_lower[2], sh_.o, p, "tile"), i32(t.ifmap_lower[3], sh_.o, p, "tile")});
    emit_cfg(rs);
  }

  const bool float_in = L.input_dtype[0] == "float16";
  const int64_t iqen = (sh_.dialect == Dialect::Wl0 && float_in) ? 0 : 1;
  const int64_t gpmd = L.has_relu_group() ? 69 : 4;
  // A VP instruction processes one sample ([C, H, W]): a tile of several
  // samples is one instruction per sample, each at that sample's addresses.
  for (int64_t n = 0; n < od[0]; ++n) {
    int64_t daddr = ofm.addr(rol[0] + n, rol[1], rol[2], rol[3]);
    if (daddr < ofm.base || daddr >= ofm.base + ofm.size)
      fail(sh_.o, p + "/tile_info/tile_num_" + std::to_string(ti),
           "the workload's ofmap corner is outside its buffer [" + std::to_string(ofm.base) + ", " +
               std::to_string(ofm.base + ofm.size) + ")");
    Meta m;
    m.kind = Kind::Compute;
    for (const auto& x : ifms) m.reads.push_back(x.range());
    m.writes = {{Space::L2, daddr, ofm.base + ofm.size}};
    if (pool) {
      const auto& pad = t.tile_padding_tblr;
      Instruction in(Opcode::vp_pool);
      in.mapping = mp;
      in.set(Param::IQEN, iqen);
      in.set(Param::QEN, 3);
      in.set(Param::SHMD, 0);
      in.set(Param::GPMD, gpmd);
      in.set(Param::LUT, static_cast<int64_t>(lut));
      in.set(Param::IPH, -pad[0]);
      in.set(Param::IPW, -pad[2]);
      in.set(Param::STaddr, ifms[0].addr(ril[0] + n, ril[1], ril[2] - pad[0], ril[3] - pad[2]));
      in.set(Param::DTaddr, daddr);
      emit(std::move(in), std::move(m));
    } else {
      Instruction in(Opcode::vp_self);
      in.mapping = mp;
      in.set(Param::IQEN, iqen);
      in.set(Param::QEN, 3);
      in.set(Param::SHMD, 0);
      in.set(Param::GPMD, gpmd);
      in.set(Param::TM, 0);
      in.set(Param::LUT, static_cast<int64_t>(lut));
      int64_t a_first = ifms[ia].addr(ra[0] + n, ra[1], ra[2], ra[3]);
      // (B of one sample, PReLU's slope, serves every sample)
      const int64_t nb = fm1_needed && ifms[ib].d[0] == 1 ? 0 : n;
      int64_t a_second = two ? ifms[ib].addr(rb[0] + nb, rb[1], rb[2], rb[3]) : a_first;
      in.set(Param::STaddr, a_second);
      in.set(Param::STaddr1, a_first);
      in.set(Param::DTaddr, daddr);
      emit(std::move(in), std::move(m));
    }
  }
}

// A tile of a data movement layer (concat, slice, gather): one piece of the
// output, from input `input` of the layer (fir::move_pieces, in the order
// irgen writes the tiles). A piece delivered straight into the output
// tensor (its source entry there has a `place`) needs nothing more; any
// other is read from the input's tensor on this core and copied (dt_cal),
// or requantized by the vector processor where the quantizations differ.
void CoreAssembler::move_tile(size_t k, size_t ti, const sir::Tile& t) {
  const Workload& w = W()[k];
  const fir::Layer& L = layer(k);
  const std::string p = wptr(k) + "/tile_info/tile_num_" + std::to_string(ti);
  std::string why;
  auto pieces = fir::move_pieces(L, w.lower, w.upper, &why);
  if (!pieces) fail(sh_.o, wptr(k) + "/layer_name", "layer \"" + L.name + "\" cannot be cut into moves: " + why);
  if (ti >= pieces->size() || (*pieces)[ti].in_lo != t.ifmap_lower || (*pieces)[ti].in_hi != t.ifmap_upper ||
      (*pieces)[ti].out_lo != t.ofmap_lower || (*pieces)[ti].out_hi() != t.ofmap_upper)
    fail(sh_.o, p, "the tile is not piece " + std::to_string(ti) + " of layer \"" + L.name + "\"'s output box");
  const fir::MovePiece& m = (*pieces)[ti];
  const BufferTensor& ob = ofmap_buffer(k);
  if (ob.source)
    for (const auto& s : *ob.source) {
      if (!s.place) continue;
      const Coord hi = placed_upper(s);
      bool inside = true;
      for (int i = 0; i < 4; ++i) inside = inside && (*s.place)[i] >= t.ofmap_lower[i] && hi[i] <= t.ofmap_upper[i];
      if (inside) return;  // delivered straight into the output
    }
  // The ifmaps are the inputs that give pieces to this box, in input order.
  size_t fi = 0;
  for (size_t i = 0; i < m.input; ++i)
    for (const auto& q : *pieces)
      if (q.input == i) {
        ++fi;
        break;
      }
  if (fi >= w.ifmap.size()) fail(sh_.o, wptr(k) + "/ifmap", "no ifmap for input " + std::to_string(m.input) + " of the tile");
  TensorView src = TensorView::of(input_buffer(k, fi)).place(m.in_lo);
  TensorView dst = TensorView::of(ob).place(m.out_lo);
  const Coord out_hi = m.out_hi();
  if (!src.holds(m.in_lo, m.in_hi) || !dst.holds(m.out_lo, out_hi))
    fail(sh_.o, p, "the piece does not lie inside the tensors it moves between");
  auto d = dims_of(m.in_lo, m.in_hi);
  const auto mp = mapping(k, static_cast<int32_t>(ti));
  const std::string& in_dtype = m.input < L.input_dtype.size() ? L.input_dtype[m.input] : L.input_dtype.at(0);
  if (!fir::move_requantizes(L, m.input)) {
    Instruction c(Opcode::dt_cfg);
    c.mapping = mp;
    c.set_enum(Param::DF, fmt_of_dtype(in_dtype));
    c.set_list(Param::STile, src.dims());
    c.set_list(Param::DTile, dst.dims());
    emit_cfg(c);
    Instruction in(Opcode::dt_cal);
    in.mapping = mp;
    in.set(Param::Order, 0);
    in.set(Param::STaddr, src.addr(m.in_lo[0], m.in_lo[1], m.in_lo[2], m.in_lo[3]));
    in.set(Param::DTaddr, dst.addr(m.out_lo[0], m.out_lo[1], m.out_lo[2], m.out_lo[3]));
    in.set_list(Param::Tile, {i32(d[0], sh_.o, p, "dim"), i32(d[1], sh_.o, p, "dim"), i32(d[2], sh_.o, p, "dim"),
                              i32(d[3], sh_.o, p, "dim")});
    Meta meta;
    meta.kind = Kind::Transform;
    meta.reads = {src.span(m.in_lo, m.in_hi)};
    meta.writes = {dst.span(m.out_lo, out_hi)};
    emit(std::move(in), std::move(meta));
    return;
  }
  // Requantization: real = q * scale + zero_point * scale, then the output's
  // quantization (the interpreter's arithmetic, int8_ops.hpp).
  const bool int8_in = in_dtype == "int8", int8_out = L.output_dtype.at(0) == "int8";
  const auto& qi = L.quant_info;
  if (int8_in && (!qi || m.input >= qi->inputs.size()))
    fail(sh_.o, wptr(k) + "/layer_name", "layer \"" + L.name + "\" lacks the quantization of input " + std::to_string(m.input + 1));
  if (int8_out && (!qi || !qi->output_scale || !qi->output_zero_point))
    fail(sh_.o, wptr(k) + "/layer_name", "layer \"" + L.name + "\" has an INT8 output but no output quantisation");
  Instruction gcs(Opcode::vp_cfg_gcs);
  gcs.mapping = mp;
  gcs.set_enum(Param::CMPS, isa::CMPS::DEFAULT);
  emit_cfg(gcs);
  Instruction gms(Opcode::vp_cfg_gms);
  gms.mapping = mp;
  gms.set(Param::MG0V, 0);
  emit_cfg(gms);
  Instruction sms(Opcode::vp_cfg_sms);
  sms.mapping = mp;
  emit_cfg(sms);
  Instruction qp(Opcode::vp_cfg_qp);
  qp.mapping = mp;
  qp.set_enum(Param::QCS, int8_out ? isa::Float2Fixed::ROUND : isa::Float2Fixed::CEIL);
  if (int8_out) {
    qp.set_float(Param::QB, *qi->output_zero_point);
    qp.set_float(Param::QK, *qi->output_scale);
  } else {
    qp.set(Param::QB, 0);
    qp.set(Param::QK, 1);
  }
  emit_cfg(qp);
  Instruction iq(Opcode::vp_cfg_iq);
  iq.mapping = mp;
  if (int8_in) {
    const auto& q = qi->inputs[m.input];
    iq.set_float(Param::IQB0, q.zero_point * q.scale);
    iq.set_float(Param::IQK0, q.scale);
  } else {
    iq.set(Param::IQB0, 0);
    iq.set(Param::IQK0, 1);
  }
  emit_cfg(iq);
  Instruction iq1(Opcode::vp_cfg_iq1);
  iq1.mapping = mp;
  iq1.set_float(Param::IQB1, 0.0);
  iq1.set_float(Param::IQK1, 0.0);
  emit_cfg(iq1);
  vp_cfg_fm(mp, in_dtype, L.output_dtype[0], src.dims(), dst.dims());
  Instruction tp(Opcode::vp_cfg_tp);
  tp.mapping = mp;
  tp.set_list(Param::STRIDE, {1, 1});
  tp.set_list(Param::KERNEL, {1, 1});
  tp.set_list(Param::Tile, {i32(d[1], sh_.o, p, "tile"), i32(d[2], sh_.o, p, "tile"), i32(d[3], sh_.o, p, "tile")});
  tp.set(Param::T1F, 0);
  tp.set(Param::T0F, 7);
  tp.set(Param::PADV_AREA, 0);
  emit_cfg(tp);
  // One instruction per sample, as every VP operation.
  for (int64_t n = 0; n < d[0]; ++n) {
    const int64_t sa = src.addr(m.in_lo[0] + n, m.in_lo[1], m.in_lo[2], m.in_lo[3]);
    const int64_t da = dst.addr(m.out_lo[0] + n, m.out_lo[1], m.out_lo[2], m.out_lo[3]);
    Coord slo = m.in_lo, shi = m.in_hi, dlo = m.out_lo, dhi = out_hi;
    slo[0] = shi[0] = m.in_lo[0] + n;
    dlo[0] = dhi[0] = m.out_lo[0] + n;
    Instruction in(Opcode::vp_self);
    in.mapping = mp;
    in.set(Param::IQEN, 1);
    in.set(Param::QEN, 3);
    in.set(Param::SHMD, 0);
    in.set(Param::GPMD, 4);
    in.set(Param::TM, 0);
    in.set(Param::LUT, static_cast<int64_t>(isa::Lut::Requantize));
    in.set(Param::STaddr, sa);
    in.set(Param::STaddr1, sa);
    in.set(Param::DTaddr, da);
    Meta meta;
    meta.kind = Kind::Compute;
    meta.reads = {src.span(slo, shi)};
    meta.writes = {dst.span(dlo, dhi)};
    emit(std::move(in), std::move(meta));
  }
}

}  // namespace cct::assembler::detail
