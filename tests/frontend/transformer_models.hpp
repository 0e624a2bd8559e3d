// Small ONNX models of transformer-era blocks, written as torch exports them
// (opset 13: LayerNorm decomposed, GELU in its erf form), shared by the
// lowering tests (tests/frontend) and the end-to-end tests (tests/func).
#pragma once

#include <cmath>
#include <string>

#include "onnx_builder.hpp"

namespace cct::testing {

// torch's LayerNorm over the last axis at opset 13: ReduceMean, Sub, Pow 2,
// ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta.
inline void layer_norm_last_axis(OnnxBuilder& b, const std::string& x, const std::string& out, int64_t d) {
  const std::string p = out + "_ln";
  auto axes = std::vector<int64_t>{-1};
  OnnxBuilder::attr(b.node("ReduceMean", {x}, {p + "_mu"}), "axes", axes);
  b.node("Sub", {x, p + "_mu"}, {p + "_xc"});
  b.init(p + "_two", {}, {2.0f}).init(p + "_eps", {}, {1e-6f});
  b.node("Pow", {p + "_xc", p + "_two"}, {p + "_sq"});
  OnnxBuilder::attr(b.node("ReduceMean", {p + "_sq"}, {p + "_var"}), "axes", axes);
  b.node("Add", {p + "_var", p + "_eps"}, {p + "_ve"});
  b.node("Sqrt", {p + "_ve"}, {p + "_sd"});
  b.node("Div", {p + "_xc", p + "_sd"}, {p + "_n"});
  b.random_init(p + "_gamma", {d}, 0.5f).random_init(p + "_beta", {d}, 0.2f);
  b.node("Mul", {p + "_n", p + "_gamma"}, {p + "_g"});
  b.node("Add", {p + "_g", p + "_beta"}, {out});
}

// torch's Linear over the last axis: MatMul by W^T [din, dout], then Add with
// the bias as first operand.
inline void linear_last_axis(OnnxBuilder& b, const std::string& x, const std::string& out, int64_t din, int64_t dout) {
  b.random_init(out + "_w", {din, dout}, 0.4f).random_init(out + "_b", {dout}, 0.1f);
  b.node("MatMul", {x, out + "_w"}, {out + "_mm"});
  b.node("Add", {out + "_b", out + "_mm"}, {out});
}

// GELU, erf form: x * 0.5 * (1 + erf(x / sqrt 2)) as torch writes it.
inline void gelu_erf(OnnxBuilder& b, const std::string& x, const std::string& out) {
  b.init(out + "_sqrt2", {}, {1.4142135f}).init(out + "_one", {}, {1.0f}).init(out + "_half", {}, {0.5f});
  b.node("Div", {x, out + "_sqrt2"}, {out + "_d"});
  b.node("Erf", {out + "_d"}, {out + "_e"});
  b.node("Add", {out + "_e", out + "_one"}, {out + "_a"});
  b.node("Mul", {x, out + "_a"}, {out + "_m"});
  b.node("Mul", {out + "_m", out + "_half"}, {out});
}

// A ConvNeXt block on x [N, C, H, W]: depthwise 3x3 conv, permute to NHWC,
// LayerNorm, Linear C -> 4C, GELU, Linear 4C -> C, permute back, layer scale
// [C, 1, 1], residual add. The Linear layers are channels-last: between the
// permute pair they read the last axis.
inline OnnxBuilder convnext_block(int batch, int64_t c = 8, int64_t hw = 5) {
  OnnxBuilder b;
  b.input("x", {batch, c, hw, hw}).output("y", {batch, c, hw, hw});
  b.random_init("dw_w", {c, 1, 3, 3}, 0.5f).random_init("dw_b", {c}, 0.1f);
  auto& dw = b.node("Conv", {"x", "dw_w", "dw_b"}, {"d"});
  OnnxBuilder::attr(dw, "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxBuilder::attr(dw, "group", c);
  OnnxBuilder::attr(b.node("Transpose", {"d"}, {"t"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
  layer_norm_last_axis(b, "t", "ln", c);
  linear_last_axis(b, "ln", "fc1", c, 4 * c);
  gelu_erf(b, "fc1", "act");
  linear_last_axis(b, "act", "fc2", 4 * c, c);
  OnnxBuilder::attr(b.node("Transpose", {"fc2"}, {"back"}), "perm", std::vector<int64_t>{0, 3, 1, 2});
  b.random_init("ls", {c, 1, 1}, 0.5f);
  b.node("Mul", {"ls", "back"}, {"sc"});
  b.node("Add", {"sc", "x"}, {"y"});
  return b;
}

// Self-attention as torch exports nn.MultiheadAttention(batch_first=True) at
// opset 13, after a LayerNorm and with a residual add, on x [N, T, D]: the
// tokens go sequence-first ([T, N, D]) for the in-projection (MatMul by
// [D, 3D], bias, q/k/v Slices), heads split by Reshape [T, N*H, D/H] and
// Transposes, q scaled by 1/sqrt(D/H), Q.K^T, Softmax, P.V, heads merged by
// Transpose and Reshape [T*N, D], the out-projection a Gemm on [T*N, D],
// Reshape [T, N, D], Transpose back to [N, T, D].
inline OnnxBuilder sequence_first_attention(int batch, int64_t t = 6, int64_t d = 16, int64_t heads = 2) {
  const int64_t n = batch, hd = d / heads;
  OnnxBuilder b;
  b.input("x", {n, t, d}).output("y", {n, t, d});
  layer_norm_last_axis(b, "x", "ln", d);
  auto perm = [&](onnx::NodeProto& node, std::vector<int64_t> p) { OnnxBuilder::attr(node, "perm", p); };
  perm(b.node("Transpose", {"ln"}, {"seq"}), {1, 0, 2});
  b.random_init("in_w", {d, 3 * d}, 0.4f).random_init("in_b", {3 * d}, 0.1f);
  b.node("MatMul", {"seq", "in_w"}, {"in_mm"});
  b.node("Add", {"in_b", "in_mm"}, {"qkv"});
  b.init_i64("axes", {1}, {-1});
  const char* names[] = {"q", "k", "v"};
  for (int64_t i = 0; i < 3; ++i) {
    std::string nm = names[i];
    b.init_i64(nm + "_start", {1}, {i * d}).init_i64(nm + "_end", {1}, {(i + 1) * d});
    b.node("Slice", {"qkv", nm + "_start", nm + "_end", "axes"}, {nm});
    b.init_i64(nm + "_heads", {3}, {t, n * heads, hd});
    b.node("Reshape", {nm, nm + "_heads"}, {nm + "_h"});
  }
  perm(b.node("Transpose", {"q_h"}, {"q_t"}), {1, 0, 2});
  b.init("scale", {}, {std::sqrt(static_cast<float>(hd))});
  b.node("Div", {"q_t", "scale"}, {"q_s"});
  perm(b.node("Transpose", {"k_h"}, {"k_t"}), {1, 2, 0});
  perm(b.node("Transpose", {"v_h"}, {"v_t"}), {1, 0, 2});
  b.node("MatMul", {"q_s", "k_t"}, {"scores"});
  OnnxBuilder::attr(b.node("Softmax", {"scores"}, {"p"}), "axis", int64_t{-1});
  b.node("MatMul", {"p", "v_t"}, {"ctx"});
  perm(b.node("Transpose", {"ctx"}, {"ctx_t"}), {1, 0, 2});
  b.init_i64("merged", {2}, {t * n, d});
  b.node("Reshape", {"ctx_t", "merged"}, {"ctx_2d"});
  b.random_init("out_w", {d, d}, 0.4f).random_init("out_b", {d}, 0.1f);
  OnnxBuilder::attr(b.node("Gemm", {"ctx_2d", "out_w", "out_b"}, {"proj"}), "transB", int64_t{1});
  b.init_i64("seq_shape", {3}, {t, n, d});
  b.node("Reshape", {"proj", "seq_shape"}, {"proj_seq"});
  perm(b.node("Transpose", {"proj_seq"}, {"att"}), {1, 0, 2});
  b.node("Add", {"x", "att"}, {"y"});
  return b;
}

}  // namespace cct::testing
