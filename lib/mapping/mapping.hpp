// The mapping format (formats/Mapping_Format.md): how a network is laid out
// on a chip. gemini writes it, irgen reads it, and a user can write one by
// hand or from a short script to replace gemini.
//
// A mapping is a list of segments run one after another; a tensor crossing
// a segment boundary waits in its producer's L2 and goes core to core (DRAM
// only when L2 runs out). Inside a segment every mapped layer has
// its own cores (no core serves two layers of a segment), a partition of its
// output over them, and a DRAM channel for each of its tensors; batch groups
// pipeline through the segment.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "support/json.hpp"

namespace cct::arch {
class Architecture;
}

namespace cct::mapping {

inline constexpr std::string_view kFormatName = "cct-mapping";
inline constexpr int64_t kFormatVersion = 1;

// Partition factors over the layer's output: batch (within one batch group),
// output channels, output height, output width. Their product is the number
// of cores.
struct Partition {
  int64_t b = 1, k = 1, h = 1, w = 1;
  // Saturates at INT64_MAX rather than overflow (factors come from files).
  int64_t product() const {
    int64_t p = 1;
    for (int64_t f : {b, k, h, w})
      if (__builtin_mul_overflow(p, f, &p)) return INT64_MAX;
    return p;
  }
  std::array<int64_t, 4> factors() const { return {b, k, h, w}; }
  bool operator==(const Partition&) const = default;
};

// DRAM channel (index into the architecture's dram.channels) of each tensor
// of the layer that goes through DRAM.
struct DramChannels {
  int64_t ifmap = 0;    // inputs read from DRAM (from earlier segments or the network input)
  int64_t weights = 0;  // weights (always read from DRAM)
  int64_t ofmap = 0;    // outputs written to DRAM (read by later segments or the network output)
  bool operator==(const DramChannels&) const = default;
};

struct LayerMapping {
  std::string layer;           // FIR layer name
  std::vector<int64_t> cores;  // global core ids; part i of the partition runs on cores[i]
  Partition partition;
  DramChannels dram;
  bool operator==(const LayerMapping&) const = default;
};

struct Segment {
  int64_t batch_groups = 1;  // the batch is cut into this many groups that pipeline through the segment
  std::vector<LayerMapping> layers;  // in execution (topological) order
  // Each batch group is further cut into this many stripes of output rows
  // that pipeline through the segment (see row_stripes): how a segment
  // overlaps its layers at batch 1. Partitions then leave h at 1.
  int64_t row_groups = 1;
  bool operator==(const Segment&) const = default;
};

struct Mapping {
  std::string arch;   // architecture name the mapping was made for
  std::string fir;    // name of the FIR it was made for (for people; not checked)
  int64_t batch = 1;  // samples per inference
  std::vector<Segment> segments;
  bool operator==(const Mapping&) const = default;

  // The mapping of a layer and where it is; nullptr when not mapped.
  struct Place {
    size_t segment = 0, index = 0;
  };
  const LayerMapping* find(std::string_view layer, Place* where = nullptr) const;
  size_t layer_count() const;
};

// ---- Work split -------------------------------------------------------------

// Output dimensions [N, K, H, W] of a layer as the mapping partitions them;
// N counts the samples of one batch group.
using Dims = std::array<int64_t, 4>;

// Part index i (0 <= i < product) <-> coordinates (ib, ik, ih, iw), row-major
// with w fastest: i = ((ib * k + ik) * h + ih) * w + iw.
std::array<int64_t, 4> part_coords(const Partition& p, int64_t part);

// The output box of one part, as inclusive [lower, upper] NCHW coordinates
// (the convention of Scheduler IR workloads). Factors must divide `dims`.
struct Box {
  std::array<int64_t, 4> lower{}, upper{};
  bool operator==(const Box&) const = default;
};
Box part_box(const Partition& p, const Dims& dims, int64_t part);

// ---- Row stripes -------------------------------------------------------------

// The output rows of each layer of a segment cut into `groups` stripes that
// pipeline through it: stripe g of every layer is computed before stripe
// g + 1 of any, so stripe g of a layer must need only stripes <= g of its
// producers in the segment. The last layers (no consumer in the segment)
// are cut evenly (stripe g ends at ceil(rows * (g + 1) / groups)); going backwards, stripe g of a producer ends where the
// rows its consumers' stripes <= g read end (halo included), the last
// stripe taking the rest. Stripes may be empty (a producer whose consumer
// reads all its rows at once computes everything in stripe 0).
//
// `rows[l]`: output rows of layer l (segment order); `consumers[l]`: the
// layers of the segment after l that read it; `rows_read(c, l, n)`: how many
// leading rows of l the first n output rows of c read (0 when n is 0).
// Returns per layer the exclusive end row of each stripe (the last = rows).
std::vector<std::vector<int64_t>> row_stripes(
    const std::vector<int64_t>& rows, const std::vector<std::vector<size_t>>& consumers, int64_t groups,
    const std::function<int64_t(size_t consumer, size_t producer, int64_t rows)>& rows_read);

// ---- Reading and writing ----------------------------------------------------

// Parses mapping JSON and runs the checks that need neither an architecture
// nor a FIR (see check_structure). Errors name file and JSON pointer.
Mapping parse_mapping(std::string_view text, const std::string& file, bool validate_schema = true);
Mapping read_mapping(const std::string& path, bool validate_schema = true);

Json to_json(const Mapping& m);
// The mapping as text; validates it against the schema when `validate` is set
// (a failure is a bug: kExitInternal).
std::string format_mapping(const Mapping& m, bool validate = true);
void write_mapping(const std::string& path, const Mapping& m, bool validate = true);

// ---- Semantic checks --------------------------------------------------------
// Each returns every problem found, as "file: /json/pointer: what".

// Alone: positive batch and batch groups (groups dividing the batch), at least
// one segment and one layer per segment, a layer mapped once, a core listed
// once per segment, partition factors >= 1 whose product is the core count,
// the batch factor dividing the samples of one batch group, channels >= 0.
std::vector<std::string> check_structure(const Mapping& m, const std::string& file);

// Against an architecture: its name, core ids and DRAM channels that exist.
std::vector<std::string> check_against_arch(const Mapping& m, const arch::Architecture& a, const std::string& file);

// What the checks need to know of the network, in topological order. A thin
// adapter builds it from a FIR (mapping_fir.hpp); tests build it by hand.
struct NetworkLayer {
  std::string name;
  bool on_npu = true;                  // cpu layers (reshape) are not mapped
  Dims dims{1, 1, 1, 1};               // output [N, K, H, W] over the whole batch
  int rank = 4;                        // rank of the output shape (> 4 cannot be partitioned)
  std::vector<std::string> producers;  // layers of the network feeding this one
  int64_t k_unit = 1;                  // output channels per group (grouped convolutions: a part holds whole groups)
};
struct Network {
  int64_t batch = 1;
  std::vector<NetworkLayer> layers;
};

// Against the network: same batch, every npu layer mapped exactly once, no
// unknown or cpu layer mapped, factors dividing the layer's dimensions, and
// every layer after all its producers (through cpu layers too).
std::vector<std::string> check_against_network(const Mapping& m, const Network& net, const std::string& file);

// Throws Error(kExitInvalidInput) with every problem found (one per line), if any.
void throw_if_problems(const std::vector<std::string>& problems);

}  // namespace cct::mapping
