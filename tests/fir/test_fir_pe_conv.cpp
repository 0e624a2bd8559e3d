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
  // Tokens: [N, T, D] x [K, D] reads the last axis only; not a convolution here.
  std::string why;
  CHECK_FALSE(fir::pe_conv(layer(fir::Op::Dense, {{1, 32, 64}, {128, 64}}), &why));
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
