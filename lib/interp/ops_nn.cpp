// Neural-network operators: convolution, pooling, normalisation, Gemm,
// MatMul, Softmax and reductions.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "interp/gemm.hpp"
#include "interp/ops_common.hpp"
#include "interp/parallel.hpp"

namespace cct::interp::detail {
namespace {

// 1-D and 2-D sliding windows share the 2-D code: a 1-D input is viewed as
// height 1. This is the 2-D view.
struct Window2 {
  int64_t N, C, H, W, Ho, Wo;
  int64_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
};

Window2 window2(const Node& n, const Tensor& x, const std::vector<int64_t>& kernel, bool ceil_mode) {
  if (x.rank() != 3 && x.rank() != 4)
    fail(n, "input of rank " + std::to_string(x.rank()) + " not supported (1-D and 2-D spatial inputs only)");
  std::vector<int64_t> spatial(x.shape.begin() + 2, x.shape.end());
  Window w = resolve_window(n, spatial, kernel, ceil_mode);
  Window2 r{};
  r.N = x.shape[0];
  r.C = x.shape[1];
  if (x.rank() == 3) {
    r.H = 1; r.W = spatial[0]; r.Ho = 1; r.Wo = w.out[0];
    r.kh = 1; r.kw = w.kernel[0]; r.sh = 1; r.sw = w.stride[0]; r.dh = 1; r.dw = w.dilation[0];
    r.pt = 0; r.pb = 0; r.pl = w.pad_begin[0]; r.pr = w.pad_end[0];
  } else {
    r.H = spatial[0]; r.W = spatial[1]; r.Ho = w.out[0]; r.Wo = w.out[1];
    r.kh = w.kernel[0]; r.kw = w.kernel[1]; r.sh = w.stride[0]; r.sw = w.stride[1];
    r.dh = w.dilation[0]; r.dw = w.dilation[1];
    r.pt = w.pad_begin[0]; r.pl = w.pad_begin[1]; r.pb = w.pad_end[0]; r.pr = w.pad_end[1];
  }
  if (r.Ho <= 0 || r.Wo <= 0) fail(n, "empty output");
  return r;
}

Shape out_shape(const Tensor& x, int64_t channels, const Window2& w) {
  if (x.rank() == 3) return {w.N, channels, w.Wo};
  return {w.N, channels, w.Ho, w.Wo};
}

std::string check_spatial_rank(const Node& n, const char* what) {
  if (n.has("kernel_shape") && n.get_ints("kernel_shape").size() > 2)
    return std::string(what) + " with " + std::to_string(n.get_ints("kernel_shape").size()) +
           " spatial dimensions is not supported (1-D and 2-D only)";
  return "";
}

// ---- Conv -------------------------------------------------------------------

// One image, one group: rows (c, i, j) x columns (oh, ow).
void im2col(const float* x, int64_t C, const Window2& w, float* col) {
  int64_t cols = w.Ho * w.Wo;
  int64_t rows = C * w.kh * w.kw;
  parallel_for(rows, 8, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t c = r / (w.kh * w.kw), i = (r / w.kw) % w.kh, j = r % w.kw;
      const float* plane = x + c * w.H * w.W;
      float* dst = col + r * cols;
      for (int64_t oh = 0; oh < w.Ho; ++oh) {
        int64_t ih = oh * w.sh - w.pt + i * w.dh;
        float* d = dst + oh * w.Wo;
        if (ih < 0 || ih >= w.H) {
          std::fill(d, d + w.Wo, 0.0f);
          continue;
        }
        const float* src = plane + ih * w.W;
        int64_t off = j * w.dw - w.pl;
        // valid ow range: 0 <= ow*sw + off < W
        int64_t lo = off >= 0 ? 0 : (-off + w.sw - 1) / w.sw;
        int64_t hi = w.W - off <= 0 ? 0 : std::min(w.Wo, (w.W - off + w.sw - 1) / w.sw);
        lo = std::min(lo, w.Wo);
        hi = std::max(hi, lo);
        std::fill(d, d + lo, 0.0f);
        if (w.sw == 1) {
          std::memcpy(d + lo, src + lo + off, static_cast<size_t>(hi - lo) * sizeof(float));
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) d[ow] = src[ow * w.sw + off];
        }
        std::fill(d + hi, d + w.Wo, 0.0f);
      }
    }
  });
}

// Direct convolution for groups with one input channel (depthwise).
void depthwise(const float* x, const float* wt, const float* bias, float* y, const Window2& w, int64_t M,
               int64_t multiplier) {
  parallel_for(w.N * M, 4, [&](int64_t b, int64_t e) {
    for (int64_t nm = b; nm < e; ++nm) {
      int64_t n = nm / M, m = nm % M, c = m / multiplier;
      const float* plane = x + (n * w.C + c) * w.H * w.W;
      const float* k = wt + m * w.kh * w.kw;
      float* out = y + nm * w.Ho * w.Wo;
      float b0 = bias ? bias[m] : 0.0f;
      for (int64_t oh = 0; oh < w.Ho; ++oh) {
        for (int64_t ow = 0; ow < w.Wo; ++ow) {
          float s = 0.0f;
          for (int64_t i = 0; i < w.kh; ++i) {
            int64_t ih = oh * w.sh - w.pt + i * w.dh;
            if (ih < 0 || ih >= w.H) continue;
            for (int64_t j = 0; j < w.kw; ++j) {
              int64_t iw = ow * w.sw - w.pl + j * w.dw;
              if (iw < 0 || iw >= w.W) continue;
              s += plane[ih * w.W + iw] * k[i * w.kw + j];
            }
          }
          out[oh * w.Wo + ow] = s + b0;
        }
      }
    }
  });
}

void k_conv(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need_float(n, in, 0);
  const Tensor& wt = need_float(n, in, 1);
  const Tensor* bias = opt(in, 2);
  int64_t group = n.get_int("group", 1);
  if (wt.rank() != x.rank()) fail(n, "weight rank " + std::to_string(wt.rank()) + " does not match input rank " + std::to_string(x.rank()));
  if (x.rank() < 3) fail(n, "input must have at least 3 dimensions");
  int64_t M = wt.shape[0], Cg = wt.shape[1];
  std::vector<int64_t> kernel = n.get_ints("kernel_shape", Shape(wt.shape.begin() + 2, wt.shape.end()));
  if (kernel != Shape(wt.shape.begin() + 2, wt.shape.end())) fail(n, "kernel_shape does not match the weight shape");
  if (group <= 0 || x.shape[1] != Cg * group || M % group != 0)
    fail(n, "channels do not match: input " + shape_str(x.shape) + ", weight " + shape_str(wt.shape) + ", group " + std::to_string(group));
  if (bias && (bias->numel() != M || !bias->is_float())) fail(n, "bias must hold " + std::to_string(M) + " floats");
  Window2 w = window2(n, x, kernel, false);
  Tensor y = Tensor::floats(out_shape(x, M, w));
  int64_t Mg = M / group;
  int64_t K = Cg * w.kh * w.kw;
  int64_t P = w.Ho * w.Wo;
  const float* b = bias ? bias->f.data() : nullptr;
  if (Cg == 1 && w.kh * w.kw > 1) {
    depthwise(x.f.data(), wt.f.data(), b, y.f.data(), w, M, Mg);
    out[0] = std::move(y);
    return;
  }
  bool direct = w.kh == 1 && w.kw == 1 && w.sh == 1 && w.sw == 1 && w.pt == 0 && w.pl == 0 && w.pb == 0 && w.pr == 0;
  std::vector<float> col(direct ? 0 : static_cast<size_t>(K * P));
  for (int64_t img = 0; img < w.N; ++img) {
    for (int64_t g = 0; g < group; ++g) {
      const float* src = x.f.data() + (img * x.shape[1] + g * Cg) * w.H * w.W;
      const float* B = src;
      if (!direct) {
        im2col(src, Cg, w, col.data());
        B = col.data();
      }
      float* dst = y.f.data() + (img * M + g * Mg) * P;
      sgemm(Mg, P, K, wt.f.data() + g * Mg * K, K, B, P, dst, P, false);
    }
  }
  if (b) {
    parallel_for(w.N * M, 16, [&](int64_t s, int64_t e) {
      for (int64_t nm = s; nm < e; ++nm) {
        float bv = b[nm % M];
        float* d = y.f.data() + nm * P;
        for (int64_t p = 0; p < P; ++p) d[p] += bv;
      }
    });
  }
  out[0] = std::move(y);
}

std::string check_conv(const Node& n, int, const Graph*) { return check_spatial_rank(n, "Conv"); }

// ConvTranspose (1-D and 2-D): per image and group, the columns
// col[(k, a, b), (h, w)] = sum_c W[c, k, a, b] * x[c, h, w] (one sgemm by the
// transposed weights), then each column scattered to the output pixel
// (h * sh - pt + a * dh, w * sw - pl + b * dw) it reaches, in (k, a, b, h, w)
// order; the bias last.
void k_conv_transpose(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need_float(n, in, 0);
  const Tensor& wt = need_float(n, in, 1);
  const Tensor* bias = opt(in, 2);
  const int64_t group = n.get_int("group", 1);
  if (wt.rank() != x.rank()) fail(n, "weight rank " + std::to_string(wt.rank()) + " does not match input rank " + std::to_string(x.rank()));
  if (x.rank() != 3 && x.rank() != 4)
    fail(n, "input of rank " + std::to_string(x.rank()) + " not supported (1-D and 2-D spatial inputs only)");
  const int64_t C = x.shape[1], Kg = wt.shape[1];
  if (group <= 0 || wt.shape[0] != C || C % group != 0)
    fail(n, "channels do not match: input " + shape_str(x.shape) + ", weight " + shape_str(wt.shape) + ", group " + std::to_string(group));
  const int64_t M = Kg * group, Cg = C / group;
  std::vector<int64_t> kernel = n.get_ints("kernel_shape", Shape(wt.shape.begin() + 2, wt.shape.end()));
  if (kernel != Shape(wt.shape.begin() + 2, wt.shape.end())) fail(n, "kernel_shape does not match the weight shape");
  if (bias && (bias->numel() != M || !bias->is_float())) fail(n, "bias must hold " + std::to_string(M) + " floats");
  std::vector<int64_t> spatial(x.shape.begin() + 2, x.shape.end());
  TransposeWindow tw = resolve_transpose_window(n, spatial, kernel);
  // The 2-D view (a 1-D input has height 1).
  const bool one = x.rank() == 3;
  const int64_t N = x.shape[0], H = one ? 1 : spatial[0], W = spatial.back();
  const int64_t kh = one ? 1 : kernel[0], kw = kernel.back();
  const int64_t sh = one ? 1 : tw.stride[0], sw = tw.stride.back(), dh = one ? 1 : tw.dilation[0], dw = tw.dilation.back();
  const int64_t pt = one ? 0 : tw.pad_begin[0], pl = tw.pad_begin.back();
  const int64_t Ho = one ? 1 : tw.out[0], Wo = tw.out.back();
  Shape ys = one ? Shape{N, M, Wo} : Shape{N, M, Ho, Wo};
  Tensor y = Tensor::floats(ys);
  const int64_t R = Kg * kh * kw, P = H * W;
  // A[(k, a, b), c] = W[g * Cg + c, k, a, b]
  std::vector<float> a(static_cast<size_t>(group * R * Cg)), col(static_cast<size_t>(R * P));
  for (int64_t g = 0; g < group; ++g)
    for (int64_t c = 0; c < Cg; ++c)
      for (int64_t r = 0; r < R; ++r)
        a[static_cast<size_t>((g * R + r) * Cg + c)] = wt.f[static_cast<size_t>((g * Cg + c) * R + r)];
  for (int64_t img = 0; img < N; ++img)
    for (int64_t g = 0; g < group; ++g) {
      sgemm(R, P, Cg, a.data() + g * R * Cg, Cg, x.f.data() + (img * C + g * Cg) * P, P, col.data(), P, false);
      parallel_for(Kg, 1, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) {
          float* dst = y.f.data() + (img * M + g * Kg + k) * Ho * Wo;
          for (int64_t i = 0; i < kh; ++i)
            for (int64_t j = 0; j < kw; ++j) {
              const float* src = col.data() + ((k * kh + i) * kw + j) * P;
              for (int64_t h = 0; h < H; ++h) {
                int64_t oh = h * sh - pt + i * dh;
                if (oh < 0 || oh >= Ho) continue;
                for (int64_t w = 0; w < W; ++w) {
                  int64_t ow = w * sw - pl + j * dw;
                  if (ow >= 0 && ow < Wo) dst[oh * Wo + ow] += src[h * W + w];
                }
              }
            }
        }
      });
    }
  if (bias)
    for (int64_t nm = 0; nm < N * M; ++nm)
      for (int64_t p = 0; p < Ho * Wo; ++p) y.f[static_cast<size_t>(nm * Ho * Wo + p)] += bias->f[static_cast<size_t>(nm % M)];
  out[0] = std::move(y);
}

std::string check_conv_transpose(const Node& n, int, const Graph* g) {
  std::string why = check_spatial_rank(n, "ConvTranspose");
  if (why.empty() && g)
    for (int v : {n.input(0), n.input(1)})
      if (v >= 0 && g->value(v).has_shape && g->value(v).shape.size() > 4)
        why = "ConvTranspose with " + std::to_string(g->value(v).shape.size() - 2) +
              " spatial dimensions is not supported (1-D and 2-D only)";
  return why;
}

// ---- Pooling ----------------------------------------------------------------

void k_max_pool(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need_float(n, in, 0);
  if (!n.has("kernel_shape")) fail(n, "kernel_shape is required");
  Window2 w = window2(n, x, n.get_ints("kernel_shape"), n.get_int("ceil_mode", 0) != 0);
  Tensor y = Tensor::floats(out_shape(x, w.C, w));
  parallel_for(w.N * w.C, 4, [&](int64_t b, int64_t e) {
    for (int64_t nc = b; nc < e; ++nc) {
      const float* plane = x.f.data() + nc * w.H * w.W;
      float* o = y.f.data() + nc * w.Ho * w.Wo;
      for (int64_t oh = 0; oh < w.Ho; ++oh)
        for (int64_t ow = 0; ow < w.Wo; ++ow) {
          float m = -std::numeric_limits<float>::infinity();
          for (int64_t i = 0; i < w.kh; ++i) {
            int64_t ih = oh * w.sh - w.pt + i * w.dh;
            if (ih < 0 || ih >= w.H) continue;
            for (int64_t j = 0; j < w.kw; ++j) {
              int64_t iw = ow * w.sw - w.pl + j * w.dw;
              if (iw < 0 || iw >= w.W) continue;
              m = std::max(m, plane[ih * w.W + iw]);
            }
          }
          o[oh * w.Wo + ow] = m;
        }
    }
  });
  out[0] = std::move(y);
}

std::string check_max_pool(const Node& n, int, const Graph*) {
  if (n.outputs.size() > 1 && n.outputs[1] >= 0) return "MaxPool with an Indices output is not supported";
  return check_spatial_rank(n, "MaxPool");
}

void k_avg_pool(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need_float(n, in, 0);
  if (!n.has("kernel_shape")) fail(n, "kernel_shape is required");
  Window2 w = window2(n, x, n.get_ints("kernel_shape"), n.get_int("ceil_mode", 0) != 0);
  bool include_pad = n.get_int("count_include_pad", 0) != 0;
  Tensor y = Tensor::floats(out_shape(x, w.C, w));
  parallel_for(w.N * w.C, 4, [&](int64_t b, int64_t e) {
    for (int64_t nc = b; nc < e; ++nc) {
      const float* plane = x.f.data() + nc * w.H * w.W;
      float* o = y.f.data() + nc * w.Ho * w.Wo;
      for (int64_t oh = 0; oh < w.Ho; ++oh)
        for (int64_t ow = 0; ow < w.Wo; ++ow) {
          float s = 0.0f;
          int64_t count = 0, padded = 0;
          for (int64_t i = 0; i < w.kh; ++i) {
            int64_t ih = oh * w.sh - w.pt + i * w.dh;
            bool in_pad_h = ih >= -w.pt && ih < w.H + w.pb;
            for (int64_t j = 0; j < w.kw; ++j) {
              int64_t iw = ow * w.sw - w.pl + j * w.dw;
              if (in_pad_h && iw >= -w.pl && iw < w.W + w.pr) ++padded;
              if (ih < 0 || ih >= w.H || iw < 0 || iw >= w.W) continue;
              s += plane[ih * w.W + iw];
              ++count;
            }
          }
          int64_t div = include_pad ? padded : count;
          o[oh * w.Wo + ow] = div > 0 ? s / static_cast<float>(div) : 0.0f;
        }
    }
  });
  out[0] = std::move(y);
}

std::string check_avg_pool(const Node& n, int, const Graph*) { return check_spatial_rank(n, "AveragePool"); }

template <bool MAX>
void k_global_pool(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need_float(n, in, 0);
  if (x.rank() < 3) fail(n, "input must have at least 3 dimensions");
  Shape s = x.shape;
  int64_t plane = 1;
  for (size_t d = 2; d < s.size(); ++d) {
    plane *= s[d];
    s[d] = 1;
  }
  Tensor y = Tensor::floats(s);
  int64_t planes = x.shape[0] * x.shape[1];
  for (int64_t p = 0; p < planes; ++p) {
    const float* src = x.f.data() + p * plane;
    if (MAX) {
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t k = 0; k < plane; ++k) m = std::max(m, src[k]);
      y.f[p] = m;
    } else {
      double acc = 0.0;
      for (int64_t k = 0; k < plane; ++k) acc += src[k];
      y.f[p] = static_cast<float>(acc / static_cast<double>(plane));
    }
  }
  out[0] = std::move(y);
}

// ---- Normalisation ------------------------------------------------------------

void k_batch_norm(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need_float(n, in, 0);
  const Tensor& scale = need_float(n, in, 1);
  const Tensor& bias = need_float(n, in, 2);
  const Tensor& mean = need_float(n, in, 3);
  const Tensor& var = need_float(n, in, 4);
  float eps = n.get_float("epsilon", 1e-5f);
  if (x.rank() < 2) fail(n, "input must have at least 2 dimensions");
  int64_t C = x.shape[1];
  if (scale.numel() != C || bias.numel() != C || mean.numel() != C || var.numel() != C)
    fail(n, "scale, B, mean and var must hold " + std::to_string(C) + " values");
  int64_t inner = 1;
  for (size_t d = 2; d < x.shape.size(); ++d) inner *= x.shape[d];
  Tensor y = Tensor::floats(x.shape);
  for (int64_t nc = 0; nc < x.shape[0] * C; ++nc) {
    int64_t c = nc % C;
    float a = scale.f[c] / std::sqrt(var.f[c] + eps);
    float b = bias.f[c] - mean.f[c] * a;
    const float* s = x.f.data() + nc * inner;
    float* d = y.f.data() + nc * inner;
    for (int64_t k = 0; k < inner; ++k) d[k] = s[k] * a + b;
  }
  out[0] = std::move(y);
}

std::string check_batch_norm(const Node& n, int opset, const Graph*) {
  if (n.get_int("training_mode", 0) != 0) return "BatchNormalization in training mode is not supported";
  if (opset < 9 && n.get_int("spatial", 1) == 0) return "BatchNormalization with spatial=0 is not supported";
  for (size_t k = 1; k < n.outputs.size(); ++k)
    if (n.outputs[k] >= 0) return "BatchNormalization training outputs (running mean/var) are not supported";
  return "";
}

void k_instance_norm(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need_float(n, in, 0);
  const Tensor& scale = need_float(n, in, 1);
  const Tensor& bias = need_float(n, in, 2);
  float eps = n.get_float("epsilon", 1e-5f);
  if (x.rank() < 3) fail(n, "input must have at least 3 dimensions");
  int64_t C = x.shape[1], inner = 1;
  for (size_t d = 2; d < x.shape.size(); ++d) inner *= x.shape[d];
  if (scale.numel() != C || bias.numel() != C) fail(n, "scale and B must hold " + std::to_string(C) + " values");
  Tensor y = Tensor::floats(x.shape);
  for (int64_t nc = 0; nc < x.shape[0] * C; ++nc) {
    const float* s = x.f.data() + nc * inner;
    double mean = 0.0, var = 0.0;
    for (int64_t k = 0; k < inner; ++k) mean += s[k];
    mean /= static_cast<double>(inner);
    for (int64_t k = 0; k < inner; ++k) var += (s[k] - mean) * (s[k] - mean);
    var /= static_cast<double>(inner);
    float a = static_cast<float>(scale.f[nc % C] / std::sqrt(var + eps));
    for (int64_t k = 0; k < inner; ++k)
      y.f[nc * inner + k] = static_cast<float>(s[k] - mean) * a + bias.f[nc % C];
  }
  out[0] = std::move(y);
}

void k_layer_norm(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need_float(n, in, 0);
  const Tensor& scale = need_float(n, in, 1);
  const Tensor* bias = opt(in, 2);
  float eps = n.get_float("epsilon", 1e-5f);
  int64_t axis = normalize_axis(n.get_int("axis", -1), x.rank(), "LayerNormalization");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < x.rank(); ++d) (d < axis ? outer : inner) *= x.shape[d];
  Shape norm_shape(x.shape.begin() + axis, x.shape.end());
  std::string what = "node '" + n.name + "' (LayerNormalization)";
  Shape sshape = broadcast_shape(norm_shape, scale.shape, what);
  if (sshape != norm_shape) fail(n, "Scale does not broadcast to the normalised dimensions");
  std::vector<float> sc(static_cast<size_t>(inner)), bi(static_cast<size_t>(inner), 0.0f);
  broadcast_runs(norm_shape, norm_shape, scale.shape, [&](int64_t o, int64_t, int64_t, int64_t ib, int64_t sb, int64_t len) {
    for (int64_t k = 0; k < len; ++k) sc[o + k] = scale.f[ib + k * sb];
  });
  if (bias) {
    if (broadcast_shape(norm_shape, bias->shape, what) != norm_shape) fail(n, "B does not broadcast to the normalised dimensions");
    broadcast_runs(norm_shape, norm_shape, bias->shape, [&](int64_t o, int64_t, int64_t, int64_t ib, int64_t sb, int64_t len) {
      for (int64_t k = 0; k < len; ++k) bi[o + k] = bias->f[ib + k * sb];
    });
  }
  Tensor y = Tensor::floats(x.shape);
  Shape stat_shape = x.shape;
  for (int64_t d = axis; d < x.rank(); ++d) stat_shape[d] = 1;
  Tensor mean_t = Tensor::floats(stat_shape), inv_t = Tensor::floats(stat_shape);
  for (int64_t o = 0; o < outer; ++o) {
    const float* s = x.f.data() + o * inner;
    float mean = 0.0f;
    for (int64_t k = 0; k < inner; ++k) mean += s[k];
    mean /= static_cast<float>(inner);
    float var = 0.0f;
    for (int64_t k = 0; k < inner; ++k) var += (s[k] - mean) * (s[k] - mean);
    var /= static_cast<float>(inner);
    float inv = 1.0f / std::sqrt(var + eps);
    for (int64_t k = 0; k < inner; ++k) y.f[o * inner + k] = (s[k] - mean) * inv * sc[k] + bi[k];
    mean_t.f[o] = mean;
    inv_t.f[o] = inv;
  }
  out[0] = std::move(y);
  if (out.size() > 1) out[1] = std::move(mean_t);
  if (out.size() > 2) out[2] = std::move(inv_t);
}

// ---- Gemm / MatMul ------------------------------------------------------------

std::vector<float> transpose2d(const float* a, int64_t rows, int64_t cols) {
  std::vector<float> t(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = a[r * cols + c];
  return t;
}

void k_gemm(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& A = need_float(n, in, 0);
  const Tensor& B = need_float(n, in, 1);
  const Tensor* C = opt(in, 2);
  if (A.rank() != 2 || B.rank() != 2) fail(n, "A and B must be 2-D");
  bool ta = n.get_int("transA", 0) != 0, tb = n.get_int("transB", 0) != 0;
  float alpha = n.get_float("alpha", 1.0f), beta = n.get_float("beta", 1.0f);
  int64_t M = ta ? A.shape[1] : A.shape[0], K = ta ? A.shape[0] : A.shape[1];
  int64_t Kb = tb ? B.shape[1] : B.shape[0], N = tb ? B.shape[0] : B.shape[1];
  if (K != Kb) fail(n, "inner dimensions differ: A " + shape_str(A.shape) + ", B " + shape_str(B.shape));
  Tensor y = Tensor::floats({M, N});
  if (tb) {
    // Y^T (N x M) = B (N x K) * A'^T (K x M): the weight is used in place.
    std::vector<float> at = ta ? A.f : transpose2d(A.f.data(), M, K);
    std::vector<float> yt(static_cast<size_t>(N * M));
    sgemm(N, M, K, B.f.data(), K, at.data(), M, yt.data(), M, false);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) y.f[i * N + j] = yt[j * M + i];
  } else {
    std::vector<float> a = ta ? transpose2d(A.f.data(), K, M) : std::vector<float>();
    sgemm(M, N, K, ta ? a.data() : A.f.data(), K, B.f.data(), N, y.f.data(), N, false);
  }
  if (alpha != 1.0f)
    for (float& v : y.f) v *= alpha;
  if (C && beta != 0.0f) {
    if (!C->is_float()) fail(n, "C must be floating-point");
    Shape s = broadcast_shape(y.shape, C->shape, "node '" + n.name + "' (Gemm)");
    if (s != y.shape) fail(n, "C " + shape_str(C->shape) + " does not broadcast to " + shape_str(y.shape));
    broadcast_runs(y.shape, y.shape, C->shape, [&](int64_t o, int64_t, int64_t, int64_t ib, int64_t sb, int64_t len) {
      for (int64_t k = 0; k < len; ++k) y.f[o + k] += beta * C->f[ib + k * sb];
    });
  }
  out[0] = std::move(y);
}

void k_matmul(const Node& n, int, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& A0 = need_float(n, in, 0);
  const Tensor& B0 = need_float(n, in, 1);
  if (A0.rank() == 0 || B0.rank() == 0) fail(n, "inputs must not be scalars");
  Shape as = A0.shape, bs = B0.shape;
  bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), 1);
  if (b1) bs.push_back(1);
  int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  if (bs[bs.size() - 2] != K) fail(n, "inner dimensions differ: " + shape_str(A0.shape) + " x " + shape_str(B0.shape));
  Shape abatch(as.begin(), as.end() - 2), bbatch(bs.begin(), bs.end() - 2);
  Shape batch = broadcast_shape(abatch, bbatch, "node '" + n.name + "' (MatMul)");
  Shape ys = batch;
  ys.push_back(M);
  ys.push_back(N);
  Tensor y = Tensor::floats(ys);
  int64_t nb = shape_numel(batch);
  if (bbatch.empty() || shape_numel(bbatch) == 1) {
    if (shape_numel(abatch) == nb) {
      // all of A's rows against one B: a single GEMM
      sgemm(nb * M, N, K, A0.f.data(), K, B0.f.data(), N, y.f.data(), N, false);
      nb = 0;
    }
  }
  if (nb > 0) {
    std::vector<int64_t> sa = broadcast_strides(batch, abatch), sb = broadcast_strides(batch, bbatch);
    std::vector<int64_t> idx(batch.size(), 0);
    for (int64_t b = 0; b < nb; ++b) {
      int64_t ia = 0, ib = 0;
      for (size_t d = 0; d < batch.size(); ++d) {
        ia += idx[d] * sa[d];
        ib += idx[d] * sb[d];
      }
      sgemm(M, N, K, A0.f.data() + ia * M * K, K, B0.f.data() + ib * K * N, N, y.f.data() + b * M * N, N, false);
      for (size_t d = batch.size(); d-- > 0;) {
        if (++idx[d] < batch[d]) break;
        idx[d] = 0;
      }
    }
  }
  Shape final_shape = batch;
  if (!a1) final_shape.push_back(M);
  if (!b1) final_shape.push_back(N);
  y.shape = final_shape;
  out[0] = std::move(y);
}

// ---- Softmax ------------------------------------------------------------------

template <bool LOG>
void k_softmax(const Node& n, int opset, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need_float(n, in, 0);
  int64_t axis = normalize_axis(n.get_int("axis", opset < 13 ? 1 : -1), std::max<int64_t>(x.rank(), 1), n.op);
  int64_t outer = 1, len = 1, inner = 1;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d < axis) outer *= x.shape[d];
    else if (opset < 13 || d == axis) len *= x.shape[d];
    else inner *= x.shape[d];
  }
  Tensor y = Tensor::floats(x.shape);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const float* s = x.f.data() + o * len * inner + i;
      float* d = y.f.data() + o * len * inner + i;
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t k = 0; k < len; ++k) m = std::max(m, s[k * inner]);
      float sum = 0.0f;
      for (int64_t k = 0; k < len; ++k) {
        float e = std::exp(s[k * inner] - m);
        d[k * inner] = e;
        sum += e;
      }
      if (LOG) {
        float ls = std::log(sum);
        for (int64_t k = 0; k < len; ++k) d[k * inner] = s[k * inner] - m - ls;
      } else {
        for (int64_t k = 0; k < len; ++k) d[k * inner] /= sum;
      }
    }
  out[0] = std::move(y);
}

// ---- Reductions ---------------------------------------------------------------

enum class Red { Mean, Sum, Max, Min, Prod, SumSquare, L1, L2, LogSum, LogSumExp };

template <Red R>
void k_reduce(const Node& n, int opset, const KernelInputs& in, std::vector<Tensor>& out) {
  // Max, Min, Sum and Prod of integers (a detector's index arithmetic) are
  // exact in int64; the other reductions need floating point.
  constexpr bool exact = R == Red::Max || R == Red::Min || R == Red::Sum || R == Red::Prod;
  const Tensor& x = exact && in.size() > 0 && in[0] && !in[0]->is_float() ? *in[0] : need_float(n, in, 0);
  std::vector<int64_t> axes;
  bool axes_as_input = R == Red::Sum ? opset >= 13 : opset >= 18;
  if (axes_as_input) {
    if (const Tensor* a = opt(in, 1)) axes = a->to_ints();
  } else {
    axes = n.get_ints("axes");
  }
  bool keep = n.get_int("keepdims", 1) != 0;
  if (axes.empty() && n.get_int("noop_with_empty_axes", 0) != 0) {
    out[0] = x;
    return;
  }
  std::vector<char> reduced(static_cast<size_t>(x.rank()), axes.empty() ? 1 : 0);
  for (int64_t a : axes) reduced[normalize_axis(a, x.rank(), n.op)] = 1;
  Shape keep_shape = x.shape;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (reduced[d]) keep_shape[d] = 1;
  // The output's shape: without keepdims, the reduced axes dropped.
  Shape out_shape;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (keep || !reduced[d]) out_shape.push_back(keep_shape[d]);
  int64_t count = x.numel() / std::max<int64_t>(1, shape_numel(keep_shape));
  std::vector<double> acc(static_cast<size_t>(shape_numel(keep_shape)));
  double init = 0.0;
  if (R == Red::Max) init = -std::numeric_limits<double>::infinity();
  if (R == Red::Min) init = std::numeric_limits<double>::infinity();
  if (R == Red::Prod) init = 1.0;
  std::vector<double> maxes;
  if (R == Red::LogSumExp) {
    maxes.assign(acc.size(), -std::numeric_limits<double>::infinity());
    broadcast_runs(x.shape, x.shape, keep_shape, [&](int64_t o, int64_t, int64_t, int64_t ib, int64_t sb, int64_t len) {
      for (int64_t k = 0; k < len; ++k) maxes[ib + k * sb] = std::max(maxes[ib + k * sb], static_cast<double>(x.f[o + k]));
    });
  }
  if (!x.is_float()) {
    std::vector<int64_t> ia(acc.size(), R == Red::Max   ? std::numeric_limits<int64_t>::min()
                                        : R == Red::Min ? std::numeric_limits<int64_t>::max()
                                        : R == Red::Prod ? 1 : 0);
    broadcast_runs(x.shape, x.shape, keep_shape, [&](int64_t o, int64_t, int64_t, int64_t ib, int64_t sb, int64_t len) {
      for (int64_t k = 0; k < len; ++k) {
        int64_t v = x.i[o + k];
        int64_t& a = ia[ib + k * sb];
        if (R == Red::Max) a = std::max(a, v);
        else if (R == Red::Min) a = std::min(a, v);
        else if (R == Red::Prod) a *= v;
        else a += v;
      }
    });
    Tensor y = Tensor::ints(keep_shape, std::move(ia), x.dtype);
    y.shape = out_shape;
    out[0] = std::move(y);
    return;
  }
  std::fill(acc.begin(), acc.end(), init);
  broadcast_runs(x.shape, x.shape, keep_shape, [&](int64_t o, int64_t, int64_t, int64_t ib, int64_t sb, int64_t len) {
    for (int64_t k = 0; k < len; ++k) {
      double v = x.f[o + k];
      double& a = acc[ib + k * sb];
      switch (R) {
        case Red::Mean: case Red::Sum: case Red::LogSum: a += v; break;
        case Red::Max: a = std::max(a, v); break;
        case Red::Min: a = std::min(a, v); break;
        case Red::Prod: a *= v; break;
        case Red::SumSquare: case Red::L2: a += v * v; break;
        case Red::L1: a += std::fabs(v); break;
        case Red::LogSumExp: a += std::exp(v - maxes[ib + k * sb]); break;
      }
    }
  });
  Tensor y = Tensor::floats(keep_shape);
  for (size_t k = 0; k < acc.size(); ++k) {
    double a = acc[k];
    if (R == Red::Mean) a /= static_cast<double>(count);
    if (R == Red::L2) a = std::sqrt(a);
    if (R == Red::LogSum) a = std::log(a);
    if (R == Red::LogSumExp) a = std::log(a) + maxes[k];
    y.f[k] = static_cast<float>(a);
  }
  y.shape = out_shape;
  out[0] = std::move(y);
}

// ---- Resize / Upsample ----------------------------------------------------------

// The ONNX specification (opsets 7-19) in double: nearest and linear over the
// last two axes (the leading ones keep their size), every
// coordinate_transformation_mode but tf_crop_and_resize. (The quantized
// layer's arithmetic is int8::resize_tap, not this.)
struct ResizeSpec {
  std::string mode, ctm, nearest;
  std::vector<double> scales;   // per axis
  std::vector<int64_t> sizes;   // per axis
};

ResizeSpec resize_spec(const Node& n, int opset, const KernelInputs& in, const Tensor& x) {
  ResizeSpec r;
  r.mode = n.get_string("mode", "nearest");
  bool upsample = n.op == "Upsample";
  r.ctm = upsample || opset < 11 ? "asymmetric" : n.get_string("coordinate_transformation_mode", "half_pixel");
  r.nearest = upsample || opset < 11 ? "floor" : n.get_string("nearest_mode", "round_prefer_floor");
  if (upsample && opset < 9) {
    for (float f : n.get_floats("scales")) r.scales.push_back(f);
  } else {
    size_t si = upsample || opset < 11 ? 1 : 2;
    const Tensor* sc = opt(in, si);
    const Tensor* sz = upsample || opset < 11 ? nullptr : opt(in, 3);
    if (sz && sz->numel() > 0) {
      r.sizes = sz->to_ints();
    } else if (sc && sc->numel() > 0) {
      for (int64_t k = 0; k < sc->numel(); ++k) r.scales.push_back(sc->at_double(k));
    }
  }
  size_t rank = x.shape.size();
  if (!r.sizes.empty()) {
    if (r.sizes.size() != rank) fail(n, "sizes must hold one value per axis");
    r.scales.clear();
    for (size_t d = 0; d < rank; ++d) r.scales.push_back(double(r.sizes[d]) / double(x.shape[d]));
  } else {
    if (r.scales.size() != rank) fail(n, "scales or sizes must hold one value per axis");
    for (size_t d = 0; d < rank; ++d) {
      if (!(r.scales[d] > 0)) fail(n, "scales must be positive");
      r.sizes.push_back(int64_t(std::floor(double(x.shape[d]) * r.scales[d])));
    }
  }
  for (size_t d = 0; d + 2 < rank; ++d)
    if (r.sizes[d] != x.shape[d]) fail(n, "only the last two axes may be resized");
  return r;
}

// Source coordinate of output index o along an axis (ONNX's formulas).
double resize_coordinate(const ResizeSpec& r, double o, double scale, int64_t in, int64_t out) {
  if (r.ctm == "half_pixel") return (o + 0.5) / scale - 0.5;
  if (r.ctm == "pytorch_half_pixel") return out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
  if (r.ctm == "align_corners") {
    double len = scale * double(in);
    return len > 1.0 ? o * double(in - 1) / (len - 1.0) : 0.0;
  }
  if (r.ctm == "tf_half_pixel_for_nn") return (o + 0.5) / scale;
  return o / scale;  // asymmetric
}

void k_resize(const Node& n, int opset, const KernelInputs& in, std::vector<Tensor>& out) {
  const Tensor& x = need_float(n, in, 0);
  if (x.rank() < 1) fail(n, "input must have at least one dimension");
  ResizeSpec r = resize_spec(n, opset, in, x);
  Shape ys = r.sizes;
  Tensor y = Tensor::floats(ys);
  size_t rank = x.shape.size();
  int64_t H = rank >= 2 ? x.shape[rank - 2] : 1, W = x.shape[rank - 1];
  int64_t Ho = rank >= 2 ? ys[rank - 2] : 1, Wo = ys[rank - 1];
  double sh = rank >= 2 ? r.scales[rank - 2] : 1.0, sw = r.scales[rank - 1];
  int64_t planes = H * W > 0 ? x.numel() / (H * W) : 0;
  auto taps = [&](int64_t o, double scale, int64_t len, int64_t olen, int64_t& i0, int64_t& i1, double& w1) {
    double c = resize_coordinate(r, double(o), scale, len, olen);
    if (r.mode == "nearest") {
      double v = r.nearest == "round_prefer_ceil" ? std::floor(c + 0.5)
                 : r.nearest == "floor"           ? std::floor(c)
                 : r.nearest == "ceil"            ? std::ceil(c)
                                                  : std::ceil(c - 0.5);
      i0 = i1 = std::clamp<int64_t>(int64_t(v), 0, len - 1);
      w1 = 0.0;
      return;
    }
    double f = std::floor(c);
    i0 = std::clamp<int64_t>(int64_t(f), 0, len - 1);
    i1 = std::clamp<int64_t>(int64_t(f) + 1, 0, len - 1);
    w1 = c - f;
  };
  for (int64_t p = 0; p < planes; ++p) {
    const float* s = x.f.data() + p * H * W;
    float* d = y.f.data() + p * Ho * Wo;
    for (int64_t oh = 0; oh < Ho; ++oh) {
      int64_t h0, h1, w0, w1i;
      double ly, lx;
      taps(oh, sh, H, Ho, h0, h1, ly);
      for (int64_t ow = 0; ow < Wo; ++ow) {
        taps(ow, sw, W, Wo, w0, w1i, lx);
        double top = s[h0 * W + w0] * (1.0 - lx) + s[h0 * W + w1i] * lx;
        double bot = s[h1 * W + w0] * (1.0 - lx) + s[h1 * W + w1i] * lx;
        d[oh * Wo + ow] = static_cast<float>(top * (1.0 - ly) + bot * ly);
      }
    }
  }
  out[0] = std::move(y);
}

std::string check_resize(const Node& n, int opset, const Graph*) {
  std::string mode = n.get_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && !(n.op == "Upsample" && mode == "bilinear"))
    return n.op + " mode '" + mode + "' is not supported (nearest and linear only)";
  if (n.op == "Resize" && opset >= 11) {
    std::string ctm = n.get_string("coordinate_transformation_mode", "half_pixel");
    if (ctm != "half_pixel" && ctm != "pytorch_half_pixel" && ctm != "align_corners" && ctm != "asymmetric" &&
        ctm != "tf_half_pixel_for_nn")
      return "Resize coordinate_transformation_mode '" + ctm + "' is not supported";
    std::string nm = n.get_string("nearest_mode", "round_prefer_floor");
    if (nm != "round_prefer_floor" && nm != "round_prefer_ceil" && nm != "floor" && nm != "ceil")
      return "Resize nearest_mode '" + nm + "' is not supported";
    if (n.get_int("antialias", 0) != 0) return "Resize with antialias is not supported";
    if (n.has("axes")) return "Resize with axes is not supported";
    if (n.get_string("keep_aspect_ratio_policy", "stretch") != "stretch")
      return "Resize keep_aspect_ratio_policy other than stretch is not supported";
  }
  return "";
}

}  // namespace

void register_nn(std::vector<KernelEntry>& t) {
  t.push_back({"Conv", k_conv, check_conv});
  t.push_back({"ConvTranspose", k_conv_transpose, check_conv_transpose});
  t.push_back({"MaxPool", k_max_pool, check_max_pool});
  t.push_back({"AveragePool", k_avg_pool, check_avg_pool});
  t.push_back({"GlobalAveragePool", k_global_pool<false>, nullptr});
  t.push_back({"GlobalMaxPool", k_global_pool<true>, nullptr});
  t.push_back({"BatchNormalization", k_batch_norm, check_batch_norm});
  t.push_back({"InstanceNormalization", k_instance_norm, nullptr});
  t.push_back({"LayerNormalization", k_layer_norm, nullptr});
  t.push_back({"Gemm", k_gemm, nullptr});
  t.push_back({"MatMul", k_matmul, nullptr});
  t.push_back({"Softmax", k_softmax<false>, nullptr});
  t.push_back({"LogSoftmax", k_softmax<true>, nullptr});
  t.push_back({"ReduceMean", k_reduce<Red::Mean>, nullptr});
  t.push_back({"ReduceSum", k_reduce<Red::Sum>, nullptr});
  t.push_back({"ReduceMax", k_reduce<Red::Max>, nullptr});
  t.push_back({"ReduceMin", k_reduce<Red::Min>, nullptr});
  t.push_back({"ReduceProd", k_reduce<Red::Prod>, nullptr});
  t.push_back({"ReduceSumSquare", k_reduce<Red::SumSquare>, nullptr});
  t.push_back({"ReduceL1", k_reduce<Red::L1>, nullptr});
  t.push_back({"ReduceL2", k_reduce<Red::L2>, nullptr});
  t.push_back({"ReduceLogSum", k_reduce<Red::LogSum>, nullptr});
  t.push_back({"ReduceLogSumExp", k_reduce<Red::LogSumExp>, nullptr});
  t.push_back({"Resize", k_resize, check_resize});
  t.push_back({"Upsample", k_resize, check_resize});
}

}  // namespace cct::interp::detail
