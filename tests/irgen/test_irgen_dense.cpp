// How irgen cuts a PE part whose weights do not fit the weight buffer
// (irgen::weight_runs, which gemini's cost model calls too), on the
// presets' numbers.
#include <doctest/doctest.h>

#include "arch/arch.hpp"
#include "irgen/weight_runs.hpp"

using namespace cct;
using irgen::WeightRuns;

TEST_CASE("weight runs: whole, 64-channel blocks, fewer channels, streamed, refused") {
  const auto a = arch::load_architecture("zebu-1core");
  const int64_t half = a.core.wl0_rows / 2;  // 16384 rows of 64 bytes
  // WL0 rows: blocks of 64 channels on 32-byte bursts; fewer channels take their bytes.
  CHECK(irgen::wl0_rows(a, 64, 424) == 448);        // ResNet-50's Conv_0 (as the reference)
  CHECK(irgen::wl0_rows(a, 1000, 544) == 16 * 544);  // ResNet-34's classifier (as the reference)
  CHECK(irgen::wl0_rows(a, 40, 25120) == 40 * 25120 / 64);
  CHECK(irgen::wl0_rows(a, 1, 100) == 2);

  // Fits: whole.
  CHECK(irgen::weight_runs(a, 64, 4640, 1, true).kind == WeightRuns::Whole);
  // ResNet-50's 3x3 convolutions of 512 channels (2.4 MB): three runs of 192.
  auto r = irgen::weight_runs(a, 512, 4640, 1, true);
  CHECK(r.kind == WeightRuns::Runs);
  CHECK(r.run == 192);
  CHECK(irgen::wl0_rows(a, r.run, 4640) <= half);
  // VGG-11's first dense (25088 inputs, 102.9 MB): 64 channels take 1.6 MB,
  // more than half of WL0; runs of 40 (5 L2 alignment units of 8 INT8 channels).
  r = irgen::weight_runs(a, 4096, 25120, 1, true);
  CHECK(r.kind == WeightRuns::Runs);
  CHECK(r.run == 40);
  CHECK(irgen::wl0_rows(a, 40, 25120) <= half);
  CHECK(irgen::wl0_rows(a, 48, 25120) > half);
  // An FP16 output aligns to 4 channels: 41 fit, runs of 40 again.
  CHECK(irgen::weight_runs(a, 4096, 25120, 2, true).run == 40);
  // Nearly equal runs: 100 channels of VGG's size go in 3 runs of 40, 40, 20, not 41.
  CHECK(irgen::weight_runs(a, 100, 25120, 1, true).run == 40);
  // Computed for several batch groups: streamed from L2 when a 64-channel
  // tile fits half of WL0 and the part fits L2, otherwise runs.
  CHECK(irgen::weight_runs(a, 512, 4640, 1, false).kind == WeightRuns::Stream);
  CHECK(irgen::weight_runs(a, 4096, 4128, 1, false).kind == WeightRuns::Runs);  // 16.9 MB > L2
  CHECK(irgen::weight_runs(a, 4096, 25120, 1, false).run == 40);
  // Not even one channel fits half of WL0 (and the part not the whole buffer).
  CHECK(irgen::weight_runs(a, 2, half * 64 + 64, 1, true).kind == WeightRuns::TooLarge);
  // ... but a single channel that fits WL0 whole is computed whole.
  CHECK(irgen::weight_runs(a, 1, half * 64 + 64, 1, true).kind == WeightRuns::Whole);
}
