// fir::move_pieces and move_requantizes: concat, slice and gather as data movement.
#include <doctest/doctest.h>

#include <string>

#include "fir/fir.hpp"
#include "interp/int8_ops.hpp"

using namespace cct;

namespace {

using C = std::array<int64_t, 4>;

fir::Layer layer(fir::Op op, std::vector<fir::Shape> in, fir::Shape out) {
  fir::Layer l;
  l.name = "L";
  l.op = op;
  l.operation = std::string(fir::op_name(op));
  l.input_shape = std::move(in);
  l.output_shape = {std::move(out)};
  return l;
}

}  // namespace

TEST_CASE("move_pieces: a concat of any channel counts, cut by an output box") {
  fir::Layer l = layer(fir::Op::Concat, {{1, 64, 7, 7}, {1, 128, 7, 7}, {1, 32, 7, 7}, {1, 32, 7, 7}}, {1, 256, 7, 7});
  l.axis = 1;
  auto all = fir::move_pieces(l, {0, 0, 0, 0}, {0, 255, 6, 6});
  REQUIRE(all);
  REQUIRE(all->size() == 4);
  CHECK((*all)[2].input == 2);
  CHECK((*all)[2].in_lo == C{0, 0, 0, 0});
  CHECK((*all)[2].in_hi == C{0, 31, 6, 6});
  CHECK((*all)[2].out_lo == C{0, 192, 0, 0});
  CHECK((*all)[3].out_hi() == C{0, 255, 6, 6});
  // Channels 100..200, rows 2..3: part of input 1 and of input 2 only.
  auto part = fir::move_pieces(l, {0, 100, 2, 0}, {0, 200, 3, 6});
  REQUIRE(part);
  REQUIRE(part->size() == 2);
  CHECK((*part)[0].input == 1);
  CHECK((*part)[0].in_lo == C{0, 36, 2, 0});
  CHECK((*part)[0].in_hi == C{0, 127, 3, 6});
  CHECK((*part)[0].out_lo == C{0, 100, 2, 0});
  CHECK((*part)[1].input == 2);
  CHECK((*part)[1].in_hi == C{0, 8, 3, 6});
  CHECK((*part)[1].out_lo == C{0, 192, 2, 0});
}

TEST_CASE("move_pieces: slices give one piece per run of consecutive indices; a gather per run of its indices") {
  fir::Layer s = layer(fir::Op::Slice, {{1, 8, 4, 4}}, {1, 4, 2, 4});
  s.starts = std::vector<int64_t>{0, 4, 0, 0};
  s.ends = std::vector<int64_t>{1, 8, 4, 4};
  s.steps = std::vector<int64_t>{1, 1, 2, 1};
  auto p = fir::move_pieces(s, {0, 0, 0, 0}, {0, 3, 1, 3});
  REQUIRE(p);
  REQUIRE(p->size() == 2);  // rows 0 and 2 of channels 4..7
  CHECK((*p)[0].in_lo == C{0, 4, 0, 0});
  CHECK((*p)[0].in_hi == C{0, 7, 0, 3});
  CHECK((*p)[1].in_lo == C{0, 4, 2, 0});
  CHECK((*p)[1].out_lo == C{0, 0, 1, 0});

  // A channel shuffle of 2 groups of 3: indices 0 3 1 4 2 5.
  fir::Layer g = layer(fir::Op::Gather, {{1, 6, 2, 2}}, {1, 6, 2, 2});
  g.axis = 1;
  g.indices = std::vector<int64_t>{0, 3, 1, 4, 2, 5};
  p = fir::move_pieces(g, {0, 0, 0, 0}, {0, 5, 1, 1});
  REQUIRE(p);
  REQUIRE(p->size() == 6);
  CHECK((*p)[1].in_lo == C{0, 3, 0, 0});
  CHECK((*p)[1].out_lo == C{0, 1, 0, 0});
  // Indices in sequence are one piece.
  g.indices = std::vector<int64_t>{2, 3, 4, 5, 0, 1};
  p = fir::move_pieces(g, {0, 0, 0, 0}, {0, 5, 1, 1});
  REQUIRE(p);
  CHECK(p->size() == 2);
  // Out of range: refused with a reason.
  g.indices = std::vector<int64_t>{0, 1, 2, 3, 4, 6};
  std::string why;
  CHECK_FALSE(fir::move_pieces(g, {0, 0, 0, 0}, {0, 5, 1, 1}, &why));
  CHECK(why.find("outside the input") != std::string::npos);
  CHECK_FALSE(fir::move_pieces(layer(fir::Op::Conv2d, {{1, 1, 1, 1}}, {1, 1, 1, 1}), {}, {}, &why));
}

TEST_CASE("move_requantizes: copies exactly when requantizing every code is the identity") {
  fir::Layer l = layer(fir::Op::Concat, {{1, 4, 1, 1}, {1, 4, 1, 1}}, {1, 8, 1, 1});
  l.input_dtype = {"int8", "int8"};
  l.output_dtype = {"int8"};
  fir::QuantInfo q;
  q.inputs = {{0.002917131021911023, 128.0}, {0.01, 3.0}};
  q.output_scale = 342.80256611336455;  // 1 / 0.0029171310219110224: differs from input 1's scale in the last bit
  q.output_zero_point = -128.0;
  l.quant_info = q;
  CHECK_FALSE(fir::move_requantizes(l, 0));
  CHECK(fir::move_requantizes(l, 1));
  CHECK(int8::requantize_is_identity(0.5, 2.0, 0.5, 2.0));
  CHECK_FALSE(int8::requantize_is_identity(0.5, 2.0, 0.25, 2.0));
  l.quant_info.reset();
  CHECK(fir::move_requantizes(l, 0));  // an int8 input without its quantization is never taken as a copy
}
