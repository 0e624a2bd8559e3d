// A detector's post-processing (scores over a threshold, NonZero, GatherND,
// TopK, If, NonMaxSuppression: data-dependent shapes) after two convolution
// heads, in a model built here. The reference interpreter runs the whole
// graph; onnx2fir writes the post-processing as the FIR's host graph, which
// the chain runs on the host in its own step, bit for bit against goldens
// computed from the INT8 FIR's outputs, on both architectures; with
// --cut-postprocess it compiles the heads alone. Malformed host graphs are
// refused with clear errors.
#include <doctest/doctest.h>

#include <algorithm>

#include "../frontend/onnx_builder.hpp"
#include "../testing/testing.hpp"
#include "frontend/pipeline.hpp"
#include "func_test_util.hpp"
#include "interp/float_interp.hpp"
#include "interp/host_graph.hpp"
#include "fir/host.hpp"
#include "fir/host_graph.hpp"
#include "support/io.hpp"
#include "support/json.hpp"
#include "timing/timing.hpp"
#include <filesystem>
#include <functional>
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

TEST_CASE("--cut-postprocess compiles up to a data-dependent post-processing and leaves it out, bit for bit") {
  const std::string path = detector_model();
  frontend::CompileOptions o;
  o.calib_random = 2;
  o.cut_postprocess = true;
  frontend::CompileResult r = frontend::compile(frontend::load_model(path, {}), o);
  REQUIRE(r.postprocess.size() == 2);
  CHECK(r.postprocess[0].find("cut off (--cut-postprocess)") != std::string::npos);
  CHECK(r.postprocess[0].find("'NonZero_") != std::string::npos);
  CHECK(r.postprocess[0].find("computing output(s) 'y', 'sel'") != std::string::npos);
  CHECK(r.postprocess[1].find("'cls' [1, 2, 6, 6]") != std::string::npos);
  CHECK(r.postprocess[1].find("'reg' [1, 4, 6, 6]") != std::string::npos);
  CHECK(r.fir_text.find(fir::kHostGraphKey) == std::string::npos);

  const func_test::Compiled& c = func_test::compile_model(path, 1, "postprocess_cut", {}, "", true);
  CHECK(c.graph.output_layers().size() == 2);
  CHECK(c.graph.host_graph() == nullptr);
  for (const auto& l : c.graph.layers()) CHECK_MESSAGE(l.device == fir::Device::Npu, l.name);
  auto want = func_test::interpret(c);
  REQUIRE(want.size() == 2);
  for (const char* arch : {"zebu-1core", "chip-64tops"}) {
    CAPTURE(arch);
    const auto& a = func_test::arch_named(arch);
    func_test::Built b = func_test::build(c, func_test::single_core(c.graph, arch), a, testing::temp_dir("func_postprocess_cut"));
    func::Result res = func_test::run(c, b, b.program, b.timing, a, true);
    REQUIRE(res.outputs.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) CHECK(func_test::same_bits(res.outputs[i].tensor, want[i]));
    CHECK(res.host_graph_outputs.empty());
  }
}

namespace {

// The host graph of c's FIR run by the interpreter on the FIR interpreter's
// outputs: the model outputs, computed apart from the chain.
std::vector<interp::Tensor> host_graph_reference(const func_test::Compiled& c) {
  auto fir_outputs = func_test::interpret(c);
  interp::HostGraphRunner host(c.graph, interp::directory_loader(c.dir), c.fir_path);
  return host.run([&](const fir::Layer&, const std::string& output) { return fir_outputs.at(fir::graph_output_position(output)); });
}

// c's FIR text with `edit` applied to its host graph, parsed (schema and checks).
fir::Graph edited(const func_test::Compiled& c, const std::function<void(Json&)>& edit) {
  Json j = parse_json(read_input(c.fir_path), c.fir_path);
  for (auto& [k, v] : j.as_object())
    if (k == fir::kHostGraphKey) edit(v);
  return fir::parse_fir(format_json(j), "edited.fir.json");
}

Json& member(Json& o, const std::string& key) {
  for (auto& [k, v] : o.as_object())
    if (k == key) return v;
  throw std::runtime_error("no member " + key);
}

}  // namespace

TEST_CASE("the post-processing runs on the host: onnx2fir's host graph through the chain, bit for bit, on both architectures") {
  const std::string path = detector_model();
  frontend::CompileOptions o;
  o.calib_random = 2;
  frontend::CompileResult r = frontend::compile(frontend::load_model(path, {}), o);
  REQUIRE(r.postprocess.size() == 2);
  CHECK(r.postprocess[0].find("on the host") != std::string::npos);
  CHECK(r.postprocess[0].find("computing output(s) 'y', 'sel'") != std::string::npos);

  const func_test::Compiled& c = func_test::compile_model(path, 1, "postprocess_host");
  REQUIRE(c.graph.host_graph() != nullptr);
  const fir::HostGraph& hg = *c.graph.host_graph();
  REQUIRE(hg.inputs.size() == 2);
  REQUIRE(hg.outputs.size() == 2);
  CHECK(hg.outputs[0].dtype == "float32");
  CHECK(hg.outputs[1].dtype == "int64");
  CHECK(c.graph.output_layers().size() == 2);
  for (const auto& l : c.graph.layers()) CHECK_MESSAGE(l.device == fir::Device::Npu, l.name);
  // Written back as read.
  CHECK(fir::parse_fir(fir::format_fir(c.graph), "again") == c.graph);

  // The goldens are the host graph on the INT8 FIR's outputs.
  const auto want = host_graph_reference(c);
  REQUIRE(want.size() == 2);
  for (size_t k = 0; k < want.size(); ++k) {
    NpyArray g = read_npy(c.dir + "/" + hg.outputs[k].file);
    CHECK(g.bytes == interp::tensor_to_npy(want[k], "reference").bytes);
    CHECK(g.shape == want[k].shape);
  }
  CHECK(want[1].dtype == interp::DType::I64);

  // One host step runs it, last, priced by the static estimate.
  const fir::HostPlan plan = fir::host_plan(c.graph, "fir");
  REQUIRE(plan.steps.size() == 1);
  CHECK(plan.steps[0].host_graph);
  const fir::HostGraphCost cost = fir::host_graph_cost(hg, c.graph);
  CHECK(cost.ops > 0);
  CHECK(plan.steps[0].ops == cost.ops);
  CHECK(plan.steps[0].graph_io_bytes == cost.output_bytes);

  for (const char* arch : {"zebu-1core", "chip-64tops"}) {
    CAPTURE(arch);
    const auto& a = func_test::arch_named(arch);
    const auto m = std::string(arch) == "zebu-1core" ? func_test::single_core(c.graph, arch) : func_test::pipeline(c.graph, arch, 2, 1);
    func_test::Built b = func_test::build(c, m, a, testing::temp_dir("func_postprocess_host"));
    REQUIRE(b.sir.dram.host);
    REQUIRE(b.sir.dram.host->size() == 1);
    const sir::HostStep& h = b.sir.dram.host->front();
    CHECK(h.layers == std::vector<std::string>{std::string(fir::kHostGraphKey)});
    CHECK(h.ops == cost.ops);
    CHECK(h.time == timing::host_cycles(a, h.ops, h.size));
    // ct_hs after the stores of the heads, one ct_hw at the end, charged the step.
    int hs = 0, hw = 0;
    for (size_t i = 0; i < b.program.size(); ++i) {
      const auto& in = b.program.instructions[i];
      if (in.op() == isa::Opcode::ct_hs) ++hs;
      if (in.op() == isa::Opcode::ct_hw) {
        ++hw;
        CHECK(in.get(isa::Param::HOPS) == cost.ops);
        CHECK(b.timing[i].end - b.timing[i].start >= h.time);
      }
    }
    CHECK(hs == 2);
    CHECK(hw == 1);

    func::Result res = func_test::run(c, b, b.program, b.timing, a, true);
    CHECK(res.host_graph_outputs_checked == 2);
    REQUIRE(res.host_graph_outputs.size() == 2);
    for (size_t k = 0; k < want.size(); ++k) {
      CHECK(res.host_graph_outputs[k].name == "host_graph_output" + std::to_string(k + 1));
      CHECK(res.host_graph_outputs[k].array.bytes == interp::tensor_to_npy(want[k], "reference").bytes);
      CHECK(res.host_graph_outputs[k].array.shape == want[k].shape);
    }

    // A golden that differs by one bit is a divergence at the host graph.
    const std::string bad = testing::temp_dir("func_postprocess_badgolden_" + std::string(arch));
    for (const auto& e : std::filesystem::directory_iterator(c.dir))
      std::filesystem::copy_file(e.path(), bad + "/" + e.path().filename().string(), std::filesystem::copy_options::overwrite_existing);
    NpyArray g = read_npy(bad + "/" + hg.outputs[0].file);
    REQUIRE(!g.bytes.empty());
    g.bytes[0] ^= 1;
    write_npy(bad + "/" + hg.outputs[0].file, g);
    func::Options fo;
    fo.golden_dir = bad;
    try {
      func::run(b.program, b.timing, a, c.graph, b.sir, func::directory_npy_loader(c.dir), {c.input}, fo);
      FAIL("a wrong golden of the host graph passed");
    } catch (const Error& e) {
      CHECK(e.code() == kExitCheckFailed);
      CHECK(std::string(e.what()).find("divergence at the host graph's output 1 'y'") != std::string::npos);
    }
  }
}

TEST_CASE("a malformed host graph is refused with a clear error") {
  const func_test::Compiled& c = func_test::compile_model(detector_model(), 1, "postprocess_host");
  REQUIRE(c.graph.host_graph() != nullptr);
  auto refused = [&](const std::function<void(Json&)>& edit, const std::string& why) {
    CAPTURE(why);
    try {
      edited(c, edit);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.code() == kExitInvalidInput);
      CHECK_MESSAGE(std::string(e.what()).find(why) != std::string::npos, e.what());
    }
  };
  refused([](Json& h) { member(member(h, "inputs").as_array()[0], "from") = Json("output9"); }, "'output9' is not a graph output");
  refused([](Json& h) { member(member(h, "nodes").as_array()[0], "inputs").as_array()[0] = Json("nowhere"); },
          "reads 'nowhere', which no input, constant or earlier node defines");
  refused([](Json& h) { member(member(h, "outputs").as_array()[0], "dtype") = Json("complex64"); }, "complex64");
  refused([](Json& h) { member(h, "nodes").as_array()[0].as_object().pop_back(); }, "");  // schema: a required key
  refused([](Json& h) { member(member(h, "shapes"), "cls") = Json(std::vector<int64_t>{1, 2, 6, 7}); },
          "reads output1 of shape [1, 2, 6, 6], but its shape is given as [1, 2, 6, 7]");
  // An operator the interpreter does not know: refused before the run.
  fir::Graph g = edited(c, [](Json& h) { member(member(h, "nodes").as_array()[0], "op_type") = Json("Frobnicate"); });
  try {
    interp::HostGraphRunner run(g, interp::directory_loader(c.dir), "edited.fir.json");
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK(e.code() == kExitInvalidInput);
    CHECK(std::string(e.what()).find("operator Frobnicate is not supported") != std::string::npos);
  }
  // A layer may not take the section's name.
  fir::Graph renamed = c.graph;
  renamed.mutable_layers()[0].name = "$x";
  CHECK(!fir::check(renamed, "renamed").empty());
}
