// fir::pe_conv: the convolution the PE array runs for a conv2d or dense layer.
#include <doctest/doctest.h>

#include <string>

#include "fir/fir.hpp"

using namespace cct;

namespace {

fir::Layer layer(fir::Op op, std::vector<fir::Shape> in) {
  fir::Layer l;
  l.name = "L";
  l.op = op;
  l.operation = std::string(fir::op_name(op));
  l.input_shape = std::move(in);
  return l;
}

}  // namespace

TEST_CASE("pe_conv: dense layers are convolutions over their input viewed as [N, C, H, W]") {
  // [N, C] x [K, C]: a 1x1 convolution.
  auto pc = fir::pe_conv(layer(fir::Op::Dense, {{2, 20}, {24, 20}}));
  REQUIRE(pc);
  CHECK(pc->weight == std::array<int64_t, 4>{24, 20, 1, 1});
  CHECK(pc->kernel == std::array<int64_t, 2>{1, 1});
  CHECK(pc->stride == std::array<int64_t, 2>{1, 1});
  CHECK(pc->pads == std::array<int64_t, 4>{0, 0, 0, 0});
  // A flatten absorbed: [N, 256, 6, 6] x [K, 256, 6, 6] (or [K, 9216]) is a 6x6 one.
  for (const fir::Shape& w : {fir::Shape{4096, 256, 6, 6}, fir::Shape{4096, 9216}}) {
    pc = fir::pe_conv(layer(fir::Op::Dense, {{1, 256, 6, 6}, w}));
    REQUIRE(pc);
    CHECK(pc->weight == std::array<int64_t, 4>{4096, 256, 6, 6});
    CHECK(pc->kernel == std::array<int64_t, 2>{6, 6});
  }
  // ResNet's classifier after global pooling.
  pc = fir::pe_conv(layer(fir::Op::Dense, {{1, 2048, 1, 1}, {1000, 2048, 1, 1}}));
  REQUIRE(pc);
  CHECK(pc->weight == std::array<int64_t, 4>{1000, 2048, 1, 1});
  // Tokens: [N, T, D] x [K, D] reads the features of each token, the
  // channels of the pixels of its box [N, D, T, 1]: a 1x1 convolution.
  pc = fir::pe_conv(layer(fir::Op::Dense, {{1, 32, 64}, {128, 64}}));
  REQUIRE(pc);
  CHECK(pc->weight == std::array<int64_t, 4>{128, 64, 1, 1});
  CHECK(pc->kernel == std::array<int64_t, 2>{1, 1});
  std::string why;
  CHECK_FALSE(fir::pe_conv(layer(fir::Op::Dense, {{1, 32, 64}, {128, 32}}), &why));
  CHECK(why.find("does not take each sample") != std::string::npos);
  // No weights, a matmul of two activations, a pooling layer.
  CHECK_FALSE(fir::pe_conv(layer(fir::Op::Dense, {{1, 20}}), &why));
  CHECK_FALSE(fir::pe_conv(layer(fir::Op::MatMul, {{1, 4, 8}, {1, 8, 4}}), &why));
  CHECK(why.find("matmul") != std::string::npos);
  CHECK_FALSE(fir::pe_conv(layer(fir::Op::MaxPool2d, {{1, 4, 8, 8}})));
}

TEST_CASE("pe_conv: a conv2d keeps its weights and geometry") {
  fir::Layer l = layer(fir::Op::Conv2d, {{1, 8, 14, 14}, {16, 4, 3, 3}});
  l.kernel_size = std::array<int64_t, 2>{3, 3};
  l.stride = std::array<int64_t, 2>{2, 2};
  l.padding = std::array<int64_t, 4>{1, 1, 1, 1};
  l.groups = 2;
  auto pc = fir::pe_conv(l);
  REQUIRE(pc);
  CHECK(pc->weight == std::array<int64_t, 4>{16, 4, 3, 3});
  CHECK(pc->kernel == std::array<int64_t, 2>{3, 3});
  CHECK(pc->stride == std::array<int64_t, 2>{2, 2});
  CHECK(pc->pads == std::array<int64_t, 4>{1, 1, 1, 1});
  CHECK(pc->groups == 2);
  l.input_shape[1] = {16, 4, 3};
  std::string why;
  CHECK_FALSE(fir::pe_conv(l, &why));
  CHECK(why.find("[K, C, kh, kw]") != std::string::npos);
}

TEST_CASE("chip_box: the box the chip holds a tensor in; tokens are rows of pixels, not the batch") {
  CHECK(fir::chip_box({2, 8, 5, 7}) == std::array<int64_t, 4>{2, 8, 5, 7});
  CHECK(fir::chip_box({2, 8}) == std::array<int64_t, 4>{2, 8, 1, 1});
  CHECK(fir::chip_box({2, 197, 768}) == std::array<int64_t, 4>{2, 768, 197, 1});
  // [N, T, D] row-major is NHWC of [N, D, T, 1]: element (n, t, d) is box (n, d, t, 0).
  const fir::Shape s{2, 3, 4};
  for (int64_t f = 0; f < 24; ++f) {
    const int64_t n = f / 12, t = f / 4 % 3, d = f % 4;
    CHECK(fir::chip_index(s, f) == (n * 4 + d) * 3 + t);
    CHECK(fir::chip_index({2, 3, 4, 1}, f) == f);
    CHECK(fir::fir_index(s, fir::chip_index(s, f)) == f);  // the inverse
    CHECK(fir::fir_index({2, 3, 4, 1}, f) == f);
  }
  // A constant broadcast on the last axes: a bias [D] of tokens is one value per channel.
  CHECK(fir::chip_box_broadcast({768}, 3) == std::array<int64_t, 4>{1, 768, 1, 1});
  CHECK(fir::chip_box_broadcast({1, 8, 1, 1}, 4) == std::array<int64_t, 4>{1, 8, 1, 1});
}
