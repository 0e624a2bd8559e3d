// Issue 9's end-to-end acceptance on a real network: torchvision's ResNet-50
// (random weights, exported once into the build's model cache) at batch 1,
// through every tool on the emulated core and on the whole chip: each
// intermediate file validates, irgen --check and asm --check pass, zebusim
// finishes, traceview summarises, and a second run gives the same bytes.
#include <doctest/doctest.h>

#include "pipeline_util.hpp"
#include "testing.hpp"

TEST_CASE("torchvision ResNet-50 batch 1 through every stage, byte-identically twice, on both architectures") {
  const std::string model = cct::testing::torchvision_onnx("resnet50");
  for (const std::string arch : {"zebu-1core", "chip-64tops"}) {
    CAPTURE(arch);
    pipeline_test::check_twice_identical("pipeline_resnet50", model, "resnet50", arch, 1);
  }
}
