// asm conventions for schedules beyond the reference's: tile order, weights
// of part of a layer's output channels, the DRAM weight image.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "asm/asm.hpp"
#include "asm/dram_layout.hpp"
#include "fir/fir.hpp"
#include "isa/program.hpp"
#include "sir/sir.hpp"
#include "testing.hpp"

namespace {

using namespace cct;

std::string ref(const std::string& sub) { return testing::reference_dir() + "/gemini-ir/" + sub; }
const std::string kR50b4 = "scheduler/int8_resnet50.sim_quantized_b4_c1_bw16_stschedule.json";

// Tile numbers of the pe_conv instructions of each workload, in program order.
std::map<int32_t, std::vector<int32_t>> tiles_by_workload(const isa::Program& p) {
  std::map<int32_t, std::vector<int32_t>> out;
  for (const auto& in : p.instructions)
    if (in.op() == isa::Opcode::pe_conv) out[in.mapping.wkl].push_back(in.mapping.tile);
  return out;
}

}  // namespace

TEST_CASE("asm: tiles go out in numeric order, or in the string order the Scheduler IR lists them in") {
  const std::string text = testing::read_file(ref(kR50b4));
  // The reference lists keys sorted as strings; our writer lists them by number.
  CHECK(assembler::detect_tile_order(text) == assembler::TileOrder::KeyString);
  sir::Schedule s = sir::parse_sir(text, "ref");
  const std::string ours = sir::format_sir(s, false);
  CHECK(assembler::detect_tile_order(ours) == assembler::TileOrder::Numeric);
  CHECK(assembler::detect_tile_order("{}") == assembler::TileOrder::Numeric);

  auto g = fir::read_fir(ref("frontend/int8_resnet50.sim_quantized_b4.json"));
  auto a = arch::load_architecture("zebu-1core");
  assembler::Options o;
  o.tile_order = assembler::detect_tile_order(ours);
  auto numeric = tiles_by_workload(assembler::assemble(sir::parse_sir(ours, "ours"), g, a, o));
  size_t longest = 0;
  for (const auto& entry : numeric) {
    const auto& wkl = entry.first;
    const auto& tiles = entry.second;
    CAPTURE(wkl);
    longest = std::max(longest, tiles.size());
    for (size_t i = 0; i < tiles.size(); ++i) CHECK(tiles[i] == int32_t(i));
  }
  CHECK(longest > 10);  // a workload where the two orders differ
  o.tile_order = assembler::TileOrder::KeyString;
  auto keyed = tiles_by_workload(assembler::assemble(s, g, a, o));
  bool ten_after_one = false;
  for (const auto& [wkl, tiles] : keyed)
    for (size_t i = 0; i + 1 < tiles.size(); ++i) ten_after_one = ten_after_one || (tiles[i] == 1 && tiles[i + 1] == 10);
  CHECK(ten_after_one);
}

TEST_CASE("asm DRAM layout: each layer's weights once; a transfer of some output channels reads their run") {
  auto g = fir::read_fir(ref("frontend/int8_resnet34.sim_quantized_b1.json"));
  sir::Schedule s = sir::read_sir(ref("scheduler/int8_resnet34.sim_quantized_b1_c1_bw16_stschedule.json"));
  const assembler::DramLayout whole = assembler::layout_dram(s, g);
  // Split the second layer's weights into the halves two cores would load,
  // and load the first half a second time (as a core of another batch part).
  size_t at = s.dram.out.size();
  int seen = 0;
  for (size_t i = 0; i < s.dram.out.size() && at == s.dram.out.size(); ++i)
    if (s.dram.out[i].type == sir::DramLoadType::Weight && ++seen == 2) at = i;
  REQUIRE(at < s.dram.out.size());
  sir::DramLoad lo = s.dram.out[at], hi = lo, again = lo;
  const int64_t K = lo.upper[1] + 1, per_k = lo.size / K;
  REQUIRE(K % 2 == 0);
  lo.upper[1] = K / 2 - 1, lo.size = K / 2 * per_k;
  hi.lower[1] = K / 2, hi.size = K / 2 * per_k;
  again = lo;
  hi.transfer_id = 1000000, again.transfer_id = 1000001;
  s.dram.out[at] = lo;
  s.dram.out.push_back(hi);
  s.dram.out.push_back(again);
  const assembler::DramLayout split = assembler::layout_dram(s, g);
  CHECK(split.weight_bytes == whole.weight_bytes);  // nothing duplicated
  std::map<int64_t, assembler::DramWeightSlice> by_id;
  for (const auto& w : split.weights) by_id[w.transfer_id] = w;
  std::map<int64_t, assembler::DramWeightSlice> before;
  for (const auto& w : whole.weights) before[w.transfer_id] = w;
  const auto& first = by_id.at(lo.transfer_id);
  CHECK(first.address == before.at(lo.transfer_id).address);
  CHECK(first.size == K / 2 * per_k);
  CHECK(by_id.at(hi.transfer_id).address == first.address + K / 2 * per_k);
  CHECK(by_id.at(hi.transfer_id).k_lo == K / 2);
  CHECK(by_id.at(again.transfer_id).address == first.address);
  // The other layers keep their places.
  for (const auto& [tid, w] : before) CHECK(by_id.at(tid).address == w.address);
  // Inconsistent channel sizes within a layer are an input error.
  s.dram.out.back().size = K / 2 * (per_k - 8);
  CHECK_THROWS_WITH(assembler::layout_dram(s, g), doctest::Contains("bytes per output channel"));
}
