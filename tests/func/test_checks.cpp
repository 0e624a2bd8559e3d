// The static checks refuse what the functional run refuses. Programs and
// schedules of a model with dense, depthwise and grouped convolutions
// (func_test::grouped_model) are damaged one way at a time; asm --check,
// zebusim's timing run and the functional run all refuse a damaged program
// with the same message naming its line (lib/footprint is their one
// definition of what an instruction reads and writes), irgen --check refuses
// a damaged schedule naming its JSON pointer, and the undamaged ones pass.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <random>

#include "../testing/testing.hpp"
#include "asm/asm.hpp"
#include "asm/dram_layout.hpp"
#include "footprint/footprint.hpp"
#include "footprint/layout.hpp"
#include "func/functional.hpp"
#include "func_test_util.hpp"
#include "grouped_model.hpp"
#include "irgen/irgen.hpp"
#include "isa/program_io.hpp"
#include "sim/sim.hpp"
#include "support/error.hpp"

namespace fs = std::filesystem;
using namespace cct;
using func_test::Built;
using func_test::Compiled;
using func_test::arch_named;

namespace {

struct Verdict {
  int code = 0;  // 0: accepted
  std::string message;
};
template <class F>
Verdict verdict(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.code(), e.what()};
  }
  return {};
}

// asm --check, the timing run and the functional run of a program named
// "p.asm". The functional run follows `timing`, by default the undamaged
// program's (the timing run refuses the damaged one).
struct Verdicts {
  Verdict check, timing, functional;
};
Verdicts judge(const Compiled& c, const Built& b, const isa::Program& p, const arch::Architecture& a,
               const std::vector<trace::Timing>* timing = nullptr) {
  Verdicts v;
  v.check = verdict([&] {
    auto report = assembler::check(p, a, "p.asm");
    if (!report.ok()) throw Error(kExitCheckFailed, report.text("p.asm"));
  });
  v.timing = verdict([&] {
    sim::Options o;
    o.file = "p.asm";
    sim::simulate(p, a, o);
  });
  v.functional = verdict([&] {
    func::Options o;
    o.program_file = "p.asm";
    func::run(p, timing ? *timing : b.timing, a, c.graph, b.sir, func::directory_npy_loader(c.dir), {c.input}, o);
  });
  return v;
}

// All three refuse with exit code 3 and one message, which starts with `start`
// and contains `part`.
void all_refuse(const Verdicts& v, const std::string& start, const std::string& part) {
  INFO("asm --check: " << v.check.message);
  INFO("timing run:  " << v.timing.message);
  INFO("functional:  " << v.functional.message);
  CHECK(v.check.code == kExitInvalidInput);
  CHECK(v.timing.code == kExitInvalidInput);
  CHECK(v.functional.code == kExitInvalidInput);
  CHECK(v.check.message == v.timing.message);
  CHECK(v.check.message == v.functional.message);
  CHECK(v.check.message.rfind(start, 0) == 0);
  CHECK(v.check.message.find(part) != std::string::npos);
}

std::string at(size_t i, const char* mnemonic) { return "p.asm:" + std::to_string(i + 1) + ": " + mnemonic + ": "; }

// The pe_conv of the first tile computed with GROUPS > 1 (the depthwise
// layer), and the configuration instructions in force for it.
struct GroupedConv {
  size_t conv = 0, gp = 0, load = 0;  // pe_conv, its pe_cfg_gp, the lw_mov that loaded its weights
};
GroupedConv first_grouped(const isa::Program& p) {
  GroupedConv g;
  size_t gp = 0;
  bool grouped = false;
  std::map<int64_t, size_t> wl0_loads;  // WL0 row -> the latest lw_mov there
  for (size_t i = 0; i < p.size(); ++i) {
    const auto& in = p.instructions[i];
    if (in.op() == isa::Opcode::lw_mov) wl0_loads[in.get(isa::Param::DTaddr)] = i;
    if (in.op() == isa::Opcode::pe_cfg_gp) gp = i, grouped = in.get(isa::Param::GROUPS) > 1;
    if (in.op() == isa::Opcode::pe_conv && grouped) {
      g.conv = i, g.gp = gp;
      auto it = wl0_loads.upper_bound(in.get(isa::Param::SWaddr));
      REQUIRE(it != wl0_loads.begin());
      g.load = std::prev(it)->second;
      return g;
    }
  }
  FAIL("no grouped pe_conv");
  return g;
}

size_t nth(const isa::Program& p, isa::Opcode op, int n) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p.instructions[i].op() == op && n-- == 0) return i;
  FAIL("the program has too few " << isa::mnemonic(op));
  return 0;
}

bool has(const std::vector<std::string>& problems, const std::string& pointer, const std::string& what) {
  for (const auto& p : problems)
    if (p.find(": " + pointer + ": ") != std::string::npos && p.find(what) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("damaged programs of grouped convolutions: asm --check, the timing run and the functional run refuse them alike") {
  const auto& a = arch_named("zebu-1core");
  const Compiled& c = func_test::grouped_model(1);
  Built b = func_test::build(c, func_test::single_core(c.graph, "zebu-1core"), a, testing::temp_dir("checks_grouped"));
  const isa::Program& good = b.program;
  const int64_t l2 = a.core.l2_bytes, wl0 = a.core.wl0_bytes(), row = a.core.wl0_row_bytes;

  // Undamaged: all pass, and the run is golden.
  {
    Verdicts v = judge(c, b, good, a);
    CHECK_MESSAGE(v.check.code == 0, v.check.message);
    CHECK_MESSAGE(v.timing.code == 0, v.timing.message);
    CHECK_MESSAGE(v.functional.code == 0, v.functional.message);
    CHECK(irgen::check(b.sir, a, &c.graph, "s.json").empty());
  }
  const GroupedConv g = first_grouped(good);
  REQUIRE(good.instructions[g.load].get(isa::Param::SS) == 1);
  auto ws = good.instructions[g.load].list(isa::Param::Wsize);
  const int32_t K = ws[0], kh = ws[2], kw = ws[3];
  REQUIRE(ws[1] == 1);  // depthwise: one input channel per record
  const int64_t dense_c = good.instructions[g.gp].get(isa::Param::GROUPS);
  const std::string depthwise_records = "[1, " + std::to_string(kh) + ", " + std::to_string(kw) + "]";
  const std::string dense_records = "[" + std::to_string(dense_c) + ", " + std::to_string(kh) + ", " + std::to_string(kw) + "]";

  SUBCASE("SWaddr past the end of WL0") {
    isa::Program p = good;
    p.instructions[g.conv].set(isa::Param::SWaddr, a.core.wl0_rows - 1);
    all_refuse(judge(c, b, p, a), at(g.conv, "pe_conv") + "reads WL0 of core 0 bytes [" + std::to_string(wl0 - row) + ", ",
               "outside the " + std::to_string(wl0) + " bytes there");
  }
  SUBCASE("an lw_mov's Wsize with the dense channel count") {
    isa::Program p = good;
    p.instructions[g.load].set_list(isa::Param::Wsize, {K, int32_t(dense_c), kh, kw});
    all_refuse(judge(c, b, p, a), at(g.conv, "pe_conv") + "reads WL0 of core 0 bytes",
               "as " + std::to_string(K) + " weight records of " + depthwise_records + " (" + std::to_string(8 * kh * kw + 32) +
                   " bytes each), but bytes [" + std::to_string(good.instructions[g.conv].get(isa::Param::SWaddr) * row) +
                   ", " );
    Verdicts v = judge(c, b, p, a);
    CHECK(v.check.message.find("hold records of " + dense_records) != std::string::npos);
    CHECK(v.check.message.find("that line " + std::to_string(g.load + 1) + " (lw_mov) loaded") != std::string::npos);
  }
  SUBCASE("a pe_conv's DTaddr past the end of L2") {
    isa::Program p = good;
    // (One starting 16 bytes before the end would wrap round to byte 0: L2 is a ring.)
    p.instructions[g.conv].set(isa::Param::DTaddr, l2 + 16);
    all_refuse(judge(c, b, p, a), at(g.conv, "pe_conv") + "writes L2 of core 0 bytes [" + std::to_string(l2 + 16) + ", ",
               "outside the " + std::to_string(l2) + " bytes there");
  }
  SUBCASE("a pe_conv's STaddr past the end of L2") {
    isa::Program p = good;
    p.instructions[g.conv].set(isa::Param::STaddr, good.instructions[g.conv].get(isa::Param::STaddr) + l2);
    all_refuse(judge(c, b, p, a), at(g.conv, "pe_conv") + "reads L2 of core 0 bytes [", "outside the " + std::to_string(l2));
  }
  SUBCASE("a vp_self's STaddr1 and an lda_mov's DTaddr outside L2") {
    isa::Program p = good;
    size_t vp = nth(p, isa::Opcode::vp_self, 0);
    p.instructions[vp].set(isa::Param::STaddr1, -64);
    all_refuse(judge(c, b, p, a), at(vp, "vp_self") + "reads L2 of core 0 bytes [-64, ", "outside");
    p = good;
    size_t ld = nth(p, isa::Opcode::lda_mov, 0);
    p.instructions[ld].set(isa::Param::DTaddr, l2);
    all_refuse(judge(c, b, p, a), at(ld, "lda_mov") + "writes L2 of core 0 bytes [" + std::to_string(l2) + ", ", "outside");
  }
  SUBCASE("the pe_cfg_gp of a depthwise tile removed: its weights read as if it were dense") {
    isa::Program p = good;
    p.instructions.erase(p.instructions.begin() + std::ptrdiff_t(g.gp));
    std::vector<trace::Timing> timing = b.timing;
    timing.erase(timing.begin() + std::ptrdiff_t(g.gp));
    const size_t conv = g.conv - 1;
    Verdicts v = judge(c, b, p, a, &timing);
    all_refuse(v, at(conv, "pe_conv") + "reads WL0 of core 0 bytes", "as " + std::to_string(K) + " weight records of " + dense_records);
    CHECK(v.check.message.find("hold records of " + depthwise_records) != std::string::npos);
  }
  SUBCASE("a wrong GROUPS reads records of another shape") {
    isa::Program p = good;
    p.instructions[g.gp].set(isa::Param::GROUPS, dense_c / 2);
    all_refuse(judge(c, b, p, a), at(g.conv, "pe_conv") + "reads WL0 of core 0 bytes",
               "weight records of [2, " + std::to_string(kh) + ", " + std::to_string(kw) + "]");
  }
  SUBCASE("weights read from the middle of a record") {
    // One row on: still inside the loaded records, but off their boundaries.
    isa::Program p = good;
    p.instructions[g.conv].set(isa::Param::SWaddr, good.instructions[g.conv].get(isa::Param::SWaddr) + 1);
    all_refuse(judge(c, b, p, a), at(g.conv, "pe_conv") + "reads WL0 of core 0 bytes",
               "its first record starts " + std::to_string(row) + " bytes into a record of those line " +
                   std::to_string(g.load + 1) + " (lw_mov) loaded");
  }
  SUBCASE("weights no load wrote") {
    isa::Program p = good;
    p.instructions[g.load].set(isa::Param::DTaddr, good.instructions[g.load].get(isa::Param::DTaddr) + a.core.wl0_rows / 2);
    all_refuse(judge(c, b, p, a), at(g.conv, "pe_conv") + "reads WL0 of core 0 bytes", "but no lw_mov before it on the core loaded bytes");
  }
}

TEST_CASE("damaged programs whose weights stream from L2: the lw_mov from L2 must read what an ldw_mov loaded") {
  const auto& a = arch_named("zebu-1core");
  const Compiled& c = func_test::grouped_model(1);
  irgen::Options io;
  io.weight_path = irgen::WeightPath::L2;  // every layer: DRAM -> L2 (ldw_mov), then L2 -> WL0 tile by tile (lw_mov SS=0)
  Built b;
  b.sir = irgen::generate(c.graph, func_test::single_core(c.graph, "zebu-1core"), a, io);
  b.program = assembler::assemble(b.sir, c.graph, a);
  b.timing = func_test::retime(b.program, a);
  const isa::Program& good = b.program;
  {
    Verdicts v = judge(c, b, good, a);
    CHECK_MESSAGE(v.check.code == 0, v.check.message);
    CHECK_MESSAGE(v.timing.code == 0, v.timing.message);
    CHECK_MESSAGE(v.functional.code == 0, v.functional.message);
    CHECK(irgen::check(b.sir, a, &c.graph, "s.json").empty());
  }
  // The ldw_mov of the depthwise layer's weights ([K, 1, kh, kw]) and the first lw_mov reading them.
  size_t ldw = good.size(), lw = good.size();
  for (size_t i = 0; i < good.size() && ldw == good.size(); ++i) {
    const auto& in = good.instructions[i];
    if (in.op() == isa::Opcode::ldw_mov && in.list(isa::Param::Wsize)[1] == 1) ldw = i;
  }
  REQUIRE(ldw < good.size());
  const int64_t at_l2 = good.instructions[ldw].get(isa::Param::DTaddr);
  for (size_t i = ldw; i < good.size() && lw == good.size(); ++i) {
    const auto& in = good.instructions[i];
    if (in.op() == isa::Opcode::lw_mov && in.get(isa::Param::SS) == 0 && in.get(isa::Param::STaddr) == at_l2) lw = i;
  }
  REQUIRE(lw < good.size());
  auto ws = good.instructions[ldw].list(isa::Param::Wsize);

  SUBCASE("the ldw_mov's Wsize with the dense channel count") {
    isa::Program p = good;
    p.instructions[ldw].set_list(isa::Param::Wsize, {ws[0], 16, ws[2], ws[3]});
    all_refuse(judge(c, b, p, a), at(lw, "lw_mov") + "reads L2 of core 0 bytes [" + std::to_string(at_l2) + ", ",
               "but bytes [" + std::to_string(at_l2) + ", ");
    Verdicts v = judge(c, b, p, a);
    CHECK(v.check.message.find("hold records of [16, ") != std::string::npos);
    CHECK(v.check.message.find("that line " + std::to_string(ldw + 1) + " (ldw_mov) loaded") != std::string::npos);
  }
  SUBCASE("the lw_mov reading from an L2 address no ldw_mov loaded") {
    isa::Program p = good;
    p.instructions[lw].set(isa::Param::STaddr, at_l2 + a.core.l2_bytes / 2);
    all_refuse(judge(c, b, p, a), at(lw, "lw_mov") + "reads L2 of core 0 bytes", "but no ldw_mov before it on the core loaded bytes");
  }
}

TEST_CASE("damaged schedules of grouped convolutions: irgen --check refuses them, naming the pointer") {
  const auto& a = arch_named("chip-64tops");
  const Compiled& c = func_test::grouped_model(1);
  // The grouped layers split in four along k, so that tiles hold some groups only.
  mapping::Mapping m = func_test::single_core(c.graph, "chip-64tops");
  for (auto& s : m.segments)
    for (auto& lm : s.layers) {
      const fir::Layer* l = c.graph.find(lm.layer);
      if (l->group_count() <= 1) continue;
      lm.cores = {0, 1, 2, 3};
      lm.partition.k = l->group_count() % 4 == 0 ? 4 : 2;
      lm.partition.w = 4 / lm.partition.k;
    }
  Built b = func_test::build(c, m, a, testing::temp_dir("checks_grouped_chip"));
  REQUIRE(irgen::check(b.sir, a, &c.graph, "s.json").empty());
  REQUIRE(assembler::check(b.program, a, "p.asm").ok());

  // The depthwise layer: its weight transfer, a workload of it on core 1 and that workload's WL0 entry.
  const fir::Layer* dw = nullptr;
  for (const auto& l : c.graph.layers())
    if (l.group_count() > 1 && !dw) dw = &l;
  REQUIRE(dw);
  const int64_t groups = dw->group_count();
  const int64_t record = 8 * 9 + a.core.weight_extra_bytes_per_out_channel;  // [1, 3, 3], channels padded to 8
  REQUIRE(record == footprint::weight_record(a, 1, 3, 3, 1).bytes());
  size_t load = b.sir.dram.out.size();
  for (size_t i = 0; i < b.sir.dram.out.size(); ++i) {
    const auto& d = b.sir.dram.out[i];
    if (d.type == sir::DramLoadType::Weight && d.destination[0].layer_name == dw->name && load == b.sir.dram.out.size()) load = i;
  }
  REQUIRE(load < b.sir.dram.out.size());
  const auto& core1 = b.sir.cores.at(1);
  size_t wk = core1.workloads.size();
  for (size_t k = 0; k < core1.workloads.size() && wk == core1.workloads.size(); ++k)
    if (core1.workloads[k].layer_name == dw->name) wk = k;
  REQUIRE(wk < core1.workloads.size());
  const std::string wp = "/1/" + std::to_string(wk);
  const auto& tile = core1.workloads[wk].tile_info.at(0);
  REQUIRE(tile.ofmap_lower[1] > 0);  // some groups only
  size_t entry = 0;
  const auto& entries = core1.workloads[wk].wl0_buffer.entries;
  while (entry < entries.size() && entries[entry].layer_name != dw->name) ++entry;
  REQUIRE(entry < entries.size());

  SUBCASE("a weight transfer one record too large") {
    sir::Schedule s = b.sir;
    auto& d = s.dram.out[load];
    const int64_t channels = d.upper[1] - d.lower[1] + 1;
    d.size += record;
    auto problems = irgen::check(s, a, &c.graph, "s.json");
    CHECK_MESSAGE(has(problems, "/-1/out/" + std::to_string(load) + "/size",
                      "is " + std::to_string(d.size) + " bytes; its " + std::to_string(channels) +
                          " output channels of records [1, 3, 3] (" + std::to_string(record) + " bytes each) take " +
                          std::to_string(channels * record)),
                  testing::joined(problems));
    // asm refuses to lay it out in DRAM too (its bytes per output channel differ from the other cores' transfers).
    Verdict v = verdict([&] { assembler::assemble(s, c.graph, a); });
    CHECK(v.code == kExitInvalidInput);
    CHECK_MESSAGE(v.message.find("<sir>: /-1/out/") != std::string::npos, v.message);
    CHECK_MESSAGE(v.message.find("\"" + dw->name + "\"") != std::string::npos, v.message);
  }
  SUBCASE("a weight transfer laid out as if the layer were dense") {
    sir::Schedule s = b.sir;
    auto& d = s.dram.out[load];
    const int64_t channels = d.upper[1] - d.lower[1] + 1;
    d.upper[2] = groups - 1;
    d.size = channels * footprint::weight_record(a, groups, 3, 3, 1).bytes();
    auto problems = irgen::check(s, a, &c.graph, "s.json");
    CHECK_MESSAGE(has(problems, "/-1/out/" + std::to_string(load) + "/upper",
                      "loads [" + std::to_string(groups) + " channels, 9 taps] of each output channel; its records are [1, 3, 3]"),
                  testing::joined(problems));
    CHECK(has(problems, "/-1/out/" + std::to_string(load) + "/size", "take " + std::to_string(channels * record)));
  }
  SUBCASE("a tile reading every input channel of a depthwise layer") {
    sir::Schedule s = b.sir;
    auto& t = s.cores.at(1).workloads[wk].tile_info.at(0);
    t.ifmap_lower[1] = 0;
    t.ifmap_upper[1] = groups - 1;
    auto problems = irgen::check(s, a, &c.graph, "s.json");
    CHECK_MESSAGE(has(problems, wp + "/tile_info/tile_num_0",
                      "the tile reads input channels 0.." + std::to_string(groups - 1) + "; its output channels " +
                          std::to_string(tile.ofmap_lower[1]) + ".." + std::to_string(tile.ofmap_upper[1]) + " of \"" +
                          dw->name + "\" (" + std::to_string(groups) + " groups) need " + std::to_string(tile.ofmap_lower[1]) +
                          ".." + std::to_string(tile.ofmap_upper[1])),
                  testing::joined(problems));
  }
  SUBCASE("a tile splitting a group") {
    // The depthwise-with-multiplier layer: two outputs per group.
    const fir::Layer* dm = nullptr;
    for (const auto& l : c.graph.layers())
      if (l.group_count() > 1 && l.output_shape[0][1] == 2 * l.group_count()) dm = &l;
    REQUIRE(dm);
    sir::Schedule s = b.sir;
    bool split = false;
    for (auto& w : s.cores.at(1).workloads)
      if (w.layer_name == dm->name && !split) {
        w.tile_info.at(0).ofmap_lower[1] += 1;
        split = true;
      }
    REQUIRE(split);
    auto problems = irgen::check(s, a, &c.graph, "s.json");
    bool named = false;
    for (const auto& pr : problems) named |= pr.find("not whole groups of 2") != std::string::npos;
    CHECK_MESSAGE(named, testing::joined(problems));
  }
  SUBCASE("a WL0 entry holding dense records, and one too small") {
    sir::Schedule s = b.sir;
    auto& e = s.cores.at(1).workloads[wk].wl0_buffer.entries[entry];
    REQUIRE(e.upper);
    (*e.upper)[2] = groups - 1;
    auto problems = irgen::check(s, a, &c.graph, "s.json");
    CHECK_MESSAGE(has(problems, wp + "/wl0_buffer/" + std::to_string(entry),
                      "the entry holds [" + std::to_string(groups) + " channels, 9 taps] of each output channel of \"" +
                          dw->name + "\"; its records are [1, 3, 3]"),
                  testing::joined(problems));
    s = b.sir;
    s.cores.at(1).workloads[wk].wl0_buffer.entries[entry].size = 1;
    problems = irgen::check(s, a, &c.graph, "s.json");
    CHECK_MESSAGE(has(problems, wp + "/wl0_buffer/" + std::to_string(entry) + "/size", "rows cannot hold its"),
                  testing::joined(problems));
    CHECK(has(problems, wp + "/tile_info/tile_num_0", "of its entry at"));
  }
}

// Issue 20: these passed irgen --check; asm then wrote a program that
// deadlocks (a piece received under another transfer's id) or reads outside
// its tensor (a padding of 2^31 - 1).
TEST_CASE("damaged transfer ids and paddings: irgen --check refuses them, naming the pointer") {
  const auto& a = arch_named("chip-64tops");
  const Compiled& c = func_test::grouped_model(1);
  mapping::Mapping m = func_test::single_core(c.graph, "chip-64tops");
  // Layers of an even width split in two along w, so pieces move between cores.
  for (auto& s : m.segments)
    for (auto& lm : s.layers) {
      const fir::Layer* l = c.graph.find(lm.layer);
      if (l->output_shape.empty() || l->output_shape[0].size() != 4 || l->output_shape[0][3] % 2 != 0) continue;
      lm.cores = {0, 1};
      lm.partition = {};
      lm.partition.w = 2;
    }
  Built b = func_test::build(c, m, a, testing::temp_dir("checks_transfer_ids"));
  REQUIRE(irgen::check(b.sir, a, &c.graph, "s.json").empty());

  // A piece a tensor received from another core, renamed to a transfer made
  // on yet another core; and to one that does not exist.
  struct Site {
    size_t core, wl, buf, src;
  };
  std::vector<Site> received;
  for (size_t ci = 0; ci < b.sir.cores.size(); ++ci)
    for (size_t k = 0; k < b.sir.cores[ci].workloads.size(); ++k) {
      const auto& w = b.sir.cores[ci].workloads[k];
      for (size_t i = 0; i < w.buffer.size(); ++i)
        if (w.buffer[i].source)
          for (size_t j = 0; j < w.buffer[i].source->size(); ++j) {
            const auto& src = (*w.buffer[i].source)[j];
            if (src.type == sir::Endpoint::Core && src.core_id != b.sir.cores[ci].id) received.push_back({ci, k, i, j});
          }
    }
  REQUIRE(received.size() >= 2);
  auto pointer = [&](const Site& s) {
    return "/" + std::to_string(b.sir.cores[s.core].id) + "/" + std::to_string(s.wl) + "/buffer/" + std::to_string(s.buf) +
           "/source/" + std::to_string(s.src);
  };
  auto source = [](sir::Schedule& sc, const Site& s) -> sir::Source& {
    return (*sc.cores[s.core].workloads[s.wl].buffer[s.buf].source)[s.src];
  };
  bool other_core = false;
  for (const Site& x : received)
    for (const Site& y : received) {
      sir::Schedule d = b.sir;
      if (source(d, x).core_id == source(d, y).core_id || other_core) continue;
      source(d, x).transfer_id = source(d, y).transfer_id;
      CHECK(has(irgen::check(d, a, &c.graph, "s.json"), pointer(x) + "/core_id", "comes from"));
      other_core = true;
    }
  CHECK(other_core);
  {
    sir::Schedule d = b.sir;
    source(d, received[0]).transfer_id = 999999;
    CHECK(has(irgen::check(d, a, &c.graph, "s.json"), pointer(received[0]) + "/transfer_id", "transfer 999999 has no producer"));
  }
  // A WL0 entry loaded from DRAM under the id of a feature-map transfer.
  bool entry = false;
  for (size_t ci = 0; ci < b.sir.cores.size() && !entry; ++ci)
    for (size_t k = 0; k < b.sir.cores[ci].workloads.size() && !entry; ++k) {
      const auto& wb = b.sir.cores[ci].workloads[k].wl0_buffer;
      for (size_t i = 0; i < wb.entries.size() && !entry; ++i) {
        if (wb.entries[i].source != sir::WeightSource::Ddr || wb.entries[i].transfer_id.empty()) continue;
        sir::Schedule d = b.sir;
        const int64_t fmap = source(d, received[0]).transfer_id;
        d.cores[ci].workloads[k].wl0_buffer.entries[i].transfer_id[0] = fmap;
        auto problems = irgen::check(d, a, &c.graph, "s.json");
        INFO((problems.empty() ? std::string("no problem") : problems[0]));
        CHECK(has(problems,
                  "/" + std::to_string(d.cores[ci].id) + "/" + std::to_string(k) + "/wl0_buffer/" + std::to_string(i) +
                      "/transfer_id/0",
                  "transfer " + std::to_string(fmap) + " is not a weight load"));
        entry = true;
      }
    }
  CHECK(entry);
  // A windowed layer's tile whose padding does not span its windows.
  bool padded = false;
  for (size_t ci = 0; ci < b.sir.cores.size() && !padded; ++ci)
    for (size_t k = 0; k < b.sir.cores[ci].workloads.size() && !padded; ++k) {
      const fir::Layer* l = c.graph.find(b.sir.cores[ci].workloads[k].layer_name);
      if (!l || !(l->kernel_size || l->pool_size)) continue;
      sir::Schedule d = b.sir;
      d.cores[ci].workloads[k].tile_info[0].tile_padding_tblr[0] = 2147483647;
      CHECK(has(irgen::check(d, a, &c.graph, "s.json"),
                "/" + std::to_string(d.cores[ci].id) + "/" + std::to_string(k) + "/tile_info/tile_num_0/tile_padding_tblr",
                "rows: the tile's"));
      padded = true;
    }
  CHECK(padded);
}

TEST_CASE("the tools: asm --check and zebusim exit 3 naming the line, irgen --check names the pointer") {
  const auto& a = arch_named("zebu-1core");
  const Compiled& c = func_test::grouped_model(1);
  std::string dir = testing::temp_dir("checks_tools");
  Built b = func_test::build(c, func_test::single_core(c.graph, "zebu-1core"), a, dir);
  const GroupedConv g = first_grouped(b.program);
  isa::Program p = b.program;
  p.instructions.erase(p.instructions.begin() + std::ptrdiff_t(g.gp));
  const std::string bad = dir + "/bad.asm";
  isa::write_program(bad, p, isa::Syntax::JsonLines);
  const std::string where = "bad.asm:" + std::to_string(g.conv) + ": pe_conv: reads WL0 of core 0 bytes";
  auto r = testing::run_tool("asm", "--check " + bad + " --arch zebu-1core");
  CHECK(r.exit_code == kExitInvalidInput);
  CHECK_MESSAGE((r.err.rfind("asm: ", 0) == 0 && r.err.find(where) != std::string::npos), r.err);
  r = testing::run_tool("zebusim", bad + " --arch zebu-1core -o " + dir + "/bad.trace");
  CHECK(r.exit_code == kExitInvalidInput);
  CHECK_MESSAGE((r.err.rfind("zebusim: ", 0) == 0 && r.err.find(where) != std::string::npos), r.err);
  CHECK_FALSE(fs::exists(dir + "/bad.trace"));
  // The undamaged program passes both.
  CHECK(testing::run_tool("asm", "--check " + b.program_path + " --arch zebu-1core").exit_code == 0);
  // A load past the end of the DRAM activations: only the schedule's layout
  // (--sir, --fir) bounds it, as the functional run does.
  {
    isa::Program q = b.program;
    const size_t ld = nth(q, isa::Opcode::lda_mov, 0);
    q.instructions[ld].set(isa::Param::STaddr, q.instructions[ld].get(isa::Param::STaddr) + (int64_t(1) << 30));
    const std::string far = dir + "/far.asm";
    isa::write_program(far, q, isa::Syntax::JsonLines);
    r = testing::run_tool("asm", "--check " + far + " --arch zebu-1core");
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    CHECK_MESSAGE(r.err.find("DRAM extents unchecked") != std::string::npos, r.err);
    r = testing::run_tool("asm", "--check " + far + " --arch zebu-1core --sir " + b.sir_path + " --fir " + c.fir_path);
    CHECK(r.exit_code == kExitInvalidInput);
    CHECK_MESSAGE(r.err.find("far.asm:" + std::to_string(ld + 1) + ": lda_mov: reads DRAM (activations) bytes [") != std::string::npos,
                  r.err);
    r = testing::run_tool("asm", "--check " + b.program_path + " --arch zebu-1core --sir " + b.sir_path + " --fir " + c.fir_path);
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    CHECK_MESSAGE(r.err.find("DRAM accesses inside the schedule's layout") != std::string::npos, r.err);
    CHECK(testing::run_tool("asm", "--check " + b.program_path + " --arch zebu-1core --sir " + b.sir_path).exit_code ==
          kExitUsage);
  }
  CHECK(testing::run_tool("zebusim", b.program_path + " --arch zebu-1core -o " + dir + "/good.trace").exit_code == 0);

  sir::Schedule s = b.sir;
  for (auto& d : s.dram.out)
    if (d.type == sir::DramLoadType::Weight) d.size += 1;
  sir::write_sir(dir + "/bad.sir.json", s);
  r = testing::run_tool("irgen", "--check " + dir + "/bad.sir.json --arch zebu-1core --fir " + c.fir_path);
  CHECK(r.exit_code == kExitCheckFailed);
  CHECK_MESSAGE(r.err.find("bad.sir.json: /-1/out/") != std::string::npos, r.err);
  CHECK_MESSAGE(r.err.find("/size: weight transfer ") != std::string::npos, r.err);
  CHECK(testing::run_tool("irgen", "--check " + b.sir_path + " --arch zebu-1core --fir " + c.fir_path).exit_code == 0);
}

// The bookkeeping of record runs, on a program made of the grouped model's
// instructions: a load over the middle of another's records ends only the
// bytes it writes, and what remains keeps its own record boundaries.
TEST_CASE("weight record runs: a load over part of another leaves the rest readable on its record boundaries") {
  const auto& a = arch_named("zebu-1core");
  const Compiled& c = func_test::grouped_model(1);
  Built b = func_test::build(c, func_test::single_core(c.graph, "zebu-1core"), a, testing::temp_dir("checks_runs"));
  const isa::Program& good = b.program;
  const GroupedConv g = first_grouped(good);
  auto before = [&](size_t i, isa::Opcode op) {
    while (good.instructions[i].op() != op) --i;
    return good.instructions[i];
  };
  const int64_t row = a.core.wl0_row_bytes;
  const int64_t record = footprint::weight_record(a, 1, 3, 3, 1).bytes();
  REQUIRE(good.instructions[g.load].list(isa::Param::Wsize)[0] >= 32);
  REQUIRE((8 * record) % row == 0);  // records 8 and 16 start on rows

  isa::Program p;
  // Run A: 32 records of [1, 3, 3] from row 0.
  isa::Instruction cfg_a = before(g.load, isa::Opcode::lw_cfg), load_a = good.instructions[g.load];
  load_a.set(isa::Param::DTaddr, 0);
  load_a.set_list(isa::Param::Wsize, {32, 1, 3, 3});
  load_a.prev = load_a.next = {};
  // Run B over A's records 6 and 7: 4 records of [8, 1, 1] (40 bytes each) at row 10.
  isa::Instruction cfg_b = cfg_a, load_b = load_a;
  cfg_b.set_list(isa::Param::SWsize, {8, 1, 1});
  cfg_b.set_list(isa::Param::DWsize, {8, 1, 1});
  load_b.set(isa::Param::DTaddr, 10);
  load_b.set_list(isa::Param::Wsize, {4, 8, 1, 1});
  const int64_t b_lo = 10 * row, b_hi = b_lo + 4 * footprint::weight_record(a, 8, 1, 1, 1).bytes();
  REQUIRE((b_lo > 5 * record && b_hi < 8 * record));
  // A depthwise tile of 16 channels.
  isa::Instruction tp = before(g.conv, isa::Opcode::pe_cfg_tp), gp = good.instructions[g.gp];
  auto tile = tp.list(isa::Param::Tile);
  tp.set_list(isa::Param::Tile, {tile[0], 16, 16, tile[3], tile[4]});
  gp.set(isa::Param::GROUPS, 16);
  isa::Instruction conv = good.instructions[g.conv];
  conv.prev = conv.next = {};
  for (const auto& in : {cfg_a, load_a, cfg_b, load_b, before(g.conv, isa::Opcode::pe_cfg_fm),
                         before(g.conv, isa::Opcode::pe_cfg_pm), tp, gp})
    p.instructions.push_back(in);
  auto reading_from = [&](int64_t rec) {
    isa::Program q = p;
    conv.set(isa::Param::SWaddr, rec * record / row);
    q.instructions.push_back(conv);
    return verdict([&] { footprint::check_program(a, q, {"p.asm"}); });
  };
  // Records 16..31 and 8..23 lie after B: A's own boundaries still hold there.
  CHECK_MESSAGE(reading_from(16).code == 0, reading_from(16).message);
  CHECK_MESSAGE(reading_from(8).code == 0, reading_from(8).message);
  // Records 0..15 run into B.
  Verdict v = reading_from(0);
  CHECK(v.code == kExitInvalidInput);
  CHECK_MESSAGE(v.message.find("p.asm:9: pe_conv: reads WL0 of core 0 bytes [0, " + std::to_string(16 * record) +
                               ") as 16 weight records of [1, 3, 3] (" + std::to_string(record) + " bytes each), but bytes [" +
                               std::to_string(b_lo) + ", " + std::to_string(b_hi) +
                               ") hold records of [8, 1, 1] (40 bytes each) that line 4 (lw_mov) loaded") != std::string::npos,
                v.message);
}

// The acceptance rule of the checks, over random damage: whatever asm --check
// passes, the timing run and the functional run also run, with no address
// error, size error or deadlock. Each trial changes one thing of a good
// program (an integer parameter or list element to a nearby, boundary or
// huge value; a dependency token dropped or added; an instruction dropped,
// repeated or moved one place), on one core and on a pipeline over two.
TEST_CASE("random damage: every program asm --check passes runs in the timing and the functional run") {
  struct Setup {
    const char* arch;
    int cores;
    // The tiny ResNet on gemini's plan, its repeated weight loads merged
    // into multicast groups (formats/ISA_Format.md 5b).
    bool multicast;
    int rounds;
  };
  for (const Setup& s : {Setup{"zebu-1core", 1, false, 600}, Setup{"chip-64tops", 2, false, 600},
                         Setup{"chip-64tops", 0, true, 200}}) {
    const std::string arch_name = s.arch;
    CAPTURE(arch_name);
    CAPTURE(s.multicast);
    const auto& a = arch_named(s.arch);
    const Compiled& c = s.multicast ? func_test::tiny(1) : func_test::grouped_model(1);
    const std::string dir = testing::temp_dir(std::string("checks_random_") + s.arch + (s.multicast ? "_mc" : ""));
    mapping::Mapping m;
    if (s.multicast) {
      auto r = testing::run_tool("gemini", "'" + c.fir_path + "' --arch " + arch_name + " --no-progress -o '" + dir + "/m.json'");
      REQUIRE_MESSAGE(r.exit_code == 0, r.err);
      m = mapping::read_mapping(dir + "/m.json");
    } else {
      m = s.cores == 1 ? func_test::single_core(c.graph, s.arch) : func_test::pipeline(c.graph, s.arch, s.cores, 1);
    }
    Built b = func_test::build(c, m, a, dir, false);
    if (s.multicast) {
      REQUIRE(assembler::merge_multicast_loads(b.program, a).groups > 0);
      b.timing = func_test::retime(b.program, a);
    }
    const isa::Program& good = b.program;
    REQUIRE(judge(c, b, good, a).check.code == 0);
    // asm --check --sir --fir: DRAM bounded as in the functional run.
    const assembler::DramLayout dram = assembler::layout_dram(b.sir, c.graph);
    std::mt19937_64 rng(20261126);
    auto pick = [&](int64_t n) { return int64_t(rng() % uint64_t(n)); };
    const int64_t l2 = a.core.l2_bytes;
    auto damaged_value = [&](int64_t v) -> int64_t {
      switch (pick(10)) {
        case 0: return 0;
        case 1: return -1;
        case 2: return v + 1;
        case 3: return v - 1;
        case 4: return v * 2;
        case 5: return v + 64;
        case 6: return v - 64;
        case 7: return l2 - 1 - pick(256);
        case 8: return v + pick(1 << 20) - (1 << 19);
        default: return std::numeric_limits<int32_t>::max();
      }
    };
    int trials = 0, passed_check = 0;
    std::vector<size_t> members;  // multicast members: half the damage goes there
    for (size_t i = 0; i < good.size(); ++i)
      if (isa::is_multicast_load(good.instructions[i].op())) members.push_back(i);
    for (int t = 0; t < s.rounds; ++t) {
      isa::Program p = good;
      const size_t i = !members.empty() && pick(2) ? members[size_t(pick(int64_t(members.size())))]
                                                   : size_t(pick(int64_t(p.size())));
      isa::Instruction& in = p.instructions[i];
      std::string what;
      const auto params = in.info().params;
      const int kind = int(pick(10));
      if (kind < 7 && !params.empty()) {
        const isa::ParamSpec& ps = params[size_t(pick(int64_t(params.size())))];
        const std::string name(isa::param_name(ps.id));
        if (ps.kind == isa::ParamKind::Int) {
          const int64_t v = damaged_value(in.get(ps.id));
          in.set(ps.id, v);
          what = name + " = " + std::to_string(v);
        } else if (ps.kind == isa::ParamKind::IntList) {
          auto l = in.list(ps.id);
          std::vector<int32_t> vals(l.begin(), l.end());
          const size_t e = size_t(pick(int64_t(vals.size())));
          vals[e] = int32_t(std::clamp<int64_t>(damaged_value(vals[e]), std::numeric_limits<int32_t>::min(),
                                                std::numeric_limits<int32_t>::max()));
          in.set_list(ps.id, vals);
          what = name + "[" + std::to_string(e) + "] = " + std::to_string(vals[e]);
        } else {
          continue;  // enums, flags and floats: what they mean, not where
        }
      } else if (kind == 7 && in.info().has_deps) {
        isa::QueueList& l = pick(2) ? in.prev : in.next;
        if (!l.empty() && pick(2)) {
          std::vector<isa::Queue> q(l.begin(), l.end());
          q.erase(q.begin() + pick(int64_t(q.size())));
          l.assign(q.begin(), q.end());
          what = "a token dropped";
        } else {
          l.push_back(isa::Queue(pick(isa::kQueueCount)));
          what = "a token added";
        }
      } else if (kind == 8 && p.size() > 2) {
        if (pick(2)) {
          p.instructions.erase(p.instructions.begin() + std::ptrdiff_t(i));
          what = "dropped";
        } else {
          p.instructions.insert(p.instructions.begin() + std::ptrdiff_t(i), p.instructions[i]);
          what = "repeated";
        }
      } else if (i + 1 < p.size()) {
        std::swap(p.instructions[i], p.instructions[i + 1]);
        what = "swapped with the next";
      } else {
        continue;
      }
      ++trials;
      const std::string where = "line " + std::to_string(i + 1) + " (" + std::string(good.instructions[i].mnemonic()) + "): " + what;
      Verdict check = verdict([&] {
        auto report = assembler::check(p, a, "p.asm", 50, &dram);
        if (!report.ok()) throw Error(kExitCheckFailed, report.text("p.asm"));
      });
      if (check.code != 0) continue;
      ++passed_check;
      std::vector<trace::Timing> timing;
      Verdict timed = verdict([&] {
        sim::Options o;
        o.file = "p.asm";
        timing = sim::simulate(p, a, o).timing;
      });
      CHECK_MESSAGE(timed.code == 0, where << ": asm --check passes it, the timing run refuses it: " << timed.message);
      if (timed.code != 0) continue;
      Verdict functional = verdict([&] {
        func::Options o;
        o.program_file = "p.asm";
        func::run(p, timing, a, c.graph, b.sir, func::directory_npy_loader(c.dir), {c.input}, o);
      });
      // What the functional model does not implement (a fused addition, an
      // unknown LUT) is its own limit, not a check's miss. A race (a token
      // dropped or moved, so two units touch the same bytes unordered) is
      // seen only by the functional run, which follows the timed order; no
      // static check looks for one (formats/ISA_Format.md, asm --check).
      const bool model_limit = functional.message.find("not implemented") != std::string::npos ||
                               functional.message.find("the functional model implements") != std::string::npos ||
                               functional.message.find(": race: ") != std::string::npos;
      CHECK_MESSAGE((functional.code == 0 || model_limit),
                    where << ": asm --check and the timing run pass it, the functional run refuses it: " << functional.message);
    }
    MESSAGE(arch_name << ": " << trials << " damaged programs, " << passed_check
                   << " passed asm --check, and ran in the timing and functional runs");
    CHECK(trials > s.rounds * 2 / 3);
    CHECK(passed_check > s.rounds / 30);
  }
}
