// Issue 20's acceptance for the HTML view: torchvision's ResNet-50 on the
// whole chip (7,000+ instructions, transfers whose sender comes later in the
// program), every instruction class hovered in headless Chromium with no
// console error and every enum parameter printed by name.
#include <doctest/doctest.h>

#include "../pipeline/pipeline_util.hpp"
#include "html_check.hpp"
#include "testing.hpp"
#include "trace/trace.hpp"

TEST_CASE("ResNet-50 on chip-64tops: the HTML view's tooltips of every instruction class") {
  html_check::chromium();
  const std::string model = cct::testing::torchvision_onnx("resnet50");
  const std::string dir = cct::testing::temp_dir("traceview_resnet50");
  const std::string stem = pipeline_test::run_chain(dir, model, "resnet50", "chip-64tops", 1);
  html_check::check_hover_every_class(stem + ".html", cct::trace::read_trace(stem + ".trace"), dir);
}
