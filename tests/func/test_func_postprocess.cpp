// A detector's post-processing (scores over a threshold, NonZero, GatherND,
// TopK, If, NonMaxSuppression: data-dependent shapes) after two convolution
// heads, in a model built here. The reference interpreter runs the whole
// graph; onnx2fir refuses it, naming the first data-dependent node and the
// option, and with --cut-postprocess compiles the heads alone: the FIR's
// outputs are the post-processing's inputs, and the chain computes them bit
// for bit on both architectures.
#include <doctest/doctest.h>

#include <algorithm>

#include "../frontend/onnx_builder.hpp"
#include "../testing/testing.hpp"
#include "frontend/pipeline.hpp"
#include "func_test_util.hpp"
#include "interp/float_interp.hpp"
#include "support/error.hpp"

using namespace cct;
using cct::testing::OnnxBuilder;

namespace {

void set_type(onnx::ValueInfoProto* vi, const std::string& name, int elem, int rank) {
  vi->set_name(name);
  auto* t = vi->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  for (int d = 0; d < rank; ++d) t->mutable_shape()->add_dim()->set_dim_param("d" + std::to_string(d));
}

// x [1, 4, 6, 6] -> conv cls [1, 2, 6, 6], conv reg [1, 4, 6, 6]; then
// scores = sigmoid(cls) as [2, 36], kept = scores[NonZero(scores > 0.5)],
// top = TopK(kept, min(5, |kept|)), y = |kept| == 0 ? [] : top values;
// sel = NonMaxSuppression(reg as 36 boxes, scores, 10, 0.5, 0.5).
std::string detector_model() {
  OnnxBuilder b(13);
  b.input("x", {1, 4, 6, 6});
  for (auto [out, k] : {std::pair<std::string, int64_t>{"cls", 2}, {"reg", 4}}) {
    b.random_init(out + "_w", {k, 4, 3, 3}, 0.5f, 7).random_init(out + "_b", {k}, 0.2f, 7);
    OnnxBuilder::attr(b.node("Conv", {"x", out + "_w", out + "_b"}, {out}), "pads", std::vector<int64_t>{1, 1, 1, 1});
  }
  b.init_i64("s_shape", {3}, {1, 2, 36}).init_i64("s2_shape", {2}, {2, 36}).init_i64("b_shape", {3}, {1, 4, 36});
  b.init("half", {}, {0.5f}).init_i64("five", {1}, {5}).init_i64("zero", {}, {0}).init_i64("ten", {1}, {10});
  b.init("iou", {1}, {0.5f}).init("thr", {1}, {0.5f});
  b.node("Sigmoid", {"cls"}, {"sig"});
  b.node("Reshape", {"sig", "s2_shape"}, {"scores2"});
  b.node("Reshape", {"sig", "s_shape"}, {"scores3"});
  b.node("Greater", {"scores2", "half"}, {"mask"});
  b.node("NonZero", {"mask"}, {"nz"});
  b.node("Transpose", {"nz"}, {"idx"});
  b.node("GatherND", {"scores2", "idx"}, {"kept"});
  b.node("Shape", {"kept"}, {"n"});
  b.node("Min", {"n", "five"}, {"k"});
  b.node("TopK", {"kept", "k"}, {"top", "top_i"});
  b.node("Size", {"kept"}, {"size"});
  b.node("Equal", {"size", "zero"}, {"empty"});
  auto& iff = b.node("If", {"empty"}, {"y"});
  {
    auto* a = iff.add_attribute();
    a->set_name("then_branch");
    a->set_type(onnx::AttributeProto::GRAPH);
    auto* g = a->mutable_g();
    g->set_name("then");
    auto* c = g->add_node();
    c->set_op_type("Constant");
    c->add_output("nothing");
    auto* v = c->add_attribute();
    v->set_name("value");
    v->set_type(onnx::AttributeProto::TENSOR);
    v->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    v->mutable_t()->add_dims(0);
    set_type(g->add_output(), "nothing", onnx::TensorProto::FLOAT, 1);
  }
  {
    auto* a = iff.add_attribute();
    a->set_name("else_branch");
    a->set_type(onnx::AttributeProto::GRAPH);
    auto* g = a->mutable_g();
    g->set_name("else");
    auto* c = g->add_node();
    c->set_op_type("Identity");
    c->add_input("top");  // an outer value
    c->add_output("best");
    set_type(g->add_output(), "best", onnx::TensorProto::FLOAT, 1);
  }
  b.node("Reshape", {"reg", "b_shape"}, {"reg3"});
  auto& t = b.node("Transpose", {"reg3"}, {"boxes"});
  OnnxBuilder::attr(t, "perm", std::vector<int64_t>{0, 2, 1});
  b.node("NonMaxSuppression", {"boxes", "scores3", "ten", "iou", "thr"}, {"sel"});
  set_type(b.model().mutable_graph()->add_output(), "y", onnx::TensorProto::FLOAT, 1);
  set_type(b.model().mutable_graph()->add_output(), "sel", onnx::TensorProto::INT64, 2);
  std::string p = testing::temp_dir("func_postprocess_models") + "/detector.onnx";
  testing::write_file(p, b.bytes());
  return p;
}

}  // namespace

TEST_CASE("the reference interpreter runs a detector's post-processing: NonZero, GatherND, TopK, If, NonMaxSuppression") {
  const std::string path = detector_model();
  interp::Graph g = frontend::load_model(path, {});
  interp::FloatInterpreter fi(g);
  interp::Tensor x = interp::Tensor::floats({1, 4, 6, 6});
  for (int64_t k = 0; k < x.numel(); ++k) x.f[size_t(k)] = float((k * 37) % 23) / 11.0f - 1.0f;
  std::vector<int> keep = {g.find("kept"), g.find("scores3"), g.find("boxes")};
  std::vector<interp::Tensor> kept;
  auto out = fi.run({x}, nullptr, keep, &kept);
  REQUIRE(out.size() == 2);
  // y: the largest of the kept scores (at most 5), in descending order.
  std::vector<float> all = kept[0].f;
  std::sort(all.begin(), all.end(), std::greater<float>());
  all.resize(std::min<size_t>(all.size(), 5));
  CHECK(out[0].f == all);
  for (float v : out[0].f) CHECK(v > 0.5f);
  // sel: [batch 0, class, box] triples, boxes over the score threshold.
  REQUIRE(out[1].rank() == 2);
  CHECK(out[1].shape[1] == 3);
  for (int64_t r = 0; r < out[1].shape[0]; ++r) {
    CHECK(out[1].i[size_t(r * 3)] == 0);
    CHECK(kept[1].f[size_t(out[1].i[size_t(r * 3 + 1)] * 36 + out[1].i[size_t(r * 3 + 2)])] > 0.5f);
  }
}

TEST_CASE("onnx2fir refuses a data-dependent post-processing, and --cut-postprocess compiles up to it, bit for bit") {
  const std::string path = detector_model();
  frontend::CompileOptions o;
  o.calib_random = 2;
  try {
    frontend::compile(frontend::load_model(path, {}), o);
    FAIL("compiled a graph with data-dependent shapes");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("'NonZero_") != std::string::npos);
    CHECK(msg.find("--cut-postprocess") != std::string::npos);
    CHECK(msg.find("'cls' [1, 2, 6, 6]") != std::string::npos);
    CHECK(msg.find("'reg' [1, 4, 6, 6]") != std::string::npos);
  }
  o.cut_postprocess = true;
  frontend::CompileResult r = frontend::compile(frontend::load_model(path, {}), o);
  REQUIRE(r.cut_off.size() == 2);
  CHECK(r.cut_off[0].find("computing output(s) 'y', 'sel'") != std::string::npos);

  const func_test::Compiled& c = func_test::compile_model(path, 1, "postprocess", {}, "", true);
  CHECK(c.graph.output_layers().size() == 2);
  for (const auto& l : c.graph.layers()) CHECK_MESSAGE(l.device == fir::Device::Npu, l.name);
  auto want = func_test::interpret(c);
  REQUIRE(want.size() == 2);
  for (const char* arch : {"zebu-1core", "chip-64tops"}) {
    CAPTURE(arch);
    const auto& a = func_test::arch_named(arch);
    func_test::Built b = func_test::build(c, func_test::single_core(c.graph, arch), a, testing::temp_dir("func_postprocess"));
    func::Result res = func_test::run(c, b, b.program, b.timing, a, true);
    REQUIRE(res.outputs.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) CHECK(func_test::same_bits(res.outputs[i].tensor, want[i]));
  }
}
