// Every reference Frontend IR reads, validates, and survives read -> write -> read.
#include <doctest/doctest.h>

#include <map>

#include "fir/fir.hpp"
#include "support/error.hpp"
#include "support/json.hpp"
#include "support/schema.hpp"
#include "testing.hpp"

using namespace cct;

namespace {

std::vector<std::string> reference_firs() { return cct::testing::reference_files("gemini-ir/frontend"); }

std::string base_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// Key order of every object, recursively, so order differences are caught too.
void collect_orders(const Json& j, const std::string& at, std::vector<std::string>& out) {
  if (j.is_object()) {
    std::string keys = at + ":";
    for (const auto& [k, v] : j.as_object()) {
      keys += k + ",";
      collect_orders(v, at + "/" + k, out);
    }
    out.push_back(keys);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.as_array().size(); ++i) collect_orders(j.as_array()[i], at + "/" + std::to_string(i), out);
  }
}

}  // namespace

TEST_CASE("reference FIRs parse, pass the schema and the semantic checks") {
  for (const auto& path : reference_firs()) {
    CAPTURE(path);
    fir::Graph g;
    REQUIRE_NOTHROW(g = fir::read_fir(path));
    CHECK(g.size() > 50);
    auto problems = fir::check(g, path);
    CHECK_MESSAGE(problems.empty(), (problems.empty() ? "" : problems.front()));
    for (const auto& l : g.layers()) {
      CHECK(l.op != fir::Op::Unknown);
      CHECK(g.find(l.name) == &l);
    }
  }
}

TEST_CASE("reference FIRs round-trip: the written JSON equals the original, key order included") {
  for (const auto& path : reference_firs()) {
    CAPTURE(path);
    std::string text = cct::testing::read_file(path);
    Json original = parse_json(text, path);
    fir::Graph g = fir::parse_fir(text, path);
    std::string written = fir::format_fir(g);
    Json back = parse_json(written, "written");
    CHECK(back == original);
    std::vector<std::string> a, b;
    collect_orders(original, "", a);
    collect_orders(back, "", b);
    CHECK(a == b);
    // read -> write -> read gives the same typed structure, and writing is deterministic.
    fir::Graph g2 = fir::parse_fir(written, "written");
    CHECK(g2 == g);
    CHECK(fir::format_fir(g2) == written);
  }
}

TEST_CASE("the fast writer gives exactly format_json(to_json(g))") {
  for (const auto& path : reference_firs()) {
    CAPTURE(path);
    fir::Graph g = fir::read_fir(path);
    CHECK(fir::format_fir(g, false) == format_json(fir::to_json(g)));
  }
}

TEST_CASE("graph helpers on ResNet-50 batch 1") {
  std::string path;
  for (const auto& p : reference_firs())
    if (base_name(p) == "int8_resnet50.sim_quantized_b1.json") path = p;
  REQUIRE(!path.empty());
  fir::Graph g = fir::read_fir(path);
  std::map<std::string, int> ops;
  for (const auto& l : g.layers()) ops[l.operation]++;
  CHECK(ops["quantize"] == 1);
  CHECK(ops["conv2d"] == 53);
  CHECK(ops["max_pool2d"] == 1);
  CHECK(ops["element_wise_add"] == 16);
  CHECK(ops["avg_pool2d"] == 1);
  CHECK(ops["dense"] == 1);
  CHECK(ops["reshape"] == 1);

  auto order = g.in_index_order();
  for (size_t i = 0; i < order.size(); ++i) CHECK(order[i]->layer_index == static_cast<int64_t>(i));
  auto inputs = g.input_layers();
  REQUIRE(inputs.size() == 1);
  CHECK(inputs[0]->name == "src_quantize_1_1");
  auto outputs = g.output_layers();
  REQUIRE(outputs.size() == 1);
  CHECK(outputs[0]->operation == "reshape");
  CHECK(outputs[0]->device == fir::Device::Cpu);

  const fir::Layer* conv0 = g.find("Conv_0");
  REQUIRE(conv0);
  CHECK(fir::weight_shape(*conv0) == fir::Shape{64, 3, 7, 7});
  // 112 * 112 * 64 outputs, 3 * 7 * 7 products each.
  CHECK(fir::macs(*conv0) == 112LL * 112 * 64 * 3 * 7 * 7);
  CHECK(conv0->pads() == std::array<int64_t, 4>{3, 3, 3, 3});
  REQUIRE(conv0->activation);
  CHECK(conv0->activation->type == "relu");
  REQUIRE(conv0->quant_info);
  REQUIRE(conv0->quant_info->inputs.size() == 1);
  CHECK(conv0->quant_info->inputs[0].zero_point == -6.0);
  CHECK(conv0->quant_info->output_zero_point == -128.0);
  CHECK(*conv0->file("k") == "Conv_0_k.npy");
  auto prods = g.producers(*conv0);
  REQUIRE(prods.size() == 1);  // the weight constant is not a layer
  CHECK(prods[0]->name == "src_quantize_1_1");
  auto cons = g.consumers(*g.find("MaxPool_2_1"));
  CHECK(cons.size() == 2);

  int64_t total = 0;
  for (const auto& l : g.layers()) total += fir::macs(l);
  // ResNet-50 at 224x224 is about 4.1 GMACs (convolutions and the classifier).
  CHECK(total > 4'000'000'000LL);
  CHECK(total < 4'200'000'000LL);

  const fir::Layer* pool = g.find("MaxPool_2_1");
  auto pre = pool->pre_cal();
  REQUIRE(pre);
  CHECK(pre->requan_scale_a == doctest::Approx(0.022923696786165237));
  auto post = pool->post_cal();
  REQUIRE(post);
  CHECK(post->mul_k == doctest::Approx(1.0 / 0.022923696786165237));
  CHECK(post->carry_sel == "round");
  CHECK(pool->compare_group()->cmp_max_en == "max");
  CHECK(!pool->fp32_mul_group());

  const fir::Layer* gap = nullptr;
  for (const auto& l : g.layers())
    if (l.op == fir::Op::AvgPool2d) gap = &l;
  REQUIRE(gap);
  auto mul = gap->fp32_mul_group();
  REQUIRE(mul);
  CHECK(mul->mul_group_k_mux == "scalar");
  CHECK(*mul->mul_group_k_scalar == doctest::Approx(1.0 / 49));
  CHECK(gap->acc_tree_group()->acc_dim == "kernel");
}

TEST_CASE("write_fir and read_fir: files, zstd") {
  std::string dir = cct::testing::temp_dir("fir_io");
  fir::Graph g = fir::read_fir(reference_firs().front());
  fir::write_fir(dir + "/g.json.zst", g);
  std::string raw = cct::testing::read_file(dir + "/g.json.zst");
  REQUIRE(raw.size() > 4);
  CHECK(static_cast<unsigned char>(raw[0]) == 0x28);  // zstd magic
  CHECK(fir::read_fir(dir + "/g.json.zst") == g);
  fir::write_fir(dir + "/g.json", g);
  CHECK(cct::testing::read_file(dir + "/g.json") == fir::format_fir(g));
  try {
    fir::read_fir(dir + "/missing.json");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == kExitIo);
  }
}
