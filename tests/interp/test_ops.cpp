#include <doctest/doctest.h>

#include <array>
#include <random>

#include "interp/float_interp.hpp"
#include "interp/int8_ops.hpp"
#include "interp/ops.hpp"
#include "support/error.hpp"

using namespace cct;
using namespace cct::interp;

namespace {
Node make(const std::string& op, int inputs) {
  Node n;
  n.op = op;
  n.name = op + "_test";
  for (int k = 0; k < inputs; ++k) n.inputs.push_back(k);
  n.outputs.push_back(inputs);
  return n;
}
Attribute ints(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::Ints;
  a.ints = std::move(v);
  return a;
}
}  // namespace

TEST_CASE("Conv with padding, stride and groups") {
  Node n = make("Conv", 2);
  n.attrs["pads"] = ints({1, 1, 1, 1});
  n.attrs["strides"] = ints({2, 2});
  Tensor x = Tensor::floats({1, 1, 4, 4});
  for (int k = 0; k < 16; ++k) x.f[k] = static_cast<float>(k);
  Tensor w = Tensor::floats({1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  std::vector<Tensor> out;
  run_kernel(n, 13, {&x, &w}, out);
  REQUIRE(out[0].shape == Shape{1, 1, 2, 2});
  // windows centred at (0,0), (0,2), (2,0), (2,2) with zero padding
  CHECK(out[0].f[0] == 0 + 1 + 4 + 5);
  CHECK(out[0].f[1] == 1 + 2 + 3 + 5 + 6 + 7);
  CHECK(out[0].f[3] == 5 + 6 + 7 + 9 + 10 + 11 + 13 + 14 + 15);
}

TEST_CASE("MaxPool ceil_mode drops a window that would start in the padding") {
  Node n = make("MaxPool", 1);
  n.attrs["kernel_shape"] = ints({2, 2});
  n.attrs["strides"] = ints({2, 2});
  Attribute c;
  c.kind = Attribute::Kind::Int;
  c.i = 1;
  n.attrs["ceil_mode"] = c;
  Tensor x = Tensor::floats({1, 1, 5, 5});
  std::vector<Tensor> out;
  run_kernel(n, 13, {&x}, out);
  CHECK(out[0].shape == Shape{1, 1, 3, 3});
}

TEST_CASE("kernels report bad inputs naming the node") {
  Node n = make("Add", 2);
  Tensor a = Tensor::floats({2, 3}), b = Tensor::floats({4});
  std::vector<Tensor> out;
  try {
    run_kernel(n, 13, {&a, &b}, out);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("Add_test") != std::string::npos);
    CHECK(std::string(e.what()).find("do not broadcast") != std::string::npos);
  }
}

TEST_CASE("unsupported operators and attributes are named") {
  Node n = make("LSTM", 1);
  CHECK(unsupported_reason(n, 13).find("LSTM") != std::string::npos);
  Node bn = make("BatchNormalization", 5);
  Attribute t;
  t.kind = Attribute::Kind::Int;
  t.i = 1;
  bn.attrs["training_mode"] = t;
  CHECK(unsupported_reason(bn, 15).find("training") != std::string::npos);
  CHECK(has_kernel("Conv"));
  CHECK_FALSE(has_kernel("Loop"));
}

// ---- ConvTranspose and the resize padding modes ------------------------------

namespace {
// ConvTranspose by its definition: every input pixel scatters its kernel.
Tensor naive_conv_transpose(const Tensor& x, const Tensor& w, int64_t group, std::array<int64_t, 2> s,
                            std::array<int64_t, 2> d, std::array<int64_t, 2> pb, std::array<int64_t, 2> out) {
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t Kg = w.shape[1], kh = w.shape[2], kw = w.shape[3], Cg = C / group;
  Tensor y = Tensor::floats({N, Kg * group, out[0], out[1]});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t x0 = 0; x0 < W; ++x0)
          for (int64_t k = 0; k < Kg; ++k)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t b = 0; b < kw; ++b) {
                int64_t oh = h * s[0] - pb[0] + a * d[0], ow = x0 * s[1] - pb[1] + b * d[1];
                if (oh < 0 || oh >= out[0] || ow < 0 || ow >= out[1]) continue;
                int64_t m = c / Cg * Kg + k;
                y.f[size_t(((n * Kg * group + m) * out[0] + oh) * out[1] + ow)] +=
                    x.f[size_t(((n * C + c) * H + h) * W + x0)] * w.f[size_t(((c * Kg + k) * kh + a) * kw + b)];
              }
  return y;
}
Tensor random_tensor(Shape s, uint64_t seed) {
  Tensor t = Tensor::floats(s);
  std::mt19937_64 r(seed);
  for (auto& v : t.f) v = float(int64_t(r() % 17) - 8) / 4.0f;  // exact quarters: sums are exact
  return t;
}
}  // namespace

TEST_CASE("ConvTranspose: strides, pads, output_padding, output_shape, auto_pad, dilation and groups by definition") {
  struct Case {
    std::array<int64_t, 2> s, d, pb, pe, op;
    int64_t group;
    std::vector<int64_t> output_shape;
    std::string auto_pad;
  };
  const Case cases[] = {
      {{1, 1}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, 1, {}, ""},
      {{2, 2}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, {}, ""},
      {{3, 2}, {1, 1}, {1, 2}, {1, 2}, {0, 0}, 2, {}, ""},
      {{2, 3}, {2, 1}, {0, 1}, {2, 0}, {1, 2}, 2, {}, ""},
      {{3, 2}, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, {10, 8}, ""},
      {{2, 2}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, 1, {}, "SAME_UPPER"},
      {{2, 2}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, 1, {}, "SAME_LOWER"},
  };
  int seed = 1;
  for (const Case& k : cases) {
    CAPTURE(seed);
    Node n = make("ConvTranspose", 2);
    n.attrs["strides"] = ints({k.s[0], k.s[1]});
    n.attrs["dilations"] = ints({k.d[0], k.d[1]});
    n.attrs["pads"] = ints({k.pb[0], k.pb[1], k.pe[0], k.pe[1]});
    n.attrs["output_padding"] = ints({k.op[0], k.op[1]});
    if (!k.output_shape.empty()) n.attrs["output_shape"] = ints(k.output_shape);
    if (!k.auto_pad.empty()) {
      Attribute a;
      a.kind = Attribute::Kind::String;
      a.s = k.auto_pad;
      n.attrs["auto_pad"] = a;
    }
    Attribute g;
    g.kind = Attribute::Kind::Int;
    g.i = k.group;
    n.attrs["group"] = g;
    Tensor x = random_tensor({2, 4, 3, 4}, seed), w = random_tensor({4, 3, 3, 2}, seed + 100);
    ++seed;
    std::vector<Tensor> out;
    run_kernel(n, 13, {&x, &w}, out);
    TransposeWindow tw = resolve_transpose_window(n, {3, 4}, {3, 2});
    std::array<int64_t, 2> pb = {tw.pad_begin[0], tw.pad_begin[1]};
    if (!k.output_shape.empty()) CHECK(tw.out == k.output_shape);
    if (k.auto_pad == "SAME_UPPER") CHECK(tw.out == std::vector<int64_t>{6, 8});
    if (k.auto_pad == "SAME_UPPER") CHECK(tw.pad_begin == std::vector<int64_t>{0, 0});  // total 1 and 0: the odd row after
    if (k.auto_pad == "SAME_LOWER") CHECK(tw.pad_begin == std::vector<int64_t>{1, 0});
    Tensor want = naive_conv_transpose(x, w, k.group, k.s, k.d, pb, {tw.out[0], tw.out[1]});
    REQUIRE(out[0].shape == want.shape);
    CHECK(out[0].f == want.f);
  }
}

TEST_CASE("ConvTranspose is a stride-1 convolution over the zero-inserted input by the flipped, channel-swapped kernel") {
  // The lowering onnx2fir writes (formats/Frontend_IR_Format.md): checked in
  // float on one case with stride, asymmetric pads, output_padding, dilation
  // and two groups, with the zero insertion and padding of resize mode 5.
  const int64_t group = 2, C = 4, Kg = 3, kh = 3, kw = 2, H = 3, W = 4;
  Node n = make("ConvTranspose", 2);
  n.attrs["strides"] = ints({3, 2});
  n.attrs["dilations"] = ints({1, 2});
  n.attrs["pads"] = ints({1, 0, 2, 1});
  n.attrs["output_padding"] = ints({2, 1});
  Attribute g;
  g.kind = Attribute::Kind::Int;
  g.i = group;
  n.attrs["group"] = g;
  Tensor x = random_tensor({1, C, H, W}, 7), w = random_tensor({C, Kg, kh, kw}, 8);
  std::vector<Tensor> out;
  run_kernel(n, 13, {&x, &w}, out);
  TransposeWindow tw = resolve_transpose_window(n, {H, W}, {kh, kw});
  // zero insertion with `pre` zeros before the input (int8::resize_tap, mode Zeros)
  std::array<int64_t, 2> pre{}, up{};
  for (int d = 0; d < 2; ++d) {
    int64_t ext = ((d ? kw : kh) - 1) * tw.dilation[d];
    pre[d] = ext - tw.pad_begin[d];
    up[d] = tw.out[d] + ext;
  }
  Tensor z = Tensor::floats({1, C, up[0], up[1]});
  for (int64_t c = 0; c < C; ++c)
    for (int64_t o = 0; o < up[0]; ++o)
      for (int64_t p = 0; p < up[1]; ++p) {
        auto ty = int8::resize_tap(int8::ResizeMode::Zeros, o, float(tw.stride[0]), float(pre[0]), H);
        auto tx = int8::resize_tap(int8::ResizeMode::Zeros, p, float(tw.stride[1]), float(pre[1]), W);
        z.f[size_t((c * up[0] + o) * up[1] + p)] =
            int8::resize_sample(int8::ResizeMode::Zeros, [&](int64_t r, int64_t q) { return x.f[size_t((c * H + r) * W + q)]; }, ty, tx);
      }
  Tensor fw = Tensor::floats({Kg * group, C / group, kh, kw});
  for (int64_t gi = 0; gi < group; ++gi)
    for (int64_t k = 0; k < Kg; ++k)
      for (int64_t c = 0; c < C / group; ++c)
        for (int64_t a = 0; a < kh; ++a)
          for (int64_t b = 0; b < kw; ++b)
            fw.f[size_t((((gi * Kg + k) * (C / group) + c) * kh + a) * kw + b)] =
                w.f[size_t((((gi * (C / group) + c) * Kg + k) * kh + (kh - 1 - a)) * kw + (kw - 1 - b))];
  Node conv = make("Conv", 2);
  conv.attrs["dilations"] = ints({tw.dilation[0], tw.dilation[1]});
  conv.attrs["group"] = g;
  std::vector<Tensor> co;
  run_kernel(conv, 13, {&z, &fw}, co);
  REQUIRE(co[0].shape == out[0].shape);
  CHECK(co[0].f == out[0].f);
}

TEST_CASE("resize padding modes: zero insertion, reflect and edge taps and the rows a tile reads") {
  using int8::ResizeMode;
  // Zeros, stride 3, two rows before: outputs 2, 5, 8 read input 0, 1, 2.
  for (int64_t o = 0; o < 12; ++o) {
    auto t = int8::resize_tap(ResizeMode::Zeros, o, 3.0f, 2.0f, 3);
    bool hit = o >= 2 && (o - 2) % 3 == 0 && (o - 2) / 3 < 3;
    CHECK(t.zero == !hit);
    if (hit) CHECK(t.i0 == (o - 2) / 3);
    CHECK((t.i0 >= 0 && t.i0 < 3));
  }
  // Reflect (ONNX): [c b | a b c d | c b] for pads 2 and in 4; beyond, it folds again.
  const int64_t want[] = {2, 1, 0, 1, 2, 3, 2, 1, 0, 1};
  for (int64_t o = 0; o < 10; ++o) CHECK(int8::resize_tap(ResizeMode::Reflect, o, 1.0f, 2.0f, 4).i0 == want[o]);
  CHECK(int8::reflect_index(-7, 4) == 1);
  CHECK(int8::reflect_index(5, 1) == 0);
  // Edge: clamped.
  for (int64_t o = 0; o < 8; ++o)
    CHECK(int8::resize_tap(ResizeMode::Edge, o, 1.0f, 2.0f, 3).i0 == std::min<int64_t>(std::max<int64_t>(o - 2, 0), 2));
  // Spans: reflect folds back, so a tile in the padding reads rows past its ends' taps.
  CHECK(int8::resize_span(ResizeMode::Reflect, 0, 3, 1.0f, 2.0f, 4) == std::pair<int64_t, int64_t>{0, 2});
  CHECK(int8::resize_span(ResizeMode::Reflect, 0, 9, 1.0f, 2.0f, 4) == std::pair<int64_t, int64_t>{0, 3});
  CHECK(int8::resize_span(ResizeMode::Zeros, 0, 1, 3.0f, 2.0f, 3) == std::pair<int64_t, int64_t>{0, 0});
  CHECK(int8::resize_span(ResizeMode::Zeros, 3, 8, 3.0f, 2.0f, 3) == std::pair<int64_t, int64_t>{0, 2});
  CHECK(int8::resize_span(ResizeMode::Edge, 0, 7, 1.0f, 2.0f, 3) == std::pair<int64_t, int64_t>{0, 2});
  // A hole is zero whatever the input; a hit is the input.
  auto at = [](int64_t r, int64_t c) { return float(10 * r + c + 1); };
  auto hit = int8::resize_tap(ResizeMode::Zeros, 5, 3.0f, 2.0f, 3), hole = int8::resize_tap(ResizeMode::Zeros, 4, 3.0f, 2.0f, 3);
  CHECK(int8::resize_sample(ResizeMode::Zeros, at, hit, hit) == 12.0f);
  CHECK(int8::resize_sample(ResizeMode::Zeros, at, hit, hole) == 0.0f);
}

TEST_CASE("ConvTranspose of three spatial dimensions is refused by name") {
  Node n = make("ConvTranspose", 2);
  n.attrs["kernel_shape"] = ints({3, 3, 3});
  CHECK(unsupported_reason(n, 13).find("ConvTranspose with 3 spatial dimensions") != std::string::npos);
}

// ---- data-dependent operators (ops_dynamic.cpp) -----------------------------
// libonnx-testdata's node tests of NonZero, GatherND, TopK, NonMaxSuppression
// and If run in test_onnx_node_tests.cpp; these pin down what ONNX leaves to
// the implementation (tie order) and the edge cases a detector meets.

TEST_CASE("TopK: ties keep the lower index first, largest and smallest, K = 0") {
  Node n = make("TopK", 2);
  n.outputs = {2, 3};
  Tensor x = Tensor::floats({2, 4}, {1, 3, 3, 2, 5, 5, 5, 4});
  Tensor k = Tensor::ints({1}, {3});
  std::vector<Tensor> out;
  run_kernel(n, 13, {&x, &k}, out);
  CHECK(out[0].f == std::vector<float>{3, 3, 2, 5, 5, 5});
  CHECK(out[1].i == std::vector<int64_t>{1, 2, 3, 0, 1, 2});
  Attribute small;
  small.kind = Attribute::Kind::Int;
  small.i = 0;
  n.attrs["largest"] = small;
  run_kernel(n, 13, {&x, &k}, out);
  CHECK(out[1].i == std::vector<int64_t>{0, 3, 1, 3, 0, 1});
  Tensor k0 = Tensor::ints({1}, {0});
  run_kernel(n, 13, {&x, &k0}, out);
  CHECK(out[0].shape == Shape{2, 0});
  Tensor k5 = Tensor::ints({1}, {5});
  CHECK_THROWS_AS(run_kernel(n, 13, {&x, &k5}, out), Error);
}

TEST_CASE("NonZero of an all-zero tensor is [rank, 0]; GatherND with batch_dims and negative indices") {
  Node nz = make("NonZero", 1);
  Tensor z = Tensor::ints({2, 3}, {0, 0, 0, 0, 0, 0}, DType::Bool);
  std::vector<Tensor> out;
  run_kernel(nz, 13, {&z}, out);
  CHECK(out[0].shape == Shape{2, 0});
  Tensor m = Tensor::ints({2, 3}, {0, 1, 0, 1, 0, 1}, DType::Bool);
  run_kernel(nz, 13, {&m}, out);
  CHECK(out[0].shape == Shape{2, 3});
  CHECK(out[0].i == std::vector<int64_t>{0, 1, 1, 1, 0, 2});

  Node g = make("GatherND", 2);
  Attribute bd;
  bd.kind = Attribute::Kind::Int;
  bd.i = 1;
  g.attrs["batch_dims"] = bd;
  Tensor data = Tensor::floats({2, 3, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  Tensor idx = Tensor::ints({2, 1, 1}, {2, -3});
  run_kernel(g, 13, {&data, &idx}, out);
  CHECK(out[0].shape == Shape{2, 1, 2});
  CHECK(out[0].f == std::vector<float>{4, 5, 6, 7});
  Tensor bad = Tensor::ints({2, 1, 1}, {3, 0});
  CHECK_THROWS_AS(run_kernel(g, 13, {&data, &bad}, out), Error);
}

TEST_CASE("NonMaxSuppression: ties by index, the limit per class, no output for max 0 or no boxes") {
  Node n = make("NonMaxSuppression", 5);
  // Three boxes: 0 and 1 overlap (IoU 0.9), 2 apart; equal scores for 0 and 1.
  Tensor boxes = Tensor::floats({1, 3, 4}, {0, 0, 1, 1, 0, 0, 1, 0.9f, 5, 5, 6, 6});
  Tensor scores = Tensor::floats({1, 1, 3}, {0.8f, 0.8f, 0.9f});
  Tensor max = Tensor::ints({1}, {10});
  Tensor iou = Tensor::floats({1}, {0.5f});
  Tensor thr = Tensor::floats({1}, {0.0f});
  std::vector<Tensor> out;
  run_kernel(n, 13, {&boxes, &scores, &max, &iou, &thr}, out);
  CHECK(out[0].shape == Shape{2, 3});
  CHECK(out[0].i == std::vector<int64_t>{0, 0, 2, 0, 0, 0});
  Tensor one = Tensor::ints({1}, {1});
  run_kernel(n, 13, {&boxes, &scores, &one, &iou, &thr}, out);
  CHECK(out[0].i == std::vector<int64_t>{0, 0, 2});
  Tensor zero = Tensor::ints({1}, {0});
  run_kernel(n, 13, {&boxes, &scores, &zero, &iou, &thr}, out);
  CHECK(out[0].shape == Shape{0, 3});
  Tensor no_boxes = Tensor::floats({1, 0, 4}), no_scores = Tensor::floats({1, 1, 0});
  run_kernel(n, 13, {&no_boxes, &no_scores, &max, &iou, &thr}, out);
  CHECK(out[0].shape == Shape{0, 3});
}

TEST_CASE("If runs the branch its condition picks on the outer values it captured") {
  // then: y = a + a; else: y = a (Identity); the branch reads `a` as its input 0.
  auto branch = [](const std::string& op) {
    auto g = std::make_shared<Graph>();
    Value a;
    a.name = "a";
    g->inputs.push_back(g->add_value(a));
    Value y;
    y.name = "y";
    int yv = g->add_value(y);
    Node n;
    n.op = op;
    n.name = op + "_b";
    n.inputs = op == "Add" ? std::vector<int>{0, 0} : std::vector<int>{0};
    n.outputs = {yv};
    g->nodes.push_back(n);
    g->outputs = {yv};
    g->relink();
    return g;
  };
  Node n = make("If", 2);
  Attribute t, e;
  t.kind = e.kind = Attribute::Kind::Graph;
  t.g = branch("Add");
  e.g = branch("Identity");
  n.attrs["then_branch"] = t;
  n.attrs["else_branch"] = e;
  CHECK(unsupported_reason(n, 13).empty());
  Tensor a = Tensor::floats({2}, {1.5f, -2});
  Tensor yes = Tensor::ints({}, {1}, DType::Bool), no = Tensor::ints({1}, {0}, DType::Bool);
  std::vector<Tensor> out;
  run_kernel(n, 13, {&yes, &a}, out);
  CHECK(out[0].f == std::vector<float>{3, -4});
  run_kernel(n, 13, {&no, &a}, out);
  CHECK(out[0].f == std::vector<float>{1.5f, -2});
  CHECK_THROWS_AS(run_kernel(n, 13, {&yes}, out), Error);  // the captured value missing
}
