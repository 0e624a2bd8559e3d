// irgen --check (irgen::check): the reference schedules pass; hand-corrupted
// copies fail with the JSON pointer of the fault.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "fir/fir.hpp"
#include "irgen/irgen.hpp"
#include "irgen_test_util.hpp"
#include "sir/sir.hpp"
#include "testing.hpp"

namespace {

using namespace cct;

const arch::Architecture& zebu() {
  static arch::Architecture a = arch::load_architecture("zebu-1core");
  return a;
}

using cct::testing::joined;

// True when some problem contains both fragments.
bool has(const std::vector<std::string>& problems, const std::string& pointer, const std::string& what) {
  for (const auto& p : problems)
    if (p.find(pointer) != std::string::npos && p.find(what) != std::string::npos) return true;
  return false;
}

struct Ref {
  sir::Schedule s;
  fir::Graph g;
};
const Ref& r50b1() {
  static Ref r{sir::read_sir(irgen_test::sir_path("resnet50", 1)), fir::read_fir(irgen_test::fir_path("resnet50", 1))};
  return r;
}

// Position of the first workload on core 0 satisfying `pred`.
template <class P>
size_t find_wl(const sir::Schedule& s, P pred) {
  const auto& w = s.cores.at(0).workloads;
  for (size_t k = 0; k < w.size(); ++k)
    if (pred(w[k])) return k;
  FAIL("no workload of the reference matches");
  return 0;
}

}  // namespace

TEST_CASE("irgen --check: every reference schedule passes, with and without the Frontend IR") {
  for (std::string net : {"resnet34", "resnet50"})
    for (int b : {1, 4}) {
      CAPTURE(net);
      CAPTURE(b);
      auto s = sir::read_sir(irgen_test::sir_path(net, b));
      auto g = fir::read_fir(irgen_test::fir_path(net, b));
      auto with = irgen::check(s, zebu(), &g, "ref");
      CHECK_MESSAGE(with.empty(), joined(with));
      auto without = irgen::check(s, zebu(), nullptr, "ref");
      CHECK_MESSAGE(without.empty(), joined(without));
    }
}

TEST_CASE("irgen --check: a dangling transfer id") {
  auto s = r50b1().s;
  size_t k = find_wl(s, [](const sir::Workload& w) { return w.layer_name == "Conv_5"; });
  s.cores[0].workloads[k].ifmap[0].transfer_id[0] = 987654;
  auto p = irgen::check(s, zebu(), &r50b1().g, "x.json");
  CHECK_MESSAGE(has(p, "x.json: /0/" + std::to_string(k) + "/ifmap/0/transfer_id/0", "transfer 987654 has no producer"),
                joined(p));
}

TEST_CASE("irgen --check: a transfer produced twice") {
  auto s = r50b1().s;
  auto& w = s.cores[0].workloads;
  w[6].ofmap[0].transfer_id = w[5].ofmap[0].transfer_id;
  auto p = irgen::check(s, zebu(), nullptr, "x.json");
  CHECK_MESSAGE(has(p, "/ofmap/0", "is produced twice"), joined(p));
}

TEST_CASE("irgen --check: overlapping live tensors in L2") {
  auto s = r50b1().s;
  size_t k = find_wl(s, [](const sir::Workload& w) { return w.buffer.size() >= 3; });
  auto& b = s.cores[0].workloads[k].buffer;
  b[1].address = b[0].address + 64;
  auto p = irgen::check(s, zebu(), nullptr, "x.json");
  CHECK_MESSAGE(has(p, "/0/" + std::to_string(k) + "/buffer/", "in L2"), joined(p));
  CHECK_MESSAGE(has(p, "/0/" + std::to_string(k) + "/buffer/", "overlaps tensor"), joined(p));
}

TEST_CASE("irgen --check: overlapping weight-buffer entries") {
  auto s = r50b1().s;
  size_t k = find_wl(s, [](const sir::Workload& w) { return w.wl0_buffer.entries.size() >= 2; });
  auto& e = s.cores[0].workloads[k].wl0_buffer.entries;
  e[1].address = e[0].address;
  auto p = irgen::check(s, zebu(), nullptr, "x.json");
  CHECK_MESSAGE(has(p, "/0/" + std::to_string(k) + "/wl0_buffer/", "overlap another entry"), joined(p));
}

TEST_CASE("irgen --check: capacities and ring-buffer regions") {
  auto s = r50b1().s;
  auto& w = s.cores[0].workloads[3];
  w.wl0_buffer.entries[0].address = zebu().core.wl0_rows - 1;
  w.ring_buffer_info = {{0, 1024}};
  auto p = irgen::check(s, zebu(), nullptr, "x.json");
  CHECK_MESSAGE(has(p, "/0/3/wl0_buffer/0", "outside the weight buffer"), joined(p));
  CHECK_MESSAGE(has(p, "/0/3/buffer/", "not inside one ring-buffer region"), joined(p));
  s = r50b1().s;
  s.buffersize = zebu().core.l2_bytes * 2;
  p = irgen::check(s, zebu(), nullptr, "x.json");
  CHECK_MESSAGE(has(p, "/buffersize", "exceeds the L2"), joined(p));
}

TEST_CASE("irgen --check: tiles and workloads must cover their outputs exactly once") {
  auto s = r50b1().s;
  size_t k = find_wl(s, [](const sir::Workload& w) { return w.tile_info.size() >= 2; });
  s.cores[0].workloads[k].tile_info.pop_back();
  auto p = irgen::check(s, zebu(), nullptr, "x.json");
  CHECK_MESSAGE(has(p, "/0/" + std::to_string(k) + "/tile_info", "the tiles cover"), joined(p));

  s = r50b1().s;
  s.cores[0].workloads[3].upper[2] -= 1;  // Conv_3 loses its last output row
  s.cores[0].workloads[3].tile_info[0].ofmap_upper[2] -= 1;
  p = irgen::check(s, zebu(), &r50b1().g, "x.json");
  CHECK_MESSAGE(has(p, "/0/3/workload", "cover"), joined(p));

  s = r50b1().s;
  s.cores[0].workloads[3].upper[1] = 4095;
  p = irgen::check(s, zebu(), &r50b1().g, "x.json");
  CHECK_MESSAGE(has(p, "/0/3/workload", "lies outside the output"), joined(p));
}

TEST_CASE("irgen --check: a layer of the Frontend IR without workloads, a PE workload without its weights") {
  auto s = r50b1().s;
  s.cores[0].workloads.pop_back();  // the classifier
  auto p = irgen::check(s, zebu(), &r50b1().g, "x.json");
  CHECK_MESSAGE(has(p, "x.json", "\"Gemm_121\" of the Frontend IR has no workload"), joined(p));

  s = r50b1().s;
  size_t k = find_wl(s, [](const sir::Workload& w) { return w.layer_type == sir::LayerType::Pe; });
  s.cores[0].workloads[k].wl0_buffer.entries.clear();
  p = irgen::check(s, zebu(), nullptr, "x.json");
  CHECK_MESSAGE(has(p, "/0/" + std::to_string(k) + "/wl0_buffer", "holds nothing of the workload's layer"), joined(p));
}

TEST_CASE("irgen --check: inputs delivered only in part") {
  auto s = r50b1().s;
  // Shrink the producer's piece so it no longer covers what Conv_3 reads.
  size_t k = find_wl(s, [](const sir::Workload& w) { return w.layer_name == "Conv_3"; });
  int64_t tid = s.cores[0].workloads[k].ifmap[0].transfer_id[0];
  for (auto& w : s.cores[0].workloads)
    for (auto& o : w.ofmap)
      if (o.transfer_id == tid) o.upper[2] = 10;
  auto p = irgen::check(s, zebu(), nullptr, "x.json");
  CHECK_MESSAGE(has(p, "/0/" + std::to_string(k) + "/ifmap/0", "deliver only part"), joined(p));
}
