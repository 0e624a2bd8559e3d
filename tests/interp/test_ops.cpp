#include <doctest/doctest.h>

#include "interp/float_interp.hpp"
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
