// Builds small ONNX models in memory for tests (no Python, no files needed).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace cct::testing {

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int opset = 13) {
    m_.set_ir_version(8);
    m_.set_producer_name("cct-tests");
    auto* o = m_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    m_.mutable_graph()->set_name("test");
  }

  // A float input; a negative dimension becomes the symbolic "N".
  OnnxBuilder& input(const std::string& name, const std::vector<int64_t>& shape) {
    auto* vi = m_.mutable_graph()->add_input();
    vi->set_name(name);
    auto* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape) {
      auto* dim = t->mutable_shape()->add_dim();
      if (d < 0) dim->set_dim_param("N");
      else dim->set_dim_value(d);
    }
    return *this;
  }

  // A float output; the ONNX checker requires its shape.
  OnnxBuilder& output(const std::string& name, const std::vector<int64_t>& shape) {
    auto* vi = m_.mutable_graph()->add_output();
    vi->set_name(name);
    auto* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape) {
      auto* dim = t->mutable_shape()->add_dim();
      if (d < 0) dim->set_dim_param("N");
      else dim->set_dim_value(d);
    }
    return *this;
  }

  OnnxBuilder& init(const std::string& name, const std::vector<int64_t>& shape, const std::vector<float>& data) {
    auto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape) t->add_dims(d);
    for (float v : data) t->add_float_data(v);
    return *this;
  }

  OnnxBuilder& init_i64(const std::string& name, const std::vector<int64_t>& shape, const std::vector<int64_t>& data) {
    auto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : shape) t->add_dims(d);
    for (int64_t v : data) t->add_int64_data(v);
    return *this;
  }

  // Deterministic pseudo-random weights in [-scale, scale].
  OnnxBuilder& random_init(const std::string& name, const std::vector<int64_t>& shape, float scale = 0.5f,
                           uint64_t seed = 1) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::mt19937_64 rng(seed + std::hash<std::string>{}(name));
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = scale * (static_cast<float>(rng() % 20001) / 10000.0f - 1.0f);
    return init(name, shape, v);
  }

  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out,
                        const std::string& name = "") {
    auto* n = m_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(m_.graph().node_size() - 1) : name);
    for (const auto& i : in) n->add_input(i);
    for (const auto& o : out) n->add_output(o);
    return *n;
  }

  static void attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, float v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }

  std::string bytes() const { return m_.SerializeAsString(); }
  onnx::ModelProto& model() { return m_; }

 private:
  onnx::ModelProto m_;
};

// A 3x3 convolution of `x` ([N, 3, H, W], padding 1) to 4 channels and an
// inference BatchNormalization with fixed statistics (running variance `var`,
// `epsilon` when given), writing `out`.
inline OnnxBuilder& add_conv_bn(OnnxBuilder& b, const std::string& x, const std::string& out,
                                const std::vector<float>& var = {1.0f, 0.25f, 4.0f, 0.5f},
                                std::optional<float> epsilon = std::nullopt) {
  b.random_init("w", {4, 3, 3, 3}).random_init("cb", {4});
  b.init("scale", {4}, {1.0f, 0.5f, 2.0f, 1.5f}).init("bias", {4}, {0.1f, -0.2f, 0.3f, 0.0f});
  b.init("mean", {4}, {0.05f, 0.1f, -0.1f, 0.2f}).init("var", {4}, var);
  auto& c = b.node("Conv", {x, "w", "cb"}, {"c"});
  OnnxBuilder::attr(c, "pads", std::vector<int64_t>{1, 1, 1, 1});
  auto& bn = b.node("BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {out});
  if (epsilon) OnnxBuilder::attr(bn, "epsilon", *epsilon);
  return b;
}

}  // namespace cct::testing
