// The Scheduler IR (SIR): per core, the ordered workloads of a network with
// their tensors, transfers, L2/WL0 snapshots and intra-core tiling. irgen
// writes it; asm and irgen --check read it (formats/Scheduler_IR_Format.md).
//
// Conventions: coordinates are [n, c, h, w] (weights: [0, k, c, kh*kw]) and
// both lower and upper bounds are inclusive; addresses and sizes are bytes.
// Keys absent in some reference workloads are std::optional here, so reading
// and writing a file keeps exactly the keys it had.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/json.hpp"

namespace cct::sir {

using Coord = std::array<int64_t, 4>;  // [n, c, h, w], inclusive
using Padding = std::array<int64_t, 4>;  // [top, bottom, left, right]

// Number of elements between two inclusive corners (0 if any upper < lower).
int64_t box_volume(const Coord& lower, const Coord& upper);

// Where a transfer goes or comes from: a core or DRAM (core_id -1).
enum class Endpoint : uint8_t { Core, Dram };
std::string_view endpoint_name(Endpoint e);  // "core", "DRAM"
inline constexpr int64_t kDramCoreId = -1;

enum class LayerType : uint8_t { Pe, Vp };  // "pe": PE array (conv, dense); "vp": vector processor
std::string_view layer_type_name(LayerType t);

enum class TensorType : uint8_t { Ifmap, Ofmap, Weight };
std::string_view tensor_type_name(TensorType t);  // "ifmap", "ofmap", "weight"

enum class DramLoadType : uint8_t { Weight, Fmap };
std::string_view dram_load_type_name(DramLoadType t);  // "weight", "fmap"

// Origin of a weight-buffer (WL0/WL1) entry: DRAM ("DDR") or L2 of the core ("CORE").
enum class WeightSource : uint8_t { Ddr, Core };
std::string_view weight_source_name(WeightSource s);

// A receiver of a transfer (ofmap destination, DRAM load destination).
struct Destination {
  int64_t core_id = 0;
  std::optional<std::string> layer_name;  // given in DRAM loads, not in ofmap destinations
  Endpoint type = Endpoint::Core;
  std::optional<int64_t> workload_id;  // absent for DRAM
  bool operator==(const Destination&) const = default;
};

// "-1"/"in": a tensor a core stores to DRAM.
struct DramStore {
  int64_t core_id = 0;
  std::string layer_name;
  Coord lower{}, upper{};
  std::optional<std::vector<int64_t>> related_ofmap;  // later DRAM loads of this data
  int64_t transfer_id = 0;
  int64_t workload_id = 0;
  bool operator==(const DramStore&) const = default;
};

// "-1"/"out": a tensor loaded from DRAM (weights, network inputs, spilled fmaps).
struct DramLoad {
  std::vector<Destination> destination;
  Coord lower{}, upper{};
  std::vector<int64_t> related_ifmap;  // transfer ids of the stores that wrote this data
  int64_t size = 0;                    // bytes
  int64_t transfer_id = 0;
  DramLoadType type = DramLoadType::Weight;
  bool operator==(const DramLoad&) const = default;
};

// "-1"/"host": a host step (our extension): host layers the host runs
// between the chip's stores of their inputs and its loads of their results.
struct HostStep {
  std::vector<std::string> layers;     // the host layers it runs, in Frontend IR order
  int64_t ops = 0;                     // element operations (fir::host_ops)
  std::vector<int64_t> related_ifmap;  // the "-1"/in stores it reads
  std::vector<int64_t> related_ofmap;  // the "-1"/out loads reading its results
  int64_t size = 0;                    // bytes it reads and writes in DRAM
  int64_t time = 0;                    // predicted cycles (timing::host_cycles)
  int64_t transfer_id = 0;             // the step's id (TAG of its ct_hs / ct_hw)
  bool operator==(const HostStep&) const = default;
};

struct Dram {
  std::vector<DramStore> in;
  std::vector<DramLoad> out;
  std::optional<std::vector<HostStep>> host;  // absent in files without host steps
  bool operator==(const Dram&) const = default;
};

// A workload's input feature map (several transfer ids when assembled from pieces).
struct Ifmap {
  int64_t align = 8;     // channels are padded to a multiple of this
  int64_t bitwidth = 8;  // bits per element
  Coord lower{}, upper{};
  int64_t size = 0;  // bytes in L2
  std::vector<int64_t> transfer_id;
  bool operator==(const Ifmap&) const = default;
};

struct Ofmap {
  std::vector<Destination> destination;
  Coord lower{}, upper{};
  int64_t size = 0;
  int64_t transfer_id = 0;
  bool operator==(const Ofmap&) const = default;
};

struct Weight {
  Coord lower{}, upper{};
  int64_t size = 0;  // bytes, including 32 bytes of per-output-channel parameters
  std::vector<int64_t> transfer_id;
  bool operator==(const Weight&) const = default;
};

// Where an L2 tensor's data came from.
struct Source {
  int64_t core_id = 0;  // -1 for DRAM
  std::optional<std::string> layer_name;
  Coord lower{}, upper{};
  // (extension) where the piece's lower corner lands in the tensor holding
  // it, when that is not `lower` itself: data movement layers (concat,
  // slice, gather) take pieces of their inputs to other coordinates.
  std::optional<Coord> place;
  int64_t size = 0;
  int64_t transfer_id = 0;
  Endpoint type = Endpoint::Core;
  bool operator==(const Source&) const = default;
};

// One tensor of the L2 snapshot taken before a workload runs.
struct BufferTensor {
  int64_t address = 0;  // byte address in L2
  int64_t align = 8;
  int64_t bitwidth = 8;
  std::optional<bool> cur_wl_ifmap;  // an input of the current workload
  std::optional<std::string> layer_name;
  Coord lower{}, upper{};
  std::optional<bool> newly_added;  // placed in L2 for this workload
  int64_t size = 0;
  std::optional<std::vector<Source>> source;
  std::optional<bool> start_send;
  int64_t tensor_id = 0;
  int64_t tensor_order = 0;
  std::optional<std::vector<int64_t>> transfer_id;
  TensorType type = TensorType::Ifmap;
  bool operator==(const BufferTensor&) const = default;
};
// Whether two L2 tensors share a byte.
inline bool share_bytes(const BufferTensor& a, const BufferTensor& b) {
  return a.address < b.address + b.size && b.address < a.address + a.size;
}

// One entry of a weight-buffer snapshot (wl0_buffer / wl1_buffer).
struct WeightBufferEntry {
  int64_t address = 0;  // bytes in the weight buffer
  int64_t align = 8;
  int64_t bitwidth = 8;
  std::string layer_name;
  std::optional<Coord> lower, upper;
  int64_t size = 0;
  WeightSource source = WeightSource::Ddr;
  std::optional<int64_t> tensor_order;  // null in the reference for entries refilled from the core
  std::vector<int64_t> transfer_id;
  bool operator==(const WeightBufferEntry&) const = default;
};

// How an empty or missing list was written, so it is written back the same way.
enum class EmptyForm : uint8_t { Omitted, Null, EmptyArray };

struct WeightBuffer {
  std::vector<WeightBufferEntry> entries;
  EmptyForm when_empty = EmptyForm::Omitted;  // only used when entries is empty
  bool present() const { return !entries.empty() || when_empty != EmptyForm::Omitted; }
  bool operator==(const WeightBuffer&) const = default;
};

// One tile of a workload (tile_info/tile_num_<i>).
struct Tile {
  std::optional<Coord> act_mini_tile;       // PE mini tile of the input, [n, c, h, w]
  std::optional<int64_t> ci_cut_num;        // input-channel cuts
  std::optional<std::string> cut_mode;      // "KC", "KH", "KW", "KK", "KN"
  Coord ifmap_lower{}, ifmap_upper{};
  std::optional<Coord> ifmap_lower2, ifmap_upper2;  // second input (element-wise layers)
  std::optional<std::string> layer_name;
  std::optional<std::string> loop_order;  // "KNHW"
  std::optional<std::array<int64_t, 2>> mtc0_mtk0;
  Coord ofmap_lower{}, ofmap_upper{};
  std::optional<Coord> out_mini_tile;
  double single_tile_time_pred = 0.0;  // predicted cycles of this tile
  Padding tile_padding_tblr{};
  bool operator==(const Tile&) const = default;
};

struct Workload {
  std::vector<BufferTensor> buffer;  // L2 before the workload
  std::vector<Ifmap> ifmap;
  std::string layer_name;
  LayerType layer_type = LayerType::Pe;
  std::vector<Ofmap> ofmap;
  int64_t ofmap_size = 0;
  std::vector<std::array<int64_t, 2>> ring_buffer_info;  // [start, end) byte regions of L2
  std::vector<Tile> tile_info;                           // tile_num_0, tile_num_1, ...
  Padding tile_padding_tblr{};
  int64_t time = 0;  // predicted cycles
  std::optional<Weight> weight;
  WeightBuffer wl0_buffer;
  WeightBuffer wl1_buffer;
  Coord lower{}, upper{};  // "workload": [lower, upper]
  int64_t workload_id = 0;
  bool operator==(const Workload&) const = default;
};

struct Core {
  int64_t id = 0;
  std::vector<Workload> workloads;
  bool operator==(const Core&) const = default;
};

struct Schedule {
  int64_t buffersize = 0;  // L2 bytes per core
  int64_t top_batch_cut = 1;
  int64_t xlen = 1, ylen = 1;  // core mesh
  Dram dram;                   // "-1"
  std::vector<Core> cores;     // "0", "1", ... in increasing id
  bool operator==(const Schedule&) const = default;

  const Core* core(int64_t id) const;
  // The workload with this id on any core, nullptr if none.
  const Workload* find_workload(int64_t workload_id) const;
  size_t workload_count() const;
};

// Every endpoint of every transfer id: the building block of irgen --check
// (transfer matching) and of asm (who sends what where).
struct TransferRef {
  enum class Kind : uint8_t {
    OfmapOut,    // produced by a workload's ofmap
    IfmapIn,     // consumed as a workload's ifmap
    WeightIn,    // consumed as a workload's weight
    DramStore,   // "-1"/"in": stored to DRAM
    DramLoad,    // "-1"/"out": loaded from DRAM
  };
  Kind kind;
  int64_t core_id;      // -1 for the DRAM entries
  size_t index;         // workload position within its core (or entry index in the DRAM list)
  size_t tensor_index;  // position in ifmap/ofmap lists (0 otherwise)
};
class TransferIndex {
 public:
  explicit TransferIndex(const Schedule& s);
  // All references to a transfer id, in document order; empty if unknown.
  const std::vector<TransferRef>& refs(int64_t transfer_id) const;
  const std::map<int64_t, std::vector<TransferRef>>& all() const { return refs_; }

 private:
  std::map<int64_t, std::vector<TransferRef>> refs_;
};

// Rewrites every transfer id of the schedule (ofmaps, ifmaps, weights,
// L2 and weight-buffer snapshots and their sources, DRAM loads, stores and
// host steps, and the ids they relate) through `f`. Negative ids are left
// as they are.
void renumber_transfers(Schedule& s, const std::function<int64_t(int64_t)>& f);

// Reading. Schema validation (schemas/sir.schema.json) and the structural
// checks below run unless disabled; errors name file and JSON pointer.
struct ReadOptions {
  bool validate_schema = true;
  bool validate_structure = true;
};
Schedule parse_sir(std::string_view text, const std::string& file, const ReadOptions& opts = {});
Schedule read_sir(const std::string& path, const ReadOptions& opts = {});

// Writing: keys in the reference's (alphabetical) order; numbered keys
// ("-1", "0", "1", ..., tile_num_<i>) in numeric order.
Json to_json(const Schedule& s);
std::string format_sir(const Schedule& s, bool validate = true);
void write_sir(const std::string& path, const Schedule& s, bool validate = true);

// Structural checks (within the format, not across workloads: transfer
// matching and L2 overlap are irgen --check): unique workload ids, lower <=
// upper everywhere, tiles inside their workload, sizes and addresses within
// the buffer, ring-buffer regions inside L2, core ids inside the mesh,
// destinations naming existing cores. Each problem is "file: /pointer: what".
std::vector<std::string> check(const Schedule& s, const std::string& file);
void validate(const Schedule& s, const std::string& file);

}  // namespace cct::sir
