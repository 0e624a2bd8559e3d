// Malformed Frontend IR gives a clear error naming the file and JSON pointer.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>

#include "fir/fir.hpp"
#include "support/error.hpp"
#include "support/json.hpp"
#include "testing.hpp"

using namespace cct;

namespace {

Json reference_resnet50() {
  std::string path = cct::testing::reference_dir() + "/gemini-ir/frontend/int8_resnet50.sim_quantized_b1.json";
  return parse_json(cct::testing::read_file(path), path);
}

Json& layer(Json& fir, const char* name) {
  Json* l = fir.find(name);
  REQUIRE(l);
  return *l;
}

// Parses `text` expecting Error(kExitInvalidInput) whose message contains every fragment.
void expect_error(const std::string& text, std::initializer_list<std::string> fragments,
                  const fir::ReadOptions& opts = {}) {
  try {
    fir::parse_fir(text, "bad.fir.json", opts);
    FAIL("no error for input with expected fragments " << *fragments.begin());
  } catch (const Error& e) {
    std::string msg = e.what();
    CAPTURE(msg);
    CHECK(e.code() == kExitInvalidInput);
    CHECK(msg.rfind("bad.fir.json", 0) == 0);
    for (const auto& f : fragments) CHECK_MESSAGE(msg.find(f) != std::string::npos, "missing: " << f);
  }
}

const fir::ReadOptions kNoSchema{false, true};

// For semantic errors: parsing fails, and one of the problems check() lists
// (they come in layer order, so the first may be a consequence) has every fragment.
void expect_problem(const std::string& text, std::initializer_list<std::string> fragments) {
  CHECK_THROWS_AS(fir::parse_fir(text, "bad.fir.json"), Error);
  fir::Graph g = fir::parse_fir(text, "bad.fir.json", {true, false});
  auto problems = fir::check(g, "bad.fir.json");
  bool found = false;
  for (const auto& p : problems) {
    bool all = p.rfind("bad.fir.json: /", 0) == 0;
    for (const auto& f : fragments) all = all && p.find(f) != std::string::npos;
    found = found || all;
  }
  CAPTURE(problems.size());
  CHECK_MESSAGE(found, "no problem with " << *fragments.begin() << " among: " << (problems.empty() ? "" : problems[0]));
}

// A small graph using the extension operations: depthwise conv, sigmoid,
// element_wise_mul (squeeze-excite style broadcast), concat, transpose.
const char* kExtensionFir = R"({
  "q": {"layer_index": 0, "name": "q", "operation": "quantize", "device": "npu",
        "input_dtype": ["float32"], "output_dtype": ["int8"],
        "input_shape": [[1, 8, 9, 9]], "output_shape": [[1, 8, 9, 9]],
        "file_list": {"input_activation1": "q_in.npy", "output_activation1": "q_out.npy"},
        "previous_layer": ["input1"], "next_layer": ["dw", "p2"],
        "tensor0_lut": [1, 1, 1], "tensor_mode": 0,
        "module_list": {"pre_cal": {"requan_scale_a": 1, "requan_zp_a": 0,
                                    "input_shape": [[1, 8, 9, 9]], "output_shape": [[1, 8, 9, 9]]},
                        "post_cal": {"mul_k": 20.0, "sum_b": 0.0, "sumsub_mode": "add", "carry_sel": "round",
                                     "input_shape": [[1, 8, 9, 9]], "output_shape": [[1, 8, 9, 9]]}},
        "input_batchdim": [0], "output_batchdim": [0]},
  "dw": {"layer_index": 1, "name": "dw", "operation": "conv2d", "device": "npu",
         "input_dtype": ["int8", "int8"], "output_dtype": ["int8"],
         "input_shape": [[1, 8, 9, 9], [8, 1, 3, 3]], "output_shape": [[1, 8, 5, 5]],
         "quant_info": {"input_scale1": 0.05, "input_zero_point1": 0.0, "output_scale": 20.0,
                        "output_zero_point": 0.0, "round_type": "round"},
         "previous_layer": ["q", "constant_dw"], "next_layer": ["sig"],
         "file_list": {"k": "dw_k.npy", "b": "dw_b.npy"},
         "input_batchdim": [0, -1], "output_batchdim": [0],
         "activation_type": "relu6", "activation_attr": {"min": 0.0, "max": 6.0},
         "kernel_size": [3, 3], "padding": [1, 1, 1, 1], "stride": [2, 2], "groups": 8},
  "sig": {"layer_index": 2, "name": "sig", "operation": "sigmoid", "device": "npu",
          "file_list": {}, "previous_layer": ["dw"], "next_layer": ["up"],
          "input_shape": [[1, 8, 5, 5]], "output_shape": [[1, 8, 5, 5]],
          "input_dtype": ["int8"], "output_dtype": ["int8"],
          "module_list": {"fp32_mul_group": {"mul_group_k_mux": "scalar", "act_mode": "sigmoid",
                                             "mul_group_k_scalar": 1.0,
                                             "input_shape": [[1, 8, 5, 5]], "output_shape": [[1, 8, 5, 5]]}},
          "input_batchdim": [0], "output_batchdim": [0]},
  "up": {"layer_index": 3, "name": "up", "operation": "max_pool2d", "device": "npu",
         "pool_size": [2, 2], "padding": [0, 0, 0, 0], "stride": [2, 2], "ceil_mode": true,
         "file_list": {}, "previous_layer": ["sig"], "next_layer": ["se"],
         "input_shape": [[1, 8, 5, 5]], "output_shape": [[1, 8, 3, 3]],
         "input_dtype": ["int8"], "output_dtype": ["int8"],
         "module_list": {}, "input_batchdim": [0], "output_batchdim": [0]},
  "se": {"layer_index": 4, "name": "se", "operation": "element_wise_mul", "device": "npu",
         "file_list": {}, "previous_layer": ["up", "constant_gate"], "next_layer": ["cat"],
         "input_shape": [[1, 8, 3, 3], [1, 8, 1, 1]], "output_shape": [[1, 8, 3, 3]],
         "input_dtype": ["int8", "int8"], "output_dtype": ["int8"],
         "input_batchdim": [0, -1], "output_batchdim": [0]},
  "p2": {"layer_index": 5, "name": "p2", "operation": "avg_pool2d", "device": "cpu",
         "pool_size": [3, 3], "padding": [0, 0, 0, 0], "stride": [3, 3], "ceil_mode": 0,
         "file_list": {}, "previous_layer": ["q"], "next_layer": ["cat"],
         "input_shape": [[1, 8, 9, 9]], "output_shape": [[1, 8, 3, 3]],
         "input_dtype": ["int8"], "output_dtype": ["int8"],
         "input_batchdim": [0], "output_batchdim": [0]},
  "cat": {"layer_index": 6, "name": "cat", "operation": "concat", "device": "npu", "axis": 1,
          "file_list": {}, "previous_layer": ["se", "p2"], "next_layer": ["t"],
          "input_shape": [[1, 8, 3, 3], [1, 8, 3, 3]], "output_shape": [[1, 16, 3, 3]],
          "input_dtype": ["int8", "int8"], "output_dtype": ["int8"],
          "input_batchdim": [0, 0], "output_batchdim": [0]},
  "t": {"layer_index": 7, "name": "t", "operation": "transpose", "device": "cpu",
        "input_dtype": ["int8"], "output_dtype": ["int8"],
        "input_shape": [[1, 16, 3, 3]], "output_shape": [[1, 3, 3, 16]],
        "previous_layer": ["cat"], "next_layer": ["output1"], "file_list": {},
        "input_batchdim": [0], "output_batchdim": [0], "perm": [0, 2, 3, 1]}
})";

}  // namespace

TEST_CASE("malformed JSON names the line and column") {
  std::string text = format_json(reference_resnet50());
  expect_error(text.substr(0, text.size() / 2), {"bad.fir.json:", "invalid JSON"});
  expect_error("", {"bad.fir.json:", "invalid JSON"});
  expect_error("[]", {"bad.fir.json: /", "wrong type"});
  expect_error("[]", {"bad.fir.json: /", "expected an object"}, kNoSchema);
}

TEST_CASE("wrong types, missing and unknown keys: schema and reader both name the pointer") {
  {
    Json fir = reference_resnet50();
    layer(fir, "Conv_0").set("layer_index", "1");
    expect_error(format_json(fir), {"/Conv_0/layer_index", "wrong type"});
    expect_error(format_json(fir), {"/Conv_0/layer_index", "expected an integer"}, kNoSchema);
  }
  {
    Json fir = reference_resnet50();
    layer(fir, "Conv_0").set("kernel_size", Json::array({Json(7)}));
    expect_error(format_json(fir), {"/Conv_0/kernel_size"});
    expect_error(format_json(fir), {"/Conv_0/kernel_size", "expected an array of 2 integers"}, kNoSchema);
  }
  {
    Json fir = reference_resnet50();
    auto& obj = layer(fir, "Conv_0").as_object();
    obj.erase(std::find_if(obj.begin(), obj.end(), [](const auto& m) { return m.first == "operation"; }));
    expect_error(format_json(fir), {"/Conv_0", "missing required key \"operation\""});
    expect_error(format_json(fir), {"/Conv_0", "missing key \"operation\""}, kNoSchema);
  }
  {
    Json fir = reference_resnet50();
    layer(fir, "Conv_0").set("bogus_key", 1);
    expect_error(format_json(fir), {"/Conv_0/bogus_key", "unknown key \"bogus_key\""});
    // Without the schema the key is kept and written back.
    fir::Graph g = fir::parse_fir(format_json(fir), "x", kNoSchema);
    REQUIRE(g.find("Conv_0")->extra.size() == 1);
    CHECK(fir::to_json(g) == fir);
  }
  {
    Json fir = reference_resnet50();
    layer(fir, "MaxPool_2_1").find("module_list")->find("post_cal")->set("mul_k", "fast");
    expect_error(format_json(fir), {"/MaxPool_2_1/module_list/post_cal/mul_k", "wrong type"});
    expect_error(format_json(fir), {"/MaxPool_2_1/module_list/post_cal/mul_k", "expected a number"}, kNoSchema);
  }
  {
    Json fir = reference_resnet50();
    layer(fir, "Conv_0").set("operation", "conv3d");
    expect_error(format_json(fir), {"/Conv_0/operation", "not one of"});
    expect_error(format_json(fir), {"/Conv_0/operation", "unknown operation \"conv3d\""}, kNoSchema);
  }
  {
    Json fir = reference_resnet50();
    layer(fir, "Conv_0").set("output_dtype", Json::array({Json("int4")}));
    expect_error(format_json(fir), {"/Conv_0/output_dtype/0"});
    expect_error(format_json(fir), {"/Conv_0/output_dtype/0", "unknown dtype \"int4\""}, kNoSchema);
  }
}

TEST_CASE("semantic errors: graph edges, indices, names, shapes") {
  {
    Json fir = reference_resnet50();
    layer(fir, "Conv_3").set("previous_layer", Json::array({Json("NoSuchLayer"), Json("constant_500")}));
    expect_problem(format_json(fir), {"/Conv_3/previous_layer/0", "\"NoSuchLayer\" is neither a layer"});
  }
  {
    Json fir = reference_resnet50();
    layer(fir, "Conv_0").set("next_layer", Json::array({Json("Conv_3")}));
    expect_problem(format_json(fir), {"/Conv_0/next_layer/0", "does not list \"Conv_0\" in its previous_layer"});
  }
  {
    Json fir = reference_resnet50();
    layer(fir, "Conv_3").set("layer_index", 1);
    expect_problem(format_json(fir), {"/Conv_3/layer_index", "already used by \"Conv_0\""});
  }
  {
    Json fir = reference_resnet50();
    layer(fir, "Conv_3").set("layer_index", 1000);
    expect_problem(format_json(fir), {"/Conv_3/layer_index", "outside 0..73"});
  }
  {
    Json fir = reference_resnet50();
    layer(fir, "Conv_0").set("name", "Conv_zero");
    expect_error(format_json(fir), {"/Conv_0/name", "differs from the layer's key"});
  }
  {
    // Duplicate keys in the top-level object: the JSON parser refuses them
    // (for every format), naming the key and its line.
    std::string text = format_json(reference_resnet50());
    Json fir = reference_resnet50();
    std::string conv0 = format_json(*fir.find("Conv_0"));
    text.insert(text.rfind('}'), ",\n\"Conv_0\": " + conv0);
    const std::string line = std::to_string(std::count(text.begin(), text.end(), '\n') - std::count(conv0.begin(), conv0.end(), '\n'));
    expect_error(text, {"bad.fir.json:" + line + ": column 1: invalid JSON: duplicate key \"Conv_0\""});
    expect_error(text, {"bad.fir.json:" + line + ": column 1: invalid JSON: duplicate key \"Conv_0\""}, kNoSchema);
  }
  {
    Json fir = reference_resnet50();
    layer(fir, "Conv_0").find("output_shape")->as_array()[0] = Json::array({Json(1), Json(64), Json(111), Json(112)});
    expect_problem(format_json(fir), {"/Conv_0/output_shape/0", "conv2d of [1, 3, 224, 224] gives [1, 64, 112, 112], not [1, 64, 111, 112]"});
  }
  {
    Json fir = reference_resnet50();
    layer(fir, "Conv_0").set("stride", Json::array({Json(1), Json(1)}));
    expect_problem(format_json(fir), {"/Conv_0/output_shape/0", "gives [1, 64, 224, 224]"});
  }
  {
    Json fir = reference_resnet50();
    // The residual add's second operand with a different channel count.
    Json& add = layer(fir, "Add_9_1");
    add.find("input_shape")->as_array()[1] = Json::array({Json(1), Json(128), Json(56), Json(56)});
    expect_problem(format_json(fir), {"/Add_9_1/"});
  }
  {
    Json fir = reference_resnet50();
    layer(fir, "Conv_0").find("input_shape")->as_array()[0] = Json::array({Json(1), Json(3), Json(225), Json(224)});
    expect_problem(format_json(fir), {"/Conv_0/input_shape/0", "producer \"src_quantize_1_1\" outputs [1, 3, 224, 224]"});
  }
  {
    Json fir = reference_resnet50();
    layer(fir, "Conv_0").find("input_shape")->as_array()[1] = Json::array({Json(64), Json(4), Json(7), Json(7)});
    expect_problem(format_json(fir), {"/Conv_0/input_shape", "inconsistent for conv2d"});
  }
  {
    Json fir = reference_resnet50();
    layer(fir, "Conv_0").set("input_dtype", Json::array({Json("int8")}));
    expect_problem(format_json(fir), {"/Conv_0/input_dtype", "1 entries for 2 input shapes"});
  }
  {
    // Producer after consumer in layer_index order.
    Json fir = reference_resnet50();
    layer(fir, "Conv_0").set("layer_index", 2);
    layer(fir, "MaxPool_2_1").set("layer_index", 1);
    expect_problem(format_json(fir), {"/MaxPool_2_1/previous_layer/0", "producer \"Conv_0\" has layer_index 2"});
  }
  {
    Json fir = reference_resnet50();
    auto& obj = layer(fir, "Conv_0").as_object();
    obj.erase(std::find_if(obj.begin(), obj.end(), [](const auto& m) { return m.first == "kernel_size"; }));
    expect_problem(format_json(fir), {"/Conv_0", "conv2d layer needs \"kernel_size\""});
  }
  {
    Json fir = reference_resnet50();
    layer(fir, "Conv_0").find("file_list")->set("k", "Conv_0_k.bin");
    expect_error(format_json(fir), {"/Conv_0/file_list/k"});
    expect_error(format_json(fir), {"/Conv_0/file_list/k", "is not a .npy file name"}, kNoSchema);
  }
}

TEST_CASE("huge numbers are rejected without overflowing") {
  Json fir = reference_resnet50();
  const int64_t huge = int64_t{1} << 62;
  layer(fir, "Conv_0").find("input_shape")->as_array()[1] = Json::array({Json(huge), Json(huge), Json(huge), Json(huge)});
  layer(fir, "Conv_0").set("kernel_size", Json::array({Json(huge), Json(huge)}));
  layer(fir, "Conv_0").set("stride", Json::array({Json(huge), Json(1)}));
  expect_problem(format_json(fir), {"/Conv_0/input_shape/1", "dimension 4611686018427387904"});
  fir::Graph g = fir::parse_fir(format_json(fir), "x", {true, false});
  CHECK(fir::macs(*g.find("Conv_0")) == INT64_MAX);
  CHECK(!fir::infer_output_shape(*g.find("Conv_0")));
}

// Issue 20: a scale of 0 was accepted (exit 0) and divided by zero downstream.
TEST_CASE("quantization scales must be finite and > 0, naming the layer") {
  for (const char* key : {"input_scale1", "output_scale"}) {
    for (double bad : {0.0, -0.05}) {  // (JSON has no infinity: the reader's number range sees to that)
      CAPTURE(key);
      CAPTURE(bad);
      Json fir = parse_json(kExtensionFir, "ext.json");
      layer(fir, "dw").find("quant_info")->set(key, bad);
      std::string text = format_json(fir);
      expect_problem(text, {std::string("/dw/quant_info/") + key, std::string("layer \"dw\": ") + key + " must be a finite number > 0"});
    }
  }
  // The valid graph passes.
  CHECK_NOTHROW(fir::parse_fir(kExtensionFir, "ext.json"));
}

TEST_CASE("tensor<N>_lut holds three flags of 0 or 1, packed into the VP's table code") {
  for (int64_t bad : {int64_t(2), int64_t(-1), int64_t(1) << 62}) {
    CAPTURE(bad);
    Json fir = parse_json(kExtensionFir, "ext.json");
    Json lut = Json::array();
    for (int64_t f : {int64_t(1), bad, int64_t(0)}) lut.push(f);
    layer(fir, "q").set("tensor0_lut", lut);
    expect_problem(format_json(fir), {"/q/tensor0_lut", "expected flags of 0 or 1"});
  }
  fir::Graph g = fir::parse_fir(kExtensionFir, "ext.json");
  const fir::Layer* q = g.find("q");
  REQUIRE(q);
  CHECK(q->lut_code(0) == 7);
  CHECK(q->lut_code(1) == 0);  // no such operand
  fir::Layer l;
  l.tensor_lut = {{1, 0, 1}, {0, 1, 0}};
  CHECK(l.lut_code(0) == 5);
  CHECK(l.lut_code(1) == 2);
}

TEST_CASE("check() lists every problem") {
  Json fir = reference_resnet50();
  layer(fir, "Conv_0").set("layer_index", 5);
  layer(fir, "Conv_3").set("previous_layer", Json::array({Json("ghost"), Json("constant_500")}));
  fir::Graph g = fir::parse_fir(format_json(fir), "x.json", {true, false});
  auto problems = fir::check(g, "x.json");
  CHECK(problems.size() >= 3);
  bool index = false, ghost = false;
  for (const auto& p : problems) {
    index |= p.find("x.json: /Conv_0/layer_index") == 0 || p.find("already used") != std::string::npos;
    ghost |= p.find("/Conv_3/previous_layer/0") != std::string::npos;
  }
  CHECK(index);
  CHECK(ghost);
}

TEST_CASE("extension operations: depthwise conv, VP activation, broadcast mul, concat, transpose") {
  fir::Graph g = fir::parse_fir(kExtensionFir, "ext.json");
  const fir::Layer* dw = g.find("dw");
  REQUIRE(dw);
  CHECK(dw->group_count() == 8);
  CHECK(fir::macs(*dw) == 8 * 5 * 5 * 1 * 3 * 3);
  CHECK(dw->activation->type == "relu6");
  CHECK(dw->activation->attr.find("max")->as_double() == 6.0);
  CHECK(g.find("sig")->fp32_mul_group()->act_mode == "sigmoid");
  CHECK(g.find("up")->ceil_mode == true);
  CHECK(!g.find("up")->ceil_mode_numeric);
  CHECK(fir::infer_output_shape(*g.find("cat")) == fir::Shape{1, 16, 3, 3});
  CHECK(fir::infer_output_shape(*g.find("t")) == fir::Shape{1, 3, 3, 16});
  CHECK(fir::check(g, "ext.json").empty());
  // Written in the family key orders and read back unchanged.
  CHECK(fir::parse_fir(fir::format_fir(g), "again") == g);

  // Break the concat: channels are summed, the other axes must agree.
  Json j = parse_json(kExtensionFir, "ext.json");
  j.find("cat")->find("output_shape")->as_array()[0] = Json::array({Json(1), Json(8), Json(3), Json(3)});
  expect_error(format_json(j), {"/cat/output_shape/0", "concat of [1, 8, 3, 3] gives [1, 16, 3, 3], not [1, 8, 3, 3]"});
  j = parse_json(kExtensionFir, "ext.json");
  j.find("dw")->set("groups", 3);
  expect_error(format_json(j), {"/dw/input_shape", "inconsistent for conv2d"});
  j = parse_json(kExtensionFir, "ext.json");
  j.find("t")->set("perm", Json::array({Json(0), Json(2), Json(2), Json(1)}));
  expect_error(format_json(j), {"/t/input_shape", "inconsistent for transpose"});
  j = parse_json(kExtensionFir, "ext.json");
  j.find("se")->find("input_shape")->as_array()[1] = Json::array({Json(1), Json(4), Json(1), Json(1)});
  expect_error(format_json(j), {"/se/input_shape", "inconsistent for element_wise_mul"});
  j = parse_json(kExtensionFir, "ext.json");
  j.find("up")->set("ceil_mode", false);
  expect_error(format_json(j), {"/up/output_shape/0", "gives [1, 8, 2, 2]"});
}

TEST_CASE("layer_norm gives Y, Mean or InvStdDev (activation_attr output): the shape follows, other values are refused") {
  const std::string fir = R"({
  "ln": {"layer_index": 0, "name": "ln", "operation": "layer_norm", "device": "cpu", "axis": 1,
         "activation_attr": {"epsilon": 1e-05, "output": "mean"},
         "file_list": {"k": "ln_k.npy", "b": "ln_b.npy"}, "previous_layer": ["input1"], "next_layer": ["output1"],
         "input_shape": [[2, 12]], "output_shape": [[2, 1]], "input_dtype": ["float16"], "output_dtype": ["float16"],
         "input_batchdim": [0], "output_batchdim": [0]}
})";
  fir::Graph g = fir::parse_fir(fir, "ln.json");
  CHECK(fir::layer_norm_output(*g.find("ln")) == fir::LayerNormOutput::Mean);
  CHECK(fir::infer_output_shape(*g.find("ln")) == fir::Shape{2, 1});
  CHECK(fir::check(g, "ln.json").empty());
  Json j = parse_json(fir, "ln.json");
  j.find("ln")->find("activation_attr")->set("output", "inv_std_dev");
  CHECK(fir::check(fir::parse_fir(format_json(j), "ln.json"), "ln.json").empty());
  j.find("ln")->find("activation_attr")->set("output", "y");
  expect_error(format_json(j), {"/ln/output_shape/0", "layer_norm of [2, 12] gives [2, 12], not [2, 1]"});
  j.find("ln")->find("activation_attr")->set("output", "median");
  expect_problem(format_json(j), {"/ln/activation_attr", "\"y\", \"mean\" or \"inv_std_dev\""});
}
