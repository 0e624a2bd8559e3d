// examples/models/transformer_block.py through onnx2fir: the network beyond
// CNNs the sweep maps (projections and FFN as dense layers, the attention
// matmuls on the npu, layer norm and softmax on the cpu), then one design
// point of a sweep on it.
#include <doctest/doctest.h>

#include <map>

#include "fir/fir.hpp"
#include "testing.hpp"

using namespace cct;

TEST_CASE("transformer block: export, onnx2fir, gemini --dse --point") {
  const std::string src = testing::source_dir();
  const std::string dir = testing::temp_dir("dse_transformer");
  auto e = testing::run("/usr/bin/python3 " + src + "/examples/models/transformer_block.py " + dir +
                        "/tb.onnx --seq 32 --dim 64 --heads 2 --ffn 128 2>&1");
  REQUIRE_MESSAGE(e.exit_code == 0, e.out);
  auto c = testing::run_tool("onnx2fir", dir + "/tb.onnx -o " + dir + "/tb.fir.json");
  REQUIRE_MESSAGE(c.exit_code == 0, c.err);
  const std::string fir = dir + "/tb.fir.json";
  const std::string text = testing::read_file(fir);
  std::map<std::string, int> npu, cpu;
  for (const std::string op : {"dense", "matmul", "softmax", "layer_norm", "gelu"}) {
    const std::string needle = "\"operation\": \"" + op + "\",\n    \"device\": \"";
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
      (text.compare(at + needle.size(), 3, "npu") == 0 ? npu : cpu)[op]++;
  }
  CHECK(npu["dense"] == 6);   // q, k, v, output projection, FFN up and down
  CHECK(cpu["matmul"] == 2);  // Q K^T and P V: on the host (README, "What runs where")
  CHECK(npu["gelu"] == 1);
  CHECK(cpu["softmax"] == 1);
  CHECK(cpu["layer_norm"] == 2);
  auto g = testing::run_tool("gemini", "--dse " + src + "/tests/dse/small_space.json --nets " + fir + " --point 3");
  REQUIRE_MESSAGE(g.exit_code == 0, g.err);
  CHECK(g.out.find("\"network\":\"tb\"") != std::string::npos);
  CHECK(g.out.find("\"overflow\":0") != std::string::npos);
}
