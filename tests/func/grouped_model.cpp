#include "grouped_model.hpp"

#include "../frontend/onnx_builder.hpp"
#include "../testing/testing.hpp"
#include "support/io.hpp"

using namespace cct;

namespace func_test {

const Compiled& grouped_model(int batch) {
  static std::string path;
  if (path.empty()) {
    testing::OnnxBuilder b;
    b.input("x", {-1, 16, 12, 12}).output("y", {-1, 24, 6, 6});
    auto conv = [&](const std::string& in, const std::string& out, int64_t k, int64_t c, int64_t groups, int64_t kernel,
                    int64_t stride, int64_t pad, int64_t dilation) {
      b.random_init(out + "_w", {k, c / groups, kernel, kernel}).random_init(out + "_b", {k});
      auto& n = b.node("Conv", {in, out + "_w", out + "_b"}, {out});
      testing::OnnxBuilder::attr(n, "group", groups);
      testing::OnnxBuilder::attr(n, "strides", std::vector<int64_t>{stride, stride});
      testing::OnnxBuilder::attr(n, "pads", std::vector<int64_t>{pad, pad, pad, pad});
      testing::OnnxBuilder::attr(n, "dilations", std::vector<int64_t>{dilation, dilation});
    };
    conv("x", "c0", 32, 16, 1, 3, 1, 1, 1);
    b.node("Relu", {"c0"}, {"r0"});
    conv("r0", "dw", 32, 32, 32, 3, 2, 1, 1);      // depthwise, stride 2
    conv("dw", "dm", 64, 32, 32, 3, 1, 1, 1);      // depthwise, multiplier 2
    conv("dm", "gd", 64, 64, 4, 3, 1, 2, 2);       // 4 groups, dilation 2
    conv("gd", "g3", 24, 64, 8, 1, 1, 0, 1);       // 8 groups of 3 outputs
    conv("g3", "y", 24, 24, 1, 3, 1, 1, 1);        // dense again
    path = testing::temp_dir("func_grouped_model") + "/grouped.onnx";
    write_output(path, b.bytes());
  }
  return compile_model(path, batch, "grouped");
}

}  // namespace func_test
