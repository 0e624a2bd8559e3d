// Real photos through the reference data's TFLite INT8 MobileNetV2 (label
// "slow"): python3-skimage's chelsea, coffee, rocket and astronaut, resized to
// 256 on the short side, centre-cropped to 224 and normalised with ImageNet's
// mean and std by examples/zoo/photo_input.py (torchvision's evaluation
// transform) in the layout and dtype of the Frontend IR's input. The
// quantized FIR interpreter's top-1 must name the photo (1000 ImageNet classes,
// 0-based); compiled for zebu-1core and chip-64tops, the program's output must
// equal the interpreter's bit for bit (every layer golden) and so name it too.
// The astronaut has no single right class: its top-1 is reported.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>

#include "../testing/testing.hpp"
#include "func/image.hpp"
#include "support/npy.hpp"
#include "zoo_util.hpp"

namespace fs = std::filesystem;
using namespace cct;

namespace {

struct Photo {
  std::string name;
  std::vector<int64_t> classes;  // acceptable top-1 classes; empty: report only
  std::string what;
};

const Photo kPhotos[] = {
    {"chelsea", {281, 282, 285}, "a cat (tabby, tiger cat, Egyptian cat)"},
    {"coffee", {967, 968, 504}, "espresso, cup or coffee mug"},
    {"rocket", {657, 812}, "missile or space shuttle"},
    {"astronaut", {}, "(reported only)"},
};

const func_test::Compiled& mobilenet() {
  return func_test::compile_model(testing::reference_dir() + "/tflite/mobilenet_v2_quantized_1x3x224x224.tflite", 1,
                                  "photo_mobilenet_v2_tflite");
}

// The photo as the FIR's input (layout and dtype from its graph input),
// written once per process by examples/zoo/photo_input.py.
const NpyArray& photo_input(const std::string& photo) {
  static std::map<std::string, NpyArray> cache;
  if (auto it = cache.find(photo); it != cache.end()) return it->second;
  const auto& c = mobilenet();
  auto inputs = func::graph_inputs(c.graph);
  REQUIRE(inputs.size() == 1);
  const auto& s = inputs[0].shape;
  REQUIRE_MESSAGE(s.size() == 4, "the Frontend IR's input is " << s.size() << "-D, not an image");
  std::string layout;
  int64_t size = 0;
  if (s[1] == 3 && s[2] == s[3]) layout = "nchw", size = s[2];
  else if (s[3] == 3 && s[1] == s[2]) layout = "nhwc", size = s[1];
  else FAIL("the Frontend IR's input [" << s[0] << ", " << s[1] << ", " << s[2] << ", " << s[3] << "] is no square RGB image");
  const std::string& dtype = inputs[0].dtype;
  REQUIRE_MESSAGE((dtype == "float16" || dtype == "float32"), "the Frontend IR's input is " << dtype << ", not a float image");
  std::string out = testing::temp_dir("zoo/photos_" + photo) + "/" + photo + ".npy";
  auto r = testing::run("/usr/bin/python3 " + testing::source_dir() + "/examples/zoo/photo_input.py " + photo + " " + out +
                        " --resize " + std::to_string(size * 256 / 224) + " --crop " + std::to_string(size) +
                        " --layout " + layout + " --dtype " + dtype);
  if (r.exit_code == 3) FAIL("cannot make the photo inputs: " << r.err);
  REQUIRE_MESSAGE(r.exit_code == 0, "photo_input.py " << photo << " failed: " << r.err);
  return cache.emplace(photo, read_npy(out)).first->second;
}

std::string classes_text(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t c : v) s += (s.empty() ? "" : ", ") + std::to_string(c);
  return s;
}

bool acceptable(const Photo& p, int64_t top, int64_t ties) {
  return ties == 1 && std::find(p.classes.begin(), p.classes.end(), top) != p.classes.end();
}

}  // namespace

TEST_CASE("real photos, TFLite INT8 MobileNetV2, quantized FIR interpreter alone: top-1 names the photo") {
  const auto& c = mobilenet();
  for (const Photo& p : kPhotos) {
    auto out = func_test::interpret(c, photo_input(p.name));
    REQUIRE(out.size() == 1);
    REQUIRE(out[0].numel() == 1000);
    auto [top, ties] = zoo::top1(out[0]);
    MESSAGE("interpreter: " << p.name << " -> class " << top << std::string(ties > 1 ? " (tied)" : "") << "; want "
                            << (p.classes.empty() ? std::string("anything") : classes_text(p.classes)) << " " << p.what);
    if (!p.classes.empty())
      CHECK_MESSAGE(acceptable(p, top, ties), p.name << ": top-1 " << top << " (" << ties << " tied), want one of "
                                                      << classes_text(p.classes));
  }
}

TEST_CASE("real photos, TFLite INT8 MobileNetV2 on zebu-1core and chip-64tops: the program's output is the interpreter's, top-1 names the photo") {
  const auto& c = mobilenet();
  for (std::string arch : {"zebu-1core", "chip-64tops"}) {
    std::string dir = testing::temp_dir(std::string("zoo/photos_") + arch);
    zoo::Build b = zoo::build(c, arch, dir);
    for (const Photo& p : kPhotos) {
      const NpyArray& x = photo_input(p.name);
      // Golden activations of this photo, for the first divergence.
      std::string golden = testing::temp_dir(std::string("zoo/photos_") + arch + "_" + p.name);
      const auto want = func_test::write_goldens(c.graph, interp::directory_loader(c.dir), x, golden);
      zoo::Case k = zoo::run(b, c, x, golden);
      std::string where = p.name + " on " + arch;
      bool same = k.ok() && k.outputs.size() == want.size() && !want.empty() &&
                  func_test::same_bits(k.outputs[0].tensor, want[0]);
      std::string top_text = "no output";
      bool right = false;
      if (k.ok() && !k.outputs.empty()) {
        auto [top, ties] = zoo::top1(k.outputs[0].tensor);
        top_text = "class " + std::to_string(top) + std::string(ties > 1 ? " (tied)" : "");
        right = p.classes.empty() || acceptable(p, top, ties);
      }
      std::string compared = !k.ok() ? "" : same ? ", output bit-identical to the interpreter's" : ", output DIFFERS from the interpreter's";
      MESSAGE(where << ": " << k.status() << compared << ", " << top_text << "; cycles " << k.cycles
                    << (k.note.empty() ? std::string() : "; " + k.note));
      CHECK_MESSAGE(k.ok(), where << ": " << k.status());
      CHECK_MESSAGE(same, where << ": the program's output is not the interpreter's");
      if (!p.classes.empty()) CHECK_MESSAGE(right, where << ": top-1 " << top_text << ", want one of " << classes_text(p.classes));
    }
  }
}
